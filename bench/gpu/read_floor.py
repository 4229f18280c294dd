#!/usr/bin/env python3
"""read_floor.py -- on the GPU machine (not part of the benchmark): how fast
the bytes of an fp16 decode cache can be read at all, against PyTorch's SDPA
on that cache, for issue 11's "fp16 >= 1.5x PyTorch at batch 1 and 32". Per
shape (32 query heads, 8 KV heads, head_dim 128): the K and V bytes viewed as
float32 and reduced by torch.sum and torch.amax (a read with one tiny
result), SDPA (enable_gqa=True), medians of 200 CUDA-event timings, and the
read rate that 1.5x SDPA's time would need. Output: figures/bench/h200-read-floor.txt.

    python3 bench/gpu/read_floor.py
"""
import torch, torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
def t_ms(fn, reps=200, warm=20):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
print(torch.__version__, torch.cuda.get_device_name())
big = torch.empty(2**30, dtype=torch.uint8, device=dev); big2 = torch.empty_like(big)
cp = t_ms(lambda: big2.copy_(big), reps=50)
print(f"copy bandwidth (read+write of 1 GiB each way counted as 2 GiB): {2*2**30/cp/1e6:.0f} GB/s")
for D in (128,):
  for ctx, B in ((4096,1),(16384,1),(65536,1),(131072,1),(65536,8),(65536,32),(131072,32)):
    H, Hq = 8, 32
    k = torch.randn(B, H, ctx, D, dtype=torch.float16, device=dev); v = torch.randn_like(k)
    q = torch.randn(B, Hq, 1, D, dtype=torch.float16, device=dev)
    nbytes = 2 * k.numel() * 2
    flat = torch.cat([k.view(-1), v.view(-1)]).view(torch.float32)
    rd = t_ms(lambda: flat.sum())
    rd2 = t_ms(lambda: torch.amax(flat))
    sd = t_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    best = min(rd, rd2)
    print(f"D={D} ctx={ctx} B={B}: cache {nbytes/1e6:.0f} MB; read-only (sum {rd:.4f} / amax {rd2:.4f} ms) {nbytes/best/1e6:.0f} GB/s; "
          f"SDPA {sd:.4f} ms; SDPA/1.5 = {sd/1.5:.4f} ms = {nbytes/(sd/1.5)/1e6:.0f} GB/s needed; fastest read / (SDPA/1.5) = {best/(sd/1.5):.2f}")
    del k, v, q, flat
