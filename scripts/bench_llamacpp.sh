#!/usr/bin/env bash
# bench_llamacpp.sh -- the peer measured beside our `bench e2e`: llama.cpp's CPU
# backend on the same GGUF file and threads, built from the llama.cpp sources
# vendored in the llama-cpp-python sdist on PyPI (pinned below; the only
# registry this machine may use), with the AMX kernels off (they trap on these
# machines) and AVX-512/VNNI on. Writes figures/bench/llamacpp-smollm2.json:
# {"commands", "load", "llama_cpp_python_sdist", "result": llama-bench's JSON rows}.
# With the argument avx2 (hosts without AVX-512): AVX2/FMA/F16C only, built in
# build/llamacpp-avx2, into figures/bench/llamacpp-smollm2-avx2.json.
# Waits for a load average under 0.5 first, as scripts/run_bench.sh does.
# VQ_BENCH_OUT=DIR writes the file into DIR instead (a host's re-take, as
# scripts/run_bench.sh's).
#   bash scripts/bench_llamacpp.sh [avx2]
set -euo pipefail
cd "$(dirname "$0")/.."
ver=0.3.16
odir=${VQ_BENCH_OUT:-figures/bench}
work=build/llamacpp out=$odir/llamacpp-smollm2.json
avx512=(-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON)
if [ "${1:-}" = avx2 ]; then
    work=build/llamacpp-avx2 out=$odir/llamacpp-smollm2-avx2.json
    avx512=(-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_BF16=OFF)
fi
mkdir -p "$work" "$odir"
if [ ! -x "$work/src/build/bin/llama-bench" ]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$ver" -d "$work" >&2
    rm -rf "$work/src" && mkdir -p "$work/src"
    tar xzf "$work/llama_cpp_python-$ver.tar.gz" -C "$work/src" --strip-components=3 \
        "llama_cpp_python-$ver/vendor/llama.cpp"
    cmake -S "$work/src" -B "$work/src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
        -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "${avx512[@]}" \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
        -DLLAMA_CURL=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
    cmake --build "$work/src/build" -j2 --target llama-bench >&2
fi
waited=0
while awk '{ exit !($1 >= 0.5) }' /proc/loadavg && [ "$waited" -lt "${VQ_BENCH_WAIT:-900}" ]; do
    sleep 10; waited=$((waited + 10))
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
common=(-m models/smollm2-135m.gguf -t 2 -n 32 -o json)
# f16 cache with and without flash attention; q4_0 K/V needs flash attention;
# decode after 16,384 tokens once (its prefill takes minutes)
runs=("-p 512 -d 0,4096 -r 3 -fa 0,1 -ctk f16 -ctv f16" "-p 512 -d 0,4096 -r 3 -fa 1 -ctk q4_0 -ctv q4_0"
      "-p 0 -d 16384 -r 1 -fa 0,1 -ctk f16 -ctv f16")
cmds=() results=()
for r in "${runs[@]}"; do
    read -ra extra <<<"$r"
    cmds+=("llama-bench $(printf '%q ' "${common[@]}" "${extra[@]}")")
    echo "== llama.cpp (load $load): ${cmds[-1]}" >&2
    results+=("$("$work/src/build/bin/llama-bench" "${common[@]}" "${extra[@]}")")
done
python3 - "$out" "$load" "$ver" "${cmds[@]}" -- "${results[@]}" <<'PY'
import json, os, sys
path, load, ver = sys.argv[1:4]
rest = sys.argv[4:]
k = rest.index("--")
cmds, res = rest[:k], rest[k + 1:]
rows = [row for r in res for row in json.loads(r)]
with open(path + ".tmp", "w") as f:
    json.dump({"commands": cmds, "load": load, "llama_cpp_python_sdist": ver, "result": rows}, f, indent=1)
os.replace(path + ".tmp", path)
PY
