#!/usr/bin/env python3
"""summary.py CSV -- summarize a soak CSV (tests/soak/soak.c) as JSON: tokens
generated, duration, resident memory when the window had filled (first
sample at >= 2000 generated tokens) and at the end, and least-squares slopes
of resident memory (total and anonymous) per 1000 tokens over the samples
from there on; the cache's resident bytes and tokens held over those samples
(min and max)."""
import json
import sys


def slope(xs, ys):
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else None


def main():
    path = sys.argv[1]
    header, rows = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                header = line[1:].strip()
                continue
            if line.startswith("generated"):
                cols = line.strip().split(",")
                continue
            vals = line.strip().split(",")
            if len(vals) == len(cols):
                rows.append({c: float(v) for c, v in zip(cols, vals)})
    full = [r for r in rows if r["generated"] >= 2000]
    out = {
        "csv": path,
        "run": header,
        "command": "bash tests/soak/run-soak.sh 50000",
        "tokens_generated": int(rows[-1]["generated"]) if rows else 0,
        "seconds": rows[-1]["seconds"] if rows else 0,
        "samples": len(rows),
    }
    if full:
        xs = [r["generated"] / 1000.0 for r in full]
        out.update({
            "window_full_at_tokens": int(full[0]["generated"]),
            "rss_mib_at_window_full": round(full[0]["rss_bytes"] / 2**20, 2),
            "rss_mib_at_end": round(full[-1]["rss_bytes"] / 2**20, 2),
            "anon_rss_mib_at_window_full": round(full[0]["anon_rss_bytes"] / 2**20, 2),
            "anon_rss_mib_at_end": round(full[-1]["anon_rss_bytes"] / 2**20, 2),
            "rss_slope_kib_per_1000_tokens": None if len(full) < 2 else
                round(slope(xs, [r["rss_bytes"] for r in full]) / 1024, 3),
            "anon_rss_slope_kib_per_1000_tokens": None if len(full) < 2 else
                round(slope(xs, [r["anon_rss_bytes"] for r in full]) / 1024, 3),
            "cache_resident_bytes_min": int(min(r["cache_resident_bytes"] for r in full)),
            "cache_resident_bytes_max": int(max(r["cache_resident_bytes"] for r in full)),
            "cache_tokens_held_min": int(min(r["cache_tokens_held"] for r in full)),
            "cache_tokens_held_max": int(max(r["cache_tokens_held"] for r in full)),
        })
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
