#!/bin/sh
# abbuild.sh -- workstation side of a tuning round (not part of the
# benchmark): builds build/cuda/ab/bench_NAME for each NAME=DEFINES[@REV]
# given: src/gpu/attention_mma.cu (or its version at git revision REV) with
# -DVQ_MMA_QUICK (D = 128, G = 4 only) and DEFINES, put into a copy of
# build/cuda/libveloxquant_cuda.a and linked with bench/gpu/bench_gpu.cu.
# Needs `make lib` and `make cuda` done first. Run them with s6run.sh.
#
#   sh bench/gpu/abbuild.sh "base=@HEAD" "new=" "nosub=-DVQ_MMA_VSUBN=0"
set -e
B=build/cuda/ab
mkdir -p $B
NVF="-O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-fPIC -Werror all-warnings -lineinfo"
for v in "$@"; do
    name=${v%%=*}; rest=${v#*=}
    defs=${rest%@*}; rev=
    case "$rest" in *@*) rev=${rest##*@} ;; esac
    src=src/gpu/attention_mma.cu
    if [ -n "$rev" ]; then
        src=src/gpu/.ab_$name.cu
        git show "$rev:src/gpu/attention_mma.cu" > $src
    fi
    nvcc $NVF -Iinclude -Isrc -Isrc/gpu -DVQ_MMA_QUICK $defs -c $src -o $B/mma_$name.o
    [ -n "$rev" ] && rm -f $src
    mkdir -p $B/lib_$name
    cp build/cuda/libveloxquant_cuda.a $B/lib_$name/lib.a
    cp $B/mma_$name.o $B/lib_$name/attention_mma.o
    ar rcs $B/lib_$name/lib.a $B/lib_$name/attention_mma.o
    nvcc $NVF -Iinclude -Itests/gpu -o $B/bench_$name bench/gpu/bench_gpu.cu $B/lib_$name/lib.a build/libveloxquant.a -lm -lpthread
    echo "built $B/bench_$name ($defs${rev:+ at $rev})"
done
