#!/usr/bin/env python3
"""report.py -- tables of docs/validation-report.md from the committed JSON.

Reads (all optional; a missing file leaves a note in its table):
  figures/bench/e2e-*.json                     `veloxquant bench e2e --json`: a method's
                                               decode speed against fp16 (recommend --goal speed)
  figures/validation/MODEL/results.json        `veloxquant validate` (short context)
  figures/validation-long/MODEL/results.json   `veloxquant validate --prompt-repeat R`
  figures/quality/MODEL-ppl.json               `veloxquant ppl ... --cache ... --json`
  figures/quality/MODEL-needle.json            `veloxquant needle ... --json`
  figures/quality/MODEL-ppl-cross.json         `veloxquant ppl` of the cross-layer
                                               methods (section 9)
Writes:
  figures/quality/quality.json   the quality table `veloxquant recommend` reads
                                 (schema veloxquant.quality/1)
  docs/validation-report.md      the text between <!-- BEGIN:NAME --> and
                                 <!-- END:NAME --> markers is replaced by the
                                 generated table NAME; the rest is left alone.
Plain Python 3, standard library only (the figures are scripts/plots.py's).
Usage: python3 scripts/report.py
"""
import json
import math
import os
import re
import shlex
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MODELS = ["smollm2-135m", "gemma3-270m"]
MB = 1024.0 * 1024.0
SPEED_CTX = 4096  # the context of the decode speeds quality.json carries

# display names of the cache configs of scripts/run_validation.sh
NAMES = [
    ("q8_0", r"^keys=q8_0 values=q8_0$"),
    ("q4_0-rot", r"^keys=q4_0:rot=1 values=q4_0:rot=1$"),
    ("KIVI-2", r"^keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32$"),
    ("RVQ-1bit", r"^keys=turboquant_rvq:bits=1 values=fp16$"),
    ("RaBitQ-1bit", r"^keys=rabitq:bits=1 values=q4_0:rot=1$"),
    ("VecInfer-1bit", r"^keys=vecinfer:sub_dim=8,bits=8,calib=\S+ values=fp16$"),
    ("StreamingLLM-512", r"^keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=4,window=512$"),
    ("fp16", r"^keys=fp16 values=fp16$"),
]


def short_spec(spec):
    """'kivix:bits=3,group=128,outliers=64' -> 'kivix3g128o64'"""
    meth, _, params = spec.partition(":")
    kv = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
    out = {"turboquant_rvq": "rvq", "turboquant_mse": "tqmse", "turboquant_prod": "tqprod"}.get(meth, meth)
    if "bits" in kv:
        out += kv["bits"]
    if "group" in kv:
        out += "g" + kv["group"]
    if kv.get("outliers", "0") != "0":
        out += "o" + kv["outliers"]
    if kv.get("rot") == "1":
        out += "-rot"
    if kv.get("nu", "0") != "0":
        out += "nu" + kv["nu"]
    if kv.get("qbits", "0") != "0":
        out += "q" + kv["qbits"]
    return out


def name_of(cache):
    for n, rx in NAMES:
        if re.match(rx, cache):
            return n
    # generated name: K/V codecs (short), residual, per-layer extras
    f = dict(t.split("=", 1) for t in cache.split() if "=" in t)
    if "keys" in f and "values" in f:
        n = f"K:{short_spec(f['keys'])} V:{short_spec(f['values'])}"
        if f.get("residual", "0") != "0":
            n += f" r{f['residual']}"
        if "keep_spec" in f:
            n += f" keep {f.get('keep_first', '0')}/{f.get('keep_last', '0')}:{short_spec(f['keep_spec'])}"
        if f.get("sinks", "0") != "0":
            n += f" s{f['sinks']}"
        if f.get("prerope") == "1":
            n += " prerope"
        if "bits" in f or "kbits" in f or "vbits" in f:
            n += " bit-plan"
        return n
    return cache


def load(rel):
    p = os.path.join(ROOT, rel)
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def fmt(x, spec):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return format(x, spec)


def md_cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------- validate


def validate_table(res, rel):
    if res is None:
        return f"_not measured yet: `{rel}` is missing._"
    fp16 = next((a for a in res["arms"] if a["name"] == "fp16" and "error" not in a), None)
    rows = []
    for a in res["arms"]:
        if "error" in a:
            rows.append([a["name"], "failed: " + a["error"]] + [""] * 11)
            continue
        claim = f'{a["key_compression"]:.2f}x'
        kv_claim = f'{a["full_kv_compression"]:.2f}x'
        res_ratio = ""
        if fp16 and a["resident_kv_bytes"]:
            res_ratio = f'{fp16["resident_kv_bytes"] / a["resident_kv_bytes"]:.2f}x'
        kl = a.get("kl_vs_fp16")
        top1 = a.get("top1_agreement_vs_fp16")
        g = a.get("greedy_matches_fp16")
        rows.append([
            a["name"], fmt(a["throughput_tok_s"], ".2f"),
            f'{fmt(a["prefill_tok_s"], ".1f")} / {fmt(a["decode_tok_s"], ".2f")}', fmt(a["peak_mb"], ".0f"),
            f'{a["fp16_key_mb"]:.3f} MB', f'{a["compressed_key_mb"]:.3f} MB', claim, kv_claim,
            f'{a["resident_kv_bytes"] / MB:.3f} MB', res_ratio,
            fmt(kl, ".3g"), fmt(top1, ".3f"),
            "n/a" if g is None else ("yes" if g else f'no ({a["greedy_prefix_match_tokens"]} tok)'),
        ])
    head = ["Arm", "tok/s", "prefill / decode tok/s", "Peak MB", "Keys fp16 (acct)", "Keys compressed (acct)", "Claim (keys)",
            "K+V claim", "Resident K+V", "fp16/resident", "KL vs fp16", "top-1", "greedy = fp16"]
    t = table(head, rows)
    toks = max((a.get("tokens_in_cache_max", 0) for a in res["arms"] if "error" not in a), default=0)
    hw = res["hardware"]
    note = (f'\n\nFrom `{rel}`: {res["model"]} ({res["arch"]}, {res["n_layers"]} layers, '
            f'{res["n_kv_heads"]} KV heads, head_dim {res["head_dim"]}), {res["prompt_tokens"]} prompt tokens, '
            f'max_tokens={res["max_tokens"]}, prompt_repeat={res["prompt_repeat"]}, {toks} tokens in cache; '
            f'{hw["cpu_model"]}, {hw["cores"]} cores, {hw["memory_mb"]:.0f} MB; commit `{res["git_commit"]}`, '
            f'{res["date_utc"]}.\n\nCommand: `{res["command_line"]}`')
    if fp16:
        share = fp16.get("cache_share_of_rss_peak")
        note += (f'\n\nThe fp16 arm\'s K/V is {fp16["resident_kv_bytes"] / MB:.1f} MB of its '
                 f'{fp16["rss_peak_mb"]:.0f} MB peak ({100 * share:.0f}% incl. index).')
    return t + note


# ---------------------------------------------------------------- quality


def ppl_command(p):
    args = ["./build/veloxquant", "ppl", "--model", p["model"], "--file", p["file"], "--skip",
            f'{p.get("skip", 0):g}', "--ctx", str(p["ctx"]), "--chunks", str(p["chunks"])]
    for c in p.get("configs", []):
        args += ["--cache", c["cache"]]
    return " ".join(shlex.quote(a) for a in args + ["--json"])


def needle_command(n):
    args = ["./build/veloxquant", "needle", "--model", n["model"], "--ctx", str(n["ctx"]), "--depths",
            ",".join(f"{d:g}" for d in n["depths"]), "--seeds", str(n["seeds"])]
    for c in n["configs"][1:]:
        args += ["--cache", c["cache"]]
    return " ".join(shlex.quote(a) for a in args + ["--json"])


def qbits_named(cache, current):
    """cache with every spec whose qbits default changed named with it:
    q8_0 / q4_0 keys, q4_0 values and kivi (0 -> 8: int8 queries for keys
    in session 53, int8 weights for q4_0 values in session 54, both for
    kivi in session 55 at the default models' head_dims, 64 and 256), and
    1-bit turboquant_rvq keys and qjl keys (0 -> 4: the query's bit planes,
    session 56), kivix keys and values where qbits=8 is accepted (0 -> 8,
    session 56), turboquant_mse values at 1, 2 and 4 bits (0 -> 8, session
    57; by the spec's own bits: a plan's vbits are not read, its layers
    share the rule). current=False names the old defaults (a bench e2e file
    from before names the float forms without qbits; run_bench.sh names
    them since), current=True today's (a quality row of the current
    tables); speeds are matched on the named form."""
    def fix(mo, q):
        head, rest = mo.group(1), mo.group(2)
        if "qbits=" in rest:
            return mo.group(0)
        return head + rest + ("," if rest.startswith(":") else ":") + f"qbits={q}"
    cache = re.sub(r"\b(keys=q[48]_0|values=q4_0|(?:keys|values)=kivi(?![a-z]))(\S*)",
                   lambda mo: fix(mo, 8 if current else 0), cache)
    def planes(mo):  # 1-bit turboquant_rvq (bits=1 is its default) and qjl keys
        if re.search(r"[:,]bits=(?!1\b)", mo.group(2)):
            return mo.group(0)
        return fix(mo, 4 if current else 0)
    cache = re.sub(r"\b(keys=(?:turboquant_rvq|qjl)(?![a-z_]))(\S*)", planes, cache)

    def kivix(mo):  # 0 -> 8 in session 56 where accepted (the default models' head_dims are multiples of 64)
        rest = mo.group(2)

        def num(key, default):  # an integer parameter of the spec
            m = re.search(rf"[:,]{key}=(\d+)", rest)
            return int(m.group(1)) if m else default
        ok = 2 <= num("bits", 3) <= 4 and num("nu", 0) == 0 and (
            mo.group(1).startswith("keys") or (num("outliers", 0) == 0 and num("group", 32) % 16 == 0))
        return fix(mo, 8 if current else 0) if ok else mo.group(0)
    cache = re.sub(r"\b((?:keys|values)=kivix)(\S*)", kivix, cache)

    def tq_values(mo):  # 0 -> 8 in session 57 but at 3 bits (the default models' head_dims take every width)
        m = re.search(r"[:,]bits=(\d+)", mo.group(2))
        return mo.group(0) if m and int(m.group(1)) == 3 else fix(mo, 8 if current else 0)
    return re.sub(r"\b(values=turboquant_mse)(\S*)", tq_values, cache)


def load_ppl(m):
    """MODEL-ppl.json plus any MODEL-ppl-*.json (configs measured in later
    runs, e.g. VecInfer once its calibration file exists, or the low-bit
    configs): the configs are concatenated; each run's dPPL/KL are against
    its own fp16 reference on its own chunks, so every config carries its
    run's fp16 PPL and chunk count (run_ppl_fp16, run_chunks)."""
    d = os.path.join(ROOT, "figures/quality")
    main = load(f"figures/quality/{m}-ppl.json")
    if main is None:
        return None, []
    runs = [main]
    for fn in sorted(os.listdir(d)):
        if fn.startswith(f"{m}-ppl-") and fn.endswith(".json"):
            extra = load(f"figures/quality/{fn}")
            same = all(extra.get(k) == main.get(k) for k in ("ctx", "skip")) and \
                os.path.basename(extra.get("file", "")) == os.path.basename(main.get("file", ""))
            if not same:
                print(f"report.py: {fn} measured on another text or context than {m}-ppl.json (skipped)",
                      file=sys.stderr)
                continue
            runs.append(extra)
    merged = dict(main)
    merged["configs"] = []
    seen = {}
    for r in runs:
        for c in r.get("configs", []):
            c = dict(c, run_ppl_fp16=r["ppl"], run_chunks=r["chunks"])
            # a config measured again (later run, more chunks) replaces the older row
            if c["cache"] in seen:
                old = merged["configs"][seen[c["cache"]]]
                if c["run_chunks"] >= old["run_chunks"]:
                    merged["configs"][seen[c["cache"]]] = c
                continue
            seen[c["cache"]] = len(merged["configs"])
            merged["configs"].append(c)
    return merged, runs


def quality_model(m):
    p, runs = load_ppl(m)
    n = load(f"figures/quality/{m}-needle.json")
    v = load(f"figures/validation/{m}/results.json")
    if p is None:
        return None
    needle = {}
    if n:
        for c in n["configs"]:
            needle[c["cache"]] = c["accuracy"]
    # passkey runs of later configs (MODEL-needle-*.json, same ctx and depths)
    d = os.path.join(ROOT, "figures/quality")
    for fn in sorted(os.listdir(d)):
        if fn.startswith(f"{m}-needle-") and fn.endswith(".json"):
            extra = load(f"figures/quality/{fn}")
            if n and (extra.get("ctx") != n.get("ctx") or extra.get("seeds") != n.get("seeds")):
                print(f"report.py: {fn}: other ctx or seeds than {m}-needle.json (skipped)", file=sys.stderr)
                continue
            for c in extra["configs"]:
                needle.setdefault(c["cache"], c["accuracy"])
    # passkey at 4k tokens (third round, the needle followed by a filler line)
    # (and the later rounds', r4 to r8: their configs added, the same prompts)
    needle4k = {}
    for r in ("r3", "r4", "r5", "r5b", "r6", "r7", "r8"):
        n4 = load(f"figures/quality/sweeps/{m}-needle-4k-{r}.json")
        for c in (n4["configs"] if n4 else []):
            needle4k.setdefault(c["cache"], (c["accuracy"], c["trials"]))
    # decode speed against the fp16 cache of the same run (`bench e2e`,
    # figures/bench/e2e-*.json of this model) at SPEED_CTX tokens
    speed = {}
    bdir = os.path.join(ROOT, "figures/bench")
    for fn in sorted(os.listdir(bdir)) if os.path.isdir(bdir) else []:
        if fn.startswith("e2e-") and fn.endswith(".json"):
            e = (load(f"figures/bench/{fn}") or {}).get("result", {})
            if e.get("model") != m:
                continue
            for r in e.get("results", []):
                if r["ctx"] == SPEED_CTX and r.get("speedup_vs_fp16"):
                    speed[qbits_named(r["cache"], False)] = (round(r["speedup_vs_fp16"], 3), r["ctx"])
    base_mb = None
    if v:
        f = next((a for a in v["arms"] if a["name"] == "fp16" and "error" not in a), None)
        if f:
            base_mb = f["rss_peak_mb"] - f["resident_kv_bytes"] / MB
    methods = []
    # fp16 from the shape of a uniform method (bits/element equal in every layer)
    ref = next((c for c in p["configs"] if name_of(c["cache"]) == "q8_0" and "bits_per_element" in c), None)
    if ref:
        s = 16.0 / ref["bits_per_element"]
        methods.append({
            "name": "fp16", "cache": "keys=fp16 values=fp16", "bits_per_element": 16.0,
            "bits_per_element_k": 16.0, "bits_per_element_v": 16.0,
            "kv_bytes_per_token_full": ref["kv_bytes_per_token_full"] * s,
            "kv_bytes_per_token_window": ref["kv_bytes_per_token_window"] * s,
            "window": ref["window"], "kv_fixed_bytes": 0,
            "kv_bytes_8k": (ref["kv_bytes_8k"] - ref["kv_fixed_bytes"]) * s,
            "ppl": p["ppl"], "dppl": 0.0, "kl": 0.0, "top1": 1.0,
            "needle": needle.get("keys=fp16 values=fp16"), "calibrated": False, "evicts": False,
        })
        if "keys=fp16 values=fp16" in needle4k:
            methods[-1]["needle_4k"], methods[-1]["needle_4k_trials"] = needle4k["keys=fp16 values=fp16"]
    for c in p["configs"]:
        if "bits_per_element" not in c:
            continue
        ev = re.search(r"evict=(\S+)", c["cache"])
        evicts = bool(ev) and ev.group(1) != "none"
        budget = 0
        if evicts:
            w = re.search(r"window=(\d+)", ev.group(1))
            s_ = re.search(r"sinks=(\d+)", ev.group(1))
            b = re.search(r"budget=(\d+)", ev.group(1))
            budget = int(w.group(1)) + (int(s_.group(1)) if s_ else 0) if w else (int(b.group(1)) if b else 0)
        kv8k = c["kv_bytes_8k"]
        if evicts and budget:
            # ppl's figure assumes every token is held; an evicting cache holds its budget
            held = min(8192, budget)
            w = c["window"] or 0
            kv8k = (c["kv_bytes_per_token_full"] * held + c["kv_bytes_per_token_window"] * (min(held, w) if w else held)
                    + c["kv_fixed_bytes"])
        methods.append({
            "name": name_of(c["cache"]), "cache": c["cache"],
            "bits_per_element": c["bits_per_element"], "bits_per_element_k": c["bits_per_element_k"],
            "bits_per_element_v": c["bits_per_element_v"],
            "kv_bytes_per_token_full": c["kv_bytes_per_token_full"],
            "kv_bytes_per_token_window": c["kv_bytes_per_token_window"], "window": c["window"],
            "kv_fixed_bytes": c["kv_fixed_bytes"], "kv_bytes_8k": kv8k,
            "ppl": c["ppl"], "dppl": c["dppl"], "kl": c["kl"], "top1": c["top1"],
            "needle": needle.get(c["cache"]), "calibrated": "calib=" in c["cache"], "evicts": evicts,
            "evict_budget": budget, "ppl_fp16": c["run_ppl_fp16"], "chunks": c["run_chunks"],
            "bits_per_element_held": c.get("bits_per_element_held"),
        })
        if c["cache"] in needle4k:
            methods[-1]["needle_4k"], methods[-1]["needle_4k_trials"] = needle4k[c["cache"]]
        named = qbits_named(c["cache"], True)
        if named in speed:
            methods[-1]["decode_vs_fp16"], methods[-1]["decode_ctx"] = speed[named]
    src = f'ppl --ctx {p["ctx"]} --chunks {p["chunks"]} ({p["tokens_scored"]} tokens) on WikiText-2 after --skip {p.get("skip", 0):g}'
    return {
        "model": m, "arch": p["arch"], "n_layers": p.get("n_layers"), "n_kv_heads": p.get("n_kv_heads"),
        "head_dim": p.get("head_dim"), "ctx": p["ctx"], "chunks": p["chunks"], "tokens_scored": p["tokens_scored"],
        "ppl_fp16": p["ppl"], "base_mb": base_mb, "quality_source": src,
        "ppl_commands": [ppl_command(r) for r in runs], "needle_command": needle_command(n) if n else None,
        "needle_ctx": n["ctx"] if n else None, "methods": methods,
    }


def quality_table(q):
    if q is None:
        return "_not measured yet._"
    rows = []
    for m in q["methods"]:
        rel = 100.0 * m["dppl"] / m.get("ppl_fp16", q["ppl_fp16"])
        rows.append([
            m["name"], f'`{m["cache"]}`', f'{m["bits_per_element"]:.3f} ({m["bits_per_element_k"]:.2f} / {m["bits_per_element_v"]:.2f})',
            fmt(m.get("bits_per_element_held"), ".2f"),
            f'{m["kv_bytes_8k"] / MB:.1f}', f'{m["ppl"]:.3f}', f'{m["dppl"]:+.3f} ({rel:+.2f}%)',
            fmt(m["kl"], ".3g"), fmt(m["top1"], ".3f"), fmt(m["needle"], ".2f"), str(m.get("chunks", q["chunks"])),
        ])
    head = ["Method", "Cache config", "bits/element (K / V)", "b/e held at ctx", "K+V MB at 8k", "PPL", "dPPL vs fp16",
            "KL (nats)", "top-1", "passkey", "chunks"]
    note = (f'\n\n{q["model"]}: {q["quality_source"]}; fp16 PPL {q["ppl_fp16"]:.3f} '
            '(rows measured in another run use that run\'s fp16 PPL: `chunks` says which). '
            'bits/element: the packed tokens\' codec bytes incl. metadata plus the slot index, K and V '
            'averaged (the fp16 residual window is not in it); b/e held: everything the cache held at the end '
            'of a chunk (residual window, partly filled pages, index, shared state) over the elements held. '
            + (f'Passkey at ~{q["needle_ctx"]} tokens (depths 0, 0.5, 1; one key each).' if q["needle_ctx"]
               else "Passkey: not measured for this model (time on the shared machine).")
            + '\n\nCommands:\n\n' + "".join(f"    {c}\n" for c in q["ppl_commands"]))
    if q["needle_command"]:
        note += f'\n    {q["needle_command"]}\n'
    if any(m.get("bits_per_element_held") is None for m in q["methods"] if m["name"] != "fp16"):
        note += ('\nRows with b/e held n/a come from runs made before the slot index was counted: their '
                 'bits/element leave it out (for caches that evict nothing it is now the page tables, '
                 '< 0.01 bits/element; StreamingLLM with sinks holds a position table and liveness flags, '
                 '5 bytes per slot, +0.31 bits/element at head_dim 64, +0.08 at 256).\n')
    return table(head, rows) + note


def best_by_bits(quals):
    """per model and budget (1.5 .. 4.5 bits/element, +0.01 for page
    tables), the non-evicting method with the lowest KL within it"""
    rows = []
    for q in quals:
        for L in (1.5, 2.0, 2.25, 2.5, 3.0, 4.0, 4.5):
            ms = [m for m in q["methods"] if not m["evicts"] and m["name"] != "fp16" and m.get("kl") is not None
                  and m["bits_per_element"] <= L + 0.01]
            if not ms:
                rows.append([q["model"], f"{L:g}", "_no point at ctx 2048 (ctx 1024 screens: 1-bit keys or values break the model)_", "", "", "", "", ""])
                continue
            m = min(ms, key=lambda m: m["kl"])
            rel = 100.0 * m["dppl"] / m.get("ppl_fp16", q["ppl_fp16"])
            n4 = f'{m["needle_4k"]:.2f} ({m["needle_4k_trials"]})' if m.get("needle_4k") is not None else "n/a"
            rows.append([q["model"], f"{L:g}", f'`{m["cache"]}`', f'{m["bits_per_element"]:.3f}', f"{rel:+.2f}%",
                         fmt(m["kl"], ".4f"), fmt(m.get("needle"), ".2f"), n4])
    head = ["model", "budget (b/e)", "best config within it (lowest KL)", "bits/element", "dPPL", "KL (nats)",
            "passkey (2k)", "passkey 4k (trials)"]
    return table(head, rows) + ("\n\nFrom figures/quality/quality.json (every non-evicting method of the quality "
                                "table; budgets get +0.01 b/e for page tables).\n")


FAMILY_LEVELS = (1.5, 2.0, 2.5, 3.0, 4.0, 4.5)


def family_of(cache):
    """the key codec's method (keys=METHOD:...), the family a row belongs to"""
    k = re.search(r"keys=([a-z0-9_]+)", cache)
    return k.group(1) if k else cache


def best_by_family(quals):
    """per model, method family (key codec) and level L in FAMILY_LEVELS:
    the non-evicting row with the lowest KL among those with bits/element in
    (previous level + 0.01, L + 0.01] (+0.01 for page tables)"""
    rows = []
    for q in quals:
        fams = sorted({family_of(m["cache"]) for m in q["methods"]
                       if not m["evicts"] and m["name"] != "fp16"})
        for fam in fams:
            for i, L in enumerate(FAMILY_LEVELS):
                lo = FAMILY_LEVELS[i - 1] + 0.01 if i else 1.0
                ms = [m for m in q["methods"] if not m["evicts"] and m["name"] != "fp16"
                      and family_of(m["cache"]) == fam and m.get("kl") is not None
                      and lo < m["bits_per_element"] <= L + 0.01]
                if not ms:
                    continue
                m = min(ms, key=lambda m: m["kl"])
                rel = 100.0 * m["dppl"] / m.get("ppl_fp16", q["ppl_fp16"])
                rows.append([q["model"], fam, f"{L:g}", f'`{m["cache"]}`', f'{m["bits_per_element"]:.3f}',
                             f"{rel:+.2f}%", fmt(m["kl"], ".4f"), fmt(m["top1"], ".3f")])
    head = ["model", "family (key codec)", "about (b/e)", "best config (lowest KL)", "bits/element", "dPPL",
            "KL (nats)", "top-1"]
    return table(head, rows) + ("\n\nFrom figures/quality/quality.json: per family the lowest-KL row with "
                                "bits/element above the previous level and at most L (+0.01 for page tables; the first bin starts at 1.0); a family without a row near L was not "
                                "measured there. The command of each row is under the table of its run "
                                "(docs/validation-report.md section 6, and the low-bit tables below).\n")


def verdict(quals):
    """Plain statements per method: class by relative dPPL (good <= 2 %,
    fair <= 10 %, poor otherwise -- the thresholds of `recommend`)."""
    if not quals:
        return "_no quality measurements yet._"
    lines = []
    for q in quals:
        lines.append(f'**{q["model"]}** (fp16 PPL {q["ppl_fp16"]:.3f}; {q["quality_source"]}):\n')
        ms = [m for m in q["methods"] if m["name"] != "fp16"]
        ms.sort(key=lambda m: m["dppl"])
        for m in ms:
            rel = 100.0 * m["dppl"] / m.get("ppl_fp16", q["ppl_fp16"])
            cls = "good" if rel <= 2 else "fair" if rel <= 10 else "POOR"
            extra = ""
            if m.get("needle") is not None:
                extra = f', passkey {100 * m["needle"]:.0f}%'
            lines.append(f'- {m["name"]} ({m["bits_per_element"]:.2f} bits/element): PPL {m["ppl"]:.3f}, '
                         f'dPPL {m["dppl"]:+.3f} ({rel:+.1f}%, {cls}), KL {m["kl"]:.3g} nats, '
                         f'top-1 {100 * m["top1"]:.1f}%{extra}')
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- fp16 sizes (section 1)


def fp16_sizes_table(quals):
    """fp16 K+V bytes per token and at 8192 tokens per model, from the fp16
    row of quality.json (bytes per token of full-attention layers, of
    sliding-window layers and their window), checked against the formula
    2 (K, V) x n_layers x n_kv_heads x head_dim x 2 bytes."""
    if not quals:
        return "_not measured yet._"
    rows = []
    for q in quals:
        f = next((m for m in q["methods"] if m["name"] == "fp16"), None)
        if f is None:
            continue
        per_layer = 2 * q["n_kv_heads"] * q["head_dim"] * 2
        full, win, w = f["kv_bytes_per_token_full"], f["kv_bytes_per_token_window"], f["window"] or 0
        total = full + win
        if abs(total - q["n_layers"] * per_layer) > 0.5:
            print(f"report.py: {q['model']}: fp16 bytes/token {total:g} differ from the formula "
                  f"{q['n_layers'] * per_layer}", file=sys.stderr)
        n_win = round(win / per_layer)
        layers = str(q["n_layers"])
        per_tok = f"{total:,.0f} B"
        at8k = f"{f['kv_bytes_8k'] / MB:.3g} MB"
        if n_win and w:
            n_full = q["n_layers"] - n_win
            layers += f" ({n_win} with a {w}-token sliding window)"
            per_tok += f" ({full:,.0f} B in the {n_full} global layers once the windows are full)"
            at8k += f" (window layers capped at {w} tokens)"
        rows.append([q["model"], layers, str(q["n_kv_heads"]), str(q["head_dim"]), per_tok, at8k])
    head = ["model", "layers", "KV heads", "head_dim", "fp16 K+V per token", "at 8192 tokens"]
    return table(head, rows)


# ---------------------------------------------------------------- cross-layer (section 9)

# defaults of the cross= methods (src/cache/evict.c vq_cache_cross_parse),
# to say in words what a short spec means
CROSS_DEFAULTS = {
    "xquant": {"bits": "4", "rbits": "2"},
    "xkv": {"group": "2", "energy": "0.95", "bits": "4", "min": "64"},
    "minicache": {"start": "0.5", "threshold": "0.9"},
}


def cross_label(c):
    """the cross= parameters with defaults filled in, and which role stays
    fp16 (a config without keys=/values= leaves that role fp16: bits 16)"""
    f = dict(t.split("=", 1) for t in c["cache"].split() if "=" in t)
    if "cross" not in f:
        return "for scale: no cross-layer sharing"
    meth, _, params = f["cross"].partition(":")
    kv = dict(CROSS_DEFAULTS.get(meth, {}))
    kv.update(dict(p.split("=", 1) for p in params.split(",") if "=" in p))
    words = ", ".join(f"{k}={v}" for k, v in kv.items())
    fp16 = [r for r, b in (("keys", c["bits_per_element_k"]), ("values", c["bits_per_element_v"])) if b == 16.0]
    if fp16:
        words += "; " + " and ".join(fp16) + " fp16"
    return words


def cross_table(rel):
    p = load(rel)
    if p is None:
        return f"_not measured yet: `{rel}` is missing._"
    rows = []
    for c in p["configs"]:
        bk, bv = c["bits_per_element_k"], c["bits_per_element_v"]
        rows.append([f'`{c["cache"]}`', cross_label(c), f'{c["bits_per_element"]:.2f} ({bk:.2f} / {bv:.2f})',
                     f'{c["kv_bytes_8k"] / MB:.1f}', f'{c["ppl"]:.2f}', f'{100.0 * c["dppl"] / p["ppl"]:+.1f}%',
                     fmt(c["kl"], ".3g"), fmt(c["top1"], ".3f")])
    head = ["cache config", "parameters (defaults filled in)", "bits/element (K / V)", "K+V MB at 8k", "PPL",
            "dPPL", "KL vs fp16 (nats)", "top-1"]
    note = (f'\n\n{p["model"]}, fp16 PPL {p["ppl"]:.2f} on this run: ctx {p["ctx"]}, {p["chunks"]} chunk{"s" if p["chunks"] != 1 else ""} '
            f'({p["tokens_scored"]} tokens) after --skip {p.get("skip", 0):g}, every config against an fp16 cache '
            f'in the same process. bits/element include all metadata; K+V MB at 8k adds the shared state '
            f'(xKV\'s bases). From `{rel}`:\n\n    {ppl_command(p)}\n')
    return table(head, rows) + note


# ---------------------------------------------------------------- sweeps (docs/quality.md)


def sweep_table(rel, kv_split=False):
    """every config of one exploration run, as measured (figures/quality/sweeps/);
    kv_split: bits/element with its key and value parts"""
    p = load(rel)
    if p is None:
        return f"_not measured yet: `{rel}` is missing._"
    rows = []
    kv = kv_split and all("bits_per_element_k" in c for c in p["configs"])
    for c in p["configs"]:
        rel_d = 100.0 * c["dppl"] / p["ppl"]
        bpe = fmt(c.get("bits_per_element"), ".3f")
        if kv:
            bpe += f' ({c["bits_per_element_k"]:.3f} / {c["bits_per_element_v"]:.3f})'
        rows.append([f'`{c["cache"]}`', bpe,
                     fmt(c.get("bits_per_element_held"), ".2f"), f'{c["ppl"]:.3f}', f'{rel_d:+.2f}%',
                     fmt(c["kl"], ".4f"), fmt(c["top1"], ".3f")])
    head = ["cache config", "bits/element (K / V)" if kv else "bits/element", "b/e held", "PPL", "dPPL",
            "KL (nats)", "top-1"]
    note = (f'\n\n{p["model"]}, fp16 PPL {p["ppl"]:.3f}, ctx {p["ctx"]}, {p["chunks"]} chunks '
            f'({p["tokens_scored"]} tokens) after --skip {p.get("skip", 0):g}. From `{rel}`:\n\n    {ppl_command(p)}\n')
    if "bits_per_element_held" not in p["configs"][0]:
        note += ("\nThis run predates the slot-index accounting (binary of commit 35d84cd): its bits/element "
                 "leave out the slot index, which for these non-evicting configs is the residual window's "
                 "positions and the page tables (about +0.03 bits/element at ctx 2048 with residual=128).\n")
    return table(head, rows) + note


def needle_table(rel):
    """a passkey run (needle --json) as a table, with its command"""
    try:
        n = load(rel)
    except ValueError:  # a run still writing it
        n = None
    if n is None:
        return f"_not measured yet: `{rel}` is missing._"
    head = ["cache config"] + [f"depth {d:g}" for d in n["depths"]] + ["accuracy", "trials"]
    rows = [[f'`{c["cache"]}`'] + [f"{x:.2f}" for x in c["per_depth"]] + [f'{c["accuracy"]:.2f}', str(c["trials"])]
            for c in n["configs"]]
    return table(head, rows) + (f'\n\n{n["model"]}, passkey at ~{n["ctx"]} tokens, {n["seeds"]} keys per depth. '
                                f'From `{rel}`:\n\n    {needle_command(n)}\n')


def plan_block(rels):
    """tune --plan --json runs: the plan, its nominal and measured bits and
    KL (on the tune's own tokens), and the command"""
    rows, cmds = [], []
    for rel in rels:
        d = load(rel)
        if d is None:
            rows.append([f"_missing: `{rel}`_", "", "", "", "", ""])
            continue
        bits = f'{d["low"]},{d["high"]}'
        if "vlow" in d and (d["vlow"], d["vhigh"]) != (d["low"], d["high"]):
            bits += f' / {d["vlow"]},{d["vhigh"]}'
        rows.append([d["model"], f'{d["budget"]:g}', bits, f'`{d["plan"]}`',
                     f'{d["bits_per_element"]:.3f}', fmt(d["kl"], ".4f")])
        g = re.search(r"keys=kivix:[^ ]*group=(\d+)", d["plan"])
        v = re.search(r"values=kivix:[^ ]*group=(\d+)", d["plan"])
        ks = re.search(r"keys=(\S+)", d["plan"]).group(1)
        vs = re.search(r"values=(\S+)", d["plan"]).group(1)
        if "vlow" in d and not (vs.startswith("kivix:") and ks.startswith("kivix:")):  # fourth round on: templates
            def templ(spec):
                return re.sub(r"(,bits=\d+|bits=\d+,|:bits=\d+$)", "", spec)
            fields = re.search(r"residual=\d+ (.*?) kbits=", d["plan"])
            pc = "" if not fields or fields.group(1) == "sinks=4 prerope=1" else f" --plan-cache '{fields.group(1)}'"
            cmds.append(f'./build/veloxquant tune --model {d["model"]} --plan {d["low"]},{d["high"]} '
                        f'--vplan {d["vlow"]},{d["vhigh"]} --plan-keys {templ(ks)} --plan-values {templ(vs)}{pc} '
                        f'--budget {d["budget"]:g} --file ../shared/data/wikitext-2-test.txt '
                        f'--tokens {d["tokens"]} --json > {rel}')
            continue
        cmds.append(f'./build/veloxquant tune --model {d["model"]} --plan {d["low"]},{d["high"]} '
                    f'--groups {g.group(1) if g else 128},{v.group(1) if v else 128} --budget {d["budget"]:g} '
                    f'--tokens {d["tokens"]} --json > {rel}')
    head = ["model", "budget", "bits", "plan (tune's config; residual=32 below 1024 tokens, else 128)", "bits/element",
            "KL (tune)"]
    return table(head, rows) + "\n\nCommands:\n\n" + "".join(f"    {c}\n" for c in cmds)


def outlier_table(rel):
    """a run on the key-bias model (scripts/make_outlier_model.py), with the
    fp16 PPL of the unmodified model on the same chunks beside it"""
    out = sweep_table(rel, True)
    p = load(rel)
    orig = None
    for o in ("figures/quality/smollm2-135m-orig-fp16.json", "figures/quality/smollm2-135m-orig-fp16-c3.json"):
        cand = load(o)
        if cand is not None and p is not None and cand["chunks"] == p["chunks"]:
            orig, orig_rel = cand, o
    if orig is not None:
        out += (f'\nThe unmodified smollm2-135m on the same chunks: fp16 PPL {orig["ppl"]:.3f} '
                f'(the key bias moves it {100.0 * (p["ppl"] / orig["ppl"] - 1):+.2f}%; '
                f'`{orig_rel}`: `{ppl_command(orig)}`).\n')
    return out


def text_block(rel):
    p = os.path.join(ROOT, rel)
    if not os.path.exists(p):
        return f"_not measured yet: `{rel}` is missing._"
    with open(p, encoding="utf-8") as f:
        body = f.read().rstrip("\n")
    return "From `" + rel + "`:\n\n" + "\n".join("    " + ln for ln in body.split("\n"))


# ---------------------------------------------------------------- main


def replace_block(text, name, body):
    pat = re.compile(r"(<!-- BEGIN:%s -->\n).*?(<!-- END:%s -->)" % (re.escape(name), re.escape(name)), re.S)
    if not pat.search(text):
        print(f"report.py: marker {name} not in the report (skipped)", file=sys.stderr)
        return text
    return pat.sub(lambda mo: mo.group(1) + body + "\n" + mo.group(2), text)


def main():
    blocks = {}
    qual = {"schema": "veloxquant.quality/1", "models": []}
    for m in MODELS:
        blocks[f"short-{m}"] = validate_table(load(f"figures/validation/{m}/results.json"),
                                              f"figures/validation/{m}/results.json")
        blocks[f"long-{m}"] = validate_table(load(f"figures/validation-long/{m}/results.json"),
                                             f"figures/validation-long/{m}/results.json")
        q = quality_model(m)
        blocks[f"quality-{m}"] = quality_table(q)
        if q:
            qual["models"].append(q)
    blocks["verdict"] = verdict(qual["models"])
    blocks["fp16-sizes"] = fp16_sizes_table(qual["models"])
    blocks["cross-smollm2-135m"] = cross_table("figures/quality/smollm2-135m-ppl-cross.json")
    os.makedirs(os.path.join(ROOT, "figures/quality"), exist_ok=True)
    qp = os.path.join(ROOT, "figures/quality/quality.json")
    with open(qp + ".tmp", "w", encoding="utf-8") as f:
        json.dump(qual, f, indent=1)
        f.write("\n")
    os.replace(qp + ".tmp", qp)
    rp = os.path.join(ROOT, "docs/validation-report.md")
    if os.path.exists(rp):
        with open(rp, encoding="utf-8") as f:
            text = f.read()
        for k, v in blocks.items():
            text = replace_block(text, k, v)
        with open(rp + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(rp + ".tmp", rp)
    qdoc = os.path.join(ROOT, "docs/quality.md")
    if os.path.exists(qdoc):
        with open(qdoc, encoding="utf-8") as f:
            text = f.read()
        sweeps = {
            "sweep-kivi": sweep_table("figures/quality/sweeps/smollm2-135m-kivi.json"),
            "sweep-kivix": sweep_table("figures/quality/sweeps/smollm2-135m-kivix.json"),
            "plan-smollm2": text_block("figures/quality/sweeps/smollm2-135m-plan-2-4.txt"),
            "lowbit-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit.json"),
            "lowbit-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit.json"),
            "sweep-sinks-prerope": sweep_table("figures/quality/sweeps/smollm2-135m-sinks-prerope.json"),
            "sweep-sinks-lowbit": sweep_table("figures/quality/sweeps/smollm2-135m-sinks-lowbit.json"),
            "sweep-sinks-gemma3": sweep_table("figures/quality/sweeps/gemma3-270m-sinks-prerope.json"),
            "sweep-nu": sweep_table("figures/quality/sweeps/smollm2-135m-nu.json"),
            "lowbit2-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit2.json"),
            "lowbit2-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit2.json"),
            "outlier-families": text_block("figures/quality/outlier-families.txt"),
            "outlier-kbias-base": outlier_table("figures/quality/smollm2-135m-kbias-base.json"),
            "outlier-kbias-fix": outlier_table("figures/quality/smollm2-135m-kbias-fix.json"),
            "outlier-kbias-spectral": outlier_table("figures/quality/smollm2-135m-kbias-spectral.json"),
            "outlier-kbias-tune": text_block("figures/quality/smollm2-135m-kbias-tune.txt"),
            "outlier-kbias100": sweep_table("figures/quality/smollm2-135m-kbias100.json", True),
            "rvqfit-smollm2": sweep_table("figures/quality/sweeps/smollm2-135m-rvqfit.json", True),
            "rvqfit1-smollm2": sweep_table("figures/quality/sweeps/smollm2-135m-rvqfit-1bit.json", True),
            "needle-4k-rvqfit1": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-rvqfit1.json"),
            "outlier-kbias-sweep": "\n\n".join(
                f"Key bias {b}:\n\n" + sweep_table(f"figures/quality/sweeps/smollm2-135m-kbias{b}.json")
                for b in (0, 40, 100, 250)),
            "needle-4k-smollm2": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k.json"),
            "best-by-bits": best_by_bits(qual["models"]),
            "best-by-family": best_by_family(qual["models"]),
            "plan-3": plan_block(["figures/quality/sweeps/gemma3-270m-plan-2-3-budget3.json",
                                  "figures/quality/sweeps/gemma3-270m-plan-2-3-budget2.25.json",
                                  "figures/quality/sweeps/smollm2-135m-plan-2-3-budget3.json"]),
            "lowbit3-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit3.json"),
            "lowbit3-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit3.json"),
            "needle-4k-smollm2-r3": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r3.json"),
            "needle-4k-gemma3-r3": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r3.json"),
            "plan-4": plan_block([f"figures/quality/sweeps/{m}-plan4-k{k}-v1-2-budget{b}.json"
                                  for m in MODELS for k, b in (("2-3", "2.25"), ("3-4", "3"))]),
            "lowbit4-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit4.json"),
            "lowbit4-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit4.json"),
            "sweep-values-smollm2": sweep_table("figures/quality/sweeps/smollm2-135m-values.json"),
            "sweep-1bit-gemma3": sweep_table("figures/quality/sweeps/gemma3-270m-1bit-prerope.json"),
            "sweep-center-gemma3": sweep_table("figures/quality/sweeps/gemma3-270m-1bit-center.json"),
            "needle-4k-smollm2-r4": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r4.json"),
            "needle-4k-gemma3-r4": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r4.json"),
            "plan-5": plan_block(["figures/quality/sweeps/gemma3-270m-plan5-turboquant_rvq-k1-2-v4-budget3.265.json",
                                  "figures/quality/sweeps/gemma3-270m-plan5-rabitq-k2-3-v4-budget3.265.json"]),
            "lowbit5-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit5.json", True),
            "lowbit5b-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit5b.json", True),
            "needle-4k-diag5-gemma3": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-diag5.json"),
            "needle-4k-smollm2-r5": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r5.json"),
            "needle-4k-gemma3-r5": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r5.json"),
            "needle-4k-gemma3-r5b": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r5b.json"),
            "plan-6": plan_block(["figures/quality/sweeps/smollm2-135m-plan6-rabitq-k1-2-v4-budget3.49.json"]),
            "lowbit6-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit6.json", True),
            "needle-4k-smollm2-r6": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r6.json"),
            "needle-4k-diag6-smollm2": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-diag6.json"),
            "needle-4k-diag6b-smollm2": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-diag6b.json"),
            "lowbit7-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit7.json", True),
            "lowbit7-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit7.json", True),
            "needle-4k-smollm2-r7": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r7.json"),
            "needle-4k-gemma3-r7": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r7.json"),
            "lowbit8-smollm2-135m": sweep_table("figures/quality/smollm2-135m-ppl-lowbit8.json", True),
            "lowbit8-gemma3-270m": sweep_table("figures/quality/gemma3-270m-ppl-lowbit8.json", True),
            "needle-4k-smollm2-r8": needle_table("figures/quality/sweeps/smollm2-135m-needle-4k-r8.json"),
            "needle-4k-gemma3-r8": needle_table("figures/quality/sweeps/gemma3-270m-needle-4k-r8.json"),
        }
        for k, v in sweeps.items():
            text = replace_block(text, k, v)
        with open(qdoc + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(qdoc + ".tmp", qdoc)
    print(f"report.py: wrote {os.path.relpath(qp, ROOT)} ({len(qual['models'])} models) and updated docs/validation-report.md")


if __name__ == "__main__":
    main()
