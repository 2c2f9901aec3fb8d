#!/usr/bin/env python3
"""The dependency rule of the architecture (README "Architecture"), checked on the code's own
#include lines: each folder may include headers only from the folders listed for it, so the
dependencies point one way

    core <- config <- {backend, pipeline} <- io <- {objectives, delays} <- optimizers
         <- {checks, theory} <- run <- sweep <- commands <- cli (and the Python module)

(objectives and delays never include each other; optimizers never include io). The front ends
(src/cli and the Python module) hold no command logic: they call src/commands, never the engines
and guards a command is made of. Exit 1 and one line per violation, naming the file, the line
and the folder or call it may not use. Run by ctest.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BELOW = {
    "src/core": set(),
    "src/config": {"src/core"},
    "src/backend": {"src/core", "src/config"},
    "src/pipeline": {"src/core", "src/config"},
    "src/io": {"src/core", "src/config", "src/pipeline"},
    "objectives": {"src/core", "src/config", "src/backend", "src/io"},
    "delays": {"src/core", "src/config", "src/pipeline", "src/io"},
    "optimizers": {"src/core", "src/config", "src/backend", "src/pipeline", "objectives", "delays"},
    "src/checks": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays", "optimizers"},
    "src/theory": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays", "optimizers"},
    "src/run": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays", "optimizers",
                "src/checks", "src/theory"},
    "src/sweep": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays", "optimizers",
                  "src/checks", "src/theory", "src/run"},
    "src/commands": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays",
                     "optimizers", "src/checks", "src/theory", "src/run", "src/sweep"},
    "src/cli": {"src/core", "src/config", "src/backend", "src/pipeline", "src/io", "objectives", "delays", "optimizers",
                "src/checks", "src/theory", "src/run", "src/sweep", "src/commands"},
}


FRONT_ENDS = ["src/cli", "python/stale_module.cpp"]
# what a command does, which a front end must reach through src/commands: the simulator and
# schedule builder, the memory guard, the stability predictor; the runner, its config rules and
# the sweep engine (src/commands/run_config, sweep_grid); the registries and the schema a
# listing reads (component_catalog, config_keys)
ENGINE_CALLS = re.compile(r"\b(simulate|make_schedule|check_memory|largest_stable_step|run_experiment|run_or_resume|"
                          r"run_in_memory|read_partial_run|drop_unread_keys|check_unread_keys|load_sweep|run_sweep|"
                          r"parse_shard|config_schema|schedule_catalog)\s*\(|\bStabilityPredictor\b|"
                          r"\b\w+Registry::entries\b")


def layer_of(path):
    rel = path.as_posix()
    for layer in sorted(BELOW, key=len, reverse=True):
        if rel == layer or rel.startswith(layer + "/"):
            return layer
    return None


def main():
    bad = []
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for layer in BELOW:
        for f in sorted((ROOT / layer).rglob("*")):
            if f.suffix not in (".hpp", ".cpp", ".cu", ".cuh", ".in"):
                continue
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = include.match(line)
                if not m:
                    continue
                target = layer_of(Path(m.group(1)))
                if target is None or target == layer or target in BELOW[layer]:
                    continue
                bad.append(f"{f.relative_to(ROOT)}:{n}: {layer} may not include {m.group(1)} ({target} is not below it)")
    for front in FRONT_ENDS:
        root = ROOT / front
        for f in sorted([root] if root.is_file() else root.rglob("*.cpp")):
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                m = ENGINE_CALLS.search(line.split("//")[0])
                if m:
                    bad.append(f"{f.relative_to(ROOT)}:{n}: a front end calls {m.group(0).strip()}; "
                               f"move the command into src/commands and call it from both front ends")
    for b in bad:
        print(b)
    print(f"check_layers: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
