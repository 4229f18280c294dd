"""veloxquant -- packed (compressed) LLM KV caches, over the libveloxquant C library.

The three lines:

    model = Model.load("smollm2-135m")
    cache = KVCacheBuilder.for_model(model, KVCacheConfig(keys="turboquant_rvq:bits=4", values="kivi:bits=4"))
    print(model.generate("The capital of France is", cache=cache, max_tokens=16, temperature=0))

docs/python.md describes the whole API.
"""
from ._errors import (FormatError, InvalidArgumentError, IOFailure, NeedsCalibrationError,
                      OutOfMemory, StateError, UnsupportedError, VeloxQuantError)
from ._handle import live_handles
from ._lib import ffi as _ffi
from ._lib import lib as _lib
from .cache import KVCache, KVCacheBuilder, KVCacheConfig
from .codec import Codec, methods
from .evaluate import cli_path, needle, ppl, validate
from .model import Generation, Model

__version__ = _ffi.string(_lib.vq_version()).decode()

__all__ = [
    "Model", "Generation", "KVCacheConfig", "KVCacheBuilder", "KVCache", "Codec", "methods",
    "validate", "ppl", "needle", "cli_path", "live_handles", "VeloxQuantError",
    "InvalidArgumentError", "FormatError", "IOFailure", "UnsupportedError",
    "NeedsCalibrationError", "StateError", "OutOfMemory", "heap_in_use",
]


def heap_in_use():
    """Bytes the C heap has handed out and not had back (glibc's mallinfo2:
    small blocks + mmapped blocks); 0 where it is not available."""
    return int(_lib.vq_py_heap_in_use())
