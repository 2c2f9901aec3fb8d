"""The run file's metric series and the sweep index's columns: the table the Python side reads
them by (name, type, unit, meaning).

The source of truth is C++: src/io/metrics_schema.cpp holds one row per /metrics series and
per index result column, and the writers and readers (the run file, in-memory runs, resume,
the sweep index) all go through it; `stale schema --json` prints it. This module keeps a copy
so that it imports without the binary; `scripts/check_metrics_schema.py` (a ctest) compares
it with `stale schema --json` field by field (name, dtype, unit, description, order) and with
the files a run and a sweep actually write, and fails on any difference. Run files also carry
each series' `unit` and `description` as attributes of its /metrics dataset (index.h5 of its
columns); `metric_info` prefers those, so a file describes itself whatever this copy says.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import AnalysisError


# the run file layout this module reads: the root attribute schema_version that src/io/run_file.cpp
# writes (kRunFileSchemaVersion); scripts/check_metrics_schema.py compares it with a file the binary writes
RUN_SCHEMA_VERSION = 1
# the schedule file's (`stale schedule --out`): the schema_version src/io/schedule_file.cpp writes, compared
# by the same script
SCHEDULE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Metric:
    name: str
    dtype: str  # numpy dtype name of the HDF5 dataset
    unit: str
    description: str


# /metrics/*: 1-D series on one index, every log.every block updates plus k = 0 and the last
METRICS = (
    Metric("k", "int64", "block updates", "block updates done (0 = the starting point)"),
    Metric("time", "float64", "simulated time", "simulated time at the update's end (t_F = 1 by default; 0 at k = 0; NaN without a schedule)"),
    Metric("loss", "float64", "loss", "f(w_k) over all data"),
    Metric("subopt", "float64", "loss", "f(w_k) - f_* (NaN when f_* is unknown)"),
    Metric("grad_norm_sq", "float64", "squared gradient norm", "‖∇f(w_k)‖², exact"),
    Metric("grad_norm_sq_mean", "float64", "squared gradient norm", "(1/K) Σ_{k<K} ‖∇f(w_k)‖², the bound's left side"),
    Metric("stale_dist", "float64", "parameter norm", "‖w_k − z_k‖, distance of the read point from the iterate"),
    Metric("stage", "int64", "block", "the block updated (−1: all blocks at once)"),
    Metric("batch", "int64", "mini-batch", "the mini-batch the gradient was taken on"),
    Metric("bound", "float64", "squared gradient norm", "the convergence bound 2SΔ₀/(γK) + γSLG² + γ²L²δ²G²"),
    Metric("bound_opt", "float64", "squared gradient norm", "the bound's optimisation term 2SΔ₀/(γK)"),
    Metric("bound_stoch", "float64", "squared gradient norm", "the bound's stochastic term γSLG²"),
    Metric("bound_stale", "float64", "squared gradient norm", "the bound's stale-read term γ²L²δ²G²"),
    Metric("G", "float64", "gradient norm", "running maximum block-gradient norm"),
    Metric("wall", "float64", "seconds", "wall-clock time since the run started"),
    Metric("batch_loss", "float64", "loss", "loss at the last stage's forward of the update's micro-batch"),
    Metric("val_loss", "float64", "loss", "held-out loss (NaN without a held-out set)"),
)
METRIC_NAMES = tuple(m.name for m in METRICS)
_BY_NAME = {m.name: m for m in METRICS}

# index.csv: run, position, duplicate_of, the sweep's varying keys, status, these results, path
# (index.h5: one dataset each); a result is empty in the CSV (NaN in index.h5) when the run file is
# missing; duplicate_of is the grid position of the earlier point that is the same run (empty in
# the CSV, -1 in index.h5, for a point that is not a duplicate)
INDEX_COLUMNS = (
    Metric("k", "float64", "block updates", "block updates done (the last logged k)"),
    Metric("time", "float64", "simulated time", "simulated time at the last logged update (NaN without a schedule)"),
    Metric("loss", "float64", "loss", "f at the last logged update"),
    Metric("subopt", "float64", "loss", "f - f_* at the last logged update"),
    Metric("grad_norm_sq", "float64", "squared gradient norm", "‖∇f(w_k)‖² at the last logged update"),
    Metric("grad_norm_sq_mean", "float64", "squared gradient norm", "(1/K) Σ_{k<K} ‖∇f(w_k)‖² at the end"),
    Metric("bound", "float64", "squared gradient norm", "the convergence bound at the end"),
    Metric("bound_opt", "float64", "squared gradient norm", "the bound's optimisation term 2SΔ₀/(γK) at the end"),
    Metric("bound_stoch", "float64", "squared gradient norm", "the bound's stochastic term γSLG² at the end"),
    Metric("bound_stale", "float64", "squared gradient norm", "the bound's stale-read term γ²L²δ²G² at the end"),
    Metric("G", "float64", "gradient norm", "the running maximum block-gradient norm at the end"),
    Metric("delta", "float64", "block updates",
           "δ of the bound: the largest delay any read of the run had, warm-up included (/theory/delta)"),
    Metric("lr_within_1_over_L", "float64", "flag",
           "1 when γ ≤ 1/L, the bound's step-size condition; 0 when not (/theory/lr_within_1_over_L)"),
    Metric("L", "float64", "curvature", "the smoothness constant L the bound used (/theory/L; NaN: none)"),
    Metric("L_estimated", "float64", "flag",
           "1 when the bound's L is the estimate along the run (a lower estimate of L: the bound is not certified), 0 "
           "when certified (/theory/L_source)"),
    Metric("time_to_eps_k", "float64", "block updates",
           "the first logged k with f - f_* ≤ epsilon (empty: never, or no epsilon)"),
    Metric("time_to_eps", "float64", "simulated time", "the simulated time of time_to_eps_k"),
    Metric("wall_seconds", "float64", "seconds", "the run's wall time (its root attribute wall_seconds)"),
)
INDEX_RESULTS = tuple(c.name for c in INDEX_COLUMNS)
INDEX_LEADING = ("run", "position", "duplicate_of")
INDEX_TRAILING = ("status",) + INDEX_RESULTS + ("path",)
# index columns that are not grid axes
INDEX_NON_AXIS = frozenset(INDEX_LEADING + INDEX_TRAILING)


def metric_info(name: str, dataset=None) -> Metric:
    """The table's row for a metric; with an h5py dataset, its own `unit`/`description`
    attributes where it has them. An unknown name is an AnalysisError naming the valid ones."""
    m = _BY_NAME.get(name)
    if m is None:
        raise AnalysisError(f"unknown metric '{name}' (the run file has: {', '.join(METRIC_NAMES)})")
    if dataset is not None:
        def attr(key, default):
            v = dataset.attrs.get(key)
            return v.decode() if isinstance(v, bytes) else (str(v) if v is not None else default)
        return Metric(m.name, m.dtype, attr("unit", m.unit), attr("description", m.description))
    return m


def axis_label(name: str) -> str:
    """'subopt [loss]': a metric's name and unit for an axis."""
    return f"{name} [{metric_info(name).unit}]"
