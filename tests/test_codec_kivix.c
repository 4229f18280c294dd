/* test_codec_kivix.c -- kivix (KIVI at any width + sparse outliers).
 *
 *   - bytes: block_bytes follows the formulas of docs/codecs.md;
 *   - with no outliers, bits 2 and 4 decode exactly as kivi (same range
 *     rule, independent implementation);
 *   - sparse outliers are restored exactly (to fp16) and the remaining
 *     entries keep the error bound s/2 of their range, s computed without
 *     the outliers;
 *   - the outliers make real keys with spikes better (MSE falls);
 *   - every width 1..8 meets the uniform-quantizer bound per element;
 *   - non-uniform levels (nu=S): same bytes as uniform; on normal data
 *     the MSE falls against uniform levels at 2 and 3 bits; the range's
 *     extremes still decode to the fp16 min/max (levels 0 and 1 kept);
 *   - the outlier table and the ranges' fp16 scales and mins equal an
 *     independent run of the documented greedy (each range sorted by value
 *     then element index; the extreme whose removal most reduces the sum of
 *     n_r (M_r - m_r)^2 goes; ties to the lower range, then the low side),
 *     for keys and values, on data with many ties and on spiky data;
 *   - values with qbits=8 (int8 attention weights): the same bytes, and
 *     sums within the weights' rounding bound of the float sums
 *     (tests/util/int8_weights.h; 2 and 3 bits);
 *   - keys with qbits=8 (int8 queries, 2-4 bits, with and without
 *     outliers): the same bytes, and scores within the queries' rounding
 *     bound of the dots with the decoded keys (spiky keys: a dropped
 *     outlier correction exceeds it);
 *   - bad parameters are refused with a message naming them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/fp16.h"
#include "core/rng.h"
#include "int8_weights.h"
#include "test.h"

static float f16(float x) { return vq_fp16_to_fp32(vq_fp32_to_fp16(x)); }

static void fill(float *x, size_t n, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(&r);
}

static vq_codec *make(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(spec, D, role, 1, &c);
    CHECKF(st == VQ_OK, "create %s D=%d: %s", spec, D, vq_last_error());
    return st == VQ_OK ? c : NULL;
}

static void test_bytes(void)
{
    static const struct {
        const char *spec;
        int D;
        vq_role role;
        size_t block_tokens, block_bytes;
    } cases[] = {
        /* keys: G * ceil((4D + G*D*b/8 + 4N) / G) */
        { "kivix:bits=3,group=128,outliers=0", 64, VQ_ROLE_KEY, 128, 256 + 3072 },
        { "kivix:bits=3,group=128,outliers=10", 64, VQ_ROLE_KEY, 128, 128 * ((256 + 3072 + 40 + 127) / 128) },
        { "kivix:bits=2,group=32,outliers=8", 128, VQ_ROLE_KEY, 32, 512 + 1024 + 32 },
        { "kivix:bits=5,group=256,outliers=0", 32, VQ_ROLE_KEY, 256, 256 * ((128 + 5120 + 255) / 256) },
        /* values: 4D/G + D*b/8 + 4N */
        { "kivix:bits=3,group=64,outliers=0", 64, VQ_ROLE_VALUE, 1, 4 + 24 },
        { "kivix:bits=1,group=32,outliers=2", 256, VQ_ROLE_VALUE, 1, 32 + 32 + 8 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vq_codec *c = make(cases[i].spec, cases[i].D, cases[i].role);
        if (!c)
            continue;
        CHECKF(c->block_tokens == cases[i].block_tokens && c->block_bytes == cases[i].block_bytes,
               "%s D=%d: block %zu tokens %zu bytes, want %zu / %zu", cases[i].spec, cases[i].D, c->block_tokens,
               c->block_bytes, cases[i].block_tokens, cases[i].block_bytes);
        vq_codec_free(c);
    }
}

static void test_matches_kivi(void)
{
    const int D = 64;
    const size_t n = 128;
    float *x = malloc(n * D * sizeof *x), *a = malloc(n * D * sizeof *a), *b = malloc(n * D * sizeof *b);
    uint8_t *ca = malloc(n * 4096), *cb = malloc(n * 4096);
    fill(x, n * D, 3);
    for (size_t i = 0; i < n * D; i++)
        x[i] = x[i] * (1.0f + (float)(i % D)); /* channels of different scales */
    for (int bits = 2; bits <= 4; bits += 2)
        for (int r = 0; r < 2; r++) {
            vq_role role = r ? VQ_ROLE_VALUE : VQ_ROLE_KEY;
            char s1[64], s2[64];
            snprintf(s1, sizeof s1, "kivi:bits=%d,group=32", bits);
            snprintf(s2, sizeof s2, "kivix:bits=%d,group=32,outliers=0", bits);
            vq_codec *k1 = make(s1, D, role), *k2 = make(s2, D, role);
            if (!k1 || !k2) {
                vq_codec_free(k1);
                vq_codec_free(k2);
                continue;
            }
            CHECK(k1->block_bytes == k2->block_bytes);
            CHECK_OK(vq_codec_encode(k1, x, n, ca));
            CHECK_OK(vq_codec_encode(k2, x, n, cb));
            CHECK_OK(vq_codec_decode(k1, ca, n, a));
            CHECK_OK(vq_codec_decode(k2, cb, n, b));
            size_t diff = 0;
            for (size_t i = 0; i < n * D; i++)
                diff += a[i] != b[i];
            CHECKF(diff == 0, "bits=%d %s: %zu decoded entries differ from kivi", bits, r ? "values" : "keys", diff);
            vq_codec_free(k1);
            vq_codec_free(k2);
        }
    free(x), free(a), free(b), free(ca), free(cb);
}

/* spikes: a few huge entries; with enough outliers they are exact and the
 * rest is quantized over the small range */
static void test_outliers_exact(void)
{
    const int D = 64;
    for (int r = 0; r < 2; r++) {
        vq_role role = r ? VQ_ROLE_VALUE : VQ_ROLE_KEY;
        const size_t n = r ? 4 : 64;
        const char *spec = r ? "kivix:bits=2,group=32,outliers=3" : "kivix:bits=2,group=64,outliers=12";
        vq_codec *c = make(spec, D, role);
        if (!c)
            continue;
        float *x = malloc(n * D * sizeof *x), *y = malloc(n * D * sizeof *y);
        uint8_t *codes = calloc(n / c->block_tokens, c->block_bytes);
        fill(x, n * D, 11);
        /* spikes: keys 12 in the block (2 per channel in 6 channels);
         * values 3 per token */
        size_t spikes[12];
        size_t ns = 0;
        if (!r) {
            for (size_t k = 0; k < 12; k++)
                spikes[ns++] = (5 * k + 1) % n * D + (k / 2) * 7;
        }
        for (size_t t = 0; t < n; t++)
            if (r)
                for (size_t k = 0; k < 3; k++)
                    x[t * D + 9 + 17 * k] = (k % 2 ? -1.0f : 1.0f) * (80.0f + 10.0f * (float)k + (float)t);
        for (size_t k = 0; k < ns; k++)
            x[spikes[k]] = (k % 2 ? -1.0f : 1.0f) * (50.0f + (float)k);
        CHECK_OK(vq_codec_encode(c, x, n, codes));
        CHECK_OK(vq_codec_decode(c, codes, n, y));
        size_t exact = 0, spikes_exact = 0;
        double worst = 0;
        for (size_t i = 0; i < n * D; i++) {
            int spike = r ? (fabsf(x[i]) >= 80.0f) : 0;
            for (size_t k = 0; !r && k < ns; k++)
                spike |= spikes[k] == i;
            if (spike) {
                spikes_exact += y[i] == f16(x[i]);
            } else {
                exact += y[i] == f16(x[i]);
                double e = fabs((double)y[i] - x[i]);
                worst = e > worst ? e : worst;
            }
        }
        size_t want = r ? 3 * n : ns;
        CHECKF(spikes_exact == want, "%s: %zu of %zu spikes restored exactly", spec, spikes_exact, want);
        /* the rest: N(0,1) data, 4 levels over a range of at most ~9:
         * error <= s/2 + fp16 rounding <= 1.6 */
        CHECKF(worst < 1.6, "%s: worst error of the dense part %.3f (spikes leaked into the ranges?)", spec, worst);
        (void)exact;
        vq_codec_free(c);
        free(x), free(y), free(codes);
    }
}

/* real-key-like data with spikes: MSE falls as outliers grow; every width
 * keeps the per-element bound */
static void test_quality(void)
{
    const int D = 64;
    const size_t n = 256;
    float *x = malloc(n * D * sizeof *x), *y = malloc(n * D * sizeof *y);
    uint8_t *codes = malloc(n * 1024);
    fill(x, n * D, 21);
    vq_rng g;
    vq_rng_seed(&g, 4);
    for (size_t i = 0; i < n * D; i++)
        if (vq_rng_uniform(&g) < 0.01f)
            x[i] *= 20.0f;
    double prev = INFINITY;
    static const int outl[] = { 0, 16, 64, 128 };
    for (int k = 0; k < 4; k++) {
        char spec[64];
        snprintf(spec, sizeof spec, "kivix:bits=3,group=128,outliers=%d", outl[k]);
        vq_codec *c = make(spec, D, VQ_ROLE_KEY);
        if (!c)
            continue;
        CHECK_OK(vq_codec_encode(c, x, n, codes));
        CHECK_OK(vq_codec_decode(c, codes, n, y));
        double se = 0, ss = 0;
        for (size_t i = 0; i < n * D; i++) {
            se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
            ss += (double)x[i] * x[i];
        }
        printf("  %s: relative MSE %.4f\n", spec, se / ss);
        CHECKF(se / ss < prev, "%s: MSE %.4g did not fall (previous %.4g)", spec, se / ss, prev);
        prev = se / ss;
        vq_codec_free(c);
    }
    for (int bits = 1; bits <= 8; bits++)
        for (int r = 0; r < 2; r++) {
            char spec[64];
            snprintf(spec, sizeof spec, "kivix:bits=%d,group=32,outliers=0", bits);
            vq_codec *c = make(spec, D, r ? VQ_ROLE_VALUE : VQ_ROLE_KEY);
            if (!c)
                continue;
            CHECK_OK(vq_codec_encode(c, x, n, codes));
            CHECK_OK(vq_codec_decode(c, codes, n, y));
            /* per range: |err| <= s/2 (+ fp16 rounding of the min) */
            size_t bad = 0;
            for (size_t i = 0; i < n * D; i++) {
                size_t t = i / D, ch = i % D;
                float lo = INFINITY, hi = -INFINITY;
                for (size_t e = 0; e < 32; e++) {
                    float v = r ? x[t * D + ch / 32 * 32 + e] : x[(t / 32 * 32 + e) * D + ch];
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
                double s = (hi - lo) / ((1 << bits) - 1);
                if (fabs((double)y[i] - x[i]) > 0.5 * s * 1.01 + 2e-3 * (fabs(lo) + fabs(hi)))
                    bad++;
            }
            CHECKF(bad == 0, "%s %s: %zu entries beyond s/2", spec, r ? "values" : "keys", bad);
            vq_codec_free(c);
        }
    free(x), free(y), free(codes);
}

static double mse_of(const char *spec, vq_role role, const float *x, size_t n, int D)
{
    vq_codec *c = make(spec, D, role);
    if (!c)
        return INFINITY;
    uint8_t *buf = malloc(n / vq_codec_block_tokens(c) * vq_codec_block_bytes(c));
    float *y = malloc(n * (size_t)D * sizeof *y);
    double e = 0;
    CHECK(vq_codec_encode(c, x, n, buf) == VQ_OK && vq_codec_decode(c, buf, n, y) == VQ_OK);
    for (size_t i = 0; i < n * (size_t)D; i++)
        e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    free(buf), free(y);
    vq_codec_free(c);
    return e / (double)(n * (size_t)D);
}

static void test_nonuniform_levels(void)
{
    const int D = 64;
    const size_t n = 256;
    float *x = malloc(n * D * sizeof *x);
    fill(x, n * D, 77);
    for (int b = 2; b <= 3; b++) {
        char u[96], v[96];
        snprintf(u, sizeof u, "kivix:bits=%d,group=128,outliers=16", b);
        snprintf(v, sizeof v, "kivix:bits=%d,group=128,outliers=16,nu=35", b);
        double eu = mse_of(u, VQ_ROLE_KEY, x, n, D), ev = mse_of(v, VQ_ROLE_KEY, x, n, D);
        CHECKF(ev < 0.95 * eu, "keys %d bits: nu=35 MSE %g vs uniform %g", b, ev, eu);
        snprintf(u, sizeof u, "kivix:bits=%d,group=64", b);
        snprintf(v, sizeof v, "kivix:bits=%d,group=64,nu=35", b);
        eu = mse_of(u, VQ_ROLE_VALUE, x, n, D), ev = mse_of(v, VQ_ROLE_VALUE, x, n, D);
        CHECKF(ev < 0.95 * eu, "values %d bits: nu=35 MSE %g vs uniform %g", b, ev, eu);
        vq_codec *a = make(u, D, VQ_ROLE_VALUE), *c = make(v, D, VQ_ROLE_VALUE);
        CHECK(a && c && vq_codec_block_bytes(a) == vq_codec_block_bytes(c));
        CHECK(c && strstr(vq_codec_spec(c), "nu=35") != NULL);
        vq_codec_free(a);
        vq_codec_free(c);
    }
    /* extremes: one value token, its min and max decode to fp16(min) and
     * fp16(min) + fp16(scale) * (2^b - 1) */
    vq_codec *c = make("kivix:bits=2,group=64,nu=50", D, VQ_ROLE_VALUE);
    if (c) {
        uint8_t buf[256];
        float y[64];
        float mn = x[0], mx = x[0];
        for (int i = 0; i < D; i++)
            mn = x[i] < mn ? x[i] : mn, mx = x[i] > mx ? x[i] : mx;
        CHECK(vq_codec_encode(c, x, 1, buf) == VQ_OK && vq_codec_decode(c, buf, 1, y) == VQ_OK);
        float ymin = y[0], ymax = y[0];
        for (int i = 0; i < D; i++)
            ymin = y[i] < ymin ? y[i] : ymin, ymax = y[i] > ymax ? y[i] : ymax;
        CHECK_NEAR(ymin, f16(mn), 1e-6);
        CHECK_NEAR(ymax, mx, 2e-2 * (mx - mn));
        vq_codec_free(c);
    }
    free(x);
}

/* the documented greedy on one block, by sorting (the codec uses heaps):
 * the expected outlier table (u16 index, fp16 value) and per range the
 * fp16 scale and min (0 and 0 for an emptied range) */
static int by_value_index(const void *a, const void *b)
{
    const float *x = a, *y = b; /* pairs (value, index as float: exact < 2^24) */
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static double range_cost(const float *p, size_t lo, size_t hi)
{
    double r = (double)p[2 * hi] - (double)p[2 * lo];
    return (double)(hi - lo + 1) * r * r;
}

static void greedy_reference(const float *x, size_t D, int key, size_t G, int bits, int outl, uint8_t *tab, float *sc,
                             float *mn)
{
    const size_t R = key ? D : D / G, n = G;
    float *p = malloc(sizeof(float) * 2 * R * n);
    size_t *lo = malloc(sizeof(size_t) * R), *hi = malloc(sizeof(size_t) * R);
    for (size_t r = 0; r < R; r++) {
        for (size_t e = 0; e < n; e++) {
            size_t el = key ? e * D + r : r * G + e;
            float v = x[el];
            v = v != v ? 0.0f : v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v;
            p[2 * (r * n + e)] = v, p[2 * (r * n + e) + 1] = (float)el;
        }
        qsort(p + 2 * r * n, n, 2 * sizeof(float), by_value_index);
        lo[r] = 0, hi[r] = n - 1;
    }
    for (int k = 0; k < outl; k++) {
        double best = -1;
        size_t br = 0;
        int side = 0;
        for (size_t r = 0; r < R; r++) {
            const float *q = p + 2 * r * n;
            if (hi[r] + 1 < lo[r] + 2) { /* at most one left */
                if (lo[r] == hi[r] && best < 0)
                    best = 0, br = r, side = 0;
                continue;
            }
            double now = range_cost(q, lo[r], hi[r]);
            double g0 = now - range_cost(q, lo[r] + 1, hi[r]), g1 = now - range_cost(q, lo[r], hi[r] - 1);
            if (g0 > best)
                best = g0, br = r, side = 0;
            if (g1 > best)
                best = g1, br = r, side = 1;
        }
        const float *q = p + 2 * br * n;
        size_t slot = side ? hi[br]-- : lo[br]++;
        unsigned el = (unsigned)q[2 * slot + 1];
        vq_fp16 h = vq_fp32_to_fp16(q[2 * slot]);
        tab[4 * k] = (uint8_t)el, tab[4 * k + 1] = (uint8_t)(el >> 8);
        tab[4 * k + 2] = (uint8_t)h, tab[4 * k + 3] = (uint8_t)(h >> 8);
    }
    for (size_t r = 0; r < R; r++) {
        sc[r] = mn[r] = 0.0f;
        if (hi[r] + 1 >= lo[r] + 1) {
            const float *q = p + 2 * r * n;
            float m = f16(q[2 * lo[r]]), s = (q[2 * hi[r]] - m) / (float)((1u << bits) - 1);
            mn[r] = m;
            sc[r] = s > 0.0f ? f16(s > 65504.0f ? 65504.0f : s) : 0.0f;
        }
    }
    free(p), free(lo), free(hi);
}

static void test_greedy_reference(void)
{
    static const struct {
        const char *spec;
        int D, key;
        size_t G;
        int bits, outl;
    } cases[] = {
        { "kivix:bits=4,group=128,outliers=64", 64, 1, 128, 4, 64 },
        { "kivix:bits=2,group=32,outliers=40", 64, 1, 32, 2, 40 },
        { "kivix:bits=3,group=16,outliers=200", 32, 1, 16, 3, 200 },
        { "kivix:bits=3,group=64,outliers=0", 128, 0, 64, 3, 0 },
        { "kivix:bits=2,group=32,outliers=9", 128, 0, 32, 2, 9 },
        { "kivix:bits=1,group=16,outliers=30", 32, 0, 16, 1, 30 },
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int data = 0; data < 3; data++) {
            const size_t D = (size_t)cases[ci].D, B = cases[ci].key ? cases[ci].G : 1, n = B * D;
            const size_t R = cases[ci].key ? D : D / cases[ci].G;
            vq_codec *c = make(cases[ci].spec, (int)D, cases[ci].key ? VQ_ROLE_KEY : VQ_ROLE_VALUE);
            if (!c)
                continue;
            float *x = malloc(sizeof(float) * n);
            fill(x, n, 1000 + 17 * ci + (uint64_t)data);
            for (size_t i = 0; i < n; i++) {
                if (data == 1) /* many ties, signed zeros among them */
                    x[i] = x[i] > 1.5f ? 3.0f : x[i] < -1.5f ? -3.0f : floorf(x[i] * 2.0f) * 0.5f + 0.0f * x[i];
                if (data == 2 && i % 37 == 5) /* spikes */
                    x[i] *= 40.0f;
            }
            if (data == 1)
                x[3] = -0.0f, x[4] = 0.0f;
            uint8_t *blk = malloc(vq_codec_block_bytes(c)), tab[4 * 256];
            float sc[128], mn[128];
            CHECK_OK(vq_codec_encode(c, x, B, blk));
            greedy_reference(x, D, cases[ci].key, cases[ci].G, cases[ci].bits, cases[ci].outl, tab, sc, mn);
            const uint8_t *codes_end = blk + 4 * R + n * (size_t)cases[ci].bits / 8;
            CHECKF(memcmp(codes_end, tab, 4 * (size_t)cases[ci].outl) == 0, "%s data %d: outlier table", cases[ci].spec,
                   data);
            int ok = 1;
            for (size_t r = 0; r < R; r++) {
                float s = vq_fp16_to_fp32((vq_fp16)(blk[2 * r] | blk[2 * r + 1] << 8));
                float m = vq_fp16_to_fp32((vq_fp16)(blk[2 * R + 2 * r] | blk[2 * R + 2 * r + 1] << 8));
                ok &= memcmp(&s, &sc[r], 4) == 0 && memcmp(&m, &mn[r], 4) == 0;
            }
            CHECKF(ok, "%s data %d: range scales / mins", cases[ci].spec, data);
            free(x), free(blk);
            vq_codec_free(c);
        }
}

/* qbits=8 values (2 and 3 bits: 3 through kivi_qaxpy's unpacking path):
 * the same bytes, sums within the int8 weights' rounding bound
 * (tests/util/int8_weights.h) */
static void test_qbits8_values(void)
{
    static const char *specs[][2] = { { "kivix:bits=3,group=64", "kivix:bits=3,group=64,outliers=0,qbits=8" },
                                      { "kivix:bits=2,group=32", "kivix:bits=2,group=32,outliers=0,qbits=8" } };
    for (int D = 64; D <= 128; D += 64)
        for (size_t sp = 0; sp < 2; sp++) {
            char qspec[96], fspec[96];
            snprintf(qspec, sizeof qspec, "%s,qbits=8", specs[sp][0]);
            snprintf(fspec, sizeof fspec, "%s,qbits=0", specs[sp][0]);
            vq_codec *a = make(fspec, D, VQ_ROLE_VALUE), *b = make(qspec, D, VQ_ROLE_VALUE);
            if (a && b) {
                CHECKF(strcmp(vq_codec_spec(b), specs[sp][1]) == 0, "canonical %s", vq_codec_spec(b));
                vq_test_int8_weight_sums(a, b, D, sp == 0 ? 3 : 2);
            }
            vq_codec_free(a);
            vq_codec_free(b);
        }
}

/* qbits=8 keys: the same bytes as the float codec; each score within the
 * int8 query's rounding bound of <q, decoded key>: per block a query
 * element q_c s_c is rounded to a multiple of d = max_c |q_c s_c| / 127
 * (error <= d/2) and meets a code <= 2^b - 1, so |error| <= D (2^b - 1)
 * d / 2, plus float rounding. Keys carry spikes, so the outlier table is
 * full and a missed outlier correction (q_c times a spike) breaks the
 * bound. */
static void test_qbits8_keys(void)
{
    static const char *specs[] = { "kivix:bits=4,group=128,outliers=64", "kivix:bits=3,group=32,outliers=16",
                                   "kivix:bits=2,group=64,outliers=0", "kivix:bits=4,group=16,outliers=8" };
    const int nq = 3;
    for (int D = 64; D <= 128; D += 64)
        for (size_t sp = 0; sp < sizeof specs / sizeof *specs; sp++) {
            char qspec[96], fspec[96];
            snprintf(qspec, sizeof qspec, "%s,qbits=8", specs[sp]);
            snprintf(fspec, sizeof fspec, "%s,qbits=0", specs[sp]);
            vq_codec *a = make(fspec, D, VQ_ROLE_KEY), *b = make(qspec, D, VQ_ROLE_KEY);
            if (!a || !b) {
                vq_codec_free(a), vq_codec_free(b);
                continue;
            }
            CHECKF(strcmp(vq_codec_spec(b), qspec) == 0, "canonical %s", vq_codec_spec(b));
            const size_t B = vq_codec_block_tokens(b), n = 2 * B, bytes = vq_codec_bytes_per_token(a) * n;
            const size_t qb = vq_codec_query_bytes(b);
            float *x = malloc(sizeof(float) * n * (size_t)D), *dec = malloc(sizeof(float) * n * (size_t)D);
            float *q = malloc(sizeof(float) * (size_t)nq * (size_t)D), *sq = malloc(sizeof(float) * (size_t)nq * n);
            uint8_t *ca = malloc(bytes), *cb = malloc(bytes), *qbuf = malloc(qb * (size_t)nq);
            fill(x, n * (size_t)D, 71 + sp);
            for (size_t i = 0; i < n * (size_t)D; i += 37) /* spikes: outliers */
                x[i] *= 40.0f;
            fill(q, (size_t)nq * (size_t)D, 73 + sp);
            CHECK_OK(vq_codec_encode(a, x, n, ca));
            CHECK_OK(vq_codec_encode(b, x, n, cb));
            CHECKF(memcmp(ca, cb, bytes) == 0, "%s D=%d: other bytes than without qbits", qspec, D);
            CHECK_OK(vq_codec_decode(a, ca, n, dec));
            for (int j = 0; j < nq; j++)
                CHECK_OK(vq_codec_prepare_query(b, q + (size_t)j * D, qbuf + (size_t)j * qb));
            CHECK_OK(vq_codec_score(b, qbuf, nq, cb, n, sq));
            const int bits = specs[sp][11] - '0';
            const size_t blk_bytes = bytes / 2;
            double worst = 0.0;
            int ok = 1;
            for (size_t blk = 0; blk < 2; blk++) {
                const uint8_t *h = cb + blk * blk_bytes;
                for (int j = 0; j < nq; j++) {
                    float amax = 0.0f;
                    for (int c = 0; c < D; c++)
                        amax = fmaxf(amax, fabsf(q[(size_t)j * D + c] *
                                                 vq_fp16_to_fp32((vq_fp16)(h[2 * c] | h[2 * c + 1] << 8))));
                    const double bound = (double)D * ((1 << bits) - 1) * amax / 127.0 / 2.0;
                    for (size_t t = blk * B; t < (blk + 1) * B; t++) {
                        double ref = 0.0, mag = 0.0;
                        for (int c = 0; c < D; c++) {
                            ref += (double)q[(size_t)j * D + c] * dec[t * D + c];
                            mag += fabs((double)q[(size_t)j * D + c] * dec[t * D + c]);
                        }
                        const double err = fabs(sq[(size_t)j * n + t] - ref);
                        worst = fmax(worst, err / (bound + 1e-5 * mag + 1e-6));
                        ok &= err <= bound + 1e-5 * mag + 1e-6;
                    }
                }
            }
            CHECKF(ok, "%s D=%d: worst error %.3g of the bound", qspec, D, worst);
            free(x), free(dec), free(q), free(sq), free(ca), free(cb), free(qbuf);
            vq_codec_free(a), vq_codec_free(b);
        }
}

static void test_bad_params(void)
{
    static const char *bad[] = { "kivix:bits=0", "kivix:bits=9", "kivix:group=48", "kivix:outliers=-1",
                                 "kivix:bits=2,group=16,outliers=1025", "kivix:nosuch=1", "kivix:bits=5,qbits=8",
                                 "kivix:bits=3,nu=50,qbits=8", "kivix:bits=1,qbits=8" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vq_codec *c = NULL;
        vq_status st = vq_codec_create(bad[i], 64, VQ_ROLE_KEY, 1, &c);
        CHECKF(st != VQ_OK && c == NULL, "%s accepted", bad[i]);
    }
    vq_codec *c = NULL;
    CHECK(vq_codec_create("kivix:group=128", 64, VQ_ROLE_VALUE, 1, &c) != VQ_OK && strstr(vq_last_error(), "group"));
    CHECK(vq_codec_create("kivix:bits=2,group=16,outliers=65", 64, VQ_ROLE_VALUE, 1, &c) != VQ_OK &&
          strstr(vq_last_error(), "outliers"));
    static const char *badv[] = { "kivix:qbits=4", "kivix:bits=5,qbits=8", "kivix:bits=1,qbits=8",
                                  "kivix:bits=3,outliers=2,qbits=8", "kivix:bits=3,nu=50,qbits=8" };
    for (size_t i = 0; i < sizeof badv / sizeof *badv; i++)
        CHECKF(vq_codec_create(badv[i], 64, VQ_ROLE_VALUE, 1, &c) != VQ_OK && strstr(vq_last_error(), "qbits"),
               "%s accepted for values (or no message naming qbits: %s)", badv[i], vq_last_error());
    CHECK(vq_codec_create("kivix:bits=3,qbits=8", 96, VQ_ROLE_VALUE, 1, &c) != VQ_OK && strstr(vq_last_error(), "qbits"));
    CHECK(vq_codec_create("kivix:bits=3,qbits=8", 96, VQ_ROLE_KEY, 1, &c) != VQ_OK && strstr(vq_last_error(), "qbits"));
}

/* qbits=8 is the default where it is accepted (session 56): the canonical
 * spec names qbits there, 0 or 8, and nowhere else (bits 1 or 5-8, nu,
 * head_dim 96, values with outliers: float) */
static void test_qbits_default(void)
{
    static const struct { const char *spec; int D; vq_role role; const char *canon; } t[] = {
        { "kivix", 64, VQ_ROLE_KEY, "kivix:bits=3,group=32,outliers=0,qbits=8" },
        { "kivix", 128, VQ_ROLE_VALUE, "kivix:bits=3,group=32,outliers=0,qbits=8" },
        { "kivix:qbits=0", 64, VQ_ROLE_KEY, "kivix:bits=3,group=32,outliers=0,qbits=0" },
        { "kivix:outliers=8", 64, VQ_ROLE_KEY, "kivix:bits=3,group=32,outliers=8,qbits=8" },
        { "kivix:outliers=8", 64, VQ_ROLE_VALUE, "kivix:bits=3,group=32,outliers=8" },
        { "kivix", 96, VQ_ROLE_KEY, "kivix:bits=3,group=32,outliers=0" },
        { "kivix:bits=1", 64, VQ_ROLE_KEY, "kivix:bits=1,group=32,outliers=0" },
        { "kivix:bits=5", 64, VQ_ROLE_VALUE, "kivix:bits=5,group=32,outliers=0" },
        { "kivix:bits=2,nu=50", 64, VQ_ROLE_KEY, "kivix:bits=2,group=32,outliers=0,nu=50" },
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        vq_codec *c = make(t[i].spec, t[i].D, t[i].role);
        if (c)
            CHECKF(strcmp(vq_codec_spec(c), t[i].canon) == 0, "%s D=%d %s: %s", t[i].spec, t[i].D,
                   t[i].role == VQ_ROLE_KEY ? "keys" : "values", vq_codec_spec(c));
        vq_codec_free(c);
    }
}

/* float-query key scores (kivi_kdot, then the outlier table, or the
 * tile) against <q, decode(k)> in double, within 1e-5 of
 * sum |q| |k_hat|: spikes among the keys, so that outliers are taken;
 * two blocks and 1..5 queries per call */
static void test_float_key_scores(void)
{
    static const char *specs[] = { "kivix:bits=3,group=32,outliers=8,qbits=0", "kivix:bits=2,group=64,outliers=12,qbits=0",
                                   "kivix:bits=4,group=16,qbits=0", "kivix:bits=1,group=32,outliers=5",
                                   "kivix:bits=3,group=16,outliers=200,qbits=0", "kivix:bits=3,group=64,outliers=10,qbits=0" };
    for (size_t si = 0; si < sizeof specs / sizeof *specs; si++)
        for (int D = 64; D <= 128; D += 64)
            for (int nq = 1; nq <= 5; nq += 2) {
                vq_codec *c = make(specs[si], D, VQ_ROLE_KEY);
                if (!c)
                    continue;
                const size_t B = vq_codec_block_tokens(c), n = 2 * B, qb = vq_codec_query_bytes(c);
                float *x = malloc(sizeof(float) * n * (size_t)D), *xd = malloc(sizeof(float) * n * (size_t)D);
                float *q = malloc(sizeof(float) * (size_t)D * (size_t)nq), *s = malloc(sizeof(float) * n * (size_t)nq);
                uint8_t *codes = malloc(vq_codec_block_bytes(c) * 2), *qbuf = malloc(qb * (size_t)nq);
                fill(x, n * (size_t)D, 40 + si + (size_t)D);
                for (size_t i = 0; i < n * (size_t)D; i += 29) /* spikes */
                    x[i] *= 30.0f;
                fill(q, (size_t)D * (size_t)nq, 7 + (size_t)nq);
                CHECK_OK(vq_codec_encode(c, x, n, codes));
                CHECK_OK(vq_codec_decode(c, codes, n, xd));
                for (int j = 0; j < nq; j++)
                    CHECK_OK(vq_codec_prepare_query(c, q + (size_t)j * D, qbuf + (size_t)j * qb));
                CHECK_OK(vq_codec_score(c, qbuf, nq, codes, n, s));
                double worst = 0.0;
                for (int j = 0; j < nq; j++)
                    for (size_t t = 0; t < n; t++) {
                        double want = 0.0, mag = 0.0;
                        for (int d = 0; d < D; d++) {
                            want += (double)q[(size_t)j * D + d] * xd[t * (size_t)D + d];
                            mag += fabs((double)q[(size_t)j * D + d] * xd[t * (size_t)D + d]);
                        }
                        worst = fmax(worst, fabs(s[(size_t)j * n + t] - want) / (mag + 1e-30));
                    }
                CHECKF(worst <= 1e-5, "%s D=%d nq=%d: float key scores %g from <q, decode>", specs[si], D, nq, worst);
                free(x), free(xd), free(q), free(s), free(codes), free(qbuf);
                vq_codec_free(c);
            }
}

int main(void)
{
    RUN(test_bytes);
    RUN(test_matches_kivi);
    RUN(test_outliers_exact);
    RUN(test_quality);
    RUN(test_nonuniform_levels);
    RUN(test_greedy_reference);
    RUN(test_float_key_scores);
    RUN(test_qbits_default);
    RUN(test_qbits8_values);
    RUN(test_qbits8_keys);
    RUN(test_bad_params);
    return vq_test_summary("codec_kivix");
}
