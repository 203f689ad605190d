#!/usr/bin/env bash
# CI: the host-side tests (ctest labels oracle and scheduler, and the host-only probe tests)
# built with AddressSanitizer +
# UndefinedBehaviorSanitizer in ${ZP_ASAN_BUILD_DIR:-build-asan}. Fails on a failing test and
# on any sanitizer report, including one from a child process (ze-probe run by the probe
# tests): every report is also written under <build>/sanitizer-logs and any file there fails
# the job. Builds only the test directories of those labels and what they link.
# Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
build=${ZP_ASAN_BUILD_DIR:-build-asan}
jobs=${ZP_JOBS:-$(nproc)}
labels='oracle|scheduler'

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZP_BUILD_TESTS=ON -DZP_SANITIZE=ON "$@" >/dev/null

# The ninja target <dir>/all builds every target of a test directory and its dependencies,
# so a new test file in these directories is picked up without touching this script. The
# probe directory also holds device tests (ze-probe on zecl + PoCL), which are not built
# here: its host-only executables are named instead.
probe_host_tests=(test_timing_stats test_gate test_sweep test_report)
targets=("${probe_host_tests[@]}")
for dir in oracle scheduler fuzz; do
  [[ -f "$build/tests/$dir/CTestTestfile.cmake" ]] && targets+=("tests/$dir/all")
done
ninja -C "$build" -j "$jobs" "${targets[@]}"

logs="$build/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
# detect_leaks: LeakSanitizer at exit. halt_on_error + -fno-sanitize-recover (CMake): the
# first UB report ends the process with a non-zero status.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:log_path=$PWD/$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$PWD/$logs/ubsan"
export LSAN_OPTIONS="log_path=$PWD/$logs/lsan"

status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -L "$labels" --no-tests=error || status=$?
for t in "${probe_host_tests[@]}"; do
  "$build/tests/probe/$t" --gtest_brief=1 || status=$?
done

if compgen -G "$logs/*" >/dev/null; then
  echo "ci-sanitize: sanitizer reports:" >&2
  for f in "$logs"/*; do
    echo "==== $f" >&2
    cat "$f" >&2
  done
  status=1
fi
if ((status != 0)); then
  echo "ci-sanitize: FAILED (tests or sanitizer reports above; build dir $build)" >&2
  exit "$status"
fi
echo "ci-sanitize: labels $labels passed under ASan + UBSan, no sanitizer reports"
