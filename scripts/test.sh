#!/usr/bin/env bash
# Builds and runs every test (ctest), failing when any test fails.
# ZP_TEST_LABELS restricts to a label regex, e.g. ZP_TEST_LABELS='oracle|probe'.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
build=${ZP_BUILD_DIR:-build}
args=(--test-dir "$build" --output-on-failure -j "${ZP_JOBS:-$(nproc)}" --timeout 900)
[[ -n "${ZP_TEST_LABELS:-}" ]] && args+=(-L "$ZP_TEST_LABELS")
ctest "${args[@]}"
