#!/usr/bin/env bash
# The native build of every kernel file at a kernel tuning, made the way the kernel package makes
# its packaged tiles (the build's own compilers, flags, tools and ocloc: build/spirv/
# kernel-build.env, written by spirv/CMakeLists.txt; the ocloc step is its
# spirv/cmake/ocloc_compile.cmake), and per kernel the figures of the binary's own metadata: SIMD
# width, GRF, instructions, spill and private bytes per thread. For tiles the package does not
# carry (docs/perf.md "The stream tile on Xe2"): does a tuning stay spill-free at 128 GRF?
#
#   tools/bench/xe2_report.sh [--tuning T] [--target bmg] [--build DIR]
#
# --tuning: KernelTuning::parse's form (default: the packaged tiles); --target: one of the
# build's ocloc targets (default bmg); --build: the CMake build folder (default build).
# Exit 0 when every kernel is spill-free with no private memory, 1 when one is not, 2 on bad input
# or a missing build, 3 when a build fails.
set -uo pipefail
cd "$(dirname "$0")/../.."  # the repository root
tuning="" target=bmg build=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tuning | --target | --build)
      [[ $# -ge 2 ]] || { echo "xe2_report: $1 needs a value" >&2; exit 2; }
      [[ -n $2 || $1 == --tuning ]] || { echo "xe2_report: $1 '': an empty value" >&2; exit 2; }  # --tuning "": packaged
      case "$1" in --tuning) tuning=$2 ;; --target) target=$2 ;; --build) build=$2 ;; esac
      shift 2
      ;;
    *) echo "xe2_report: unknown argument '$1' (--tuning T, --target bmg, --build DIR)" >&2; exit 2 ;;
  esac
done
env_file=$build/spirv/kernel-build.env
report=$build/tools/bench/zp-cl-build-report
for f in "$env_file" "$report"; do
  [[ -f "$f" ]] || { echo "xe2_report: $f not found: build the project first (bash scripts/build.sh)" >&2; exit 2; }
done
# shellcheck source=/dev/null
. "$env_file"
ocloc=${zp_ocloc[$target]:-}
[[ -n "$ocloc" ]] || { echo "xe2_report: the build has no ocloc for target '$target' (it has: ${!zp_ocloc[*]})" >&2; exit 2; }
options=$("$report" --options-only ${tuning:+--tuning "$tuning"}) || exit 2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "target: $target; tuning: ${tuning:-packaged}"
echo
echo "| kernel file | target | kernel | format | binary | SIMD | GRF | instructions | spill B/thread | private B/thread |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|"
status=0
while read -r stem defines; do
  # shellcheck disable=SC2086 # the defines are words
  if ! "$zp_clang" "${zp_clang_flags[@]}" $defines -c -emit-llvm "kernels_cl/$stem.cl" -o "$work/$stem.bc" ||
    ! "$zp_llvm_spirv" "${zp_llvm_spirv_flags[@]}" "$work/$stem.bc" -o "$work/$stem.raw.spv" ||
    ! "$zp_order_blocks" "$work/$stem.raw.spv" "$work/$stem.spv" || ! "$zp_validate" "$work/$stem.spv" >/dev/null; then
    echo "| $stem | $target | SPIR-V BUILD FAILED | | | | | | | |"
    status=3
    continue
  fi
  if ! cmake -DOCLOC="$ocloc" -DSPV="$work/$stem.spv" -DDEVICE="$target" -DOUT="$work/$stem.bin" -DPACK="$zp_pack" \
    -DWORK="$work/ocloc-$stem" -DROWS="$work/$stem.md" -DFILE="$stem" -P "$zp_ocloc_compile" >"$work/$stem.log" 2>&1; then
    echo "| $stem | $target | OCLOC FAILED | | | | | | | |"
    sed 's/^/  /' "$work/$stem.log" >&2
    status=3
    continue
  fi
  cat "$work/$stem.md"
  # the last two columns: spill and private bytes per thread
  if grep -qvE '\| 0 \| 0 \|$' "$work/$stem.md"; then [[ $status -eq 0 ]] && status=1; fi
done <<<"$options"
exit $status
