/* test_cache_bytes.c -- the cache's byte counters against the allocator.
 *
 * vq_cache_stats' total_bytes (pages in use, residual windows, slot index,
 * idle pool pages, per-cache buffers, shared state) must follow the heap:
 * over a run of appends, attends, evictions, compactions and a reset, the
 * heap growth since the cache was created equals the growth of total_bytes
 * within one page per stream (layer x KV head x role; small pages here, so
 * a forgotten table of a few bytes per token shows). The heap is read from
 * the allocator itself: AddressSanitizer's allocated-bytes counter under
 * ASan, glibc's mallinfo2 otherwise (skipped where neither exists).
 *
 * Also: a layer that evicts nothing holds at most 1 byte of slot index per
 * token and head (no per-slot positions, flags or scores; page tables and
 * the residual window's positions only), sinks or not, and save/load
 * keeps attention identical when the index tables are absent, present
 * (gaps after eviction) or dropped again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_bytes.h"
#include "test.h"
#include "test_cache_util.h"

/* the allocator's count: ASan's (exact) or glibc's (approximate) */
static int heap_bytes(size_t *out) { return vq_test_heap_bytes(out, 0); }

#define NL 2
#define NKV 2
#define NQ 4
#define D 64
#define PAGE 32
#define STEPS 60

static const vq_layer_shape shapes[NL] = {
    { NKV, NQ, D, 0, 0.0f },
    { NKV, NQ, D, 300, 0.0f }, /* sliding window: evicts a prefix */
};

static vq_cache *make(const char *text) { return tc_cache_make(text, NL, shapes); }

static uint64_t total(const vq_cache *c)
{
    vq_cache_usage u;
    return vq_cache_stats(c, -1, &u) == VQ_OK ? u.total_bytes : 0;
}

/* the largest page of any stream, in bytes (for the tolerance) */
static size_t max_page_bytes(const vq_cache *c)
{
    size_t m = 0;
    for (int l = 0; l < NL; l++)
        for (int r = 0; r < 2; r++) {
            vq_role role = r ? VQ_ROLE_VALUE : VQ_ROLE_KEY;
            vq_codec *cd = NULL;
            if (vq_codec_create(vq_cache_codec_spec(c, l, role), D, role, 0, &cd) != VQ_OK)
                return (size_t)PAGE * 2 * D;
            size_t b = (size_t)PAGE * vq_codec_bytes_per_token(cd);
            vq_codec_free(cd);
            m = b > m ? b : m;
        }
    return m;
}

/* append + attend `n` tokens at pos0 on every layer */
static int step(vq_cache *c, vq_rng *g, int32_t pos0, size_t n)
{
    float *k = malloc(n * NKV * D * sizeof *k), *v = malloc(n * NKV * D * sizeof *v);
    float *q = malloc(n * NQ * D * sizeof *q), *o = malloc(n * NQ * D * sizeof *o);
    int ok = k && v && q && o;
    if (ok) {
        tc_fill(g, k, n * NKV * D, 1.0f);
        tc_fill(g, v, n * NKV * D, 1.0f);
        tc_fill(g, q, n * NQ * D, 1.0f);
    }
    for (int l = 0; ok && l < NL; l++)
        ok = vq_cache_append(c, l, k, v, n, pos0) == VQ_OK &&
             vq_cache_attend(c, l, q, n, NQ, 0.125f, o) == VQ_OK;
    free(k), free(v), free(q), free(o);
    return ok;
}

static void check_config(const char *text, int evicts, int gaps)
{
    size_t h0 = 0, h = 0;
    /* without a counter the byte checks against the heap are skipped, not
     * the rest (the index bound below needs no allocator) */
    const int have_heap = heap_bytes(&h0);
    if (!have_heap)
        printf("  heap checks skipped: no allocator counter on this platform\n");
    vq_cache *c = make(text);
    CHECKF(c != NULL, "create %s", text);
    if (!c)
        return;
    size_t tol = (size_t)NL * NKV * 2 * max_page_bytes(c);
    heap_bytes(&h0);
    uint64_t t0 = total(c);
    vq_rng g;
    vq_rng_seed(&g, 5);
    int32_t pos = 0;
    int bad = 0;
    for (int s = 0; s < STEPS && !bad; s++) {
        size_t n = s == 0 ? 200 : 1 + (size_t)(vq_rng_next(&g) % 60);
        if (!step(c, &g, pos, n)) {
            CHECKF(0, "%s: append/attend failed: %s", text, vq_cache_error(c));
            break;
        }
        pos += (int32_t)n + (gaps && s % 7 == 3 ? 5 : 0); /* skipped positions: gaps */
        if (!have_heap)
            continue;
        heap_bytes(&h);
        double grow_heap = (double)h - (double)h0, grow_total = (double)total(c) - (double)t0;
        /* plus the allocator's own header per block (<= 16 B under glibc;
         * 0 under ASan), blocks being at most one per page + tables */
        double slack = (double)tol + 16.0 * (grow_total / ((double)tol / (NL * NKV * 2)) + 64);
        if (grow_heap - grow_total > slack || grow_total - grow_heap > slack) {
            CHECKF(0, "%s step %d: heap grew %.0f B, total_bytes %.0f B (tolerance %.0f)", text, s, grow_heap,
                   grow_total, slack);
            bad = 1;
        }
    }
    vq_cache_usage u, u0;
    CHECK(vq_cache_stats(c, -1, &u) == VQ_OK && vq_cache_stats(c, 0, &u0) == VQ_OK);
    printf("  %-70s held %llu tokens, index %llu B (layer 0: %llu B for %llu slots), pool %llu B, buffers %llu B, "
           "total %llu B\n",
           text, (unsigned long long)u.keys.tokens, (unsigned long long)u.index_bytes,
           (unsigned long long)u0.index_bytes, (unsigned long long)u0.keys.stored_slots,
           (unsigned long long)u.pool_free_bytes, (unsigned long long)u.buffer_bytes,
           (unsigned long long)u.total_bytes);
    /* at most 1 B of slot index per token and head where nothing is evicted:
     * layer 0 (layer 1's sliding window evicts a prefix, so it holds a
     * liveness table, 1 B per slot, on top of its page table and residual
     * positions; at its 338 slots per head that is ~2.8 B per slot) */
    if (!evicts && !gaps)
        CHECKF(u0.index_bytes <= u0.keys.stored_slots, "%s: layer 0 index %llu B > 1 B per token and head (%llu)",
               text, (unsigned long long)u0.index_bytes, (unsigned long long)u0.keys.stored_slots);
    if (!have_heap) {
        vq_cache_free(c);
        return;
    }
    /* reset: pages go to the pool, the heap keeps them, total_bytes too */
    uint64_t tb = total(c);
    size_t hb;
    heap_bytes(&hb);
    vq_cache_reset(c);
    heap_bytes(&h);
    double dh = (double)h - (double)hb, dt = (double)total(c) - (double)tb;
    CHECKF(dh - dt <= (double)tol && dt - dh <= (double)tol, "%s reset: heap %+.0f B, total_bytes %+.0f B", text, dh,
           dt);
    CHECK(vq_cache_stats(c, -1, &u) == VQ_OK && u.keys.tokens == 0 && u.pool_free_bytes > 0);
    vq_cache_free(c);
}

/* save/load with index tables absent and present: same attention */
static void check_persist(const char *text)
{
    vq_cache *c = make(text);
    CHECK(c != NULL);
    if (!c)
        return;
    vq_rng g;
    vq_rng_seed(&g, 9);
    CHECK(step(c, &g, 0, 300) && step(c, &g, 310, 40) && step(c, &g, 350, 1));
    char path[700];
    snprintf(path, sizeof path, "%s/bytes.vqcache", vq_test_tmpdir());
    CHECK(vq_cache_save(c, path) == VQ_OK);
    vq_cache *d = NULL;
    CHECKF(vq_cache_load(path, NULL, &d) == VQ_OK, "load: %s", vq_last_error());
    if (d) {
        vq_cache_usage a, b;
        CHECK(vq_cache_stats(c, -1, &a) == VQ_OK && vq_cache_stats(d, -1, &b) == VQ_OK);
        CHECK(a.keys.tokens == b.keys.tokens && a.keys.accounted_bytes == b.keys.accounted_bytes);
        float q[NQ * D], o1[NQ * D], o2[NQ * D];
        tc_fill(&g, q, NQ * D, 1.0f);
        for (int l = 0; l < NL; l++) {
            size_t n1 = 0, n2 = 0;
            int32_t p1[1024], p2[1024];
            CHECK(vq_cache_gather(c, l, 1, 1024, p1, NULL, NULL, &n1) == VQ_OK);
            CHECK(vq_cache_gather(d, l, 1, 1024, p2, NULL, NULL, &n2) == VQ_OK);
            CHECK(n1 == n2 && memcmp(p1, p2, n1 * sizeof *p1) == 0);
        }
        /* one more step on both: identical outputs */
        float k[NKV * D], v[NKV * D];
        tc_fill(&g, k, NKV * D, 1.0f);
        tc_fill(&g, v, NKV * D, 1.0f);
        for (int l = 0; l < NL; l++) {
            CHECK(vq_cache_append(c, l, k, v, 1, 400) == VQ_OK && vq_cache_append(d, l, k, v, 1, 400) == VQ_OK);
            CHECK(vq_cache_attend(c, l, q, 1, NQ, 0.125f, o1) == VQ_OK &&
                  vq_cache_attend(d, l, q, 1, NQ, 0.125f, o2) == VQ_OK);
            CHECKF(memcmp(o1, o2, sizeof o1) == 0, "%s layer %d: attention differs after load", text, l);
        }
        vq_cache_free(d);
    }
    remove(path);
    vq_cache_free(c);
}

int main(void)
{
    static const struct {
        const char *text;
        int evicts, gaps;
    } cfgs[] = {
        { "keys=q4_0 values=q4_0 page=32", 0, 0 },
        { "keys=q4_0 values=q4_0 page=32", 0, 1 },
        { "keys=kivi:bits=2,group=32 values=kivi:bits=4 residual=16 page=32", 0, 0 },
        { "keys=q8_0 values=fp16 evict=streaming_llm:sinks=4,window=100 page=32", 1, 1 },
        { "keys=q4_0 values=q4_0 evict=h2o:budget=120,sinks=2,recent=20 page=32", 1, 0 },
        { "keys=q4_0 values=q4_0 evict=snapkv:budget=100,window=16 page=32", 1, 1 },
        { "keys=kivix:bits=3,group=32,outliers=8 values=kivix:bits=2,group=32 residual=16 sinks=4 page=32", 0, 1 },
        { "keys=kivix:bits=3,group=32,outliers=8 values=kivix:bits=2,group=32 residual=16 sinks=4 page=32", 0, 0 },
        { "keys=kivix:bits=2,group=32 values=turboquant_mse:bits=1,norm=8,lsq=1 residual=16 page=32", 0, 0 },
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++)
        check_config(cfgs[i].text, cfgs[i].evicts, cfgs[i].gaps);
    check_persist("keys=q4_0 values=q4_0 page=32");
    check_persist("keys=q4_0 values=q4_0 evict=h2o:budget=120,sinks=2,recent=20 page=32");
    check_persist("keys=q8_0 values=q8_0 evict=streaming_llm:sinks=4,window=100 page=32");
    check_persist("keys=kivix:bits=2,group=32 values=kivix:bits=2,group=32 residual=8 sinks=3 page=32");
    check_persist("keys=kivix:bits=2,group=32 values=turboquant_mse:bits=2,norm=8 residual=8 sinks=3 page=32");
    return vq_test_summary("cache_bytes");
}
