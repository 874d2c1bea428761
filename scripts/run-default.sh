#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default scenario (summary, traces and plots in
# out/default).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2 --target overlapsim
./build/overlapsim run scenarios/default.yaml "$@"
