"""build.py -- build and load the veloxquant PyTorch ops (torch.ops.veloxquant.*)
with torch.utils.cpp_extension.load (JIT, cached in build/torch_ext).

Needs `make lib cuda-lib` first (build/libveloxquant.a and
build/cuda/libveloxquant_cuda.a, compiled with -fPIC). Usage:

    import sys; sys.path.insert(0, "bindings/torch")
    import build; build.load()          # then torch.ops.veloxquant.decode_attention(...)
"""
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load(verbose=False):
    import torch
    from torch.utils.cpp_extension import load as _load
    out = os.path.join(ROOT, "build", "torch_ext")
    os.makedirs(out, exist_ok=True)
    _load(name="veloxquant_torch",
          sources=[os.path.join(ROOT, "bindings", "torch", "veloxquant_torch.cpp")],
          extra_include_paths=[os.path.join(ROOT, "include")],
          extra_cflags=["-O2"],
          extra_ldflags=[os.path.join(ROOT, "build", "cuda", "libveloxquant_cuda.a"),
                         os.path.join(ROOT, "build", "libveloxquant.a"), "-lcudart"],
          build_directory=out, with_cuda=True, is_python_module=False, verbose=verbose)
    return torch.ops.veloxquant
