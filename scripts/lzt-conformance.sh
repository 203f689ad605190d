#!/usr/bin/env bash
# The public Level Zero conformance suite (oneapi-src/level-zero-tests) against zecl.
#
#   bash scripts/lzt-conformance.sh LZT_CHECKOUT [--device pocl|intel-cpu] [--build-only]
#        [--binaries "test_driver test_module ..."] [--timeout SECONDS] [--filter GTEST_FILTER]
#
# LZT_CHECKOUT is a local checkout of the suite (the figures in driver/README.md are of commit
# a760ae0b52497b73254b2df8b191aa3693a970c7, the 2023-02 snapshot that builds unchanged against
# Debian's libze-dev 1.8.12). Nothing of the suite is copied into this repository: it is built
# in ${LZT_BUILD_DIR:-LZT_CHECKOUT/build-zecl} with Debian's googletest, boost and libze-dev.
# zecl itself comes from this repository's build directory (${ZP_BUILD_DIR:-build}; built
# here if missing: that target only). Each binary runs in its own directory (with its kernels) under a
# per-binary timeout; a crash, a hang or a timeout is reported as such. The last line is
# "N passed, M failed" over the test instances (a skipped instance is neither). Exit 0 when
# every binary ran to its end, 1 when one crashed, hung or failed to start.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  echo "usage: $0 LZT_CHECKOUT [--device pocl|intel-cpu] [--build-only] [--binaries LIST] [--timeout S] [--filter F]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
lzt=$(cd "$1" 2>/dev/null && pwd) || { echo "lzt-conformance: no such directory: $1" >&2; exit 2; }
shift
[[ -f "$lzt/conformance_tests/core/CMakeLists.txt" ]] ||
  { echo "lzt-conformance: $lzt is not a level-zero-tests checkout (no conformance_tests/core)" >&2; exit 2; }
device=pocl build_only=0 timeout_s=${LZT_TIMEOUT:-900} filter=""
binaries="test_driver test_device test_context test_fence test_cmdqueue test_event test_barrier test_memory test_cmdlist test_copy test_module"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device=${2:-}; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --binaries) binaries=${2:-}; shift 2 ;;
    --timeout) timeout_s=${2:-}; shift 2 ;;
    --filter) filter=${2:-}; shift 2 ;;
    *) echo "lzt-conformance: unknown argument: $1" >&2; usage ;;
  esac
done
[[ "$device" == pocl || "$device" == intel-cpu ]] ||
  { echo "lzt-conformance: --device must be pocl or intel-cpu, not '$device'" >&2; exit 2; }
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || { echo "lzt-conformance: --timeout must be a positive integer, not '$timeout_s'" >&2; exit 2; }
for b in $binaries; do
  [[ -d "$lzt/conformance_tests/core/$b" ]] ||
    { echo "lzt-conformance: no binary '$b' under $lzt/conformance_tests/core" >&2; exit 2; }
done

# The suite's build dependencies (its BUILD.md and CMakeLists: libpng, boost log,
# program_options, timer, chrono, system, serialization; googletest) from Debian.
pkgs="cmake ninja-build libze-dev libpng-dev googletest libboost-log-dev libboost-program-options-dev
      libboost-timer-dev libboost-chrono-dev libboost-system-dev libboost-serialization-dev"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing+=" $p"; done
if [[ -n "$missing" ]]; then
  echo "lzt-conformance: installing$missing" >&2
  apt-get install -y -qq $missing >&2
fi

build=${LZT_BUILD_DIR:-$lzt/build-zecl}
jobs=${LZT_JOBS:-2}
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$lzt" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROUP=/conformance_tests/core \
    -DGTEST_ROOT=/usr/src/googletest >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log" >&2; echo "lzt-conformance: configure failed ($build.configure.log)" >&2; exit 3; }
fi
# shellcheck disable=SC2086
ninja -C "$build" -j"$jobs" $binaries >&2

zbuild=${ZP_BUILD_DIR:-$repo/build}
[[ "$zbuild" = /* ]] || zbuild=$repo/$zbuild
if [[ ! -f "$zbuild/driver/libze_zecl.so" ]]; then
  [[ -f "$zbuild/build.ninja" ]] || cmake -S "$repo" -B "$zbuild" -G Ninja >/dev/null
  ninja -C "$zbuild" -j"$jobs" ze_zecl >&2
fi
[[ $build_only == 1 ]] && { echo "lzt-conformance: built $binaries in $build"; exit 0; }

if [[ "$device" == intel-cpu ]]; then
  eval "$(bash "$repo/scripts/intel-cpu-opencl.sh")"
else
  export ZECL_PLATFORM=${ZECL_PLATFORM:-Portable}
fi
export ZE_ENABLE_ALT_DRIVERS=$zbuild/driver/libze_zecl.so

run_root=$build/run-$device
total_pass=0 total_fail=0 total_skip=0 broken=0
printf '%-16s %7s %7s %7s  %s\n' binary passed failed skipped status
for b in $binaries; do
  dir=$run_root/$b
  rm -rf "$dir" && mkdir -p "$dir"
  exe=$(find "$build" -name "$b" -type f -perm -u+x -print -quit)
  [[ -n "$exe" ]] || { printf '%-16s %7s %7s %7s  %s\n' "$b" - - - "not built"; broken=1; continue; }
  cp "$exe" "$dir/"
  cp "$lzt/conformance_tests/core/$b"/kernels/*.spv "$dir/" 2>/dev/null || true
  args=(--gtest_output="xml:$dir/result.xml")
  [[ -n "$filter" ]] && args+=(--gtest_filter="$filter")
  set +e
  (cd "$dir" && timeout -k 10 "$timeout_s" "./$b" "${args[@]}" >"$dir/log.txt" 2>&1)
  rc=$?
  set -e
  # Counted from the per-test lines of the log, so a crash mid-run still counts what ran.
  # gtest's per-test result lines end in "(N ms)"; its closing summary repeats names without.
  pass=$(grep -cE '^\[       OK \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  fail=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  skip=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  status=ok
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    status="TIMEOUT after ${timeout_s}s (in $(grep '^\[ RUN' "$dir/log.txt" | tail -1 | awk '{print $4}'))"
    broken=1
    fail=$((fail + 1))
  elif [[ $rc -gt 1 ]]; then
    status="CRASH rc=$rc (in $(grep '^\[ RUN' "$dir/log.txt" | tail -1 | awk '{print $4}'))"
    broken=1
    fail=$((fail + 1))
  fi
  printf '%-16s %7d %7d %7d  %s\n' "$b" "$pass" "$fail" "$skip" "$status"
  total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
done
echo "logs: $run_root/<binary>/log.txt; device: $device; suite: $lzt ($(git -C "$lzt" rev-parse HEAD 2>/dev/null || cat "$lzt/.lzt-commit" 2>/dev/null || echo unknown commit))"
echo "$total_skip skipped"
echo "$total_pass passed, $total_fail failed"
exit $broken
