#!/usr/bin/env python3
"""ab.py -- A/B timing on the GPU machine (not part of the benchmark): runs
each `label=command` given (a bench_gpu command line, optionally with
ENV=value words first) and prints one line per result: label, pair, D,
shape, ms. Same run, so the variants see the same card state.

    python3 bench/gpu/ab.py "new=build/cuda/bench_gpu --quick" "old=VQ_X=1 build/cuda/bench_gpu --quick"
"""
import json
import os
import shlex
import subprocess
import sys


def run(cmd, extra=()):
    """runs one bench_gpu command line (ENV=value words first allowed, then
    the extra arguments); returns (returncode, stderr, result rows)"""
    words = shlex.split(cmd)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("-"):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    out = subprocess.run(words + list(extra), capture_output=True, text=True, env=env)
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{") and "keys" in l]
    return out.returncode, out.stderr, rows


def main():
    for arg in sys.argv[1:]:
        label, cmd = arg.split("=", 1)
        rc, err, rows = run(cmd)
        if rc:
            print(f"{label}: failed {rc}: {err[-500:]}")
        for r in rows:
            print(f"{label:>10} {r['keys'][:22]:>22}/{r['values'][:20]:<20} D={r['head_dim']:3d} "
                  f"{r['ctx']:6d}x{r['batch']:<2d} {r['ms']:.4f} ms {r.get('kernel', '')}", flush=True)


if __name__ == "__main__":
    main()
