/* lut_qaxpy_avx512x.c -- AVX-512 VNNI + VBMI twin of vq_lut_qaxpy
 * (kernels/lut_qaxpy.h): the reference's bits.
 *
 * A row's code bytes are read 16 at a time (a chunk: 16 * 8 / bits
 * channels). Per block of 32 rows the int8 weights of each weight row are
 * made once (kernels/wq_avx512x.h). Then per chunk and quad of rows, the
 * quad's 16-byte chunks are transposed by one VPERMB so that 32-bit lane
 * b holds byte b of rows 0..3. Code position k of those bytes (channel
 * 8/bits * b + k of the chunk), at 2 and 4 bits, is shifted down by bits *
 * k and a VPERMB over a 64-byte table (entry x: lev[x mod 2^bits] + 128,
 * unsigned) gives each byte its level; at 1 bit the code stays in place
 * (a mask: 2^k times it), since sum q lev[c] = lev_0 sum q + (lev_1 -
 * lev_0) sum q c. VPDPBUSD against the quad's four weights (one broadcast
 * word) adds the exact sums, each position's bytes used by all the weight
 * rows of a pass at once; 128 * sum q_i (1 bit: the linear form) is
 * applied once per block before the float fold. Rows of only 8 code bytes
 * (D 64 at 1 bit) take eight rows per register, by one gather: 32-bit
 * lane 2x + h holds byte x of rows 4h..4h+3, the weights are one broadcast
 * quadword, and the two lanes of a channel are added (exact) before the
 * fold (one gather rather than eight 8-byte loads: within the noise of
 * each other, the gather 3-4% ahead; figures/bench/ab-session34.txt part
 * 5). The float sums are put back in channel order by
 * one gather per 16 channels at the end. */
#include "kernels/lut_qaxpy.h"

#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "kernels/kivi_qaxpy.h"
#include "kernels/wq_avx512x.h"

#define LQ_MAXQ 4   /* weight rows per pass (1 bit: 3, the registers of 8 code positions) */
#define LQ_MAXR 32  /* float sum registers per weight row: D <= 512 */

/* the VPERMB index of eight rows' 8 bytes (quadword t: row t): byte 4b +
 * r <- byte b / 2 of row r + 4 (b mod 2) */
static inline __m512i oct_index(void)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)(8 * (p % 4 + 4 * (p / 4 % 2)) + p / 8);
    return _mm512_loadu_si512(tix);
}

/* rows 8u .. 8u+7 of a block of m rows (row t at blk + t*stride; rows past
 * m repeat the last, their weights are 0): their 8 code bytes by one
 * gather (ox: the rows' offsets t*stride), transposed by oct_index */
static inline __m512i oct_bytes(const uint8_t *blk, size_t stride, size_t u, size_t m, __m512i ox, __m512i tidx)
{
    __m512i x;
    if (8 * u + 8 <= m) {
        x = _mm512_i64gather_epi64(ox, blk + 8 * u * stride, 1);
    } else {
        long long r[8];
        for (size_t t = 0; t < 8; t++) {
            const size_t i = 8 * u + t < m ? 8 * u + t : m - 1;
            memcpy(&r[t], blk + i * stride, sizeof r[t]);
        }
        x = _mm512_loadu_si512(r);
    }
    return _mm512_permutexvar_epi8(tidx, x);
}

/* code position k of transposed code bytes T as VPDPBUSD's unsigned
 * bytes: 2 and 4 bits its level + 128 (shifted down, then the VPERMB
 * table tbl); 1 bit the code left in place (2^k times it; lut_qaxpy.h's
 * sum is then lev_0 sum q_i + (lev_1 - lev_0) sum q_i c_ie, exact) */
static inline __attribute__((always_inline)) __m512i position(const int BITS, __m512i T, __m512i tbl, int k)
{
    if (BITS == 1)
        return _mm512_and_si512(T, _mm512_set1_epi8((char)(1 << k)));
    return _mm512_permutexvar_epi8(k ? _mm512_srli_epi16(T, (unsigned)(BITS * k)) : T, tbl);
}

/* the NQ weight rows' sums over one register of transposed code bytes T
 * (weights Wq[j]): position by position, each used by all NQ at once */
static inline __attribute__((always_inline)) void add_sums(const int BITS, const int NQ, __m512i T, __m512i tbl,
                                                            const __m512i Wq[LQ_MAXQ], __m512i I[LQ_MAXQ][8])
{
    const int K = 8 / BITS;
    _Pragma("GCC unroll 8") for (int k = 0; k < K; k++)
    {
        const __m512i P = position(BITS, T, tbl, k);
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) I[j][k] = _mm512_dpbusd_epi32(I[j][k], P, Wq[j]);
    }
}

/* one block of m rows for NQ weight rows (their int8 weights qw, scales s,
 * weight sums sq): chunk by chunk the integer sums, folded into F[j][r],
 * register r = 8/BITS * chunk + code position */
static inline __attribute__((always_inline)) void
block_sums(const int BITS, const int NQ, const int OCT, const uint8_t *blk, size_t stride, size_t m, size_t nc,
           __m512i tidx, __m512i ox, __m512i tbl, const int8_t *lev, const int8_t qw[LQ_MAXQ][VQ_KQ_BLOCK],
           const float s[LQ_MAXQ], const int32_t sq[LQ_MAXQ], __m512 F[LQ_MAXQ][LQ_MAXR], vq_pf_share *pf)
{
    const int K = 8 / BITS;
    for (size_t c = 0; c < nc; c++) {
        __m512i I[LQ_MAXQ][8], Wq[LQ_MAXQ];
        _Pragma("GCC unroll 4") for (int j = 0; j < LQ_MAXQ; j++)
        {
            Wq[j] = _mm512_setzero_si512();
            _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) I[j][k] = _mm512_setzero_si512();
        }
        if (OCT) {
            for (size_t u = 0; 8 * u < m; u++) {
                vq_pf_step(pf), vq_pf_step(pf); /* (the fetch counts quads) */
                _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) Wq[j] = vq_bcast_words(&qw[j][8 * u], 2);
                add_sums(BITS, NQ, oct_bytes(blk, stride, u, m, ox, tidx), tbl, Wq, I);
            }
        } else {
            for (size_t u = 0; 4 * u < m; u++) {
                vq_pf_step(pf);
                const uint8_t *p[4];
                vq_quad_rows(blk, stride, 16 * c, u, m, p);
                _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) Wq[j] = vq_bcast_words(&qw[j][4 * u], 1);
                add_sums(BITS, NQ, vq_quad_bytes(p, 0, tidx), tbl, Wq, I);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            /* 2, 4 bits: the 128 of every level off; 1 bit: lev_0 sum q + (lev_1 - lev_0) sum q c */
            const __m512i off = _mm512_set1_epi32(BITS == 1 ? -lev[0] * sq[j] : 128 * sq[j]);
            const __m512i dl = _mm512_set1_epi32(lev[1] - lev[0]);
            const __m512 sv = _mm512_set1_ps(s[j]);
            _Pragma("GCC unroll 8") for (int k = 0; k < K; k++)
            {
                __m512i Ik = I[j][k];
                if (OCT) /* lane 2x: both quads' rows */
                    Ik = _mm512_add_epi32(Ik, _mm512_srli_epi64(Ik, 32));
                if (BITS == 1) /* every product a multiple of 2^k */
                    Ik = _mm512_mullo_epi32(_mm512_srai_epi32(Ik, (unsigned)k), dl);
                const size_t r = (size_t)K * c + (size_t)k;
                F[j][r] = _mm512_fmadd_ps(sv, _mm512_cvtepi32_ps(_mm512_sub_epi32(Ik, off)), F[j][r]);
            }
        }
    }
}

static inline __attribute__((always_inline)) void lut_qaxpy_bits(const int BITS, const int OCT, const uint8_t *codes,
                                                                 size_t stride, size_t nt, size_t D,
                                                                 const int8_t *lev, float step, const float *f,
                                                                 const float *ftab, ptrdiff_t foff, const float *w,
                                                                 size_t wstride, int n_q, float *acc, size_t astride)
{
    const int K = 8 / BITS, lgK = BITS == 1 ? 3 : BITS == 2 ? 2 : 1, QP = BITS == 1 ? 3 : LQ_MAXQ;
    const size_t nc = OCT ? 1 : D * (size_t)BITS / 128, nreg = OCT ? (size_t)K : nc * (size_t)K;
    const __m512i tidx = OCT ? oct_index() : vq_quad_index();
    const __m512i ox = /* (rows of 8 code bytes: the gather's row offsets) */
        _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), _mm512_set1_epi64((long long)stride));
    int8_t t8[64];
    for (int x = 0; x < 64; x++)
        t8[x] = (int8_t)(uint8_t)(lev[x & ((1 << BITS) - 1)] + 128);
    const __m512i tbl = _mm512_loadu_si512(t8);
    /* where channel e's sum sits in a weight row's registers (float index) */
    __m512i gix[LQ_MAXR];
    for (size_t g = 0; g < D / 16; g++) {
        const __m512i e = _mm512_add_epi32(_mm512_set1_epi32((int)(16 * g)),
                                           _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        const __m512i k = _mm512_and_si512(e, _mm512_set1_epi32(K - 1)), x = _mm512_srli_epi32(e, (unsigned)lgK);
        if (OCT) /* register k, lane 2x */
            gix[g] = _mm512_add_epi32(_mm512_slli_epi32(k, 4), _mm512_slli_epi32(x, 1));
        else /* chunk x / 16, register K * chunk + k, lane x mod 16 */
            gix[g] = _mm512_add_epi32(
                _mm512_slli_epi32(_mm512_add_epi32(_mm512_slli_epi32(_mm512_srli_epi32(x, 4), (unsigned)lgK), k), 4),
                _mm512_and_si512(x, _mm512_set1_epi32(15)));
    }
    for (int j0 = 0; j0 < n_q; j0 += QP) {
        const int nq = n_q - j0 < QP ? n_q - j0 : QP;
        __m512 F[LQ_MAXQ][LQ_MAXR];
        for (int j = 0; j < nq; j++)
            for (size_t r = 0; r < nreg; r++)
                F[j][r] = _mm512_setzero_ps();
        vq_pf_share pf = vq_block_fetch(codes, stride, nt, nc, j0 == 0); /* the first pass streams the rows */
        for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
            __mmask16 vm[2];
            const size_t m = vq_block_start(b, nt, vm);
            __m512 f0, f1;
            if (f) {
                f0 = _mm512_maskz_loadu_ps(vm[0], f + b), f1 = _mm512_maskz_loadu_ps(vm[1], f + b + 16);
            } else { /* the byte at foff of each row and its float by scalar loads: two gathers per 16 rows
                      * (the rows' words, then the table's floats) had held up the block's weights on AMD
                      * Zen 4, ~20 cycles each (figures/bench/ab-session50.txt part 4) */
                alignas(64) float fb[VQ_KQ_BLOCK];
                for (size_t i = 0; i < m; i++)
                    fb[i] = ftab[codes[(b + i) * stride + foff]];
                f0 = _mm512_maskz_load_ps(vm[0], fb), f1 = _mm512_maskz_load_ps(vm[1], fb + 16);
            }
            __m512 A[LQ_MAXQ][2], V[LQ_MAXQ + 3];
            for (int j = 0; j < nq; j++) {
                const float *wj = w + (size_t)(j0 + j) * wstride + b;
                A[j][0] = _mm512_mul_ps(_mm512_maskz_loadu_ps(vm[0], wj), f0);
                A[j][1] = _mm512_mul_ps(_mm512_maskz_loadu_ps(vm[1], wj + 16), f1);
                V[j] = _mm512_range_ps(A[j][0], A[j][1], 0x0B); /* max(|a0|, |a1|), sign cleared */
            }
            float sc[LQ_MAXQ + 3], inv[LQ_MAXQ + 3], s[LQ_MAXQ];
            vq_weight_scales(V, (size_t)nq, sc, inv);
            int8_t qw[LQ_MAXQ][VQ_KQ_BLOCK];
            int32_t sq[LQ_MAXQ];
            for (int j = 0; j < nq; j++) {
                sq[j] = vq_round_weights(A[j][0], A[j][1], inv[j], vm, qw[j]);
                s[j] = sc[j] * step;
            }
            const uint8_t *blk = codes + b * stride;
            switch (nq) { /* a constant count: the sums stay in registers */
            case 4: block_sums(BITS, 4, OCT, blk, stride, m, nc, tidx, ox, tbl, lev, qw, s, sq, F, &pf); break;
            case 3: block_sums(BITS, 3, OCT, blk, stride, m, nc, tidx, ox, tbl, lev, qw, s, sq, F, &pf); break;
            case 2: block_sums(BITS, 2, OCT, blk, stride, m, nc, tidx, ox, tbl, lev, qw, s, sq, F, &pf); break;
            default: block_sums(BITS, 1, OCT, blk, stride, m, nc, tidx, ox, tbl, lev, qw, s, sq, F, &pf); break;
            }
        }
        for (int j = 0; j < nq; j++) {
            float *a = acc + (size_t)(j0 + j) * astride;
            const float *Fj = (const float *)(const void *)F[j];
            for (size_t g = 0; g < D / 16; g++)
                _mm512_storeu_ps(a + 16 * g,
                                 _mm512_add_ps(_mm512_loadu_ps(a + 16 * g), _mm512_i32gather_ps(gix[g], Fj, 4)));
        }
    }
}

void vq_lut_qaxpy_avx512x(const uint8_t *codes, size_t stride, size_t nt, size_t D, int bits, const int8_t *lev,
                          float step, const float *f, const float *ftab, ptrdiff_t foff, const float *w,
                          size_t wstride, int n_q, float *acc, size_t astride)
{
    _Static_assert(16 * LQ_MAXR == 512, "vq_lut_qaxpy_simd_shape's D <= 512");
    if (!vq_lut_qaxpy_simd_shape(D, bits) || stride > (1u << 26)) {
        vq_lut_qaxpy_ref(codes, stride, nt, D, bits, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
        return;
    }
    const size_t cb = D * (size_t)bits / 8; /* code bytes per row */
    if (cb == 8) { /* D 64 at 1 bit (32 at 2, 16 at 4) */
        if (bits == 1)
            lut_qaxpy_bits(1, 1, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
        else if (bits == 2)
            lut_qaxpy_bits(2, 1, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
        else
            lut_qaxpy_bits(4, 1, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    } else if (bits == 1) {
        lut_qaxpy_bits(1, 0, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    } else if (bits == 2) {
        lut_qaxpy_bits(2, 0, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    } else {
        lut_qaxpy_bits(4, 0, codes, stride, nt, D, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    }
}
