/* gpu_host_util.h -- host helpers shared by the GPU test (tests/gpu/test_gpu.cu)
 * and the GPU benchmark (bench/gpu/bench_gpu.cu): a CUDA-status check that
 * prints and exits (these are programs, not the library), and a seeded
 * xorshift64 generator with uniform and Gaussian draws (random data, never
 * zeros), and the decode-attention arguments from a shape and device
 * buffers. One copy per program (static). */
#ifndef VQ_GPU_HOST_UTIL_H
#define VQ_GPU_HOST_UTIL_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "veloxquant_cuda.h"

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* uniform in [0, 1) */
static inline double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* standard normal (Box-Muller) */
static inline float gauss(void)
{
    const double u = unif() + 1e-12, v = unif();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* the shape of one decode-attention call */
struct AttnShape {
    int batch, n_q, n_kv, head_dim, page_tokens, max_pages, max_seq_len;
};

/* arguments over device buffers, scale 1/sqrt(head_dim), automatic splits */
static inline vq_cuda_attn_args attn_args(const AttnShape &s, const int32_t *page_table, const int32_t *seq_lens,
                                          const void *k_pages, size_t k_page_bytes, const void *v_pages,
                                          size_t v_page_bytes, const float *q, float *out)
{
    vq_cuda_attn_args a;
    memset(&a, 0, sizeof a);
    a.batch = s.batch;
    a.n_q_heads = s.n_q;
    a.n_kv_heads = s.n_kv;
    a.head_dim = s.head_dim;
    a.page_tokens = s.page_tokens;
    a.max_pages = s.max_pages;
    a.max_seq_len = s.max_seq_len;
    a.page_table = page_table;
    a.seq_lens = seq_lens;
    a.k_pages = k_pages;
    a.v_pages = v_pages;
    a.k_page_bytes = k_page_bytes;
    a.v_page_bytes = v_page_bytes;
    a.q = q;
    a.out = out;
    a.scale = 1.0f / sqrtf((float)s.head_dim);
    return a;
}

#endif
