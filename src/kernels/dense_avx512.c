/* dense_avx512.c -- AVX-512 twins of dense.h's kernels on rows of floats,
 * IEEE halves and q8_0 / q4_0 blocks (E a multiple of 16, 32 for blocks;
 * any other E goes to the AVX2 twin). Compiled with -mavx512f/bw/vl/dq.
 *
 * dot: four queries x four rows at a time (16 accumulators), or eight
 * rows sharing each load of three, two or one queries (the sums in
 * registers); every sum is reduced by vq_hsum8x512's tree, so a score
 * does not depend on its place in the tile or on the other queries. The
 * first query pass over streamed rows fetches VQ_PF_SPREAD past them, a
 * few lines per 16 columns (prefetch.h). Block rows (q8_0 / q4_0) go a
 * block per step: its scale and bytes read once for its 32 values (ld32).
 * axpy: up to four queries share each load of a row, the rows in 16 KB
 * blocks that every pass fetches ahead for (axpy_impl); each accumulator
 * element adds w_i * v_i[e] over i in order with one FMA per token, as the
 * AVX2 twin does (bit-identical to it).
 * Rows of halves (converted exactly) and of blocks (d * q, d * (q - 8):
 * exact products, as qblock_values.h) are read by the same loops, so they
 * give the bits of fp16_row / q8_0_values / q4_0_values into a float tile,
 * then the float kernel. */
#include <immintrin.h>

#include "kernels/avx512_sums.h"
#include "kernels/dense.h"
#include "kernels/prefetch.h"
#include <stdint.h>

/* values e .. e+15 (e a multiple of 16) of the row at p: floats, halves
 * converted exactly, or block values d * q (q8_0) and d * (q - 8) (q4_0:
 * value k < 16 the low nibble of byte k, else the high nibble of byte k -
 * 16; the block's 16 products d * (k - 8) made once in one register, the
 * table, from which one permute takes each value: the same products);
 * KIND, the element type (vq_elem), is a constant after inlining here and
 * in every loop below */
/* the q8_0 / q4_0 block of value e of the row at p, and its scale d */
static inline __attribute__((always_inline)) const uint8_t *qblock(const uint8_t *p, size_t e, int KIND, __m512 *d)
{
    const uint8_t *b = p + e / 32 * (KIND == VQ_ELEM_Q8_0 ? 34 : 18);
    *d = _mm512_cvtph_ps(_mm256_set1_epi16((short)(b[0] | b[1] << 8)));
    return b;
}

/* lane k: d * (k - 8), the q4_0 value of code k */
static inline __m512 q4_table(__m512 d)
{
    return _mm512_mul_ps(d, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __attribute__((always_inline)) __m512 ld16(const uint8_t *p, size_t e, int KIND)
{
    if (KIND == VQ_ELEM_F32)
        return _mm512_loadu_ps((const float *)(const void *)p + e);
    if (KIND == VQ_ELEM_F16)
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * e)));
    __m512 d;
    const uint8_t *b = qblock(p, e, KIND, &d);
    if (KIND == VQ_ELEM_Q8_0)
        return _mm512_mul_ps(
            d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2 + e % 32)))));
    const __m512i n = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2)));
    return _mm512_permutexvar_ps(e % 32 ? _mm512_srli_epi32(n, 4) : n, q4_table(d)); /* (the low 4 bits index) */
}

/* values e .. e+31 of a q8_0 / q4_0 row (e a multiple of 32) as ld16 gives
 * them at e and e + 16, the block's scale and bytes read once */
static inline __attribute__((always_inline)) void ld32(const uint8_t *p, size_t e, int KIND, __m512 *lo, __m512 *hi)
{
    __m512 d;
    const uint8_t *b = qblock(p, e, KIND, &d);
    if (KIND == VQ_ELEM_Q8_0) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + 2));
        *lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))));
        *hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))));
        return;
    }
    const __m512i n = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 2)));
    const __m512 table = q4_table(d);
    *lo = _mm512_permutexvar_ps(n, table); /* (the low 4 bits index) */
    *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(n, 4), table);
}

/* byte offsets of the eight rows of group i (past the end: the last row
 * again); rb: bytes per row */
static inline void rows8(size_t i, size_t nt, size_t rb, size_t r[8])
{
    for (size_t k = 0; k < 8; k++)
        r[k] = (i + k < nt ? i + k : nt - 1) * rb;
}

/* NQ (1..3, a constant) queries at q + jj*qstride against nt rows, eight
 * rows sharing each load of the queries; the sums stay in registers
 * (24 accumulators at most) and each row's is reduced by vq_hsum8x512.
 * STREAM: fetch the rows ahead, a share per 16 columns (the first query
 * pass over streamed rows). */
static inline __attribute__((always_inline)) void dot_rows8(const float *q, size_t qstride, const int NQ,
                                                            const uint8_t *v, size_t nt, size_t E, float *s,
                                                            size_t sstride, int KIND, int STREAM)
{
    const size_t rb = vq_elem_row_bytes(KIND, E);
    const size_t step = KIND >= VQ_ELEM_Q8_0 ? 32 : 16; /* blocks: ld32, as two steps of 16 */
    vq_pf_share pf = vq_pf_share_init(v, VQ_PF_SPREAD, STREAM ? nt * rb : 0, (nt + 7) / 8 * (E / step));
    for (size_t i = 0; i < nt; i += 8) {
        size_t r[8];
        rows8(i, nt, rb, r);
        __m512 a[3][8];
        _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) a[jj][k] = _mm512_setzero_ps();
        for (size_t e = 0; e < E; e += step) {
            if (STREAM)
                vq_pf_step(&pf);
            __m512 x[3], y[3];
            _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
            {
                x[jj] = _mm512_loadu_ps(q + (size_t)jj * qstride + e);
                if (step == 32)
                    y[jj] = _mm512_loadu_ps(q + (size_t)jj * qstride + e + 16);
            }
            _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
            {
                __m512 t, u;
                if (step == 32)
                    ld32(v + r[k], e, KIND, &t, &u);
                else
                    t = ld16(v + r[k], e, KIND);
                _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
                {
                    a[jj][k] = _mm512_fmadd_ps(x[jj], t, a[jj][k]);
                    if (step == 32)
                        a[jj][k] = _mm512_fmadd_ps(y[jj], u, a[jj][k]);
                }
            }
        }
        _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
            vq_store8_upto(s + (size_t)jj * sstride, i, nt,
                           vq_hsum8x512(a[jj][0], a[jj][1], a[jj][2], a[jj][3], a[jj][4], a[jj][5], a[jj][6], a[jj][7]));
    }
}

static inline __attribute__((always_inline)) void dot_impl(const float *q, size_t qstride, int n_q, const uint8_t *v,
                                                           size_t nt, size_t E, float *s, size_t sstride, int KIND)
{
    const size_t rb = vq_elem_row_bytes(KIND, E);
    const int pf = nt * rb >= VQ_PF_MIN_SPAN; /* streamed rows, not a tile */
    int j = 0;
    for (; n_q - j >= 4 && n_q - j != 5; j += 4) { /* four queries x four rows share each load */
        const float *q0 = q + (size_t)j * qstride;
        /* the first query pass streams the rows; blocks: 32 values per step (ld32), as two steps of 16 */
        const size_t step = KIND >= VQ_ELEM_Q8_0 ? 32 : 16;
        vq_pf_share ps = vq_pf_share_init(v, VQ_PF_SPREAD, j == 0 && pf ? nt * rb : 0, (nt + 3) / 4 * (E / step));
        for (size_t i = 0; i < nt; i += 4) {
            size_t r[4];
            for (size_t k = 0; k < 4; k++)
                r[k] = (i + k < nt ? i + k : nt - 1) * rb;
            __m512 a[4][4];
            for (int jj = 0; jj < 4; jj++)
                for (int k = 0; k < 4; k++)
                    a[jj][k] = _mm512_setzero_ps();
            for (size_t e = 0; e < E; e += step) {
                vq_pf_step(&ps);
                __m512 t[4], u[4];
                if (step == 32) {
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) ld32(v + r[k], e, KIND, &t[k], &u[k]);
                } else {
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) t[k] = ld16(v + r[k], e, KIND);
                }
                _Pragma("GCC unroll 4") for (int jj = 0; jj < 4; jj++)
                {
                    __m512 x = _mm512_loadu_ps(q0 + (size_t)jj * qstride + e);
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[jj][k] = _mm512_fmadd_ps(x, t[k], a[jj][k]);
                    if (step == 32) {
                        __m512 y = _mm512_loadu_ps(q0 + (size_t)jj * qstride + e + 16);
                        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[jj][k] = _mm512_fmadd_ps(y, u[k], a[jj][k]);
                    }
                }
            }
            /* two queries' four sums per hsum8x512: each vector reduced by
             * the same tree on either path */
            for (int jj = 0; jj < 4; jj += 2) {
                const __m256 h = vq_hsum8x512(a[jj][0], a[jj][1], a[jj][2], a[jj][3], a[jj + 1][0], a[jj + 1][1],
                                              a[jj + 1][2], a[jj + 1][3]);
                vq_store4_upto(s + (size_t)(j + jj) * sstride, i, nt, _mm256_castps256_ps128(h));
                vq_store4_upto(s + (size_t)(j + jj + 1) * sstride, i, nt, _mm256_extractf128_ps(h, 1));
            }
        }
    }
    while (j < n_q) {
        const int rem = n_q - j;
        const float *qj = q + (size_t)j * qstride;
        float *sj = s + (size_t)j * sstride;
        const int first = j == 0 && pf;
        if (rem >= 3 && rem != 4) {
            dot_rows8(qj, qstride, 3, v, nt, E, sj, sstride, KIND, first);
            j += 3;
        } else if (rem >= 2) {
            dot_rows8(qj, qstride, 2, v, nt, E, sj, sstride, KIND, first);
            j += 2;
        } else {
            dot_rows8(qj, qstride, 1, v, nt, E, sj, sstride, KIND, first);
            j += 1;
        }
    }
}

/* acc rows j0..j0+NQ-1 (NQ in 1..4, a constant), columns [e, e+16*W) (W
 * in 1..4, a constant), over the nt rows at v: one pass; each row takes a
 * step of pf (axpy_impl); FIRST: also fetch VQ_PF_AHEAD past the rows */
static inline __attribute__((always_inline)) void axpy_pass(const float *w, size_t wstride, int j0, const int NQ,
                                                            const int W, const uint8_t *v, size_t nt, size_t rb,
                                                            size_t e, float *acc, size_t astride, int KIND,
                                                            vq_pf_share *pf, int FIRST)
{
    __m512 A[4][4];
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++)
            A[jj][ww] = _mm512_loadu_ps(acc + (size_t)(j0 + jj) * astride + e + 16 * (size_t)ww);
    for (size_t i = 0; i < nt; i++) {
        if (FIRST)
            vq_prefetch_span(v, i * rb + VQ_PF_AHEAD, rb);
        vq_pf_step(pf);
        __m512 V[4];
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++) V[ww] = ld16(v + i * rb, e + 16 * (size_t)ww, KIND);
        _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        {
            const __m512 x = _mm512_set1_ps(w[(size_t)(j0 + jj) * wstride + i]);
            _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++) A[jj][ww] = _mm512_fmadd_ps(x, V[ww], A[jj][ww]);
        }
    }
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++)
            _mm512_storeu_ps(acc + (size_t)(j0 + jj) * astride + e + 16 * (size_t)ww, A[jj][ww]);
}

/* the width 16*W of the axpy's pass of nq queries at column e */
static inline int axpy_width(int nq, size_t E, size_t e)
{
    const size_t left = (E - e) / 16;
    return nq == 4 ? (left >= 4 ? 4 : left >= 2 ? 2 : 1) : left >= 4 ? 4 : 1;
}

/* The rows in blocks of AXPY_BLOCK_BYTES (a multiple of four rows, at least
 * 16), each block through all its passes (query groups, column slices)
 * before the next: the passes after the first find the block in L1. Rows of
 * a streamed span (VQ_PF_MIN_SPAN) are fetched as they go: the first pass
 * over the first block VQ_PF_AHEAD past its rows, and every pass over a
 * block a share of the next block, a step per row, so the memory stream
 * keeps going while a block is reread; with one pass per block, every
 * block VQ_PF_AHEAD past its rows instead. Every accumulator adds the rows in
 * order whatever the blocks (the same bits). */
#define AXPY_BLOCK_BYTES (16u << 10)

static inline __attribute__((always_inline)) void axpy_impl(const float *w, size_t wstride, int n_q, const uint8_t *v,
                                                            size_t nt, size_t E, float *acc, size_t astride,
                                                            int KIND)
{
    const size_t rb = vq_elem_row_bytes(KIND, E);
    const size_t tb = AXPY_BLOCK_BYTES / rb / 4 * 4 < 16 ? 16 : AXPY_BLOCK_BYTES / rb / 4 * 4;
    const int pf = nt * rb >= VQ_PF_MIN_SPAN; /* streamed rows, not a tile */
    size_t npass = 0; /* the passes per block (counted for streamed rows only) */
    for (int j0 = 0; pf && j0 < n_q; j0 += 4)
        for (size_t e = 0; e < E; npass++)
            e += 16 * (size_t)axpy_width(n_q - j0 < 4 ? n_q - j0 : 4, E, e);
    npass = npass ? npass : 1; /* (a tile fetches nothing) */
    for (size_t i0 = 0; i0 < nt; i0 += tb) {
        const size_t nb = nt - i0 < tb ? nt - i0 : tb, nn = nt - i0 - nb < tb ? nt - i0 - nb : tb;
        const uint8_t *p = v + i0 * rb;
        /* one pass: fetching VQ_PF_AHEAD past each row reads faster (ab-session28.txt) */
        vq_pf_share pn = vq_pf_share_init(p, nb * rb, pf && npass > 1 ? nn * rb : 0, npass * nb);
        int first = pf && (i0 == 0 || npass == 1);
#define AXPY_PASS(NQ, W)                                                                                      \
    do {                                                                                                      \
        if (first)                                                                                            \
            axpy_pass(w + i0, wstride, j0, NQ, W, p, nb, rb, e, acc, astride, KIND, &pn, 1);                  \
        else                                                                                                  \
            axpy_pass(w + i0, wstride, j0, NQ, W, p, nb, rb, e, acc, astride, KIND, &pn, 0);                  \
    } while (0)
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
            for (size_t e = 0; e < E;) {
                const int W = axpy_width(nq, E, e);
                if (nq == 4 && W == 4)
                    AXPY_PASS(4, 4);
                else if (nq == 4 && W == 2)
                    AXPY_PASS(4, 2);
                else if (nq == 4)
                    AXPY_PASS(4, 1);
                else if (nq == 3 && W == 4)
                    AXPY_PASS(3, 4);
                else if (nq == 3)
                    AXPY_PASS(3, 1);
                else if (nq == 2 && W == 4)
                    AXPY_PASS(2, 4);
                else if (nq == 2)
                    AXPY_PASS(2, 1);
                else if (W == 4)
                    AXPY_PASS(1, 4);
                else
                    AXPY_PASS(1, 1);
                e += 16 * (size_t)W;
                first = 0;
            }
        }
#undef AXPY_PASS
    }
}

/* the exported kernel NAME: IMPL's loops, one instance per element type
 * (the type a constant inside the loops); E not a multiple of 16 (of 32
 * for blocks) goes to LOWER, the AVX2 twin */
#define DENSE_ENTRY(NAME, IMPL, LOWER)                                                                          \
    void NAME(const float *x, size_t xstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,      \
              float *out, size_t ostride)                                                                     \
    {                                                                                                         \
        const uint8_t *p = v;                                                                                 \
        if (E % (elem == VQ_ELEM_Q8_0 || elem == VQ_ELEM_Q4_0 ? 32 : 16))                                     \
            LOWER(x, xstride, n_q, v, elem, nt, E, out, ostride);                                             \
        else if (elem == VQ_ELEM_F16)                                                                         \
            IMPL(x, xstride, n_q, p, nt, E, out, ostride, VQ_ELEM_F16);                                             \
        else if (elem == VQ_ELEM_Q8_0)                                                                        \
            IMPL(x, xstride, n_q, p, nt, E, out, ostride, VQ_ELEM_Q8_0);                                              \
        else if (elem == VQ_ELEM_Q4_0)                                                                        \
            IMPL(x, xstride, n_q, p, nt, E, out, ostride, VQ_ELEM_Q4_0);                                              \
        else                                                                                                  \
            IMPL(x, xstride, n_q, p, nt, E, out, ostride, VQ_ELEM_F32);                                             \
    }

DENSE_ENTRY(vq_dense_dot_avx512, dot_impl, vq_dense_dot_avx2)
DENSE_ENTRY(vq_dense_axpy_avx512, axpy_impl, vq_dense_axpy_avx2)
