"""evaluate.py -- validate(), ppl() and needle(): the CLI's measurements.

These harnesses live in the CLI (tools/), not in the library, so each
function runs the `veloxquant` binary built with this package
(veloxquant/bin/veloxquant; $VQ_CLI overrides) with the same options and
returns the same dictionary the CLI writes: validate's results.json
(schema "veloxquant.validate/1"), ppl's and needle's --json output. Progress
lines (stderr) are passed through when verbose=True; on failure the CLI's
message is raised as VeloxQuantError (ValueError for bad options).
"""
import json
import os
import subprocess
import tempfile

from ._errors import InvalidArgumentError, VeloxQuantError
from .cache import KVCacheConfig
from .model import Model

_HERE = os.path.dirname(os.path.abspath(__file__))


def cli_path():
    """Path of the veloxquant CLI this package runs."""
    p = os.environ.get("VQ_CLI") or os.path.join(_HERE, "bin", "veloxquant")
    if not os.path.isfile(p):
        raise FileNotFoundError(f"veloxquant CLI not found at {p} (set VQ_CLI to a built CLI)")
    if not os.access(p, os.X_OK):
        os.chmod(p, os.stat(p).st_mode | 0o111)
    return p


def run_cli(args, verbose=False, cwd=None):
    """Run the CLI with args; its stdout (text). Exit status 2 (usage) raises
    ValueError, any other failure VeloxQuantError, with the CLI's message."""
    proc = subprocess.run([cli_path()] + [str(a) for a in args], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=None if verbose else subprocess.PIPE)
    if proc.returncode != 0:
        err = (proc.stderr or b"").decode("utf-8", "replace").strip()
        # the message: the line "veloxquant CMD: ..." (usage lines may follow
        # it, progress lines precede it); else the last line
        lines = err.splitlines()
        msgs = [ln for ln in lines if ln.startswith("veloxquant")]
        msg = msgs[0].split(": ", 1)[-1] if msgs else lines[-1] if lines else f"exit status {proc.returncode}"
        cls = InvalidArgumentError if proc.returncode == 2 else VeloxQuantError
        raise cls(f"veloxquant {args[0]}: {msg}")
    return proc.stdout.decode("utf-8", "replace")


def _model_arg(model):
    """A model for the CLI: a Model's absolute path, or a name/path as given
    (made absolute when it names an existing file)."""
    if isinstance(model, Model):
        return model.path
    s = os.fspath(model)
    return os.path.abspath(s) if os.path.exists(s) else s


def _cfg_text(c):
    return str(c) if isinstance(c, KVCacheConfig) else str(c)


def _caches(caches):
    if caches is None:
        return []
    if isinstance(caches, (str, KVCacheConfig)):
        caches = [caches]
    out = []
    for c in caches:
        out += ["--cache", _cfg_text(c)]
    return out


def validate(model, arms=None, max_tokens=None, prompt=None, prompt_repeat=None, chat=True,
             quality=True, fork=True, threads=None, calib=None, out_dir=None, verbose=False):
    """`veloxquant validate`: per arm, bytes, memory, speed, output preview
    and quality against fp16. arms: None (the default arms), names of
    default arms ("fp16,q4_0-rot" or a list), or {name: config} for your
    own (config: KVCacheConfig or text). Returns results.json as a dict
    (kept in out_dir if given, else written to a temporary directory)."""
    model_arg = _model_arg(model)
    args = ["validate", "--model", model_arg]
    if isinstance(arms, dict):
        for name, cfg in arms.items():
            args += ["--arm", f"name={name} {_cfg_text(cfg)}"]
    elif isinstance(arms, str):
        args += ["--arms", arms]
    elif arms is not None:
        args += ["--arms", ",".join(arms)]
    for flag, v in (("--max-tokens", max_tokens), ("--prompt", prompt),
                    ("--prompt-repeat", prompt_repeat), ("--threads", threads), ("--calib", calib)):
        if v is not None:
            args += [flag, v]
    if not chat:
        args.append("--no-chat")
    if not quality:
        args.append("--no-quality")
    if not fork:
        args.append("--no-fork")
    with tempfile.TemporaryDirectory(prefix="vq-validate-") as tmp:
        out = os.path.abspath(out_dir) if out_dir else tmp
        run_cli(args + ["--out", out], verbose=verbose)
        short = os.path.basename(model_arg)
        short = short[:-5] if short.endswith(".gguf") else short
        with open(os.path.join(out, short, "results.json"), encoding="utf-8") as f:
            return json.load(f)


def ppl(model, file, ctx, chunks=None, skip=None, caches=None, threads=None, verbose=False):
    """`veloxquant ppl --json`: perplexity of model on a text file in chunks
    of ctx tokens; with caches (configs), each against fp16 in the same run
    (dPPL, KL, top-1, bits/element, K+V bytes at 8k)."""
    args = ["ppl", "--model", _model_arg(model), "--file", os.path.abspath(os.fspath(file)),
            "--ctx", int(ctx), "--json"]
    for flag, v in (("--chunks", chunks), ("--skip", skip), ("--threads", threads)):
        if v is not None:
            args += [flag, v]
    return json.loads(run_cli(args + _caches(caches), verbose=verbose))


def needle(model, ctx, caches=None, depths=None, seeds=None, threads=None, verbose=False):
    """`veloxquant needle --json`: passkey retrieval accuracy over depths and
    seeds at ctx tokens, fp16 first, then each cache config."""
    args = ["needle", "--model", _model_arg(model), "--ctx", int(ctx), "--json"]
    if depths is not None:
        args += ["--depths", ",".join(str(float(d)) for d in depths)]
    for flag, v in (("--seeds", seeds), ("--threads", threads)):
        if v is not None:
            args += [flag, v]
    return json.loads(run_cli(args + _caches(caches), verbose=verbose))
