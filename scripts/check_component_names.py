#!/usr/bin/env python3
"""Fails when a registered component's name is spelled as a string literal in the C++ sources
outside the files that register it (docs/design.md "Registries": a component's facts live in
its registry entry, so adding one is one file plus one test, and nothing else branches on its
name).

The names come from `stale list` (every method, delay model, objective and schedule). A file
"owns" a name when it registers it (`…Registry::add(` with the name in the file), and so does
its header. Every other occurrence must be in REVIEWED below with the reason it is not a
component described by name (most are a different key's value that happens to share the
word, e.g. method.lr_schedule = "constant"). A new entry there is a design decision: prefer a
registry trait.

    python3 scripts/check_component_names.py [build/stale] [--root DIR]
"""
import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("src", "optimizers", "objectives", "delays", "python")
EXTENSIONS = (".cpp", ".hpp", ".cu", ".cuh")

# (file, name) → why the literal there is not a component described outside its own file
REVIEWED = {
    # a key's default is the one place a default is stated (the schema is the table of keys)
    ("src/config/schema.cpp", "quadratic"): "objective.name's default",
    ("src/config/schema.cpp", "rpd"): "method.name's default",
    ("src/config/schema.cpp", "zero"): "delay.name's default",
    ("src/config/schema.cpp", "pipedream"): "delay.schedule's default",
    ("optimizers/method.hpp", "zero"): "MethodParams' default delay model, the same default as the schema's",
    ("optimizers/schedule_planner.hpp", "pipedream"): "PlanOptions' default schedule, the same default as delay.schedule's",
    # the same word as the value of another key
    ("src/config/schema.cpp", "sgd"): "method.optimizer's default (the sgd update rule), stated in the table of keys",
    ("src/config/schema.cpp", "constant"): "method.lr_schedule's value, not the constant delay model",
    ("src/config/schema.cpp", "uniform"): "method.batch_order's value, not the uniform delay model",
    ("optimizers/update_rule.cpp", "constant"): "method.lr_schedule = constant",
    ("optimizers/update_rule.hpp", "constant"): "method.lr_schedule = constant",
    ("src/theory/stability_pattern.cpp", "sgd"): "method.optimizer = sgd, the update rule (the predictor covers the plain gradient step)",
    ("src/io/run_log.hpp", "constant"): "method.lr_schedule = constant",
    ("objectives/objective_factory.cpp", "geometric"): "objective.spectrum = geometric, not the geometric delay model",
    ("objectives/objective_factory.cpp", "nesterov"): "the quadratic's generator nesterov (registered there), not the update rule",
    ("src/config/schema.cpp", "geometric"): "objective.spectrum's default and value, not the geometric delay model",
    # the word "schedule" names the delay model, the CLI command, the run file's /schedule
    # group and the method family; only the delay model's own registration is a component use
    ("src/cli/schedule_command.hpp", "schedule"): "the `stale schedule` command",
    ("src/cli/main.cpp", "schedule"): "the `stale schedule` command",
    ("src/cli/schedule_command.cpp", "schedule"): "the `stale schedule` command",
    ("src/checks/resource_estimate.hpp", "schedule"): "the word in a comment-free string: the schedule memory item",
    ("src/checks/config_rules.cpp", "schedule"): "the `schedule` method family in a message",
    ("src/io/run_file.cpp", "schedule"): "the run file's /schedule group",
    ("src/io/schedule_file.cpp", "schedule"): "the schedule file's /schedule group",
    ("optimizers/rpd.cpp", "schedule"): "rpd's delay model that plans a schedule: asks its DelayEntry, the name in messages",
    ("optimizers/method_registry.cpp", "schedule"): "the MethodKind's printed name",
    ("optimizers/schedule_planner.hpp", "schedule"): "the /schedule group",
    ("optimizers/method_factory.cpp", "schedule"): "the `schedule` method family in a message",
    ("delays/table_delay.cpp", "schedule"): "a schedule file's /delays, read as a table",
    ("delays/delay_model.hpp", "schedule"): "the word in a message",
    ("python/stale_module.cpp", "schedule"): "the Python function stale.schedule",
    ("src/commands/component_catalog.cpp", "schedule"): "a method row's fact `schedule` (the schedule it executes)",
    # a method that is a variant of another's schedule names the schedule it runs
    ("optimizers/pipemare.cpp", "pipedream"): "pipemare runs the pipedream schedule (its registry entry's schedule field)",
    ("optimizers/pipedream_nostash.cpp", "pipedream"): "pipedream-nostash runs the pipedream schedule (its entry's schedule field)",
    # the linear losses' own names: the cuda twin and the constants cache name the loss they evaluate
    ("objectives/linear/linear_losses.hpp", "quadratic"): "the loss's name, shared by the CPU and CUDA twins of the objective",
    ("objectives/linear/linear_losses.hpp", "logistic"): "the loss's name, shared by the CPU and CUDA twins of the objective",
    ("objectives/linear/linear_model_cuda_objective.cpp", "quadratic"): "the CUDA twin reports its objective's name",
    ("objectives/linear/linear_model_cuda_objective.cpp", "logistic"): "the CUDA twin reports its objective's name",
    ("objectives/linear/linear_constants_sparse.cpp", "logistic"): "the constants cache's key names the loss",
    # known debts (docs/design.md "Registries"; issue 33): each should become a registry trait
    # the objective "python" is registered in objectives/ (a layer below the module, so that the
    # CLI can refuse it in one line); its implementation is the module's, which alone can build it
    ("python/stage_model_objective.hpp", "python"): "the Python-defined objective's own C++ side",
}


def registered_names(binary):
    out = subprocess.run([binary, "list"], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        m = re.match(r"  (\S+)\s", line)
        if m:
            names.add(m.group(1))
    return names


def sources(root):
    for top in SOURCES:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build", "stale"))
    ap.add_argument("--root", default=ROOT, help="the source tree to check (default: this repository)")
    a = ap.parse_args(argv)
    root = os.path.abspath(a.root)
    names = registered_names(a.binary)
    text = {p: open(os.path.join(root, p), encoding="utf-8", errors="replace").read() for p in sources(root)}
    owners = collections.defaultdict(set)
    for p, s in text.items():
        # the first string literal of each registration call is the name it registers
        for m in re.finditer(r'Registry::add\(\s*\{\s*(?:\.name\s*=\s*)?"([^"]+)"', s):
            stem = os.path.splitext(p)[0]
            owners[m.group(1)].update({p, stem + ".hpp", stem + ".cpp"})
    problems, used = [], set()
    for p, s in sorted(text.items()):
        for n in sorted(names):
            for m in re.finditer(r'"' + re.escape(n) + r'"', s):
                if p in owners[n]:
                    continue
                if (p, n) in REVIEWED:
                    used.add((p, n))
                    continue
                line = s.count("\n", 0, m.start()) + 1
                problems.append(f"{p}:{line}: the component name \"{n}\" outside the files that register it "
                                "(ask its registry entry for the fact instead, or add a reviewed exception with "
                                "its reason to scripts/check_component_names.py)")
    for p, n in sorted(set(REVIEWED) - used if root == ROOT else ()):
        problems.append(f"scripts/check_component_names.py: the reviewed exception ({p}, \"{n}\") no longer occurs; "
                        "remove it")
    for x in problems:
        print(x, file=sys.stderr)
    debts = sum(1 for why in REVIEWED.values() if why.startswith("DEBT"))
    print(f"check_component_names: {len(names)} names, {len(REVIEWED)} reviewed exceptions ({debts} of them known "
          f"debts), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
