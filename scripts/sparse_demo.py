#!/usr/bin/env python3
"""Data too large for a dense X, run sparse: writes a seeded LIBSVM file with d = 2,000,000
features and about 10^5 nonzeros (n = 10,000 rows of 10), whose dense X would take
n * d * 8 bytes = 160 GB, and runs `stale run` on it (logistic regression, RPD over uniform
delays, a few hundred updates) with objective.storage = "auto", under /usr/bin/time -v.
Prints the run's summary line, how X was stored and the process's maximum resident set size.

    python3 scripts/sparse_demo.py [--stale build/stale] [--dir DIR] [--updates 400]

The data file and the run file go to DIR (default: a temporary directory, removed after).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def write_libsvm(path, n, d, per_row, seed):
    """n rows of `per_row` distinct features drawn uniformly from 1..d (the last row holds d,
    so the file's feature count is d), values N(0, 1), labels ±1 from a seeded linear rule."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(d)
    with open(path, "w") as out:
        for i in range(n):
            cols = np.sort(rng.choice(d, size=per_row, replace=False))
            if i == n - 1:
                cols[-1] = d - 1
                cols = np.unique(cols)
            vals = rng.standard_normal(cols.size)
            label = 1 if vals @ w_true[cols] + 0.5 * rng.standard_normal() > 0 else -1
            out.write(f"{label:+d} " + " ".join(f"{c + 1}:{v:.6g}" for c, v in zip(cols, vals)) + "\n")
    return n * per_row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", default="build/stale")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--features", type=int, default=2_000_000)
    ap.add_argument("--per-row", type=int, default=10)
    ap.add_argument("--updates", type=int, default=400)
    args = ap.parse_args()
    if not os.path.exists(args.stale):
        sys.exit(f"error: {args.stale}: not found (build first: bash scripts/build.sh)")
    work = args.dir or tempfile.mkdtemp(prefix="stale-sparse-demo-")
    os.makedirs(work, exist_ok=True)
    try:
        data = os.path.join(work, "sparse_2m.libsvm")
        nnz = write_libsvm(data, args.rows, args.features, args.per_row, seed=0)
        cfg = os.path.join(work, "sparse_2m.toml")
        with open(cfg, "w") as f:
            f.write(f"""seed = 0
backend = "cpu"
[objective]
name = "logistic"
generator = "libsvm"
data = "{data}"
storage = "auto"
batch_size = 10
stages = 8
[method]
name = "rpd"
lr = 2.0            # per-batch curvature is ~n/b times the full L here (each feature in few rows): 1/L overshoots
updates = {args.updates}
[delay]
name = "uniform"
max = 14
[log]
every = 20
iterates_every = 0
progress = false
""")
        env = dict(os.environ, STALE_CACHE_DIR=os.path.join(work, "cache"))
        run = subprocess.run(["/usr/bin/time", "-v", args.stale, "run", cfg, "--out", os.path.join(work, "run.h5")],
                             capture_output=True, text=True, env=env)
        out = run.stdout + run.stderr
        summary = [l for l in out.splitlines() if "status=" in l]
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out)
        wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", out)
        if run.returncode != 0 or not rss:
            sys.exit(f"error: stale run failed (exit {run.returncode}):\n{out}")
        from stale_analysis import load_run  # noqa: E402 (h5py: only needed once the run exists)

        result = load_run(os.path.join(work, "run.h5"))
        desc, method = result.objective["description"], result.theory["f_star_method"]
        L, fstar = float(result.objective["L"]), float(result.objective["f_star"])
        dense_gb = args.rows * args.features * 8 / 1e9
        print(f"data: n = {args.rows}, d = {args.features}, nnz = {nnz}; dense X would be {dense_gb:.0f} GB, "
              f"CSR {(12 * nnz + 4 * (args.rows + 1)) / 1e6:.1f} MB")
        print(f"objective: {desc}; L = {L:.6g}, f_* = {fstar:.10g} ({method})")
        print(summary[-1] if summary else "(no summary line)")
        print(f"max RSS: {int(rss.group(1)) / 1024:.0f} MiB; wall {wall.group(1) if wall else '?'} "
              f"(data file written beforehand, constants not cached)")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
