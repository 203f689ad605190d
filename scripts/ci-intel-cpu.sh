#!/usr/bin/env bash
# CI: the device chain on Intel's CPU OpenCL runtime behind zecl (scripts/intel-cpu-opencl.sh),
# where the modules are the packaged SPIR-V with the Intel sub-group tree (PoCL gets the source
# bundle): the zecl driver and runtime tests, every variant x pattern x input variant at the
# reduced shape bit for bit (test_device_chain), the stream tile's sub-group tree (other tiles:
# the source bundle, which this runtime builds too), and ze-probe's 84 cases x 6 variants at a
# reduced shape. Uses the build directory of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ZP_BUILD_DIR:-build}
eval "$(bash scripts/intel-cpu-opencl.sh)"
export ZE_ENABLE_ALT_DRIVERS=$PWD/$build/driver/libze_zecl.so
"$build/tools/ze-probe/ze-probe" --list-devices
list=$("$build/tools/ze-probe/ze-probe" --list-devices)
grep -q "SPIR-V" <<<"$list" || { echo "ci-intel-cpu: the Intel CPU device offers no SPIR-V through zecl" >&2; exit 1; }
"$build/tests/driver/zecl_driver_test" --gtest_brief=1 --gtest_filter='-*FaultInjection*:*TwoDevices*'
"$build/tests/runtime/zp_runtime_tests" --gtest_brief=1 --gtest_filter='-TwoDevices.*'  # one Intel CPU device
"$build/tests/scheduler/test_device_chain" --gtest_brief=1 \
  --gtest_filter='-DeviceChainDefaultShape.*:Tilings/*:Shapes/*:DeviceChainNoSuggestedGrid.*'
# A driver that suggests no co-resident grid: one process each (zecl counts faults per process).
for test in GivenTwoLaunch GivenOneLaunch; do
  ZECL_FAULT=suggest:1 "$build/tests/scheduler/test_device_chain" --gtest_brief=1 \
    --gtest_filter="DeviceChainNoSuggestedGrid.${test}_*"
done
# The stream tile's sub-group tree (shuffles 8, 4, 2, 1 among a column's 16 work-items at
# stream_nvidia; a work-item's own fold then shuffles 4, 2, 1 at kernel A and B's stream shape),
# built from the source bundle (a tuning: zp::scheduler::chooseModules); the packaged shape.
"$build/tests/scheduler/test_device_chain" --gtest_brief=1 \
  --gtest_filter='Shapes/*/m1_k1_c1:Tilings/DeviceChainTuned.*/stream_nvidia:Shapes/TwoLaunchShapes.*/m3_k5_c2_stream_b_tile'
"$build/tools/ze-probe/ze-probe" --device zecl --set hidden=1024 --set intermediate=544 --route-pattern all \
  --no-timing --out "$build/intel-cpu-probe" | tail -4
grep -q '"modules": "SPIR-V' "$build/intel-cpu-probe/card0.json" ||
  { echo "ci-intel-cpu: ze-probe did not run the SPIR-V modules" >&2; exit 1; }
echo "ci-intel-cpu: passed on Intel's CPU OpenCL runtime (SPIR-V modules, Intel sub-groups)"
