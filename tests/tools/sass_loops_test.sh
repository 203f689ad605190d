#!/usr/bin/env bash
# tools.sass_loops: tools/bench/sass_loops.sh refuses bad arguments with exit 2 naming them (no
# tools needed); with the SASS tools (ZP_SASS_TOOLS_DIR, fetched by the script itself) it also
# builds gemm1 at the byte-permute decode and at the masked-offset one: the permute's loops are
# PRMT-heavy, the other's have none, and ptxas names the kernel's registers.
#   sass_loops_test.sh BUILD_DIR [sass]
set -euo pipefail
build=$1 mode=${2:-args}
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/tools/bench/sass_loops.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() {  # refused ARGS... -- NEEDLE
  local needle=${*: -1} rc=0 msg
  msg=$(timeout 20 bash "$script" --build "$build" "${@:1:$#-1}" 2>&1) || rc=$?
  [[ $rc -eq 2 && $msg == *"$needle"* ]] || fail "sass_loops.sh ${*:1:$#-1}: exit $rc, want 2 naming '$needle': $msg"
}
refused --bogus "$root/kernels_cl/gemm1_mxfp4_m2.cl" "unknown option '--bogus'"
refused "$root/kernels_cl/nope.cl" "'$root/kernels_cl/nope.cl' is not a readable .cl file"
refused --loops x "$root/kernels_cl/gemm1_mxfp4_m2.cl" "--loops 'x'"
refused --tuning cols_per_wg=6,cols_per_item=4 "$root/kernels_cl/gemm1_mxfp4_m2.cl" "refused the tuning"
refused "$root/kernels_cl/gemm1_mxfp4_m2.cl" "$root/kernels_cl/gemm2_mxfp4_m2.cl" "one kernel file"
refused --maxreg 0 "$root/kernels_cl/gemm1_mxfp4_m2.cl" "--maxreg '0' is not a positive integer"
refused --maxreg "--maxreg needs a value"
# a FIFO or a directory named *.cl (a FIFO hung clang, a directory reached the compilers) and a
# --keep that is a file: refused before any tool is looked for
fake=$(mktemp -d "${TMPDIR:-/tmp}/zp-sass-args.XXXXXX")
trap 'rm -rf "$fake"' EXIT
mkfifo "$fake/fifo.cl"
mkdir "$fake/dir.cl"
touch "$fake/file"
refused "$fake/fifo.cl" "'$fake/fifo.cl' is not a readable .cl file"
refused "$fake/dir.cl" "'$fake/dir.cl' is not a readable .cl file"
refused --keep "$fake/file" "$root/kernels_cl/gemm1_mxfp4_m2.cl" "--keep '$fake/file' is not a directory"
[[ $mode == sass ]] || { echo "sass_loops: bad arguments refused"; exit 0; }

t=gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,max_registers=128
out6=$(bash "$script" --build "$build" --tuning "$t,e2m1_decode=6" "$root/kernels_cl/gemm1_mxfp4_m2.cl") ||
  fail "decode 6: $out6"
out4=$(bash "$script" --build "$build" --tuning "$t,e2m1_decode=4" "$root/kernels_cl/gemm1_mxfp4_m2.cl") ||
  fail "decode 4: $out4"
grep -qE "^gemm1_mxfp4_m2: Used [0-9]+ registers;.*spill stores" <<<"$out6" || fail "no register line: $out6"
grep -q "ptxas --maxrregcount=128" <<<"$out6" || fail "max_registers=128 did not reach ptxas: $out6"
prmt() { awk '/^  gemm1/ { for (i = 1; i <= NF; ++i) if ($i == "PRMT") { print $(i + 1) + 0; exit } }' <<<"$1"; }
p6=$(prmt "$out6") p4=$(prmt "$out4")
[[ ${p6:-0} -ge 128 ]] || fail "decode 6's largest loop has ${p6:-no} PRMT, want >= 128 (one per nibble): $out6"
[[ -z $p4 || $p4 -lt 16 ]] || fail "decode 4's largest loop has $p4 PRMT, want the shift and mask: $out4"
echo "sass_loops: bad arguments refused; decode 6 PRMT $p6, decode 4 ${p4:-0}"
