#!/usr/bin/env bash
# One H200 device call (stage first: bash scripts/h200/stage.sh; carry [".dev"]): two iterations
# of code rows in flight with the scale bytes one iteration ahead (4 registers fewer at 4 columns
# than two iterations of both), for the 1-row body only (stream_prefetch_one_row=2: six_local's
# groups are all 1-row) and for every body (stream_prefetch=2), against R6. Registers and spills
# of NVIDIA's build, the ablation at the real shape, the chains, the cases; and the gate at the
# candidate when its one_launch beats R6's on six_local by >= 1 us replayed (docs/perf.md "Two
# iterations of weight loads in flight?").
# Writes $OUT/*.txt.
cd "$(dirname "$0")/../.."
. scripts/h200/setup.sh >/dev/null 2>&1
export ZECL_PLATFORM=NVIDIA
B=.dev/bin
R6=gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=2,stream_split=16,stream_chunk=128,e2m1_decode=6,max_registers=128
P1="$R6,stream_prefetch_one_row=2" P2="$R6,stream_prefetch=2"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
for t in "$P1" "$P2"; do
  name=regs-${t##*,}; name=${name%=*}.txt  # no '=' in the names of files that come back
  timeout 60 $B/zp-cl-build-report --tuning "$t" >"$OUT/$name" 2>&1
  echo "report ${t##*,} rc=$? $(el)"
  grep -E "^\| (one_launch|gemm1_mxfp4_m2|gemm2_mxfp4_m2|two_launch_a|two_launch_b|m1_gemm2) " "$OUT/$name" | cut -d'|' -f2,4,5 | tr '\n' ';'; echo
done
timeout 90 $B/zp-chain-bench -d zecl -n 20 --ablation --variant baseline --pattern six_local \
    --tuning "$R6" --tuning "$P1" --tuning "$P2" >"$OUT/ablation.txt" 2>&1
echo "ablation rc=$? $(el)"; grep -E "^six_local +gemm" "$OUT/ablation.txt" | awk '{print $2, $4, $7, $10, $13, $16}'
timeout 150 $B/zp-chain-bench -d zecl -n 20 -q --batch 16 --variant baseline --variant one_launch --variant two_launch \
    --variant m1_oracle --pattern six_local --pattern same_typical --pattern disjoint_typical --pattern cross_row_overlap \
    --tuning "$R6" --tuning "$P1" --tuning "$P2" >"$OUT/bench.txt" 2>&1
echo "bench rc=$? $(el)"; grep -E "^CHECK|^copy" "$OUT/bench.txt"
timeout 120 $B/ze-probe --device zecl --route-pattern all --no-timing --variant one_launch --kernel-tuning "$P1" \
    --out "$OUT/p1" >"$OUT/probe-one-row.txt" 2>&1
echo "ze-probe one_launch at prefetch_one_row=2 rc=$? $(el)"; grep -iE "^total" "$OUT/probe-one-row.txt" | tail -1
rm -rf "$OUT/p1"
# one_launch six_local replayed x16 (us) at R6 and at P1, in the bench's order
mapfile -t rep < <(awk '/^six_local .* one_launch +chain/ {getline; print $3}' "$OUT/bench.txt")
echo "six_local one_launch replayed: ${rep[*]}"
left=$(( 560 - ($(date +%s) - t0) ))
if (( ${#rep[@]} >= 2 && left > 200 )) && awk -v a="${rep[0]}" -v b="${rep[1]}" 'BEGIN { exit !(b <= a - 1.0) }'; then
  timeout $left $B/ze-probe --device zecl --route-pattern all --kernel-tuning "$P1" --out "$OUT/gate" >"$OUT/gate.txt" 2>&1
  echo "gate at prefetch_one_row=2 rc=$? $(el)"; grep -E "PASS|FAIL|ON THE BAR" "$OUT/gate.txt" | tail -12
fi
