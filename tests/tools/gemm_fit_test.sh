#!/usr/bin/env bash
# tools.gemm_fit: tools/bench/gemm_fit.sh (a GEMM kernel's fixed cost and rate per byte from two
# ablation runs at the same K). On H200 outputs kept as test data (docs/perf.md "What does a GEMM
# kernel cost, fixed and per byte?"; one device call of 2026-12-03, the rows of its second tuning,
# cols_per_wg=32, left out) it must give the figures perf.md quotes; on two runs of
# zp-chain-bench --ablation on this machine's device it must find the rows it reads (so a change
# of the bench's output fails here, not on a device call); bad input exits 2 naming the file.
#   gemm_fit_test.sh REPO_ROOT ZP_CHAIN_BENCH
set -euo pipefail
root=$1 bench=$2
fit=$root/tools/bench/gemm_fit.sh data=$root/tests/tools/data
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-gemm-fit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # output, kernel, stage, fixed us, GB/s
    grep -qE "^$2 $3 +[0-9.]+ us for +[0-9.]+ MB = +$4 us fixed \+ the bytes at +$5 GB/s" <<<"$1" ||
        fail "$2 $3: want $4 us fixed and $5 GB/s, got: $(grep "^$2 $3" <<<"$1")"
}

out=$(bash "$fit" gemm1_mxfp4_m2 "$data"/ablation_h200_six_local_H4096_I{2048,8192}.txt)
expect "$out" gemm1_mxfp4_m2 loads_only 9.3 3734
expect "$out" gemm1_mxfp4_m2 whole 8.8 2270
grep -q "(88.0% of copy)" <<<"$out" || fail "the loads' share of the copy bandwidth: $out"
out=$(bash "$fit" gemm2_mxfp4_m2 "$data"/ablation_h200_six_local_H{4096,16384}_I2048.txt)
expect "$out" gemm2_mxfp4_m2 loads_only 5.7 3494
expect "$out" gemm2_mxfp4_m2 whole 7.6 2202

# The bench's own output at two widths of gemm1 (K = hidden stays 256): four stages fitted.
t=gemm_tile=2,cols_per_wg=32,cols_per_item=4,stream_split=8
for i in 64 256; do
    "$bench" -d zecl -n 1 --ablation --variant baseline --pattern six_local --hidden 256 --intermediate $i \
        --tuning "$t" >"$tmp/i$i.txt" 2>&1 || fail "zp-chain-bench at intermediate $i: exit $?: $(tail -5 "$tmp/i$i.txt")"
done
out=$(bash "$fit" gemm1_mxfp4_m2 "$tmp/i64.txt" "$tmp/i256.txt") || fail "gemm_fit.sh on the bench's output: $out"
[[ $(grep -cE "^gemm1_mxfp4_m2 (loads_only|decode|fma|whole) " <<<"$out") -eq 4 ]] || fail "four stages wanted: $out"
# and the bench timed the fifth stage (the kernel without its weight loads) after the four it fits
row=$(awk '$1 == "six_local" && $2 == "gemm1_mxfp4_m2"' "$tmp/i64.txt")
awk '{ for (i = 4; i <= 16; i += 3) if ($i !~ /^[0-9.]+$/ || $i <= 0) exit 1 }' <<<"$row" ||
    fail "an ablation row without five timed stages: $row"

rc=0
msg=$(bash "$fit" gemm1_mxfp4_m2 "$tmp/i64.txt" "$tmp/no-such.txt" 2>&1) || rc=$?
[[ $rc -eq 2 && $msg == *no-such.txt* ]] || fail "a missing file: exit $rc, $msg"
rc=0
msg=$(bash "$fit" gemm1_mxfp4_m2 "$tmp/i256.txt" "$tmp/i64.txt" 2>&1) || rc=$?
[[ $rc -eq 2 && $msg == *"more bytes"* ]] || fail "the files swapped: exit $rc, $msg"
cat "$tmp/i64.txt" "$tmp/i64.txt" >"$tmp/two.txt"
rc=0
msg=$(bash "$fit" gemm1_mxfp4_m2 "$tmp/two.txt" "$tmp/i256.txt" 2>&1) || rc=$?
[[ $rc -eq 2 && $msg == *"want one tuning"* ]] || fail "two tunings in one file: exit $rc, $msg"
# not a regular file (a FIFO and /dev/zero hung awk) and an empty kernel name: exit 2 in time
mkfifo "$tmp/fifo"
for bad in "$tmp/fifo" /dev/zero "$tmp"; do
    rc=0
    msg=$(timeout 20 bash "$fit" gemm1_mxfp4_m2 "$bad" "$tmp/i256.txt" 2>&1) || rc=$?
    [[ $rc -eq 2 && $msg == *"cannot read '$bad'"* ]] || fail "$bad as input: exit $rc, $msg"
done
rc=0
msg=$(bash "$fit" "" "$tmp/i64.txt" "$tmp/i256.txt" 2>&1) || rc=$?
[[ $rc -eq 2 && $msg == *"empty KERNEL"* ]] || fail "an empty kernel name: exit $rc, $msg"
echo "gemm_fit: H200 data and this device's bench output fitted; bad input refused"
