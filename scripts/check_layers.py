#!/usr/bin/env python3
"""check_layers.py [ROOT] -- the layer rule, checked on every quoted #include.

A file may include headers of its own layer and of the layers below it only:

    core -> kernels -> codec -> cache -> model -> tools
    core -> tok (the tokenizer, core only) -> model
    core -> kernels -> codec -> gpu (the CUDA part, built apart)

include/ (the public headers) is below everything and includes only itself;
tools/ (the CLI) and examples/ use the public headers and their own folder,
never a src/ header. tests/ and bench/ are exempt (they test internals).

Each quoted include is resolved the way the compiler does: first beside the
including file, then along the -I path of that file's build (-Iinclude -Isrc
-Itests/util for the library, -Iinclude -Itools for tools/, -Iinclude for
examples/). An include that resolves nowhere is an error too. Exit 0 when
every include keeps the rule, 1 otherwise (one line per violation).

--self-test: runs the check on a small made-up tree with one include of
each kind (allowed and not) and exits 1 unless it finds exactly the
violations planted there (so a broken check cannot pass silently)."""
import os
import re
import sys

# layer -> the layers its files may include (its own included)
ALLOWED = {
    "include": {"include"},
    "core": {"include", "core"},
    "kernels": {"include", "core", "kernels"},
    "tok": {"include", "core", "tok"},
    "codec": {"include", "core", "kernels", "codec"},
    "cache": {"include", "core", "kernels", "codec", "cache"},
    "model": {"include", "core", "kernels", "codec", "cache", "tok", "model"},
    "gpu": {"include", "core", "kernels", "codec", "gpu"},
    "tools": {"include", "tools"},
    "examples": {"include", "examples"},
}
# the -I path each part of the tree is compiled with (Makefile, src/gpu/gpu.mk)
SEARCH = {
    "tools": ["include", "tools"],
    "examples": ["include"],
}
LIB_SEARCH = ["include", "src", "tests/util"]
SOURCES = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(rel):
    """The layer of a path relative to the root, or None (exempt/unknown)."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] in ("include", "tools", "examples"):
        return parts[0]
    return None  # tests/, bench/, tests/util/, ...


def resolve(root, rel, name):
    """The including file's directory first, then its -I path."""
    here = os.path.dirname(rel)
    layer = layer_of(rel)
    for d in [here] + SEARCH.get(layer, LIB_SEARCH):
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def check(root):
    """(violation lines, files checked, quoted includes seen)"""
    bad = []
    n_files = n_inc = 0
    for top in ("src", "include", "tools", "examples"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                layer = layer_of(rel)
                if layer is None:
                    continue
                if layer not in ALLOWED:
                    bad.append(f"{rel}: folder of no known layer (add it to scripts/check_layers.py)")
                    continue
                n_files += 1
                with open(os.path.join(root, rel), errors="replace") as fh:
                    text = fh.read()
                for m in INCLUDE_RE.finditer(text):
                    n_inc += 1
                    line = text.count("\n", 0, m.start()) + 1
                    target = resolve(root, rel, m.group(1))
                    if target is None:
                        hidden = os.path.isfile(os.path.join(root, "src", m.group(1)))
                        bad.append(f'{rel}:{line}: "{m.group(1)}" ' +
                                   (f"is a src/ header; layer {layer} uses the public API only" if hidden
                                    else "resolves to no file on its include path"))
                        continue
                    tl = layer_of(target)
                    if tl not in ALLOWED[layer]:
                        bad.append(f'{rel}:{line}: layer {layer} includes "{m.group(1)}" ({target}, '
                                   f"layer {tl or 'tests/other'}); allowed: {', '.join(sorted(ALLOWED[layer]))}")
    return bad, n_files, n_inc


def self_test():
    import tempfile
    files = {  # path: (includes, number of them that break the rule)
        "include/veloxquant.h": ([], 0),
        "src/core/a.h": (["veloxquant.h"], 0),
        "src/core/b.c": (["core/a.h", "codec/c.h", "test.h"], 2),
        "src/tok/t.h": (["core/a.h"], 0),
        "src/tok/t.c": (["t.h", "model/m.h"], 1),
        "src/codec/c.h": (["core/a.h", "tok/t.h"], 1),
        "src/model/m.h": (["tok/t.h", "codec/c.h"], 0),
        "tools/u.c": (["veloxquant.h", "core/a.h", "../src/core/a.h", "nowhere.h"], 3),
        "tests/util/test.h": (["model/m.h"], 0),
        "tests/x.c": (["core/a.h", "model/m.h"], 0),
    }
    with tempfile.TemporaryDirectory() as root:
        for path, (incs, _) in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write("".join(f'#include "{i}"\n' for i in incs))
        bad, _, _ = check(root)
    want = sum(n for _, n in files.values())
    found = {}
    for b in bad:
        found[b.split(":")[0]] = found.get(b.split(":")[0], 0) + 1
    ok = len(bad) == want and all(found.get(p, 0) == n for p, (_, n) in files.items())
    print(f"check_layers: self-test {'passed' if ok else 'FAILED'} ({len(bad)} of {want} planted violations found)")
    if not ok:
        for b in bad:
            print("  " + b)
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    bad, n_files, n_inc = check(root)
    for b in bad:
        print("check_layers: " + b)
    print(f"check_layers: {n_files} files, {n_inc} quoted includes, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
