/* quants.h -- weight formats of GGUF files: block layouts, dequantization
 * and dot products with activations.
 *
 * Types use ggml's numbering. For each supported type there is:
 *   - vq_dequantize: blocks -> floats (scalar reference);
 *   - vq_act_prepare + vq_dot: the fast path. Activations are prepared once
 *     per input vector into the format the weight type's kernel wants
 *     (e.g. int8 blocks for the integer dot products of the q-types, floats
 *     for F32/F16/BF16), then dotted with many weight rows;
 *   - vq_dot_ref: float reference = sum(dequantize(w) * x), in double.
 * Tests compare vq_dot (every dispatched variant) with vq_dot_ref on random
 * blocks. n must be a multiple of vq_wtype_block_elems(t). */
#ifndef VQ_MODEL_QUANTS_H
#define VQ_MODEL_QUANTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    VQ_W_F32 = 0, VQ_W_F16 = 1, VQ_W_Q4_0 = 2, VQ_W_Q4_1 = 3, VQ_W_Q5_0 = 6,
    VQ_W_Q5_1 = 7, VQ_W_Q8_0 = 8, VQ_W_Q8_1 = 9, VQ_W_Q2_K = 10, VQ_W_Q3_K = 11,
    VQ_W_Q4_K = 12, VQ_W_Q5_K = 13, VQ_W_Q6_K = 14, VQ_W_Q8_K = 15, VQ_W_BF16 = 30
} vq_wtype;

/* 1 if the runtime can use weights of this type. */
int vq_wtype_supported(uint32_t t);
const char *vq_wtype_name(uint32_t t);       /* "Q4_K", "?" if unknown */
size_t vq_wtype_block_elems(uint32_t t);     /* 0 if unknown */
size_t vq_wtype_block_bytes(uint32_t t);     /* 0 if unknown */
/* bytes of a row of n elements (n a multiple of block_elems); 0 if unknown */
size_t vq_wtype_row_bytes(uint32_t t, uint64_t n);

void vq_dequantize(vq_wtype t, const void *src, float *dst, size_t n);

size_t vq_act_bytes(vq_wtype t, size_t n);
void vq_act_prepare(vq_wtype t, const float *x, size_t n, void *act);
float vq_dot(vq_wtype t, const void *wrow, const void *act, size_t n);
double vq_dot_ref(vq_wtype t, const void *wrow, const float *x, size_t n);

/* Contracts of the functions above, in detail:
 *   vq_dequantize: n elements (whole blocks) from src to dst. Unsupported
 *     types write nothing.
 *   vq_act_bytes: size of the prepared activations for n elements; act
 *     buffers must be 4-byte aligned. Formats (quants_impl.h): floats for
 *     F32/F16/BF16; int8 blocks of 32 with a float scale and sum for
 *     Q4_0/Q4_1/Q5_0/Q5_1/Q8_0; int8 blocks of 256 with a float scale and
 *     16-element sums for the K types. Each block's scale is max|x|/127, so
 *     the activation error per element is at most max|x of its block|/254.
 *   vq_dot: returns sum_i w_i * x_i computed from the prepared activations
 *     (integer products per block, float accumulation); 0 for unsupported
 *     types. Uses the best kernel of this CPU (chosen once; VQ_FORCE_ISA).
 *   vq_dot_ref: dequantize + float64 accumulation with the unquantized x. */

/* Dots of one weight row with m prepared activation vectors, the j-th at
 * (const char *)act + j*act_stride (a multiple of 4), into out[j]. Same
 * results as m vq_dot calls up to float rounding; where a multi-vector
 * kernel exists (AVX2: the 32-element types, Q4_K, Q5_K, Q6_K) each weight
 * block is decoded once per 4 vectors, which speeds up batched prefill. */
/* out[r] = vq_dot(t, wrow + r*row_bytes, act, n) for r < nrows, the same
 * bits, four rows at a time where a 4-row kernel exists (decode). */
void vq_dot_rows(vq_wtype t, const void *wrow, size_t row_bytes, size_t nrows, const void *act, size_t n,
                 float *out);
void vq_dot_multi(vq_wtype t, const void *wrow, const void *act, size_t act_stride, size_t m,
                  size_t n, float *out);
/* out[j*out_stride + r] = dot(wrow + r*row_bytes, act + j*act_stride) for
 * r < nrows, j < m: each (row, vector) with vq_dot_multi's bits for that
 * row, whatever nrows and m are; where a tile kernel exists (AVX-512 VNNI:
 * Q4_0, Q4_1, Q5_0, Q5_1) 4 rows x 4 vectors share each weight decode and
 * activation load (batched prefill). */
void vq_dot_tile(vq_wtype t, const void *wrow, size_t row_bytes, size_t nrows, const void *act, size_t act_stride,
                 size_t m, size_t n, float *out, size_t out_stride);

/* Test hook: the dot kernel of one variant (isa 0 = scalar reference,
 * VQ_CPU_AVX2 = AVX2, VQ_CPU_AVX512_VNNI = AVX-512 VNNI), NULL if that variant does not exist for t or the CPU
 * (after VQ_FORCE_ISA) lacks it. Lets tests run every path in one process. */
typedef float (*vq_dot_fn)(const void *wrow, const void *act, size_t n);
vq_dot_fn vq_dot_variant(vq_wtype t, unsigned isa);

#endif
