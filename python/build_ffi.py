"""build_ffi.py -- the cffi (API mode) description of the C library.

The declarations handed to cffi are generated from include/veloxquant.h
itself (comments and preprocessor lines removed, `#ifdef __cplusplus`
blocks dropped, integer `#define`s kept), and the generated C module then
compiles with `#include "veloxquant.h"`: a declaration that disagrees with
the header fails the build instead of crashing at run time. Nothing of the
API is declared here by hand; only the Python callback (`extern "Python"`),
libc's free() and a heap counter for the tests are added.

Used by setup.py (`cffi_modules`) and importable for `source_root()`.
"""
import os
import re

import cffi

HERE = os.path.dirname(os.path.abspath(__file__))


def source_root():
    """Directory holding include/veloxquant.h, src/ and tools/: $VQ_SOURCE_DIR,
    else csrc/ beside this file (an sdist), else the repository (python/..)."""
    for root in (os.environ.get("VQ_SOURCE_DIR"), os.path.join(HERE, "csrc"), os.path.dirname(HERE)):
        if root and os.path.isfile(os.path.join(root, "include", "veloxquant.h")):
            return os.path.abspath(root)
    raise RuntimeError("veloxquant: C sources not found (set VQ_SOURCE_DIR to the repository root)")


def header_cdef(text):
    """The header's declarations in the form cffi's cdef() parses."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\\\n", " ", text)  # continued lines (multi-line #define) as one
    out, skipping = [], []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("#"):
            if not any(skipping):
                out.append(line)
            continue
        words = s[1:].split()
        if not words:
            continue
        if words[0] in ("if", "ifdef", "ifndef"):
            skipping.append(words[0] == "ifdef" and words[1:2] == ["__cplusplus"])
        elif words[0] == "endif":
            skipping.pop()
        elif words[0] in ("else", "elif"):
            raise RuntimeError("build_ffi: #else/#elif in veloxquant.h is not handled")
        elif (words[0] == "define" and not any(skipping) and len(words) == 3
              and re.fullmatch(r"-?\d+", words[2])):
            out.append(s)
    return "\n".join(out)


# Added to the header's declarations: the callback into Python
# (vq_token_cb), free() for the arrays the API hands back (tokenize,
# detokenize, chat: "caller frees with free()"), and the heap counter the
# memory tests read (glibc's mallinfo2; 0 elsewhere).
EXTRA_CDEF = """
void free(void *);
extern "Python" int _vq_py_on_token(int32_t token, const char *piece, size_t len, void *user);
size_t vq_py_heap_in_use(void);
"""

EXTRA_SOURCE = r"""
#include <stdlib.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
/* bytes the C heap has handed out and not had back (small + mmapped) */
static size_t vq_py_heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
#else
static size_t vq_py_heap_in_use(void) { return 0; }
#endif
"""


def make_builder(root=None):
    root = root or source_root()
    with open(os.path.join(root, "include", "veloxquant.h"), encoding="utf-8") as f:
        cdef = header_cdef(f.read())
    ffi = cffi.FFI()
    ffi.cdef(cdef + EXTRA_CDEF)
    # The library's objects are compiled and added by setup.py's build_ext
    # (per-file ISA flags), so only the generated module is listed here.
    ffi.set_source(
        "veloxquant._lib",
        '#include "veloxquant.h"\n' + EXTRA_SOURCE,
        include_dirs=[os.path.join(root, "include")],
        extra_compile_args=["-std=gnu11", "-pthread"],
        libraries=["m"],
        extra_link_args=["-pthread"],
    )
    return ffi


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
