#!/usr/bin/env bash
# The format gate (issue 28.5): every C++ file in the repository is as clang-format (.clang-format:
# LLVM base, 100 columns) writes it. Lists the files that are not and exits 1; `clang-format -i` on
# them fixes it. Run from anywhere; checks the files git tracks (or, outside a git checkout, every
# *.cpp and *.h under the source folders).
#   scripts/check-format.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else
  mapfile -t files < <(find algorithms bench cli comm files hw parallel runtime scenario sim tests trace validate -name '*.cpp' -o -name '*.h' 2>/dev/null)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
