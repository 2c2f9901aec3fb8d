"""Sweep folders (`stale sweep` output): index.csv with one row per grid point, run files
under runs/. Runs that differ only in `seed` are replicates; runs that differ in the step size
are the candidates of the step-size rule."""
from __future__ import annotations

import csv
import os

import numpy as np

from .errors import AnalysisError
from .grouping import sort_key
from .runs import DIVERGENCE_FACTOR, load_run
from .schema import INDEX_NON_AXIS

# Index columns that are results, not grid axes (schema.py holds the index's columns).
RESULT_COLUMNS = INDEX_NON_AXIS


def find_sweep(root: str, names: list[str], sweep_file: str | None = None) -> str:
    """The first of root/<name> that holds an index.csv. `stale sweep experiments/X.toml`
    writes sweeps/X by default (the README's commands); older layouts used shorter names,
    which are accepted after it."""
    for n in names:
        d = os.path.join(root, n)
        if os.path.exists(os.path.join(d, "index.csv")):
            return d
    looked = ", ".join(os.path.join(root, n) for n in names)
    make = f"; make it with `build/stale sweep {sweep_file}`" if sweep_file else ""
    raise AnalysisError(f"no sweep index found (looked for index.csv in {looked}){make}")


def read_index(sweep_dir: str) -> list[dict]:
    path = os.path.join(sweep_dir, "index.csv")
    if not os.path.exists(path):
        raise AnalysisError(f"{sweep_dir}: not a sweep folder (no index.csv)")
    with open(path) as f:
        return list(csv.DictReader(f))


def axes_of(rows: list[dict]) -> list[str]:
    return [c for c in rows[0].keys() if c not in RESULT_COLUMNS] if rows else []


def group_rows(rows: list[dict], exclude: list[str]) -> list[tuple[tuple, list[dict]]]:
    """Rows grouped by every varying key except `exclude` (e.g. the seed and the step size),
    as (((key, value), ...), rows) sorted numerically by value."""
    keys = [a for a in axes_of(rows) if a not in exclude]
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple((k, r[k]) for k in keys), []).append(r)
    return sorted(out.items(), key=lambda kv: sort_key(tuple(v for _, v in kv[0])))


def mean_curve(sweep_dir: str, rows: list[dict], x: str = "k", y: str = "subopt",
               factor: float = DIVERGENCE_FACTOR):
    """Mean and min/max over the rows' runs of metric `y` against `x`. A run that stopped
    early, went non-finite, or rose above `factor` × its start counts as diverged: its curve is
    inf from there on. Returns (x, mean, lo, hi, runs) or None when no run file is usable."""
    runs = [load_run(os.path.join(sweep_dir, r["path"])) for r in rows if r["status"] in ("ok", "diverged")]
    if not runs:
        return None
    ref = max(runs, key=lambda r: len(r.metrics[x]))
    n = len(ref.metrics[x])
    xs = np.asarray(ref.metrics[x], dtype=float)
    ys = []
    for r in runs:
        v = np.asarray(r.metrics[y], dtype=float)
        v = np.where(np.isfinite(v), v, np.inf)
        if len(v) and np.isfinite(v[0]) and v[0] > 0:
            above = np.nonzero(v > factor * v[0])[0]
            if len(above):
                v[above[0]:] = np.inf
        if len(v) < n:
            v = np.concatenate([v, np.full(n - len(v), np.inf)])
        ys.append(v)
    ys = np.array(ys)
    with np.errstate(all="ignore"):
        return xs, ys.mean(axis=0), ys.min(axis=0), ys.max(axis=0), runs
