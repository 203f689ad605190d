#!/usr/bin/env bash
# The gate's repeatability check (the table in docs/perf.md): N independent runs of
# the gate, each in a fresh process (ze-probe --gate-repeat), then per candidate the verdicts
# of every run and per candidate and pattern the spread of the medians and how often one
# run's median lies inside another run's 95% CI. The aim: no candidate PASS in one run and
# FAIL in another, and >= 90% of the ordered pairs inside.
#
#   tools/bench/gate_repeat.sh [N] [ze-probe options]
#
# Default options: --device zecl --route-pattern all (the default gate on the H200). Env:
# ZE_PROBE (default build/tools/ze-probe/ze-probe), GATE_REPEAT_OUT (default gate-repeat/).
# On the H200: stage, carry, `. scripts/h200/setup.sh; export ZECL_PLATFORM=NVIDIA`, then
# ZE_PROBE=.dev/bin/ze-probe GATE_REPEAT_OUT=$OUT/gate-repeat bash tools/bench/gate_repeat.sh 5
set -euo pipefail
die() { echo "gate_repeat.sh: $*" >&2; exit 2; }
n=5
if [[ $# -gt 0 && $1 != -* ]]; then  # N, else ze-probe options from the first
  [[ $1 =~ ^[1-9][0-9]{0,2}$ && $1 -ge 2 && $1 -le 100 ]] || die "N '$1' is not a number of runs in 2..100 (ze-probe --gate-repeat)"
  n=$1
  shift
fi
exe=${ZE_PROBE:-build/tools/ze-probe/ze-probe}
out=${GATE_REPEAT_OUT:-gate-repeat}
[[ -f $exe && -x $exe ]] || die "ZE_PROBE '$exe' is not an executable file"
[[ -d $out || ! -e $out ]] || die "GATE_REPEAT_OUT '$out' is not a directory"
if [[ $# -eq 0 ]]; then set -- --device zecl --route-pattern all; fi
mkdir -p "$out"
exec "$exe" --gate-repeat "$n" --out "$out" --report "$out/report.html" "$@"
