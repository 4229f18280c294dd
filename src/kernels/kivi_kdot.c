/* kivi_kdot.c -- KIVI key blocks scored against float queries (kernels.h
 * kivi_kdot) by composing a table's pieces: the scalar reference and the
 * AVX2 twin (the AVX-512 one fuses the pieces: rows_avx512.c). */
#include "kernels/kernels.h"

#include "core/fp16_row.h"
#include "kernels/prefetch.h"

void vq_kivi_kdot_via(void (*fp16_row)(const uint8_t *src, float *dst, size_t n), vq_kivi_fold_fn *fold,
                      vq_codes_dot_fn *dot, const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G,
                      size_t D, const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    float sm[2 * VQ_KDOT_MAX_D], qs[4 * VQ_KDOT_MAX_D], base[4];
    const size_t row = D * (size_t)bits / 8;
    for (size_t k = 0; k < nblk; k++) {
        const uint8_t *blk = blocks + k * bstride;
        if (k + 1 < nblk) /* the next block, while this one is scored */
            vq_prefetch_span(blk, bstride, bstride);
        fp16_row(blk, sm, 2 * D); /* scales, then mins */
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
            float *out = s + (size_t)j0 * sstride + k * G;
            fold(q + (size_t)j0 * qstride, qstride, nj, sm, sm + D, D, qs, base);
            dot(blk + 4 * D, row, bits, G, D, NULL, qs, D, nj, out, sstride);
            for (int j = 0; j < nj; j++)
                for (size_t t = 0; t < G; t++)
                    out[(size_t)j * sstride + t] += base[j];
        }
    }
}

void vq_kivi_kdot_ref(const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G, size_t D,
                      const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    vq_kivi_kdot_via(vq_fp16_row_ref, vq_kivi_fold_ref, vq_codes_dot_ref, blocks, bstride, nblk, bits, G, D, q,
                     qstride, n_q, s, sstride);
}

void vq_kivi_kdot_avx2(const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G, size_t D,
                       const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    vq_kivi_kdot_via(vq_fp16_row_f16c, vq_kivi_fold_avx2, vq_codes_dot_avx2, blocks, bstride, nblk, bits, G, D, q,
                     qstride, n_q, s, sstride);
}
