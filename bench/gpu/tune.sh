#!/bin/sh
# tune.sh -- tuning runs on the GPU machine (not part of the benchmark):
# builds variants of the tensor-core kernel that differ by compile-time
# switches (VQ_MMA_* in src/gpu/attention_mma.cu), links build/cuda/bench_gpu
# against each and times them at one shape in the same run, then sweeps the
# forced split count. Needs `make lib` and `make cuda` done first.
#
#   sh bench/gpu/tune.sh VARIANT_DEFINES...      e.g. "" "-DVQ_MMA_NO_STAGE"
#
# Env: TUNE_SHAPE (ctx,batch; default 65536,8), TUNE_DIMS (default 128),
# TUNE_ARGS (more bench_gpu arguments for the variants, e.g. "--splits 8"),
# TUNE_SPLITS ("shape:pair:s1,s2,..." items, space separated) for a split sweep.
set -e
B=build/cuda/tune
mkdir -p $B
NVF="-O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-fPIC -Werror all-warnings -lineinfo"
SHAPE=${TUNE_SHAPE:-65536,8}
DIMS=${TUNE_DIMS:-128}
i=0
for defs in "$@"; do
    i=$((i + 1))
    nvcc $NVF -Iinclude -Isrc -Isrc/gpu $defs -c src/gpu/attention_mma.cu -o $B/mma$i.o
    cp build/cuda/libveloxquant_cuda.a $B/lib$i.a
    cp $B/mma$i.o $B/attention_mma.o
    ar rcs $B/lib$i.a $B/attention_mma.o
    nvcc $NVF -Iinclude -Itests/gpu -o $B/bench$i bench/gpu/bench_gpu.cu $B/lib$i.a build/libveloxquant.a -lm -lpthread
done
i=0
for defs in "$@"; do
    i=$((i + 1))
    echo "== variant $i: '$defs' (shape $SHAPE, D $DIMS) ${TUNE_ARGS:-}"
    $B/bench$i --quick --shape $SHAPE --dims $DIMS ${TUNE_ARGS:-} | grep -v copy_bandwidth
done
for item in ${TUNE_SPLITS:-}; do
    shape=${item%%:*}; rest=${item#*:}; pair=${rest%%:*}; list=${rest#*:}
    for s in $(echo $list | tr , ' '); do
        printf 'splits %s: ' $s
        build/cuda/bench_gpu --quick --shape $shape --dims $DIMS --pair $pair --splits $s | grep -v copy_bandwidth
    done
done
