/* attn_common.cuh -- what the split-K attention kernels share: the
 * parameter block (filled by vq_cuda_decode_attention in attention.cu), the
 * CTA shape and the workspace layout of the partial results. */
#ifndef VQ_GPU_ATTN_COMMON_CUH
#define VQ_GPU_ATTN_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
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
    int warps;           /* tensor-core kernel: warps per CTA (4; 12: vq_mma_wide_ctas; 16: vq_mma_w16_ctas) */
    int cluster;         /* tensor-core kernel: 0, or the split count (1..8) when a pair's chunks run as one cluster
                          * that writes the output itself (no reduce launch: combine_cluster in attention_mma.cu) */
};

/* The work of a split CTA: chunk blockIdx.x of KV head kvh = blockIdx.y of
 * sequence b = blockIdx.z, tokens [s0, s1); qrow0 is its first query row
 * (G heads from there), part0 its first partial row (head g's at part0 +
 * g * splits). */
struct CtaWork {
    int kvh, b, s0, s1;
    size_t qrow0, part0;
};

template <int G>
__device__ __forceinline__ CtaWork cta_work(const AttnParams &p)
{
    CtaWork w;
    const int split = blockIdx.x;
    w.kvh = blockIdx.y;
    w.b = blockIdx.z;
    w.s0 = split * p.chunk;
    w.s1 = min(p.seq_lens[w.b], w.s0 + p.chunk);
    w.qrow0 = (size_t)w.b * p.n_q + (size_t)w.kvh * G;
    w.part0 = w.qrow0 * p.splits + split;
    return w;
}

/* true for an empty chunk (no token of the sequence in it), whose partial
 * rows it marks with weight 0 (m = -inf, l = 0; the accumulator is never
 * read): the CTA then returns */
template <int G>
__device__ __forceinline__ bool empty_chunk(const AttnParams &p, const CtaWork &w, int tid)
{
    if (w.s0 < w.s1)
        return false;
    if (tid < G) {
        p.part_ml[2 * (w.part0 + (size_t)tid * p.splits)] = -INFINITY;
        p.part_ml[2 * (w.part0 + (size_t)tid * p.splits) + 1] = 0.0f;
    }
    return true;
}

/* the CTA's G query rows (float32, unscaled) into shared memory; the
 * caller synchronises */
template <int G, int D, int W = NW>
__device__ __forceinline__ void load_query(const AttnParams &p, const CtaWork &w, float (&qs)[G][D], int tid)
{
    for (int i = tid; i < G * D; i += W * 32)
        qs[i / D][i % D] = p.q[w.qrow0 * D + i];
}

/* whether the key format scores with the query rounded to int8 per block
 * (q8_0 / q4_0 keys of qbits=8, vq_cuda_format.qbits; uniform per launch) */
__host__ __device__ __forceinline__ bool query_int8(const vq_cuda_format &kf)
{
    return kf.qbits == 8 && (kf.method == VQ_CUDA_Q8_0 || kf.method == VQ_CUDA_Q4_0);
}

/* One row of D floats (16-byte aligned) by one warp: each block of 32
 * channels rounded to int8 as the CPU's vq_qdot_prepare does
 * (kernels/qdot_ref.c: amax = max |x|, d = amax/127, q = lrintf(x *
 * (127/amax)) clamped to [-127, 127], 0 for an all-zero block; round half
 * to even, IEEE divisions and products), then x <- q * (d * post). Lane l
 * holds channels 4l .. 4l + 3 (8 lanes per block: three shuffles for the
 * block maxima; one pass at D = 128, lanes 16..31 idle at D = 64). All 32
 * lanes call it; it reads channels other lanes may have just written, so
 * the caller makes the row visible to the warp first (__syncwarp, or the
 * block barrier), and synchronises before other warps read the result.
 * Scoring with q * d * post in float equals the CPU's sum over blocks of
 * d_k * d * (integer dot) times the scale within float rounding. */
template <int D>
__device__ __forceinline__ void round_query_row(float *x, int lane, float post)
{
    static_assert(D % 32 == 0 && D <= 128, "D: a multiple of 32, at most 128");
    const bool on = lane < D / 4;
    const float4 v = on ? reinterpret_cast<const float4 *>(x)[lane] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
    const float inv = amax > 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    const float dp = __fmul_rn(__fdiv_rn(amax, 127.0f), post);
    auto r8 = [&](float a) { return (float)max(-127, min(127, __float2int_rn(__fmul_rn(a, inv)))) * dp; };
    if (on)
        reinterpret_cast<float4 *>(x)[lane] = make_float4(r8(v.x), r8(v.y), r8(v.z), r8(v.w));
}

/* output (g, c) of the W warps' partials merged: M the largest m, s and
 * l the sums rescaled to it (terms in warp order; combine_warps and
 * attention_mma.cu combine_cluster) */
template <int G, int D, int W = NW>
__device__ __forceinline__ void merge_warps(const float (&red)[W][G][D], const float (&wml)[W][G][2], int g, int c,
                                            float &M, float &s, float &l)
{
    M = -INFINITY;
#pragma unroll
    for (int w = 0; w < W; w++)
        M = fmaxf(M, wml[w][g][0]);
    s = 0.0f, l = 0.0f;
#pragma unroll
    for (int w = 0; w < W; w++) {
        if (wml[w][g][0] == -INFINITY)
            continue;
        const float f = exp2f(wml[w][g][0] - M);
        s += red[w][g][c] * f;
        l += wml[w][g][1] * f;
    }
}

/* The last step of the split kernels: combine the W (= NW unless the
 * kernel says otherwise) warps' partial
 * (max m, sum l, accumulator red) of each of the CTA's G query heads into
 * the chunk's (M, l, acc) in the workspace (part0: this CTA's first
 * partial row; head g's row is part0 + g * splits). A warp that saw no
 * token has m = -inf, l = 0. Needs a __syncthreads() after red / wml were
 * written; all W * 32 threads call it. */
template <int G, int D, int W = NW>
__device__ __forceinline__ void combine_warps(const AttnParams &p, const float (&red)[W][G][D],
                                              const float (&wml)[W][G][2], size_t part0, int tid)
{
    for (int i = tid; i < G * D; i += W * 32) {
        const int g = i / D, c = i % D;
        float M, s, l;
        merge_warps<G, D, W>(red, wml, g, c, M, s, l);
        const size_t row = part0 + (size_t)g * p.splits;
        p.part_acc[row * D + c] = s;
        if (c == 0) {
            p.part_ml[2 * row] = M;
            p.part_ml[2 * row + 1] = l;
        }
    }
}

/* The tensor-core split kernel (attention_mma.cu): launches attn_mma for
 * this (D, G, key, value) if it has one and returns true (the launch status
 * in *err), else returns false and launches nothing. */
/* whether attn_mma has this pair and shape */
bool vq_mma_supported(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G, int page_tokens);
/* p.cluster > 0 asks for a cluster launch; it is 0 on return where the
 * launch fell back to a plain one (then the caller launches the reduce) */
bool vq_mma_launch(AttnParams &p, int D, int G, int batch, cudaStream_t s, cudaError_t *err);
/* resident CTAs per SM of attn_mma for a supported pair and shape (the
 * occupancy calculator's answer, 1..VQ_MMA_MAX_CTAS; 3 where it fails) */
#define VQ_MMA_MAX_CTAS 8
int vq_mma_ctas_per_sm(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G);
/* the resident CTAs per SM the split count plans for, with `pairs`
 * (sequence, KV head) pairs on `sms` SMs: the occupancy, except at D = 128
 * (Round gpu11 in docs/gpu.md) 2 per SM (fewer,
 * longer chunks, less per-CTA setup and fewer partials to reduce)
 *  - for fp16 keys (not staged: bound by the loads in flight), at any
 *    batch (measured faster at batch 1, 8 and 32);
 *  - for pairs whose keys and values are both staged when there are
 *    fewer pairs than sms / 4 (batch 1 to 4 with 8 KV heads on 132 SMs:
 *    short chunks; measured at batch 1);
 *    with more pairs the packed kernels, bound by instruction issue, want
 *    all their warps (q4_0 at 64k / 128k x 8: 2-4% slower at 2 per SM);
 *    q8_0 (values read from global memory) keeps its occupancy (2-5%
 *    slower at 2 per SM at 64k and 128k x 1).
 * At D = 64 fp16 plans for 3 per SM (the occupancy is 4) when there are
 * fewer pairs than sms / 4 (measured faster at batch 1; slower at batch 8
 * and 32, which keep the occupancy); the other D = 64 pairs were not
 * measured and keep it. */
int vq_mma_plan_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G, int pairs, int sms);
/* resident CTAs per SM of the 12-warp instantiation of attn_mma (one CTA
 * per SM at 168 registers), 0 where the pair and shape have none (it
 * exists at D = 128 for the pairs whose keys and values are staged) */
int vq_mma_wide_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G);
/* resident CTAs per SM of the 16-warp instantiation (one CTA per SM at
 * 128 registers), 0 where the pair and shape have none (D = 128, G <= 4,
 * kivi2 values with kivi2, turboquant_rvq:bits=1 or rabitq:bits=1 keys) */
int vq_mma_w16_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G);

/* The vecinfer split kernel (attention_vecinfer.cu): vq_vecinfer_check
 * says whether this pair and G can run (a vq_status with a message);
 * vq_vecinfer_launch launches it (the reduce launch is the caller's). */
vq_status vq_vecinfer_check(const vq_cuda_format &kf, const vq_cuda_format &vf, int G);
cudaError_t vq_vecinfer_launch(const AttnParams &p, int D, int G, int batch, cudaStream_t s);
/* resident CTAs per SM of the vecinfer kernel for this pair and G (the
 * occupancy calculator's, 1..VQ_MMA_MAX_CTAS; 1 where it fails): one where
 * the value codebook sits in shared memory */
int vq_vecinfer_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G);

#endif
