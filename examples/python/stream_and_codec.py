"""stream_and_codec.py -- streaming generation into a packed cache, its
bytes per layer, saving it, and one codec on numpy arrays. Run from the
repository root after `pip install ./python`:

    python examples/python/stream_and_codec.py [MODEL]
"""
import sys
import tempfile

import numpy as np

import veloxquant as vq

name = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"

with vq.Model.load(name) as model:
    config = vq.KVCacheConfig(keys="q4_0:rot=1", values="q4_0:rot=1", residual=16)
    with vq.KVCacheBuilder.for_model(model, config) as cache:
        # pieces arrive as the C library decodes them (it runs in a worker thread)
        gen = model.generate("A short poem about the sea:\n", cache=cache, max_tokens=40,
                             temperature=0, stream=True)
        for piece in gen:
            print(piece, end="", flush=True)
        print(f"\n[{gen.stats['n_generated']} tokens, {gen.stats['decode_tok_s']:.1f} tok/s decode]")

        s = cache.stats()
        print(f"cache: {s['tokens']} token slots, {s['accounted_bytes']} B accounted "
              f"({s['fp16_bytes'] / s['accounted_bytes']:.2f}x smaller than fp16), "
              f"{s['resident_bytes']} B resident; layer 0: {s['layers'][0]['accounted_bytes']} B")
        with tempfile.TemporaryDirectory() as d:
            cache.save(f"{d}/poem.vqc")
            again = vq.KVCache.load(f"{d}/poem.vqc", model)
            print(f"saved and loaded: {again.stats()['tokens']} token slots")
            again.close()

    # one codec, numpy in and out
    head_dim = model.info["head_dim"]
    codec = vq.Codec("turboquant_rvq:bits=4", head_dim=head_dim)
    keys = np.random.default_rng(0).standard_normal((256, head_dim)).astype(np.float32)
    codes = codec.encode(keys)
    scores = codec.score(keys[:2], codes)  # <q, k> straight from the packed codes
    err = np.linalg.norm(codec.decode(codes) - keys) / np.linalg.norm(keys)
    print(f"{codec.spec}: {codec.bytes_per_token} B/token ({codec.bits_per_element:.2f} bits/element), "
          f"relative error {err:.3f}, scores {scores.shape}")
