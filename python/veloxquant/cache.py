"""cache.py -- KVCacheConfig, KVCacheBuilder.for_model and KVCache.

A KVCacheConfig is a parsed vq_cache_config: constructing one parses it in
C, so a bad config raises ValueError with the library's message at once.
KVCacheBuilder.for_model(model, config) builds an empty packed cache shaped
for the model (vq_cache_for_model); Model.generate(..., cache=cache) runs
with its K/V in that cache, and stats() reports what it holds.
"""
import os

from ._errors import IOFailure, check, error_for
from ._handle import Owned
from ._lib import ffi, lib
from .model import Model, _cstr, _text

_FIELDS = ("keys", "values", "residual", "evict", "cross", "page", "bits",
           "keep_first", "keep_last", "keep_spec")


def _field_text(name, value):
    if name == "bits" and not isinstance(value, str):
        value = ",".join(str(int(b)) for b in value)
    return f"{name}={value}"


# head_dims tried when checking a codec spec's parameters (every one the
# library takes is a multiple of 32 in 32..256; the common ones first)
_CHECK_HEAD_DIMS = (128, 64, 256, 96, 32, 160, 192, 224)


def _check_codec_params(canonical):
    """Refuse codec parameters now rather than at for_model.

    vq_cache_config_parse checks each codec's method name only; its
    parameters are checked when the codecs are created for a model. Here
    each codec spec of the config (keys, values, keep_spec) is created once
    with vq_codec_create, without its calib=FILE (a whole-model file that
    only the cache reads, which must exist), at the first head_dim that accepts it; if none
    does, the message of the first try is raised as ValueError, prefixed
    with the field as the config parser does."""
    for item in canonical.split():
        field, _, spec = item.partition("=")
        if field not in ("keys", "values", "keep_spec"):
            continue
        method, _, params = spec.partition(":")
        kept = [p for p in params.split(",") if p and not p.startswith("calib=")]
        for p in params.split(","):
            if p.startswith("calib=") and not os.path.isfile(p[6:]):
                raise IOFailure(f"cache config: {field}: calibration file {p[6:]} not found "
                                "(write one with `veloxquant calibrate`)")
        bare = method + (":" + ",".join(kept) if kept else "")
        role = lib.VQ_ROLE_VALUE if field == "values" else lib.VQ_ROLE_KEY
        first = None
        for hd in _CHECK_HEAD_DIMS:
            out = ffi.new("vq_codec **")
            st = lib.vq_codec_create(bare.encode("utf-8"), hd, role, 0, out)
            if st == lib.VQ_OK:
                lib.vq_codec_free(out[0])
                break
            if first is None:
                first = (st, _text(lib.vq_last_error()))
        else:
            raise error_for(first[0], f"cache config: {field}: {first[1]}")


class KVCacheConfig(Owned):
    """A cache configuration (docs/cache.md):

        KVCacheConfig(keys="turboquant_rvq:bits=4", values="kivi:bits=4",
                      residual=32, evict="streaming_llm:sinks=4,window=256",
                      cross="none", page="auto", bits=[...], keep_first=1, ...)
        KVCacheConfig.parse("keys=q4_0:rot=1 values=q4_0:rot=1")

    Fields left out take the library's defaults (fp16 keys and values).
    str(config) is the canonical text; a config refused by the library
    raises ValueError naming the field."""

    _kind = "cache_config"

    def __init__(self, keys=None, values=None, residual=None, evict=None, cross=None,
                 page=None, bits=None, keep_first=None, keep_last=None, keep_spec=None):
        given = dict(keys=keys, values=values, residual=residual, evict=evict, cross=cross,
                     page=page, bits=bits, keep_first=keep_first, keep_last=keep_last,
                     keep_spec=keep_spec)
        self._parse(" ".join(_field_text(k, given[k]) for k in _FIELDS if given[k] is not None))

    @classmethod
    def parse(cls, text):
        """A config from its text form ("keys=SPEC values=SPEC residual=N ...")."""
        self = cls.__new__(cls)
        self._parse(text)
        return self

    def _parse(self, text):
        if not isinstance(text, str):
            raise TypeError("a cache config is text")
        out = ffi.new("vq_cache_config **")
        check(lib.vq_cache_config_parse(text.encode("utf-8"), out))
        self._own(out[0], lib.vq_cache_config_free)
        try:
            _check_codec_params(str(self))
        except BaseException:
            self.close()
            raise

    def __str__(self):
        return _text(lib.vq_cache_config_str(self._h))

    def __repr__(self):
        return f"KVCacheConfig.parse({str(self)!r})" if not self.closed else "<KVCacheConfig closed>"

    def __eq__(self, other):
        return isinstance(other, KVCacheConfig) and str(self) == str(other)

    __hash__ = None

    @staticmethod
    def coerce(config):
        """A KVCacheConfig from a KVCacheConfig or its text."""
        if isinstance(config, KVCacheConfig):
            return config
        if isinstance(config, str):
            return KVCacheConfig.parse(config)
        raise TypeError("config must be a KVCacheConfig or its text")


class KVCacheBuilder:
    """Builds packed KV caches for models."""

    @staticmethod
    def for_model(model, config):
        """An empty cache shaped for `model` (per layer its heads, head_dim and
        sliding window, the model's fingerprint) with `config` (a
        KVCacheConfig or its text). Raises ValueError if the config is
        refused for this model, NeedsCalibrationError if a vecinfer/spectral
        spec names no calib=FILE."""
        if not isinstance(model, Model):
            raise TypeError("model must be a veloxquant.Model")
        cfg = KVCacheConfig.coerce(config)
        out = ffi.new("vq_cache **")
        check(lib.vq_cache_for_model(model._h, cfg._h, out))
        return KVCache._wrap(out[0])


_ROLE_FIELDS = [name for name, _ in ffi.typeof("vq_cache_role_stats").fields]


def _role(rs):
    return {name: int(getattr(rs, name)) for name in _ROLE_FIELDS}


def _usage_dict(u):
    k, v = _role(u.keys), _role(u.values)
    return {
        "tokens": k["tokens"],
        "fp16_bytes": k["fp16_bytes"] + v["fp16_bytes"],
        "accounted_bytes": k["accounted_bytes"] + v["accounted_bytes"],
        "resident_bytes": k["resident_bytes"] + v["resident_bytes"],
        "residual_bytes": k["residual_bytes"] + v["residual_bytes"],
        "shared_bytes": k["shared_bytes"] + v["shared_bytes"],
        "index_bytes": int(u.index_bytes),
        "keys": k,
        "values": v,
    }


class KVCache(Owned):
    """A packed KV cache (vq_cache). Built by KVCacheBuilder.for_model or
    KVCache.load; passed to Model.generate as its cache. Free it with
    close() / `with`, or let it be garbage collected."""

    _kind = "cache"

    def __init__(self):
        raise TypeError("use KVCacheBuilder.for_model(model, config) or KVCache.load(path, model)")

    @classmethod
    def _wrap(cls, ptr):
        self = cls.__new__(cls)
        self._own(ptr, lib.vq_cache_free)
        return self

    @classmethod
    def load(cls, path, model):
        """A cache saved with save(), checked against `model` (shape and
        fingerprint; another model's cache raises ValueError). A missing file
        raises OSError, a truncated or corrupted one ValueError."""
        if not isinstance(model, Model):
            raise TypeError("model must be a veloxquant.Model")
        out = ffi.new("vq_cache **")
        check(lib.vq_cache_load_for_model(model._h, _cstr(os.fspath(path)), out))
        return cls._wrap(out[0])

    def save(self, path):
        """Write the cache (config, codecs' state, packed pages, residual
        window, positions) to path atomically (docs/cache-format.md)."""
        self._enter_busy(exclusive=True)
        try:
            check(lib.vq_cache_save(self._ptr, _cstr(os.fspath(path))),
                  lambda: lib.vq_cache_error(self._ptr))
        finally:
            self._leave_busy()

    @property
    def n_layers(self):
        shape = ffi.new("vq_cache_shape *")
        check(lib.vq_cache_get_shape(self._h, shape))
        return shape.n_layers

    def codec_spec(self, layer, role="keys"):
        """Canonical codec spec of a layer's keys or values."""
        r = lib.VQ_ROLE_KEY if role in ("keys", "key") else lib.VQ_ROLE_VALUE
        return _text(lib.vq_cache_codec_spec(self._h, int(layer), r))

    def stats(self):
        """What the cache holds, as vq_cache_stats reports it:
        tokens (live tokens summed over layers and KV heads), fp16_bytes
        (the same tokens as fp16), accounted_bytes (packed slots x codec
        bytes/token + residual fp16), resident_bytes (pages in use + residual
        buffers) -- each K+V -- plus residual_bytes, shared_bytes,
        index_bytes, pool_free_bytes, per-role detail under "keys"/"values",
        and "layers": the same dict for each layer."""
        h = self._h
        u = ffi.new("vq_cache_usage *")
        check(lib.vq_cache_stats(h, -1, u), lambda: lib.vq_cache_error(h))
        total = _usage_dict(u)
        total["pool_free_bytes"] = int(u.pool_free_bytes)
        layers = []
        for layer in range(self.n_layers):
            check(lib.vq_cache_stats(h, layer, u), lambda: lib.vq_cache_error(h))
            layers.append(_usage_dict(u))
        total["layers"] = layers
        return total

    def reserve(self, n_tokens):
        """Make ready now the pages that n_tokens more tokens per layer will
        take (vq_cache_reserve), so appends up to then map no fresh memory;
        idle until used, they count in stats()["pool_free_bytes"].
        generate() reserves for its prompt and max_tokens by itself."""
        n = int(n_tokens)
        if n < 0:
            raise ValueError(f"n_tokens must be >= 0, got {n}")
        self._enter_busy(exclusive=True)
        try:
            check(lib.vq_cache_reserve(self._ptr, n), lambda: lib.vq_cache_error(self._ptr))
        finally:
            self._leave_busy()

    def reset(self):
        """Forget every token (pages go back to the cache's pool)."""
        self._enter_busy(exclusive=True)
        try:
            lib.vq_cache_reset(self._ptr)
        finally:
            self._leave_busy()

    def __repr__(self):
        if self.closed:
            return "<veloxquant.KVCache closed>"
        return f"<veloxquant.KVCache {self.codec_spec(0, 'keys')} / {self.codec_spec(0, 'values')}>"
