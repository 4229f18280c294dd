/* qdot_avx2.c -- AVX2 twins of vq_qdot and vq_codes_qdot (kernels/qdot.h,
 * kernels/codes_qdot.h) for CPUs without AVX-512 VNNI. Compiled with
 * -mavx2 -mfma; reached through the kernel table only when the CPU has
 * AVX2.
 *
 * The integer sums use VPMADDUBSW (unsigned x signed bytes, pairs summed
 * to 16 bits) and VPMADDWD against ones (to 32 bits). The pair sums stay
 * below 2^15: q4_0 codes and KIVI codes are at most 15, and q8_0 codes are
 * taken as |k| (at most 128) against the query with k's sign, so the
 * integer sums are exact and equal the reference's. The float part repeats
 * the reference's operations in its order, so both functions return the
 * reference's bits. */
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/codes_qdot.h"
#include "kernels/qdot.h"

/* sum of the eight 32-bit lanes (exact) */
static inline int32_t hsum_epi32(__m256i v)
{
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(x);
}

/* 32-bit lane sums of u[i]*s[i] over groups of four (u unsigned, pair sums
 * below 2^15) */
static inline __m256i dot_u8s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* sum_e u_e q_e - off * sum_e q_e of one block (the reference's isum - off*sq) */
static inline int32_t block_isum(int bits, const uint8_t *blk, const int8_t *qb, int32_t sq)
{
    const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)qb);
    if (bits == 8) { /* sum (k+128) q - 128 sq = sum k q */
        const __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
        return hsum_epi32(dot_u8s8(_mm256_sign_epi8(k, k), _mm256_sign_epi8(q, k)));
    }
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
    const __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0f));
    return hsum_epi32(dot_u8s8(u, q)) - 8 * sq;
}

void vq_qdot_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                  size_t qstride, int n_q, float *s, size_t sstride)
{
    vq_qdot_blocks(block_isum, bits, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride);
}

/* the 64 codes of chunk c of a row in codes_qdot.h's order, as two
 * registers of 32 unsigned bytes (positions 0-31, 32-63) */
static inline void chunk64(int bits, const uint8_t *row, size_t c, __m256i *lo, __m256i *hi)
{
    if (bits == 4) { /* position p < 32: low nibble of byte p; p >= 32: high nibble of byte p-32 */
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(row + 32 * c));
        *lo = _mm256_and_si256(b, _mm256_set1_epi8(0x0f));
        *hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), _mm256_set1_epi8(0x0f));
        return;
    }
    /* position 16j + k: bits 2j of byte k */
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(row + 16 * c));
    const __m256i m = _mm256_set1_epi8(0x03);
    *lo = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 2), b), m);
    *hi = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 6), _mm_srli_epi16(b, 4)), m);
}

void vq_codes_qdot_avx2(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                        size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t nc = D / 64;
    if (bits == 3) {
        vq_codes_qdot_ref(codes, rstride, bits, nt, D, qbuf, qstride, n_q, s, sstride);
        return;
    }
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *row = codes + i * rstride;
        for (int j = 0; j < n_q; j++) {
            const uint8_t *qj = qbuf + (size_t)j * qstride;
            const int8_t *q = (const int8_t *)(const void *)(qj + VQ_CQ_HEAD);
            float d, base;
            memcpy(&d, qj, sizeof d);
            memcpy(&base, qj + sizeof d, sizeof base);
            __m256i acc = _mm256_setzero_si256();
            for (size_t c = 0; c < nc; c++) {
                __m256i lo, hi;
                chunk64(bits, row, c, &lo, &hi);
                acc = _mm256_add_epi32(acc, dot_u8s8(lo, _mm256_loadu_si256((const __m256i *)(const void *)(q + 64 * c))));
                acc = _mm256_add_epi32(acc,
                                       dot_u8s8(hi, _mm256_loadu_si256((const __m256i *)(const void *)(q + 64 * c + 32))));
            }
            s[(size_t)j * sstride + i] = d * (float)hsum_epi32(acc) + base;
        }
    }
}
