#!/bin/sh
# abbuild.sh -- workstation side of a tuning round (not part of the
# benchmark): builds build/cuda/ab/bench_NAME for each NAME=DEFINES[@REV]
# given: src/gpu/attention_mma.cu and src/gpu/attention.cu (the host side:
# split choice, launches), or their versions at git revision REV, with
# -DVQ_MMA_QUICK (D = 128, G = 4 only) and DEFINES, put into a copy of
# build/cuda/libveloxquant_cuda.a and linked with bench/gpu/bench_gpu.cu.
# Needs `make lib` and `make cuda` done first. Run them with s6run.sh.
# AB_FULL=1 in the environment compiles every shape (no -DVQ_MMA_QUICK).
#
#   sh bench/gpu/abbuild.sh "base=@HEAD" "new=" "nosub=-DVQ_MMA_VSUBN=0"
set -e
B=build/cuda/ab
mkdir -p $B
QUICK=-DVQ_MMA_QUICK
[ -n "$AB_FULL" ] && QUICK=
NVF="-O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-fPIC -Werror all-warnings -lineinfo"
for v in "$@"; do
    name=${v%%=*}; rest=${v#*=}
    defs=${rest%@*}; rev=
    case "$rest" in *@*) rev=${rest##*@} ;; esac
    mkdir -p $B/lib_$name
    cp build/cuda/libveloxquant_cuda.a $B/lib_$name/lib.a
    for f in attention_mma attention; do
        src=src/gpu/$f.cu
        if [ -n "$rev" ]; then
            src=src/gpu/.ab_${name}_$f.cu
            git show "$rev:src/gpu/$f.cu" > $src
        fi
        # one object per (source, switches): the variants of one source share it
        key=$( (cat $src; echo "$defs $QUICK") | sha1sum | cut -c1-16)
        [ -f $B/obj_${f}_$key.o ] ||
            nvcc $NVF -Iinclude -Isrc -Isrc/gpu $QUICK $defs -c $src -o $B/obj_${f}_$key.o
        cp $B/obj_${f}_$key.o $B/lib_$name/$f.o
        [ -n "$rev" ] && rm -f $src
    done
    ar rcs $B/lib_$name/lib.a $B/lib_$name/attention_mma.o $B/lib_$name/attention.o
    nvcc $NVF -Iinclude -Itests/gpu -o $B/bench_$name bench/gpu/bench_gpu.cu $B/lib_$name/lib.a build/libveloxquant.a -lm -lpthread
    echo "built $B/bench_$name ($defs${rev:+ at $rev})"
done
