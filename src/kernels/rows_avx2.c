/* rows_avx2.c -- AVX2 + FMA + F16C twins of kernels.h's row decoders
 * (lut_row, kivi_row, kivi_group_row, lut8_row) and of kivi_axpy, all with
 * the reference's bits.
 *
 * kivi_axpy: per row t = s * c (the group's scale; for b <= 3 by one
 * permute of the table s * (k & mask), k = 0..7, indexed by the shifted
 * codes: the same products), one FMA w * t per accumulator element, wm =
 * fma(w, m, wm) per group, and the min sum added after the last row. Columns go 16 at a time (two registers of eight);
 * group % 16 == 0, so the 16 columns share one group's scale and minimum.
 * Eight codes of b bits (b = 1..4) are b bytes, whole bytes from the
 * column pass's start: every lane takes the same dword (those b bytes) and
 * shifts it by b * lane. */
#include <immintrin.h>
#include <string.h>

#include "kernels/codes_avx2.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

/* lane k: the dword of the eight codes at p shifted down by b * k (code k
 * in the low b bits, the later codes above it) */
static inline __m256i codes8_shifted(const uint8_t *p, int b, __m256i shifts)
{
    const uint32_t x = (uint32_t)vq_load_le(p, b); /* b bytes: nothing past the eight codes is read */
    return _mm256_srlv_epi32(_mm256_set1_epi32((int)x), shifts);
}

/* s * c for the eight codes at p: by the table (b <= 3: a permute reads the
 * index's low 3 bits) or by convert and multiply (b = 4) */
static inline __m256 scaled8(const uint8_t *p, int b, __m256i shifts, __m256i mask, __m256 s, __m256 table)
{
    const __m256i v = codes8_shifted(p, b, shifts);
    if (b <= 3)
        return _mm256_permutevar8x32_ps(table, v);
    return _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_and_si256(v, mask)));
}

static inline float half_at(const uint8_t *p, size_t k)
{
    uint16_t h;
    memcpy(&h, p + 2 * k, 2);
    return _cvtsh_ss(h);
}

/* 8 tokens per step: one gather of each token's 4 header bytes, the low
 * and the high halves packed into 8 words each and converted (exact), then
 * the reference's multiply and division; the last n % 8 by the reference */
void vq_half_ratio_avx2(const uint8_t *base, size_t stride, size_t n, float c, float *out)
{
    size_t i = 0;
    if (stride >= 4 && stride < (1u << 27)) {
        const __m256i ix = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
        /* per 128-bit lane: bytes 0-1 of each dword to the low 8 bytes, 2-3 to the high 8 */
        const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9,
                                              12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
        const __m256 vc = _mm256_set1_ps(c);
        for (; i + 8 <= n; i += 8) {
            const __m256i w = _mm256_i32gather_epi32((const int *)(const void *)(base + i * stride), ix, 1);
            /* quadwords: lo halves of tokens 0-3, hi 0-3, lo 4-7, hi 4-7 */
            const __m256i q = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(w, pick), 0xD8);
            const __m256 h0 = _mm256_cvtph_ps(_mm256_castsi256_si128(q)), h1 = _mm256_cvtph_ps(_mm256_extracti128_si256(q, 1));
            _mm256_storeu_ps(out + i, _mm256_div_ps(h0, _mm256_mul_ps(h1, vc)));
        }
    }
    vq_half_ratio_ref(base + i * stride, stride, n - i, c, out + i);
}

/* columns [c0, c0 + 16) for weight rows j0 .. j0 + NQ - 1 (NQ 1..4) */
static inline __attribute__((always_inline)) void
kivi_axpy16(const uint8_t *rows, size_t rstride, const int BITS, size_t nt, size_t ng, size_t g, size_t c0,
            const float *w, size_t wstride, int j0, const int NQ, float *acc, size_t astride)
{
    const __m256i sh = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(BITS));
    const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);
    const __m256 levels = vq_int_levels8(BITS < 4 ? BITS : 3);
    __m256 A[4][2];
    __m128 WM[4];
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++) {
        WM[jj] = _mm_setzero_ps();
        A[jj][0] = _mm256_loadu_ps(acc + (size_t)(j0 + jj) * astride + c0);
        A[jj][1] = _mm256_loadu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 8);
    }
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *r = rows + i * rstride;
        if (c0 == 0) /* the first column pass streams the rows */
            vq_prefetch_span(r, VQ_PF_AHEAD, rstride);
        const __m256 s = _mm256_set1_ps(half_at(r, g));
        const __m128 m = _mm_set_ss(half_at(r + 2 * ng, g));
        const uint8_t *codes = r + 4 * ng + c0 * (size_t)BITS / 8;
        const __m256 table = BITS <= 3 ? _mm256_mul_ps(s, levels) : s;
        const __m256 t0 = scaled8(codes, BITS, sh, mask, s, table);
        const __m256 t1 = scaled8(codes + BITS, BITS, sh, mask, s, table);
        _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++) {
            const float wi = w[(size_t)(j0 + jj) * wstride + i];
            const __m256 x = _mm256_set1_ps(wi);
            A[jj][0] = _mm256_fmadd_ps(x, t0, A[jj][0]);
            A[jj][1] = _mm256_fmadd_ps(x, t1, A[jj][1]);
            WM[jj] = _mm_fmadd_ss(_mm_set_ss(wi), m, WM[jj]);
        }
    }
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++) {
        const __m256 wm = _mm256_set1_ps(_mm_cvtss_f32(WM[jj]));
        _mm256_storeu_ps(acc + (size_t)(j0 + jj) * astride + c0, _mm256_add_ps(A[jj][0], wm));
        _mm256_storeu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 8, _mm256_add_ps(A[jj][1], wm));
    }
}

static inline __attribute__((always_inline)) void kivi_axpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                                 size_t nt, size_t D, size_t group, const float *w,
                                                                 size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t ng = D / group;
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
        for (size_t c0 = 0; c0 < D; c0 += 16) {
            const size_t g = c0 / group;
            switch (nq) {
            case 4: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 4, acc, astride); break;
            case 3: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 3, acc, astride); break;
            case 2: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 2, acc, astride); break;
            default: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 1, acc, astride); break;
            }
        }
    }
}

void vq_kivi_axpy_avx2(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                       const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if (bits < 1 || bits > 4 || D % 16 || group % 16) {
        vq_kivi_axpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    switch (bits) { /* the width a constant: the decode has no branch */
    case 1: kivi_axpy_bits(rows, rstride, 1, nt, D, group, w, wstride, n_q, acc, astride); break;
    case 2: kivi_axpy_bits(rows, rstride, 2, nt, D, group, w, wstride, n_q, acc, astride); break;
    case 3: kivi_axpy_bits(rows, rstride, 3, nt, D, group, w, wstride, n_q, acc, astride); break;
    default: kivi_axpy_bits(rows, rstride, 4, nt, D, group, w, wstride, n_q, acc, astride); break;
    }
}

/* ---- the row decoders (lut_row, kivi_row, kivi_group_row, lut8_row):
 * sixteen codes at a time by codes_avx2.h, with the reference's one
 * multiply, then one add per element (the same bits) ---------------- */

#define ROW_BITS(F, ...)                                                                                        \
    switch (bits) { /* the width a constant: the decode has no branch */                                       \
    case 1: F(1, __VA_ARGS__); break;                                                                          \
    case 2: F(2, __VA_ARGS__); break;                                                                          \
    case 3: F(3, __VA_ARGS__); break;                                                                          \
    default: F(4, __VA_ARGS__); break;                                                                         \
    }

static inline __attribute__((always_inline)) void lut_row_bits(const int BITS, const uint8_t *codes, size_t n,
                                                               const float *lut, float scale, int add, float *out)
{
    const __m256i sh0 = vq_codes_shifts(BITS, 0), sh1 = vq_codes_shifts(BITS, 1);
    /* scale * lut[k], one multiply each as the reference */
    const __m256 sc = _mm256_set1_ps(scale);
    const __m256 l0 = _mm256_mul_ps(sc, vq_levels8(lut, BITS < 4 ? BITS : 3));
    const __m256 l1 = BITS == 4 ? _mm256_mul_ps(sc, _mm256_loadu_ps(lut + 8)) : l0;
    for (size_t i = 0; i < n; i += 16) {
        __m256i lo, hi;
        vq_codes16(codes + i / 8 * (size_t)BITS, BITS, sh0, sh1, &lo, &hi);
        __m256 x0 = vq_level_of(lo, BITS, l0, l1), x1 = vq_level_of(hi, BITS, l0, l1);
        if (add) {
            x0 = _mm256_add_ps(_mm256_loadu_ps(out + i), x0);
            x1 = _mm256_add_ps(_mm256_loadu_ps(out + i + 8), x1);
        }
        _mm256_storeu_ps(out + i, x0);
        _mm256_storeu_ps(out + i + 8, x1);
    }
}

void vq_lut_row_avx2(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out)
{
    if (bits < 1 || bits > 4 || n % 16) {
        vq_lut_row_ref(codes, bits, n, lut, scale, add, out);
        return;
    }
    ROW_BITS(lut_row_bits, codes, n, lut, scale, add, out)
}

/* out[e] = s(e) * c_e + m(e) for 16 channels from i: s, m per channel (GS
 * 0) or one for all (GS 1, lanes equal) */
static inline __attribute__((always_inline)) void kivi16(const int BITS, const uint8_t *row, size_t i, __m256 s0,
                                                         __m256 s1, __m256 m0, __m256 m1, float *out)
{
    const __m256i sh0 = vq_codes_shifts(BITS, 0), sh1 = vq_codes_shifts(BITS, 1), mask = vq_codes_mask(BITS);
    __m256i lo, hi;
    vq_codes16(row + i / 8 * (size_t)BITS, BITS, sh0, sh1, &lo, &hi);
    const __m256 t0 = _mm256_mul_ps(s0, _mm256_cvtepi32_ps(_mm256_and_si256(lo, mask)));
    const __m256 t1 = _mm256_mul_ps(s1, _mm256_cvtepi32_ps(_mm256_and_si256(hi, mask)));
    _mm256_storeu_ps(out + i, _mm256_add_ps(t0, m0));
    _mm256_storeu_ps(out + i + 8, _mm256_add_ps(t1, m1));
}

static inline __attribute__((always_inline)) void kivi_row_bits(const int BITS, const uint8_t *row, size_t n,
                                                                const float *s, const float *m, float *out)
{
    for (size_t i = 0; i < n; i += 16)
        kivi16(BITS, row, i, _mm256_loadu_ps(s + i), _mm256_loadu_ps(s + i + 8), _mm256_loadu_ps(m + i),
               _mm256_loadu_ps(m + i + 8), out);
}

void vq_kivi_row_avx2(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out)
{
    if (bits < 1 || bits > 4 || n % 16) {
        vq_kivi_row_ref(row, bits, n, s, m, out);
        return;
    }
    ROW_BITS(kivi_row_bits, row, n, s, m, out)
}

static inline __attribute__((always_inline)) void kivi_group_row_bits(const int BITS, const uint8_t *row, size_t n,
                                                                      size_t group, const uint8_t *gs16,
                                                                      const uint8_t *gm16, float *out)
{
    for (size_t g0 = 0; g0 < n; g0 += group) {
        const __m256 s = _mm256_set1_ps(half_at(gs16, g0 / group)), m = _mm256_set1_ps(half_at(gm16, g0 / group));
        for (size_t i = g0; i < g0 + group; i += 16)
            kivi16(BITS, row, i, s, s, m, m, out);
    }
}

void vq_kivi_group_row_avx2(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                            const uint8_t *gm16, float *out)
{
    if (bits < 1 || bits > 4 || n % 16 || group == 0 || group % 16 || n % group) {
        vq_kivi_group_row_ref(row, bits, n, group, gs16, gm16, out);
        return;
    }
    ROW_BITS(kivi_group_row_bits, row, n, group, gs16, gm16, out)
}

void vq_lut8_row_avx2(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t b;
        memcpy(&b, c8 + i, 8);
        const __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)b));
        const __m256 v = lut ? _mm256_i32gather_ps(lut, idx, 4) : _mm256_cvtepi32_ps(idx);
        const __m256 t = _mm256_mul_ps(_mm256_loadu_ps(s + i), v);
        _mm256_storeu_ps(out + i, _mm256_add_ps(t, _mm256_loadu_ps(m + i)));
    }
    for (; i < n; i++) {
        const float t = s[i] * (lut ? lut[c8[i]] : (float)c8[i]);
        out[i] = t + m[i];
    }
}
