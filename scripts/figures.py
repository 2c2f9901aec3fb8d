#!/usr/bin/env python3
"""Every figure and table of E1–E4 (scripts/experiments.py) and of the theory audits
(scripts/audits.py) from the sweeps under --sweeps, in one Python process: run as nine
processes, their imports (numpy, h5py, pandas, matplotlib) took 1.6 s each, half of the
figures' time in scripts/reproduce.sh.

    python3 scripts/figures.py [--sweeps sweeps] [--results results]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audits  # noqa: E402
import experiments  # noqa: E402
from stale_analysis import run_cli  # noqa: E402

EXPERIMENTS = ["e1", "e2", "e3", "e4"]
AUDITS = ["bound", "delta", "stages", "paci", "localsgd"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweeps", default="sweeps", help="folder holding the sweep folders (default sweeps)")
    p.add_argument("--results", default="results")
    a = p.parse_args(argv)
    common = ["--sweeps", a.sweeps, "--results", a.results]
    for e in EXPERIMENTS:
        experiments.main([e, *common])
    for name in AUDITS:
        audits.main([name, *common])


if __name__ == "__main__":
    sys.exit(run_cli(main))
