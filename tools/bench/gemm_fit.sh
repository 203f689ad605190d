#!/usr/bin/env bash
# A GEMM kernel's fixed cost and its rate per byte, from two `zp-chain-bench --ablation` outputs
# of the same kernel at the same K (its reduction length) and different N (so that only the bytes
# change): t = fixed + MB / rate through the two points, per ablation stage (loads only, + decode,
# + fma, the whole kernel), the rate also as a share of the copy bandwidth measured in the run.
#   bash tools/bench/gemm_fit.sh KERNEL SMALL.txt LARGE.txt     e.g. gemm1_mxfp4_m2 (K = hidden)
# docs/perf.md "What does a GEMM kernel cost, fixed and per byte?"; tools/bench/h200_stream.sh shapes.
set -euo pipefail
(($# == 3)) || { echo "usage: gemm_fit.sh KERNEL SMALL_ABLATION.txt LARGE_ABLATION.txt" >&2; exit 2; }
kernel=$1 small=$2 large=$3
[[ -n $kernel ]] || { echo "gemm_fit.sh: an empty KERNEL name" >&2; exit 2; }
for f in "$small" "$large"; do  # a FIFO or /dev/zero would hang awk, a directory is no output
  [[ -f "$f" && -r "$f" ]] || { echo "gemm_fit.sh: cannot read '$f' (not a readable regular file)" >&2; exit 2; }
done
awk -v k="$kernel" '
  /^copy bandwidth:/ { copy = $(NF - 2) }
  $1 == k && NF == 5 { mb[FILENAME] = $2 }
  $1 == "six_local" && $2 == k { n[FILENAME]++; for (i = 0; i < 4; ++i) t[FILENAME, i] = $(4 + 3 * i) }
  END {
    split("loads_only decode fma whole", stage)
    f1 = ARGV[1]; f2 = ARGV[2]
    for (f = 1; f <= 2; ++f) {
      if (!(ARGV[f] in mb) || n[ARGV[f]] != 1) {
        printf "gemm_fit.sh: %s has %d ablation rows of %s (want one tuning)\n", ARGV[f], n[ARGV[f]], k > "/dev/stderr"
        exit 2
      }
    }
    if (mb[f2] <= mb[f1] || copy <= 0) {
      printf "gemm_fit.sh: %s must move more bytes than %s (%s MB against %s MB) in a run with a copy bandwidth\n",
        f2, f1, mb[f2], mb[f1] > "/dev/stderr"
      exit 2
    }
    for (i = 0; i < 4; ++i) {
      dt = t[f2, i] - t[f1, i]
      if (dt <= 0) { printf "%s %-10s %s us -> %s us: no rate (the larger run is not slower)\n", k, stage[i + 1], t[f1, i], t[f2, i]; continue }
      rate = (mb[f2] - mb[f1]) / dt  # MB per us = TB/s
      printf "%s %-10s %6.1f us for %7.2f MB = %5.1f us fixed + the bytes at %5.0f GB/s (%.1f%% of copy)\n",
        k, stage[i + 1], t[f1, i], mb[f1], t[f1, i] - mb[f1] / rate, 1000 * rate, 100000 * rate / copy
    }
  }' "$small" "$large"
