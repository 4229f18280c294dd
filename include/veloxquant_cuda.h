/* veloxquant_cuda.h -- decode attention and quantize-on-append on NVIDIA
 * GPUs (sm_90, built by `make cuda` when nvcc is found), over the packed
 * bytes of the CPU codecs: a page written by vq_codec_encode can be read by
 * vq_cuda_decode_attention and a page written by vq_cuda_quantize can be read
 * by vq_codec_score / vq_codec_decode (docs/gpu.md).
 *
 * All pointers named "device" are device memory; the calls only enqueue work
 * on the given stream (no synchronisation, no allocation). Every CUDA status
 * is checked; a failure returns a vq_status with a message readable through
 * vq_cuda_last_error() (per thread). Nothing is printed.
 *
 * Formats on the GPU (head_dim 64 or 128; query heads per KV head 1, 2, 4
 * or 8):
 *   fp16, q8_0[:rot=0|1], q4_0[:rot=0|1], kivi:bits=2|4 (any group),
 *   turboquant_rvq:bits=1|2|4, rabitq:bits=1 (scored with the float query,
 *   the codec's qbits=0 estimator; the stored bytes do not depend on qbits);
 *   q8_0 / q4_0 keys with either qbits (the CPU's default for keys is 8:
 *   vq_cuda_format.qbits, below, rounds the query to int8 per block of 32
 *   as the CPU codec does; qbits=0 scores with the float query); kivi keys
 *   and q8_0 / q4_0 values with qbits=8 (same bytes, read as with qbits=0:
 *   kivi keys scored with the float query, values summed with the float
 *   weights, the CPU's qbits=0 arithmetic, although q4_0 values default to
 *   qbits=8, int8 weights, on the CPU since session 54, and kivi keys and
 *   values to qbits=8 since session 55 where head_dim is a multiple of 64);
 *   vecinfer:bits=1|2|4|8 (keys and values both vecinfer; attention only,
 *   no GPU quantize; its calibrated tables go to the device first:
 *   vq_cuda_tables_upload).
 * A format is described by vq_cuda_format, filled on the host from a CPU
 * codec by vq_cuda_format_from_codec (rotation signs and centroid tables
 * come from the same code that the CPU codec uses). */
#ifndef VELOXQUANT_CUDA_H
#define VELOXQUANT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *cudaStream_t;

typedef enum {
    VQ_CUDA_FP16 = 1,
    VQ_CUDA_Q8_0 = 2,
    VQ_CUDA_Q4_0 = 3,
    VQ_CUDA_KIVI = 4,
    VQ_CUDA_TQ_RVQ = 5,
    VQ_CUDA_RABITQ = 6,
    VQ_CUDA_VECINFER = 7
} vq_cuda_method;

/* One codec as the kernels see it (plain data, passed by value). */
typedef struct {
    int method;          /* vq_cuda_method */
    int role;            /* VQ_ROLE_KEY / VQ_ROLE_VALUE (layout of kivi) */
    int head_dim;        /* D */
    int bits;            /* kivi 2|4, turboquant_rvq 1|2|4, rabitq 1 */
    int group;           /* kivi group (tokens for keys, channels for values) */
    int rot;             /* 1: codes live in the rotated domain R x */
    int block_tokens;    /* tokens per packed block */
    int block_bytes;     /* bytes per packed block (metadata included) */
    uint8_t sign[32];    /* rotation sign diagonal, bit i of byte i/8 set ->
                            sigma_i = -1 (rotation.h) */
    float c1[16], c2[16];/* turboquant_rvq: scaled stage-1/2 centroids */
    float t1[16], t2[16];/* turboquant_rvq: unit-scale thresholds (encode) */
    float s1, s2;        /* turboquant_rvq: stage scales */
    int levels1, levels2;/* turboquant_rvq: 2^bits */
    int sub_dim;         /* vecinfer: channels per piece (4 or 8) */
    int qbits;           /* q8_0 / q4_0 keys: 8 scores with the query (after
                            the rotation when rot) rounded to int8 per block
                            of 32 channels, d = amax/127, q = round-half-even
                            (x * (127/amax)) clamped to [-127, 127], as the
                            CPU's qbits=8 key codec (kernels/qdot.h), then
                            d * q in float; 0 the float query. 0 for every
                            other format (kivi keys with qbits=8 too: float
                            query) and for values (float weights). (Fills
                            the padding before `tables`: the struct's size
                            and the other offsets are those of before.) */
    const float *tables; /* vecinfer: device tables (vq_cuda_tables_upload),
                            NULL until uploaded */
} vq_cuda_format;

/* Fill *out from a CPU codec (any handle from vq_codec_create); qbits is
 * the codec's own (a q8_0 / q4_0 key codec's spec without qbits means 8).
 * Errors:
 * VQ_ERR_INVALID_ARG (NULL), VQ_ERR_UNSUPPORTED (method, parameter or
 * head_dim that has no GPU kernel; the message says which),
 * VQ_ERR_NEEDS_CALIBRATION (vecinfer not calibrated). Host only; needs no
 * GPU. */
vq_status vq_cuda_format_from_codec(const vq_codec *c, vq_cuda_format *out);

/* Calibrated tables that a format reads from device memory (vecinfer: the
 * smoothing factors lambda[D] then the codebooks [M][K][sub_dim], floats,
 * as the codec holds them; for a value codec then a 16-byte header and the
 * codebook again in fp16, [K][D], scaled by a power of two, which the
 * kernel multiplies with the weights). vq_cuda_tables_bytes: the bytes needed (0 for
 * methods without tables). vq_cuda_tables_upload copies them into the
 * caller's device buffer (16-byte aligned; synchronous: cudaMemcpy) and
 * points f->tables at it; f must come from vq_cuda_format_from_codec(c) and
 * must not outlive the buffer. Errors: VQ_ERR_INVALID_ARG (NULL, buffer too
 * small or not 16-byte aligned),
 * VQ_ERR_NEEDS_CALIBRATION (codec not calibrated), VQ_ERR_STATE (CUDA). */
size_t vq_cuda_tables_bytes(const vq_codec *c);
vq_status vq_cuda_tables_upload(const vq_codec *c, vq_cuda_format *f, void *device_buf, size_t bytes);

/* Bytes of one page of page_tokens tokens (page_tokens a multiple of
 * block_tokens), rounded up to 16 so that pages in a pool stay aligned. */
size_t vq_cuda_page_bytes(const vq_cuda_format *f, int page_tokens);

/* Paged decode attention, one query token per sequence:
 *   out[b][h] = sum_i softmax_i(scale * <q[b][h], k_i>) v_i
 * over the seq_lens[b] tokens of sequence b; query head h reads KV head
 * h / (n_q_heads / n_kv_heads). Token i of (b, kv head g) is token
 * i % page_tokens of page page_table[(b * n_kv_heads + g) * max_pages +
 * i / page_tokens], whose bytes start at k_pages + page * k_page_bytes (same
 * page index in v_pages). Inside a page the codec's blocks follow each other
 * as on the CPU. seq_lens[b] must be <= max_seq_len and a multiple of the
 * key and value block_tokens (kivi keys keep unfinished groups elsewhere,
 * as the CPU cache's fp16 residual window does); a sequence of 0 tokens gets
 * zeros. The scores are those of the CPU key codec that the key format
 * came from (vq_codec_prepare_query / vq_codec_score), within float
 * rounding: with q8_0 / q4_0 keys of qbits=8 against the query rounded to
 * int8 per block (vq_cuda_format.qbits). A key or value format whose
 * qbits is neither 0 nor 8, or 8 on a method other than q8_0 / q4_0, is
 * refused (VQ_ERR_INVALID_ARG); qbits 8 on a q8_0 / q4_0 value format
 * changes nothing (float weights). */
typedef struct {
    int batch, n_q_heads, n_kv_heads, head_dim;
    int page_tokens, max_pages, max_seq_len;
    const int32_t *page_table; /* device [batch][n_kv_heads][max_pages] */
    const int32_t *seq_lens;   /* device [batch] */
    const void *k_pages;       /* device, page p at p * k_page_bytes */
    const void *v_pages;
    size_t k_page_bytes, v_page_bytes; /* >= vq_cuda_page_bytes, multiples of 16 */
    const float *q;            /* device [batch][n_q_heads][head_dim] */
    float *out;                /* device [batch][n_q_heads][head_dim] */
    float scale;
    int splits;                /* 0: chosen from the shape (split-K) */
} vq_cuda_attn_args;

/* Device workspace the call needs (bytes), for these arguments. */
size_t vq_cuda_attention_workspace(const vq_cuda_attn_args *a);

vq_status vq_cuda_decode_attention(const vq_cuda_format *kf, const vq_cuda_format *vf,
                                   const vq_cuda_attn_args *a, void *workspace,
                                   size_t workspace_bytes, cudaStream_t stream);

/* Which split kernel vq_cuda_decode_attention runs for these arguments:
 * "vecinfer" (vecinfer keys and values: table-lookup kernel),
 * "mma" (tensor cores: fp16/fp16, q8_0/q8_0, q4_0/q4_0, kivi2/kivi2,
 * kivi4/kivi4, turboquant_rvq1/kivi2, rabitq1/kivi2, with kivi value group
 * 32, kivi key group a multiple of 32 and page_tokens a multiple of 32),
 * "simt" (CUDA cores, format known at compile time) or "simt-generic". Setting VQ_CUDA_NO_MMA=1 in the environment makes
 * every call take the CUDA-core kernels (for comparisons). Host only. */
const char *vq_cuda_attention_kernel(const vq_cuda_format *kf, const vq_cuda_format *vf,
                                     const vq_cuda_attn_args *a);

/* Quantize-on-append: n_blocks blocks of block_tokens tokens each, rows of
 * x (device [n_blocks * block_tokens][head_dim] floats); block i is written
 * as block_bytes bytes at pool + offsets[i] (device byte offsets, multiples
 * of 2). The bytes equal vq_codec_encode's for the same rows. Supported:
 * every format above. */
vq_status vq_cuda_quantize(const vq_cuda_format *f, const float *x, int64_t n_blocks,
                           const int64_t *offsets, void *pool, cudaStream_t stream);

/* The message of the calling thread's last failing vq_cuda_* call. */
const char *vq_cuda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
