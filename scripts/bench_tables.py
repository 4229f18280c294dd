#!/usr/bin/env python3
"""bench_tables.py -- markdown tables from the JSON of `veloxquant bench`.

usage: scripts/bench_tables.py FILE.json [FILE.json ...]

Each file is the --json output of `veloxquant bench attention` or
`veloxquant bench e2e` (the schema field tells which), optionally wrapped by
scripts/run_bench.sh in {"command": ..., "load": ..., "result": {...}}, or
scripts/bench_llamacpp.sh's {"commands": [...], "load": ..., "result": [rows
of llama-bench -o json]}.
Prints one table per file to stdout; nothing is typed by hand.
"""
import json
import sys


def fmt(x, nd=2):
    return f"{x:.{nd}f}"


def scaling(r):
    """the run's thread scaling (files from before it was measured: nothing)"""
    s = r.get("thread_scaling")
    return f"; thread scaling {fmt(s)}x of {r['threads']} (1.0: the threads share one core)" if s else ""


def attention_table(r):
    out = []
    layers = r.get("layers", 1)
    out.append(f"CPU {r['cpu']}, {r['threads']} thread(s); {r['kv_heads']} KV heads, {r['q_heads']} query heads, "
               f"head_dim {r['head_dim']}; {layers} layer(s) attended per step (times and MB per layer); "
               f"memory read bandwidth {fmt(r['bandwidth_gbs'], 1)} GB/s{scaling(r)}")
    out.append("")
    out.append("| keys | values | ctx | KV MB | ms/token | GB/s | of memory BW | of cached read | vs fp16 | "
               "key scoring ms | scoring vs fp16 |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for x in r["results"]:
        out.append(f"| `{x['keys']}` | `{x['values']}` | {x['ctx']} | {fmt(x['kv_bytes'] / 1e6)} | "
                   f"{fmt(x['ms_per_token'], 3)} | {fmt(x['gbs'])} | {fmt(100 * x['fraction_of_bandwidth'], 0)}% | "
                   f"{fmt(100 * x.get('fraction_of_cached_bandwidth', 0), 0)}% | {fmt(x['speedup_vs_fp16'])}x | "
                   f"{fmt(x['score_ms_per_token'], 3)} | {fmt(x['score_speedup_vs_fp16'])}x |")
    return out


def e2e_table(r):
    out = []
    out.append(f"{r['model']}, CPU {r['cpu']}, {r['threads']} thread(s); weights {fmt(r['weight_bytes'] / 1e6, 1)} MB; "
               f"memory read bandwidth {fmt(r['bandwidth_gbs'], 1)} GB/s{scaling(r)}; "
               f"decode = {r['decode_tokens']} greedy tokens")
    out.append("")
    # the slowest decode step: in runs since session 32 only
    step = all("decode_step_max_ms" in x for x in r["results"])
    out.append("| cache | ctx | prefill tok/s | decode tok/s | KV MB | floor tok/s | of floor | decode vs fp16 |"
               + (" slowest step ms |" if step else ""))
    out.append("|---|---|---|---|---|---|---|---|" + ("---|" if step else ""))
    for x in r["results"]:
        out.append(f"| `{x['cache']}` | {x['ctx']} | {fmt(x['prefill_tok_s'], 1)} | {fmt(x['decode_tok_s'])} | "
                   f"{fmt(x['kv_bytes'] / 1e6)} | {fmt(x['floor_tok_s'], 1)} | "
                   f"{fmt(100 * x['fraction_of_floor'], 0)}% | {fmt(x['speedup_vs_fp16'])}x |"
                   + (f" {fmt(x['decode_step_max_ms'])} |" if step else ""))
    return out


def llamacpp_table(rows):
    out = ["llama.cpp CPU backend (llama-bench), same GGUF file and threads; t/s = tokens per second, "
           "mean of the repetitions", "",
           "| test | depth (tokens already in the cache) | K/V cache | flash attention | threads | t/s |",
           "|---|---|---|---|---|---|"]
    for x in rows:
        test = f"pp{x['n_prompt']}" if x.get("n_prompt") else f"tg{x['n_gen']}"
        out.append(f"| {test} | {x.get('n_depth', 0)} | {x.get('type_k', '?')}/{x.get('type_v', '?')} | "
                   f"{'on' if x.get('flash_attn') else 'off'} | {x.get('n_threads')} | {fmt(x['avg_ts'])} |")
    return out


def main(paths):
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        r = doc.get("result", doc)
        lines = [f"### {p}", ""]
        if "command" in doc:
            lines += ["```", doc["command"], "```", ""]
        for c in doc.get("commands", []):
            lines += ["```", c, "```", ""]
        if "load" in doc:
            lines += [f"load average before the run: {doc['load']}", ""]
        schema = r.get("schema", "") if isinstance(r, dict) else "llama-bench"
        if schema == "llama-bench":
            lines += llamacpp_table(r)
        elif schema.startswith("veloxquant.bench-attention"):
            lines += attention_table(r)
        elif schema.startswith("veloxquant.bench-e2e"):
            lines += e2e_table(r)
        else:
            sys.exit(f"{p}: unknown schema {schema!r}")
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
