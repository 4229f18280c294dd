/* test_pool.c -- the thread pool (src/core/pool.h): every item of a job is
 * covered exactly once, tids stay in range and no tid runs two chunks at
 * once, vq_pool_run calls every share once, many back-to-back jobs of
 * varying sizes (the decode pattern) complete, a pool that went to sleep
 * wakes up, NULL / size-1 pools run inline, and the scaling probe reads
 * a plausible value while jobs keep their coverage. (The attention row
 * kernels are the kernel layer's: tests/test_kernels.c.) */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "core/cpu.h"
#include "core/pool.h"
#include "model/ops.h"
#include "test.h"

#define MAX_ITEMS 20000

typedef struct {
    atomic_int hits[MAX_ITEMS];
    atomic_int busy[64];   /* chunks running per tid right now */
    atomic_int bad_tid, overlap;
    int n_threads;
} cover_ctx;

static void cover(void *arg, size_t b, size_t e, int tid)
{
    cover_ctx *c = arg;
    if (tid < 0 || tid >= c->n_threads) {
        atomic_fetch_add(&c->bad_tid, 1);
        return;
    }
    if (atomic_fetch_add(&c->busy[tid], 1) != 0)
        atomic_fetch_add(&c->overlap, 1);
    for (size_t i = b; i < e; i++)
        atomic_fetch_add(&c->hits[i], 1);
    atomic_fetch_sub(&c->busy[tid], 1);
}

static void check_job(vq_pool *p, cover_ctx *c, size_t n, size_t grain)
{
    for (size_t i = 0; i < n; i++)
        atomic_store(&c->hits[i], 0);
    vq_pool_for(p, n, grain, cover, c);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += atomic_load(&c->hits[i]) != 1;
    CHECKF(wrong == 0, "pool of %d: %zu of %zu items not run exactly once (grain %zu)",
           c->n_threads, wrong, n, grain);
}

static void test_cover(void)
{
    int reps = vq_test_quick() ? 200 : 2000;
    for (int nt = 1; nt <= 4; nt++) {
        vq_pool *p = NULL;
        CHECK(vq_pool_create(nt, &p) == VQ_OK);
        if (!p)
            return;
        CHECK(vq_pool_size(p) == nt);
        cover_ctx *c = calloc(1, sizeof *c);
        c->n_threads = nt;
        unsigned s = 12345;
        for (int r = 0; r < reps; r++) {
            s = s * 1103515245u + 12345u;
            size_t n = 1 + (s >> 8) % 3000, grain = 1 + (s >> 20) % 64;
            check_job(p, c, n, grain);
        }
        check_job(p, c, MAX_ITEMS, 1);  /* many tiny chunks */
        check_job(p, c, 7, 0);          /* grain 0 means 1 */
        vq_pool_for(p, 0, 4, cover, c); /* empty job: no call */
        CHECK(atomic_load(&c->bad_tid) == 0);
        CHECK(atomic_load(&c->overlap) == 0);
        /* let workers fall asleep, then a job must still complete */
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        check_job(p, c, 1000, 3);
        free(c);
        vq_pool_free(p);
    }
    cover_ctx *c = calloc(1, sizeof *c);
    c->n_threads = 1;
    check_job(NULL, c, 100, 7); /* NULL pool: inline, tid 0 */
    CHECK(atomic_load(&c->bad_tid) == 0);
    free(c);
    vq_pool_free(NULL);
}

typedef struct {
    atomic_int seen[64];
    atomic_int bad;
} share_ctx;

static void share(void *arg, int i, int n)
{
    share_ctx *c = arg;
    if (i < 0 || i >= n || n > 64)
        atomic_fetch_add(&c->bad, 1);
    else
        atomic_fetch_add(&c->seen[i], 1);
}

static void test_run_shares(void)
{
    for (int nt = 1; nt <= 3; nt++) {
        vq_pool *p = NULL;
        CHECK(vq_pool_create(nt, &p) == VQ_OK);
        share_ctx c;
        memset(&c, 0, sizeof c);
        for (int r = 0; r < 100; r++)
            vq_pool_run(p, share, &c);
        for (int i = 0; i < nt; i++)
            CHECKF(atomic_load(&c.seen[i]) == 100, "pool of %d: share %d ran %d times", nt, i,
                   atomic_load(&c.seen[i]));
        CHECK(atomic_load(&c.bad) == 0);
        vq_pool_free(p);
    }
}

/* the pool's scaling probe: a reading in (0, n] after a job (its bounds
 * hold whatever the host's timing: vq_pool_reading caps it); jobs keep
 * covering every item whichever mode it chose (and with the probe off) */
static void test_scaling_probe(void)
{
    vq_pool *p = NULL;
    CHECK(vq_pool_create(2, &p) == VQ_OK);
    if (!p)
        return;
    CHECK(vq_pool_scaling(p) == 0.0);
    cover_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        vq_pool_free(p);
        return;
    }
    c->n_threads = 2;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double el = 0.0; /* the first probe comes 0.2 s after the start (pool.c PROBE_FIRST_S) */
    for (int r = 0; el < 5.0 && (r < 200 || vq_pool_scaling(p) == 0.0); r++) {
        check_job(p, c, 1000, 7);
        clock_gettime(CLOCK_MONOTONIC, &t);
        el = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
    }
    const double s = vq_pool_scaling(p);
    CHECKF(s > 0.0 && s <= 2.0, "pool of 2: scaling %g", s);
    CHECK(atomic_load(&c->bad_tid) == 0 && atomic_load(&c->overlap) == 0);
    vq_pool_free(p);
    CHECK(vq_pool_scaling(NULL) == 1.0);
    free(c);
}

/* the reading (pool.h vq_pool_reading): n x alone / parallel, capped at n,
 * n for a parallel time of 0 */
static void test_reading(void)
{
    CHECK(vq_pool_reading(2, 1.0, 1.0) == 2.0);
    CHECK(vq_pool_reading(2, 1.0, 2.0) == 1.0);
    CHECK(vq_pool_reading(2, 1.0, 1.6) == 1.25);
    CHECKF(vq_pool_reading(2, 3.44, 1.0) == 2.0, "held-up caller: %g", vq_pool_reading(2, 3.44, 1.0));
    CHECK(vq_pool_reading(4, 1.0, 0.5) == 4.0);
    CHECK(vq_pool_reading(4, 1.0, 2.0) == 2.0);
    CHECK(vq_pool_reading(3, 1.0, 0.0) == 3.0 && vq_pool_reading(3, 1.0, -1e-9) == 3.0);
}

/* the mode rule (pool.h vq_pool_mode_after) over a run of readings of a
 * pool of 2: serial only after two low readings in a row, back to
 * parallel at the first good one; the next probe 0.25 s after a low
 * reading, 2 s after a good one; the line itself (0.65 x n) is not low */
static void test_mode_rule(void)
{
    const double reading[] = { 1.9, 1.0, 1.9, 1.0, 1.2, 1.1, 1.95, 1.3, 1.29 };
    const int low[] = { 0, 1, 0, 1, 1, 1, 0, 0, 1 };
    const int serial[] = { 0, 0, 0, 0, 1, 1, 0, 0, 0 };
    int was_low = 0;
    for (size_t i = 0; i < sizeof reading / sizeof reading[0]; i++) {
        const double now = 10.0 * (double)i;
        const vq_pool_mode m = vq_pool_mode_after(was_low, reading[i], 2, now);
        CHECKF(m.low == low[i] && m.serial == serial[i], "reading %zu (%g): low %d serial %d", i, reading[i], m.low,
               m.serial);
        CHECKF(m.next_s == now + (low[i] ? 0.25 : 2.0), "reading %zu: next probe at %g", i, m.next_s);
        was_low = m.low;
    }
    /* a pool of 4: the line at 2.6 */
    CHECK(vq_pool_mode_after(1, 2.59, 4, 0.0).serial == 1 && vq_pool_mode_after(1, 2.61, 4, 0.0).serial == 0);
}

/* RoPE in two steps equals vq_rope bit for bit: head sizes whose half is a
 * multiple of 16 go through the kernel table's rope_pairs (whatever ISA
 * VQ_FORCE_ISA picks), the others through the scalar loop. */
static void test_rope_split(void)
{
    static const size_t dims[] = { 64, 128, 256, 40, 80, 96 };
    float inv[128], x[256], y[256], cs[256];
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        const size_t d = dims[k];
        for (size_t i = 0; i < d / 2; i++)
            inv[i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)d);
        for (int neox = 0; neox <= 1; neox++)
            for (int pos = 0; pos < 3000; pos += 371) {
                for (size_t i = 0; i < d; i++)
                    x[i] = y[i] = (float)i * 0.01f - 0.3f + (float)pos * 1e-4f;
                vq_rope(x, d, pos, inv, neox);
                vq_rope_angles(cs, d, pos, inv);
                vq_rope_apply(y, d, cs, neox);
                CHECKF(memcmp(x, y, d * sizeof x[0]) == 0, "rope split differs (d %zu, pos %d, neox %d)", d, pos,
                       neox);
            }
    }
}

int main(void)
{
    RUN(test_cover);
    RUN(test_run_shares);
    RUN(test_rope_split);
    RUN(test_scaling_probe);
    RUN(test_reading);
    RUN(test_mode_rule);
    return vq_test_summary("pool");
}
