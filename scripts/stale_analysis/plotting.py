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
