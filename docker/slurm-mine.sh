#!/bin/bash
# Slurm job array for `deepdebug mine` (docs/mining.md, "Running on a cluster").
#
# Each array task mines one shard; `--shard N` takes the index from SLURM_ARRAY_TASK_ID
# (minus SLURM_ARRAY_TASK_MIN, so `--array=1-8` works as well as `0-7`). Shards write
# separate files, and checkpoints make a requeued or resubmitted task skip finished repos.
#
#   REPOS=/data/repos.txt OUT=/data/mined sbatch docker/slurm-mine.sh
#
#SBATCH --job-name=deepdebug-mine
#SBATCH --array=0-7
#SBATCH --cpus-per-task=8
#SBATCH --mem=16G
#SBATCH --time=24:00:00
#SBATCH --requeue
#SBATCH --output=deepdebug-mine-%A_%a.log
set -euo pipefail

REPOS="${REPOS:-repos.txt}"
OUT="${OUT:-mined}"
SHARDS="${SLURM_ARRAY_TASK_COUNT:?submit with sbatch --array so SLURM_ARRAY_TASK_COUNT is set}"

exec deepdebug mine \
    --repos-from "$REPOS" \
    --out "$OUT" \
    --shard "$SHARDS" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}" \
    --quiet
