#!/usr/bin/env python3
"""Every figure and table of E1–E4 (scripts/experiments.py) and of the theory audits
(scripts/audits.py) from the sweeps under --sweeps, in one Python process that forks its
workers after the imports: run as nine processes, their imports (numpy, h5py, pandas,
matplotlib) took 1.6 s each, half of the figures' time in scripts/reproduce.sh; one after
another in one process the nine jobs took ~20 s, on two workers ~11 s — and ~5 s once run files
were read series by series on first use (scripts/stale_analysis/runs.py).

    python3 scripts/figures.py [--sweeps sweeps] [--results results] [--jobs N]
"""
import argparse
import multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audits  # noqa: E402
import experiments  # noqa: E402
from stale_analysis import run_cli  # noqa: E402

# longest first (seconds measured on the 2-core development machine), so that the workers end
# together; every job reads its own sweeps and writes its own files
JOBS = [("experiment", "e4"), ("audit", "bound"), ("experiment", "e1"), ("audit", "delta"), ("audit", "stages"),
        ("experiment", "e2"), ("experiment", "e3"), ("audit", "paci"), ("audit", "localsgd")]


def run_job(job, common):
    kind, name = job
    (experiments if kind == "experiment" else audits).main([name, *common])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweeps", default="sweeps", help="folder holding the sweep folders (default sweeps)")
    p.add_argument("--results", default="results")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    a = p.parse_args(argv)
    common = ["--sweeps", a.sweeps, "--results", a.results]
    jobs = max(1, min(a.jobs, len(JOBS)))
    if jobs == 1 or "fork" not in multiprocessing.get_all_start_methods():
        for job in JOBS:
            run_job(job, common)
        return
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        # chunks of one, in the order above: a worker takes the next job when it is free
        pool.starmap(run_job, [(job, common) for job in JOBS], chunksize=1)


if __name__ == "__main__":
    sys.exit(run_cli(main))
