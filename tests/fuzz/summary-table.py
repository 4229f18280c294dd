#!/usr/bin/env python3
"""summary-table.py LOGDIR SUMMARY [--json OUT] -- the fuzzing figures of
docs/SECURITY.md from the libFuzzer logs (build/fuzz/logs/NAME.log) and the
summary lines of tests/fuzz/run-fuzzers.sh (build/fuzz/summary.txt): per
harness the executions, rate, coverage (edges, cov) and features (ft) when
the seed corpus was loaded (INITED) and at the end, and when coverage last
grew (seconds into the run, from the execution count and mean rate), which
shows whether it had plateaued. Prints a markdown table; --json also writes
the numbers."""
import json
import os
import re
import sys

logdir, summary = sys.argv[1], sys.argv[2]
merged, secs = {}, {}
for line in open(summary):
    m = re.match(r"(\w+): (\d+)s rc=\d+ execs=\S+ exec/s=\S+ crashes=(\d+) merged_corpus=(\d+)", line)
    if m:
        secs[m.group(1)] = int(m.group(2))
        merged[m.group(1)] = (int(m.group(4)), int(m.group(3)))
stats = {}
for name in merged:
    path = os.path.join(logdir, name + ".log")
    if not os.path.exists(path):
        continue
    init = final = None
    last_cov_exec, prev_cov, execs, rate = 0, None, 0, 0
    for line in open(path):
        m = re.match(r"#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/", line)
        if m:
            n, kind, cov, ft, corp = int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))
            if kind == "INITED":
                init = (cov, ft, corp)
            if prev_cov is not None and cov > prev_cov:
                last_cov_exec = n
            prev_cov = cov
            final = (cov, ft, corp)
        m = re.match(r"stat::number_of_executed_units:\s+(\d+)", line)
        if m:
            execs = int(m.group(1))
        m = re.match(r"stat::average_exec_per_sec:\s+(\d+)", line)
        if m:
            rate = int(m.group(1))
    stats[name] = {
        "seconds": secs[name], "executions": execs, "exec_per_s": rate,
        "cov_start": init[0] if init else None, "ft_start": init[1] if init else None,
        "cov_end": final[0] if final else None, "ft_end": final[1] if final else None,
        "corpus_end": final[2] if final else None,
        "last_cov_gain_s": round(last_cov_exec / rate) if rate else None,
        "merged_corpus": merged[name][0], "crashes": merged[name][1],
    }
print("| harness | seconds | executions | exec/s | edges start → end | features start → end | coverage last grew at | crashes |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, s in stats.items():
    grew = "never (seed corpus saturates)" if s["last_cov_gain_s"] in (None, 0) and s["cov_start"] == s["cov_end"] \
        else f"{s['last_cov_gain_s']} s"
    print(f"| fuzz_{name} | {s['seconds']} | {s['executions']:,} | {s['exec_per_s']:,} | {s['cov_start']} → {s['cov_end']} "
          f"| {s['ft_start']} → {s['ft_end']} | {grew} | {s['crashes']} |")
if len(sys.argv) > 4 and sys.argv[3] == "--json":
    with open(sys.argv[4], "w") as f:
        json.dump(stats, f, indent=1)
