#!/usr/bin/env bash
# One H200 device call (docs/perf.md): chain-bench sweep, peer_torch, 84/84 ze-probe, device-chain suite at the best tiling.
# Stage first (bash scripts/h200/stage.sh), then run with carry [".dev"]: bash tools/chain-bench/h200_perf.sh
cd "$(dirname "$0")/../.."  # the repository root
. scripts/h200/setup.sh >/dev/null 2>&1
export ZECL_PLATFORM=NVIDIA
B=.dev/bin
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
T=(--tuning "" --tuning cols_per_wg=4 --tuning cols_per_wg=2 --tuning cols_per_wg=16 --tuning rows_per_pass=1
   --tuning cols_per_wg=4,rows_per_pass=1 --tuning cols_per_wg=16,cols_per_item=4,rows_per_pass=1 --tuning cols_per_wg=8,cols_per_item=4)
timeout 240 $B/zp-chain-bench -d zecl -n 20 "${T[@]}" > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $OUT/sweep.txt
grep -E "^GOAL|^CHECK|^copy|^all_remote launch|^ +all_remote|FAIL" $OUT/sweep.txt
timeout 90 python3 .dev/peer/peer_torch.py > $OUT/peer.json 2>&1; echo "peer rc=$?"; cat $OUT/peer.json | head -40
best=$(grep "^GOAL six_local" $OUT/sweep.txt | sed 's/.*\[\(.*\)\].*/\1/')
echo "best six_local tiling: $best"
timeout 150 $B/ze-probe --device zecl --route-pattern all --no-timing > $OUT/probe.txt 2>&1; echo "probe rc=$?"; tail -5 $OUT/probe.txt
ZP_KERNEL_TUNING="$best" timeout 90 $B/test_device_chain --gtest_brief=1 > $OUT/dctest_best.txt 2>&1; echo "dctest(best) rc=$?"; tail -3 $OUT/dctest_best.txt
