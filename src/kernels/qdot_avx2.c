/* qdot_avx2.c -- AVX2 twins of vq_qdot and vq_codes_qprep (kernels/qdot.h,
 * kernels/codes_qdot.h; vq_codes_qdot's twin is codes_qdot_avx2.c) for
 * CPUs without AVX-512 VNNI. Compiled with -mavx2 -mfma; reached through
 * the kernel table only when the CPU has AVX2.
 *
 * qdot's integer sums use VPMADDUBSW (unsigned x signed bytes, pairs
 * summed to 16 bits) and VPMADDWD against ones (to 32 bits). The pair sums
 * stay below 2^15: q4_0 codes are at most 15, and q8_0 codes are taken as
 * |k| (at most 128) against the query with k's sign, so the integer sums
 * are exact and equal the reference's. The float part repeats the
 * reference's operations in its order, so both functions return the
 * reference's bits. */
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/codes_avx2.h"
#include "kernels/codes_qdot.h"
#include "kernels/qdot.h"

/* The unsigned codes of one block of a row: q4_0's nibbles (element e <
 * 16: the low nibble of byte e, else the high nibble of byte e - 16), q8_0's
 * |k| (its signs go onto the query: sign_k) */
static inline __m256i block_codes(int bits, const uint8_t *blk, __m256i *sign_k)
{
    if (bits == 8) {
        const __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
        *sign_k = k;
        return _mm256_sign_epi8(k, k);
    }
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0f));
}

/* [sum(a[0]), ..., sum(a[7])] of eight 32-bit lanes each (exact) */
static inline __m256i hsum8_epi32(const __m256i a[8])
{
    const __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
    const __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(a[4], a[5]), _mm256_hadd_epi32(a[6], a[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

/* Eight rows at a time (row k of a tile in lane k; past nt the last row
 * again, its scores not stored), queries up to QMAX at a time: per block
 * the rows' codes are unpacked once for all queries and their fp16 scales
 * converted once; per (block, query) the eight rows' integer sums come out
 * of one reduction, and the float part runs lane by lane in the
 * reference's order (t = dk * dq; t = t * isum; acc = acc + t, block after
 * block): the reference's bits. */
#define QMAX 8
static inline __attribute__((always_inline)) void qdot_bits(const int BITS, const uint8_t *codes, size_t rstride,
                                                            size_t nt, size_t D, const uint8_t *qbuf, size_t qstride,
                                                            int n_q, float *s, size_t sstride)
{
    const size_t nb = D / 32, bb = BITS == 8 ? 34 : 18;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int j0 = 0; j0 < n_q; j0 += QMAX) {
        const int nj = n_q - j0 < QMAX ? n_q - j0 : QMAX;
        for (size_t i = 0; i < nt; i += 8) {
            const uint8_t *r[8];
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                r[k] = codes + (i + (size_t)k < nt ? i + (size_t)k : nt - 1) * rstride;
            __m256 acc[QMAX];
            _Pragma("GCC unroll 8") for (int j = 0; j < QMAX; j++) /* (a constant count: no REP STOS) */
                acc[j] = _mm256_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                __m256i u[8], sk[8];
                __m128i hw[8]; /* word 0: the block's fp16 scale (vq_word0_halves8) */
                _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
                    const uint8_t *blk = r[k] + b * bb;
                    u[k] = block_codes(BITS, blk, &sk[k]);
                    hw[k] = _mm_loadu_si128((const __m128i *)(const void *)blk); /* within the 18 or 34 bytes */
                }
                const __m256 dk = vq_word0_halves8(hw);
                for (int j = 0; j < nj; j++) {
                    const uint8_t *qj = qbuf + (size_t)(j0 + j) * qstride;
                    const __m256i q = _mm256_loadu_si256(
                        (const __m256i *)(const void *)(qj + nb * (sizeof(float) + sizeof(int32_t)) + 32 * b));
                    float dq;
                    int32_t sq;
                    memcpy(&dq, qj + b * sizeof(float), sizeof dq);
                    memcpy(&sq, qj + nb * sizeof(float) + b * sizeof(int32_t), sizeof sq);
                    __m256i a[8];
                    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
                        a[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], BITS == 8 ? _mm256_sign_epi8(q, sk[k]) : q),
                                                 ones);
                    __m256i isum = hsum8_epi32(a);
                    if (BITS != 8) /* sum (k+8) q - 8 sq */
                        isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(8 * sq));
                    /* one operation per step, as the reference */
                    const __m256 t = _mm256_mul_ps(_mm256_mul_ps(dk, _mm256_set1_ps(dq)), _mm256_cvtepi32_ps(isum));
                    acc[j] = _mm256_add_ps(acc[j], t);
                }
            }
            const size_t m = nt - i < 8 ? nt - i : 8;
            for (int j = 0; j < nj; j++) {
                float v[8];
                _mm256_storeu_ps(v, acc[j]);
                memcpy(s + (size_t)(j0 + j) * sstride + i, v, m * sizeof(float));
            }
        }
    }
}

void vq_qdot_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                  size_t qstride, int n_q, float *s, size_t sstride)
{
    if (bits == 8) /* the width a constant in the loops */
        qdot_bits(8, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride);
    else
        qdot_bits(4, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride);
}
#undef QMAX

/* vq_codes_qprep's twin: the same bytes. x = q*s (one multiply), amax by
 * vector maxima (order-free), base by one FMA of q and m + h s per channel
 * in the lanes e % 16 (two registers) reduced by vq_sum16_lanes' tree, less
 * d * h * sum(qi) (sum(qi) by VPSADBW over the packed bytes), d and inv divided
 * in scalar as the reference, and round((q*s)*inv) to nearest even as
 * lrintf does; the rounded values are held at -127 and above as the
 * reference clamps them (only an infinite inv, from a denormal amax,
 * gives the converter's 0x80000000 there), and the saturating packs hold
 * them at 127. Per 64-channel chunk the packed bytes are put in natural
 * order by one dword permute, then in codes_qdot.h's order by byte
 * shuffles within 128-bit lanes and qword / lane moves. The header's halves
 * are converted once per call; D a multiple of 64 up to 256 (else the
 * reference). */
/* the chunk's 64 int8 values (channels 0-31 in c0, 32-63 in c1, natural
 * order) stored in codes_qdot.h's order for `bits` */
static inline void qprep_store_chunk(int bits, __m256i c0, __m256i c1, uint8_t *out)
{
    if (bits == 3) { /* position p is channel p */
        _mm256_storeu_si256((__m256i *)(void *)out, c0);
        _mm256_storeu_si256((__m256i *)(void *)(out + 32), c1);
        return;
    }
    if (bits == 4) { /* positions 0-31: the even channels, 32-63: the odd ones */
        const __m256i eo = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, /* per lane */
                                            0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        /* qwords [E0 O0 E1 O1] -> [E0 E1 O0 O1] */
        const __m256i a = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(c0, eo), 0xD8);
        const __m256i b = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(c1, eo), 0xD8);
        _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(out + 32), _mm256_permute2x128_si256(a, b, 0x31));
        return;
    }
    /* 2 bits: position 16j + k is channel 4k + j. Per lane (4 values of k,
     * 4 of j) a 4x4 byte transpose gives dwords j = 0..3; dwords of c0 are
     * then [j0a j1a j2a j3a | j0b j1b j2b j3b] (a: k 0-3, b: k 4-7), of c1
     * the same for c: k 8-11, d: k 12-15 */
    const __m256i tr = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m256i pair = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i a = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(c0, tr), pair); /* j0a j0b j1a j1b ... */
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(c1, tr), pair); /* j0c j0d j1c j1d ... */
    const __m256i lo = _mm256_unpacklo_epi64(a, b); /* [j0 | j2] */
    const __m256i hi = _mm256_unpackhi_epi64(a, b); /* [j1 | j3] */
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* 32 rounded values of 4 registers (channels 8u..8u+7) as bytes, natural order */
static inline __m256i pack32(__m256i r0, __m256i r1, __m256i r2, __m256i r3)
{
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(r0, r1), _mm256_packs_epi32(r2, r3));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void vq_codes_qprep_avx2(const float *qs, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits,
                         uint8_t *dst, size_t dstride)
{
    if (D % 64 || D > 256) {
        vq_codes_qprep(qs, qstride, n_q, hdr, D, bits, dst, dstride);
        return;
    }
    float S[256], M[256];
    for (size_t e = 0; e < D; e += 8) {
        _mm256_storeu_ps(S + e, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(hdr + 2 * e))));
        _mm256_storeu_ps(M + e, _mm256_fmadd_ps(_mm256_set1_ps((float)(1 << (bits - 1))), /* m + h s */
                                                _mm256_loadu_ps(S + e),
                                                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(hdr + 2 * D + 2 * e)))));
    }
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i lowest = _mm256_set1_epi32(-127);
    /* in three sweeps over up to QP_BATCH queries, so that the queries'
     * dependency chains (maximum, divisions, rounding) overlap */
    enum { QP_BATCH = 16 };
    for (int j0 = 0; j0 < n_q; j0 += QP_BATCH) {
        const int nj = n_q - j0 < QP_BATCH ? n_q - j0 : QP_BATCH;
        float amax[QP_BATCH], base[QP_BATCH];
        for (int j = 0; j < nj; j++) {
            const float *qv = qs + (size_t)(j0 + j) * qstride;
            __m256 mx = _mm256_setzero_ps(), l0 = _mm256_setzero_ps(), l1 = _mm256_setzero_ps();
            for (size_t e = 0; e < D; e += 16) {
                const __m256 x0 = _mm256_loadu_ps(qv + e), x1 = _mm256_loadu_ps(qv + e + 8);
                mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_mul_ps(x0, _mm256_loadu_ps(S + e)), absmask));
                mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_mul_ps(x1, _mm256_loadu_ps(S + e + 8)), absmask));
                l0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(M + e), l0);
                l1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(M + e + 8), l1);
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            amax[j] = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
            base[j] = vq_sum16x256(l0, l1);
        }
        float d[QP_BATCH], inv[QP_BATCH];
        for (int j = 0; j < nj; j++)
            d[j] = amax[j] / 127.0f, inv[j] = amax[j] > 0.0f ? 127.0f / amax[j] : 0.0f;
        for (int j = 0; j < nj; j++) {
            const float *qv = qs + (size_t)(j0 + j) * qstride;
            uint8_t *out = dst + (size_t)(j0 + j) * dstride;
            const __m256 vi = _mm256_set1_ps(inv[j]);
            __m256i qsum = _mm256_setzero_si256(); /* the bytes + 128, by sums of absolute differences */
            for (size_t c = 0; c < D / 64; c++) {
                __m256i r[8];
                _Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) {
                    const size_t e = 64 * c + 8 * (size_t)u;
                    const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(qv + e), _mm256_loadu_ps(S + e));
                    r[u] = _mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(x, vi)), lowest);
                }
                const __m256i c0 = pack32(r[0], r[1], r[2], r[3]), c1 = pack32(r[4], r[5], r[6], r[7]);
                qprep_store_chunk(bits, c0, c1, out + VQ_CQ_HEAD + 64 * c);
                const __m256i flip = _mm256_set1_epi8(-128);
                qsum = _mm256_add_epi64(qsum, _mm256_sad_epu8(_mm256_xor_si256(c0, flip), _mm256_setzero_si256()));
                qsum = _mm256_add_epi64(qsum, _mm256_sad_epu8(_mm256_xor_si256(c1, flip), _mm256_setzero_si256()));
            }
            const __m128i q2 = _mm_add_epi64(_mm256_castsi256_si128(qsum), _mm256_extracti128_si256(qsum, 1));
            const int32_t q_total = (int32_t)(_mm_cvtsi128_si64(q2) + _mm_extract_epi64(q2, 1)) - 128 * (int32_t)D;
            const float b = base[j] - d[j] * (float)(q_total * (1 << (bits - 1)));
            memcpy(out, &d[j], sizeof d[j]);
            memcpy(out + sizeof d[j], &b, sizeof b);
        }
    }
}

/* vq_qdot_prepare's twin: the same bytes. Per block of 32 the maximum of
 * |x| by vector maxima (|x| first: a NaN is passed over, as fmaxf does),
 * d and inv divided in scalar as the reference, round(x * inv) to nearest
 * even as lrintf does, held to [-127, 127] (an infinite inv, from a
 * denormal maximum, gives the converter's 0x80000000: -127, as the
 * reference's clamp of lrintf's), the values' sum in integers and the
 * bytes by pack32. */
void vq_qdot_prepare_avx2(const float *x, size_t D, uint8_t *dst)
{
    const size_t nb = D / 32;
    uint8_t *dp = dst, *sp = dst + nb * sizeof(float);
    int8_t *q = (int8_t *)(void *)(dst + nb * (sizeof(float) + sizeof(int32_t)));
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    for (size_t b = 0; b < nb; b++) {
        __m256 v[4], mx = _mm256_setzero_ps();
        for (int u = 0; u < 4; u++) {
            v[u] = _mm256_loadu_ps(x + 32 * b + 8 * (size_t)u);
            mx = _mm256_max_ps(_mm256_andnot_ps(sign, v[u]), mx);
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
        const float amax = _mm_cvtss_f32(m4), d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        const __m256 vi = _mm256_set1_ps(inv);
        __m256i r[4], sum = _mm256_setzero_si256();
        for (int u = 0; u < 4; u++) {
            r[u] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v[u], vi)), lo), hi);
            sum = _mm256_add_epi32(sum, r[u]);
        }
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
        const int32_t isum = _mm_cvtsi128_si32(s4);
        _mm256_storeu_si256((__m256i *)(void *)(q + 32 * b), pack32(r[0], r[1], r[2], r[3]));
        memcpy(dp + b * sizeof(float), &d, sizeof d);
        memcpy(sp + b * sizeof(int32_t), &isum, sizeof isum);
    }
}
