#!/usr/bin/env bash
# CI: the libFuzzer targets of tests/fuzz, built with clang-14 + ASan + UBSan in
# ${ZP_FUZZ_BUILD_DIR:-build-fuzz}; each fuzzes for ZP_FUZZ_SECONDS (default 60) from its
# committed corpus (ctest label fuzz), then the corpus replays and the regression tests run.
# A crash, leak, sanitizer report, timeout or OOM fails the job; libFuzzer prints the input
# (also as Base64) and writes it to <build>/tests/fuzz/crash-<target>-*.
# Builds only tests/fuzz's targets and what they link. Extra arguments go to cmake.
# --run-only: no configure and no build: runs what the build directory holds (.ci/run, which
# built it, runs the fuzzers in two parts beside the sanitizer tests). ZP_FUZZ_SELECT: a ctest
# regex (-R) picking the fuzz targets to run (default all); ZP_FUZZ_REPLAYS=0 leaves out the
# replays and regression tests (another part runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
run_only=0
if [[ "${1:-}" == --run-only ]]; then
  run_only=1
  shift
fi
build=${ZP_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${ZP_JOBS:-$(nproc)}

if ((!run_only)); then
  ZP_BOOTSTRAP_FUZZ=1 bash scripts/bootstrap.sh
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DZP_BUILD_TESTS=ON -DZP_SANITIZE=ON -DZP_FUZZ=ON -DZP_FUZZ_SECONDS="${ZP_FUZZ_SECONDS:-60}" "$@" >/dev/null
fi
if [[ ! -f "$build/tests/fuzz/CTestTestfile.cmake" ]]; then
  echo "ci-fuzz: tests/fuzz is not part of the build (tests/CMakeLists.txt needs add_subdirectory(fuzz))" >&2
  exit 1
fi
((run_only)) || ninja -C "$build" -j "$jobs" tests/fuzz/all

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One fuzzer per core (libFuzzer is single-threaded); fuzzers first, then the quick replays.
select=()
[[ -n "${ZP_FUZZ_SELECT:-}" ]] && select=(-R "$ZP_FUZZ_SELECT")
ctest --test-dir "$build" --output-on-failure -j "$jobs" -L fuzz "${select[@]}" --no-tests=error
if [[ "${ZP_FUZZ_REPLAYS:-1}" == 1 ]]; then
  ctest --test-dir "$build/tests/fuzz" --output-on-failure -j "$jobs" -LE fuzz --no-tests=error
fi
echo "ci-fuzz: the fuzz targets${ZP_FUZZ_SELECT:+ matching $ZP_FUZZ_SELECT} ran without a finding"
if [[ "${ZP_FUZZ_REPLAYS:-1}" == 1 ]]; then
  echo "ci-fuzz: corpus replays and regressions passed"
fi
