#!/usr/bin/env bash
# test_headers.sh -- every public header (include/*.h) compiles on its own,
# first in a translation unit, as C11 (and as C++11 when a C++ compiler is
# found), with warnings as errors; each typedef name is declared once; the
# version is written once (VQ_VERSION_* in include/veloxquant.h) and
# python/pyproject.toml agrees with it. Prints "test_headers: N passed, M
# failed" like the C tests. Usage: bash tests/pkg/test_headers.sh [BUILD]
set -u
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}
tmp="$build/tmp/headers.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-cc}
CXX=${CXX:-}
if [ -z "$CXX" ]; then
    for c in g++ clang++ c++; do command -v "$c" >/dev/null && { CXX=$c; break; }; done
fi
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

for h in include/*.h; do
    name=$(basename "$h")
    printf '#include "%s"\nint vq_header_test_anchor;\n' "$name" >"$tmp/one.c"
    if $CC -std=c11 -Wall -Wextra -Werror -Wpedantic -Wstrict-prototypes -Iinclude \
        -fsyntax-only "$tmp/one.c" 2>"$tmp/err"; then ok; else bad "$name alone as C11"; sed 's/^/    /' "$tmp/err"; fi
    if [ -n "$CXX" ]; then
        cp "$tmp/one.c" "$tmp/one.cpp"
        if $CXX -std=c++11 -Wall -Wextra -Werror -Wpedantic -Iinclude -fsyntax-only "$tmp/one.cpp" 2>"$tmp/err"; then
            ok
        else
            bad "$name alone as C++11 ($CXX)"; sed 's/^/    /' "$tmp/err"
        fi
    fi
    # each typedef'd name once (a second `typedef struct X X;` is legal C11
    # but says the header lost its order)
    dups=$(sed -n -E 's/^typedef (struct|enum|union) [A-Za-z_0-9]+ \*?([A-Za-z_0-9]+);.*/\2/p; s/^} ([A-Za-z_0-9]+);.*/\1/p' "$h" | sort | uniq -d)
    if [ -z "$dups" ]; then ok; else bad "$name declares more than once: $dups"; fi
done
[ -n "$CXX" ] || echo "note: no C++ compiler found; C++ checks skipped"

# the version, in one place
v=$(sed -n -E 's/^#define VQ_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+)$/\2/p' include/veloxquant.h | paste -sd.)
n=$(grep -c -E '^#define VQ_VERSION_(MAJOR|MINOR|PATCH) ' include/veloxquant.h)
if [ "$n" = 3 ] && [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then ok; else bad "VQ_VERSION_MAJOR/MINOR/PATCH not found once each (got '$v', $n lines)"; fi
printf '#include <stdio.h>\n#include "veloxquant.h"\nint main(void) { puts(VQ_VERSION_STRING); return 0; }\n' >"$tmp/v.c"
if $CC -std=c11 -Iinclude -o "$tmp/v" "$tmp/v.c" 2>"$tmp/err" && [ "$("$tmp/v")" = "$v" ]; then ok; else bad "VQ_VERSION_STRING is not $v"; fi
py=$(sed -n -E 's/^version = "([^"]+)"$/\1/p' python/pyproject.toml)
if [ "$py" = "$v" ]; then ok; else bad "python/pyproject.toml version '$py' differs from the header's $v"; fi
others=$(grep -rn -E '"[0-9]+\.[0-9]+\.[0-9]+"' src tools --include=*.c --include=*.h | grep -v -i 'gguf\|test' || true)
if [ -z "$others" ]; then ok; else bad "a version literal outside the header:"; echo "$others" | sed 's/^/    /'; fi

echo "test_headers: $pass passed, $fail failed"
[ "$fail" = 0 ]
