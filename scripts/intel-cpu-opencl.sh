#!/usr/bin/env bash
# Intel's CPU OpenCL runtime (PyPI: intel-opencl-rt, with intel-cmplr-lib-rt for its math
# libraries) in a venv under ${ZP_INTEL_OCL_PREFIX:-/opt/zp-intel-ocl}, and an ICD directory that
# names it by absolute path. Idempotent. Prints the environment that selects it, to be eval'd:
#   eval "$(bash scripts/intel-cpu-opencl.sh)"
# It takes SPIR-V (cl_khr_il_program) and has cl_intel_subgroups: behind zecl it runs the
# packaged SPIR-V modules and their Intel sub-group paths, which PoCL does not.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${ZP_INTEL_OCL_PREFIX:-/opt/zp-intel-ocl}
ZP_BOOTSTRAP_VENV=1 bash scripts/bootstrap.sh >&2
if [[ ! -f "$prefix/lib/libintelocl.so" ]]; then
  echo "intel-cpu-opencl: installing intel-opencl-rt into $prefix (about 300 MB from PyPI)" >&2
  python3 -m venv "$prefix"
  "$prefix/bin/pip" install -q --disable-pip-version-check intel-opencl-rt intel-cmplr-lib-rt >&2
fi
[[ -f "$prefix/lib/libintelocl.so" ]] || { echo "intel-cpu-opencl: $prefix/lib/libintelocl.so missing after install" >&2; exit 1; }
mkdir -p "$prefix/icd"
echo "$prefix/lib/libintelocl.so" > "$prefix/icd/intel-cpu.icd"
echo "export LD_LIBRARY_PATH=$prefix/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} OCL_ICD_VENDORS=$prefix/icd ZECL_PLATFORM=Intel"
