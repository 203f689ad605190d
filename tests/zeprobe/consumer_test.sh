#!/usr/bin/env bash
# embed.consumer: install this build into a temporary prefix, build examples/consumer against it
# out of tree (find_package(zeprobe CONFIG), and once more through pkg-config), run it on the
# INSTALLED libze_zecl.so, and compare its output with the host oracle's (consumer_reference).
#   consumer_test.sh CMAKE BUILD_DIR CONSUMER_SRC REFERENCE_EXE LIBDIR GENERATOR CXX [CXXFLAGS]
# CXXFLAGS: what the consumer needs to link a sanitized libzeprobe (ZP_SANITIZE builds).
set -euo pipefail
cmake=$1 build=$2 src=$3 reference=$4 libdir=$5 generator=$6 cxx=$7 cxxflags=${8:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-embed-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)"; }

step "install $build into $tmp/prefix"
"$cmake" --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
prefix=$tmp/prefix
zecl=$prefix/$libdir/libze_zecl.so
for f in include/zeprobe/zeprobe.hpp "$libdir/libzeprobe.so" "$libdir/libze_zecl.so" \
         "$libdir/cmake/zeprobe/zeprobeConfig.cmake" "$libdir/cmake/zeprobe/zeprobeConfigVersion.cmake" \
         "$libdir/pkgconfig/zeprobe.pc"; do
  [[ -e "$prefix/$f" ]] || fail "not installed: $f"
done
# The package must be usable with its own header only.
if find "$prefix/include" -path '*/zp/*' | grep -q .; then fail "project-internal headers installed"; fi
# The installed library must not point back into the build tree.
if readelf -d "$prefix/$libdir/libzeprobe.so" | grep -E 'RPATH|RUNPATH' | grep -q "$build"; then
  fail "installed libzeprobe.so has an RPATH into the build tree"
fi

step "configure and build the consumer against the installed package"
"$cmake" -S "$src" -B "$tmp/build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "consumer configure"; }
grep -q "zecl driver: $zecl" "$tmp/configure.log" || { cat "$tmp/configure.log"; fail "zeprobe_ZECL_LIBRARY is not $zecl"; }
"$cmake" --build "$tmp/build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "consumer build"; }

step "build the consumer through pkg-config"
pcflags=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs zeprobe) || fail "pkg-config zeprobe"
# shellcheck disable=SC2086
"$cxx" $cxxflags -std=c++20 -o "$tmp/consumer-pc" "$src/main.cpp" $pcflags || fail "pkg-config build ($pcflags)"

expected=$("$reference")
echo "oracle:"; echo "$expected"

step "run the consumer with ZE_ENABLE_ALT_DRIVERS=$zecl"
ZE_ENABLE_ALT_DRIVERS="$zecl" "$tmp/build/consumer" zecl > "$tmp/run1.txt" 2>&1 || { cat "$tmp/run1.txt"; fail "consumer run"; }
cat "$tmp/run1.txt"
[[ "$(grep -E '^out' "$tmp/run1.txt")" == "$expected" ]] || fail "consumer output differs from the host oracle"

step "run the pkg-config build with --configure-loader (finds the installed zecl by itself)"
env -u ZE_ENABLE_ALT_DRIVERS -u ZP_ZECL_PATH LD_LIBRARY_PATH="$prefix/$libdir" \
  "$tmp/consumer-pc" zecl --configure-loader > "$tmp/run2.txt" 2>&1 || { cat "$tmp/run2.txt"; fail "consumer-pc run"; }
[[ "$(grep -E '^out' "$tmp/run2.txt")" == "$expected" ]] || { cat "$tmp/run2.txt"; fail "consumer-pc output differs from the host oracle"; }

step "PASS"
