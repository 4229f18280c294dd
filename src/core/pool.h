/* pool.h -- a small persistent thread pool for data-parallel kernels.
 *
 * vq_pool_for(p, n_items, grain, fn, ctx) covers [0, n_items) with chunks
 * of `grain` items (the last one shorter) and calls fn(ctx, begin, end, tid)
 * once per chunk. Chunks are claimed one at a time from a shared atomic
 * counter by the calling thread and by every worker that is awake, so the
 * job finishes even when a worker is descheduled (the caller then runs the
 * remaining chunks itself): a late thread delays a job by at most the one
 * chunk it holds. tid in [0, vq_pool_size(p)) names the thread running the
 * chunk (0: the caller), for per-thread scratch; no two chunks run on the
 * same tid at once. Which thread runs which chunk varies from run to run,
 * so a chunk's result must not depend on tid or on the other chunks.
 *
 * vq_pool_run(p, fn, ctx) is the older form: fn(ctx, i, n) for every i in
 * [0, n), n = vq_pool_size(p); i is a share index (not a thread id), and
 * shares are claimed like chunks above.
 *
 * Workers are created once (vq_pool_create). Between jobs they spin for a
 * few microseconds (so back-to-back jobs of a decode step start at once)
 * and then sleep on a futex (Linux) so an idle pool costs no CPU; the
 * caller, once no chunk is left to claim, waits the same way for chunks
 * still running on workers.
 *
 * A pool of size 1 creates no thread: jobs run on the caller. One job at a
 * time: the pool must not be used concurrently, nor from inside a job. fn
 * must not fail; it records any problem in its ctx. p == NULL acts as a
 * pool of size 1; vq_pool_free(NULL) is harmless. */
#ifndef VQ_CORE_POOL_H
#define VQ_CORE_POOL_H

#include <stddef.h>

#include "veloxquant.h"

typedef struct vq_pool vq_pool;
typedef void (*vq_pool_fn)(void *ctx, int i, int n);
typedef void (*vq_pool_task)(void *ctx, size_t begin, size_t end, int tid);

/* n_threads <= 0: the number of online CPUs (capped at 64), or the value of
 * the environment variable VQ_THREADS when set. */
vq_status vq_pool_create(int n_threads, vq_pool **out);
void vq_pool_free(vq_pool *p);
int vq_pool_size(const vq_pool *p);
/* grain 0 is taken as 1; n_items 0 returns at once. */
void vq_pool_for(vq_pool *p, size_t n_items, size_t grain, vq_pool_task fn, void *ctx);
void vq_pool_run(vq_pool *p, vq_pool_fn fn, void *ctx);

/* The thread scaling the pool last measured (pool.c probe_scaling: n
 * threads of an arithmetic loop against the caller alone, at most n
 * (vq_pool_reading); 0 before its
 * first probe, 0.2 s after its start; 1 for a pool of one). After two
 * readings in a row below 0.65 x the pool's size, jobs run on the caller
 * alone until a reading above it (VQ_POOL_ADAPT=0: never). */
double vq_pool_scaling(const vq_pool *p);

/* A probe's reading from its two timings (pool.c probe_scaling): n x
 * alone / parallel, capped at n (n threads cannot do n units in less than
 * one unit's time; more is the caller's timed run held up, as a CI host
 * read 6.9 for a pool of 2), and n when the parallel time reads 0 or less.
 * Always in (0, n] for alone_s > 0. */
static inline double vq_pool_reading(int n, double alone_s, double parallel_s)
{
    const double r = parallel_s > 0.0 ? (double)n * alone_s / parallel_s : (double)n;
    return r > (double)n ? (double)n : r;
}

/* The mode rule behind it (pool.c probe_scaling), apart so that a test
 * can drive it: a probe of n threads read `scaling` at time now, the
 * previous probe's reading was low (was_low). A reading is low below
 * VQ_POOL_SERIAL_SCALING x n; jobs go serial only after two low readings
 * in a row; the next probe comes VQ_POOL_RECHECK_S after a low reading,
 * VQ_POOL_PROBE_EVERY_S after a good one. */
#define VQ_POOL_SERIAL_SCALING 0.65
#define VQ_POOL_RECHECK_S 0.25
#define VQ_POOL_PROBE_EVERY_S 2.0
typedef struct {
    int low;       /* this reading is low */
    int serial;    /* jobs on the caller alone until the next probe */
    double next_s; /* when to probe again */
} vq_pool_mode;

static inline vq_pool_mode vq_pool_mode_after(int was_low, double scaling, int n, double now)
{
    vq_pool_mode m;
    m.low = scaling < VQ_POOL_SERIAL_SCALING * (double)n;
    m.serial = m.low && was_low;
    m.next_s = now + (m.low ? VQ_POOL_RECHECK_S : VQ_POOL_PROBE_EVERY_S);
    return m;
}

/* vq_pool_split(total, i, n, &begin, &end) gives part i of n of [0, total)
 * in near-equal contiguous ranges. */
static inline void vq_pool_split(size_t total, int i, int n, size_t *begin, size_t *end)
{
    size_t base = total / (size_t)n, rem = total % (size_t)n, ui = (size_t)i;
    *begin = ui * base + (ui < rem ? ui : rem);
    *end = *begin + base + (ui < rem ? 1 : 0);
}

#endif
