#!/usr/bin/env python3
"""issue9_targets.py -- issue 9's speed targets against one take of the CPU
benchmarks (a folder written by scripts/run_bench.sh and
scripts/bench_llamacpp.sh with VQ_BENCH_OUT=DIR, or figures/bench itself):
a markdown table, each row the target, what the take's files read and whether
it is met there. Nothing typed by hand: every figure comes from the JSON files
named in the row. Rows whose files are missing are left out.

Files read (when present): attention-d128-32l.json, attention-d64-32l.json
(bench attention, 16k, 32 layers), e2e-smollm2.json (bench e2e at 256 and
4,096 tokens), e2e-smollm2-16k.json, llamacpp-smollm2.json.

    python3 scripts/issue9_targets.py DIR
"""
import json
import os
import sys

# the default arithmetic of each named cache (scripts/run_bench.sh's lists)
FP16 = ("fp16", "fp16")
Q8 = ("q8_0:qbits=8", "q8_0")
Q4 = ("q4_0:rot=1,qbits=8", "q4_0:rot=1,qbits=8")
KIVI2 = ("kivi:bits=2,qbits=8", "kivi:bits=2,qbits=8")
RVQ_KIVI2 = ("turboquant_rvq:bits=1,qbits=4", "kivi:bits=2,qbits=8")
RABITQ = "rabitq:bits=1"
RVQ = "turboquant_rvq:bits=1,qbits=4"


def load(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def pct(x):
    return f"{100 * x:.0f}%"


def attn_row(res, kv):
    for r in res["result"]["results"]:
        if (r["keys"], r["values"]) == kv:
            return r
    return None


def e2e_rows(res, ctx):
    return [r for r in res["result"]["results"] if r["ctx"] == ctx]


def e2e_pick(rows, kv):
    want = f"keys={kv[0]} values={kv[1]}"
    for r in rows:
        if r["cache"] == want:
            return r
    return None


def yes(ok):
    return "met" if ok else "not met"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: issue9_targets.py DIR")
    d = sys.argv[1]
    a128, a64 = load(d, "attention-d128-32l.json"), load(d, "attention-d64-32l.json")
    e4, e16, ll = load(d, "e2e-smollm2.json"), load(d, "e2e-smollm2-16k.json"), load(d, "llamacpp-smollm2.json")
    out = ["| target | this take | |", "|---|---|---|"]

    if a128 and a64:
        cells, ok = [], True
        for name, kv in (("fp16", FP16), ("q8_0", Q8), ("q4_0:rot=1", Q4)):
            f = [attn_row(a, kv) for a in (a128, a64)]
            if None in f:
                continue
            ok &= all(x["fraction_of_bandwidth"] >= 0.70 for x in f)
            cells.append(f"{name} {pct(f[0]['fraction_of_bandwidth'])} / {pct(f[1]['fraction_of_bandwidth'])}")
        bw = f"{a128['result']['bandwidth_gbs']:.1f} / {a64['result']['bandwidth_gbs']:.1f} GB/s"
        out.append(f"| fp16, q8_0, q4_0 attention >= 70% of read bandwidth (16k, D 128 / 64; "
                   f"attention-d128-32l, -d64-32l) | {', '.join(cells)} (bandwidth {bw}) | {yes(ok)} |")
        named = {FP16, Q8, Q4, ("q8_0:qbits=0", "q8_0"), ("q4_0:rot=1,qbits=0", "q4_0:rot=1,qbits=0"),
                 ("q4_0:rot=1,qbits=8", "q4_0:rot=1,qbits=0")}
        for a, dd in ((a128, 128), (a64, 64)):
            others = [r for r in a["result"]["results"] if (r["keys"], r["values"]) not in named]
            lo = min(others, key=lambda r: r["fraction_of_bandwidth"])
            hi = max(others, key=lambda r: r["fraction_of_bandwidth"])
            n_ok = sum(r["fraction_of_bandwidth"] >= 0.5 for r in others)
            out.append(f"| other codecs >= 50% of bandwidth over their bytes (D {dd}) | "
                       f"{n_ok} of {len(others)} configs; lowest {pct(lo['fraction_of_bandwidth'])} "
                       f"(`{lo['config']}`), highest {pct(hi['fraction_of_bandwidth'])} (`{hi['config']}`) | "
                       f"{yes(n_ok == len(others))} |")
        for name, keys, goal in (("rabitq:bits=1", RABITQ, 5.0), ("turboquant_rvq:bits=1 (qbits=4)", RVQ, 5.0)):
            rs = [r["score_speedup_vs_fp16"] for r in a128["result"]["results"] if r["keys"] == keys]
            if rs:
                out.append(f"| {name} key scoring >= {goal:g}x fp16 (16k, D 128) | "
                           f"{min(rs):.2f}x to {max(rs):.2f}x (the {len(rs)} rows with these keys) | {yes(min(rs) >= goal)} |")
        r, r64 = attn_row(a128, RVQ_KIVI2), attn_row(a64, RVQ_KIVI2)
        if r:
            d64 = f" (D 64: {r64['speedup_vs_fp16']:.2f}x)" if r64 else ""
            out.append(f"| rvq-1 keys + KIVI-2 values, whole attention >= 3x fp16 (16k, D 128) | "
                       f"{r['speedup_vs_fp16']:.2f}x{d64} | {yes(r['speedup_vs_fp16'] >= 3.0)} |")

    for res, ctx, g4, gk in ((e4, 4096, 1.25, 1.35), (e16, 16384, 1.9, 2.3)):
        if not res:
            continue
        rows = e2e_rows(res, ctx)
        q, k, rk, fp = e2e_pick(rows, Q4), e2e_pick(rows, KIVI2), e2e_pick(rows, RVQ_KIVI2), e2e_pick(rows, FP16)
        if not (q and k and rk and fp):
            continue
        packed = [r for r in rows if r["cache"] not in ("float", "keys=fp16 values=fp16")]
        lo = min(packed, key=lambda r: r["fraction_of_floor"])
        n60 = sum(r["fraction_of_floor"] >= 0.60 for r in packed)
        ok = q["speedup_vs_fp16"] >= g4 and k["speedup_vs_fp16"] >= gk
        out.append(f"| e2e {ctx // 1024}k: q4_0:rot=1 >= {g4}x, KIVI-2 >= {gk}x the fp16 cache | "
                   f"{q['speedup_vs_fp16']:.2f}x, {k['speedup_vs_fp16']:.2f}x (rvq-1 + KIVI-2 "
                   f"{rk['speedup_vs_fp16']:.2f}x; fp16 {fp['decode_tok_s']:.1f} tok/s at "
                   f"{pct(fp['fraction_of_floor'])} of its floor; {res['result']['bandwidth_gbs']:.1f} GB/s) | {yes(ok)} |")
        out.append(f"| e2e {ctx // 1024}k: every cache >= 60% of its own floor | {n60} of {len(packed)}; lowest "
                   f"{pct(lo['fraction_of_floor'])} (`{lo['cache'][:60]}`) | {yes(n60 == len(packed))} |")

    if e16 and ll:
        ours = e2e_pick(e2e_rows(e16, 16384), KIVI2)
        peer = [r for r in ll["result"] if r.get("n_depth") == 16384 and r.get("n_gen", 0) > 0 and r.get("type_k") == "f16"]
        if ours and peer:
            best = max(peer, key=lambda r: r["avg_ts"])
            x = ours["decode_tok_s"] / best["avg_ts"]
            out.append(f"| 16k decode >= 3x llama.cpp's f16 cache (its faster of flash attention on / off) | "
                       f"KIVI-2 {ours['decode_tok_s']:.1f} against {best['avg_ts']:.1f} tok/s ({x:.1f}x) | {yes(x >= 3.0)} |")

    if e4:
        rows = e2e_rows(e4, 256)
        fl = next((r for r in rows if r["cache"] == "float"), None)
        if fl:
            rat = [(r["decode_tok_s"] / fl["decode_tok_s"], r["cache"]) for r in rows if r is not fl]
            lo, hi = min(rat), max(rat)
            n = sum(abs(x - 1.0) <= 0.10 or x > 1.0 for x, _ in rat)
            out.append(f"| empty context (256 tokens): every cache within 10% of the float cache | {n} of {len(rat)}; "
                       f"{lo[0]:.2f}x (`{lo[1][:60]}`) to {hi[0]:.2f}x | {yes(n == len(rat))} |")
        fp = e2e_pick(rows, FP16)
        if fp and ll:
            tg = max((r for r in ll["result"] if r.get("n_depth") == 0 and r.get("n_gen", 0) > 0 and r.get("type_k") == "f16"),
                     key=lambda r: r["avg_ts"], default=None)
            pp = max((r for r in ll["result"] if r.get("n_depth") == 0 and r.get("n_prompt", 0) > 0 and r.get("type_k") == "f16"),
                     key=lambda r: r["avg_ts"], default=None)
            if tg and pp:
                ok = fp["fraction_of_floor"] >= 0.70 and fp["prefill_tok_s"] >= 2.5 * 160 and fp["decode_tok_s"] >= tg["avg_ts"] \
                    and fp["prefill_tok_s"] >= pp["avg_ts"]
                out.append(f"| runtime: decode >= 70% of the weight floor, prefill >= 2.5x 160 tok/s, both >= llama.cpp | "
                           f"fp16 cache at 256 tokens: decode {fp['decode_tok_s']:.0f} tok/s at {pct(fp['fraction_of_floor'])} of "
                           f"its floor against llama.cpp's {tg['avg_ts']:.0f}; prefill {fp['prefill_tok_s']:.0f} against "
                           f"{pp['avg_ts']:.0f} (its pp512) | {yes(ok)} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
