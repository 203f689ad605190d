#!/usr/bin/env bash
# One H200 device call for the figures of docs/perf.md "How far from the goals?" (the speed part of
# the GEMV engine's issue), but the five-run gate: the copy bandwidth and each GEMM's time, GB/s and
# share of the copy per stage (zp-chain-bench --ablation: loads only, + decode, + fma, whole, the
# compute alone) at NVIDIA's recommended tiling (R9, KernelTuning::recommendedFor); every variant's
# chain on every pattern, single and replayed x16 as the gate samples them, each checked bit for bit
# on out; each GEMM-bearing kernel on every pattern at the lane tile and at R9 against the roofline
# (tools/bench/engine_table.sh); PyTorch bf16 + CUDA graph on six_local and same_typical (../shared/bench/peer_torch.py,
# staged into .dev/peer); the 84 cases x 8 variants; one timed gate run (ze-probe's defaults). The
# five-run gate takes ~11 minutes, more than one call: `ZE_PROBE=.dev/bin/ze-probe
# GATE_REPEAT_OUT=$OUT/g bash tools/bench/gate_repeat.sh 3` and `... 2` in two calls, then `ze-probe
# gate-repeat-merge` of the five run directories here.
# Stage first (bash scripts/h200/stage.sh), then run with carry [".dev"]: bash tools/bench/h200_perf.sh
# Writes $OUT/{gpu,ablation,chains,kernels,cases,gate}.txt, $OUT/engine_table.md and $OUT/peer.json. (Before 2026-12-04 this script
# swept the lane and block tiles: the 2026-11-29 note's figures.)
cd "$(dirname "$0")/../.."  # the repository root
. scripts/h200/setup.sh >/dev/null 2>&1
export ZECL_PLATFORM=NVIDIA
B=.dev/bin
R9=gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,e2m1_decode=6,stream_carry=1,spread_units=1,b_runs=0,max_registers=128
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv >"$OUT/gpu.txt" 2>&1
timeout 90 $B/zp-chain-bench -d zecl -n 20 --ablation --variant baseline --pattern six_local --pattern same_typical \
  --tuning "$R9" >"$OUT/ablation.txt" 2>&1
echo "ablation rc=$? $(el)"; grep -E "^copy" "$OUT/ablation.txt"; sed -n '/== ablation/,$p' "$OUT/ablation.txt" | head -24
timeout 150 $B/zp-chain-bench -d zecl -n 20 -q --batch 16 --pattern all --tuning "$R9" >"$OUT/chains.txt" 2>&1
echo "chains rc=$? $(el)"; grep -E "^CHECK|^copy|^GOAL" "$OUT/chains.txt"
# the engine against the old tile, per GEMM-bearing kernel and pattern (docs/perf.md "The engine
# against the old tiles"): the lane tile (the packaged kernels' tiles) and R9, per-kernel tables
timeout 150 $B/zp-chain-bench -d zecl -n 20 --pattern all --tuning "" --tuning "$R9" >"$OUT/kernels.txt" 2>&1
echo "kernels rc=$? $(el)"; grep -E "^CHECK" "$OUT/kernels.txt"
bash tools/bench/engine_table.sh "$OUT/kernels.txt" | tee "$OUT/engine_table.md"
timeout 120 python3 .dev/peer/peer_torch.py >"$OUT/peer.json" 2>&1
echo "peer_torch rc=$? $(el)"; head -c 600 "$OUT/peer.json"; echo
timeout 120 $B/ze-probe --device zecl --route-pattern all --no-timing --out "$OUT/cases" >"$OUT/cases.txt" 2>&1
echo "84 cases x 8 variants rc=$? $(el)"; grep -E "^total" "$OUT/cases.txt" | tail -1
rm -rf "$OUT/cases"
left=$(( 575 - ($(date +%s) - t0) ))
timeout $left $B/ze-probe --device zecl --route-pattern all --out "$OUT/gate" >"$OUT/gate.txt" 2>&1
echo "gate rc=$? $(el)"; grep -E "^verdict|decides the verdict" "$OUT/gate.txt"
