#!/usr/bin/env bash
# One H200 device call for the stream tile (kernels_cl/common/zp_gemv_stream.h, docs/perf.md
# "The stream tile"): the ablation of its stages, the sweep of stream tilings against each other
# on every variant and pattern (until 2026-12-04 against the block tile, since removed), and the
# bitwise checks at the fastest stream tiling (the 84 cases on every variant, the device-chain
# suite).
# Stage first (bash scripts/h200/stage.sh), then run with carry [".dev"]:
#   bash tools/bench/h200_stream.sh [report] [ablation] [shapes] [sweep] [check] [replay] [gate]
#   (default: report ablation sweep check)
# Writes $OUT/{gpu,regs,ablation,shapes*,sweep,probe,dctest,replay,gate}.txt. ZP_STREAM_TUNINGS replaces the tilings;
# ZP_SWEEP_ARGS (e.g. "--variant baseline --pattern six_local --batch 16") narrows or extends the sweep.
cd "$(dirname "$0")/../.."  # the repository root
# The arguments first, before setup.sh touches the machine: an unknown step would run nothing.
for step in "$@"; do
  [[ " report ablation shapes sweep check replay gate " == *" $step "* ]] ||
    { echo "h200_stream.sh: unknown step '$step' (report ablation shapes sweep check replay gate)" >&2; exit 2; }
done
[[ -n ${OUT:-} && -d $OUT && -w $OUT ]] || { echo "h200_stream.sh: OUT '${OUT:-}' is not a writable directory (the device call's \$OUT)" >&2; exit 2; }
. scripts/h200/setup.sh >/dev/null 2>&1
export ZECL_PLATFORM=NVIDIA
B=.dev/bin
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(report ablation sweep check)
has() { [[ " ${steps[*]} " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv >"$OUT/gpu.txt" 2>&1

s=gemm_tile=2,rows_per_pass=1,stream_chunk=128
mapfile -t stream <<<"${ZP_STREAM_TUNINGS:-$s,cols_per_wg=64,cols_per_item=4,stream_split=16,e2m1_decode=4
$s,cols_per_wg=32,cols_per_item=4,stream_split=8,e2m1_decode=4
$s,cols_per_wg=64,cols_per_item=8,stream_split=8,e2m1_decode=4
${s/rows_per_pass=1/rows_per_pass=2},cols_per_wg=64,cols_per_item=4,stream_split=16,e2m1_decode=6,max_registers=128}"
T=()
for t in "${stream[@]}"; do T+=(--tuning "$t"); done

if has report; then  # registers and spills (ptxas -v) of every kernel at each stream tiling
  for t in "${stream[@]}"; do timeout 60 $B/zp-cl-build-report --tuning "$t"; echo; done >"$OUT/regs.txt" 2>"$OUT/regs_err.txt"
  timeout 60 $B/zp-cl-build-report --tuning "${stream[0]}" --log 2>&1 >/dev/null | head -30
  grep -E "^tuning|gemm1_mxfp4_m2 \||gemm2_mxfp4_m2 \||one_launch \|" "$OUT/regs.txt"
fi
if has ablation; then
  timeout 240 $B/zp-chain-bench -d zecl -n 20 --ablation --variant baseline --pattern six_local \
    --pattern same_typical "${T[@]:0:4}" >"$OUT/ablation.txt" 2>&1
  echo "ablation rc=$?" >>"$OUT/ablation.txt"
  sed -n '/== ablation/,$p' "$OUT/ablation.txt" | head -40
fi
if has shapes; then  # a GEMM kernel's fixed cost and rate per byte at the last stream tiling: 4x N, the same K
  rec=${stream[${#stream[@]} - 1]}
  for shape in "4096 2048" "4096 8192" "16384 2048"; do
    set -- $shape
    timeout 120 $B/zp-chain-bench -d zecl -n 20 --ablation --variant baseline --pattern six_local --hidden "$1" \
      --intermediate "$2" --tuning "$rec" >"$OUT/shapes_$1_$2.txt" 2>&1
    echo "shapes H=$1 I=$2 rc=$?"
  done
  # gemm1's K is H (I 2048 -> 8192 at H 4096), gemm2's is I (H 4096 -> 16384 at I 2048)
  bash tools/bench/gemm_fit.sh gemm1_mxfp4_m2 "$OUT"/shapes_4096_{2048,8192}.txt | tee "$OUT/shapes.txt"
  bash tools/bench/gemm_fit.sh gemm2_mxfp4_m2 "$OUT"/shapes_{4096,16384}_2048.txt | tee -a "$OUT/shapes.txt"
fi
if has sweep; then
  timeout 300 $B/zp-chain-bench -d zecl -n 20 -q ${ZP_SWEEP_ARGS:-} "${T[@]}" >"$OUT/sweep.txt" 2>&1
  echo "sweep rc=$?" >>"$OUT/sweep.txt"
  grep -E "^GOAL|^CHECK|^copy|FAIL|SKIP|rc=" "$OUT/sweep.txt"
  grep -E "^six_local|^same_typical" "$OUT/sweep.txt" | sort -k6 -n | head -24
fi
best=$(grep "^GOAL six_local" "$OUT/sweep.txt" 2>/dev/null | sed 's/.*\[\(.*\)\].*/\1/')
[[ "$best" == *gemm_tile=2* ]] || best=${stream[0]}
echo "stream tiling checked: $best"
if has check; then
  timeout 150 $B/ze-probe --device zecl --route-pattern all --no-timing --kernel-tuning "$best" \
    --out "$OUT/probe-best" >"$OUT/probe.txt" 2>&1
  echo "ze-probe 84 cases rc=$?"; tail -3 "$OUT/probe.txt"
  ZP_KERNEL_TUNING="$best" timeout 120 $B/test_device_chain --gtest_brief=1 \
    --gtest_filter=-DeviceChainDefaultShape.*:Tilings/*:Shapes/*:DeviceChainNoSuggestedGrid.* >"$OUT/dctest.txt" 2>&1
  echo "test_device_chain rc=$?"; tail -3 "$OUT/dctest.txt"
fi
if has replay; then  # single executions against the gate's back-to-back replays, per variant
  rec=${stream[0]}
  timeout 300 $B/zp-chain-bench -d zecl -n 10 -q --batch 4 --batch 16 --variant baseline --variant one_launch \
    --variant two_launch --variant m1_oracle --pattern six_local --pattern same_typical --pattern all_remote \
    --tuning "$rec" --tuning "${rec/rows_per_pass=1/rows_per_pass=2},max_registers=128" >"$OUT/replay.txt" 2>&1
  echo "replay rc=$?" >>"$OUT/replay.txt"
  grep -E "chain|replayed|rc=" "$OUT/replay.txt" | head -80
fi
if has gate; then
  timeout 300 $B/ze-probe --device zecl --route-pattern all --kernel-tuning "$best" --out "$OUT/gate" >"$OUT/gate.txt" 2>&1
  echo "gate rc=$?"; grep -E "verdict|PASS|FAIL|ON THE BAR" "$OUT/gate.txt" | tail -12
fi
