#!/usr/bin/env python3
"""abtable.py -- markdown tables of the medians in an A/B file of ab.py lines
(figures/bench/gpuN-ab.txt): one table per '# call N' block, a row per pair
and shape, a column per label. Not part of the benchmark.

    python3 bench/gpu/abtable.py figures/bench/gpu12-ab.txt [--skip fp16,q8_0,vecinfer]
"""
import re
import statistics
import sys

LINE = re.compile(r"^\s*(\S+)\s+(\S+?)\s*/\s*(\S+)\s+D=\s*(\d+)\s+(\d+)x(\d+)\s+([0-9.]+) ms")


def short(spec):
    """a readable pair name: 'kivi:bits=2,group=32' -> 'kivi2'"""
    m = re.search(r"[:,]bits=(\d)", spec)
    name = spec.split(":")[0]
    if name == "vecinfer":  # (ab.py cuts the spec short)
        return name
    if name == "kivi" and m:
        return "kivi" + m.group(1)
    if name in ("turboquant_rvq", "rabitq") and m:
        return ("rvq" if name == "turboquant_rvq" else "rabitq") + m.group(1)
    return spec.replace(":rot=1", "-rot").replace(":rot=0", "")


def main():
    path = sys.argv[1]
    skip = []
    if "--skip" in sys.argv:
        skip = sys.argv[sys.argv.index("--skip") + 1].split(",")
    calls, cur = [], None
    for line in open(path):
        if re.match(r"^# call \d+\s*$", line):
            cur = {"name": line[2:].strip(), "rows": {}, "labels": []}
            calls.append(cur)
            continue
        m = LINE.match(line)
        if not m or cur is None:
            continue
        label, k, v, d, ctx, b, ms = m.groups()
        pair = short(k) + ("" if short(k) == short(v) else "/" + short(v))
        if any(pair.startswith(s) for s in skip):
            continue
        if label not in cur["labels"]:
            cur["labels"].append(label)
        key = (pair, int(d), int(ctx), int(b))
        cur["rows"].setdefault(key, {}).setdefault(label, []).append(float(ms))
    for c in calls:
        print(f"{c['name']}: medians in ms (readings per cell in parentheses where more than one)\n")
        print("| pair | shape | " + " | ".join(c["labels"]) + " |")
        print("|---|---|" + "---|" * len(c["labels"]))
        dims = {k[1] for k in c["rows"]}  # the head size shown where the call has several
        for (pair, d, ctx, b), by in sorted(c["rows"].items(), key=lambda x: (x[0][2] * x[0][3], x[0][2], x[0][0], -x[0][1])):
            cells = []
            for lab in c["labels"]:
                xs = by.get(lab, [])
                cells.append("" if not xs else f"{statistics.median(xs):.4f}" + (f" ({len(xs)})" if len(xs) > 1 else ""))
            shape = f"{ctx // 1024}k x {b}" + (f", D={d}" if len(dims) > 1 else "")
            print(f"| {pair} | {shape} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
