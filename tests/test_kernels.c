/* test_kernels.c -- every SIMD kernel table (kernels.h) against the scalar
 * references, on fresh random data with odd sizes, partial tiles and
 * unaligned pointers:
 *   dense dot/axpy: relative error <= 2e-6 of the largest output (float
 *     sums in another order); dot batch-invariant (a score is the same
 *     bits whatever the tile size and the other queries); AVX2 and AVX-512
 *     axpy bit-identical;
 *   fp16 rows (all 65536 halves), q8_0/q4_0 block values, lut rows (bits
 *     1..4, with and without add), kivi rows (bits 2, 4): bit-identical,
 *     except that a signalling NaN half comes out quiet;
 *   codes_dot, codes_dot_pair: relative error <= 4e-6 (float sums in
 *     another order);
 *   bitdot (popcounts; every query width 1..8): equal integers (the AVX2
 *     table holds the nibble-table / POPCNT twin, the AVX-512 table the
 *     VPOPCNTDQ one when the CPU has it);
 *     signscore (its counts combined in float, one or two bit sets; the
 *     AVX-512 popcount and nibble-table variants both): bit-identical;
 *     the nibble tables against their definition;
 *   ftab_score (float tables of four signs, one or two sets, m up to
 *     1024): bit-identical; the reference within 1e-5 of <y, signs>; over
 *     level tables of 1-, 2-, 4-bit codes bit-identical and within 1e-5
 *     of sum y lut[c];
 *   dense dot/axpy on IEEE half rows: relative error <= 2e-6, and the
 *     bits of fp16_row into a tile, then the float kernels (tables with
 *     dense_f16, E a multiple of 8; else the reference's bits);
 *   dense dot/axpy on q8_0 / q4_0 block rows: relative error <= 2e-6, and
 *     (tables with dense_q) the bits of the block values into a tile, then
 *     the float kernels;
 *   codes_qdot (KIVI codes against int8 queries; prepared queries): the
 *     reference's bits (exact integer sums, one multiply);
 *     its reference against codes_dot with the dequantized query;
 *   lut_axpy (code levels summed in registers, one or two sets): the
 *     reference's bits, and within 2e-6 of lut_row + dense_axpy;
 *   pq_score (product-quantized keys against float tables, M 1..64, K 4
 *     to 256, with and without work): bit-identical; the reference the
 *     entries' sums in order;
 *   outlier_adds (kivix's outlier corrections: head_dim 8..256, 1-8-bit
 *     codes, entries past the block, repeated tokens): the reference's
 *     bits; the reference within 1e-5 of double-precision sums;
 *   pq_axpy (product-quantized rows: per-piece centroids summed in
 *     registers): the reference's bits, the reference's fmaf sums, and
 *     within 2e-6 of the centroids in a tile + dense_axpy;
 *   kivi_axpy (KIVI value rows decoded in registers): relative error
 *     <= 2e-6, and the bits of kivi_group_row + dense_axpy;
 *   kivi_qaxpy (the same with int8 weights): the reference's bits, and
 *     the reference within its rounding bound of kivi_axpy;
 *   lut_qaxpy (lut_axpy's sums with int8 weights and int8 levels): the
 *     reference's bits, and the reference within its rounding bound of
 *     lut_axpy with the float levels;
 *   qaxpy (q8_0 / q4_0 rows decoded in registers): relative error <= 2e-6,
 *     and the tiled path's bits (block values, then dense_axpy);
 *   qaxpy8 (the same with int8 weights): the reference's bits, and the
 *     reference within its rounding bound of qaxpy;
 *   qdot (int8 queries against q8_0 / q4_0 rows): relative error <= 2e-6
 *     (exact integer sums, float sums over blocks in another order), and
 *     the reference's bits for D <= 256 (every variant keeps its order); the
 *     reference itself against a double-precision dot of the decoded rows
 *     with the dequantized query, and the query's rounding bound;
 *   fwht (every power of two 1..1024 and three times 16..512, unaligned),
 *   flip_signs (counts 1..300, unaligned): the reference's bits; the
 *     reference flip against a sign copy per element. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "core/cpu.h"
#include "core/fp16.h"
#include "core/rng.h"
#include "kernels/kernels.h"
#include "test.h"

#define DENSE_TOL 2e-6

static void fill(float *x, size_t n, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(&r);
}

static void fill_bytes(uint8_t *x, size_t n, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (uint8_t)(vq_rng_next(&r) >> 56);
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0.0, m = 1e-30;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

static void test_dense(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Es[] = { 8, 24, 32, 48, 64, 72, 128, 256, 512 };
    for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
        for (size_t nt = 1; nt <= 19; nt += 3)
            for (int nq = 1; nq <= 7; nq += 2) {
                size_t E = Es[ie], qs = E + 3, ss = nt + 5;
                /* +1: the kernels get unaligned pointers */
                float *q = malloc(sizeof(float) * (qs * (size_t)nq + 1)), *v = malloc(sizeof(float) * (E * nt + 1));
                float *s1 = calloc(ss * (size_t)nq, sizeof(float)), *s2 = calloc(ss * (size_t)nq, sizeof(float));
                float *a1 = malloc(sizeof(float) * qs * (size_t)nq), *a2 = malloc(sizeof(float) * qs * (size_t)nq);
                float *w = malloc(sizeof(float) * ss * (size_t)nq);
                fill(q + 1, qs * (size_t)nq, E + nt);
                fill(v + 1, E * nt, 7 * E + nt);
                fill(w, ss * (size_t)nq, 3 * E + nt);
                ref->dense_dot(q + 1, qs, nq, v + 1, VQ_ELEM_F32, nt, E, s1, ss);
                k->dense_dot(q + 1, qs, nq, v + 1, VQ_ELEM_F32, nt, E, s2, ss);
                CHECKF(rel_diff(s2, s1, ss * (size_t)nq) <= DENSE_TOL, "%s dot E=%zu nt=%zu nq=%d: rel %g", k->isa, E,
                       nt, nq, rel_diff(s2, s1, ss * (size_t)nq));
                /* batch invariance: the last row scored alone, one query */
                float alone = 0.0f;
                k->dense_dot(q + 1 + (size_t)(nq - 1) * qs, qs, 1, v + 1 + (nt - 1) * E, VQ_ELEM_F32, 1, E, &alone, 1);
                CHECKF(memcmp(&alone, &s2[(size_t)(nq - 1) * ss + nt - 1], sizeof alone) == 0,
                       "%s dot not batch-invariant E=%zu nt=%zu nq=%d", k->isa, E, nt, nq);
                fill(a1, qs * (size_t)nq, 11 * E + nt);
                memcpy(a2, a1, sizeof(float) * qs * (size_t)nq);
                ref->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F32, nt, E, a1, qs);
                k->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F32, nt, E, a2, qs);
                CHECKF(rel_diff(a2, a1, qs * (size_t)nq) <= DENSE_TOL, "%s axpy E=%zu nt=%zu nq=%d: rel %g", k->isa,
                       E, nt, nq, rel_diff(a2, a1, qs * (size_t)nq));
                const vq_kernels *avx2 = vq_kernels_variant("avx2");
                if (avx2 && k != avx2) {
                    fill(a1, qs * (size_t)nq, 11 * E + nt);
                    memcpy(a2, a1, sizeof(float) * qs * (size_t)nq);
                    avx2->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F32, nt, E, a1, qs);
                    k->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F32, nt, E, a2, qs);
                    CHECKF(same_bits(a1, a2, qs * (size_t)nq), "%s axpy differs from avx2 E=%zu nt=%zu nq=%d",
                           k->isa, E, nt, nq);
                }
                free(q), free(v), free(s1), free(s2), free(a1), free(a2), free(w);
            }
}

static void test_fp16_rows(const vq_kernels *k, const vq_kernels *ref)
{
    size_t n = 65536;
    uint8_t *src = malloc(2 * n + 1);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) {
        src[1 + 2 * i] = (uint8_t)i;
        src[1 + 2 * i + 1] = (uint8_t)(i >> 8);
    }
    size_t lens[] = { n, 1, 15, 17, 33 };
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        ref->fp16_row(src + 1, a, lens[li]);
        k->fp16_row(src + 1, b, lens[li]);
        size_t bad = 0;
        for (size_t i = 0; i < lens[li]; i++) {
            uint32_t x, y;
            memcpy(&x, &a[i], 4);
            memcpy(&y, &b[i], 4);
            int snan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) && !(i & 0x200);
            if (x != y && !(snan && (x | 0x400000u) == y))
                bad++;
        }
        CHECKF(bad == 0, "%s fp16_row n=%zu: %zu values differ", k->isa, lens[li], bad);
    }
    free(src), free(a), free(b);
}

/* fp16_from_row: the reference's bytes for every half's value and the
 * float patterns around it (the rounding ties and their neighbours, and
 * from the NaN halves quiet and signalling NaNs with payloads), odd
 * lengths, an unaligned destination */
static void test_fp16_from_rows(const vq_kernels *k, const vq_kernels *ref)
{
    static const int32_t near[] = { 0, 1, -1, 0x1000, -0x1000, 0xfff, 0x1001, 0x400000, 0x7fffff };
    const size_t nn = sizeof near / sizeof *near, n = 65536 * nn;
    float *x = malloc(n * sizeof *x);
    uint8_t *a = malloc(2 * n + 1), *b = malloc(2 * n + 1);
    for (size_t h = 0; h < 65536; h++)
        for (size_t j = 0; j < nn; j++) {
            const float f = vq_fp16_to_fp32((vq_fp16)h);
            uint32_t u;
            memcpy(&u, &f, 4);
            u = (uint32_t)((int64_t)u + near[j]);
            memcpy(&x[h * nn + j], &u, 4);
        }
    size_t lens[] = { 1, 7, 9, 17, 33, n }; /* n last: the check below reads its run */
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        memset(a, 0xA5, 2 * n + 1), memset(b, 0xA5, 2 * n + 1);
        ref->fp16_from_row(x, a + 1, lens[li]);
        k->fp16_from_row(x, b + 1, lens[li]);
        size_t bad = 0;
        for (size_t i = 0; i < 2 * n + 1; i++)
            bad += a[i] != b[i];
        CHECKF(bad == 0, "%s fp16_from_row n=%zu: %zu bytes differ", k->isa, lens[li], bad);
    }
    for (size_t i = 0; i < n; i++) /* and the reference is vq_fp32_to_fp16 */
        if ((a[1 + 2 * i] | a[2 + 2 * i] << 8) != vq_fp32_to_fp16(x[i])) {
            CHECKF(0, "fp16_from_row_ref differs from vq_fp32_to_fp16 at %zu", i);
            break;
        }
    free(x), free(a), free(b);
}

static void test_qblocks(const vq_kernels *k, const vq_kernels *ref)
{
    enum { NB = 37 };
    uint8_t b8[NB * 34 + 1], b4[NB * 18 + 1];
    float r[NB * 32], s[NB * 32];
    fill_bytes(b8, sizeof b8, 5);
    fill_bytes(b4, sizeof b4, 6);
    for (int i = 0; i < NB; i++) { /* finite scales */
        b8[1 + 34 * i + 1] &= 0x3b;
        b4[1 + 18 * i + 1] &= 0x3b;
    }
    ref->q8_0_values(b8 + 1, NB, r);
    k->q8_0_values(b8 + 1, NB, s);
    CHECKF(same_bits(r, s, NB * 32), "%s q8_0 values differ", k->isa);
    ref->q4_0_values(b4 + 1, NB, r);
    k->q4_0_values(b4 + 1, NB, s);
    CHECKF(same_bits(r, s, NB * 32), "%s q4_0 values differ", k->isa);
}

static void test_rows(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ns[] = { 16, 32, 48, 64, 128, 256 };
    for (int bits = 1; bits <= 4; bits++)
        for (size_t in = 0; in < sizeof Ns / sizeof *Ns; in++)
            for (int add = 0; add <= 1; add++) {
                size_t n = Ns[in];
                uint8_t codes[128 + 1];
                float lut[16], r[256], s[256];
                fill_bytes(codes, sizeof codes, (uint64_t)(bits * 1000 + (int)n + add));
                fill(lut, 16, (uint64_t)bits);
                fill(r, n, n);
                memcpy(s, r, n * sizeof *r);
                ref->lut_row(codes + 1, bits, n, lut, 0.37f, add, r);
                k->lut_row(codes + 1, bits, n, lut, 0.37f, add, s);
                CHECKF(same_bits(r, s, n), "%s lut_row bits=%d n=%zu add=%d differs", k->isa, bits, n, add);
                if (!add) { /* kivi_row, kivi_group_row: widths 1..4 */
                    float sc[256], mn[256];
                    fill(sc, n, 17 + n);
                    fill(mn, n, 19 + n);
                    ref->kivi_row(codes + 1, bits, n, sc, mn, r);
                    k->kivi_row(codes + 1, bits, n, sc, mn, s);
                    CHECKF(same_bits(r, s, n), "%s kivi_row bits=%d n=%zu differs", k->isa, bits, n);
                    uint8_t h16[2 * 16 + 1], m16[2 * 16 + 1]; /* n/g <= 16 halves, finite */
                    fill_bytes(h16, sizeof h16, 23 + n);
                    fill_bytes(m16, sizeof m16, 29 + n);
                    for (int q = 0; q < 16; q++)
                        h16[1 + 2 * q + 1] &= 0x3b, m16[1 + 2 * q + 1] &= 0xbb;
                    for (size_t g = 16; g <= n; g *= 2) {
                        if (n % g)
                            continue;
                        ref->kivi_group_row(codes + 1, bits, n, g, h16 + 1, m16 + 1, r);
                        k->kivi_group_row(codes + 1, bits, n, g, h16 + 1, m16 + 1, s);
                        CHECKF(same_bits(r, s, n), "%s kivi_group_row bits=%d n=%zu g=%zu differs", k->isa, bits, n, g);
                    }
                }
            }
}

/* lut8_row on random codes of every width, odd lengths (tails) and
 * unaligned pointers: the reference's bits */
static void test_lut8_row(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ns[] = { 1, 15, 16, 33, 64, 200 };
    for (int bits = 1; bits <= 8; bits++)
        for (size_t in = 0; in < sizeof Ns / sizeof *Ns; in++) {
            size_t n = Ns[in];
            uint8_t c8[201];
            float lut[256], sc[201], mn[201], r[200], s[200];
            fill_bytes(c8, sizeof c8, (uint64_t)(bits * 100 + (int)n));
            for (size_t i = 0; i < n + 1; i++)
                c8[i] &= (uint8_t)((1u << bits) - 1u);
            fill(lut, 256, (uint64_t)bits + 7);
            fill(sc, n + 1, 31 + n);
            fill(mn, n + 1, 37 + n);
            ref->lut8_row(c8 + 1, n, lut, sc + 1, mn + 1, r);
            k->lut8_row(c8 + 1, n, lut, sc + 1, mn + 1, s);
            CHECKF(same_bits(r, s, n), "%s lut8_row bits=%d n=%zu differs", k->isa, bits, n);
            /* lut NULL: the code itself, as a table of lut[c] = c */
            for (int c = 0; c < 256; c++)
                lut[c] = (float)c;
            ref->lut8_row(c8 + 1, n, lut, sc + 1, mn + 1, r);
            k->lut8_row(c8 + 1, n, NULL, sc + 1, mn + 1, s);
            CHECKF(same_bits(r, s, n), "%s lut8_row (identity) bits=%d n=%zu differs", k->isa, bits, n);
            ref->lut8_row(c8 + 1, n, NULL, sc + 1, mn + 1, s);
            CHECKF(same_bits(r, s, n), "lut8_row_ref (identity) bits=%d n=%zu differs", bits, n);
        }
}

static void test_bitdot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256 };
    for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
        for (size_t n = 1; n <= 21; n += 5)
            for (int nq = 1; nq <= 17; nq += nq < 5 ? 2 : 12) /* 17: past the AVX2 pass of 16 */
                for (int qbits = 1; qbits <= 8; qbits++) { /* every width: 1..4 the nibble path */
                    size_t D = Ds[id], stride = D / 8 + 4, qstride = (size_t)qbits * D / 8 + 12;
                    uint8_t *codes = malloc(stride * n + 1), *planes = malloc(qstride * (size_t)nq + 1);
                    uint32_t *z1 = malloc(n * 4), *z2 = malloc(n * 4);
                    uint32_t *p1 = malloc(n * (size_t)nq * 4), *p2 = malloc(n * (size_t)nq * 4);
                    fill_bytes(codes, stride * n + 1, D + n);
                    fill_bytes(planes, qstride * (size_t)nq + 1, D * 3 + (size_t)qbits);
                    ref->bitdot(codes + 1, stride, n, D, planes + 1, qstride, nq, qbits, z1, p1);
                    k->bitdot(codes + 1, stride, n, D, planes + 1, qstride, nq, qbits, z2, p2);
                    CHECKF(memcmp(z1, z2, n * 4) == 0 && memcmp(p1, p2, n * (size_t)nq * 4) == 0,
                           "%s bitdot D=%zu n=%zu nq=%d qbits=%d differs", k->isa, D, n, nq, qbits);
                    free(codes), free(planes), free(z1), free(z2), free(p1), free(p2);
                }
}

/* the nibble tables (kernels/nibble_tables.h) of a query's levels, read
 * back from its qbits planes of D/8 bytes, at tables */
static void planes_tables(const uint8_t *planes, size_t D, int qbits, uint8_t *tables)
{
    uint8_t *v = malloc(D);
    for (size_t d = 0; d < D; d++) {
        unsigned u = 0;
        for (int j = 0; j < qbits; j++)
            u |= (unsigned)(planes[(size_t)j * (D / 8) + d / 8] >> (d % 8) & 1u) << j;
        v[d] = (uint8_t)u;
    }
    vq_nibble_tables(v, D, tables);
    free(v);
}

/* qplanes against the reference: the same bytes (levels, planes, nibble
 * tables, header) for every head size, query width and kind of vector:
 * normal draws, levels on their half points (the rounding ties), the
 * extremes repeated, zeros of both signs as the extremes, all equal */
static void test_qplanes(const vq_kernels *k, const vq_kernels *ref)
{
    static const int Ds[] = { 32, 64, 96, 128, 160, 256, 512 };
    for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
        for (int qbits = 1; qbits <= 8; qbits++)
            for (int kind = 0; kind < 6; kind++) {
                const int D = Ds[id];
                const size_t nb = vq_qplanes_bytes(D, qbits);
                float y[512];
                uint8_t a[12 + 8 * 64 + 4 * 512 + 1], b[sizeof a];
                fill(y, (size_t)D, 31 * (uint64_t)D + 7 * (uint64_t)qbits + (uint64_t)kind);
                if (kind == 1) /* levels 0, 0.5, 1, ... of a step 1/4: every other on a tie */
                    for (int d = 0; d < D; d++)
                        y[d] = (float)((d * 7) % 33) * 0.125f;
                if (kind == 2) /* the extremes repeated */
                    for (int d = 0; d < D; d += 5)
                        y[d] = d % 2 ? 3.0f : -3.0f;
                if (kind == 3 || kind == 4) { /* zeros of both signs as the minimum (3) or maximum (4) */
                    for (int d = 0; d < D; d++)
                        y[d] = kind == 3 ? fabsf(y[d]) + 0.01f : -fabsf(y[d]) - 0.01f;
                    y[3] = -0.0f, y[D / 2] = 0.0f, y[D - 1] = -0.0f;
                }
                if (kind == 5) /* all equal: delta 1 */
                    for (int d = 0; d < D; d++)
                        y[d] = 0.75f;
                memset(a, 0xA5, sizeof a), memset(b, 0xA5, sizeof b);
                ref->qplanes(y, D, qbits, a);
                k->qplanes(y, D, qbits, b);
                CHECKF(memcmp(a, b, nb + 1) == 0, "%s qplanes D=%d qbits=%d kind=%d", k->isa, D, qbits, kind);
            }
}

/* the tables against the definition: entry e of table p = sum of the
 * levels v_{4p+k} over the bits k of e */
static void test_nibble_tables(void)
{
    uint8_t v[64], t[256];
    for (size_t d = 0; d < 64; d++)
        v[d] = (uint8_t)((d * 7 + 3) % 16);
    vq_nibble_tables(v, 64, t);
    for (size_t p = 0; p < 16; p++)
        for (unsigned e = 0; e < 16; e++) {
            unsigned want = 0;
            for (unsigned k = 0; k < 4; k++)
                want += e >> k & 1u ? v[4 * p + k] : 0u;
            const size_t at = 128 * (p / 8) + (p % 2 ? 64 : 0) + 16 * (p % 8 / 2); /* low nibbles, then high */
            CHECKF(t[at + e] == want, "nibble table %zu entry %u: %u, want %u", p, e, t[at + e], want);
        }
}

/* signscore of the table k (and, where given, of fn) against the
 * reference's bits; each query's planes followed by their nibble tables
 * when qbits <= VQ_NIBBLE_QBITS (kernels.h) */
static void test_signscore_fn(const char *name, vq_signscore_fn *fn, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256 };
    static const size_t ns[] = { 1, 24, 47, 64, 70, 131 };
    static const int qbs[] = { 1, 2, 3, 4, 7 };
    for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
            for (int nq = 1; nq <= 18; nq += 8)
                for (size_t iq = 0; iq < sizeof qbs / sizeof *qbs; iq++)
                    for (int sets = 1; sets <= 2; sets++)
                        for (int halves = 0; halves <= 2; halves++) {
                            /* token: 1 byte | fp16 factor | 2 sets of D bits; halves == 2:
                             * 1 byte | 2 sets of D bits | 2 bytes | fp16 factor (the last
                             * bytes of the token) */
                            const size_t D = Ds[id], n = ns[in], stride = 2 * (D / 8) + 5;
                            const int qbits = qbs[iq];
                            const size_t tb = qbits <= VQ_NIBBLE_QBITS ? vq_nibble_tables_bytes(D) : 0;
                            const size_t qstride = (size_t)qbits * D / 8 + tb + 3;
                            const size_t hoff = halves == 2 ? stride - 2 : 1;
                            const size_t offs[2] = { halves == 2 ? 1 : 3, (halves == 2 ? 1 : 3) + D / 8 };
                            const float w[2] = { 0.061f, -0.0237f };
                            uint8_t *codes = malloc(stride * n + 1), *planes = malloc(qstride * (size_t)nq + 1);
                            float *f = malloc(n * sizeof(float)), *qc = malloc(3 * (size_t)nq * sizeof(float));
                            float *s1 = malloc(n * (size_t)nq * sizeof(float));
                            float *s2 = malloc(n * (size_t)nq * sizeof(float));
                            fill_bytes(codes, stride * n + 1, D + n + (size_t)sets);
                            fill_bytes(planes, qstride * (size_t)nq + 1, D * 5 + (size_t)qbits);
                            if (tb)
                                for (int j = 0; j < nq; j++) {
                                    uint8_t *pl = planes + 1 + (size_t)j * qstride;
                                    planes_tables(pl, D, qbits, pl + (size_t)qbits * D / 8);
                                }
                            fill(f, n, 7 + n);
                            fill(qc, 3 * (size_t)nq, 11 + (size_t)nq);
                            for (size_t i = 0; i < n; i++) { /* finite halves, at byte hoff of each token */
                                const uint16_t h = vq_fp32_to_fp16(f[i]);
                                memcpy(codes + 1 + i * stride + hoff, &h, 2);
                            }
                            for (size_t i = 0; i < n * (size_t)nq; i++) /* poisoned apart: every output is written */
                                s1[i] = -1.0f, s2[i] = NAN;
                            const float *fs = halves ? NULL : f;
                            ref->signscore(codes + 1, stride, n, D, offs, w, sets, fs, hoff, planes + 1, qstride, qc,
                                           nq, qbits, s1, n);
                            fn(codes + 1, stride, n, D, offs, w, sets, fs, hoff, planes + 1, qstride, qc, nq, qbits,
                               s2, n);
                            CHECKF(same_bits(s1, s2, n * (size_t)nq),
                                   "%s signscore D=%zu n=%zu nq=%d qbits=%d sets=%d halves=%d", name, D, n, nq, qbits,
                                   sets, halves);
                            free(codes), free(planes), free(f), free(qc), free(s1), free(s2);
                        }
}

static void test_signscore(const vq_kernels *k, const vq_kernels *ref)
{
    test_signscore_fn(k->isa, k->signscore, ref);
#if defined(__x86_64__)
    /* both AVX-512 variants where the CPU has them (the table holds one) */
    const unsigned need = VQ_CPU_AVX512 | VQ_CPU_AVX512_VPOPCNT;
    if (strcmp(k->isa, "avx512") == 0 && (vq_cpu_features() & need) == need) {
        test_signscore_fn("avx512 popcount", vq_signscore_avx512x, ref);
        if (vq_cpu_features() & VQ_CPU_AVX512_VBMI)
            test_signscore_fn("avx512 nibbles", vq_signscore_nibbles_avx512x, ref);
    }
#endif
}

/* ftab_score: the reference's bits (unaligned rows and tables, odd
 * token counts, 1-9 queries, one or two sets, the factor first, last or
 * one byte before the end of the row, or given as floats); the variant's
 * sign tables (kernels.h sign_tables) against their formula, bit for bit
 * (and their sign symmetry);
 * the reference against <y, s(z)>
 * summed in double, within 1e-5 of h * sum_k |w_k| * sum_d |y_d| */
static void test_ftab_score(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t ms[] = { 4, 28, 32, 64, 96, 128, 160, 256, 1024 };
    static const size_t ns[] = { 1, 15, 16, 17, 47, 70, 100, 131 }; /* (100, 131: blocks of groups, then single ones) */
    static const int nqs[] = { 1, 3, 4, 5, 9 };
    for (size_t im = 0; im < sizeof ms / sizeof *ms; im++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
            for (size_t iq = 0; iq < sizeof nqs / sizeof *nqs; iq++)
                for (int sets = 1; sets <= 2; sets++)
                    for (int last = 0; last <= 3; last++) {
                        /* token: 1 byte | fp16 factor | 2 sets; last == 1: 1 byte | 2 sets | 2 bytes | fp16
                         * factor; last == 2: the first layout, the factors given as floats; last == 3: 1 byte |
                         * 2 sets | 1 byte | fp16 factor | 1 byte */
                        const size_t m = ms[im], n = ns[in], nb = (m + 7) / 8, stride = 2 * nb + 5;
                        const int nq = nqs[iq];
                        const size_t tstride = vq_float_tables_floats(m) + 3;
                        const size_t hoff = last == 1 ? stride - 2 : last == 3 ? stride - 3 : 1;
                        const size_t o0 = last % 2 ? 1 : 3; /* the first set's offset */
                        const size_t offs[2] = { o0, o0 + nb };
                        const float w[2] = { 0.061f, -0.0237f };
                        uint8_t *codes = malloc(stride * n + 1);
                        float *y = malloc(sizeof(float) * m * (size_t)nq), *f = malloc(sizeof(float) * n);
                        float *tabs = malloc(sizeof(float) * (tstride * (size_t)nq + 1));
                        float *s1 = malloc(sizeof(float) * n * (size_t)nq), *s2 = malloc(sizeof(float) * n * (size_t)nq);
                        fill_bytes(codes, stride * n + 1, m + n + (size_t)sets);
                        fill(y, m * (size_t)nq, 3 * m + (size_t)nq);
                        fill(f, n, 7 + n);
                        for (size_t i = 0; i < n; i++) { /* finite factors, at byte hoff of each token */
                            const uint16_t h = vq_fp32_to_fp16(f[i]);
                            memcpy(codes + 1 + i * stride + hoff, &h, 2);
                        }
                        int sym = 1;
                        for (int j = 0; j < nq; j++) {
                            float *t = tabs + 1 + (size_t)j * tstride;
                            k->sign_tables(y + (size_t)j * m, m, t); /* the variant's builder */
                            for (size_t e = 0; e < 4 * m; e++) {
                                const float *x = y + (size_t)j * m + e / 16 * 4;
                                float want = e % 16 & 1 ? x[0] : -x[0];
                                for (unsigned b = 1; b < 4; b++)
                                    want = want + (e % 16 >> b & 1 ? x[b] : -x[b]);
                                sym &= t[e] == want && t[e] == -t[e - e % 16 + 15 - e % 16];
                            }
                        }
                        CHECKF(sym, "%s sign tables m=%zu: not float_tables.h's sums, or entry e not -(entry 15 - e)",
                               k->isa, m);
                        for (size_t i = 0; i < n * (size_t)nq; i++) /* poisoned apart: every output is written */
                            s1[i] = -1.0f, s2[i] = NAN;
                        const float *fs = last == 2 ? f : NULL;
                        ref->ftab_score(codes + 1, stride, n, m, offs, w, sets, fs, hoff, tabs + 1, tstride, nq, s1, n);
                        k->ftab_score(codes + 1, stride, n, m, offs, w, sets, fs, hoff, tabs + 1, tstride, nq, s2, n);
                        CHECKF(same_bits(s1, s2, n * (size_t)nq), "%s ftab_score m=%zu n=%zu nq=%d sets=%d last=%d",
                               k->isa, m, n, nq, sets, last);
                        double worst = 0.0;
                        for (int j = 0; j < nq; j++)
                            for (size_t i = 0; i < n; i++) {
                                const uint8_t *row = codes + 1 + i * stride;
                                const double h =
                                    fs ? fs[i] : vq_fp16_to_fp32((vq_fp16)(row[hoff] | row[hoff + 1] << 8));
                                double want = 0.0, mag = 0.0;
                                for (int kk = 0; kk < sets; kk++) {
                                    double a = 0.0;
                                    for (size_t d = 0; d < m; d++) {
                                        const double yd = y[(size_t)j * m + d];
                                        a += (row[offs[kk] + d / 8] >> d % 8 & 1) ? yd : -yd;
                                        mag += fabs(w[kk] * yd);
                                    }
                                    want += w[kk] * a;
                                }
                                worst = fmax(worst, fabs(s1[(size_t)j * n + i] - h * want) / (fabs(h) * mag + 1e-30));
                            }
                        CHECKF(worst <= 1e-5, "ftab_score_ref m=%zu n=%zu sets=%d: %g from <y, s(z)>", m, n, sets,
                               worst);
                        free(codes), free(y), free(f), free(tabs), free(s1), free(s2);
                    }
}

/* level tables (float_tables.h; the variant's kernels.h level_tables) for
 * 1-, 2- and 4-bit codes, two codebooks split at a coordinate that need not
 * start a table: entries against their formula, bit for bit; ftab_score over them (the table k's, one set)
 * with the reference's bits and within 1e-5 of sum_d y_d lut[c_d] summed
 * in double, relative to sum_d |y_d lut[c_d]| */
static void test_level_tables(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256 };
    for (int b = 1; b <= 4; b *= 2)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++) {
            const size_t D = Ds[id], n = 37, nb = D * (size_t)b / 8, stride = nb + 3, per = 4 / (size_t)b;
            const size_t mask = ((size_t)1 << b) - 1, tf = vq_float_tables_floats(D * (size_t)b);
            float y[256], lut[16], lut_lo[16], *tab = malloc(sizeof(float) * tf), s[37], r[37];
            const size_t n_lo = D / 3; /* the coordinates below read lut_lo (a table may straddle) */
            uint8_t *codes = malloc(stride * n);
            fill(y, D, 17 + D + (size_t)b);
            fill(lut, (size_t)1 << b, 5 + (size_t)b);
            fill(lut_lo, (size_t)1 << b, 9 + (size_t)b);
            fill_bytes(codes, stride * n, D * 3 + (size_t)b);
            for (size_t i = 0; i < n; i++) { /* the gain at byte 0, the codes from byte 2 */
                const uint16_t h = vq_fp32_to_fp16(0.5f + (float)i / 16.0f);
                memcpy(codes + i * stride, &h, 2);
            }
            k->level_tables(y, D, b, lut, lut_lo, n_lo, tab); /* the variant's builder */
            int exact = 1;
            for (size_t p = 0; p < D / per; p++)
                for (size_t e = 0; e < 16; e++) {
                    float want = y[p * per] * (p * per < n_lo ? lut_lo : lut)[e & mask];
                    for (size_t d = 1; d < per; d++)
                        want = want + y[p * per + d] * (p * per + d < n_lo ? lut_lo : lut)[e >> (size_t)b * d & mask];
                    exact &= tab[16 * p + e] == want;
                }
            CHECKF(exact, "%s level tables D=%zu b=%d: not float_tables.h's sums", k->isa, D, b);
            const size_t off = 2;
            const float one = 1.0f;
            k->ftab_score(codes, stride, n, D * (size_t)b, &off, &one, 1, NULL, 0, tab, tf, 1, s, n);
            ref->ftab_score(codes, stride, n, D * (size_t)b, &off, &one, 1, NULL, 0, tab, tf, 1, r, n);
            CHECKF(same_bits(s, r, n), "%s ftab_score over level tables D=%zu b=%d: not the reference's bits", k->isa,
                   D, b);
            double worst = 0.0;
            for (size_t i = 0; i < n; i++) {
                const uint8_t *row = codes + i * stride;
                double want = 0.0, mag = 0.0;
                for (size_t d = 0; d < D; d++) {
                    const size_t bit = d * (size_t)b, c = (size_t)(row[2 + bit / 8] >> bit % 8) & mask;
                    const double l = (d < n_lo ? lut_lo : lut)[c];
                    want += (double)y[d] * l;
                    mag += fabs((double)y[d] * l);
                }
                const double h = 0.5 + (double)i / 16.0;
                worst = fmax(worst, fabs(s[i] - h * want) / (h * mag + 1e-30));
            }
            CHECKF(worst <= 1e-5, "%s ftab_score over level tables D=%zu b=%d: %g from sum y lut[c]", k->isa, D, b,
                   worst);
            free(tab), free(codes);
        }
}

static void test_codes_dot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Es[] = { 16, 32, 64, 128, 256 };
    float lv[16]; /* levels of a code table (lut: bits 1..4) */
    fill(lv, 16, 99);
    for (int bits = 1; bits <= 4; bits++)
        for (int use_lut = 0; use_lut <= 1; use_lut++) {
            const float *lut = use_lut ? lv : NULL;
            for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
                for (size_t nt = 1; nt <= 19; nt += 6)
                    for (int nq = 1; nq <= 6; nq++) { /* every count of a tile of 4, and past it */
                        size_t E = Es[ie], rs = E * (size_t)bits / 8 + 3, qs = E + 1, ss = nt + 2;
                        uint8_t *codes = malloc(rs * nt + 1);
                        float *q = malloc(sizeof(float) * qs * (size_t)nq), *s1 = calloc(ss * (size_t)nq, 4);
                        float *s2 = calloc(ss * (size_t)nq, 4);
                        fill_bytes(codes, rs * nt + 1, E + nt + (size_t)bits);
                        fill(q, qs * (size_t)nq, E * 5 + nt);
                        ref->codes_dot(codes + 1, rs, bits, nt, E, lut, q, qs, nq, s1, ss);
                        k->codes_dot(codes + 1, rs, bits, nt, E, lut, q, qs, nq, s2, ss);
                        CHECKF(rel_diff(s2, s1, ss * (size_t)nq) <= 4e-6,
                               "%s codes_dot bits=%d lut=%d E=%zu nt=%zu nq=%d: %g", k->isa, bits, use_lut, E, nt,
                               nq, rel_diff(s2, s1, ss * (size_t)nq));
                        free(codes), free(q), free(s1), free(s2);
                    }
        }
}

/* codes_dot_pair: two sets of 1-bit codes against the reference (the
 * second set at an odd offset; within 4e-6 of the terms' magnitude, as
 * the levels' signs mix), and the reference against codes_dot of the same
 * levels on codes made into 2-bit pairs here */
static void test_codes_dot_pair(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Es[] = { 16, 32, 64, 128, 256 };
    float lut4[4];
    fill(lut4, 4, 41);
    for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
        for (size_t nt = 1; nt <= 19; nt += 6)
            for (int nq = 1; nq <= 6; nq++) {
                const size_t E = Es[ie], off = E / 8 + 1, rs = 2 * (E / 8) + 3, qs = E + 1, ss = nt + 2;
                uint8_t *codes = malloc(rs * nt + 1), *two = calloc(E / 4 * nt, 1);
                float *q = malloc(sizeof(float) * qs * (size_t)nq), *s1 = calloc(ss * (size_t)nq, 4);
                float *s2 = calloc(ss * (size_t)nq, 4), *s3 = calloc(ss * (size_t)nq, 4);
                fill_bytes(codes, rs * nt + 1, 3 * E + nt);
                fill(q, qs * (size_t)nq, E * 7 + nt);
                ref->codes_dot_pair(codes + 1, rs, off, nt, E, lut4, q, qs, nq, s1, ss);
                k->codes_dot_pair(codes + 1, rs, off, nt, E, lut4, q, qs, nq, s2, ss);
                /* float rounding of the terms' magnitudes: sum_e |q_e| max |lut4| bounds each score's terms */
                double scale = 1e-30, err = 0.0;
                for (int j = 0; j < nq; j++) {
                    double aq = 0.0;
                    for (size_t e = 0; e < E; e++)
                        aq += fabs(q[(size_t)j * qs + e]);
                    for (int c = 0; c < 4; c++)
                        scale = fmax(scale, aq * fabs(lut4[c]));
                    for (size_t i = 0; i < nt; i++)
                        err = fmax(err, fabs((double)s2[(size_t)j * ss + i] - s1[(size_t)j * ss + i]));
                }
                CHECKF(err <= 4e-6 * scale, "%s codes_dot_pair E=%zu nt=%zu nq=%d: %g of the terms' scale", k->isa, E,
                       nt, nq, err / scale);
                for (size_t i = 0; i < nt; i++) /* code e of row i: a + 2b as 2 bits */
                    for (size_t e = 0; e < E; e++) {
                        const uint8_t *row = codes + 1 + i * rs;
                        const unsigned a = row[e / 8] >> (e % 8) & 1, b = row[off + e / 8] >> (e % 8) & 1;
                        two[i * (E / 4) + e / 4] |= (uint8_t)((a + 2 * b) << (2 * (e % 4)));
                    }
                ref->codes_dot(two, E / 4, 2, nt, E, lut4, q, qs, nq, s3, ss);
                CHECKF(rel_diff(s1, s3, ss * (size_t)nq) == 0, "codes_dot_pair_ref E=%zu nt=%zu nq=%d against codes_dot",
                       E, nt, nq);
                free(codes), free(two), free(q), free(s1), free(s2), free(s3);
            }
}

/* nearest8: the reference's index for random codebooks of every size
 * around the 8-centroid steps, duplicated centroids (ties to the lower
 * index, across lanes and within one), a NaN or an infinity in centroid 0 or
 * elsewhere, and points on a centroid */
static void test_nearest8(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t ks[] = { 1, 2, 7, 8, 9, 15, 16, 17, 64, 255, 256, 300 };
    for (size_t ik = 0; ik < sizeof ks / sizeof *ks; ik++)
        for (int kind = 0; kind < 7; kind++)
            for (int trial = 0; trial < 8; trial++) {
                const size_t K = ks[ik];
                float *c = malloc(sizeof(float) * 8 * K), p[8];
                fill(c, 8 * K, 1000 * K + 10 * (size_t)kind + (size_t)trial);
                fill(p, 8, 7 + K + (size_t)trial);
                if (kind == 1 && K > 2) /* ties: the nearest appears three times */
                    for (size_t j = K / 3; j < K; j += K / 3 + 1)
                        memcpy(c + 8 * j, c + 8 * (K / 3), sizeof(float) * 8), memcpy(p, c + 8 * (K / 3), 32);
                if (kind == 2)
                    c[3] = NAN;
                if (kind == 3)
                    c[8 * (K - 1) + 5] = NAN, c[8 * (K / 2)] = NAN;
                if (kind == 4)
                    c[0] = INFINITY;
                if (kind == 6 && K > 9) /* ties in one lane: 8 apart */
                    for (size_t j = 1 + 8; j < K; j += 8)
                        memcpy(c + 8 * j, c + 8, sizeof(float) * 8), memcpy(p, c + 8, 32);
                if (kind == 5) /* every centroid equal: 0 */
                    for (size_t j = 1; j < K; j++)
                        memcpy(c + 8 * j, c, sizeof(float) * 8);
                const int a = ref->nearest8(c, K, p), b = k->nearest8(c, K, p);
                CHECKF(a == b, "%s nearest8 k=%zu kind=%d trial=%d: %d, reference %d", k->isa, K, kind, trial, b, a);
                free(c);
            }
}

/* y[i] = sum_j S[i*n + j] * x[j] for the row-major S (rows x n): each
 * row's sum in index order from 0.0f, each product rounded before its add
 * (ordered_matvec's contract, written the plain way) */
static void plain_mat_vec(const float *S, size_t rows, size_t n, const float *x, float *y)
{
    for (size_t i = 0; i < rows; i++) {
        float s = 0.0f;
        for (size_t j = 0; j < n; j++) {
            const float p = S[i * n + j] * x[j]; /* two statements: never contracted into an FMA */
            s += p;
        }
        y[i] = s;
    }
}

/* ordered_matvec: the reference's bits (and plain_mat_vec's over the
 * transposed matrix) for row counts around every register and pass width,
 * unaligned columns and vector, a few columns or many; y poisoned before,
 * and the floats after its end left alone */
static void test_ordered_matvec(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t rs[] = { 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 128, 129, 200, 256, 300, 1024 };
    static const size_t ns[] = { 1, 3, 64, 128, 131 };
    for (size_t ir = 0; ir < sizeof rs / sizeof *rs; ir++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++) {
            const size_t R = rs[ir], N = ns[in];
            float *buf = malloc(sizeof(float) * (R * N + 1)), *m = malloc(sizeof(float) * R * N);
            float *xb = malloc(sizeof(float) * (N + 1)), *y1 = malloc(sizeof(float) * (R + 4));
            float *y2 = malloc(sizeof(float) * (R + 4)), *y3 = malloc(sizeof(float) * (R + 4));
            float *mt = buf + 1, *x = xb + 1; /* unaligned */
            fill(mt, R * N, 31 * R + N);
            fill(x, N, 7 * N + R);
            if (R > 5 && N > 2) /* a zero column, an exact cancel */
                x[1] = 0.0f, mt[2 * R + 3] = -mt[3];
            for (size_t i = 0; i < R + 4; i++)
                y1[i] = y2[i] = y3[i] = NAN;
            ref->ordered_matvec(mt, R, N, x, y1);
            k->ordered_matvec(mt, R, N, x, y2);
            vq_transpose(mt, N, R, m); /* m[i*N + j] = mt[j*R + i]: the row-major matrix */
            plain_mat_vec(m, R, N, x, y3);
            CHECKF(memcmp(y1, y2, sizeof(float) * R) == 0 && memcmp(y1, y3, sizeof(float) * R) == 0,
                   "%s ordered_matvec rows=%zu n=%zu: not the reference's bits", k->isa, R, N);
            for (size_t i = R; i < R + 4; i++)
                CHECKF(isnan(y2[i]), "%s ordered_matvec rows=%zu n=%zu: wrote y[%zu]", k->isa, R, N, i);
            free(buf), free(m), free(xb), free(y1), free(y2), free(y3);
        }
}

/* qdot_prepare: the reference's bytes for random queries whose blocks are
 * ordinary, all zero, denormal (an infinite inv), huge, or hold a NaN or an
 * infinity, at every block count up to 8 */
static void test_qdot_prepare(const vq_kernels *k, const vq_kernels *ref)
{
    for (size_t nb = 1; nb <= 8; nb++)
        for (int trial = 0; trial < 24; trial++) {
            const size_t D = 32 * nb, qb = vq_qdot_query_bytes(D);
            float *x = malloc(sizeof(float) * (D + 1)), *xs = x + 1; /* unaligned */
            uint8_t *a = malloc(qb), *b = malloc(qb);
            fill(xs, D, 100 * nb + (size_t)trial);
            for (size_t blk = 0; blk < nb; blk++) {
                float *xb = xs + 32 * blk;
                const int kind = (trial + (int)blk) % 8;
                for (int e = 0; e < 32; e++)
                    xb[e] = kind == 1 ? 0.0f : kind == 2 ? xb[e] * 1e-40f : kind == 3 ? xb[e] * 1e30f : xb[e];
                if (kind == 4)
                    xb[trial % 32] = NAN;
                if (kind == 5)
                    xb[(trial * 7) % 32] = -INFINITY;
                if (kind == 6) { /* x * inv on exact halves: rounded to even */
                    for (int e = 0; e < 32; e++)
                        xb[e] = (float)(e - 16) + 0.5f;
                    xb[31] = 127.0f;
                }
            }
            memset(a, 0xA5, qb), memset(b, 0x5A, qb);
            ref->qdot_prepare(xs, D, a);
            k->qdot_prepare(xs, D, b);
            CHECKF(memcmp(a, b, qb) == 0, "%s qdot_prepare D=%zu trial=%d: not the reference's bytes", k->isa, D,
                   trial);
            free(x), free(a), free(b);
        }
}

/* lut8_tables: the reference's bytes for M tables of random floats, a
 * constant table, one with a NaN first entry or NaNs inside, ties of +0 and
 * -0 at the minimum, an infinity, and all-constant input (range 0) */
static void test_lut8_tables(const vq_kernels *k, const vq_kernels *ref)
{
    static const int Ms[] = { 1, 2, 3, 15, 16, 32, 64, 256 };
    for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++)
        for (int kind = 0; kind < 7; kind++) {
            const int M = Ms[im];
            const size_t n = 256 * (size_t)M, qb = vq_lut8_tables_size(M);
            float *buf = malloc(sizeof(float) * (n + 1)), *lut = buf + 1; /* unaligned */
            uint8_t *a = malloc(qb), *b = malloc(qb);
            fill(lut, n, 17 * (size_t)M + (size_t)kind);
            if (kind == 1) /* table 0 constant */
                for (int c = 1; c < 256; c++)
                    lut[c] = lut[0];
            if (kind == 2)
                lut[256 * (M - 1)] = NAN, lut[5] = NAN;
            if (kind == 3) /* the minimum a tie of -0 and +0 */
                for (int m = 0; m < M; m++) {
                    for (int c = 0; c < 256; c++)
                        lut[256 * m + c] = fabsf(lut[256 * m + c]) + 1.0f;
                    lut[256 * m + 7] = 0.0f, lut[256 * m + 200] = -0.0f, lut[256 * m + 33] = -0.0f;
                }
            if (kind == 4)
                lut[256 * (M / 2) + 9] = INFINITY;
            if (kind == 5)
                for (size_t i = 0; i < n; i++)
                    lut[i] = 0.25f;
            if (kind == 6) /* tiny ranges: entries on the rounding's halves */
                for (size_t i = 0; i < n; i++)
                    lut[i] = (float)(i % 256) * 0.5f;
            memset(a, 0xA5, qb), memset(b, 0x5A, qb);
            ref->lut8_tables(lut, M, a);
            k->lut8_tables(lut, M, b);
            CHECKF(memcmp(a, b, qb) == 0, "%s lut8_tables M=%d kind=%d: not the reference's bytes", k->isa, M, kind);
            free(buf), free(a), free(b);
        }
}

/* nt random q8_0 / q4_0 rows of D values (valid fp16 scales) at stride rs */
static void fill_qrows(int bits, uint8_t *rows, size_t rs, size_t nt, size_t D, uint64_t seed)
{
    size_t bb = bits == 8 ? 34 : 18;
    vq_rng r;
    vq_rng_seed(&r, seed);
    fill_bytes(rows, rs * nt, seed + 1);
    for (size_t i = 0; i < nt; i++)
        for (size_t b = 0; b < D / 32; b++) {
            vq_fp16 h = vq_fp32_to_fp16(0.01f + vq_rng_uniform(&r));
            rows[i * rs + b * bb] = (uint8_t)(h & 0xff);
            rows[i * rs + b * bb + 1] = (uint8_t)(h >> 8);
        }
}

static void test_qdot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256 };
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t nt = 1; nt <= 21; nt += 4)
                for (int nq = 1; nq <= 10; nq += 3) {
                    /* rows packed (the scales' span loads, rows16_avx512.h) or 5 bytes apart (gathers) */
                    size_t D = Ds[id], bb = bits == 8 ? 34 : 18, rs = D / 32 * bb + (nq % 2 ? 0 : 5);
                    size_t qs = vq_qdot_query_bytes(D) + 3, ss = nt + 2;
                    uint8_t *rows = malloc(rs * nt + 1), *qb = malloc(qs * (size_t)nq + 1);
                    float *x = malloc(sizeof(float) * D), *s1 = calloc(ss * (size_t)nq, 4);
                    float *s2 = calloc(ss * (size_t)nq, 4);
                    fill_qrows(bits, rows + 1, rs, nt, D, D + nt + (size_t)bits);
                    for (int j = 0; j < nq; j++) {
                        fill(x, D, 77 + (uint64_t)j + D);
                        vq_qdot_prepare(x, D, qb + 1 + (size_t)j * qs);
                    }
                    ref->qdot(bits, rows + 1, rs, nt, D, qb + 1, qs, nq, s1, ss);
                    k->qdot(bits, rows + 1, rs, nt, D, qb + 1, qs, nq, s2, ss);
                    CHECKF(rel_diff(s2, s1, ss * (size_t)nq) <= 2e-6, "%s qdot bits=%d D=%zu nt=%zu nq=%d: %g", k->isa,
                           bits, D, nt, nq, rel_diff(s2, s1, ss * (size_t)nq));
                    /* D <= 256: every variant sums the blocks in the reference's order */
                    CHECKF(D > 256 || same_bits(s2, s1, ss * (size_t)nq), "%s qdot bits=%d D=%zu nt=%zu nq=%d: not the reference's bits",
                           k->isa, bits, D, nt, nq);
                    free(rows), free(qb), free(x), free(s1), free(s2);
                }
}

/* dense dot/axpy on half rows against the references (tolerance) and against
 * fp16_row into a tile, then dense_dot / dense_axpy (same bits) */
static void test_half(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Es[] = { 16, 24, 64, 128, 256 };
    /* 301 rows: streamed rows (prefetched) in several blocks of the axpy */
    static const size_t nts[] = { 1, 7, 13, 19, 301 };
    for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
        for (size_t it = 0; it < sizeof nts / sizeof *nts; it++)
            for (int nq = 1; nq <= 7; nq += 2) {
                size_t E = Es[ie], nt = nts[it], qs = E + 1, ss = nt + 2, as = E + 5;
                uint8_t *v = malloc(2 * E * nt + 1);
                float *x = malloc(sizeof(float) * E * nt), *q = malloc(sizeof(float) * qs * (size_t)nq);
                float *tile = malloc(sizeof(float) * E * nt), *s1 = calloc(ss * (size_t)nq, 4);
                float *s2 = calloc(ss * (size_t)nq, 4), *s3 = calloc(ss * (size_t)nq, 4);
                float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                float *a3 = malloc(sizeof(float) * as * (size_t)nq), *w = malloc(sizeof(float) * ss * (size_t)nq);
                fill(x, E * nt, E + nt);
                for (size_t i = 0; i < E * nt; i++) {
                    vq_fp16 h = vq_fp32_to_fp16(x[i]);
                    v[1 + 2 * i] = (uint8_t)h, v[2 + 2 * i] = (uint8_t)(h >> 8);
                }
                fill(q, qs * (size_t)nq, 3 * E + (size_t)nq);
                fill(w, ss * (size_t)nq, 5 * E + nt);
                fill(a1, as * (size_t)nq, 11);
                memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                ref->dense_dot(q, qs, nq, v + 1, VQ_ELEM_F16, nt, E, s1, ss);
                k->dense_dot(q, qs, nq, v + 1, VQ_ELEM_F16, nt, E, s2, ss);
                CHECKF(rel_diff(s2, s1, ss * (size_t)nq) <= DENSE_TOL, "%s half_dot E=%zu nt=%zu nq=%d", k->isa, E, nt, nq);
                ref->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F16, nt, E, a1, as);
                k->dense_axpy(w, ss, nq, v + 1, VQ_ELEM_F16, nt, E, a2, as);
                CHECKF(rel_diff(a2, a1, as * (size_t)nq) <= DENSE_TOL, "%s half_axpy E=%zu nt=%zu nq=%d", k->isa, E, nt,
                       nq);
                if (k->dense_f16 && E % 8 == 0) {
                    k->fp16_row(v + 1, tile, E * nt);
                    k->dense_dot(q, qs, nq, tile, VQ_ELEM_F32, nt, E, s3, ss);
                    CHECKF(same_bits(s2, s3, ss * (size_t)nq), "%s half_dot E=%zu: not the tiled bits", k->isa, E);
                    k->dense_axpy(w, ss, nq, tile, VQ_ELEM_F32, nt, E, a3, as);
                    CHECKF(same_bits(a2, a3, as * (size_t)nq), "%s half_axpy E=%zu: not the tiled bits", k->isa, E);
                } else { /* no SIMD loops for these rows: the reference itself */
                    CHECKF(same_bits(s2, s1, ss * (size_t)nq), "%s half_dot E=%zu: not the reference", k->isa, E);
                    CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s half_axpy E=%zu: not the reference", k->isa, E);
                }
                free(v), free(x), free(q), free(tile), free(s1), free(s2), free(s3), free(a1), free(a2), free(a3), free(w);
            }
}

/* dense dot/axpy on q8_0 / q4_0 block rows against the references
 * (tolerance) and, where the table reads the blocks (dense_q), against the
 * block values into a tile, then dense_dot / dense_axpy (same bits) */
static void test_qrows(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Es[] = { 32, 64, 96, 128, 256 };
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t ie = 0; ie < sizeof Es / sizeof *Es; ie++)
            for (size_t nt = 1; nt <= 19; nt += 6)
                for (int nq = 1; nq <= 9; nq += 2) {
                    const vq_elem elem = bits == 8 ? VQ_ELEM_Q8_0 : VQ_ELEM_Q4_0;
                    const size_t E = Es[ie], bb = bits == 8 ? 34 : 18, rb = E / 32 * bb, nb = nt * E / 32;
                    const size_t qs = E + 1, ss = nt + 2, as = E + 5;
                    uint8_t *v = malloc(rb * nt + 1);
                    float *q = malloc(sizeof(float) * qs * (size_t)nq), *tile = malloc(sizeof(float) * E * nt);
                    float *s1 = calloc(ss * (size_t)nq, 4), *s2 = calloc(ss * (size_t)nq, 4), *s3 = calloc(ss * (size_t)nq, 4);
                    float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                    float *a3 = malloc(sizeof(float) * as * (size_t)nq), *w = malloc(sizeof(float) * ss * (size_t)nq);
                    float *sc = malloc(sizeof(float) * nb);
                    fill_bytes(v, rb * nt + 1, E + nt + (size_t)bits);
                    fill(sc, nb, 7 * E + nt);
                    for (size_t b = 0; b < nb; b++) { /* finite scales of both signs (random bytes could be NaN halves) */
                        const vq_fp16 h = vq_fp32_to_fp16(sc[b]);
                        v[1 + b * bb] = (uint8_t)h, v[2 + b * bb] = (uint8_t)(h >> 8);
                    }
                    fill(q, qs * (size_t)nq, 3 * E + (size_t)nq);
                    fill(w, ss * (size_t)nq, 5 * E + nt);
                    fill(a1, as * (size_t)nq, 13);
                    memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                    memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                    ref->dense_dot(q, qs, nq, v + 1, elem, nt, E, s1, ss);
                    k->dense_dot(q, qs, nq, v + 1, elem, nt, E, s2, ss);
                    CHECKF(rel_diff(s2, s1, ss * (size_t)nq) <= DENSE_TOL, "%s q%d_dot E=%zu nt=%zu nq=%d", k->isa, bits, E,
                           nt, nq);
                    ref->dense_axpy(w, ss, nq, v + 1, elem, nt, E, a1, as);
                    k->dense_axpy(w, ss, nq, v + 1, elem, nt, E, a2, as);
                    CHECKF(rel_diff(a2, a1, as * (size_t)nq) <= DENSE_TOL, "%s q%d_axpy E=%zu nt=%zu nq=%d", k->isa, bits,
                           E, nt, nq);
                    if (k->dense_q) {
                        (bits == 8 ? k->q8_0_values : k->q4_0_values)(v + 1, nb, tile);
                        k->dense_dot(q, qs, nq, tile, VQ_ELEM_F32, nt, E, s3, ss);
                        CHECKF(same_bits(s2, s3, ss * (size_t)nq), "%s q%d_dot E=%zu nq=%d: not the tiled bits", k->isa,
                               bits, E, nq);
                        k->dense_axpy(w, ss, nq, tile, VQ_ELEM_F32, nt, E, a3, as);
                        CHECKF(same_bits(a2, a3, as * (size_t)nq), "%s q%d_axpy E=%zu nq=%d: not the tiled bits", k->isa,
                               bits, E, nq);
                    }
                    free(v), free(q), free(tile), free(s1), free(s2), free(s3), free(a1), free(a2), free(a3), free(w),
                        free(sc);
                }
}

/* kivi_axpy against the reference: the same bits (kernels.h fixes the
 * order of every multiply and add), and close to kivi_group_row's values
 * into a tile, then dense_axpy (the same sum in another order) */
static void test_kivi_axpy(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 64, 128, 256 };
    for (int bits = 1; bits <= 4; bits++)
        for (size_t id = 0; id < 3; id++)
            for (size_t G = 16; G <= 64; G *= 2)
                for (size_t nt = 1; nt <= 13; nt += 6)
                    for (int nq = 1; nq <= 5; nq += 2) {
                        size_t D = Ds[id], ng = D / G, rs = 4 * ng + D * (size_t)bits / 8 + 1, ws = nt + 1, as = D + 3;
                        uint8_t *rows = malloc(rs * nt + 1);
                        float *w = malloc(sizeof(float) * ws * (size_t)nq), *tile = malloc(sizeof(float) * D * nt);
                        float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                        float *a3 = malloc(sizeof(float) * as * (size_t)nq);
                        fill_bytes(rows, rs * nt + 1, D + G + nt);
                        for (size_t i = 0; i < nt; i++) /* valid fp16 scales and mins */
                            for (size_t g = 0; g < 2 * ng; g++) {
                                vq_fp16 h = vq_fp32_to_fp16((float)(g + i % 7) * 0.37f - 1.1f);
                                rows[1 + i * rs + 2 * g] = (uint8_t)h, rows[2 + i * rs + 2 * g] = (uint8_t)(h >> 8);
                            }
                        fill(w, ws * (size_t)nq, 7 * D + nt);
                        fill(a1, as * (size_t)nq, 5);
                        memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                        memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                        ref->kivi_axpy(rows + 1, rs, bits, nt, D, G, w, ws, nq, a1, as);
                        k->kivi_axpy(rows + 1, rs, bits, nt, D, G, w, ws, nq, a2, as);
                        CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s kivi_axpy bits=%d D=%zu G=%zu nt=%zu nq=%d",
                               k->isa, bits, D, G, nt, nq);
                        for (size_t i = 0; i < nt; i++) /* kivi_group_row: 2 or 4 bits (the reference: any) */
                            (bits % 2 ? ref : k)
                                ->kivi_group_row(rows + 1 + i * rs + 4 * ng, bits, D, G, rows + 1 + i * rs,
                                                 rows + 1 + i * rs + 2 * ng, tile + i * D);
                        k->dense_axpy(w, ws, nq, tile, VQ_ELEM_F32, nt, D, a3, as);
                        CHECKF(rel_diff(a2, a3, as * (size_t)nq) <= 2e-6, "%s kivi_axpy bits=%d D=%zu G=%zu: far from the tiled sum",
                               k->isa, bits, D, G);
                        free(rows), free(w), free(tile), free(a1), free(a2), free(a3);
                    }
}

/* lut_axpy: the reference's bits; and close to the tiled sum (lut_row
 * values, then dense_axpy) */
static void test_lut_axpy(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 16, 48, 64, 128, 144, 256 };
    for (int bits = 1; bits <= 4; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (int sets = 1; sets <= 2; sets++)
                for (size_t nt = 1; nt <= 13; nt += 6)
                    for (int nq = 1; nq <= 6; nq += 5)
                        for (int halves = 0; halves <= 1; halves++) {
                            /* row: 1 byte | fp16 factor | sets of D codes */
                            const size_t D = Ds[id], cb = D * (size_t)bits / 8, rs = 3 + 2 * cb, ws = nt + 1,
                                         as = D + 3, L = (size_t)1 << bits;
                            const size_t offs[2] = { 3, 3 + cb };
                            uint8_t *rows = malloc(rs * nt + 1);
                            float *w = malloc(sizeof(float) * ws * (size_t)nq), *f = malloc(sizeof(float) * nt);
                            float lut[32], *tile = malloc(sizeof(float) * D * nt);
                            float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                            float *a3 = malloc(sizeof(float) * as * (size_t)nq);
                            fill_bytes(rows, rs * nt + 1, D + nt + (size_t)bits);
                            fill(f, nt, 3 + nt);
                            fill(lut, 32, 9 + (size_t)bits);
                            for (size_t i = 0; i < nt; i++) {
                                const vq_fp16 h = vq_fp32_to_fp16(f[i]);
                                rows[1 + i * rs + 1] = (uint8_t)h, rows[1 + i * rs + 2] = (uint8_t)(h >> 8);
                                f[i] = vq_fp16_to_fp32(h);
                            }
                            fill(w, ws * (size_t)nq, 7 * D + nt);
                            fill(a1, as * (size_t)nq, 5);
                            memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                            memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                            const float *fs = halves ? NULL : f;
                            ref->lut_axpy(rows + 1, rs, nt, D, offs, bits, lut, sets, fs, 1, w, ws, nq, a1, as);
                            k->lut_axpy(rows + 1, rs, nt, D, offs, bits, lut, sets, fs, 1, w, ws, nq, a2, as);
                            CHECKF(same_bits(a2, a1, as * (size_t)nq),
                                   "%s lut_axpy bits=%d D=%zu sets=%d nt=%zu nq=%d halves=%d", k->isa, bits, D, sets,
                                   nt, nq, halves);
                            for (size_t i = 0; i < nt; i++) {
                                k->lut_row(rows + 1 + i * rs + offs[0], bits, D, lut, f[i], 0, tile + i * D);
                                if (sets > 1)
                                    k->lut_row(rows + 1 + i * rs + offs[1], bits, D, lut + L, f[i], 1, tile + i * D);
                            }
                            k->dense_axpy(w, ws, nq, tile, VQ_ELEM_F32, nt, D, a3, as);
                            CHECKF(rel_diff(a2, a3, as * (size_t)nq) <= 2e-6,
                                   "%s lut_axpy bits=%d D=%zu: far from the tiled sum", k->isa, bits, D);
                            free(rows), free(w), free(f), free(tile), free(a1), free(a2), free(a3);
                        }
}

/* pq_axpy: the reference's bits; the reference against fmaf sums of the
 * centroids (token order), and close to the tiled sum (the centroids
 * copied into a tile, then dense_axpy); odd M, piece sizes 4 and 8, codes
 * up to K - 1, weight rows past a pass's four */
static void test_pq_axpy(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ms[] = { 1, 2, 3, 4, 6, 12, 16, 20, 32 };
    static const size_t Ks[] = { 256, 16 };
    for (size_t sd = 4; sd <= 8; sd += 4)
        for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++)
            for (size_t ik = 0; ik < 2; ik++)
                for (size_t nt = 1; nt <= 40; nt += 13)
                    for (int nq = 1; nq <= 6; nq += 2) {
                        const size_t M = Ms[im], K = Ks[ik], D = M * sd, rs = M + 3, ws = nt + 2, as = D + 5;
                        uint8_t *rows = malloc(rs * nt + 1);
                        float *cb = malloc(sizeof(float) * M * K * sd), *w = malloc(sizeof(float) * ws * (size_t)nq);
                        float *tile = malloc(sizeof(float) * D * nt);
                        float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                        float *a3 = malloc(sizeof(float) * as * (size_t)nq), *a4 = malloc(sizeof(float) * as * (size_t)nq);
                        fill_bytes(rows, rs * nt + 1, M + nt + sd);
                        for (size_t i = 0; i < rs * nt + 1; i++)
                            rows[i] = (uint8_t)(rows[i] % K);
                        fill(cb, M * K * sd, 11 + M);
                        fill(w, ws * (size_t)nq, 7 * M + nt);
                        fill(a1, as * (size_t)nq, 5);
                        memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                        memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                        memcpy(a4, a1, sizeof(float) * as * (size_t)nq);
                        ref->pq_axpy(rows + 1, rs, nt, M, sd, cb, K, w, ws, nq, a1, as);
                        k->pq_axpy(rows + 1, rs, nt, M, sd, cb, K, w, ws, nq, a2, as);
                        CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s pq_axpy sd=%zu M=%zu K=%zu nt=%zu nq=%d",
                               k->isa, sd, M, K, nt, nq);
                        for (size_t i = 0; i < nt; i++)
                            for (size_t m = 0; m < M; m++)
                                memcpy(tile + i * D + m * sd, cb + (m * K + rows[1 + i * rs + m]) * sd,
                                       sd * sizeof(float));
                        int fma_ok = 1;
                        for (int j = 0; j < nq; j++)
                            for (size_t e = 0; e < D; e++) {
                                float a = a4[(size_t)j * as + e];
                                for (size_t i = 0; i < nt; i++)
                                    a = fmaf(w[(size_t)j * ws + i], tile[i * D + e], a);
                                fma_ok &= a == a1[(size_t)j * as + e];
                            }
                        CHECKF(fma_ok, "pq_axpy_ref sd=%zu M=%zu: not the fmaf sums", sd, M);
                        k->dense_axpy(w, ws, nq, tile, VQ_ELEM_F32, nt, D, a3, as);
                        CHECKF(rel_diff(a2, a3, as * (size_t)nq) <= 2e-6, "%s pq_axpy sd=%zu M=%zu: far from the tiled sum",
                               k->isa, sd, M);
                        free(rows), free(cb), free(w), free(tile), free(a1), free(a2), free(a3), free(a4);
                    }
}

/* outlier_adds: the reference's bits (head_dim 8..256, powers of two and
 * not, 1-8-bit codes, 1..100 entries with tails, tables with and without
 * indices past the block, repeated tokens, 1-20 queries, unaligned
 * table); the reference
 * against a double-precision sum of the corrections, its codes read by
 * hand from the bytes */
static void test_outlier_adds(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 8, 16, 32, 48, 64, 128, 256 };
    static const int bitss[] = { 1, 2, 3, 4, 5, 8 }, nos[] = { 1, 7, 16, 17, 64, 100 }, nqs[] = { 1, 3, 5, 20 };
    for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
        for (size_t ib = 0; ib < sizeof bitss / sizeof *bitss; ib++)
            for (size_t io = 0; io < sizeof nos / sizeof *nos; io++)
                for (size_t iq = 0; iq < sizeof nqs / sizeof *nqs; iq++) {
                    const size_t D = Ds[id], G = io & 1 ? 16 : 128, entries = G * D, qs = D + 3, ss = G + 5;
                    const int bits = bitss[ib], no = nos[io], nq = nqs[iq];
                    const size_t dbytes = entries * (size_t)bits / 8, seed = D * 131 + (size_t)bits * 17 + io + iq;
                    uint8_t *blk = malloc(1 + dbytes + 4 * (size_t)no);
                    float *sm = malloc(sizeof(float) * 2 * D), *q = malloc(sizeof(float) * qs * (size_t)nq);
                    float *s0 = malloc(sizeof(float) * ss * (size_t)nq), *s1 = malloc(sizeof(float) * ss * (size_t)nq);
                    float *s2 = malloc(sizeof(float) * ss * (size_t)nq);
                    double *want = malloc(sizeof(double) * ss * (size_t)nq);
                    fill_bytes(blk, 1 + dbytes + 4 * (size_t)no, seed);
                    uint8_t *dense = blk + 1, *tab = dense + dbytes;
                    vq_rng r;
                    vq_rng_seed(&r, seed);
                    const size_t span = entries + (iq % 2 ? entries / 8 : 0); /* half the tables reach past the block */
                    for (int e = 0; e < no; e++) { /* every fifth entry on the last token */
                        size_t el = (size_t)(vq_rng_next(&r) % span);
                        if (e % 5 == 4)
                            el = (G - 1) * D + el % D;
                        const float x = (float)((double)(vq_rng_next(&r) >> 40) / (double)(1 << 24) * 8.0 - 4.0);
                        const vq_fp16 h = vq_fp32_to_fp16(x);
                        tab[4 * e] = (uint8_t)el, tab[4 * e + 1] = (uint8_t)(el >> 8);
                        tab[4 * e + 2] = (uint8_t)h, tab[4 * e + 3] = (uint8_t)(h >> 8);
                    }
                    fill(sm, 2 * D, seed + 1);
                    fill(q, qs * (size_t)nq, seed + 2);
                    fill(s0, ss * (size_t)nq, seed + 3);
                    memcpy(s1, s0, sizeof(float) * ss * (size_t)nq);
                    memcpy(s2, s0, sizeof(float) * ss * (size_t)nq);
                    ref->outlier_adds(tab, no, dense, bits, sm, D, entries, q, qs, nq, s1, ss);
                    k->outlier_adds(tab, no, dense, bits, sm, D, entries, q, qs, nq, s2, ss);
                    CHECKF(same_bits(s2, s1, ss * (size_t)nq), "%s outlier_adds D=%zu bits=%d n_o=%d nq=%d", k->isa, D,
                           bits, no, nq);
                    for (size_t i = 0; i < ss * (size_t)nq; i++)
                        want[i] = s0[i];
                    for (int e = 0; e < no; e++) {
                        const size_t el = (size_t)tab[4 * e] | (size_t)tab[4 * e + 1] << 8;
                        if (el >= entries)
                            continue;
                        const size_t bit = el * (size_t)bits, t = el / D, c = el % D;
                        const unsigned word = (unsigned)dense[bit / 8] | (unsigned)dense[bit / 8 + 1] << 8;
                        const unsigned code = (word >> (bit % 8)) & ((1u << bits) - 1);
                        const double x = vq_fp16_to_fp32((vq_fp16)(tab[4 * e + 2] | tab[4 * e + 3] << 8));
                        const double dx = x - ((double)sm[c] * code + sm[D + c]);
                        for (int j = 0; j < nq; j++)
                            want[(size_t)j * ss + t] += (double)q[(size_t)j * qs + c] * dx;
                    }
                    double err = 0.0;
                    for (size_t i = 0; i < ss * (size_t)nq; i++)
                        err = fmax(err, fabs(want[i] - s1[i]) / (1.0 + fabs(want[i])));
                    CHECKF(err <= 1e-5, "outlier_adds_ref D=%zu bits=%d n_o=%d: %g from the double sums", D, bits, no, err);
                    free(blk), free(sm), free(q), free(s0), free(s1), free(s2), free(want);
                }
}

/* pq_score: the reference's bits (odd token counts, M 1..64, K 4 to 256,
 * codes up to K - 1, 1-9 queries, unaligned rows, tables and work, work
 * poisoned or absent); the reference against the sums of the entries in
 * piece order */
static void test_pq_score(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ms[] = { 1, 4, 8, 12, 16, 20, 32, 64 };
    static const size_t ns[] = { 1, 3, 15, 16, 17, 70 };
    static const size_t Ks[] = { 256, 128, 32, 17, 16, 12, 8, 4 };
    for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
            for (size_t ik = 0; ik < sizeof Ks / sizeof *Ks; ik++)
                for (int nq = 1; nq <= 9; nq += (in & 1) ? 4 : 1) {
                    const size_t M = Ms[im], n = ns[in], K = Ks[ik], rs = M + 3, ts = M * K + 5;
                    const size_t nw = VQ_PQ_SCORE_WORK(M, K) + 1;
                    uint8_t *rows = malloc(rs * n + 1);
                    float *tabs = malloc(sizeof(float) * (ts * (size_t)nq + 1));
                    float *s1 = malloc(sizeof(float) * n * (size_t)nq), *s2 = malloc(sizeof(float) * n * (size_t)nq);
                    float *work = malloc(sizeof(float) * nw);
                    fill_bytes(rows, rs * n + 1, M + n + K);
                    for (size_t i = 0; i < rs * n + 1; i++)
                        rows[i] = (uint8_t)(rows[i] % K);
                    fill(tabs, ts * (size_t)nq + 1, 3 * M + (size_t)nq);
                    for (size_t i = 0; i < nw; i++)
                        work[i] = NAN;
                    for (size_t i = 0; i < n * (size_t)nq; i++)
                        s1[i] = -1.0f, s2[i] = NAN;
                    ref->pq_score(rows + 1, rs, n, M, tabs + 1, K, ts, nq, s1, n, NULL);
                    k->pq_score(rows + 1, rs, n, M, tabs + 1, K, ts, nq, s2, n, work + 1);
                    CHECKF(same_bits(s1, s2, n * (size_t)nq), "%s pq_score M=%zu n=%zu K=%zu nq=%d", k->isa, M, n, K,
                           nq);
                    for (size_t i = 0; i < n * (size_t)nq; i++)
                        s2[i] = NAN;
                    k->pq_score(rows + 1, rs, n, M, tabs + 1, K, ts, nq, s2, n, NULL);
                    CHECKF(same_bits(s1, s2, n * (size_t)nq), "%s pq_score M=%zu n=%zu K=%zu nq=%d, no work", k->isa,
                           M, n, K, nq);
                    int ok = 1;
                    for (int j = 0; j < nq; j++)
                        for (size_t i = 0; i < n; i++) {
                            float a = 0.0f;
                            for (size_t m = 0; m < M; m++)
                                a = a + tabs[1 + (size_t)j * ts + m * K + rows[1 + i * rs + m]];
                            ok &= a == s1[(size_t)j * n + i];
                        }
                    CHECKF(ok, "pq_score_ref M=%zu K=%zu: not the entries' sums in piece order", M, K);
                    free(rows), free(tabs), free(s1), free(s2), free(work);
                }
}

static float half_of(const uint8_t *p, size_t i) { return vq_fp16_to_fp32((vq_fp16)(p[2 * i] | p[2 * i + 1] << 8)); }

/* kivi_qaxpy against the reference: the same bits; and the reference
 * against kivi_axpy (float weights) within the weights' rounding bound of
 * kivi_qaxpy.h, sum over blocks of A/254 * sum_i |c_ie - h| (A over the
 * block's rows and every group), plus 1e-5 of the sum of |w v| for float rounding */
static void test_kivi_qaxpy(const vq_kernels *k, const vq_kernels *ref)
{
    /* D and groups past the twins' shapes too (96, 640; groups of 48: they
     * fall back to the reference); weight rows past a pass's registers (3,
     * 4) and a call's (8); 2 rows at D 128 make the next block's weights
     * ahead of a block's sums, at D 64 not (blocks_all); 100 rows: four
     * blocks, the last short */
    static const size_t Ds[] = { 64, 96, 128, 192, 256, 512, 640 }, Gs[] = { 16, 32, 48, 64, 128 },
                        nts[] = { 1, 7, 32, 45, 100 };
    static const int nqs[] = { 1, 2, 3, 4, 5, 9 };
    for (int bits = 2; bits <= 4; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t ig = 0; ig < sizeof Gs / sizeof *Gs; ig++)
                for (size_t in = 0; in < 5; in++)
                    for (size_t iq = 0; iq < 2 * (sizeof nqs / sizeof *nqs); iq++) {
                        const size_t D = Ds[id], G = Gs[ig], nt = nts[in], ng = D / G;
                        const int nq = nqs[iq % (sizeof nqs / sizeof *nqs)];
                        const int ext = iq >= sizeof nqs / sizeof *nqs; /* the integer sums' extremes */
                        if (D % G || ng > 16)
                            continue;
                        size_t rs = 4 * ng + D * (size_t)bits / 8 + 3, ws = nt + 2, as = D + 5;
                        uint8_t *rows = malloc(rs * nt + 1);
                        float *w = malloc(sizeof(float) * ws * (size_t)nq);
                        float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                        float *a3 = malloc(sizeof(float) * as * (size_t)nq);
                        fill_bytes(rows, rs * nt + 1, 3 * D + G + nt);
                        for (size_t i = 0; i < nt; i++) /* valid fp16 scales and mins */
                            for (size_t g = 0; g < 2 * ng; g++) {
                                vq_fp16 h = vq_fp32_to_fp16((float)((g * 5 + i) % 11) * 0.29f - 1.3f);
                                rows[1 + i * rs + 2 * g] = (uint8_t)h, rows[2 + i * rs + 2 * g] = (uint8_t)(h >> 8);
                            }
                        fill(w, ws * (size_t)nq, 11 * D + nt + (size_t)nq);
                        if (ext) /* every code the largest, every |q| 127 (scales 1, weights +-0.5): a 16-bit sum
                                  * of too many rows overflows */
                            for (size_t i = 0; i < nt; i++) {
                                memset(rows + 1 + i * rs + 4 * ng, 0xFF, D * (size_t)bits / 8);
                                for (size_t g = 0; g < ng; g++)
                                    rows[1 + i * rs + 2 * g] = 0x00, rows[2 + i * rs + 2 * g] = 0x3C;
                                for (int j = 0; j < nq; j++)
                                    w[1 + (size_t)j * ws + i] = j % 2 ? -0.5f : 0.5f;
                            }
                        fill(a1, as * (size_t)nq, 9);
                        memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                        memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                        ref->kivi_qaxpy(rows + 1, rs, bits, nt, D, G, w + 1, ws, nq, a1, as);
                        k->kivi_qaxpy(rows + 1, rs, bits, nt, D, G, w + 1, ws, nq, a2, as);
                        CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s kivi_qaxpy bits=%d D=%zu G=%zu nt=%zu nq=%d",
                               k->isa, bits, D, G, nt, nq);
                        if (k != vq_kernels_variant("avx2"))
                            goto next; /* the bound once per case (every x86 SIMD CPU has the AVX2 table) */
                        ref->kivi_axpy(rows + 1, rs, bits, nt, D, G, w + 1, ws, nq, a3, as);
                        double worst = 0.0;
                        for (int j = 0; j < nq; j++)
                            for (size_t e = 0; e < D; e++) {
                                const size_t g = e / G;
                                double bound = 0.0, mag = 0.0;
                                for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
                                    double A = 0.0, cs = 0.0;
                                    for (size_t i = b; i < nt && i < b + VQ_KQ_BLOCK; i++) {
                                        const uint8_t *r = rows + 1 + i * rs;
                                        const double c = (double)vq_bits_get(r + 4 * ng, e, bits);
                                        const double wi = w[1 + (size_t)j * ws + i];
                                        for (size_t g2 = 0; g2 < ng; g2++) /* one scale for every group */
                                            A = fmax(A, fabs((float)(wi * half_of(r, g2))));
                                        cs += fabs(c - (double)(1u << (bits - 1))); /* centred codes */
                                        mag += fabs(wi) * (fabs(half_of(r, g)) * c + fabs(half_of(r, ng + g)));
                                    }
                                    bound += A / 254.0 * cs;
                                }
                                const size_t o = (size_t)j * as + e;
                                worst = fmax(worst, fabs((double)a1[o] - a3[o]) / (bound + 1e-5 * (mag + fabs(a3[o]))));
                            }
                        CHECKF(worst <= 1.0, "kivi_qaxpy reference bits=%d D=%zu G=%zu nt=%zu: %.3g of the rounding bound",
                               bits, D, G, nt, worst);
                    next:
                        free(rows), free(w), free(a1), free(a2), free(a3);
                    }
    /* weights so small that 127 / A overflows: the reference's lrintf of the
     * non-finite products gives -127 for every row (LONG_MIN held), rows past
     * the last block none; every SIMD twin must match (nt = 45: a short
     * block); acc from 0 so that the tiny sums show */
    for (int bits = 2; bits <= 4; bits++) {
        const size_t D = 128, G = 32, ng = D / G, nt = 45, rs = 4 * ng + D * (size_t)bits / 8;
        uint8_t *rows = malloc(rs * nt);
        float w[3 * 45], a1[3 * 128] = { 0 }, a2[3 * 128] = { 0 };
        fill_bytes(rows, rs * nt, 17 + (size_t)bits);
        for (size_t i = 0; i < nt; i++)
            for (size_t g = 0; g < 2 * ng; g++)
                rows[i * rs + 2 * g] = 0x66, rows[i * rs + 2 * g + 1] = 0x2E; /* 0.1 */
        fill(w, 3 * 45, 5 + (size_t)bits);
        for (size_t i = 0; i < 3 * 45; i++)
            w[i] *= 1e-38f;
        ref->kivi_qaxpy(rows, rs, bits, nt, D, G, w, 45, 3, a1, D);
        k->kivi_qaxpy(rows, rs, bits, nt, D, G, w, 45, 3, a2, D);
        CHECKF(same_bits(a2, a1, 3 * 128), "%s kivi_qaxpy bits=%d: other bits for tiny weights", k->isa, bits);
        free(rows);
    }
}

/* lut_qaxpy against the reference: the same bits (every shape, the twins'
 * and the reference's own: D 48, 96 and 3 bits fall back); and the
 * reference against lut_axpy with the float levels L (lev = round(L /
 * step)) within lut_qaxpy.h's bound: per block A/254 * step * sum_i
 * |lev_c|, plus sum_i |a_i| * |L_c - step lev_c|, plus 1e-5 of sum |a L|
 * for float rounding */
static void test_lut_qaxpy(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 16, 32, 48, 64, 96, 128, 256, 512 }, nts[] = { 1, 7, 32, 45, 100 };
    static const int nqs[] = { 1, 2, 3, 4, 5, 9 };
    for (int bits = 1; bits <= 4; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t in = 0; in < sizeof nts / sizeof *nts; in++)
                for (size_t iq = 0; iq < 2 * (sizeof nqs / sizeof *nqs); iq++) {
                    const size_t D = Ds[id], nt = nts[in], cb = D * (size_t)bits / 8, L = (size_t)1 << bits;
                    const int nq = nqs[iq % (sizeof nqs / sizeof *nqs)];
                    const int ext = iq >= sizeof nqs / sizeof *nqs; /* the integer sums' extremes */
                    const size_t rs = cb + 3, ws = nt + 2, as = D + 5;
                    uint8_t *rows = malloc(rs * nt + 1);
                    float *w = malloc(sizeof(float) * ws * (size_t)nq), *f = malloc(sizeof(float) * nt);
                    float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                    float *a3 = malloc(sizeof(float) * as * (size_t)nq), lut[16];
                    int8_t lev[16];
                    fill_bytes(rows, rs * nt + 1, 5 * D + nt + (size_t)bits);
                    fill(f, nt, 7 + nt);
                    fill(lut, 16, 3 + (size_t)bits + D);
                    fill(w, ws * (size_t)nq, 13 * D + nt + (size_t)nq);
                    float lmax = 0.0f;
                    for (size_t c = 0; c < L; c++)
                        lmax = fmaxf(lmax, fabsf(lut[c]));
                    const float step = lmax / 127.0f;
                    for (size_t c = 0; c < L; c++)
                        lev[c] = (int8_t)lrintf(lut[c] / step);
                    if (ext) /* every level +-127, every |q| 127: the largest integer sums */
                        for (size_t i = 0; i < nt; i++) {
                            memset(rows + 1 + i * rs, (i & 1) ? 0xFF : 0x00, cb);
                            f[i] = 1.0f;
                            for (int j = 0; j < nq; j++)
                                w[1 + (size_t)j * ws + i] = j % 2 ? -0.5f : 0.5f;
                            lev[0] = -127, lev[L - 1] = 127;
                        }
                    fill(a1, as * (size_t)nq, 9);
                    memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                    memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                    ref->lut_qaxpy(rows + 1, rs, nt, D, bits, lev, step, f, NULL, 0, w + 1, ws, nq, a1, as);
                    k->lut_qaxpy(rows + 1, rs, nt, D, bits, lev, step, f, NULL, 0, w + 1, ws, nq, a2, as);
                    CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s lut_qaxpy bits=%d D=%zu nt=%zu nq=%d ext=%d",
                           k->isa, bits, D, nt, nq, ext);
                    { /* the factors by a byte code before each row's codes (the byte 3 before them here) */
                        float ftab[256], *b1 = malloc(sizeof(float) * as * (size_t)nq);
                        float *b2 = malloc(sizeof(float) * as * (size_t)nq);
                        fill(ftab, 256, 31 + nt);
                        memcpy(b1, a2, sizeof(float) * as * (size_t)nq);
                        memcpy(b2, a2, sizeof(float) * as * (size_t)nq);
                        ref->lut_qaxpy(rows + 3, rs, nt, D, bits, lev, step, NULL, ftab, -2, w + 1, ws, nq, b1, as);
                        k->lut_qaxpy(rows + 3, rs, nt, D, bits, lev, step, NULL, ftab, -2, w + 1, ws, nq, b2, as);
                        CHECKF(same_bits(b2, b1, as * (size_t)nq), "%s lut_qaxpy bits=%d D=%zu nt=%zu nq=%d byte factors",
                               k->isa, bits, D, nt, nq);
                        float *fb = malloc(sizeof(float) * nt); /* the same as the floats themselves */
                        for (size_t i = 0; i < nt; i++)
                            fb[i] = ftab[rows[1 + i * rs]];
                        memcpy(b2, a2, sizeof(float) * as * (size_t)nq);
                        ref->lut_qaxpy(rows + 3, rs, nt, D, bits, lev, step, fb, NULL, 0, w + 1, ws, nq, b2, as);
                        CHECKF(same_bits(b2, b1, as * (size_t)nq), "lut_qaxpy reference: byte factors are not the floats");
                        free(b1), free(b2), free(fb);
                    }
                    if (ext || k != vq_kernels_variant("avx2"))
                        goto next; /* the bound once per case (every x86 SIMD CPU has the AVX2 table) */
                    const size_t offs[1] = { 0 };
                    ref->lut_axpy(rows + 1, rs, nt, D, offs, bits, lut, 1, f, 0, w + 1, ws, nq, a3, as);
                    double worst = 0.0;
                    for (int j = 0; j < nq; j++)
                        for (size_t e = 0; e < D; e++) {
                            double bound = 0.0, mag = 0.0;
                            for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
                                double A = 0.0, ls = 0.0;
                                for (size_t i = b; i < nt && i < b + VQ_KQ_BLOCK; i++) {
                                    const unsigned c = vq_bits_get(rows + 1 + i * rs, e, bits);
                                    const double a = (double)(w[1 + (size_t)j * ws + i] * f[i]);
                                    A = fmax(A, fabs(a));
                                    ls += abs(lev[c]);
                                    bound += fabs(a) * fabs((double)lut[c] - (double)step * lev[c]);
                                    mag += fabs(a * lut[c]);
                                }
                                bound += A / 254.0 * step * ls;
                            }
                            const size_t o = (size_t)j * as + e;
                            worst = fmax(worst, fabs((double)a1[o] - a3[o]) / (bound + 1e-5 * (mag + fabs(a3[o]))));
                        }
                    CHECKF(worst <= 1.0, "lut_qaxpy reference bits=%d D=%zu nt=%zu: %.3g of the rounding bound", bits,
                           D, nt, worst);
                next:
                    free(rows), free(w), free(f), free(a1), free(a2), free(a3);
                }
    /* weights so small that 127 / A overflows (every q -127 in the
     * reference, as kivi_qaxpy's); acc from 0 so that the tiny sums show */
    for (int bits = 1; bits <= 4; bits *= 2) {
        const size_t D = 64, nt = 45, rs = D * (size_t)bits / 8;
        uint8_t rows[45 * 32];
        float w[3 * 45], f[45], a1[3 * 64] = { 0 }, a2[3 * 64] = { 0 };
        const int8_t lev[16] = { -127, 90, -40, 3, 127, -1, 60, -90, 20, -20, 100, -100, 5, 7, -9, 11 };
        fill_bytes(rows, rs * nt, 23 + (size_t)bits);
        fill(w, 3 * 45, 5 + (size_t)bits);
        for (size_t i = 0; i < nt; i++)
            f[i] = 0.25f;
        for (size_t i = 0; i < 3 * 45; i++)
            w[i] *= 1e-38f;
        ref->lut_qaxpy(rows, rs, nt, D, bits, lev, 0.01f, f, NULL, 0, w, 45, 3, a1, D);
        k->lut_qaxpy(rows, rs, nt, D, bits, lev, 0.01f, f, NULL, 0, w, 45, 3, a2, D);
        CHECKF(same_bits(a2, a1, 3 * 64), "%s lut_qaxpy bits=%d: other bits for tiny weights", k->isa, bits);
    }
}

/* qaxpy8 against the reference: the same bits; and the reference against
 * qaxpy (float weights) within the weights' rounding bound of qaxpy.h (A over the block's rows and column blocks):
 * sum over blocks of A/254 * sum_i |code_ie|, plus 1e-5 of sum |w value| */
static void test_qaxpy8(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256, 512, 544 }, nts[] = { 1, 6, 32, 45, 100 };
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t in = 0; in < 5; in++)
                for (int iq = 0; iq < 6; iq++) {
                    const int nq = 1 + 4 * (iq % 3), ext = iq >= 3; /* ext: the integer sums' extremes */
                    const size_t D = Ds[id], nt = nts[in], bb = bits == 8 ? 34 : 18, nb = D / 32;
                    /* rows packed or 2 bytes apart (the scales' span loads, rows16_avx512.h), or 1 (gathers) */
                    size_t rs = nb * bb + (size_t)(iq % 3 == 0 ? 1 : iq % 3 == 1 ? 0 : 2), ws = nt + 1, as = D + 3;
                    uint8_t *rows = malloc(rs * nt + 1);
                    float *w = malloc(sizeof(float) * ws * (size_t)nq), *vals = malloc(sizeof(float) * 32);
                    float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                    float *a3 = malloc(sizeof(float) * as * (size_t)nq);
                    fill_qrows(bits, rows + 1, rs, nt, D, 5 * D + nt + (size_t)bits);
                    for (size_t i = 0; i < nt; i++) /* negative scales too (q4_0 keeps the sign of vmax) */
                        for (size_t b = 0; b < nb; b++)
                            if ((i + b) % 3 == 1)
                                rows[1 + i * rs + b * bb + 1] |= 0x80;
                    fill(w, ws * (size_t)nq, 2 * nt + (size_t)nq);
                    if (ext) /* every |q| 127 (scales 1, weights +-0.5), every code 15 - 8 (q4_0) or -128 (q8_0): a
                              * saturating product or a 16-bit sum of too many rows shows */
                        for (size_t i = 0; i < nt; i++) {
                            for (size_t b = 0; b < nb; b++) {
                                uint8_t *blk = rows + 1 + i * rs + b * bb;
                                blk[0] = 0x00, blk[1] = 0x3C;
                                memset(blk + 2, bits == 8 ? 0x80 : 0xFF, bb - 2);
                            }
                            for (int j = 0; j < nq; j++)
                                w[(size_t)j * ws + i] = j % 2 ? -0.5f : 0.5f;
                        }
                    fill(a1, as * (size_t)nq, 77);
                    memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                    memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                    ref->qaxpy8(bits, rows + 1, rs, nt, D, w, ws, nq, a1, as);
                    k->qaxpy8(bits, rows + 1, rs, nt, D, w, ws, nq, a2, as);
                    CHECKF(same_bits(a2, a1, as * (size_t)nq), "%s qaxpy8 bits=%d D=%zu nt=%zu nq=%d", k->isa, bits, D,
                           nt, nq);
                    if (k == vq_kernels_variant("avx2")) { /* the bound once per case */
                        ref->qaxpy(bits, rows + 1, rs, nt, D, w, ws, nq, a3, as);
                        double worst = 0.0;
                        for (int j = 0; j < nq; j++)
                            for (size_t e = 0; e < D; e++) {
                                const size_t g = e / 32;
                                double bound = 0.0, mag = 0.0;
                                for (size_t b0 = 0; b0 < nt; b0 += VQ_KQ_BLOCK) {
                                    double A = 0.0, vs = 0.0;
                                    for (size_t i = b0; i < nt && i < b0 + VQ_KQ_BLOCK; i++) {
                                        const uint8_t *blk = rows + 1 + i * rs + g * bb;
                                        const float d = vq_fp16_to_fp32((vq_fp16)(blk[0] | blk[1] << 8));
                                        (bits == 8 ? vq_q8_0_values_ref : vq_q4_0_values_ref)(blk, 1, vals);
                                        const double wi = w[(size_t)j * ws + i], v = vals[e % 32];
                                        for (size_t c = 0; c < nb; c++) { /* one scale for every column block */
                                            const uint8_t *bc = rows + 1 + i * rs + c * bb;
                                            const float dc = vq_fp16_to_fp32((vq_fp16)(bc[0] | bc[1] << 8));
                                            A = fmax(A, fabs((float)(wi * dc)));
                                        }
                                        vs += d != 0.0f ? fabs(v / d) : 0.0;
                                        mag += fabs(wi * v);
                                    }
                                    bound += A / 254.0 * vs;
                                }
                                const size_t o = (size_t)j * as + e;
                                worst = fmax(worst, fabs((double)a1[o] - a3[o]) / (bound + 1e-5 * (mag + fabs(a3[o]))));
                            }
                        CHECKF(worst <= 1.0, "qaxpy8 reference bits=%d D=%zu nt=%zu: %.3g of the rounding bound", bits, D,
                               nt, worst);
                    }
                    free(rows), free(w), free(vals), free(a1), free(a2), free(a3);
                }
    /* weights so small that 127 / A overflows (test_kivi_qaxpy's case) */
    for (int bits = 4; bits <= 8; bits += 4) {
        const size_t D = 128, nt = 45, bb = bits == 8 ? 34 : 18, rs = D / 32 * bb;
        uint8_t *rows = malloc(rs * nt);
        float w[3 * 45], a1[3 * 128] = { 0 }, a2[3 * 128] = { 0 };
        fill_qrows(bits, rows, rs, nt, D, 23 + (size_t)bits);
        fill(w, 3 * 45, 7 + (size_t)bits);
        for (size_t i = 0; i < 3 * 45; i++)
            w[i] *= 1e-38f;
        ref->qaxpy8(bits, rows, rs, nt, D, w, 45, 3, a1, D);
        k->qaxpy8(bits, rows, rs, nt, D, w, 45, 3, a2, D);
        CHECKF(same_bits(a2, a1, 3 * 128), "%s qaxpy8 bits=%d: other bits for tiny weights", k->isa, bits);
        free(rows);
    }
}

/* qaxpy against the reference (tolerance) and, for SIMD tables, against
 * the tiled path it replaces (block values, then dense_axpy): same bits */
static void test_qaxpy(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 96, 128, 256 };
    for (int bits = 4; bits <= 8; bits += 4)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t nt = 1; nt <= 21; nt += 5)
                for (int nq = 1; nq <= 9; nq += 2) {
                    size_t D = Ds[id], bb = bits == 8 ? 34 : 18, rs = D / 32 * bb, ws = nt + 1, as = D + 3;
                    uint8_t *rows = malloc(rs * nt + 1);
                    float *w = malloc(sizeof(float) * ws * (size_t)nq), *tile = malloc(sizeof(float) * D * nt);
                    float *a1 = malloc(sizeof(float) * as * (size_t)nq), *a2 = malloc(sizeof(float) * as * (size_t)nq);
                    float *a3 = malloc(sizeof(float) * as * (size_t)nq);
                    fill_qrows(bits, rows + 1, rs, nt, D, 3 * D + nt + (size_t)bits);
                    fill(w, ws * (size_t)nq, nt + (size_t)nq);
                    fill(a1, as * (size_t)nq, 99);
                    memcpy(a2, a1, sizeof(float) * as * (size_t)nq);
                    memcpy(a3, a1, sizeof(float) * as * (size_t)nq);
                    ref->qaxpy(bits, rows + 1, rs, nt, D, w, ws, nq, a1, as);
                    k->qaxpy(bits, rows + 1, rs, nt, D, w, ws, nq, a2, as);
                    CHECKF(rel_diff(a2, a1, as * (size_t)nq) <= 2e-6, "%s qaxpy bits=%d D=%zu nt=%zu nq=%d: %g", k->isa,
                           bits, D, nt, nq, rel_diff(a2, a1, as * (size_t)nq));
                    if (k->qaxpy != ref->qaxpy) {
                        (bits == 8 ? k->q8_0_values : k->q4_0_values)(rows + 1, nt * D / 32, tile);
                        k->dense_axpy(w, ws, nq, tile, VQ_ELEM_F32, nt, D, a3, as);
                        CHECKF(same_bits(a2, a3, as * (size_t)nq), "%s qaxpy bits=%d D=%zu nt=%zu nq=%d: not the tiled bits",
                               k->isa, bits, D, nt, nq);
                    }
                    free(rows), free(w), free(tile), free(a1), free(a2), free(a3);
                }
}

static void test_codes_qdot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 64, 128, 256, 576 }; /* 576: past the AVX2 16-bit sums' four chunks */
    for (int bits = 2; bits <= 4; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t nt = 1; nt <= 37; nt += 3) /* every row tail mod 4 */
                for (int nq = 1; nq <= 10; nq += 3)
                    for (size_t pad = 0; pad <= 3; pad += 3) { /* rows packed (the codec's) and apart */
                        size_t D = Ds[id], rs = D * (size_t)bits / 8 + pad, qs = vq_codes_query_bytes(D) + 1, ss = nt + 2;
                        uint8_t *rows = malloc(rs * nt + 1), *qb = malloc(qs * (size_t)nq + 1);
                        float *s1 = calloc(ss * (size_t)nq, 4), *s2 = calloc(ss * (size_t)nq, 4);
                        fill_bytes(rows, rs * nt + 1, D + nt);
                        /* nq queries (one all zero, one tiny) and a block header of random
                         * scales and mins, prepared by the reference into qb + 1
                         * and by k elsewhere: the same bytes */
                        float *xs = malloc(sizeof(float) * D * (size_t)nq), *hf = malloc(sizeof(float) * 2 * D);
                        uint8_t *hdr = malloc(4 * D + 1), *pk = malloc(qs * (size_t)nq);
                        fill(xs, D * (size_t)nq, 31 + D);
                        if (nq > 1)
                            memset(xs + D, 0, sizeof(float) * D);
                        for (size_t e = 0; nq > 2 && e < D; e++) /* so small that 127 / amax overflows */
                            xs[2 * D + e] *= 1e-38f;
                        fill(hf, 2 * D, 41 + D);
                        for (size_t e = 0; e < 2 * D; e++) {
                            const vq_fp16 h = vq_fp32_to_fp16(hf[e]);
                            hdr[1 + 2 * e] = (uint8_t)h, hdr[2 + 2 * e] = (uint8_t)(h >> 8);
                        }
                        vq_codes_qprep(xs, D, nq, hdr + 1, D, bits, qb + 1, qs);
                        k->codes_qprep(xs, D, nq, hdr + 1, D, bits, pk, qs);
                        for (int j = 0; j < nq; j++)
                            CHECKF(memcmp(qb + 1 + (size_t)j * qs, pk + (size_t)j * qs, vq_codes_query_bytes(D)) == 0,
                                   "%s codes_qprep bits=%d D=%zu query %d: other bytes (scale, sum or codes)", k->isa, bits,
                                   D, j);
                        free(xs), free(hf), free(hdr), free(pk);
                        ref->codes_qdot(rows + 1, rs, bits, nt, D, qb + 1, qs, nq, s1, ss);
                        k->codes_qdot(rows + 1, rs, bits, nt, D, qb + 1, qs, nq, s2, ss);
                        CHECKF(same_bits(s2, s1, ss * (size_t)nq), "%s codes_qdot bits=%d D=%zu nt=%zu nq=%d: %g",
                               k->isa, bits, D, nt, nq, rel_diff(s2, s1, ss * (size_t)nq));
                        free(rows), free(qb), free(s1), free(s2);
                    }
}

/* codes_qdot's reference against codes_dot with the dequantized query
 * plus the prepared base: the chunk order and the unpack order agree; the
 * base is sum x*m plus the rounding's offset h * sum (x - d q), so that a
 * score misses the exact sum x*c + x*m by at most sum |x - d q| |c - h|
 * (the query's rounding meets the centred codes). Two queries: random
 * ones, and one whose every rounding error is +0.4 d, scored against rows
 * of the largest code, where the uncentred form misses by (2h - 1) / (h - 1)
 * or more times that bound (3x at 2 bits) */
static void test_codes_qdot_reference(void)
{
    const size_t D = 128, nt = 5, rs = D / 2;
    for (int bits = 2; bits <= 4; bits++)
        for (int crafted = 0; crafted <= 1; crafted++) {
            const float h = (float)(1 << (bits - 1));
            uint8_t rows[5 * 64], qb[VQ_CQ_HEAD + 128];
            float x[128], deq[128], s1[5], s2[5], mins[128];
            fill_bytes(rows, sizeof rows, 3 + (uint64_t)bits);
            fill(x, D, 17);
            fill(mins, D, 19);
            if (crafted) {
                memset(rows, 0xff, sizeof rows); /* every code 2^bits - 1 */
                x[0] = 127.0f;                   /* amax 127: d = 1 */
                for (size_t e = 1; e < D; e++)
                    x[e] = (float)((int)(e % 50) - 25) + 0.4f;
            }
            /* header: scales 1.0, mins as fp16 */
            uint8_t hdr[4 * 128];
            double summ = 0.0, sumx = 0.0;
            for (size_t e = 0; e < D; e++) {
                const vq_fp16 one = vq_fp32_to_fp16(1.0f), m = vq_fp32_to_fp16(mins[e]);
                hdr[2 * e] = (uint8_t)one, hdr[2 * e + 1] = (uint8_t)(one >> 8);
                hdr[2 * D + 2 * e] = (uint8_t)m, hdr[2 * D + 2 * e + 1] = (uint8_t)(m >> 8);
                summ += (double)x[e] * vq_fp16_to_fp32(m);
                sumx += x[e];
            }
            CHECK(vq_codes_query_bytes(D) == sizeof qb);
            vq_codes_qprep(x, D, 1, hdr, D, bits, qb, sizeof qb);
            const int8_t *q = (const int8_t *)(qb + VQ_CQ_HEAD);
            float d, base;
            memcpy(&d, qb, 4);
            memcpy(&base, qb + 4, 4);
            double qsum = 0.0;
            for (size_t c = 0; c < 2; c++) {
                for (size_t p = 0; p < 64; p++) {
                    size_t ch = bits == 4 ? (p < 32 ? 2 * p : 2 * (p - 32) + 1) : bits == 3 ? p : 4 * (p % 16) + p / 16;
                    deq[64 * c + ch] = d * q[64 * c + p];
                    qsum += q[64 * c + p];
                    CHECKF(fabsf(deq[64 * c + ch] - x[64 * c + ch]) <= 0.5001f * d, "codes_qprep rounding");
                }
            }
            const double want = summ + h * (sumx - (double)d * qsum);
            CHECKF(fabs(base - want) <= 1e-5 * (1.0 + fabs(summ) + h * fabs(sumx)),
                   "codes_qprep bits=%d base %g, sum x*m + h sum (x - d q) %g", bits, base, want);
            vq_codes_qdot_ref(rows, rs * (size_t)bits / 4, bits, nt, D, qb, sizeof qb, 1, s1, nt);
            vq_codes_dot_ref(rows, rs * (size_t)bits / 4, bits, nt, D, NULL, deq, D, 1, s2, nt);
            for (size_t i = 0; i < nt; i++)
                s2[i] += base;
            CHECKF(rel_diff(s1, s2, nt) <= 1e-5, "codes_qdot_ref bits=%d vs codes_dot: %g", bits, rel_diff(s1, s2, nt));
            for (size_t i = 0; i < nt; i++) { /* against the exact score */
                double exact = summ, bound = 0.0;
                for (size_t e = 0; e < D; e++) {
                    const unsigned code = vq_bits_get(rows + i * (rs * (size_t)bits / 4), e, bits);
                    exact += (double)x[e] * code;
                    bound += fabs((double)x[e] - deq[e]) * fabs((double)code - h);
                }
                CHECKF(fabs(s1[i] - exact) <= bound + 1e-5 * (1.0 + fabs(exact) + h * fabs(sumx)),
                       "codes_qdot bits=%d%s row %zu: %g from the exact score %g, bound %g", bits,
                       crafted ? " (crafted query)" : "", i, s1[i], exact, bound);
            }
        }
}

/* the reference's formula: a double dot of the decoded rows with the
 * dequantized query; and the query's rounding within d/2 */
static void test_qdot_reference(void)
{
    const size_t D = 96, nt = 7;
    for (int bits = 4; bits <= 8; bits += 4) {
        size_t bb = bits == 8 ? 34 : 18, rs = D / 32 * bb, nb = D / 32;
        uint8_t rows[7 * 3 * 34], qb[3 * 8 + 96];
        float x[96], s[7];
        fill_qrows(bits, rows, rs, nt, D, 5 + (uint64_t)bits);
        fill(x, D, 9);
        x[40] = 0.0f;
        vq_qdot_prepare(x, D, qb);
        vq_qdot_ref(bits, rows, rs, nt, D, qb, sizeof qb, 1, s, nt);
        const int8_t *q = (const int8_t *)(qb + nb * 8);
        for (size_t b = 0; b < nb; b++) {
            float d;
            int32_t sum = 0;
            memcpy(&d, qb + b * 4, 4);
            for (size_t e = 0; e < 32; e++) {
                sum += q[b * 32 + e];
                CHECKF(fabsf(x[b * 32 + e] - d * q[b * 32 + e]) <= 0.5001f * d, "qdot_prepare rounding at %zu",
                       b * 32 + e);
            }
            int32_t stored;
            memcpy(&stored, qb + nb * 4 + b * 4, 4);
            CHECK(stored == sum);
        }
        for (size_t i = 0; i < nt; i++) {
            double want = 0.0, mag = 0.0;
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *blk = rows + i * rs + b * bb;
                float dk = vq_fp16_to_fp32((vq_fp16)(blk[0] | blk[1] << 8)), dq;
                memcpy(&dq, qb + b * 4, 4);
                for (size_t e = 0; e < 32; e++) {
                    double kv = bits == 8 ? (int8_t)blk[2 + e]
                                          : (e < 16 ? (blk[2 + e] & 15) : (blk[2 + e - 16] >> 4)) - 8.0;
                    want += (double)dk * kv * dq * q[b * 32 + e];
                    mag += fabs((double)dk * kv * dq * q[b * 32 + e]);
                }
            }
            CHECKF(fabs(s[i] - want) <= 1e-6 * mag + 1e-9, "qdot_ref bits=%d row %zu: %g vs %g", bits, i, s[i], want);
        }
    }
}

/* rope_pairs: the reference's bits (rope.h fixes every operation), both
 * pairings, both directions, unaligned rows; and the reference turns a
 * vector by a known angle (cos, sin of 0.3 rad) as the rotation formula */
static void test_rope_pairs(const vq_kernels *k, const vq_kernels *ref)
{
    for (size_t half = 16; half <= 128; half *= 2)
        for (int neox = 0; neox <= 1; neox++)
            for (int dir = 0; dir < 2; dir++) {
                float sgn = dir ? -1.0f : 1.0f;
                float *x1 = malloc(sizeof(float) * (2 * half + 1)), *x2 = malloc(sizeof(float) * (2 * half + 1));
                float *cs = malloc(sizeof(float) * (2 * half + 1));
                fill(x1, 2 * half + 1, half + (size_t)neox);
                fill(cs, 2 * half + 1, 3 * half + 7);
                memcpy(x2, x1, sizeof(float) * (2 * half + 1));
                ref->rope_pairs(x1 + 1, cs + 1, half, neox, sgn);
                k->rope_pairs(x2 + 1, cs + 1, half, neox, sgn);
                CHECKF(same_bits(x1, x2, 2 * half + 1), "%s rope_pairs half=%zu neox=%d sgn=%g", k->isa, half, neox,
                       (double)sgn);
                free(x1), free(x2), free(cs);
            }
    float x[32], cs[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i + 1), cs[i] = i < 16 ? cosf(0.3f) : sinf(0.3f);
    ref->rope_pairs(x, cs, 16, 0, 1.0f);
    CHECKF(fabsf(x[0] - (1.0f * cosf(0.3f) - 2.0f * sinf(0.3f))) < 1e-6f &&
               fabsf(x[1] - (1.0f * sinf(0.3f) + 2.0f * cosf(0.3f))) < 1e-6f,
           "rope_pairs_ref: (1, 2) by 0.3 rad gave (%g, %g)", (double)x[0], (double)x[1]);
}

/* bits_unpack: the reference's bytes at every width, counts around the
 * 32-code (AVX2) and 64-code (VBMI) steps, unaligned sources, nothing
 * read or written past the codes (ASan: the source is allocated to its
 * last byte); and the
 * reference against codes packed here one bit at a time */
static void test_bits_unpack(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t ns[] = { 1, 7, 8, 31, 32, 33, 63, 64, 65, 96, 130, 1000 };
    for (int bits = 1; bits <= 8; bits++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++) {
            const size_t n = ns[in], nb = (n * (size_t)bits + 7) / 8;
            uint8_t *codes = malloc(n), *src = calloc(nb + 1, 1), *o1 = malloc(n + 8), *o2 = malloc(n + 8);
            fill_bytes(codes, n, 7 * n + (size_t)bits);
            for (size_t i = 0; i < n; i++) {
                codes[i] &= (uint8_t)((1u << bits) - 1u);
                for (int b = 0; b < bits; b++) {
                    const size_t bit = i * (size_t)bits + (size_t)b;
                    src[1 + bit / 8] |= (uint8_t)(((codes[i] >> b) & 1u) << (bit % 8));
                }
            }
            memset(o1, 0xA5, n + 8), memset(o2, 0xA5, n + 8);
            ref->bits_unpack(src + 1, n, bits, o1);
            k->bits_unpack(src + 1, n, bits, o2);
            CHECKF(memcmp(o1, codes, n) == 0 && memcmp(o1, o2, n + 8) == 0,
                   "%s bits_unpack bits=%d n=%zu differs (or wrote past n)", k->isa, bits, n);
            free(codes), free(src), free(o1), free(o2);
        }
}

/* half_ratio: the reference's bits on headers of random halves (every
 * 64th a zero correction: infinities and NaN; subnormals and large values
 * among the rest), strides 4..23, every count up to 40 (masked tails),
 * unaligned; nothing written past n; and the reference is the formula */
static void test_half_ratio(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t strides[] = { 4, 5, 8, 23 };
    for (size_t is = 0; is < sizeof strides / sizeof *strides; is++)
        for (size_t n = 0; n <= 40; n++) {
            const size_t st = strides[is];
            uint8_t *hdr = malloc(n * st + 1);
            float *a = malloc(sizeof(float) * (n + 4)), *b = malloc(sizeof(float) * (n + 4));
            fill_bytes(hdr, n * st + 1, 31 * st + n);
            for (size_t i = 0; i < n; i++)
                if ((i * 7 + n) % 64 == 0)
                    hdr[1 + i * st + 2] = 0, hdr[1 + i * st + 3] = (uint8_t)(i & 0x80); /* +-0 correction */
            for (size_t i = 0; i < n + 4; i++)
                a[i] = b[i] = -555.0f;
            ref->half_ratio(hdr + 1, st, n, 11.3137083f, a);
            k->half_ratio(hdr + 1, st, n, 11.3137083f, b);
            int bad = 0;
            for (size_t i = 0; i < n; i++) {
                const uint8_t *p = hdr + 1 + i * st;
                const float want = vq_fp16_to_fp32((vq_fp16)(p[0] | p[1] << 8)) /
                                   (vq_fp16_to_fp32((vq_fp16)(p[2] | p[3] << 8)) * 11.3137083f);
                bad |= memcmp(&want, a + i, sizeof want) != 0;
            }
            CHECKF(!bad, "half_ratio_ref stride=%zu n=%zu: not the formula", st, n);
            CHECKF(memcmp(a, b, sizeof(float) * (n + 4)) == 0, "%s half_ratio stride=%zu n=%zu differs (or wrote past n)",
                   k->isa, st, n);
            free(hdr), free(a), free(b);
        }
}

/* kivi_fold (the AVX2 piece of kivi_kdot): the folded queries and the
 * mins' sums with the reference's bits, head sizes 16..256 and two not a
 * multiple of 16 (tails of 4 and 12 channels: lanes past 8), 1..5 queries
 * at a stride, unaligned rows */
static void test_kivi_fold(void)
{
    static const size_t Ds[] = { 16, 20, 48, 60, 64, 128, 256 };
    for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
        for (int nq = 1; nq <= 5; nq++) {
            const size_t D = Ds[id], qstride = D + 3;
            float *q = malloc((size_t)nq * qstride * sizeof *q + 4), *sm = malloc(2 * D * sizeof *sm + 4);
            float *a = malloc((size_t)nq * D * sizeof *a), *b = malloc((size_t)nq * D * sizeof *b);
            float ba[5], bb[5];
            fill(q + 1, (size_t)nq * qstride, 300 + D + (size_t)nq), fill(sm + 1, 2 * D, 400 + D);
            vq_kivi_fold_ref(q + 1, qstride, nq, sm + 1, sm + 1 + D, D, a, ba);
            vq_kivi_fold_avx2(q + 1, qstride, nq, sm + 1, sm + 1 + D, D, b, bb);
            CHECKF(same_bits(a, b, (size_t)nq * D) && same_bits(ba, bb, (size_t)nq), "avx2 kivi_fold D=%zu nq=%d", D,
                   nq);
            free(q), free(sm), free(a), free(b);
        }
}

static float half_le(const uint8_t *p) { return vq_fp16_to_fp32((vq_fp16)(p[0] | p[1] << 8)); }

/* kivi_kdot's scores in double from its definition (kernels.h) */
static void kdot_exact(const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G, size_t D,
                       const float *q, size_t qstride, int nq, float *s, size_t ss)
{
    const size_t row = D * (size_t)bits / 8;
    for (int j = 0; j < nq; j++)
        for (size_t kb = 0; kb < nblk; kb++)
            for (size_t t = 0; t < G; t++) {
                const uint8_t *blk = blocks + kb * bstride;
                double x = 0.0;
                for (size_t e = 0; e < D; e++) {
                    const double c = vq_bits_get(blk + 4 * D + t * row, e, bits);
                    x += q[(size_t)j * qstride + e] * (half_le(blk + 2 * e) * c + half_le(blk + 2 * (D + e)));
                }
                s[(size_t)j * ss + kb * G + t] = (float)x;
            }
}

/* kivi_kdot on nblk blocks of G tokens (headers of random halves, random
 * codes, blocks at an odd stride, unaligned): each variant has the bits of
 * its own table's pieces composed (vq_kivi_kdot_via with the reference's
 * fold, whose bits every fold has) and is within codes_dot's 4e-6 of the
 * reference, the reference within 1e-5 of the scores in double; nothing
 * is written past the nq x nblk*G scores */
static void test_kivi_kdot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 16, 32, 64, 96, 128, 256 }, Gs[] = { 1, 16, 32, 40 };
    for (int bits = 1; bits <= 4; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t ig = 0; ig < sizeof Gs / sizeof *Gs; ig++)
                for (int nq = 1; nq <= 6; nq += (bits == 2 ? 1 : 2)) {
                    const size_t D = Ds[id], G = Gs[ig], nblk = 1 + (D + G) % 3, row = D * (size_t)bits / 8;
                    const size_t bstride = 4 * D + G * row + 5, qstride = D + 3, ss = nblk * G + 3;
                    const size_t nout = ss * (size_t)(nq + 1);
                    uint8_t *blocks = malloc(nblk * bstride + 1);
                    float *q = malloc(sizeof(float) * (qstride * (size_t)nq + 1));
                    float *s1 = malloc(sizeof(float) * nout), *s2 = malloc(sizeof(float) * nout);
                    float *s3 = malloc(sizeof(float) * nout), *ex = malloc(sizeof(float) * nout);
                    fill_bytes(blocks, nblk * bstride + 1, 7 * D + G + (size_t)bits);
                    vq_rng r;
                    vq_rng_seed(&r, D + 11 * G);
                    for (size_t kb = 0; kb < nblk; kb++)
                        for (size_t e = 0; e < 2 * D; e++) { /* scales in (0.01, 1.01), mins in (-1, 1) */
                            const float f = e < D ? 0.01f + vq_rng_uniform(&r) : 2.0f * vq_rng_uniform(&r) - 1.0f;
                            const vq_fp16 h = vq_fp32_to_fp16(f);
                            uint8_t *at = blocks + 1 + kb * bstride + 2 * e;
                            at[0] = (uint8_t)h, at[1] = (uint8_t)(h >> 8);
                        }
                    fill(q + 1, qstride * (size_t)nq, 5 * D + G);
                    for (size_t i = 0; i < nout; i++)
                        s1[i] = s2[i] = s3[i] = ex[i] = -777.0f;
                    ref->kivi_kdot(blocks + 1, bstride, nblk, bits, G, D, q + 1, qstride, nq, s1, ss);
                    k->kivi_kdot(blocks + 1, bstride, nblk, bits, G, D, q + 1, qstride, nq, s2, ss);
                    vq_kivi_kdot_via(k->fp16_row, vq_kivi_fold_ref, k->codes_dot, blocks + 1, bstride, nblk, bits, G,
                                     D, q + 1, qstride, nq, s3, ss);
                    kdot_exact(blocks + 1, bstride, nblk, bits, G, D, q + 1, qstride, nq, ex, ss);
                    CHECKF(same_bits(s2, s3, nout), "%s kivi_kdot bits=%d D=%zu G=%zu nq=%d: "
                           "not its pieces' bits", k->isa, bits, D, G, nq);
                    int outside = 0; /* past each query's scores, and the row of query nq */
                    for (int j = 0; j <= nq; j++)
                        for (size_t i = j < nq ? nblk * G : 0; i < ss; i++)
                            outside |= s1[(size_t)j * ss + i] != -777.0f || s2[(size_t)j * ss + i] != -777.0f;
                    CHECKF(!outside, "%s kivi_kdot bits=%d D=%zu G=%zu nq=%d: wrote past the scores", k->isa, bits, D,
                           G, nq);
                    CHECKF(rel_diff(s2, s1, nout) <= 4e-6, "%s kivi_kdot bits=%d D=%zu G=%zu nq=%d: %g", k->isa, bits,
                           D, G, nq, rel_diff(s2, s1, nout));
                    CHECKF(rel_diff(s1, ex, nout) <= 1e-5, "kivi_kdot_ref bits=%d D=%zu G=%zu nq=%d: %g off", bits, D,
                           G, nq, rel_diff(s1, ex, nout));
                    free(blocks), free(q), free(s1), free(s2), free(s3), free(ex);
                }
}

/* silu_mul and gelu_mul (kernels/glu.h): within 2e-6 of the reference
 * relative to the result (plus 1e-30 absolute: below x = -87.3 the twin
 * gives 0 where the reference gives a denormal-sized product; gelu: plus
 * 1e-7 of |g * u|, glu.h), for gates spread over [-100, 100] including 0,
 * +-tiny and the region where exp(-x) overflows, every length up to 40
 * (masked tails) and unaligned pointers; the lanes past n are not
 * written */
static void test_gated(const vq_kernels *k, const vq_kernels *ref)
{
    for (int gelu = 0; gelu < 2; gelu++) {
        float g[48], u[48], a[48], b[48];
        double worst = 0.0;
        int untouched = 1;
        for (size_t n = 0; n <= 40; n++)
            for (int scale = 0; scale < 3; scale++) {
                fill(g, 41, 100 + n + 7 * (size_t)scale), fill(u, 41, 200 + n);
                for (size_t i = 0; i < 41; i++)
                    g[i] *= scale == 0 ? 1.0f : scale == 1 ? 8.0f : 40.0f;
                g[1] = 0.0f, g[2] = -1e-30f, g[3] = 1e-30f, g[4] = -88.0f, g[5] = 95.0f, g[6] = -100.0f;
                for (size_t i = 0; i < 41; i++)
                    a[i + 1] = b[i + 1] = g[i];
                a[n + 1] = b[n + 1] = 12345.0f;
                (gelu ? ref->gelu_mul : ref->silu_mul)(a + 1, u, n);
                (gelu ? k->gelu_mul : k->silu_mul)(b + 1, u, n);
                untouched &= b[n + 1] == 12345.0f;
                for (size_t i = 0; i < n; i++) {
                    const double room = fabs((double)a[i + 1]) + 1e-30 / 2e-6 +
                                        (gelu ? 1e-7 / 2e-6 * fabs((double)g[i] * u[i]) : 0.0);
                    const double d = fabs((double)a[i + 1] - b[i + 1]) / room;
                    worst = d > worst ? d : worst;
                }
            }
        CHECKF(worst <= 2e-6 && untouched, "%s %s: worst error %g of its room (tail untouched %d)", k->isa,
               gelu ? "gelu_mul" : "silu_mul", worst, untouched);
    }
}

/* rope_codes_dot: the rows it scores are built here from integer codes
 * (packed LSB first by this test), fmaf(s, c, m), the patches, rope.h's
 * turn (a product, then fmaf);
 * the reference's scores have the bits of the scalar dense_dot of those
 * rows, a SIMD variant's the bits of its own table's dense_dot (rope.h),
 * and the two agree to float rounding. Every width 1..8, head sizes
 * 32..256 (32: the VBMI variant's fallback), tile tails, unaligned codes,
 * patches (two on one element: the later wins) and poisoned outputs. */
static void test_rope_codes_dot(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ds[] = { 32, 64, 128, 256 };
    static const size_t ns[] = { 1, 15, 16, 17, 40 };
    for (int bits = 1; bits <= 8; bits++)
        for (size_t id = 0; id < sizeof Ds / sizeof *Ds; id++)
            for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
                for (int nq = 1; nq <= 5; nq += 2) {
                    const size_t D = Ds[id], n = ns[in], rb = D * (size_t)bits / 8, os = n + 3;
                    const int neox = (int)(in % 2), patched = (int)((in + id) % 2);
                    uint8_t *raw = calloc(rb * n + 1, 1), *c8 = malloc(n * D);
                    float *s = malloc(D * sizeof *s), *m = malloc(D * sizeof *m), *tab = malloc(8 * D * sizeof *tab);
                    float *q = malloc((size_t)nq * D * sizeof *q), *v = malloc(n * D * sizeof *v);
                    float *o1 = malloc(os * (size_t)nq * sizeof *o1), *o2 = malloc(os * (size_t)nq * sizeof *o2);
                    float *w1 = malloc(os * (size_t)nq * sizeof *w1), *w2 = malloc(os * (size_t)nq * sizeof *w2);
                    int32_t *rows = malloc(n * sizeof *rows);
                    uint32_t *pstart = calloc(n + 1, sizeof *pstart);
                    uint16_t pch[8];
                    float pval[8];
                    fill_bytes(c8, n * D, 11 * D + (size_t)bits);
                    fill(s, D, D + 1), fill(m, D, D + 2), fill(tab, 8 * D, D + 3), fill(q, (size_t)nq * D, D + 4);
                    for (size_t i = 0; i < n; i++) {
                        rows[i] = (int32_t)((i * 5 + 3) % 8);
                        for (size_t e = 0; e < D; e++) {
                            const size_t bit = (i * D + e) * (size_t)bits;
                            c8[i * D + e] &= (uint8_t)((1u << bits) - 1u);
                            for (int b = 0; b < bits; b++)
                                raw[1 + (bit + (size_t)b) / 8] |=
                                    (uint8_t)(((c8[i * D + e] >> b) & 1u) << ((bit + (size_t)b) % 8));
                            v[i * D + e] = fmaf(s[e], (float)c8[i * D + e], m[e]);
                        }
                    }
                    size_t np = 0;
                    if (patched) { /* token 0: channels 3 then 3 again; the last token: channel D - 1 */
                        pch[0] = 3, pval[0] = 7.5f, pch[1] = 3, pval[1] = -2.25f;
                        pch[2] = (uint16_t)(D - 1), pval[2] = 1e3f;
                        np = 3;
                        for (size_t i = 0; i <= n; i++)
                            pstart[i] = i == 0 ? 0 : i < n ? 2 : 3;
                        if (n == 1)
                            pstart[1] = 3;
                        v[3] = -2.25f, v[(n - 1) * D + D - 1] = 1e3f;
                    }
                    for (size_t i = 0; i < n; i++)
                        for (size_t e = 0; e < D / 2; e++) {
                            float *x = v + i * D;
                            const float *cs = tab + (size_t)rows[i] * D;
                            const size_t i0 = neox ? e : 2 * e, i1 = neox ? e + D / 2 : 2 * e + 1;
                            const float a = x[i0], b = x[i1];
                            x[i0] = fmaf(a, cs[e], -(b * cs[D / 2 + e]));
                            x[i1] = fmaf(b, cs[e], a * cs[D / 2 + e]);
                        }
                    const int simd = k->rope_codes_dot != vq_rope_codes_dot_ref && D % 64 == 0; /* rope.h */
                    for (size_t x = 0; x < os * (size_t)nq; x++)
                        o1[x] = o2[x] = w1[x] = w2[x] = NAN;
                    ref->dense_dot(q, D, nq, v, VQ_ELEM_F32, n, D, w1, os);
                    (simd ? k : ref)->dense_dot(q, D, nq, v, VQ_ELEM_F32, n, D, w2, os);
                    const vq_rope_keys keys = { .codes = raw + 1, .bits = bits, .D = D, .n = n, .s = s, .m = m,
                                                .pstart = np ? pstart : NULL, .pch = pch, .pval = pval,
                                                .tab = tab, .rows = rows, .neox = neox };
                    ref->rope_codes_dot(&keys, q, D, nq, o1, os);
                    k->rope_codes_dot(&keys, q, D, nq, o2, os);
                    int untouched = 1;
                    for (int j = 0; j < nq; j++)
                        for (size_t x = n; x < os; x++)
                            untouched &= isnan(o2[(size_t)j * os + x]);
                    double r = 0.0; /* |difference| / sum_e |q_e v_e| (scores may cancel) */
                    for (int j = 0; j < nq; j++)
                        for (size_t i = 0; i < n; i++) {
                            double mag = 1e-30;
                            for (size_t e = 0; e < D; e++)
                                mag += fabs((double)q[(size_t)j * D + e] * v[i * D + e]);
                            r = fmax(r, fabs((double)o2[(size_t)j * os + i] - o1[(size_t)j * os + i]) / mag);
                        }
                    CHECKF(untouched && same_bits(o1, w1, os * (size_t)nq) && same_bits(o2, w2, os * (size_t)nq) &&
                               r <= DENSE_TOL,
                           "%s rope_codes_dot bits=%d D=%zu n=%zu nq=%d neox=%d patched=%d: rel %g", k->isa, bits, D, n,
                           nq, neox, patched, r);
                    free(raw), free(c8), free(s), free(m), free(tab), free(q), free(v), free(o1), free(o2), free(w1),
                        free(w2), free(rows), free(pstart);
                }
}

/* lut8_scan against the reference: bit-identical scores for token counts
 * around the 64-token pass (tails), piece counts 1..64 and past the SIMD
 * limit, odd strides (unaligned rows), every code value, poisoned outputs;
 * and the reference against its definition on one hand-made token */
static void test_lut8_scan(const vq_kernels *k, const vq_kernels *ref)
{
    static const size_t Ms[] = { 1, 8, 16, 32, 64, 65 };
    static const size_t ns[] = { 1, 63, 64, 65, 200 };
    for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++)
        for (size_t in = 0; in < sizeof ns / sizeof *ns; in++)
            for (int nq = 1; nq <= 5; nq += 2) {
                const size_t M = Ms[im], n = ns[in], stride = M + 3, qs = VQ_L8_HEAD + M * 256 + 5, ss = n + 3;
                uint8_t *codes = malloc(stride * n + 1), *tab = malloc(qs * (size_t)nq + 1);
                float *s1 = malloc(sizeof(float) * ss * (size_t)nq), *s2 = malloc(sizeof(float) * ss * (size_t)nq);
                fill_bytes(codes, stride * n + 1, M * 7 + n);
                fill_bytes(tab, qs * (size_t)nq + 1, M + n + (size_t)nq);
                for (int j = 0; j < nq; j++) { /* finite bias and delta */
                    const float bd[2] = { 0.25f * (float)(j + 1) - 3.0f, 1.0f / 512.0f * (float)(j + 1) };
                    memcpy(tab + 1 + (size_t)j * qs, bd, sizeof bd);
                }
                for (size_t i = 0; i < ss * (size_t)nq; i++)
                    s1[i] = s2[i] = NAN; /* poisoned: every score must be written, and nothing past n */
                ref->lut8_scan(codes + 1, stride, n, M, tab + 1, qs, nq, s1, ss);
                k->lut8_scan(codes + 1, stride, n, M, tab + 1, qs, nq, s2, ss);
                int ok = 1;
                for (int j = 0; j < nq; j++)
                    for (size_t i = 0; i < ss; i++) {
                        const float a = s1[(size_t)j * ss + i], b = s2[(size_t)j * ss + i];
                        ok &= i < n ? (memcmp(&a, &b, sizeof a) == 0 && !isnan(a)) : (isnan(a) && isnan(b));
                    }
                CHECKF(ok, "%s lut8_scan M=%zu n=%zu nq=%d: other scores", k->isa, M, n, nq);
                free(codes), free(tab), free(s1), free(s2);
            }
    /* one token, M = 3, codes 0, 255, 128: bias + delta * (T0[0] + T1[255] + T2[128]) */
    uint8_t tab[VQ_L8_HEAD + 3 * 256] = { 0 }, c[3] = { 0, 255, 128 };
    const float bd[2] = { 1.5f, 0.5f };
    memcpy(tab, bd, sizeof bd);
    tab[VQ_L8_HEAD + 0] = 7, tab[VQ_L8_HEAD + 256 + 255] = 200, tab[VQ_L8_HEAD + 512 + 128] = 13;
    float out = 0.0f;
    ref->lut8_scan(c, 3, 1, 3, tab, sizeof tab, 1, &out, 1);
    CHECKF(out == 1.5f + 0.5f * 220.0f, "lut8_scan_ref: %g, want 111.5", (double)out);
}

/* fwht and flip_signs: the reference's bits at every size they take,
 * unaligned; the reference flip against the bit it reads */
static void test_fwht(const vq_kernels *k, const vq_kernels *ref)
{
    size_t sizes[32], ns = 0;
    for (size_t n = 1; n <= 1024; n *= 2)
        sizes[ns++] = n;
    for (size_t m = 16; m <= 512; m *= 2)
        sizes[ns++] = 3 * m;
    sizes[ns++] = 24; /* three blocks of 8: the reference */
    for (size_t i = 0; i < ns; i++) {
        const size_t n = sizes[i];
        float *a = malloc(sizeof(float) * (n + 1)), *b = malloc(sizeof(float) * (n + 1));
        fill(a, n + 1, 900 + n);
        memcpy(b, a, sizeof(float) * (n + 1));
        ref->fwht(a + 1, n);
        k->fwht(b + 1, n);
        CHECKF(same_bits(a, b, n + 1), "%s fwht n=%zu", k->isa, n);
        free(a), free(b);
    }
    for (size_t n = 1; n <= 300; n += n < 40 ? 1 : 37) {
        float *a = malloc(sizeof(float) * (n + 1)), *b = malloc(sizeof(float) * (n + 1)),
              *x = malloc(sizeof(float) * (n + 1));
        uint8_t bits[48];
        fill(a, n + 1, 950 + n);
        fill_bytes(bits, sizeof bits, 970 + n);
        memcpy(b, a, sizeof(float) * (n + 1));
        memcpy(x, a, sizeof(float) * (n + 1));
        ref->flip_signs(a + 1, bits, n);
        k->flip_signs(b + 1, bits, n);
        CHECKF(same_bits(a, b, n + 1), "%s flip_signs n=%zu", k->isa, n);
        int ok = a[0] == x[0];
        for (size_t e = 0; e < n; e++)
            ok &= a[1 + e] == ((bits[e / 8] >> (e % 8)) & 1 ? -x[1 + e] : x[1 + e]);
        CHECKF(ok, "flip_signs_ref n=%zu: not the bits' sign flips", n);
        free(a), free(b), free(x);
    }
}

static void test_tables(void)
{
    const vq_kernels *ref = vq_kernels_variant("scalar");
    CHECK(ref && !ref->simd);
    CHECK(vq_kernels_get() != NULL);
    const char *isas[] = { "avx2", "avx512" };
    for (int i = 0; i < 2; i++) {
        const vq_kernels *k = vq_kernels_variant(isas[i]);
        if (!k) {
            printf("  (%s not available on this CPU or forced off: not run)\n", isas[i]);
            continue;
        }
        test_dense(k, ref);
        test_fp16_rows(k, ref);
        test_fp16_from_rows(k, ref);
        test_qblocks(k, ref);
        test_rows(k, ref);
        test_lut8_row(k, ref);
        test_bitdot(k, ref);
        test_signscore(k, ref);
        test_ftab_score(k, ref);
        test_level_tables(k, ref);
        test_lut_axpy(k, ref);
        test_pq_axpy(k, ref);
        test_pq_score(k, ref);
        test_outlier_adds(k, ref);
        test_codes_dot(k, ref);
        test_codes_dot_pair(k, ref);
        test_nearest8(k, ref);
        test_ordered_matvec(k, ref);
        test_qdot(k, ref);
        test_qdot_prepare(k, ref);
        test_codes_qdot(k, ref);
        test_qaxpy(k, ref);
        test_half(k, ref);
        test_qrows(k, ref);
        test_kivi_axpy(k, ref);
        test_kivi_qaxpy(k, ref);
        test_lut_qaxpy(k, ref);
        test_qaxpy8(k, ref);
        test_rope_pairs(k, ref);
        test_rope_codes_dot(k, ref);
        test_bits_unpack(k, ref);
        test_lut8_scan(k, ref);
        test_lut8_tables(k, ref);
        test_fwht(k, ref);
        test_gated(k, ref);
        test_kivi_kdot(k, ref);
        test_half_ratio(k, ref);
        test_qplanes(k, ref);
        if (i == 0)
            test_kivi_fold();
    }
    test_nibble_tables();
    /* the scalar references against themselves through the table's own
     * definitions: lut_row of a known code */
    uint8_t c[8] = { 0xE4, 0, 0, 0, 0, 0, 0, 0 }; /* 2-bit codes 0,1,2,3,0,... */
    float lut[4] = { 1, 2, 3, 4 }, out[16];
    ref->lut_row(c, 2, 16, lut, 2.0f, 0, out);
    CHECK(out[0] == 2.0f && out[1] == 4.0f && out[2] == 6.0f && out[3] == 8.0f && out[4] == 2.0f);
}

int main(void)
{
    RUN(test_tables);
    RUN(test_qdot_reference);
    RUN(test_codes_qdot_reference);
    return vq_test_summary("kernels");
}
