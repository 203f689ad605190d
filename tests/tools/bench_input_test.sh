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
# hex (CLI11 read "0x10" as 16) and a --zecl that was not used (ignored under ZE_ENABLE_ALT_DRIVERS,
# which this test sets; exit 3 as a device error without it)
refused "$launch" "--launches '0x10'" -n 0x10
refused "$launch" "--cl-device '0x0'" --cl-device 0x0
refused "$launch" "--zecl $tmp/none.so: ZE_ENABLE_ALT_DRIVERS" --zecl "$tmp/none.so"
refused env "--zecl $tmp/none.so: not a file" -u ZE_ENABLE_ALT_DRIVERS "$launch" --zecl "$tmp/none.so"
refused env "--zecl $tmp: not a file" -u ZE_ENABLE_ALT_DRIVERS "$launch" --zecl "$tmp"

# a tuning the device cannot run at all (work-groups of 32768 items): its chains SKIPPED, then
# exit 2, not "CHECK 0 of 0" and exit 0
rc=0
"$chain" --pattern six_local --variant baseline --hidden 256 --intermediate 128 -n 1 --copy-mib 1 \
  --tuning cols_per_wg=4096 >"$tmp/skip.txt" 2>"$tmp/skip_err.txt" || rc=$?
[[ $rc -eq 2 ]] || fail "zp-chain-bench with no usable tuning: exit $rc, want 2: $(cat "$tmp/skip_err.txt")"
grep -q "no --tuning can run on this device" "$tmp/skip_err.txt" || fail "no usable tuning: $(cat "$tmp/skip_err.txt")"
grep -q "^SKIPPED tuning \[cols_per_wg=4096" "$tmp/skip.txt" || fail "no usable tuning: no SKIPPED line: $(cat "$tmp/skip.txt")"

rc=0
"$chain" --pattern all --variant one_launch --hidden 512 --intermediate 256 -n 1 -q >"$tmp/all.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "zp-chain-bench --pattern all: exit $rc: $(tail -3 "$tmp/all.txt")"
chains=$(grep -c " one_launch  *chain " "$tmp/all.txt" || true)
[[ $chains -eq 7 ]] || fail "zp-chain-bench --pattern all: $chains one_launch chains, want the 7 patterns'"
grep -q "^CHECK 7 of 7 measured chains bit-exact" "$tmp/all.txt" || fail "zp-chain-bench --pattern all: $(grep CHECK "$tmp/all.txt")"

# one_launch ranking its groups over the made-up placement (spread_units=2: group g on unit
# (5 g + 3) mod 7): the placement line names the grid, its units, and ranks covering at least
# as many units as ids
rc=0
"$chain" --pattern same_typical --variant one_launch --hidden 512 --intermediate 256 -n 1 -q \
    --tuning gemm_tile=2,cols_per_wg=16,cols_per_item=4,stream_split=8,stream_chunk=16,spread_units=2 \
    >"$tmp/spread.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "zp-chain-bench spread_units=2: exit $rc: $(tail -3 "$tmp/spread.txt")"
line=$(grep "placement (spread_units):" "$tmp/spread.txt") || fail "zp-chain-bench spread_units=2: no placement line"
read -r n units half_ids ids half_ranks ranks < <(sed -E \
    's/.*: ([0-9]+) groups on ([0-9]+) compute units; groups 0-([0-9]+) by id on ([0-9]+), ranks 0-([0-9]+) on ([0-9]+)$/\1 \2 \3 \4 \5 \6/' <<<"$line")
[[ $units -eq $((n < 7 ? n : 7)) ]] || fail "placement: $units units for $n groups on 7 made-up units: $line"
[[ $ranks -ge $ids && $half_ids -eq $half_ranks ]] || fail "placement: ranks cover fewer units than ids: $line"

rc=0
"$launch" -n 200 -r 1 -p 3 >"$tmp/launch.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "zecl-launch-bench -p 3: exit $rc: $(tail -3 "$tmp/launch.txt")"
grep -q "empty kernel with 3 pointer argument(s)" "$tmp/launch.txt" || fail "zecl-launch-bench -p 3: $(cat "$tmp/launch.txt")"
grep -q "^  raw OpenCL, SVM pointers  *[0-9.]" "$tmp/launch.txt" || fail "zecl-launch-bench: no SVM row: $(cat "$tmp/launch.txt")"
echo "ok: bad input refused with exit 2 by both benches; --pattern all ran 7 chains bit-exact; the placement printed ($line); -p 3 timed"
