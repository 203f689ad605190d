#!/usr/bin/env bash
# kernels.spirv_tools: the kernel build's SPIR-V and packaging tools (spirv/tools/) refuse bad
# input with exit 2 and a message naming it, never blocking on a FIFO nor writing a silently
# empty or half-made output: empty, truncated, non-SPIR-V, directory, FIFO, device and missing
# inputs; directory, FIFO and unwritable outputs; unknown options and bad manifest numbers.
#   spirv_tools_test.sh ZP_SPIRV_VALIDATE ZP_SPIRV_ORDER_BLOCKS ZP_KERNEL_PACK VALID.spv
set -euo pipefail
validate=$1 order=$2 pack=$3 valid=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-spirv-tools.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
# want RC NEEDLE COMMAND...: exits RC within 20 s, stderr naming NEEDLE
want() {
  local rc=0 code=$1 needle=$2
  shift 2
  timeout 20 "$@" >out.txt 2>err.txt || rc=$?
  [[ $rc -eq $code && $(cat err.txt) == *"$needle"* ]] || fail "$*: exit $rc, want $code naming '$needle': $(cat err.txt)"
}
: >empty.spv
printf 'abc' >trunc.spv
printf 'not SPIR-V at all...' >text.spv  # 20 bytes: whole words
mkdir dir.spv
mkfifo fifo.spv
touch file
# a module SPIRV-Tools parses (magic, 1.0, bound 1; OpCapability Addresses, Kernel; OpMemoryModel Physical64 OpenCL)
printf '\x03\x02\x23\x07\x00\x00\x01\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >mod.spv
printf '\x11\x00\x02\x00\x04\x00\x00\x00\x11\x00\x02\x00\x06\x00\x00\x00\x0e\x00\x03\x00\x02\x00\x00\x00\x02\x00\x00\x00' >>mod.spv
for bad in empty.spv trunc.spv dir.spv fifo.spv /dev/zero missing.spv file/x.spv; do
  want 2 "$bad" "$validate" "$bad"
  want 2 "$bad" "$order" "$bad" out.spv
done
want 1 "text.spv: invalid SPIR-V" "$validate" text.spv
want 2 "text.spv: SPIR-V parse failed" "$order" text.spv out.spv
want 0 "" "$validate" "$valid"
want 2 "dir.spv: a directory" "$validate" "$valid" dir.spv  # one unreadable file among valid ones
for out in dir.spv fifo.spv /proc/zp-no-such.spv; do want 2 "$out" "$order" mod.spv "$out"; done
want 0 "" "$order" mod.spv in-place.spv
cp mod.spv in-place.spv
want 0 "" "$order" in-place.spv in-place.spv  # output == input: read whole, then replaced
cmp -s in-place.spv mod.spv || fail "in place: $(od -An -tx4 in-place.spv)"
[[ ! -e in-place.spv.tmp ]] || fail "a temporary file was left"

printf 'kernel void k(global int* p) { *p = 1; }\n' >k.cl
want 2 "cannot read dir.spv: a directory" "$pack" bundle --source dir.spv --out b.zeclsrc
want 2 "fifo.spv" "$pack" bundle --source fifo.spv --out b.zeclsrc
want 2 "unknown option '--optoins'" "$pack" bundle --source k.cl --optoins x --out b.zeclsrc
want 2 "fifo.spv" "$pack" bundle --source k.cl --out fifo.spv
want 2 "dir.spv" "$pack" bundle --source k.cl --out dir.spv
want 0 "" "$pack" bundle --source k.cl --out b.zeclsrc
[[ -s b.zeclsrc ]] || fail "bundle: no output"
printf 'k\tnative\tbmg\t83902464\t0xE202\tk.cl\n' >good.txt
want 0 "" "$pack" embed --manifest good.txt --out data.cpp
grep -q "57858u" data.cpp || fail "embed: the device id 0xE202 is not 57858u: $(grep id0 data.cpp)"
for bad in "83902464x 0xE202" "- 0xZZ" "99999999999 -" "- 0xE202," "- 0x100000000"; do
  printf 'k\tnative\tbmg\t%s\t%s\tk.cl\n' ${bad} >bad.txt
  want 2 "bad.txt: " "$pack" embed --manifest bad.txt --out data.cpp
done
echo "spirv_tools: bad input refused with exit 2, outputs written whole"
