#!/usr/bin/env python3
"""make_outlier_model.py -- a trained model with strong key outlier channels.

    python3 scripts/make_outlier_model.py [--in models/smollm2-135m.gguf]
        [--out models/smollm2-135m-kbias.gguf] [--bias B] [--pairs P]

Copies a llama-architecture GGUF (SmolLM2) and adds a key-projection bias
`blk.N.attn_k.bias` (F32) to every layer, as Qwen2 models carry: in every
KV head, the P lowest-frequency RoPE pairs (llama's adjacent pairing: the
last 2P channels of the head) get +B on their first channel and -B/2 on
their second; every other channel gets 0. Nothing else changes (all other
tensors and metadata are copied byte for byte; general.name gets a suffix).

Why these channels: RoPE barely turns its lowest-frequency pairs (SmolLM2,
base 1e5, head_dim 64: 1.4e-5 rad per token, 0.03 rad over 2048 tokens),
so after RoPE the bias stays a near-constant offset of every key on those
channels. Its contribution to a score, q . R(b), is then nearly the same
for every key of one query and mostly cancels in the softmax: the model
keeps working (its fp16 PPL is measured next to the original's, see
docs/quality.md) while its keys get outlier channels of magnitude B, about
20x the channels' usual size at the default B = 40. Qwen2.5 models have
such channels (key-bias norms of hundreds at their first and last layers),
and there per-token codecs that a user may pick by bits alone destroy the
model (issue 10).

Only the standard library is used (no numpy, no gguf package). The runtime
reads optional attn_q/k/v.bias tensors of llama GGUFs (src/model/model.c),
as llama.cpp does.
"""
import argparse
import os
import struct
import sys

# GGUF metadata value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
          F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32 = 0


class Reader:
    def __init__(self, buf):
        self.b, self.o = buf, 0

    def get(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.get("<Q")
        s = self.b[self.o:self.o + n].decode("utf-8")
        self.o += n
        return s

    def value(self, t):
        if t in SCALAR:
            return self.get(SCALAR[t])
        if t == STR:
            return self.string()
        if t == ARR:
            et, n = self.get("<I"), self.get("<Q")
            return [self.value(et) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")


def gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def align(n, a):
    return (n + a - 1) // a * a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1].strip())
    ap.add_argument("--in", dest="src", default="models/smollm2-135m.gguf")
    ap.add_argument("--out", default="models/smollm2-135m-kbias.gguf")
    ap.add_argument("--bias", type=float, default=40.0,
                    help="B: the bias on each outlier pair's first channel (-B/2 on its second)")
    ap.add_argument("--pairs", type=int, default=1,
                    help="P: lowest-frequency RoPE pairs per KV head that get the bias")
    a = ap.parse_args()

    with open(a.src, "rb") as f:
        buf = f.read()
    r = Reader(buf)
    if buf[:4] != b"GGUF":
        sys.exit(f"{a.src}: not a GGUF file")
    r.o = 4
    version, n_t, n_kv = r.get("<I"), r.get("<Q"), r.get("<Q")
    if version < 2:
        sys.exit(f"{a.src}: GGUF version {version} is not supported")
    kv_start = r.o
    meta, kv_raw = {}, []
    for _ in range(n_kv):
        k0 = r.o
        key = r.string()
        t = r.get("<I")
        meta[key] = r.value(t)
        kv_raw.append((key, buf[k0:r.o]))
    assert kv_start < r.o
    tensors = []
    for _ in range(n_t):
        name = r.string()
        nd = r.get("<I")
        ne = [r.get("<Q") for _ in range(nd)]
        tt, off = r.get("<I"), r.get("<Q")
        tensors.append((name, ne, tt, off))
    alignment = int(meta.get("general.alignment", 32))
    data0 = align(r.o, alignment)

    arch = meta["general.architecture"]
    if arch != "llama":
        sys.exit(f"{a.src}: architecture {arch}; this script writes llama key biases "
                 "(adjacent RoPE pairs)")
    L = int(meta[f"{arch}.block_count"])
    nh = int(meta[f"{arch}.attention.head_count"])
    nkv = int(meta.get(f"{arch}.attention.head_count_kv", nh))
    hd = int(meta.get(f"{arch}.attention.key_length", meta[f"{arch}.embedding_length"] // nh))
    if not 1 <= a.pairs <= hd // 2:
        sys.exit(f"--pairs must be in 1..{hd // 2}")
    names = {t[0] for t in tensors}
    if any(f"blk.{il}.attn_k.bias" in names for il in range(L)):
        sys.exit(f"{a.src} already has attn_k.bias tensors")

    # the bias of one layer: per KV head, the last 2P channels (pairs hd/2-P .. hd/2-1)
    bias = [0.0] * (nkv * hd)
    for h in range(nkv):
        for p in range(hd // 2 - a.pairs, hd // 2):
            bias[h * hd + 2 * p] = a.bias
            bias[h * hd + 2 * p + 1] = -a.bias / 2
    bias_bytes = struct.pack(f"<{len(bias)}f", *bias)

    # data: every old tensor at its old offset (relative order kept), the new ones after
    old_end = len(buf) - data0
    new = []
    off = align(old_end, alignment)
    for il in range(L):
        new.append((f"blk.{il}.attn_k.bias", [nkv * hd], GGML_F32, off))
        off = align(off + len(bias_bytes), alignment)

    out = bytearray()
    out += b"GGUF" + struct.pack("<IQQ", version, n_t + len(new), n_kv)
    for key, raw in kv_raw:
        if key == "general.name":
            raw = gstr(key) + struct.pack("<I", STR) + gstr(
                f"{meta[key]} + key bias {a.bias:g} on {a.pairs} pair(s)")
        out += raw
    for name, ne, tt, o in tensors + new:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        out += struct.pack("<IQ", tt, o)
    out += b"\0" * (align(len(out), alignment) - len(out))
    base = len(out)
    out += buf[data0:data0 + old_end]
    for name, ne, tt, o in new:
        out += b"\0" * (base + o - len(out))
        out += bias_bytes
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, a.out)
    print(f"{a.out}: {L} layers x {nkv} KV heads, head_dim {hd}: attn_k.bias = "
          f"+{a.bias:g} / {-a.bias / 2:g} on the last {a.pairs} RoPE pair(s) of every head")


if __name__ == "__main__":
    main()
