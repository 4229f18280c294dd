/* test_cache_reserve.c -- vq_cache_reserve makes ahead every page that the
 * reserved tokens take.
 *
 * The pool's memory (pages in use + idle pages: resident bytes less the
 * residual windows, plus pool_free_bytes) must not grow while the reserved
 * tokens are appended one at a time as decode does, for plain, residual,
 * sinks, eviction and sliding-window configs, after prompts that leave the
 * last page at each quarter step; the same runs without a reservation
 * grow it (so the check can fail), and the reservation is at most a few
 * pages per stream above what the appends took. A reserved cache holds the same tokens
 * as an unreserved twin (gather, bitwise); a second reservation adds
 * nothing; bad arguments are refused; a cross-layer cache reserves
 * nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "test.h"
#include "test_cache_util.h"

#define NL 3
#define NKV 2
#define NQ 4
#define D 64

static const vq_layer_shape shapes[NL] = {
    { NKV, NQ, D, 0, 0.0f },
    { NKV, NQ, D, 0, 0.0f },
    { NKV, NQ, D, 200, 0.0f }, /* sliding window */
};

static vq_cache *make(const char *text) { return tc_cache_make(text, NL, shapes); }

/* bytes of the idle pages in the pool (slabs' uncarved tails not counted) */
static uint64_t idle_page_bytes(const vq_cache *c)
{
    uint64_t t = 0;
    for (size_t i = 0; i < c->pool.n_cls; i++)
        t += (uint64_t)c->pool.cls[i].n_free * c->pool.cls[i].bytes;
    return t;
}

/* n tokens appended to every layer at pos, in one call or one at a time */
static int append(vq_cache *c, uint64_t seed, int32_t pos, size_t n, int one_by_one)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    float *k = malloc(n * NKV * D * sizeof *k), *v = malloc(n * NKV * D * sizeof *v);
    int ok = k && v;
    if (ok) {
        tc_fill(&g, k, n * NKV * D, 1.0f);
        tc_fill(&g, v, n * NKV * D, 1.0f);
    }
    const size_t step = one_by_one ? 1 : (n ? n : 1);
    for (size_t t = 0; ok && t < n; t += step)
        for (int l = 0; ok && l < NL; l++)
            ok = vq_cache_append(c, l, k + t * NKV * D, v + t * NKV * D, step, pos + (int32_t)t) == VQ_OK;
    free(k);
    free(v);
    return ok;
}

/* the tokens of every (layer, head) of a and b are the same, bitwise */
static int same_tokens(vq_cache *a, vq_cache *b)
{
    int same = 1;
    for (int l = 0; l < NL && same; l++)
        for (int h = 0; h < NKV && same; h++) {
            size_t na = 0, nb = 0;
            if (vq_cache_gather(a, l, h, 0, NULL, NULL, NULL, &na) != VQ_OK ||
                vq_cache_gather(b, l, h, 0, NULL, NULL, NULL, &nb) != VQ_OK || na != nb)
                return 0;
            int32_t *pa = malloc((na + 1) * sizeof *pa), *pb = malloc((na + 1) * sizeof *pb);
            float *ka = malloc((na + 1) * D * sizeof *ka), *kb = malloc((na + 1) * D * sizeof *kb);
            float *va = malloc((na + 1) * D * sizeof *va), *vb = malloc((na + 1) * D * sizeof *vb);
            same = pa && pb && ka && kb && va && vb &&
                   vq_cache_gather(a, l, h, na, pa, ka, va, &na) == VQ_OK &&
                   vq_cache_gather(b, l, h, nb, pb, kb, vb, &nb) == VQ_OK && !memcmp(pa, pb, na * sizeof *pa) &&
                   !memcmp(ka, kb, na * D * sizeof *ka) && !memcmp(va, vb, na * D * sizeof *va);
            free(pa), free(pb), free(ka), free(kb), free(va), free(vb);
        }
    return same;
}

static void check_config(const char *text)
{
    /* prompts leaving the last page (128 tokens here) at every step */
    static const size_t prompts[] = { 0, 1, 37, 128, 200, 300, 1000 };
    static const size_t decode[] = { 1, 40, 129, 700 };
    int grew_unreserved = 0;
    for (size_t i = 0; i < sizeof prompts / sizeof *prompts; i++)
        for (size_t j = 0; j < sizeof decode / sizeof *decode; j++) {
            vq_cache *c = make(text), *twin = make(text);
            CHECKF(c && twin, "create %s", text);
            if (!c || !twin) {
                vq_cache_free(c), vq_cache_free(twin);
                return;
            }
            const size_t n0 = prompts[i], n1 = decode[j];
            int ok = append(c, 3, 0, n0, 0) && append(twin, 3, 0, n0, 0);
            uint64_t b0 = tc_pool_bytes(twin);
            CHECK_OK(vq_cache_reserve(c, n1));
            uint64_t r0 = tc_pool_bytes(c);
            CHECK_OK(vq_cache_reserve(c, n1));
            CHECKF(tc_pool_bytes(c) == r0, "%s: a second reservation grew the pool %llu -> %llu", text,
                   (unsigned long long)r0, (unsigned long long)tc_pool_bytes(c));
            ok = ok && append(c, 4, (int32_t)n0, n1, 1) && append(twin, 4, (int32_t)n0, n1, 1);
            CHECKF(ok, "%s: appends: %s / %s", text, vq_cache_error(c), vq_cache_error(twin));
            CHECKF(tc_pool_bytes(c) == r0, "%s: prompt %zu, %zu reserved tokens appended: the pool grew %llu -> %llu",
                   text, n0, n1, (unsigned long long)r0, (unsigned long long)tc_pool_bytes(c));
            grew_unreserved |= tc_pool_bytes(twin) > b0;
            /* and not much more than the appends took: per stream at most a
             * whole page and the partial sizes (<= 1.5 pages) more idle */
            const uint64_t slack = (uint64_t)NL * NKV * 2 * 3 * 128 * 2 * D;
            CHECKF(idle_page_bytes(c) <= idle_page_bytes(twin) + slack,
                   "%s: prompt %zu + %zu: %llu B of idle pages left, %llu B without the reservation", text, n0, n1,
                   (unsigned long long)idle_page_bytes(c), (unsigned long long)idle_page_bytes(twin));
            CHECKF(same_tokens(c, twin), "%s: prompt %zu + %zu: the reserved cache holds other tokens", text, n0,
                   n1);
            vq_cache_free(c);
            vq_cache_free(twin);
        }
    CHECKF(grew_unreserved, "%s: no run without a reservation grew the pool (the check shows nothing)", text);
}

static void test_reserved_appends_take_no_new_memory(void)
{
    check_config("keys=fp16 values=fp16 page=128");
    check_config("keys=q4_0:rot=1 values=q4_0:rot=1 page=128");
    check_config("keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32 page=128");
    check_config("keys=kivi:bits=4,group=32 values=q8_0 residual=64 sinks=4 page=128");
    check_config("keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 evict=streaming_llm:sinks=4,window=96 page=128");
}

static void test_bad_arguments(void)
{
    CHECK(vq_cache_reserve(NULL, 10) == VQ_ERR_INVALID_ARG);
    vq_cache *c = make("keys=fp16 values=fp16");
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(vq_cache_reserve(c, (size_t)INT32_MAX + 1) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_cache_error(c), "tokens") != NULL);
    uint64_t b = tc_pool_bytes(c);
    CHECK_OK(vq_cache_reserve(c, 0));
    CHECK(tc_pool_bytes(c) == b);
    /* 2^31 - 1 tokens of fp16 (terabytes): refused before anything is made */
    CHECK(vq_cache_reserve(c, INT32_MAX) == VQ_ERR_NOMEM);
    CHECK(strstr(vq_cache_error(c), "memory") != NULL);
    CHECK(tc_pool_bytes(c) == b);
    vq_cache_free(c);
}

static void test_cross_layer_reserves_nothing(void)
{
    vq_cache *c = make("keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 cross=minicache");
    CHECK(c != NULL);
    if (!c)
        return;
    uint64_t b = tc_pool_bytes(c);
    CHECK_OK(vq_cache_reserve(c, 1000));
    CHECK(tc_pool_bytes(c) == b);
    vq_cache_free(c);
}

int main(void)
{
    RUN(test_reserved_appends_take_no_new_memory);
    RUN(test_bad_arguments);
    RUN(test_cross_layer_reserves_nothing);
    return vq_test_summary("cache_reserve");
}
