"""_handle.py -- ownership of one C handle by one Python object.

The handle is released exactly once: by close(), by leaving a `with` block,
or when the object is garbage collected (weakref.finalize, which also runs
at interpreter exit). Objects that a C handle borrows from are passed as
`keep` and stay alive until the handle is released (a context keeps its
model, so the model is never freed under it). While an operation uses the
handle (`busy`), close() refuses.
"""
import threading
import weakref

from ._lib import ffi

_live = {}
_live_lock = threading.Lock()


def live_handles():
    """{type name: handles currently owned} (for tests and leak hunting)."""
    with _live_lock:
        return {k: v for k, v in _live.items() if v}


def _count(kind, delta):
    with _live_lock:
        _live[kind] = _live.get(kind, 0) + delta


def _release(kind, free_fn, ptr, keep):
    free_fn(ptr)
    _count(kind, -1)
    del keep


class Owned:
    """Base of every handle-owning class."""

    _ptr = ffi.NULL
    _finalizer = None
    _kind = "handle"

    def _own(self, ptr, free_fn, keep=()):
        self._ptr = ptr
        self._busy = 0
        self._busy_lock = threading.Lock()
        _count(self._kind, +1)
        self._finalizer = weakref.finalize(self, _release, self._kind, free_fn, ptr, tuple(keep))

    @property
    def closed(self):
        return self._ptr == ffi.NULL

    @property
    def _h(self):
        if self._ptr == ffi.NULL:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._ptr

    def _enter_busy(self, exclusive=False):
        with self._busy_lock:
            self._h  # noqa: B018 (raises when closed)
            if exclusive and self._busy:
                raise RuntimeError(f"{type(self).__name__} is in use by another call")
            self._busy += 1

    def _leave_busy(self):
        with self._busy_lock:
            self._busy -= 1

    def close(self):
        """Release the C handle now (idempotent)."""
        if self._finalizer is None:
            return
        with self._busy_lock:
            if self._busy:
                raise RuntimeError(f"{type(self).__name__} is in use; finish that call first")
            ptr, self._ptr = self._ptr, ffi.NULL
        if ptr != ffi.NULL:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
