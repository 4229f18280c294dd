/* dense.h -- the float kernels of the tiled codec path (tiled.h): scores of
 * n_q queries against a tile of decoded vectors, and weighted sums of a
 * tile into accumulators.
 *
 *   vq_dense_dot:  s[j*sstride + i]  = sum_e q[j*qstride + e] * v[i*E + e]
 *   vq_dense_axpy: acc[j*astride + e] += sum_i w[j*wstride + i] * v[i*E + e]
 *
 * for j < n_q, i < nt, e < E. The *_ref functions are the scalar
 * references; the *_avx2 twins (dense_avx2.c, AVX2+FMA, only called after
 * run-time dispatch) sum in another order and agree to float rounding.
 * vq_dense_dot / vq_dense_axpy pick the best variant the CPU has. No
 * allocation; all pointers non-NULL. */
#ifndef VQ_CODEC_DENSE_H
#define VQ_CODEC_DENSE_H

#include <stddef.h>

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                      size_t sstride);
void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                       size_t astride);

void vq_dense_dot_avx2(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                       size_t sstride);
void vq_dense_axpy_avx2(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                        size_t astride);

void vq_dense_dot(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                  size_t sstride);
void vq_dense_axpy(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                   size_t astride);

#endif
