#!/usr/bin/env bash
# embed.consumer: install this build into a temporary prefix, build examples/consumer against it
# out of tree (find_package(zeprobe CONFIG), and once more through pkg-config), run it on the
# INSTALLED libze_zecl.so, and compare its output with the host oracle's (consumer_reference).
# The install itself and the README's embedding program (the ```cpp block under
# `<!-- embed.cpp -->` and its ```cmake block) are built and run by the README's own `sh` blocks
# (`<!-- install -->`, `<!-- embed-cmake -->`, `<!-- embed-pkg-config -->`), pasted verbatim into
# bash with PREFIX set, in a clean environment (no ZE_ENABLE_ALT_DRIVERS, no LD_LIBRARY_PATH). Last,
# tools/moe-server configured as its own project against the prefix, built and run.
#   consumer_test.sh CMAKE BUILD_DIR CONSUMER_SRC REFERENCE_EXE LIBDIR GENERATOR CXX README [CXXFLAGS]
# CXXFLAGS: what the consumer needs to link a sanitized libzeprobe (ZP_SANITIZE builds).
set -euo pipefail
cmake=$1 build=$2 src=$3 reference=$4 libdir=$5 generator=$6 cxx=$7 readme=$8 cxxflags=${9:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zp-embed-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)"; }

# The README's `sh` block under `<!-- NAME -->`, as it stands there.
readme_block() {
  awk -v marker="<!-- $1 -->" '$0 == marker {armed = 1; next}
       armed && /^```sh$/ {inside = 1; next}
       inside && /^```$/ {exit}
       inside {print}' "$readme"
}
# Runs the README's block NAME verbatim in directory DIR, with PREFIX the temporary prefix and the
# tools of this build first on PATH: cmake, and g++ as this build's compiler with its flags (a
# sanitized libzeprobe needs them to link).
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec %q %s "$@"\n' "$cxx" "$cxxflags" > "$tmp/bin/g++"
chmod +x "$tmp/bin/g++"
ln -s "$cmake" "$tmp/bin/cmake"
run_readme_block() {
  local name=$1 dir=$2 text
  text=$(readme_block "$name")
  [[ -n "$text" ]] || fail "no \`<!-- $name -->\` sh block in $readme"
  echo "README $name:"; echo "$text" | sed 's/^/  /'
  # A user's shell: none of the test's loader settings (the program finds the installed zecl itself).
  (cd "$dir" && env -u ZE_ENABLE_ALT_DRIVERS -u ZP_ZECL_PATH -u LD_LIBRARY_PATH PREFIX="$tmp/prefix" \
    PATH="$tmp/bin:$PATH" CXX="$tmp/bin/g++" bash -euo pipefail -c "$text")
}

step "install $build into $tmp/prefix: the README's install lines, from a directory where build/ is this build"
mkdir -p "$tmp/work"
ln -s "$build" "$tmp/work/build"
run_readme_block install "$tmp/work" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "README install"; }
prefix=$tmp/prefix
zecl=$prefix/$libdir/libze_zecl.so
for f in include/zeprobe/zeprobe.hpp "$libdir/libzeprobe.so" "$libdir/libze_zecl.so" "$libdir/libze_zecl.so.0" \
         bin/ze-probe bin/moe-server \
         "$libdir/cmake/zeprobe/zeprobeConfig.cmake" "$libdir/cmake/zeprobe/zeprobeConfigVersion.cmake" \
         "$libdir/pkgconfig/zeprobe.pc" share/zeprobe/card.schema.json share/zeprobe/step.schema.json; do
  [[ -e "$prefix/$f" ]] || fail "not installed: $f"
done
# The installed schemas are the tree's, the ones the tool checks every card and step against.
docs=$(cd "$(dirname "$readme")" && pwd)/docs
for schema in card step; do
  cmp "$docs/$schema.schema.json" "$prefix/share/zeprobe/$schema.schema.json" || fail "installed $schema.schema.json differs"
done
soname=$(readelf -d "$zecl" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" == libze_zecl.so.0 ]] || fail "libze_zecl.so has soname '$soname', expected libze_zecl.so.0"
step "the installed tools run from the prefix"
for tool in ze-probe moe-server; do
  v=$(env -u LD_LIBRARY_PATH "$prefix/bin/$tool" --version) || fail "$tool --version"
  [[ "$v" == "$tool "*"contract "* ]] || fail "$tool --version printed '$v'"
  echo "$v"
done
# The package must be usable with its own header only.
# (Outputs are read whole before grep -q: under pipefail, a writer cut off by grep's early exit
# would turn a match into a failed pipeline.)
internal=$(find "$prefix/include" -path '*/zp/*')
if [[ -n "$internal" ]]; then fail "project-internal headers installed"; fi
# The installed library must not point back into the build tree.
dynamic=$(readelf -d "$prefix/$libdir/libzeprobe.so")
if grep -E 'RPATH|RUNPATH' <<< "$dynamic" | grep -F "$build" > /dev/null; then
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
"$cxx" $cxxflags -o "$tmp/consumer-pc" "$src/main.cpp" $pcflags || fail "pkg-config build ($pcflags)"

expected=$("$reference")
echo "oracle:"; echo "$expected"

step "run the consumer with ZE_ENABLE_ALT_DRIVERS=$zecl"
ZE_ENABLE_ALT_DRIVERS="$zecl" "$tmp/build/consumer" zecl > "$tmp/run1.txt" 2>&1 || { cat "$tmp/run1.txt"; fail "consumer run"; }
cat "$tmp/run1.txt"
[[ "$(grep -E '^out' "$tmp/run1.txt")" == "$expected" ]] || fail "consumer output differs from the host oracle"

step "run the pkg-config build with the default configureLoader (finds the installed zecl by itself)"
env -u ZE_ENABLE_ALT_DRIVERS -u ZP_ZECL_PATH -u LD_LIBRARY_PATH \
  "$tmp/consumer-pc" zecl > "$tmp/run2.txt" 2>&1 || { cat "$tmp/run2.txt"; fail "consumer-pc run"; }
[[ "$(grep -E '^out' "$tmp/run2.txt")" == "$expected" ]] || { cat "$tmp/run2.txt"; fail "consumer-pc output differs from the host oracle"; }

step "extract the README's embedding program"
mkdir -p "$tmp/embed"
awk '/^<!-- embed.cpp -->$/ {armed = 1; next}
     armed && /^```cpp$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' "$readme" > "$tmp/embed/embed.cpp"
[[ -s "$tmp/embed/embed.cpp" ]] || fail "no \`<!-- embed.cpp -->\` cpp block in $readme"
# The CMake lines are the README's too: the first ```cmake block after the program.
awk '/^<!-- embed.cpp -->$/ {armed = 1; next}
     armed && /^```cmake$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' "$readme" > "$tmp/embed/CMakeLists.txt"
grep -q 'add_executable(embed embed.cpp)' "$tmp/embed/CMakeLists.txt" || fail "no CMake block for embed.cpp in $readme"
# The README's build lines, verbatim: CMake, then pkg-config (the variable set for pkg-config inside
# $( ), not for g++: the paste bug the README once had).
[[ "$libdir" == lib ]] || fail "the README's pkg-config line names <prefix>/lib/pkgconfig; this build installs to $libdir"
run_readme_block embed-cmake "$tmp/embed" > "$tmp/embed-cmake.txt" 2>&1 || { cat "$tmp/embed-cmake.txt"; fail "README CMake lines"; }
run_readme_block embed-pkg-config "$tmp/embed" > "$tmp/embed-pc.txt" 2>&1 || { cat "$tmp/embed-pc.txt"; fail "README pkg-config lines"; }
[[ -x "$tmp/embed/build-embed/embed" && -x "$tmp/embed/embed" ]] || fail "the README's lines built no embed"
# The library needs what the README says it needs (and the README says it).
needs=$(ldd "$prefix/$libdir/libzeprobe.so")
for lib in libze_loader.so.1 libyaml-cpp.so libfmt.so; do
  grep -qF "$lib" <<< "$needs" || { echo "$needs"; fail "libzeprobe.so no longer links $lib: update the README"; }
  grep -qF "$lib" "$readme" || fail "the README does not name $lib, which libzeprobe.so links"
done
expected0=$(echo "$expected" | grep '^out\[0\]')
for out in "$tmp/embed-cmake.txt" "$tmp/embed-pc.txt"; do
  [[ "$(grep '^out\[0\]' "$out")" == "$expected0" ]] || { cat "$out"; fail "the README's ./embed: out[0] differs from the host oracle ($expected0)"; }
done
for exe in "$tmp/embed/build-embed/embed" "$tmp/embed/embed"; do
  step "run $exe with a clean environment"
  env -u ZE_ENABLE_ALT_DRIVERS -u ZP_ZECL_PATH -u LD_LIBRARY_PATH "$exe" > "$tmp/embed.txt" 2>&1 || { cat "$tmp/embed.txt"; fail "$exe failed"; }
  cat "$tmp/embed.txt"
  [[ "$(grep '^out\[0\]' "$tmp/embed.txt")" == "$expected0" ]] || fail "$exe: out[0] differs from the host oracle ($expected0)"
  grep -Eq '^[^ ]+ [0-9]+ ns$' "$tmp/embed.txt" || fail "$exe printed no kernel timing"
done

# moe-server is built on the installed package alone (DESIGN.md's house table): its own sources,
# configured as a project of their own against the prefix (find_package(zeprobe)), with no
# path into this build or the source tree's internal headers. Then it serves /healthz on the
# installed zecl and stops cleanly on SIGTERM.
moe_src=$(cd "$(dirname "$readme")" && pwd)/tools/moe-server
# Unoptimised (a Debug build without debug info): what is checked is that it builds and runs
# against the prefix, and at -O3 its CLI11 and httplib code was ~25 s of CI's CPU.
step "configure and build moe-server ($moe_src) against the installed package"
"$cmake" -S "$moe_src" -B "$tmp/moe-build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/moe-configure.log" 2>&1 || { cat "$tmp/moe-configure.log"; fail "moe-server configure"; }
grep -q "moe-server against the installed zeprobe .*($prefix/" "$tmp/moe-configure.log" || { cat "$tmp/moe-configure.log"; fail "moe-server did not find the installed zeprobe in $prefix"; }
"$cmake" --build "$tmp/moe-build" > "$tmp/moe-build.log" 2>&1 || { cat "$tmp/moe-build.log"; fail "moe-server build"; }
moe=$tmp/moe-build/moe-server
[[ -x "$moe" ]] || { cat "$tmp/moe-configure.log"; fail "no moe-server built (cpp-httplib missing?)"; }
# It links the installed libzeprobe and no internal library (those are static and hidden inside it).
deps=$(ldd "$moe")
grep -qF "$prefix/$libdir/libzeprobe.so" <<< "$deps" || { echo "$deps"; fail "moe-server does not load $prefix/$libdir/libzeprobe.so"; }
if grep -qE -- '-I[^ ]*/(probe|scheduler|oracle|runtime)/include' "$tmp/moe-build/compile_commands.json" 2>/dev/null; then
  fail "moe-server was compiled with an internal include path"
fi
v=$(env -u LD_LIBRARY_PATH "$moe" --version) || fail "moe-server --version"
[[ "$v" == "moe-server "*"contract 1" ]] || fail "moe-server --version printed '$v'"
step "run the standalone moe-server on the installed zecl"
env -u ZE_ENABLE_ALT_DRIVERS -u ZP_ZECL_PATH -u LD_LIBRARY_PATH "$moe" --device zecl --threads 1 --port 0 \
  --port-file "$tmp/moe.port" --set hidden=128 --set intermediate=64 --set experts=48 > "$tmp/moe.log" 2>&1 &
moe_pid=$!
trap 'kill "$moe_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 1800); do
  [[ -s "$tmp/moe.port" ]] && break
  kill -0 "$moe_pid" 2>/dev/null || { cat "$tmp/moe.log"; fail "moe-server exited before listening"; }
  sleep 0.1
done
[[ -s "$tmp/moe.port" ]] || { cat "$tmp/moe.log"; fail "moe-server did not listen within 180 s"; }
port=$(cat "$tmp/moe.port")
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
health=$(cat <&3)
exec 3<&-
echo "$health" | tail -1
[[ "$health" == *'"status":"ok"'* && "$health" == *'"hidden":128'* ]] || { cat "$tmp/moe.log"; fail "moe-server /healthz answered '$health'"; }
kill -TERM "$moe_pid"
rc=0
wait "$moe_pid" || rc=$?
trap 'rm -rf "$tmp"' EXIT
[[ $rc -eq 0 ]] || { cat "$tmp/moe.log"; fail "moe-server exited with $rc after SIGTERM"; }

step "PASS"
