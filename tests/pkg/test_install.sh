#!/usr/bin/env bash
# test_install.sh -- `make install` into a temporary prefix (through DESTDIR
# as a package build would), then examples/three_lines.c built against the
# installed tree three ways: with pkg-config (shared library), and with
# CMake's find_package(veloxquant) against veloxquant::veloxquant (shared)
# and veloxquant::veloxquant_static. three_lines needs a model to generate,
# so each program is run once with a model path that does not exist: it
# must load the installed library (the shared builds must resolve
# libveloxquant.so.MAJOR inside the prefix), print the library's error and
# exit 1. No network, a few seconds. Prints "test_install: N passed, M
# failed". Usage: bash tests/pkg/test_install.sh [BUILD]   (after `make`)
set -u
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}
root=$(pwd)
tmp="$root/$build/tmp/install.$$"
stage="$tmp/stage"
prefix=/opt/veloxquant-test      # the prefix the files are written for
inst="$stage$prefix"             # where they are after DESTDIR staging
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@" >"$tmp/out" 2>&1; then ok; else bad "$what"; sed 's/^/    /' "$tmp/out" | tail -n 20; fi; }

major=$(sed -n 's/^#define VQ_VERSION_MAJOR \([0-9]*\)$/\1/p' include/veloxquant.h)
version=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory version)

check "make install" env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make CC="${CC:-cc}" -s --no-print-directory BUILD="$build" install PREFIX="$prefix" DESTDIR="$stage"
for f in bin/veloxquant lib/libveloxquant.a "lib/libveloxquant.so.$version" include/veloxquant.h \
         lib/pkgconfig/veloxquant.pc lib/cmake/veloxquant/veloxquantConfig.cmake \
         lib/cmake/veloxquant/veloxquantConfigVersion.cmake; do
    if [ -f "$inst/$f" ]; then ok; else bad "not installed: $f"; fi
done
if [ "$(readlink "$inst/lib/libveloxquant.so.$major")" = "libveloxquant.so.$version" ] &&
   [ "$(readlink "$inst/lib/libveloxquant.so")" = "libveloxquant.so.$major" ]; then ok; else bad "soname links"; ls -l "$inst/lib" | sed 's/^/    /'; fi
soname=$(readelf -d "$inst/lib/libveloxquant.so.$version" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" = "libveloxquant.so.$major" ]; then ok; else bad "SONAME is '$soname', not libveloxquant.so.$major"; fi
out=$("$inst/bin/veloxquant" --version 2>&1)
if [ "$out" = "veloxquant $version" ]; then ok; else bad "veloxquant --version said '$out'"; fi

# Run a three_lines build with a model that does not exist: exit 1 and the
# library's message naming the file (so the program ran with the library).
run_three() {
    local what=$1 bin=$2
    local out rc
    out=$("$bin" "$tmp/no-such-model.gguf" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q "three_lines: .*no-such-model" <<<"$out"; then ok; else bad "$what: exit $rc, output: $out"; fi
}
# the shared builds must record the soname and find it in the prefix
uses_prefix() {
    local what=$1 bin=$2
    local needed
    needed=$(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(libveloxquant[^]]*\)\]/\1/p')
    if [ "$needed" = "libveloxquant.so.$major" ]; then ok; else bad "$what: NEEDED '$needed', not libveloxquant.so.$major"; fi
    if LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" ldd "$bin" | grep -q "libveloxquant.so.$major => $inst/lib/"; then ok; else bad "$what: does not load the installed library"; ldd "$bin" | sed 's/^/    /'; fi
}

# 1. pkg-config (the .pc names $prefix; PKG_CONFIG_SYSROOT_DIR maps it to the stage)
if command -v pkg-config >/dev/null; then
    pc() { PKG_CONFIG_PATH="$inst/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage" pkg-config "$@"; }
    if [ "$(pc --modversion veloxquant)" = "$version" ]; then ok; else bad "pkg-config --modversion"; fi
    # shellcheck disable=SC2046
    check "cc with pkg-config" ${CC:-cc} -std=c11 -Wall -Wextra -Werror $(pc --cflags veloxquant) \
        -o "$tmp/three_pc" examples/three_lines.c $(pc --libs veloxquant) -Wl,-rpath,"$inst/lib"
    if [ -x "$tmp/three_pc" ]; then uses_prefix "pkg-config build" "$tmp/three_pc"; run_three "pkg-config build" "$tmp/three_pc"; fi
else
    bad "pkg-config not found (Debian: apt-get install pkg-config)"
fi

# 2. CMake find_package (the config is relocatable: found through the stage)
if command -v cmake >/dev/null; then
    mkdir -p "$tmp/cm"
    cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.13)
project(three_lines C)
find_package(veloxquant $version REQUIRED)
add_executable(three_shared "$root/examples/three_lines.c")
target_link_libraries(three_shared PRIVATE veloxquant::veloxquant)
add_executable(three_static "$root/examples/three_lines.c")
target_link_libraries(three_static PRIVATE veloxquant::veloxquant_static)
CM
    check "cmake configure" cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$inst" -DCMAKE_C_COMPILER="${CC:-cc}"
    check "cmake build" cmake --build "$tmp/cm/b"
    if [ -x "$tmp/cm/b/three_shared" ]; then uses_prefix "CMake shared build" "$tmp/cm/b/three_shared"; run_three "CMake shared build" "$tmp/cm/b/three_shared"; fi
    if [ -x "$tmp/cm/b/three_static" ]; then
        if readelf -d "$tmp/cm/b/three_static" | grep -q "libveloxquant"; then bad "static build links the shared library"; else ok; fi
        run_three "CMake static build" "$tmp/cm/b/three_static"
    fi
    # a version this install does not satisfy is refused
    sed -i "s/find_package(veloxquant $version REQUIRED)/find_package(veloxquant $((major + 1)).0 REQUIRED)/" "$tmp/cm/CMakeLists.txt"
    if cmake -S "$tmp/cm" -B "$tmp/cm/b2" -DCMAKE_PREFIX_PATH="$inst" >/dev/null 2>&1; then bad "find_package accepted version $((major + 1)).0"; else ok; fi
else
    bad "cmake not found (Debian: apt-get install cmake)"
fi

check "make uninstall" env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s --no-print-directory BUILD="$build" uninstall PREFIX="$prefix" DESTDIR="$stage"
left=$(find "$stage" -type f -o -type l)
if [ -z "$left" ]; then ok; else bad "left after uninstall: $left"; fi

echo "test_install: $pass passed, $fail failed"
[ "$fail" = 0 ]
