#!/bin/sh
# Writes the files of tests/formats/ (plain.vqkc, xkv.vqkc, calib.vqcm,
# codec.vqcs) with the library of commit REV, so that
# tests/test_file_versions.c can check that this library still reads the
# file format versions that one wrote. Default REV: 20154e5, the last
# commit writing cache files version 1/2, codec states (VQCS) and model
# calibration files (VQCM) version 1, without the writer field.
# Usage: sh scripts/make_old_format_files.sh [REV]
set -e
REV=${1:-20154e5}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$REV" | tar -x -C "$tmp"
make -C "$tmp" -j2 lib >/dev/null
cc -std=c11 -O1 -I"$tmp/include" "$root/tests/formats/make_old_files.c" "$tmp/build/libveloxquant.a" -lm -pthread \
    -o "$tmp/make_old_files"
"$tmp/make_old_files" "$root/tests/formats"
echo "wrote tests/formats/ with the library of $REV"
