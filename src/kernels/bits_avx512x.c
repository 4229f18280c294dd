/* bits_avx512x.c -- bitdot (kernels.h) with AVX-512 VPOPCNTDQ: 512/D
 * tokens share one register (D = 64, 128 or 256; other D go to the POPCNT
 * twin), each query's bit planes are broadcast to every token's lane, and
 * the per-quadword counts, weighted by 2^p, are summed per token. Exact
 * integer results, equal to the reference. */
#include <immintrin.h>

#include "kernels/kernels.h"

/* T = 512/D tokens from codes + i*stride into one register */
static inline __m512i load_tokens(const uint8_t *z, size_t stride, size_t D, size_t have)
{
    const __m128i *p0 = (const __m128i *)(const void *)z;
    if (D == 128) {
        __m512i r = _mm512_castsi128_si512(_mm_loadu_si128(p0));
        for (size_t k = 1; k < 4; k++) {
            __m128i x = k < have ? _mm_loadu_si128((const __m128i *)(const void *)(z + k * stride)) : _mm_setzero_si128();
            r = k == 1 ? _mm512_inserti32x4(r, x, 1) : k == 2 ? _mm512_inserti32x4(r, x, 2) : _mm512_inserti32x4(r, x, 3);
        }
        return r;
    }
    if (D == 256) {
        __m512i r = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)z));
        __m256i x = have > 1 ? _mm256_loadu_si256((const __m256i *)(const void *)(z + stride)) : _mm256_setzero_si256();
        return _mm512_inserti64x4(r, x, 1);
    }
    long long w[8];
    for (size_t k = 0; k < 8; k++)
        w[k] = k < have ? (long long)_mm_cvtsi128_si64(_mm_loadl_epi64((const __m128i *)(const void *)(z + k * stride)))
                        : 0;
    return _mm512_loadu_si512(w);
}

static inline __m512i bcast_plane(const uint8_t *v, size_t D)
{
    if (D == 128)
        return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)v));
    if (D == 256)
        return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)v));
    return _mm512_set1_epi64(_mm_cvtsi128_si64(_mm_loadl_epi64((const __m128i *)(const void *)v)));
}

/* sums of Q = D/64 consecutive quadwords of x (one token each) into
 * out[0 .. have) as 32-bit integers, without leaving the registers */
static inline void token_sums(__m512i x, size_t Q, size_t have, uint32_t *out)
{
    __mmask8 keep = 0xFF;
    if (Q >= 2) { /* pairs of quadwords: the even one gets the sum */
        x = _mm512_add_epi64(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
        keep = 0x55;
    }
    if (Q == 4) { /* quadwords 0 and 2 of each 256 bits: 0 gets the sum */
        x = _mm512_add_epi64(x, _mm512_permutex_epi64(x, 0x4E));
        keep = 0x11;
    }
    __m256i c = _mm512_cvtepi64_epi32(_mm512_maskz_compress_epi64(keep, x));
    _mm256_mask_storeu_epi32(out, (__mmask8)((1u << have) - 1u), c);
}

void vq_bitdot_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes,
                       size_t qstride, int n_q, int qbits, uint32_t *pz, uint32_t *pq)
{
    if (D != 64 && D != 128 && D != 256) {
        vq_bitdot_avx2(codes, stride, n, D, planes, qstride, n_q, qbits, pz, pq);
        return;
    }
    const size_t T = 512 / D, Q = D / 64;
    for (size_t i = 0; i < n; i += T) {
        size_t have = n - i < T ? n - i : T;
        __m512i z = load_tokens(codes + i * stride, stride, D, have);
        token_sums(_mm512_popcnt_epi64(z), Q, have, pz + i);
        for (int j = 0; j < n_q; j++) {
            const uint8_t *v = planes + (size_t)j * qstride;
            __m512i acc = _mm512_setzero_si512();
            for (int p = 0; p < qbits; p++) {
                __m512i c = _mm512_popcnt_epi64(_mm512_and_si512(z, bcast_plane(v + (size_t)p * (D / 8), D)));
                acc = _mm512_add_epi64(acc, _mm512_sllv_epi64(c, _mm512_set1_epi64(p)));
            }
            token_sums(acc, Q, have, pq + (size_t)j * n + i);
        }
    }
}
