"""Verdicts on the theory's laws that can fail (issue 53; docs/theory.md §9, results/THEORY_POWER.md).

A law such as "the stale excess grows at most like γ²L²δ²G²" is judged on its LEVEL, the inequality
the bound states (measured ≤ the bound-shaped prediction at every point), with a one-sided 95 % upper
confidence bound over seeds: the seeds are paired across the points by common random numbers (seed i
is the same stage, batch and delay stream at every δ), and the bound is simultaneous over the points
(Bonferroni: level 1 − α/J at each of J points). `level_verdict` says *met* when every upper bound
lies at or below the prediction, *NOT met* when some lower bound lies above it, else *undecided*.

The exponent is a DESCRIPTIVE estimate: E(x) = a·x^p fitted on the raw scale (no logarithm, so a
mean that is negative or zero at some points stays in the fit) by weighted least squares with
weights 1/(seed variance of the mean) per point, profiled over p (`fit_power_raw`); its interval
comes from a bootstrap over seeds ONLY (whole seed rows, so the pairing across points is kept),
as p̂ ± t(0.975, n − 1)·SE_boot·√(n/(n − 1)). No point is dropped for its outcome (sign, stability): points where
the law breaks stay in the fit. `exponent_verdict` can say *NOT met*: the whole interval above the
predicted exponent. Its power at the per-seed noise of the committed runs is in
results/THEORY_POWER.md (`python3 scripts/verdict_power.py`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

P_GRID = np.arange(-3.0, 9.0 + 1e-9, 0.05)  # the coarse profile; refined to 0.002 around each optimum
P_FINE = np.linspace(-0.05, 0.05, 51)


# ---- Student t without scipy ------------------------------------------------------------------
def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with integer df (Abramowitz & Stegun 26.7.3–4, exact series)."""
    if df < 1:
        raise ValueError("df must be ≥ 1")
    th = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(th) ** 2, math.sin(th)
    if df % 2 == 1:
        term, total = math.cos(th), 0.0
        if df > 1:
            total = term
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                total += term
        a = 2 / math.pi * (th + s * total)
    else:
        term, total = 1.0, 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        a = s * total
    return 0.5 + 0.5 * a if t >= 0 else 0.5 - 0.5 * a


def t_quantile(q: float, df: int) -> float:
    """The q-quantile of Student's t with integer df (bisection on t_cdf, to 1e-10)."""
    if not 0 < q < 1:
        raise ValueError("q must lie in (0, 1)")
    if q < 0.5:
        return -t_quantile(1 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return 0.5 * (lo + hi)


# ---- the level of a law -----------------------------------------------------------------------
@dataclass
class LevelVerdict:
    verdict: str          # "met", "NOT met" or "undecided"
    points: int
    seeds: int
    upper: np.ndarray     # per point: simultaneous one-sided upper bound of mean(measured − predicted)
    lower: np.ndarray     # per point: the matching lower bound
    worst: float          # largest upper bound ÷ mean prediction (≤ 0: met with that margin)


def level_verdict(measured, predicted, alpha: float = 0.05) -> LevelVerdict:
    """measured: [seeds, points], each seed paired across the points; predicted: [points] or
    [seeds, points] (a prediction per seed, e.g. the stale term with the run's own G). One-sided
    (1 − α) bounds on mean(measured − predicted), simultaneous over the J points (level 1 − α/J each)."""
    Y = np.atleast_2d(np.asarray(measured, float))
    P = np.broadcast_to(np.asarray(predicted, float), Y.shape)
    n, J = Y.shape
    if n < 2:
        raise ValueError("a confidence bound over seeds needs at least 2 seeds")
    D = Y - P
    if not np.all(np.isfinite(D)):
        raise ValueError("measured and predicted must be finite (report diverged points apart)")
    t = t_quantile(1 - alpha / J, n - 1)
    se = D.std(axis=0, ddof=1) / math.sqrt(n)
    upper, lower = D.mean(0) + t * se, D.mean(0) - t * se
    verdict = "met" if np.all(upper <= 0) else ("NOT met" if np.any(lower > 0) else "undecided")
    with np.errstate(all="ignore"):
        worst = float(np.max(upper / np.abs(P.mean(0))))
    return LevelVerdict(verdict, J, n, upper, lower, worst)


# ---- the exponent, descriptive ----------------------------------------------------------------
def fit_power_raw(x, means, weights) -> np.ndarray:
    """p of the weighted least-squares fit means ≈ a·x^p with a > 0, on the raw scale, for every row
    of means ([replicates, points]); nan for a row that no positive a fits (every weighted
    projection ≤ 0). Profile: a(p) = Σw y x^p / Σw x^2p, so the fit maximises (Σw y x^p)²/Σw x^2p."""
    x = np.asarray(x, float)
    M = np.atleast_2d(np.asarray(means, float))
    w = np.broadcast_to(np.asarray(weights, float), M.shape)
    lx = np.log(x / np.exp(np.mean(np.log(x))))  # centred: x^p stays O(1) over the grid

    def score(P):  # P: [R, G] exponents per row -> [R, G] explained weighted sum of squares (−inf if a ≤ 0)
        Xp = np.exp(P[..., None] * lx)                       # [R, G, J]
        num = np.einsum("rgj,rj->rg", Xp, w * M)
        den = np.einsum("rgj,rj->rg", Xp * Xp, w)
        return np.where(num > 0, num * num / den, -np.inf)

    coarse = score(np.broadcast_to(P_GRID, (len(M), len(P_GRID))))
    best = P_GRID[np.argmax(coarse, axis=1)]
    fine = best[:, None] + P_FINE[None, :]
    sf = score(fine)
    p = fine[np.arange(len(M)), np.argmax(sf, axis=1)]
    p[~np.isfinite(coarse.max(axis=1))] = np.nan
    return p


def point_weights(Y) -> np.ndarray:
    """1/(variance over seeds) per point, for Y [seeds, points] or a stack [replicates, seeds, points];
    a variance below 1e-3 of the row's median is floored there, so that a point whose seeds agree by
    chance does not take the whole fit."""
    v = np.var(Y, axis=-2, ddof=1)
    med = np.median(np.where(v > 0, v, np.nan), axis=-1, keepdims=True)
    med = np.where(np.isfinite(med), med, 1.0)
    return 1.0 / np.maximum(v, 1e-3 * med)


@dataclass
class ExponentFit:
    estimate: float
    lo: float
    hi: float
    se: float
    seeds: int
    points: int


def fit_exponent_raw(x, ys_by_seed, boot: int = 1000, seed: int = 0) -> ExponentFit:
    """The descriptive exponent of E(x) = a·x^p (fit_power_raw on the mean over seeds, weights
    from point_weights) with a 95 % interval p̂ ± t(0.975, n − 1)·SE, SE from a bootstrap over seeds
    only (rows of ys_by_seed resampled whole). Needs ≥ 2 points, ≥ 2 seeds, finite values."""
    x = np.asarray(x, float)
    Y = np.atleast_2d(np.asarray(ys_by_seed, float))
    n, J = Y.shape
    if J != len(x) or J < 2 or n < 2 or np.any(x <= 0):
        raise ValueError("need [seeds ≥ 2, points ≥ 2] values at x > 0")
    if not np.all(np.isfinite(Y)):
        raise ValueError("every value must be finite (report diverged points apart)")
    w = point_weights(Y)
    est = float(fit_power_raw(x, Y.mean(0)[None, :], w)[0])
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, (boot, n))
    # each replicate weighs its points by its own seed variances: the weights' noise is part of the estimate's
    Yb = Y[rows]
    bs = fit_power_raw(x, Yb.mean(axis=1), point_weights(Yb))
    fin = bs[np.isfinite(bs)]
    if not math.isfinite(est) or len(fin) < boot // 2:
        return ExponentFit(math.nan, math.nan, math.nan, math.nan, n, J)
    # the bootstrap variance of a mean over n seeds is (n − 1)/n of the sample's: undo that before the t quantile
    se = float(np.std(fin, ddof=1)) * math.sqrt(n / (n - 1))
    t = t_quantile(0.975, n - 1)
    return ExponentFit(est, est - t * se, est + t * se, se, n, J)


def exponent_verdict(fit: ExponentFit, predicted: float) -> str:
    """Against a predicted upper bound on the exponent: met (interval at or below), NOT met (above),
    undecided (straddles), or no power law (no positive a·x^p fits the mean)."""
    if not math.isfinite(fit.estimate):
        return "no power law (no positive a·x^p fits the mean)"
    if fit.hi <= predicted:
        return "met"
    if fit.lo > predicted:
        return "NOT met"
    return "undecided"
