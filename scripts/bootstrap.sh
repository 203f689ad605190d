#!/usr/bin/env bash
# Installs the Debian 12 packages ze-probe needs, then the Xe2-capable ocloc in a private
# prefix (scripts/xe2-ocloc.sh; ZP_XE2_OCLOC=off skips it, =required makes its absence an
# error). Idempotent: when everything is present it only checks (no apt-get call), so it is
# cheap to run before every build.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libze-dev libze1
  intel-opencl-icd
  spirv-tools clang-14 llvm-spirv-14 clang-format-14
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libcpp-httplib-dev
)
# Optional extras for the fuzz/sanitizer jobs; installed only on request.
if [[ "${ZP_BOOTSTRAP_FUZZ:-0}" == 1 ]]; then
  packages+=(libfuzzer-14-dev libclang-rt-14-dev)
fi
# For scripts/intel-cpu-opencl.sh (Intel's CPU OpenCL runtime comes from PyPI into a venv).
if [[ "${ZP_BOOTSTRAP_VENV:-0}" == 1 ]]; then
  packages+=(python3-venv)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

xe2_ocloc() { bash "$(dirname "$0")/xe2-ocloc.sh"; }

if ((${#missing[@]} == 0)); then
  echo "bootstrap: all ${#packages[@]} packages present"
  xe2_ocloc
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "bootstrap: missing packages: ${missing[*]}" >&2
  echo "bootstrap: run as root (or: sudo $0), or install them with apt-get" >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done"
xe2_ocloc
