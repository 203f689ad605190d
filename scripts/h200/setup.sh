#!/usr/bin/env bash
# On the H200 machine: unpacks the carried Debian libraries, registers NVIDIA's OpenCL ICD.
# Source it: `. scripts/h200/setup.sh`.
for f in .dev/debs/ocl-icd-libopencl1_*.deb .dev/debs/clinfo_*.deb; do dpkg -x "$f" /; done
mkdir -p /opt/zp-deps
for f in .dev/debs/libze1_*.deb .dev/debs/libyaml-cpp*.deb .dev/debs/libfmt9_*.deb; do dpkg -x "$f" /opt/zp-deps; done
mkdir -p /etc/OpenCL/vendors
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
ldconfig
export LD_LIBRARY_PATH=/opt/zp-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZP_ZECL_PATH=$PWD/.dev/bin/libze_zecl.so
export ZE_ENABLE_ALT_DRIVERS=$ZP_ZECL_PATH
