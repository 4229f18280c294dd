#!/usr/bin/env python3
"""shapes_ab.py -- A/B timing at several shapes on the GPU machine (not part
of the benchmark): for each round, each shape and each `label=command`
given (a bench_gpu command line without --quick/--shape, optionally with
ENV=value words first), runs the command with `--quick --shape CTX,BATCH`,
and, with --torch, times PyTorch's fp16 SDPA at the same shapes in the same
round (run_bench.py's torch_sdpa). Prints one line per result, then the
median over rounds per (label, pair, shape).

    python3 bench/gpu/shapes_ab.py --shapes 16384,1:65536,1 --rounds 3 --torch \\
        "base=ab/bench_base --dims 128 --pair 0" "new=ab/bench_new --dims 128 --pair 0"
"""
import argparse
import os
import statistics
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--shapes", required=True, help="CTX,BATCH[:CTX,BATCH...]")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--torch", action="store_true")
ap.add_argument("variants", nargs="+")
args = ap.parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402
res = {}
for r in range(args.rounds):
    for sh in args.shapes.split(":"):
        ctx, b = (int(x) for x in sh.split(","))
        for arg in args.variants:
            label, cmd = arg.split("=", 1)
            rc, err, rows = ab.run(cmd, ["--quick", "--shape", sh])
            if rc:
                print(f"{label}: failed {rc}: {err[-300:]}", flush=True)
            for j in rows:
                key = (label, j["keys"][:16] + "/" + j["values"][:12], j["head_dim"], ctx, b)
                res.setdefault(key, []).append(j["ms"])
                print(f"r{r} {label:>8} {key[1]:>30} D={j['head_dim']} {ctx:6d}x{b:<2d} {j['ms']:.4f} ms", flush=True)
    if args.torch:
        import run_bench
        dims = sorted({k[2] for k in res}) or [128]
        shapes = [(d, int(s.split(",")[0]), int(s.split(",")[1])) for d in dims for s in args.shapes.split(":")]
        t = run_bench.torch_sdpa(shapes)
        for (d, ctx, b), ms in t.items():
            res.setdefault(("torch", "sdpa_fp16", d, ctx, b), []).append(ms)
print("median over rounds (ms); x = torch / this")
for key in sorted(res, key=lambda k: (k[2], k[3], k[4], k[1], k[0])):
    m = statistics.median(res[key])
    tk = ("torch", "sdpa_fp16", key[2], key[3], key[4])
    x = f" x{statistics.median(res[tk]) / m:.3f}" if tk in res and key[0] != "torch" else ""
    print(f"{key[0]:>8} {key[1]:>30} D={key[2]} {key[3]:6d}x{key[4]:<2d} {m:.4f} "
          f"[{' '.join(f'{v:.4f}' for v in res[key])}]{x}")
