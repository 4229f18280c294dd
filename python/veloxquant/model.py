"""model.py -- Model: a loaded GGUF model, its tokenizer, and generation.

Thin over vq_model_* and vq_generate: generation makes a context for the
call (vq_ctx_create, or vq_ctx_create_cached over a KVCache, which the
context borrows), runs vq_generate with a callback that collects the
pieces, and frees the context. The GIL is released inside every C call
(cffi does so for all calls); the callback takes it back for each token.
"""
import codecs
import os
import queue
import threading

from ._errors import check, error_for
from ._handle import Owned
from ._lib import ffi, lib


def _cstr(s):
    if isinstance(s, bytes):
        return s
    return os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode("utf-8")


def _text(p):
    return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""


def resolve_model_path(path_or_name):
    """The file vq_model_load reads for path_or_name (same rule as the C
    library: a path, or NAME -> $VQ_MODELS/NAME.gguf, else models/NAME.gguf
    from the working directory), made absolute."""
    s = os.fspath(path_or_name)
    if "/" in s or s.endswith(".gguf") or os.path.exists(s):
        return os.path.abspath(s)
    d = os.environ.get("VQ_MODELS") or "models"
    return os.path.abspath(os.path.join(d, s + ".gguf"))


class Model(Owned):
    """A loaded model (immutable; one model can serve several threads, each
    with its own generation). Use Model.load(); close() or `with` frees it."""

    _kind = "model"

    def __init__(self):
        raise TypeError("use Model.load(path_or_name)")

    @classmethod
    def load(cls, path_or_name):
        """Load a GGUF file, or an installed model name ("smollm2-135m")
        resolved as the C library does. Raises OSError (missing file),
        ValueError (malformed), NotImplementedError (unsupported model)."""
        out = ffi.new("vq_model **")
        check(lib.vq_model_load(_cstr(path_or_name), out))
        self = cls.__new__(cls)
        self._own(out[0], lib.vq_model_free)
        self.path = resolve_model_path(path_or_name)
        self.name_or_path = os.fspath(path_or_name)
        return self

    def __repr__(self):
        if self.closed:
            return "<veloxquant.Model closed>"
        return f"<veloxquant.Model {self.name_or_path!r} arch={self.info['arch']}>"

    # ---- description -----------------------------------------------------
    @property
    def info(self):
        """Hyperparameters (vq_model_info) as a dict."""
        mi = ffi.new("vq_model_info *")
        check(lib.vq_model_info_get(self._h, mi))
        d = {}
        for name, _ in ffi.typeof("vq_model_info").fields:
            v = getattr(mi, name)
            d[name] = _text(v) if isinstance(v, ffi.CData) else v
        return d

    def layer_info(self, layer):
        """Per-layer heads, head_dim, window and softcap (vq_layer_shape, the
        struct the cache is built for), and the layer's RoPE base
        (info's rope_base_local on sliding-window layers, else rope_base)."""
        li = ffi.new("vq_layer_shape *")
        check(lib.vq_model_layer_info(self._h, int(layer), li))
        d = {name: getattr(li, name) for name, _ in ffi.typeof("vq_layer_shape").fields}
        info = self.info
        d["rope_base"] = info["rope_base_local"] if d["window"] > 0 else info["rope_base"]
        return d

    @property
    def fingerprint(self):
        return int(lib.vq_model_fingerprint(self._h))

    @property
    def bos(self):
        return int(lib.vq_model_bos(self._h))

    @property
    def eos(self):
        return int(lib.vq_model_eos(self._h))

    # ---- tokenizer -------------------------------------------------------
    def tokenize(self, text, add_bos=True, parse_special=False):
        """Token ids (list of int) of text."""
        data = _cstr(text)
        toks = ffi.new("int32_t **")
        n = ffi.new("size_t *")
        check(lib.vq_model_tokenize(self._h, data, len(data), int(bool(add_bos)),
                                    int(bool(parse_special)), toks, n))
        try:
            return list(ffi.unpack(toks[0], n[0])) if n[0] else []
        finally:
            lib.free(toks[0])

    def detokenize(self, tokens):
        """Text of a sequence of token ids."""
        arr = ffi.new("int32_t[]", [int(t) for t in tokens])
        out = ffi.new("char **")
        check(lib.vq_model_detokenize(self._h, arr, len(arr), out))
        try:
            return ffi.string(out[0]).decode("utf-8", "replace")
        finally:
            lib.free(out[0])

    def token_piece(self, token, render_special=False):
        """Bytes of one token (a piece may be part of a UTF-8 character)."""
        n = lib.vq_model_token_piece(self._h, int(token), int(bool(render_special)), ffi.NULL, 0)
        buf = ffi.new("char[]", n + 1)
        lib.vq_model_token_piece(self._h, int(token), int(bool(render_special)), buf, n)
        return ffi.unpack(buf, n)

    def chat(self, user):
        """user wrapped in the model's chat template, ending where the assistant speaks."""
        out = ffi.new("char **")
        check(lib.vq_model_chat(self._h, _cstr(user), out))
        try:
            return ffi.string(out[0]).decode("utf-8", "replace")
        finally:
            lib.free(out[0])

    # ---- generation ------------------------------------------------------
    def generate(self, prompt, cache=None, max_tokens=128, temperature=None, stream=False,
                 top_k=None, top_p=None, min_p=None, repeat_penalty=None, repeat_last_n=None,
                 seed=None, chat=False, stop_at_eog=True, threads=0, max_context=0,
                 prompt_cache=None):
        """Continue `prompt`: text, or a sequence of token ids (run as given:
        no BOS or chat template added; vq_generate_tokens).

        cache: a KVCache built for this model (KVCacheBuilder.for_model or
        KVCache.load): the K/V live there, packed, and generation continues
        the sequence the cache holds. None: the plain float32 K/V buffer.
        prompt_cache: another name for cache.
        Sampling defaults are the C library's (vq_sampler_defaults:
        temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, seed 42);
        temperature=0 is greedy. Returns the generated text, or with
        stream=True a Generation: an iterator of text pieces (with .text and
        .stats once done)."""
        if prompt_cache is not None:
            if cache is not None and cache is not prompt_cache:
                raise TypeError("give cache or prompt_cache, not both")
            cache = prompt_cache
        if isinstance(prompt, (str, bytes)):
            prompt = _cstr(prompt)
        else:
            prompt = ffi.new("int32_t[]", [int(t) for t in prompt])
            if len(prompt) == 0:
                raise ValueError("generate: the prompt has no tokens")
        gp = ffi.new("vq_gen_params *")
        gp[0] = lib.vq_gen_defaults()
        gp.max_tokens = int(max_tokens)
        for name, v in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p),
                        ("min_p", min_p), ("repeat_penalty", repeat_penalty),
                        ("repeat_last_n", repeat_last_n), ("seed", seed)):
            if v is not None:
                setattr(gp.sampler, name, v)
        gp.chat = int(bool(chat))
        gp.stop_at_eog = int(bool(stop_at_eog))
        if cache is not None and not isinstance(cache, _kvcache_type()):
            raise TypeError("cache must be a KVCache (KVCacheBuilder.for_model / KVCache.load)")
        run = _Run(self, prompt, cache, gp, int(threads), int(max_context))
        if stream:
            return Generation(run)
        run.run()
        return run.text


def _stats_dict(st):
    return {name: getattr(st, name) for name, _ in ffi.typeof("vq_gen_stats").fields}


@ffi.def_extern()
def _vq_py_on_token(token, piece, n, user):
    run = ffi.from_handle(user)
    try:
        return run.on_token(int(token), ffi.unpack(piece, n) if n else b"")
    except BaseException as e:  # noqa: BLE001 -- re-raised after the C call returns
        run.callback_error = e
        return 1


class _Run:
    """The C side of one generation: context, vq_generate, collected pieces."""

    def __init__(self, model, prompt, cache, gp, threads, max_context):
        self.model, self.cache, self.prompt, self.gp = model, cache, prompt, gp
        self.threads, self.max_context = threads, max_context
        self.tokens, self.chunks = [], []
        self.queue = None          # set when streaming
        self.stop = False          # set by the consumer: the callback then stops C
        self.callback_error = None
        self.stats = None

    def on_token(self, token, data):  # the C callback
        self.tokens.append(token)
        self.chunks.append(data)
        if self.queue is not None:
            self.queue.put(data)
        return 1 if self.stop else 0

    @property
    def text(self):
        return b"".join(self.chunks).decode("utf-8", "replace")

    def run(self):
        model, cache = self.model, self.cache
        model._enter_busy()
        try:
            if cache is not None:
                cache._enter_busy(exclusive=True)
            try:
                self._in_ctx()
            finally:
                if cache is not None:
                    cache._leave_busy()
        finally:
            model._leave_busy()

    def _in_ctx(self):
        ctxp = ffi.new("vq_ctx **")
        if self.cache is not None:
            check(lib.vq_ctx_create_cached(self.model._h, self.cache._h, self.max_context,
                                           self.threads, ctxp))
        else:
            check(lib.vq_ctx_create(self.model._h, self.max_context, self.threads, ctxp))
        ctx = ctxp[0]
        try:
            handle = ffi.new_handle(self)
            st = ffi.new("vq_gen_stats *")
            if isinstance(self.prompt, bytes):
                status = lib.vq_generate(ctx, self.prompt, self.gp, lib._vq_py_on_token, handle, st)
            else:
                status = lib.vq_generate_tokens(ctx, self.prompt, len(self.prompt), self.gp,
                                                lib._vq_py_on_token, handle, st)
            if self.callback_error is not None:
                raise self.callback_error
            if status != lib.VQ_OK:
                raise error_for(status, _text(lib.vq_ctx_error(ctx)))
            self.stats = _stats_dict(st)
        finally:
            lib.vq_ctx_free(ctx)


_DONE = object()


class Generation:
    """A streaming generation (Model.generate(..., stream=True)): an iterator
    of text pieces as tokens are decoded (a UTF-8 character split over
    tokens comes out whole). vq_generate runs in a worker thread; .tokens,
    .text and .stats (vq_gen_stats as a dict) hold the result once the
    iterator is exhausted. close(), leaving a `with` block or dropping the
    iterator stops generation at the next token."""

    def __init__(self, run):
        self._run = run
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._error = []
        run.queue = q = queue.Queue()
        err = self._error

        def work():  # references the run, not this object, so dropping it stops the run
            try:
                run.run()
            except BaseException as e:  # noqa: BLE001 -- re-raised by the consumer
                err.append(e)
            finally:
                q.put(_DONE)

        self._thread = threading.Thread(target=work, name="veloxquant-generate", daemon=True)
        self._thread.start()
        self._open = True

    tokens = property(lambda self: self._run.tokens)
    text = property(lambda self: self._run.text)
    stats = property(lambda self: self._run.stats)

    def __iter__(self):
        return self

    def __next__(self):
        while self._open:
            item = self._run.queue.get()
            if item is _DONE:
                self._open = False
                self._thread.join()
                if self._error:
                    raise self._error.pop()
                tail = self._decoder.decode(b"", final=True)
                if tail:
                    return tail
                break
            piece = self._decoder.decode(item)
            if piece:
                return piece
        raise StopIteration

    def close(self):
        """Stop at the next token and wait for the C call to return."""
        self._run.stop = True
        self._thread.join()
        self._open = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        run = getattr(self, "_run", None)
        if run is not None:
            run.stop = True


def _kvcache_type():
    from .cache import KVCache
    return KVCache
