#!/usr/bin/env python3
"""readme_perf.py -- the README's performance tables, regenerated from the
committed benchmark JSON (figures/bench/e2e-smollm2.json and, when present,
figures/bench/e2e-smollm2-16k.json, e2e-smollm2-avx2.json, e2e-smollm2-prerope-avx2.json,
e2e-smollm2-16k-avx2.json,
llamacpp-smollm2.json and llamacpp-smollm2-avx2.json) through scripts/bench_tables.py, between
the <!-- BEGIN:perf ... --> and <!-- END:perf --> markers. Nothing typed by hand.

usage: python3 scripts/readme_perf.py
"""
import io
import os
import re
import sys
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_tables  # noqa: E402


def main():
    files = [os.path.join("figures", "bench", f) for f in ("e2e-smollm2.json", "e2e-smollm2-16k.json", "e2e-smollm2-avx2.json", "e2e-smollm2-prerope-avx2.json", "e2e-smollm2-16k-avx2.json", "llamacpp-smollm2.json", "llamacpp-smollm2-avx2.json")]
    files = [f for f in files if os.path.exists(os.path.join(ROOT, f))]
    buf = io.StringIO()
    with redirect_stdout(buf):
        os.chdir(ROOT)
        bench_tables.main(files)
    body = buf.getvalue().strip()
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        text = f.read()
    pat = re.compile(r"(<!-- BEGIN:perf[^\n]*-->\n).*?(\n<!-- END:perf -->)", re.S)
    if not pat.search(text):
        sys.exit("readme_perf.py: no BEGIN:perf / END:perf markers in README.md")
    text = pat.sub(lambda m: m.group(1) + body + m.group(2), text)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
