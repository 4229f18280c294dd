/* rope_codes_avx512x.c -- rope.h's rope_codes_dot with AVX-512 VBMI.
 *
 * Sixteen tokens at a time are turned into float rows of a stack tile that
 * stays in L1. A token's row is built in registers (head sizes 64, 128 and
 * 256 are compile-time constants of their own loops): per 64 channels the
 * codes by unpack_avx512x.h; the bytes widened to floats, one FMA s * c
 * + m; the patches in registers (per patch one masked move per register,
 * a lane only in the register that holds the channel; a store and reload
 * of the row instead stalls a store forward per patched token); the turn
 * (rope.h: a product, then an FMA; adjacent pairs: the row's cosines and
 * sines each duplicated into their pair's lanes by a permute, the pair's
 * values swapped, one FMADDSUB); one store.
 * The tile is scored by the table's dense_dot (dense_avx512.c), whose
 * scores do not depend on the tile size. */
#include <immintrin.h>

#include "kernels/dense.h"
#include "kernels/rope.h"
#include "kernels/unpack_avx512x.h"

#define RC_TILE 16

/* tokens [i0, i0 + m) into the tile X (rows of D floats) */
static inline __attribute__((always_inline)) void turn_tile(const size_t D, const vq_rope_keys *k, size_t i0, size_t m,
                                                            float *X)
{
    const int b = k->bits;
    const size_t half = D / 2, row_bytes = D * (size_t)b / 8;
    const vq_unpack64_ctl u = vq_unpack64_init(b);
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    for (size_t t = 0; t < m; t++) {
        const size_t i = i0 + t;
        const uint8_t *src = k->codes + i * row_bytes;
        const float *cs = k->tab + (size_t)k->rows[i] * D;
        float *x = X + t * D;
        __m512 F[32];
        _Pragma("GCC unroll 4") for (size_t c = 0; c < D; c += 64)
        {
            const __m512i cb = vq_unpack64(src + c / 8 * (size_t)b, u.ld, &u);
            const __m128i q16[4] = { _mm512_castsi512_si128(cb), _mm512_extracti32x4_epi32(cb, 1),
                                     _mm512_extracti32x4_epi32(cb, 2), _mm512_extracti32x4_epi32(cb, 3) };
            _Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
            {
                const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q16[v]));
                const size_t e = c + 16 * (size_t)v;
                F[e / 16] = _mm512_fmadd_ps(_mm512_loadu_ps(k->s + e), f, _mm512_loadu_ps(k->m + e));
            }
        }
        if (k->pstart) /* in order (the later wins), in registers: one masked move per register */
            for (uint32_t p = k->pstart[i]; p < k->pstart[i + 1]; p++) {
                const size_t ch = k->pch[p];
                const __m512 val = _mm512_set1_ps(k->pval[p]);
                _Pragma("GCC unroll 32") for (size_t v = 0; v < D / 16; v++) F[v] =
                    _mm512_mask_mov_ps(F[v], (__mmask16)((ch >> 4 == v) << (ch & 15)), val);
            }
        if (k->neox) { /* a = channels 16v.., b = the same + half */
            _Pragma("GCC unroll 8") for (size_t v = 0; v < half / 16; v++)
            {
                const __m512 c = _mm512_loadu_ps(cs + 16 * v), s = _mm512_loadu_ps(cs + half + 16 * v);
                const __m512 a = F[v], bb = F[half / 16 + v];
                F[v] = _mm512_fmsub_ps(a, c, _mm512_mul_ps(bb, s));
                F[half / 16 + v] = _mm512_fmadd_ps(bb, c, _mm512_mul_ps(a, s));
            }
        } else { /* even lanes a*c - (b*s), odd lanes b*c + (a*s) */
            _Pragma("GCC unroll 16") for (size_t v = 0; v < D / 16; v++)
            {
                const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cs + 8 * v)));
                const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cs + half + 8 * v)));
                F[v] = _mm512_fmaddsub_ps(F[v], c, _mm512_mul_ps(_mm512_permute_ps(F[v], 0xB1), s));
            }
        }
        _Pragma("GCC unroll 16") for (size_t v = 0; v < D / 16; v++) _mm512_storeu_ps(x + 16 * v, F[v]);
    }
}

void vq_rope_codes_dot_avx512x(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                               size_t ostride)
{
    const size_t D = k->D;
    if (D % 64 || D > 512) {
        vq_rope_codes_dot_ref(k, q, qstride, n_q, out, ostride);
        return;
    }
    float X[RC_TILE * 512];
    for (size_t i0 = 0; i0 < k->n; i0 += RC_TILE) {
        const size_t m = k->n - i0 < RC_TILE ? k->n - i0 : RC_TILE;
        if (D == 64)
            turn_tile(64, k, i0, m, X);
        else if (D == 128)
            turn_tile(128, k, i0, m, X);
        else if (D == 256)
            turn_tile(256, k, i0, m, X);
        else
            turn_tile(D, k, i0, m, X);
        vq_dense_dot_avx512(q, qstride, n_q, X, VQ_ELEM_F32, m, D, out + i0, ostride);
    }
}
