#!/usr/bin/env python3
"""A PEP certificate of a config's read pattern (stale.certify; docs/theory.md §12):

  scripts/certify.py CONFIG [key=value ...] [--class nonconvex|convex|strongly-convex] [--L 1]
                     [--mu 0] [--solver clarabel|scs] [--seeds N] [--tol T] [--out CERT.h5]
  build/stale certify CONFIG [...]          # the same, from the C++ command line

Needs the package stale and the extra [certify] (PEPit, cvxpy, Clarabel, SCS).
"""
import importlib
import os
import sys

missing = [m for m in ("PEPit", "cvxpy", "clarabel", "h5py") if importlib.util.find_spec(m) is None]
if missing:
    print(f"certify.py: error: stale certify needs {', '.join(missing)}: pip install \"stale[certify]\" "
          f"(or: pip install pepit cvxpy clarabel scs h5py; bash scripts/setup.sh)", file=sys.stderr)
    sys.exit(2)
# this tree's python/stale when its extension module is there (a development checkout), else the installed package
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # stale_analysis, as report.py
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
if any(n.startswith("_stale") for n in os.listdir(os.path.join(here, "stale"))):
    sys.path.insert(0, here)
try:
    cert = importlib.import_module("stale.certify")
except ImportError as e:
    print(f"certify.py: error: cannot import stale ({e}); install it: pip install .[certify]", file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(cert.main())
