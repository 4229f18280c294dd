#!/usr/bin/env python3
"""table.py LOG -- the catalogue table of docs/SECURITY.md from the output of
build/tests/test_catalogue (build/logs/test_catalogue.log after `make test`):
one row per case with its exit status and the message it printed (paths of
the scratch directory shortened to their file name)."""
import re
import sys

print("| # | input | exit | message (first `veloxquant` line) |")
print("|---:|---|---:|---|")
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"case (\d+) (.{52}) exit\s+(-?\d+)  ?(.*)$", line.rstrip("\n"))
    if not m:
        continue
    msg = re.sub(r"/\S*/inputs/", "", m.group(4))
    msg = re.sub(r"/\S*/(inputs)\b", r"\1", msg).replace("|", "\\|")
    if len(msg) > 150:
        msg = msg[:147] + "..."
    print(f"| {int(m.group(1))} | {m.group(2).strip()} | {m.group(3)} | {msg} |")
