#!/usr/bin/env python3
"""plots.py -- the report's SVG figures, written by hand (standard library only).

Reads figures/quality/quality.json (scripts/report.py) and the validate
results, writes:
  figures/memory_vs_context.svg   K+V bytes vs context per method and model:
                                  lines from the measured bytes per token
                                  (ppl run), markers = resident bytes the
                                  cache's allocator held in `validate` runs
  figures/dppl_vs_bits.svg        relative dPPL (log scale) vs bits/element
Usage: python3 scripts/plots.py
"""
import json
import math
import os
from xml.sax.saxutils import escape

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MB = 1024.0 * 1024.0
COLORS = {"fp16": "#000000", "q8_0": "#7f7f7f", "q4_0-rot": "#1f77b4", "KIVI-2": "#2ca02c",
          "RVQ-1bit": "#d62728", "RaBitQ-1bit": "#9467bd", "VecInfer-1bit": "#ff7f0e",
          "StreamingLLM-512": "#17becf"}


def color(name):
    return COLORS.get(name, "#8c564b")


def load(rel):
    p = os.path.join(ROOT, rel)
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


class Svg:
    def __init__(self, w, h):
        self.w, self.h, self.parts = w, h, []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="start", rotate=None, fill="#000"):
        tr = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
                 f' font-family="sans-serif"{tr}>{escape(str(s))}</text>')

    def line(self, x1, y1, x2, y2, stroke="#000", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"'
                 f' stroke-width="{width}"{d}/>')

    def polyline(self, pts, stroke, width=2, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        p = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        self.add(f'<polyline points="{p}" fill="none" stroke="{stroke}" stroke-width="{width}"{d}/>')

    def circle(self, x, y, r, fill, stroke="#000"):
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}" stroke="{stroke}"/>')

    def rect(self, x, y, w, h, fill="#fff", stroke="none"):
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" stroke="{stroke}"/>')

    def save(self, rel):
        p = os.path.join(ROOT, rel)
        body = "\n".join(self.parts)
        s = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
             f'viewBox="0 0 {self.w} {self.h}">\n<rect width="100%" height="100%" fill="#fff"/>\n{body}\n</svg>\n')
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            f.write(s)
        os.replace(p + ".tmp", p)


def nice_ticks(lo, hi, n=5):
    span = hi - lo
    if span <= 0:
        return [lo]
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t, out = math.ceil(lo / step) * step, []
    while t <= hi + 1e-9:
        out.append(t)
        t += step
    return out


def kv_bytes(m, ctx):
    held = ctx
    if m.get("evicts") and m.get("evict_budget"):
        held = min(ctx, m["evict_budget"])
    w = m.get("window") or 0
    wheld = min(held, w) if w > 0 else held
    return m["kv_bytes_per_token_full"] * held + m["kv_bytes_per_token_window"] * wheld + m["kv_fixed_bytes"]


def memory_plot(qual):
    models = qual["models"]
    pw, ph, ml, mt = 460, 330, 70, 40
    svg = Svg(pw * max(1, len(models)) + 160, ph + 110)
    svg.text(20, 22, "K+V cache bytes vs context (lines: measured bytes/token x tokens; dots: resident bytes in validate runs)", 14)
    for i, q in enumerate(models):
        x0, y0 = i * pw + ml, mt + 10
        w, h = pw - ml - 20, ph - 40
        xmax = 8192
        ymax = max(kv_bytes(m, xmax) for m in q["methods"]) / MB * 1.05
        sx = lambda c: x0 + w * c / xmax
        sy = lambda b: y0 + h - h * b / ymax
        svg.rect(x0, y0, w, h, stroke="#999")
        for t in nice_ticks(0, xmax):
            svg.line(sx(t), y0 + h, sx(t), y0 + h + 4)
            svg.text(sx(t), y0 + h + 16, f"{t:g}", 10, "middle")
        for t in nice_ticks(0, ymax):
            svg.line(x0 - 4, sy(t), x0 + w, sy(t), "#ddd")
            svg.text(x0 - 6, sy(t) + 4, f"{t:g}", 10, "end")
        svg.text(x0 + w / 2, y0 + h + 34, f'{q["model"]}: context (tokens)', 12, "middle")
        svg.text(x0 - 48, y0 + h / 2, "K+V MB", 12, "middle", rotate=-90)
        for m in q["methods"]:
            pts = [(sx(c), sy(kv_bytes(m, c) / MB)) for c in range(0, xmax + 1, 128)]
            svg.polyline(pts, color(m["name"]), 2, "6,3" if m.get("evicts") else None)
        for rel in (f'figures/validation/{q["model"]}/results.json', f'figures/validation-long/{q["model"]}/results.json'):
            r = load(rel)
            for a in (r or {}).get("arms", []):
                if "error" in a:
                    continue
                svg.circle(sx(a["tokens_in_cache_max"]), sy(a["resident_kv_bytes"] / MB), 4, color(a["name"]))
    lx = pw * max(1, len(models)) + 10
    for j, m in enumerate(models[0]["methods"] if models else []):
        y = mt + 20 + 18 * j
        svg.line(lx, y, lx + 22, y, color(m["name"]), 3)
        svg.text(lx + 28, y + 4, m["name"], 11)
    svg.save("figures/memory_vs_context.svg")


def dppl_plot(qual):
    W, H, ml, mt, w, h = 720, 440, 80, 50, 480, 320
    svg = Svg(W, H)
    svg.text(20, 24, "Relative dPPL vs fp16 (log scale) against bits per element (K and V averaged, metadata included)", 13)
    pts = []
    for q in qual["models"]:
        for m in q["methods"]:
            if m["name"] == "fp16":
                continue
            rel = 100.0 * m["dppl"] / q["ppl_fp16"]
            pts.append((q["model"], m["name"], m["bits_per_element"], max(rel, 0.01)))
    if not pts:
        svg.text(ml, mt + 20, "no quality measurements yet", 12)
        svg.save("figures/dppl_vs_bits.svg")
        return
    xmax = max(16.0, max(p[2] for p in pts))
    lo, hi = -2, max(1, math.ceil(math.log10(max(p[3] for p in pts))))
    sx = lambda b: ml + w * b / xmax
    sy = lambda r: mt + h - h * (math.log10(r) - lo) / (hi - lo)
    svg.rect(ml, mt, w, h, stroke="#999")
    for t in nice_ticks(0, xmax):
        svg.line(sx(t), mt + h, sx(t), mt + h + 4)
        svg.text(sx(t), mt + h + 16, f"{t:g}", 10, "middle")
    for e in range(lo, hi + 1):
        svg.line(ml - 4, sy(10 ** e), ml + w, sy(10 ** e), "#ddd")
        svg.text(ml - 6, sy(10 ** e) + 4, f"{10 ** e:g}%", 10, "end")
    svg.line(ml, sy(2), ml + w, sy(2), "#2ca02c", 1, "4,3")
    svg.text(ml + w - 4, sy(2) - 4, "2% (good)", 10, "end", fill="#2ca02c")
    svg.line(ml, sy(10), ml + w, sy(10), "#d62728", 1, "4,3")
    svg.text(ml + w - 4, sy(10) - 4, "10% (fair)", 10, "end", fill="#d62728")
    svg.text(ml + w / 2, mt + h + 36, "bits per element", 12, "middle")
    svg.text(ml - 55, mt + h / 2, "dPPL / PPL(fp16), clipped at 0.01%", 12, "middle", rotate=-90)
    models = sorted({p[0] for p in pts})
    for model, name, b, r in pts:
        x, y = sx(b), sy(r)
        if models.index(model) == 0:
            svg.circle(x, y, 5, color(name))
        else:
            svg.add(f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{color(name)}" stroke="#000"/>')
        svg.text(x + 7, y - 5, name, 9)
    lx = ml + w + 20
    for j, model in enumerate(models):
        y = mt + 10 + 18 * j
        if j == 0:
            svg.circle(lx + 5, y, 5, "#fff")
        else:
            svg.rect(lx, y - 5, 10, 10, "#fff", "#000")
        svg.text(lx + 16, y + 4, model, 11)
    svg.save("figures/dppl_vs_bits.svg")


def main():
    qual = load("figures/quality/quality.json")
    if qual is None:
        raise SystemExit("plots.py: figures/quality/quality.json missing (run scripts/report.py first)")
    memory_plot(qual)
    dppl_plot(qual)
    print("plots.py: wrote figures/memory_vs_context.svg, figures/dppl_vs_bits.svg")


if __name__ == "__main__":
    main()
