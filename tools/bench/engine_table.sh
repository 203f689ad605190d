#!/usr/bin/env bash
# The engine against the old tile and the roofline: one markdown table, a row per GEMM-bearing
# kernel and a column per pattern, from one `zp-chain-bench` output (without -q: its per-kernel
# tables) that measured exactly two tunings, the old tile's first (the lane tile: --tuning "")
# and the engine's second (the stream tile). A cell is "old -> engine us (engine / roofline)",
# the roofline being the kernel's bytes at the copy bandwidth the run measured; a kernel that
# runs in several variants (gemm1 in baseline and gemm2_loader_fused) shows its first one.
#   bash tools/bench/engine_table.sh CHAINS.txt
# docs/perf.md "The engine against the old tiles"; tools/bench/h200_perf.sh makes the output.
set -euo pipefail
(($# == 1)) || { echo "usage: engine_table.sh CHAINS.txt (zp-chain-bench output with two tunings)" >&2; exit 2; }
[[ -r "$1" && -f "$1" ]] || { echo "engine_table.sh: cannot read '$1'" >&2; exit 2; }
awk '
  /^copy bandwidth:/ { copy = $(NF - 2) }
  /^== / {  # a pattern: "== six_local (six_local/v0): ..."; the goals and the ablation end them
    pat = ($3 ~ "^\\(" $2 "/v[0-9]+\\):$") ? $2 : ""
    if (pat != "" && !(pat in seenp)) { seenp[pat] = 1; pats[++np] = pat }
    next
  }
  pat != "" && $1 == pat && $2 ~ /^\[/ && $4 == "chain" {
    tuning = $2
    if (!(tuning in seent)) { seent[tuning] = ++nt; tunings[nt] = tuning }
    next
  }
  pat != "" && NF == 5 && $5 ~ /%$/ && $1 ~ /gemm|two_launch|one_launch/ {
    k = $1
    if (!(k in seenk)) { seenk[k] = 1; kernels[++nk] = k }
    if (!((pat, k) in mb)) mb[pat, k] = $2
    key = pat SUBSEP k SUBSEP seent[tuning]
    if (!(key in us)) us[key] = $3
  }
  END {
    if (nt != 2) {
      printf "engine_table.sh: %s measured %d tunings; want two (the old tile first, the engine second)\n", FILENAME, nt > "/dev/stderr"
      exit 2
    }
    if (copy <= 0 || nk == 0) {
      printf "engine_table.sh: %s has no copy bandwidth or no GEMM kernel table (run zp-chain-bench without -q)\n", FILENAME > "/dev/stderr"
      exit 2
    }
    printf "old %s, engine %s; copy %s GB/s; us, old -> engine (engine / roofline)\n\n", tunings[1], tunings[2], copy
    line = "| kernel |"; rule = "|---|"
    for (p = 1; p <= np; ++p) { line = line " " pats[p] " |"; rule = rule "---|" }
    print line; print rule
    for (i = 1; i <= nk; ++i) {
      k = kernels[i]; line = "| " k " |"
      for (p = 1; p <= np; ++p) {
        a = pats[p] SUBSEP k SUBSEP 1; b = pats[p] SUBSEP k SUBSEP 2
        if (!(a in us) || !(b in us)) { line = line " - |"; continue }
        roof = 1000 * mb[pats[p], k] / copy
        line = line sprintf(" %s -> %s (%s) |", us[a], us[b], roof > 0 ? sprintf("%.2fx", us[b] / roof) : "-")
      }
      print line
    }
  }' "$1"
