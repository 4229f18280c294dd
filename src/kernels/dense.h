/* dense.h -- the dense kernels of the attention paths: scores of n_q
 * queries against a tile of rows, and weighted sums of a tile into
 * accumulators. The rows hold floats or IEEE halves (the element type
 * `elem`); everything else is float.
 *
 *   dense_dot:  s[j*sstride + i]  = sum_e q[j*qstride + e] * v_i[e]
 *   dense_axpy: acc[j*astride + e] += sum_i w[j*wstride + i] * v_i[e]
 *
 * for j < n_q, i < nt, e < E, v_i[e] element i*E + e of v (VQ_ELEM_F32:
 * floats; VQ_ELEM_F16: IEEE halves, LE, 2 bytes each, any alignment), or
 * of row i of q8_0 / q4_0 blocks (VQ_ELEM_Q8_0, VQ_ELEM_Q4_0; E a multiple
 * of 32, a row E/32 blocks of quant_blocks.c's layout back to back, 34 or
 * 18 bytes each, rows back to back): the block values of qblock_values.h
 * (d*q, d*(q-8)).
 * The *_ref functions are the scalar references; the SIMD twins
 * (dense_avx2.c: E a multiple of 8; dense_avx512.c: E a multiple of 16;
 * any other E goes to the next lower variant) sum in another order and
 * agree to float rounding. Each score and each accumulator is computed
 * the same way whatever the tile size, the position in the tile or the
 * number of queries (batch-invariant); the AVX2 and AVX-512 axpy give
 * bit-identical results, and the SIMD twins on halves and on q8_0 / q4_0
 * rows give the bits of fp16_row (q8_0_values, q4_0_values) into a float
 * tile, then their float kernel. Reached through the kernel tables (kernels.h). No allocation;
 * all pointers non-NULL. */
#ifndef VQ_KERNELS_DENSE_H
#define VQ_KERNELS_DENSE_H

#include <stddef.h>
#include <stdint.h>

typedef enum vq_elem { VQ_ELEM_F32 = 0, VQ_ELEM_F16 = 1, VQ_ELEM_Q8_0 = 2, VQ_ELEM_Q4_0 = 3 } vq_elem;

/* bytes of one row of E elements of type elem (blocks: E a multiple of 32) */
static inline size_t vq_elem_row_bytes(vq_elem elem, size_t E)
{
    return elem == VQ_ELEM_F32 ? 4 * E : elem == VQ_ELEM_F16 ? 2 * E : E / 32 * (elem == VQ_ELEM_Q8_0 ? 34 : 18);
}

/* x: the queries (dot) or the weights (axpy), n_q rows xstride apart;
 * out: the scores (dot) or the accumulators (axpy), ostride apart */
typedef void vq_dense_fn(const float *x, size_t xstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,
                         float *out, size_t ostride);

vq_dense_fn vq_dense_dot_ref, vq_dense_axpy_ref;
vq_dense_fn vq_dense_dot_avx2, vq_dense_axpy_avx2;
vq_dense_fn vq_dense_dot_avx512, vq_dense_axpy_avx512;

#endif
