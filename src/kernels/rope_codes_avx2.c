/* rope_codes_avx2.c -- rope.h's rope_codes_dot with AVX2 + FMA.
 *
 * Sixteen tokens at a time are turned into float rows of a stack tile that
 * stays in L1, then scored by the table's dense_dot (dense_avx2.c), whose
 * scores do not depend on the tile size. A token's row is built in three
 * steps on its own tile row (sixteen registers hold only half of a
 * 128-channel row, so the row lives in memory, in L1):
 *   - per 16 channels the codes (codes_avx2.h for widths 1..4; 5..8: the
 *     8 codes of b bytes as two dwords of 4 codes each), masked, widened
 *     to floats, one FMA s * c + m, one store;
 *   - the patches, scalar stores in order (the later wins);
 *   - the turn (rope.h: a product, then an FMA): neox pairs 8 lanes of the
 *     row's halves; adjacent pairs with the row's cosines and sines each
 *     duplicated into their pair's lanes and the pair's values swapped, one
 *     FMADDSUB (even lanes a*c - b*s, odd lanes b*c + a*s).
 * D not a multiple of 64 goes to the reference (as the VBMI variant). */
#include <immintrin.h>

#include "kernels/codes_avx2.h"
#include "kernels/dense.h"
#include "kernels/rope.h"

#define RC_TILE 16

/* token i of k into the row x (D floats) */
static inline __attribute__((always_inline)) void turn_row(const size_t D, const int b, const vq_rope_keys *k,
                                                           size_t i, float *x)
{
    const size_t half = D / 2, row_bytes = D * (size_t)b / 8;
    const uint8_t *src = k->codes + i * row_bytes;
    const __m256i mask = vq_codes_mask(b);
    if (b <= 4) {
        const __m256i sh0 = vq_codes_shifts(b, 0), sh1 = vq_codes_shifts(b, 1);
        for (size_t e = 0; e < D; e += 16) {
            __m256i lo, hi;
            vq_codes16(src + e / 8 * (size_t)b, b, sh0, sh1, &lo, &hi);
            const __m256 f0 = _mm256_cvtepi32_ps(_mm256_and_si256(lo, mask));
            const __m256 f1 = _mm256_cvtepi32_ps(_mm256_and_si256(hi, mask));
            _mm256_storeu_ps(x + e, _mm256_fmadd_ps(_mm256_loadu_ps(k->s + e), f0, _mm256_loadu_ps(k->m + e)));
            _mm256_storeu_ps(x + e + 8,
                             _mm256_fmadd_ps(_mm256_loadu_ps(k->s + e + 8), f1, _mm256_loadu_ps(k->m + e + 8)));
        }
    } else {
        const __m256i sh = _mm256_setr_epi32(0, b, 2 * b, 3 * b, 0, b, 2 * b, 3 * b);
        for (size_t e = 0; e < D; e += 8) {
            __m256i c = vq_codes8_wide(src + e / 8 * (size_t)b, b, sh);
            if (b < 8)
                c = _mm256_and_si256(c, mask);
            _mm256_storeu_ps(x + e, _mm256_fmadd_ps(_mm256_loadu_ps(k->s + e), _mm256_cvtepi32_ps(c),
                                                    _mm256_loadu_ps(k->m + e)));
        }
    }
    if (k->pstart) /* in order: the later wins */
        for (uint32_t p = k->pstart[i]; p < k->pstart[i + 1]; p++)
            x[k->pch[p]] = k->pval[p];
    const float *cs = k->tab + (size_t)k->rows[i] * D;
    if (k->neox) {
        for (size_t e = 0; e < half; e += 8) {
            const __m256 c = _mm256_loadu_ps(cs + e), s = _mm256_loadu_ps(cs + half + e);
            const __m256 a = _mm256_loadu_ps(x + e), bb = _mm256_loadu_ps(x + half + e);
            _mm256_storeu_ps(x + e, _mm256_fmsub_ps(a, c, _mm256_mul_ps(bb, s)));
            _mm256_storeu_ps(x + half + e, _mm256_fmadd_ps(bb, c, _mm256_mul_ps(a, s)));
        }
    } else {
        for (size_t e = 0; e < half; e += 4) {
            const __m256 v = _mm256_loadu_ps(x + 2 * e);
            const __m256 bs = _mm256_mul_ps(_mm256_permute_ps(v, 0xB1), vq_dup4(cs + half + e));
            _mm256_storeu_ps(x + 2 * e, _mm256_fmaddsub_ps(v, vq_dup4(cs + e), bs));
        }
    }
}

/* tokens [i0, i0 + m) into the tile X (rows of D floats); b a constant
 * after inlining (turn_tile_any names each width) */
static inline __attribute__((always_inline)) void turn_tile(const size_t D, const int b, const vq_rope_keys *k,
                                                            size_t i0, size_t m, float *X)
{
    for (size_t t = 0; t < m; t++)
        turn_row(D, b, k, i0 + t, X + t * D);
}

/* the widths as constants: one copy of the row builder per width */
static void turn_tile_any(size_t D, const vq_rope_keys *k, size_t i0, size_t m, float *X)
{
    switch (k->bits) {
    case 1: turn_tile(D, 1, k, i0, m, X); break;
    case 2: turn_tile(D, 2, k, i0, m, X); break;
    case 3: turn_tile(D, 3, k, i0, m, X); break;
    case 4: turn_tile(D, 4, k, i0, m, X); break;
    case 5: turn_tile(D, 5, k, i0, m, X); break;
    case 6: turn_tile(D, 6, k, i0, m, X); break;
    case 7: turn_tile(D, 7, k, i0, m, X); break;
    default: turn_tile(D, 8, k, i0, m, X); break;
    }
}

void vq_rope_codes_dot_avx2(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                            size_t ostride)
{
    const size_t D = k->D;
    if (D % 64 || D > 512 || k->bits < 1 || k->bits > 8) {
        vq_rope_codes_dot_ref(k, q, qstride, n_q, out, ostride);
        return;
    }
    float X[RC_TILE * 512];
    for (size_t i0 = 0; i0 < k->n; i0 += RC_TILE) {
        const size_t m = k->n - i0 < RC_TILE ? k->n - i0 : RC_TILE;
        turn_tile_any(D, k, i0, m, X);
        vq_dense_dot_avx2(q, qstride, n_q, X, VQ_ELEM_F32, m, D, out + i0, ostride);
    }
}
