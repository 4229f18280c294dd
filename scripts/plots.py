#!/usr/bin/env python3
"""plots.py -- the report's figures, drawn with matplotlib.

Reads figures/quality/quality.json (written by scripts/report.py) and the
`validate` results, writes (the names docs/validation-report.md links to):
  figures/memory_vs_context.svg   K+V MB vs context per method, one panel per
                                  model: lines = measured bytes per token
                                  (ppl runs) x tokens held (dashed: the cache
                                  evicts), dots = resident bytes the cache's
                                  allocator held at the end of `validate` runs
  figures/dppl_vs_bits.svg        relative dPPL vs fp16 (log scale) against
                                  bits per element, one panel per model
matplotlib (pinned in scripts/plots-requirements.txt) comes from PyPI into a
venv at build/plotvenv, made on the first run; the script re-runs itself
there. The SVGs are reproducible (no date, fixed ids, text as paths).
Usage: python3 scripts/plots.py
"""
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
VENV = os.path.join(ROOT, "build", "plotvenv")
REQS = os.path.join(ROOT, "scripts", "plots-requirements.txt")
MB = 1024.0 * 1024.0
CTX_MAX = 8192

# the report's named methods keep one colour in every figure
COLORS = {"fp16": "#000000", "q8_0": "#7f7f7f", "q4_0-rot": "#1f77b4", "KIVI-2": "#2ca02c",
          "RVQ-1bit": "#d62728", "RaBitQ-1bit": "#9467bd", "VecInfer-1bit": "#ff7f0e",
          "StreamingLLM-512": "#17becf"}
# the rest (the low-bit configs) take these in order
EXTRA_COLORS = ["#8c564b", "#e377c2", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"]
MARKERS = "osD^vP*XhpH<>d"


def ensure_matplotlib():
    """Import matplotlib, or re-run this script in build/plotvenv after
    installing the pinned requirements there."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    py = os.path.join(VENV, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(py):
        raise SystemExit(f"plots.py: matplotlib missing in {VENV} (remove it and run again)")
    stamp = os.path.join(VENV, ".installed")
    if not (os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(REQS)):
        if not os.path.exists(py):
            subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", REQS])
        with open(stamp, "w", encoding="utf-8"):
            pass
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def load(rel):
    p = os.path.join(ROOT, rel)
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def styles(qual):
    """name -> (colour, marker), the same in both figures and panels"""
    names = []
    for q in qual["models"]:
        for m in q["methods"]:
            if m["name"] not in names:
                names.append(m["name"])
    out, extra = {}, 0
    for i, n in enumerate(names):
        if n in COLORS:
            c = COLORS[n]
        else:
            c = EXTRA_COLORS[extra % len(EXTRA_COLORS)]
            extra += 1
        out[n] = (c, MARKERS[i % len(MARKERS)])
    return out


def kv_bytes(m, ctx):
    """K+V bytes held at ctx tokens: full-attention layers hold every token
    (or the eviction budget), window layers at most their window."""
    held = ctx
    if m.get("evicts") and m.get("evict_budget"):
        held = min(ctx, m["evict_budget"])
    w = m.get("window") or 0
    wheld = min(held, w) if w > 0 else held
    return m["kv_bytes_per_token_full"] * held + m["kv_bytes_per_token_window"] * wheld + m["kv_fixed_bytes"]


def save(fig, rel):
    p = os.path.join(ROOT, rel)
    fig.savefig(p + ".tmp", format="svg", metadata={"Date": None})
    os.replace(p + ".tmp", p)


def shared_legend(fig, handles, labels, ncol):
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)


def memory_plot(plt, qual, st):
    models = qual["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 6.4), squeeze=False)
    seen = {}
    for ax, q in zip(axes[0], models):
        xs = list(range(0, CTX_MAX + 1, 64))
        for m in q["methods"]:
            c, mk = st[m["name"]]
            (ln,) = ax.plot(xs, [kv_bytes(m, x) / MB for x in xs], color=c, lw=1.6,
                            ls="--" if m.get("evicts") else "-", marker=mk, ms=4, markevery=(8, 16),
                            label=m["name"])
            seen.setdefault(m["name"], ln)
        for rel, mk in ((f'figures/validation/{q["model"]}/results.json', "o"),
                        (f'figures/validation-long/{q["model"]}/results.json', "s")):
            r = load(rel)
            for a in (r or {}).get("arms", []):
                if "error" in a or a["name"] not in st:
                    continue
                ax.plot(a["tokens_in_cache_max"], a["resident_kv_bytes"] / MB, mk, color=st[a["name"]][0],
                        mec="black", mew=0.6, ms=5, zorder=3)
        ax.set_title(f'{q["model"]} ({q["n_layers"]} layers, {q["n_kv_heads"]} KV heads, head_dim {q["head_dim"]})',
                     fontsize=10)
        ax.set_xlabel("context (tokens held)")
        ax.set_ylabel("K+V cache (MB)")
        ax.set_xlim(0, CTX_MAX)
        ax.set_ylim(bottom=0)
        ax.grid(True, color="#dddddd", lw=0.6)
    fig.suptitle("K+V cache size vs context. Lines: measured bytes per token (metadata and index included) x "
                 "tokens held (dashed: evicting).\nDots: resident bytes the cache held at the end of validate runs "
                 "(circles: short run, squares: long run).", fontsize=9)
    shared_legend(fig, list(seen.values()), list(seen.keys()), 4)
    fig.tight_layout(rect=(0, 0.16, 1, 0.94))
    save(fig, "figures/memory_vs_context.svg")


def dppl_plot(plt, qual, st):
    models = qual["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(6.2 * len(models), 6.0), squeeze=False, sharey=True)
    seen = {}
    lo = 0.01  # relative dPPL below 0.01 % (or negative) is drawn at 0.01 %
    for ax, q in zip(axes[0], models):
        for m in q["methods"]:
            if m["name"] == "fp16":
                continue
            rel = 100.0 * m["dppl"] / m.get("ppl_fp16", q["ppl_fp16"])
            c, mk = st[m["name"]]
            h = ax.scatter([m["bits_per_element"]], [max(rel, lo)], color=c, marker=mk, s=46, edgecolors="black",
                           linewidths=0.5, zorder=3, label=m["name"])
            seen.setdefault(m["name"], h)
        ax.set_yscale("log")
        ax.axhline(2, color="#2ca02c", ls="--", lw=1)
        ax.axhline(10, color="#d62728", ls="--", lw=1)
        ax.text(0.99, 2, "2 % (good)", color="#2ca02c", fontsize=8, ha="right", va="bottom",
                transform=ax.get_yaxis_transform())
        ax.text(0.99, 10, "10 % (fair)", color="#d62728", fontsize=8, ha="right", va="bottom",
                transform=ax.get_yaxis_transform())
        ax.set_xlim(0, 16)
        ax.set_title(f'{q["model"]} (fp16 PPL {q["ppl_fp16"]:.2f}, ctx {q["ctx"]})', fontsize=10)
        ax.set_xlabel("bits per element (K and V averaged, metadata included)")
        ax.grid(True, which="major", color="#dddddd", lw=0.6)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g} %"))
    axes[0][0].set_ylabel("dPPL / PPL(fp16), log scale (below 0.01 % drawn at 0.01 %)")
    fig.suptitle("Perplexity cost vs bits per element (WikiText-2; each row against the fp16 run it was measured with)",
                 fontsize=10)
    shared_legend(fig, list(seen.values()), list(seen.keys()), 4)
    fig.tight_layout(rect=(0, 0.16, 1, 0.95))
    save(fig, "figures/dppl_vs_bits.svg")


def main():
    ensure_matplotlib()
    import matplotlib
    matplotlib.use("svg")
    matplotlib.rcParams.update({"svg.hashsalt": "veloxquant", "svg.fonttype": "path", "font.family": "DejaVu Sans"})
    import matplotlib.pyplot as plt

    qual = load("figures/quality/quality.json")
    if qual is None or not qual.get("models"):
        raise SystemExit("plots.py: figures/quality/quality.json missing or empty (run scripts/report.py first)")
    st = styles(qual)
    memory_plot(plt, qual, st)
    dppl_plot(plt, qual, st)
    print(f"plots.py: wrote figures/memory_vs_context.svg, figures/dppl_vs_bits.svg (matplotlib {matplotlib.__version__})")


if __name__ == "__main__":
    main()
