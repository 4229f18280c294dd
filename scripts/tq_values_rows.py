#!/usr/bin/env python3
"""tq_values_rows.py MODEL -- the cache configs of the quality tables
(figures/quality/MODEL-ppl*.json) whose turboquant_mse values changed
default in session 57 (qbits=8 at 1, 2 and 4 bits, head_dim permitting):
the values spec names no qbits, and its bits (2 when not given) or one of
the config's per-layer vbits is 1, 2 or 4. One config per line, in file order
(run_validation.sh ppl-qbits8tqv-MODEL measures them again)."""
import glob
import json
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def changed(cache):
    m = re.search(r"\bvalues=turboquant_mse(\S*)", cache)
    if not m or "qbits=" in m.group(1):
        return False
    b = re.search(r"[:,]bits=(\d+)", m.group(1))
    bits = {int(b.group(1)) if b else 2}
    v = re.search(r"\bvbits=([\d,]+)", cache)
    if v:
        bits = {int(x) for x in v.group(1).split(",")}
    return bool(bits & {1, 2, 4})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tq_values_rows.py MODEL")
    seen = set()
    for fn in sorted(glob.glob(os.path.join(ROOT, "figures/quality", f"{sys.argv[1]}-ppl*.json"))):
        with open(fn) as f:
            for c in json.load(f).get("configs", []):
                if changed(c["cache"]) and c["cache"] not in seen:
                    seen.add(c["cache"])
                    print(c["cache"])


if __name__ == "__main__":
    main()
