#!/usr/bin/env python3
"""Print a sweep's index (one row per grid point) as a Markdown table, optionally filtered.

  scripts/sweep_index.py SWEEP_DIR [--where key=value ...] [--columns method.lr,subopt]

The index reader lives in scripts/stale_analysis (`read_index`, `group_rows`, `mean_curve`);
this name is kept so that `from sweep_index import read_index` keeps working.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import AnalysisError, axes_of, group_rows, mean_curve, parse_where, read_index, run_cli  # noqa: E402,F401
from stale_analysis.grouping import matches, parse_keys, sort_key  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep_dir")
    p.add_argument("--where", action="append", help="keep rows with key=value (repeatable)")
    p.add_argument("--columns", help="comma-separated columns (default: the grid axes, status, k, subopt)")
    a = p.parse_args(argv)
    rows = read_index(a.sweep_dir)
    if not rows:
        raise AnalysisError(f"{a.sweep_dir}: the index has no rows")
    for key, value in parse_where(a.where):
        if key not in rows[0]:
            raise AnalysisError(f"{a.sweep_dir}: unknown column '{key}' (columns: {', '.join(rows[0])})")
        rows = [r for r in rows if matches(r[key], value)]
    cols = parse_keys(a.columns) or axes_of(rows or read_index(a.sweep_dir)) + ["status", "k", "subopt"]
    for c in cols:
        if rows and c not in rows[0]:
            raise AnalysisError(f"{a.sweep_dir}: unknown column '{c}' (columns: {', '.join(rows[0])})")
    rows.sort(key=lambda r: sort_key(tuple(r[c] for c in cols)))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(r[c] for c in cols) + " |")


if __name__ == "__main__":
    sys.exit(run_cli(main))
