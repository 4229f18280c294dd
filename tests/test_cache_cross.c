/* test_cache_cross.c -- cross-layer sharing: MiniCache (cross=minicache),
 * XQuant (cross=xquant) and xKV (cross=xkv); the last two on synthetic
 * correlated layers (make_corr), MiniCache as follows.
 * Synthetic layers where layer 3's K/V are layer 2's plus noise: small
 * noise for some tokens (cosine above the threshold: merged), large for the
 * others (kept). Checks: the merged set is exactly the tokens whose key and
 * value cosines reach the threshold; the follower's attention equals an
 * independent reference built from the inputs with the MiniCache rule
 * (SLERP midpoint direction, per-layer norms) and equals the reference over
 * the cache's own decoded contents; merged tokens cost the follower 2
 * bytes per role; the anchor's stored vector lies halfway between the two
 * layers' directions; save/load round trip; refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/fp16.h"
#include "core/pool.h"
#include "test.h"
#include "test_cache_util.h"

#define NL 4
#define NKV 2
#define NQ 4
#define D 64
#define NT 70
#define THR 0.9

static const vq_layer_shape LS[NL] = { { NKV, NQ, D, 0, 0 }, { NKV, NQ, D, 0, 0 }, { NKV, NQ, D, 0, 0 },
                                             { NKV, NQ, D, 0, 0 } };

typedef struct {
    float k[NL][NT][NKV][D], v[NL][NT][NKV][D], q[NL][NT][NQ][D];
    int similar[NT][NKV];
} data;

static void make_data(data *x, uint64_t seed)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    tc_fill(&g, &x->k[0][0][0][0], sizeof x->k / 4, 1.0f);
    tc_fill(&g, &x->v[0][0][0][0], sizeof x->v / 4, 1.0f);
    tc_fill(&g, &x->q[0][0][0][0], sizeof x->q / 4, 1.0f);
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < NKV; h++) {
            x->similar[t][h] = vq_rng_uniform(&g) < 0.6f;
            float sd = x->similar[t][h] ? 0.15f : 2.0f, sc = 1.5f; /* layer 3 has other norms */
            for (int d = 0; d < D; d++) {
                x->k[3][t][h][d] = sc * (x->k[2][t][h][d] + sd * vq_rng_normal(&g));
                x->v[3][t][h][d] = 0.7f * (x->v[2][t][h][d] + sd * vq_rng_normal(&g));
            }
        }
}

static double cosd(const float *a, const float *b)
{
    double ab = 0, aa = 0, bb = 0;
    for (int d = 0; d < D; d++) {
        ab += (double)a[d] * b[d];
        aa += (double)a[d] * a[d];
        bb += (double)b[d] * b[d];
    }
    return ab / sqrt(aa * bb);
}

static double norm(const float *a)
{
    double s = 0;
    for (int d = 0; d < D; d++)
        s += (double)a[d] * a[d];
    return sqrt(s);
}

/* the MiniCache follower vector of token t head h: |b| * midpoint dir */
static void ideal_follower(const float *a, const float *b, float *out)
{
    double na = norm(a), nb = norm(b), s = 0;
    for (int d = 0; d < D; d++) {
        out[d] = (float)(a[d] / na + b[d] / nb);
        s += (double)out[d] * out[d];
    }
    for (int d = 0; d < D; d++)
        out[d] = (float)(out[d] * nb / sqrt(s));
}

static vq_cache *make(const char *text)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_cache_shape sh = { NL, LS, 3 };
    CHECK_OK(vq_cache_config_parse(text, &cfg));
    if (cfg && vq_cache_create(cfg, &sh, 1, &c) != VQ_OK)
        CHECKF(0, "create '%s': %s", text, vq_last_error());
    vq_cache_config_free(cfg);
    return c;
}

/* run the tokens through all layers (prefill 40, then decode); returns the
 * worst rel errors of layer 3 vs the ideal and vs the decoded reference */
static void drive(vq_cache *c, const data *x, double *e_ideal, double *e_dec, double *e_plain, float *last_out)
{
    *e_ideal = *e_dec = *e_plain = 0;
    for (int t0 = 0; t0 < NT;) {
        int n = t0 == 0 ? 40 : 1;
        for (int l = 0; l < NL; l++) {
            float *out = malloc((size_t)n * NQ * D * 4);
            double *ref = malloc((size_t)n * NQ * D * sizeof *ref);
            CHECK_OK(vq_cache_append(c, l, &x->k[l][t0][0][0], &x->v[l][t0][0][0], (size_t)n, t0));
            CHECK_OK(vq_cache_attend(c, l, &x->q[l][t0][0][0], (size_t)n, NQ, 0.125f, out));
            if (l == 1) { /* a plain layer vs exact attention on its inputs: the codec's own error */
                int nt = t0 + n;
                int32_t *pos = malloc((size_t)nt * 4);
                float *kk = malloc((size_t)nt * D * 4), *vv = malloc((size_t)nt * D * 4);
                for (int h = 0; h < NKV; h++) {
                    for (int i = 0; i < nt; i++) {
                        pos[i] = i;
                        memcpy(kk + (size_t)i * D, x->k[1][i][h], D * 4);
                        memcpy(vv + (size_t)i * D, x->v[1][i][h], D * 4);
                    }
                    for (int t = 0; t < n; t++)
                        for (int gi = 0; gi < NQ / NKV; gi++) {
                            int qh = h * (NQ / NKV) + gi;
                            tc_ref_attend(x->q[1][t0 + t][qh], D, (size_t)nt, pos, kk, vv, t0 + t, 0, 0.125,
                                          ref + ((size_t)t * NQ + (size_t)qh) * D, NULL);
                        }
                }
                double e = tc_rel_err(out, ref, (size_t)n * NQ * D);
                *e_plain = e > *e_plain ? e : *e_plain;
                free(pos), free(kk), free(vv);
            }
            if (l == 3) {
                CHECK(tc_ref_from_cache(c, 3, &LS[3], &x->q[3][t0][0][0], (size_t)n, t0, 0.125, ref) == 0);
                double e = tc_rel_err(out, ref, (size_t)n * NQ * D);
                *e_dec = e > *e_dec ? e : *e_dec;
                /* ideal reference from the inputs */
                int nt = t0 + n;
                int32_t *pos = malloc((size_t)nt * 4);
                float *kk = malloc((size_t)nt * D * 4), *vv = malloc((size_t)nt * D * 4);
                for (int h = 0; h < NKV; h++) {
                    for (int i = 0; i < nt; i++) {
                        pos[i] = i;
                        int merged = cosd(x->k[2][i][h], x->k[3][i][h]) >= THR && cosd(x->v[2][i][h], x->v[3][i][h]) >= THR;
                        if (merged) {
                            ideal_follower(x->k[2][i][h], x->k[3][i][h], kk + (size_t)i * D);
                            ideal_follower(x->v[2][i][h], x->v[3][i][h], vv + (size_t)i * D);
                        } else {
                            memcpy(kk + (size_t)i * D, x->k[3][i][h], D * 4);
                            memcpy(vv + (size_t)i * D, x->v[3][i][h], D * 4);
                        }
                    }
                    for (int t = 0; t < n; t++)
                        for (int gi = 0; gi < NQ / NKV; gi++) {
                            int qh = h * (NQ / NKV) + gi;
                            tc_ref_attend(x->q[3][t0 + t][qh], D, (size_t)nt, pos, kk, vv, t0 + t, 0, 0.125,
                                          ref + ((size_t)t * NQ + (size_t)qh) * D, NULL);
                        }
                }
                e = tc_rel_err(out, ref, (size_t)n * NQ * D);
                *e_ideal = e > *e_ideal ? e : *e_ideal;
                if (last_out && t0 + n == NT)
                    memcpy(last_out, out + (size_t)(n - 1) * NQ * D, NQ * D * 4);
                free(pos), free(kk), free(vv);
            }
            free(out), free(ref);
        }
        t0 += n;
    }
}

static void test_minicache(void)
{
    static data x;
    make_data(&x, 5);
    int expect_merged = 0;
    for (int t = 0; t < NT; t++)
        for (int h = 0; h < NKV; h++)
            expect_merged += cosd(x.k[2][t][h], x.k[3][t][h]) >= THR && cosd(x.v[2][t][h], x.v[3][t][h]) >= THR;
    CHECK(expect_merged > NT / 3 && expect_merged < 2 * NT * NKV - NT / 3); /* both kinds present */
    const char *cfgs[] = { "cross=minicache:start=0.5,threshold=0.9",
                           "keys=q8_0:qbits=0 values=q8_0 residual=6 page=16 cross=minicache:start=0.5,threshold=0.9" };
    for (int ci = 0; ci < 2; ci++) {
        vq_cache *c = make(cfgs[ci]);
        if (!c)
            continue;
        double e_ideal, e_dec, e_plain;
        float last[NQ * D];
        drive(c, &x, &e_ideal, &e_dec, &e_plain, last);
        /* vs the ideal from the inputs: the storage codec's own error on a
         * plain layer of the same data (e_plain) is what remains. Layer 3's
         * keys are 1.5x larger (scores 1.5x sharper, errors amplified by
         * about that) and its vectors pass through the anchor's codec after
         * a re-encode plus fp16 ratios: allow 3x e_plain, at least the fp16
         * bound of 1e-3 */
        double tol = 3 * e_plain > 1e-3 ? 3 * e_plain : 1e-3;
        printf("  plain layer vs exact: %.2e\n", e_plain);
        CHECKF(e_ideal <= tol, "%s: follower vs ideal MiniCache rel err %.3g > %g", cfgs[ci], e_ideal, tol);
        CHECKF(e_dec <= 2e-4, "%s: follower vs decoded reference rel err %.3g", cfgs[ci], e_dec);
        vq_cache_usage u3, u1;
        CHECK_OK(vq_cache_stats(c, 3, &u3));
        CHECK_OK(vq_cache_stats(c, 1, &u1));
        CHECK(u3.keys.tokens == (uint64_t)NT * NKV);
        if (ci == 0) {
            /* fp16, residual 0: own tokens cost 2D, merged ones 2 bytes */
            uint64_t want = (uint64_t)(NT * NKV - expect_merged) * 2 * D + (uint64_t)expect_merged * 2;
            CHECKF(u3.keys.accounted_bytes == want, "follower accounted %llu, want %llu (%d merged)",
                   (unsigned long long)u3.keys.accounted_bytes, (unsigned long long)want, expect_merged);
        }
        CHECK(u3.keys.accounted_bytes < u1.keys.accounted_bytes && u3.values.accounted_bytes < u1.values.accounted_bytes);
        printf("  %s: %d of %d follower tokens merged; follower %llu B vs plain layer %llu B (keys); err vs ideal %.1e, vs decoded %.1e\n",
               cfgs[ci], expect_merged, NT * NKV, (unsigned long long)u3.keys.accounted_bytes,
               (unsigned long long)u1.keys.accounted_bytes, e_ideal, e_dec);
        /* the anchor's stored vectors of merged tokens lie halfway */
        int32_t pos[NT];
        static float ka[NT * D];
        size_t n = 0;
        CHECK_OK(vq_cache_gather(c, 2, 0, NT, pos, ka, NULL, &n));
        int bad = 0;
        for (int t = 0; t < NT && n == NT; t++) {
            int m = cosd(x.k[2][t][0], x.k[3][t][0]) >= THR && cosd(x.v[2][t][0], x.v[3][t][0]) >= THR;
            double ca = cosd(ka + (size_t)t * D, x.k[2][t][0]), cf = cosd(ka + (size_t)t * D, x.k[3][t][0]);
            bad += m ? fabs(ca - cf) > 1e-2 : ca < 0.999 - (ci ? 0.01 : 0);
        }
        CHECKF(bad == 0, "%s: %d anchor vectors not where MiniCache puts them", cfgs[ci], bad);
        /* save / load continues identically */
        char path[512];
        snprintf(path, sizeof path, "%s/mc.vqkc", vq_test_tmpdir());
        CHECK_OK(vq_cache_save(c, path));
        vq_cache *b = NULL;
        vq_cache_shape sh = { NL, LS, 3 };
        CHECK_OK(vq_cache_load(path, &sh, &b));
        if (b) {
            float ya[NQ * D], yb[NQ * D], k[NKV * D], q[NQ * D];
            vq_rng g;
            vq_rng_seed(&g, 8);
            int same = 1;
            for (int l = 0; l < NL; l++) {
                tc_fill(&g, k, NKV * D, 1.0f);
                tc_fill(&g, q, NQ * D, 1.0f);
                CHECK_OK(vq_cache_append(c, l, k, k, 1, NT));
                CHECK_OK(vq_cache_append(b, l, k, k, 1, NT));
                CHECK_OK(vq_cache_attend(c, l, q, 1, NQ, 0.125f, ya));
                CHECK_OK(vq_cache_attend(b, l, q, 1, NQ, 0.125f, yb));
                same &= memcmp(ya, yb, sizeof ya) == 0;
            }
            CHECKF(same, "%s: loaded MiniCache cache differs", cfgs[ci]);
            vq_cache_free(b);
        }
        vq_cache_free(c);
    }
}

/* worker threads give the serial result (split-K merge of the anchor
 * accumulator too) */
static void test_minicache_threads(void)
{
    static data x;
    make_data(&x, 6);
    vq_pool *pool = NULL;
    CHECK_OK(vq_pool_create(3, &pool));
    vq_cache *a = make("keys=q4_0 values=q8_0 page=16 cross=minicache:start=0.5,threshold=0.9");
    vq_cache *b = make("keys=q4_0 values=q8_0 page=16 cross=minicache:start=0.5,threshold=0.9");
    if (!a || !b || !pool) {
        vq_cache_free(a), vq_cache_free(b), vq_pool_free(pool);
        return;
    }
    CHECK_OK(vq_cache_set_threads(b, pool));
    double worst = 0;
    float *oa = malloc(40 * NQ * D * 4), *ob = malloc(40 * NQ * D * 4);
    double *ra = malloc(40 * NQ * D * sizeof *ra);
    for (int t0 = 0; t0 < NT;) {
        int n = t0 == 0 ? 40 : 1;
        for (int l = 0; l < NL; l++) {
            CHECK_OK(vq_cache_append(a, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
            CHECK_OK(vq_cache_append(b, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
            CHECK_OK(vq_cache_attend(a, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, oa));
            CHECK_OK(vq_cache_attend(b, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, ob));
            for (size_t i = 0; i < (size_t)n * NQ * D; i++)
                ra[i] = oa[i];
            double e = tc_rel_err(ob, ra, (size_t)n * NQ * D);
            worst = e > worst ? e : worst;
        }
        t0 += n;
    }
    CHECKF(worst <= 1e-5, "minicache: threads vs serial rel diff %.3g", worst);
    free(oa), free(ob), free(ra);
    vq_cache_free(a), vq_cache_free(b);
    vq_pool_free(pool);
}

static void test_minicache_refusals(void)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_cache_shape sh = { NL, LS, 3 };
    CHECK_OK(vq_cache_config_parse("cross=minicache evict=streaming_llm:window=8", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_UNSUPPORTED && !c);
    CHECK(strstr(vq_last_error(), "minicache") != NULL);
    vq_cache_config_free(cfg);
    c = make("cross=minicache:start=0.5");
    if (!c)
        return;
    float k[NKV * D] = { 0 };
    /* the follower without its anchor's tokens */
    CHECK(vq_cache_append(c, 3, k, k, 1, 0) == VQ_ERR_STATE);
    CHECK(strstr(vq_cache_error(c), "anchor") != NULL);
    CHECK_OK(vq_cache_append(c, 2, k, k, 1, 0));
    CHECK(vq_cache_append(c, 3, k, k, 1, 1) == VQ_ERR_STATE); /* other position */
    CHECK_OK(vq_cache_append(c, 3, k, k, 1, 0));
    vq_cache_free(c);
}

/* ---- cross-layer methods on correlated layers (xquant, xkv) ------------- */

/* layers 1 and 3 = 0.8 x layers 0 and 2 + noise of sd `noise` (keys and
 * values); keys get a low-rank structure with a non-zero mean (real keys
 * have both) so that xkv has a spectrum to cut */
static void make_corr(data *x, uint64_t seed, float noise)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    static float basis[8][D];
    tc_fill(&g, &basis[0][0], 8 * D, 1.0f);
    tc_fill(&g, &x->v[0][0][0][0], sizeof x->v / 4, 1.0f);
    tc_fill(&g, &x->q[0][0][0][0], sizeof x->q / 4, 1.0f);
    for (int l = 0; l < NL; l += 2)
        for (int t = 0; t < NT; t++)
            for (int h = 0; h < NKV; h++) {
                float a[8];
                for (int r = 0; r < 8; r++)
                    a[r] = vq_rng_normal(&g) * (float)(8 - r) / 8.0f;
                for (int d = 0; d < D; d++) {
                    float k = 0.5f + 0.1f * vq_rng_normal(&g); /* mean + isotropic floor */
                    for (int r = 0; r < 8; r++)
                        k += basis[r][d] * a[r];
                    x->k[l][t][h][d] = k;
                }
            }
    for (int l = 1; l < NL; l += 2)
        for (int t = 0; t < NT; t++)
            for (int h = 0; h < NKV; h++)
                for (int d = 0; d < D; d++) {
                    x->k[l][t][h][d] = 0.8f * x->k[l - 1][t][h][d] + noise * vq_rng_normal(&g);
                    x->v[l][t][h][d] = 0.8f * x->v[l - 1][t][h][d] + noise * vq_rng_normal(&g);
                }
}

/* append all layers (prefill 40, then decode 1 by 1); the worst relative
 * error of the attention output vs the reference rebuilt from the cache's
 * own decoded contents, over all layers */
static double drive_all(vq_cache *c, const data *x)
{
    double worst = 0;
    float *out = malloc((size_t)40 * NQ * D * 4);
    double *ref = malloc((size_t)40 * NQ * D * sizeof *ref);
    for (int t0 = 0; t0 < NT;) {
        int n = t0 == 0 ? 40 : 1;
        for (int l = 0; l < NL; l++) {
            CHECK_OK(vq_cache_append(c, l, &x->k[l][t0][0][0], &x->v[l][t0][0][0], (size_t)n, t0));
            CHECK_OK(vq_cache_attend(c, l, &x->q[l][t0][0][0], (size_t)n, NQ, 0.125f, out));
            CHECK(tc_ref_from_cache(c, l, &LS[l], &x->q[l][t0][0][0], (size_t)n, t0, 0.125, ref) == 0);
            double e = tc_rel_err(out, ref, (size_t)n * NQ * D);
            worst = e > worst ? e : worst;
        }
        t0 += n;
    }
    free(out), free(ref);
    return worst;
}

/* relative RMS error of layer l's decoded keys (role 0) or values vs the
 * inputs, all heads */
static double recon_err(vq_cache *c, const data *x, int l, int role)
{
    double num = 0, den = 0;
    static float buf[NT * D];
    int32_t pos[NT];
    for (int h = 0; h < NKV; h++) {
        size_t n = 0;
        CHECK_OK(vq_cache_gather(c, l, h, NT, pos, role ? NULL : buf, role ? buf : NULL, &n));
        CHECK(n == NT);
        for (size_t t = 0; t < n && n == NT; t++)
            for (int d = 0; d < D; d++) {
                double y = role ? x->v[l][t][h][d] : x->k[l][t][h][d], e = buf[t * D + d] - y;
                num += e * e;
                den += y * y;
            }
    }
    return sqrt(num / den);
}

/* resident vs accounted, per layer and role: the only gap is the partly
 * filled last page of each (head, role) (docs/cache.md) */
static void check_bytes(vq_cache *c, const char *what)
{
    for (int l = 0; l < NL; l++) {
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, l, &u));
        const vq_cache_layer *L = &c->layers[l];
        const vq_cache_role_stats *rs[2] = { &u.keys, &u.values };
        size_t pb[2] = { L->kpage_bytes, L->vpage_bytes };
        for (int r = 0; r < 2; r++) {
            int64_t gap = (int64_t)(rs[r]->resident_bytes - rs[r]->residual_bytes) -
                          (int64_t)(rs[r]->accounted_bytes - rs[r]->residual_tokens * 2 * D);
            CHECKF(gap >= 0 && gap < (int64_t)(NKV * pb[r]), "%s: layer %d %s: resident-accounted gap %lld", what, l,
                   r ? "values" : "keys", (long long)gap);
        }
    }
}

/* save, load, continue both: identical outputs */
static void check_roundtrip(vq_cache *c, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s/x.vqkc", vq_test_tmpdir());
    CHECK_OK(vq_cache_save(c, path));
    vq_cache *b = NULL;
    vq_cache_shape sh = { NL, LS, 3 };
    CHECK_OK(vq_cache_load(path, &sh, &b));
    if (!b)
        return;
    float ya[NQ * D], yb[NQ * D], k[NKV * D], q[NQ * D];
    vq_rng g;
    vq_rng_seed(&g, 8);
    int same = 1;
    for (int t = 0; t < 3; t++)
        for (int l = 0; l < NL; l++) {
            tc_fill(&g, k, NKV * D, 1.0f);
            tc_fill(&g, q, NQ * D, 1.0f);
            CHECK_OK(vq_cache_append(c, l, k, k, 1, NT + t));
            CHECK_OK(vq_cache_append(b, l, k, k, 1, NT + t));
            CHECK_OK(vq_cache_attend(c, l, q, 1, NQ, 0.125f, ya));
            CHECK_OK(vq_cache_attend(b, l, q, 1, NQ, 0.125f, yb));
            same &= memcmp(ya, yb, sizeof ya) == 0;
        }
    CHECKF(same, "%s: loaded cache differs", what);
    vq_cache_usage ua, ub;
    CHECK_OK(vq_cache_stats(c, -1, &ua));
    CHECK_OK(vq_cache_stats(b, -1, &ub));
    CHECK(ua.keys.accounted_bytes == ub.keys.accounted_bytes && ua.keys.shared_bytes == ub.keys.shared_bytes);
    vq_cache_free(b);
}

static void test_xquant(void)
{
    static data x;
    make_corr(&x, 11, 0.1f);
    const char *cfgs[] = { "cross=xquant:bits=4", "residual=5 page=16 cross=xquant:bits=4,rbits=0" };
    double err_f[2] = { 0, 0 }, err_a = 0;
    for (int ci = 0; ci < 2; ci++) {
        vq_cache *c = make(cfgs[ci]);
        if (!c)
            continue;
        CHECK(c->layers[0].xrole == VQ_CROSS_ANCHOR && c->layers[1].xrole == VQ_CROSS_FOLLOWER);
        double e = drive_all(c, &x);
        /* same vectors, summed in another order: float rounding */
        CHECKF(e <= 2e-5, "%s: attention vs decoded reference rel err %.3g", cfgs[ci], e);
        check_bytes(c, cfgs[ci]);
        /* byte accounting by the layout: anchor D*4/8 codes + D/32 x 4 B;
         * follower D/32 x 4 B (+ D*2/8 + D/32 x 4 B residual) */
        vq_cache_usage u0, u1;
        CHECK_OK(vq_cache_stats(c, 0, &u0));
        CHECK_OK(vq_cache_stats(c, 1, &u1));
        uint64_t res = u0.keys.residual_tokens, packed = (uint64_t)NT * NKV - res;
        uint64_t fb = ci == 0 ? D / 8 + D / 4 + D / 8 : D / 8;
        CHECK(u0.keys.accounted_bytes == packed * (D / 2 + D / 8) + res * 2 * D);
        CHECKF(u1.keys.accounted_bytes == packed * fb + res * 2 * D, "%s: follower accounted %llu", cfgs[ci],
               (unsigned long long)u1.keys.accounted_bytes);
        CHECK(u0.keys.shared_bytes == 0 && u1.values.tokens == (uint64_t)NT * NKV);
        err_f[ci] = recon_err(c, &x, 1, 0) + recon_err(c, &x, 1, 1);
        if (ci == 0)
            err_a = recon_err(c, &x, 0, 0) + recon_err(c, &x, 0, 1);
        if (ci == 0)
            check_roundtrip(c, cfgs[ci]);
        vq_cache_free(c);
    }
    printf("  xquant: anchor rel err (K+V) %.3f, follower %.3f with the 2-bit residual, %.3f without\n", err_a,
           err_f[0], err_f[1]);
    /* The follower's codes are the anchor's: without a residual its error
     * is the anchor's quantization error (scaled) plus the part of its own
     * noise the codes cannot express -- at least as large as the anchor's.
     * The 2-bit residual of that error cuts it by > 2x (a 2-bit uniform
     * quantizer over a group's range keeps about 0.4 of the sd). */
    CHECKF(err_f[1] >= err_a, "xquant: follower without residual %.3f better than the anchor %.3f?", err_f[1], err_a);
    CHECKF(err_f[0] <= 0.5 * err_f[1], "xquant: residual does not help enough (%.3f vs %.3f)", err_f[0], err_f[1]);
    CHECKF(err_f[0] <= 0.12, "xquant: follower error with residual %.3f > 0.12", err_f[0]);
}

static void test_xquant_threads_refusals(void)
{
    static data x;
    make_corr(&x, 12, 0.1f);
    vq_pool *pool = NULL;
    CHECK_OK(vq_pool_create(3, &pool));
    vq_cache *a = make("page=16 cross=xquant:bits=4"), *b = make("page=16 cross=xquant:bits=4");
    if (a && b && pool) {
        CHECK_OK(vq_cache_set_threads(b, pool));
        float *oa = malloc(40 * NQ * D * 4), *ob = malloc(40 * NQ * D * 4);
        double *ra = malloc(40 * NQ * D * sizeof *ra), worst = 0;
        for (int t0 = 0; t0 < NT;) {
            int n = t0 == 0 ? 40 : 1;
            for (int l = 0; l < NL; l++) {
                CHECK_OK(vq_cache_append(a, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
                CHECK_OK(vq_cache_append(b, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
                CHECK_OK(vq_cache_attend(a, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, oa));
                CHECK_OK(vq_cache_attend(b, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, ob));
                for (size_t i = 0; i < (size_t)n * NQ * D; i++)
                    ra[i] = oa[i];
                double e = tc_rel_err(ob, ra, (size_t)n * NQ * D);
                worst = e > worst ? e : worst;
            }
            t0 += n;
        }
        CHECKF(worst <= 1e-5, "xquant: threads vs serial rel diff %.3g", worst);
        free(oa), free(ob), free(ra);
    }
    vq_cache_free(a), vq_cache_free(b);
    vq_pool_free(pool);
    /* bad parameters are named */
    const char *bad[][2] = { { "cross=xquant:bits=3", "bits=3" }, { "cross=xquant:rbits=1", "rbits=1" },
                             { "cross=xquant:bitz=4", "bitz" }, { "cross=xkv:energy=2", "energy" },
                             { "cross=xkv:bits=5", "bits=5" }, { "cross=xkv:groop=2", "groop" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vq_cache_config *cfg = NULL;
        CHECKF(vq_cache_config_parse(bad[i][0], &cfg) == VQ_ERR_INVALID_ARG && !cfg, "'%s' accepted", bad[i][0]);
        CHECKF(strstr(vq_last_error(), bad[i][1]) != NULL, "'%s': message '%s'", bad[i][0], vq_last_error());
        vq_cache_config_free(cfg);
    }
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_cache_shape sh = { NL, LS, 3 };
    CHECK_OK(vq_cache_config_parse("cross=xquant evict=h2o:budget=16", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_UNSUPPORTED && !c);
    CHECK(strstr(vq_last_error(), "xquant") != NULL);
    vq_cache_config_free(cfg);
    /* no pair qualifies (every layer windowed): refused, not ignored */
    static const vq_layer_shape WS[2] = { { NKV, NQ, D, 16, 0 }, { NKV, NQ, D, 16, 0 } };
    vq_cache_shape wsh = { 2, WS, 3 };
    CHECK_OK(vq_cache_config_parse("cross=xquant:bits=4", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &wsh, 1, &c) == VQ_ERR_UNSUPPORTED && !c);
    CHECK(strstr(vq_last_error(), "no pair") != NULL);
    vq_cache_config_free(cfg);
    c = make("cross=xquant:bits=4");
    if (c) { /* the follower's packed tokens need the anchor's */
        float k[NKV * D] = { 0 };
        CHECK(vq_cache_append(c, 1, k, k, 1, 0) == VQ_ERR_STATE);
        CHECK(strstr(vq_cache_error(c), "anchor") != NULL);
        vq_cache_free(c);
    }
}

static int xkv_rank(vq_cache *c, int l)
{
    int r = 0;
    const char *spec = vq_cache_codec_spec(c, l, VQ_ROLE_KEY);
    return sscanf(spec, "xkv:rank=%d", &r) == 1 ? r : 0;
}

static void test_xkv(void)
{
    static data x;
    make_corr(&x, 13, 0.1f);
    /* error and rank against energy (8-bit coordinates: the truncation
     * dominates the quantization) */
    const double energies[] = { 0.5, 0.8, 0.95, 0.99 };
    double prev_err = 1e9;
    int prev_rank = 0;
    for (int i = 0; i < 4; i++) {
        char cfg[128];
        snprintf(cfg, sizeof cfg, "cross=xkv:group=2,energy=%g,bits=8,min=32", energies[i]);
        vq_cache *c = make(cfg);
        if (!c)
            continue;
        double e = drive_all(c, &x);
        /* low-rank scoring (<q',c> s + z sum q' + <q,mean>) vs decode then
         * dot: the same value summed in another order, float rounding */
        CHECKF(e <= 1e-4, "%s: attention vs decoded reference rel err %.3g", cfg, e);
        check_bytes(c, cfg);
        int r = xkv_rank(c, 0);
        CHECKF(r >= 1 && r == xkv_rank(c, 1), "%s: ranks %d %d", cfg, r, xkv_rank(c, 1));
        double err = recon_err(c, &x, 0, 0) + recon_err(c, &x, 1, 0);
        printf("  xkv energy %.2f: rank %d of %d, key rel err (layers 0+1) %.4f\n", energies[i], r, D, err);
        CHECKF(r >= prev_rank && err < prev_err, "%s: rank %d err %.4f vs previous rank %d err %.4f", cfg, r, err,
               prev_rank, prev_err);
        prev_rank = r;
        prev_err = err;
        /* bytes: coordinates + scale/zero per token, basis once per group */
        vq_cache_usage u, ut;
        CHECK_OK(vq_cache_stats(c, 1, &u));
        CHECK_OK(vq_cache_stats(c, -1, &ut));
        uint64_t res = u.keys.residual_tokens, packed = (uint64_t)NT * NKV - res;
        CHECK(u.keys.accounted_bytes == packed * (uint64_t)((r * 8 + 7) / 8 + 4) + res * 2 * D);
        CHECK(u.keys.shared_bytes == 0);
        CHECKF(ut.keys.shared_bytes == 2 * 4 * (uint64_t)(D + D * r) || xkv_rank(c, 2) != r,
               "%s: shared %llu", cfg, (unsigned long long)ut.keys.shared_bytes);
        if (i == 2)
            check_roundtrip(c, cfg);
        vq_cache_free(c);
    }
    /* a generous energy leaves the decaying 8 directions + the noise
     * floor: rank must stay well below D */
    CHECKF(prev_rank < D, "xkv: rank %d at energy 0.99", prev_rank);
    /* error at 0.99 small: the data is rank 8 + a floor of 0.1 */
    CHECKF(prev_err < 0.3, "xkv: error %.3f at energy 0.99", prev_err);

    /* before the basis: every token fp16 (exact); fitted once the group's
     * last layer holds min=50 tokens (prefill 40, then decode) */
    vq_cache *c = make("cross=xkv:group=2,energy=0.95,bits=4,min=50");
    if (c) {
        float out[NQ * D];
        for (int t0 = 0; t0 < 49;) {
            int n = t0 == 0 ? 40 : 1;
            for (int l = 0; l < NL; l++) {
                CHECK_OK(vq_cache_append(c, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
                CHECK_OK(vq_cache_attend(c, l, &x.q[l][t0 + n - 1][0][0], 1, NQ, 0.125f, out));
            }
            t0 += n;
        }
        vq_cache_usage u;
        CHECK_OK(vq_cache_stats(c, 0, &u));
        CHECK(xkv_rank(c, 0) == 0 && u.keys.residual_tokens == 49 * NKV && u.keys.shared_bytes == 0);
        check_bytes(c, "xkv before the basis");
        check_roundtrip(c, "xkv before the basis"); /* appends 3 more: fitted at 52 >= 50 */
        CHECK(xkv_rank(c, 0) > 0);
        CHECK_OK(vq_cache_stats(c, 0, &u));
        CHECK(u.keys.residual_tokens == 0 && u.keys.tokens == 52 * NKV);
        check_bytes(c, "xkv after the basis");
        vq_cache_free(c);
    }
    /* threads give the serial result */
    vq_pool *pool = NULL;
    CHECK_OK(vq_pool_create(3, &pool));
    vq_cache *a = make("page=16 cross=xkv:min=32"), *b = make("page=16 cross=xkv:min=32");
    if (a && b && pool) {
        CHECK_OK(vq_cache_set_threads(b, pool));
        float *oa = malloc(40 * NQ * D * 4), *ob = malloc(40 * NQ * D * 4);
        double *ra = malloc(40 * NQ * D * sizeof *ra), worst = 0;
        for (int t0 = 0; t0 < NT;) {
            int n = t0 == 0 ? 40 : 1;
            for (int l = 0; l < NL; l++) {
                CHECK_OK(vq_cache_append(a, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
                CHECK_OK(vq_cache_append(b, l, &x.k[l][t0][0][0], &x.v[l][t0][0][0], (size_t)n, t0));
                CHECK_OK(vq_cache_attend(a, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, oa));
                CHECK_OK(vq_cache_attend(b, l, &x.q[l][t0][0][0], (size_t)n, NQ, 0.125f, ob));
                for (size_t i = 0; i < (size_t)n * NQ * D; i++)
                    ra[i] = oa[i];
                double e = tc_rel_err(ob, ra, (size_t)n * NQ * D);
                worst = e > worst ? e : worst;
            }
            t0 += n;
        }
        CHECKF(worst <= 1e-5, "xkv: threads vs serial rel diff %.3g", worst);
        free(oa), free(ob), free(ra);
    }
    vq_cache_free(a), vq_cache_free(b);
    vq_pool_free(pool);
    vq_cache_config *cfg = NULL;
    vq_cache_shape sh = { NL, LS, 3 };
    c = NULL;
    CHECK_OK(vq_cache_config_parse("cross=xkv evict=streaming_llm:window=8", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_UNSUPPORTED && !c);
    CHECK(strstr(vq_last_error(), "xkv") != NULL);
    vq_cache_config_free(cfg);
}

int main(void)
{
    RUN(test_minicache);
    RUN(test_minicache_threads);
    RUN(test_minicache_refusals);
    RUN(test_xquant);
    RUN(test_xquant_threads_refusals);
    RUN(test_xkv);
    return vq_test_summary("cache_cross");
}
