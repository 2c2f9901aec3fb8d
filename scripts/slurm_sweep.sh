#!/usr/bin/env bash
# Slurm array template for a stale sweep: array task t of a contiguous range MIN-MAX runs
# `stale sweep --shard (t - MIN)/N` with N = MAX - MIN + 1, i.e. the grid positions p with
# p mod N = t - MIN; a last job rebuilds the index from all run files (the shard merge).
#
#   sbatch --array=0-15 scripts/slurm_sweep.sh experiments/e1_sweep.toml sweeps/e1_sweep   # shards 0/16 … 15/16
#   sbatch --dependency=afterok:<array job id> --wrap "build/stale sweep experiments/e1_sweep.toml --index-only --out sweeps/e1_sweep"
#
# Extra arguments after OUT_DIR are key=value overrides, passed to every shard (give the
# merge job the same ones: they change the run names). `--array=0-15%4` (at most 4 at once)
# is fine; a range with gaps or a step (`0-15:2`, `1,3,5`) is refused, because its tasks
# would not cover every shard. scripts/slurm_local_test.sh runs this template on a
# single-node Slurm and checks the merged index against a local sweep.
#
# Runs are named by the hash of their config and skipped when their file exists, so a
# requeued or preempted task resumes where it stopped.
#SBATCH --job-name=stale-sweep
#SBATCH --cpus-per-task=2
#SBATCH --time=02:00:00
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail
usage="usage: sbatch --array=0-<N-1> scripts/slurm_sweep.sh SWEEP.toml OUT_DIR [key=value ...]"
if [[ $# -lt 2 ]]; then echo "error: slurm_sweep.sh: $usage" >&2; exit 2; fi
if [[ -z "${SLURM_ARRAY_TASK_ID:-}" || -z "${SLURM_ARRAY_TASK_COUNT:-}" ]]; then
  echo "error: slurm_sweep.sh: not a Slurm array task (no SLURM_ARRAY_TASK_ID); $usage" >&2
  exit 2
fi
sweep=$1
out=$2
shift 2
stale=${STALE_BIN:-build/stale}
task=$SLURM_ARRAY_TASK_ID
min=${SLURM_ARRAY_TASK_MIN:-0}
max=${SLURM_ARRAY_TASK_MAX:-$((SLURM_ARRAY_TASK_COUNT - 1))}
count=$SLURM_ARRAY_TASK_COUNT
shards=$((max - min + 1))
if [[ "$count" -ne "$shards" ]]; then
  echo "error: slurm_sweep.sh: --array has $count tasks in $min-$max; give a contiguous range without a step, e.g. --array=0-$((count - 1))" >&2
  exit 2
fi
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
exec "$stale" sweep "$sweep" "$@" --shard "$((task - min))/$shards" --jobs 1 --quiet --out "$out"
