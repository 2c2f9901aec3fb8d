"""Exponent fits of the theory audits (docs/theory.md §9): least-squares slopes in log–log
with a bootstrap interval over seeds."""
from __future__ import annotations

import math

import numpy as np


def fit_exponent(x, ys_by_seed, boot: int = 2000, seed: int = 0):
    """Slope of log(mean y) on log x and a 95% bootstrap interval over seeds (rows of
    ys_by_seed, shape [seeds, len(x)]); points with a non-positive or non-finite mean are
    left out. Returns (slope, lo, hi); nan where fewer than 2 points remain."""
    x = np.asarray(x, float)
    Y = np.atleast_2d(np.asarray(ys_by_seed, float))
    rng = np.random.default_rng(seed)

    def slope(Ym):
        with np.errstate(all="ignore"):
            m = Ym.mean(axis=0)
        ok = (m > 0) & np.isfinite(m) & (x > 0)
        if ok.sum() < 2:
            return math.nan
        return float(np.polyfit(np.log(x[ok]), np.log(m[ok]), 1)[0])

    est = slope(Y)
    bs = np.array([slope(Y[rng.integers(0, len(Y), len(Y))]) for _ in range(boot)])
    bs = bs[np.isfinite(bs)]
    lo, hi = (np.percentile(bs, [2.5, 97.5]) if len(bs) else (math.nan, math.nan))
    return est, float(lo), float(hi)


def r_squared(x, y) -> float:
    """R² of the log–log line through (x, y) (positive values only)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = (x > 0) & (y > 0) & np.isfinite(y)
    if ok.sum() < 3:
        return math.nan
    lx, ly = np.log(x[ok]), np.log(y[ok])
    p = np.polyfit(lx, ly, 1)
    res = ly - np.polyval(p, lx)
    tot = ly - ly.mean()
    return 1.0 - float(res @ res) / float(tot @ tot) if float(tot @ tot) > 0 else math.nan


def positive_tail(xs, means) -> int:
    """Start index of the longest contiguous run of points, ending at the largest x, whose
    mean is positive (the range where an excess can be fitted in log–log)."""
    i = len(xs)
    while i > 0 and means[i - 1] > 0:
        i -= 1
    return i


def fit_exponent_seeds_points(x, ys_by_seed, boot: int = 4000, seed: int = 0):
    """Slope of log(mean over seeds of y) on log x, with a 95% interval from a two-way bootstrap:
    each replicate resamples the seeds (rows of ys_by_seed, shape [seeds, len(x)]) and,
    independently, the points (columns) with replacement, so the interval carries both the
    seed noise and the leverage of single points (a law that holds only at one end of the range
    gets a wide interval). Every mean must be positive and finite (fit only where the quantity
    is a power law; the caller says where). Returns (slope, lo, hi); a replicate that draws
    fewer than 2 distinct x values is redrawn."""
    x = np.asarray(x, float)
    Y = np.atleast_2d(np.asarray(ys_by_seed, float))
    if Y.shape[1] != len(x):
        raise ValueError(f"ys_by_seed has {Y.shape[1]} columns for {len(x)} points")
    if len(x) < 2 or np.any(x <= 0):
        raise ValueError("need at least 2 points with x > 0")
    m = Y.mean(axis=0)
    if np.any(~np.isfinite(m)) or np.any(m <= 0):
        raise ValueError("every mean over seeds must be positive and finite to fit a power law")
    lx = np.log(x)
    est = float(np.polyfit(lx, np.log(m), 1)[0])
    rng = np.random.default_rng(seed)
    n_s, n_p = Y.shape
    bs = []
    while len(bs) < boot:
        rows = rng.integers(0, n_s, n_s)
        cols = rng.integers(0, n_p, n_p)
        if len(np.unique(cols)) < 2:
            continue
        mm = Y[np.ix_(rows, cols)].mean(axis=0)
        if np.any(mm <= 0):
            bs.append(math.nan)  # a resampled mean that is not positive: no power law in this replicate
            continue
        bs.append(float(np.polyfit(lx[cols], np.log(mm), 1)[0]))
    bs = np.array(bs)
    fin = bs[np.isfinite(bs)]
    lo, hi = (np.percentile(fin, [2.5, 97.5]) if len(fin) else (math.nan, math.nan))
    return est, float(lo), float(hi)
