#!/usr/bin/env bash
# Fails when a tracked C, C++ or OpenCL C file differs from .clang-format (clang-format-14),
# naming each file. With --fix, formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format-14 >/dev/null || bash scripts/bootstrap.sh
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.hpp' '*.h' '*.cl' | grep -v '^tests/fuzz/corpus/')
if [[ "${1:-}" == --fix ]]; then
  clang-format-14 -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format-14 --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check-format: not formatted (run: bash scripts/check-format.sh --fix):\n' >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
