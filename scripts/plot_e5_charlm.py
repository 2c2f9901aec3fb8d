#!/usr/bin/env python3
"""E5 loss curves of the character-level GPT (docs/theory.md §8): the logged loss f(w_k) (the mean
over the objective's 8 fixed evaluation batches) and, where the run logged it, the loss of
each update's own mini-batch at the last stage's forward pass, against SGD steps (block
updates / S), with the landmarks of docs/theory.md §7 (uniform ln 65, unigram 3.31, bigram 2.45).

  scripts/plot_e5_charlm.py runs/e5_charlm_cpu.h5 [more.h5 ...] -o results/e5_charlm_cpu_sgd.png
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import load_run  # noqa: E402
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)

LANDMARKS = [(math.log(65), "uniform ln 65"), (3.31, "unigram"), (2.45, "bigram")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="charlm run files (.h5)")
    p.add_argument("-o", "--out", default="results/e5_charlm_cpu_sgd.png", help="output PNG")
    a = p.parse_args(argv)

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for path in a.runs:
        run = load_run(path)
        S = int(run.key("objective.stages"))
        m = run.metrics
        steps = m["k"] / S
        name = f'{run.key("method.name")} lr={run.key("method.lr")} ({os.path.basename(path)})'
        if "batch_loss" in m and np.any(m["batch_loss"][1:] > 0):
            ax.plot(steps[1:], m["batch_loss"][1:], lw=0.6, alpha=0.45, label=f"{name}: mini-batch loss")
        ax.plot(steps, m["loss"], lw=1.6, marker=".", ms=3, label=f"{name}: f(w) (8 eval batches)")
        print(f"{path}: f(w_0) = {m['loss'][0]:.4f}, f(w_K) = {m['loss'][-1]:.4f} after {int(steps[-1])} steps, "
              f"min {m['loss'].min():.4f}, wall {m['wall'][-1]:.1f} s")
    for y, label in LANDMARKS:
        ax.axhline(y, color="0.6", lw=0.8, ls="--")
        ax.text(ax.get_xlim()[1], y, f" {label}", va="center", fontsize=8, color="0.4")
    ax.set_xlabel("SGD steps (block updates / S)")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title("E5, CPU-sized char-level GPT on Tiny Shakespeare")
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    fig.savefig(a.out, dpi=130)
    provenance.written(a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
