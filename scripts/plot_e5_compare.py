#!/usr/bin/env python3
"""E5 figure (docs/theory.md §8): the loss at the last stage's forward pass (the run files'
/metrics/batch_loss, smoothed over a window of logged points) against simulated time slots,
one curve per run, and a Markdown table of the final values. With --heldout, a second panel
shows the held-out loss (/metrics/val_loss, the validation windows) against time slots, and the
table gains the step size and the last held-out loss; where a method ran with several step
sizes, the one the LM stable rule picks (scripts/stepsize.py, on the last-stage loss curve) is
drawn bold and listed.

  scripts/plot_e5_compare.py runs/e5/*.h5 -o results/e5_charlm_pd_vs_localsgd.png [--window 15]
  scripts/plot_e5_compare.py runs/e5_paper/*.h5 -o results/e5_paper_scale.png --heldout \
      --title "E5 (paper scale): char-level GPT, S = 16, PD vs LocalSGD" --window 5
"""
from __future__ import annotations

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import choose, load_run, tail_stats  # noqa: E402
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)


def label(run):
    name = run.key("method.name")
    if name == "localsgd":
        H = run.key("method.local_steps") or 1
        return f"LocalSGD R = S, H = {H}"
    return {"pipedream": "PD"}.get(name, name)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--window", type=int, default=15)
    p.add_argument("--heldout", action="store_true", help="add the held-out loss panel and table column")
    p.add_argument("--title", default="E5 (CPU-sized): char-level GPT, S = 6, PD vs LocalSGD")
    a = p.parse_args(argv)
    if a.heldout:
        fig, (ax, axv) = plt.subplots(1, 2, figsize=(12, 4.5))
    else:
        fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = []
    runs = [load_run(path) for path in a.runs]
    chosen = {}
    if a.heldout:  # per method, the step size of the LM stable rule over the runs given
        by_method = {}
        for r in runs:
            bl = r.metrics["batch_loss"]
            by_method.setdefault(label(r), {})[float(r.key("method.lr"))] = tail_stats(bl[np.isfinite(bl)])
        chosen = {m: choose(st, "stable", lm=True) for m, st in by_method.items()}
    for r in runs:
        t, bl = r.metrics["time"], r.metrics["batch_loss"]
        ok = np.isfinite(bl) & np.isfinite(t)
        t, bl = t[ok], bl[ok]
        w = max(1, min(a.window, len(bl)))
        sm = np.convolve(bl, np.ones(w) / w, mode="valid")
        pick = label(r) in chosen and chosen[label(r)][0] == float(r.key("method.lr"))
        style = {} if not chosen else ({"lw": 2.2} if pick else {"lw": 0.9, "alpha": 0.55, "ls": "--"})
        line, = ax.plot(t[w - 1:], sm, **{"lw": 1.5, **style}, label=f"{label(r)} (γ = {r.key('method.lr'):g})")
        row = (label(r), int(r.metrics["k"][-1]), float(np.mean(bl[-10:])), float(r.metrics["loss"][-1]))
        if a.heldout:
            tv, vl = r.metrics["time"], r.metrics.get("val_loss", np.full_like(r.metrics["time"], np.nan))
            okv = np.isfinite(vl) & np.isfinite(tv)
            axv.plot(tv[okv], vl[okv], **{"lw": 1.5, **style}, color=line.get_color(), label=line.get_label())
            row = (row[0], float(r.key("method.lr"))) + row[1:] + (float(vl[okv][-1]) if okv.any() else float("nan"),)
        rows.append(row)
    ax.axhline(np.log(65), color="gray", lw=0.8, ls=":")
    ax.set_xlabel("time slots")
    ax.set_ylabel("last-stage forward loss (nats/char)")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if a.heldout:
        axv.axhline(np.log(65), color="gray", lw=0.8, ls=":")
        axv.set_xlabel("time slots")
        axv.set_ylabel("held-out loss (nats/char)")
        axv.set_title("held-out loss (validation windows)")
        axv.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)
    provenance.written(a.out)
    if a.heldout:
        print("| method | γ | block updates in the budget | last-stage loss, mean of the last 10 logged | "
              "f(w) on the 8 evaluation batches | held-out loss (last logged) |")
        print("|---|---|---|---|---|---|")
        for row in sorted(rows):
            mark = " (chosen)" if row[0] in chosen and chosen[row[0]][0] == row[1] else ""
            print(f"| {row[0]} | {row[1]:g}{mark} | {row[2]} | {row[3]:.4f} | {row[4]:.4f} | {row[5]:.4f} |")
        print()
        for m, (lr, why) in sorted(chosen.items()):
            print(f"- {m}: γ = {lr:g} ({why})")
        return
    print("| method | block updates in the budget | last-stage loss, mean of the last 10 logged | f(w) on the 8 evaluation batches |")
    print("|---|---|---|---|")
    for row in sorted(rows):
        print(f"| {row[0]} | {row[1]} | {row[2]:.4f} | {row[3]:.4f} |")


if __name__ == "__main__":
    main()
