/* test_codec_tq_norm.c -- turboquant_mse's value-metadata options
 * (docs/codecs.md): norm=8, the norm field as a one-byte log code
 * (n^ = 2^((e - 128)/8)), and lsq=1, the field holding the least-squares
 * gain n <y, y^>/|y^|^2 instead of the norm.
 *
 * Reference checks, scalar: the bytes per token follow the formula
 * 1 + b*D/8 (norm=8) and 2 + b*D/8; the codes after the field are the same
 * bytes as the plain codec's (the options change the field only); the byte
 * is the rounded log code of the field's value; decode(norm=8) is the plain
 * decode scaled by n^/n16 (the same unit vector R^T y^); the stored gain of
 * lsq=1 is the least-squares gain (computed here from the plain decode) and
 * its decode is never farther from k than the plain decode (to fp16
 * rounding of the field); the options are refused where they do not apply. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "core/rng.h"
#include "test.h"
#include "veloxquant.h"

#define N 64

static vq_codec *make(const char *spec, int D)
{
    vq_codec *c = NULL;
    CHECKF(vq_codec_create(spec, D, VQ_ROLE_VALUE, 7, &c) == VQ_OK, "create %s D=%d: %s", spec, D, vq_last_error());
    return c;
}

static float fp16_field(const uint8_t *blk) { return vq_fp16_to_fp32((uint16_t)(blk[0] | blk[1] << 8)); }

/* vectors with a spread of norms (1e-3 .. 1e3) and one heavy channel */
static void fill(vq_rng *g, float *x, int D)
{
    for (int i = 0; i < N; i++) {
        float scale = powf(10.0f, -3.0f + 6.0f * (float)i / (N - 1));
        for (int d = 0; d < D; d++)
            x[i * D + d] = scale * (vq_rng_normal(g) + (d == 3 ? 4.0f : 0.0f));
    }
}

static double dist2(const float *a, const float *b, int D)
{
    double s = 0;
    for (int d = 0; d < D; d++)
        s += ((double)a[d] - b[d]) * ((double)a[d] - b[d]);
    return s;
}

static void check_dim_bits(int D, int b)
{
    char s16[64], s8[64], sl[64], sl8[64];
    snprintf(s16, sizeof s16, "turboquant_mse:bits=%d", b);
    snprintf(s8, sizeof s8, "turboquant_mse:bits=%d,norm=8", b);
    snprintf(sl, sizeof sl, "turboquant_mse:bits=%d,lsq=1", b);
    snprintf(sl8, sizeof sl8, "turboquant_mse:bits=%d,norm=8,lsq=1", b);
    vq_codec *c16 = make(s16, D), *c8 = make(s8, D), *cl = make(sl, D), *cl8 = make(sl8, D);
    if (!c16 || !c8 || !cl || !cl8)
        goto out;
    /* bytes: the formulas, and the canonical spec keeps the options */
    CHECKF(vq_codec_bytes_per_token(c16) == 2 + (size_t)b * D / 8, "%s D=%d", s16, D);
    CHECKF(vq_codec_bytes_per_token(c8) == 1 + (size_t)b * D / 8, "%s D=%d: %zu", s8, D,
           vq_codec_bytes_per_token(c8));
    CHECK(vq_codec_bytes_per_token(cl) == vq_codec_bytes_per_token(c16));
    CHECK_NEAR(vq_codec_bits_per_element(c8), 8.0 * (1 + b * D / 8.0) / D, 1e-9);
    /* (values at 1, 2 and 4 bits name their default qbits=8: test_codec_all) */
    const char *w8 = b != 3 ? ",qbits=8" : "";
    char cn8[80], cnl8[80], cn16[80];
    snprintf(cn8, sizeof cn8, "%s%s", s8, w8), snprintf(cnl8, sizeof cnl8, "%s%s", sl8, w8), snprintf(cn16, sizeof cn16, "%s%s", s16, w8);
    CHECKF(strcmp(vq_codec_spec(c8), cn8) == 0 && strcmp(vq_codec_spec(cl8), cnl8) == 0, "%s %s", vq_codec_spec(c8), vq_codec_spec(cl8));
    CHECKF(strcmp(vq_codec_spec(c16), cn16) == 0, "%s", vq_codec_spec(c16));

    const size_t B16 = vq_codec_bytes_per_token(c16), B8 = vq_codec_bytes_per_token(c8);
    float *x = malloc(sizeof(float) * N * D), *y16 = malloc(sizeof(float) * N * D);
    float *y8 = malloc(sizeof(float) * N * D), *yl = malloc(sizeof(float) * N * D);
    float *yl8 = malloc(sizeof(float) * N * D);
    uint8_t *p16 = malloc(N * B16), *p8 = malloc(N * B8), *pl = malloc(N * B16), *pl8 = malloc(N * B8);
    if (x && y16 && y8 && yl && yl8 && p16 && p8 && pl && pl8) {
        vq_rng g;
        vq_rng_seed(&g, (uint64_t)(D * 10 + b));
        fill(&g, x, D);
        CHECK_OK(vq_codec_encode(c16, x, N, p16));
        CHECK_OK(vq_codec_encode(c8, x, N, p8));
        CHECK_OK(vq_codec_encode(cl, x, N, pl));
        CHECK_OK(vq_codec_encode(cl8, x, N, pl8));
        CHECK_OK(vq_codec_decode(c16, p16, N, y16));
        CHECK_OK(vq_codec_decode(c8, p8, N, y8));
        CHECK_OK(vq_codec_decode(cl, pl, N, yl));
        CHECK_OK(vq_codec_decode(cl8, pl8, N, yl8));
        int bad_codes = 0, bad_e = 0, bad_scale = 0, bad_gain = 0, worse = 0;
        for (int i = 0; i < N; i++) {
            const float *k = x + (size_t)i * D;
            const uint8_t *b16 = p16 + i * B16, *b8 = p8 + i * B8, *bl = pl + i * B16, *bl8 = pl8 + i * B8;
            /* same codes after the field */
            bad_codes += memcmp(b16 + 2, b8 + 1, B8 - 1) != 0 || memcmp(b16 + 2, bl + 2, B16 - 2) != 0 ||
                         memcmp(b16 + 2, bl8 + 1, B8 - 1) != 0;
            /* the byte is round(8 log2 n) + 128 of the exact norm */
            double n = 0;
            for (int d = 0; d < D; d++)
                n += (double)k[d] * k[d];
            n = sqrt(n);
            int e = (int)lround(8.0 * log2(n)) + 128;
            e = e < 1 ? 1 : (e > 255 ? 255 : e);
            double l8 = 8.0 * log2(n), tie = fabs(l8 - floor(l8) - 0.5) < 1e-4; /* float vs double */
            bad_e += abs((int)b8[0] - e) > (tie ? 1 : 0);
            double n8 = exp2(((int)b8[0] - 128) / 8.0), n16 = fp16_field(b16);
            /* decode(norm=8) = decode(fp16 norm) * n8 / n16 */
            for (int d = 0; d < D; d++) {
                double want = (double)y16[(size_t)i * D + d] * n8 / n16;
                if (fabs((double)y8[(size_t)i * D + d] - want) > 1e-5 * (fabs(want) + n8 / sqrt((double)D)))
                    bad_scale++;
            }
            /* lsq: the field is <k, u>/<u, u> with u = decode16 / n16 */
            double ku = 0, uu = 0;
            for (int d = 0; d < D; d++) {
                double u = (double)y16[(size_t)i * D + d] / n16;
                ku += (double)k[d] * u;
                uu += u * u;
            }
            double gain = ku / uu, gl = fp16_field(bl);
            if (fabs(gl - gain) > 2e-3 * gain) /* fp16 rounding of the field, float encode */
                bad_gain++;
            if (fabs(exp2(((int)bl8[0] - 128) / 8.0) / gain - 1.0) > 0.046)
                bad_gain++;
            /* never farther than the plain decode (fp16 rounding of the gain: 2^-11) */
            double d16 = dist2(k, y16 + (size_t)i * D, D), dl = dist2(k, yl + (size_t)i * D, D);
            if (dl > d16 + 1e-6 * n * n)
                worse++;
        }
        CHECKF(bad_codes == 0, "D=%d b=%d: %d tokens with other codes", D, b, bad_codes);
        CHECKF(bad_e == 0, "D=%d b=%d: %d norm bytes off", D, b, bad_e);
        CHECKF(bad_scale == 0, "D=%d b=%d: %d decoded entries off the scaled plain decode", D, b, bad_scale);
        CHECKF(bad_gain == 0, "D=%d b=%d: %d least-squares gains off", D, b, bad_gain);
        CHECKF(worse == 0, "D=%d b=%d: lsq=1 farther than the norm on %d tokens", D, b, worse);
        /* the relative error of norm=8 over all tokens: at most the plain one
         * plus the log code's 4.4% (in norm), so (1.044)^2 x + 0.044^2 */
        double e16 = 0, e8 = 0;
        for (int i = 0; i < N; i++) {
            double n2 = dist2(x + (size_t)i * D, y16 + (size_t)i * D, D), nn = 0;
            for (int d = 0; d < D; d++)
                nn += (double)x[(size_t)i * D + d] * x[(size_t)i * D + d];
            e16 += n2 / nn;
            e8 += dist2(x + (size_t)i * D, y8 + (size_t)i * D, D) / nn;
        }
        CHECKF(e8 <= e16 * 1.045 * 1.045 + N * 0.045 * 0.045, "D=%d b=%d: norm=8 rel MSE %.4f vs %.4f", D, b,
               e8 / N, e16 / N);
    } else {
        CHECK(!"out of memory");
    }
    free(x), free(y16), free(y8), free(yl), free(yl8), free(p16), free(p8), free(pl), free(pl8);
out:
    vq_codec_free(c16), vq_codec_free(c8), vq_codec_free(cl), vq_codec_free(cl8);
}

static void test_norm8_lsq(void)
{
    const int dims[] = { 64, 128, 256 };
    for (int k = 0; k < 3; k++)
        for (int b = 1; b <= 4; b++)
            check_dim_bits(dims[k], b);
}

/* zero vectors decode to zero; tiny and huge norms clamp to the code's ends */
static void test_norm8_edges(void)
{
    const int D = 64;
    vq_codec *c = make("turboquant_mse:bits=2,norm=8", D);
    if (!c)
        return;
    float x[3 * 64], y[3 * 64];
    uint8_t p[3 * 17];
    for (int d = 0; d < D; d++) {
        x[d] = 0.0f;
        x[D + d] = 1e-9f;
        x[2 * D + d] = 3e4f;
    }
    CHECK_OK(vq_codec_encode(c, x, 3, p));
    CHECK_OK(vq_codec_decode(c, p, 3, y));
    CHECK(p[0] == 0 && p[17] == 1 && p[34] == 255);
    int zero = 1;
    for (int d = 0; d < D; d++)
        zero &= y[d] == 0.0f;
    CHECK(zero);
    vq_codec_free(c);
}

static void test_refused(void)
{
    vq_codec *c = NULL;
    CHECK(vq_codec_create("turboquant_mse:norm=12", 64, VQ_ROLE_VALUE, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(vq_codec_create("turboquant_mse:norm=4", 64, VQ_ROLE_VALUE, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(vq_codec_create("turboquant_mse:lsq=2", 64, VQ_ROLE_VALUE, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(vq_codec_create("turboquant_rvq:bits=1,norm=8", 64, VQ_ROLE_KEY, 1, &c) != VQ_OK);
    CHECK(vq_codec_create("turboquant_prod:bits=3,lsq=1", 64, VQ_ROLE_KEY, 1, &c) != VQ_OK);
    CHECK(c == NULL);
}

int main(void)
{
    RUN(test_norm8_lsq);
    RUN(test_norm8_edges);
    RUN(test_refused);
    return vq_test_summary("codec_tq_norm");
}
