/* test_cache_attend.c -- attention from the packed cache for every
 * registered codec: byte accounting (resident vs accounted), fused
 * attention vs a double-precision reference over the cache's decoded
 * contents, fp16 vs exact attention on the original vectors, GQA, sliding
 * windows, prefill == decode, the residual window, argument errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/pool.h"
#include "test.h"
#include "test_cache_util.h"

/* two layers: GQA 6/2 at D=64 full attention, 4/1 at D=128 with a sliding
 * window of 48 tokens */
static const vq_layer_shape SHAPE2[2] = { { 2, 6, 64, 0, 0 }, { 1, 4, 128, 48, 0 } };

/* Float rounding only (sums in float over <= a few hundred terms, expf):
 * the fused path reads the same numbers as the reference decode, so the
 * relative error stays ~1e-6; 2e-4 leaves room for codecs whose kernels
 * sum in another order or use lookup tables in float. */
#define FUSED_VS_DECODED_TOL 2e-4
/* fp16 storage vs exact float attention: half has an 11-bit significand
 * (relative rounding 2^-12 ~ 2.4e-4 per element); errors of scores and
 * values add up to a few 1e-4, the issue asks for 1e-3. */
#define FP16_VS_EXACT_TOL 1e-3

typedef struct {
    vq_cache *c;
    vq_cache_shape shape;
    float *k[2], *v[2], *q[2]; /* per layer: all tokens' inputs */
    size_t n_tok;
} run_ctx;

static size_t layer_floats(const vq_layer_shape *ls, int kv) { return (size_t)(kv ? ls->n_kv_heads : ls->n_q_heads) * (size_t)ls->head_dim; }

static void gen_inputs(run_ctx *r, size_t n, uint64_t seed)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    r->n_tok = n;
    for (int l = 0; l < 2; l++) {
        const vq_layer_shape *ls = &SHAPE2[l];
        size_t kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0);
        r->k[l] = malloc(n * kvf * sizeof(float));
        r->v[l] = malloc(n * kvf * sizeof(float));
        r->q[l] = malloc(n * qf * sizeof(float));
        tc_fill(&g, r->k[l], n * kvf, 1.0f);
        tc_fill(&g, r->v[l], n * kvf, 1.0f);
        tc_fill(&g, r->q[l], n * qf, 1.0f);
        /* a few outlier channels in keys, as in real models */
        for (size_t i = 0; i < n * kvf; i += (size_t)ls->head_dim)
            r->k[l][i + 3] *= 6.0f;
    }
}

static void free_inputs(run_ctx *r)
{
    for (int l = 0; l < 2; l++)
        free(r->k[l]), free(r->v[l]), free(r->q[l]);
}

static vq_status make_cache(const char *cfgtext, vq_cache **out)
{
    vq_cache_config *cfg = NULL;
    vq_status st = vq_cache_config_parse(cfgtext, &cfg);
    if (st != VQ_OK)
        return st;
    vq_cache_shape sh = { 2, SHAPE2, 0x1234 };
    st = vq_cache_create(cfg, &sh, 42, out);
    vq_cache_config_free(cfg);
    return st;
}

static void calibrate_if_needed(vq_cache *c, uint64_t seed)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    for (int l = 0; l < 2; l++) {
        size_t n = 256, f = layer_floats(&SHAPE2[l], 1);
        float *k = malloc(n * f * sizeof *k), *v = malloc(n * f * sizeof *v);
        tc_fill(&g, k, n * f, 1.0f);
        tc_fill(&g, v, n * f, 1.0f);
        for (size_t i = 0; i < n * f; i += (size_t)SHAPE2[l].head_dim)
            k[i + 3] *= 6.0f;
        CHECK_OK(vq_cache_calibrate(c, l, k, v, n));
        free(k), free(v);
    }
}

/* Append tokens [t0, t0+n) to both layers and attend; compare against the
 * reference over the cache's decoded contents; return max relative error. */
static double step(run_ctx *r, size_t t0, size_t n, float *out_last)
{
    double worst = 0;
    for (int l = 0; l < 2; l++) {
        const vq_layer_shape *ls = &SHAPE2[l];
        size_t kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0);
        double scale = 1.0 / sqrt((double)ls->head_dim);
        if (vq_cache_append(r->c, l, r->k[l] + t0 * kvf, r->v[l] + t0 * kvf, n, (int32_t)t0) != VQ_OK) {
            CHECKF(0, "append: %s", vq_last_error());
            return 1e9;
        }
        float *out = malloc(n * qf * sizeof *out);
        double *ref = malloc(n * qf * sizeof *ref);
        /* reference first: attend may evict afterwards */
        CHECK(tc_ref_from_cache(r->c, l, ls, r->q[l] + t0 * qf, n, (int32_t)t0, scale, ref) == 0);
        if (vq_cache_attend(r->c, l, r->q[l] + t0 * qf, n, ls->n_q_heads, (float)scale, out) != VQ_OK) {
            CHECKF(0, "attend: %s", vq_last_error());
            worst = 1e9;
        } else {
            double e = tc_rel_err(out, ref, n * qf);
            worst = e > worst ? e : worst;
        }
        if (out_last && l == 0)
            memcpy(out_last, out + (n - 1) * qf, qf * sizeof *out);
        free(out), free(ref);
    }
    return worst;
}

/* resident vs accounted: packed_resident - packed_accounted lies in
 * [0, page_bytes) per (layer, head, role), the residual buffers hold
 * (residual + group) tokens per head, and accounted follows the formula. */
static void check_bytes(vq_cache *c, long residual, long page, const char *what)
{
    for (int l = 0; l < 2; l++) {
        const vq_layer_shape *ls = &SHAPE2[l];
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, l, &u));
        vq_cache_role_stats *rs[2] = { &u.keys, &u.values };
        vq_codec *cd[2] = { NULL, NULL };
        for (int r = 0; r < 2; r++)
            CHECK_OK(vq_codec_create(vq_cache_codec_spec(c, l, (vq_role)r), ls->head_dim, (vq_role)r, 1, &cd[r]));
        if (!cd[0] || !cd[1]) {
            vq_codec_free(cd[0]), vq_codec_free(cd[1]);
            continue;
        }
        size_t bk = vq_codec_block_tokens(cd[0]), bv = vq_codec_block_tokens(cd[1]);
        size_t G = bk, a = bk, b = bv;
        while (b) { size_t t = a % b; a = b; b = t; }
        G = bk / a * bv;
        size_t P = ((size_t)page + G - 1) / G * G;
        uint64_t D2 = 2 * (uint64_t)ls->head_dim;
        for (int r = 0; r < 2; r++) {
            uint64_t bpt = vq_codec_bytes_per_token(cd[r]);
            uint64_t packed_slots = rs[r]->stored_slots - rs[r]->residual_tokens;
            uint64_t pacc = rs[r]->accounted_bytes - rs[r]->residual_tokens * D2;
            uint64_t pres = rs[r]->resident_bytes - rs[r]->residual_bytes;
            CHECKF(pacc == packed_slots * bpt, "%s layer %d role %d: accounted %llu != %llu slots x %llu", what, l,
                   r, (unsigned long long)pacc, (unsigned long long)packed_slots, (unsigned long long)bpt);
            CHECKF(pres >= pacc && pres - pacc < (uint64_t)ls->n_kv_heads * P * bpt,
                   "%s layer %d role %d: resident %llu vs accounted %llu (bound: < %d pages of %llu B)", what, l, r,
                   (unsigned long long)pres, (unsigned long long)pacc, ls->n_kv_heads,
                   (unsigned long long)(P * bpt));
            CHECKF(rs[r]->residual_bytes == (uint64_t)ls->n_kv_heads * ((uint64_t)residual + G) * D2,
                   "%s layer %d: residual buffers %llu B", what, l, (unsigned long long)rs[r]->residual_bytes);
            CHECKF(rs[r]->residual_tokens >= (uint64_t)ls->n_kv_heads * (uint64_t)residual ||
                       rs[r]->tokens == rs[r]->residual_tokens,
                   "%s layer %d: %llu residual tokens, residual=%ld", what, l,
                   (unsigned long long)rs[r]->residual_tokens, residual);
            CHECKF(rs[r]->residual_tokens < (uint64_t)ls->n_kv_heads * ((uint64_t)residual + G),
                   "%s layer %d: %llu residual tokens >= residual + group", what, l,
                   (unsigned long long)rs[r]->residual_tokens);
            CHECK(rs[r]->shared_bytes == vq_codec_shared_bytes(cd[r]));
            CHECK(rs[r]->fp16_bytes == rs[r]->tokens * D2);
        }
        vq_codec_free(cd[0]), vq_codec_free(cd[1]);
    }
    vq_cache_usage tot;
    CHECK_OK(vq_cache_stats(c, -1, &tot));
    CHECK(tot.keys.tokens > 0 && tot.index_bytes > 0);
}

/* Does the key codec of this spec score exactly <q, decode(k)>? Codecs
 * that quantize the query (rabitq's popcount kernel, qbits > 0) compute an
 * estimate instead; for them the cache can only match the reference up to
 * the codec's own estimator error. Measured here on random data. */
static double codec_score_dev(const char *spec)
{
    vq_codec *cd = NULL;
    if (vq_codec_create(spec, 64, VQ_ROLE_KEY, 3, &cd) != VQ_OK)
        return 0;
    size_t B = vq_codec_block_tokens(cd), n = 2 * B * (B < 16 ? 16 : 1);
    float *x = malloc(n * 64 * sizeof *x), *xd = malloc(n * 64 * sizeof *xd), q[64], sc[1024];
    uint8_t *codes = malloc(n * vq_codec_bytes_per_token(cd)), *qb = malloc(vq_codec_query_bytes(cd));
    vq_rng g;
    vq_rng_seed(&g, 5);
    tc_fill(&g, x, n * 64, 1.0f);
    tc_fill(&g, q, 64, 1.0f);
    for (size_t i = 0; i < n * 64; i += 64) /* gen_inputs' outlier channel */
        x[i + 3] *= 6.0f;
    double dev = 0, mag = 0;
    if (vq_codec_is_ready(cd) && vq_codec_encode(cd, x, n, codes) == VQ_OK && vq_codec_decode(cd, codes, n, xd) == VQ_OK &&
        vq_codec_prepare_query(cd, q, qb) == VQ_OK && vq_codec_score(cd, qb, 1, codes, n, sc) == VQ_OK)
        for (size_t i = 0; i < n; i++) {
            double d = 0;
            for (int e = 0; e < 64; e++)
                d += (double)q[e] * xd[i * 64 + e];
            dev += (sc[i] - d) * (sc[i] - d);
            mag += d * d;
        }
    free(x), free(xd), free(codes), free(qb);
    vq_codec_free(cd);
    return sqrt(dev / (mag > 0 ? mag : 1));
}

/* one config: prefill + decode, reference check each step (within tol
 * when the key scores are exact) and bytes */
static double run_config_tol(const char *cfgtext, long residual, long page, size_t prefill, size_t decode, double tol)
{
    run_ctx r = { 0 };
    vq_status st = make_cache(cfgtext, &r.c);
    if (st == VQ_ERR_INVALID_ARG || st == VQ_ERR_UNSUPPORTED) {
        printf("  note: '%s' refused: %s\n", cfgtext, vq_last_error());
        return -1.0; /* refused: no result */
    }
    CHECK_OK(st);
    if (!r.c)
        return -1.0;
    calibrate_if_needed(r.c, 99);
    gen_inputs(&r, prefill + decode, 7);
    double worst = step(&r, 0, prefill, NULL);
    for (size_t t = prefill; t < prefill + decode; t++) {
        double e = step(&r, t, 1, NULL);
        worst = e > worst ? e : worst;
    }
    double sdev = codec_score_dev(vq_cache_codec_spec(r.c, 0, VQ_ROLE_KEY));
    if (sdev > 1e-5) {
        /* an estimator codec: the fused path cannot equal the decoded
         * reference; the strict check runs on its exact-query variant
         * (test_every_codec adds qbits=0 where the codec has it). Here only
         * a sanity bound: attention error of the same order as the
         * codec's own score error. */
        printf("  %-70s fused-vs-decoded %.2e (key scores are an estimate: %.2e off <q,decode(k)>)\n", cfgtext,
               worst, sdev);
        CHECKF(worst <= 4 * sdev + tol, "%s: rel err %.3g vs score deviation %.3g", cfgtext, worst,
               sdev);
    } else {
        CHECKF(worst <= tol, "%s: fused vs decoded reference rel err %.3g > %g", cfgtext, worst, tol);
        printf("  %-70s fused-vs-decoded %.2e\n", cfgtext, worst);
    }
    check_bytes(r.c, residual, page, cfgtext);
    vq_cache_free(r.c);
    free_inputs(&r);
    return worst;
}

static void run_config(const char *cfgtext, long residual, long page, size_t prefill, size_t decode)
{
    (void)run_config_tol(cfgtext, residual, page, prefill, decode, FUSED_VS_DECODED_TOL);
}

/* values summed with int8 attention weights (qbits=8 on kivi, q8_0, q4_0):
 * the weights' rounding (at most 1/254 of a block's largest w*scale per
 * row and code unit, kernels/kivi_qaxpy.h, kernels/qaxpy.h, whose tests
 * check that bound) is the only departure from the decoded reference.
 * On these inputs (flat attention over random values: small outputs) it
 * measures 1.2-1.8% relative L2; 3e-2 bounds it, and each config must
 * depart (the int8 path is taken) */
static void test_int8_weights(void)
{
    static const struct {
        const char *cfg;
        long residual, page; /* as in cfg */
    } cases[] = { { "keys=fp16 values=kivi:bits=2,qbits=8 residual=16 page=64", 16, 64 },
                  { "keys=fp16 values=kivi:bits=4,group=64,qbits=8 residual=0 page=64", 0, 64 },
                  { "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8 residual=16 page=32", 16, 32 },
                  { "keys=fp16 values=q4_0:rot=1,qbits=8 residual=0 page=64", 0, 64 },
                  { "keys=fp16 values=q8_0:qbits=8 residual=16 page=64", 16, 64 },
                  { "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8 residual=8 page=32", 8, 32 } };
    size_t prefill = vq_test_quick() ? 40 : 100, decode = vq_test_quick() ? 10 : 40;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double worst = run_config_tol(cases[i].cfg, cases[i].residual, cases[i].page, prefill, decode, 3e-2);
        CHECKF(worst > 1e-5, "%s: the same as the float weights (%.3g): int8 path not taken", cases[i].cfg, worst);
    }
}

/* whether the codec a method's default spec makes for role (at head_dim
 * 64) runs int8 arithmetic: its canonical spec names qbits=8 (q4_0 values
 * since session 54, kivi keys and values since session 55, kivix since
 * session 56) */
static int int8_default(const char *spec, vq_role role)
{
    vq_codec *c = NULL;
    if (vq_codec_create(spec, 64, role, 1, &c) != VQ_OK)
        return 0;
    const int yes = strstr(vq_codec_spec(c), "qbits=8") != NULL;
    vq_codec_free(c);
    return yes;
}

static void test_every_codec(void)
{
    size_t prefill = vq_test_quick() ? 40 : 100, decode = vq_test_quick() ? 10 : 40;
    const char *spec;
    int methods = 0;
    for (int i = 0; vq_codec_method(i, &spec); i++, methods++) {
        char buf[1024];
        long res[2] = { 0, 16 };
        /* values with int8 weights by default: test_int8_weights' bound, the
         * float form strictly below. kivi keys with an int8 query by
         * default (kivix's likewise): one scale for the whole folded query q*s, which
         * gen_inputs' outlier channel (x6, hence a 6x larger channel scale)
         * makes coarse for the other channels, so their attention departs
         * from the decoded reference by 5.6-5.7% at worst here against a
         * score error of 0.8% (q8_0 / q4_0 keys, rounded per 32 values:
         * 0.8-1.5%); held to the same bound on top of the estimator rule, as
         * test_int8_weights' explicit kivi qbits=8 keys are; the qbits=0
         * form runs strictly below */
        const int w8 = int8_default(spec, VQ_ROLE_VALUE);
        const double ktol = strncmp(spec, "kivi", 4) == 0 && int8_default(spec, VQ_ROLE_KEY) ? 3e-2
                                                                                             : FUSED_VS_DECODED_TOL;
        for (int ri = 0; ri < 2; ri++) {
            snprintf(buf, sizeof buf, "keys=%s values=fp16 residual=%ld page=64", spec, res[ri]);
            (void)run_config_tol(buf, res[ri], 64, prefill, decode, ktol);
            snprintf(buf, sizeof buf, "keys=fp16 values=%s residual=%ld page=64", spec, res[ri]);
            (void)run_config_tol(buf, res[ri], 64, prefill, decode, w8 ? 3e-2 : FUSED_VS_DECODED_TOL);
        }
        if (w8) {
            snprintf(buf, sizeof buf, "keys=fp16 values=%s%cqbits=0 residual=16 page=64", spec,
                     strchr(spec, ':') ? ',' : ':');
            run_config(buf, 16, 64, prefill, decode);
        }
        /* both roles: the looser of the two bounds (turboquant_mse's keys
         * are exact against the float query, its values int8 by default) */
        snprintf(buf, sizeof buf, "keys=%s values=%s residual=8 page=32", spec, spec);
        (void)run_config_tol(buf, 8, 32, prefill, decode, w8 && ktol < 3e-2 ? 3e-2 : ktol);
        /* exact-query variant of estimator codecs */
        char ex[512];
        snprintf(ex, sizeof ex, "%s%cqbits=0", spec, strchr(spec, ':') ? ',' : ':');
        vq_codec *cd = NULL;
        if (codec_score_dev(spec) > 1e-5 && vq_codec_create(ex, 64, VQ_ROLE_KEY, 1, &cd) == VQ_OK) {
            vq_codec_free(cd);
            snprintf(buf, sizeof buf, "keys=%s values=fp16 residual=0 page=64", ex);
            run_config(buf, 0, 64, prefill, decode);
        }
    }
    CHECK(methods >= 1);
}

/* fp16 cache vs exact attention on the original float vectors */
static void test_fp16_vs_exact(void)
{
    run_ctx r = { 0 };
    CHECK_OK(make_cache("keys=fp16 values=fp16 page=16", &r.c));
    if (!r.c)
        return;
    size_t prefill = 60, decode = 30, n = prefill + decode;
    gen_inputs(&r, n, 11);
    double worst = 0;
    for (size_t t0 = 0; t0 < n;) {
        size_t cnt = t0 == 0 ? prefill : 1;
        for (int l = 0; l < 2; l++) {
            const vq_layer_shape *ls = &SHAPE2[l];
            size_t D = (size_t)ls->head_dim, kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0);
            size_t g = (size_t)(ls->n_q_heads / ls->n_kv_heads);
            double scale = 1.0 / sqrt((double)D);
            CHECK_OK(vq_cache_append(r.c, l, r.k[l] + t0 * kvf, r.v[l] + t0 * kvf, cnt, (int32_t)t0));
            float *out = malloc(cnt * qf * sizeof *out);
            double *ref = malloc(cnt * qf * sizeof *ref);
            CHECK_OK(vq_cache_attend(r.c, l, r.q[l] + t0 * qf, cnt, ls->n_q_heads, (float)scale, out));
            /* exact reference from the inputs, token-major -> per head */
            size_t ntok = t0 + cnt;
            int32_t *pos = malloc(ntok * sizeof *pos);
            float *k = malloc(ntok * D * sizeof *k), *v = malloc(ntok * D * sizeof *v);
            for (int h = 0; h < ls->n_kv_heads; h++) {
                for (size_t i = 0; i < ntok; i++) {
                    pos[i] = (int32_t)i;
                    memcpy(k + i * D, r.k[l] + (i * (size_t)ls->n_kv_heads + (size_t)h) * D, D * sizeof *k);
                    memcpy(v + i * D, r.v[l] + (i * (size_t)ls->n_kv_heads + (size_t)h) * D, D * sizeof *v);
                }
                for (size_t t = 0; t < cnt; t++)
                    for (size_t gi = 0; gi < g; gi++) {
                        size_t qh = (size_t)h * g + gi;
                        tc_ref_attend(r.q[l] + ((t0 + t) * (size_t)ls->n_q_heads + qh) * D, D, ntok, pos, k, v,
                                      (int32_t)(t0 + t), ls->window, scale, ref + (t * (size_t)ls->n_q_heads + qh) * D,
                                      NULL);
                    }
            }
            double e = tc_rel_err(out, ref, cnt * qf);
            worst = e > worst ? e : worst;
            free(pos), free(k), free(v), free(out), free(ref);
        }
        t0 += cnt;
    }
    CHECKF(worst <= FP16_VS_EXACT_TOL, "fp16 cache vs exact attention: rel err %.3g > %g", worst, FP16_VS_EXACT_TOL);
    printf("  fp16 cache vs exact float attention: rel err %.2e\n", worst);
    /* the sliding-window layer never holds more than its window after a step */
    vq_cache_usage u;
    CHECK_OK(vq_cache_stats(r.c, 1, &u));
    CHECKF(u.keys.tokens <= (uint64_t)SHAPE2[1].window, "window layer holds %llu tokens > %d",
           (unsigned long long)u.keys.tokens, SHAPE2[1].window);
    vq_cache_free(r.c);
    free_inputs(&r);
}

/* prefill in one call, in chunks, and token by token give the same output
 * for every token (same numbers in the same order: 1e-6 relative) */
static void test_prefill_equals_decode(void)
{
    const char *cfgs[] = { "keys=fp16 values=fp16 page=32", "keys=fp16 values=fp16 residual=8 page=16" };
    for (size_t ci = 0; ci < 2; ci++) {
        size_t n = 50;
        run_ctx a = { 0 }, b = { 0 };
        CHECK_OK(make_cache(cfgs[ci], &a.c));
        CHECK_OK(make_cache(cfgs[ci], &b.c));
        if (!a.c || !b.c)
            return;
        gen_inputs(&a, n, 5);
        const vq_layer_shape *ls = &SHAPE2[0];
        size_t kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0);
        float *oa = malloc(n * qf * sizeof *oa), *ob = malloc(n * qf * sizeof *ob);
        CHECK_OK(vq_cache_append(a.c, 0, a.k[0], a.v[0], n, 0));
        CHECK_OK(vq_cache_attend(a.c, 0, a.q[0], n, ls->n_q_heads, 0.125f, oa));
        for (size_t t = 0; t < n; t++) {
            CHECK_OK(vq_cache_append(b.c, 0, a.k[0] + t * kvf, a.v[0] + t * kvf, 1, (int32_t)t));
            CHECK_OK(vq_cache_attend(b.c, 0, a.q[0] + t * qf, 1, ls->n_q_heads, 0.125f, ob + t * qf));
        }
        double num = 0, den = 0;
        for (size_t i = 0; i < n * qf; i++) {
            num += ((double)oa[i] - ob[i]) * ((double)oa[i] - ob[i]);
            den += (double)ob[i] * ob[i];
        }
        CHECKF(sqrt(num / den) < 1e-6, "%s: prefill vs decode rel diff %.3g", cfgs[ci], sqrt(num / den));
        free(oa), free(ob);
        vq_cache_free(a.c), vq_cache_free(b.c);
        free_inputs(&a);
    }
}

/* tokens of an unfinished block always stay in the residual window */
static void test_block_codecs_residual(void)
{
    const char *spec;
    for (int i = 0; vq_codec_method(i, &spec); i++) {
        vq_codec *cd = NULL;
        if (vq_codec_create(spec, 64, VQ_ROLE_KEY, 1, &cd) != VQ_OK)
            continue;
        size_t B = vq_codec_block_tokens(cd);
        vq_codec_free(cd);
        if (B == 1)
            continue;
        char buf[1024];
        snprintf(buf, sizeof buf, "keys=%s values=fp16 residual=0", spec);
        vq_cache *c = NULL;
        CHECK_OK(make_cache(buf, &c));
        if (!c)
            continue;
        calibrate_if_needed(c, 3);
        run_ctx r = { .c = c };
        size_t n = 3 * B + B / 2;
        gen_inputs(&r, n, 9);
        for (size_t t = 0; t < n; t++) {
            step(&r, t, 1, NULL);
            vq_cache_usage u;
            CHECK_OK(vq_cache_stats(c, 0, &u));
            CHECKF(u.keys.residual_tokens == (uint64_t)SHAPE2[0].n_kv_heads * ((t + 1) % B),
                   "%s after %zu tokens: %llu residual tokens", spec, t + 1,
                   (unsigned long long)u.keys.residual_tokens);
        }
        printf("  %s: block of %zu tokens, unfinished block stays fp16\n", spec, B);
        vq_cache_free(c);
        free_inputs(&r);
    }
}

/* attention logit soft-capping (s = cap * tanh(s / cap)) with large
 * queries so that the cap bites */
static void test_softcap(void)
{
    vq_layer_shape ls = { 2, 4, 64, 0, 5.0f };
    vq_cache_shape sh = { 1, &ls, 0 };
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse("keys=q8_0:qbits=0 values=fp16 residual=4", &cfg));
    if (!cfg || vq_cache_create(cfg, &sh, 1, &c) != VQ_OK) {
        CHECKF(0, "create: %s", vq_last_error());
        vq_cache_config_free(cfg);
        return;
    }
    vq_cache_config_free(cfg);
    vq_rng g;
    vq_rng_seed(&g, 1);
    size_t n = 40;
    float *k = malloc(n * 128 * 4), *v = malloc(n * 128 * 4), *q = malloc(n * 256 * 4), *out = malloc(n * 256 * 4);
    double *ref = malloc(n * 256 * sizeof *ref);
    tc_fill(&g, k, n * 128, 1.0f);
    tc_fill(&g, v, n * 128, 1.0f);
    tc_fill(&g, q, n * 256, 4.0f);
    CHECK_OK(vq_cache_append(c, 0, k, v, n, 0));
    CHECK(tc_ref_from_cache(c, 0, &ls, q, n, 0, 0.125, ref) == 0);
    CHECK_OK(vq_cache_attend(c, 0, q, n, 4, 0.125f, out));
    double e = tc_rel_err(out, ref, n * 256);
    CHECKF(e <= FUSED_VS_DECODED_TOL, "softcap: rel err %.3g", e);
    /* and it differs from uncapped attention (the cap really bit) */
    ls.softcap = 0;
    CHECK(tc_ref_from_cache(c, 0, &ls, q, n, 0, 0.125, ref) == 0);
    CHECKF(tc_rel_err(out, ref, n * 256) > 10 * FUSED_VS_DECODED_TOL, "softcap had no effect");
    free(k), free(v), free(q), free(out), free(ref);
    vq_cache_free(c);
}

/* worker threads (split over KV heads and context chunks, partials merged)
 * give the serial result bit for bit (chunks are fixed by position; here
 * 64 tokens, so that a context spans several), for every codec, with an
 * eviction policy that needs attention weights */
static void test_threads_match_serial(void)
{
    vq_pool *pool = NULL;
    CHECK_OK(vq_pool_create(3, &pool));
    if (!pool)
        return;
    const char *spec;
    for (int i = 0; vq_codec_method(i, &spec); i++) {
        char buf[1200];
        snprintf(buf, sizeof buf, "keys=%s values=%s residual=8 page=32 evict=h2o:budget=120,sinks=2,recent=16", spec,
                 spec);
        run_ctx a = { 0 }, b = { 0 };
        if (make_cache(buf, &a.c) != VQ_OK || make_cache(buf, &b.c) != VQ_OK) {
            vq_cache_free(a.c), vq_cache_free(b.c);
            continue;
        }
        a.c->attn_chunk = b.c->attn_chunk = 64;
        CHECK_OK(vq_cache_set_threads(b.c, pool)); /* before calibration: clones must follow it */
        calibrate_if_needed(a.c, 4);
        calibrate_if_needed(b.c, 4);
        size_t n = vq_test_quick() ? 100 : 200;
        gen_inputs(&a, n, 13);
        double worst = 0;
        int held_same = 1;
        for (size_t t0 = 0; t0 < n;) {
            size_t cnt = t0 == 0 ? 90 : 1;
            for (int l = 0; l < 2; l++) {
                const vq_layer_shape *ls = &SHAPE2[l];
                size_t kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0);
                float *oa = malloc(cnt * qf * 4), *ob = malloc(cnt * qf * 4);
                double *ra = malloc(cnt * qf * sizeof *ra);
                CHECK_OK(vq_cache_append(a.c, l, a.k[l] + t0 * kvf, a.v[l] + t0 * kvf, cnt, (int32_t)t0));
                CHECK_OK(vq_cache_append(b.c, l, a.k[l] + t0 * kvf, a.v[l] + t0 * kvf, cnt, (int32_t)t0));
                CHECK_OK(vq_cache_attend(a.c, l, a.q[l] + t0 * qf, cnt, ls->n_q_heads, 0.1f, oa));
                CHECK_OK(vq_cache_attend(b.c, l, a.q[l] + t0 * qf, cnt, ls->n_q_heads, 0.1f, ob));
                for (size_t x = 0; x < cnt * qf; x++)
                    ra[x] = oa[x];
                double e = tc_rel_err(ob, ra, cnt * qf);
                worst = e > worst ? e : worst;
                for (int h = 0; h < ls->n_kv_heads; h++) {
                    int32_t pa[512], pb[512];
                    size_t na = 0, nb = 0;
                    vq_cache_gather(a.c, l, h, 512, pa, NULL, NULL, &na);
                    vq_cache_gather(b.c, l, h, 512, pb, NULL, NULL, &nb);
                    held_same &= na == nb && memcmp(pa, pb, na * 4) == 0;
                }
                free(oa), free(ob), free(ra);
            }
            t0 += cnt;
        }
        CHECKF(worst == 0, "%s: 3 threads vs serial rel diff %.3g", spec, worst);
        CHECKF(held_same, "%s: threads changed the evicted set", spec);
        vq_cache_free(a.c), vq_cache_free(b.c);
        free_inputs(&a);
    }
    vq_pool_free(pool);
}

/* vdrop=F: per query, the output moves from the cache's own output without
 * it by at most F times the largest |value| (attend.c accumulate_kept),
 * and with peaked attention some value blocks are in fact left out (the
 * outputs differ). Values are gathered from each cache (decoded) for the
 * bound; float sums in another order add ~1e-6. */
static void test_vdrop_bound(void)
{
    static const char *const specs[] = { "fp16", "kivi:bits=2,qbits=8", "q4_0:rot=1" };
    const double F = 0.01;
    for (size_t si = 0; si < sizeof specs / sizeof *specs; si++) {
        char ta[256], tb[300];
        snprintf(ta, sizeof ta, "keys=fp16 values=%s page=256", specs[si]);
        snprintf(tb, sizeof tb, "%s vdrop=%g", ta, F);
        run_ctx a = { 0 }, b = { 0 };
        CHECK_OK(make_cache(ta, &a.c));
        CHECK_OK(make_cache(tb, &b.c));
        if (!a.c || !b.c) {
            vq_cache_free(a.c), vq_cache_free(b.c);
            continue;
        }
        a.c->attn_chunk = b.c->attn_chunk = 512; /* several chunks per head */
        const size_t n = vq_test_quick() ? 400 : 900;
        gen_inputs(&a, n, 21);
        for (int l = 0; l < 2; l++) /* peaked attention: most blocks carry nothing */
            for (size_t i = 0; i < n * layer_floats(&SHAPE2[l], 0); i++)
                a.q[l][i] *= 8.0f;
        double worst = 0; /* largest |b - a| / (F vmax) */
        int differ = 0;
        for (size_t t0 = 0; t0 < n;) {
            const size_t cnt = t0 == 0 ? n - 40 : 1;
            for (int l = 0; l < 2; l++) {
                const vq_layer_shape *ls = &SHAPE2[l];
                const size_t kvf = layer_floats(ls, 1), qf = layer_floats(ls, 0), D = (size_t)ls->head_dim;
                float *oa = malloc(cnt * qf * 4), *ob = malloc(cnt * qf * 4), *v = malloc(n * D * 4);
                int32_t *pos = malloc(n * sizeof *pos);
                CHECK_OK(vq_cache_append(a.c, l, a.k[l] + t0 * kvf, a.v[l] + t0 * kvf, cnt, (int32_t)t0));
                CHECK_OK(vq_cache_append(b.c, l, a.k[l] + t0 * kvf, a.v[l] + t0 * kvf, cnt, (int32_t)t0));
                CHECK_OK(vq_cache_attend(a.c, l, a.q[l] + t0 * qf, cnt, ls->n_q_heads, 0.125f, oa));
                CHECK_OK(vq_cache_attend(b.c, l, a.q[l] + t0 * qf, cnt, ls->n_q_heads, 0.125f, ob));
                for (int h = 0; h < ls->n_kv_heads; h++) {
                    size_t nv = 0;
                    double vmax = 0;
                    CHECK_OK(vq_cache_gather(b.c, l, h, n, pos, NULL, v, &nv));
                    for (size_t x = 0; x < nv * D; x++)
                        vmax = fabs((double)v[x]) > vmax ? fabs((double)v[x]) : vmax;
                    const size_t g = (size_t)(ls->n_q_heads / ls->n_kv_heads);
                    for (size_t t = 0; t < cnt; t++)
                        for (size_t e = 0; e < g * D; e++) {
                            const size_t x = t * qf + (size_t)h * g * D + e;
                            const double d = fabs((double)ob[x] - oa[x]);
                            differ |= d > 0;
                            worst = (d - 1e-5) / (F * vmax) > worst ? (d - 1e-5) / (F * vmax) : worst;
                        }
                }
                free(oa), free(ob), free(v), free(pos);
            }
            t0 += cnt;
        }
        CHECKF(worst <= 1.0, "values=%s vdrop=%g: output moved %.3g x the bound", specs[si], F, worst);
        CHECKF(differ, "values=%s vdrop=%g: no value block was left out", specs[si], F);
        printf("  values=%s vdrop=%g: largest move %.3f of the bound\n", specs[si], F, worst);
        vq_cache_free(a.c), vq_cache_free(b.c);
        free_inputs(&a);
    }
}

static void test_bad_arguments(void)
{
    vq_cache *c = NULL;
    CHECK_OK(make_cache("keys=fp16 values=fp16", &c));
    if (!c)
        return;
    float k[2 * 64] = { 0 }, q[6 * 64] = { 0 }, out[6 * 64];
    CHECK(vq_cache_append(c, 2, k, k, 1, 0) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_cache_error(c), "layer") != NULL);
    CHECK(vq_cache_append(c, 0, NULL, k, 1, 0) == VQ_ERR_INVALID_ARG);
    CHECK(vq_cache_append(c, 0, k, k, 1, -1) == VQ_ERR_INVALID_ARG);
    CHECK(vq_cache_attend(c, 0, q, 1, 6, 0.1f, out) == VQ_ERR_INVALID_ARG); /* nothing appended */
    CHECK_OK(vq_cache_append(c, 0, k, k, 1, 5));
    CHECK(vq_cache_append(c, 0, k, k, 1, 5) == VQ_ERR_INVALID_ARG);         /* position not increasing */
    CHECK(strstr(vq_cache_error(c), "pos0") != NULL);
    CHECK(vq_cache_attend(c, 0, q, 1, 4, 0.1f, out) == VQ_ERR_INVALID_ARG); /* wrong head count */
    CHECK(vq_cache_attend(c, 0, q, 2, 6, 0.1f, out) == VQ_ERR_INVALID_ARG); /* more queries than appended */
    CHECK(vq_cache_attend(c, 0, q, 1, 6, -1.0f, out) == VQ_ERR_INVALID_ARG);
    CHECK_OK(vq_cache_attend(c, 0, q, 1, 6, 0.1f, out));
    vq_cache_free(c);
    vq_cache_free(NULL);

    vq_cache_config *cfg = NULL;
    CHECK_OK(vq_cache_config_parse("", &cfg));
    vq_layer_shape bad = { 2, 5, 64, 0, 0 };
    vq_cache_shape sh = { 1, &bad, 0 };
    CHECK(vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG && c == NULL);
    CHECK(strstr(vq_last_error(), "n_q_heads") != NULL);
    bad.n_q_heads = 4;
    bad.head_dim = 48;
    CHECK(vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "head_dim") != NULL);
    sh.n_layers = 0;
    CHECK(vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG);
    vq_cache_config_free(cfg);
}

int main(void)
{
    RUN(test_fp16_vs_exact);
    RUN(test_every_codec);
    RUN(test_int8_weights);
    RUN(test_prefill_equals_decode);
    RUN(test_block_codecs_residual);
    RUN(test_softcap);
    RUN(test_threads_match_serial);
    RUN(test_vdrop_bound);
    RUN(test_bad_arguments);
    return vq_test_summary("cache_attend");
}
