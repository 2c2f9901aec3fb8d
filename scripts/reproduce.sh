#!/usr/bin/env bash
# Regenerates every committed figure and table in results/ that comes from the CPU harness:
# the main job, PipeDream's delay scaling, the paper experiments E1–E4 and the theory audits.
# Sweeps resume: a rerun skips the runs already in sweeps/ (delete it for a clean rerun).
#   bash scripts/reproduce.sh [--jobs N] [--no-build]   (default N = number of cores; --no-build:
#                                                       skip set-up and build, use build/stale)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
build=1
while (($#)); do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "reproduce.sh: unknown option '$1' (valid: --jobs N, --no-build)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
if ((build)); then
  bash scripts/setup.sh
  bash scripts/build.sh >/dev/null
else
  [[ -x build/stale ]] || { echo "reproduce.sh: --no-build, but build/stale does not exist" >&2; exit 2; }
fi
stale=build/stale
sweep() {  # sweep file stem; the output is the default folder sweeps/<stem> (the README's layout)
  local t0=$(date +%s)
  "$stale" sweep "experiments/$1.toml" --jobs "$jobs" -q --out "sweeps/$1"
  echo "  $1: $(( $(date +%s) - t0 )) s" >&2
}
echo "== main job" >&2
bash scripts/main.sh --no-build --results >/dev/null
echo "== delay scaling" >&2
python3 scripts/delay_scaling.py --bin "$stale" --jobs "$jobs" >/dev/null
echo "== E1–E4 sweeps" >&2
for s in e1_sweep e2_pd_sweep e2_localsgd_sweep e3_pd_sweep e3_localsgd_sweep e4_pd_sweep e4_rpd_sweep e4_localsgd_sweep; do
  sweep "$s"
done
echo "== audit sweeps" >&2
for s in audit_delta_sweep audit_stages_sweep audit_stages_mean_sweep audit_paci_sweep audit_localsgd_sweep; do
  sweep "$s"
done
echo "== figures and tables" >&2
python3 scripts/figures.py >/dev/null
wall=$(( $(date +%s) - start ))
echo "reproduce.sh: wall time ${wall} s on $(nproc) cores" | tee results/reproduce_wall_time.txt
# each result names the script that wrote it (provenance.written): no stamping by time here, which
# claimed the files of any script running beside this one
