#!/usr/bin/env bash
# One H200 device call (docs/perf.md): the chain-bench sweep (lane and block tiles), peer_torch,
# the 84 cases x 6 variants with the packaged tiles and with the sweep's best, the timed gate with
# the device's recommended tiles (ze-probe's default), and the device-chain suite at the best.
# Stage first (bash scripts/h200/stage.sh), then run with carry [".dev"]: bash tools/bench/h200_perf.sh
cd "$(dirname "$0")/../.."  # the repository root
. scripts/h200/setup.sh >/dev/null 2>&1
export ZECL_PLATFORM=NVIDIA
B=.dev/bin
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
T=(--tuning packaged --tuning cols_per_wg=8,cols_per_item=4
   --tuning gemm_tile=1,cols_per_wg=32,cols_per_item=4 --tuning gemm_tile=1,cols_per_wg=32,cols_per_item=4,rows_per_pass=1
   --tuning gemm_tile=1,cols_per_wg=64,cols_per_item=4,rows_per_pass=1 --tuning gemm_tile=1,cols_per_wg=16,cols_per_item=2,rows_per_pass=1
   --tuning gemm_tile=1,cols_per_wg=64,cols_per_item=8,rows_per_pass=1 ${ZP_EXTRA_TUNINGS:-})
timeout 300 $B/zp-chain-bench -d zecl -n 20 "${T[@]}" > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $OUT/sweep.txt
grep -E "^GOAL|^CHECK|^copy|^all_remote launch cost:|FAIL|SKIP" $OUT/sweep.txt
timeout 90 python3 .dev/peer/peer_torch.py > $OUT/peer.json 2>&1; echo "peer rc=$?"; head -40 $OUT/peer.json
best=$(grep "^GOAL six_local" $OUT/sweep.txt | sed 's/.*\[\(.*\)\].*/\1/')
echo "best six_local tiling: $best"
timeout 120 $B/ze-probe --device zecl --route-pattern all --no-timing --kernel-tuning packaged --out $OUT/probe-packaged > $OUT/probe.txt 2>&1
echo "probe (packaged) rc=$?"; tail -3 $OUT/probe.txt
timeout 120 $B/ze-probe --device zecl --route-pattern all --no-timing --kernel-tuning "$best" --out $OUT/probe-best > $OUT/probe_best.txt 2>&1
echo "probe ($best) rc=$?"; tail -3 $OUT/probe_best.txt
# the timed gate (50 rounds) with ze-probe's default tiles for this device
timeout 240 $B/ze-probe --device zecl --route-pattern all --out $OUT/gate --report $OUT/gate/report.svg > $OUT/gate.txt 2>&1
echo "gate (recommended tiles) rc=$?"; grep -E "^device|verdict|PASS|FAIL" $OUT/gate.txt | tail -8
ZP_KERNEL_TUNING="$best" timeout 90 $B/test_device_chain --gtest_brief=1 --gtest_filter=-DeviceChainNoSuggestedGrid.* > $OUT/dctest_best.txt 2>&1; echo "dctest(best) rc=$?"; tail -3 $OUT/dctest_best.txt
