#!/usr/bin/env python3
"""medians.py -- the medians of an alternated A/B of bench_gpu runs: lines
"LABEL rN {bench_gpu's JSON row}" (the session-57/58 device scripts' bench.txt),
one row per pair and shape, each label's median (min-max) over its rounds and
the ratio of the second label's median to the first's. Not part of the benchmark.

    python3 bench/gpu/medians.py FILE [FILE...]
"""
import json
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^(\S+) r(\d+) (\{.*\})\s*$")


def main():
    rows = defaultdict(lambda: defaultdict(list))
    labels = []
    for path in sys.argv[1:]:
        with open(path) as f:
            for line in f:
                m = LINE.match(line)
                if not m or "copy_bandwidth" in line:
                    continue
                d = json.loads(m.group(3))
                if m.group(1) not in labels:
                    labels.append(m.group(1))
                rows[(d["keys"], d["values"], d["head_dim"], d["ctx"], d["batch"])][m.group(1)].append(d["ms"])
    if len(labels) < 2:
        sys.exit("medians.py: need two labels")
    a, b = labels[0], labels[1]
    print(f"| keys | values | D | ctx x batch | {a} ms (rounds) | {b} ms | {b} / {a} |")
    print("|---|---|---|---|---|---|---|")
    for k in sorted(rows, key=lambda k: (k[0], -k[2], k[3], k[4])):
        cell = []
        for lab in (a, b):
            t = rows[k][lab]
            cell.append(f"{statistics.median(t):.5f} ({min(t):.5f}-{max(t):.5f}, {len(t)})" if t else "-")
        ta, tb = rows[k][a], rows[k][b]
        ratio = f"{statistics.median(tb) / statistics.median(ta):.3f}" if ta and tb else "-"
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} x {k[4]} | {cell[0]} | {cell[1]} | {ratio} |")


if __name__ == "__main__":
    main()
