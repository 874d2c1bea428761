#!/usr/bin/env bash
# On the lent GPU machine, with the GPU machine's build kit carried in .gpu-kit/ (device call with
# carry [".gpu-kit"]; what the kit holds: docs/VALIDATE.md, "Measured on one H100"):
# builds overlapsim against the CUDA LibTorch there, then runs the real NCCL backend on one GPU
# (validate: profile -> predict -> measure -> compare) for the H100 scenarios, and, with the time
# left, the test suite of that build. Everything it writes goes to $OUT (default out/gpu).
# Usage: bash scripts/gpu-validate.sh [SCENARIO...]   (default: the two *-h100 validate scenarios)
set -uo pipefail
out=${OUT:-out/gpu}
mkdir -p "$out" && out=$(cd "$out" && pwd)
start=$SECONDS
bash .gpu-kit/build-on-device.sh -DOVERLAPSIM_BUILD_BENCH=OFF -DOVERLAPSIM_BUILD_TESTS=${GPU_TESTS:-ON} 2>&1 | tail -15 | tee "$out/build.txt"
export LD_LIBRARY_PATH=/opt/kit/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
echo "built in $((SECONDS - start)) s" | tee -a "$out/build.txt"
bin=build-gpu/overlapsim
[ -x "$bin" ] || { echo "no binary"; exit 1; }
"$bin" run scenarios/default.yaml --out "$out/default" --no-plots > "$out/default.txt" 2>&1
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(scenarios/validate-mlp-h100.yaml scenarios/validate-gpt-tiny-h100.yaml)
for s in "${scenarios[@]}"; do
  name=$(basename "$s" .yaml)
  t0=$SECONDS
  timeout ${GPU_RUN_TIMEOUT:-240} "$bin" validate "$s" --backend nccl --workers 1 --no-plots --out "$out/$name" \
    > "$out/$name.txt" 2>&1
  echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$out/runs.txt"
  tail -25 "$out/$name.txt"
done
left=$((560 - SECONDS))
if [ "$left" -gt 60 ] && [ "${GPU_TESTS:-ON}" = ON ]; then
  (cd build-gpu && timeout $((left - 20)) ctest -j8 --timeout 200 --output-on-failure -E EmulatedLink \
     > "$out/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$out/ctest.txt")
  tail -15 "$out/ctest.txt"
fi
echo "total $((SECONDS - start)) s"
# The device tool returns few files: one archive of everything.
tar czf /tmp/gpu-results.tgz -C "$out" . && mv /tmp/gpu-results.tgz "$out/"
