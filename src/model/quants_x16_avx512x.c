/* quants_x16_avx512x.c -- AVX-512 VNNI kernels of the 16-row interleaved
 * Q4_0 / Q4_1 / Q8_0 layout (quants_x16.h): lane r of every register is row r.
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

static inline __attribute__((always_inline)) void tile16(const int Q41, const int M, const uint8_t *w,
                                                         const uint8_t *act, size_t astride, size_t n, float *out,
                                                         size_t ostride)
{
    const size_t bb = Q41 ? 20 : 18, gb = 16 * bb, co = Q41 ? 64 : 32;
    const __m512i low = _mm512_set1_epi8(0x0f);
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
        __m512i lo[4], hi[4];
        for (int k = 0; k < 4; k++) {
            const __m512i c = _mm512_loadu_si512(p + co + 64 * k);
            lo[k] = _mm512_and_si512(c, low);
            hi[k] = _mm512_and_si512(_mm512_srli_epi16(c, 4), low);
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
                const __m512 f = _mm512_fmadd_ps(I, _mm512_set1_ps(a->d), _mm512_set1_ps(-8.0f * a->s));
                acc[j] = _mm512_fmadd_ps(d, f, acc[j]);
            }
        }
    }
    for (int j = 0; j < M; j++)
        _mm512_storeu_ps(out + (size_t)j * ostride, Q41 ? _mm512_add_ps(acc[j], accm[j]) : acc[j]);
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

void vq_x16_tile16_q8_avx512x(int unused, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                              size_t ostride)
{
    (void)unused;
    switch (m) {
    case 1: tile16_q8(1, w, act, astride, n, out, ostride); break;
    case 2: tile16_q8(2, w, act, astride, n, out, ostride); break;
    case 3: tile16_q8(3, w, act, astride, n, out, ostride); break;
    case 4: tile16_q8(4, w, act, astride, n, out, ostride); break;
    default: break;
    }
}

void vq_x16_tile16_avx512x(int q4_1, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                           size_t ostride)
{
    VQ_X16_TILE16_BODY(tile16);
}
