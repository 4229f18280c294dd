/* test_codec_tq_w8.c -- turboquant_mse values with qbits=8 (int8 attention
 * weights and int8 levels, kernels/lut_qaxpy.h) against the same codec
 * with float sums, for 1, 2 and 4 bits, head sizes 64, 128 and 256, the
 * fp16 and the one-byte norm:
 *   - the same bytes per token and the same codes (qbits changes only how
 *     sums are taken), the canonical spec keeps qbits=8;
 *   - the sums differ (the int8 path ran), by at most lut_qaxpy.h's bound
 *     with |lev| <= 127: per block of 32 rows 32 * A/254 * 127 step (the
 *     weights' rounding), plus |a_i| step / 2 per row (the levels'), with
 *     a_i = w_i f_i (f_i the stored gain), step = max |L| / 127 and L the
 *     Lloyd-Max levels over sqrt(D); plus 1e-5 of the sum of |a L| for
 *     float rounding.
 * bits=3 with qbits=8 is refused for values as for keys. turboquant_prod
 * values with qbits=8 (bits 2, 3) likewise, both halves of their
 * accumulator (check_prod); prod refuses it at bits=4 and on keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "test.h"
#include "veloxquant.h"

/* the largest |centroid| of the b-bit Lloyd-Max quantizer of N(0, 1) */
static double lm_max(int b) { return b == 1 ? 0.7979 : b == 2 ? 1.5104 : b == 3 ? 2.1519 : 2.7326; }

static void check(int D, int bits, int norm8)
{
    char sp[96], sq[96];
    snprintf(sp, sizeof sp, "turboquant_mse:bits=%d%s,lsq=1", bits, norm8 ? ",norm=8" : "");
    snprintf(sq, sizeof sq, "turboquant_mse:bits=%d%s,lsq=1,qbits=8", bits, norm8 ? ",norm=8" : "");
    vq_codec *a = NULL, *b = NULL;
    CHECK_OK(vq_codec_create(sp, D, VQ_ROLE_VALUE, 11, &a));
    CHECK_OK(vq_codec_create(sq, D, VQ_ROLE_VALUE, 11, &b));
    if (!a || !b) {
        vq_codec_free(a), vq_codec_free(b);
        return;
    }
    CHECKF(strstr(vq_codec_spec(b), "qbits=8") != NULL, "%s: canonical %s", sq, vq_codec_spec(b));
    const int n = 100, nq = 3;
    const size_t bytes = vq_codec_bytes_per_token(a) * (size_t)n, A = vq_codec_accum_size(a);
    CHECK(vq_codec_bytes_per_token(b) * (size_t)n == bytes && vq_codec_accum_size(b) == A);
    float *v = malloc(sizeof(float) * (size_t)D * n), *w = malloc(sizeof(float) * (size_t)n * nq);
    uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
    float *oa = calloc(A * nq, sizeof(float)), *ob = calloc(A * nq, sizeof(float));
    CHECK(v && w && ca && cb && oa && ob);
    if (v && w && ca && cb && oa && ob) {
        for (int i = 0; i < n; i++) { /* norms 0.1 .. 10, one heavy channel */
            const float scale = powf(10.0f, -1.0f + 2.0f * (float)i / (float)(n - 1));
            for (int d = 0; d < D; d++) {
                const float x = scale * ((float)(((i * D + d) * 41) % 103) / 51.0f - 1.0f + (d == 9 ? 4.0f : 0.0f));
                v[(size_t)i * D + d] = x;
            }
        }
        for (int i = 0; i < n * nq; i++)
            w[i] = (float)((i * 29) % 89) / 4000.0f + (i % n == 17 ? 0.5f : 0.0f);
        CHECK_OK(vq_codec_encode(a, v, (size_t)n, ca));
        CHECK_OK(vq_codec_encode(b, v, (size_t)n, cb));
        CHECK(memcmp(ca, cb, bytes) == 0);
        CHECK_OK(vq_codec_accumulate(a, w, nq, ca, (size_t)n, oa));
        CHECK_OK(vq_codec_accumulate(b, w, nq, cb, (size_t)n, ob));
        /* per weight row the bound of lut_qaxpy.h with |lev| <= 127: per
         * block of 32 rows 32 * A/254 * 127 step, plus |a_i| step / 2 per
         * row; a_i = w_i f_i, f_i the stored field (norm=8's byte decoded) */
        const double step = lm_max(bits) / sqrt((double)D) / 127.0;
        const size_t bpt = vq_codec_bytes_per_token(a);
        double bound[3] = { 0 };
        for (int j = 0; j < nq; j++) {
            double mag = 0.0;
            for (int b0 = 0; b0 < n; b0 += 32) {
                double Ab = 0.0;
                for (int i = b0; i < n && i < b0 + 32; i++) {
                    const uint8_t *r = ca + (size_t)i * bpt;
                    const double f = norm8 ? (r[0] ? exp2((r[0] - 128) / 8.0) : 0.0)
                                           : (double)vq_fp16_to_fp32((uint16_t)(r[0] | r[1] << 8));
                    const double ai = fabs((double)w[j * n + i] * f);
                    Ab = fmax(Ab, ai);
                    bound[j] += ai * step / 2.0;
                    mag += ai * lm_max(bits) / sqrt((double)D);
                }
                bound[j] += 32.0 * Ab / 254.0 * 127.0 * step;
            }
            bound[j] += 1e-5 * mag;
        }
        double worst = 0.0;
        int differ = 0;
        for (size_t i = 0; i < A * nq; i++) {
            worst = fmax(worst, fabs((double)oa[i] - ob[i]) / bound[i / A]);
            differ |= oa[i] != ob[i];
        }
        CHECKF(worst <= 1.0 && differ, "%s D=%d: worst %g of the bound, differ %d", sq, D, worst, differ);
    }
    free(v), free(w), free(ca), free(cb), free(oa), free(ob);
    vq_codec_free(a), vq_codec_free(b);
}

/* turboquant_prod values with qbits=8 (bits 2 and 3): the same codes, and
 * each half of the accumulator within lut_qaxpy.h's bound as above: the
 * stage-1 half with the (b-1)-bit levels and a_i = w_i n_i, the sketch
 * half with the signs (+-127 at step 1/127: exact up to the step's own
 * rounding, 1e-6 of |a_i| per row) and a_i = w_i n_i sqrt(pi/2)/D gamma_i */
static void check_prod(int D, int bits)
{
    char sp[64], sq[64];
    snprintf(sp, sizeof sp, "turboquant_prod:bits=%d", bits);
    snprintf(sq, sizeof sq, "turboquant_prod:bits=%d,qbits=8", bits);
    vq_codec *a = NULL, *b = NULL;
    CHECK_OK(vq_codec_create(sp, D, VQ_ROLE_VALUE, 11, &a));
    CHECK_OK(vq_codec_create(sq, D, VQ_ROLE_VALUE, 11, &b));
    if (!a || !b) {
        vq_codec_free(a), vq_codec_free(b);
        return;
    }
    CHECKF(strstr(vq_codec_spec(b), "qbits=8") != NULL, "%s: canonical %s", sq, vq_codec_spec(b));
    const int n = 100, nq = 3;
    const size_t bpt = vq_codec_bytes_per_token(a), bytes = bpt * (size_t)n, A = vq_codec_accum_size(a);
    CHECK(vq_codec_bytes_per_token(b) == bpt && vq_codec_accum_size(b) == A && A >= 2 * (size_t)D);
    float *v = malloc(sizeof(float) * (size_t)D * n), *w = malloc(sizeof(float) * (size_t)n * nq);
    uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
    float *oa = calloc(A * nq, sizeof(float)), *ob = calloc(A * nq, sizeof(float));
    CHECK(v && w && ca && cb && oa && ob);
    if (v && w && ca && cb && oa && ob) {
        for (int i = 0; i < n; i++) {
            const float scale = powf(10.0f, -1.0f + 2.0f * (float)i / (float)(n - 1));
            for (int d = 0; d < D; d++)
                v[(size_t)i * D + d] = scale * ((float)(((i * D + d) * 41) % 103) / 51.0f - 1.0f + (d == 9 ? 4.0f : 0.0f));
        }
        for (int i = 0; i < n * nq; i++)
            w[i] = (float)((i * 29) % 89) / 4000.0f + (i % n == 17 ? 0.5f : 0.0f);
        CHECK_OK(vq_codec_encode(a, v, (size_t)n, ca));
        CHECK_OK(vq_codec_encode(b, v, (size_t)n, cb));
        CHECK(memcmp(ca, cb, bytes) == 0);
        CHECK_OK(vq_codec_accumulate(a, w, nq, ca, (size_t)n, oa));
        CHECK_OK(vq_codec_accumulate(b, w, nq, cb, (size_t)n, ob));
        const double step1 = lm_max(bits - 1) / sqrt((double)D) / 127.0, qjl = sqrt(M_PI / 2.0) / D;
        double worst = 0.0;
        int differ = 0;
        for (int j = 0; j < nq; j++) {
            double bound[2] = { 0 }, mag[2] = { 0 };
            for (int b0 = 0; b0 < n; b0 += 32) {
                double A1 = 0.0, A2 = 0.0;
                for (int i = b0; i < n && i < b0 + 32; i++) {
                    const uint8_t *r = ca + (size_t)i * bpt;
                    const double f = vq_fp16_to_fp32((uint16_t)(r[0] | r[1] << 8));
                    const double g = f * qjl * vq_fp16_to_fp32((uint16_t)(r[2] | r[3] << 8));
                    const double a1 = fabs((double)w[j * n + i] * f), a2 = fabs((double)w[j * n + i] * g);
                    A1 = fmax(A1, a1), A2 = fmax(A2, a2);
                    bound[0] += a1 * step1 / 2.0;
                    bound[1] += a2 * 1e-6;
                    mag[0] += a1 * lm_max(bits - 1) / sqrt((double)D), mag[1] += a2;
                }
                bound[0] += 32.0 * A1 / 254.0 * 127.0 * step1;
                bound[1] += 32.0 * A2 / 254.0;
            }
            for (int h = 0; h < 2; h++) {
                bound[h] += 1e-5 * mag[h];
                for (int e = 0; e < D; e++) {
                    const size_t at = (size_t)j * A + (size_t)h * (size_t)D + (size_t)e;
                    worst = fmax(worst, fabs((double)oa[at] - ob[at]) / bound[h]);
                    differ |= oa[at] != ob[at];
                }
            }
        }
        CHECKF(worst <= 1.0 && differ, "%s D=%d: worst %g of the bound, differ %d", sq, D, worst, differ);
    }
    free(v), free(w), free(ca), free(cb), free(oa), free(ob);
    vq_codec_free(a), vq_codec_free(b);
}

static void test_sums(void)
{
    static const int Ds[] = { 64, 128, 256 }, bs[] = { 1, 2, 4 };
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int norm8 = 0; norm8 <= 1; norm8++)
                check(Ds[i], bs[j], norm8);
    for (int i = 0; i < 3; i++)
        for (int bits = 2; bits <= 3; bits++)
            check_prod(Ds[i], bits);
}

static void test_refused(void)
{
    vq_codec *c = NULL;
    CHECK(vq_codec_create("turboquant_mse:bits=3,qbits=8", 64, VQ_ROLE_VALUE, 1, &c) != VQ_OK && c == NULL);
    CHECK(strstr(vq_last_error(), "qbits") != NULL);
    CHECK(vq_codec_create("turboquant_prod:bits=4,qbits=8", 64, VQ_ROLE_VALUE, 1, &c) != VQ_OK && c == NULL);
    CHECK(strstr(vq_last_error(), "qbits") != NULL);
    CHECK(vq_codec_create("turboquant_prod:qbits=8", 64, VQ_ROLE_KEY, 1, &c) != VQ_OK && c == NULL);
    CHECK(strstr(vq_last_error(), "values") != NULL);
}

int main(void)
{
    RUN(test_sums);
    RUN(test_refused);
    return vq_test_summary("codec_tq_w8");
}
