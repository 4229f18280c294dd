/* test_codec_tiled.c -- the SIMD/tiled kernels against their scalar
 * references: dense dot/axpy (AVX2 vs scalar), fp16 rows (F16C vs scalar,
 * every half), the softmax exponential (AVX2 vs expf), and for every
 * method with a `values` op, the tiled score/accumulate against the
 * method's own scalar kernels over several head sizes, query counts and
 * token counts that end in a partial tile. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "kernels/dense.h"
#include "kernels/qblock_values.h"
#include "codec/tiled.h"
#include "core/cpu.h"
#include "core/fp16_row.h"
#include "core/rng.h"
#include "core/vexp.h"
#include "test.h"
#include "veloxquant.h"

static int have_avx2(void) { return (vq_cpu_features() & VQ_CPU_AVX2) != 0; }

static void fill(float *x, size_t n, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(&r);
}

/* max |a-b| / (max |b| + tiny) over n */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, m = 1e-30;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static void test_dense(void)
{
    if (!have_avx2()) {
        printf("  (no AVX2 on this CPU: dense twins not run)\n");
        return;
    }
    static const size_t Es[] = { 8, 32, 64, 72, 128, 256, 512 };
    for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
        for (size_t nt = 1; nt <= 19; nt += 3)
            for (int nq = 1; nq <= 7; nq += 3) {
                size_t E = Es[ie], qs = E + 8, ss = nt + 5;
                float *q = malloc(sizeof(float) * qs * (size_t)nq), *v = malloc(sizeof(float) * E * nt);
                float *s1 = calloc(ss * (size_t)nq, sizeof(float)), *s2 = calloc(ss * (size_t)nq, sizeof(float));
                float *a1 = malloc(sizeof(float) * qs * (size_t)nq), *a2 = malloc(sizeof(float) * qs * (size_t)nq);
                fill(q, qs * (size_t)nq, E + nt);
                fill(v, E * nt, 7 * E + nt);
                vq_dense_dot_ref(q, qs, nq, v, VQ_ELEM_F32, nt, E, s1, ss);
                vq_dense_dot_avx2(q, qs, nq, v, VQ_ELEM_F32, nt, E, s2, ss);
                CHECKF(rel_diff(s2, s1, ss * (size_t)nq) < 1e-5, "dot E=%zu nt=%zu nq=%d", E, nt, nq);
                /* strided weights; accumulators start non-zero */
                fill(a1, qs * (size_t)nq, 99);
                memcpy(a2, a1, sizeof(float) * qs * (size_t)nq);
                size_t ws = nt + 3;
                float *w = malloc(sizeof(float) * ws * (size_t)nq);
                fill(w, ws * (size_t)nq, 5 + nt);
                vq_dense_axpy_ref(w, ws, nq, v, VQ_ELEM_F32, nt, E, a1, qs);
                vq_dense_axpy_avx2(w, ws, nq, v, VQ_ELEM_F32, nt, E, a2, qs);
                free(w);
                CHECKF(rel_diff(a2, a1, qs * (size_t)nq) < 1e-5, "axpy E=%zu nt=%zu nq=%d", E, nt, nq);
                free(q);
                free(v);
                free(s1);
                free(s2);
                free(a1);
                free(a2);
            }
}

static void test_fp16_rows(void)
{
    if (!have_avx2()) {
        printf("  (no F16C: fp16 row twin not run)\n");
        return;
    }
    uint8_t *src = malloc(2 * 65536 + 2);
    float *a = malloc(sizeof(float) * 65537), *b = malloc(sizeof(float) * 65537);
    for (uint32_t h = 0; h < 65536; h++) {
        src[2 * h] = (uint8_t)h;
        src[2 * h + 1] = (uint8_t)(h >> 8);
    }
    size_t bad = 0;
    for (size_t off = 0; off < 2; off++) { /* aligned and a 7-element tail */
        size_t n = 65536 - 7 * off;
        vq_fp16_row_ref(src + 2 * off, a, n);
        vq_fp16_row_f16c(src + 2 * off, b, n);
        for (size_t i = 0; i < n; i++)
            if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], sizeof(float)) != 0)
                bad++;
    }
    CHECKF(bad == 0, "%zu halves convert differently", bad);
    free(src);
    free(a);
    free(b);
}

static void test_exp(void)
{
    if (!have_avx2()) {
        printf("  (no AVX2: exp twin not run)\n");
        return;
    }
    enum { N = 4099 };
    float *x = malloc(sizeof(float) * N), *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    vq_rng r;
    vq_rng_seed(&r, 5);
    for (size_t i = 0; i < N; i++)
        x[i] = i % 17 == 3 ? -INFINITY : 3.0f - 110.0f * vq_rng_uniform(&r); /* <= m = 3 */
    memcpy(a, x, sizeof(float) * N);
    memcpy(b, x, sizeof(float) * N);
    float sa = vq_exp_shift_ref(a, N, 1.0f, 3.0f), sb = vq_exp_shift_avx2(b, N, 1.0f, 3.0f);
    double worst = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < N; i++) {
        if (x[i] == -INFINITY) {
            bad += b[i] != 0.0f;
            continue;
        }
        if (a[i] < 1.3e-38f) { /* below exp(-87.3), near subnormals: the twin gives 0 */
            bad += b[i] != 0.0f && fabs((double)b[i] - a[i]) > 1e-6 * a[i];
            continue;
        }
        worst = fmax(worst, fabs((double)b[i] - a[i]) / a[i]);
    }
    CHECKF(bad == 0, "%zu special values differ", bad);
    CHECKF(worst < 4e-7, "exp relative error %g", worst);
    CHECK_NEAR(sb, sa, 1e-5 * sa);
    if (vq_cpu_features() & VQ_CPU_AVX2)
        for (size_t n = 0; n <= 40; n++) { /* row max: the AVX2 twin against the reference, NaN ignored */
            float c[41];
            memcpy(c, x + 3, sizeof(float) * n);
            if (n > 5)
                c[5] = NAN;
            if (n > 17)
                c[17] = x[0] + 100.0f; /* the maximum in a whole vector, then in the tail */
            if (n > 38)
                c[38] = x[0] + 200.0f;
            CHECKF(vq_row_max_avx2(c, n) == vq_row_max_ref(c, n), "avx2 row max n=%zu", n);
        }
    if (vq_cpu_features() & VQ_CPU_AVX512) {
        /* the AVX-512 twin: the AVX2 twin's bits, values and sum, for every
         * tail length; row max against the reference, NaN ignored */
        for (size_t n = 0; n <= 40; n++) {
            float *c = malloc(sizeof(float) * (n + 1)), *d = malloc(sizeof(float) * (n + 1));
            memcpy(c, x + 7, sizeof(float) * n);
            memcpy(d, x + 7, sizeof(float) * n);
            float sc = vq_exp_shift_avx2(c, n, 1.0f, 3.0f), sd = vq_exp_shift_avx512(d, n, 1.0f, 3.0f);
            CHECKF(sc == sd && memcmp(c, d, sizeof(float) * n) == 0, "avx512 exp differs from avx2 at n=%zu", n);
            memcpy(c, x + 3, sizeof(float) * n);
            if (n > 5)
                c[5] = NAN;
            CHECKF(vq_row_max_avx512(c, n) == vq_row_max_ref(c, n), "row max n=%zu", n);
            free(c);
            free(d);
        }
        /* rows long enough for the four running maxima (64 a step), the
         * maximum in each of them, in the 16-wide loop and in the tail */
        for (size_t n = 41; n <= 300; n += 7) {
            float *c = malloc(sizeof(float) * n);
            for (size_t i = 0; i < n; i++)
                c[i] = (float)((i * 37) % 101) - 50.0f;
            c[(n * 13) % n ? (n * 13) % n : 1] = NAN;
            for (size_t at = 0; at < n; at += 1 + n / 9) {
                const float keep = c[at];
                c[at] = 1000.0f;
                CHECKF(vq_row_max_avx512(c, n) == vq_row_max_ref(c, n), "row max n=%zu, maximum at %zu", n, at);
                c[at] = keep;
            }
            free(c);
        }
        memcpy(b, x, sizeof(float) * N);
        float sd = vq_exp_shift_avx512(b, N, 1.0f, 3.0f);
        memcpy(a, x, sizeof(float) * N);
        CHECK(sd == vq_exp_shift_avx2(a, N, 1.0f, 3.0f) && memcmp(a, b, sizeof(float) * N) == 0);
        /* a scale on the way: the twins agree, and equal scaling first
         * (x*sc stored, then sc = 1) bit for bit */
        float *s1 = malloc(sizeof(float) * N), *s2 = malloc(sizeof(float) * N);
        for (size_t i = 0; i < N; i++)
            s1[i] = x[i] * 8.0f + 0.37f * (float)(i % 5), s2[i] = s1[i];
        memcpy(a, s1, sizeof(float) * N);
        float m8 = vq_row_max_ref(s1, N) * 0.125f;
        float e1 = vq_exp_shift_avx512(s1, N, 0.125f, m8), e2 = vq_exp_shift_avx2(s2, N, 0.125f, m8);
        CHECK(e1 == e2 && memcmp(s1, s2, sizeof(float) * N) == 0);
        for (size_t i = 0; i < N; i++)
            a[i] *= 0.125f;
        CHECK(vq_exp_shift_avx512(a, N, 1.0f, m8) == e1 && memcmp(a, s1, sizeof(float) * N) == 0);
        free(s1);
        free(s2);
    } else {
        printf("  (no AVX-512: exp twin not run)\n");
    }
    free(x);
    free(a);
    free(b);
}

/* q8_0 / q4_0 block unpacking: AVX2 twin == reference, bit for bit, over
 * random blocks including extreme scales and every code */
static void test_qblock_values(void)
{
    if (!have_avx2()) {
        printf("  (no AVX2: q-block twins not run)\n");
        return;
    }
    enum { NB = 257 };
    uint8_t *b8 = malloc(34 * NB), *b4 = malloc(18 * NB);
    float *r = malloc(sizeof(float) * 32 * NB), *s = malloc(sizeof(float) * 32 * NB);
    vq_rng g;
    vq_rng_seed(&g, 11);
    for (size_t i = 0; i < 34 * NB; i++)
        b8[i] = (uint8_t)vq_rng_next(&g);
    for (size_t i = 0; i < 18 * NB; i++)
        b4[i] = (uint8_t)vq_rng_next(&g);
    size_t bad = 0;
    vq_q8_0_values_ref(b8, NB, r);
    vq_q8_0_values_avx2(b8, NB, s);
    for (size_t i = 0; i < 32 * NB; i++)
        bad += !(isnan(r[i]) && isnan(s[i])) && memcmp(&r[i], &s[i], sizeof(float)) != 0;
    vq_q4_0_values_ref(b4, NB, r);
    vq_q4_0_values_avx2(b4, NB, s);
    for (size_t i = 0; i < 32 * NB; i++)
        bad += !(isnan(r[i]) && isnan(s[i])) && memcmp(&r[i], &s[i], sizeof(float)) != 0;
    CHECKF(bad == 0, "%zu q-block values differ", bad);
    free(b8);
    free(b4);
    free(r);
    free(s);
}

/* every method with a values op: tiled path == the method's own kernels */
static void check_method(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(spec, D, role, 42, &c);
    CHECKF(st == VQ_OK, "%s D=%d: %s", spec, D, vq_last_error());
    if (st != VQ_OK)
        return;
    if (vq_codec_needs_calibration(c)) { /* on 512 random vectors */
        float *cal = malloc(sizeof(float) * 512 * (size_t)D);
        fill(cal, 512 * (size_t)D, (uint64_t)D + 5);
        CHECK_OK(vq_codec_calibrate(c, cal, 512));
        free(cal);
    }
    CHECKF(c->tile != NULL && c->tile_tokens % c->block_tokens == 0, "%s has a tile", spec);
    const size_t bt = c->block_tokens, E = c->accum_size;
    const size_t ns[] = { bt, 3 * bt, (c->tile_tokens / bt + 1) * bt, (2 * c->tile_tokens / bt + 3) * bt };
    for (size_t in = 0; in < 4; in++)
        for (int nq = 1; nq <= 9; nq += 4) {
            size_t n = ns[in];
            float *x = malloc(sizeof(float) * n * (size_t)D), *q = malloc(sizeof(float) * (size_t)D);
            uint8_t *codes = malloc(c->block_bytes * (n / bt));
            uint8_t *qb = malloc(c->query_bytes * (size_t)nq);
            float *s1 = malloc(sizeof(float) * n * (size_t)nq), *s2 = malloc(sizeof(float) * n * (size_t)nq);
            float *w = malloc(sizeof(float) * n * (size_t)nq);
            float *a1 = calloc(E * (size_t)nq, sizeof(float)), *a2 = calloc(E * (size_t)nq, sizeof(float));
            fill(x, n * (size_t)D, (uint64_t)(D + n));
            CHECK_OK(vq_codec_encode(c, x, n, codes));
            for (int j = 0; j < nq; j++) {
                fill(q, (size_t)D, (uint64_t)(1000 + j));
                CHECK_OK(vq_codec_prepare_query(c, q, qb + (size_t)j * c->query_bytes));
            }
            fill(w, n * (size_t)nq, 77);
            if (strncmp(spec, "kivi", 4) == 0 || strcmp(spec, "fp16") == 0 || strcmp(spec, "q8_0") == 0) {
                /* channel-domain methods: values are exactly the decode */
                float *d1 = malloc(sizeof(float) * n * (size_t)D), *d2 = malloc(sizeof(float) * n * (size_t)D);
                CHECK_OK(vq_codec_decode(c, codes, n, d1));
                c->ops->values(c, codes, n, d2);
                CHECKF(memcmp(d1, d2, sizeof(float) * n * (size_t)D) == 0, "%s D=%d: values != decode", spec, D);
                free(d1);
                free(d2);
            }
            if (vq_codec_tiled_score_ok(c)) {
                c->ops->score(c, qb, nq, codes, n, s1);
                vq_codec_score_tiled(c, qb, nq, codes, n, s2);
                CHECKF(rel_diff(s2, s1, n * (size_t)nq) < 1e-4, "%s D=%d n=%zu nq=%d: score %g", spec, D, n,
                       nq, rel_diff(s2, s1, n * (size_t)nq));
            }
            c->ops->accumulate(c, w, nq, codes, n, a1);
            vq_codec_accumulate_tiled(c, w, nq, codes, n, a2);
            /* compared after accum_finish: an accumulator may hold entries
             * that finish never reads (spectral's split layout skips
             * them on its own path) */
            float *o1 = malloc(sizeof(float) * (size_t)D * (size_t)nq), *o2 = malloc(sizeof(float) * (size_t)D * (size_t)nq);
            for (int j = 0; j < nq; j++) {
                CHECK_OK(vq_codec_accum_finish(c, a1 + (size_t)j * E, o1 + (size_t)j * D));
                CHECK_OK(vq_codec_accum_finish(c, a2 + (size_t)j * E, o2 + (size_t)j * D));
            }
            CHECKF(rel_diff(o2, o1, (size_t)D * (size_t)nq) < 1e-4, "%s D=%d n=%zu nq=%d: accumulate %g", spec, D, n, nq,
                   rel_diff(o2, o1, (size_t)D * (size_t)nq));
            free(o1);
            free(o2);
            free(x);
            free(q);
            free(codes);
            free(qb);
            free(s1);
            free(s2);
            free(w);
            free(a1);
            free(a2);
        }
    vq_codec_free(c);
}

static void test_methods(void)
{
    static const char *specs[] = {
        /* q4_0 and kivi with qbits=0: their defaults sum values with int8 weights (kivi's
         * also scores keys against int8 queries; test_codec_all and test_cache_attend
         * check those against the float form) */
        "fp16", "q8_0", "q8_0:rot=1", "q4_0:qbits=0", "q4_0:rot=1,qbits=0", "turboquant_mse:bits=3", "turboquant_rvq:bits=1",
        "turboquant_rvq:bits=2", "turboquant_rvq:bits=2,fit=1", "turboquant_prod:bits=3", "kivi:bits=2,group=32,qbits=0", "kivi:bits=4,group=128,qbits=0",
        "rabitq:bits=1", "rabitq:bits=3", "kivix:bits=3,group=32,outliers=8", "kivix:bits=5,group=128,outliers=40",
        "qjl", "qjl:dim=96",
    };
    static const int Ds[] = { 32, 64, 128, 256 };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (size_t d = 0; d < 4; d++) {
            if (strncmp(specs[i], "kivi", 4) == 0 && Ds[d] < 128 && strstr(specs[i], "group=128"))
                continue;
            check_method(specs[i], Ds[d], VQ_ROLE_KEY);
            check_method(specs[i], Ds[d], VQ_ROLE_VALUE);
        }
    /* calibrated methods (D <= 128: the eigen-solve of the calibration);
     * spectral's wide signal slots take the scalar unpack inside values */
    static const char *calibrated[] = { "spectral:bits=4", "spectral:bits=2",
                                        "spectral:bits=2,signal_bits=4,signal=12", "vecinfer:sub_dim=8,bits=8",
                                        "vecinfer:sub_dim=4,bits=5", "vecinfer:sub_dim=8,bits=9" };
    for (size_t i = 0; i < sizeof calibrated / sizeof *calibrated; i++)
        for (size_t d = 0; d < 3; d++) {
            check_method(calibrated[i], Ds[d], VQ_ROLE_KEY);
            check_method(calibrated[i], Ds[d], VQ_ROLE_VALUE);
        }
}

/* The attention of a batch of queries must equal that of one query at a
 * time bit for bit (validate's fp16 arm checks decode against a batched
 * teacher-forced pass): scores may not depend on the tile position or on
 * the number of queries, exponentials not on the row length. */
static void test_batch_invariance(void)
{
    vq_codec *c = NULL;
    CHECK_OK(vq_codec_create("fp16", 64, VQ_ROLE_KEY, 1, &c));
    if (!c)
        return;
    enum { N = 37, NQ = 5 };
    float x[N * 64], q[64], all[NQ * N], one[N];
    uint8_t codes[N * 128], qb[NQ * 256];
    fill(x, N * 64, 3);
    CHECK_OK(vq_codec_encode(c, x, N, codes));
    for (int j = 0; j < NQ; j++) {
        fill(q, 64, 50 + (uint64_t)j);
        CHECK_OK(vq_codec_prepare_query(c, q, qb + (size_t)j * c->query_bytes));
    }
    CHECK_OK(vq_codec_score(c, qb, NQ, codes, N, all));
    size_t bad = 0;
    for (int j = 0; j < NQ; j++)
        for (size_t n = 1; n <= N; n += 5) { /* query j alone, over a prefix */
            CHECK_OK(vq_codec_score(c, qb + (size_t)j * c->query_bytes, 1, codes, n, one));
            bad += memcmp(one, all + (size_t)j * N, n * sizeof(float)) != 0;
        }
    CHECKF(bad == 0, "%zu scores depend on the batch", bad);
    vq_codec_free(c);

    float row[N], pre[N];
    fill(row, N, 9);
    for (size_t i = 0; i < N; i++)
        row[i] = row[i] - 4.0f;
    for (size_t n = 1; n <= N; n++) {
        memcpy(pre, row, sizeof row);
        float s1 = vq_exp_shift(pre, n, 1.0f, 0.0f);
        float full[N];
        memcpy(full, row, sizeof row);
        for (size_t i = n; i < N; i++)
            full[i] = -INFINITY; /* masked slots after the prefix */
        float s2 = vq_exp_shift(full, N, 1.0f, 0.0f);
        CHECKF(s1 == s2 && memcmp(pre, full, n * sizeof(float)) == 0, "exp of a %zu-prefix", n);
    }
}

int main(void)
{
    RUN(test_dense);
    RUN(test_fp16_rows);
    RUN(test_exp);
    RUN(test_qblock_values);
    RUN(test_methods);
    RUN(test_batch_invariance);
    return vq_test_summary("codec_tiled");
}
