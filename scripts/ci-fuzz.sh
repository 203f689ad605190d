#!/usr/bin/env bash
# CI: the libFuzzer targets of tests/fuzz, built with clang-14 + ASan + UBSan in
# ${ZP_FUZZ_BUILD_DIR:-build-fuzz}; each fuzzes for ZP_FUZZ_SECONDS (default 60) from its
# committed corpus (ctest label fuzz), then the corpus replays and the regression tests run.
# A crash, leak, sanitizer report, timeout or OOM fails the job; libFuzzer prints the input
# (also as Base64) and writes it to <build>/tests/fuzz/crash-<target>-*.
# Builds only tests/fuzz's targets and what they link. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
ZP_BOOTSTRAP_FUZZ=1 bash scripts/bootstrap.sh
build=${ZP_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${ZP_JOBS:-$(nproc)}

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DZP_BUILD_TESTS=ON -DZP_SANITIZE=ON -DZP_FUZZ=ON -DZP_FUZZ_SECONDS="${ZP_FUZZ_SECONDS:-60}" "$@" >/dev/null
if [[ ! -f "$build/tests/fuzz/CTestTestfile.cmake" ]]; then
  echo "ci-fuzz: tests/fuzz is not part of the build (tests/CMakeLists.txt needs add_subdirectory(fuzz))" >&2
  exit 1
fi
ninja -C "$build" -j "$jobs" tests/fuzz/all

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One fuzzer per core (libFuzzer is single-threaded); fuzzers first, then the quick replays.
ctest --test-dir "$build" --output-on-failure -j "$jobs" -L fuzz --no-tests=error
ctest --test-dir "$build/tests/fuzz" --output-on-failure -j "$jobs" -LE fuzz --no-tests=error
echo "ci-fuzz: all fuzz targets ran ${ZP_FUZZ_SECONDS:-60} s without a finding; corpus replays and regressions passed"
