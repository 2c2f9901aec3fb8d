#!/usr/bin/env python3
"""Golden run-file digests: the bits of a few short runs, committed, recomputed on whatever
machine runs the test suite.

The default build targets x86-64-v3 with Eigen's cache blocking fixed (CMakeLists.txt, "the
instruction-set target"), which promises run files with the same bits on every x86-64-v3
machine — AMD or Intel, with or without AVX-512, any cache sizes. This test holds the build to
that promise: each case below is run with the `stale` binary, and a SHA-256 of the raw
little-endian bytes of what a reader compares (the final iterate, the loss, gradient-norm and
stale-distance series, the per-block delays) must equal the committed one in digests.json.

    python3 tests/golden/golden_digests.py --stale build/stale            # check (a ctest)
    python3 tests/golden/golden_digests.py --stale build/stale --write    # regenerate

Regenerating is legitimate only when a change is *meant* to move bits (a new summation order,
a changed update rule, another compiler or Eigen version) — say so in the commit, with the
committed results regenerated alongside. It is never the fix for a digest that moved between
two machines running the same build target: that is the bug this test exists to catch.
Builds for another target (STALE_NATIVE=ON, -DSTALE_MARCH=x86-64) or with another toolchain (the
compiler, Eigen, glibc: `stale info`'s toolchain line, recorded in digests.json) are skipped
(exit 77): their bits are not promised to match. The promise is per target and toolchain; the CPU
(vendor, AVX-512, cache sizes) and the thread count never enter.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "digests.json"
TARGET = "x86-64-v3"  # the build target the committed digests were made with

BASE_LOG = """
[log]
every = 10
iterates_every = 1000000
progress = false
"""

# name -> (config text, kind): "run" runs the config; "ensemble" runs it as a two-column sweep
# (method.lr over two values, one lockstep ensemble) and digests the second column's file
CASES = {
    "rpd_uniform_least_squares": ("""
seed = 3
[objective]
name = "quadratic"
generator = "random"
dim = 96
samples = 120
batch_size = 6
stages = 6
[method]
name = "rpd"
lr = 0.03125
updates = 600
[delay]
name = "uniform"
max = 20
""" + BASE_LOG + "exact_mean = true\n", "run"),
    # d = 4 S: the four-coordinate blocks of E4 and the stale-distance kernel's fast path
    "rpd_constant_blocks_of_four": ("""
seed = 1
[objective]
name = "quadratic"
generator = "random"
dim = 64
samples = 80
batch_size = 4
stages = 16
[method]
name = "rpd"
lr = 0.0625
updates = 640
[delay]
name = "constant"
max = 12
""" + BASE_LOG, "run"),
    "pipedream_logistic": ("""
seed = 0
[objective]
name = "logistic"
generator = "synthetic"
dim = 128
samples = 300
batch_size = 5
stages = 8
l2 = 0.0001
[method]
name = "pipedream"
lr = 0.0625
time_budget = 300
""" + BASE_LOG + "exact_mean = true\n", "run"),
    "paci_logistic_adamw": ("""
seed = 2
[objective]
name = "logistic"
generator = "synthetic"
dim = 64
samples = 512
batch_size = 8
stages = 4
l2 = 0.0001
[method]
name = "paci"
accumulation = 4
optimizer = "adamw"
lr = 0.01
time_budget = 400.0
""" + BASE_LOG, "run"),
    "localsgd_least_squares": ("""
seed = 4
[objective]
name = "quadratic"
generator = "random"
dim = 80
samples = 160
batch_size = 8
stages = 4
[method]
name = "localsgd"
local_steps = 3
lr = 0.03125
updates = 480
""" + BASE_LOG, "run"),
    "pipedream_ensemble_column": ("""
seed = 5
[objective]
name = "quadratic"
generator = "random"
dim = 128
samples = 200
batch_size = 5
stages = 8
[method]
name = "pipedream"
lr = 0.015625
updates = 800
""" + BASE_LOG + "exact_mean = true\n", "ensemble"),
    # a lockstep ensemble's gradients are matrix products over n = 600 samples: deeper than one
    # block of Eigen's GEMM at a 32 KiB L1 (248) but not at 48 KiB (376), so these bits move if
    # the product's blocking follows the machine's caches
    "rpd_ensemble_column_deep_products": ("""
seed = 6
[objective]
name = "quadratic"
generator = "random"
dim = 64
samples = 600
batch_size = 10
stages = 4
[method]
name = "rpd"
lr = 0.015625
updates = 400
[delay]
name = "uniform"
max = 8
""" + BASE_LOG + "exact_mean = true\n", "ensemble"),
    # the fresh-read loop (optimizers/fresh_read.cpp): sgd's whole-vector step with momentum
    # and gradient noise, and bcd's drawn block with AdamW
    "sgd_momentum_noise_logistic": ("""
seed = 7
[objective]
name = "logistic"
generator = "synthetic"
dim = 96
samples = 240
batch_size = 6
stages = 6
l2 = 0.0001
grad_noise_std = 0.01
[method]
name = "sgd"
optimizer = "momentum"
lr = 0.0625
updates = 600
""" + BASE_LOG + "exact_mean = true\n", "run"),
    "bcd_adamw_least_squares": ("""
seed = 8
[objective]
name = "quadratic"
generator = "random"
dim = 80
samples = 160
batch_size = 8
stages = 5
[method]
name = "bcd"
optimizer = "adamw"
lr = 0.01
updates = 500
""" + BASE_LOG + "exact_mean = true\n", "run"),
    # float32 matrix products and the transformer's kernels (CPU twin); needs Tiny Shakespeare
    "pipedream_charlm_float32": ("""
seed = 0
backend = "cpu"
precision = "float32"
[objective]
name = "charlm"
data = "tinyshakespeare.txt"
embedding = 32
heads = 2
context = 16
batch_size = 8
stages = 4
samples = 640
[method]
name = "pipedream"
lr = 0.25
updates = 80
""" + BASE_LOG + "exact_mean = false\n", "run"),
}

# what is digested, per run file: (label, dataset path or a callable on the file)
PARTS = (
    ("final_iterate", lambda f: f["iterates"][-1] if "iterates" in f else None),
    ("loss", "metrics/loss"),
    ("grad_norm_sq", "metrics/grad_norm_sq"),
    ("grad_norm_sq_mean", "metrics/grad_norm_sq_mean"),
    ("stale_dist", "metrics/stale_dist"),
    ("batch_loss", "metrics/batch_loss"),
)


def canonical(a) -> bytes:
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.astype("<f8").tobytes()
    if a.dtype.kind in "iub":
        return a.astype("<i8").tobytes()
    raise TypeError(f"cannot digest dtype {a.dtype}")


def digest_file(path: Path) -> dict[str, str]:
    out = {}
    with h5py.File(path, "r") as f:
        for label, where in PARTS:
            a = where(f) if callable(where) else (f[where][()] if where in f else None)
            if a is not None:
                out[label] = hashlib.sha256(canonical(a)).hexdigest()
        if "delays" in f:
            d = f["delays"]
            if isinstance(d, h5py.Dataset):
                out["delays"] = hashlib.sha256(canonical(d[()])).hexdigest()
            else:
                h = hashlib.sha256()
                def add(name, obj):
                    if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "iuf":
                        h.update(name.encode() + b"\0" + canonical(obj[()]))
                d.visititems(add)
                out["delays"] = h.hexdigest()
    return out


def run_case(stale: str, name: str, text: str, kind: str, work: Path, data_dir: Path) -> Path:
    cfg = work / f"{name}.toml"
    # the digests are the cpu twin's bits: on a machine with a GPU, backend = "auto" would run
    # the cuda backend (seen on the H100 of results/gpu/, where 39 of 48 digests then moved)
    cfg.write_text(text if re.search(r"^backend\s*=", text, re.M) else 'backend = "cpu"\n' + text)
    env = dict(os.environ, STALE_DATA_DIR=str(data_dir))  # the machine's own thread count: no bit may move
    if kind == "run":
        out = work / f"{name}.h5"
        subprocess.run([stale, "run", str(cfg), "--out", str(out), "--quiet"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        return out
    sweep = work / f"{name}_sweep.toml"
    sweep.write_text(f'base = "{cfg.name}"\n\n[grid]\n"method.lr" = [0.0078125, 0.015625]\n')
    out_dir = work / f"{name}_sweep"
    subprocess.run([stale, "sweep", str(sweep), "--out", str(out_dir), "--jobs", "1", "--ensemble", "2"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted(p for p in out_dir.rglob("*.h5") if p.name != "index.h5")
    if len(files) != 2:
        raise RuntimeError(f"{name}: expected 2 run files in {out_dir}, found {[p.name for p in files]}")
    for path in files:  # the second column: lr = 2^-6
        with h5py.File(path, "r") as f:
            config = f.attrs["config"]
        if tomllib.loads(config if isinstance(config, str) else config.decode())["method"]["lr"] == 0.015625:
            return path
    raise RuntimeError(f"{name}: no run file of the lr = 2^-6 column in {out_dir}")


def info_line(stale: str, key: str) -> str:
    """the value of `stale info`'s line `key: …` ("unknown" where it has none)"""
    info = subprocess.run([stale, "info"], check=True, capture_output=True, text=True).stdout
    for line in info.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def cpu_target(stale: str) -> str:
    return info_line(stale, "CPU target").split()[0]


def toolchain(stale: str) -> str:
    """compiler, Eigen and glibc versions: on one target they decide the last bits too (FMA
    contraction and inlining, Eigen's kernels, libm's exp/log/tanh)"""
    return info_line(stale, "toolchain")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def cpu_has_avx512() -> bool:
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", default=os.environ.get("STALE_BIN", "build/stale"))
    ap.add_argument("--write", action="store_true", help="regenerate digests.json (see the module text for when)")
    ap.add_argument("--json", help="also write this machine's digests here")
    args = ap.parse_args()
    target = cpu_target(args.stale)
    machine = f"{cpu_name()} ({'AVX-512' if cpu_has_avx512() else 'no AVX-512'})"
    print(f"golden digests: build target {target}, {machine}")
    if target != TARGET and not args.write:
        print(f"STALE_TEST_SKIPPED: the committed digests are of {TARGET} builds; this build targets {target}, "
              "whose bits are not promised to match")
        return 77
    tools, made_with = toolchain(args.stale), json.loads(DIGESTS.read_text()).get("toolchain")
    if made_with is not None and tools != made_with and not args.write:
        print(f"STALE_TEST_SKIPPED: the committed digests were made with {made_with}; this build uses {tools}, "
              "whose bits are not promised to match (regenerate with --write after checking why they moved)")
        return 77
    data_dir = Path(os.environ.get("STALE_DATA_DIR", HERE.parents[1].parent / "shared" / "data"))
    skipped = []
    got = {}
    with tempfile.TemporaryDirectory(prefix="stale_golden_") as tmp:
        for name, (text, kind) in CASES.items():
            if "tinyshakespeare" in text and not (data_dir / "tinyshakespeare.txt").is_file():
                skipped.append(name)  # the data set is not on this machine (STALE_DATA_DIR)
                continue
            got[name] = digest_file(run_case(args.stale, name, text, kind, Path(tmp), data_dir))
    if args.json:
        Path(args.json).write_text(json.dumps({"target": target, "toolchain": tools, "machine": machine, "digests": got},
                                              indent=2) + "\n")
    if args.write:
        DIGESTS.write_text(json.dumps({"target": target, "toolchain": tools, "made_on": machine, "digests": got}, indent=2,
                                      sort_keys=True) + "\n")
        print(f"wrote {DIGESTS} ({sum(len(v) for v in got.values())} digests)")
        return 0
    want = {k: v for k, v in json.loads(DIGESTS.read_text())["digests"].items() if k not in skipped}
    if skipped:
        print(f"not checked (Tiny Shakespeare not found in {data_dir}): {', '.join(skipped)}")
    bad = []
    for name in sorted(set(want) | set(got)):
        for part in sorted(set(want.get(name, {})) | set(got.get(name, {}))):
            w, g = want.get(name, {}).get(part), got.get(name, {}).get(part)
            if w != g:
                bad.append(f"  {name}/{part}: committed {str(w)[:16]}, here {str(g)[:16]}")
    n = sum(len(v) for v in want.values())
    if bad:
        print(f"{len(bad)} of {n} digests differ on this machine ({machine}):\n" + "\n".join(bad))
        print("Bits moved between machines running the same build target: find the reduction whose order "
              "depends on the machine (vector width, cache sizes, thread count) before regenerating.")
        return 1
    print(f"{n} digests of {len(got)} runs equal the committed ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
