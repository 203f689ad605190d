#!/usr/bin/env bash
# tools.bench_scripts: the device scripts (tools/bench/*.sh, run only in H200 calls) parse, and
# every kernel tuning written in them (each literal key=value,... run with a tuning key, or
# following a variable as in "$R6,key=v"; completed with gemm_tile=2 where it names no tile) is
# one that KernelTuning::parse takes, so that a key or a value removed from the tuning cannot
# leave a script that fails on the device. zp-cl-build-report --options-only parses without
# building.
#   bench_scripts_test.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
report=$build/tools/bench/zp-cl-build-report
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -x $report ]] || fail "no $report"
# the tuning keys, from the parser's own refusal
keys=$({ "$report" --kernels-dir "$root/kernels_cl" --options-only --tuning no_such_key=1 2>&1 || true; } | sed -n 's/.*(valid: \(.*\))$/\1/p' | tr -d ' ' | tr ',' ' ')
[[ -n $keys ]] || fail "no key list in zp-cl-build-report's refusal of an unknown key"
is_key() { [[ " $keys " == *" $1 "* ]]; }
checked=0 scripts=0
for f in "$root"/tools/bench/*.sh; do
  bash -n "$f" || fail "$f does not parse"
  scripts=$((scripts + 1))
  while read -r run; do
    [[ -n $run ]] || continue
    tuning=0 other=""
    if [[ $run == \$* ]]; then tuning=1 run=${run#*,}; fi  # "$R6,key=v": the rest of a tuning
    IFS=, read -ra pairs <<<"$run"
    for p in "${pairs[@]}"; do if is_key "${p%%=*}"; then tuning=1; else other+=" ${p%%=*}"; fi; done
    ((tuning)) || continue  # not a tuning (e.g. gtest_brief=1)
    [[ -z $other ]] || fail "$(basename "$f"): '$run' is a tuning with keys the tuning does not know:$other"
    t=$run
    [[ ,$run, == *,gemm_tile=* ]] || t=gemm_tile=2,$run
    msg=$("$report" --kernels-dir "$root/kernels_cl" --options-only --tuning "$t" 2>&1) || fail "$(basename "$f"): tuning '$run' refused: $msg"
    checked=$((checked + 1))
  done < <(grep -oE '(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?,)?[a-z][a-z0-9_]*=[0-9]+(,[a-z][a-z0-9_]*=[0-9]+)*' "$f" | sort -u)
done
((scripts > 0 && checked > 0)) || fail "found $scripts scripts and $checked tunings"
# the check itself: a removed value and an unknown key are refused
! "$report" --kernels-dir "$root/kernels_cl" --options-only --tuning gemm_tile=2,e2m1_decode=5 >/dev/null 2>&1 || fail "e2m1_decode=5 was accepted"
! "$report" --kernels-dir "$root/kernels_cl" --options-only --tuning gemm_tile=2,stream_bf16_act=1 >/dev/null 2>&1 || fail "stream_bf16_act was accepted"
# argument checks of the device scripts that run nothing here: each exits 2 naming the value
# before it runs anything (h200_stream.sh before setup.sh touches the machine)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-bench-scripts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\necho ze-probe "$@"\n' >"$tmp/ze-probe"
chmod +x "$tmp/ze-probe"
touch "$tmp/file"
refused() {  # NEEDLE ENV... -- SCRIPT ARGS...
    local needle=$1 rc=0 msg
    shift
    msg=$(cd "$tmp" && timeout 20 env "$@" 2>&1) || rc=$?
    [[ $rc -eq 2 && $msg == *"$needle"* ]] || fail "$*: exit $rc, want 2 naming '$needle': $msg"
}
gate=$root/tools/bench/gate_repeat.sh stream=$root/tools/bench/h200_stream.sh
refused "N '' is not" ZE_PROBE="$tmp/ze-probe" bash "$gate" ""
refused "N '0x3' is not" ZE_PROBE="$tmp/ze-probe" bash "$gate" 0x3
refused "N '1' is not" ZE_PROBE="$tmp/ze-probe" bash "$gate" 1
refused "N '101' is not" ZE_PROBE="$tmp/ze-probe" bash "$gate" 101
refused "ZE_PROBE '$tmp' is not" ZE_PROBE="$tmp" bash "$gate" 2
refused "GATE_REPEAT_OUT '$tmp/file' is not" ZE_PROBE="$tmp/ze-probe" GATE_REPEAT_OUT="$tmp/file" bash "$gate" 2
# options without N: N is 5 and the options go through whole (the first was taken as N)
msg=$(cd "$tmp" && ZE_PROBE="$tmp/ze-probe" bash "$gate" --device zecl) || fail "gate_repeat.sh --device zecl: $msg"
[[ $msg == "ze-probe --gate-repeat 5 --out gate-repeat --report gate-repeat/report.html --device zecl" ]] ||
    fail "gate_repeat.sh --device zecl ran: $msg"
refused "unknown step 'reprot'" OUT="$tmp" bash "$stream" report reprot
refused "OUT '' is not" -u OUT bash "$stream" report
refused "OUT '$tmp/file' is not" OUT="$tmp/file" bash "$stream"
echo "bench_scripts: $scripts scripts parse; $checked tunings in them parse"
