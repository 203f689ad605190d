#!/usr/bin/env bash
# Builds and runs every test (ctest), failing when any test fails.
# ZP_TEST_LABELS restricts to a label regex, e.g. ZP_TEST_LABELS='oracle|probe'.
# ZP_TEST_FULL=1 also runs the tests labelled `full` (one_launch on the block tilings CI leaves
# out, tests/scheduler/CMakeLists.txt: PoCL builds each such module in minutes); 0 (default) does not.
# --quick: the host-side tests only (labels oracle and probe: tests/oracle, tests/probe and the
# fuzz corpus replays), building only them: no device, no kernels, the loop while editing host code.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --quick ]]; then
  shift
  export ZP_BUILD_TARGETS="tests/oracle/all tests/probe/all tests/fuzz/all" ZP_TEST_LABELS='^(oracle|probe)$'
fi
full=${ZP_TEST_FULL:-0}
[[ "$full" == 0 || "$full" == 1 ]] || { echo "test.sh: ZP_TEST_FULL must be 0 or 1, not '$full'" >&2; exit 2; }
bash scripts/build.sh "$@"
build=${ZP_BUILD_DIR:-build}
args=(--test-dir "$build" --output-on-failure -j "${ZP_JOBS:-$(nproc)}" --timeout 900)
[[ -n "${ZP_TEST_LABELS:-}" ]] && args+=(-L "$ZP_TEST_LABELS")
if [[ "$full" == 0 ]]; then
  args+=(-LE '^full$')
  echo "test.sh: the $(ctest --test-dir "$build" -N -L '^full$' | grep -c 'Test *#') tests labelled full are left out" \
    "(ZP_TEST_FULL=1 runs them)"
fi
ctest "${args[@]}"
