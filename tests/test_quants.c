/* test_quants.c -- weight formats: dequantization against an independent
 * per-element reference written here from the byte layouts, activation
 * quantization error bounds, and every dot-product variant (scalar and, where
 * the CPU has it, AVX2 -- selected through vq_dot_variant, so one process
 * runs all paths) against vq_dot_ref, on random blocks built here.
 *
 * Thresholds, and why:
 *   DEQ_REL_TOL: the library and the reference below compute the same
 *     d*scale*q - dmin*min products in float in possibly different orders:
 *     a few ulps of the larger term, so 1e-6 relative.
 *   Activation quantization: rounding to nearest with step d = amax/127
 *     bounds each element's error by amax/254 (amax of its block).
 *   vq_dot vs vq_dot_ref: the difference is bounded by
 *       sum_i |w_i| * amax(block of i) / 254        (activation rounding)
 *     plus float accumulation error, bounded here by
 *       ACC_REL_TOL * sum_i |w_i| * |x_i|  (ACC_REL_TOL = 1e-5: n/32 float
 *     additions of partial sums at most 4096/32 = 128 deep, each 6e-8).
 *   vq_dot vs the exact dot of the dequantized weights with the dequantized
 *     (int8) activations: only the float accumulation term, so this checks
 *     the integer kernels exactly up to float rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "core/rng.h"
#include "model/gguf.h"
#include "model/quants.h"
#include "model/quants_impl.h"
#include "model/quants_x16.h"
#include "test.h"

#define DEQ_REL_TOL 1e-6
#define ACC_REL_TOL 1e-5

static const vq_wtype all_types[] = { VQ_W_F32, VQ_W_F16, VQ_W_BF16, VQ_W_Q4_0, VQ_W_Q4_1,
                                      VQ_W_Q5_0, VQ_W_Q5_1, VQ_W_Q8_0, VQ_W_Q2_K, VQ_W_Q3_K,
                                      VQ_W_Q4_K, VQ_W_Q5_K, VQ_W_Q6_K };
#define N_TYPES (sizeof all_types / sizeof *all_types)

/* ---- independent per-element reference (byte offsets from ggml-common.h) ---- */

static float half_at(const uint8_t *p) { return vq_fp16_to_fp32((uint16_t)(p[0] | p[1] << 8)); }
static int nib(const uint8_t *qs, int i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; }
static int bit(const uint8_t *bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

/* Q3_K scales via the 32-bit word shuffles of the original description. */
static int q3k_scale(const uint8_t *s12, int g)
{
    uint32_t aux[4];
    memcpy(aux, s12, 12);
    uint32_t tmp = aux[2];
    const uint32_t m1 = 0x03030303u, m2 = 0x0f0f0f0fu;
    aux[2] = ((aux[0] >> 4) & m2) | (((tmp >> 4) & m1) << 4);
    aux[3] = ((aux[1] >> 4) & m2) | (((tmp >> 6) & m1) << 4);
    aux[0] = (aux[0] & m2) | (((tmp >> 0) & m1) << 4);
    aux[1] = (aux[1] & m2) | (((tmp >> 2) & m1) << 4);
    uint8_t b[16];
    memcpy(b, aux, 16);
    return (int)b[g] - 32;
}

static void k4_pair(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Element i of one block, and the magnitude of its terms (for tolerances). */
static double ref_elem(vq_wtype t, const uint8_t *b, int i, double *mag)
{
    double d, m, v;
    int q, sc, mn;
    switch (t) {
    case VQ_W_Q4_0: d = half_at(b); v = d * (nib(b + 2, i) - 8); *mag = fabs(v); return v;
    case VQ_W_Q4_1:
        d = half_at(b), m = half_at(b + 2);
        *mag = fabs(d * nib(b + 4, i)) + fabs(m);
        return d * nib(b + 4, i) + m;
    case VQ_W_Q5_0:
        d = half_at(b);
        v = d * ((nib(b + 6, i) | bit(b + 2, i) << 4) - 16);
        *mag = fabs(v);
        return v;
    case VQ_W_Q5_1:
        d = half_at(b), m = half_at(b + 2);
        q = nib(b + 8, i) | bit(b + 4, i) << 4;
        *mag = fabs(d * q) + fabs(m);
        return d * q + m;
    case VQ_W_Q8_0: d = half_at(b); v = d * (int8_t)b[2 + i]; *mag = fabs(v); return v;
    case VQ_W_Q2_K: {
        int half = i / 128, j = (i % 128) / 32, l = i % 32, g = i / 16;
        q = (b[16 + 32 * half + l] >> (2 * j)) & 3;
        d = half_at(b + 80), m = half_at(b + 82);
        double a = d * (b[g] & 15) * q, c = m * (b[g] >> 4);
        *mag = fabs(a) + fabs(c);
        return a - c;
    }
    case VQ_W_Q3_K: {
        int half = i / 128, j = (i % 128) / 32, l = i % 32;
        q = ((b[32 + 32 * half + l] >> (2 * j)) & 3) - (((b[l] >> (4 * half + j)) & 1) ? 0 : 4);
        v = half_at(b + 108) * q3k_scale(b + 96, i / 16) * q;
        *mag = fabs(v);
        return v;
    }
    case VQ_W_Q4_K:
    case VQ_W_Q5_K: {
        int chunk = i / 64, l = i % 32, hi = (i % 64) / 32;
        const uint8_t *qs = b + (t == VQ_W_Q4_K ? 16 : 48);
        q = hi ? qs[32 * chunk + l] >> 4 : qs[32 * chunk + l] & 15;
        if (t == VQ_W_Q5_K)
            q += ((b[16 + l] >> (2 * chunk + hi)) & 1) * 16;
        k4_pair(b + 4, i / 32, &sc, &mn);
        double a = half_at(b) * sc * q, c = half_at(b + 2) * mn;
        *mag = fabs(a) + fabs(c);
        return a - c;
    }
    case VQ_W_Q6_K: {
        int half = i / 128, r = i % 128, k = r / 32, l = r % 32;
        uint8_t lb = b[64 * half + l + (k % 2) * 32];
        int lo = k < 2 ? lb & 15 : lb >> 4;
        int hi2 = (b[128 + 32 * half + l] >> (2 * k)) & 3;
        q = (lo | hi2 << 4) - 32;
        v = half_at(b + 208) * (int8_t)b[192 + i / 16] * q;
        *mag = fabs(v);
        return v;
    }
    case VQ_W_F32: {
        float f;
        memcpy(&f, b, 4);
        *mag = fabs(f);
        return f;
    }
    case VQ_W_F16: v = half_at(b); *mag = fabs(v); return v;
    case VQ_W_BF16: v = vq_bf16_to_fp32((uint16_t)(b[0] | b[1] << 8)); *mag = fabs(v); return v;
    default: *mag = 0; return 0;
    }
}

/* ---- random blocks -------------------------------------------------------------- */

static uint16_t rand_half(vq_rng *r, float lo, float hi, int allow_neg)
{
    float v = lo + (hi - lo) * vq_rng_uniform(r);
    if (allow_neg && (vq_rng_next(r) & 1))
        v = -v;
    return vq_fp32_to_fp16(v);
}

static void put_half(uint8_t *p, uint16_t h)
{
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Random codes (every byte random), then sane fp16 scale fields: scales in
 * [1e-3, 2e-2] (typical of real weights), mins of either sign. */
static void random_row(vq_wtype t, vq_rng *r, uint8_t *row, size_t n)
{
    size_t bytes = vq_wtype_row_bytes(t, n);
    for (size_t i = 0; i < bytes; i++)
        row[i] = (uint8_t)vq_rng_next(r);
    size_t bb = vq_wtype_block_bytes(t);
    for (size_t off = 0; off < bytes; off += bb) {
        uint8_t *b = row + off;
        switch (t) {
        case VQ_W_F32:
            for (size_t i = 0; i < bb; i += 4) {
                float f = vq_rng_normal(r);
                memcpy(b + i, &f, 4);
            }
            break;
        case VQ_W_F16: put_half(b, vq_fp32_to_fp16(vq_rng_normal(r))); break;
        case VQ_W_BF16: put_half(b, vq_fp32_to_bf16(vq_rng_normal(r))); break;
        case VQ_W_Q4_0: case VQ_W_Q5_0: case VQ_W_Q8_0:
            put_half(b, rand_half(r, 1e-3f, 2e-2f, 1));
            break;
        case VQ_W_Q4_1: case VQ_W_Q5_1:
            put_half(b, rand_half(r, 1e-3f, 2e-2f, 0));
            put_half(b + 2, rand_half(r, 0.0f, 0.2f, 1));
            break;
        case VQ_W_Q2_K:
            put_half(b + 80, rand_half(r, 1e-3f, 2e-2f, 0));
            put_half(b + 82, rand_half(r, 1e-3f, 2e-2f, 0));
            break;
        case VQ_W_Q3_K: put_half(b + 108, rand_half(r, 1e-3f, 2e-2f, 1)); break;
        case VQ_W_Q4_K: case VQ_W_Q5_K:
            put_half(b, rand_half(r, 1e-4f, 2e-3f, 0));
            put_half(b + 2, rand_half(r, 1e-4f, 2e-3f, 0));
            break;
        case VQ_W_Q6_K: put_half(b + 208, rand_half(r, 1e-4f, 2e-3f, 1)); break;
        default: break;
        }
    }
}

/* Activations like a hidden state: normal, with a few large outliers. */
static void random_x(vq_rng *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(r) * ((vq_rng_next(r) % 64) == 0 ? 8.0f : 1.0f);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_traits(void)
{
    for (size_t k = 0; k < N_TYPES; k++) {
        vq_wtype t = all_types[k];
        CHECKF(vq_wtype_supported(t), "%s not supported", vq_wtype_name(t));
        CHECK(vq_wtype_row_bytes(t, 256) == 256 / vq_wtype_block_elems(t) * vq_wtype_block_bytes(t));
        CHECK(vq_dot_variant(t, 0) != NULL);
    }
    CHECK(strcmp(vq_wtype_name(VQ_W_Q4_K), "Q4_K") == 0);
    CHECK(vq_wtype_block_bytes(4) == 0 && !vq_wtype_supported(4) && strcmp(vq_wtype_name(4), "?") == 0);
    CHECK(vq_wtype_block_bytes(1000) == 0 && vq_wtype_row_bytes(1000, 256) == 0);
    CHECK(vq_wtype_row_bytes(VQ_W_Q4_0, 33) == 0);
    CHECK(!vq_wtype_supported(16) && vq_wtype_block_bytes(16) == 66); /* IQ2_XXS: known, no kernels */
}

/* vq_dot_tile: every (row, vector) has the bits of vq_dot_multi over that
 * row with all m vectors (the 4x4 tile kernels repeat the single-row
 * arithmetic), for row and vector counts that leave every remainder */
static void test_dot_tile(void)
{
    vq_rng r;
    vq_rng_seed(&r, 23);
    static const size_t ns[] = { 576, 1056 };
    enum { NR = 9, NV = 11 };
    for (size_t in = 0; in < 2; in++) {
        size_t n = ns[in];
        for (size_t k = 0; k < N_TYPES; k++) {
            vq_wtype t = all_types[k];
            if (n % vq_wtype_block_elems(t))
                continue;
            size_t rb = vq_wtype_row_bytes(t, n), ab = vq_act_bytes(t, n);
            uint8_t *rows = malloc(rb * NR), *act = malloc(ab * NV);
            float *x = malloc(n * sizeof *x), out[NV * NR], col[NV];
            for (size_t i = 0; i < NR; i++)
                random_row(t, &r, rows + i * rb, n);
            for (size_t j = 0; j < NV; j++) {
                random_x(&r, x, n);
                vq_act_prepare(t, x, n, act + j * ab);
            }
            int bad = 0;
            for (size_t nr = 1; nr <= NR; nr += 2)
                for (size_t m = 1; m <= NV; m += 2) {
                    vq_dot_tile(t, rows, rb, nr, act, ab, m, n, out, NR);
                    for (size_t i = 0; i < nr; i++) {
                        vq_dot_multi(t, rows + i * rb, act, ab, m, n, col);
                        for (size_t j = 0; j < m; j++)
                            bad += memcmp(&out[j * NR + i], &col[j], sizeof col[j]) != 0;
                    }
                }
            CHECKF(bad == 0, "%s n=%zu: %d tile results differ from vq_dot_multi", vq_wtype_name(t), n, bad);
            free(rows), free(act), free(x);
        }
    }
}

static void test_dequantize_vs_reference(void)
{
    vq_rng r;
    vq_rng_seed(&r, 11);
    const size_t n = 512;
    uint8_t *row = malloc(vq_wtype_row_bytes(VQ_W_F32, n));
    float *y = malloc(n * sizeof *y);
    int rows = vq_test_quick() ? 4 : 40;
    for (size_t k = 0; k < N_TYPES; k++) {
        vq_wtype t = all_types[k];
        size_t be = vq_wtype_block_elems(t), bb = vq_wtype_block_bytes(t);
        int bad = 0;
        double worst = 0;
        for (int it = 0; it < rows; it++) {
            random_row(t, &r, row, n);
            vq_dequantize(t, row, y, n);
            for (size_t i = 0; i < n; i++) {
                double mag;
                double ref = ref_elem(t, row + i / be * bb, (int)(i % be), &mag);
                double err = fabs(y[i] - ref);
                if (err > DEQ_REL_TOL * mag + 1e-30)
                    bad++;
                worst = fmax(worst, err / (mag + 1e-30));
            }
        }
        CHECKF(bad == 0, "%s: %d elements differ from the reference (worst rel %.3g)",
               vq_wtype_name(t), bad, worst);
    }
    free(row);
    free(y);
}

static void test_act_quantization_bound(void)
{
    vq_rng r;
    vq_rng_seed(&r, 12);
    const size_t n = 1024;
    float x[1024];
    random_x(&r, x, n);
    x[5] = 0.0f;
    for (int i = 256; i < 512; i++)
        x[i] = 0.0f; /* an all-zero block */
    vq_act32 a32[1024 / 32];
    vq_act256 a256[1024 / 256];
    CHECK(vq_act_bytes(VQ_W_Q4_0, n) == sizeof a32 && vq_act_bytes(VQ_W_Q6_K, n) == sizeof a256);
    CHECK(vq_act_bytes(VQ_W_F16, n) == n * sizeof(float));
    vq_act_prepare(VQ_W_Q4_1, x, n, a32);
    vq_act_prepare(VQ_W_Q4_K, x, n, a256);
    int bad = 0;
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0;
        int sum = 0;
        for (int i = 0; i < 32; i++) {
            amax = fmaxf(amax, fabsf(x[32 * b + i]));
            sum += a32[b].qs[i];
        }
        for (int i = 0; i < 32; i++)
            if (fabsf(a32[b].d * a32[b].qs[i] - x[32 * b + i]) > amax / 254.0f * 1.0001f)
                bad++;
        CHECK_NEAR(a32[b].s, a32[b].d * sum, 1e-6 * fabs(a32[b].d * 32 * 127));
    }
    for (size_t b = 0; b < n / 256; b++) {
        float amax = 0;
        for (int i = 0; i < 256; i++)
            amax = fmaxf(amax, fabsf(x[256 * b + i]));
        for (int i = 0; i < 256; i++)
            if (fabsf(a256[b].d * a256[b].qs[i] - x[256 * b + i]) > amax / 254.0f * 1.0001f)
                bad++;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++)
                s += a256[b].qs[16 * g + i];
            CHECK(a256[b].bsums[g] == s);
        }
    }
    CHECKF(bad == 0, "%d activations outside the amax/254 bound", bad);
    CHECK(a256[1].d == 0.0f && a32[8].d == 0.0f);
}

/* Exact dot of dequantized weights with the dequantized activations. */
static double dot_dequant_act(vq_wtype t, const float *w, const void *act, const float *x, size_t n)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        double xa;
        switch (vq_act_kind_of(t)) {
        case VQ_ACT_Q32: {
            const vq_act32 *a = (const vq_act32 *)act + i / 32;
            xa = (double)a->d * a->qs[i % 32];
            break;
        }
        case VQ_ACT_Q256: {
            const vq_act256 *a = (const vq_act256 *)act + i / 256;
            xa = (double)a->d * a->qs[i % 256];
            break;
        }
        default: xa = x[i]; break;
        }
        acc += (double)w[i] * xa;
    }
    return acc;
}

static void test_dot_all_variants(void)
{
    vq_rng r;
    vq_rng_seed(&r, 13);
    /* 37: float types' tail loops; 96, 160: odd block counts (the AVX-512
     * kernels take blocks in pairs) */
    const size_t sizes[] = { 37, 96, 160, 256, 768, 4096 };
    const unsigned isas[] = { 0, VQ_CPU_AVX2, VQ_CPU_AVX512_VNNI };
    const char *isa_names[] = { "scalar", "avx2", "avx512vnni" };
    size_t nmax = 4096;
    uint8_t *row = malloc(vq_wtype_row_bytes(VQ_W_F32, nmax));
    float *x = malloc(nmax * sizeof *x), *w = malloc(nmax * sizeof *w);
    void *act = malloc(vq_act_bytes(VQ_W_F32, nmax));
    int trials = vq_test_quick() ? 3 : 25, variants_run = 0;
    for (size_t k = 0; k < N_TYPES; k++) {
        vq_wtype t = all_types[k];
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            if (n % vq_wtype_block_elems(t))
                continue;
            for (int it = 0; it < trials; it++) {
                random_row(t, &r, row, n);
                random_x(&r, x, n);
                vq_act_prepare(t, x, n, act);
                vq_dequantize(t, row, w, n);
                double ref = vq_dot_ref(t, row, x, n);
                double ref_act = dot_dequant_act(t, w, act, x, n);
                /* tolerance terms (see the header comment) */
                double act_err = 0, absprod = 0;
                size_t blk = vq_act_kind_of(t) == VQ_ACT_Q32 ? 32 : vq_act_kind_of(t) == VQ_ACT_Q256 ? 256 : 0;
                for (size_t i = 0; i < n; i++) {
                    absprod += fabs((double)w[i] * x[i]);
                    if (blk && i % blk == 0) {
                        double amax = 0;
                        for (size_t j = i; j < i + blk; j++)
                            amax = fmax(amax, fabs(x[j]));
                        for (size_t j = i; j < i + blk; j++)
                            act_err += fabs(w[j]) * amax / 254.0;
                    }
                }
                double acc_tol = ACC_REL_TOL * (absprod + act_err) + 1e-12;
                for (size_t v = 0; v < 3; v++) {
                    vq_dot_fn fn = vq_dot_variant(t, isas[v]);
                    if (!fn)
                        continue;
                    variants_run++;
                    double got = fn(row, act, n);
                    CHECKF(fabs(got - ref) <= act_err + acc_tol,
                           "%s/%s n=%zu: dot %.9g vs ref %.9g, |diff| %.3g > bound %.3g",
                           vq_wtype_name(t), isa_names[v], n, got, ref, fabs(got - ref),
                           act_err + acc_tol);
                    CHECKF(fabs(got - ref_act) <= acc_tol,
                           "%s/%s n=%zu: dot %.9g vs exact-with-int8-act %.9g, |diff| %.3g > %.3g",
                           vq_wtype_name(t), isa_names[v], n, got, ref_act, fabs(got - ref_act),
                           acc_tol);
                }
                /* the dispatched entry point is one of the variants */
                float disp = vq_dot(t, row, act, n);
                CHECKF(fabs(disp - ref_act) <= acc_tol, "%s: vq_dot dispatch", vq_wtype_name(t));
            }
        }
    }
    printf("dot: %d variant runs; dispatch uses %s; avx2 kernels for:", variants_run,
           vq_cpu_isa_name());
    for (size_t k = 0; k < N_TYPES; k++)
        if (vq_dot_variant(all_types[k], VQ_CPU_AVX2))
            printf(" %s", vq_wtype_name(all_types[k]));
    printf("\n");
    free(row);
    free(x);
    free(w);
    free(act);
}

/* vq_dot_multi against single vq_dot calls, for m = 1..9 (covers the
 * 4-vector kernels and the remainder path). Tolerance: both compute the same
 * integer sums; only float accumulation order may differ: ACC_REL_TOL of
 * 2 * sum|w*x| (x' = int8-dequantized x is within amax/254 of x). */
static void test_dot_multi(void)
{
    vq_rng r;
    vq_rng_seed(&r, 16);
    const size_t n = 1024, mmax = 9;
    uint8_t *row = malloc(vq_wtype_row_bytes(VQ_W_F32, n));
    float *x = malloc(n * mmax * sizeof *x), *w = malloc(n * sizeof *w);
    size_t stride = vq_act_bytes(VQ_W_F32, n) + 12; /* not the packed size: stride is honoured */
    uint8_t *act = malloc(stride * mmax);
    for (size_t k = 0; k < N_TYPES; k++) {
        vq_wtype t = all_types[k];
        random_row(t, &r, row, n);
        vq_dequantize(t, row, w, n);
        random_x(&r, x, n * mmax);
        for (size_t j = 0; j < mmax; j++)
            vq_act_prepare(t, x + j * n, n, act + j * stride);
        for (size_t m = 1; m <= mmax; m++) {
            float out[9];
            vq_dot_multi(t, row, act, stride, m, n, out);
            for (size_t j = 0; j < m; j++) {
                double single = vq_dot(t, row, act + j * stride, n);
                double absprod = 0;
                for (size_t i = 0; i < n; i++)
                    absprod += fabs((double)w[i] * x[j * n + i]);
                double tol = ACC_REL_TOL * 2 * absprod; /* 2x: act rounding can raise |x'| */
                CHECKF(fabs(out[j] - single) <= tol, "%s m=%zu j=%zu: multi %.9g vs single %.9g",
                       vq_wtype_name(t), m, j, out[j], single);
            }
        }
    }
    free(row);
    free(x);
    free(w);
    free(act);
}

/* vq_dot_rows: every row has vq_dot's bits (the 4-row kernels repeat the
 * single-row arithmetic), for row counts that leave every remainder and
 * odd block counts (n = 576: 18 blocks; 1056: 33) */
static void test_dot_rows(void)
{
    vq_rng r;
    vq_rng_seed(&r, 17);
    static const size_t ns[] = { 576, 1056 };
    for (size_t in = 0; in < 2; in++) {
        size_t n = ns[in], nrows = 11;
        for (size_t k = 0; k < N_TYPES; k++) {
            vq_wtype t = all_types[k];
            if (n % vq_wtype_block_elems(t))
                continue;
            size_t rb = vq_wtype_row_bytes(t, n);
            uint8_t *rows = malloc(rb * nrows), *act = malloc(vq_act_bytes(t, n));
            float *x = malloc(n * sizeof *x), out[11];
            for (size_t i = 0; i < nrows; i++)
                random_row(t, &r, rows + i * rb, n);
            random_x(&r, x, n);
            vq_act_prepare(t, x, n, act);
            for (size_t m = 1; m <= nrows; m += 3) {
                vq_dot_rows(t, rows, rb, m, act, n, out);
                for (size_t i = 0; i < m; i++) {
                    float single = vq_dot(t, rows + i * rb, act, n);
                    CHECKF(memcmp(&out[i], &single, sizeof single) == 0, "%s n=%zu rows=%zu row %zu: %.9g vs %.9g",
                           vq_wtype_name(t), n, m, i, out[i], single);
                }
            }
            free(rows), free(act), free(x);
        }
    }
}

/* Real weights: every tensor type in the two default models dequantizes to
 * finite values with a plausible RMS, and every dot variant agrees with the
 * reference on real rows (real scale/code distributions, not just random).
 * RMS range [1e-4, 10]: trained transformer weight matrices sit around
 * 1e-2..1e-1 (checked for quantized tensors only); a layout error gives garbage far
 * outside (or NaN) in most cases. Rows checked per tensor: up to 4. */
static void check_model_weights(const char *path)
{
    if (!path)
        return;
    vq_gguf *g = NULL;
    CHECK_OK(vq_gguf_open(path, &g, NULL));
    if (!g)
        return;
    vq_rng r;
    vq_rng_seed(&r, 15);
    int seen[64] = { 0 };
    size_t checked = 0;
    for (uint64_t ti = 0; ti < vq_gguf_n_tensors(g); ti++) {
        const vq_gguf_tensor *t = vq_gguf_tensor_at(g, ti);
        if (t->type >= 64 || seen[t->type] >= (vq_test_quick() ? 1 : 6))
            continue;
        seen[t->type]++;
        size_t n = (size_t)t->ne[0];
        uint64_t nrows = t->nbytes / vq_wtype_row_bytes(t->type, n);
        float *w = malloc(n * sizeof *w), *x = malloc(n * sizeof *x);
        void *act = malloc(vq_act_bytes((vq_wtype)t->type, n) + 64);
        for (int k = 0; k < 4 && (uint64_t)k < nrows; k++) {
            uint64_t row = vq_rng_next(&r) % nrows;
            const uint8_t *wr = (const uint8_t *)t->data + row * vq_wtype_row_bytes(t->type, n);
            vq_dequantize((vq_wtype)t->type, wr, w, n);
            double ss = 0, absw = 0;
            int finite = 1;
            for (size_t i = 0; i < n; i++) {
                finite &= isfinite(w[i]);
                ss += (double)w[i] * w[i];
                absw += fabs(w[i]);
            }
            double rms = sqrt(ss / n);
            int quantized = vq_act_kind_of((vq_wtype)t->type) != VQ_ACT_F32;
            /* float tensors (norm vectors: gemma3's reach rms ~50) only need to be finite */
            CHECKF(finite && (!quantized || (rms >= 1e-4 && rms <= 10)), "%.*s row %llu (%s): rms %g",
                   (int)t->name.len, t->name.ptr, (unsigned long long)row,
                   vq_wtype_name(t->type), rms);
            random_x(&r, x, n);
            vq_act_prepare((vq_wtype)t->type, x, n, act);
            double ref = vq_dot_ref((vq_wtype)t->type, wr, x, n);
            /* activation error bound with amax <= max|x| over the row */
            double amax = 0;
            for (size_t i = 0; i < n; i++)
                amax = fmax(amax, fabs(x[i]));
            int is_float = vq_act_kind_of((vq_wtype)t->type) == VQ_ACT_F32;
            double bound = (is_float ? 0 : absw * amax / 254.0) + ACC_REL_TOL * absw * amax;
            for (unsigned isa = 0; isa <= VQ_CPU_AVX2; isa += VQ_CPU_AVX2) {
                vq_dot_fn fn = vq_dot_variant((vq_wtype)t->type, isa);
                if (fn)
                    CHECKF(fabs(fn(wr, act, n) - ref) <= bound, "%s isa %u on real row: %g vs %g",
                           vq_wtype_name(t->type), isa, fn(wr, act, n), ref);
            }
            checked++;
        }
        free(w);
        free(x);
        free(act);
    }
    printf("%s: checked %zu real rows\n", path, checked);
    vq_gguf_close(g);
}

static void test_real_weights(void)
{
    check_model_weights(vq_test_model("smollm2-135m"));
    check_model_weights(vq_test_model("gemma3-270m"));
}

/* The AVX-512 and AVX2 activation quantizers write the reference's bytes: random
 * blocks at scales from 2^-140 (subnormal) to 2^100, codes landing on
 * halves (round to even), all-zero blocks, and NaN / infinities in place. */
static void test_act_quantize32_twin(void)
{
    const unsigned f = vq_cpu_features();
    if (!(f & (VQ_CPU_AVX512_VNNI | VQ_CPU_AVX2))) {
        printf("  (no AVX2: twins not run)\n");
        return;
    }
    vq_rng r;
    vq_rng_seed(&r, 31);
    enum { N = 32 * 64 };
    static float x[N];
    static vq_act32 a[N / 32], b[N / 32];
    int diff = 0, diff2 = 0;
    for (int round = 0; round < 200; round++) {
        for (size_t blk = 0; blk < N / 32; blk++) {
            const int e = (int)((uint32_t)vq_rng_next(&r) % 241) - 140;
            for (int i = 0; i < 32; i++) {
                float v = ldexpf(vq_rng_uniform(&r) * 2.0f - 1.0f, e);
                if (blk % 7 == 3) /* halves of the step: ties to even */
                    v = ldexpf((float)((int)((uint32_t)vq_rng_next(&r) % 255) - 127) * 0.5f, e);
                x[32 * blk + i] = blk % 11 == 5 ? 0.0f : v;
            }
            if (blk % 13 == 4)
                x[32 * blk + (uint32_t)vq_rng_next(&r) % 32] = NAN;
            if (blk % 17 == 8)
                x[32 * blk + (uint32_t)vq_rng_next(&r) % 32] = ((uint32_t)vq_rng_next(&r) & 1) ? INFINITY : -INFINITY;
        }
        /* every block, or a count that leaves the AVX-512 twin's groups of
         * 16 blocks a remainder (13 blocks past its last group) */
        const size_t n = round % 2 ? N : N - 32 * 19, nbytes = n / 32 * sizeof a[0];
        vq_act_quantize32(x, n, a);
        if (f & VQ_CPU_AVX512_VNNI) {
            vq_act_quantize32_avx512x(x, n, b);
            diff += memcmp(a, b, nbytes) != 0;
        }
        vq_act_quantize32_avx2(x, n, b);
        diff2 += memcmp(a, b, nbytes) != 0;
    }
    CHECKF(diff == 0, "AVX-512: %d of 200 rounds differ from the reference's bytes", diff);
    CHECKF(diff2 == 0, "AVX2: %d of 200 rounds differ from the reference's bytes", diff2);
}

/* The 16-row interleaved Q4_0 / Q4_1 / Q8_0 layout (model/quants_x16.h):
 * the repacked bytes sit where the header's formula says, and every row
 * reads back (vq_x16_dequantize_row) as vq_dequantize's floats of the
 * file's row; the reference equals
 * vq_dot up to float rounding (the same integer sums, another order:
 * ACC_REL_TOL of 2 sum|w x'|); the dispatched kernels (AVX-512 VNNI or
 * AVX2 where the CPU has it) equal the reference to the bit for every (row,
 * vector), through vq_x16_rows and vq_x16_tile with 1..6 vectors, on random
 * rows and on the extreme ones (every code 15 against every activation
 * +-127: the AVX2 kernel's int16 sums at their largest; Q8_0: every code
 * -128, whose magnitude only fits unsigned); bad shapes and types are
 * refused. */
static void test_x16(void)
{
    vq_rng r;
    vq_rng_seed(&r, 29);
    static const size_t ns[] = { 576, 1056 };
    static const vq_wtype ts[] = { VQ_W_Q4_0, VQ_W_Q4_1, VQ_W_Q8_0, VQ_W_Q5_0 };
    enum { NR = 48, NV = 6 };
    const unsigned f = vq_cpu_features();
    printf("  (x16 kernels: %s)\n", !vq_x16_available(VQ_W_Q4_1)  ? "reference only"
                                    : (f & VQ_CPU_AVX512_VNNI) ? "AVX-512 VNNI"
                                                               : "AVX2");
    for (size_t in = 0; in < 2; in++)
        for (size_t k = 0; k < 4; k++) {
            const vq_wtype t = ts[k];
            const size_t n = ns[in], rb = vq_wtype_row_bytes(t, n), ab = vq_act_bytes(t, n), bb = rb / (n / 32);
            uint8_t *rows = malloc(rb * NR), *x16 = malloc(rb * NR), *act = malloc(ab * NV);
            float *x = malloc(n * sizeof *x), *w = malloc(n * sizeof *w), *w2 = malloc(n * sizeof *w2);
            float out[NR], ref[NV][NR], tile[NV * NR];
            for (size_t i = 0; i < NR; i++)
                random_row(t, &r, rows + i * rb, n);
            for (size_t j = 0; j < NV; j++) {
                random_x(&r, x, n);
                vq_act_prepare(t, x, n, act + j * ab);
            }
            CHECK(vq_x16_repack(t, rows, NR, rb, x16) == 1);
            CHECK(vq_x16_repack(t, rows, NR - 8, rb, x16 + rb) == 0); /* not whole groups */
            CHECK(vq_x16_repack(VQ_W_Q5_1, rows, NR, rb, x16 + rb) == 0);
            /* the layout */
            int moved = 0;
            for (size_t i = 0; i < NR; i++)
                for (size_t b = 0; b < n / 32; b++) {
                    const uint8_t *src = rows + i * rb + b * bb, *o = x16 + (i / 16) * 16 * rb + b * 16 * bb;
                    const size_t rr = i % 16, nq = t == VQ_W_Q8_0 ? 32 : 16;
                    const size_t co = t == VQ_W_Q4_1 ? 64 : t == VQ_W_Q5_0 ? 96 : 32;
                    moved += memcmp(o + 2 * rr, src, 2) != 0;
                    if (t == VQ_W_Q4_1)
                        moved += memcmp(o + 32 + 2 * rr, src + 2, 2) != 0;
                    for (size_t e = 0; t == VQ_W_Q5_0 && e < 32; e++) { /* element e's fifth bit */
                        const size_t j = e % 16, wb = 8 * (j % 4) + 2 * (j / 4) + e / 16;
                        moved += (src[2 + e / 8] >> (e % 8) & 1) != (o[32 + 4 * rr + wb / 8] >> (wb % 8) & 1);
                    }
                    for (size_t jb = 0; jb < nq; jb++)
                        moved += o[co + (jb / 4) * 64 + 4 * rr + jb % 4] != src[bb - nq + jb];
                }
            CHECKF(moved == 0, "%s n=%zu: %d bytes not where the layout says", vq_wtype_name(t), n, moved);
            /* every row read back */
            int rowbad = 0;
            for (size_t i = 0; i < NR; i++) {
                vq_dequantize(t, rows + i * rb, w, n);
                memset(w2, 0xAA, n * sizeof *w2);
                rowbad += vq_x16_dequantize_row(t, x16, rb, i, n, w2) != 1 || memcmp(w, w2, n * sizeof *w) != 0;
            }
            CHECKF(rowbad == 0, "%s n=%zu: %d rows read back unlike vq_dequantize", vq_wtype_name(t), n, rowbad);
            CHECK(vq_x16_dequantize_row(t, x16, rb + 1, 0, n, w2) == 0);
            CHECK(vq_x16_dequantize_row(VQ_W_Q5_1, x16, rb, 0, n, w2) == 0);
            /* the reference against vq_dot */
            for (size_t j = 0; j < NV; j++) {
                for (size_t g = 0; g < NR / 16; g++)
                    vq_x16_rows16_ref(t, x16 + g * 16 * rb, act + j * ab, n, ref[j] + 16 * g);
                for (size_t i = 0; i < NR; i++) {
                    const double single = vq_dot(t, rows + i * rb, act + j * ab, n);
                    vq_dequantize(t, rows + i * rb, w, n);
                    double absprod = 0;
                    const vq_act32 *a = (const vq_act32 *)(const void *)(act + j * ab);
                    for (size_t e = 0; e < n; e++)
                        absprod += fabs((double)w[e] * a[e / 32].d * a[e / 32].qs[e % 32]);
                    CHECKF(fabs(ref[j][i] - single) <= ACC_REL_TOL * 2 * absprod + 1e-30,
                           "%s n=%zu row %zu vector %zu: x16 reference %.9g vs vq_dot %.9g", vq_wtype_name(t), n, i,
                           j, ref[j][i], single);
                }
            }
            /* the dispatched kernels: the reference's bits */
            int bad = 0;
            for (size_t j = 0; j < NV; j++) {
                vq_x16_rows(t, x16, rb, NR, act + j * ab, n, out);
                bad += memcmp(out, ref[j], sizeof out) != 0;
            }
            for (size_t m = 1; m <= NV; m++) {
                vq_x16_tile(t, x16, rb, NR, act, ab, m, n, tile, NR);
                for (size_t j = 0; j < m; j++)
                    bad += memcmp(tile + j * NR, ref[j], sizeof ref[j]) != 0;
            }
            CHECKF(bad == 0, "%s n=%zu: %d kernel outputs differ from the reference's bits", vq_wtype_name(t), n, bad);
            /* each variant this CPU runs, called directly (the dispatch takes only the best) */
            typedef void tile16_fn(int, const void *, const void *, size_t, int, size_t, float *, size_t);
            tile16_fn *const variants[2] = {
                (f & VQ_CPU_AVX2) ? vq_x16_tile16_avx2 : NULL,
                (f & VQ_CPU_AVX512_VNNI) ? vq_x16_tile16_avx512x : NULL,
            };
            int vbad = 0;
            for (int v = 0; v < 2; v++)
                for (int m = 1; variants[v] && m <= 4; m++)
                    for (size_t g = 0; g < NR / 16; g++) {
                        variants[v](vq_x16_kind(t), x16 + g * 16 * rb, act, ab, m, n, tile, NR);
                        for (int j = 0; j < m; j++)
                            vbad += memcmp(tile + (size_t)j * NR, ref[j] + 16 * g, 16 * sizeof(float)) != 0;
                    }
            CHECKF(vbad == 0, "%s n=%zu: %d direct variant outputs differ from the reference's bits", vq_wtype_name(t),
                   n, vbad);
            /* extremes: the first group's codes all 15 (Q5_0: 31; Q8_0: -128), vectors all +1 / -1 (codes +-127) */
            for (size_t i = 0; i < 16; i++)
                for (size_t b = 0; b < n / 32; b++) {
                    if (t == VQ_W_Q8_0)
                        memset(rows + i * rb + b * bb + 2, 0x80, 32);
                    else
                        memset(rows + i * rb + b * bb + (t == VQ_W_Q5_0 ? 2 : bb - 16), 0xff, t == VQ_W_Q5_0 ? 20 : 16);
                }
            CHECK(vq_x16_repack(t, rows, NR, rb, x16) == 1);
            for (size_t j = 0; j < 2; j++) {
                for (size_t e = 0; e < n; e++)
                    x[e] = j ? -1.0f : 1.0f;
                vq_act_prepare(t, x, n, act + j * ab);
                CHECK(((const vq_act32 *)(const void *)(act + j * ab))->qs[0] == (j ? -127 : 127));
                vq_x16_rows16_ref(t, x16, act + j * ab, n, ref[j]);
            }
            vq_x16_tile(t, x16, rb, 16, act, ab, 2, n, tile, 16);
            for (size_t j = 0; j < 2; j++)
                CHECKF(memcmp(tile + 16 * j, ref[j], 16 * sizeof(float)) == 0,
                       "%s n=%zu extreme vector %zu: %.9g vs the reference's %.9g", vq_wtype_name(t), n, j,
                       tile[16 * j], ref[j][0]);
            free(rows), free(x16), free(act), free(x), free(w), free(w2);
        }
}

int main(void)
{
    RUN(test_traits);
    RUN(test_dequantize_vs_reference);
    RUN(test_act_quantization_bound);
    RUN(test_act_quantize32_twin);
    RUN(test_dot_all_variants);
    RUN(test_dot_multi);
    RUN(test_dot_rows);
    RUN(test_dot_tile);
    RUN(test_x16);
    RUN(test_real_weights);
    return vq_test_summary("quants");
}
