/* pool.h -- a small persistent thread pool for data-parallel kernels.
 *
 * vq_pool_run(p, fn, ctx) calls fn(ctx, i, n) once for every i in [0, n)
 * where n = vq_pool_size(p), the calling thread taking i = 0, and returns
 * when all calls have returned. Workers are created once (vq_pool_create)
 * and wait between jobs: they spin briefly (so back-to-back jobs of a
 * decode step start in microseconds) and then sleep on a condition
 * variable (so an idle pool costs no CPU).
 *
 * A pool of size 1 creates no thread: vq_pool_run then is a plain call.
 * One job at a time: vq_pool_run must not be called concurrently on one
 * pool, nor from inside a job. fn must not fail; it records any problem in
 * its ctx. vq_pool_free(NULL) is harmless.
 *
 * vq_pool_split(total, i, n, &begin, &end) gives part i of n of [0, total)
 * in near-equal contiguous ranges (helper for row splitting). */
#ifndef VQ_CORE_POOL_H
#define VQ_CORE_POOL_H

#include <stddef.h>

#include "veloxquant.h"

typedef struct vq_pool vq_pool;
typedef void (*vq_pool_fn)(void *ctx, int i, int n);

/* n_threads <= 0: the number of online CPUs (capped at 64), or the value of
 * the environment variable VQ_THREADS when set. */
vq_status vq_pool_create(int n_threads, vq_pool **out);
void vq_pool_free(vq_pool *p);
int vq_pool_size(const vq_pool *p);
void vq_pool_run(vq_pool *p, vq_pool_fn fn, void *ctx);

static inline void vq_pool_split(size_t total, int i, int n, size_t *begin, size_t *end)
{
    size_t base = total / (size_t)n, rem = total % (size_t)n, ui = (size_t)i;
    *begin = ui * base + (ui < rem ? ui : rem);
    *end = *begin + base + (ui < rem ? 1 : 0);
}

#endif
