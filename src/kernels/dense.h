/* dense.h -- the float kernels of the tiled codec path (codec/tiled.h): scores of
 * n_q queries against a tile of decoded vectors, and weighted sums of a
 * tile into accumulators.
 *
 *   vq_dense_dot:  s[j*sstride + i]  = sum_e q[j*qstride + e] * v[i*E + e]
 *   vq_dense_axpy: acc[j*astride + e] += sum_i w[j*wstride + i] * v[i*E + e]
 *
 * for j < n_q, i < nt, e < E. The *_ref functions are the scalar
 * references; the SIMD twins (dense_avx2.c: E a multiple of 8;
 * dense_avx512.c: E a multiple of 16, else they hand over to the AVX2
 * twin) sum in another order and agree to float rounding. Each score and
 * each accumulator is computed the same way whatever the tile size, the
 * position in the tile or the number of queries (batch-invariant), and the
 * AVX2 and AVX-512 axpy give bit-identical results. Reached through the
 * kernel tables (kernels.h). No allocation; all pointers non-NULL.
 *
 * vq_half_dot / vq_half_axpy: the same with v holding IEEE halves (LE, 2
 * bytes each, any alignment) instead of floats; the AVX-512 twins give
 * the bits of the float kernels on the converted rows. */
#ifndef VQ_KERNELS_DENSE_H
#define VQ_KERNELS_DENSE_H

#include <stddef.h>
#include <stdint.h>

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                      size_t sstride);
void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                       size_t astride);

void vq_dense_dot_avx2(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                       size_t sstride);
void vq_dense_axpy_avx2(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                        size_t astride);

void vq_dense_dot_avx512(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                         size_t sstride);
void vq_dense_axpy_avx512(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                          size_t astride);

void vq_half_dot_ref(const float *q, size_t qstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *s,
                     size_t sstride);
void vq_half_axpy_ref(const float *w, size_t wstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *acc,
                      size_t astride);
void vq_half_dot_avx512(const float *q, size_t qstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *s,
                        size_t sstride);
void vq_half_axpy_avx512(const float *w, size_t wstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *acc,
                         size_t astride);

#endif
