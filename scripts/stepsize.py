#!/usr/bin/env python3
"""Step-size selection over a sweep: the RPD authors' "stable" rule (theory.md §8) and plain
best-final, on the mean curve over seeds.

  scripts/stepsize.py sweeps/e1_sweep [--lr-key method.lr] [--rule stable|best] [--lm]

For every configuration (all varying keys but the step size and the seed), each step size
gets the mean curve of f − f_* over its seeds; its tail (the last 25% of logged points) is
tested for stability:
  coefficient of variation ≤ 0.15, fraction of upward steps ≤ 0.45, largest upward jump
  ≤ 0.05 × tail mean, total-variation ratio ≤ 5, and log-slope ≤ 1e-4
(LM thresholds 0.25, 0.55, 0.10, 10, 1e-3). Among the stable step sizes the rule takes the
smallest whose tail mean is within 5% of the best tail mean; if none is stable, the lowest
tail mean. Our reading of two criteria the paper leaves open: the total-variation ratio is
Σ|Δy| / |y_last − y_first| of the tail, and the log-slope is the least-squares slope of
log y against the tail's position scaled to [0, 1].
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_index import group, mean_curve, read_index  # noqa: E402

THRESHOLDS = {"default": (0.15, 0.45, 0.05, 5.0, 1e-4), "lm": (0.25, 0.55, 0.10, 10.0, 1e-3)}


def tail_stats(y: np.ndarray, frac: float = 0.25) -> dict:
    n = len(y)
    t = y[max(0, int(math.floor(n * (1 - frac)))):]
    if len(t) < 2 or not np.all(np.isfinite(t)):
        return {"finite": False, "tail_mean": math.inf}
    mean = float(np.mean(t))
    d = np.diff(t)
    tv = float(np.sum(np.abs(d)))
    net = abs(float(t[-1] - t[0]))
    pos = np.linspace(0.0, 1.0, len(t))
    logt = np.log(np.maximum(t, 1e-300))
    slope = float(np.polyfit(pos, logt, 1)[0])
    return {
        "finite": True,
        "tail_mean": mean,
        "cv": float(np.std(t) / mean) if mean > 0 else math.inf,
        "up_frac": float(np.mean(d > 0)),
        "max_jump": float(np.max(np.maximum(d, 0.0)) / mean) if mean > 0 else math.inf,
        "tv_ratio": tv / net if net > 0 else (0.0 if tv == 0 else math.inf),
        "log_slope": slope,
    }


def is_stable(st: dict, lm: bool = False) -> bool:
    cv, up, jump, tv, slope = THRESHOLDS["lm" if lm else "default"]
    return (st["finite"] and st["cv"] <= cv and st["up_frac"] <= up and st["max_jump"] <= jump and st["tv_ratio"] <= tv
            and st["log_slope"] <= slope)


def choose(candidates: dict[float, dict], rule: str = "stable", lm: bool = False) -> tuple[float, str]:
    """candidates: lr -> tail stats. Returns (lr, why)."""
    finite = {lr: s for lr, s in candidates.items() if s["finite"]}
    if not finite:
        return min(candidates), "every step size diverged; smallest reported"
    best = min(s["tail_mean"] for s in finite.values())
    if rule == "best":
        lr = min(finite, key=lambda k: finite[k]["tail_mean"])
        return lr, "lowest tail mean"
    stable = {lr: s for lr, s in finite.items() if is_stable(s, lm)}
    if stable:
        best_stable = min(s["tail_mean"] for s in stable.values())
        ok = [lr for lr, s in stable.items() if s["tail_mean"] <= 1.05 * best_stable]
        return min(ok), "stable, smallest within 5% of the best stable tail"
    return min(finite, key=lambda k: finite[k]["tail_mean"]), "none stable: lowest tail mean"


def select(sweep_dir: str, lr_key: str = "method.lr", seed_key: str = "seed", rule: str = "stable", lm: bool = False,
           x: str = "k", y: str = "subopt") -> list[dict]:
    rows = read_index(sweep_dir)
    out = []
    for cfg, members in sorted(group(rows, [lr_key, seed_key]).items()):
        by_lr = {}
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
        finals = [float(r["subopt"]) if r["subopt"] not in ("", None) else math.inf for r in by_lr[lr]]
        out.append({"config": dict(cfg), "lr": lr, "why": why, "stats": stats, "curve": curves[lr],
                    "final_mean": float(np.mean(finals)), "final_min": float(np.min(finals)),
                    "final_max": float(np.max(finals)), "seeds": len(finals), "rows": by_lr[lr]})
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep_dir")
    p.add_argument("--lr-key", default="method.lr")
    p.add_argument("--seed-key", default="seed")
    p.add_argument("--rule", choices=["stable", "best"], default="stable")
    p.add_argument("--lm", action="store_true", help="the LM thresholds of theory.md §8")
    p.add_argument("--x", default="k", help="metric used as the curve's x (k or time)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    res = select(a.sweep_dir, a.lr_key, a.seed_key, a.rule, a.lm, a.x)
    if a.json:
        print(json.dumps([{k: v for k, v in r.items() if k in ("config", "lr", "why", "final_mean", "final_min",
                                                               "final_max", "seeds")} for r in res], indent=1))
        return
    print("| configuration | chosen γ | rule | final f − f_* mean [min, max] | seeds |")
    print("|---|---|---|---|---|")
    for r in res:
        cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items()) or "(all)"
        print(f"| {cfg} | {r['lr']:g} | {r['why']} | {r['final_mean']:.4g} [{r['final_min']:.3g}, {r['final_max']:.3g}] | {r['seeds']} |")


if __name__ == "__main__":
    main()
