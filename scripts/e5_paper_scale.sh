#!/usr/bin/env bash
# E5 at the paper's scale (theory.md §8) on one GPU: the char-level GPT of
# experiments/e5_charlm_gpu.toml (S = 16, E = 256, 11.1M parameters, float32 CUDA twin),
# plain SGD, PipeDream (PD) against LocalSGD with R = S = 16 replicas and H local steps, on a
# common budget of simulated time slots, one seed. One process per (method, step size), all
# at once: the GPU is shared, each process is single-threaded on the host.
#
#   scripts/e5_paper_scale.sh STALE_BIN OUTDIR BUDGET "PD_LRS" "LOCALSGD_LRS" ["HS"] [key=value ...]
#   e.g. scripts/e5_paper_scale.sh build/stale runs/e5_paper 2100 "0.0625 0.125" "0.125 0.25" "1 4 8"
#
# Each run writes OUTDIR/e5p_<method>_lr<γ>.h5 (metrics only: no iterates, no delay table) and
# OUTDIR/<same>.log; a run that fails leaves its log. Prints one line per run with its wall
# time and exit code, then a summary. Extra key=value arguments go to every run.
# The data file tinyshakespeare.txt is found through objective.data_dir / $STALE_DATA_DIR.
set -uo pipefail
STALE=${1:?usage: $0 STALE_BIN OUTDIR BUDGET PD_LRS LOCALSGD_LRS [HS] [key=value ...]}
OUTDIR=${2:?outdir}
BUDGET=${3:?time budget in slots}
PD_LRS=${4:-}
LS_LRS=${5:-}
HS=${6:-1 4 8}
shift $(( $# < 6 ? $# : 6 ))
EXTRA=("$@")
CFG=${E5_CONFIG:-$(cd "$(dirname "$0")/.." && pwd)/experiments/e5_charlm_gpu.toml}
mkdir -p "$OUTDIR"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# log every 16 micro-batches (S = 16 block updates each); held-out loss at the same cadence
COMMON=(backend=cuda method.time_budget="$BUDGET" log.every=256 log.iterates_every=0 log.delays=false
        log.progress=false "${EXTRA[@]}")

pids=() names=()
launch() {  # name, overrides...
  local name=$1; shift
  ( t0=$(date +%s)
    "$STALE" run "$CFG" "$@" "${COMMON[@]}" --out "$OUTDIR/$name.h5" >"$OUTDIR/$name.log" 2>&1
    rc=$?
    echo "$name wall $(( $(date +%s) - t0 )) s rc $rc" | tee -a "$OUTDIR/$name.log"
    exit $rc ) &
  pids+=($!) names+=("$name")
}
for lr in $PD_LRS; do launch "e5p_pd_lr$lr" method.name=pipedream method.lr="$lr"; done
for H in $HS; do
  for lr in $LS_LRS; do
    launch "e5p_localsgd_H${H}_lr$lr" method.name=localsgd method.local_steps="$H" method.lr="$lr"
  done
done
fails=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || { fails=$((fails + 1)); echo "FAILED: ${names[$i]} (see $OUTDIR/${names[$i]}.log)"; }; done
echo "e5_paper_scale: ${#pids[@]} runs, $fails failed, budget $BUDGET slots"
[[ $fails -eq 0 ]]
