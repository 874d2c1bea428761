#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors when OVERLAPSIM_WERROR=ON, and runs the
# whole test suite (GoogleTest via ctest, and the plotting self-test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DOVERLAPSIM_WERROR="${OVERLAPSIM_WERROR:-OFF}"
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
