#!/usr/bin/env python3
"""fixed_cost.py -- the fixed part of a decode-attention call on the GPU
machine (not part of the benchmark): times one or more pairs at batch B
over a list of contexts with the split count forced (--splits) and any
ENV=value settings given, so that the plan (chunks, warps per CTA) stays
the same and only the tiles per warp grow; then fits ms = a + b * ctx by
least squares per pair and prints a (the time at zero context: launch,
CTA setup, combine, reduce launch) and b (per 1k tokens), and a's share
of each reading.

    python3 bench/gpu/fixed_cost.py --bin build/cuda/bench_gpu --pair 4,6 \\
        --batch 8 --splits 2 --ctx 2048,4096,8192,16384,65536 VQ_CUDA_MMA_WIDE=2
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default="build/cuda/bench_gpu")
ap.add_argument("--pair", default="4,6")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--splits", type=int, default=2)
ap.add_argument("--dims", default="128")
ap.add_argument("--ctx", default="2048,4096,8192,16384,32768,65536")
ap.add_argument("--rounds", type=int, default=1)
ap.add_argument("env", nargs="*", help="ENV=value settings for every run")
args = ap.parse_args()

res = {}
for r in range(args.rounds):
    for ctx in (int(c) for c in args.ctx.split(",")):
        cmd = " ".join(args.env + [args.bin, "--quick", "--dims", args.dims, "--pair", args.pair,
                                   "--shape", f"{ctx},{args.batch}", "--splits", str(args.splits)])
        rc, err, rows = ab.run(cmd)
        if rc:
            print(f"failed {rc}: {err[-300:]}", flush=True)
        for j in rows:
            key = j["keys"][:16] + "/" + j["values"][:12]
            res.setdefault(key, {}).setdefault(ctx, []).append(j["ms"])
            print(f"r{r} {key:>30} D={j['head_dim']} {ctx:6d}x{args.batch:<2d} splits {args.splits} "
                  f"{j['ms']:.4f} ms {j.get('kernel', '')}", flush=True)

for key, by_ctx in res.items():
    xs = sorted(by_ctx)
    ys = [sorted(by_ctx[x])[len(by_ctx[x]) // 2] for x in xs]
    n = len(xs)
    if n < 2:
        continue
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    print(f"fit {key}: a = {a * 1e3:.2f} us at zero context, b = {b * 1024e3:.3f} us per 1k tokens "
          f"(batch {args.batch}, splits {args.splits}, {' '.join(args.env) or 'default env'})")
    for x, y in zip(xs, ys):
        print(f"    {x:6d}: {y:.4f} ms, fit {a + b * x:.4f}, fixed share {a / y * 100:.1f}%")
