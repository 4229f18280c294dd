/* matvec.h -- a matrix times a vector with every sum in index order: the
 * projections of the encoders (spectral's eigenbasis, qjl's and
 * turboquant_prod's Gaussian sketches), whose codes must not depend on the
 * CPU that wrote them.
 *
 * vq_ordered_matvec(mt, rows, n, x, y): for i < rows,
 *     y[i] = sum_{j < n} mt[j*rows + i] * x[j],
 * mt holding the matrix column by column (column j at mt + j*rows), each
 * product rounded, then added from 0.0f in j order (no fused multiply-add):
 * the bits of the plain loop over each row of the row-major matrix whose
 * transpose is mt (the encoders' loop before session 51, when they kept
 * only that matrix). Every variant returns these bits (the SIMD ones hold
 * rows side by side in the lanes, each lane its own sum in j order).
 * rows >= 1, n >= 1; y does not overlap mt or x. */
#ifndef VQ_KERNELS_MATVEC_H
#define VQ_KERNELS_MATVEC_H

#include <stddef.h>

typedef void vq_ordered_matvec_fn(const float *mt, size_t rows, size_t n, const float *x, float *y);

vq_ordered_matvec_fn vq_ordered_matvec_ref, vq_ordered_matvec_avx2, vq_ordered_matvec_avx512;

/* mt (cols x rows) from the row-major m (rows x cols): mt[j*rows + i] =
 * m[i*cols + j] */
static inline void vq_transpose(const float *m, size_t rows, size_t cols, float *mt)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            mt[j * rows + i] = m[i * cols + j];
}

#endif
