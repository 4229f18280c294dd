/* quants_impl.h -- internal to src/model/quants*.c: block layouts of the
 * weight types and of the activation formats, and the kernel signatures.
 *
 * Weight blocks follow ggml's ggml-common.h (the GGUF on-disk layout); fp16
 * fields are raw IEEE half bits. Every struct has only byte and 16-bit
 * members, so blocks need 2-byte alignment, which rows inside a GGUF tensor
 * always have (all block sizes are even, tensor data is 32-byte aligned).
 *
 * Activation formats (ours, in memory only, never stored):
 *   vq_act32: for the 32-element types: float d (scale), float s (d * sum of
 *             qs), int8 qs[32] with x ~= d * qs, |qs| <= 127.
 *   vq_act256: for the K types: float d, int8 qs[256], int16 bsums[16]
 *             (sum of each 16 consecutive qs), |qs| <= 127.
 *   F32/F16/BF16 weights take the activations as plain floats.
 * act buffers must be 4-byte aligned (any malloc'd buffer is). */
#ifndef VQ_MODEL_QUANTS_IMPL_H
#define VQ_MODEL_QUANTS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "model/quants.h"

#define VQ_QK 32   /* elements per block of the 32-element types */
#define VQ_QK_K 256 /* elements per super-block of the K types */

typedef struct { uint16_t d; uint8_t qs[16]; } vq_blk_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } vq_blk_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } vq_blk_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } vq_blk_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } vq_blk_q8_0;
/* Q2_K: per 16 elements a byte of scale (low 4 bits) and min (high 4 bits);
 * 2-bit codes; x = d*scale*q - dmin*min */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } vq_blk_q2_K;
/* Q3_K: 2 low bits in qs, the third bit in hmask (set = no -4 offset),
 * sixteen 6-bit scales (minus 32) packed in 12 bytes; x = d*scale*q */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } vq_blk_q3_K;
/* Q4_K/Q5_K: eight 6-bit (scale, min) pairs per 32 elements in 12 bytes;
 * x = d*scale*q - dmin*min */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } vq_blk_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } vq_blk_q5_K;
/* Q6_K: 4 low bits in ql, 2 high bits in qh, int8 scale per 16; x = d*scale*(q-32) */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } vq_blk_q6_K;

_Static_assert(sizeof(vq_blk_q4_0) == 18, "Q4_0 block");
_Static_assert(sizeof(vq_blk_q4_1) == 20, "Q4_1 block");
_Static_assert(sizeof(vq_blk_q5_0) == 22, "Q5_0 block");
_Static_assert(sizeof(vq_blk_q5_1) == 24, "Q5_1 block");
_Static_assert(sizeof(vq_blk_q8_0) == 34, "Q8_0 block");
_Static_assert(sizeof(vq_blk_q2_K) == 84, "Q2_K block");
_Static_assert(sizeof(vq_blk_q3_K) == 110, "Q3_K block");
_Static_assert(sizeof(vq_blk_q4_K) == 144, "Q4_K block");
_Static_assert(sizeof(vq_blk_q5_K) == 176, "Q5_K block");
_Static_assert(sizeof(vq_blk_q6_K) == 210, "Q6_K block");

typedef struct { float d, s; int8_t qs[32]; } vq_act32;
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } vq_act256;
_Static_assert(sizeof(vq_act32) == 40, "act32 block");
_Static_assert(sizeof(vq_act256) == 292, "act256 block");

/* Which activation format a weight type uses. */
typedef enum { VQ_ACT_NONE, VQ_ACT_F32, VQ_ACT_Q32, VQ_ACT_Q256 } vq_act_kind;
vq_act_kind vq_act_kind_of(vq_wtype t);

/* Unpacked integer codes of one block, in element order.
 * 32-element types: x_i = d * q[i] + m.
 * K types: x_i = d * scale[i/16] * q[i] - dmin * min[i/16]. */
typedef struct { int8_t q[32]; float d, m; } vq_unpacked32;
typedef struct { int8_t q[256]; int16_t scale[16], min[16]; float d, dmin; } vq_unpacked256;
void vq_unpack32(vq_wtype t, const void *blk, vq_unpacked32 *u);
void vq_unpack256(vq_wtype t, const void *blk, vq_unpacked256 *u);
/* Q4_K/Q5_K packed 6-bit (scale, min) pair j (0..7). */
void vq_k4_scale_min(const uint8_t *scales12, int j, int *scale, int *min);

/* Scalar activation quantizers (quants_ref.c); vq_act_quantize32_avx512x
 * (quants_avx512x.c) writes the same bytes, and vq_act_prepare takes it
 * where quants.c's dot table takes the AVX-512 VNNI kernels. */
void vq_act_quantize32(const float *x, size_t n, vq_act32 *a);
void vq_act_quantize32_avx512x(const float *x, size_t n, vq_act32 *a);
void vq_act_quantize32_avx2(const float *x, size_t n, vq_act32 *a);
void vq_act_quantize256(const float *x, size_t n, vq_act256 *a);

/* The weight types with dot kernels, X(TYPE, suffix) for VQ_W_TYPE and
 * the kernel dot_<suffix> (dot4_<suffix>) of each kernel file: the float
 * types, the 32-element block types, the 256-element (K) block types. A
 * kernel file's lookup is a switch over the lists it implements
 * (VQ_DOT_CASE / VQ_DOT4_CASE). */
#define VQ_DOT_FLOAT_TYPES(X) X(F32, f32) X(F16, f16) X(BF16, bf16)
#define VQ_DOT_Q32_TYPES(X) X(Q4_0, q4_0) X(Q4_1, q4_1) X(Q5_0, q5_0) X(Q5_1, q5_1) X(Q8_0, q8_0)
#define VQ_DOT_QK_TYPES(X) X(Q2_K, q2_K) X(Q3_K, q3_K) X(Q4_K, q4_K) X(Q5_K, q5_K) X(Q6_K, q6_K)
#define VQ_DOT_CASE(T, s) \
    case VQ_W_##T:        \
        return dot_##s;
#define VQ_DOT4_CASE(T, s) \
    case VQ_W_##T:         \
        return dot4_##s;


/* A dot kernel: weight row (n elements) with prepared activations. */
typedef float (*vq_dot_kernel)(const void *wrow, const void *act, size_t n);
/* Scalar kernels, indexed by type; NULL where unsupported. */
vq_dot_kernel vq_dot_scalar_kernel(vq_wtype t);
/* A 4-vector kernel: out[j] = dot(wrow, act + j*stride) for j = 0..3, the
 * weight blocks decoded once. */
#define VQ_DOT_MULTI_MAX 4
typedef void (*vq_dot4_kernel)(const void *wrow, const void *act, size_t stride, size_t n,
                               float *out);
vq_dot4_kernel vq_dot4_avx2_kernel(vq_wtype t);
/* AVX2 kernels (quants_avx2.c); NULL where no AVX2 variant exists. Only
 * call what it returns after vq_cpu_features() reported AVX2. */
vq_dot_kernel vq_dot_avx2_kernel(vq_wtype t);
/* AVX-512 VNNI kernels (quants_avx512x.c) for the 32-element types; NULL
 * for the others. Only call them after vq_cpu_features() reported
 * VQ_CPU_AVX512_VNNI. */
vq_dot_kernel vq_dot_avx512x_kernel(vq_wtype t);
vq_dot4_kernel vq_dot4_avx512x_kernel(vq_wtype t);
/* A 4-row kernel: out[r] = dot(wrow + r*rstride, act) for r = 0..3, each
 * row with the single-row kernel's arithmetic (the same bits), the
 * activation read once: decode matrix-vector products. */
typedef void (*vq_rows4_kernel)(const void *wrow, size_t rstride, const void *act, size_t n, float *out);
vq_rows4_kernel vq_rows4_avx512x_kernel(vq_wtype t);
/* A 4x4 tile kernel: out[j*ostride + r] = dot(wrow + r*rstride, act +
 * j*astride) for r, j = 0..3, each with the single-row kernel's arithmetic
 * (the same bits): batched prefill. */
typedef void (*vq_tile4_kernel)(const void *wrow, size_t rstride, const void *act, size_t astride, size_t n,
                                float *out, size_t ostride);
vq_tile4_kernel vq_tile4_avx512x_kernel(vq_wtype t);

#endif
