/* test_cache_flush.c -- the residual flush on the pool (flush.c) writes the
 * bytes the serial flush writes.
 *
 * Two caches of one config, one serial and one on a pool of 3 threads (set
 * before anything else, as a model does), take the same prompt in one call
 * and then tokens one at a time, per layer; after every step each head's
 * packed codes (page bytes), positions, residual rows and counts must be
 * equal, and one query attends to the same bits, for residual configs of several codecs, with sinks, with keys
 * packed before RoPE (prerope=1: turned back in the tasks; prerope=2: the
 * serial path), and with every head flushing at the same token. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "test.h"
#include "test_cache_util.h"

#define NL 2
#define NKV 3
#define NQ 6
#define D 64

static const vq_layer_shape shapes[NL] = {
    { NKV, NQ, D, 0, 0.0f },
    { NKV, NQ, D, 0, 0.0f },
};

static void set_rope(vq_cache *c)
{
    float f[D / 2];
    for (size_t i = 0; i < D / 2; i++)
        f[i] = (float)pow(10000.0, -2.0 * (double)i / (double)D);
    for (int l = 0; l < NL; l++)
        CHECK_OK(vq_cache_set_rope(c, l, f, l)); /* layer 0 adjacent pairs, layer 1 NEOX */
}

/* 1 if head h of layer l holds the same bytes in both caches */
static int same_head(const vq_cache *a, const vq_cache *b, int l, int h)
{
    const vq_cache_layer *La = &a->layers[l], *Lb = &b->layers[l];
    const vq_cache_head *A = &La->heads[h], *B = &Lb->heads[h];
    if (A->n_packed != B->n_packed || A->n_res != B->n_res)
        return 0;
    const size_t kb = vq_codec_bytes_per_token(La->kc), vb = vq_codec_bytes_per_token(La->vc);
    for (size_t s = 0; s < A->n_packed; s++)
        if (memcmp(vq_cache_kslot(La, A, s), vq_cache_kslot(Lb, B, s), kb) ||
            memcmp(vq_cache_vslot(La, A, s), vq_cache_vslot(Lb, B, s), vb) || vq_head_pos(A, s) != vq_head_pos(B, s))
            return 0;
    const size_t rb = 2 * D;
    return memcmp(A->rk, B->rk, A->n_res * rb) == 0 && memcmp(A->rv, B->rv, A->n_res * rb) == 0 &&
           memcmp(A->rpos, B->rpos, A->n_res * sizeof *A->rpos) == 0;
}

static void check_config(const char *text, vq_pool *pool)
{
    vq_cache *a = tc_cache_make(text, NL, shapes), *b = tc_cache_make(text, NL, shapes);
    CHECKF(a && b, "%s: create: %s", text, vq_last_error());
    if (!a || !b) {
        vq_cache_free(a), vq_cache_free(b);
        return;
    }
    CHECK_OK(vq_cache_set_threads(b, pool));
    CHECKF(b->n_workers == 3, "%s: %d workers", text, b->n_workers);
    if (a->cfg->prerope)
        set_rope(a), set_rope(b);
    const size_t prompt = 150, total = vq_test_quick() ? 300 : 420;
    vq_rng g;
    vq_rng_seed(&g, 5);
    float *k = malloc(total * NKV * D * sizeof *k), *v = malloc(total * NKV * D * sizeof *v);
    if (!k || !v) {
        CHECK(0);
        free(k), free(v), vq_cache_free(a), vq_cache_free(b);
        return;
    }
    tc_fill(&g, k, total * NKV * D, 1.0f);
    tc_fill(&g, v, total * NKV * D, 1.0f);
    for (size_t i = 0; i < total * NKV * D; i += D)
        k[i + 5] += 4.0f; /* a key outlier channel, as models have */
    int same = 1, flushed = 0;
    for (size_t t = 0; t < total && same;) {
        const size_t n = t == 0 ? prompt : 1;
        for (int l = 0; l < NL; l++) {
            size_t before = b->layers[l].heads[0].n_packed;
            CHECK_OK(vq_cache_append(a, l, k + t * NKV * D, v + t * NKV * D, n, (int32_t)t));
            CHECK_OK(vq_cache_append(b, l, k + t * NKV * D, v + t * NKV * D, n, (int32_t)t));
            flushed += b->layers[l].heads[0].n_packed > before;
            /* and they attend alike (prerope: the angle tables the flush grows) */
            float qa[NQ * D], oa[NQ * D], ob[NQ * D];
            tc_fill(&g, qa, NQ * D, 1.0f);
            CHECK_OK(vq_cache_attend(a, l, qa, 1, NQ, 0.125f, oa));
            CHECK_OK(vq_cache_attend(b, l, qa, 1, NQ, 0.125f, ob));
            if (memcmp(oa, ob, sizeof oa)) {
                CHECKF(0, "%s: layer %d attends differently after token %zu", text, l, t);
                same = 0;
            }
            for (int h = 0; h < NKV; h++)
                if (!same_head(a, b, l, h)) {
                    CHECKF(0, "%s: layer %d head %d differs after token %zu", text, l, h, t);
                    same = 0;
                }
        }
        t += n;
    }
    CHECKF(flushed >= 4, "%s: only %d appends flushed", text, flushed);
    free(k), free(v);
    vq_cache_free(a), vq_cache_free(b);
}

static void test_pool_flush_matches_serial(void)
{
    vq_pool *pool = NULL;
    CHECK_OK(vq_pool_create(3, &pool));
    if (!pool)
        return;
    static const char *const configs[] = {
        "keys=kivix:bits=4,group=32,outliers=8 values=kivix:bits=3,group=32 residual=16 sinks=4",
        "keys=kivix:bits=4,group=64,outliers=8,qbits=8 values=kivix:bits=3,group=32,qbits=8 residual=24",
        "keys=kivi:bits=2 values=kivi:bits=2 residual=8",
        "keys=q4_0:rot=1 values=q4_0:rot=1 residual=8 page=32",
        "keys=turboquant_rvq:bits=1 values=kivi:bits=2 residual=4 sinks=2",
        "keys=kivix:bits=4,group=32,outliers=8 values=kivix:bits=4,group=32 residual=16 sinks=4 prerope=1",
        "keys=kivix:bits=4,group=32,outliers=8 values=kivix:bits=4,group=32 residual=16 prerope=2",
        "keys=q8_0 values=q8_0 residual=8 evict=h2o:budget=200,sinks=2,recent=16",
    };
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++)
        check_config(configs[i], pool);
    vq_pool_free(pool);
}

int main(void)
{
    RUN(test_pool_flush_matches_serial);
    return vq_test_summary("cache_flush");
}
