#!/usr/bin/env python3
"""plot.py CSV SVG -- the soak figure (standard library only): process
resident memory, its anonymous part (heap; the mapped model file excluded)
and the cache's resident bytes against generated tokens, from a CSV of
tests/soak/soak.c."""
import sys
from xml.sax.saxutils import escape

MB = 1024.0 * 1024.0


def main():
    src, dst = sys.argv[1], sys.argv[2]
    cols, rows, title = None, [], ""
    for line in open(src):
        if line.startswith("#"):
            title = line[1:].strip()
        elif line.startswith("generated"):
            cols = line.strip().split(",")
        elif cols:
            v = line.strip().split(",")
            if len(v) == len(cols):
                rows.append({c: float(x) for c, x in zip(cols, v)})
    series = [("process resident (RSS)", "rss_bytes", "#1f77b4"),
              ("anonymous resident (heap)", "anon_rss_bytes", "#d62728"),
              ("cache resident bytes", "cache_resident_bytes", "#2ca02c")]
    W, H, L, R, T, B = 760, 420, 70, 20, 40, 50
    xmax = max(r["generated"] for r in rows) or 1
    ymax = max(max(r[k] for r in rows) for _, k, _ in series) / MB * 1.1
    def X(x): return L + (W - L - R) * x / xmax
    def Y(y): return H - B - (H - T - B) * y / ymax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">{escape(title[:110])}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for i in range(6):
        y = ymax * i / 5
        out.append(f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end">{y:.0f}</text>')
        out.append(f'<line x1="{L}" y1="{Y(y):.1f}" x2="{W - R}" y2="{Y(y):.1f}" stroke="#ddd"/>')
        x = xmax * i / 5
        out.append(f'<text x="{X(x):.1f}" y="{H - B + 16}" text-anchor="middle">{x:.0f}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">generated tokens</text>')
    out.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" '
               f'text-anchor="middle">MiB</text>')
    for i, (name, key, col) in enumerate(series):
        pts = " ".join(f"{X(r['generated']):.1f},{Y(r[key] / MB):.1f}" for r in rows)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{col}" stroke-width="2"/>')
        out.append(f'<text x="{W - R - 200}" y="{T + 16 + 16 * i}" fill="{col}">{escape(name)}</text>')
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
