#!/bin/sh
# s6run.sh -- one call on the GPU machine for a tuning round (not part of
# the benchmark): MODE holds any of "test" (build/cuda/ab/test_gpu, output
# to $OUT/test.txt), "ab" (bench/gpu/ab.py over build/cuda/ab/bench_VARIANT
# for each VARIANT in $ABVARS and pair in $ABPAIRS, --quick at 64k x 8,
# $ABREPS rounds) and "ncu" (Nsight Compute with per-instruction source
# counters on bench_$NCUVAR for each pair in $NCUPAIRS: $OUT/sass$p.csv has
# the instructions executed and stall samples per SASS instruction).
#
#   ABPAIRS="4 6" ABVARS="base new" NCUPAIRS=4 NCUVAR=new sh bench/gpu/s6run.sh "test ab ncu"
#
# The variant binaries are built on the workstation, e.g. attention_mma.cu
# with -DVQ_MMA_QUICK and a switch into a copy of libveloxquant_cuda.a,
# linked with bench/gpu/bench_gpu.cu (as bench/gpu/tune.sh does).
B=build/cuda/ab
MODE=$1; shift
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
if echo "$MODE" | grep -q test; then
  start=$(date +%s)
  $B/test_gpu > $OUT/test.txt 2>&1; echo "test rc=$? $(( $(date +%s) - start )) s"
  tail -1 $OUT/test.txt; grep -i "fail" $OUT/test.txt | grep -v "0 failed" | head -5
  grep "mma " $OUT/test.txt | awk '{print $NF}' | sort -g | tail -1
fi
if echo "$MODE" | grep -q ab; then
  python3 - <<PYEOF 2>&1 | tee $OUT/ab.txt
import subprocess, os
B = "$B"
for r in range(${ABREPS:-2}):
    for p in "$ABPAIRS".split():
        args = ["bench/gpu/ab.py"]
        for v in "$ABVARS".split():
            args.append(f"{v}={B}/bench_{v} --quick --dims ${ABDIMS:-128} --pair {p} ${ABARGS:-}")
        subprocess.run(["python3"] + args)
PYEOF
fi
if echo "$MODE" | grep -q ncu; then
  for p in $NCUPAIRS; do
    ncu --clock-control none -k regex:attn_mma --launch-skip 2 --launch-count 1 --section SourceCounters \
        --section WarpStateStats --section InstructionStats --section SpeedOfLight --section SchedulerStats \
        --import-source yes -o $OUT/ncu$p $B/bench_${NCUVAR:-new} --quick --dims 128 --pair $p > $OUT/ncu$p.log 2>&1
    ncu -i $OUT/ncu$p.ncu-rep --page source --csv --print-source cuda > $OUT/src$p.csv 2>&1
    ncu -i $OUT/ncu$p.ncu-rep --page source --csv --print-source sass > $OUT/sass$p.csv 2>&1
    ncu -i $OUT/ncu$p.ncu-rep --page details > $OUT/det$p.txt 2>&1
    rm -f $OUT/ncu$p.ncu-rep
    grep -E "Duration|Issue Slots Busy|Executed Instructions  |DRAM Throughput" $OUT/det$p.txt
    wc -c $OUT/src$p.csv $OUT/sass$p.csv; head -c 600 $OUT/src$p.csv
  done
fi
