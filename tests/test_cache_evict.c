/* test_cache_evict.c -- eviction policies hold exactly what the policy
 * says, attention equals a reference rebuilt from the kept tokens only,
 * positions keep counting, and resident memory stays flat over a long
 * streaming_llm run.
 *
 * The policies are simulated here independently in double precision: the
 * simulation keeps its own list of held positions and scores, computes the
 * reference attention over the kept tokens' original vectors (rounded to
 * fp16, the storage of the fp16 codec), applies the policy rule from
 * METHODS.md and compares its held set with vq_cache_gather after every
 * step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/timer.h"
#include "test.h"
#include "test_cache_util.h"

#define NKV 2
#define NQ 4
#define D 32
#define G (NQ / NKV)
#define MAXT 512
/* fused (float) vs double reference on the same fp16 numbers */
#define ATTN_TOL 1e-5

typedef struct {
    int32_t pos[MAXT];
    double score[MAXT];
    int n;
} sim_head;

typedef struct {
    const char *policy; /* "h2o", "tova", "snapkv", "streaming" */
    int budget, sinks, recent, window;
    sim_head h[NKV];
    float *k, *v, *q; /* [MAXT][NKV or NQ][D], k/v already fp16-rounded */
} sim;

static void sim_init(sim *s, uint64_t seed)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    s->k = malloc(MAXT * NKV * D * sizeof(float));
    s->v = malloc(MAXT * NKV * D * sizeof(float));
    s->q = malloc(MAXT * NQ * D * sizeof(float));
    tc_fill(&g, s->k, MAXT * NKV * D, 1.0f);
    tc_fill(&g, s->v, MAXT * NKV * D, 1.0f);
    tc_fill(&g, s->q, MAXT * NQ * D, 2.0f); /* peaky attention: clear winners */
    for (size_t i = 0; i < MAXT * NKV * D; i++) {
        s->k[i] = vq_fp16_to_fp32(vq_fp32_to_fp16(s->k[i]));
        s->v[i] = vq_fp16_to_fp32(vq_fp32_to_fp16(s->v[i]));
    }
    for (int h = 0; h < NKV; h++)
        s->h[h].n = 0;
}

static void sim_free(sim *s) { free(s->k), free(s->v), free(s->q); }

/* evict k entries with the lowest score among ranks [lo, n - hi) */
static void sim_evict_lowest(sim_head *H, int k, int lo, int hi)
{
    while (k-- > 0) {
        int best = -1;
        for (int i = lo; i < H->n - hi; i++)
            if (best < 0 || H->score[i] < H->score[best])
                best = i;
        if (best < 0)
            return;
        memmove(H->pos + best, H->pos + best + 1, (size_t)(H->n - best - 1) * sizeof *H->pos);
        memmove(H->score + best, H->score + best + 1, (size_t)(H->n - best - 1) * sizeof *H->score);
        H->n--;
    }
}

/* one step of tokens [t0, t0+n): cache append + attend, simulation of the
 * same, comparisons. Returns 1 if the held sets matched. */
static int sim_step(sim *s, vq_cache *c, int t0, int n)
{
    float *out = malloc((size_t)n * NQ * D * sizeof(float));
    double *ref = malloc((size_t)n * NQ * D * sizeof(double));
    CHECK_OK(vq_cache_append(c, 0, s->k + (size_t)t0 * NKV * D, s->v + (size_t)t0 * NKV * D, (size_t)n, t0));
    CHECK_OK(vq_cache_attend(c, 0, s->q + (size_t)t0 * NQ * D, (size_t)n, NQ, 0.25f, out));
    int ok = 1;
    for (int h = 0; h < NKV; h++) {
        sim_head *H = &s->h[h];
        for (int t = t0; t < t0 + n; t++) {
            H->pos[H->n] = t;
            H->score[H->n++] = 0;
        }
        float *kk = malloc((size_t)H->n * D * sizeof(float)), *vv = malloc((size_t)H->n * D * sizeof(float));
        for (int i = 0; i < H->n; i++) {
            memcpy(kk + i * D, s->k + ((size_t)H->pos[i] * NKV + (size_t)h) * D, D * sizeof(float));
            memcpy(vv + i * D, s->v + ((size_t)H->pos[i] * NKV + (size_t)h) * D, D * sizeof(float));
        }
        int reset = strcmp(s->policy, "tova") == 0 || (strcmp(s->policy, "snapkv") == 0 && n > 1);
        if (reset)
            for (int i = 0; i < H->n; i++)
                H->score[i] = 0;
        double *w = malloc((size_t)H->n * sizeof(double));
        for (int t = 0; t < n; t++)
            for (int gi = 0; gi < G; gi++) {
                int qh = h * G + gi;
                tc_ref_attend(s->q + ((size_t)(t0 + t) * NQ + (size_t)qh) * D, D, (size_t)H->n, H->pos, kk, vv, t0 + t,
                              0, 0.25, ref + ((size_t)t * NQ + (size_t)qh) * D, w);
                int use = strcmp(s->policy, "h2o") == 0 || (strcmp(s->policy, "tova") == 0 && t == n - 1) ||
                          (strcmp(s->policy, "snapkv") == 0 && n > 1 && t + s->window >= n);
                for (int i = 0; use && i < H->n; i++)
                    H->score[i] += w[i];
            }
        free(w), free(kk), free(vv);
        /* the policy */
        if (H->n > s->budget) {
            int k = H->n - s->budget;
            if (strcmp(s->policy, "streaming") == 0) {
                memmove(H->pos + s->sinks, H->pos + s->sinks + k, (size_t)(H->n - s->sinks - k) * sizeof *H->pos);
                memmove(H->score + s->sinks, H->score + s->sinks + k,
                        (size_t)(H->n - s->sinks - k) * sizeof *H->score);
                H->n -= k;
            } else if (strcmp(s->policy, "h2o") == 0) {
                sim_evict_lowest(H, k, s->sinks, s->recent);
            } else if (strcmp(s->policy, "tova") == 0) {
                sim_evict_lowest(H, k, 0, 0);
            } else if (strcmp(s->policy, "snapkv") == 0 && n > 1) {
                sim_evict_lowest(H, k, 0, s->window);
            }
        }
        /* compare the held set */
        int32_t got[MAXT];
        size_t ng = 0;
        CHECK_OK(vq_cache_gather(c, 0, h, MAXT, got, NULL, NULL, &ng));
        if (ng != (size_t)H->n || memcmp(got, H->pos, ng * sizeof *got) != 0)
            ok = 0;
    }
    double e = tc_rel_err(out, ref, (size_t)n * NQ * D);
    CHECKF(e <= ATTN_TOL, "%s step at %d: attention vs kept-token reference rel err %.3g", s->policy, t0, e);
    free(out), free(ref);
    return ok;
}

static vq_cache *make(const char *text, int n_layers, int window)
{
    vq_layer_shape ls[8];
    for (int i = 0; i < n_layers; i++)
        ls[i] = (vq_layer_shape){ NKV, NQ, D, window, 0 };
    vq_cache_shape sh = { n_layers, ls, 1 };
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse(text, &cfg));
    if (cfg)
        CHECK_OK(vq_cache_create(cfg, &sh, 5, &c));
    vq_cache_config_free(cfg);
    return c;
}

static void run_policy(const char *text, sim *s, int prefill, int total)
{
    vq_cache *c = make(text, 1, 0);
    if (!c)
        return;
    sim_init(s, 17);
    int bad = 0, steps = 0;
    if (prefill > 0) {
        bad += !sim_step(s, c, 0, prefill);
        steps++;
    }
    for (int t = prefill; t < total; t++, steps++)
        bad += !sim_step(s, c, t, 1);
    CHECKF(bad == 0, "%s: held set differs from the policy in %d of %d steps", text, bad, steps);
    size_t n = 0;
    CHECK_OK(vq_cache_gather(c, 0, 0, 0, NULL, NULL, NULL, &n));
    printf("  %-55s %d steps, holds %zu tokens, policy matched\n", text, steps, n);
    vq_cache_free(c);
    sim_free(s);
}

static void test_streaming_llm(void)
{
    sim s = { .policy = "streaming", .budget = 4 + 16, .sinks = 4 };
    run_policy("evict=streaming_llm:sinks=4,window=16", &s, 0, 150);
    sim s2 = { .policy = "streaming", .budget = 4 + 16, .sinks = 4 };
    run_policy("evict=streaming_llm:sinks=4,window=16 residual=8 page=8", &s2, 50, 150);
}

static void test_h2o(void)
{
    sim s = { .policy = "h2o", .budget = 24, .sinks = 2, .recent = 6 };
    run_policy("evict=h2o:budget=24,sinks=2,recent=6", &s, 40, 160);
    sim s2 = { .policy = "h2o", .budget = 24, .sinks = 0, .recent = 4 };
    run_policy("evict=h2o:budget=24,sinks=0,recent=4 residual=5 page=16", &s2, 0, 120);
}

static void test_tova(void)
{
    sim s = { .policy = "tova", .budget = 20 };
    run_policy("evict=tova:budget=20", &s, 30, 140);
}

static void test_snapkv(void)
{
    sim s = { .policy = "snapkv", .budget = 32, .window = 8 };
    run_policy("evict=snapkv:budget=32,window=8", &s, 100, 110);
}

static void test_pyramidkv(void)
{
    /* 4 layers, budget 32, min_ratio 0.5: budgets fall linearly from
     * 48 to 16 (mean 32): 48, 37, 27, 16 after a 100-token prompt */
    vq_cache *c = make("evict=pyramidkv:budget=32,window=8,min_ratio=0.5", 4, 0);
    if (!c)
        return;
    sim s;
    sim_init(&s, 4);
    const int want[4] = { 48, 37, 27, 16 };
    float *out = malloc(100 * NQ * D * sizeof(float));
    for (int l = 0; l < 4; l++) {
        CHECK_OK(vq_cache_append(c, l, s.k, s.v, 100, 0));
        CHECK_OK(vq_cache_attend(c, l, s.q, 100, NQ, 0.25f, out));
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, l, &u));
        CHECKF(u.keys.tokens == (uint64_t)want[l] * NKV, "pyramidkv layer %d holds %llu, want %d per head", l,
               (unsigned long long)u.keys.tokens, want[l]);
        /* the observation window (last 8 prompt tokens) is always kept */
        int32_t pos[MAXT];
        size_t n = 0;
        CHECK_OK(vq_cache_gather(c, l, 1, MAXT, pos, NULL, NULL, &n));
        CHECK(n >= 8 && pos[n - 1] == 99 && pos[n - 8] == 92);
    }
    free(out);
    sim_free(&s);
    vq_cache_free(c);
}

/* a sliding-window layer keeps exactly the last `window` positions after
 * each decode step, and positions keep counting */
static void test_sliding_window(void)
{
    vq_cache *c = make("keys=fp16 values=fp16 residual=3 page=8", 1, 20);
    if (!c)
        return;
    sim s;
    sim_init(&s, 8);
    float out[NQ * D];
    CHECK_OK(vq_cache_append(c, 0, s.k, s.v, 50, 0));
    float *o50 = malloc(50 * NQ * D * sizeof(float));
    CHECK_OK(vq_cache_attend(c, 0, s.q, 50, NQ, 0.25f, o50));
    free(o50);
    int bad = 0;
    for (int t = 50; t < 120; t++) {
        CHECK_OK(vq_cache_append(c, 0, s.k + (size_t)t * NKV * D, s.v + (size_t)t * NKV * D, 1, t));
        CHECK_OK(vq_cache_attend(c, 0, s.q + (size_t)t * NQ * D, 1, NQ, 0.25f, out));
        int32_t pos[MAXT];
        size_t n = 0;
        CHECK_OK(vq_cache_gather(c, 0, 0, MAXT, pos, NULL, NULL, &n));
        bad += !(n == 20 && pos[0] == t - 19 && pos[19] == t);
    }
    CHECKF(bad == 0, "sliding window: %d steps held something other than the last 20 positions", bad);
    sim_free(&s);
    vq_cache_free(c);
}

/* block codecs (KIVI keys, 32-token blocks): eviction marks single slots
 * dead inside packed blocks; the held set still follows the policy and
 * attention equals the reference over the cache's decoded kept tokens */
static void test_block_codec_eviction(void)
{
    const char *spec;
    for (int i = 0; vq_codec_method(i, &spec); i++) {
        vq_codec *cd = NULL;
        if (vq_codec_create(spec, D, VQ_ROLE_KEY, 1, &cd) != VQ_OK)
            continue;
        size_t B = vq_codec_block_tokens(cd);
        int calib = vq_codec_needs_calibration(cd);
        vq_codec_free(cd);
        if (B == 1 || calib)
            continue;
        char text[1024];
        snprintf(text, sizeof text, "keys=%s values=fp16 evict=h2o:budget=40,sinks=2,recent=8", spec);
        vq_cache *c = make(text, 1, 0);
        if (!c)
            continue;
        sim s;
        sim_init(&s, 21);
        vq_layer_shape ls = { NKV, NQ, D, 0, 0 };
        float out[NQ * D];
        double ref[NQ * D];
        double worst = 0;
        for (int t = 0; t < 200; t++) {
            CHECK_OK(vq_cache_append(c, 0, s.k + (size_t)t * NKV * D, s.v + (size_t)t * NKV * D, 1, t));
            CHECK(tc_ref_from_cache(c, 0, &ls, s.q + (size_t)t * NQ * D, 1, t, 0.25, ref) == 0);
            CHECK_OK(vq_cache_attend(c, 0, s.q + (size_t)t * NQ * D, 1, NQ, 0.25f, out));
            double e = tc_rel_err(out, ref, NQ * D);
            worst = e > worst ? e : worst;
        }
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, 0, &u));
        CHECKF(u.keys.tokens == 40 * NKV, "%s: holds %llu tokens", text, (unsigned long long)u.keys.tokens);
        CHECKF(worst <= 2e-4, "%s: attention vs decoded kept tokens rel err %.3g", text, worst);
        printf("  %s: %llu live of %llu stored slots, attention err %.1e\n", text,
               (unsigned long long)u.keys.tokens, (unsigned long long)u.keys.stored_slots, worst);
        sim_free(&s);
        vq_cache_free(c);
    }
}

/* resident memory (pages in use + idle pool pages + slot tables) stays flat
 * over a long streaming_llm run */
static void test_streaming_flat_memory(void)
{
    const char *cfgs[] = { "evict=streaming_llm:sinks=4,window=256", "keys=q4_0 values=q8_0 residual=32 evict=streaming_llm:sinks=4,window=256",
                           "keys=kivi:bits=2 values=kivi:bits=2 evict=streaming_llm:sinks=4,window=256" };
    for (size_t ci = 0; ci < sizeof cfgs / sizeof *cfgs; ci++) {
        /* the 20k tokens on the first config; the others only need
         * to pass several compaction cycles (one per 64 evictions) */
        int total = vq_test_quick() ? 3000 : ci == 0 ? 20000 : 5000;
        vq_cache *c = make(cfgs[ci], 1, 0);
        if (!c)
            continue;
        vq_rng g;
        vq_rng_seed(&g, 2);
        float k[NKV * D], v[NKV * D], q[NQ * D], out[NQ * D];
        uint64_t mark = 0, maxv = 0;
        double t0 = vq_now_seconds();
        for (int t = 0; t < total; t++) {
            tc_fill(&g, k, NKV * D, 1.0f);
            tc_fill(&g, v, NKV * D, 1.0f);
            tc_fill(&g, q, NQ * D, 1.0f);
            if (vq_cache_append(c, 0, k, v, 1, t) != VQ_OK || vq_cache_attend(c, 0, q, 1, NQ, 0.2f, out) != VQ_OK) {
                CHECKF(0, "%s at %d: %s", cfgs[ci], t, vq_last_error());
                break;
            }
            vq_cache_usage u;
            vq_cache_stats(c, -1, &u);
            uint64_t held = u.keys.resident_bytes + u.values.resident_bytes + u.pool_free_bytes + u.index_bytes;
            if (t == 1000)
                mark = held;
            if (t > 1000 && held > maxv)
                maxv = held;
            if (t == total - 1) {
                CHECKF(u.keys.tokens == 260 * NKV, "%s: holds %llu tokens", cfgs[ci], (unsigned long long)u.keys.tokens);
            }
        }
        CHECKF(maxv <= mark, "%s: memory grew from %llu to %llu bytes after token 1000", cfgs[ci],
               (unsigned long long)mark, (unsigned long long)maxv);
        int32_t pos[MAXT];
        size_t n = 0;
        CHECK_OK(vq_cache_gather(c, 0, 0, MAXT, pos, NULL, NULL, &n));
        CHECK(n == 260 && pos[0] == 0 && pos[3] == 3 && pos[4] == total - 256 && pos[259] == total - 1);
        printf("  %s: %d tokens, held bytes flat at %llu (%.2fs)\n", cfgs[ci], total, (unsigned long long)mark,
               vq_now_seconds() - t0);
        vq_cache_free(c);
    }
}

int main(void)
{
    RUN(test_streaming_llm);
    RUN(test_h2o);
    RUN(test_tova);
    RUN(test_snapkv);
    RUN(test_pyramidkv);
    RUN(test_sliding_window);
    RUN(test_block_codec_eviction);
    RUN(test_streaming_flat_memory);
    return vq_test_summary("cache_evict");
}
