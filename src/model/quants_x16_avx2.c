/* quants_x16_avx2.c -- AVX2 kernels of the 16-row interleaved Q4_0 / Q4_1
 * / Q5_0 / Q8_0 layout (quants_x16.h): lane r of a register is row 8h + r, h = 0, 1 the
 * group's two halves, swept one after the other (the second sweep reads
 * the group from the first level caches).
 *
 * Per block and half: the 8 rows' scales (and mins) by one 128-bit load
 * and one conversion each; four code registers (bytes 4k..4k+3 of every
 * row's codes), each split into low and high nibbles; VPMADDUBSW of each
 * against the activation's matching four codes broadcast. The eight int16
 * products of a row's lane add up exactly in int16: each holds two code x
 * activation products, |q a| <= 15 * 127, so a lane's sum of eight is at
 * most 16 * 15 * 127 = 30480 < 32768 (codes 0..15, activations -127..127:
 * quants_ref.c's vq_act_quantize32); VPMADDWD by ones then gives the row's
 * exact I in int32. Then the reference's float steps, lane by lane (the
 * same bits as vq_x16_rows16_ref and the AVX-512 kernels). With m vectors
 * the codes are unpacked once for all of them (batched prefill). */
#include <immintrin.h>
#include <string.h>

#include "model/quants_impl.h"
#include "model/quants_x16.h"

/* prefetch distance in bytes within a group's stream (the first sweep's;
 * the AVX-512 kernels' distance, quants_x16_avx512x.c) */
#define X16_PF 4096

static inline __attribute__((always_inline)) __m256i act_word(const vq_act32 *a, int k)
{
    int32_t v;
    memcpy(&v, a->qs + 4 * k, 4);
    return _mm256_set1_epi32(v);
}

/* rows 8h..8h+7 of the group at w against M (1..4) vectors; KIND 0: Q4_0,
 * 1: Q4_1, 2: Q5_0 (the codes as Q4_0's, each nibble given its fifth bit
 * from the rows' high-bit words, as quants_x16_avx512x.c; products up to
 * 2 * 31 * 127 = 7874 a pair, so four of them at most in int16 before
 * VPMADDWD: 31496) */
static inline __attribute__((always_inline)) void half8(const int KIND, const int M, const int h, const uint8_t *w,
                                                        const uint8_t *act, size_t astride, size_t n, float *out,
                                                        size_t ostride)
{
    const int Q41 = KIND == 1, Q5 = KIND == 2;
    const size_t bb = Q41 ? 20 : Q5 ? 22 : 18, gb = 16 * bb, co = Q41 ? 64 : Q5 ? 96 : 32;
    const float off = Q5 ? -16.0f : -8.0f; /* the codes' offset (Q4_0, Q5_0) */
    const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), b4 = _mm256_set1_epi8(0x10);
    const vq_act32 *a[4];
    __m256 acc[4], accm[4];
    for (int j = 0; j < M; j++) {
        a[j] = (const vq_act32 *)(const void *)(act + (size_t)j * astride);
        acc[j] = _mm256_setzero_ps(), accm[j] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < n / 32; b++) {
        const uint8_t *p = w + b * gb;
        if (h == 0)
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)p + X16_PF + o, _MM_HINT_T0);
        const __m256i hw =
            Q5 ? _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 + 32 * h)) : _mm256_setzero_si256();
        __m256i I16[4], I32[4];
        for (int j = 0; j < M; j++)
            I16[j] = I32[j] = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(p + co + 64 * k + 32 * h));
            __m256i lo = _mm256_and_si256(c, low);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), low);
            if (Q5) { /* code register k's bits at byte bits 2k, 2k + 1, onto bit 4 */
                const int sl = 4 - 2 * k;
                const __m256i hl = sl > 0 ? _mm256_slli_epi32(hw, sl) : _mm256_srli_epi32(hw, -sl);
                const __m256i hh = sl > 1 ? _mm256_slli_epi32(hw, sl - 1) : _mm256_srli_epi32(hw, 1 - sl);
                lo = _mm256_or_si256(lo, _mm256_and_si256(hl, b4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(hh, b4));
            }
            for (int j = 0; j < M; j++) {
                const __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(lo, act_word(&a[j][b], k)),
                                                   _mm256_maddubs_epi16(hi, act_word(&a[j][b], 4 + k)));
                I16[j] = _mm256_add_epi16(I16[j], t);
                if (k == 3 || (Q5 && k == 1)) { /* widen: exact in int32 */
                    I32[j] = _mm256_add_epi32(I32[j], _mm256_madd_epi16(I16[j], ones));
                    I16[j] = _mm256_setzero_si256();
                }
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * h)));
        const __m256 mn = Q41 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 32 + 16 * h)))
                              : _mm256_setzero_ps();
        for (int j = 0; j < M; j++) {
            const __m256 I = _mm256_cvtepi32_ps(I32[j]);
            if (Q41) {
                acc[j] = _mm256_fmadd_ps(d, _mm256_mul_ps(I, _mm256_set1_ps(a[j][b].d)), acc[j]);
                accm[j] = _mm256_fmadd_ps(mn, _mm256_set1_ps(a[j][b].s), accm[j]);
            } else {
                const __m256 f = _mm256_fmadd_ps(I, _mm256_set1_ps(a[j][b].d), _mm256_set1_ps(off * a[j][b].s));
                acc[j] = _mm256_fmadd_ps(d, f, acc[j]);
            }
        }
    }
    for (int j = 0; j < M; j++)
        _mm256_storeu_ps(out + (size_t)j * ostride + 8 * h, Q41 ? _mm256_add_ps(acc[j], accm[j]) : acc[j]);
}

/* Q8_0: rows 8h..8h+7 of the group at w against M (1..2) vectors. Per
 * code register (bytes 4k..4k+3 of the 8 rows, signed): VPMADDUBSW of |q|
 * against the activation word with q's sign moved onto it (VPSIGNB: 0
 * where q is 0; q = -128 gives |q| = 128 as an unsigned byte), two
 * products a pair at most 2 * 128 * 127 = 32512 (exact in int16), widened
 * by VPMADDWD at once (a second pair would not fit) */
static inline __attribute__((always_inline)) void half8_q8(const int M, const int h, const uint8_t *w,
                                                           const uint8_t *act, size_t astride, size_t n, float *out,
                                                           size_t ostride)
{
    const size_t gb = 16 * 34;
    const __m256i ones = _mm256_set1_epi16(1);
    const vq_act32 *a[2];
    __m256 acc[2];
    for (int j = 0; j < M; j++) {
        a[j] = (const vq_act32 *)(const void *)(act + (size_t)j * astride);
        acc[j] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < n / 32; b++) {
        const uint8_t *p = w + b * gb;
        if (h == 0)
            for (size_t o = 0; o < gb; o += 64)
                _mm_prefetch((const char *)p + X16_PF + o, _MM_HINT_T0);
        __m256i I[2];
        for (int j = 0; j < M; j++)
            I[j] = _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 + 64 * k + 32 * h));
            const __m256i u = _mm256_abs_epi8(c);
            for (int j = 0; j < M; j++) {
                const __m256i sa = _mm256_sign_epi8(act_word(&a[j][b], k), c);
                I[j] = _mm256_add_epi32(I[j], _mm256_madd_epi16(_mm256_maddubs_epi16(u, sa), ones));
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * h)));
        for (int j = 0; j < M; j++) {
            const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(I[j]), _mm256_set1_ps(a[j][b].d));
            acc[j] = _mm256_fmadd_ps(d, f, acc[j]);
        }
    }
    for (int j = 0; j < M; j++)
        _mm256_storeu_ps(out + (size_t)j * ostride + 8 * h, acc[j]);
}

/* rows 8h..8h+7 against M2 (1..2) vectors, by the kernel of the kind */
static inline __attribute__((always_inline)) void half8_kind(const int KIND, const int M2, const int h,
                                                             const uint8_t *w, const uint8_t *act, size_t astride,
                                                             size_t n, float *out, size_t ostride)
{
    if (KIND == VQ_X16_Q8_0)
        half8_q8(M2, h, w, act, astride, n, out, ostride);
    else
        half8(KIND, M2, h, w, act, astride, n, out, ostride);
}

/* M vectors are taken two at a time: four would hold 12 accumulators and
 * the unpacked codes, more than the 16 registers */
static inline __attribute__((always_inline)) void tile16(const int KIND, const int M, const uint8_t *w,
                                                         const uint8_t *act, size_t astride, size_t n, float *out,
                                                         size_t ostride)
{
    for (int j = 0; j < M; j += 2) {
        const uint8_t *aj = act + (size_t)j * astride;
        float *oj = out + (size_t)j * ostride;
        for (int h = 0; h < 2; h++) {
            if (M - j >= 2)
                half8_kind(KIND, 2, h, w, aj, astride, n, oj, ostride);
            else
                half8_kind(KIND, 1, h, w, aj, astride, n, oj, ostride);
        }
    }
}

void vq_x16_tile16_avx2(int kind, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                        size_t ostride)
{
    VQ_X16_TILE16_BODY(tile16);
}
