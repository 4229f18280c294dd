"""three_lines.py -- the Python integration in three lines: load a model,
build a compressed KV cache for it, generate (the C twin:
examples/three_lines.c). Run from the repository root after
`pip install ./python`:

    python examples/python/three_lines.py [MODEL] [CACHE CONFIG] [PROMPT]

(defaults: smollm2-135m, "keys=turboquant_rvq:bits=4 values=kivi:bits=4",
"The capital of France is"). Prints the text, then the cache's bytes."""
import sys

from veloxquant import KVCacheBuilder, KVCacheConfig, Model

name = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m"
config = sys.argv[2] if len(sys.argv) > 2 else "keys=turboquant_rvq:bits=4 values=kivi:bits=4"
prompt = sys.argv[3] if len(sys.argv) > 3 else "The capital of France is"

# the three lines
model = Model.load(name)
cache = KVCacheBuilder.for_model(model, KVCacheConfig.parse(config))
print(model.generate(prompt, cache=cache, max_tokens=16, temperature=0))

s = cache.stats()
print(f"KV cache: {s['accounted_bytes']} bytes accounted, {s['resident_bytes']} resident, "
      f"{s['fp16_bytes']} as fp16")
