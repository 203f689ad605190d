#!/usr/bin/env bash
# CI: the host-side tests (ctest labels oracle and probe, and the host-only tools tests), zecl's
# own tests (label driver: the driver's entry points on PoCL, their bad pointers and sizes)
# and the zecl fault tests (tests/tools/test_faults: ze-probe and the zeprobe facade on zecl
# over PoCL, each fault in its own process) built with AddressSanitizer + UndefinedBehavior-
# Sanitizer + LeakSanitizer in ${ZP_ASAN_BUILD_DIR:-build-asan}. Fails on a failing or skipped
# fault test and on any sanitizer report, including one from a child process (ze-probe and
# fault_scenario run by the probe tests): every report is also written under
# <build>/sanitizer-logs and any file there fails the job. Builds only what those tests run
# (with CC/CXX: .ci/run uses clang-14): the rest of the tree is built by the main job (gcc 12);
# building all of it here too under ASan cost ~7 min of CI. --build-only stops after the build
# (.ci/run builds beside the gcc tests, then runs this again for the tests). Other arguments go
# to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ "${1:-}" == --build-only ]]; then
  build_only=1
  shift
fi
bash scripts/bootstrap.sh
build=${ZP_ASAN_BUILD_DIR:-build-asan}
jobs=${ZP_JOBS:-$(nproc)}
labels='^(oracle|probe|driver)$'  # exact labels: a bare regex 'probe' also matches 'zeprobe'

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZP_BUILD_TESTS=ON -DZP_SANITIZE=ON "$@" >/dev/null

# The tests run below: labels oracle and probe are the folders tests/oracle and tests/probe
# (docs/design.md "Source layout": ctest labels = folders) and the replays of tests/fuzz (label probe; with ZP_FUZZ=ON the
# folder also holds the fuzzers, which ci-fuzz.sh runs from this build); label driver is
# tests/driver (zecl on PoCL: tests/driver/CMakeLists.txt keeps the ICD loader to PoCL in a
# sanitizer build); the tools host tests;
# the fault tests, whose target depends on what they run (zecl, ze-probe, fault_scenario).
tools_host_tests=(test_report test_result_schemas)
ninja -C "$build" -j "$jobs" tests/oracle/all tests/probe/all tests/driver/all tests/fuzz/all "${tools_host_tests[@]}" \
  test_faults
if ((build_only)); then
  echo "ci-sanitize: built in $build (--build-only: no tests run)"
  exit 0
fi

logs="$build/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
# detect_leaks: LeakSanitizer at exit. halt_on_error + -fno-sanitize-recover (CMake): the
# first UB report ends the process with a non-zero status. No suppressions. intercept_tls_get_addr=0:
# the __tls_get_addr interceptor of LLVM <= 16 mistakes some dynamic TLS blocks (PoCL's) for
# glibc 2.19 ones, and LeakSanitizer then dies scanning a bogus range ("Tracer caught
# signal 11", about 1 process in 40 here; google/sanitizers#1322).
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0:log_path=$PWD/$logs/asan"
# NOTE: clang has one runtime for all three, and its last log_path wins: there every report,
# leaks included, lands in ubsan.<pid>.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$PWD/$logs/ubsan"
export LSAN_OPTIONS="log_path=$PWD/$logs/lsan"

status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 -L "$labels" --no-tests=error || status=$?
for t in "${tools_host_tests[@]}"; do
  "$build/tests/tools/$t" --gtest_brief=1 || status=$?
done

# The fault tests on zecl over PoCL. The ICD loader is kept to PoCL: the Intel ICD (installed
# for ocloc) dlopens a library with RTLD_DEEPBIND (here WSL's libdxcore.so), which ASan
# refuses, ending the process. Every test must run: a skip (no zecl device) fails the job.
pocl_icd=/etc/OpenCL/vendors/pocl.icd
if [[ ! -f "$pocl_icd" ]]; then
  echo "ci-sanitize: $pocl_icd missing (Debian: pocl-opencl-icd); the fault tests need PoCL" >&2
  status=1
else
  faults_json="$build/test_faults.json"
  OCL_ICD_VENDORS=$pocl_icd "$build/tests/tools/test_faults" --gtest_brief=1 --gtest_output="json:$faults_json" ||
    status=$?
  read -r ran skipped < <(python3 -c 'import json, sys
t = [c for s in json.load(open(sys.argv[1]))["testsuites"] for c in s["testsuite"]]
print(len(t), sum(c.get("result") == "SKIPPED" for c in t))' "$faults_json" || echo "0 0")
  echo "ci-sanitize: test_faults: $ran tests, $skipped skipped"
  if ((ran == 0 || skipped != 0)); then
    echo "ci-sanitize: every fault test must run here; $build/tests/tools/test_faults prints why it skips" >&2
    status=1
  fi
fi

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
echo "ci-sanitize: labels $labels, the tools host tests and the $ran fault tests passed under ASan + UBSan + LSan, no sanitizer reports"
