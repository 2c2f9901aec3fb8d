#!/usr/bin/env python3
"""Plot f(w_k) − f_* and the running mean of ‖∇f(w_k)‖² (with the bound of theory.md §3)
against block updates k, for one or more stale run files.

  scripts/plot_runs.py runs/*.h5 -o results/fig.png [--group-by delay.max] [--label method.name]

Runs that share the --group-by value (e.g. several seeds) are drawn as their median with a
min–max band; the bound is drawn dashed in the colour of its group.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_h5 import load_run  # noqa: E402


def band(ax, k, ys, color, label, style="-"):
    ys = np.array(ys)
    med = np.median(ys, axis=0)
    ax.plot(k, med, style, color=color, label=label, lw=1.4)
    if len(ys) > 1:
        ax.fill_between(k, ys.min(axis=0), ys.max(axis=0), color=color, alpha=0.18, lw=0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run files (.h5)")
    p.add_argument("-o", "--out", default="runs.png", help="output PNG")
    p.add_argument("--group-by", default=None, help="config key whose value groups runs (default: one group per file)")
    p.add_argument("--label", default=None, help="label prefix for groups (default: the group-by key)")
    p.add_argument("--title", default=None)
    p.add_argument("--no-bound", action="store_true", help="do not draw the bound")
    a = p.parse_args(argv)

    groups = defaultdict(list)
    for path in a.runs:
        r = load_run(path)
        gid = r.key(a.group_by) if a.group_by else os.path.basename(path)
        groups[gid].append(r)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (gid, runs) in enumerate(sorted(groups.items(), key=lambda kv: kv[0])):
        color = colors[i % len(colors)]
        n = min(len(r.metrics["k"]) for r in runs)
        k = runs[0].metrics["k"][:n]
        name = f"{a.label or a.group_by} = {gid}" if a.group_by else str(gid)
        diverged = sum(r.status == "diverged" for r in runs)
        if diverged:
            name += f" ({diverged} diverged)"
        sub = [np.maximum(r.metrics["subopt"][:n], 1e-300) for r in runs]
        band(ax1, k, sub, color, name)
        gm = [r.metrics["grad_norm_sq_mean"][:n] for r in runs]
        band(ax2, k[1:], [g[1:] for g in gm], color, name)
        if not a.no_bound:
            bound = [r.metrics["bound"][:n] for r in runs]
            band(ax2, k[1:], [b[1:] for b in bound], color, None, style="--")
    ax1.set_yscale("log")
    ax1.set_xlabel("block updates k")
    ax1.set_ylabel(r"$f(w_k) - f_*$")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.set_yscale("log")
    ax2.set_xlabel("block updates K")
    ax2.set_ylabel(r"$\frac{1}{K}\sum_{k<K} \|\nabla f(w_k)\|^2$  (dashed: bound §3)")
    ax2.grid(alpha=0.3)
    if a.title:
        fig.suptitle(a.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    fig.savefig(a.out, dpi=130)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
