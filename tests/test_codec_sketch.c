/* test_codec_sketch.c -- the estimators whose score is an unbiased estimate
 * rather than a plain quantized dot product: qjl and rabitq.
 *  - unbiasedness: the mean estimate of a fixed <q,k> over many seeds is
 *    within 4 standard errors of the truth;
 *  - qjl variance theory: E||k_hat - k||^2/||k||^2 = pi*D/(2m) - 1/m;
 *  - rabitq: the popcount kernel on the quantized query equals the float
 *    reference (qbits=0) up to the query rounding, and extended RaBitQ's
 *    MSE falls by >= 2.5x per extra bit (error ~ 2^-b, MSE ~ 4^-b);
 *  - rabitq mse=1 (least-squares reconstruction): decode is corr^2 times
 *    the unbiased decode of the same codes, its rel MSE is 1 - corr^2
 *    (1 - 2/pi at 1 bit) and below the unbiased one at every width;
 *  - byte layouts: the stored norm is the first fp16 of each block
 *    (||k|| corr^2 with mse=1). */
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/rng.h"
#include "test.h"
#include "veloxquant.h"

static int verbose;

static void make_pair(float *k, float *q, int D, uint64_t seed, double *truth)
{
    vq_rng g;
    vq_rng_seed(&g, seed);
    *truth = 0;
    for (int d = 0; d < D; d++) {
        k[d] = vq_rng_normal(&g) * (d % 17 == 0 ? 8.0f : 1.0f); /* a few big channels */
        q[d] = 0.3f * k[d] + vq_rng_normal(&g);
        *truth += (double)q[d] * k[d];
    }
}

/* mean and standard error of the estimate of <q,k> over seeds */
static void estimate_over_seeds(const char *spec, int D, int seeds, const float *k, const float *q, double *mean,
                                double *se)
{
    double s1 = 0, s2 = 0;
    for (int i = 0; i < seeds; i++) {
        vq_codec *c = NULL;
        CHECK_OK(vq_codec_create(spec, D, VQ_ROLE_KEY, 500 + (uint64_t)i, &c));
        if (!c)
            return;
        uint8_t *code = malloc(vq_codec_bytes_per_token(c)), *qb = malloc(vq_codec_query_bytes(c));
        float est = 0;
        CHECK_OK(vq_codec_encode(c, k, 1, code));
        CHECK_OK(vq_codec_prepare_query(c, q, qb));
        CHECK_OK(vq_codec_score(c, qb, 1, code, 1, &est));
        s1 += est;
        s2 += (double)est * est;
        free(code);
        free(qb);
        vq_codec_free(c);
    }
    *mean = s1 / seeds;
    *se = sqrt(fmax(s2 / seeds - *mean * *mean, 0.0) / seeds);
}

static void test_unbiased(void)
{
    const int D = 128, seeds = vq_test_quick() ? 40 : 300;
    float k[128], q[128];
    double truth;
    make_pair(k, q, D, 17, &truth);
    const char *specs[] = { "qjl", "rabitq:bits=1,qbits=0", "rabitq:bits=2" };
    for (int s = 0; s < 3; s++) {
        double mean = 0, se = 0;
        estimate_over_seeds(specs[s], D, seeds, k, q, &mean, &se);
        if (verbose)
            printf("%-24s <q,k>=%.3f mean %.3f se %.3f\n", specs[s], truth, mean, se);
        /* 4 standard errors, plus fp16 rounding of the stored scalars */
        CHECKF(fabs(mean - truth) < 4 * se + 2e-3 * fabs(truth), "%s: mean %.4f vs <q,k> %.4f (se %.4f)", specs[s],
               mean, truth, se);
        CHECK(se > 0);
    }
}

static double iso_rel_mse(const char *spec, int D, size_t n)
{
    vq_codec *c = NULL;
    CHECK_OK(vq_codec_create(spec, D, VQ_ROLE_KEY, 3, &c));
    if (!c)
        return NAN;
    float *x = malloc(n * D * sizeof(float)), *y = malloc(n * D * sizeof(float));
    uint8_t *codes = malloc(n * vq_codec_bytes_per_token(c));
    vq_rng g;
    vq_rng_seed(&g, 8);
    for (size_t i = 0; i < n * D; i++)
        x[i] = vq_rng_normal(&g);
    CHECK_OK(vq_codec_encode(c, x, n, codes));
    CHECK_OK(vq_codec_decode(c, codes, n, y));
    /* the stored norm (first fp16) is ||x|| to fp16 precision (mse=1
     * stores ||x|| corr^2: test_rabitq_mse) */
    double n0 = 0;
    for (int d = 0; d < D; d++)
        n0 += (double)x[d] * x[d];
    if (!strstr(spec, "mse=1"))
        CHECK_NEAR(vq_fp16_to_fp32((vq_fp16)(codes[0] | codes[1] << 8)), sqrt(n0), 1e-3 * sqrt(n0));
    double e = 0, r = 0;
    for (size_t i = 0; i < n * D; i++) {
        e += (double)(x[i] - y[i]) * (x[i] - y[i]);
        r += (double)x[i] * x[i];
    }
    free(x);
    free(y);
    free(codes);
    vq_codec_free(c);
    return e / r;
}

static void test_qjl_variance(void)
{
    const size_t n = vq_test_quick() ? 32 : 128;
    const int D = 128, ms[] = { 128, 256, 512 };
    for (int i = 0; i < 3; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "qjl:dim=%d", ms[i]);
        double m = iso_rel_mse(spec, D, n), th = M_PI * D / (2.0 * ms[i]) - 1.0 / ms[i];
        if (verbose)
            printf("%s rel MSE %.4f theory %.4f\n", spec, m, th);
        /* sampling error of the mean over n vectors is a few percent */
        CHECKF(fabs(m / th - 1.0) < 0.15, "%s: rel MSE %.4f, theory %.4f", spec, m, th);
    }
}

static void test_rabitq_bits_slope(void)
{
    const size_t n = vq_test_quick() ? 32 : 256;
    const int D = 128;
    double prev = 0;
    for (int b = 1; b <= 4; b++) {
        char spec[64];
        snprintf(spec, sizeof spec, "rabitq:bits=%d", b);
        double m = iso_rel_mse(spec, D, n);
        if (verbose)
            printf("%s rel MSE %.5f\n", spec, m);
        if (b == 1) /* 1/corr^2 - 1 with corr -> sqrt(2/pi): pi/2 - 1 = 0.571 */
            CHECKF(fabs(m - (M_PI / 2 - 1)) < 0.05, "rabitq:bits=1 rel MSE %.4f, theory 0.571", m);
        else
            CHECKF(prev / m >= 2.5, "%s: MSE %.5f only %.2fx below bits=%d", spec, m, prev / m, b - 1);
        prev = m;
    }
}

/* mse=1: the same codes, decoded at corr^2 times the unbiased length */
static void test_rabitq_mse(void)
{
    const size_t n = vq_test_quick() ? 32 : 256;
    const int D = 128;
    for (int b = 1; b <= 4; b++) {
        char su[64], sm[64];
        snprintf(su, sizeof su, "rabitq:bits=%d", b);
        snprintf(sm, sizeof sm, "rabitq:bits=%d,mse=1", b);
        double mu = iso_rel_mse(su, D, n), mm = iso_rel_mse(sm, D, n);
        if (verbose)
            printf("%s rel MSE %.5f, mse=1 %.5f\n", su, mu, mm);
        CHECKF(mm < mu, "bits=%d: mse=1 rel MSE %.5f not below the unbiased %.5f", b, mm, mu);
        if (b == 1) /* 1 - corr^2 with corr -> sqrt(2/pi) */
            CHECKF(fabs(mm - (1 - 2 / M_PI)) < 0.05, "rabitq:bits=1,mse=1 rel MSE %.4f, theory 0.363", mm);
        vq_codec *cu = NULL, *cm = NULL;
        CHECK_OK(vq_codec_create(su, D, VQ_ROLE_KEY, 5, &cu));
        CHECK_OK(vq_codec_create(sm, D, VQ_ROLE_KEY, 5, &cm));
        if (!cu || !cm) {
            vq_codec_free(cu);
            vq_codec_free(cm);
            continue;
        }
        const size_t bb = vq_codec_bytes_per_token(cu);
        CHECK(vq_codec_bytes_per_token(cm) == bb);
        float x[128], yu[128], ym[128];
        uint8_t bu[128], bm[128];
        vq_rng g;
        vq_rng_seed(&g, 40 + (uint64_t)b);
        for (int t = 0; t < 16; t++) {
            for (int d = 0; d < D; d++)
                x[d] = vq_rng_normal(&g) * (d % 9 == 0 ? 6.0f : 1.0f);
            CHECK_OK(vq_codec_encode(cu, x, 1, bu));
            CHECK_OK(vq_codec_encode(cm, x, 1, bm));
            /* same codes and corr; only the norm field differs */
            CHECK(memcmp(bu + 2, bm + 2, bb - 2) == 0);
            float corr = vq_fp16_to_fp32((vq_fp16)(bu[2] | bu[3] << 8));
            CHECK_OK(vq_codec_decode(cu, bu, 1, yu));
            CHECK_OK(vq_codec_decode(cm, bm, 1, ym));
            double worst = 0, scale = 0;
            for (int d = 0; d < D; d++) {
                worst = fmax(worst, fabs((double)ym[d] - (double)corr * corr * yu[d]));
                scale = fmax(scale, fabs((double)yu[d]));
            }
            /* two fp16 roundings of the norm field: relative 2^-10 */
            CHECKF(worst <= 2e-3 * scale, "bits=%d token %d: |decode(mse) - corr^2 decode| %.3g (scale %.3g)", b, t,
                   worst, scale);
        }
        vq_codec_free(cu);
        vq_codec_free(cm);
    }
}

/* the popcount kernel against the float estimator on the same keys */
static void test_rabitq_popcount_vs_float(void)
{
    const int dims[] = { 32, 96, 128, 160, 256 };
    for (int t = 0; t < 5; t++) {
        int D = dims[t];
        const size_t n = 64;
        vq_codec *cp = NULL, *cf = NULL;
        CHECK_OK(vq_codec_create("rabitq:bits=1,qbits=8", D, VQ_ROLE_KEY, 9, &cp));
        CHECK_OK(vq_codec_create("rabitq:bits=1,qbits=0", D, VQ_ROLE_KEY, 9, &cf));
        if (!cp || !cf)
            return;
        CHECK(vq_codec_bytes_per_token(cp) == (size_t)D / 8 + 4);
        float *x = malloc(n * D * sizeof(float)), q[256], sp[64], sf[64];
        uint8_t *a = malloc(n * (D / 8 + 4)), *b = malloc(n * (D / 8 + 4)), qp[512], qf[1024];
        vq_rng g;
        vq_rng_seed(&g, (uint64_t)D);
        for (size_t i = 0; i < n * D; i++)
            x[i] = vq_rng_normal(&g);
        for (int d = 0; d < D; d++)
            q[d] = vq_rng_normal(&g);
        CHECK_OK(vq_codec_encode(cp, x, n, a));
        CHECK_OK(vq_codec_encode(cf, x, n, b));
        CHECK(memcmp(a, b, n * (D / 8 + 4)) == 0); /* qbits changes only the query */
        CHECK_OK(vq_codec_prepare_query(cp, q, qp));
        CHECK_OK(vq_codec_prepare_query(cf, q, qf));
        CHECK_OK(vq_codec_score(cp, qp, 1, a, n, sp));
        CHECK_OK(vq_codec_score(cf, qf, 1, b, n, sf));
        /* 8-bit query: per-coordinate rounding <= range/510; bound the
         * difference by D * that * ||k||/(corr sqrt(D)) ~ generous 2% of
         * |q||k| scale */
        double qn = 0, worst = 0;
        for (int d = 0; d < D; d++)
            qn += (double)q[d] * q[d];
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(sp[i] - sf[i]) / (sqrt(qn) * sqrt((double)D)));
        CHECKF(worst < 0.02, "D=%d: popcount vs float differ by %.4f of |q||k|", D, worst);
        free(x);
        free(a);
        free(b);
        vq_codec_free(cp);
        vq_codec_free(cf);
    }
    vq_codec *c = NULL;
    CHECK(vq_codec_create("rabitq:bits=2,qbits=4", 128, VQ_ROLE_KEY, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "qbits") != NULL);
    CHECK(vq_codec_create("qjl:dim=100", 128, VQ_ROLE_KEY, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "dim=100") != NULL);
}

int main(void)
{
    verbose = getenv("VQ_TEST_VERBOSE") != NULL;
    RUN(test_unbiased);
    RUN(test_qjl_variance);
    RUN(test_rabitq_bits_slope);
    RUN(test_rabitq_popcount_vs_float);
    RUN(test_rabitq_mse);
    return vq_test_summary("test_codec_sketch");
}
