#!/usr/bin/env python3
"""E5 figure (docs/theory.md §8): the loss at the last stage's forward pass (the run files'
/metrics/batch_loss, smoothed over a window of logged points) against simulated time slots,
one curve per run, and a Markdown table of the final values.

  scripts/plot_e5_compare.py runs/e5/*.h5 -o results/e5_charlm_pd_vs_localsgd.png [--window 15]
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
from stale_analysis import load_run  # noqa: E402


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
    a = p.parse_args(argv)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = []
    for path in a.runs:
        r = load_run(path)
        t, bl = r.metrics["time"], r.metrics["batch_loss"]
        ok = np.isfinite(bl) & np.isfinite(t)
        t, bl = t[ok], bl[ok]
        w = max(1, min(a.window, len(bl)))
        sm = np.convolve(bl, np.ones(w) / w, mode="valid")
        ax.plot(t[w - 1:], sm, lw=1.5, label=f"{label(r)} (γ = {r.key('method.lr'):g})")
        rows.append((label(r), int(r.metrics["k"][-1]), float(np.mean(bl[-10:])), float(r.metrics["loss"][-1])))
    ax.axhline(np.log(65), color="gray", lw=0.8, ls=":")
    ax.set_xlabel("time slots")
    ax.set_ylabel("last-stage forward loss (nats/char)")
    ax.set_title("E5 (CPU-sized): char-level GPT, S = 6, PD vs LocalSGD")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)
    print("| method | block updates in the budget | last-stage loss, mean of the last 10 logged | f(w) on the 8 evaluation batches |")
    print("|---|---|---|---|")
    for row in sorted(rows):
        print(f"| {row[0]} | {row[1]} | {row[2]:.4f} | {row[3]:.4f} |")


if __name__ == "__main__":
    main()
