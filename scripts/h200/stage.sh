#!/usr/bin/env bash
# Stages what an H200 run needs into .dev/ (git-ignored; carried by the device tool):
# the built binaries and the Debian runtime libraries the device image lacks.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${ZP_BUILD_DIR:-build}
rm -rf .dev/bin && mkdir -p .dev/bin .dev/debs
cp "$build"/tools/ze-probe/ze-probe "$build"/driver/libze_zecl.so "$build"/tools/bench/zecl-launch-bench .dev/bin/
[[ -x "$build"/tools/bench/zp-chain-bench ]] && cp "$build"/tools/bench/zp-chain-bench .dev/bin/
[[ -x "$build"/tools/bench/zp-cl-build-report ]] && cp "$build"/tools/bench/zp-cl-build-report .dev/bin/
cp "$build"/tests/driver/zecl_driver_test "$build"/tests/runtime/zp_runtime_tests .dev/bin/
[[ -x "$build"/tests/scheduler/test_device_chain ]] && cp "$build"/tests/scheduler/test_device_chain .dev/bin/
mkdir -p .dev/peer && { cp ../shared/bench/peer_torch.py .dev/peer/ 2>/dev/null || true; }  # tools/bench/h200_perf.sh
strip --strip-debug .dev/bin/*
(cd .dev/debs && for p in libze1 ocl-icd-libopencl1 clinfo libyaml-cpp0.7 libfmt9; do
   ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p" >/dev/null 2>&1; done)
du -sh .dev
