/* pool.c -- persistent pthread pool with dynamically claimed chunks (see
 * pool.h).
 *
 * Job protocol. `counter` packs (generation << 32) | next chunk index.
 * To publish job g the caller (1) stores (g, CLOSED), (2) stores the job's
 * fields (fn, ctx, sizes) and resets `done`, (3) stores (g, 0), (4) bumps
 * the futex word `gen_word` and wakes sleeping workers. A worker that sees
 * a new gen_word reads counter, then the fields, then claims chunk i by a
 * compare-exchange (g, i) -> (g, i + 1); it runs the chunk and increments
 * `done`. The compare-exchange can only succeed while the job it read the
 * fields of is still open: the fields of job g + 1 are written after
 * (g + 1, CLOSED) is stored (release/acquire on the fields), so a worker
 * that read a newer field fails its claim. A worker that wakes late finds
 * no chunk left and goes back to waiting; it never holds the job up.
 *
 * Completion: `done` counts finished chunks of the current job; the caller,
 * after claiming until none is left, waits for done == n_chunks (spin, then
 * futex on `caller_waiting`, which the worker finishing the last chunk
 * clears and wakes). Every increment of `done` belongs to the current job,
 * because the next job is published only after all its chunks are done.
 *
 * Waiting: both sides spin VQ_POOL_SPIN polls with `pause` (a few to ~100
 * microseconds, depending on the CPU's pause latency) before sleeping, so a
 * decode step's back-to-back jobs skip the futex while an idle pool (between
 * tokens, or a program that stopped generating) sleeps. Without futexes
 * (non-Linux) the sleep is a sched_yield loop. */
#include "core/pool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "core/error.h"

#define VQ_POOL_MAX 64
#define VQ_POOL_SPIN 2000       /* pause polls before sleeping */
#define CHUNK_CLOSED 0xFFFFFFFFu
#define MAX_CHUNKS 0x7FFFFFFFu
/* the scaling probe (probe_scaling) */
#define PROBE_FIRST_S 0.2 /* after the pool's start: its workers up, jobs running */
#define PROBE_ITERS 100000 /* loop steps of one unit: about 0.25 ms */
#define PROBE_UNITS 2
#define PROBE_CLOCK_JOBS 64 /* jobs between two looks at the clock */

struct vq_pool {
    int n;
    pthread_t th[VQ_POOL_MAX];
    /* each worker's start argument, here rather than allocated per thread
     * (so that no worker frees memory after vq_pool_create returns) */
    struct worker_start {
        vq_pool *p;
        int i;
    } start[VQ_POOL_MAX];
    int n_started;
    unsigned gen; /* caller only */
    /* jobs on the caller alone while the threads share a core (caller
     * only; see probe_scaling); adapt_on 0: always parallel */
    int adapt_on;
    int serial;          /* the last two probes found no parallel gain */
    int low;             /* the last probe did */
    double next_probe_s; /* when to probe again */
    double scaling;      /* the last probe's reading */
    unsigned jobs_since_clock;
    _Alignas(64) _Atomic uint64_t counter;
    _Alignas(64) atomic_uint done;
    _Alignas(64) _Atomic(vq_pool_task) fn;
    _Atomic(void *) ctx;
    atomic_size_t n_items, grain;
    atomic_uint n_chunks;
    _Alignas(64) atomic_uint gen_word;
    atomic_int sleepers;
    atomic_int quit;
    _Alignas(64) atomic_uint caller_waiting;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Sleep while *w == val (spurious returns allowed); wake sleepers on w. */
static void futex_wait(atomic_uint *w, unsigned val)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
#else
    if (atomic_load(w) == val)
        sched_yield();
#endif
}

static void futex_wake_all(atomic_uint *w)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)w;
#endif
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void chunk_done(vq_pool *p, unsigned n_chunks)
{
    if (atomic_fetch_add(&p->done, 1u) + 1u == n_chunks && atomic_load(&p->caller_waiting)) {
        atomic_store(&p->caller_waiting, 0u);
        futex_wake_all(&p->caller_waiting);
    }
}

/* Claim and run chunks of the open job, if any (workers). */
static void worker_help(vq_pool *p, int tid)
{
    uint64_t v = atomic_load_explicit(&p->counter, memory_order_acquire);
    uint32_t g = (uint32_t)(v >> 32);
    if ((uint32_t)v == CHUNK_CLOSED)
        return;
    vq_pool_task fn = atomic_load_explicit(&p->fn, memory_order_acquire);
    void *ctx = atomic_load_explicit(&p->ctx, memory_order_acquire);
    size_t n_items = atomic_load_explicit(&p->n_items, memory_order_acquire);
    size_t grain = atomic_load_explicit(&p->grain, memory_order_acquire);
    unsigned n_chunks = atomic_load_explicit(&p->n_chunks, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(v >> 32) != g || (uint32_t)v >= n_chunks)
            return;
        if (!atomic_compare_exchange_weak_explicit(&p->counter, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        size_t b = (size_t)(uint32_t)v * grain;
        size_t e = n_items - b < grain ? n_items : b + grain;
        fn(ctx, b, e, tid);
        chunk_done(p, n_chunks);
        v = atomic_load_explicit(&p->counter, memory_order_acquire);
    }
}


static void *worker_main(void *arg)
{
    const struct worker_start *ws = arg;
    vq_pool *p = ws->p;
    int me = ws->i;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen_word, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->quit, memory_order_acquire)) {
            if (++spins < VQ_POOL_SPIN) {
                cpu_relax();
                continue;
            }
            atomic_fetch_add(&p->sleepers, 1); /* seq_cst: pairs with the caller's bump */
            if (atomic_load(&p->gen_word) == seen && !atomic_load(&p->quit))
                futex_wait(&p->gen_word, seen);
            atomic_fetch_sub(&p->sleepers, 1);
            spins = 0;
        }
        if (atomic_load_explicit(&p->quit, memory_order_acquire))
            return NULL;
        seen = g;
        worker_help(p, me);
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
    vq_pool *p = aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63);
    if (!p)
        return vq_fail(NULL, VQ_ERR_NOMEM, "pool: out of memory");
    p->n = n_threads;
    p->n_started = 0;
    p->gen = 0;
    p->serial = p->low = 0;
    p->next_probe_s = now_s() + PROBE_FIRST_S;
    p->scaling = 0.0;
    p->jobs_since_clock = 0;
    {
        const char *e = getenv("VQ_POOL_ADAPT");
        p->adapt_on = !(e && *e == '0');
    }
    atomic_init(&p->counter, (uint64_t)CHUNK_CLOSED);
    atomic_init(&p->done, 0u);
    atomic_init(&p->fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->n_items, 0);
    atomic_init(&p->grain, 1);
    atomic_init(&p->n_chunks, 0u);
    atomic_init(&p->gen_word, 0u);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->quit, 0);
    atomic_init(&p->caller_waiting, 0u);
    for (int i = 1; i < n_threads; i++) {
        struct worker_start *ws = &p->start[i];
        ws->p = p;
        ws->i = i;
        if (pthread_create(&p->th[i], NULL, worker_main, ws) != 0) {
            p->n = i; /* run with the threads we have */
            break;
        }
        p->n_started = i;
    }
    *out = p;
    return VQ_OK;
}

int vq_pool_size(const vq_pool *p) { return p ? p->n : 1; }

double vq_pool_scaling(const vq_pool *p) { return p && p->n > 1 ? p->scaling : 1.0; }

/* the job's nc chunks on the caller and the workers */
static void run_parallel(vq_pool *p, size_t n_items, size_t grain, size_t nc, vq_pool_task fn, void *ctx)
{
    unsigned n_chunks = (unsigned)nc;
    uint32_t g = ++p->gen;
    atomic_store(&p->counter, ((uint64_t)g << 32) | CHUNK_CLOSED);
    atomic_store_explicit(&p->fn, fn, memory_order_release);
    atomic_store_explicit(&p->ctx, ctx, memory_order_release);
    atomic_store_explicit(&p->n_items, n_items, memory_order_release);
    atomic_store_explicit(&p->grain, grain, memory_order_release);
    atomic_store_explicit(&p->n_chunks, n_chunks, memory_order_release);
    atomic_store_explicit(&p->done, 0u, memory_order_relaxed);
    atomic_store_explicit(&p->counter, (uint64_t)g << 32, memory_order_release);
    atomic_store(&p->gen_word, g); /* seq_cst: pairs with the workers' `sleepers` */
    if (atomic_load(&p->sleepers) > 0)
        futex_wake_all(&p->gen_word);

    /* the caller claims chunks like a worker (its fields are its own) */
    uint64_t v = (uint64_t)g << 32;
    unsigned mine = 0;
    for (;;) {
        uint32_t i = (uint32_t)v;
        if (i >= n_chunks)
            break;
        if (!atomic_compare_exchange_weak_explicit(&p->counter, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        size_t b = (size_t)i * grain;
        size_t e = n_items - b < grain ? n_items : b + grain;
        fn(ctx, b, e, 0);
        mine++;
        v = atomic_load_explicit(&p->counter, memory_order_acquire);
    }
    int finished = 0;
    if (mine) {
        unsigned d = atomic_fetch_add(&p->done, mine) + mine;
        finished = d == n_chunks;
    }
    int spins = 0;
    while (!finished && atomic_load_explicit(&p->done, memory_order_acquire) < n_chunks) {
        if (++spins < VQ_POOL_SPIN) {
            cpu_relax();
            continue;
        }
        atomic_store(&p->caller_waiting, 1u); /* seq_cst: pairs with chunk_done */
        if (atomic_load(&p->done) < n_chunks)
            futex_wait(&p->caller_waiting, 1u);
        spins = 0;
    }
    atomic_store_explicit(&p->caller_waiting, 0u, memory_order_relaxed);
}

/* Whether parallel pays. When the pool's threads share one physical core
 * (virtual CPUs that the host runs on one core, SMT siblings, or a core
 * another program holds), every thread of a parallel job runs slower and
 * the handoff to a worker costs tens of microseconds: on the 2-vCPU AMD
 * EPYC host in such a phase, two threads decoded 25-35% slower than one
 * (fp16 at an empty context 96-101 against 131-133 tok/s; jobs of 10-60 us
 * alone took 70-150 us in parallel), and a comparison of parallel jobs with
 * the caller's share of them never saw it, the caller's share being slowed
 * the same way. So the pool measures it directly, PROBE_FIRST_S after its
 * start and then every VQ_POOL_PROBE_EVERY_S (the clock read every
 * PROBE_CLOCK_JOBS jobs; a probe at the first job found the just-created
 * worker not yet running, and 1.5 ms is much of a short prompt):
 * PROBE_UNITS units of an arithmetic loop (no memory) on the caller alone,
 * then as many per thread as one parallel job (the faster of two runs: the
 * first may wake sleeping workers). Scaling = n x alone / parallel, at
 * most n (vq_pool_reading); a
 * reading below VQ_POOL_SERIAL_SCALING x n is low. Jobs run on the caller alone
 * after two low readings in a row, until the next probe; after a low
 * reading the next probe comes VQ_POOL_RECHECK_S later, after a good one
 * VQ_POOL_PROBE_EVERY_S later. So a single low reading (a thread held up once)
 * changes nothing, and a phase of shared cores is found within about
 * VQ_POOL_RECHECK_S. (Before, one low reading ran jobs serially for 2 s: one
 * `bench e2e` at 16k tokens on the Xeon read one cache config at 0.53x its
 * speed in the next run, 58 against 111 tok/s, while the others held
 * theirs (figures/bench/e2e16k-slow-reading-session28.txt); such a spell
 * would explain it, not confirmed.) A probe
 * takes about 3 x PROBE_UNITS units (~1.5 ms per VQ_POOL_PROBE_EVERY_S; while
 * readings are low, per VQ_POOL_RECHECK_S).
 * In that phase the pool ran decode at 147-148 tok/s with two threads
 * (one: 149-159; before the probe: 106-110). */

static void probe_task(void *ctx, size_t b, size_t e, int tid)
{
    (void)tid;
    double *sink = ctx, x[8] = { 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7 };
    for (size_t u = b; u < e; u++)
        for (long i = 0; i < PROBE_ITERS; i++)
            for (int c = 0; c < 8; c++)
                x[c] = x[c] * 0.999999 + 1e-6;
    sink[b / PROBE_UNITS % 64] = x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7]; /* (a chunk's own) */
}

static void probe_scaling(vq_pool *p, double now)
{
    double sink[64] = { 0 };
    const size_t n = (size_t)p->n * PROBE_UNITS;
    double t0 = now_s();
    probe_task(sink, 0, PROBE_UNITS, 0);
    const double alone = now_s() - t0;
    double par = 0.0;
    for (int r = 0; r < 2; r++) {
        t0 = now_s();
        run_parallel(p, n, PROBE_UNITS, (size_t)p->n, probe_task, sink);
        const double t = now_s() - t0;
        par = r == 0 || t < par ? t : par;
    }
    p->scaling = vq_pool_reading(p->n, alone, par);
    const vq_pool_mode m = vq_pool_mode_after(p->low, p->scaling, p->n, now);
    p->serial = m.serial;
    p->low = m.low;
    p->next_probe_s = m.next_s;
}

void vq_pool_for(vq_pool *p, size_t n_items, size_t grain, vq_pool_task fn, void *ctx)
{
    if (n_items == 0)
        return;
    if (grain == 0)
        grain = 1;
    if (n_items / grain >= MAX_CHUNKS)
        grain = n_items / (MAX_CHUNKS - 1) + 1;
    size_t nc = (n_items - 1) / grain + 1;
    if (!p || p->n <= 1 || nc == 1) {
        fn(ctx, 0, n_items, 0);
        return;
    }
    if (p->adapt_on) {
        if (++p->jobs_since_clock >= PROBE_CLOCK_JOBS) { /* (the clock is not free) */
            const double now = now_s();
            p->jobs_since_clock = 0;
            if (now >= p->next_probe_s)
                probe_scaling(p, now);
        }
        if (p->serial) {
            fn(ctx, 0, n_items, 0);
            return;
        }
    }
    run_parallel(p, n_items, grain, nc, fn, ctx);
}

struct run_adapter {
    vq_pool_fn fn;
    void *ctx;
    int n;
};

static void run_share(void *arg, size_t b, size_t e, int tid)
{
    (void)tid;
    const struct run_adapter *a = arg;
    for (size_t i = b; i < e; i++)
        a->fn(a->ctx, (int)i, a->n);
}

void vq_pool_run(vq_pool *p, vq_pool_fn fn, void *ctx)
{
    int n = vq_pool_size(p);
    if (n <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    struct run_adapter a = { fn, ctx, n };
    vq_pool_for(p, (size_t)n, 1, run_share, &a);
}

void vq_pool_free(vq_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->quit, 1);
    atomic_fetch_add(&p->gen_word, 1u);
    futex_wake_all(&p->gen_word);
    for (int i = 1; i <= p->n_started; i++)
        pthread_join(p->th[i], NULL);
    free(p);
}
