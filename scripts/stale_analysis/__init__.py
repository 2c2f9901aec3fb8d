"""The analysis layer shared by every script in scripts/: reading run files and sweep folders,
selecting and grouping runs by config keys, deciding which runs diverged, the step-size rule
of docs/theory.md §8 and the exponent fits of the audits (docs/theory.md §9).

The scripts (plot_runs.py, summarize_runs.py, stepsize.py, experiments.py, audits.py, …) are
thin command lines over this package, so a rule (what counts as diverged, how runs are
grouped, how values sort) is written once and every figure and table follows it.
"""
from .errors import AnalysisError, run_cli, warn
from .runs import (DIVERGENCE_FACTOR, Run, ScheduleFile, divergence_reason, is_diverged, load_run, load_runs,
                   open_h5, open_schedule)
from .grouping import Group, filter_runs, group_runs, parse_keys, parse_where, sort_key
from .sweeps import axes_of, find_sweep, group_rows, mean_curve, read_index
from .stepsize import THRESHOLDS, choose, grid_edge, is_stable, select, tail_stats
from .fits import fit_exponent, fit_exponent_seeds_points, positive_tail
from . import provenance, runner
from .schema import INDEX_RESULTS, METRIC_NAMES, METRICS, Metric, axis_label, metric_info

__all__ = [
    "AnalysisError", "run_cli", "warn",
    "DIVERGENCE_FACTOR", "Run", "ScheduleFile", "divergence_reason", "is_diverged", "load_run", "load_runs", "open_h5",
    "open_schedule",
    "Group", "filter_runs", "group_runs", "parse_keys", "parse_where", "sort_key",
    "axes_of", "find_sweep", "group_rows", "mean_curve", "read_index",
    "THRESHOLDS", "choose", "grid_edge", "is_stable", "select", "tail_stats",
    "fit_exponent", "fit_exponent_seeds_points", "positive_tail",
    "provenance", "runner",
    "INDEX_RESULTS", "METRIC_NAMES", "METRICS", "Metric", "axis_label", "metric_info",
]
