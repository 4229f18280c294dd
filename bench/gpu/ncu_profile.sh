#!/bin/sh
# ncu_profile.sh -- Nsight Compute on the split kernel at one shape (GPU
# machine; not part of the benchmark). For each --pair index given, one
# profiled launch of attn_mma (after 2 unprofiled ones) with the speed of
# light, warp-state (stall reasons per issued instruction), scheduler,
# instruction-mix and pipe-utilisation numbers, written to DIR/ncu_PAIR.txt.
#
#   sh bench/gpu/ncu_profile.sh DIR "4 6 0" [bench_gpu arguments]
#
# Pair indices: bench/gpu/bench_gpu.cu's pairs[] (0 fp16, 4 kivi2, 6 rvq1/kivi2).
set -e
DIR=$1; PAIRS=$2; shift 2
BIN=${BIN:-build/cuda/bench_gpu}
for p in $PAIRS; do
    ncu --clock-control none -k regex:attn_mma --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis \
        --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active' \
        $BIN --quick --dims 128 --pair $p "$@" > $DIR/ncu_$p.txt 2>&1 || echo "ncu pair $p failed"
    grep -E "Duration|Issue Slots Busy|DRAM Throughput|Executed Instructions  |stalled_.*ratio|pipe_.*pct" $DIR/ncu_$p.txt \
        | awk '$NF+0 > 0.05 || /Duration|Issue|DRAM|Executed/' | head -40
done
