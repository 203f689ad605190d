#!/usr/bin/env bash
# Provides an ocloc that knows Xe2 (bmg, lnl) in a private prefix, for the kernel package's
# Xe2 native binaries (spirv/CMakeLists.txt). Debian 12's ocloc (22.43) knows dg2 and pvc but
# not Xe2; Debian testing's intel-ocloc does. Its libraries need a newer glibc and libstdc++
# than bookworm's, so testing's own libc6, libstdc++6, libgcc-s1 and zlib1g come along and
# ocloc runs through that prefix's dynamic loader (LD_LIBRARY_PATH alone is not enough: the
# system's loader cannot run the newer libc). Nothing is installed into the system and the
# system's apt configuration is not touched: the package lists go to a throw-away directory.
#
# Idempotent: when the system's ocloc already knows Xe2, or the prefix is already there and
# works, it only checks. When the packages cannot be had (no network, the mirror changed),
# it says so and exits 0: the Xe2 cards then get SPIR-V. ZP_XE2_OCLOC=required makes that an
# error (exit 1), for CI; ZP_XE2_OCLOC=off skips all of it.
#
#   ZP_XE2_OCLOC_DIR   where the prefix goes (default ${XDG_CACHE_HOME:-~/.cache}/ze-probe/xe2-ocloc);
#                      $ZP_XE2_OCLOC_DIR/bin/ocloc is what CMake looks for
#   ZP_DEBIAN_MIRROR   the Debian archive to use (default: the first one this machine's apt uses)
#   ZP_XE2_SUITE       the suite carrying an Xe2 intel-ocloc (default: testing)
set -euo pipefail

mode=${ZP_XE2_OCLOC:-auto}
dir=${ZP_XE2_OCLOC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ze-probe/xe2-ocloc}
suite=${ZP_XE2_SUITE:-testing}
packages=(intel-ocloc libigc2 libigdfcl2 libc6 libstdc++6 libgcc-s1 zlib1g)

say() { echo "xe2-ocloc: $*"; }
unavailable() {
  say "$* -- the Xe2 cards (bmg, lnl) will get SPIR-V, not native binaries" >&2
  [[ "$mode" == required ]] && exit 1
  exit 0
}
knows_xe2() { "$1" ids bmg >/dev/null 2>&1 && "$1" ids lnl >/dev/null 2>&1; }

case "$mode" in
  off) exit 0 ;;
  auto | required) ;;
  *)
    echo "xe2-ocloc: ZP_XE2_OCLOC='$mode' is not one of auto, required, off" >&2
    exit 2
    ;;
esac

if command -v ocloc >/dev/null && knows_xe2 ocloc; then
  say "the system's ocloc knows Xe2; no private prefix needed"
  exit 0
fi
if [[ -x "$dir/bin/ocloc" ]] && knows_xe2 "$dir/bin/ocloc"; then
  say "present: $dir/bin/ocloc ($(cat "$dir/VERSION" 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

# The Debian archive this machine already uses (deb822 sources, then the one-line format).
mirror=${ZP_DEBIAN_MIRROR:-}
if [[ -z "$mirror" ]]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
fi
if [[ -z "$mirror" ]]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:.*\/debian\/?$/) { print $i; exit } }')
fi
[[ -n "$mirror" ]] || unavailable "no Debian archive found in /etc/apt (set ZP_DEBIAN_MIRROR)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || unavailable "apt-get or dpkg-deb missing"

start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/zp-xe2-ocloc.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/prefix"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""
[[ -r "$keyring" ]] && signed="[signed-by=$keyring] "
echo "deb ${signed}${mirror%/} $suite main" >"$work/sources.list"
: >"$work/status"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Dir::State::Status=$work/status"
  -o APT::Architecture=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root
)
say "fetching ${packages[*]} from $mirror $suite"
apt-get -qq "${apt_opts[@]}" update >"$work/apt.log" 2>&1 ||
  unavailable "apt-get update of $mirror $suite failed: $(tail -n 2 "$work/apt.log" | tr '\n' ' ')"
(cd "$work/debs" && apt-get -qq "${apt_opts[@]}" download "${packages[@]}") >>"$work/apt.log" 2>&1 ||
  unavailable "apt-get download from $mirror $suite failed: $(tail -n 2 "$work/apt.log" | tr '\n' ' ')"
download_bytes=$(cat "$work"/debs/*.deb | wc -c)
download_s=$((SECONDS - start))
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/prefix"; done

libdir="$work/prefix/usr/lib/x86_64-linux-gnu"
binary=$(cd "$work/prefix/usr/bin" && ls ocloc* 2>/dev/null | head -n 1)
[[ -n "$binary" && -x "$libdir/ld-linux-x86-64.so.2" ]] ||
  unavailable "the packages from $suite hold no ocloc or no ld-linux-x86-64.so.2 (layout changed?)"
versions=$(for deb in "$work"/debs/*.deb; do echo "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)"; done | paste -sd' ' -)

# Install: the prefix, then a launcher that runs ocloc through the prefix's own loader and
# libraries. Built beside the old one and swapped in, so a failure leaves nothing half-made.
rm -rf "$dir.new"
mkdir -p "$dir.new/bin"
mv "$work/prefix" "$dir.new/prefix"
cat >"$dir.new/bin/ocloc" <<EOF
#!/bin/sh
# ocloc from Debian $suite ($versions), run through its own glibc (scripts/xe2-ocloc.sh).
lib="\$(dirname "\$0")/../prefix/usr/lib/x86_64-linux-gnu"
exec "\$lib/ld-linux-x86-64.so.2" --library-path "\$lib" "\$(dirname "\$0")/../prefix/usr/bin/$binary" "\$@"
EOF
chmod +x "$dir.new/bin/ocloc"
echo "$versions" >"$dir.new/VERSION"
knows_xe2 "$dir.new/bin/ocloc" || {
  rm -rf "$dir.new"
  unavailable "the ocloc from $suite does not run here or does not know bmg/lnl"
}
rm -rf "$dir"
mv "$dir.new" "$dir"
unpacked=$(du -sm "$dir" | cut -f1)
say "installed $dir/bin/ocloc: $versions"
say "$((download_bytes / 1000000)) MB downloaded in ${download_s} s, ${unpacked} MB unpacked, $((SECONDS - start)) s in all"
