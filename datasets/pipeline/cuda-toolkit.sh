#!/usr/bin/env bash
# A CUDA 13.0 toolkit from NVIDIA's PyPI wheels, enough for `cargo build --features cuda`
# (candle-kernels' nvcc PTX build, cudarc's link) on a machine with no GPU and no system CUDA.
#
#   eval "$(datasets/pipeline/cuda-toolkit.sh [VENV])"
#   cargo build --features cuda
#
# VENV (default $CUDA_VENV, else /tmp/deepdebug-cuda) gets the pinned wheels and, beside them,
# VENV/cuda-root: the toolkit directory (bin/ include/ nvvm/ lib/ lib64/) that CUDA_ROOT names.
# Idempotent: pip runs only when the pins change. All progress goes to stderr; stdout is only
# the `export` lines. CUDA_COMPUTE_CAP is kept when set, else 90 (H100).
#
# The binary links libcuda.so.1 (cudarc's `dynamic-linking`, chosen by candle): the driver of a
# GPU machine provides it. For the link, lib/stubs/libcuda.so here is a generated stub (every
# driver entry point returns CUDA_ERROR_STUB_LIBRARY); it is never on the loader's path.
# VENV/cuda-root/stub-driver holds it as libcuda.so.1, only to start the binary without a GPU.
set -euo pipefail

venv="${1:-${CUDA_VENV:-/tmp/deepdebug-cuda}}"
python="${PYTHON:-python3}"

# CUDA 13.0 Update 2, as pinned by the `cuda-toolkit==13.0.3.0` meta-package. 13.0, not the newest
# (13.4, the last that cudarc 0.19.10, candle-core 0.9.2's, knows): the lent H100/H200 machines run
# driver 580 (CUDA 13.0), which cannot load the PTX of a newer nvcc (PTX ISA 9.4 from 13.4) and
# whose libcuda lacks the newer entry points.
pins=(
  nvidia-cuda-nvcc==13.0.88      # nvcc, ptxas, fatbinary, nvlink
  nvidia-nvvm==13.0.88           # cicc, libnvvm, libdevice
  nvidia-cuda-crt==13.0.88       # include/crt
  nvidia-cuda-runtime==13.0.96   # cuda_runtime.h, cuda.h, libcudart
  nvidia-cuda-cccl==13.0.85      # include/cccl (libcu++, CUB, Thrust)
  nvidia-cuda-nvrtc==13.0.88     # libnvrtc (linked by cudarc)
  nvidia-cublas==13.1.1.3        # libcublas, libcublasLt (linked by cudarc)
  nvidia-curand==10.4.0.35       # libcurand (linked by cudarc)
)

log() { echo "cuda-toolkit: $*" >&2; }

if [[ ! -x "$venv/bin/python" ]]; then
  log "creating $venv"
  "$python" -m venv "$venv" >&2
fi
want="$(printf '%s\n' "${pins[@]}")"
if [[ "$(cat "$venv/.pins" 2>/dev/null)" != "$want" ]]; then
  log "installing ${#pins[@]} wheels into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${pins[@]}" >&2
  printf '%s\n' "$want" >"$venv/.pins"
  rm -rf "$venv/cuda-root"
fi

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cu="$site/nvidia/cu13"
root="$venv/cuda-root"

if [[ ! -f "$root/.done" ]]; then
  log "assembling $root"
  rm -rf "$root" "$root.tmp"
  mkdir -p "$root.tmp/lib/stubs" "$root.tmp/stub-driver"
  # nvcc finds cicc, libdevice, include/ and include/cccl through bin/nvcc.profile, relative to
  # its own (resolved) directory, so the wheels' nvidia/cu13 tree works as is.
  for d in bin include nvvm; do ln -s "$cu/$d" "$root.tmp/$d"; done
  # The wheels ship only versioned sonames; the linker wants the plain names.
  for f in "$cu"/lib/*; do
    ln -s "$f" "$root.tmp/lib/"
    base="$(basename "$f")"
    [[ "$base" == *.so.* ]] && ln -sf "$f" "$root.tmp/lib/${base%%.so.*}.so"
  done
  ln -s lib "$root.tmp/lib64"
  # libcuda stub: every CUresult entry point of cuda.h, the legacy (_v2, _ptds ...) ones included.
  {
    for def in "" -DCUDA_API_PER_THREAD_DEFAULT_STREAM -D__CUDA_API_VERSION_INTERNAL; do
      gcc -E -P -x c $def -I"$cu/include" "$cu/include/cuda.h"
    done | tr '\n' ' ' | grep -oE '\bCUresult +(CUDAAPI +)?cu[A-Za-z0-9_]+ *\(' |
      sed -E 's/^CUresult +(CUDAAPI +)?//; s/ *\($//'
    printf '%s\n' cuProfilerInitialize cuProfilerStart cuProfilerStop # cudaProfiler.h
  } | sort -u | awk '{print "int " $1 "(void) { return 34; /* CUDA_ERROR_STUB_LIBRARY */ }"}' \
    >"$root.tmp/lib/stubs/libcuda-stub.c"
  gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$root.tmp/lib/stubs/libcuda.so" \
    "$root.tmp/lib/stubs/libcuda-stub.c"
  ln -s ../lib/stubs/libcuda.so "$root.tmp/stub-driver/libcuda.so.1"
  touch "$root.tmp/.done"
  mv "$root.tmp" "$root"
fi

release="$("$root/bin/nvcc" --version | sed -nE 's/.*release ([0-9]+)\.([0-9]+),.*/\1 \2/p')"
read -r major minor <<<"$release"
log "nvcc $major.$minor in $root"

printf 'export CUDA_ROOT=%q CUDA_PATH=%q CUDA_HOME=%q\n' "$root" "$root" "$root"
printf 'export PATH=%q:"$PATH"\n' "$root/bin"
# The wheels' libcudart, libcublas, libcurand, libnvrtc for running the binary on a GPU machine
# (libcuda.so.1 comes from its driver).
printf 'export LD_LIBRARY_PATH=%q"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n' "$root/lib"
# cudarc reads the version from `nvcc --version`; the variable also makes cargo rebuild it when
# the pins change (candle-kernels' PTX is not rebuilt then: `cargo clean -p candle-kernels`).
printf 'export CUDARC_CUDA_VERSION=%s0%s0\n' "$major" "$minor"
printf 'export CUDA_COMPUTE_CAP=%q\n' "${CUDA_COMPUTE_CAP:-90}"
