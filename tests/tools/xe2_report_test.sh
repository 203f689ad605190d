#!/usr/bin/env bash
# tools.xe2_report: tools/bench/xe2_report.sh builds every kernel file for bmg at a tuning. At
# the stream tile with two columns per work-item every kernel is SIMD16 (the GEMMs) at 128 GRF
# with no spill (exit 0, a row per kernel file); at four columns every stream-tile kernel has no
# private memory and all but two_launch_b no spill; at one column per work-item (the tree in local
# memory) every kernel builds; at four columns with two iterations of loads in flight one_launch
# spills and the script says so (exit 1); a bad tuning and an unknown argument exit 2 naming them.
#   xe2_report_test.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/tools/bench/xe2_report.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-xe2-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
s=gemm_tile=2,rows_per_pass=2,stream_split=16,stream_chunk=128,e2m1_decode=4

rc=0
bash "$script" --build "$build" --tuning "$s,cols_per_wg=32,cols_per_item=2" >"$tmp/c2.txt" 2>"$tmp/err.txt" || rc=$?
[[ $rc -eq 0 ]] || fail "two columns per work-item: exit $rc, want 0: $(cat "$tmp/err.txt") $(grep -v '| 0 | 0 |$' "$tmp/c2.txt")"
files=$("$build/tools/bench/zp-cl-build-report" --options-only --kernels-dir "$root/kernels_cl" | wc -l)
rows=$(grep -c "^| [a-z0-9_]* | bmg | " "$tmp/c2.txt")
[[ $rows -ge $files ]] || fail "$rows kernel rows for $files kernel files: $(cat "$tmp/c2.txt")"
grep -q "^| gemm1_mxfp4_m2 | bmg | gemm1_mxfp4_m2 | zebin [0-9.]* | [0-9]* | 16 | 128 | [0-9]* | 0 | 0 |$" "$tmp/c2.txt" ||
    fail "gemm1 is not SIMD16, 128 GRF, spill-free: $(grep "gemm1_mxfp4_m2 |" "$tmp/c2.txt")"

# four columns (NVIDIA's R6 tiles): every kernel on the stream tile with no private memory (the
# paired epilogue's register tree unrolled: its stores indexed by a rolled loop put the dots in
# private memory) and spill-free but two_launch_b, whose persistent loop over its units spills
# there (docs/perf.md "two_launch persistent?"; the script's exit 1); gemm2_loader_fused's
# activations made in the stream tile's staging (ZP_ST_A_SWIGLU) included
rc=0
bash "$script" --build "$build" --tuning "$s,cols_per_wg=64,cols_per_item=4" >"$tmp/r6.txt" 2>&1 || rc=$?
[[ $rc -le 1 ]] || fail "four columns: exit $rc, want 0 or 1: $(tail -5 "$tmp/r6.txt")"
stream_rows=$(grep "^| [a-z0-9_]* | bmg | " "$tmp/r6.txt")
[[ $(wc -l <<<"$stream_rows") -ge $files ]] || fail "four columns: too few kernel rows: $(cat "$tmp/r6.txt")"
bad=$(grep -v "| [0-9]* | 0 |$" <<<"$stream_rows" || true)
[[ -z $bad ]] || fail "four columns: a stream-tile kernel has private memory: $bad"
bad=$(grep -v "| 0 | 0 |$" <<<"$stream_rows" | grep -v "^| two_launch_b " || true)
[[ -z $bad ]] || fail "four columns: a stream-tile kernel spills: $bad"

rc=0
bash "$script" --build "$build" --tuning "$s,cols_per_wg=64,cols_per_item=4,stream_prefetch=2" >"$tmp/c4.txt" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "four columns, two iterations in flight: exit $rc, want 1 (one_launch spills): $(grep one_launch "$tmp/c4.txt")"
grep -q "^| one_launch | bmg | one_launch | .* | [1-9][0-9]* | [0-9]* |$" "$tmp/c4.txt" ||
    fail "one_launch's spill is not in its row: $(grep "one_launch |" "$tmp/c4.txt")"

# one column per work-item: the tree in local memory (no register tree), through llvm-spirv too
rc=0
bash "$script" --build "$build" --tuning "$s,stream_split=8,cols_per_wg=32,cols_per_item=2" >"$tmp/c1.txt" 2>&1 || rc=$?
[[ $rc -le 1 ]] || fail "one column per work-item (the local-memory tree): exit $rc, want 0 or 1: $(tail -5 "$tmp/c1.txt")"
rows=$(grep -c "^| [a-z0-9_]* | bmg | " "$tmp/c1.txt")
[[ $rows -ge $files ]] || fail "one column per work-item: $rows kernel rows for $files kernel files"

rc=0
bash "$script" --build "$build" --tuning "gemm_tile=9" >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "gemm_tile=9: exit $rc, want 2"
grep -q "gemm_tile" "$tmp/out.txt" || fail "the error does not name gemm_tile: $(cat "$tmp/out.txt")"
rc=0
bash "$script" --build "$build" --colour blue >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--colour: exit $rc, want 2"
grep -q -- "--colour" "$tmp/out.txt" || fail "the error does not name --colour: $(cat "$tmp/out.txt")"
for opt in --target --build; do  # an empty value (--target "" was a bash "bad array subscript")
    rc=0
    bash "$script" --build "$build" "$opt" "" >"$tmp/out.txt" 2>&1 || rc=$?
    [[ $rc -eq 2 ]] || fail "$opt '': exit $rc, want 2"
    grep -qx "xe2_report: $opt '': an empty value" "$tmp/out.txt" || fail "$opt '': $(cat "$tmp/out.txt")"
done
echo "ok: $rows kernels spill-free at two columns per work-item; the stream tile free of private memory at four; one_launch spills at four with two in flight; bad input refused"
