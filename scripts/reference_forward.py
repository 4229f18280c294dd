#!/usr/bin/env python3
"""reference_forward.py -- an independent numpy forward pass of a GGUF model,
to check VeloxQuant's C runtime (figures/reference-check.md).

Development check only, not part of `make test`: it needs numpy and the
`gguf` package from PyPI (pip install gguf numpy). Weights are dequantized
with gguf's own dequantizer (gguf.quants.dequantize), so nothing of our C
code is shared; the forward pass below is written from the architectures'
definitions as llama.cpp runs these GGUF conversions:

  llama : x = embd[tok]; per layer: h = x + Wo attn(rope(Wq n(x)), rope(Wk n(x)),
          Wv n(x)); x = h + Wdown(silu(Wgate n(h)) * Wup n(h)); n = RMSNorm
          with weight; RoPE in llama.cpp's "normal" mode (rotate adjacent
          pairs (2i, 2i+1); the converter permuted Q/K rows for it);
          GQA; output = output.weight or tied token_embd.
  gemma3: x = embd[tok] * sqrt(n_embd); QK-norm (per-head RMSNorm) before
          RoPE; NEOX RoPE (pairs (i, i + d/2)); post-attention and post-FFN
          RMSNorms; GeGLU with tanh GELU; norm weights used as x * w (the
          converter already added Gemma's +1); layers with il % 6 < 5 use a
          sliding window (attention.sliding_window) and RoPE base 10000,
          the others rope.freq_base; scores scaled by 1/sqrt(key_length);
          final logit softcapping when final_logit_softcapping is present.

Computation in float64 (weights dequantized to float32 then widened).

Usage:
  reference_forward.py MODEL.gguf OURS.bin [--json OUT.json]
OURS.bin is written by build/bench/dump_logits (format VQLG v2, see
bench/dump_logits.c). The script reads the token ids from it, computes the
reference logits for prompt ++ generated ids (teacher-forced), compares them
row by row with ours, and (when ours generated greedily) also decodes the
reference's own greedy continuation of the prompt for the same count.
"""
import argparse
import json
import struct
import sys

import numpy as np
import gguf
from gguf.quants import dequantize


def read_ours(path):
    with open(path, "rb") as f:
        buf = f.read()
    magic, ver, n_prompt, n_vocab, n_gen, first = struct.unpack_from("<4sIIIII", buf, 0)
    if magic != b"VQLG" or ver != 2:
        raise SystemExit(f"{path}: not a VQLG v2 file")
    off = 24
    prompt = np.frombuffer(buf, np.int32, n_prompt, off).tolist()
    off += 4 * n_prompt
    gen = np.frombuffer(buf, np.int32, n_gen, off).tolist()
    off += 4 * n_gen
    rows = n_prompt + n_gen - first
    logits = np.frombuffer(buf, np.float32, rows * n_vocab, off).reshape(rows, n_vocab)
    return prompt, gen, logits, first


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        self.kv = {}
        for f in r.fields.values():
            if not f.types or f.types[0] == gguf.GGUFValueType.ARRAY:
                continue
            v = f.parts[f.data[0]]
            if f.types[0] == gguf.GGUFValueType.STRING:
                v = bytes(v).decode("utf-8", "replace")
            else:
                v = v.item() if v.size == 1 else v
            self.kv[f.name] = v
        self.arch = self.kv["general.architecture"]
        a = self.arch
        self.n_layer = self.kv[f"{a}.block_count"]
        self.n_embd = self.kv[f"{a}.embedding_length"]
        self.n_head = self.kv[f"{a}.attention.head_count"]
        self.n_kv = self.kv.get(f"{a}.attention.head_count_kv", self.n_head)
        self.head_dim = self.kv.get(f"{a}.attention.key_length", self.n_embd // self.n_head)
        self.eps = self.kv[f"{a}.attention.layer_norm_rms_epsilon"]
        self.rope_base = self.kv.get(f"{a}.rope.freq_base", 10000.0)
        self.softcap = self.kv.get(f"{a}.final_logit_softcapping", 0.0)
        self.swa = self.kv.get(f"{a}.attention.sliding_window", 0) if a == "gemma3" else 0
        if f"{a}.rope.scaling.type" in self.kv and self.kv[f"{a}.rope.scaling.type"] not in ("none",):
            raise SystemExit("rope scaling not implemented in the reference")
        self.t = {}
        self.qtype = {}
        for t in r.tensors:
            w = dequantize(t.data, t.tensor_type)
            self.t[t.name] = np.asarray(w, dtype=np.float64)
            self.qtype[t.name] = t.tensor_type
        self.out_name = "output.weight" if "output.weight" in self.t else "token_embd.weight"
        self.act_q8 = False
        self.no_window = False  # ablation: ignore the sliding window
        self.q8_only = []      # with act_q8: only tensors whose name contains one of these
        self.act_noise = 0.0   # relative noise added before the int8 rounding
        self.rng = np.random.default_rng(1)

    def W(self, name):
        return self.t[name]

    def mm(self, x, name):
        """x @ W(name).T; with act_q8, x is first rounded the way an int8
        activation kernel sees it (llama.cpp's q8_0/q8_1 for the 32-element
        types, q8_K for the K types: per block, scale max|x|/127, values
        round(x/scale)) -- to separate that known error from real bugs."""
        if self.act_q8 and (not self.q8_only or any(k in name for k in self.q8_only)):
            qt = self.qtype[name]
            Q = gguf.GGMLQuantizationType
            blk = 0
            if qt in (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0):
                blk = 32
            elif qt in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K):
                blk = 256
            if blk:
                sh = x.shape
                xb = x.reshape(-1, blk)
                if self.act_noise:
                    xb = xb * (1.0 + self.act_noise * self.rng.standard_normal(xb.shape))
                d = np.abs(xb).max(axis=1, keepdims=True) / 127.0
                d = d.astype(np.float32).astype(np.float64)
                inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
                x = (np.round(xb * inv) * d).reshape(sh)
        return x @ self.t[name].T


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox):
    """x: [T, H, d]; rotates in place-free fashion."""
    d = x.shape[-1]
    half = d // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / d)
    th = pos[:, None].astype(np.float64) * inv[None, :]          # [T, half]
    c, s = np.cos(th)[:, None, :], np.sin(th)[:, None, :]
    if neox:
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    y = np.empty_like(x)
    y[..., 0::2] = a * c - b * s
    y[..., 1::2] = a * s + b * c
    return y


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def forward(m, tokens, first=0):
    """Logits [T - first, n_vocab] (float64) for rows first..T-1 of the token
    list at positions 0..T-1."""
    gem = m.arch == "gemma3"
    if m.arch not in ("llama", "gemma3"):
        raise SystemExit(f"arch {m.arch} not in the reference")
    T = len(tokens)
    pos = np.arange(T)
    x = m.W("token_embd.weight")[tokens].astype(np.float64)
    if gem:
        x = x * np.sqrt(m.n_embd)
    H, KV, d = m.n_head, m.n_kv, m.head_dim
    causal = pos[None, :] <= pos[:, None]              # [q, k]
    for il in range(m.n_layer):
        p = f"blk.{il}."
        swa_layer = gem and (il % 6) < 5
        base = 10000.0 if swa_layer else m.rope_base
        mask = causal
        if swa_layer and m.swa > 0 and not m.no_window:
            mask = causal & (pos[:, None] - pos[None, :] < m.swa)
        h = rmsnorm(x, m.W(p + "attn_norm.weight"), m.eps)
        q = (m.mm(h, p + "attn_q.weight")).reshape(T, H, d)
        k = (m.mm(h, p + "attn_k.weight")).reshape(T, KV, d)
        v = (m.mm(h, p + "attn_v.weight")).reshape(T, KV, d)
        if gem:
            q = rmsnorm(q, m.W(p + "attn_q_norm.weight"), m.eps)
            k = rmsnorm(k, m.W(p + "attn_k_norm.weight"), m.eps)
        q = rope(q, pos, base, neox=gem)
        k = rope(k, pos, base, neox=gem)
        att = np.empty((T, H, d))
        g = H // KV
        for hh in range(H):
            kh = hh // g
            s = (q[:, hh, :] @ k[:, kh, :].T) / np.sqrt(d)
            s = np.where(mask, s, -np.inf)
            s = s - s.max(axis=1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=1, keepdims=True)
            att[:, hh, :] = pr @ v[:, kh, :]
        o = m.mm(att.reshape(T, H * d), p + "attn_output.weight")
        if gem:
            o = rmsnorm(o, m.W(p + "post_attention_norm.weight"), m.eps)
        x = x + o
        h = rmsnorm(x, m.W(p + "ffn_norm.weight"), m.eps)
        gt = m.mm(h, p + "ffn_gate.weight")
        up = m.mm(h, p + "ffn_up.weight")
        act = (gelu_tanh(gt) if gem else silu(gt)) * up
        o = m.mm(act, p + "ffn_down.weight")
        if gem:
            o = rmsnorm(o, m.W(p + "post_ffw_norm.weight"), m.eps)
        x = x + o
    x = rmsnorm(x[first:], m.W("output_norm.weight"), m.eps)
    logits = m.mm(x, m.out_name)
    if m.softcap:
        logits = m.softcap * np.tanh(logits / m.softcap)
    return logits


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def compare(ref, ours):
    """Per-row metrics of our logits against the reference."""
    ours = ours.astype(np.float64)
    lr, lo = log_softmax(ref), log_softmax(ours)
    kl = (np.exp(lr) * (lr - lo)).sum(axis=1)
    rel = np.abs(ref - ours).max(axis=1) / np.abs(ref).max(axis=1)
    top1 = ref.argmax(axis=1) == ours.argmax(axis=1)
    return rel, kl, top1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("ours")
    ap.add_argument("--json")
    ap.add_argument("--act-q8", action="store_true",
                    help="emulate int8 activation rounding before quantized-weight matmuls")
    ap.add_argument("--q8-only", default="",
                    help="comma-separated name parts: int8 rounding only on those tensors "
                         "(with --act-q8 / --sensitivity), e.g. attn_q.,attn_k.,attn_v.")
    ap.add_argument("--sensitivity", action="store_true",
                    help="also measure float-vs-int8 and int8-vs-perturbed-int8 reference "
                         "differences (the noise floor of the comparison)")
    ap.add_argument("--window-ablation", action="store_true",
                    help="also compare with a reference that ignores the sliding window")
    ap.add_argument("--no-greedy", action="store_true",
                    help="skip the reference's own greedy continuation")
    a = ap.parse_args()
    prompt, gen, ours, first = read_ours(a.ours)
    m = Model(a.model)
    m.act_q8 = a.act_q8
    m.q8_only = [k for k in a.q8_only.split(",") if k]
    print(f"{a.model}: arch {m.arch}, {m.n_layer} layers, n_embd {m.n_embd}, heads {m.n_head}/"
          f"{m.n_kv} x {m.head_dim}, rope base {m.rope_base}, eps {m.eps}, swa {m.swa}, "
          f"softcap {m.softcap}")
    seq = prompt + gen
    ref = forward(m, seq, first)
    if ref.shape != ours.shape:
        raise SystemExit(f"shape mismatch: ref {ref.shape} ours {ours.shape}")
    rel, kl, top1 = compare(ref, ours)
    n = len(prompt)
    res = {"model": a.model, "act_q8": a.act_q8, "n_prompt": n, "prompt_ids": prompt,
           "max_rel_diff": float(rel.max()), "mean_rel_diff": float(rel.mean()),
           "max_kl": float(kl.max()), "mean_kl": float(kl.mean()),
           "top1_agree": float(top1.mean()), "rows": len(seq) - first, "first_row": first}
    print(f"rows {first}..{len(seq) - 1} (prompt {n}, generated {len(gen)})")
    print(f"max|diff|/max|logit|: max {rel.max():.4g} mean {rel.mean():.4g}")
    print(f"KL(ref||ours): max {kl.max():.4g} mean {kl.mean():.4g}")
    print(f"top-1 agreement: {top1.sum()}/{len(top1)} = {top1.mean():.3f}")
    bad = np.where(~top1)[0]
    for i in bad[:10]:
        print(f"  row {first + i}: ref top1 {ref[i].argmax()} ({ref[i].max():.3f}), "
              f"ours {ours[i].argmax()} ({ours[i].max():.3f}); ref logit of ours' pick "
              f"{ref[i][ours[i].argmax()]:.3f}")
    if a.sensitivity:
        def stats(tag, x, y):
            r, k, t = compare(x, y)
            print(f"{tag}: max|diff|/max|logit| max {r.max():.4g} mean {r.mean():.4g}; "
                  f"KL max {k.max():.4g} mean {k.mean():.4g}; top-1 {t.sum()}/{len(t)}")
            res[tag] = {"max_rel_diff": float(r.max()), "mean_rel_diff": float(r.mean()),
                        "max_kl": float(k.max()), "mean_kl": float(k.mean()),
                        "top1_agree": float(t.mean())}
        q8_before, m.act_q8 = m.act_q8, False
        ref_f = ref if not q8_before else forward(m, seq, first)
        m.act_q8 = True
        ref_q = ref if q8_before else forward(m, seq, first)
        m.act_noise = 1e-6
        ref_qn = forward(m, seq, first)
        m.act_noise, m.act_q8 = 0.0, q8_before
        stats("ours_vs_float_ref", ref_f, ours)
        stats("ours_vs_int8_ref", ref_q, ours)
        stats("int8_ref_vs_float_ref", ref_f, ref_q)
        stats("int8_ref_vs_int8_ref_perturbed_1e-6", ref_q, ref_qn)
    if a.window_ablation:
        m.no_window = True
        r, k, t = compare(forward(m, seq, first), ours)
        m.no_window = False
        print(f"ours vs reference WITHOUT sliding window: max|diff|/max|logit| max {r.max():.4g} "
              f"mean {r.mean():.4g}; KL max {k.max():.4g} mean {k.mean():.4g}; top-1 {t.sum()}/{len(t)}")
        res["ours_vs_no_window_ref"] = {"max_rel_diff": float(r.max()), "mean_rel_diff": float(r.mean()),
                                        "max_kl": float(k.max()), "mean_kl": float(k.mean()),
                                        "top1_agree": float(t.mean())}
    if gen and not a.no_greedy:
        # the reference's own greedy continuation of the prompt
        toks = list(prompt)
        for _ in range(len(gen)):
            toks.append(int(forward(m, toks, len(toks) - 1)[-1].argmax()))
        ref_gen = toks[n:]
        print(f"greedy ours: {gen}")
        print(f"greedy ref : {ref_gen}")
        print(f"greedy identical: {ref_gen == gen}")
        res.update({"gen_ours": gen, "gen_ref": ref_gen, "gen_identical": ref_gen == gen})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
