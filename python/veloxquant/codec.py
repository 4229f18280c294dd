"""codec.py -- Codec: one compression method for vectors of one head_dim.

numpy in, numpy/bytes out, over vq_codec_*: inputs that are already
C-contiguous float32 are passed to C by pointer (no copy); anything else is
converted once (np.ascontiguousarray). Outputs are allocated once and
filled by C: encode returns a bytearray of n * bytes_per_token bytes (a
bytes-like object: bytes(c), c == b"...", files and numpy all take it),
decode and score return float32 arrays.
"""
import numpy as np

from ._errors import check
from ._handle import Owned
from ._lib import ffi, lib
from .model import _text

_ROLES = {"key": 0, "keys": 0, "value": 1, "values": 1}


def _f32_rows(x, head_dim, what):
    a = np.ascontiguousarray(x, dtype=np.float32)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2 or a.shape[1] != head_dim:
        raise ValueError(f"{what}: expected shape (n, {head_dim}), got {np.shape(x)}")
    return a


def _ptr(ctype, arr):
    return ffi.cast(ctype, ffi.from_buffer(arr))


class Codec(Owned):
    """Codec(spec, head_dim=128, role="key", seed=0), e.g.
    Codec("q4_0:rot=1", head_dim=64). A bad spec or head_dim raises
    ValueError with the C library's message."""

    _kind = "codec"

    def __init__(self, spec, head_dim=128, role="key", seed=0):
        if role not in _ROLES:
            raise ValueError(f"role must be 'key' or 'value', not {role!r}")
        out = ffi.new("vq_codec **")
        check(lib.vq_codec_create(str(spec).encode("utf-8"), int(head_dim), _ROLES[role],
                                  int(seed), out))
        self._own(out[0], lib.vq_codec_free)

    def _check(self, status):
        check(status, lambda: lib.vq_codec_error(self._ptr))

    # ---- description -----------------------------------------------------
    name = property(lambda self: _text(lib.vq_codec_name(self._h)))
    spec = property(lambda self: _text(lib.vq_codec_spec(self._h)))
    head_dim = property(lambda self: int(lib.vq_codec_head_dim(self._h)))
    role = property(lambda self: "key" if lib.vq_codec_role(self._h) == 0 else "value")
    block_tokens = property(lambda self: int(lib.vq_codec_block_tokens(self._h)))
    block_bytes = property(lambda self: int(lib.vq_codec_block_bytes(self._h)))
    bytes_per_token = property(lambda self: int(lib.vq_codec_bytes_per_token(self._h)),
                               doc="bytes stored per token, metadata included")
    shared_bytes = property(lambda self: int(lib.vq_codec_shared_bytes(self._h)))
    bits_per_element = property(lambda self: float(lib.vq_codec_bits_per_element(self._h)))
    needs_calibration = property(lambda self: bool(lib.vq_codec_needs_calibration(self._h)))
    is_ready = property(lambda self: bool(lib.vq_codec_is_ready(self._h)))

    def __repr__(self):
        return f"Codec({self.spec!r}, head_dim={self.head_dim})" if not self.closed else "<Codec closed>"

    def _n_tokens(self, n, what):
        bt = self.block_tokens
        if n % bt:
            raise ValueError(f"{what}: {n} tokens is not a multiple of the block ({bt} tokens)")
        return n

    def _codes(self, codes, what):
        """(pointer, tokens) of a bytes-like object of whole blocks."""
        mv = memoryview(codes).cast("B")
        bb, bt = self.block_bytes, self.block_tokens
        if len(mv) % bb:
            raise ValueError(f"{what}: {len(mv)} bytes is not a multiple of the block ({bb} bytes)")
        return ffi.from_buffer(mv), len(mv) // bb * bt

    # ---- data path -------------------------------------------------------
    def encode(self, x, out=None):
        """Packed codes of x (n, head_dim) float32, n a multiple of
        block_tokens: n * bytes_per_token bytes (a bytearray, or written
        into `out`, any writable buffer of that size, which is returned)."""
        h = self._h
        a = _f32_rows(x, self.head_dim, "encode")
        n = self._n_tokens(a.shape[0], "encode")
        size = n * self.bytes_per_token
        if out is None:
            out = bytearray(size)
        if memoryview(out).nbytes != size:
            raise ValueError(f"encode: out holds {memoryview(out).nbytes} bytes, needs {size}")
        self._check(lib.vq_codec_encode(h, _ptr("float *", a), n,
                                        ffi.from_buffer(out, require_writable=True)))
        return out

    def decode(self, codes):
        """The vectors (n, head_dim) float32 that codes (from encode) hold."""
        h = self._h
        src, n = self._codes(codes, "decode")
        x = np.empty((n, self.head_dim), dtype=np.float32)
        self._check(lib.vq_codec_decode(h, src, n, _ptr("float *", x)))
        return x

    def _prepare(self, queries):
        h = self._h
        q = _f32_rows(queries, self.head_dim, "queries")
        qb = self.query_bytes
        buf = ffi.new("unsigned char[]", max(1, qb * q.shape[0]))
        for j in range(q.shape[0]):
            self._check(lib.vq_codec_prepare_query(h, _ptr("float *", q[j]), buf + j * qb))
        return buf, q.shape[0]

    @property
    def query_bytes(self):
        return int(lib.vq_codec_query_bytes(self._h))

    def score(self, queries, codes):
        """Dot products <q_j, k_i> of queries (n_q, head_dim) with the keys in
        codes, computed on the packed codes: float32 (n_q, n)."""
        qbuf, n_q = self._prepare(queries)
        src, n = self._codes(codes, "score")
        s = np.empty((n_q, n), dtype=np.float32)
        self._check(lib.vq_codec_score(self._h, qbuf, n_q, src, n, _ptr("float *", s)))
        return s

    def accumulate(self, weights, codes):
        """sum_i w[j, i] * v_i over the values in codes, computed on the packed
        codes: float32 (n_q, head_dim) for weights (n_q, n)."""
        h = self._h
        src, n = self._codes(codes, "accumulate")
        w = np.ascontiguousarray(weights, dtype=np.float32)
        if w.ndim == 1:
            w = w.reshape(1, -1)
        if w.ndim != 2 or w.shape[1] != n:
            raise ValueError(f"accumulate: weights must have shape (n_q, {n}), got {np.shape(weights)}")
        n_q = w.shape[0]
        asz = int(lib.vq_codec_accum_size(h))
        acc = np.zeros((n_q, asz), dtype=np.float32)
        self._check(lib.vq_codec_accumulate(h, _ptr("float *", w), n_q, src, n, _ptr("float *", acc)))
        out = np.empty((n_q, self.head_dim), dtype=np.float32)
        for j in range(n_q):
            self._check(lib.vq_codec_accum_finish(h, _ptr("float *", acc[j]), _ptr("float *", out[j])))
        return out

    # ---- calibration -----------------------------------------------------
    def calibrate(self, samples):
        """Learn the calibration state (vecinfer, spectral) from sample vectors
        (n, head_dim); other methods ignore the call."""
        a = _f32_rows(samples, self.head_dim, "calibrate")
        self._check(lib.vq_codec_calibrate(self._h, _ptr("float *", a), a.shape[0]))

    def state(self):
        """The calibration state as bytes (docs/FORMATS.md)."""
        h = self._h
        n = ffi.new("size_t *")
        self._check(lib.vq_codec_state_write(h, ffi.NULL, 0, n))
        buf = bytearray(n[0])
        self._check(lib.vq_codec_state_write(h, ffi.from_buffer(buf, require_writable=True), n[0], n))
        return bytes(buf[: n[0]])

    def load_state(self, data):
        """Restore a state from state() (refused if method/head_dim/role/params differ)."""
        mv = memoryview(data).cast("B")
        self._check(lib.vq_codec_state_read(self._h, ffi.from_buffer(mv), len(mv)))


def methods():
    """{method name: its spec with default parameters} for every registered codec."""
    out = {}
    spec = ffi.new("const char **")
    i = 0
    while True:
        name = lib.vq_codec_method(i, spec)
        if name == ffi.NULL:
            return out
        out[_text(name)] = _text(spec[0])
        i += 1
