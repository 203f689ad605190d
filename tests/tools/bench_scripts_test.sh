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
echo "bench_scripts: $scripts scripts parse; $checked tunings in them parse"
