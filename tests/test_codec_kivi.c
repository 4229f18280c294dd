/* test_codec_kivi.c -- KIVI: byte formula, quality on key-like data and its
 * fall with bits, fused == unfused, determinism, bad parameters. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec_eval.h"
#include "core/bitstream.h"
#include "core/fp16.h"
#include "synth_kv.h"
#include "int8_weights.h"
#include "test.h"
#include "veloxquant.h"

static vq_codec *make(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(spec, D, role, 1234, &c);
    CHECKF(st == VQ_OK, "create %s D=%d: %s", spec, D, vq_last_error());
    return c;
}

static void test_byte_formula(void)
{
    const int dims[] = { 64, 128, 256 };
    const int bitss[] = { 2, 4 };
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 2; k++)
            for (int role = 0; role < 2; role++) {
                int D = dims[i], b = bitss[k];
                char spec[64];
                snprintf(spec, sizeof spec, "kivi:bits=%d", b);
                vq_codec *c = make(spec, D, (vq_role)role);
                if (!c)
                    continue;
                /* METHODS.md: b*D/8 + 2*2*D/group, group 32 */
                size_t want = (size_t)(b * D / 8 + 4 * D / 32);
                CHECKF(vq_codec_bytes_per_token(c) == want, "%s D=%d role %d: %zu B/token, want %zu", spec, D,
                       role, vq_codec_bytes_per_token(c), want);
                CHECK(vq_codec_block_tokens(c) == (role == VQ_ROLE_KEY ? 32u : 1u));
                CHECK(vq_codec_shared_bytes(c) == 0);
                char canon[64];
                snprintf(canon, sizeof canon, "kivi:bits=%d,group=32,qbits=8", b); /* qbits=8: D % 64 == 0 */
                CHECK(strcmp(vq_codec_spec(c), canon) == 0);
                vq_codec_free(c);
            }
    /* D=128, 2 bits: 32 + 16 = 48 B/token (5.33x vs fp16's 256) */
    vq_codec *c = make("kivi", 128, VQ_ROLE_KEY);
    CHECK(c && vq_codec_bytes_per_token(c) == 48);
    vq_codec_free(c);
    c = make("kivi:bits=4,group=64", 128, VQ_ROLE_VALUE);
    CHECK(c && vq_codec_bytes_per_token(c) == 64 + 8);
    vq_codec_free(c);
}

/* decode against the row format read here one value at a time
 * (s * code + m, one multiply then one add), head sizes 32 to 256 */
static void test_decode_bytes(void)
{
    struct { const char *spec; int D; int roles; } cases[] = {
        { "kivi:bits=2", 64, 3 }, { "kivi:bits=4,group=64", 128, 3 }, { "kivi:bits=2,group=16", 96, 3 },
        { "kivi:bits=4,group=16", 32, 3 }, { "kivi:bits=2,group=128", 256, 3 },
    };
    const size_t n = 128; /* whole key groups of up to 128 */
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int role = 0; role < 2; role++) {
            if (!(cases[ci].roles >> role & 1))
                continue;
            const size_t D = (size_t)cases[ci].D;
            vq_codec *c = make(cases[ci].spec, (int)D, (vq_role)role);
            if (!c)
                continue;
            float *x = malloc(n * D * sizeof(float)), *y = malloc(n * D * sizeof(float));
            vq_rng r;
            vq_rng_seed(&r, 40 + ci);
            for (size_t i = 0; i < n * D; i++)
                x[i] = vq_rng_normal(&r) * (1.0f + (float)(i % D % 5));
            const size_t bt = vq_codec_block_tokens(c), bb = vq_codec_block_bytes(c);
            uint8_t *codes = malloc(n / bt * bb);
            CHECK_OK(vq_codec_encode(c, x, n, codes));
            CHECK_OK(vq_codec_decode(c, codes, n, y));
            const int b = cases[ci].spec[10] - '0';
            const size_t row = (size_t)b * D / 8;
            int bad = 0;
            for (size_t t = 0; t < n; t++)
                for (size_t e = 0; e < D; e++) {
                    float s, m;
                    unsigned q;
                    if (role == VQ_ROLE_KEY) { /* block: D scales, D mins, then rows */
                        const uint8_t *blk = codes + t / bt * bb;
                        s = vq_fp16_to_fp32((vq_fp16)(blk[2 * e] | blk[2 * e + 1] << 8));
                        m = vq_fp16_to_fp32((vq_fp16)(blk[2 * D + 2 * e] | blk[2 * D + 2 * e + 1] << 8));
                        q = (unsigned)vq_bits_get(blk + 4 * D + t % bt * row, e, b);
                    } else { /* row: ng scales, ng mins, codes */
                        const size_t ng = (bb - row) / 4, g = e / (D / ng);
                        const uint8_t *in = codes + t * bb;
                        s = vq_fp16_to_fp32((vq_fp16)(in[2 * g] | in[2 * g + 1] << 8));
                        m = vq_fp16_to_fp32((vq_fp16)(in[2 * ng + 2 * g] | in[2 * ng + 2 * g + 1] << 8));
                        q = (unsigned)vq_bits_get(in + 4 * ng, e, b);
                    }
                    const float want = s * (float)q + m;
                    bad += memcmp(&want, &y[t * D + e], sizeof want) != 0;
                }
            CHECKF(bad == 0, "%s D=%zu role %d: %d decoded values differ from the bytes' formula", cases[ci].spec, D,
                   role, bad);
            free(x), free(y), free(codes);
            vq_codec_free(c);
        }
}

/* Quality on key-like data (outlier channels 10-50x, non-zero means).
 * Asymmetric min/max over a group of G=32 Gaussian-ish samples: the range
 * is about 4.1 sigma, the step range/(2^b - 1), the error step^2/12, so the
 * error variance is ~0.16 sigma^2 at 2 bits and ~0.0062 sigma^2 at 4 bits:
 * the MSE falls by ((2^4-1)/(2^2-1))^2 = 25x from 2 to 4 bits. The error is
 * relative to the signal variance (sigma) of each channel or token, so the
 * outlier channels do not hurt keys (per-channel scales) but do hurt
 * values (one range per 32 channels, stretched by an outlier). */
static void test_quality(void)
{
    const int D = 128;
    const size_t n = vq_test_quick() ? 256 : 1024;
    const int n_q = 4;
    vq_rng r;
    vq_rng_seed(&r, 5);
    float *xs[2] = { malloc(n * D * sizeof(float)), malloc(n * D * sizeof(float)) };
    float *q = vq_gauss_queries(n_q, D, 77);
    for (int role = 0; role < 2; role++) {
        /* keys: key-like data with outlier channels; values: no outlier
         * channels (KIVI Sec. 3: value caches have none). Per-token groups
         * of outlier keys hold a cluster near 0 and one far outlier, where
         * the uniform grid is coarse compared with the cluster and the
         * high-resolution step^2/12 law (and its 25x) does not apply. */
        vq_synth syn;
        vq_synth_init(&syn, D, 99, role == VQ_ROLE_KEY);
        vq_synth_draw(&syn, &r, xs[role], n);
    }
    /* Measured at D=128, n=1024 (rel MSE vs the data's energy): keys 2 bits
     * 0.0115, 4 bits 0.00045 (the outlier channels' energy is in the
     * denominator); values (no outliers, relative to ~1.25 sigma^2 per
     * channel) 2 bits 0.156, 4 bits 0.0062 = 0.16/1.25 and 0.0062/1.25 of
     * the theory above. Thresholds are ~1.7x the measurement: a wrong
     * rounding (floor instead of round: 4x the error) or a range bug fails,
     * sample noise and D=64 in quick mode do not. */
    const double max_mse[2][2] = { { 0.02, 0.001 }, { 0.25, 0.011 } }; /* [role][bits 2,4] */
    const double max_score[2][2] = { { 0.2, 0.045 }, { 0.55, 0.13 } };
    for (int role = 0; role < 2; role++) {
        double mse[2] = { 0, 0 };
        for (int k = 0; k < 2; k++) {
            char spec[32];
            /* float queries and weights: fused == decoded (the default's int8
             * rounding: test_qbits8, test_qbits8_values) */
            snprintf(spec, sizeof spec, "kivi:bits=%d,qbits=0", 2 + 2 * k);
            vq_codec *c = make(spec, D, (vq_role)role);
            vq_codec_metrics m;
            if (!c || vq_codec_eval(c, xs[role], n, q, n_q, 3, &m) != 0) {
                CHECKF(0, "eval %s: %s", spec, vq_last_error());
                vq_codec_free(c);
                continue;
            }
            printf("  kivi %s bits=%d D=%d: rel_mse %.5f rel_score %.5f fused_score %.2g fused_acc %.2g\n",
                   role ? "values" : "keys  ", 2 + 2 * k, D, m.rel_mse, m.rel_score, m.fused_score, m.fused_acc);
            mse[k] = m.rel_mse;
            CHECKF(m.rel_mse < max_mse[role][k], "%s role %d rel_mse %g >= %g", spec, role, m.rel_mse,
                   max_mse[role][k]);
            CHECKF(m.rel_score < max_score[role][k], "%s role %d rel_score %g >= %g", spec, role, m.rel_score,
                   max_score[role][k]);
            /* fused == unfused to float rounding (fp32 sums of D terms) */
            CHECKF(m.fused_score < 1e-5, "%s fused score differs by %g", spec, m.fused_score);
            CHECKF(m.fused_acc < 1e-5, "%s fused accumulate differs by %g", spec, m.fused_acc);
            vq_codec_free(c);
        }
        /* theory: 25x from 2 to 4 bits; fp16 scale rounding and clipping
         * at the group edges make it a little less: require 12x */
        CHECKF(mse[0] > 12.0 * mse[1], "role %d: MSE 2 bits %g vs 4 bits %g falls less than 12x", role, mse[0],
               mse[1]);
    }
    free(xs[0]);
    free(xs[1]);
    free(q);
}

/* keys per channel must beat per-token quantization of the same data: the
 * whole point of KIVI's key axis (outlier channels stay in their own range) */
static void test_key_axis_matters(void)
{
    const int D = 128;
    const size_t n = 256;
    vq_synth syn;
    vq_synth_init(&syn, D, 11, 1);
    vq_rng r;
    vq_rng_seed(&r, 12);
    float *x = malloc(n * D * sizeof(float));
    float *q = vq_gauss_queries(2, D, 13);
    vq_synth_draw(&syn, &r, x, n);
    vq_codec *k = make("kivi:bits=2", D, VQ_ROLE_KEY), *v = make("kivi:bits=2", D, VQ_ROLE_VALUE);
    vq_codec_metrics mk, mv;
    CHECK(k && v && vq_codec_eval(k, x, n, q, 2, 1, &mk) == 0 && vq_codec_eval(v, x, n, q, 2, 1, &mv) == 0);
    if (k && v)
        CHECKF(mk.rel_mse * 4 < mv.rel_mse, "per-channel %g not 4x better than per-token %g on outlier keys",
               mk.rel_mse, mv.rel_mse);
    vq_codec_free(k);
    vq_codec_free(v);
    free(x);
    free(q);
}

static void test_determinism_and_edges(void)
{
    const int D = 64;
    const size_t n = 64;
    float *x = malloc(n * D * sizeof(float));
    vq_rng r;
    vq_rng_seed(&r, 1);
    for (size_t i = 0; i < n * D; i++)
        x[i] = vq_rng_normal(&r);
    for (int role = 0; role < 2; role++) {
        vq_codec *a = make("kivi:bits=4", D, (vq_role)role), *b = make("kivi:bits=4", D, (vq_role)role);
        if (!a || !b)
            continue;
        size_t bytes = n / vq_codec_block_tokens(a) * vq_codec_block_bytes(a);
        uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
        CHECK_OK(vq_codec_encode(a, x, n, ca));
        CHECK_OK(vq_codec_encode(b, x, n, cb));
        CHECK(memcmp(ca, cb, bytes) == 0);
        if (role == VQ_ROLE_KEY) {
            /* 31 tokens is not a whole group */
            CHECK(vq_codec_encode(a, x, 31, ca) == VQ_ERR_INVALID_ARG);
        }
        /* constant, huge and NaN inputs: no crash, finite where finite */
        float *y = malloc(n * D * sizeof(float));
        for (size_t i = 0; i < n * D; i++)
            y[i] = 3.0f;
        CHECK_OK(vq_codec_encode(a, y, n, ca));
        CHECK_OK(vq_codec_decode(a, ca, n, y));
        int ok = 1;
        for (size_t i = 0; i < n * D; i++)
            ok &= y[i] == 3.0f;
        CHECKF(ok, "constant input not reproduced exactly (role %d)", role);
        for (size_t i = 0; i < n * D; i++)
            y[i] = (i % 7 == 0) ? 1e30f : (i % 11 == 0 ? NAN : x[i]);
        CHECK_OK(vq_codec_encode(a, y, n, ca));
        CHECK_OK(vq_codec_decode(a, ca, n, y));
        free(y);
        free(ca);
        free(cb);
        vq_codec_free(a);
        vq_codec_free(b);
    }
    free(x);
}

static void test_bad_params(void)
{
    struct { const char *spec; int D; vq_role role; const char *word; } bad[] = {
        { "kivi:bits=3", 128, VQ_ROLE_KEY, "bits" },
        { "kivi:bits=1", 128, VQ_ROLE_KEY, "bits" },
        { "kivi:bits=8", 128, VQ_ROLE_VALUE, "bits" },
        { "kivi:group=48", 128, VQ_ROLE_KEY, "group" },
        { "kivi:group=0", 128, VQ_ROLE_KEY, "group" },
        { "kivi:group=64", 32, VQ_ROLE_VALUE, "group" },
        { "kivi:bitz=2", 128, VQ_ROLE_KEY, "bitz" },
        { "kivi:bits=x", 128, VQ_ROLE_KEY, "bits" },
        { "kivi:qbits=4", 128, VQ_ROLE_KEY, "qbits" },
        { "kivi:qbits=8", 96, VQ_ROLE_VALUE, "qbits" },
        { "kivi:qbits=8", 96, VQ_ROLE_KEY, "qbits" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vq_codec *c = (vq_codec *)1;
        vq_status st = vq_codec_create(bad[i].spec, bad[i].D, bad[i].role, 1, &c);
        CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL, "'%s' -> %s", bad[i].spec, vq_status_str(st));
        CHECKF(strstr(vq_last_error(), bad[i].word) != NULL, "'%s': message '%s' does not name '%s'", bad[i].spec,
               vq_last_error(), bad[i].word);
    }
    /* kivi needs no calibration: calibrate is a no-op, state calls refuse */
    vq_codec *c = make("kivi", 64, VQ_ROLE_KEY);
    float x[64] = { 0 };
    CHECK(vq_codec_needs_calibration(c) == 0 && vq_codec_is_ready(c));
    CHECK_OK(vq_codec_calibrate(c, x, 1));
    size_t len = 0;
    CHECK(vq_codec_state_write(c, NULL, 0, &len) == VQ_ERR_UNSUPPORTED);
    vq_codec_free(c);
}

/* qbits=8 (the default at D = 128): the same bytes as qbits=0; scores from the int8 query differ from the
 * float query's by its rounding only. The folded query q*s is rounded to
 * steps of amax/127, and the rounding errors meet the centred codes
 * (codes_qdot.h), so each of the D terms errs by at most amax/254 *
 * |code - 2| <= (max|q| * s_max)/254 * 2 with s_max = range/3 <= 2
 * max|k|/3: |d score| <= D max|q| max|k| / 190; checked against the
 * uncentred form's looser D max|q| max|k| / 127 (the centring's own
 * test: test_kernels' codes_qdot reference). */
static void test_qbits8(void)
{
    const int D = 128, G = 32, n = 64, nq = 3;
    vq_codec *a = make("kivi:bits=2,qbits=0", D, VQ_ROLE_KEY), *b = make("kivi:bits=2", D, VQ_ROLE_KEY);
    if (!a || !b)
        return;
    CHECK(strcmp(vq_codec_spec(b), "kivi:bits=2,group=32,qbits=8") == 0);
    float *k = malloc(sizeof(float) * (size_t)D * n), *q = malloc(sizeof(float) * (size_t)D * nq);
    for (int i = 0; i < D * n; i++)
        k[i] = (float)((i * 37) % 101) / 50.0f - 1.0f + (i % D == 5 ? 20.0f : 0.0f);
    for (int i = 0; i < D * nq; i++)
        q[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
    size_t bytes = vq_codec_bytes_per_token(a) * (size_t)n;
    uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
    CHECK_OK(vq_codec_encode(a, k, (size_t)n, ca));
    CHECK_OK(vq_codec_encode(b, k, (size_t)n, cb));
    CHECK(memcmp(ca, cb, bytes) == 0);
    size_t qa = vq_codec_query_bytes(a), qbb = vq_codec_query_bytes(b);
    uint8_t *pa = malloc(qa * nq), *pb = malloc(qbb * nq);
    for (int j = 0; j < nq; j++) {
        CHECK_OK(vq_codec_prepare_query(a, q + (size_t)j * D, pa + (size_t)j * qa));
        CHECK_OK(vq_codec_prepare_query(b, q + (size_t)j * D, pb + (size_t)j * qbb));
    }
    float sa[3 * 64], sb[3 * 64];
    CHECK_OK(vq_codec_score(a, pa, nq, ca, (size_t)n, sa));
    CHECK_OK(vq_codec_score(b, pb, nq, cb, (size_t)n, sb));
    for (int j = 0; j < nq; j++)
        for (int i = 0; i < n; i++) {
            float qs_max = 0.0f, kmax = 0.0f;
            for (int e = 0; e < D; e++)
                qs_max = fmaxf(qs_max, fabsf(q[j * D + e]));
            for (int e = 0; e < D * n; e++)
                kmax = fmaxf(kmax, fabsf(k[e]));
            float bound = qs_max * kmax * (float)D / 127.0f;
            CHECKF(fabsf(sa[j * n + i] - sb[j * n + i]) <= bound && fabsf(sa[j * n + i] - sb[j * n + i]) > 0.0f, "kivi qbits=8 score %d,%d: %g vs %g (bound %g)", j, i,
                   sa[j * n + i], sb[j * n + i], bound);
        }
    (void)G;
    free(k), free(q), free(ca), free(cb), free(pa), free(pb);
    vq_codec_free(a);
    vq_codec_free(b);
}

/* qbits=8 values (the default at D = 128): the same bytes as qbits=0, sums within the int8 weights' rounding
 * bound (tests/util/int8_weights.h) */
static void test_qbits8_values(void)
{
    const int D = 128;
    vq_codec *a = make("kivi:bits=2,qbits=0", D, VQ_ROLE_VALUE), *b = make("kivi:bits=2", D, VQ_ROLE_VALUE);
    if (a && b) {
        CHECK(strcmp(vq_codec_spec(b), "kivi:bits=2,group=32,qbits=8") == 0);
        vq_test_int8_weight_sums(a, b, D, 2);
    }
    vq_codec_free(a);
    vq_codec_free(b);
}

int main(void)
{
    RUN(test_byte_formula);
    RUN(test_quality);
    RUN(test_key_axis_matters);
    RUN(test_determinism_and_edges);
    RUN(test_bad_params);
    RUN(test_qbits8);
    RUN(test_qbits8_values);
    RUN(test_decode_bytes);
    return vq_test_summary("codec_kivi");
}
