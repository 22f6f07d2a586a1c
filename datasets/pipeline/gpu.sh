#!/usr/bin/env bash
# The patcher pipeline on one GPU, in one command: builds `deepdebug` with CUDA from NVIDIA's PyPI
# wheels (cuda-toolkit.sh), runs the pipeline's GPU config, and prints the training tokens/s and
# the evaluation tables of its report.
#
#   datasets/pipeline/gpu.sh [smoke|full] [OUT]      # default: smoke, OUT=pipeline-gpu-PRESET.out
#
# smoke (gpu-smoke.toml): every stage at a tiny size, to check the GPU path end to end (meant to
# fit in 10 minutes on an H100 with the build); full (gpu-full.toml): cpu.toml's run with steps
# x100 and 1024-token sources. The pipeline reads the mined corpus from ../shared/corpus next to
# the checkout and pip-installs its [packages] (PyPI, or a filled pip cache). CUDA_COMPUTE_CAP
# (default 90) picks the GPU generation the kernels are compiled for; nvidia-smi tells yours.
set -euo pipefail
cd "$(dirname "$0")/../.."
preset="${1:-smoke}"
out="${2:-pipeline-gpu-$preset.out}"
config="datasets/pipeline/gpu-$preset.toml"
[[ -f "$config" ]] || { echo "gpu.sh: no preset '$preset' ($config)" >&2; exit 2; }

started=$(date +%s)
eval "$(datasets/pipeline/cuda-toolkit.sh "${CUDA_VENV:-/tmp/deepdebug-cuda}")"
export CARGO_TARGET_DIR="${CUDA_TARGET_DIR:-target/cuda}"
cargo build --release --features cuda
bin="$CARGO_TARGET_DIR/release/deepdebug"
built=$(date +%s)
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2
else
  echo "gpu.sh: nvidia-smi not found: the training stages will fail without a GPU" >&2
fi

"$bin" pipeline --config "$config" --out "$out" 2>&1 | tee "$out.log"
finished=$(date +%s)

echo
echo "== training speed (last steps of each model) =="
grep -E "step [0-9]+: loss" "$out.log" | tail -n 6 || true
echo
echo "== evaluation ($out/report.md) =="
sed -n '/^## /,$p' "$out/report.md"
echo
echo "gpu.sh: $preset: build $((built - started))s, pipeline $((finished - built))s, total $((finished - started))s"
