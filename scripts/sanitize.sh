#!/usr/bin/env bash
# The simulator and its test suite built with AddressSanitizer and UndefinedBehaviorSanitizer
# (LibTorch off: the real-run backend is checked by the normal build), the suite run on it, then
# the malformed-input campaign of bench/fuzz_scenarios.py on that build; any sanitizer finding, any
# failed test and any fuzz problem (signal, abort, hang, partial output, unclear error) fails.
#   scripts/sanitize.sh [FUZZ_CASES]   (default 500; 0 skips the campaign)
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-500}
bash scripts/install-deps.sh
# Warnings are not errors here: the normal build enforces them, and GCC 12 with ASan at -O2 warns
# falsely inside libstdc++ (-Wmaybe-uninitialized in <regex>, <functional>).
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOVERLAPSIM_SANITIZE=ON \
  -DOVERLAPSIM_WITH_TORCH=OFF -DOVERLAPSIM_BUILD_BENCH=OFF -DOVERLAPSIM_WERROR=OFF
cmake --build build-sanitize -j2
# detect_leaks: SimGrid keeps its engine's allocations to exit; leaks are not what this looks for.
# ASan's reports go to files, not stderr: it also warns there about SimGrid's context switches
# ("ignoring requested __asan_handle_no_return"), which would break the tests that read the
# program's output. A finding still aborts the process (abort_on_error), failing its test; its
# report is printed below.
logs="$PWD/build-sanitize/asan-logs"
rm -rf "$logs" && mkdir -p "$logs"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
report() {
  if grep -l "ERROR: AddressSanitizer" "$logs"/asan.* >/dev/null 2>&1; then
    grep -l "ERROR: AddressSanitizer" "$logs"/asan.* | head -3 | xargs cat
    echo "sanitize: AddressSanitizer findings (above)" >&2
    return 1
  fi
}
# The suite less what has nothing for the sanitizers to see (label normal_build_only: the format,
# layering, self-contained and plotting checks, Python only), and AnalysisInvariants.
# EveryShippedScenario on one scenario per algorithm (OVERLAPSIM_SANITIZED_SUBSET: 139 s here in
# full); the normal build runs both in full. docs/CI.md has the times.
export OVERLAPSIM_SANITIZED_SUBSET=1
status=0
ctest --test-dir build-sanitize --output-on-failure -j2 -LE normal_build_only || status=1
if [ "$cases" -gt 0 ]; then
  # The budget is the normal build's 20 s scaled: here SimGrid's actors run as threads under ASan's
  # checks, 4-5x slower (the campaign's slowest valid mutant, 5.4 s normally, takes 23 s).
  /usr/bin/python3 bench/fuzz_scenarios.py --cases "$cases" --seed 1 --timeout 120 --jobs 2 \
    --binary build-sanitize/overlapsim --strict || status=1
fi
report || status=1
exit $status
