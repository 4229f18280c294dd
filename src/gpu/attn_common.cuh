/* attn_common.cuh -- what the split-K attention kernels share: the
 * parameter block (filled by vq_cuda_decode_attention in attention.cu), the
 * CTA shape and the workspace layout of the partial results. */
#ifndef VQ_GPU_ATTN_COMMON_CUH
#define VQ_GPU_ATTN_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "veloxquant_cuda.h"

#define NW 4             /* warps per CTA */
#define STEPS 8          /* token steps per warp-tile */
#define CHUNK_MIN 64     /* smallest context chunk of a CTA (tokens) */
#define LOG2E 1.4426950408889634f

struct AttnParams {
    vq_cuda_format kf, vf;
    int n_q, n_kv, page_tokens, max_pages, chunk, splits;
    const int32_t *page_table, *seq_lens;
    const uint8_t *kp, *vp;
    size_t kpb, vpb;
    const float *q;
    float *out;
    float qscale;        /* scale * log2(e) */
    float *part_acc;     /* [b][n_q][splits][D] */
    float *part_ml;      /* [b][n_q][splits][2] */
};


/* The tensor-core split kernel (attention_mma.cu): launches attn_mma for
 * this (D, G, key, value) if it has one and returns true (the launch status
 * in *err), else returns false and launches nothing. */
/* whether attn_mma has this pair and shape */
bool vq_mma_supported(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G, int page_tokens);
bool vq_mma_launch(const AttnParams &p, int D, int G, int batch, cudaStream_t s, cudaError_t *err);

#endif
