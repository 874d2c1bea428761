#!/usr/bin/env bash
# Compile-checks the real-run backend against LibTorch 2.x with the NCCL backend enabled, on a
# machine that has neither a GPU nor a CUDA LibTorch: the headers of PyTorch 2.11.0+cu130 come
# from third_party/ (taken from the GPU machine, see its README), CUDA and NCCL headers from
# /usr/local/cuda. Syntax only: nothing links. CI runs it so the NCCL path cannot rot unnoticed.
#   scripts/check-torch2-headers.sh [TARBALL]
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=${1:-third_party/torch-2.11.0-cu130-include.tar.xz}
cuda=${CUDA_HOME:-/usr/local/cuda}

if [ ! -f "$tarball" ]; then
  # The default tarball ships with the source: missing, the checkout (or the argument) is broken.
  echo "check-torch2-headers: no LibTorch 2.x headers at $tarball" >&2
  exit 1
fi
if [ ! -f "$cuda/include/cuda_runtime_api.h" ] || [ ! -f "$cuda/include/nccl.h" ]; then
  # ProcessGroupNCCL.hpp includes <nccl.h> and the CUDA runtime's headers.
  echo "check-torch2-headers: SKIPPED: no CUDA toolkit with NCCL headers at $cuda" >&2
  exit 0
fi
if [ ! -f /usr/include/gloo/algorithm.h ]; then
  echo "check-torch2-headers: Gloo headers missing: apt-get install libgloo-dev" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
inc="$work/include"

# Every translation unit that sees LibTorch: validate/ and the commands built into overlapsim-real.
mapfile -t files < <(grep -lE '#include <torch/|#include "validate/' validate/*.cpp cli/*.cpp |
  xargs grep -lE 'torch|real_worker\.h|real_run\.h|real_model\.h|profiler\.h|c10d_compat\.h' | sort -u)

flags=(-std=c++20 -fsyntax-only -DUSE_C10D_NCCL -DUSE_C10D_GLOO -DUSE_DISTRIBUTED
  -DFMT_HEADER_ONLY -DOVERLAPSIM_HAVE_TORCH -DOVERLAPSIM_HAVE_CUDA -D_GLIBCXX_USE_CXX11_ABI=1
  -I. -isystem "$inc" -isystem "$inc/torch/csrc/api/include" -isystem "$cuda/include")
echo "check-torch2-headers: ${#files[@]} files against LibTorch 2.11 + NCCL headers"
status=0
printf '%s\n' "${files[@]}" |
  xargs -P "${JOBS:-2}" -I{} sh -c 'g++ "$@" {} 2> "$0/$(echo {} | tr / _).log" || { echo "FAILED: {}"; cat "$0/$(echo {} | tr / _).log" | grep -E "error|required from" | head -20; exit 1; }' \
    "$work" "${flags[@]}" || status=1
if [ $status -ne 0 ]; then
  echo "check-torch2-headers: the LibTorch 2.x / NCCL build of validate/ does not compile" >&2
  exit 1
fi
echo "check-torch2-headers: OK (${#files[@]} files)"
