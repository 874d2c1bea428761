#!/usr/bin/env bash
# Rewrites tests/golden/<scenario>.summary.json from the current build: the summary.json of every
# shipped scenario (scenarios/*.yaml), simulated without plots or traces, with the output directory
# written as <out>. tests/golden_summary_test.cpp compares each run with its file byte for byte.
# Run it only when a number is meant to move, and say in the commit which numbers moved and why.
#   scripts/update-golden.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-build}/overlapsim"
[ -x "$binary" ] || { echo "update-golden: $binary not built" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -f tests/golden/*.summary.json tests/golden/*.summary.json.gz
for scenario in scenarios/*.yaml; do
  name=$(basename "$scenario" .yaml)
  status=0
  "$binary" run "$scenario" --no-plots --no-progress --set output.traces=false \
    --out "$scratch/$name" >/dev/null 2>"$scratch/stderr" || status=$?
  # 2: the outputs are complete and some rows are errors, which the summary pins too.
  if [ "$status" -ne 0 ] && [ "$status" -ne 2 ]; then
    cat "$scratch/stderr" >&2
    exit 1
  fi
  golden="tests/golden/$name.summary.json"
  sed "s|$scratch/$name|<out>|g" "$scratch/$name/summary.json" >"$golden"
  # Above 1 MB (per-GPU lists of a frontier-scale job): gzipped, without a name or time stamp.
  if [ "$(stat -c %s "$golden")" -gt 1048576 ]; then
    gzip -n -9 "$golden"
  fi
done
echo "update-golden: $(ls tests/golden/*.summary.json* | wc -l) summaries in tests/golden/"
git --no-pager diff --stat -- tests/golden/ || true
