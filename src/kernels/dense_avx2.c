/* dense_avx2.c -- AVX2/FMA twins of dense.h's kernels on rows of floats,
 * IEEE halves (E a multiple of 8) and q8_0 / q4_0 blocks (E a multiple of
 * 32); anything else goes to the scalar reference. Compiled with -mavx2
 * -mfma -mf16c.
 *
 * dot: four rows x up to three queries, or two rows x three (block rows)
 * or four queries, at a time (12, 6 or 8 accumulators), each row's eight
 * values loaded (halves converted, blocks decoded) once for all queries; a row's sum runs
 * over e in eight lanes, one FMA per step, and is reduced by hsum4's tree.
 * axpy: up to four queries share each load of a row (8 to 32 columns at a
 * time); each accumulator element adds w_i * v_i[e] over i in order with
 * one FMA per token (bit-identical to the AVX-512 twin).
 * Either way every output is computed the same way whatever the tile size,
 * its place in the tile or the number of queries (batch-invariant). Rows
 * of halves (converted exactly by F16C) and of blocks (d * q: one exact
 * conversion and one multiply per value, as qblock_values_avx2.c) give
 * the bits of fp16_row / q8_0_values / q4_0_values into a float tile, then
 * the float kernel. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/dense.h"
#include "kernels/prefetch.h"
#include "kernels/store4.h"

/* elements per step of the loops: a block of 32 (its scale converted once
 * per row and step), else 8 */
#define STEP(KIND) ((KIND) >= VQ_ELEM_Q8_0 ? 32 : 8)

/* the scale of the block of row p holding element e0 (a multiple of 32),
 * in every lane; 0 for the float kinds (unused) */
static inline __attribute__((always_inline)) __m256 scale8(const uint8_t *p, size_t e0, int KIND)
{
    if (KIND < VQ_ELEM_Q8_0)
        return _mm256_setzero_ps();
    const uint8_t *b = p + e0 / 32 * (KIND == VQ_ELEM_Q8_0 ? 34 : 18);
    return _mm256_cvtph_ps(_mm_set1_epi16((short)(b[0] | b[1] << 8)));
}

/* values e0 + w .. e0 + w + 7 of row p (w < STEP; d: scale8's); KIND,
 * the element type (vq_elem), is a constant after inlining here and in
 * every loop below */
static inline __attribute__((always_inline)) __m256 ld8(const uint8_t *p, size_t e0, size_t w, __m256 d, int KIND)
{
    if (KIND == VQ_ELEM_F32)
        return _mm256_loadu_ps((const float *)(const void *)p + e0 + w);
    if (KIND == VQ_ELEM_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 2 * (e0 + w))));
    if (KIND == VQ_ELEM_Q8_0) {
        const uint8_t *b = p + e0 / 32 * 34 + 2 + w;
        return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)b))));
    }
    /* q4_0: value k < 16 the low nibble of byte k, else the high nibble of
     * byte k - 16; d * (n - 8) as fma(d, n, -8d): -8d is exact, so both
     * round the same exact product once */
    const uint8_t *b = p + e0 / 32 * 18 + 2 + w % 16;
    __m256i n = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)b));
    n = w >= 16 ? _mm256_srli_epi32(n, 4) : _mm256_and_si256(n, _mm256_set1_epi32(15));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(n), _mm256_mul_ps(d, _mm256_set1_ps(-8.0f)));
}

/* [sum(a0), sum(a1), sum(a2), sum(a3)] */
static inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* NQ (1..3, a constant) queries at q, qstride apart, against all nt rows,
 * four at a time (past the end the last row again, its scores not
 * stored); the queries are VFMADD's memory operand. STREAM: fetch the
 * rows VQ_PF_SPREAD ahead, a share per column step (the first query pass
 * over streamed rows). */
static inline __attribute__((always_inline)) void dot_rows4(const float *q, size_t qstride, const int NQ,
                                                            const uint8_t *v, size_t nt, size_t E, float *s,
                                                            size_t sstride, int KIND, int STREAM)
{
    const size_t rb = vq_elem_row_bytes(KIND, E);
    vq_pf_share pf = vq_pf_share_init(v, VQ_PF_SPREAD, STREAM ? nt * rb : 0, (nt + 3) / 4 * (E / STEP(KIND)));
    for (size_t i = 0; i < nt; i += 4) {
        const uint8_t *p[4];
        p[0] = v + i * rb;
        p[1] = i + 1 < nt ? p[0] + rb : p[0], p[2] = i + 2 < nt ? p[1] + rb : p[1];
        p[3] = i + 3 < nt ? p[2] + rb : p[2];
        __m256 a[3][4];
        _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[jj][k] = _mm256_setzero_ps();
        for (size_t e0 = 0; e0 < E; e0 += STEP(KIND)) {
            if (STREAM)
                vq_pf_step(&pf);
            __m256 d[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) d[k] = scale8(p[k], e0, KIND);
            _Pragma("GCC unroll 4") for (size_t w = 0; w < 32; w += 8) {
                if (w >= STEP(KIND)) /* (a constant: one step of 8 for the float kinds) */
                    break;
                __m256 t[4];
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) t[k] = ld8(p[k], e0, w, d[k], KIND);
                _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
                {
                    const __m256 x = _mm256_loadu_ps(q + (size_t)jj * qstride + e0 + w);
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[jj][k] = _mm256_fmadd_ps(x, t[k], a[jj][k]);
                }
            }
        }
        _Pragma("GCC unroll 3") for (int jj = 0; jj < NQ; jj++)
            vq_store4_upto(s + (size_t)jj * sstride, i, nt, hsum4(a[jj][0], a[jj][1], a[jj][2], a[jj][3]));
    }
}

/* NQ (3 or 4, a constant) queries at q, qstride apart, against all nt rows,
 * two at a time (8 accumulators at most; past the end the last row
 * again): each score the same tree as dot_rows4's (hsum4 of rows 0, 1 of
 * two queries, or of one query twice) */
static inline __attribute__((always_inline)) void dot_rows2(const float *q, size_t qstride, const int NQ,
                                                            const uint8_t *v, size_t nt, size_t E, float *s,
                                                            size_t sstride, int KIND, int STREAM)
{
    const size_t rb = vq_elem_row_bytes(KIND, E);
    vq_pf_share pf = vq_pf_share_init(v, VQ_PF_SPREAD, STREAM ? nt * rb : 0, (nt + 1) / 2 * (E / STEP(KIND)));
    for (size_t i = 0; i < nt; i += 2) {
        const uint8_t *p0 = v + i * rb, *p1 = i + 1 < nt ? p0 + rb : p0;
        __m256 a[4][2];
        _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++) a[jj][0] = a[jj][1] = _mm256_setzero_ps();
        for (size_t e0 = 0; e0 < E; e0 += STEP(KIND)) {
            if (STREAM)
                vq_pf_step(&pf);
            const __m256 d0 = scale8(p0, e0, KIND), d1 = scale8(p1, e0, KIND);
            _Pragma("GCC unroll 4") for (size_t w = 0; w < 32; w += 8) {
                if (w >= STEP(KIND))
                    break;
                const __m256 t0 = ld8(p0, e0, w, d0, KIND), t1 = ld8(p1, e0, w, d1, KIND);
                _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
                {
                    const __m256 x = _mm256_loadu_ps(q + (size_t)jj * qstride + e0 + w);
                    a[jj][0] = _mm256_fmadd_ps(x, t0, a[jj][0]);
                    a[jj][1] = _mm256_fmadd_ps(x, t1, a[jj][1]);
                }
            }
        }
        _Pragma("GCC unroll 2") for (int jj = 0; jj < NQ; jj += 2) {
            const int jb = jj + 1 < NQ ? jj + 1 : jj;
            float t[4];
            _mm_storeu_ps(t, hsum4(a[jj][0], a[jj][1], a[jb][0], a[jb][1]));
            float *s0 = s + (size_t)jj * sstride + i, *s1 = s + (size_t)jb * sstride + i;
            s0[0] = t[0], s1[0] = t[2];
            if (i + 1 < nt)
                s0[1] = t[1], s1[1] = t[3];
        }
    }
}

/* all queries against nt rows (one block of the rows, see dot_impl); pf:
 * the rows are streamed, not a tile */
static inline __attribute__((always_inline)) void dot_span(const float *q, size_t qstride, int n_q,
                                                           const uint8_t *v, size_t nt, size_t E, float *s,
                                                           size_t sstride, int KIND, int pf)
{
    /* the tile function F with its last argument STREAM: 1 for the first query pass over streamed rows */
#define DOT_SHAPE(F, ...)                                                                                     \
    do {                                                                                                      \
        if (first)                                                                                            \
            F(__VA_ARGS__, 1);                                                                                \
        else                                                                                                  \
            F(__VA_ARGS__, 0);                                                                                \
    } while (0)
    for (int j = 0; j < n_q;) {
        const int rem = n_q - j, first = j == 0 && pf;
        const float *qj = q + (size_t)j * qstride;
        float *sj = s + (size_t)j * sstride;
        if (rem >= 4 && rem != 5 && rem != 6 && rem != 9) { /* 5, 6, 9: 3 + 2, 3 + 3, 3 + 3 + 3 */
            DOT_SHAPE(dot_rows2, qj, qstride, 4, v, nt, E, sj, sstride, KIND);
            j += 4;
        } else if (rem >= 3 && KIND >= VQ_ELEM_Q8_0) { /* decoded blocks: two rows' scales and values in registers */
            DOT_SHAPE(dot_rows2, qj, qstride, 3, v, nt, E, sj, sstride, KIND);
            j += 3;
        } else {
            const int nq = rem >= 3 ? 3 : rem;
            if (nq == 3)
                DOT_SHAPE(dot_rows4, qj, qstride, 3, v, nt, E, sj, sstride, KIND);
            else if (nq == 2)
                DOT_SHAPE(dot_rows4, qj, qstride, 2, v, nt, E, sj, sstride, KIND);
            else
                DOT_SHAPE(dot_rows4, qj, qstride, 1, v, nt, E, sj, sstride, KIND);
            j += nq;
        }
    }
#undef DOT_SHAPE
}

/* acc rows j0..j0+NQ-1 (NQ in 1..4), columns [e, e + 8W) (W in 1..4, within
 * one block of 32 for the block kinds), over all nt rows; each row takes a
 * step of pf (axpy_impl); FIRST: also fetch VQ_PF_AHEAD past the rows */
static inline __attribute__((always_inline)) void axpy_block(const float *w, size_t wstride, int j0, const int NQ,
                                                             const int W, const uint8_t *v, size_t nt, size_t E,
                                                             size_t e, float *acc, size_t astride, int KIND,
                                                             vq_pf_share *pf, int FIRST)
{
    const size_t rb = vq_elem_row_bytes(KIND, E), e0 = e / STEP(KIND) * STEP(KIND);
    __m256 A[4][4];
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++)
            A[jj][ww] = _mm256_loadu_ps(acc + (size_t)(j0 + jj) * astride + e + 8 * (size_t)ww);
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *p = v + i * rb;
        if (FIRST)
            vq_prefetch_span(p, VQ_PF_AHEAD, rb);
        vq_pf_step(pf);
        const __m256 d = scale8(p, e0, KIND);
        __m256 V[4];
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++) V[ww] = ld8(p, e0, e - e0 + 8 * (size_t)ww, d, KIND);
        _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        {
            const __m256 x = _mm256_set1_ps(w[(size_t)(j0 + jj) * wstride + i]);
            _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++) A[jj][ww] = _mm256_fmadd_ps(x, V[ww], A[jj][ww]);
        }
    }
    _Pragma("GCC unroll 4") for (int jj = 0; jj < NQ; jj++)
        _Pragma("GCC unroll 4") for (int ww = 0; ww < W; ww++)
            _mm256_storeu_ps(acc + (size_t)(j0 + jj) * astride + e + 8 * (size_t)ww, A[jj][ww]);
}

/* the queries of the pass group at j0 (4 at most; 5 as 3 + 2) */
static inline int axpy_group(int n_q, int j0)
{
    const int rem = n_q - j0;
    return rem >= 4 && rem != 5 ? 4 : rem >= 3 ? 3 : rem >= 2 ? 2 : 1;
}

/* the pass width (8W columns) of nq queries at column e */
static inline int axpy_width(int nq, size_t E, size_t e, int KIND)
{
    const size_t left = (E - e) / 8; /* (the block kinds: e a multiple of 16, 32 | E) */
    const int whole = KIND < VQ_ELEM_Q8_0 || e % 32 == 0;
    if (nq >= 3) /* 4 x 2 or 3 x 2 sums + 2 rows + 1 weight in registers */
        return left >= 2 ? 2 : 1;
    return left >= 4 && whole ? 4 : 1; /* 8 + 4 + 1 */
}

/* all passes over one block of nt rows (see axpy_impl); first: the first
 * block of streamed rows */
static inline __attribute__((always_inline)) void axpy_span(const float *w, size_t wstride, int n_q,
                                                            const uint8_t *v, size_t nt, size_t E, float *acc,
                                                            size_t astride, int KIND, vq_pf_share *pf, int first)
{
#define AXPY_SHAPE(NQ, W)                                                                                     \
    do {                                                                                                      \
        if (first)                                                                                            \
            axpy_block(w, wstride, j0, NQ, W, v, nt, E, e, acc, astride, KIND, pf, 1);                        \
        else                                                                                                  \
            axpy_block(w, wstride, j0, NQ, W, v, nt, E, e, acc, astride, KIND, pf, 0);                        \
    } while (0)
    for (int j0 = 0; j0 < n_q;) {
        const int nq = axpy_group(n_q, j0);
        for (size_t e = 0; e < E;) {
            const int W = axpy_width(nq, E, e, KIND);
            if (nq == 4 && W == 2)
                AXPY_SHAPE(4, 2);
            else if (nq == 4)
                AXPY_SHAPE(4, 1);
            else if (nq == 3 && W == 2)
                AXPY_SHAPE(3, 2);
            else if (nq == 3)
                AXPY_SHAPE(3, 1);
            else if (nq == 2 && W == 4)
                AXPY_SHAPE(2, 4);
            else if (nq == 2)
                AXPY_SHAPE(2, 1);
            else if (W == 4)
                AXPY_SHAPE(1, 4);
            else
                AXPY_SHAPE(1, 1);
            e += 8 * (size_t)W;
            first = 0;
        }
        j0 += nq;
    }
#undef AXPY_SHAPE
}

/* the number of passes axpy_span makes */
static size_t axpy_passes(int n_q, size_t E, int KIND)
{
    size_t n = 0;
    for (int j0 = 0; j0 < n_q; j0 += axpy_group(n_q, j0))
        for (size_t e = 0; e < E; n++)
            e += 8 * (size_t)axpy_width(axpy_group(n_q, j0), E, e, KIND);
    return n;
}

/* The rows in blocks of about DENSE_BLOCK_BYTES (a multiple of four rows,
 * at least 16), each block through all its passes (query groups, column
 * slices) before the next: the passes after the first find the block in
 * L1 (a 1,024-token page of 128 halves would not stay in L2 beside its
 * keys). The axpy's streamed rows (VQ_PF_MIN_SPAN) are fetched as they go:
 * the first pass over the first block VQ_PF_AHEAD past its rows, and every
 * pass over a block a share of the next block, a step per row, so the
 * memory stream keeps going while a block is reread (with one pass per
 * block, every block VQ_PF_AHEAD past its rows instead). Every output
 * keeps its arithmetic (rows are independent; an accumulator adds the rows
 * in order, whatever the blocks). */
#define DENSE_BLOCK_BYTES (16u << 10)

static inline size_t block_rows(size_t rb)
{
    const size_t r = DENSE_BLOCK_BYTES / rb / 4 * 4;
    return r < 16 ? 16 : r;
}

static inline __attribute__((always_inline)) void dot_impl(const float *q, size_t qstride, int n_q, const void *v,
                                                           size_t nt, size_t E, float *s, size_t sstride, int KIND)
{
    const size_t rb = vq_elem_row_bytes(KIND, E), tb = block_rows(rb);
    const int pf = nt * rb >= VQ_PF_MIN_SPAN; /* streamed rows, not a tile */
    for (size_t i0 = 0; i0 < nt; i0 += tb)
        dot_span(q, qstride, n_q, (const uint8_t *)v + i0 * rb, nt - i0 < tb ? nt - i0 : tb, E, s + i0, sstride,
                 KIND, pf);
}

static inline __attribute__((always_inline)) void axpy_impl(const float *w, size_t wstride, int n_q, const void *v,
                                                            size_t nt, size_t E, float *acc, size_t astride,
                                                            int KIND)
{
    const size_t rb = vq_elem_row_bytes(KIND, E), tb = block_rows(rb);
    const int pf = nt * rb >= VQ_PF_MIN_SPAN; /* streamed rows, not a tile */
    const size_t npass = pf ? axpy_passes(n_q, E, KIND) : 1; /* (a tile fetches nothing) */
    for (size_t i0 = 0; i0 < nt; i0 += tb) {
        const size_t nb = nt - i0 < tb ? nt - i0 : tb, nn = nt - i0 - nb < tb ? nt - i0 - nb : tb;
        const uint8_t *p = (const uint8_t *)v + i0 * rb;
        /* one pass: fetching VQ_PF_AHEAD past each row reads faster (ab-session28.txt) */
        vq_pf_share pn = vq_pf_share_init(p, nb * rb, pf && npass > 1 ? nn * rb : 0, npass * nb);
        axpy_span(w + i0, wstride, n_q, p, nb, E, acc, astride, KIND, &pn, pf && (i0 == 0 || npass == 1));
    }
}

/* the exported kernel NAME: IMPL's loops, one instance per element type
 * (the type a constant inside the loops), for E a multiple of 8 (32 for
 * the block kinds); any other E goes to the scalar reference REF */
#define DENSE_ENTRY(NAME, IMPL, REF)                                                                            \
    void NAME(const float *x, size_t xstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,      \
              float *out, size_t ostride)                                                                     \
    {                                                                                                         \
        if (E % 8 || ((elem == VQ_ELEM_Q8_0 || elem == VQ_ELEM_Q4_0) && E % 32))                              \
            REF(x, xstride, n_q, v, elem, nt, E, out, ostride);                                               \
        else if (elem == VQ_ELEM_F16)                                                                         \
            IMPL(x, xstride, n_q, v, nt, E, out, ostride, VQ_ELEM_F16);                                             \
        else if (elem == VQ_ELEM_Q8_0)                                                                        \
            IMPL(x, xstride, n_q, v, nt, E, out, ostride, VQ_ELEM_Q8_0);                                              \
        else if (elem == VQ_ELEM_Q4_0)                                                                        \
            IMPL(x, xstride, n_q, v, nt, E, out, ostride, VQ_ELEM_Q4_0);                                              \
        else                                                                                                  \
            IMPL(x, xstride, n_q, v, nt, E, out, ostride, VQ_ELEM_F32);                                             \
    }

DENSE_ENTRY(vq_dense_dot_avx2, dot_impl, vq_dense_dot_ref)
DENSE_ENTRY(vq_dense_axpy_avx2, axpy_impl, vq_dense_axpy_ref)
