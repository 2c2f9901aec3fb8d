"""Matplotlib helpers shared by the figure scripts: median-and-range bands, step sizes as
math text, a caption line under the axes."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401
import numpy as np  # noqa: E402


def band(ax, x, ys, color, label, style="-"):
    """Median of the rows of ys with a min–max band (no band for a single row)."""
    ys = np.atleast_2d(np.asarray(ys, dtype=float))
    with np.errstate(all="ignore"):
        med = np.median(ys, axis=0)
        lo, hi = ys.min(axis=0), ys.max(axis=0)
    ax.plot(x, med, style, color=color, label=label, lw=1.4)
    if len(ys) > 1:
        ax.fill_between(x, lo, hi, color=color, alpha=0.18, lw=0)


def pow2_tex(v: float) -> str:
    """0.015625 -> '$2^{-6}$'; values that are not powers of two as %g."""
    if v > 0:
        e = math.log2(v)
        if abs(e - round(e)) < 1e-12:
            return f"$2^{{{int(round(e))}}}$"
    return f"{v:g}"


def caption(fig, text: str):
    """A small line of text under the axes (e.g. how many runs were left out and why)."""
    if text:
        fig.text(0.01, 0.005, text, fontsize=7.5, color="0.3", ha="left", va="bottom", wrap=True)


def plain_log_ticks(ax, lo: float, hi: float, axis: str = "y"):
    """On a log axis spanning about a decade or less, label round plain numbers (0.2, 0.3, 5, 6)
    instead of matplotlib's sparse 10^k / 6×10^0 labels."""
    if not (lo > 0 and hi > lo) or hi / lo > 30:
        return
    cands = sorted({m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                    for m in (1, 1.5, 2, 3, 4, 5, 6, 8)})
    ticks = [v for v in cands if lo / 1.15 <= v <= hi * 1.15]
    if len(ticks) > 8:
        ticks = [v for v in ticks if round(v / 10.0 ** math.floor(math.log10(v)), 6) in (1, 2, 5)]
    if len(ticks) < 2:
        return
    labels = [f"{v:g}" for v in ticks]
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yticks if axis == "y" else ax.set_xticks)(ticks, labels)
    target.set_minor_locator(matplotlib.ticker.NullLocator())
