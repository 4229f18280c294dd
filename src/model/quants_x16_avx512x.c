/* quants_x16_avx512x.c -- AVX-512 VNNI kernels of the 16-row interleaved
 * Q4_0 / Q4_1 / Q5_0 / Q8_0 layout (quants_x16.h): lane r of every register
 * is row r.
 * Per block: the 16 rows' scales (and mins) by one 256-bit load and one
 * conversion each; four code registers (bytes 4k..4k+3 of every row's
 * codes), each split into low and high nibbles; VPDPBUSD of each against
 * the activation's matching four codes broadcast; then the reference's
 * float steps, lane by lane (the same bits). With m vectors the codes are
 * unpacked once for all of them (batched prefill). Q8_0: eight code
 * registers of signed codes; VPDPBUSD takes |q| (unsigned) against the
 * activation words with q's sign moved onto them (q = -128 gives 128:
 * still exact), two chains of four. */
#include <immintrin.h>
#include <string.h>

#include "model/quants_impl.h"
#include "model/quants_x16.h"

/* prefetch distance in bytes within a group's stream (the group is
 * contiguous: 16 rows x row_bytes; 0-8192 measured, 4096 no worse than any:
 * figures/bench/ab-session15.txt) */
#define X16_PF 4096

static inline __attribute__((always_inline)) int32_t act_word(const vq_act32 *a, int k)
{
    int32_t v;
    memcpy(&v, a->qs + 4 * k, 4);
    return v;
}

/* Q8_0: the 16 rows of a group against M (1..4) vectors */
static inline __attribute__((always_inline)) void tile16_q8(const int M, const uint8_t *w, const uint8_t *act,
                                                            size_t astride, size_t n, float *out, size_t ostride)
{
    const size_t gb = 16 * 34;
    __m512 acc[4];
    for (int j = 0; j < M; j++)
        acc[j] = _mm512_setzero_ps();
    for (size_t b = 0; b < n / 32; b++) {
        const uint8_t *p = w + b * gb;
        for (size_t o = 0; o < gb; o += 64)
            _mm_prefetch((const char *)p + X16_PF + o, _MM_HINT_T0);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
        __m512i u[8];
        __mmask64 neg[8];
        for (int k = 0; k < 8; k++) {
            const __m512i c = _mm512_loadu_si512(p + 32 + 64 * k);
            u[k] = _mm512_abs_epi8(c);
            neg[k] = _mm512_movepi8_mask(c);
        }
        for (int j = 0; j < M; j++) {
            const vq_act32 *a = (const vq_act32 *)(const void *)(act + (size_t)j * astride) + b;
            __m512i I0 = _mm512_setzero_si512(), I1 = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) {
                const __m512i a0 = _mm512_set1_epi32(act_word(a, k)), a1 = _mm512_set1_epi32(act_word(a, 4 + k));
                I0 = _mm512_dpbusd_epi32(I0, u[k], _mm512_mask_sub_epi8(a0, neg[k], _mm512_setzero_si512(), a0));
                I1 = _mm512_dpbusd_epi32(I1, u[4 + k],
                                         _mm512_mask_sub_epi8(a1, neg[4 + k], _mm512_setzero_si512(), a1));
            }
            const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(I0, I1)), _mm512_set1_ps(a->d));
            acc[j] = _mm512_fmadd_ps(d, f, acc[j]);
        }
    }
    for (int j = 0; j < M; j++)
        _mm512_storeu_ps(out + (size_t)j * ostride, acc[j]);
}

/* KIND: VQ_X16_Q4_0, Q4_1, Q5_0, or Q8_0 (tile16_q8) (a constant after inlining). Q5_0: the
 * codes as Q4_0's, each nibble given its fifth bit (bit 4 of the byte)
 * from the rows' high-bit words (quants_x16.h: code register k's bits at
 * byte bits 2k and 2k + 1, shifted onto bit 4). */
static inline __attribute__((always_inline)) void tile16(const int KIND, const int M, const uint8_t *w,
                                                         const uint8_t *act, size_t astride, size_t n, float *out,
                                                         size_t ostride)
{
    if (KIND == VQ_X16_Q8_0) {
        tile16_q8(M, w, act, astride, n, out, ostride);
        return;
    }
    const int Q41 = KIND == VQ_X16_Q4_1, Q5 = KIND == VQ_X16_Q5_0;
    const size_t bb = Q41 ? 20 : Q5 ? 22 : 18, gb = 16 * bb, co = Q41 ? 64 : Q5 ? 96 : 32;
    const float off = Q5 ? -16.0f : -8.0f; /* the codes' offset (Q4_0, Q5_0) */
    const __m512i low = _mm512_set1_epi8(0x0f), b4 = _mm512_set1_epi8(0x10);
    __m512 acc[4], accm[4];
    for (int j = 0; j < M; j++)
        acc[j] = _mm512_setzero_ps(), accm[j] = _mm512_setzero_ps();
    for (size_t b = 0; b < n / 32; b++) {
        const uint8_t *p = w + b * gb;
        for (size_t o = 0; o < gb; o += 64)
            _mm_prefetch((const char *)p + X16_PF + o, _MM_HINT_T0);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
        const __m512 mn = Q41 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32)))
                              : _mm512_setzero_ps();
        const __m512i hw = Q5 ? _mm512_loadu_si512(p + 32) : _mm512_setzero_si512();
        __m512i lo[4], hi[4];
        for (int k = 0; k < 4; k++) {
            const __m512i c = _mm512_loadu_si512(p + co + 64 * k);
            if (Q5) { /* (c & 0x0f) | (h & 0x10), the mask 0x0f as the third operand */
                const int sl = 4 - 2 * k; /* the low nibbles' bit 2k onto bit 4; the high ones' 2k + 1 one less */
                const __m512i hl = sl > 0 ? _mm512_slli_epi32(hw, (unsigned)sl) : _mm512_srli_epi32(hw, (unsigned)-sl);
                const __m512i hh = sl > 1 ? _mm512_slli_epi32(hw, (unsigned)(sl - 1))
                                          : _mm512_srli_epi32(hw, (unsigned)(1 - sl));
                lo[k] = _mm512_ternarylogic_epi32(c, _mm512_and_si512(hl, b4), low, 0xEC);
                hi[k] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(c, 4), _mm512_and_si512(hh, b4), low, 0xEC);
            } else {
                lo[k] = _mm512_and_si512(c, low);
                hi[k] = _mm512_and_si512(_mm512_srli_epi16(c, 4), low);
            }
        }
        for (int j = 0; j < M; j++) {
            const vq_act32 *a = (const vq_act32 *)(const void *)(act + (size_t)j * astride) + b;
            __m512i I0 = _mm512_setzero_si512(), I1 = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) {
                I0 = _mm512_dpbusd_epi32(I0, lo[k], _mm512_set1_epi32(act_word(a, k)));
                I1 = _mm512_dpbusd_epi32(I1, hi[k], _mm512_set1_epi32(act_word(a, 4 + k)));
            }
            const __m512 I = _mm512_cvtepi32_ps(_mm512_add_epi32(I0, I1));
            if (Q41) {
                acc[j] = _mm512_fmadd_ps(d, _mm512_mul_ps(I, _mm512_set1_ps(a->d)), acc[j]);
                accm[j] = _mm512_fmadd_ps(mn, _mm512_set1_ps(a->s), accm[j]);
            } else {
                const __m512 f = _mm512_fmadd_ps(I, _mm512_set1_ps(a->d), _mm512_set1_ps(off * a->s));
                acc[j] = _mm512_fmadd_ps(d, f, acc[j]);
            }
        }
    }
    for (int j = 0; j < M; j++)
        _mm512_storeu_ps(out + (size_t)j * ostride, Q41 ? _mm512_add_ps(acc[j], accm[j]) : acc[j]);
}

void vq_x16_tile16_avx512x(int kind, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                           size_t ostride)
{
    VQ_X16_TILE16_BODY(tile16);
}
