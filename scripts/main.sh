#!/usr/bin/env bash
# The README's main job: install, build, run RPD on the random quadratic for
# δ ∈ {0, 8, 60, 420} × seeds {0, 1, 2}, and draw runs/main_rpd_delays.png with a summary table
# runs/main_rpd_delays.md. Following the README leaves the checkout as it was: the committed copies
# in results/ are rewritten only when asked (--results; scripts/reproduce.sh does).
#   bash scripts/main.sh [--no-build] [--results]
#     --no-build: skip set-up and build (build/stale must exist)
#     --results:  write the figure and table into results/ (the committed ones), stamped
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
build=1
dest=runs
for arg in "$@"; do
  case $arg in
    --no-build) build=0 ;;
    --results) dest=results ;;
    *) echo "main.sh: unknown option '$arg' (valid: --no-build, --results)" >&2; exit 2 ;;
  esac
done
if ((build)); then
  bash scripts/setup.sh
  bash scripts/build.sh
else
  [[ -x build/stale ]] || { echo "main.sh: --no-build, but build/stale does not exist (run without it once)" >&2; exit 2; }
fi
out=runs/main_rpd_delays
mkdir -p "$dest"
# the 12 runs in one in-process sweep (a rerun reuses finished runs)
build/stale sweep experiments/main_rpd_delays_sweep.toml -q --out "$out"
python3 scripts/plot_runs.py "$out" --group-by delay.max --label "δ" \
  --title 'RPD, random least squares ($d$ = 512, $S$ = 8, $\gamma = 2^{-6}$), median and range over 3 seeds' \
  -o "$dest/main_rpd_delays.png"
python3 scripts/summarize_runs.py "$out" --group-by delay.max \
  --command "bash scripts/main.sh" -o "$dest/main_rpd_delays.md"
# plot_runs.py and summarize_runs.py stamp the results they write (provenance.written)
echo "main.sh: done in $(( $(date +%s) - start )) s" >&2
