#!/usr/bin/env bash
# What an NVIDIA GPU would run of a kernel file, without the GPU: the file through clang's
# nvptx64 OpenCL target (as NVIDIA's OpenCL would see it: cl_nv_pragma_unroll defined, so the
# kernels take their inline-PTX paths), libclc, llc and ptxas for sm_90, then cuobjdump's SASS.
# Prints ptxas' registers and spills per kernel and the instruction mix of the largest loops
# (a backward branch and the instructions from its target to it), e.g. the stream tile's K loop
# per iteration. clang's PTX is not NVIDIA's (its register allocation differs: registers and
# spills here are indicative; the instruction mix is what docs/perf.md compares), and nothing
# here is a timing.
#   bash tools/bench/sass_loops.sh [--build DIR] [--tuning T] [--maxreg N] [--loops N] [--keep DIR] FILE.cl
#     --tuning   the tiling's build options (zp-cl-build-report --options-only; default: packaged)
#     --maxreg   ptxas --maxrregcount (the tuning's max_registers when it has one)
#     --loops    how many loops to print, largest first (default 6)
#     --keep     leave the .ptx, .cubin and .sass there
# Tools: clang-14, llvm-link-14, opt-14, llc-14 and libclc-14 from Debian (installed with apt
# when missing and run as root); ptxas, cuobjdump and nvdisasm from PyPI's triton wheel, unpacked once into
# ${XDG_CACHE_HOME:-~/.cache}/ze-probe/sass-tools (ZP_SASS_TOOLS_DIR). Exit 2 on bad arguments.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build tuning="" maxreg="" nloops=6 keep="" file=""
die() { echo "sass_loops.sh: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --build | --tuning | --maxreg | --loops | --keep) (($# >= 2)) || die "$1 needs a value" ;;&
    --build) build=$2; shift 2 ;;
    --tuning) tuning=$2; shift 2 ;;
    --maxreg) maxreg=$2; shift 2 ;;
    --loops) nloops=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -*) die "unknown option '$1'" ;;
    *) [[ -z $file ]] || die "one kernel file, not '$file' and '$1'"; file=$1; shift ;;
  esac
done
[[ -n $file ]] || die "usage: sass_loops.sh [--build DIR] [--tuning T] [--maxreg N] [--loops N] [--keep DIR] FILE.cl"
[[ -f $file && -r $file && $file == *.cl ]] || die "'$file' is not a readable .cl file"  # a FIFO hangs clang
[[ -z $keep || -d $keep || ! -e $keep ]] || die "--keep '$keep' is not a directory"
[[ $nloops =~ ^[1-9][0-9]*$ ]] || die "--loops '$nloops' is not a positive integer"
[[ -z $maxreg || $maxreg =~ ^[1-9][0-9]*$ ]] || die "--maxreg '$maxreg' is not a positive integer"
report=$build/tools/bench/zp-cl-build-report
[[ -x $report ]] || die "no $report (build first, or give --build)"

# The file's build options at the tuning, as the runtime builds it.
name=$(basename "$file" .cl)
options=$("$report" --options-only --kernels-dir "$(dirname "$file")" ${tuning:+--tuning "$tuning"} 2>&1) ||
  die "zp-cl-build-report refused the tuning: $options"
defs=$(awk -v n="$name" '$1 == n { $1 = ""; print; exit }' <<<"$options")
if [[ -z $maxreg && $tuning =~ max_registers=([0-9]+) && ${BASH_REMATCH[1]} != 0 ]]; then maxreg=${BASH_REMATCH[1]}; fi

# The tools.
for t in clang-14 llvm-link-14 opt-14 llc-14; do
  command -v $t >/dev/null || {
    [[ $(id -u) == 0 ]] || die "$t is missing (apt-get install clang-14 llvm-14)"
    apt-get install -y -q clang-14 llvm-14 >/dev/null
  }
done
clc=/usr/lib/clc/nvptx64--nvidiacl.bc
if [[ ! -r $clc ]]; then
  [[ $(id -u) == 0 ]] || die "$clc is missing (apt-get install libclc-14)"
  apt-get install -y -q libclc-14 >/dev/null
fi
tools=${ZP_SASS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ze-probe/sass-tools}
bin=$tools/triton/backends/nvidia/bin
if [[ ! -x $bin/ptxas || ! -x $bin/cuobjdump || ! -x $bin/nvdisasm ]]; then
  mkdir -p "$tools"
  echo "sass_loops.sh: fetching ptxas, cuobjdump and nvdisasm (PyPI triton 3.1.0) into $tools" >&2
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
    -d "$tools" triton==3.1.0 >&2
  python3 - "$tools" <<'EOF'
import sys, zipfile, glob, os
d = sys.argv[1]
whl = sorted(glob.glob(os.path.join(d, "triton-3.1.0-*.whl")))[-1]
with zipfile.ZipFile(whl) as z:
    for n in ("ptxas", "cuobjdump", "nvdisasm"):
        p = "triton/backends/nvidia/bin/" + n
        z.extract(p, d)
        os.chmod(os.path.join(d, p), 0o755)
os.remove(whl)
EOF
fi

work=${keep:-$(mktemp -d "${TMPDIR:-/tmp}/zp-sass.XXXXXX")}
[[ -n $keep ]] && mkdir -p "$work" || trap 'rm -rf "$work"' EXIT
o=$work/$name
# shellcheck disable=SC2086 # the build options are words
clang-14 -target nvptx64--nvidiacl -cl-std=CL1.2 -O2 -ffp-contract=off -Xclang -finclude-default-header \
  -Dcl_nv_pragma_unroll -I "$(dirname "$file")" $defs -emit-llvm -c "$file" -o "$o.bc"
llvm-link-14 "$o.bc" "$clc" -o "$o.linked.bc" --only-needed
opt-14 -O3 "$o.linked.bc" -o "$o.opt.bc"
llc-14 -march=nvptx64 -mcpu=sm_80 -mattr=+ptx70 -O3 "$o.opt.bc" -o "$o.ptx"
"$bin/ptxas" -arch=sm_90 -v ${maxreg:+--maxrregcount=$maxreg} "$o.ptx" -o "$o.cubin" 2>"$o.ptxas.txt"
PATH=$bin:$PATH "$bin/cuobjdump" -sass "$o.cubin" >"$o.sass"

echo "file: $file; tuning: ${tuning:-packaged}${maxreg:+; ptxas --maxrregcount=$maxreg}"
awk '/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
     /bytes spill stores/ { spill = $0 }
     /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); printf "%s: %s;%s\n", k, substr($0, RSTART, RLENGTH), spill }' \
  "$o.ptxas.txt" | sed 's/  */ /g'
python3 - "$o.sass" "$nloops" <<'EOF'
import collections, re, sys
ins = []  # (function, address, opcode, text)
func = None
for line in open(sys.argv[1]):
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        func = m.group(1)
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
    if m:
        text = re.sub(r"^@!?U?P\w+\s+", "", m.group(2).strip())
        ins.append((func, int(m.group(1), 16), text.split()[0], text))
loops = []
for f, a, op, t in ins:
    target = re.search(r"0x([0-9a-f]+)", t) if op == "BRA" else None
    if target and int(target.group(1), 16) < a:
        lo = int(target.group(1), 16)
        loops.append((f, lo, a, [x[2] for x in ins if x[0] == f and lo <= x[1] <= a]))
loops.sort(key=lambda x: -len(x[3]))
print(f"largest loops (of {len(loops)}), instructions from the branch target to the branch:")
for f, lo, hi, ops in loops[: int(sys.argv[2])]:
    mix = collections.Counter(o.split(".")[0] for o in ops)
    print(f"  {f[:40]} {lo:#06x}-{hi:#06x}: {len(ops)}: " + ", ".join(f"{k} {v}" for k, v in mix.most_common(10)))
EOF
