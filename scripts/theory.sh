#!/usr/bin/env bash
# Regenerates the files and figures results/THEORY.md quotes that issues 29 and 53 added: the nonconvex
# bound audit, the bound on the char-GPT with an estimated L, the tuned rate, the δ and S laws
# inside their regime (PipeDream's own tables included), LocalSGD with S and H varied, and the bound
# where it can fail (c + c²δ²/S < 1, G fixed by a pilot, 20 seeds: audits.py informative). The rest of THEORY.md's rows quote files that
# scripts/reproduce.sh, scripts/paci_experiment.py, scripts/stability_experiment.py and
# scripts/trajectory_delays_experiment.py regenerate (each row names its command).
# Sweeps resume: a rerun skips the runs already in sweeps/ (delete them for a clean rerun).
#   bash scripts/theory.sh [--jobs N] [--plan]   (--plan: rewrite the two generated sweep files
#                                                 first, from L, Δ₀ and the pilot runs' G)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
plan=0
while [[ $# -gt 0 ]]; do
  case $1 in --jobs) jobs=$2; shift 2 ;; --plan) plan=1; shift ;; *) echo "unknown argument $1" >&2; exit 2 ;; esac
done
[[ -x build/stale ]] || BUILD_TARGETS=stale bash scripts/build.sh >/dev/null
start=$(date +%s)
if [[ $plan == 1 ]]; then
  python3 scripts/audits.py nonconvex-plan
  python3 scripts/audits.py tuned-plan
fi
if [[ $plan == 1 ]]; then
  python3 scripts/audits.py informative-plan
fi
for s in audit_nonconvex audit_charlm audit_tuned_rate audit_delta_regime audit_stages_regime audit_stages_capped audit_localsgd_sh; do
  t0=$(date +%s)
  build/stale sweep "experiments/${s}_sweep.toml" --jobs "$jobs" -q --out "sweeps/${s}_sweep"
  echo "  $s: $(( $(date +%s) - t0 )) s" >&2
done
# rows 1-2 where the bound can fail (issue 53): one sweep per problem (scripts/audit_informative.py)
for p in convex nonconvex; do
  t0=$(date +%s)
  build/stale sweep "experiments/audit_informative_sweep_${p}.toml" --jobs "$jobs" -q --out "sweeps/audit_informative_${p}_sweep"
  echo "  audit_informative_$p: $(( $(date +%s) - t0 )) s" >&2
done
export MPLBACKEND=Agg
for a in nonconvex charlm tuned delta-regime stages-regime localsgd-sh informative; do
  python3 scripts/audits.py "$a" >/dev/null
done
# each result names the script that wrote it (provenance.written), so this can run beside another
echo "theory.sh: wall time $(( $(date +%s) - start )) s on $(nproc) cores" >&2
