"""Step-size selection over a sweep (docs/theory.md §8): the RPD authors' "stable" rule and
plain best-final, on the mean curve over seeds.

A step size's tail (the last 25% of logged points of its mean curve) is stable when its
coefficient of variation ≤ 0.15, fraction of upward steps ≤ 0.45, largest upward jump ≤ 0.05 ×
tail mean, total-variation ratio ≤ 5 and log-slope ≤ 1e-4 (LM: 0.25, 0.55, 0.10, 10, 1e-3).
Among the stable step sizes the rule takes the smallest whose tail mean is within 5% of the
best stable tail mean; if none is stable, the lowest tail mean. Our reading of two criteria
the paper leaves open: the total-variation ratio is Σ|Δy| / |y_last − y_first| over the tail,
and the log-slope is the least-squares slope of log y against tail position scaled to [0, 1].
"""
from __future__ import annotations

import math

import numpy as np

from .runs import DIVERGENCE_FACTOR
from .sweeps import group_rows, mean_curve, read_index

THRESHOLDS = {"default": (0.15, 0.45, 0.05, 5.0, 1e-4), "lm": (0.25, 0.55, 0.10, 10.0, 1e-3)}


def tail_stats(y, frac: float = 0.25, factor: float = DIVERGENCE_FACTOR) -> dict:
    """Tail statistics of a curve; `finite` is False when the tail is not finite or the curve
    ends above `factor` × its start (diverged)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    t = y[max(0, int(math.floor(n * (1 - frac)))):]
    if len(t) == 0 or not np.all(np.isfinite(t)):
        return {"finite": False, "tail_mean": math.inf}
    if len(t) < 2:
        # one logged point cannot show stability either way: finite, never "stable"
        return {"finite": True, "tail_mean": float(t[-1]), "cv": math.inf, "up_frac": math.inf, "max_jump": math.inf,
                "tv_ratio": math.inf, "log_slope": math.inf}
    if np.isfinite(y[0]) and y[0] > 0 and y[-1] > factor * y[0]:
        return {"finite": False, "tail_mean": math.inf}
    with np.errstate(all="ignore"):
        mean = float(np.mean(t))
        d = np.diff(t)
        tv = float(np.sum(np.abs(d)))
        net = abs(float(t[-1] - t[0]))
        pos = np.linspace(0.0, 1.0, len(t))
        logt = np.log(np.maximum(t, 1e-300))
        slope = float(np.polyfit(pos, logt, 1)[0])
        cv = float(np.std(t) / mean) if mean > 0 else math.inf
        jump = float(np.max(np.maximum(d, 0.0)) / mean) if mean > 0 else math.inf
    if not (math.isfinite(mean) and math.isfinite(tv)):
        return {"finite": False, "tail_mean": math.inf}
    return {
        "finite": True,
        "tail_mean": mean,
        "cv": cv,
        "up_frac": float(np.mean(d > 0)),
        "max_jump": jump,
        "tv_ratio": tv / net if net > 0 else (0.0 if tv == 0 else math.inf),
        "log_slope": slope,
    }


def is_stable(st: dict, lm: bool = False) -> bool:
    cv, up, jump, tv, slope = THRESHOLDS["lm" if lm else "default"]
    return (st["finite"] and st["cv"] <= cv and st["up_frac"] <= up and st["max_jump"] <= jump and st["tv_ratio"] <= tv
            and st["log_slope"] <= slope)


def choose(candidates: dict[float, dict], rule: str = "stable", lm: bool = False) -> tuple[float, str]:
    """candidates: step size -> tail stats. Returns (step size, why)."""
    finite = {lr: s for lr, s in candidates.items() if s["finite"]}
    if not finite:
        return min(candidates), "every step size diverged; smallest reported"
    if rule == "best":
        return min(finite, key=lambda k: finite[k]["tail_mean"]), "lowest tail mean"
    stable = {lr: s for lr, s in finite.items() if is_stable(s, lm)}
    if stable:
        best_stable = min(s["tail_mean"] for s in stable.values())
        ok = [lr for lr, s in stable.items() if s["tail_mean"] <= 1.05 * best_stable]
        return min(ok), "stable, smallest within 5% of the best stable tail"
    return min(finite, key=lambda k: finite[k]["tail_mean"]), "none stable: lowest tail mean"


def grid_edge(lr: float, grid) -> str:
    """'smallest' or 'largest' when lr is at that end of a grid of ≥ 2 step sizes, else '': a
    rule's choice at an edge may lie beyond the grid, so the grid should be widened there."""
    grid = sorted(set(float(g) for g in grid))
    if len(grid) < 2:
        return ""
    return "smallest" if lr == grid[0] else "largest" if lr == grid[-1] else ""


def select(sweep_dir: str, lr_key: str = "method.lr", seed_key: str = "seed", rule: str = "stable", lm: bool = False,
           x: str = "k", y: str = "subopt") -> list[dict]:
    """For every configuration of the sweep (all varying keys but the step size and the seed,
    in numeric order), the chosen step size, why, its mean curve and its final values."""
    rows = read_index(sweep_dir)
    out = []
    for cfg, members in group_rows(rows, [lr_key, seed_key]):
        by_lr: dict[float, list[dict]] = {}
        for r in members:
            by_lr.setdefault(float(r[lr_key]), []).append(r)
        stats, curves = {}, {}
        for lr, rs in by_lr.items():
            c = mean_curve(sweep_dir, rs, x, y)
            if c is None:
                continue
            curves[lr] = c
            stats[lr] = tail_stats(c[1])
        if not stats:
            continue
        lr, why = choose(stats, rule, lm)
        finals = [float(r[y]) if r.get(y) not in ("", None) else math.inf for r in by_lr[lr]]
        with np.errstate(all="ignore"):
            out.append({"config": dict(cfg), "lr": lr, "why": why, "grid_edge": grid_edge(lr, list(by_lr)),
                        "stats": stats, "curve": curves[lr],
                        "final_mean": float(np.mean(finals)), "final_min": float(np.min(finals)),
                        "final_max": float(np.max(finals)), "seeds": len(finals), "rows": by_lr[lr]})
    return out
