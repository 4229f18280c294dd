/* bits_avx512x.c -- bitdot and signscore (kernels.h) with AVX-512
 * VPOPCNTDQ: 512/D tokens share one register (D = 64, 128 or 256; other D
 * go to the POPCNT twin), each query's bit planes are broadcast to every
 * token's lane, and the per-quadword counts, weighted by 2^p, are summed
 * per token. bitdot's integers equal the reference's; signscore keeps the
 * sums in the registers and does the reference's float steps on them, in
 * its order, so its scores have the reference's bits too. */
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"
#include "kernels/signscore_avx512.h"

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

/* per-quadword counts summed over each token's Q quadwords; the sum lands
 * in the token's first dword */
static inline __m512i reduce_tokens(__m512i x, size_t Q)
{
    if (Q >= 2)
        x = _mm512_add_epi64(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
    if (Q == 4)
        x = _mm512_add_epi64(x, _mm512_permutex_epi64(x, 0x4E));
    return x;
}

/* x's per-token sums (reduce_tokens: token t's at dword t*S, S = 16/T)
 * put in token order at dwords r*T + t of acc (token r*T + t of a 16-token
 * group) by one masked permute; sidx: dword (i*S) mod 16 for each i, which
 * is t*S at i = r*T + t for every r (T*S = 16) */
static inline __m512i merge_tokens(__m512i acc, __m512i x, size_t Q, size_t T, size_t r, __m512i sidx)
{
    return _mm512_mask_permutexvar_epi32(acc, (__mmask16)(((1u << T) - 1u) << (r * T)), sidx, reduce_tokens(x, Q));
}

/* one group of up to 16 tokens of vq_signscore_avx512x (D 64, 128 or
 * 256, `two` sets, QB query planes or, QB = 0, qbits of them; all three
 * constants where inlined, and left too for whole groups, so the register
 * and plane loops unroll into independent chains). T = 512/D tokens per
 * register, the integer sums of the group's S = 16/T registers merged into
 * one in token order (merge_tokens), the float steps once per group and
 * query */
static inline __attribute__((always_inline)) void
signscore_group(const size_t D, const int two, const int QB, const uint8_t *grp, size_t stride, const size_t left,
                const size_t *offs, __m512 w0, __m512 w1, const float *f, size_t hoff, __m512i rix, __m512i sidx,
                const uint8_t *planes, size_t qstride, const float *qc, int n_q, int qbits, float *s,
                size_t sstride)
{
    const size_t T = 512 / D, Q = D / 64, S = 16 / T;
    const int nb = QB ? QB : qbits;
    vq_prefetch_span(grp, VQ_PF_AHEAD, 16 * stride);
    __m512i z0[8], z1[8], Z0 = _mm512_setzero_si512(), Z1 = _mm512_setzero_si512(); /* S <= 8 */
    _Pragma("GCC unroll 8") for (size_t r = 0; r < S; r++)
        z0[r] = z1[r] = _mm512_setzero_si512(); /* (registers past a partial group's end stay unread) */
    _Pragma("GCC unroll 8") for (size_t r = 0; r < S; r++)
    {
        if (r * T >= left)
            break;
        const size_t have = left - r * T < T ? left - r * T : T;
        const uint8_t *blk = grp + r * T * stride;
        z0[r] = load_tokens(blk + offs[0], stride, D, have);
        Z0 = merge_tokens(Z0, _mm512_popcnt_epi64(z0[r]), Q, T, r, sidx);
        if (two) {
            z1[r] = load_tokens(blk + offs[1], stride, D, have);
            Z1 = merge_tokens(Z1, _mm512_popcnt_epi64(z1[r]), Q, T, r, sidx);
        }
    }
    const __m512 Z = vq_signscore_sets16(w0, w1, two, Z0, Z1);
    const __mmask16 out_lanes = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1u);
    const __m512 F = f ? _mm512_maskz_loadu_ps(out_lanes, f) : vq_rows16_halves(grp, hoff, stride, rix, left);
    for (int j = 0; j < n_q; j++) {
        const uint8_t *v = planes + (size_t)j * qstride;
        __m512i P0 = _mm512_setzero_si512(), P1 = _mm512_setzero_si512();
        _Pragma("GCC unroll 8") for (size_t r = 0; r < S; r++)
        {
            if (r * T >= left)
                break;
            __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
            _Pragma("GCC unroll 8") for (int p = nb - 1; p >= 0; p--)
            { /* Horner: a = 2a + count of plane p */
                const __m512i pl = bcast_plane(v + (size_t)p * (D / 8), D);
                a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a0), _mm512_popcnt_epi64(_mm512_and_si512(z0[r], pl)));
                if (two)
                    a1 = _mm512_add_epi64(_mm512_add_epi64(a1, a1), _mm512_popcnt_epi64(_mm512_and_si512(z1[r], pl)));
            }
            P0 = merge_tokens(P0, a0, Q, T, r, sidx);
            if (two)
                P1 = merge_tokens(P1, a1, Q, T, r, sidx);
        }
        const __m512 P = vq_signscore_sets16(w0, w1, two, P0, P1);
        _mm512_mask_storeu_ps(s + (size_t)j * sstride, out_lanes, vq_signscore_combine16(Z, P, F, qc + 3 * (size_t)j));
    }
}

/* the loop of vq_signscore_avx512x for one D, set count and QB (see
 * signscore_group): whole groups of 16 tokens with left a constant, then
 * the last, partial one */
static inline __attribute__((always_inline)) void
signscore_loop(const size_t D, const int two, const int QB, const uint8_t *codes, size_t stride, size_t n,
               const size_t *offs, const float *w, const float *f, size_t hoff, const uint8_t *planes, size_t qstride,
               const float *qc, int n_q, int qbits, float *s, size_t sstride)
{
    const size_t S = D / 32; /* 16 / T */
    const __m512i sidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)S));
    const __m512i rix = vq_rows16_index(stride);
    const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(two ? w[1] : 0.0f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        signscore_group(D, two, QB, codes + i * stride, stride, 16, offs, w0, w1, f ? f + i : NULL, hoff, rix, sidx,
                        planes, qstride, qc, n_q, qbits, s + i, sstride);
    if (i < n)
        signscore_group(D, two, QB, codes + i * stride, stride, n - i, offs, w0, w1, f ? f + i : NULL, hoff, rix,
                        sidx, planes, qstride, qc, n_q, qbits, s + i, sstride);
}

void vq_signscore_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs,
                          const float *w, int n_sets, const float *f, size_t hoff, const uint8_t *planes,
                          size_t qstride, const float *qc, int n_q, int qbits, float *s, size_t sstride)
{
#define SIGNSCORE_LOOP(DIM, TWO, QB)                                                                                   \
    signscore_loop(DIM, TWO, QB, codes, stride, n, offs, w, f, hoff, planes, qstride, qc, n_q, qbits, s, sstride)
#define SIGNSCORE_QB(DIM, TWO)                                                                                         \
    do {                                                                                                               \
        if (qbits == 4) /* the codecs' default: the plane loop unrolled */                                            \
            SIGNSCORE_LOOP(DIM, TWO, 4);                                                                               \
        else                                                                                                           \
            SIGNSCORE_LOOP(DIM, TWO, 0);                                                                               \
    } while (0)
    if (n_sets == 1 && D == 64) SIGNSCORE_QB(64, 0);
    else if (n_sets == 1 && D == 128) SIGNSCORE_QB(128, 0);
    else if (n_sets == 1 && D == 256) SIGNSCORE_QB(256, 0);
    else if (n_sets == 2 && D == 64) SIGNSCORE_QB(64, 1);
    else if (n_sets == 2 && D == 128) SIGNSCORE_QB(128, 1);
    else if (n_sets == 2 && D == 256) SIGNSCORE_QB(256, 1);
    else
        vq_signscore_via(vq_bitdot_avx2, codes, stride, n, D, offs, w, n_sets, f, hoff, planes, qstride, qc, n_q,
                         qbits, s, sstride);
#undef SIGNSCORE_QB
#undef SIGNSCORE_LOOP
}
