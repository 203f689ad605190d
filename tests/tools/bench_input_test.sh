#!/usr/bin/env bash
# tools.bench_input: zp-chain-bench and zecl-launch-bench refuse bad input with exit 2 and a
# message naming the bad value, before any device work (docs/usage.md "Exit codes"); one good
# small run of each exits 0 (zp-chain-bench: --pattern all, every pattern at a reduced shape).
#   bench_input_test.sh CHAIN_BENCH LAUNCH_BENCH
set -euo pipefail
chain=$1 launch=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-bench-input.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# refused TOOL WANT_IN_MESSAGE ARGS...: exit 2, the message on stderr names WANT, no figures
refused() {
  local tool=$1 want=$2 rc=0
  shift 2
  "$tool" "$@" >"$tmp/out.txt" 2>"$tmp/err.txt" || rc=$?
  [[ $rc -eq 2 ]] || fail "$(basename "$tool") $*: exit $rc, want 2: $(cat "$tmp/err.txt")"
  grep -qF -- "$want" "$tmp/err.txt" || fail "$(basename "$tool") $*: the message does not name '$want': $(cat "$tmp/err.txt")"
  grep -q "error" "$tmp/err.txt" || fail "$(basename "$tool") $*: no 'error' on stderr"
  ! grep -q "^copy bandwidth" "$tmp/out.txt" || fail "$(basename "$tool") $*: measured before refusing"
}

refused "$chain" "bogus_variant" --variant bogus_variant
refused "$chain" "bogus_pattern" --pattern bogus_pattern
refused "$chain" "no_such_key" --tuning no_such_key=1
refused "$chain" "hidden = 100" --hidden 100
refused "$chain" "--replays" --replays 0
refused "$chain" "--device 99" --device 99
refused "$launch" "--pointers" --pointers 0
refused "$launch" "--pointers" --pointers 65
refused "$launch" "--device nowhere" --device nowhere

rc=0
"$chain" --pattern all --variant one_launch --hidden 512 --intermediate 256 -n 1 -q >"$tmp/all.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "zp-chain-bench --pattern all: exit $rc: $(tail -3 "$tmp/all.txt")"
chains=$(grep -c " one_launch  *chain " "$tmp/all.txt" || true)
[[ $chains -eq 7 ]] || fail "zp-chain-bench --pattern all: $chains one_launch chains, want the 7 patterns'"
grep -q "^CHECK 7 of 7 measured chains bit-exact" "$tmp/all.txt" || fail "zp-chain-bench --pattern all: $(grep CHECK "$tmp/all.txt")"

rc=0
"$launch" -n 200 -r 1 -p 3 >"$tmp/launch.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "zecl-launch-bench -p 3: exit $rc: $(tail -3 "$tmp/launch.txt")"
grep -q "empty kernel with 3 pointer argument(s)" "$tmp/launch.txt" || fail "zecl-launch-bench -p 3: $(cat "$tmp/launch.txt")"
grep -q "^  raw OpenCL, SVM pointers  *[0-9.]" "$tmp/launch.txt" || fail "zecl-launch-bench: no SVM row: $(cat "$tmp/launch.txt")"
echo "ok: bad input refused with exit 2 by both benches; --pattern all ran 7 chains bit-exact; -p 3 timed"
