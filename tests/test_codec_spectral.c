/* test_codec_spectral.c -- spectral: the Jacobi eigen-solver and the
 * empirical Lloyd-Max codebooks it rests on, byte formula, calibrated
 * quality on fresh key-like data and its fall with bits, fused == unfused,
 * determinism, refusal before calibration, bad parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/eigen.h"
#include "codec/scalar_codebook.h"
#include "codec_eval.h"
#include "synth_kv.h"
#include "test.h"
#include "veloxquant.h"

static vq_codec *make(const char *spec, int D, vq_role role, uint64_t seed)
{
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(spec, D, role, seed, &c);
    CHECKF(st == VQ_OK, "create %s D=%d: %s", spec, D, vq_last_error());
    return c;
}

/* A = V diag(w) V^T, V^T V = I, w descending; on a random SPD matrix and
 * on one with repeated eigenvalues. Tolerances: double-precision Jacobi
 * converges to ~1e-12 relative; 1e-9 leaves room. */
static void test_eigen(void)
{
    const int n = vq_test_quick() ? 24 : 64;
    double *a = malloc((size_t)n * n * sizeof(double)), *a0 = malloc((size_t)n * n * sizeof(double));
    double *v = malloc((size_t)n * n * sizeof(double)), *w = malloc((size_t)n * sizeof(double));
    vq_rng r;
    vq_rng_seed(&r, 17);
    for (int pass = 0; pass < 2; pass++) {
        /* B B^T (+ rank-deficient in pass 1: B has n/2 columns) */
        int cols = pass ? n / 2 : n;
        double *b = malloc((size_t)n * cols * sizeof(double));
        for (int i = 0; i < n * cols; i++)
            b[i] = vq_rng_normal(&r);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < cols; k++)
                    s += b[i * cols + k] * b[j * cols + k];
                a[i * n + j] = a0[i * n + j] = s;
            }
        free(b);
        CHECK_OK(vq_eigen_sym(a, n, w, v, NULL));
        double err = 0, orth = 0, scale = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0, o = 0;
                for (int k = 0; k < n; k++) {
                    s += v[i * n + k] * w[k] * v[j * n + k];
                    o += v[k * n + i] * v[k * n + j];
                }
                err = fmax(err, fabs(s - a0[i * n + j]));
                orth = fmax(orth, fabs(o - (i == j)));
                scale = fmax(scale, fabs(a0[i * n + j]));
            }
        CHECKF(err < 1e-9 * scale, "reconstruction error %g (scale %g)", err, scale);
        CHECKF(orth < 1e-9, "V not orthonormal: %g", orth);
        int sorted = 1;
        for (int i = 1; i < n; i++)
            sorted &= w[i] <= w[i - 1];
        CHECK(sorted);
        if (pass)
            CHECKF(fabs(w[n - 1]) < 1e-9 * w[0], "rank-deficient: smallest eigenvalue %g", w[n - 1]);
    }
    free(a); free(a0); free(v); free(w);
}

/* Lloyd-Max on N(0,1) samples reproduces the known optimal quantizers
 * (Max 1960): 1 bit +-0.7979, 2 bits +-0.4528 +-1.510, MSE 0.3634 and
 * 0.1175. 200k samples: sampling error ~0.01 on the levels. */
/* vq_scalar_codebook_nearest: the count of midpoints below v (its
 * contract) for sorted random levels with repeats, every size 1..33 and
 * 256 (the power-of-two path and the branching one), v on the midpoints,
 * between them, outside, +-inf and NaN */
static void test_codebook_nearest(void)
{
    vq_rng r;
    vq_rng_seed(&r, 71);
    float lv[256], mids[255];
    for (int k = 1; k <= 256; k = k == 33 ? 256 : k + 1)
        for (int trial = 0; trial < 20; trial++) {
            for (int i = 0; i < k; i++)
                lv[i] = trial % 3 == 0 && i % 3 == 1 ? lv[i - 1] : (float)vq_rng_normal(&r);
            for (int i = 1; i < k; i++) /* insertion sort */
                for (int j = i; j > 0 && lv[j] < lv[j - 1]; j--) {
                    float t = lv[j];
                    lv[j] = lv[j - 1], lv[j - 1] = t;
                }
            for (int m = 0; m + 1 < k; m++)
                mids[m] = 0.5f * (lv[m] + lv[m + 1]);
            for (int probe = 0; probe < 3 * k + 6; probe++) {
                float v = probe < k - 1         ? mids[probe]
                          : probe < 2 * k       ? (float)vq_rng_normal(&r) * 2.0f
                          : probe < 3 * k       ? lv[probe - 2 * k]
                          : probe == 3 * k      ? INFINITY
                          : probe == 3 * k + 1  ? -INFINITY
                          : probe == 3 * k + 2  ? NAN
                                                : (float)vq_rng_normal(&r) * 100.0f;
                int want = 0;
                for (int m = 0; m + 1 < k; m++)
                    want += v > mids[m];
                const int got = vq_scalar_codebook_nearest(lv, k, v);
                CHECKF(got == want, "nearest k=%d trial=%d v=%g: %d, want %d", k, trial, (double)v, got, want);
            }
        }
}

static void test_scalar_codebook(void)
{
    const size_t n = vq_test_quick() ? 50000 : 200000;
    float *x = malloc(n * sizeof(float));
    vq_rng r;
    vq_rng_seed(&r, 23);
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(&r);
    float l1[2], l2[4];
    CHECK_OK(vq_scalar_codebook_fit(x, n, 2, 100, l1, NULL));
    CHECK_OK(vq_scalar_codebook_fit(x, n, 4, 100, l2, NULL));
    CHECK_NEAR(l1[1], 0.7979, 0.015);
    CHECK_NEAR(l1[0], -0.7979, 0.015);
    CHECK_NEAR(l2[3], 1.510, 0.03);
    CHECK_NEAR(l2[2], 0.4528, 0.015);
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - l2[vq_scalar_codebook_nearest(l2, 4, x[i])];
        e += d * d;
    }
    CHECK_NEAR(e / n, 0.1175, 0.004);
    CHECK(vq_scalar_codebook_nearest(l2, 4, NAN) == 0);
    CHECK(vq_scalar_codebook_nearest(l2, 4, 1e30f) == 3);
    x[5] = INFINITY;
    CHECK(vq_scalar_codebook_fit(x, n, 4, 10, l2, NULL) == VQ_ERR_INVALID_ARG);
    /* fewer distinct samples than levels: no crash, sorted levels */
    float few[3] = { 1, 1, 2 }, l3[8];
    CHECK_OK(vq_scalar_codebook_fit(few, 3, 8, 10, l3, NULL));
    int sorted = 1;
    for (int i = 1; i < 8; i++)
        sorted &= l3[i] >= l3[i - 1];
    CHECK(sorted);
    free(x);
}

static void test_byte_formula(void)
{
    const int dims[] = { 64, 128, 256 };
    for (size_t i = 0; i < 3; i++)
        for (int b = 1; b <= 4; b++) {
            char spec[64];
            snprintf(spec, sizeof spec, "spectral:bits=%d", b);
            vq_codec *c = make(spec, dims[i], VQ_ROLE_KEY, 1);
            /* METHODS.md: (D*b + 32)/8 */
            CHECKF(c && vq_codec_bytes_per_token(c) == (size_t)(dims[i] * b + 32) / 8, "%s D=%d: %zu", spec,
                   dims[i], c ? vq_codec_bytes_per_token(c) : 0);
            vq_codec_free(c);
        }
    /* more bits on the signal slots: 4 + ceil((S*sb + (D-S)*b)/8) */
    vq_codec *c = make("spectral:bits=2,signal_bits=4,signal=12", 128, VQ_ROLE_KEY, 1);
    CHECK(c && vq_codec_bytes_per_token(c) == 4 + (12 * 4 + 116 * 2 + 7) / 8);
    CHECK(c && strcmp(vq_codec_spec(c), "spectral:bits=2,signal_bits=4,signal=12") == 0);
    vq_codec_free(c);
    c = make("spectral:bits=1,signal_bits=3,signal=3", 64, VQ_ROLE_VALUE, 1);
    CHECK(c && vq_codec_bytes_per_token(c) == 4 + (3 * 3 + 61 + 7) / 8); /* 70 bits -> 9 B */
    vq_codec_free(c);
    c = make("spectral", 128, VQ_ROLE_KEY, 1);
    CHECK(c && strcmp(vq_codec_spec(c), "spectral:bits=2,signal_bits=2") == 0 && vq_codec_bytes_per_token(c) == 36);
    CHECK(c && vq_codec_needs_calibration(c) && !vq_codec_is_ready(c));
    float x[128] = { 0 };
    uint8_t buf[64];
    CHECK(c && vq_codec_encode(c, x, 1, buf) == VQ_ERR_NEEDS_CALIBRATION);
    CHECK(c && vq_codec_calibrate(c, x, 1) == VQ_ERR_INVALID_ARG); /* one sample */
    vq_codec_free(c);
}

typedef struct {
    float *cal, *eval, *q;
    size_t n_cal, n_eval;
    int n_q, D;
} dataset;

static dataset make_data(int D, int outliers, size_t n_cal, size_t n_eval)
{
    dataset ds = { 0 };
    vq_synth syn;
    vq_synth_init(&syn, D, 4242, outliers);
    vq_rng r;
    vq_rng_seed(&r, 8);
    ds.D = D;
    ds.n_cal = n_cal;
    ds.n_eval = n_eval;
    ds.n_q = 4;
    ds.cal = malloc(n_cal * D * sizeof(float));
    ds.eval = malloc(n_eval * D * sizeof(float));
    vq_synth_draw(&syn, &r, ds.cal, n_cal);
    vq_synth_draw(&syn, &r, ds.eval, n_eval);
    ds.q = vq_gauss_queries(ds.n_q, D, 37);
    return ds;
}

static int calibrated_metrics(const char *spec, vq_role role, const dataset *ds, vq_codec_metrics *m)
{
    vq_codec *c = make(spec, ds->D, role, 42);
    int rc = -1;
    if (c && vq_codec_calibrate(c, ds->cal, ds->n_cal) == VQ_OK)
        rc = vq_codec_eval(c, ds->eval, ds->n_eval, ds->q, ds->n_q, 5, m);
    CHECKF(rc == 0, "%s: %s", spec, vq_last_error());
    if (rc == 0) {
        printf("  %-40s %s: rel_mse %.5f rel_score %.5f fused_score %.2g fused_acc %.2g\n", spec,
               role ? "values" : "keys  ", m->rel_mse, m->rel_score, m->fused_score, m->fused_acc);
        CHECKF(m->fused_score < 1e-5 && m->fused_acc < 1e-5, "%s: fused differs %g %g", spec, m->fused_score,
               m->fused_acc);
    }
    vq_codec_free(c);
    return rc;
}

/* After centring, rotating to the eigenbasis and whitening, coordinates are
 * near N(0,1); the per-vector scale and Lloyd-Max levels then behave like
 * the Gaussian Lloyd-Max quantizer: distortion 0.363, 0.118, 0.0345,
 * 0.0095 of the variance at 1..4 bits (x3.1, x3.4, x3.6 per bit; x12.4 from
 * 2 to 4 bits). The reported rel MSE is relative to the energy including
 * the means, which the codec stores exactly, so the numbers are smaller. */
static void test_quality(void)
{
    const int D = 128;
    dataset ds = make_data(D, 1, vq_test_quick() ? 1024 : 4096, 512);
    vq_codec_metrics m[5];
    /* measured at D=128, 4096 calibration samples: 0.037, 0.0119, 0.0034,
     * 0.00091 (x3.1 per bit from 1 to 2, x13 from 2 to 4: the Gaussian
     * Lloyd-Max law). Thresholds ~1.6x, which the 1024-sample quick mode
     * also meets. */
    const double max_mse[5] = { 0, 0.06, 0.02, 0.006, 0.0016 };
    for (int b = 1; b <= 4; b++) {
        char spec[64];
        snprintf(spec, sizeof spec, "spectral:bits=%d", b);
        if (calibrated_metrics(spec, VQ_ROLE_KEY, &ds, &m[b]) != 0)
            return;
        CHECKF(m[b].rel_mse < max_mse[b], "%s rel_mse %g >= %g", spec, m[b].rel_mse, max_mse[b]);
    }
    CHECKF(m[2].rel_mse > 8 * m[4].rel_mse, "2 bits %g vs 4 bits %g: less than 8x (theory 12.4x)", m[2].rel_mse,
           m[4].rel_mse);
    CHECKF(m[1].rel_mse > 2.5 * m[2].rel_mse, "1 bit %g vs 2 bits %g: less than 2.5x (theory 3.1x)", m[1].rel_mse,
           m[2].rel_mse);
    /* extra bits on the signal coordinates help */
    vq_codec_metrics ms;
    if (calibrated_metrics("spectral:bits=2,signal_bits=4,signal=16", VQ_ROLE_KEY, &ds, &ms) == 0)
        CHECKF(ms.rel_mse < m[2].rel_mse, "signal_bits=4 %g not better than 2 bits %g", ms.rel_mse, m[2].rel_mse);
    /* values role: the same algorithm */
    vq_codec_metrics mv;
    dataset dv = make_data(D, 0, vq_test_quick() ? 1024 : 4096, 256);
    if (calibrated_metrics("spectral:bits=2", VQ_ROLE_VALUE, &dv, &mv) == 0)
        CHECKF(mv.rel_mse < 0.14, "values rel_mse %g", mv.rel_mse); /* measured 0.095 */
    free(ds.cal); free(ds.eval); free(ds.q);
    free(dv.cal); free(dv.eval); free(dv.q);
}

static void test_determinism_and_bad(void)
{
    const int D = 64;
    dataset ds = make_data(D, 1, 512, 32);
    vq_codec *a = make("spectral:bits=3", D, VQ_ROLE_KEY, 1), *b = make("spectral:bits=3", D, VQ_ROLE_KEY, 1);
    if (a && b) {
        CHECK_OK(vq_codec_calibrate(a, ds.cal, ds.n_cal));
        CHECK_OK(vq_codec_calibrate(b, ds.cal, ds.n_cal));
        size_t bytes = ds.n_eval * vq_codec_block_bytes(a);
        uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
        CHECK_OK(vq_codec_encode(a, ds.eval, ds.n_eval, ca));
        CHECK_OK(vq_codec_encode(b, ds.eval, ds.n_eval, cb));
        CHECK(memcmp(ca, cb, bytes) == 0);
        /* constant calibration data: zero variance refused */
        float *k = calloc((size_t)D * 8, sizeof(float));
        CHECK(vq_codec_calibrate(a, k, 8) == VQ_ERR_INVALID_ARG);
        CHECK(vq_codec_is_ready(a)); /* the previous calibration is kept */
        free(k);
        free(ca);
        free(cb);
    }
    vq_codec_free(a);
    vq_codec_free(b);
    free(ds.cal); free(ds.eval); free(ds.q);
    struct { const char *spec; const char *word; } bad[] = {
        { "spectral:bits=9", "bits" }, { "spectral:bits=0", "bits" },
        { "spectral:bits=3,signal_bits=2", "signal_bits" }, { "spectral:signal=0", "signal" },
        { "spectral:signal=128", "signal" }, { "spectral:rank=4", "rank" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vq_codec *c = (vq_codec *)1;
        vq_status st = vq_codec_create(bad[i].spec, 128, VQ_ROLE_KEY, 1, &c);
        CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL, "'%s' -> %s", bad[i].spec, vq_status_str(st));
        CHECKF(strstr(vq_last_error(), bad[i].word) != NULL, "'%s': message '%s'", bad[i].spec, vq_last_error());
    }
}

/* qbits=8 values (int8 attention weights and levels, kernels/lut_qaxpy.h)
 * against the float sums of the same codec without it: the same bytes and
 * codes, outputs (after accum_finish) that differ (the int8 path ran) by
 * less than 1e-2 of sum_i |w_i| |v_i| (measured 1.8e-3..4.2e-3; lut_qaxpy.h: the
 * weights rounded per 32 rows to 1/254 of their block's largest, here 0.4
 * beside weights of 0 to 0.022, and the levels to 1/254 of the largest
 * level); 1, 2 and 4 bits at head_dim 64 and 128, on key-like data and
 * near a rank-4 subspace (a small d_sig), rows past one
 * block and a partial one. qbits=8 on keys, at 3 bits or with wider signal
 * slots is refused. */
/* n vectors near a rank-4 subspace (scales 4, 2, 1.3, 1, plus 0.02 noise):
 * a calibration of them finds a small d_sig, so the passes' extents differ
 * from synthetic key data's */
static float *low_rank(int D, size_t n, uint64_t seed)
{
    float *basis = vq_gauss_queries(4, D, 11), *c = vq_gauss_queries((int)n, 4, seed),
          *x = vq_gauss_queries((int)n, D, seed + 1);
    for (size_t i = 0; basis && c && x && i < n; i++)
        for (int e = 0; e < D; e++) {
            float v = 0.02f * x[i * (size_t)D + (size_t)e];
            for (int k = 0; k < 4; k++)
                v += 4.0f / (float)(k + 1) * c[i * 4 + (size_t)k] * basis[(size_t)k * D + (size_t)e];
            x[i * (size_t)D + (size_t)e] = v;
        }
    free(basis);
    free(c);
    return x;
}

static void test_int8_values(void)
{
    static const int dims[] = { 64, 128 }, bits[] = { 1, 2, 4 };
    for (size_t di = 0; di < 4; di++) {
        const int D = dims[di % 2];
        dataset ds = make_data(D, 0, 1024, 300);
        if (di >= 2) { /* the same sizes near a rank-4 subspace */
            free(ds.cal);
            free(ds.eval);
            ds.cal = low_rank(D, ds.n_cal, 5);
            ds.eval = low_rank(D, ds.n_eval, 7);
            CHECK(ds.cal && ds.eval);
            if (!ds.cal || !ds.eval)
                continue;
        }
        for (size_t bi = 0; bi < 3; bi++) {
            char sp[64], sq[64];
            snprintf(sp, sizeof sp, "spectral:bits=%d", bits[bi]);
            snprintf(sq, sizeof sq, "spectral:bits=%d,qbits=8", bits[bi]);
            vq_codec *a = make(sp, D, VQ_ROLE_VALUE, 3), *b = make(sq, D, VQ_ROLE_VALUE, 3);
            if (!a || !b) {
                vq_codec_free(a), vq_codec_free(b);
                continue;
            }
            CHECKF(strstr(vq_codec_spec(b), "qbits=8") != NULL, "%s: canonical %s", sq, vq_codec_spec(b));
            CHECK_OK(vq_codec_calibrate(a, ds.cal, ds.n_cal));
            CHECK_OK(vq_codec_calibrate(b, ds.cal, ds.n_cal));
            const size_t n = ds.n_eval, bytes = n * vq_codec_bytes_per_token(a), E = vq_codec_accum_size(a);
            const int nq = 3;
            CHECK(vq_codec_bytes_per_token(b) == vq_codec_bytes_per_token(a) && vq_codec_accum_size(b) == E);
            uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
            float *w = malloc(sizeof(float) * n * nq), *aa = calloc(E * nq, sizeof(float)),
                  *ab = calloc(E * nq, sizeof(float)), *oa = malloc(sizeof(float) * (size_t)D * nq),
                  *ob = malloc(sizeof(float) * (size_t)D * nq);
            for (size_t i = 0; i < n * nq; i++) /* softmax-like: small weights, a few large */
                w[i] = (float)((i * 29) % 89) / 4000.0f + (i % n == 17 || i % n == 211 ? 0.4f : 0.0f);
            CHECK_OK(vq_codec_encode(a, ds.eval, n, ca));
            CHECK_OK(vq_codec_encode(b, ds.eval, n, cb));
            CHECKF(memcmp(ca, cb, bytes) == 0, "%s D=%d: codes differ", sq, D);
            CHECK_OK(vq_codec_accumulate(a, w, nq, ca, n, aa));
            CHECK_OK(vq_codec_accumulate(b, w, nq, cb, n, ab));
            /* per weight row: |difference| over sum_i |w_i| |v^_i| (v^ the
             * decoded rows), the scale of the sum's terms (the norm of the
             * sum itself cancels on zero-mean data) */
            float *dec = malloc(sizeof(float) * n * (size_t)D);
            CHECK_OK(vq_codec_decode(a, ca, n, dec));
            double rel = 0.0;
            for (int j = 0; j < nq; j++) {
                CHECK_OK(vq_codec_accum_finish(a, aa + (size_t)j * E, oa + (size_t)j * D));
                CHECK_OK(vq_codec_accum_finish(b, ab + (size_t)j * E, ob + (size_t)j * D));
                double num = 0.0, mag = 0.0;
                for (size_t e = 0; e < (size_t)D; e++) {
                    const double d = (double)ob[(size_t)j * D + e] - oa[(size_t)j * D + e];
                    num += d * d;
                }
                for (size_t i = 0; dec && i < n; i++) {
                    double v2 = 0.0;
                    for (size_t e = 0; e < (size_t)D; e++)
                        v2 += (double)dec[i * D + e] * dec[i * D + e];
                    mag += fabs((double)w[(size_t)j * n + i]) * sqrt(v2);
                }
                rel = fmax(rel, sqrt(num) / mag);
            }
            free(dec);
            printf("  %-28s D=%3d %-9s values: int8 sums off the float ones by %.2g of sum |w| |v|\n", sq, D,
                   di >= 2 ? "rank-4" : "keys-like", rel);
            CHECKF(rel > 0.0 && rel < 1e-2, "%s D=%d: relative difference %g", sq, D, rel);
            free(ca), free(cb), free(w), free(aa), free(ab), free(oa), free(ob);
            vq_codec_free(a);
            vq_codec_free(b);
        }
        free(ds.cal); free(ds.eval); free(ds.q);
    }
    static const char *bad[] = { "spectral:bits=3,qbits=8", "spectral:bits=2,signal_bits=4,signal=8,qbits=8",
                                 "spectral:qbits=4" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vq_codec *c = (vq_codec *)1;
        vq_status st = vq_codec_create(bad[i], 64, VQ_ROLE_VALUE, 1, &c);
        CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL && strstr(vq_last_error(), "qbits"), "'%s' -> %s: %s", bad[i],
               vq_status_str(st), vq_last_error());
    }
    vq_codec *c = (vq_codec *)1;
    vq_status st = vq_codec_create("spectral:qbits=8", 64, VQ_ROLE_KEY, 1, &c);
    CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL && strstr(vq_last_error(), "values"), "keys with qbits=8 -> %s: %s",
           vq_status_str(st), vq_last_error());
}

int main(void)
{
    RUN(test_eigen);
    RUN(test_scalar_codebook);
    RUN(test_codebook_nearest);
    RUN(test_byte_formula);
    RUN(test_quality);
    RUN(test_determinism_and_bad);
    RUN(test_int8_values);
    return vq_test_summary("codec_spectral");
}
