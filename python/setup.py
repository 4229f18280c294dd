"""setup.py -- builds the veloxquant extension and the bundled CLI.

setuptools + cffi (API mode): build_ffi.py generates the binding from
include/veloxquant.h; this file adds the library's C sources (the same
src/*/*.c the Makefile compiles, *_avx2.c / *_avx512.c / *_avx512x.c with their ISA flags
as the Makefile does, chosen at run time by the library) to the extension,
and links tools/*.c with the same objects into veloxquant/bin/veloxquant,
the CLI that validate()/ppl()/needle() run. Metadata: pyproject.toml.
"""
import glob
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_ffi import source_root  # noqa: E402

C_FLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-pthread"]
# the Makefile's per-suffix ISA flags (keep the two in step)
ISA_FLAGS = {
    "_avx2.c": ["-mavx2", "-mfma", "-mf16c", "-mpopcnt"],
    "_avx512.c": ["-mavx2", "-mfma", "-mf16c", "-mpopcnt", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq"],
    "_avx512x.c": ["-mavx2", "-mfma", "-mf16c", "-mpopcnt", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
                   "-mavx512vpopcntdq", "-mavx512vnni", "-mavx512vbmi"],
}


def _isa_flags(path):
    for suffix, flags in ISA_FLAGS.items():
        if path.endswith(suffix):
            return flags
    return []


class BuildExt(build_ext):
    """build_ext that compiles the C library once, links it into the cffi
    extension, and links the CLI from the same objects. Always rebuilds
    (force): the extension's listed source is only cffi's generated file,
    so setuptools' up-to-date check cannot see a changed library source."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True

    def _compile_all(self, sources, root, inc_dirs=("include", "src")):
        incs = [os.path.join(root, d) for d in inc_dirs]
        out_dir = os.path.join(self.build_temp, "vq")
        jobs = int(os.environ.get("VQ_BUILD_JOBS", "0")) or min(8, os.cpu_count() or 1)

        def one(src):
            return self.compiler.compile([src], output_dir=out_dir, include_dirs=incs,
                                         extra_postargs=C_FLAGS + _isa_flags(src))[0]

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, sources))

    def build_extension(self, ext):
        root = source_root()
        lib_src = sorted(glob.glob(os.path.join(root, "src", "*", "*.c")))
        tool_src = sorted(glob.glob(os.path.join(root, "tools", "*.c")) +
                          glob.glob(os.path.join(root, "tools", "util", "*.c")))
        lib_obj = self._compile_all(lib_src, root)
        ext.extra_objects = list(ext.extra_objects or []) + lib_obj
        super().build_extension(ext)
        tool_obj = self._compile_all(tool_src, root, ("include", "tools"))  # public API only
        ext_path = self.get_ext_fullpath(ext.name)
        bin_dir = os.path.join(os.path.dirname(ext_path), "bin")
        os.makedirs(bin_dir, exist_ok=True)
        self.compiler.link_executable(tool_obj + lib_obj, "veloxquant", output_dir=bin_dir,
                                      libraries=["m"], extra_postargs=["-pthread"])


class SDist(sdist):
    """sdist that carries the C sources (csrc/), so the sdist builds alone."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = source_root()
        for part in ("include", "src", "tools"):
            shutil.copytree(os.path.join(root, part), os.path.join(base_dir, "csrc", part),
                            ignore=shutil.ignore_patterns("*.o", "*.d"))


setup(
    cffi_modules=["build_ffi.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt, "sdist": SDist},
)
