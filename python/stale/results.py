"""A run's results as Python objects: `Run` (from stale.run or from a run file written by
`stale run`), and a sweep folder's index as a DataFrame."""
from __future__ import annotations

import math
import os
import tomllib

import numpy as np

from ._stale import ConfigError
from .config import flatten

from stale_analysis.schema import RUN_SCHEMA_VERSION  # noqa: F401  (the one copy; re-exported)


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _frame(columns: dict):
    import pandas as pd
    return pd.DataFrame({k: np.asarray(v) for k, v in columns.items()})


class Run:
    """One run: `.status` (ok | diverged), `.message` (why it diverged), `.config` (every key,
    dotted), `.metrics` (DataFrame, one row per logged update: k, subopt = f − f_*,
    grad_norm_sq, its running mean, the bound and its terms, ...), `.iterates` [logged × d] at
    `.iterates_k`, `.delays` [K × S] (None for fresh-read methods or when not kept),
    `.delay_summary`, `.theory` (L, μ, f_*, δ, G, Δ₀, K, ...), `.objective`, `.schedule`
    (schedule methods), `.path` (the run file, None for a run kept in memory)."""

    def __init__(self, fields: dict, path: str | None = None):
        self.path = path
        self.status = fields["status"]
        self.message = fields.get("message", "")
        self.wall_seconds = float(fields.get("wall_seconds", math.nan))
        self.config_toml = fields["config"]
        self.config = flatten(tomllib.loads(self.config_toml))
        self._metrics = fields["metrics"]
        self.iterates = fields["iterates"]
        self.iterates_k = fields["iterates_k"]
        self.delays = fields.get("delays")
        self.delay_summary = fields.get("delay_summary")
        self.theory = dict(fields.get("theory") or {})
        self.objective = dict(fields.get("objective") or {})
        self.schedule = fields.get("schedule")
        w = fields.get("final_w")
        self.final_w = w if w is not None else (self.iterates[-1] if len(self.iterates) else None)

    @property
    def metrics(self):
        """The /metrics series as a pandas DataFrame (columns in the run file's order)."""
        return _frame(self._metrics)

    def series(self, name: str) -> np.ndarray:
        if name not in self._metrics:
            raise KeyError(f"no metric '{name}' (has: {', '.join(self._metrics)})")
        return np.asarray(self._metrics[name])

    @property
    def summary(self) -> dict:
        """The numbers of `stale run`'s summary line, from the last logged row."""
        m = self._metrics
        return {"status": self.status, "k": int(m["k"][-1]), "subopt": float(m["subopt"][-1]), "loss": float(m["loss"][-1]),
                "grad_norm_sq_mean": float(m["grad_norm_sq_mean"][-1]), "bound": float(m["bound"][-1]),
                "delta": int(self.theory["delta"]) if "delta" in (self.theory or {}) else None,
                "wall_seconds": self.wall_seconds,
                # the bound's L: None when certified (or none), else the estimate along the run (a lower
                # estimate of L, so the bound is an estimate: /theory/L_source)
                "estimated_L": float(self.theory["L"]) if self.bound_uses_estimated_L else None}

    @property
    def bound_uses_estimated_L(self) -> bool:
        """Whether the bound was evaluated with the estimate of L along the run (an objective without
        a certified L: the char-level GPT), not a certified L (/theory/L_source)."""
        from stale_analysis.bound import L_estimated  # the scripts' rule, one copy
        return L_estimated(self.theory or {})

    def __repr__(self) -> str:
        s = self.summary
        where = f" {self.path}" if self.path else ""
        est = f" (estimated L={s['estimated_L']:.4g})" if s["estimated_L"] is not None else ""
        # f − f_* where f_* is known, else f: the rule of `stale run`'s line (src/run/runner.cpp)
        gap = f"f-f*={s['subopt']:.6e}" if not math.isnan(s["subopt"]) else f"f={s['loss']:.6e}"
        why = ""
        if math.isnan(s["bound"]) and "f_low" not in self.theory and math.isnan(float(self.theory.get("f_star", math.nan))):
            why = " (the bound needs f_* or a lower bound f_low: give the model constants={'f_low': ...})"
        return (f"<stale.Run{where}: status={s['status']} k={s['k']} {gap} "
                f"mean|grad f|^2={s['grad_norm_sq_mean']:.6e} bound={s['bound']:.6e}{est}{why} delta={s['delta']}>")


def load(path) -> Run:
    """A run file written by `stale run` (or stale.run(..., out=path)) as a Run; a live or killed
    RUN.h5.partial too (its rows up to the last flush). The reader is the analysis module's
    (stale_analysis.runs: schema check, SWMR, series read on first use), so the package and the
    scripts accept and refuse the same files."""
    from stale_analysis.errors import AnalysisError
    from stale_analysis.runs import load_run, open_h5
    path = os.fspath(path)
    try:
        run = load_run(path)
        f = open_h5(path, "HDF5 run file")
    except AnalysisError as e:
        raise ConfigError(str(e)) from None
    with f:
        d = f["objective"].attrs.get("d", 0) if "objective" in f else 0
        fields = {
            "status": run.status,
            "message": _text(f.attrs.get("message", "")),
            "wall_seconds": f.attrs.get("wall_seconds", math.nan),
            "config": run._config_text,
            "metrics": run.metrics,
            "iterates": f["iterates"][()] if "iterates" in f else np.zeros((0, int(d))),
            "iterates_k": f["iterates_k"][()] if "iterates_k" in f else np.zeros(0, dtype=np.int64),
            "delays": f["delays"][()].astype(np.int64) if "delays" in f else None,
            "theory": {k: _text(v) for k, v in f["theory"].attrs.items()} if "theory" in f else {},
            "objective": {k: _text(v) for k, v in f["objective"].attrs.items()} if "objective" in f else {},
        }
        if "delay_summary" in f:
            g = f["delay_summary"]
            fields["delay_summary"] = {"max": g["max"][()], "mean": g["mean"][()],
                                       "updates": int(g.attrs["updates"]), "table_kept": int(g.attrs["table_kept"])}
        if "schedule" in f:
            g = f["schedule"]
            sched = {"makespan": float(g.attrs["makespan"]), "bubble_fraction": float(g.attrs["bubble_fraction"])}
            if "bubble_fraction" in g:
                sched["bubble"] = g["bubble_fraction"][()]
            for k in ("busy", "peak_inflight", "peak_versions", "max_crossed_measured"):
                if k in g:
                    sched[k] = g[k][()]
            fields["schedule"] = sched
        return Run(fields, path=path)


def load_sweep(directory):
    """A sweep folder's index.csv (one row per grid point: the varying keys, status, the final
    metrics and the run file's path relative to the folder) as a DataFrame."""
    import pandas as pd
    directory = os.fspath(directory)
    index = os.path.join(directory, "index.csv")
    if not os.path.exists(index):
        raise ConfigError(f"{directory}: not a sweep folder (no index.csv)")
    return pd.read_csv(index)
