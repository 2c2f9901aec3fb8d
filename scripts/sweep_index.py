"""Reading a stale sweep folder (index.csv + run files) and grouping its runs.

A sweep's index has one row per grid point: the varying keys, the status and the final
metrics. Runs that differ only in `seed` are replicates; runs that differ in the step size
are the candidates the step-size rules choose among.
"""
from __future__ import annotations

import csv
import os
from collections import defaultdict

import numpy as np

from stale_h5 import load_run


def read_index(sweep_dir: str) -> list[dict]:
    with open(os.path.join(sweep_dir, "index.csv")) as f:
        return list(csv.DictReader(f))


def axes_of(rows: list[dict]) -> list[str]:
    fixed = {"run", "position", "status", "k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "bound",
             "time_to_eps_k", "time_to_eps", "wall_seconds", "path"}
    return [c for c in rows[0].keys() if c not in fixed] if rows else []


def group(rows: list[dict], exclude: list[str]) -> dict[tuple, list[dict]]:
    """Rows grouped by every varying key except `exclude` (e.g. seed and the step size)."""
    keys = [a for a in axes_of(rows) if a not in exclude]
    out = defaultdict(list)
    for r in rows:
        out[tuple((k, r[k]) for k in keys)].append(r)
    return dict(out)


def mean_curve(sweep_dir: str, rows: list[dict], x: str = "k", y: str = "subopt"):
    """Mean and min/max over the rows' runs of metric `y` against `x` (runs of one
    configuration share their logging grid; a diverged run makes the curve inf from where it
    stopped). Returns x, mean, lo, hi, the runs."""
    runs = [load_run(os.path.join(sweep_dir, r["path"])) for r in rows if r["status"] in ("ok", "diverged")]
    if not runs:
        return None
    n = max(len(r.metrics[x]) for r in runs)
    ref = max(runs, key=lambda r: len(r.metrics[x]))
    xs = np.asarray(ref.metrics[x], dtype=float)
    ys = []
    for r in runs:
        v = np.asarray(r.metrics[y], dtype=float)
        v = np.where(np.isfinite(v), v, np.inf)
        if len(v) < n:
            v = np.concatenate([v, np.full(n - len(v), np.inf)])
        ys.append(v)
    ys = np.array(ys)
    with np.errstate(invalid="ignore", over="ignore"):
        return xs, ys.mean(axis=0), ys.min(axis=0), ys.max(axis=0), runs
