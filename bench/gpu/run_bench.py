#!/usr/bin/env python3
"""run_bench.py -- one benchmark run on the GPU: build/cuda/bench_gpu (copy
bandwidth, our kernels per format) and, in the same run, PyTorch's
scaled_dot_product_attention on fp16 caches of the same shapes; writes the
merged results (schema: docs/gpu.md) to the file given by --out.

    python3 bench/gpu/run_bench.py --out figures/bench/h200.json [--quick]

Torch timing: CUDA events around each call, 3 warm-ups, median of up to 50
calls (or 1 s); q [B, 32, 1, D], k and v [B, 8, ctx, D] fp16 with
enable_gqa=True; several copies of k/v are cycled when one is under 512 MiB.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def torch_sdpa(shapes, nq=32, nkv=8):
    import torch
    import torch.nn.functional as F
    out = {}
    dev = "cuda"
    for (d, ctx, b) in shapes:
        one = b * nkv * ctx * d * 2 * 2
        sets = min(8, (512 << 20) // one + 1)
        kv = []
        for _ in range(sets):
            k = torch.randn(b, nkv, ctx, d, device=dev, dtype=torch.float16)
            v = torch.randn(b, nkv, ctx, d, device=dev, dtype=torch.float16)
            kv.append((k, v))
        q = torch.randn(b, nq, 1, d, device=dev, dtype=torch.float16)
        times = []
        total = 0.0
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        it = 0
        while it < 53 and (it < 13 or total < 1000.0):
            k, v = kv[it % sets]
            e0.record()
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            e1.record()
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            if it >= 3:
                times.append(ms)
                total += ms
            it += 1
        times.sort()
        out[(d, ctx, b)] = times[len(times) // 2]
        del kv, q
        torch.cuda.empty_cache()
        print(f"torch sdpa fp16 D={d} ctx={ctx} batch={b}: {out[(d, ctx, b)]:.4f} ms", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--bin", default="build/cuda/bench_gpu")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    cmd = [args.bin] + (["--quick"] if args.quick else [])
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"bench_gpu failed ({proc.returncode})")
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    copy = next(r["copy_bandwidth_gbs"] for r in rows if "copy_bandwidth_gbs" in r)
    ours = [r for r in rows if "keys" in r]
    shapes = sorted({(r["head_dim"], r["ctx"], r["batch"]) for r in ours})
    ref = torch_sdpa(shapes)
    import torch
    results = []
    for (d, ctx, b), ms in sorted(ref.items()):
        byts = b * 8 * ctx * d * 2 * 2
        results.append({"keys": "torch_sdpa_fp16", "values": "torch_sdpa_fp16", "head_dim": d, "ctx": ctx,
                        "batch": b, "ms": round(ms, 5), "gbs": round(byts / (ms * 1e-3) / 1e9, 1),
                        "fraction_of_copy_bandwidth": round(byts / (ms * 1e-3) / 1e9 / copy, 3),
                        "speedup_vs_torch_fp16": 1.0})
    for r in ours:
        t = ref[(r["head_dim"], r["ctx"], r["batch"])]
        results.append({"keys": r["keys"], "values": r["values"], "head_dim": r["head_dim"], "ctx": r["ctx"],
                        "batch": r["batch"], "ms": r["ms"], "gbs": r["gbs"],
                        "fraction_of_copy_bandwidth": round(r["gbs"] / copy, 3),
                        "speedup_vs_torch_fp16": round(t / r["ms"], 3), "kernel": r.get("kernel", "")})
    # the same run with the tensor-core kernel switched off (VQ_CUDA_NO_MMA=1), at
    # 64k x 8: what the CUDA-core kernels measure on the pairs that have both
    simt = []
    if not args.quick:
        env = dict(os.environ, VQ_CUDA_NO_MMA="1")
        p2 = subprocess.run([args.bin, "--quick"], capture_output=True, text=True, env=env)
        for l in p2.stdout.splitlines():
            if l.startswith("{") and "keys" in l:
                r = json.loads(l)
                t = ref.get((r["head_dim"], r["ctx"], r["batch"]))
                if t:
                    r["speedup_vs_torch_fp16"] = round(t / r["ms"], 3)
                    r["fraction_of_copy_bandwidth"] = round(r["gbs"] / copy, 3)
                    simt.append(r)
    doc = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "command": "make cuda && python3 bench/gpu/run_bench.py " + " ".join(sys.argv[1:]),
        "shape": "32 query heads, 8 KV heads, one query token per sequence, pages of 256 tokens",
        "copy_bandwidth_gbs": copy,
        "results": results,
        "results_cuda_cores_64k_x8": simt,
        "seconds": round(time.time() - t0, 1),
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    # short table last
    print(f"copy bandwidth {copy:.0f} GB/s")
    for r in results:
        print(f"{r['keys']:>24} {r['values']:>22} D={r['head_dim']:3d} ctx={r['ctx']:6d} B={r['batch']:2d} "
              f"{r['ms']:8.4f} ms {r['gbs']:7.1f} GB/s {100 * r['fraction_of_copy_bandwidth']:5.1f}% "
              f"x{r['speedup_vs_torch_fp16']:.2f}")


if __name__ == "__main__":
    main()
