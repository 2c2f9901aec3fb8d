#!/usr/bin/env bash
# Slurm array template for a stale sweep: every array task runs its deterministic share
# (grid position mod N = task) of the sweep; a last job rebuilds the index from all run files.
#
#   sbatch --array=0-15 scripts/slurm_sweep.sh experiments/e1_sweep.toml sweeps/e1
#   sbatch --dependency=afterany:<array job id> --wrap "build/stale sweep experiments/e1_sweep.toml --index-only --out sweeps/e1"
#
# Runs are named by the hash of their config and skipped when their file exists, so a
# requeued or preempted task resumes where it stopped.
#SBATCH --job-name=stale-sweep
#SBATCH --cpus-per-task=2
#SBATCH --time=02:00:00
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail
sweep=${1:?usage: sbatch --array=0-N-1 scripts/slurm_sweep.sh SWEEP.toml OUT_DIR}
out=${2:?usage: sbatch --array=0-N-1 scripts/slurm_sweep.sh SWEEP.toml OUT_DIR}
stale=${STALE_BIN:-build/stale}
task=${SLURM_ARRAY_TASK_ID:?run as a Slurm array job (sbatch --array=...)}
count=${SLURM_ARRAY_TASK_COUNT:?run as a Slurm array job (sbatch --array=...)}
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
exec "$stale" sweep "$sweep" --shard "$task/$count" --jobs 1 --quiet --out "$out"
