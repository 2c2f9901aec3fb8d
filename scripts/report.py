#!/usr/bin/env python3
"""One self-contained HTML page of a sweep, to share or read offline: its configuration, the
index as a sortable table, loss against k and simulated time per group of its varying keys,
the measured (1/K)Σ‖∇f(w_k)‖² against the §3 bound for every method, the step sizes the stable
rule chooses, and warnings (failed and diverged runs, γ > 1/L, step sizes at a grid edge).

  scripts/report.py SWEEP_DIR [-o FILE]        # default FILE: SWEEP_DIR/report.html
  build/stale report SWEEP_DIR [-o FILE]       # the same, from the C++ command line

The page is built by scripts/stale_analysis/report.py (also `python3 -m stale_analysis.report`
where the package is installed); figures are PNG data URIs, the sorting script is inline.
"""
import importlib
import os
import sys


def _missing(name):
    try:
        importlib.import_module(name)
        return False
    except ImportError:
        return True


# one line, not a traceback, when a dependency is missing (the analysis module imports them)
missing = [m for m in ("numpy", "h5py", "matplotlib") if _missing(m)]
if missing:
    print(f"report.py: error: stale report needs the Python packages numpy, h5py and matplotlib; missing: "
          f"{', '.join(missing)} (pip install {' '.join(missing)}, or bash scripts/setup.sh)", file=sys.stderr)
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import run_cli  # noqa: E402
from stale_analysis.report import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_cli(main))
