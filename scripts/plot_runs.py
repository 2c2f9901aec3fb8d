#!/usr/bin/env python3
"""Plot f(w_k) − f_* (left) and the running mean of ‖∇f(w_k)‖² with the bound of
docs/theory.md §3 (right) for one or more stale run files.

  scripts/plot_runs.py runs/*.h5 -o fig.png [--group-by delay.max[,method.name]]
                       [--where method.lr=0.015625 ...] [--x k|time] [--label δ]
  scripts/plot_runs.py SWEEP_DIR --chosen-lr stable --group-by method.name,objective.stages --x time

--chosen-lr keeps, of a sweep folder's step-size grid, only each configuration's γ chosen by
scripts/stepsize.py's rule (stable or best; the same choice and grid-edge warnings), so
methods are compared each at its own tuned step size in one command.

Runs with the same values of the --group-by keys (e.g. seeds) are drawn as their median with
a min–max band; without --group-by every file is its own curve. When the runs of a group
differ in any other key than the seed, a warning names the keys on stderr and the legend
says "[mixed …]"; keys that are constant inside each group but differ between groups are
added to the legend. Diverged runs (status not ok, or f − f_* ending above 1e6 × its start)
are not drawn and are counted in the legend and the caption.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import (AnalysisError, filter_runs, group_runs, is_diverged, load_runs,  # noqa: E402
                            parse_keys, parse_where, run_cli, select, warn)
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.plotting import band, caption, plt  # noqa: E402
from stale_analysis.runs import progress_series, x_series  # noqa: E402

X_AXES = {"k": ("block updates k", "block updates K"), "time": ("simulated time (slots)", "simulated time (slots)")}


def chosen_paths(dirs, rule, x):
    """the run files of each configuration's chosen step size, over the sweep folders in dirs"""
    paths = set()
    for d in dirs:
        if not os.path.isdir(d):
            raise AnalysisError(f"plot_runs: --chosen-lr needs sweep folders, and {d} is a file")
        for row in select(d, rule=rule, x=x):
            if row["grid_edge"]:
                warn(f"{d}: {', '.join(f'{k}={v}' for k, v in row['config'].items())}: the chosen γ = {row['lr']:g} "
                     f"is the {row['grid_edge']} step size of the grid; widen the grid on that side")
            paths.update(os.path.abspath(os.path.join(d, r["path"])) for r in row["rows"])
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run files (.h5), or sweep folders: the runs their index.csv lists")
    p.add_argument("-o", "--out", default="runs.png", help="output PNG (default runs.png)")
    p.add_argument("--group-by", default=None, help="comma-separated config keys whose values group runs")
    p.add_argument("--where", action="append", help="keep only runs with key=value (repeatable)")
    p.add_argument("--x", choices=sorted(X_AXES), default="k", help="x axis: block updates k or simulated time")
    p.add_argument("--label", default=None, help="name shown for the (first) group-by key, e.g. δ")
    p.add_argument("--title", default=None)
    p.add_argument("--no-bound", action="store_true", help="do not draw the bound")
    p.add_argument("--chosen-lr", choices=["stable", "best"], default=None,
                   help="sweep folders only: keep each configuration's step size chosen by this rule (stepsize.py)")
    a = p.parse_args(argv)

    keys = parse_keys(a.group_by)
    runs = filter_runs(load_runs(a.runs), parse_where(a.where))
    if a.chosen_lr:
        chosen = chosen_paths(a.runs, a.chosen_lr, a.x)
        runs = [r for r in runs if os.path.abspath(r.path) in chosen]
    for r in runs:
        x_series(r, a.x)  # one-line error before anything is drawn
    groups = group_runs(runs, keys)
    names = {keys[0]: a.label} if keys and a.label else {}

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    n_div = 0
    for i, g in enumerate(groups):
        color = colors[i % len(colors)]
        good = [r for r in g.runs if not is_diverged(r)]
        div = len(g.runs) - len(good)
        n_div += div
        name = g.label(names) + (f" ({div} of {len(g.runs)} diverged, not drawn)" if div else "")
        if not good:
            ax1.plot([], [], color=color, label=name)
            continue
        n = min(len(r.metrics["k"]) for r in good)
        x = x_series(good[0], a.x)[:n]
        band(ax1, x, [np.maximum(progress_series(r)[:n], 1e-300) for r in good], color, name)
        band(ax2, x[1:], [r.series("grad_norm_sq_mean")[1:n] for r in good], color, name)
        if not a.no_bound:
            band(ax2, x[1:], [r.series("bound")[1:n] for r in good], color, None, style="--")
    f_star_known = all(np.isfinite(r.series("subopt")[0]) for r in runs if "subopt" in r.metrics)
    y1 = r"$f(w_k) - f_*$" if f_star_known else r"$f(w_k) - f_*$ (the loss where $f_*$ is unknown)"
    if any(int(r.theory.get("f_star_is_lower_bound", 0)) for r in runs):  # nonconvex: f_* is f_low
        y1 = r"$f(w_k) - f_{\mathrm{low}}$ ($f_{\mathrm{low}} \leq f_*$, nonconvex objective)"
    for ax, (xl, yl) in ((ax1, (X_AXES[a.x][0], y1)),
                         (ax2, (X_AXES[a.x][1], r"$\frac{1}{K}\sum_{k<K} \|\nabla f(w_k)\|^2$  (dashed: bound §3)"))):
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
    # up to 4 groups fit inside the left panel; more go below both panels, where they cannot
    # cover the curves or the tick labels (task 2's nine groups did)
    below = len(groups) > 4
    if below:
        handles, labels = ax1.get_legend_handles_labels()
        ncol = 3 if max(map(len, labels)) <= 55 else 2 if max(map(len, labels)) <= 95 else 1
        rows = -(-len(labels) // ncol)
        fig.set_size_inches(11, 4.6 + 0.22 * rows)
        fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=6.5, frameon=False,
                   bbox_to_anchor=(0.5, 0.04 if n_div else 0))
    else:
        ax1.legend(fontsize=7)
    if a.title:
        fig.suptitle(a.title)
    bottom = (0.04 if n_div else 0) + (0.22 * rows + 0.1) / (4.6 + 0.22 * rows) if below else (0.04 if n_div else 0)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    total = sum(len(g.runs) for g in groups)
    caption(fig, f"{n_div} of {total} runs diverged (status not ok, or f − f* above 1e6 × its start) and are not drawn."
            if n_div else "")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    fig.savefig(a.out, dpi=130)
    provenance.written(a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    sys.exit(run_cli(main))
