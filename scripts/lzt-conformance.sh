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
# here if missing: that target only). Each binary runs in its own directory under a per-binary
# time limit, with every kernel of the core group (as the suite installs them all in one
# directory: test_device loads test_module's module_add.spv) and its own kernels over them, and
# test_device with its affinity helper in device/. A test silent for ${LZT_STALL:-60}s counts
# as hung and one that kills the process as crashed: either is a failure, named in the status
# column, and the binary resumes after it. A test that writes more than ${LZT_FLOOD_MB:-64} MB
# (a failed check in a loop over a large buffer prints every element) is stopped and counted
# as failed, its log cut after its first MB, and the binary resumes after it. The last line
# is "N passed, M failed" over the test instances (a skipped instance is neither); the line
# before it counts only the tests that ran their work (a pass that logged an early return,
# for a missing extension or device, is left out and named in run-DEVICE/skipped-work.txt).
# Exit 0 when nothing hung or crashed, 1 otherwise.
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
flood_mb=${LZT_FLOOD_MB:-64}
[[ "$flood_mb" =~ ^[1-9][0-9]*$ ]] || { echo "lzt-conformance: LZT_FLOOD_MB must be a positive integer, not '$flood_mb'" >&2; exit 2; }
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
# test_device's affinity tests run test_affinity_helper from ./device.
helpers=""
[[ " $binaries " == *" test_device "* ]] && helpers=test_affinity_helper
# shellcheck disable=SC2086
ninja -C "$build" -j"$jobs" $binaries $helpers >&2

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
stall_s=${LZT_STALL:-60}

# Passes that did not run their work: the suite returns early from a test, logging why (a
# missing extension, image support, a second device, ...), and gtest counts it as passed. The
# reasons it logs, and the one test that returns silently (in synchronous mode it has nothing to do).
skip_reasons='skipping|cannot run test|not running test|No command queues that support cooperative kernels|Less than (two|2)|No sub-device|does not have any sub-devices|does not support'
silent_skips='TestCasesforCommandListImmediateCases/zeImmediateCommandListExecutionTests.GivenImmediateCommandListWhenAppendWaitOnEventsThenSuccessIsReturned/1'
skipped_work() {
  awk -v reasons="$skip_reasons" -v silent="$silent_skips" '
    /^\[ RUN/ {skip = ($4 == silent); next}
    $0 ~ reasons {skip = 1}
    /^\[       OK \] .* \([0-9]+ ms\)$/ {if (skip) print $4; skip = 0}' "$1"
}

# The test names a gtest log finished (passed, failed or skipped), one a line.
finished_tests() {
  sed -nE 's/^\[ *(OK|FAILED|SKIPPED) *\] ([^ ,]+).* \([0-9]+ ms\)$/\2/p' "$1"
}

# Runs one binary in $dir; a test that prints nothing for $stall_s seconds (hung), kills the
# process (crashed) or writes more than $flood_mb MB (flooded) is recorded as failed and the
# binary resumes after it, so one such test does not cost the tests behind it. Sets hung,
# crashed, flooded (the names).
run_binary() {
  local b=$1 dir=$2 deadline=$((SECONDS + timeout_s)) attempt=0 exclude="" part rc pid size last_size last_change
  local flood flood_at test_start
  hung="" crashed="" flooded=""
  : >"$dir/log.txt"
  while :; do
    part=$dir/part$attempt.txt
    local f=${filter:-*}
    [[ -n "$exclude" ]] && { [[ "$f" == *-* ]] && f="$f:${exclude#:}" || f="$f-${exclude#:}"; }
    local remaining=$((deadline - SECONDS))
    ((remaining > 0)) || { echo "[  FAILED  ] (binary time limit ${timeout_s}s reached) (0 ms)" >>"$dir/log.txt"; hung+=" (time limit)"; return; }
    (cd "$dir" && exec timeout -k 5 "$remaining" "./$b" --gtest_filter="$f" >"$part" 2>&1) &
    pid=$!
    last_size=-1 last_change=$SECONDS flood=0 flood_at=$((flood_mb * 1048576))
    while kill -0 "$pid" 2>/dev/null; do
      sleep 1
      size=$(stat -c %s "$part" 2>/dev/null || echo 0)
      if ((size > flood_at)); then
        # Past the cap since the start of the run: measured again from the current test's start.
        test_start=$(grep -abF '[ RUN      ]' "$part" | tail -1 | cut -d: -f1)
        flood_at=$((${test_start:-0} + flood_mb * 1048576))
      fi
      if ((size > flood_at)); then
        flood=1
        pkill -TERM -P "$pid" 2>/dev/null || true
        break
      elif [[ "$size" != "$last_size" ]]; then
        last_size=$size last_change=$SECONDS
      elif ((SECONDS - last_change >= stall_s)); then
        pkill -TERM -P "$pid" 2>/dev/null || true  # the timeout process (our child) and so the test
        break
      fi
    done
    set +e
    wait "$pid"
    rc=$?
    set -e
    local current
    current=$(grep -a '^\[ RUN' "$part" | tail -1 | awk '{print $4}')
    if ((flood)); then
      # The log keeps the flooding test's first MB.
      local start
      start=$(grep -abF "[ RUN      ] $current" "$part" | tail -1 | cut -d: -f1)
      head -c $((${start:-0} + 1048576)) "$part" >>"$dir/log.txt"
      printf '\n[... output cut: the test wrote over %s MB]\n' "$flood_mb" >>"$dir/log.txt"
    else
      cat "$part" >>"$dir/log.txt"
    fi
    if [[ -n "$current" ]] && ! finished_tests "$part" | grep -qxF "$current" && ((flood || (rc != 0 && rc != 1))); then
      local why="crashed (exit $rc)"
      if ((flood)); then
        why="stopped: over $flood_mb MB of output"
        flooded+=" $current"
      elif ((SECONDS - last_change >= stall_s)); then
        why="hung: no output for ${stall_s}s"
        hung+=" $current"
      else
        crashed+=" $current"
      fi
      echo "[  FAILED  ] $current ($why) (0 ms)" >>"$dir/log.txt"
      exclude+=$(finished_tests "$part" | sed 's/^/:/' | tr -d '\n'):$current
      ((flood)) && rm -f "$part"
      attempt=$((attempt + 1))
      ((attempt < 50)) && continue
    elif ((rc != 0 && rc != 1)); then
      crashed+=" (exit $rc outside a test)"
    fi
    return
  done
}

total_pass=0 total_fail=0 total_skip=0 total_il=0 total_nowork=0 broken=0
mkdir -p "$run_root" && : >"$run_root/skipped-work.txt"
printf '%-16s %7s %7s %7s  %s\n' binary passed failed skipped status
for b in $binaries; do
  dir=$run_root/$b
  rm -rf "$dir" && mkdir -p "$dir"
  exe=$(find "$build" -name "$b" -type f -perm -u+x -print -quit)
  [[ -n "$exe" ]] || { printf '%-16s %7s %7s %7s  %s\n' "$b" - - - "not built"; broken=1; continue; }
  cp "$exe" "$dir/"
  cp "$lzt"/conformance_tests/core/*/kernels/*.spv "$dir/" 2>/dev/null || true
  cp "$lzt/conformance_tests/core/$b"/kernels/*.spv "$dir/" 2>/dev/null || true
  if [[ "$b" == test_device ]]; then
    helper=$(find "$build" -name test_affinity_helper -type f -perm -u+x -print -quit)
    [[ -n "$helper" ]] && mkdir -p "$dir/device" && cp "$helper" "$dir/device/"
  fi
  run_binary "$b" "$dir"
  # Counted from the per-test lines of the log, so a crash mid-run still counts what ran.
  # gtest's per-test result lines end in "(N ms)"; its closing summary repeats names without.
  pass=$(grep -acE '^\[       OK \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  fail=$(grep -acE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  skip=$(grep -acE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$dir/log.txt" || true)
  # Failed tests whose module build was refused for want of SPIR-V (PoCL): the kernel tests.
  il=$(awk '/^\[ RUN/ {bad=0} /Which is: ZE_RESULT_ERROR_UNSUPPORTED_FEATURE/ && prev ~ /build_result|zeModuleCreate/ {bad=1}
            /^\[  FAILED  \] .* \([0-9]+ ms\)$/ && bad {n++} {prev=$0} END {print n+0}' "$dir/log.txt")
  status=ok
  [[ -n "$flooded" ]] && status="FLOODED:$flooded"
  [[ -n "$hung" ]] && { status="${status/ok/} HUNG:$hung"; broken=1; }
  [[ -n "$crashed" ]] && { status="${status/ok/} CRASHED:$crashed"; broken=1; }
  printf '%-16s %7d %7d %7d  %s\n' "$b" "$pass" "$fail" "$skip" "$status${il:+ ($il failed for want of SPIR-V)}"
  total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_skip=$((total_skip + skip))
  total_il=$((total_il + il))
  skipped_work "$dir/log.txt" | sed "s|^|$b: |" >>"$run_root/skipped-work.txt"
done
total_nowork=$(wc -l <"$run_root/skipped-work.txt")
echo "logs: $run_root/<binary>/log.txt; device: $device; suite: $lzt ($(git -C "$lzt" rev-parse HEAD 2>/dev/null || cat "$lzt/.lzt-commit" 2>/dev/null || echo unknown commit))"
echo "$total_skip skipped; $total_il of the failures are tests whose SPIR-V module the device refused"
ran=$((total_pass - total_nowork))
echo "$total_nowork of the passes skipped their work (named in $run_root/skipped-work.txt): counting only tests that ran it," \
  "$ran passed, $total_fail failed ($(awk -v p=$ran -v f=$total_fail 'BEGIN {printf "%.1f", (p + f) ? 100 * p / (p + f) : 0}') %)"
echo "$total_pass passed, $total_fail failed"
exit $broken
