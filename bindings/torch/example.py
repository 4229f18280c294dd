"""example.py -- one decode step of a Llama-3-8B-shaped attention layer
(32 query heads, 8 KV heads, head_dim 128) with a packed KV cache, replacing
torch.nn.functional.scaled_dot_product_attention:

    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)    # fp16 cache
    out = torch.ops.veloxquant.decode_attention(kfmt, vfmt, q, k_pages, v_pages,
                                               page_table, seq_lens, P, ctx, scale)

The cache is filled with torch.ops.veloxquant.quantize (quantize-on-append on
the GPU, the CPU codecs' bytes), and the result is checked against SDPA on the
dequantized cache (the CPU codec's decode of the same bytes). Run from the
repository root after `make lib cuda-lib`:

    python3 bindings/torch/example.py [--keys SPEC] [--values SPEC]
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", default="kivi:bits=4")
    ap.add_argument("--values", default="kivi:bits=4")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=3072)
    args = ap.parse_args()
    vq = build.load()
    torch.manual_seed(0)
    B, NQ, NKV, D, P, ctx = args.batch, 32, 8, 128, 256, args.ctx
    dev = "cuda"
    kfmt = vq.make_format(args.keys, D, 0, 1234)
    vfmt = vq.make_format(args.values, D, 1, 5678)
    kpb, vpb = vq.page_bytes(kfmt, P), vq.page_bytes(vfmt, P)
    # the new K/V of a prompt, [B, NKV, ctx, D], as a model would produce them
    k = torch.randn(B, NKV, ctx, D, device=dev) + torch.randn(1, 1, 1, D, device=dev)
    v = torch.randn(B, NKV, ctx, D, device=dev)
    q = torch.randn(B, NQ, D, device=dev, dtype=torch.float16)
    pages_per_seq = (ctx + P - 1) // P
    n_pages = B * NKV * pages_per_seq
    page_table = torch.randperm(n_pages, device=dev, dtype=torch.int32).view(B, NKV, pages_per_seq)
    k_pages = torch.zeros(n_pages, kpb, dtype=torch.uint8, device=dev)
    v_pages = torch.zeros(n_pages, vpb, dtype=torch.uint8, device=dev)

    def append(fmt, x, pool, pb, block_tokens, block_bytes):
        # byte offset of each block: page of its first token, then its slot in the page
        tok = torch.arange(0, ctx, block_tokens, device=dev)
        pg = page_table[:, :, tok // P].long()                       # [B, NKV, nblk]
        off = pg * pb + (tok % P // block_tokens * block_bytes).view(1, 1, -1)
        vq.quantize(fmt, x.reshape(-1, D).contiguous(), off.reshape(-1).contiguous(), pool)

    fk = fmt_fields(kfmt)
    fv = fmt_fields(vfmt)
    append(kfmt, k, k_pages, kpb, fk["block_tokens"], fk["block_bytes"])
    append(vfmt, v, v_pages, vpb, fv["block_tokens"], fv["block_bytes"])
    seq_lens = torch.full((B,), ctx, dtype=torch.int32, device=dev)
    scale = 1.0 / math.sqrt(D)

    out = vq.decode_attention(kfmt, vfmt, q, k_pages, v_pages, page_table, seq_lens, P, ctx, scale)
    torch.cuda.synchronize()

    # reference: SDPA on the dequantized cache (CPU decode of the very bytes)
    def dequant(spec, role, seed, pool, pb, f):
        cpu = pool.cpu()
        out_ = torch.empty(B, NKV, ctx, D)
        per_page = P // f["block_tokens"] * f["block_bytes"]
        for b in range(B):
            for h in range(NKV):
                rows = [cpu[int(p)][:per_page] for p in page_table[b, h].cpu()]
                packed = torch.cat(rows)[: ctx // f["block_tokens"] * f["block_bytes"]]
                out_[b, h] = vq.decode(spec, D, role, seed, packed, ctx)
        return out_.to(dev)

    kd = dequant(args.keys, 0, 1234, k_pages, kpb, fk)
    vd = dequant(args.values, 1, 5678, v_pages, vpb, fv)
    ref = F.scaled_dot_product_attention(q.float().unsqueeze(2), kd, vd, enable_gqa=True).squeeze(2)
    plain = F.scaled_dot_product_attention(q.float().unsqueeze(2), k, v, enable_gqa=True).squeeze(2)
    rel = ((out.float() - ref).norm() / ref.norm()).item()
    relq = ((out.float() - plain).norm() / plain.norm()).item()
    print(f"keys={args.keys} values={args.values} B={B} ctx={ctx}: "
          f"vs SDPA on the dequantized cache rel.err {rel:.2e}; vs SDPA on the unquantized K/V {relq:.2e} "
          f"(the codec's own error); cache {k_pages.numel() + v_pages.numel()} bytes vs fp16 {2 * k.numel() * 2}")
    assert rel < 2e-3, "mismatch against SDPA on the dequantized cache"


def fmt_fields(t):
    # vq_cuda_format: int method, role, head_dim, bits, group, rot, block_tokens, block_bytes, ...
    ints = t[:32].view(torch.int32).tolist()
    return {"method": ints[0], "block_tokens": ints[6], "block_bytes": ints[7]}


if __name__ == "__main__":
    main()
