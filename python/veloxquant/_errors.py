"""_errors.py -- the C library's status codes as Python exceptions.

Every failing C call returns a vq_status and keeps a message; check() turns
it into an exception whose text is that message. Each class is also the
builtin exception a Python caller would expect (a bad spec is a ValueError,
a missing file an OSError, ...), so `except ValueError` works.
"""
from ._lib import ffi, lib


class VeloxQuantError(Exception):
    """A failing C call. `status` is the vq_status name ("invalid argument")."""

    status = "error"


class InvalidArgumentError(VeloxQuantError, ValueError):
    status = "invalid argument"


class FormatError(VeloxQuantError, ValueError):
    status = "format"


class IOFailure(VeloxQuantError, OSError):
    status = "io"


class UnsupportedError(VeloxQuantError, NotImplementedError):
    status = "unsupported"


class NeedsCalibrationError(VeloxQuantError, RuntimeError):
    status = "needs calibration"


class StateError(VeloxQuantError, RuntimeError):
    status = "state"


class OutOfMemory(VeloxQuantError, MemoryError):
    status = "out of memory"


_BY_STATUS = {
    lib.VQ_ERR_INVALID_ARG: InvalidArgumentError,
    lib.VQ_ERR_NOMEM: OutOfMemory,
    lib.VQ_ERR_IO: IOFailure,
    lib.VQ_ERR_FORMAT: FormatError,
    lib.VQ_ERR_UNSUPPORTED: UnsupportedError,
    lib.VQ_ERR_NEEDS_CALIBRATION: NeedsCalibrationError,
    lib.VQ_ERR_STATE: StateError,
}


def _text(cstr):
    return ffi.string(cstr).decode("utf-8", "replace") if cstr != ffi.NULL else ""


def error_for(status, message=None):
    """The exception for a non-zero vq_status; message defaults to the
    thread's last error (vq_last_error)."""
    if message is None or message == "":
        message = _text(lib.vq_last_error())
    if not message:
        message = _text(lib.vq_status_str(status))
    return _BY_STATUS.get(status, VeloxQuantError)(message)


def check(status, handle_error=None):
    """Raise for a failing status. handle_error: the handle's own message
    getter (vq_codec_error(h), ...), preferred to the thread's message."""
    if status == lib.VQ_OK:
        return
    msg = _text(handle_error()) if handle_error is not None else None
    raise error_for(status, msg)
