#!/usr/bin/env bash
# run-fuzzers.sh [SECONDS] [NAME...] -- run the libFuzzer harnesses one at a
# time (one process, no -jobs/-workers fork mode, niced), each for SECONDS (default 300), starting from
# the committed corpus; new inputs go to build/fuzz/work/NAME, crashes to
# build/fuzz/crashes/NAME/. Afterwards each work corpus is merged (-merge=1,
# coverage-minimal) into build/fuzz/merged/NAME; copy what is worth keeping
# into tests/fuzz/corpus/NAME/. One line per harness goes to
# build/fuzz/summary.txt: executions, exec/s, coverage (cov) and features
# (ft) at the end, corpus size, crashes. Needs `make fuzz` first.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${1:-300}
shift || true
names=${*:-gguf model config spec cache calib tokenizer}
mkdir -p build/fuzz/work build/fuzz/crashes build/fuzz/merged build/fuzz/logs
for n in $names; do
    bin=build/fuzz/fuzz/fuzz_$n
    [ -x "$bin" ] || { echo "missing $bin (run make fuzz)"; exit 1; }
    mkdir -p "build/fuzz/work/$n" "build/fuzz/crashes/$n"
    log=build/fuzz/logs/$n.log
    nice -n 10 "$bin" "build/fuzz/work/$n" "tests/fuzz/corpus/$n" -max_total_time="$secs" \
        -rss_limit_mb=2048 -timeout=10 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/crashes/$n/" >"$log" 2>&1
    rc=$?
    last=$(grep -E '#[0-9]+.*(cov|ft):' "$log" | tail -n 1)
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
    crashes=$(ls "build/fuzz/crashes/$n" | wc -l)
    rm -rf "build/fuzz/merged/$n"; mkdir -p "build/fuzz/merged/$n"
    nice -n 10 "$bin" -merge=1 "build/fuzz/merged/$n" "tests/fuzz/corpus/$n" "build/fuzz/work/$n" \
        -rss_limit_mb=2048 -timeout=10 >/dev/null 2>&1
    kept=$(ls "build/fuzz/merged/$n" | wc -l)
    line="$n: ${secs}s rc=$rc execs=${execs:-?} exec/s=${rate:-?} crashes=$crashes merged_corpus=$kept last: ${last:-?}"
    echo "$line" | tee -a build/fuzz/summary.txt
done
