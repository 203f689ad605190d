#!/usr/bin/env bash
# tools.engine_table: tools/bench/engine_table.sh (the engine against the old tile and the
# roofline, per GEMM-bearing kernel and pattern). On a zp-chain-bench output kept as test data
# (PoCL, H 512, I 96, the lane tile then a stream tile, 2026-12-04) it must give the cells worked
# out by hand from that file; on the bench's own output on this machine's device it must find
# the rows it reads (so a change of the bench's output fails here, not on a device call); one
# tuning, the quiet output and an unreadable file exit 2 saying why.
#   engine_table_test.sh REPO_ROOT ZP_CHAIN_BENCH
set -euo pipefail
root=$1 bench=$2
table=$root/tools/bench/engine_table.sh data=$root/tests/tools/data/chains_pocl_lane_and_stream.txt
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-engine-table.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(bash "$table" "$data")
# gemm1 on six_local: 0.64 MB at the run's 32 GB/s is a 20.0 us roofline; 1006.2 us is 50.31x it
grep -qF "| gemm1_mxfp4_m2 | 2478.5 -> 1006.2 (50.31x) | 467.5 -> 174.5 (" <<<"$out" || fail "gemm1's row: $out"
# gemm2 as baseline measured it (its first variant), not paired_direct's 2014.7
grep -qF "| gemm2_mxfp4_m2 | 3425.2 -> 929.2 (" <<<"$out" || fail "gemm2's row: $out"
grep -qF "| one_launch | 8549.1 -> 74062.5 (" <<<"$out" || fail "one_launch's row: $out"
grep -qxF "| kernel | six_local | same_typical |" <<<"$out" || fail "the patterns' header (the goals are no pattern): $out"
grep -q "route_compact\|gather_bf16" <<<"$out" && fail "a kernel without a GEMM has a row: $out"
grep -q "copy 32 GB/s" <<<"$out" || fail "the copy bandwidth: $out"

# One tuning: refused, naming the count.
grep -v "gemm_tile=2" "$data" >"$tmp/one.txt"
rc=0; bash "$table" "$tmp/one.txt" >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "measured 1 tunings; want two" "$tmp/out.txt" || fail "one tuning: exit $rc: $(cat "$tmp/out.txt")"
rc=0; bash "$table" "$tmp/none.txt" >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "cannot read" "$tmp/out.txt" || fail "a missing file: exit $rc: $(cat "$tmp/out.txt")"

# The bench's own output on this machine: two tunings, without -q, then with -q (no kernel tables).
t=gemm_tile=2,cols_per_wg=16,cols_per_item=4,stream_split=16,stream_chunk=16
"$bench" -d zecl --hidden 256 --intermediate 96 -n 1 --copy-mib 4 --variant baseline --pattern six_local \
    --tuning "" --tuning "$t" >"$tmp/live.txt" 2>&1 || fail "zp-chain-bench: $(tail -5 "$tmp/live.txt")"
out=$(bash "$table" "$tmp/live.txt") || fail "the live output: $out"
grep -qE "^\| gemm1_mxfp4_m2 \| [0-9.]+ -> [0-9.]+ \([0-9.]+x\) \|$" <<<"$out" || fail "the live gemm1 row: $out"
grep -qE "^\| gemm2_mxfp4_m2 \| [0-9.]+ -> [0-9.]+ \([0-9.]+x\) \|$" <<<"$out" || fail "the live gemm2 row: $out"
"$bench" -d zecl --hidden 256 --intermediate 96 -n 1 --copy-mib 4 --variant baseline --pattern six_local -q \
    --tuning "" --tuning "$t" >"$tmp/quiet.txt" 2>&1 || fail "zp-chain-bench -q: $(tail -5 "$tmp/quiet.txt")"
rc=0; bash "$table" "$tmp/quiet.txt" >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "without -q" "$tmp/out.txt" || fail "the quiet output: exit $rc: $(cat "$tmp/out.txt")"
echo "ok: the kept output's cells, the live output's rows, bad input refused"
