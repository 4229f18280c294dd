/* error.h -- status codes with messages, for library code.
 *
 * Library code reports a failure by calling vq_fail(), which formats a
 * message into the handle's buffer (if any) and into the calling thread's
 * last-error buffer, and returns the status so the call site can write
 *     return vq_fail(c->err, VQ_ERR_INVALID_ARG, "bits=%d out of range", b);
 * Nothing is printed. */
#ifndef VQ_CORE_ERROR_H
#define VQ_CORE_ERROR_H

#include "veloxquant.h"

#define VQ_ERRLEN 256

#if defined(__GNUC__)
#define VQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VQ_PRINTF(a, b)
#endif

/* Record a failure. handle_err may be NULL (no handle yet). Returns st. */
vq_status vq_fail(char *handle_err, vq_status st, const char *fmt, ...) VQ_PRINTF(3, 4);

/* Clear a handle's message (the thread's message is left alone). */
void vq_err_clear(char *handle_err);

/* Return early from a function on a failing status. */
#define VQ_TRY(expr)                  \
    do {                              \
        vq_status vq_try_st_ = (expr); \
        if (vq_try_st_ != VQ_OK)      \
            return vq_try_st_;        \
    } while (0)

#endif
