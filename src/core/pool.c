/* pool.c -- persistent pthread pool (see pool.h).
 *
 * Protocol: the caller publishes (fn, ctx), bumps `generation` and wakes the
 * sleepers; each worker that sees a new generation runs its share and
 * increments `done`; the caller runs share 0 and then waits (spinning, the
 * shares are short) until done == n - 1. Workers spin on `generation` for a
 * bounded number of polls before sleeping on the condition variable, so a
 * stream of small jobs (one per matrix of a decode step) avoids a futex
 * round trip per job while an idle pool sleeps. */
#include "core/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"

#define VQ_POOL_MAX 64
#define VQ_POOL_SPIN 20000 /* polls before a worker sleeps (~ tens of us) */

struct vq_pool {
    int n;
    pthread_t th[VQ_POOL_MAX];
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vq_pool_fn fn;
    void *ctx;
    atomic_uint generation;
    atomic_int done;
    atomic_int quit;
    atomic_int sleepers;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

struct worker_start {
    vq_pool *p;
    int i;
};

static void *worker_main(void *arg)
{
    struct worker_start *ws = arg;
    vq_pool *p = ws->p;
    int me = ws->i;
    free(ws);
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->quit, memory_order_acquire)) {
            if (++spins < VQ_POOL_SPIN) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load_explicit(&p->quit, memory_order_acquire))
            return NULL;
        seen = g;
        p->fn(p->ctx, me, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

static int default_threads(void)
{
    const char *env = getenv("VQ_THREADS");
    if (env && *env) {
        int v = atoi(env);
        if (v >= 1)
            return v > VQ_POOL_MAX ? VQ_POOL_MAX : v;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    if (c < 1)
        c = 1;
    return c > VQ_POOL_MAX ? VQ_POOL_MAX : (int)c;
}

vq_status vq_pool_create(int n_threads, vq_pool **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "pool: out is NULL");
    *out = NULL;
    if (n_threads <= 0)
        n_threads = default_threads();
    if (n_threads > VQ_POOL_MAX)
        n_threads = VQ_POOL_MAX;
    vq_pool *p = calloc(1, sizeof *p);
    if (!p)
        return vq_fail(NULL, VQ_ERR_NOMEM, "pool: out of memory");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->generation, 0u);
    atomic_init(&p->done, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->sleepers, 0);
    for (int i = 1; i < n_threads; i++) {
        struct worker_start *ws = malloc(sizeof *ws);
        if (!ws) {
            vq_pool_free(p);
            return vq_fail(NULL, VQ_ERR_NOMEM, "pool: out of memory");
        }
        ws->p = p;
        ws->i = i;
        if (pthread_create(&p->th[i], NULL, worker_main, ws) != 0) {
            free(ws);
            p->n = i; /* run with the threads we have */
            break;
        }
        p->n_started = i;
    }
    *out = p;
    return VQ_OK;
}

int vq_pool_size(const vq_pool *p) { return p ? p->n : 1; }

void vq_pool_run(vq_pool *p, vq_pool_fn fn, void *ctx)
{
    if (!p || p->n <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1u); /* seq_cst: pairs with `sleepers` */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < p->n - 1) {
        if (++spins < VQ_POOL_SPIN)
            cpu_relax();
        else
            sched_yield();
    }
}

void vq_pool_free(vq_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i <= p->n_started; i++)
        pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
