#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors when OVERLAPSIM_WERROR=ON, and runs the
# whole test suite (GoogleTest via ctest, the plotting self-test and the repository checks of
# docs/ARCHITECTURE.md, "Rules that run").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DOVERLAPSIM_WERROR="${OVERLAPSIM_WERROR:-OFF}"
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
