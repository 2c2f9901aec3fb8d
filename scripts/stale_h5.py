#!/usr/bin/env python3
"""Print what a stale run file holds: status (and whether it counts as diverged), the
objective, the theory constants, and the final value of every metric.

  scripts/stale_h5.py RUN.h5 [RUN.h5 ...] [--key method.lr ...]

The reader itself lives in scripts/stale_analysis (`load_run`); this name is kept so that
`from stale_h5 import load_run` keeps working.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import Run, divergence_reason, load_run, run_cli  # noqa: E402,F401
from stale_analysis.grouping import fmt_value  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run files (.h5)")
    p.add_argument("--key", action="append", default=[], help="also print this config key (repeatable)")
    a = p.parse_args(argv)
    for path in a.runs:
        r = load_run(path)
        why = divergence_reason(r)
        print(f"{path}: status {r.status}" + (f" (counts as diverged: {why})" if why and r.status == "ok" else ""))
        for k in a.key:
            print(f"  {k} = {fmt_value(r.key(k))}")
        print("  objective: " + ", ".join(f"{k}={fmt_value(v)}" for k, v in sorted(r.objective.items())))
        print("  theory: " + ", ".join(f"{k}={fmt_value(v)}" for k, v in sorted(r.theory.items())))
        print("  final: " + ", ".join(f"{k}={fmt_value(float(v[-1]))}" for k, v in sorted(r.metrics.items()) if len(v)))


if __name__ == "__main__":
    sys.exit(run_cli(main))
