#!/usr/bin/env python3
"""Step-size selection over a sweep: the RPD authors' "stable" rule (docs/theory.md §8) and
plain best-final, on the mean curve over seeds.

  scripts/stepsize.py sweeps/e1_sweep [--lr-key method.lr] [--rule stable|best] [--lm] [--x k|time] [--json]
                     [--strict]

For every configuration (all varying keys but the step size and the seed, in numeric order)
each step size gets the mean curve of f − f_* over its seeds, and its tail (the last 25% of
logged points) is tested for stability; the rule and its thresholds are in
scripts/stale_analysis/stepsize.py. Curves that end above 1e6 × their start count as
diverged, like non-finite ones.

A step size chosen at an end of its grid is marked and warned about on stderr (the rule's
choice may lie beyond the grid: widen it there); --strict makes that exit 1.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import AnalysisError, read_index, run_cli, select  # noqa: E402
from stale_analysis.stepsize import THRESHOLDS, choose, is_stable, tail_stats  # noqa: E402,F401


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep_dir")
    p.add_argument("--lr-key", default="method.lr")
    p.add_argument("--seed-key", default="seed")
    p.add_argument("--rule", choices=["stable", "best"], default="stable")
    p.add_argument("--lm", action="store_true", help="the LM thresholds of docs/theory.md §8")
    p.add_argument("--x", choices=["k", "time"], default="k", help="metric used as the curve's x")
    p.add_argument("--json", action="store_true")
    p.add_argument("--strict", action="store_true", help="exit 1 when a chosen step size is at an end of its grid")
    a = p.parse_args(argv)
    rows = read_index(a.sweep_dir)
    if rows and a.lr_key not in rows[0]:
        raise AnalysisError(f"{a.sweep_dir}: '{a.lr_key}' is not an axis of this sweep (columns: {', '.join(rows[0])})")
    res = select(a.sweep_dir, a.lr_key, a.seed_key, a.rule, a.lm, a.x)
    edges = [r for r in res if r["grid_edge"]]
    for r in edges:
        cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items()) or "(all)"
        print(f"warning: {cfg}: the chosen γ = {r['lr']:g} is the {r['grid_edge']} step size of the grid; the "
              f"rule's choice may lie beyond it: widen the grid on that side", file=sys.stderr)
    if a.json:
        print(json.dumps([{k: v for k, v in r.items() if k in ("config", "lr", "why", "grid_edge", "final_mean",
                                                               "final_min", "final_max", "seeds")} for r in res],
                         indent=1))
    else:
        print("| configuration | chosen γ | rule | final f − f_* mean [min, max] | seeds |")
        print("|---|---|---|---|---|")
        for r in res:
            cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items()) or "(all)"
            edge = f" (grid's {r['grid_edge']})" if r["grid_edge"] else ""
            print(f"| {cfg} | {r['lr']:g}{edge} | {r['why']} | {r['final_mean']:.4g} [{r['final_min']:.3g}, "
                  f"{r['final_max']:.3g}] | {r['seeds']} |")
    if edges and a.strict:
        return 1


if __name__ == "__main__":
    sys.exit(run_cli(main))
