#!/bin/sh
# `make install` into a temporary DESTDIR, then two outside consumers of the installed files:
# a CMake project using find_package(hsd) (shared and static targets) and a plain
# `cc $(pkg-config --cflags --libs hsd)` program (plus a static link from Libs.private).
#   api_install.sh SOURCE_DIR BUILD_DIR
# HSD_TEST_CFLAGS: extra compile/link flags (the sanitizer build passes its -fsanitize=...).
set -eu
src=$1
build=$2
extra=${HSD_TEST_CFLAGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=/opt/hsd-test
dest=$tmp/stage
root=$dest$prefix

echo "== make install DESTDIR=$dest PREFIX=$prefix"
# (run from ctest under `make test`: the outer make's jobserver is not ours to use)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$src" install BUILD="$build" DESTDIR="$dest" PREFIX="$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; exit 1; }
for f in include/hsd.h include/hsd_tools.h bin/hsd; do
    [ -f "$root/$f" ] || { echo "FAIL: $root/$f not installed"; exit 1; }
done
pc=$(find "$root" -name hsd.pc)
cfg=$(find "$root" -name hsdConfig.cmake)
[ -n "$pc" ] && [ -n "$cfg" ] || { echo "FAIL: hsd.pc or hsdConfig.cmake missing"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
for f in libhsd.a libhsd.so libhsd.so.1; do
    [ -e "$libdir/$f" ] || { echo "FAIL: $libdir/$f missing"; exit 1; }
done
# everything went under DESTDIR/PREFIX (here: DESTDIR/opt only)
[ "$(ls "$dest")" = opt ] && [ "$(ls "$dest/opt")" = hsd-test ] ||
    { echo "FAIL: files installed outside $prefix:"; find "$dest" -maxdepth 2; exit 1; }

echo "== find_package(hsd) from an outside CMake project"
cmake -S "$src/tests/install_project" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$root" \
    -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >"$tmp/cfg.log" 2>&1 ||
    { cat "$tmp/cfg.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
# the shared consumer really uses the installed libhsd.so.1 (found through its RUNPATH)
ldd "$tmp/consumer/consumer_shared" | grep -q "$libdir/libhsd.so.1" ||
    { echo "FAIL: consumer_shared does not load $libdir/libhsd.so.1"; ldd "$tmp/consumer/consumer_shared"; exit 1; }

echo "== cc \$(pkg-config --cflags --libs hsd)"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion hsd)" = "$(sed -n 's/^project(hsd VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
    { echo "FAIL: hsd.pc version"; exit 1; }
# shellcheck disable=SC2046
cc $extra -o "$tmp/pc_shared" "$src/tests/install_project/consumer.c" $(pkg-config --cflags --libs hsd)
LD_LIBRARY_PATH="$libdir" "$tmp/pc_shared"
# static: the archive plus what Libs.private / Requires.private list, without the .so
# shellcheck disable=SC2046
cc $extra -o "$tmp/pc_static" "$src/tests/install_project/consumer.c" $(pkg-config --cflags hsd) \
    "$libdir/libhsd.a" $(pkg-config --static --libs hsd | sed 's/-lhsd\b//')
"$tmp/pc_static"
echo "install test: ok"
