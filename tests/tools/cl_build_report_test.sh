#!/usr/bin/env bash
# tools.cl_build_report: zp-cl-build-report on the OpenCL CPU device (PoCL in CI) builds every
# kernel file of a --kernels-dir (three of kernels_cl/: a GEMM with the stream tile, an
# elementwise kernel, the route compaction; all thirteen cost PoCL ~45 s) at an ablation tuning
# (a benchmark tuning it must accept), lists every kernel, writes one non-empty program binary
# per file with --binaries, and refuses a bad --binaries folder and a bad tuning with exit 2 and
# a message naming them; --options-only lists each file's build options and builds nothing.
#   cl_build_report_test.sh ZP_CL_BUILD_REPORT KERNELS_CL_DIR
set -euo pipefail
tool=$1 source=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-cl-build-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kernels=$tmp/kernels
mkdir -p "$kernels"
cp -r "$source/common" "$source/abi" "$kernels/"
cp "$source/gemm1_mxfp4_m2.cl" "$source/swiglu_bf16.cl" "$source/route_compact.cl" "$kernels/"

tuning="gemm_tile=2,cols_per_wg=32,cols_per_item=4,stream_split=8,ablation=3"
"$tool" --kernels-dir "$kernels" --tuning "$tuning" --binaries "$tmp/bins" >"$tmp/report.txt" 2>"$tmp/err.txt" ||
    fail "exit $? at $tuning: $(cat "$tmp/err.txt")"
grep -q "^tuning: .*ablation=3" "$tmp/report.txt" || fail "the report does not name the tuning: $(head -3 "$tmp/report.txt")"
for f in "$kernels"/*.cl; do
    stem=$(basename "$f" .cl)
    grep -q "^| $stem | " "$tmp/report.txt" || fail "no row for $stem"
    bin=$(ls "$tmp/bins/$stem".* 2>/dev/null | head -1)
    [[ -n "$bin" && -s "$bin" ]] || fail "no program binary of $stem in $tmp/bins"
done
files=$(ls "$kernels"/*.cl | wc -l) bins=$(ls "$tmp/bins" | wc -l)
[[ $files -eq $bins ]] || fail "$bins binaries for $files kernel files"
grep -q "BUILD FAILED" "$tmp/report.txt" && fail "a build failed: $(grep "BUILD FAILED" "$tmp/report.txt")"

rc=0
"$tool" --kernels-dir "$kernels" --binaries /proc/zp-no-such-dir >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "an unwritable --binaries folder: exit $rc, want 2"
grep -q -- "--binaries /proc/zp-no-such-dir" "$tmp/out.txt" || fail "the error does not name the folder: $(cat "$tmp/out.txt")"
rc=0
"$tool" --kernels-dir "$kernels" --tuning "gemm_tile=7" >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "gemm_tile=7: exit $rc, want 2"
grep -q "gemm_tile" "$tmp/out.txt" || fail "the error does not name gemm_tile: $(cat "$tmp/out.txt")"
# --options-only: each file's build options at the tuning, nothing built, no device asked for
"$tool" --kernels-dir "$kernels" --tuning "gemm_tile=2,cols_per_wg=32,cols_per_item=2,stream_split=16" --options-only \
    >"$tmp/options.txt" 2>"$tmp/err.txt" || fail "--options-only: exit $?: $(cat "$tmp/err.txt")"
[[ $(wc -l <"$tmp/options.txt") -eq $files ]] || fail "--options-only: $(wc -l <"$tmp/options.txt") lines for $files files"
grep -q "^gemm1_mxfp4_m2 .*-DZP_GEMM_COLS_PER_WG=32 .*-DZP_GEMM_TILE=2 -DZP_STREAM_SPLIT=16" "$tmp/options.txt" ||
    fail "--options-only: gemm1's options: $(grep gemm1 "$tmp/options.txt")"
rc=0
"$tool" --kernels-dir "$kernels" --options-only --device nowhere >"$tmp/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "--options-only with --device: exit $rc, want 2"
# bad input names itself with exit 2: a folder without kernel files (was an empty report, exit
# 0), a device that is not there (was exit 3, a device error), and empty values
mkdir "$tmp/no-kernels"
refused() {  # NEEDLE ARGS...
    local rc=0 needle=$1
    shift
    timeout 60 "$tool" "$@" >"$tmp/out.txt" 2>&1 || rc=$?
    [[ $rc -eq 2 ]] || fail "$*: exit $rc, want 2: $(cat "$tmp/out.txt")"
    grep -qF -- "$needle" "$tmp/out.txt" || fail "$*: the error does not name '$needle': $(cat "$tmp/out.txt")"
}
refused "no kernel files" --options-only --kernels-dir "$tmp/no-kernels"
refused "no kernel files" --kernels-dir "$tmp/no-kernels"
refused "zp-no-such-device" --kernels-dir "$kernels" --device zp-no-such-device
refused "--device ''" --kernels-dir "$kernels" --device ""
refused "--binaries ''" --kernels-dir "$kernels" --binaries ""
echo "ok: $files kernel files built, $bins binaries written, bad folder and tuning refused, options listed"
