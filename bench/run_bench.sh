#!/usr/bin/env bash
# Wall time and peak RSS of overlapsim at scale. Prints one line per case; no pass/fail.
#   bench/run_bench.sh [quick|full]    (quick: up to 256 GPUs; full: adds 1024 and 4096 GPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/overlapsim
[ -x "$bin" ] || { echo "build first: cmake --build build -j2" >&2; exit 1; }
mode=${1:-quick}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measure() { # label, then the overlapsim arguments
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$out/time" "$bin" "$@" > /dev/null 2> "$out/err" || {
    echo "$label: FAILED"; cat "$out/err"; return; }
  read -r wall rss < "$out/time"
  printf '%-58s %8.2f s %9.1f MB\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
}

run() { # label, nodes, model, extra args...
  local label=$1 nodes=$2 model=$3; shift 3
  measure "$label" run scenarios/ddp-4x8-a100-gpt-neo-125m.yaml --no-plots --no-progress --out "$out/o" \
    --algorithms ddp --set output.traces=false --set training.steps=10 \
    --set cluster.nodes="$nodes" --set model.preset="$model" "$@"
}

echo "# overlapsim $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
echo "# case                                                       wall      peak RSS"
run "ddp gpt-neo-125m 10 steps, 8 GPUs (1x8)" 1 gpt-neo-125m
run "ddp gpt-neo-125m 10 steps, 64 GPUs (8x8)" 8 gpt-neo-125m
run "ddp gpt-neo-125m 10 steps, 256 GPUs (32x8)" 32 gpt-neo-125m
run "ddp gpt-neo-125m 10 steps, 256 GPUs, with trace" 32 gpt-neo-125m --set output.traces=true
measure "collective all-reduce 1GB ring fused, 256 GPUs" collective scenarios/ddp-4x8-a100-gpt-neo-125m.yaml \
  --set cluster.nodes=32 --size 1GB --algorithm ring
measure "collective all-reduce 1GB ring steps, 256 GPUs" collective scenarios/ddp-4x8-a100-gpt-neo-125m.yaml \
  --set cluster.nodes=32 --size 1GB --algorithm ring --set cluster.collectives=steps
if [ "$mode" = full ]; then
  run "ddp gpt-neo-2.7b 10 steps, 1024 GPUs (128x8), fused" 128 gpt-neo-2.7b
  run "ddp gpt-neo-2.7b 10 steps, 4096 GPUs (512x8), fused" 512 gpt-neo-2.7b
  measure "collective all-reduce 100MB ring fused, 1024 GPUs" collective scenarios/ddp-4x8-a100-gpt-neo-125m.yaml \
    --set cluster.nodes=128 --size 100MB --algorithm ring
  measure "collective all-reduce 100MB ring steps, 1024 GPUs" collective scenarios/ddp-4x8-a100-gpt-neo-125m.yaml \
    --set cluster.nodes=128 --size 100MB --algorithm ring --set cluster.collectives=steps
fi
