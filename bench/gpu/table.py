#!/usr/bin/env python3
"""table.py -- markdown tables from figures/bench/h200.json (docs/gpu.md
includes its output):  python3 bench/gpu/table.py figures/bench/h200.json"""
import json
import sys


def main():
    doc = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "figures/bench/h200.json"))
    res = doc["results"]
    print(f"Device: {doc.get('device', '?')}, torch {doc.get('torch', '?')}; copy bandwidth "
          f"{doc['copy_bandwidth_gbs']:.0f} GB/s; {doc.get('shape', '')}. Command: `{doc.get('command', '')}`.\n")
    for d in sorted({r["head_dim"] for r in res}, reverse=True):
        shapes = sorted({(r["ctx"], r["batch"]) for r in res if r["head_dim"] == d})
        pairs = []
        for r in res:
            if r["head_dim"] == d and (r["keys"], r["values"]) not in pairs:
                pairs.append((r["keys"], r["values"]))
        print(f"head_dim {d}: time in ms (x speed-up over PyTorch fp16 SDPA; % of copy bandwidth over the format's own bytes)\n")
        print("| keys / values | " + " | ".join(f"{c // 1024}k x {b}" for c, b in shapes) + " |")
        print("|---|" + "---|" * len(shapes))
        for k, v in pairs:
            cells = []
            for c, b in shapes:
                r = next((x for x in res if x["head_dim"] == d and x["keys"] == k and x["values"] == v
                          and x["ctx"] == c and x["batch"] == b), None)
                cells.append("" if r is None else
                             f"{r['ms']:.3f} (x{r['speedup_vs_torch_fp16']:.2f}; {100 * r['fraction_of_copy_bandwidth']:.0f}%)")
            name = "PyTorch SDPA fp16" if k == "torch_sdpa_fp16" else (k if k == v else f"{k} / {v}")
            kern = next((x.get("kernel", "") for x in res if x["keys"] == k and x["values"] == v), "")
            if kern:
                name += f" [{kern}]"
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
    simt = doc.get("results_cuda_cores_64k_x8", [])
    if simt:
        print("Same run, 64k x 8, the CUDA-core kernels (VQ_CUDA_NO_MMA=1) against the tensor-core kernel:\n")
        print("| keys / values | head_dim | CUDA cores ms | tensor cores ms | gain |")
        print("|---|---|---|---|---|")
        for s in simt:
            r = next((x for x in res if x["keys"] == s["keys"] and x["values"] == s["values"]
                      and x["head_dim"] == s["head_dim"] and x["ctx"] == s["ctx"] and x["batch"] == s["batch"]), None)
            if r is None or r.get("kernel") != "mma":
                continue
            name = s["keys"] if s["keys"] == s["values"] else f"{s['keys']} / {s['values']}"
            print(f"| {name} | {s['head_dim']} | {s['ms']:.3f} | {r['ms']:.3f} | x{s['ms'] / r['ms']:.2f} |")
        print()


if __name__ == "__main__":
    main()
