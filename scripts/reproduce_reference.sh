#!/usr/bin/env bash
# The comparison with the RPD authors' code and the LocalSGD crossover (results/REPRODUCTION.md,
# "The harness beside the authors' code"): results/reference_comparison.md,
# results/localsgd_crossover.{md,png}. Under a minute of CPU on 2 cores; runs in-process through
# the Python package, which it installs first when `import stale` fails.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import stale" 2>/dev/null || { bash scripts/setup.sh && bash scripts/install_python.sh; }
python3 scripts/reference_comparison.py
MPLBACKEND=Agg python3 scripts/localsgd_crossover.py
