#!/usr/bin/env python3
"""Markdown table of final metrics for a set of run files, grouped by a config key:
final f − f_*, (1/K)Σ‖∇f(w_k)‖², the bound of theory.md §3 and its stale term, as the mean
and min–max over the runs of a group (seeds).

  scripts/summarize_runs.py runs/*.h5 --group-by delay.max -o results/table.md
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_h5 import load_run  # noqa: E402


def stat(values):
    v = np.array(values, dtype=float)
    return f"{v.mean():.4g} [{v.min():.3g}, {v.max():.3g}]"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("runs", nargs="+")
    p.add_argument("--group-by", required=True)
    p.add_argument("--command", default=None, help="the command that produced the runs (written under the table)")
    p.add_argument("-o", "--out", required=True)
    a = p.parse_args(argv)
    groups = defaultdict(list)
    for path in a.runs:
        r = load_run(path)
        groups[r.key(a.group_by)].append(r)
    lines = [
        f"| {a.group_by} | runs | final f − f_* | (1/K)Σ‖∇f(w_k)‖² | bound (§3) | stale term γ²L²δ²G² | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for gid, runs in sorted(groups.items()):
        m = [r.metrics for r in runs]
        status = ", ".join(sorted({r.status for r in runs}))
        lines.append(
            f"| {gid} | {len(runs)} | {stat([x['subopt'][-1] for x in m])} | {stat([x['grad_norm_sq_mean'][-1] for x in m])}"
            f" | {stat([x['bound'][-1] for x in m])} | {stat([x['bound_stale'][-1] for x in m])} | {status} |"
        )
    r0 = next(iter(groups.values()))[0]
    th = r0.theory
    lines += [
        "",
        f"Mean [min, max] over runs. L = {float(th.get('L', float('nan'))):.6g}, f_* = {float(th.get('f_star', float('nan'))):.3g}"
        f", γ = {float(th.get('lr', float('nan'))):.6g}, K = {int(th.get('K', 0))}, S = {int(th.get('S', 0))};"
        f" γ ≤ 1/L: {'yes' if int(th.get('lr_within_1_over_L', 0)) else 'no'}.",
        f"Harness version {r0.attrs.get('version')} (git {r0.attrs.get('git_sha')}).",
    ]
    if a.command:
        lines.append(f"Produced by `{a.command}`.")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
