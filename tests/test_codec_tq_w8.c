/* test_codec_tq_w8.c -- turboquant_mse values with qbits=8 (int8 attention
 * weights and int8 levels, kernels/lut_qaxpy.h) against the same codec
 * with float sums, for 1, 2 and 4 bits, head sizes 64, 128 and 256, the
 * fp16 and the one-byte norm:
 *   - the same bytes per token and the same codes (qbits changes only how
 *     sums are taken), the canonical spec keeps qbits=8 (the float form
 *     names qbits=0: values default to qbits=8 at 1, 2 and 4 bits since
 *     session 57; test_codec_all checks the defaults);
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

/* both codecs (float sums, qbits=8) over the same N_ROWS value rows (norms
 * 0.1 .. 10, one heavy channel) and NQ weight rows (small weights, one
 * large): their codes must be equal; oa, ob their accumulators */
enum { N_ROWS = 100, NQ = 3 };
typedef struct {
    vq_codec *a, *b;
    size_t bpt, A; /* bytes per token, accumulator floats */
    float *w, *oa, *ob;
    uint8_t *ca;
} pair_sums;

static void pair_free(pair_sums *P)
{
    free(P->w), free(P->oa), free(P->ob), free(P->ca);
    vq_codec_free(P->a), vq_codec_free(P->b);
}

/* 1 with P filled (pair_free it either way), 0 when a step failed (reported) */
static int pair_run(const char *sp, const char *sq, int D, pair_sums *P)
{
    const int n = N_ROWS, nq = NQ;
    *P = (pair_sums){ 0 };
    CHECK_OK(vq_codec_create(sp, D, VQ_ROLE_VALUE, 11, &P->a));
    CHECK_OK(vq_codec_create(sq, D, VQ_ROLE_VALUE, 11, &P->b));
    if (!P->a || !P->b)
        return 0;
    CHECKF(strstr(vq_codec_spec(P->b), "qbits=8") != NULL, "%s: canonical %s", sq, vq_codec_spec(P->b));
    P->bpt = vq_codec_bytes_per_token(P->a), P->A = vq_codec_accum_size(P->a);
    CHECK(vq_codec_bytes_per_token(P->b) == P->bpt && vq_codec_accum_size(P->b) == P->A);
    const size_t bytes = P->bpt * (size_t)n;
    float *v = malloc(sizeof(float) * (size_t)D * n);
    uint8_t *cb = malloc(bytes);
    P->w = malloc(sizeof(float) * (size_t)n * nq), P->ca = malloc(bytes);
    P->oa = calloc(P->A * nq, sizeof(float)), P->ob = calloc(P->A * nq, sizeof(float));
    int ok = v && cb && P->w && P->ca && P->oa && P->ob;
    CHECK(ok);
    if (ok) {
        for (int i = 0; i < n; i++) {
            const float scale = powf(10.0f, -1.0f + 2.0f * (float)i / (float)(n - 1));
            for (int d = 0; d < D; d++)
                v[(size_t)i * D + d] = scale * ((float)(((i * D + d) * 41) % 103) / 51.0f - 1.0f + (d == 9 ? 4.0f : 0.0f));
        }
        for (int i = 0; i < n * nq; i++)
            P->w[i] = (float)((i * 29) % 89) / 4000.0f + (i % n == 17 ? 0.5f : 0.0f);
        CHECK_OK(vq_codec_encode(P->a, v, (size_t)n, P->ca));
        CHECK_OK(vq_codec_encode(P->b, v, (size_t)n, cb));
        CHECK(memcmp(P->ca, cb, bytes) == 0);
        CHECK_OK(vq_codec_accumulate(P->a, P->w, nq, P->ca, (size_t)n, P->oa));
        CHECK_OK(vq_codec_accumulate(P->b, P->w, nq, cb, (size_t)n, P->ob));
    }
    free(v), free(cb);
    return ok;
}

static void check(int D, int bits, int norm8)
{
    char sp[96], sq[96];
    snprintf(sp, sizeof sp, "turboquant_mse:bits=%d%s,lsq=1,qbits=0", bits, norm8 ? ",norm=8" : "");
    snprintf(sq, sizeof sq, "turboquant_mse:bits=%d%s,lsq=1,qbits=8", bits, norm8 ? ",norm=8" : "");
    pair_sums P;
    if (pair_run(sp, sq, D, &P)) {
        const int n = N_ROWS, nq = NQ;
        /* per weight row the bound of lut_qaxpy.h with |lev| <= 127: per
         * block of 32 rows 32 * A/254 * 127 step, plus |a_i| step / 2 per
         * row; a_i = w_i f_i, f_i the stored field (norm=8's byte decoded) */
        const double step = lm_max(bits) / sqrt((double)D) / 127.0;
        double bound[NQ] = { 0 };
        for (int j = 0; j < nq; j++) {
            double mag = 0.0;
            for (int b0 = 0; b0 < n; b0 += 32) {
                double Ab = 0.0;
                for (int i = b0; i < n && i < b0 + 32; i++) {
                    const uint8_t *r = P.ca + (size_t)i * P.bpt;
                    const double f = norm8 ? (r[0] ? exp2((r[0] - 128) / 8.0) : 0.0)
                                           : (double)vq_fp16_to_fp32((uint16_t)(r[0] | r[1] << 8));
                    const double ai = fabs((double)P.w[j * n + i] * f);
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
        for (size_t i = 0; i < P.A * nq; i++) {
            worst = fmax(worst, fabs((double)P.oa[i] - P.ob[i]) / bound[i / P.A]);
            differ |= P.oa[i] != P.ob[i];
        }
        CHECKF(worst <= 1.0 && differ, "%s D=%d: worst %g of the bound, differ %d", sq, D, worst, differ);
    }
    pair_free(&P);
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
    pair_sums P;
    if (pair_run(sp, sq, D, &P)) {
        const int n = N_ROWS, nq = NQ;
        CHECK(P.A >= 2 * (size_t)D);
        const double step1 = lm_max(bits - 1) / sqrt((double)D) / 127.0, qjl = sqrt(M_PI / 2.0) / D;
        double worst = 0.0;
        int differ = 0;
        for (int j = 0; j < nq; j++) {
            double bound[2] = { 0 }, mag[2] = { 0 };
            for (int b0 = 0; b0 < n; b0 += 32) {
                double A1 = 0.0, A2 = 0.0;
                for (int i = b0; i < n && i < b0 + 32; i++) {
                    const uint8_t *r = P.ca + (size_t)i * P.bpt;
                    const double f = vq_fp16_to_fp32((uint16_t)(r[0] | r[1] << 8));
                    const double g = f * qjl * vq_fp16_to_fp32((uint16_t)(r[2] | r[3] << 8));
                    const double a1 = fabs((double)P.w[j * n + i] * f), a2 = fabs((double)P.w[j * n + i] * g);
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
                    const size_t at = (size_t)j * P.A + (size_t)h * (size_t)D + (size_t)e;
                    worst = fmax(worst, fabs((double)P.oa[at] - P.ob[at]) / bound[h]);
                    differ |= P.oa[at] != P.ob[at];
                }
            }
        }
        CHECKF(worst <= 1.0 && differ, "%s D=%d: worst %g of the bound, differ %d", sq, D, worst, differ);
    }
    pair_free(&P);
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
