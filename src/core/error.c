/* error.c -- status names and the per-thread / per-handle error messages. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char tls_err[VQ_ERRLEN];

const char *vq_status_str(vq_status st)
{
    switch (st) {
    case VQ_OK: return "ok";
    case VQ_ERR_INVALID_ARG: return "invalid argument";
    case VQ_ERR_NOMEM: return "out of memory";
    case VQ_ERR_IO: return "i/o error";
    case VQ_ERR_FORMAT: return "malformed input";
    case VQ_ERR_UNSUPPORTED: return "unsupported";
    case VQ_ERR_NEEDS_CALIBRATION: return "needs calibration";
    case VQ_ERR_STATE: return "invalid state";
    }
    return "unknown status";
}

const char *vq_last_error(void) { return tls_err; }

const char *vq_version(void) { return VQ_VERSION_STRING; }

vq_status vq_fail(char *handle_err, vq_status st, const char *fmt, ...)
{
    /* format into a local buffer first: arguments may point into tls_err
     * (callers wrap vq_last_error() with a prefix) */
    char buf[VQ_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(tls_err, buf, VQ_ERRLEN);
    if (handle_err)
        memcpy(handle_err, tls_err, VQ_ERRLEN);
    return st;
}

void vq_err_clear(char *handle_err)
{
    if (handle_err)
        handle_err[0] = '\0';
}
