"""The run file's metric series and the sweep index's columns: the one table the Python side
reads them by (name, type, unit, meaning).

The writers are C++: src/io/run_log.cpp (its `names` list, in MetricsRow order) writes
/metrics, src/run/sweep_index.cpp writes index.csv. Until the writer stamps a `unit` and a
`description` attribute on each /metrics dataset, this table is kept equal to it by hand, and
`scripts/check_metrics_schema.py` (a ctest) makes a run and a sweep with the binary and fails
when the files and this table disagree. `metric_info` prefers a dataset's own attributes when
a file has them, so a newer writer's units win over this table.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import AnalysisError


@dataclass(frozen=True)
class Metric:
    name: str
    dtype: str  # numpy dtype name of the HDF5 dataset
    unit: str
    description: str


# /metrics/*: 1-D series on one index, every log.every block updates plus k = 0 and the last
METRICS = (
    Metric("k", "int64", "block updates", "block updates done (0 = the starting point)"),
    Metric("time", "float64", "simulated time", "simulated time at the update's end (t_F = 1 by default; NaN without a schedule)"),
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

# index.csv: run, position, the sweep's varying keys, status, these results, path
INDEX_RESULTS = ("k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "bound", "time_to_eps_k",
                 "time_to_eps", "wall_seconds")
INDEX_LEADING = ("run", "position")
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
