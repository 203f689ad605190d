#!/usr/bin/env bash
# The Xe2 native build of every kernel file at a kernel tuning, the way the kernel package builds
# its packaged tiles (spirv/CMakeLists.txt: clang -> llvm-spirv -> block order -> validation ->
# ocloc), and per kernel the figures of the binary's own metadata (zp-kernel-pack inspect): SIMD
# width, GRF, instructions, spill and private bytes per thread. For tiles the package does not
# carry (docs/perf.md "The stream tile on Xe2"): does a tuning stay spill-free at 128 GRF?
#
#   tools/bench/xe2_report.sh [--tuning T] [--target bmg|bmg-g31|lnl] [--build DIR]
#
# --tuning: KernelTuning::parse's form (default: the packaged tiles); --target: an ocloc device
# (default bmg); --build: the CMake build folder with zp-cl-build-report and the kernel package's
# tools (default build). ocloc: $ZP_OCLOC_XE2, else the prefix scripts/xe2-ocloc.sh provides.
# Exit 0 when every kernel is spill-free with no private memory, 1 when one is not, 2 on bad input
# or a missing tool, 3 when a build fails.
set -uo pipefail
cd "$(dirname "$0")/../.."  # the repository root
tuning="" target=bmg build=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tuning | --target | --build)
      [[ $# -ge 2 ]] || { echo "xe2_report: $1 needs a value" >&2; exit 2; }
      case "$1" in --tuning) tuning=$2 ;; --target) target=$2 ;; --build) build=$2 ;; esac
      shift 2
      ;;
    *) echo "xe2_report: unknown argument '$1' (--tuning T, --target bmg, --build DIR)" >&2; exit 2 ;;
  esac
done
ocloc=${ZP_OCLOC_XE2:-${ZP_XE2_OCLOC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ze-probe/xe2-ocloc}/bin/ocloc}
need() { [[ -x "$1" ]] || command -v "$1" >/dev/null 2>&1 || { echo "xe2_report: $2 ($1) not found" >&2; exit 2; }; }
need "$build/tools/bench/zp-cl-build-report" "zp-cl-build-report: build the project first"
need "$build/spirv/zp-kernel-pack" "zp-kernel-pack: build the project first"
need "$build/spirv/zp-spirv-order-blocks" "zp-spirv-order-blocks: build the project first"
need "$build/spirv/zp-spirv-validate" "zp-spirv-validate: build the project first"
need clang-14 "clang-14 (apt install clang-14)"
need llvm-spirv-14 "llvm-spirv-14 (apt install llvm-spirv-14)"
need "$ocloc" "an ocloc that knows Xe2: bash scripts/xe2-ocloc.sh"
"$ocloc" ids "$target" >/dev/null 2>&1 || { echo "xe2_report: $ocloc does not know target '$target'" >&2; exit 2; }
options=$("$build/tools/bench/zp-cl-build-report" --options-only ${tuning:+--tuning "$tuning"}) || exit 2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "target: $target; tuning: ${tuning:-packaged}"
echo
echo "| kernel file | target | kernel | format | binary | SIMD | GRF | instructions | spill B/thread | private B/thread |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|"
status=0
while read -r stem defines; do
  # the flags of spirv/CMakeLists.txt (ZP_CLANG_FLAGS, ZP_LLVM_SPIRV_FLAGS)
  # shellcheck disable=SC2086 # the defines are words
  if ! clang-14 -cl-std=CL1.2 -target spir64 -O2 -ffp-contract=off -include opencl-c.h -I kernels_cl \
    -Werror=implicit-function-declaration $defines -c -emit-llvm "kernels_cl/$stem.cl" -o "$work/$stem.bc" ||
    ! llvm-spirv-14 --spirv-max-version=1.1 --spirv-ext=+SPV_INTEL_subgroups "$work/$stem.bc" -o "$work/$stem.raw.spv" ||
    ! "$build/spirv/zp-spirv-order-blocks" "$work/$stem.raw.spv" "$work/$stem.spv" ||
    ! "$build/spirv/zp-spirv-validate" "$work/$stem.spv" >/dev/null; then
    echo "| $stem | $target | SPIR-V BUILD FAILED | | | | | | | |"
    status=3
    continue
  fi
  mkdir -p "$work/$stem"
  if ! (cd "$work/$stem" && "$ocloc" compile -file "../$stem.spv" -spirv_input -device "$target" -output "$stem" \
    -out_dir . -q) >"$work/$stem.log" 2>&1; then
    echo "| $stem | $target | OCLOC FAILED | | | | | | | |"
    sed 's/^/  /' "$work/$stem.log" >&2
    status=3
    continue
  fi
  bin=$(find "$work/$stem" -maxdepth 1 -type f ! -name '*.spv' ! -name '*.bc' ! -name '*.ll' ! -name '*.gen' \
    ! -name '*.dbg' | head -1)
  summary=$("$build/spirv/zp-kernel-pack" inspect --binary "$bin" --file "$stem" --target "$target" \
    --out "$work/$stem.md") || { echo "| $stem | $target | INSPECT FAILED | | | | | | | |"; status=3; continue; }
  cat "$work/$stem.md"
  [[ "$summary" == *"spill=0 private=0"* ]] || { [[ $status -eq 0 ]] && status=1; }
done <<<"$options"
exit $status
