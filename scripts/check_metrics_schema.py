#!/usr/bin/env python3
"""Checks scripts/stale_analysis/schema.py against the binary's own table and against what it
writes. With STALE_BIN (default build/stale): `stale schema --json` (the C++ table,
src/io/metrics_schema.cpp) must equal schema.py's METRICS and INDEX_COLUMNS field for field
(name, dtype, unit, description) and in order; then a two-run sweep of a tiny least-squares
problem in a temporary folder must write exactly those /metrics datasets, with those dtypes
and with `unit` and `description` attributes equal to the table, and index.csv's header must
be INDEX_LEADING + the axis + INDEX_TRAILING; a schedule file (`stale schedule`) must carry the
schema_version the readers accept. The files are read with h5py itself, not through the readers
(stale_analysis.runs), which refuse a file of another schema version instead of saying what
differs. Exit 1 and one line per difference; run by ctest.

    python3 scripts/check_metrics_schema.py [STALE_BIN]
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import h5py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from stale_analysis.schema import (INDEX_COLUMNS, INDEX_LEADING, INDEX_TRAILING, METRICS, RUN_SCHEMA_VERSION,  # noqa: E402
                                   SCHEDULE_SCHEMA_VERSION)

BASE = """[objective]
name = "quadratic"
generator = "random"
dim = 12
samples = 24
batch_size = 4
stages = 3
[method]
name = "rpd"
lr = 0.01
updates = 60
[log]
every = 20
progress = false
"""
SWEEP = 'base = "base.toml"\n[grid]\nseed = [0, 1]\n'


FIELDS = ("name", "dtype", "unit", "description")


def compare_tables(what, binary_rows, python_rows, problems):
    """The binary's rows (dicts from --json) and schema.py's (Metric) must agree field for field."""
    have = [tuple(r[k] for k in FIELDS) for r in binary_rows]
    want = [tuple(getattr(m, k) for k in FIELDS) for m in python_rows]
    if [r[0] for r in have] != [r[0] for r in want]:
        problems.append(f"{what}: stale schema --json has {[r[0] for r in have]}, schema.py {[r[0] for r in want]}")
        return
    for h, w in zip(have, want):
        for key, x, y in zip(FIELDS, h, w):
            if x != y:
                problems.append(f"{what} {h[0]}.{key}: stale schema --json says {x!r}, schema.py {y!r}")


def main():
    stale = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STALE_BIN", os.path.join(ROOT, "build", "stale"))
    problems = []
    table_json = json.loads(subprocess.run([stale, "schema", "--json"], check=True, capture_output=True,
                                           text=True).stdout)
    compare_tables("/metrics", table_json["metrics"], METRICS, problems)
    compare_tables("index", table_json["index"], INDEX_COLUMNS, problems)
    with tempfile.TemporaryDirectory(prefix="stale-schema-") as tmp:
        with open(os.path.join(tmp, "base.toml"), "w") as f:
            f.write(BASE)
        with open(os.path.join(tmp, "sweep.toml"), "w") as f:
            f.write(SWEEP)
        out = os.path.join(tmp, "out")
        subprocess.run([stale, "sweep", os.path.join(tmp, "sweep.toml"), "-q", "--jobs", "1", "--out", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "index.csv")) as f:
            header = next(csv.reader(f))
        want = list(INDEX_LEADING) + ["seed"] + list(INDEX_TRAILING)
        if header != want:
            problems.append(f"index.csv columns {header} != schema.py's {want}")
        runs = sorted(os.listdir(os.path.join(out, "runs")))
        with h5py.File(os.path.join(out, "runs", runs[0]), "r") as f:
            have = {name: f["metrics"][name].dtype.name for name in f["metrics"]}
            attrs = {name: {k: f["metrics"][name].attrs.get(k) for k in ("unit", "description")} for name in f["metrics"]}
            written_version = int(f.attrs.get("schema_version", -1))
        schedule = os.path.join(tmp, "schedule.h5")
        subprocess.run([stale, "schedule", "pipedream", "--stages", "2", "--microbatches", "4", "--out", schedule],
                       check=True, stdout=subprocess.DEVNULL)
        with h5py.File(schedule, "r") as f:
            schedule_version = int(f.attrs.get("schema_version", -1))
    if written_version != RUN_SCHEMA_VERSION:
        problems.append(f"the binary writes run files of schema_version {written_version}; schema.py's "
                        f"RUN_SCHEMA_VERSION (what the readers accept) is {RUN_SCHEMA_VERSION}")
    if schedule_version != SCHEDULE_SCHEMA_VERSION:
        problems.append(f"the binary writes schedule files of schema_version {schedule_version}; schema.py's "
                        f"SCHEDULE_SCHEMA_VERSION (what open_schedule accepts) is {SCHEDULE_SCHEMA_VERSION}")
    table = {m.name: m.dtype for m in METRICS}
    for name in sorted(set(have) - set(table)):
        problems.append(f"/metrics/{name} ({have[name]}) is written but not in scripts/stale_analysis/schema.py")
    for name in sorted(set(table) - set(have)):
        problems.append(f"schema.py lists /metrics/{name}, which the run file does not have")
    for name in sorted(set(table) & set(have)):
        if table[name] != have[name]:
            problems.append(f"/metrics/{name} is {have[name]} in the run file, {table[name]} in schema.py")
    for m in METRICS:
        for key in ("unit", "description"):
            v = attrs.get(m.name, {}).get(key)
            v = v.decode() if isinstance(v, bytes) else v
            if m.name in attrs and v != getattr(m, key):
                problems.append(f"/metrics/{m.name} attribute {key} is {v!r} in the run file, {getattr(m, key)!r} in schema.py")
    for p in problems:
        print(f"check_metrics_schema: {p}", file=sys.stderr)
    if not problems:
        print(f"check_metrics_schema: {len(table)} metric series (with units and descriptions) and {len(want)} index "
              "columns and the run and schedule files' schema versions agree with the binary")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
