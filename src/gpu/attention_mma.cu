/* attention_mma.cu -- the split kernel of paged decode attention on the
 * tensor cores (mma.sync m16n8k16, fp16 operands, fp32 accumulation), for
 * the (key, value) format pairs that matter most: fp16/fp16, q8_0/q8_0,
 * q4_0/q4_0, kivi2/kivi2, kivi4/kivi4, turboquant_rvq1/kivi2, rabitq1/kivi2
 * (attention.cu runs every other pair on its CUDA-core kernel). Same grid, same partial results and
 * same reduce launch as attention.cu's attn_split.
 *
 * Exactness. The tensor cores only see numbers that are exact in fp16:
 *  - codes, never dequantised values: a b-bit code is masked out of its
 *    packed word in place, at a bit offset e < 8 of a 16-bit half (words
 *    are shifted or byte-permuted so; bits 10..14 would be the exponent).
 *    Keys: the fp16 operand is the subnormal code * 2^(e-24), exact (the
 *    H200's tensor cores keep fp16 subnormals); the query operand carries
 *    2^(24-e-EXPO), so products are about q * code * 2^-16. Values: the
 *    softmax weight can be tiny, and the tensor cores sum with an absolute
 *    floor near 2^-43 (probed), so value codes become normal fp16 numbers
 *    code * 2^e (exponent OR'ed in, 1024 subtracted: code_h2). q8_0 / q4_0
 *    codes are small integers, made exact fp16 numbers the same way
 *    (i8_h2, u4_h2); their per-block scales stay outside the product.
 *    q4_0 keys (QSUBK): the unsigned nibble u = c + 8 as a subnormal key
 *    operand, its offset -8 * sum q per block as the accumulators' start.
 *  - the query (times the key codec's per-channel factors; for q8_0 / q4_0
 *    keys of qbits=8 first rounded to int8 per block of 32 as the CPU codec
 *    does, round_query_row: d * q) and the softmax
 *    weights (times the value codec's per-token group scale) are float32
 *    numbers split into hi + lo fp16 halves: hi in rows 0..7 of the 16-row
 *    operand, lo in rows 8..15 (query head g in row g and g + 8), summed
 *    after the product; hi + lo carries about 22 bits.
 *  - scales and offsets that multiply a whole token or a whole column
 *    (turboquant's norm, rabitq's factor, kivi's key-group minima, kivi's
 *    value minima, q8_0/q4_0 key block scales) are applied in float32
 *    outside the product.
 * So the scores and outputs equal the CPU's within float32 rounding plus the
 * tensor cores' truncated sums (measured <= 3.4e-5 relative; the test's
 * threshold, 2e-4, is the same as for the CUDA-core kernels).
 *
 * Layout per warp and iteration of 32 tokens (4 n-tiles of 8 tokens):
 *  S[16 x 8] += Q'[16 x 16] K^T[16 x 8] over D/16 k-steps: lane (g, t)
 *  (g = lane / 4, t = lane % 4) supplies token g of each n-tile from its
 *  D/4-channel slice of the token's row (channel order inside the k-steps is
 *  a fixed permutation, key_chan(), applied to Q' as well);
 *  online softmax per query head (row), base 2, max updated only when a
 *  score exceeds it;
 *  O[16 x D] += P[16 x 16] V[16 x D] over 2 k-tiles of 16 tokens: lane
 *  (g, t) supplies column g of every n-tile for tokens 2t, 2t+1, 2t+8,
 *  2t+9 of the k-tile, pairing two tokens per register with a byte permute.
 * Packed keys (and values where they fit) reach the warp through its own
 * 2-stage shared-memory buffer filled by cp.async one tile ahead (staging,
 * below). 64-token iterations (two sub-tiles of 32) run as a software
 * pipeline: the next sub-tile's scores beside this one's value product
 * (SWP, the main loop). */
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>

#include "attn_common.cuh"
#include "formats.cuh"
#include "mma_ops.cuh"
#include "rotation.cuh"
#include "timeline.cuh"

using namespace vqg;

#ifdef VQ_TIMELINE
VQ_TL_DEFINE(vq_tl_mma, vq_timeline_read_mma)
#define TL(s) VQ_TL_STAMP0(vq_tl_mma, s)
#else
#define TL(s) ((void)0)
#endif

namespace {

/* CTAs per SM the register allocation aims at: 3 (<= 168 registers)
 * measured 0-12% faster at 64k x 8 than 1 (185-250 registers, 2 CTAs), and
 * 4 (128 registers, spills in some instantiations) 5-30% slower at D = 128.
 * attention.cu's split choice asks each instantiation's occupancy
 * (vq_mma_ctas_per_sm): the D = 64 ones fit 4 per SM. */
#ifndef VQ_MMA_MINB
#define VQ_MMA_MINB(km) 3
#endif
#ifndef VQ_MMA_SPLIT /* 0: no lane split of the kivi folds (for comparisons) */
#define VQ_MMA_SPLIT 1
#endif
#ifndef VQ_MMA_EX2 /* 0: exp2f (for comparisons) */
#define VQ_MMA_EX2 1
#endif
#ifndef VQ_MMA_Q4B /* 0: q4_0 value columns spread over the 4-byte words (the older layout, for comparisons) */
#define VQ_MMA_Q4B 1
#endif
#ifndef VQ_MMA_VBYTE /* 0: kivi value columns spread over the bytes (the older layout, for comparisons) */
#define VQ_MMA_VBYTE 1
#endif
#ifndef VQ_MMA_HFOLD /* 0: the kivi folds (q * s, P * s) in float32 with a hi/lo split per product (for comparisons) */
#define VQ_MMA_HFOLD 1
#endif
#ifndef VQ_MMA_MINMMA /* 0: kivi2 value minima sums (VLDSM) by float FMAs instead of one mma per k-tile */
#define VQ_MMA_MINMMA 1
#endif
#ifndef VQ_MMA_LEANSTAGE /* 0: the staging copies' addresses in 64-bit arithmetic per copy (for comparisons) */
#define VQ_MMA_LEANSTAGE 1
#endif
#ifndef VQ_MMA_KMINMMA /* 0: kivi key minima (sum_c q_c m_c per block) by float FMAs instead of mma (SPLIT_K) */
#define VQ_MMA_KMINMMA 1
#endif
#ifndef VQ_MMA_BULK /* 1: the staging by bulk copies (cp.async.bulk, one lane, an mbarrier per stage) instead of 16-byte cp.async per lane */
#define VQ_MMA_BULK 0
#endif
#ifndef VQ_MMA_SUB2 /* 0: warp tiles of 32 tokens only (1: 64 tokens per iteration, two sub-tiles, where the stage fits) */
#define VQ_MMA_SUB2 1
#endif
#ifndef VQ_MMA_I8K /* bit 0: turboquant_rvq:bits=1, bit 1: rabitq:bits=1 keys (D = 128, G <= 4) by int8 mma (s8 query pieces x u8 bits) instead of fp16; bit 2: turboquant_rvq:bits=2 keys with kivi2 values on the tensor cores at all (D = 64 or 128, G = 1..8; otherwise CUDA cores); bits 3, 4: rvq1, rabitq1 keys by int8 mma at D = 64 (G <= 4) too */
#define VQ_MMA_I8K 31
#endif
#ifndef VQ_MMA_RSYM /* 0: turboquant_rvq:bits=2 keys always take the b0 AND b1 k-steps (1: skipped when both stages' tables are symmetric, t3 - t2 = t1 - t0, so that the cross factor is 0: every table the library builds) */
#define VQ_MMA_RSYM 1
#endif
#ifndef VQ_MMA_VSUBN /* kivi2 VLDSM value codes: 0 normal fp16 numbers ((1024 + c) - 1024, an HSUB2 per pair); else subnormal fp16 (one AND), the weights scaled up: 1 every code at its own bit offset (0..6), 2 codes at offsets 4, 6 only (the others as in 0), 3 every code shifted to offset 4, 6 or 8 (3 shifts per register), 4 the same offsets by 2 shifts per register (x << 6, x, x >> 6) */
#define VQ_MMA_VSUBN 4
#endif
#ifndef VQ_MMA_VSCALE /* 0: the other kivi value paths fold P * s unscaled (1: times a warp-uniform 2^vF, so that the lo halves stay normal fp16 numbers for small value scales) */
#define VQ_MMA_VSCALE 1
#endif
#ifndef VQ_MMA_QSCALE /* 0: the q8_0 / q4_0 value paths fold P * d unscaled (1: times a warp-uniform 2^vF as VSCALE, for small block scales d) */
#define VQ_MMA_QSCALE 1
#endif
#ifndef VQ_MMA_VT /* kivi2 VLDSM values (VSUBN mode 4): 1 the transposed value product O^T += V^T (P s)^T, the codes the A operand (rows: channels), the hi and lo halves of P s two B operands into one accumulator (half the accumulators, 2-23 registers fewer); 0 O += (P s) V with hi / lo rows, for comparisons (Round gpu18 in docs/gpu.md: rvq2/kivi2 -3%, the other pairs within +-1.5%) */
#define VQ_MMA_VT 1
#endif
#ifndef VQ_MMA_VLDSM /* 0: kivi2 value codes by byte loads and permutes instead of ldmatrix (for comparisons) */
#define VQ_MMA_VLDSM 1
#endif
#ifndef VQ_MMA_SWP /* 0: 64-token iterations (SUB2) without the software pipeline (1: the next sub-tile's key product in the same straight-line code as this one's value product) */
#define VQ_MMA_SWP 1
#endif
#ifndef VQ_MMA_PGPF /* unstaged keys (fp16): 1 the next tile's page-table entry read one tile ahead (0: at the tile's start) */
#define VQ_MMA_PGPF 1
#endif
#ifndef VQ_MMA_QSUBK /* q4_0 keys: 1 the unsigned nibbles u = c + 8 as subnormal fp16 (one AND per two codes), the offset (-8 times the block's sum of q) as the start of the block's accumulators; 0 exact fp16 integers c (a byte permute and an HSUB2 per two codes) */
#define VQ_MMA_QSUBK 1
#endif
#ifndef VQ_MMA_WIDE /* 1: a second instantiation with 12 warps per CTA (one CTA per SM, 168 registers) for the pairs whose keys and values are staged, at D = 128; the host picks it for long chunks (vq_mma_plan_warps) */
#define VQ_MMA_WIDE 1
#endif
#ifndef VQ_MMA_RBF /* rabitq:bits=1 keys: 1 each token's factor computed once (lane i: token i) and shuffled to the scores (0: one division per score) */
#define VQ_MMA_RBF 1
#endif
#ifndef VQ_MMA_WROT /* 1: the query's key rotation by one warp per row with shuffles (rot_forward_warp); 0: rot_forward_smem, nine block barriers (for comparisons) */
#define VQ_MMA_WROT 1
#endif
#ifndef VQ_MMA_FIRST1 /* 1: at the start of the 64-token pipeline each warp waits for its first stage before issuing the second, so that the first stages of all warps are not queued behind second ones (0: both issued, then the first waited for) */
#define VQ_MMA_FIRST1 0
#endif
#ifndef VQ_MMA_REDSTG /* 1: the warps' partial accumulators (red) in the stage memory after the loop where it is large enough (less static shared memory per CTA) */
#define VQ_MMA_REDSTG 1
#endif
/* CTAs per SM the register cap of a W-warp CTA aims at: 12 warps per SM
 * (3 per scheduler, <= 168 registers; the register file is 16 K words
 * per scheduler, so 13-16 warps would all cap at 128); 16 warps (w16_ok):
 * one CTA per SM, 128 registers */
template <int W, int KM>
__host__ __device__ constexpr int mma_minb() { return W == 4 ? VQ_MMA_MINB(KM) : W <= 12 ? 12 / W : 1; }
constexpr int WTOK = 32; /* tokens per warp iteration */
constexpr int EXPO = 16; /* code products come out times 2^-EXPO */
constexpr unsigned FULL = 0xffffffffu;

/* a 16-byte load of cache bytes read once: a plain load (ld.global.nc with
 * L1::no_allocate and L2::256B measured 10% slower for fp16 at 64k x 8 and
 * 8-16% at batch 32: Round gpu16 in docs/gpu.md) */
__device__ __forceinline__ uint4 ld_once(const void *p) { return *(const uint4 *)p; }

#if VQ_MMA_I8K
/* c += a b, m16n8k32: a signed bytes (rows of 32 k), b unsigned bytes, exact int32 sums */
__device__ __forceinline__ void mma16832(int c[4], const uint4 &a, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}
#endif


/* 2^x, one MUFU.EX2 (exp2f adds a range check and two multiplies for
 * results below 2^-126, which are flushed to 0 here: softmax weights
 * relative to the running maximum, so such weights are negligible) */
__device__ __forceinline__ float ex2(float x)
{
#if VQ_MMA_EX2
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
}

/* a value row's header [s0 s1 s2 s3 m0 m1 m2 m3] (fp16): the lane's two
 * scales and two minima, picked by hsel (high or low halves) */
__device__ __forceinline__ void scales_mins(const uint4 &v, uint32_t hsel, float s[2], float m[2])
{
    const uint32_t sp = __byte_perm(v.x, v.y, hsel), mp = __byte_perm(v.z, v.w, hsel);
    const float2 s2 = __half22float2(*(const __half2 *)&sp), m2 = __half22float2(*(const __half2 *)&mp);
    s[0] = s2.x;
    s[1] = s2.y;
    m[0] = m2.x;
    m[1] = m2.y;
}

/* (hi, lo) of (xh + xl) * y in fp16 pairs, xh + xl a hi/lo split of x:
 * hi = fp16(xh * y), its rounding error xh * y - hi exactly (one FMA),
 * lo = fp16(xl * y + that error); hi + lo is x * y within about 2^-21
 * relative (a float32 product split afterwards: 2^-22) */
__device__ __forceinline__ void hfold(uint32_t xh, uint32_t xl, uint32_t y, uint32_t &hi, uint32_t &lo)
{
    const __half2 a = *(const __half2 *)&xh, b = *(const __half2 *)&xl, c = *(const __half2 *)&y;
    const __half2 h = __hmul2(a, c);
    const __half2 e = __hfma2(a, c, __hneg2(h));
    const __half2 l = __hfma2(b, c, e);
    hi = h2u(h);
    lo = h2u(l);
}

/* the codes selected by mask in both 16-bit halves of x, as exact normal
 * fp16 numbers: (1024 + code * 2^e) - 1024, e = the mask's bit offset <= 8
 * (a subnormal operand would be exact too, but the tensor cores sum with an
 * absolute floor near 2^-43: products of subnormals and small softmax
 * weights lost bits, measured 2e-4 relative error) */
#if !VQ_MMA_VBYTE
__device__ __forceinline__ uint32_t code_h2(uint32_t x, uint32_t mask)
{
    const uint32_t y = (x & mask) | 0x64006400u;
    return h2u(__hsub2(*(const __half2 *)&y, __half2(__ushort_as_half(0x6400u), __ushort_as_half(0x6400u))));
}
#endif

/* (x & MASK) | magic in one LOP3, magic = 0x64006400 held in a register
 * (written as C, both constants become immediates: two LOP3) */
template <uint32_t MASK>
__device__ __forceinline__ uint32_t and_or(uint32_t x, uint32_t magic)
{
    uint32_t y;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(y) : "r"(x), "n"(MASK), "r"(magic));
    return y;
}

/* the magic constant 0x64006400, opaque to the compiler so that it stays
 * in a register */
__device__ __forceinline__ uint32_t magic6400()
{
    uint32_t m;
    asm("mov.b32 %0, 0x64006400;" : "=r"(m));
    return m;
}

/* code_h2 for a constant mask: codes at bit offset <= 8 of each half ->
 * exact fp16 code * 2^offset */
template <uint32_t MASK>
__device__ __forceinline__ uint32_t code_h2c(uint32_t x, uint32_t magic)
{
    const uint32_t y = and_or<MASK>(x, magic);
    return h2u(__hsub2(*(const __half2 *)&y, __half2(__ushort_as_half(0x6400u), __ushort_as_half(0x6400u))));
}

/* fp16 pair (1152 + c0, 1152 + c1) -> (c0, c1), exact */
__device__ __forceinline__ uint32_t i8_h2(uint32_t y)
{
    return h2u(__hsub2(*(const __half2 *)&y, __half2(__ushort_as_half(0x6480u), __ushort_as_half(0x6480u))));
}

/* fp16 pair (1024 + u0, 1024 + u1) -> (u0 - 8, u1 - 8), exact */
__device__ __forceinline__ uint32_t u4_h2(uint32_t y)
{
    return h2u(__hsub2(*(const __half2 *)&y, __half2(__ushort_as_half(0x6408u), __ushort_as_half(0x6408u))));
}

__device__ __forceinline__ uint32_t ld32u(const uint8_t *p) { return *(const uint32_t *)p; }

/* ldmatrix .x4 .trans: lane i gives the 16-byte row address of row i % 8
 * of matrix i / 8; lane (g, t) gets, per matrix j, the 16-bit word g of
 * rows 2t (low half) and 2t + 1 (high half) in r[j] */
__device__ __forceinline__ void ldsm4t(const void *row, uint32_t (&r)[4])
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

/* ---- key formats ------------------------------------------------------------
 * Lane (g, t) holds, per k-step s, the B fragment b0 = channels (j = 0, 1),
 * b1 = channels (j = 2, 3) of its token; key_chan gives the channel (inside
 * the lane's slice of D/4 channels) and key_exp the bit offset e of the code
 * (operand = code * 2^(e-24)). */
template <int KM, int D>
__host__ __device__ __forceinline__ constexpr int key_chan(int s, int j)
{
    if constexpr (KM == FMT_FP16) {
        return 4 * s + j;
    } else if constexpr (KM == FMT_KIVI2) {
        if constexpr (D == 128)
            return (j == 0 ? 0 : j == 1 ? 8 : j == 2 ? 16 : 24) + s;
        else
            return (j == 0 ? 0 : j == 1 ? 8 : j == 2 ? 4 : 12) + s;
    } else if constexpr (KM == FMT_KIVI4) {
        if constexpr (D == 128) {
            const int u = 8 * (s >> 2) + 2 * ((s >> 1) & 1) + (s & 1);
            return u + (j == 0 ? 0 : j == 1 ? 4 : j == 2 ? 16 : 20);
        } else {
            return s + (j == 0 ? 0 : j == 1 ? 4 : j == 2 ? 8 : 12);
        }
    } else { /* one bit per channel (turboquant_rvq:bits=1 planes, rabitq:bits=1) */
        if constexpr (D == 128)
            return s + (j == 0 ? 0 : j == 1 ? 16 : j == 2 ? 8 : 24);
        else
            return s + (j == 0 ? 0 : j == 1 ? 8 : j == 2 ? 4 : 12);
    }
}

/* the channel (0..D-1) of k-index j of k-step s for quad lane t */
template <int KM, int D>
__device__ __forceinline__ int key_channel(int t, int s, int j)
{
    if constexpr (KM == FMT_Q4 && VQ_MMA_QSUBK) /* as below, bytes 0, 2 of the lane's word in b0, 1, 3 in b1 */
        return 32 * (s >> 1) + 16 * (s & 1) + 4 * t + (j == 0 ? 0 : j == 1 ? 2 : j == 2 ? 1 : 3);
    else if constexpr (KM == FMT_Q8 || KM == FMT_Q4) /* k-step s inside block s/2: channels 16 (s%2) + 4t + j */
        return 32 * (s >> 1) + 16 * (s & 1) + 4 * t + j;
    else if constexpr (KM == FMT_FP16) /* lane t: 16-byte chunks 4i + t of the row (key_load) */
        return 8 * (4 * (s >> 1) + t) + 4 * (s & 1) + j;
    else
        return t * (D / 4) + key_chan<KM, D>(s, j);
}

template <int KM, int D>
__device__ __forceinline__ constexpr int key_exp(int s)
{
    if constexpr (KM == FMT_KIVI2)
        return D == 128 ? 2 * (s & 3) : 2 * s;
    else if constexpr (KM == FMT_KIVI4)
        return 4 * (s & 1);
    else if constexpr (KM == FMT_Q4) /* QSUBK: high nibbles (odd k-steps) in place at bit 4 */
        return 4 * (s & 1);
    else
        return s;
}

/* SPLIT_K's assumptions on key_chan: k-step KS/2 + i is k-step i moved
 * by one constant, and k-steps 2i, 2i + 1 take adjacent channels, the first
 * even (one aligned 32-bit load of two fp16 scales) */
template <int KM, int D>
__host__ __device__ constexpr bool split_k_layout_ok()
{
    constexpr int KS = D / 16;
    const int delta = key_chan<KM, D>(KS / 2, 0) - key_chan<KM, D>(0, 0);
    for (int i = 0; i < KS / 2; i++)
        for (int j = 0; j < 4; j++) {
            if (key_chan<KM, D>(KS / 2 + i, j) != key_chan<KM, D>(i, j) + delta || delta % 2)
                return false;
            if (i % 2 == 0 && (key_chan<KM, D>(i + 1, j) != key_chan<KM, D>(i, j) + 1 || key_chan<KM, D>(i, j) % 2))
                return false;
        }
    return true;
}

template <int KM>
__host__ __device__ constexpr int key_planes() { return KM == FMT_RVQ1 || KM == FMT_RVQ2 ? 2 : 1; }

/* the raw bits of a lane's slice of one token: W words per plane */
template <int KM, int D>
__host__ __device__ constexpr int key_words()
{
    return KM == FMT_FP16 ? D / 8 : KM == FMT_Q8 ? D / 16 : KM == FMT_Q4 ? D / 32 : KM == FMT_KIVI2 ? D / 64 : KM == FMT_KIVI4 ? D / 32
         : KM == FMT_RVQ2 ? D / 64 : 1;
}

template <int KM, int D>
struct KeyRaw {
    uint32_t w[key_planes<KM>()][key_words<KM, D>()];
};

/* load the slice of lane t of the token row at `row` (for kivi: the token's
 * code row inside its block) */
template <int KM, int D, bool I8 = false>
__device__ __forceinline__ void key_load(const uint8_t *row, int t, KeyRaw<KM, D> &r)
{
    if constexpr (KM == FMT_FP16) {
        /* chunks 4i + t: a quarter warp reads 4 consecutive chunks of each
         * of two rows, conflict-free in the padded stage (fp16_stage_row) */
        const uint4 *p = (const uint4 *)row + t;
#pragma unroll
        for (int i = 0; i < D / 32; i++) {
            const uint4 v = ld_once(p + 4 * i);
            r.w[0][4 * i] = v.x;
            r.w[0][4 * i + 1] = v.y;
            r.w[0][4 * i + 2] = v.z;
            r.w[0][4 * i + 3] = v.w;
        }
    } else if constexpr (KM == FMT_Q8) {
        /* blocks of [d fp16][32 int8]: 4 codes at block offset 2 + 16h + 4t,
         * 4-byte aligned in odd blocks only (rows are 4-byte aligned) */
#pragma unroll
        for (int b = 0; b < D / 32; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint8_t *p = row + 34 * b + 2 + 16 * h + 4 * t;
                r.w[0][2 * b + h] = b & 1 ? ld32u(p) : (uint32_t)ld16(p) | (uint32_t)ld16(p + 2) << 16;
            }
    } else if constexpr (KM == FMT_Q4) {
        /* blocks of [d fp16][16 bytes: value i low nibble, i + 16 high]:
         * bytes 4t..4t+3 at block offset 2 + 4t (aligned in odd blocks) */
#pragma unroll
        for (int b = 0; b < D / 32; b++) {
            const uint8_t *p = row + 18 * b + 2 + 4 * t;
            r.w[0][b] = b & 1 ? ld32u(p) : (uint32_t)ld16(p) | (uint32_t)ld16(p + 2) << 16;
        }
    } else if constexpr (KM == FMT_KIVI2) {
        if constexpr (D == 128) {
            const uint2 v = *(const uint2 *)(row + 8 * t);
            r.w[0][0] = v.x;
            r.w[0][1] = v.y;
        } else {
            r.w[0][0] = ld32u(row + 4 * t);
        }
    } else if constexpr (KM == FMT_KIVI4) {
        if constexpr (D == 128) {
            const uint4 v = *(const uint4 *)(row + 16 * t);
            r.w[0][0] = v.x;
            r.w[0][1] = v.y;
            r.w[0][2] = v.z;
            r.w[0][3] = v.w;
        } else {
            const uint2 v = *(const uint2 *)(row + 8 * t);
            r.w[0][0] = v.x;
            r.w[0][1] = v.y;
        }
    } else if constexpr (KM == FMT_RVQ2) {
        /* [norm fp16][stage 1: 2-bit codes, D/4 bytes][stage 2: D/4]; I8K
         * only: lane t takes bytes (D/16) t .. (D/16) t + D/16 - 1 of each
         * stage (channels (D/4) t .. (D/4) t + D/4 - 1), D/64 words,
         * 2-byte aligned */
#pragma unroll
        for (int st = 0; st < 2; st++)
#pragma unroll
            for (int u = 0; u < D / 64; u++) {
                const uint8_t *b = row + 2 + st * (D / 4) + (D / 16) * t + 4 * u;
                r.w[st][u] = (uint32_t)ld16(b) | (uint32_t)ld16(b + 2) << 16;
            }
    } else {
        /* rvq1: [norm fp16][plane a: D/8 bytes][plane b: D/8]; rabitq1:
         * [2 x fp16][bits: D/8]; D/32 bytes per lane, 2-byte aligned */
        constexpr int off0 = KM == FMT_RVQ1 ? 2 : 4;
#pragma unroll
        for (int pl = 0; pl < key_planes<KM>(); pl++) {
            const uint8_t *b = row + off0 + pl * (D / 8) + t * (D / 32);
            if constexpr (D == 128) {
                r.w[pl][0] = (uint32_t)ld16(b) | (uint32_t)ld16(b + 2) << 16;
            } else if constexpr (I8) {
                /* I8K: channels 0..3, 8..11, 4..7, 12..15 in bytes 0..3' low nibbles */
                const uint32_t v = ld16(b);
                r.w[pl][0] = (v & 0x0f0fu) | (v & 0xf0f0u) << 12;
            } else {
                const uint32_t v = ld16(b); /* channels 0..7 low half, 8..15 high half */
                r.w[pl][0] = (v & 0xffu) | (v & 0xff00u) << 8;
            }
        }
    }
}

/* B fragment of plane pl, k-step s */
template <int KM, int D>
__device__ __forceinline__ void key_frag(const KeyRaw<KM, D> &r, int pl, int s, uint32_t &b0, uint32_t &b1)
{
    if constexpr (KM == FMT_FP16) {
        b0 = r.w[0][2 * s];
        b1 = r.w[0][2 * s + 1];
    } else if constexpr (KM == FMT_Q4 && VQ_MMA_QSUBK) {
        /* k-step 2b: low nibbles of bytes 0, 2 (b0) and 1, 3 (b1) at bit
         * 0 of each half, 2b + 1: the high nibbles in place at bit 4;
         * subnormal u * 2^(e-24), u = c + 8 */
        const uint32_t w = r.w[0][s >> 1];
        const uint32_t m = s & 1 ? 0x00f000f0u : 0x000f000fu;
        b0 = w & m;
        b1 = (w >> 8) & m;
    } else if constexpr (KM == FMT_Q8) {
        /* signed bytes c -> fp16 (1024 + 128 + c) - 1152: exact */
        const uint32_t x = r.w[0][s] ^ 0x80808080u;
        b0 = i8_h2(__byte_perm(x, 0x64646464u, 0x4140));
        b1 = i8_h2(__byte_perm(x, 0x64646464u, 0x4342));
    } else if constexpr (KM == FMT_Q4) {
        /* k-step 2b: low nibbles, 2b + 1: high nibbles; c -> (1024 + c) - 1032 */
        const uint32_t x = s & 1 ? r.w[0][s >> 1] >> 4 : r.w[0][s >> 1];
        b0 = u4_h2((__byte_perm(x, 0x64646464u, 0x4140) & 0x640f640fu));
        b1 = u4_h2((__byte_perm(x, 0x64646464u, 0x4342) & 0x640f640fu));
    } else if constexpr (KM == FMT_KIVI2) {
        if constexpr (D == 128) {
            const uint32_t m = 0x00030003u << (2 * (s & 3));
            const int sh = s < 4 ? 0 : 8;
            b0 = (r.w[0][0] >> sh) & m;
            b1 = (r.w[0][1] >> sh) & m;
        } else {
            const uint32_t m = 0x00030003u << (2 * s);
            b0 = r.w[0][0] & m;
            b1 = (r.w[0][0] >> 8) & m;
        }
    } else if constexpr (KM == FMT_KIVI4) {
        const uint32_t m = 0x000f000fu << (4 * (s & 1));
        const int sh = (s >> 1) & 1 ? 8 : 0;
        if constexpr (D == 128) {
            b0 = (r.w[0][s >> 2] >> sh) & m;
            b1 = (r.w[0][(s >> 2) + 2] >> sh) & m;
        } else {
            b0 = (r.w[0][0] >> sh) & m;
            b1 = (r.w[0][1] >> sh) & m;
        }
    } else {
        const uint32_t m = 0x00010001u << s;
        b0 = r.w[pl][0] & m;
        b1 = (r.w[pl][0] >> (D == 128 ? 8 : 4)) & m;
    }
}

/* ---- I8K: one- and two-bit keys by int8 mma (D = 64 or 128) ---------------
 * k-step x (of i8_ksteps) takes B registers hf = 0, 1 of the lane's words:
 * one AND each (bytes 0 or 2^sh); A byte i of half hf is the query at
 * channel (D/4) t + i8_chan (the lane's D/4 channels) times plane factor
 * i8_fac times 2^-sh. rvq1 / rabitq1, D = 128: plane pl = x / 4, word
 * bits 8i + sh, sh = 2 (x % 4) + hf; D = 64: the lane's 16 bits of a
 * plane spread over the 4 bytes' low nibbles (key_load: byte i holds
 * channels 4 perm(i) .. 4 perm(i) + 3, perm = 0, 2, 1, 3), plane x / 2,
 * sh = 2 (x % 2) + hf. rvq2 (2-bit codes c = b0 + 2 b1 at bits 2k, 2k + 1
 * of each byte): per stage and word u (channels 16u..16u+15; D/64 words
 * per stage) 4 k-steps of the b0 / b1 planes (hf) and 2 of the b0 AND b1
 * plane, so that the centroid
 * t[c] = t0 + (t1 - t0) b0 + (t2 - t0) b1 + (t3 - t2 - t1 + t0) b0 b1 */
template <int KM, int D>
__host__ __device__ constexpr int i8_ksteps() { return KM == FMT_RVQ2 ? 12 * (D / 64) : (D / 32) * key_planes<KM>(); }

template <int KM, int D>
__host__ __device__ constexpr int i8_sh(int x, int hf)
{
    if constexpr (KM == FMT_RVQ2) {
        const int y = x % 6;
        return y < 4 ? 2 * y + hf : 2 * (2 * (y - 4) + hf);
    } else {
        return 2 * (x % (D / 32)) + hf;
    }
}

template <int KM, int D>
__host__ __device__ constexpr int i8_chan(int x, int hf, int i)
{
    if constexpr (KM == FMT_RVQ2) {
        const int u = (x / 6) % (D / 64), y = x % 6;
        return 16 * u + 4 * i + (y < 4 ? y : i8_sh<KM, D>(x, hf) / 2);
    } else if constexpr (D == 128) {
        return 8 * i + i8_sh<KM, D>(x, hf);
    } else {
        return 4 * ((i >> 1) | (i & 1) << 1) + i8_sh<KM, D>(x, hf);
    }
}

/* index of the plane factor (rvq2: 3 per stage: b0, b1, b0 b1) */
template <int KM, int D>
__host__ __device__ constexpr int i8_fac(int x, int hf)
{
    if constexpr (KM == FMT_RVQ2)
        return 3 * (x / (6 * (D / 64))) + (x % 6 < 4 ? hf : 2);
    else
        return x / (D / 32);
}

template <int KM>
__host__ __device__ constexpr int i8_nfac() { return KM == FMT_RVQ2 ? 6 : key_planes<KM>(); }

template <int KM, int D>
__device__ __forceinline__ uint32_t i8_breg(const KeyRaw<KM, D> &r, int x, int hf)
{
    const uint32_t m = 0x01010101u << i8_sh<KM, D>(x, hf);
    if constexpr (KM == FMT_RVQ2) {
        const uint32_t w = r.w[x / (6 * (D / 64))][(x / 6) % (D / 64)];
        return x % 6 < 4 ? w & m : w & (w >> 1) & m;
    } else {
        return r.w[x / (D / 32)][0] & m;
    }
}

/* the largest element (ABS: magnitude) of a small register array, >= 0 */
template <bool ABS = false, int A, int B, int C>
__device__ __forceinline__ float arr_max(const float (&x)[A][B][C])
{
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++)
#pragma unroll
            for (int k = 0; k < C; k++)
                m = fmaxf(m, ABS ? fabsf(x[i][j][k]) : x[i][j][k]);
    return m;
}

/* VSUBN (mode m): is the code of VLDSM column e (0..7: code e & 3 of the
 * low (e < 4) or high byte) a subnormal operand, and its bit offset in
 * the operand (the column's output is times 2^(pos - 24), or 2^pos) */
__host__ __device__ constexpr bool vsub_sub(int m, int e) { return m == 1 || m >= 3 || (m == 2 && (e & 3) >= 2); }
__host__ __device__ constexpr int vsub_pos(int m, int e)
{
    return m == 3   ? (e == 0 ? 4 : e == 2 || e == 4 || e == 6 ? 8 : 6)
           : m == 4 ? 4 + 2 * ((e + 1) % 3) /* e = 0..7: 6 8 4 6 8 4 6 8 */
                    : 2 * (e & 3);
}

/* ---- value formats ------------------------------------------------------- */

/* channel of output column c (0..7) of n-tile nt */
template <int VM>
__device__ __forceinline__ int val_chan(int nt, int c)
{
    if constexpr (VM == FMT_FP16)
        return 8 * c + (nt & 7) + 64 * (nt >> 3);
    else if constexpr (VM == FMT_Q8) /* n-tile nt: block nt/4, channels 4c + nt%4 */
        return 32 * (nt >> 2) + 4 * c + (nt & 3);
    else if constexpr (VM == FMT_Q4 && VQ_MMA_Q4B) /* block nt/4; column c: byte 2c + (nt%4)/2, nibble nt%2 */
        return 32 * (nt >> 2) + 2 * c + ((nt & 3) >> 1) + 16 * (nt & 1);
    else if constexpr (VM == FMT_Q4) /* block nt/4; column c: byte 4 (c%4) + nt%4, nibble c/4 */
        return 32 * (nt >> 2) + 16 * (c >> 2) + 4 * (c & 3) + (nt & 3);
    else if constexpr (VQ_MMA_VBYTE) /* kivi (VBYTE): group nt/4, column c: channels 4c..4c+3, n-tile nt%4 */
        return 32 * (nt >> 2) + 4 * c + (nt & 3);
    else
        return 8 * nt + c;
}

/* the power of two that undoes a value code's in-place offset, n-tile nt,
 * column c */
template <int VM>
__device__ __forceinline__ float val_colscale(int nt, int c)
{
    if constexpr (VM == FMT_Q4 && VQ_MMA_Q4B) /* high nibbles come out times 16 */
        return nt & 1 ? 0.0625f : 1.0f;
    else if constexpr (VM == FMT_FP16 || VM == FMT_Q8 || VM == FMT_Q4)
        return 1.0f;
    else if constexpr (VQ_MMA_VBYTE) /* the code's bit offset follows the n-tile */
        return __int_as_float((127 - (VM == FMT_KIVI2 ? 2 * (nt & 3) : 4 * (nt & 1))) << 23);
    else if constexpr (VM == FMT_KIVI2)
        return __int_as_float((127 - 2 * (c & 3)) << 23);
    else
        return __int_as_float((127 - 4 * (c & 1)) << 23);
}

/* ---- staging: global -> shared copies (cp.async) ----------------------------
 * Each warp copies the key and value bytes of its next 32 tokens into its
 * own shared-memory stage while it computes on the current ones (2 stages
 * per warp), so the loads' latency overlaps the math. 32 tokens of one page
 * are contiguous (kivi keys: the block's 4D-byte scale/min header, then 32
 * code rows), every size below is a multiple of 16 bytes and every source
 * 16-byte aligned (pages are multiples of 16 bytes, warp tiles start at a
 * multiple of 32 tokens inside a page). */
template <int KM, int D>
__host__ __device__ constexpr int key_stage_bytes()
{
    return KM == FMT_FP16 ? WTOK * 2 * D
         : KM == FMT_Q8   ? WTOK * 34 * (D / 32)
         : KM == FMT_Q4   ? WTOK * 18 * (D / 32)
         : KM == FMT_KIVI2 ? 4 * D + WTOK * 2 * D / 8
         : KM == FMT_KIVI4 ? 4 * D + WTOK * 4 * D / 8
         : KM == FMT_RVQ1 ? WTOK * (2 + 2 * D / 8)
         : KM == FMT_RVQ2 ? WTOK * (2 + 4 * D / 8)
                          : WTOK * (4 + D / 8); /* rabitq:bits=1 */
}

template <int VM, int D>
__host__ __device__ constexpr int val_stage_bytes()
{
    return VM == FMT_FP16 ? WTOK * 2 * D
         : VM == FMT_Q8   ? WTOK * 34 * (D / 32)
         : VM == FMT_Q4   ? WTOK * 18 * (D / 32)
         : VM == FMT_KIVI2 ? WTOK * (4 * (D / 32) + 2 * D / 8)
                           : WTOK * (4 * (D / 32) + 4 * D / 8); /* kivi4, group 32 */
}

/* Staged: the keys of packed formats, and their values too where both fit
 * 3 CTAs per SM (6 KB per warp and stage; q8_0 at D = 128 stages its keys
 * only). fp16 is at the copy bandwidth without it. VQ_MMA_NO_STAGE
 * (compile time) turns staging off, VQ_MMA_STAGE_KV_ONLY stages values
 * only together with keys (no key-only staging), for comparisons. */
constexpr int STAGE_MAX = 6144;
template <int KM, int VM, int D>
__host__ __device__ constexpr bool staged_k()
{
#ifdef VQ_MMA_NO_STAGE
    return false;
#elif defined(VQ_MMA_STAGE_KV_ONLY)
    return KM != FMT_FP16 && key_stage_bytes<KM, D>() + val_stage_bytes<VM, D>() <= STAGE_MAX;
#else
    return KM != FMT_FP16 && key_stage_bytes<KM, D>() <= STAGE_MAX;
#endif
}

template <int KM, int VM, int D>
__host__ __device__ constexpr bool staged_v()
{
    return staged_k<KM, VM, D>() && key_stage_bytes<KM, D>() + val_stage_bytes<VM, D>() <= STAGE_MAX;
}

/* bytes of one warp's stage (keys, then values where staged) */
template <int KM, int VM, int D>
__host__ __device__ constexpr int stage_bytes()
{
    return key_stage_bytes<KM, D>() + (staged_v<KM, VM, D>() ? val_stage_bytes<VM, D>() : 0);
}

/* fp16 keys, opt-in (-DVQ_MMA_STAGE16): one stage per warp (32 rows
 * padded to 2D + 64 bytes, so that the two rows a quarter warp reads start
 * 16 banks apart), refilled with the next tile as soon as the lanes hold
 * the current keys in registers. Measured on the H200 (docs/gpu.md): 14%
 * slower at D = 128, 64k x 8 (0.573 vs 0.501 ms), within +-10% either way
 * at D = 64; so fp16 reads its keys straight from global memory. */
template <int KM, int D>
__host__ __device__ constexpr bool stage16()
{
#ifdef VQ_MMA_STAGE16
    return KM == FMT_FP16;
#else
    return false;
#endif
}
template <int D>
__host__ __device__ constexpr int fp16_stage_row() { return 2 * D + 64; }

template <int KM, int VM, int D, int SUB = 1, int W = 4>
__host__ __device__ constexpr int stage_smem_bytes()
{
    return stage16<KM, D>() ? W * WTOK * fp16_stage_row<D>()
         : staged_k<KM, VM, D>() ? W * 2 * SUB * stage_bytes<KM, VM, D>() : 0;
}

/* the 12-warp instantiation (VQ_MMA_WIDE) exists for this pair and D
 * (head_dim 64 since Round gpu26: against 4 warps 2-5% faster at 64k and
 * 128k x 8, 7-14% at 16k x 1, within -5..+1.5% at 64k x 32, 16k x 8 and
 * 4k x 8; figures/bench/gpu26-ab.txt) */
template <int KM, int VM, int D>
__host__ __device__ constexpr bool wide_ok()
{
    return VQ_MMA_WIDE && (D == 128 || D == 64) && staged_v<KM, VM, D>();
}

/* a third instantiation with 16 warps per CTA (4 per scheduler, one CTA
 * per SM, <= 128 registers) exists: the pairs with kivi2 values and 1-bit
 * or kivi2 keys at G <= 4, whose 32- and 64-token iterations fit 128
 * registers without spills (at G = 8 they would spill 220-652 bytes);
 * at head_dim 64 too since Round gpu26 (against 12 warps: 1-5% faster at
 * 64k x 8 and 32, 128k x 8; within +-0.3..-2.5% at 16k x 8);
 * the host takes it for chunks of >= 8192 tokens (plan_warps). Measured
 * on the H200 against 12 warps (Round gpu21 in docs/gpu.md): 1-5% faster
 * at 64k and 128k x 8 and 32, up to 8% slower for short chunks (16k x 1);
 * turboquant_rvq:bits=2 keys and kivi4 1% slower, q4_0 under 1% faster:
 * they keep 12 */
template <int KM, int VM, int D, int G>
__host__ __device__ constexpr bool w16_ok()
{
    return wide_ok<KM, VM, D>() && VM == FMT_KIVI2 && KM != FMT_RVQ2 && G <= 4;
}

/* 64-token warp iterations (two sub-tiles of 32 sharing the loop's page,
 * staging and address work) where keys and values are staged and both
 * sub-tiles fit one stage, or, in the 12-warp instantiation (one CTA per
 * SM), where its two stages of two sub-tiles per warp fit 216 KB (q4_0
 * and rvq2/kivi2 at D = 128: 216 and 171 KB: sub2_big); the launch takes
 * them when page_tokens % 64 == 0 (chunks start at multiples of 64, so
 * such a tile never crosses a page), the sub2_big ones only for chunks of
 * >= 32768 tokens (Round gpu21 in docs/gpu.md: 1.6-3.3% faster at 64k x 8,
 * 64k x 32 and 128k x 8, 3-16% slower at chunks of 1024-8192 tokens) */
template <int KM, int VM, int D, int W = 4>
__host__ __device__ constexpr bool sub2_ok()
{
#if VQ_MMA_SUB2 && VQ_MMA_LEANSTAGE && !VQ_MMA_BULK && !defined(VQ_MMA_STAGE16)
    return staged_v<KM, VM, D>() &&
           (2 * stage_bytes<KM, VM, D>() <= STAGE_MAX ||
            (W == 12 && W * 2 * 2 * stage_bytes<KM, VM, D>() <= 216 * 1024));
#else
    return false;
#endif
}

template <int KM, int VM, int D>
__host__ __device__ constexpr bool sub2_big()
{
    return 2 * stage_bytes<KM, VM, D>() > STAGE_MAX;
}

__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
[[maybe_unused]] __device__ __forceinline__ void cp_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void cp_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

#if VQ_MMA_LEANSTAGE
/* cp16 to a shared-memory address given as a 32-bit shared-window offset */
[[maybe_unused]] __device__ __forceinline__ void cp16s(uint32_t sa, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(src) : "memory");
}

/* the warp copies BYTES (a multiple of 16) from src to the shared address
 * sa, both already advanced by 16 * lane (so the copies are at constant
 * offsets) */
template <int BYTES>
__device__ __forceinline__ void warp_copy_l(uint32_t sa, const uint8_t *src, int lane)
{
#pragma unroll
    for (int o = 0; o < BYTES; o += 512)
        if (o + 512 <= BYTES || 16 * lane < BYTES - o)
            cp16s(sa + o, src + o);
}
#endif

#if VQ_MMA_BULK
/* mbarrier and bulk-copy primitives (shared addresses as 32-bit offsets) */
__device__ __forceinline__ void mbar_init(uint32_t bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t phase)
{
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n" ::"r"(bar),
                 "r"(phase)
                 : "memory");
}
#endif

/* the warp copies BYTES (a multiple of 16) from src to dst */
template <int BYTES>
__device__ __forceinline__ void warp_copy(uint8_t *dst, const uint8_t *src, int lane)
{
#pragma unroll
    for (int o = 16 * lane; o < BYTES; o += 512)
        cp16(dst + o, src + o);
}

/* CLUSTER (p.cluster = the split count, 1..8; the host launches the
 * chunks of a (sequence, KV head) as one thread-block cluster and no reduce
 * kernel): the CTA combines its warps' partial (m, l, acc) as combine_warps
 * does (the same terms in the same order) into its own shared memory
 * (red[0], wml[0]), the cluster synchronises, and rank r then finishes
 * outputs r * n/S .. (r + 1) * n/S - 1 of the pair's n = G * D from every
 * rank's shared memory (distributed shared memory), as attn_reduce's
 * one-pass path does (the same sums in the same order, so the same bits);
 * a second cluster barrier keeps each CTA's shared memory until every rank
 * has read it. Only for value formats without a rotation (attn_reduce
 * applies R^T). Saves the reduce launch's wait for the whole grid, its
 * loads and the partials' round trip through L2 (Round gpu22 in
 * docs/gpu.md). */
template <int G, int D, int W>
__device__ __forceinline__ void combine_cluster(const AttnParams &p, float (&red)[W][G][D], float (&wml)[W][G][2],
                                                const CtaWork &cw, int tid)
{
    namespace cg = cooperative_groups;
    constexpr int NT = W * 32, PER = (G * D + NT - 1) / NT;
    float sv[PER], lv[PER], mv[PER];
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = tid + k * NT;
        sv[k] = lv[k] = 0.0f;
        mv[k] = -INFINITY;
        if (i < G * D) {
            const int g = i / D, c = i % D;
            float M, s, l;
            merge_warps<G, D, W>(red, wml, g, c, M, s, l);
            sv[k] = s;
            lv[k] = l;
            mv[k] = M;
        }
    }
    __syncthreads(); /* every thread has read red and wml */
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = tid + k * NT;
        if (i < G * D) {
            const int g = i / D, c = i % D;
            red[0][g][c] = sv[k];
            if (c == 0) {
                wml[0][g][0] = mv[k];
                wml[0][g][1] = lv[k];
            }
        }
    }
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const int S = p.cluster, r = (int)cl.block_rank();
    const int per = (G * D + S - 1) / S;
    for (int i = r * per + tid; i < min(G * D, (r + 1) * per); i += NT) {
        const int g = i / D, c = i % D;
        float m[8], l[8], x[8];
#pragma unroll
        for (int q = 0; q < 8; q++)
            if (q < S) {
                const float *rr = cl.map_shared_rank(&red[0][0][0], q);
                const float *rm = cl.map_shared_rank(&wml[0][0][0], q);
                m[q] = rm[2 * g];
                l[q] = rm[2 * g + 1];
                x[q] = rr[g * D + c];
            }
        float M = -INFINITY;
#pragma unroll
        for (int q = 0; q < 8; q++)
            if (q < S)
                M = fmaxf(M, m[q]);
        float L = 0.0f, a = 0.0f;
#pragma unroll
        for (int q = 0; q < 8; q++)
            if (q < S && M != -INFINITY) {
                const float w = m[q] == -INFINITY ? 0.0f : exp2f(m[q] - M);
                L += w != 0.0f ? l[q] * w : 0.0f;
                a += w != 0.0f ? x[q] * w : 0.0f;
            }
        p.out[(cw.qrow0 + g) * D + c] = L > 0.0f ? a / L : 0.0f;
    }
    cl.sync(); /* the other ranks are done reading this CTA's shared memory */
}

/* ---- the kernel ------------------------------------------------------------ */

/* QI8: q8_0 / q4_0 keys with qbits=8 (query_int8): the query rounded to
 * int8 per block of 32 (round_query_row) in an instantiation of its own,
 * so that the float-query kernels compile as they did before that path
 * (session 54's run-time branch had cost q8_0 keys 3.2-3.6% at D 128) */
template <int D, int G, int KM, int VM, int SUB, int W, bool QI8 = false>
__global__ void __launch_bounds__(W * 32, mma_minb<W, KM>()) attn_mma(const __grid_constant__ AttnParams p)
{
    static_assert(SUB == 1 || sub2_ok<KM, VM, D, W>(), "64-token iterations need staged keys and values");
    static_assert(!QI8 || KM == FMT_Q8 || KM == FMT_Q4, "the int8 query is for q8_0 / q4_0 keys");
    constexpr int TT = SUB * WTOK; /* tokens per warp iteration */
    constexpr int KS = D / 16; /* k-steps of Q K^T */
    constexpr int NT = D / 8;  /* n-tiles of P V */
    constexpr int PL = key_planes<KM>();
    constexpr bool KIVI_K = KM == FMT_KIVI2 || KM == FMT_KIVI4;
    constexpr bool KIVI_V = VM == FMT_KIVI2 || VM == FMT_KIVI4;
    constexpr bool Q8_V = VM == FMT_Q8 || VM == FMT_Q4; /* block-scaled values */
    constexpr int VBB = VM == FMT_Q4 ? 18 : 34;        /* their block bytes */
    constexpr int KBB = KM == FMT_Q4 ? 18 : 34;
    constexpr int NG = KIVI_V || Q8_V ? D / 32 : 1; /* value groups (kivi group 32, q8_0 blocks) */
    constexpr int KB = KM & 15;             /* key bits (kivi) */
    /* G <= 4 leaves query rows 4..7 / 12..15 of the 16-row operands unused:
     * lanes g >= 4 then fold half of the kivi key k-steps (SPLIT_K) and half
     * of the kivi value groups / q8_0, q4_0 value blocks (SPLIT_V) for head
     * g - 4, and hand the
     * fragments over with one shuffle (rows g >= 4 carry junk, never read) */
    constexpr bool SPLIT_K = KIVI_K && G <= 4 && VQ_MMA_SPLIT;
    constexpr bool SPLIT_V = (KIVI_V || Q8_V) && G <= 4 && VQ_MMA_SPLIT;
    constexpr bool SPLIT_MT = SPLIT_V && KIVI_V; /* kivi minima sums split too */
    /* kivi key minima: sum_c q_c m_c per block by one mma per k-step pair
     * (SPLIT_K; see the score step); q scaled by 2^KMIN_EXP (exact) so
     * that its lo half stays a normal fp16 number */
    constexpr bool KMIN = SPLIT_K && VQ_MMA_KMINMMA && VQ_MMA_HFOLD;
    constexpr int KMIN_EXP = 8;
    /* kivi2 values at D = 128 by ldmatrix, lanes' columns split between
     * two groups (see the value step); needs the staged values (16-byte
     * aligned 48-byte rows) */
    constexpr bool VLDSM = VQ_MMA_VLDSM && VQ_MMA_VBYTE && SPLIT_V && VM == FMT_KIVI2 && D == 128 && staged_v<KM, VM, D>();
    constexpr bool MINMMA = VLDSM && VQ_MMA_HFOLD && VQ_MMA_MINMMA;
    /* VSUBN: the VLDSM value codes stay subnormal fp16 (code * 2^(o-24),
     * o the bit offset: one AND per pair, no HSUB2) and the weights P * s
     * are scaled by 2^vF so that the products stay far above the tensor
     * cores' floor near 2^-43 (see the value step) */
    constexpr bool VSUBN = MINMMA && VQ_MMA_VSUBN;
    /* VT: the VLDSM value product transposed (see the value step): the
     * codes are the A operand (rows: channels, k: tokens), the folded
     * weights' hi and lo halves two B operands summed into one
     * accumulator, so the lane keeps NT / 2 accumulator tiles */
    constexpr bool VT = VSUBN && VQ_MMA_VSUBN == 4 && VQ_MMA_VT;
    constexpr int NO = VT ? NT / 2 : NT; /* accumulator tiles */
    /* VSC: the kivi weights P * s folded times 2^vF (VSUBN; and the other
     * kivi value paths: fp16 hi/lo halves of small P * s lost bits as
     * subnormals, measured 2.5e-4 .. 1e-3 relative error with value scales
     * near 2^-7) */
    constexpr bool VSC = VSUBN || (KIVI_V && !VLDSM && VQ_MMA_VSCALE) || (Q8_V && VQ_MMA_QSCALE);
    /* I8K: one-bit keys (D = 64 or 128, G <= 4) and turboquant_rvq:bits=2 keys
     * (D = 64 or 128, G <= 4; the lane's D/4 channels of each stage) by
     * int8 mma m16n8k32. B: the
     * bits of the lane's 32-channel word w of each plane, 4 channels per
     * register (w & 0x01010101 << sh: channels 8i + sh of the word as
     * bytes 0 or 2^sh), one AND per 4 channels (fp16: per 2). A: q times
     * the plane factor times 2^(K - sh), split into 4 signed pieces of 7
     * bits (x = p0 + p1 2^-7 + p2 2^-14 + p3 2^-21, |p| <= 64), piece r of
     * head h in row 4r + h; the int32 sums are exact. Lane (g, t) holds
     * rows g, g + 8: pieces 0, 1 (g < 4) or 2, 3 (g >= 4) of head g & 3,
     * combined as 128 c0 + c2 (< 2^29), converted once, and one shuffle
     * adds the lane g + 4's part times 2^-14. */
    constexpr bool I8K = (G <= 4 && ((D == 128 && ((KM == FMT_RVQ1 && (VQ_MMA_I8K & 1)) || (KM == FMT_RABITQ1 && (VQ_MMA_I8K & 2)))) ||
                                     (D == 64 && ((KM == FMT_RVQ1 && (VQ_MMA_I8K & 8)) || (KM == FMT_RABITQ1 && (VQ_MMA_I8K & 16)))))) ||
                         KM == FMT_RVQ2;
    static_assert(KM != FMT_RVQ2 || I8K, "turboquant_rvq:bits=2 keys only by I8K");
    constexpr int NKS8 = i8_ksteps<KM, D>(), NF8 = i8_nfac<KM>();
    /* I8K with G = 8 (turboquant_rvq:bits=2): two A tiles, heads 0..3 and
     * 4..7, each as above (two int8 mma per k-step and n-tile, the B
     * registers shared) */
    constexpr int NH8 = G > 4 ? 2 : 1;
    /* QSUBK: q4_0 key codes as subnormal u = c + 8 (see key_frag); Q'
     * carries 2^(24-e-EXPO) as for kivi, and each block's accumulators start
     * at -8 * 2^-EXPO * (the block's sum of q), per head (kqs). (q8_0 keys
     * the same way, u = c + 128, measured no faster: 0.3260 / 0.3250 ->
     * 0.3274 / 0.3285 ms at 64k x 8) */
    constexpr bool QSUBK = KM == FMT_Q4 && VQ_MMA_QSUBK;
    constexpr bool SWP = SUB == 2 && VQ_MMA_SWP; /* see the main loop */
    constexpr float QOFF = 8.0f;

    __shared__ alignas(QI8 ? 16 : 4) float qs[G][D]; /* (QI8: float4 rows, round_query_row) */
    __shared__ __align__(16) uint4 afr[PL][KS][32];  /* Q' fragments per lane (kivi keys, HFOLD: hi/lo of q * 2^(24-e-EXPO)) */
    __shared__ __align__(16) float4 qlane[KS][32];   /* kivi keys: q * 2^(24-e-EXPO) per lane */
    __shared__ __align__(16) float4 qraw[KS][32];    /* kivi keys: q per lane */
    __shared__ __align__(16) uint4 qu[KS][32];       /* KMIN: hi/lo of q * 2^KMIN_EXP per lane (A operand) */
    /* REDSTG: the warps' partial accumulators go to the stage memory once
     * the loop is done (a barrier first), where it is large enough */
    constexpr bool REDSTG = VQ_MMA_REDSTG && stage_smem_bytes<KM, VM, D, SUB, W>() >= (int)sizeof(float) * W * G * D;
    __shared__ __align__(16) float red_s[REDSTG ? 1 : W][G][D];
    __shared__ float wml[W][G][2];
    __shared__ float hsum[8];                        /* per head: sum of q (rvq1 / rabitq) */
    __shared__ __align__(16) uint4 ai8[I8K ? NKS8 : 1][I8K ? NH8 : 1][32]; /* I8K: A fragments per k-step, head tile, lane */
    __shared__ float kqs[QSUBK ? D / 32 : 1][8];            /* QSUBK: per block and query row, the accumulators' start */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    TL(0);
    /* the reduce launch (a programmatic dependent launch) may be set up
     * now; it waits for this grid's completion before reading anything */
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const CtaWork cw = cta_work<G>(p);
    /* (in a cluster every CTA takes part in the combine: an empty chunk
     * runs no tile and ends with weight 0, as empty_chunk marks it) */
    if (!p.cluster && empty_chunk<G>(p, cw, tid))
        return;
    const int g = lane >> 2, t = lane & 3;
    const int kvh = cw.kvh, b = cw.b, s0 = cw.s0, s1 = cw.s1;
    const size_t part0 = cw.part0;
    /* EARLY2: the query's loads go out first, then each warp's first stage
     * copies (page-table entry and cp.async), and only then is the query
     * stored to shared memory, so that the copies' latency overlaps the
     * whole query setup (rotation, operand fragments: 2-8 us at 64k x 8)
     * while the query itself does not queue behind the copies (Round
     * gpu22 in docs/gpu.md; gpu14's EARLY issued the copies before the
     * query loads) */
    constexpr int NQL = (G * D + W * 32 - 1) / (W * 32);
    float qreg[NQL];
#pragma unroll
    for (int k = 0; k < NQL; k++) {
        const int i = tid + k * W * 32;
        qreg[k] = i < G * D ? p.q[cw.qrow0 * D + i] : 0.0f;
    }
    const int P = p.page_tokens;
    constexpr bool STG = staged_k<KM, VM, D>(), STG_V = staged_v<KM, VM, D>();
    constexpr int KSB = key_stage_bytes<KM, D>(), VSB = val_stage_bytes<VM, D>(), SB = stage_bytes<KM, VM, D>();
    extern __shared__ __align__(16) uint8_t stage_mem[];
    uint8_t *const wstage = stage_mem + (size_t)warp * 2 * SUB * SB;
    const int lgk = KIVI_K ? __ffs(p.kf.group) - 1 : 0;
    /* issue the copies of the warp tile at in-page offset i0 of page pg into stage st */
#if VQ_MMA_BULK
    /* one lane copies the tile's key (and value) bytes with 1-3 bulk copies
     * that complete on the stage's mbarrier (transaction bytes) */
    __shared__ __align__(8) uint64_t mbar[W][2];
    const uint32_t wst_b = (uint32_t)__cvta_generic_to_shared(wstage);
    const uint32_t mbar_s = (uint32_t)__cvta_generic_to_shared(&mbar[warp][0]);
    if constexpr (STG) {
        if (lane == 0) {
            mbar_init(mbar_s);
            mbar_init(mbar_s + 8);
            mbar_init_fence();
        }
        __syncwarp();
    }
    auto stage_in = [&](int i0, int32_t pg, int st) {
        if (lane != 0)
            return;
        const uint32_t sa = wst_b + st * SB, bar = mbar_s + 8 * st;
        mbar_expect_tx(bar, SB);
        const uint8_t *kpg = p.kp + (size_t)(uint32_t)pg * p.kpb;
        if constexpr (KIVI_K) {
            const uint8_t *blk = kpg + (uint32_t)(i0 >> lgk) * (uint32_t)p.kf.block_bytes;
            const uint32_t coff = (uint32_t)(i0 & (p.kf.group - 1)) * (KB * D / 8);
            if (coff == 0) { /* the header and the tile's code rows are contiguous */
                bulk_g2s(sa, blk, KSB, bar);
            } else {
                bulk_g2s(sa, blk, 4 * D, bar);
                bulk_g2s(sa + 4 * D, blk + 4 * D + coff, KSB - 4 * D, bar);
            }
        } else {
            bulk_g2s(sa, kpg + (uint32_t)i0 * (uint32_t)p.kf.block_bytes, KSB, bar);
        }
        if constexpr (STG_V)
            bulk_g2s(sa + KSB, p.vp + (size_t)(uint32_t)pg * p.vpb + (uint32_t)i0 * (uint32_t)p.vf.block_bytes, VSB, bar);
    };
    uint32_t phs = 0; /* bit st: the parity the next wait on stage st expects */
#elif VQ_MMA_LEANSTAGE
    /* the stage's shared address with the lane's 16 bytes added, computed
     * once; sources: one 64-bit page base per pool plus 32-bit in-page
     * offsets, the copies at constant offsets from there */
    /* a stage holds SUB sub-tiles: keys of sub-tile h at h * KSB, values
     * at SUB * KSB + h * VSB */
    const uint32_t wst_s = (uint32_t)__cvta_generic_to_shared(wstage) + 16 * lane;
    auto stage_in = [&](int i0, int32_t pg, int st) {
        const uint32_t sa = wst_s + st * (SUB * SB);
        const uint8_t *kpg = p.kp + (size_t)(uint32_t)pg * p.kpb + 16 * lane;
        if constexpr (KIVI_K) {
            if (SUB > 1 && p.kf.group == WTOK) { /* SUB whole blocks, back to back */
                warp_copy_l<SUB * KSB>(sa, kpg + (uint32_t)(i0 >> lgk) * (uint32_t)p.kf.block_bytes, lane);
            } else {
#pragma unroll
                for (int h = 0; h < SUB; h++) {
                    const int i = i0 + h * WTOK;
                    const uint8_t *blk = kpg + (uint32_t)(i >> lgk) * (uint32_t)p.kf.block_bytes;
                    warp_copy_l<4 * D>(sa + h * KSB, blk, lane);
                    warp_copy_l<KSB - 4 * D>(sa + h * KSB + 4 * D, blk + (4 * D + (uint32_t)(i & (p.kf.group - 1)) * (KB * D / 8)), lane);
                }
            }
        } else {
            warp_copy_l<SUB * KSB>(sa, kpg + (uint32_t)i0 * (uint32_t)p.kf.block_bytes, lane);
        }
        if constexpr (STG_V)
            warp_copy_l<SUB * VSB>(sa + SUB * KSB, p.vp + (size_t)(uint32_t)pg * p.vpb + (16 * lane + (uint32_t)i0 * (uint32_t)p.vf.block_bytes), lane);
    };
#else
    auto stage_in = [&](int i0, int32_t pg, int st) {
        uint8_t *kd = wstage + st * SB;
        const uint8_t *kpg = p.kp + (size_t)pg * p.kpb;
        if constexpr (KIVI_K) {
            const uint8_t *blk = kpg + (size_t)(i0 >> lgk) * p.kf.block_bytes;
            warp_copy<4 * D>(kd, blk, lane);
            warp_copy<KSB - 4 * D>(kd + 4 * D, blk + 4 * D + (size_t)(i0 & (p.kf.group - 1)) * (KB * D / 8), lane);
        } else {
            warp_copy<KSB>(kd, kpg + (size_t)i0 * p.kf.block_bytes, lane);
        }
        if constexpr (STG_V)
            warp_copy<VSB>(kd + KSB, p.vp + (size_t)pg * p.vpb + (size_t)i0 * p.vf.block_bytes, lane);
    };
#endif
    constexpr bool STG16 = stage16<KM, D>();
    constexpr int KROW16 = fp16_stage_row<D>();
    /* fp16 keys of the warp tile at token tt (page pg) into the stage */
    auto stage16_in = [&](int tt, int32_t pg) {
        const uint8_t *src = p.kp + (size_t)pg * p.kpb + (size_t)(tt % P) * (2 * D);
#pragma unroll
        for (int c = lane; c < WTOK * D / 8; c += 32) { /* 16-byte chunks, D/8 per row */
            const int r = c / (D / 8), k = c % (D / 8);
            cp16(stage_mem + (size_t)warp * WTOK * KROW16 + r * KROW16 + 16 * k, src + (size_t)r * (2 * D) + 16 * k);
        }
    };
    if constexpr (STG16) {
        const int tf = s0 + warp * WTOK;
        if (tf < s1)
            stage16_in(tf, p.page_table[(b * p.n_kv + kvh) * p.max_pages + tf / P]);
        cp_commit();
    }
    /* page-table index and in-page offset of the current tile's first
     * token (cur) and, staged, of the next tile's (nxt): advanced by
     * W * WTOK tokens per iteration, no division in the loop */
    struct PagePos {
        int pi, off;
    };
    /* W * TT tokens = adv_pi whole pages + adv_off tokens (one division per
     * CTA): a step is two adds and at most one carry (0 <= off < P before
     * and after). A while loop of page steps ran W * TT / P times per tile
     * (3 for 12 warps of 64 tokens in 256-token pages): Round gpu17. */
    const int adv_pi = (W * TT) / P, adv_off = (W * TT) % P;
    auto advance = [&](PagePos &q) {
        q.off += adv_off;
        q.pi += adv_pi;
        if (q.off >= P) {
            q.off -= P;
            q.pi++;
        }
    };
    /* pi: the index into the whole page table (a 32-bit register that the
     * loop advances, rather than a row pointer rebuilt from the block index) */
    const int32_t *const ptab = p.page_table;
    const int pt0 = (b * p.n_kv + kvh) * p.max_pages;
    PagePos cur = {pt0 + (s0 + warp * TT) / P, (s0 + warp * TT) % P}, nxt = cur;
    int32_t pg_cur = 0, pg_next = 0; /* pages of the current and next tile */
    if constexpr (STG) {
        const int tf = s0 + warp * TT;
        if (tf < s1) {
            pg_cur = ptab[cur.pi];
            stage_in(cur.off, pg_cur, 0);
        }
        cp_commit();
        advance(nxt);
        if (tf + W * TT < s1)
            pg_next = ptab[nxt.pi];
    } else if constexpr (VQ_MMA_PGPF) { /* unstaged: the first tile's page, then one tile ahead */
        if (s0 + warp * TT < s1)
            pg_cur = ptab[cur.pi];
    }
#pragma unroll
    for (int k = 0; k < NQL; k++) {
        const int i = tid + k * W * 32;
        if (i < G * D)
            qs[i / D][i % D] = qreg[k];
    }
    __syncthreads();
    TL(1);
    /* q8_0 / q4_0 keys of qbits=8 (uniform): the query (rotated first
     * where the keys are) rounded to int8 per block of 32 as the CPU's
     * codec does, then scaled (round_query_row, attn_common.cuh) */
#if VQ_MMA_WROT
    if (p.kf.rot) { /* (uniform) one warp per query row, no block barriers */
        for (int r = warp; r < G; r += W) {
            rot_forward_warp<D>(&qs[r][0], p.kf.sign, lane, QI8 ? 1.0f : p.qscale);
            if constexpr (QI8) {
                __syncwarp();
                round_query_row<D>(&qs[r][0], lane, p.qscale);
            }
        }
    } else if constexpr (QI8) {
        for (int r = warp; r < G; r += W)
            round_query_row<D>(&qs[r][0], lane, p.qscale);
    } else {
        for (int i = tid; i < G * D; i += W * 32)
            qs[i / D][i % D] *= p.qscale;
    }
#else
    if (p.kf.rot)
        rot_forward_smem<D, G>(&qs[0][0], p.kf.sign, tid, W * 32);
    if constexpr (QI8) {
        for (int r = warp; r < G; r += W)
            round_query_row<D>(&qs[r][0], lane, p.qscale);
    } else {
        for (int i = tid; i < G * D; i += W * 32)
            qs[i / D][i % D] *= p.qscale;
    }
#endif
    __syncthreads();
    TL(2);

    /* per-lane query operands (warp 0 builds them; all warps use them) */
    const bool live = g < G; /* rows g >= G are padding (zero queries) */
    if (warp == 0) {
        const float *qg = qs[live ? g : 0];
        if constexpr (KM == FMT_RVQ1 || KM == FMT_RVQ2 || KM == FMT_RABITQ1) {
            float sq = 0.0f;
#pragma unroll /* the loads at once, the sum in the same order */
            for (int i = 0; i < D / 4; i++)
                sq += qg[t + 4 * i];
            sq += __shfl_xor_sync(FULL, sq, 1);
            sq += __shfl_xor_sync(FULL, sq, 2);
            if (t == 0)
                hsum[g] = live ? sq : 0.0f;
        }
        if constexpr (SPLIT_K) {
            /* lane (g, t) folds head g & 3 at k-steps (g >> 2) * KS/2 + i */
            const int hh = g & 3, hs0 = (g >> 2) * (KS / 2);
            const float *qh = qs[hh < G ? hh : 0];
#pragma unroll
            for (int i = 0; i < KS / 2; i++) {
                float x[4];
#pragma unroll
                for (int j = 0; j < 4; j++)
                    x[j] = hh < G ? qh[key_channel<KM, D>(t, hs0 + i, j)] : 0.0f;
                const float f = __int_as_float((127 + 24 - EXPO - key_exp<KM, D>(hs0 + i)) << 23);
                qraw[i][lane] = make_float4(x[0], x[1], x[2], x[3]);
                qlane[i][lane] = make_float4(x[0] * f, x[1] * f, x[2] * f, x[3] * f);
                uint4 a; /* HFOLD: (hi, lo) of q * f for channels j = 0, 1 and 2, 3 */
                split2(x[0] * f, x[1] * f, a.x, a.y);
                split2(x[2] * f, x[3] * f, a.z, a.w);
                afr[0][i][lane] = a;
                constexpr float fu = (float)(1 << KMIN_EXP);
                split2(x[0] * fu, x[1] * fu, a.x, a.y);
                split2(x[2] * fu, x[3] * fu, a.z, a.w);
                qu[i][lane] = a;
            }
        }
#pragma unroll
        for (int s = 0; s < (SPLIT_K || I8K ? 0 : KS); s++) {
            float x[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                x[j] = live ? qg[key_channel<KM, D>(t, s, j)] : 0.0f;
            if constexpr (KIVI_K) {
                const float f = __int_as_float((127 + 24 - EXPO - key_exp<KM, D>(s)) << 23);
                qraw[s][lane] = make_float4(x[0], x[1], x[2], x[3]);
                qlane[s][lane] = make_float4(x[0] * f, x[1] * f, x[2] * f, x[3] * f);
            } else {
#pragma unroll
                for (int pl = 0; pl < PL; pl++) {
                    float f = 1.0f;
                    if constexpr ((KM != FMT_FP16 && KM != FMT_Q8 && KM != FMT_Q4) || QSUBK)
                        f = __int_as_float((127 + 24 - EXPO - key_exp<KM, D>(s)) << 23);
                    if constexpr (KM == FMT_RVQ1)
                        f *= pl == 0 ? p.kf.c1[1] - p.kf.c1[0] : p.kf.c2[1] - p.kf.c2[0];
                    if constexpr (KM == FMT_RABITQ1)
                        f *= 2.0f;
                    uint4 a;
                    split2(x[0] * f, x[1] * f, a.x, a.y);
                    split2(x[2] * f, x[3] * f, a.z, a.w);
                    afr[pl][s][lane] = a;
                }
            }
        }
    }
    if constexpr (QSUBK) {
        if (warp == 0) { /* head g's sum over each block's 32 channels (lane t: channels t + 4i) */
            const float *qg = qs[live ? g : 0];
#pragma unroll
            for (int bk = 0; bk < D / 32; bk++) {
                float sq = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++)
                    sq += qg[32 * bk + t + 4 * i];
                sq += __shfl_xor_sync(FULL, sq, 1);
                sq += __shfl_xor_sync(FULL, sq, 2);
                if (t == 0)
                    kqs[bk][g] = live ? -QOFF * __int_as_float((127 - EXPO) << 23) * sq : 0.0f;
            }
        }
    }
    __syncthreads();
    float hs = 0.0f; /* rvq1: (c1[0] + c2[0]) * sum q; rabitq: sum q */
    if constexpr (KM == FMT_RVQ1 || KM == FMT_RVQ2)
        hs = (p.kf.c1[0] + p.kf.c2[0]) * hsum[g];
    if constexpr (KM == FMT_RABITQ1)
        hs = hsum[g];
    /* SPLIT_K: rows g >= 4 are junk (finite): their scores become the
     * constant 0 through post = base = 0 */
    float post = SPLIT_K && g >= 4 ? 0.0f : __int_as_float((127 + EXPO) << 23);
    if constexpr (I8K) {
        /* K per head: max_c |q_c| * max(|f_pl|) * 2^K < 64 (each warp the
         * same; the warps build the A fragments of plane/k-step pairs warp,
         * warp + W, ...). Lane (g, t): head 4 hh + (g & 3) of tile hh,
         * channels (D/4) t .. (D/4) t + D/4 - 1 */
        float f[NF8]; /* the plane factors */
        if constexpr (KM == FMT_RVQ2) {
#pragma unroll
            for (int st = 0; st < 2; st++) {
                const float *tc = st ? p.kf.c2 : p.kf.c1;
                f[3 * st] = tc[1] - tc[0];
                f[3 * st + 1] = tc[2] - tc[0];
                f[3 * st + 2] = (tc[3] - tc[2]) - (tc[1] - tc[0]);
            }
        } else {
#pragma unroll
            for (int pl = 0; pl < PL; pl++)
                f[pl] = KM == FMT_RABITQ1 ? 2.0f : pl == 0 ? p.kf.c1[1] - p.kf.c1[0] : p.kf.c2[1] - p.kf.c2[0];
        }
        float fm = 0.0f;
#pragma unroll
        for (int i = 0; i < NF8; i++)
            fm = fmaxf(fm, fabsf(f[i]));
#pragma unroll 1
        for (int hh = 0; hh < NH8; hh++) {
            const int h = 4 * hh + (g & 3);
            const float *qh = qs[h < G ? h : 0];
            float mx = 0.0f;
#pragma unroll
            for (int i = 0; i < D / 4; i++)
                mx = fmaxf(mx, fabsf(qh[(D / 4) * t + i]));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 2));
            mx = h < G ? mx * fm : 0.0f;
            const int K = mx > 0.0f ? min(100, max(-100, 5 - ilogbf(mx))) : 0;
            /* the lane's own head: g < 4 in tile 0; g >= 4 (G = 8) in tile 1 */
            if (hh == (NH8 > 1 ? g >> 2 : 0))
                post = (NH8 > 1 || g < 4) && h < G ? __int_as_float((127 - 7 - K) << 23) : 0.0f;
            /* the k-steps' A fragments, warp w builds k-steps w, w + W, ...
             * (xcl: the indices of warps past the last k-step clamped; those
             * warps store nothing) */
            auto xcl = [](int x) { return x < NKS8 ? x : NKS8 - 1; };
#pragma unroll
            for (int x0 = 0; x0 < NKS8; x0 += W) {
                const int x = x0 + warp;
                uint32_t ar[4] = {0u, 0u, 0u, 0u};
#pragma unroll
                for (int hf = 0; hf < 2; hf++) { /* k 4t + i (hf 0) and 16 + 4t + i (hf 1) */
                    float fx = 0.0f;
#pragma unroll
                    for (int j = 0; j < W; j++) /* (x is warp-uniform; constant indices into f) */
                        fx = warp == j ? f[i8_fac<KM, D>(xcl(x0 + j), hf)] * __int_as_float((127 + K - i8_sh<KM, D>(xcl(x0 + j), hf)) << 23) : fx;
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        int ch = 0;
#pragma unroll
                        for (int j = 0; j < W; j++)
                            ch = warp == j ? i8_chan<KM, D>(xcl(x0 + j), hf, i) : ch;
                        float xv = h < G ? qh[(D / 4) * t + ch] * fx : 0.0f;
                        int pc[4];
#pragma unroll
                        for (int r = 0; r < 4; r++) {
                            const float rx = rintf(xv);
                            pc[r] = (int)rx;
                            xv = (xv - rx) * 128.0f;
                        }
                        const int pa = g < 4 ? pc[0] : pc[2], pb = g < 4 ? pc[1] : pc[3];
                        ar[2 * hf] |= ((uint32_t)pa & 0xffu) << (8 * i);
                        ar[2 * hf + 1] |= ((uint32_t)pb & 0xffu) << (8 * i);
                    }
                }
                if (x < NKS8)
                    ai8[x][hh][lane] = make_uint4(ar[0], ar[1], ar[2], ar[3]);
            }
        }
        __syncthreads();
    }

    /* RSYM: turboquant_rvq:bits=2 with symmetric tables (centroids -a, -b,
     * b, a, as vq_lloyd_max makes them): the b0 AND b1 plane's factor
     * (t3 - t2) - (t1 - t0) is exactly 0 in both stages, so its k-steps
     * add exact zeros and are skipped (warp-uniform) */
    TL(3);
    [[maybe_unused]] bool rsym = false;
    if constexpr (KM == FMT_RVQ2)
        rsym = (p.kf.c1[3] - p.kf.c1[2]) - (p.kf.c1[1] - p.kf.c1[0]) == 0.0f &&
               (p.kf.c2[3] - p.kf.c2[2]) - (p.kf.c2[1] - p.kf.c2[0]) == 0.0f;

    float o[NO][4];
    constexpr int NMT = SPLIT_MT ? NG / 2 : NG; /* minima sums per lane */
    float mt[NMT];
#pragma unroll
    for (int n = 0; n < NO; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < NMT; i++)
        mt[i] = 0.0f;
    float m_run = -INFINITY, l_run = 0.0f;
    /* MINMMA: sum over tokens of P * (value minimum of group n) as an mma
     * accumulator: lane (g, t) holds head g (rows g, g + 8) x groups 2t, 2t + 1 */
    float mmn[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    /* VSC: o and mmn are sums times 2^vF (warp-uniform, only decreases:
     * 2^vF * s < 2^15 for every value scale s seen so far) */
    int vF = 15;
    /* VSC: vF lowered to vn where needed, the sums rescaled by the change;
     * returns 2^vF */
    auto vscale = [&](int vn) {
        if (vn < vF) { /* warp-uniform */
            const float f = __int_as_float((127 + vn - vF) << 23);
            vF = vn;
#pragma unroll
            for (int n = 0; n < NO; n++) {
                o[n][0] *= f;
                o[n][1] *= f;
                o[n][2] *= f;
                o[n][3] *= f;
            }
#pragma unroll
            for (int k = 0; k < 4; k++)
                mmn[k] *= f;
        }
        return __int_as_float((127 + vF) << 23);
    };
    /* VSC, float scales: the warp's largest |s| in smax (>= 0); ws = w * 2^vF */
    auto scale_weights = [&](const float (&w)[2][4], float smax, float (&ws)[2][4]) {
        float fsc = 1.0f;
        if constexpr (VSC) {
            /* vF only drops, so the warp's largest exponent e (s < 2^(e+1))
             * matters only where some lane's e >= 15 - vF (vn = 14 - e <
             * vF): a vote first, the reduction and the rescale only then
             * (vF takes the same values as with the reduction every tile) */
            if (__any_sync(FULL, __float_as_uint(smax) >= (uint32_t)(142 - vF) << 23)) {
                const int e = (int)(__reduce_max_sync(FULL, __float_as_uint(smax)) >> 23) - 127;
                fsc = vscale(14 - e);
            } else {
                fsc = __int_as_float((127 + vF) << 23);
            }
        }
#pragma unroll
        for (int kt = 0; kt < 2; kt++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                ws[kt][i] = w[kt][i] * fsc;
    };

    /* staged rows: fixed strides; a partial last tile gets its missing rows
     * filled with copies of its last token's row (stage_fill: rows nv..rows-1
     * of the area at base from row nv - 1), so rows are read at constant
     * offsets with no clamping (their scores are masked) */
    constexpr int KROW = KIVI_K ? KB * D / 8 : KSB / WTOK, VROW = VSB / WTOK;
    auto stage_fill = [&](uint8_t *base, int rowb, int nv, int rows) {
        const int hw = rowb / 2;
        const uint16_t *src = (const uint16_t *)(base + (size_t)(nv - 1) * rowb);
        for (int k = lane; k < (rows - nv) * hw; k += 32)
            ((uint16_t *)(base + (size_t)(nv + k / hw) * rowb))[k % hw] = src[k % hw];
    };

    /* one 32-token sub-tile in three steps: its scores (keys at kh / k0,
     * first token t0) into sc, the online softmax turning them into
     * weights, the value product (values at v0, nv tokens left from t0) */
    auto score_tile = [&](const uint8_t *const kh, const uint8_t *const k0, const int t0, float (&sc)[4][2]) {
        /* ---- scores ---- */
        float c[4][4];
#pragma unroll
        for (int n = 0; n < 4; n++)
            c[n][0] = c[n][1] = c[n][2] = c[n][3] = 0.0f;
        KeyRaw<KM, D> kr[4];
#pragma unroll
        for (int n = 0; n < 4; n++) {
            const int i = STG ? 8 * n + g : min(t0 + 8 * n + g, s1 - 1) - t0;
            const uint8_t *row = STG ? k0 + i * KROW : KIVI_K ? k0 + (size_t)i * (KB * D / 8)
                               : STG16 ? k0 + (size_t)i * KROW16 : k0 + (size_t)i * p.kf.block_bytes;
            key_load<KM, D, I8K>(row, t, kr[n]);
        }
        if constexpr (STG16) { /* the keys are in registers: refill the stage with the next tile */
            const int tn = t0 + W * WTOK;
            __syncwarp();
            if (tn < s1)
                stage16_in(tn, p.page_table[(b * p.n_kv + kvh) * p.max_pages + tn / P]);
            cp_commit();
        }
        float base = 0.0f;
        if constexpr (SPLIT_K) {
            /* as below, but lane (g, t) folds only its KS/2 k-steps
             * (g >> 2) * KS/2 + i of head g & 3; the lane g ^ 4 holds the
             * other half: its fragment comes over by a shuffle. The lane's
             * channels of k-steps i and i + 1 (i even) are adjacent, so one
             * 32-bit load takes both. */
            constexpr int KDELTA = key_chan<KM, D>(KS / 2, 0) - key_chan<KM, D>(0, 0);
            static_assert(split_k_layout_ok<KM, D>(), "kivi key channel layout");
            const int hb = g >> 2;
            const __half *scp = (const __half *)(kh + t * (D / 2)) + hb * KDELTA;
            const __half *mnp = scp + D; /* the minima follow the D scales */
            float cmin[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int ip = 0; ip < KS / 4; ip++) {
                float2 sc2[4], mn2[4];
                uint32_t sw2[4], mw2[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int c = key_chan<KM, D>(2 * ip, j);
                    sw2[j] = *(const uint32_t *)(scp + c);
                    sc2[j] = __half22float2(*(const __half2 *)&sw2[j]);
                    mw2[j] = *(const uint32_t *)(mnp + c);
                    mn2[j] = __half22float2(*(const __half2 *)&mw2[j]);
                }
#pragma unroll
                for (int ii = 0; ii < 2; ii++) {
                    const int i = 2 * ip + ii;
                    const float4 qr = qraw[i][lane];
                    uint4 a, ao;
                    if constexpr (VQ_MMA_HFOLD) {
                        /* scale pairs (channels j = 0, 1 / 2, 3 of k-step i) from the
                         * k-step pairs' words, folded in fp16 pairs (hfold) */
                        const uint4 qa = afr[0][i][lane];
                        const uint32_t sel = ii ? 0x7632u : 0x5410u;
                        hfold(qa.x, qa.y, __byte_perm(sw2[0], sw2[1], sel), a.x, a.y);
                        hfold(qa.z, qa.w, __byte_perm(sw2[2], sw2[3], sel), a.z, a.w);
                    } else {
                        const float4 ql = qlane[i][lane];
                        const float s0_ = ii ? sc2[0].y : sc2[0].x, s1_ = ii ? sc2[1].y : sc2[1].x;
                        const float s2_ = ii ? sc2[2].y : sc2[2].x, s3_ = ii ? sc2[3].y : sc2[3].x;
                        split2(ql.x * s0_, ql.y * s1_, a.x, a.y);
                        split2(ql.z * s2_, ql.w * s3_, a.z, a.w);
                    }
                    if constexpr (KMIN) {
                        /* A: q (hi/lo rows) of the lane's k-step; B: the minima of
                         * the k-step's channels in every column (lanes g < 4 the
                         * first half's k-step i, lanes g >= 4 the second half's):
                         * rows 0..7 x columns 0..3 and rows 4..7 x columns 4..7
                         * are head (g & 3)'s sums, the rest junk */
                        const uint32_t sel = ii ? 0x7632u : 0x5410u;
                        mma16816(cmin, qu[i][lane], __byte_perm(mw2[0], mw2[1], sel), __byte_perm(mw2[2], mw2[3], sel));
                    } else {
                        base = fmaf(qr.x, ii ? mn2[0].y : mn2[0].x, base);
                        base = fmaf(qr.y, ii ? mn2[1].y : mn2[1].x, base);
                        base = fmaf(qr.z, ii ? mn2[2].y : mn2[2].x, base);
                        base = fmaf(qr.w, ii ? mn2[3].y : mn2[3].x, base);
                    }
                    ao.x = __shfl_xor_sync(FULL, a.x, 16);
                    ao.y = __shfl_xor_sync(FULL, a.y, 16);
                    ao.z = __shfl_xor_sync(FULL, a.z, 16);
                    ao.w = __shfl_xor_sync(FULL, a.w, 16);
                    uint32_t b0, b1;
#pragma unroll
                    for (int n = 0; n < 4; n++) {
                        key_frag<KM, D>(kr[n], 0, i, b0, b1);
                        mma16816(c[n], a, b0, b1);
                    }
#pragma unroll
                    for (int n = 0; n < 4; n++) {
                        key_frag<KM, D>(kr[n], 0, KS / 2 + i, b0, b1);
                        mma16816(c[n], ao, b0, b1);
                    }
                }
            }
            if constexpr (KMIN) {
                /* head h: lane (h, 0) rows h, h + 8 column 0 (first half) plus
                 * lane (h + 4, 2) rows h + 4, h + 12 column 4 (second half) */
                float x = cmin[0] + cmin[2];
                x += __shfl_xor_sync(FULL, x, 18);
                base = __shfl_sync(FULL, x, 4 * (g & 3)) * (1.0f / (float)(1 << KMIN_EXP));
            } else {
                base += __shfl_xor_sync(FULL, base, 1);
                base += __shfl_xor_sync(FULL, base, 2);
                base += __shfl_xor_sync(FULL, base, 16);
            }
            base = g >= 4 ? 0.0f : base;
        } else if constexpr (KIVI_K) {
            /* the block's per-channel scale folds into Q', its minimum into
             * one float per head: score = sum_c q_c s_c code_c + sum_c q_c m_c */
            const uint8_t *blk = kh;
            const __half *sc = (const __half *)(blk + t * (D / 2));
            const __half *mn = (const __half *)(blk + 2 * D + t * (D / 2));
            __half sv[D / 4], mv[D / 4];
#pragma unroll
            for (int i = 0; i < D / 32; i++) {
                *(uint4 *)&sv[8 * i] = ((const uint4 *)sc)[i];
                *(uint4 *)&mv[8 * i] = ((const uint4 *)mn)[i];
            }
#pragma unroll
            for (int s = 0; s < KS; s++) {
                const float4 ql = qlane[s][lane], qr = qraw[s][lane];
                const int c0 = key_chan<KM, D>(s, 0), c1 = key_chan<KM, D>(s, 1);
                const int c2 = key_chan<KM, D>(s, 2), c3 = key_chan<KM, D>(s, 3);
                uint4 a;
                split2(ql.x * __half2float(sv[c0]), ql.y * __half2float(sv[c1]), a.x, a.y);
                split2(ql.z * __half2float(sv[c2]), ql.w * __half2float(sv[c3]), a.z, a.w);
                base = fmaf(qr.x, __half2float(mv[c0]), base);
                base = fmaf(qr.y, __half2float(mv[c1]), base);
                base = fmaf(qr.z, __half2float(mv[c2]), base);
                base = fmaf(qr.w, __half2float(mv[c3]), base);
                uint32_t b0, b1;
#pragma unroll
                for (int n = 0; n < 4; n++) {
                    key_frag<KM, D>(kr[n], 0, s, b0, b1);
                    mma16816(c[n], a, b0, b1);
                }
            }
            base += __shfl_xor_sync(FULL, base, 1);
            base += __shfl_xor_sync(FULL, base, 2);
        } else if constexpr (KM == FMT_Q8 || KM == FMT_Q4) {
            /* q8_0 / q4_0: each block of 32 channels (2 k-steps) into fresh
             * accumulators, then times the token's block scale d */
            const uint8_t *drow[4][2];
#pragma unroll
            for (int n = 0; n < 4; n++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++)
                    drow[n][jj] = STG ? k0 + (8 * n + 2 * t + jj) * KROW
                                      : k0 + (size_t)(min(t0 + 8 * n + 2 * t + jj, s1 - 1) - t0) * p.kf.block_bytes;
#pragma unroll
            for (int bk = 0; bk < D / 32; bk++) {
                float cb[4][4];
                const float k0 = QSUBK ? kqs[bk][g] : 0.0f; /* rows g (the hi halves' sums) start there */
#pragma unroll
                for (int n = 0; n < 4; n++) {
                    cb[n][0] = cb[n][1] = k0;
                    cb[n][2] = cb[n][3] = 0.0f;
                }
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const uint4 a = afr[0][2 * bk + h][lane];
                    uint32_t b0, b1;
#pragma unroll
                    for (int n = 0; n < 4; n++) {
                        key_frag<KM, D>(kr[n], 0, 2 * bk + h, b0, b1);
                        mma16816(cb[n], a, b0, b1);
                    }
                }
#pragma unroll
                for (int n = 0; n < 4; n++)
#pragma unroll
                    for (int jj = 0; jj < 2; jj++)
                        c[n][jj] = fmaf(h2f(ld16(drow[n][jj] + KBB * bk)), cb[n][jj] + cb[n][2 + jj], c[n][jj]);
            }
        } else if constexpr (I8K) {
            int ci[NH8][4][4];
#pragma unroll
            for (int hh = 0; hh < NH8; hh++)
#pragma unroll
                for (int n = 0; n < 4; n++)
                    ci[hh][n][0] = ci[hh][n][1] = ci[hh][n][2] = ci[hh][n][3] = 0;
#pragma unroll
            for (int x = 0; x < NKS8; x++) {
                if constexpr (KM == FMT_RVQ2 && VQ_MMA_RSYM)
                    if (x % 6 >= 4 && rsym) /* the b0 AND b1 plane times a zero factor */
                        continue;
                uint4 a[NH8];
#pragma unroll
                for (int hh = 0; hh < NH8; hh++)
                    a[hh] = ai8[x][hh][lane];
#pragma unroll
                for (int n = 0; n < 4; n++) {
                    const uint32_t b0 = i8_breg<KM, D>(kr[n], x, 0), b1 = i8_breg<KM, D>(kr[n], x, 1);
#pragma unroll
                    for (int hh = 0; hh < NH8; hh++)
                        mma16832(ci[hh][n], a[hh], b0, b1);
                }
            }
            /* lane g < 4 holds pieces 0, 1 of its head (tile 0), lane g + 4
             * pieces 2, 3: one shuffle adds them; G = 8: lane g >= 4 gets
             * its head's pieces 0, 1 (tile 1) from lane g - 4 */
#pragma unroll
            for (int n = 0; n < 4; n++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++) {
                    if constexpr (NH8 == 1) {
                        const float x = (float)(ci[0][n][jj] * 128 + ci[0][n][2 + jj]);
                        c[n][jj] = fmaf(__shfl_xor_sync(FULL, x, 16), 1.0f / 16384.0f, x);
                    } else {
                        const float y0 = (float)(ci[0][n][jj] * 128 + ci[0][n][2 + jj]);
                        const float y1 = (float)(ci[1][n][jj] * 128 + ci[1][n][2 + jj]);
                        const bool lo = g < 4;
                        const float rv = __shfl_xor_sync(FULL, lo ? y1 : y0, 16);
                        c[n][jj] = lo ? fmaf(rv, 1.0f / 16384.0f, y0) : fmaf(y1, 1.0f / 16384.0f, rv);
                    }
                }
        } else {
#pragma unroll
            for (int pl = 0; pl < PL; pl++)
#pragma unroll
                for (int s = 0; s < KS; s++) {
                    const uint4 a = afr[pl][s][lane];
                    uint32_t b0, b1;
#pragma unroll
                    for (int n = 0; n < 4; n++) {
                        key_frag<KM, D>(kr[n], pl, s, b0, b1);
                        mma16816(c[n], a, b0, b1);
                    }
                }
        }
        /* scores of head g, tokens 8n + 2t + jj */
        const int nv = s1 - t0; /* tokens of this tile (< WTOK: the last one, partial) */
        /* RBF (rabitq): lane i computes token i's factor norm / (corr *
         * sqrt(D)) (one division per lane instead of one per score; the
         * same floats), the scores take theirs by a shuffle */
        [[maybe_unused]] float facl = 0.0f;
        if constexpr (KM == FMT_RABITQ1 && VQ_MMA_RBF) {
            const uint8_t *row = STG ? k0 + lane * KROW : k0 + (size_t)(min(t0 + lane, s1 - 1) - t0) * p.kf.block_bytes;
            facl = h2f(ld16(row)) / (h2f(ld16(row + 2)) * sqrtf((float)D));
        }
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int jj = 0; jj < 2; jj++) {
                const int tok = t0 + 8 * n + 2 * t + jj;
                float x = c[n][jj] + c[n][2 + jj];
                if constexpr (QSUBK) {
                    x *= __int_as_float((127 + EXPO) << 23);
                } else if constexpr (KM == FMT_FP16 || KM == FMT_Q8 || KM == FMT_Q4) {
                } else if constexpr (KIVI_K) {
                    x = fmaf(x, post, base);
                } else {
                    const uint8_t *row = STG ? k0 + (8 * n + 2 * t + jj) * KROW : k0 + (size_t)(min(tok, s1 - 1) - t0) * p.kf.block_bytes;
                    if constexpr (KM == FMT_RVQ1 || KM == FMT_RVQ2) {
                        x = h2f(ld16(row)) * fmaf(x, post, hs);
                    } else {
                        const float fac = VQ_MMA_RBF ? __shfl_sync(FULL, facl, 8 * n + 2 * t + jj)
                                                     : h2f(ld16(row)) / (h2f(ld16(row + 2)) * sqrtf((float)D));
                        x = fac * fmaf(x, post, -hs);
                    }
                }
                sc[n][jj] = x;
            }
        if (nv < WTOK) /* tokens past the end: weight 0 */
#pragma unroll
            for (int n = 0; n < 4; n++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++)
                    sc[n][jj] = 8 * n + 2 * t + jj < nv ? sc[n][jj] : -INFINITY;
    };
    auto soft_tile = [&](float (&sc)[4][2]) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < 4; n++)
            mx = fmaxf(mx, fmaxf(sc[n][0], sc[n][1]));
        /* online softmax: the running max moves only when a score passes it */
        if (__any_sync(FULL, mx > m_run)) {
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, 2));
            const float mnew = fmaxf(m_run, mx);
            const float al = ex2(m_run - mnew);
            m_run = mnew;
            l_run *= al;
            /* SPLIT_V: lane g >= 4 holds head g - 4's minima sums (VLDSM:
             * and its accumulator rows) */
            const float alm = SPLIT_MT ? __shfl_sync(FULL, al, lane & ~16) : al;
            /* VT: columns 2t + jj of lane (g, t) are head 2 (t & 1) + jj */
            const float alo = VT ? __shfl_sync(FULL, al, 8 * (t & 1)) : VLDSM ? alm : al;
            const float alo1 = VT ? __shfl_sync(FULL, al, 8 * (t & 1) + 4) : alo;
            if constexpr (MINMMA)
#pragma unroll
                for (int k = 0; k < 4; k++)
                    mmn[k] *= al;
#pragma unroll
            for (int n = 0; n < NO; n++) {
                o[n][0] *= alo;
                o[n][1] *= alo1;
                o[n][2] *= alo;
                o[n][3] *= alo1;
            }
#pragma unroll
            for (int i = 0; i < NMT; i++)
                mt[i] *= alm;
        }
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int jj = 0; jj < 2; jj++) {
                sc[n][jj] = ex2(sc[n][jj] - m_run);
                l_run += sc[n][jj];
            }
    };
    auto value_tile = [&](const uint8_t *const v0, const int nv, float (&sc)[4][2]) {
        /* ---- values: two k-tiles of 16 tokens (loads of both issued together) ---- */
        const uint8_t *vrow[2][4];
        float pw[2][4];
#pragma unroll
        for (int kt = 0; kt < 2; kt++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = 16 * kt + 2 * t + (i & 1) + 8 * (i >> 1);
                vrow[kt][i] = STG_V ? v0 + r * VROW : v0 + (size_t)(min(r, nv - 1)) * p.vf.block_bytes;
                pw[kt][i] = sc[2 * kt + (i >> 1)][i & 1];
            }
        if constexpr (VM == FMT_FP16) {
            uint4 a[2];
#pragma unroll
            for (int kt = 0; kt < 2; kt++) {
                split2(pw[kt][0], pw[kt][1], a[kt].x, a[kt].y);
                split2(pw[kt][2], pw[kt][3], a[kt].z, a[kt].w);
            }
#pragma unroll
            for (int u = 0; u < D / 64; u++) {
                uint32_t w[2][4][4];
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const uint4 v = ld_once(vrow[kt][i] + 128 * u + 16 * g);
                        w[kt][i][0] = v.x;
                        w[kt][i][1] = v.y;
                        w[kt][i][2] = v.z;
                        w[kt][i][3] = v.w;
                    }
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const uint32_t sel = e & 1 ? 0x7632u : 0x5410u;
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        const uint32_t b0 = __byte_perm(w[kt][0][e >> 1], w[kt][1][e >> 1], sel);
                        const uint32_t b1 = __byte_perm(w[kt][2][e >> 1], w[kt][3][e >> 1], sel);
                        mma16816(o[8 * u + e], a[kt], b0, b1);
                    }
                }
            }
        } else if constexpr (Q8_V) {
            /* q8_0 values: per token D/32 blocks [d fp16][32 int8]; the
             * block's d folds into the weight (P*d split hi/lo per block);
             * lane g reads codes 4g..4g+3 of each block, n-tile e of the
             * block takes byte e (channel 4g + e) of two tokens.
             * SPLIT_V: lane g >= 4 folds the odd blocks for head g - 4 (as
             * for kivi values), one shuffle hands the fragments over. */
            auto q8_codes = [&](int gr, uint32_t (&w)[2][4]) {
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        if constexpr (VM == FMT_Q4 && VQ_MMA_Q4B) {
                            /* q4_0 (Q4B): bytes 2g, 2g + 1 of the block's 16 (channels 2g, 2g + 1 low
                             * nibbles, + 16 high) of tokens 2 (i/2), 2 (i/2) + 1: w[kt][i] holds byte
                             * 2g + i%2 of the two tokens in bytes 0 and 2 */
                            const uint32_t ua = ld16(vrow[kt][i & 2] + VBB * gr + 2 + 2 * g);
                            const uint32_t ub = ld16(vrow[kt][(i & 2) + 1] + VBB * gr + 2 + 2 * g);
                            w[kt][i] = __byte_perm(ua, ub, i & 1 ? 0x0501u : 0x0400u);
                            continue;
                        }
                        /* q8_0: codes 4g..4g+3; q4_0: bytes 4 (g%4).., nibble g/4 */
                        const uint8_t *cp = vrow[kt][i] + VBB * gr + 2 + 4 * (VM == FMT_Q4 ? (g & 3) : g); /* aligned in odd blocks */
                        const uint32_t cw = gr & 1 ? ld32u(cp) : (uint32_t)ld16(cp) | (uint32_t)ld16(cp + 2) << 16;
                        w[kt][i] = VM == FMT_Q4 ? cw >> (4 * (g >> 2)) : cw ^ 0x80808080u;
                    }
            };
            const uint32_t magic = magic6400();
            auto q8_mma = [&](int gr, const uint4 (&a)[2], const uint32_t (&w)[2][4]) {
#pragma unroll
                for (int e = 0; e < 4; e++)
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        if constexpr (VM == FMT_Q4 && VQ_MMA_Q4B) {
                            /* n-tile e: byte 2g + e/2, nibble e%2; (1024 + u) - 1032 = u - 8, (1024 + 16u) - 1152 = 16 (u - 8) */
                            const int k = e >> 1;
                            uint32_t b0, b1;
                            if (e & 1) {
                                b0 = and_or<0x00f000f0u>(w[kt][k], magic);
                                b1 = and_or<0x00f000f0u>(w[kt][2 + k], magic);
                                const __half2 off = __half2(__ushort_as_half(0x6480u), __ushort_as_half(0x6480u));
                                b0 = h2u(__hsub2(*(const __half2 *)&b0, off));
                                b1 = h2u(__hsub2(*(const __half2 *)&b1, off));
                            } else {
                                b0 = u4_h2(and_or<0x000f000fu>(w[kt][k], magic));
                                b1 = u4_h2(and_or<0x000f000fu>(w[kt][2 + k], magic));
                            }
                            mma16816(o[4 * gr + e], a[kt], b0, b1);
                            continue;
                        }
                        const uint32_t sel = e | (4 + e) << 8;
                        constexpr uint32_t cm = VM == FMT_Q4 ? 0x000f000fu : 0x00ff00ffu;
                        uint32_t b0 = __byte_perm(w[kt][0], w[kt][1], sel), b1 = __byte_perm(w[kt][2], w[kt][3], sel);
                        if constexpr (STG_V) { /* one LOP3 each */
                            b0 = and_or<cm>(b0, magic);
                            b1 = and_or<cm>(b1, magic);
                        } else { /* values from global memory (q8_0, D = 128): this form measured 1.5% faster */
                            b0 = (b0 & cm) | 0x64006400u;
                            b1 = (b1 & cm) | 0x64006400u;
                        }
                        if constexpr (VM == FMT_Q4)
                            mma16816(o[4 * gr + e], a[kt], u4_h2(b0), u4_h2(b1));
                        else
                            mma16816(o[4 * gr + e], a[kt], i8_h2(b0), i8_h2(b1));
                    }
            };
            /* VSC (QSCALE): the weights times 2^vF, vF from the warp's
             * largest |d| of the tile (d may be negative: q4_0) */
            if constexpr (SPLIT_V) {
                const int hb = g >> 2;
                float ph[2][4], phs[2][4], dv[NG / 2][2][4];
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        ph[kt][i] = __shfl_sync(FULL, pw[kt][i], lane & ~16);
#pragma unroll
                        for (int j = 0; j < NG / 2; j++)
                            dv[j][kt][i] = h2f(ld16(vrow[kt][i] + VBB * (2 * j + hb)));
                    }
                scale_weights(ph, VSC ? arr_max<true>(dv) : 0.0f, phs);
#pragma unroll
                for (int j = 0; j < NG / 2; j++) {
                    uint4 a[2], ao[2];
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        split2(phs[kt][0] * dv[j][kt][0], phs[kt][1] * dv[j][kt][1], a[kt].x, a[kt].y);
                        split2(phs[kt][2] * dv[j][kt][2], phs[kt][3] * dv[j][kt][3], a[kt].z, a[kt].w);
                        ao[kt].x = __shfl_xor_sync(FULL, a[kt].x, 16);
                        ao[kt].y = __shfl_xor_sync(FULL, a[kt].y, 16);
                        ao[kt].z = __shfl_xor_sync(FULL, a[kt].z, 16);
                        ao[kt].w = __shfl_xor_sync(FULL, a[kt].w, 16);
                    }
                    {
                        uint32_t w[2][4];
                        q8_codes(2 * j, w);
                        q8_mma(2 * j, a, w);
                    }
                    {
                        uint32_t w[2][4];
                        q8_codes(2 * j + 1, w);
                        q8_mma(2 * j + 1, ao, w);
                    }
                }
            } else {
                float dv[NG][2][4], pws[2][4];
#pragma unroll
                for (int gr = 0; gr < NG; gr++)
#pragma unroll
                    for (int kt = 0; kt < 2; kt++)
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            dv[gr][kt][i] = h2f(ld16(vrow[kt][i] + VBB * gr));
                scale_weights(pw, VSC ? arr_max<true>(dv) : 0.0f, pws);
#pragma unroll
                for (int gr = 0; gr < NG; gr++) {
                    uint4 a[2];
                    uint32_t w[2][4];
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        split2(pws[kt][0] * dv[gr][kt][0], pws[kt][1] * dv[gr][kt][1], a[kt].x, a[kt].y);
                        split2(pws[kt][2] * dv[gr][kt][2], pws[kt][3] * dv[gr][kt][3], a[kt].z, a[kt].w);
                    }
                    q8_codes(gr, w);
                    q8_mma(gr, a, w);
                }
            }
        } else {
            /* kivi values, group 32: per token [scales fp16 x NG][minima
             * fp16 x NG][codes]; the token's group scale folds into the
             * weight, its minimum into mt[group] */
            constexpr int CB = (VM & 15) * D / 8 / NG; /* code bytes per group */
            /* the codes of one group of the lane's 8 tokens (4 per k-tile):
             * VBYTE: lane (g, t) takes byte g (kivi2) or bytes 2g, 2g + 1
             * (kivi4) of the group's codes, channels 4g..4g+3, n-tile e
             * channel 4g + e; one byte permute puts a byte of two tokens in
             * bytes 0 and 2 (w[kt][pair][k]), then each n-tile masks its code
             * there (bit offset 2e / 4(e & 1)). Otherwise: channel 8e + g of
             * the group, the tokens' 8-byte words (w[kt][token][word]) and a
             * byte permute per n-tile. */
            constexpr int WI = VQ_MMA_VBYTE ? 2 : 4, WN = VQ_MMA_VBYTE ? 2 : CB / 4;
            const uint32_t magic = magic6400();
            auto val_codes = [&](int gr, uint32_t (&w)[2][WI][WN]) {
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < WI; i++) {
                        if constexpr (VQ_MMA_VBYTE) {
                            const uint8_t *pa = vrow[kt][2 * i] + 4 * NG + gr * CB, *pb = vrow[kt][2 * i + 1] + 4 * NG + gr * CB;
                            if constexpr (VM == FMT_KIVI2) {
                                w[kt][i][0] = __byte_perm((uint32_t)pa[g], (uint32_t)pb[g], 0x0400u);
                            } else {
                                const uint32_t ua = ld16(pa + 2 * g), ub = ld16(pb + 2 * g);
                                w[kt][i][0] = __byte_perm(ua, ub, 0x0400u);
                                w[kt][i][1] = __byte_perm(ua, ub, 0x0501u);
                            }
                        } else {
                            const uint8_t *cp = vrow[kt][i] + 4 * NG + gr * CB;
#pragma unroll
                            for (int k = 0; k < CB / 8; k++) {
                                const uint2 v = *(const uint2 *)(cp + 8 * k);
                                w[kt][i][2 * k] = v.x;
                                w[kt][i][2 * k + 1] = v.y;
                            }
                        }
                    }
            };
            /* o[group gr] += A[kt] (codes of group gr) */
            auto val_mma = [&](int gr, const uint4 (&a)[2], const uint32_t (&w)[2][WI][WN]) {
#pragma unroll
                for (int e = 0; e < 4; e++) { /* the 4 n-tiles of the group */
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        uint32_t b0, b1;
                        if constexpr (VQ_MMA_VBYTE) {
                            const int k = VM == FMT_KIVI2 ? 0 : e >> 1;
                            constexpr uint32_t M0 = VM == FMT_KIVI2 ? 0x00030003u : 0x000f000fu;
                            constexpr int SH = VM == FMT_KIVI2 ? 2 : 4, EM = VM == FMT_KIVI2 ? 3 : 1;
                            switch (e & EM) { /* e is a compile-time constant: one case remains */
                            case 0: b0 = code_h2c<M0>(w[kt][0][k], magic); b1 = code_h2c<M0>(w[kt][1][k], magic); break;
                            case 1: b0 = code_h2c<(M0 << SH)>(w[kt][0][k], magic); b1 = code_h2c<(M0 << SH)>(w[kt][1][k], magic); break;
                            case 2: b0 = code_h2c<(M0 << 2 * SH)>(w[kt][0][k], magic); b1 = code_h2c<(M0 << 2 * SH)>(w[kt][1][k], magic); break;
                            default: b0 = code_h2c<(M0 << 3 * SH)>(w[kt][0][k], magic); b1 = code_h2c<(M0 << 3 * SH)>(w[kt][1][k], magic); break;
                            }
                        } else {
                            const uint32_t vmask = VM == FMT_KIVI2 ? 0x00030003u << (2 * (g & 3)) : 0x000f000fu << (4 * (g & 1));
                            const uint32_t vbyte = VM == FMT_KIVI2 ? (uint32_t)(g >> 2) : (uint32_t)(g >> 1);
                            if constexpr (VM == FMT_KIVI2) {
                                const uint32_t bs = vbyte + 2 * (e & 1), sel = bs | (bs + 4) << 8;
                                b0 = code_h2(__byte_perm(w[kt][0][e >> 1], w[kt][1][e >> 1], sel), vmask);
                                b1 = code_h2(__byte_perm(w[kt][2][e >> 1], w[kt][3][e >> 1], sel), vmask);
                            } else {
                                const uint32_t sel = vbyte | (vbyte + 4) << 8;
                                b0 = code_h2(__byte_perm(w[kt][0][e], w[kt][1][e], sel), vmask);
                                b1 = code_h2(__byte_perm(w[kt][2][e], w[kt][3][e], sel), vmask);
                            }
                        }
                        mma16816(o[4 * gr + e], a[kt], b0, b1);
                    }
                }
            };
            if constexpr (VLDSM) {
                /* kivi2, D = 128, staged, G <= 4: the codes come by
                 * ldmatrix .trans, 16 code bytes (groups 2c, 2c + 1) of 8
                 * tokens per matrix: lane (g, t) gets bytes 2g, 2g + 1 of
                 * the 16, which are in group 2c + (g >> 2), for tokens 2t,
                 * 2t + 1 in the two halves: already the B operand's layout
                 * (4 matrices: b0, b1 of both k-tiles). So the n-tile's
                 * columns 0..3 are group 2c, columns 4..7 group 2c + 1, and
                 * the A rows follow: rows 0..3 / 8..11 (lanes g < 4) carry
                 * head g's P * s of group 2c, rows 4..7 / 12..15 (lanes
                 * g >= 4) head g - 4's P * s of group 2c + 1 (G <= 4 leaves
                 * those rows free); each lane folds only its own group, no
                 * exchange. Rows of one group times columns of the other
                 * are junk, never read (the output step takes lane (g, t)'s
                 * columns only where (g >> 2) == (t >> 1)). n-tile 8c + e:
                 * byte 2g + (e >> 2), code e & 3 (bit offset 2 (e & 3)). */
                const uint32_t hsel = g >= 4 ? 0x7632u : 0x5410u;
                uint32_t cw[2][4];
#pragma unroll
                for (int c2 = 0; c2 < 2; c2++)
                    ldsm4t(v0 + lane * VROW + 4 * NG + 16 * c2, cw[c2]);
                float ph[2][4], sv[2][4][2], mv[2][4][2];
                uint4 hv[2][4];          /* the tokens' headers [s0 s1 s2 s3 m0 m1 m2 m3] */
                uint32_t phl[2][2][2];   /* HFOLD: (hi, lo) of the weights of token pairs (2t, 2t + 1), (2t + 8, 2t + 9) */
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        ph[kt][i] = __shfl_sync(FULL, pw[kt][i], lane & ~16);
                        if constexpr (MINMMA) { /* the scales only (the minima go by the mma) */
                            const uint2 v = *(const uint2 *)vrow[kt][i];
                            hv[kt][i] = make_uint4(v.x, v.y, 0u, 0u);
                            continue;
                        }
                        const uint4 v = *(const uint4 *)vrow[kt][i];
                        hv[kt][i] = v;
                        scales_mins(v, hsel, sv[kt][i], mv[kt][i]);
                    }
                /* the pairs' scales of group 2c + (g >> 2) (half g >> 2 of word c2 of both headers) */
                uint32_t sp[2][2][2];
#pragma unroll
                for (int c2 = 0; c2 < 2; c2++)
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        sp[c2][kt][0] = __byte_perm(c2 ? hv[kt][0].y : hv[kt][0].x, c2 ? hv[kt][1].y : hv[kt][1].x, hsel);
                        sp[c2][kt][1] = __byte_perm(c2 ? hv[kt][2].y : hv[kt][2].x, c2 ? hv[kt][3].y : hv[kt][3].x, hsel);
                    }
                float fsc = 1.0f; /* VSUBN: 2^vF */
                if constexpr (VSUBN) {
                    /* the largest of the lane's 16 scales (fp16 >= 0: their
                     * bits order as integers), then of the warp's; vF drops to
                     * 29 - its exponent field e (s < 2^(e-14), so P * 2^vF * s
                     * < 2^15 with P <= 1), the sums rescaled by the change */
                    __half2 m2 = __hmax2(*(const __half2 *)&sp[0][0][0], *(const __half2 *)&sp[0][0][1]);
                    m2 = __hmax2(m2, __hmax2(*(const __half2 *)&sp[0][1][0], *(const __half2 *)&sp[0][1][1]));
                    m2 = __hmax2(m2, __hmax2(*(const __half2 *)&sp[1][0][0], *(const __half2 *)&sp[1][0][1]));
                    m2 = __hmax2(m2, __hmax2(*(const __half2 *)&sp[1][1][0], *(const __half2 *)&sp[1][1][1]));
                    const uint32_t mu = h2u(m2);
                    const uint32_t ml = max(mu & 0xffffu, mu >> 16);
                    /* vF only drops, so the warp's maximum matters only where
                     * some lane's exponent field e >= 30 - vF (vn = 29 - e <
                     * vF): a vote first, the reduction (whose result the
                     * chain used to wait for every sub-tile) and the rescale
                     * only then; vF takes the same values (Round gpu17) */
                    if (__any_sync(FULL, ml >= (uint32_t)(30 - vF) << 10)) {
                        const int e = (int)(__reduce_max_sync(FULL, ml) >> 10);
                        fsc = vscale(29 - e);
                    } else {
                        fsc = __int_as_float((127 + vF) << 23);
                    }
                }
                if constexpr (VQ_MMA_HFOLD)
#pragma unroll
                    for (int kt = 0; kt < 2; kt++)
#pragma unroll
                        for (int pr = 0; pr < 2; pr++)
                            split2(ph[kt][2 * pr] * fsc, ph[kt][2 * pr + 1] * fsc, phl[kt][pr][0], phl[kt][pr][1]);
                if constexpr (MINMMA) {
                    /* mmn += P (hi/lo rows) x M, M[token][column n] = the
                     * token's minimum of group n & 3 (exact fp16): lane (g, t)
                     * gives column g, tokens 2t, 2t + 1 (b0) and 2t + 8, 2t + 9 (b1) */
                    const uint32_t msel = g & 1 ? 0x7632u : 0x5410u;
                    const int moff = 2 * NG + 4 * ((g >> 1) & 1); /* the word of minimum g & 3 (the minima follow the NG scales) */
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        uint32_t mw[4];
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            mw[i] = ld32u(vrow[kt][i] + moff);
                        const uint4 a = make_uint4(phl[kt][0][0], phl[kt][0][1], phl[kt][1][0], phl[kt][1][1]);
                        mma16816(mmn, a, __byte_perm(mw[0], mw[1], msel), __byte_perm(mw[2], mw[3], msel));
                    }
                }
#pragma unroll
                for (int c2 = 0; c2 < 2; c2++) {
                    uint4 a[2];
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
                        if constexpr (!MINMMA)
#pragma unroll
                            for (int i = 0; i < 4; i++)
                                mt[c2] = fmaf(ph[kt][i], mv[kt][i][c2], mt[c2]);
                        if constexpr (VQ_MMA_HFOLD) {
                            /* the pair's scales of group 2c + (g >> 2): half g >> 2 of word c2 of both headers */
                            hfold(phl[kt][0][0], phl[kt][0][1], sp[c2][kt][0], a[kt].x, a[kt].y);
                            hfold(phl[kt][1][0], phl[kt][1][1], sp[c2][kt][1], a[kt].z, a[kt].w);
                        } else {
                            split2(ph[kt][0] * sv[kt][0][c2], ph[kt][1] * sv[kt][1][c2], a[kt].x, a[kt].y);
                            split2(ph[kt][2] * sv[kt][2][c2], ph[kt][3] * sv[kt][3][c2], a[kt].z, a[kt].w);
                        }
                    }
                    if constexpr (VT) {
                        /* the transposed product O^T += V^T (P s)^T: A row g
                         * (g + 8) of tile 4 c2 + q is code 2q (2q + 1) of the
                         * lane's ldmatrix word g (group 2c2 + (g >> 2); k: the
                         * tokens, as the words hold them), B column n the
                         * folded weight of head n & 3 and group 2c2 + (n >> 2):
                         * lane (n, t)'s own fold, hi (a[kt].x, .z: tokens 2t,
                         * 2t + 1 / 2t + 8, 2t + 9) and lo (.y, .w) as two B
                         * operands into one accumulator. Rows of one group
                         * times columns of the other are junk, never read. */
#pragma unroll
                        for (int kt = 0; kt < 2; kt++)
#pragma unroll
                            for (int q = 0; q < 4; q++) {
                                uint32_t r[4];
#pragma unroll
                                for (int r8 = 0; r8 < 2; r8++) {
                                    const int e = 2 * q + r8;
                                    const uint32_t M = 0x00030003u << vsub_pos(4, e);
                                    const uint32_t y0 = cw[c2][2 * kt], y1 = cw[c2][2 * kt + 1];
                                    r[r8] = (e < 2 ? y0 << 6 : e < 5 ? y0 : y0 >> 6) & M;
                                    r[2 + r8] = (e < 2 ? y1 << 6 : e < 5 ? y1 : y1 >> 6) & M;
                                }
                                const uint4 ac = make_uint4(r[0], r[1], r[2], r[3]);
                                mma16816(o[4 * c2 + q], ac, a[kt].x, a[kt].z);
                                mma16816(o[4 * c2 + q], ac, a[kt].y, a[kt].w);
                            }
                    } else {
                        uint32_t hiw[4]; /* the high bytes (2g + 1) moved down to bits 0..7 / 16..23 */
#pragma unroll
                        for (int k = 0; k < 4; k++)
                            hiw[k] = cw[c2][k] >> 8;
#pragma unroll
                        for (int e = 0; e < 8; e++)
#pragma unroll
                            for (int kt = 0; kt < 2; kt++) {
                                const uint32_t x0 = e < 4 ? cw[c2][2 * kt] : hiw[2 * kt];
                                const uint32_t x1 = e < 4 ? cw[c2][2 * kt + 1] : hiw[2 * kt + 1];
                                uint32_t b0, b1;
                                if (VSUBN && VQ_MMA_VSUBN == 4) { /* code * 2^(pos - 24): codes 0, 1 by x << 6, 2..4 in place, 5..7 by x >> 6 (pos 4..8) */
                                    const uint32_t M = 0x00030003u << vsub_pos(4, e);
                                    const uint32_t y0 = cw[c2][2 * kt], y1 = cw[c2][2 * kt + 1];
                                    b0 = (e < 2 ? y0 << 6 : e < 5 ? y0 : y0 >> 6) & M;
                                    b1 = (e < 2 ? y1 << 6 : e < 5 ? y1 : y1 >> 6) & M;
                                } else if (VSUBN && VQ_MMA_VSUBN == 3) { /* code * 2^(pos - 24): shifted to pos 4, 6 or 8 */
                                    const uint32_t M = 0x00030003u << vsub_pos(3, e);
                                    const uint32_t y0 = cw[c2][2 * kt], y1 = cw[c2][2 * kt + 1];
                                    b0 = (e < 3 ? y0 << 4 : e < 5 ? y0 : e < 7 ? y0 >> 4 : y0 >> 8) & M;
                                    b1 = (e < 3 ? y1 << 4 : e < 5 ? y1 : e < 7 ? y1 >> 4 : y1 >> 8) & M;
                                } else if (VSUBN && vsub_sub(VQ_MMA_VSUBN, e)) { /* code * 2^(2 (e & 3) - 24), subnormal */
                                    const uint32_t M = 0x00030003u << (2 * (e & 3));
                                    b0 = x0 & M;
                                    b1 = x1 & M;
                                } else
                                switch (e & 3) { /* e is a compile-time constant: one case remains */
                                case 0: b0 = code_h2c<0x00030003u>(x0, magic); b1 = code_h2c<0x00030003u>(x1, magic); break;
                                case 1: b0 = code_h2c<0x000c000cu>(x0, magic); b1 = code_h2c<0x000c000cu>(x1, magic); break;
                                case 2: b0 = code_h2c<0x00300030u>(x0, magic); b1 = code_h2c<0x00300030u>(x1, magic); break;
                                default: b0 = code_h2c<0x00c000c0u>(x0, magic); b1 = code_h2c<0x00c000c0u>(x1, magic); break;
                                }
                                mma16816(o[8 * c2 + e], a[kt], b0, b1);
                            }
                    }
                }
            } else if constexpr (SPLIT_V) {
                /* lane (g, t) folds groups 2j + (g >> 2) of head g & 3 (its
                 * weights come from lane g & 3 by a shuffle); the other
                 * group's fragment comes from lane g ^ 4. mt[j]: the minima
                 * sum of group 2j + (g >> 2). */
                const uint32_t hsel = g >= 4 ? 0x7632u : 0x5410u; /* high or low fp16 halves */
                float ph[2][4], sv[2][4][NG / 2], mv[2][4][NG / 2];
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        ph[kt][i] = __shfl_sync(FULL, pw[kt][i], lane & ~16);
                        if constexpr (NG == 4) { /* [s0 s1 s2 s3 m0 m1 m2 m3]: take s_h, s_{2+h}, m_h, m_{2+h} */
                            scales_mins(*(const uint4 *)vrow[kt][i], hsel, sv[kt][i], mv[kt][i]);
                        } else { /* [s0 s1 m0 m1]: take s_h, m_h */
                            const uint2 v = *(const uint2 *)vrow[kt][i];
                            const uint32_t sp = __byte_perm(v.x, v.y, hsel);
                            const float2 s2 = __half22float2(*(const __half2 *)&sp);
                            sv[kt][i][0] = s2.x;
                            mv[kt][i][0] = s2.y;
                        }
                    }
                float phs[2][4]; /* VSC: the weights times 2^vF, for the folds */
                scale_weights(ph, VSC ? arr_max(sv) : 0.0f, phs);
#pragma unroll
                for (int j = 0; j < NG / 2; j++) {
                    uint4 a[2], ao[2];
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            mt[j] = fmaf(ph[kt][i], mv[kt][i][j], mt[j]);
                        split2(phs[kt][0] * sv[kt][0][j], phs[kt][1] * sv[kt][1][j], a[kt].x, a[kt].y);
                        split2(phs[kt][2] * sv[kt][2][j], phs[kt][3] * sv[kt][3][j], a[kt].z, a[kt].w);
                        ao[kt].x = __shfl_xor_sync(FULL, a[kt].x, 16);
                        ao[kt].y = __shfl_xor_sync(FULL, a[kt].y, 16);
                        ao[kt].z = __shfl_xor_sync(FULL, a[kt].z, 16);
                        ao[kt].w = __shfl_xor_sync(FULL, a[kt].w, 16);
                    }
                    {
                        uint32_t w[2][WI][WN];
                        val_codes(2 * j, w);
                        val_mma(2 * j, a, w);
                    }
                    {
                        uint32_t w[2][WI][WN];
                        val_codes(2 * j + 1, w);
                        val_mma(2 * j + 1, ao, w);
                    }
                }
            } else {
                float sv[2][4][NG], mv[2][4][NG];
#pragma unroll
                for (int kt = 0; kt < 2; kt++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        if constexpr (NG == 4) { /* block_bytes % 16 == 0 (D = 128, group 32) */
                            const uint4 v = *(const uint4 *)vrow[kt][i];
                            const __half2 *h = (const __half2 *)&v;
#pragma unroll
                            for (int k = 0; k < 2; k++) {
                                const float2 s2 = __half22float2(h[k]), m2 = __half22float2(h[2 + k]);
                                sv[kt][i][2 * k] = s2.x;
                                sv[kt][i][2 * k + 1] = s2.y;
                                mv[kt][i][2 * k] = m2.x;
                                mv[kt][i][2 * k + 1] = m2.y;
                            }
                        } else { /* D = 64: two groups, 8-byte rows */
                            const uint2 v = *(const uint2 *)vrow[kt][i];
                            const __half2 *h = (const __half2 *)&v;
                            const float2 s2 = __half22float2(h[0]), m2 = __half22float2(h[1]);
                            sv[kt][i][0] = s2.x;
                            sv[kt][i][1] = s2.y;
                            mv[kt][i][0] = m2.x;
                            mv[kt][i][1] = m2.y;
                        }
                    }
                float pws[2][4]; /* VSC: the weights times 2^vF, for the folds */
                scale_weights(pw, VSC ? arr_max(sv) : 0.0f, pws);
#pragma unroll
                for (int gr = 0; gr < NG; gr++) {
                    uint4 a[2];
                    uint32_t w[2][WI][WN];
                    val_codes(gr, w);
#pragma unroll
                    for (int kt = 0; kt < 2; kt++) {
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            mt[gr] = fmaf(pw[kt][i], mv[kt][i][gr], mt[gr]);
                        split2(pws[kt][0] * sv[kt][0][gr], pws[kt][1] * sv[kt][1][gr], a[kt].x, a[kt].y);
                        split2(pws[kt][2] * sv[kt][2][gr], pws[kt][3] * sv[kt][3][gr], a[kt].z, a[kt].w);
                    }
                    val_mma(gr, a, w);
                }
            }
        }
    };

    if constexpr (SWP) {
        /* SWP (64-token iterations): a software pipeline over the warp's
         * sub-tiles. The keys of the next sub-tile are scored right after
         * this one's softmax, in the same straight-line code as this one's
         * value product, so the scheduler can interleave two independent
         * chains (gpu9's profile: on 36-46% of the cycles no warp was
         * ready). The next tile's first sub-tile is therefore scored beside
         * the current tile's second value product: its stage is waited for
         * (wait_group 0) before that, and the stage the current tile leaves
         * is refilled (two tiles ahead) after it, so a copy has about half
         * a tile's time in flight instead of a whole tile's (refilling each
         * sub-tile's part as soon as it is consumed kept a tile in flight
         * but measured slower: more copy instructions, Round gpu10 in
         * docs/gpu.md). Past the end, a missing second sub-tile and the
         * tile after the last are scored on stale stage bytes: the former
         * all masked (weight 0; its value rows filled with copies of the
         * tile's last row, so that 0 times them is 0), the latter never
         * used. (In 32-token iterations the same pipeline left a copy only
         * a softmax in flight: 3-6% slower, so they run the plain loop.) */
        constexpr int K0 = KIVI_K ? 4 * D : 0; /* code rows after the kivi block header */
        int tb = s0 + warp * TT;
        /* a partial tile at tf (stage kd, its copies completed): its
         * missing rows filled */
        auto fill = [&](uint8_t *kd, int tf) {
            if (tf < s1 && s1 - tf < TT) {
#pragma unroll
                for (int h = 0; h < SUB; h++) {
                    const int nvh = s1 - tf - h * WTOK;
                    if (nvh > 0 && nvh < WTOK)
                        stage_fill(kd + K0 + h * KSB, KROW, nvh, WTOK);
                }
                stage_fill(kd + SUB * KSB, VROW, s1 - tf, TT);
                __syncwarp();
            }
        };
        if (tb < s1) {
            const int tn = tb + W * TT; /* the second tile into stage 1 */
#if VQ_MMA_FIRST1
            cp_wait0();
            __syncwarp();
#endif
            if (tn < s1)
                stage_in(nxt.off, pg_next, 1);
            cp_commit();
            advance(nxt);
            if (tn + W * TT < s1)
                pg_next = ptab[nxt.pi];
#if !VQ_MMA_FIRST1
            cp_wait1();
            __syncwarp();
#endif
            TL(4);
            fill(wstage, tb);
            float sc[4][2], sn[4][2]; /* scores, then weights, of the two sub-tiles */
            score_tile(wstage, wstage + K0, tb, sc);
            int stg = 0;
#pragma unroll 1
            for (;;) {
                uint8_t *const kd = wstage + stg * (SUB * SB), *const kn = wstage + (stg ^ 1) * (SUB * SB);
                soft_tile(sc);
                score_tile(kd + KSB, kd + KSB + K0, tb + WTOK, sn);
                value_tile(kd + SUB * KSB, s1 - tb, sc);
                soft_tile(sn);
                const int tn = tb + W * TT;
                cp_wait0();
                __syncwarp();
                fill(kn, tn);
                score_tile(kn, kn + K0, tn, sc); /* stale bytes when tn >= s1: unused */
                value_tile(kd + SUB * KSB + VSB, s1 - tb - WTOK, sn);
                if (tn >= s1)
                    break;
                __syncwarp(); /* every lane is done with stage stg */
                const int tn2 = tn + W * TT;
                if (tn2 < s1)
                    stage_in(nxt.off, pg_next, stg);
                cp_commit();
                advance(nxt);
                if (tn2 + W * TT < s1)
                    pg_next = ptab[nxt.pi];
                tb = tn;
                stg ^= 1;
            }
        }
    } else {
    int stg = 0;
    for (int tb = s0 + warp * TT; tb < s1; tb += W * TT, stg ^= 1) {
        /* k0b: token tb's key row (kivi: khb the block's scale/min header,
         * k0b token tb's code row), v0b: its value row; token tb + i at + i
         * rows (SUB = 2: the second sub-tile's keys at + KSB, values + VSB) */
        const uint8_t *k0b, *khb = nullptr, *v0b;
        if constexpr (STG) {
            const int tn = tb + W * TT;
            __syncwarp(); /* every lane is done with the stage refilled below */
            if (tn < s1)
                stage_in(nxt.off, pg_next, stg ^ 1);
            cp_commit();
            uint8_t *kd = wstage + stg * (SUB * SB);
            khb = kd;
            k0b = KIVI_K ? kd + 4 * D : kd;
            v0b = STG_V ? kd + SUB * KSB : p.vp + (size_t)pg_cur * p.vpb + (size_t)cur.off * p.vf.block_bytes;
            pg_cur = pg_next;
            cur = nxt;
            advance(nxt);
            if (tn + W * TT < s1)
                pg_next = ptab[nxt.pi];
#if VQ_MMA_BULK
            mbar_wait(mbar_s + 8 * stg, (phs >> stg) & 1);
            phs ^= 1u << stg;
#else
            cp_wait1();
            __syncwarp();
#endif
            if (s1 - tb < TT) { /* partial tile: fill its missing rows */
#pragma unroll
                for (int h = 0; h < SUB; h++) {
                    const int nvh = s1 - tb - h * WTOK;
                    if (nvh > 0 && nvh < WTOK) {
                        stage_fill((uint8_t *)k0b + h * KSB, KROW, nvh, WTOK);
                        if constexpr (STG_V)
                            stage_fill((uint8_t *)v0b + h * VSB, VROW, nvh, WTOK);
                    }
                }
                __syncwarp();
            }
        } else {
            const int32_t pg = VQ_MMA_PGPF ? pg_cur : ptab[cur.pi];
            const int in0 = cur.off;
            advance(cur);
            if constexpr (VQ_MMA_PGPF) /* the next tile's page, read while this one computes */
                if (tb + W * TT < s1)
                    pg_cur = ptab[cur.pi];
            const uint8_t *kpage = p.kp + (size_t)pg * p.kpb;
            if constexpr (KIVI_K) {
                khb = kpage + (size_t)(in0 >> lgk) * p.kf.block_bytes;
                k0b = khb + 4 * D + (size_t)(in0 & (p.kf.group - 1)) * (KB * D / 8);
            } else {
                k0b = kpage + (size_t)in0 * p.kf.block_bytes;
            }
            v0b = p.vp + (size_t)pg * p.vpb + (size_t)in0 * p.vf.block_bytes;
            if constexpr (STG16) {
                k0b = stage_mem + (size_t)warp * WTOK * KROW16;
                cp_wait0();
                __syncwarp();
            }
        }
#pragma unroll 1
        for (int h = 0; h < SUB; h++) {
            const int t0 = tb + h * WTOK;
            if (SUB > 1 && t0 >= s1)
                break;
            float sc[4][2];
            score_tile(khb + h * KSB, k0b + h * KSB, t0, sc);
            soft_tile(sc);
            value_tile(v0b + h * VSB, s1 - t0, sc);
        } /* sub-tiles */
    }
    } /* SWP */
    TL(5);

    /* ---- this warp's (m, l, acc) per head, then the CTA's ---- */
    if constexpr (REDSTG)
        __syncthreads(); /* every warp is done with its stages */
    TL(6);
    float (&red)[W][G][D] = *reinterpret_cast<float (*)[W][G][D]>(REDSTG ? (void *)stage_mem : (void *)&red_s[0][0][0]);
    l_run += __shfl_xor_sync(FULL, l_run, 1);
    l_run += __shfl_xor_sync(FULL, l_run, 2);
#pragma unroll
    for (int i = 0; i < NMT; i++) {
        mt[i] += __shfl_xor_sync(FULL, mt[i], 1);
        mt[i] += __shfl_xor_sync(FULL, mt[i], 2);
    }
    float mo[NMT]; /* SPLIT_V: the odd groups' minima sums, from lane g + 4 */
#pragma unroll
    for (int i = 0; i < NMT; i++)
        mo[i] = SPLIT_MT ? __shfl_xor_sync(FULL, mt[i], 16) : 0.0f;
    if constexpr (VLDSM) {
        /* lane (g, t): head g & 3, group 2c + (g >> 2) of n-tiles 8c + e;
         * its columns 2t, 2t + 1 are of that group where (g >> 2) == (t >> 1) */
        float mg[2]; /* the minima sums of the lane's groups 2c + (g >> 2) */
#pragma unroll
        for (int c2 = 0; c2 < 2; c2++) {
            if constexpr (MINMMA) {
                /* head h, group n: lane (h, n >> 1), mmn[n & 1] + mmn[2 + (n & 1)] */
                const float x0 = __shfl_sync(FULL, mmn[0] + mmn[2], 4 * (g & 3) + c2);
                const float x1 = __shfl_sync(FULL, mmn[1] + mmn[3], 4 * (g & 3) + c2);
                mg[c2] = (g >> 2 ? x1 : x0) * (VSUBN ? __int_as_float((127 - vF) << 23) : 1.0f);
            } else {
                mg[c2] = mt[c2];
            }
        }
        if constexpr (VT) {
            /* lane (g, t): rows g, g + 8 of tile 4 c2 + q are codes e = 2q,
             * 2q + 1 of word g (group X = 2c2 + (g >> 2)); column 2t + jj is
             * head 2 (t & 1) + jj of group 2c2 + (t >> 1): read where
             * (g >> 2) == (t >> 1). The minima sum of head h, group X sits
             * in lane (h, X >> 1) (mmn[X & 1] + mmn[2 + (X & 1)]). */
            float mh[2][2]; /* [c2][jj] */
#pragma unroll
            for (int c2 = 0; c2 < 2; c2++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++) {
                    const int src = 4 * (2 * (t & 1) + jj) + c2;
                    const float x0 = __shfl_sync(FULL, mmn[0] + mmn[2], src);
                    const float x1 = __shfl_sync(FULL, mmn[1] + mmn[3], src);
                    mh[c2][jj] = (g >> 2 ? x1 : x0) * __int_as_float((127 - vF) << 23);
                }
            if ((g >> 2) == (t >> 1)) {
#pragma unroll
                for (int m = 0; m < NO; m++)
#pragma unroll
                    for (int r8 = 0; r8 < 2; r8++)
#pragma unroll
                        for (int jj = 0; jj < 2; jj++) {
                            const int c2 = m >> 2, e = 2 * (m & 3) + r8, h = 2 * (t & 1) + jj;
                            const int ex = 24 - vF - vsub_pos(4, e);
                            const float x = o[m][2 * r8 + jj] * __int_as_float((127 + ex) << 23) + mh[c2][jj];
                            if (h < G)
                                red[warp][h][32 * (2 * c2 + (g >> 2)) + 4 * (2 * (g & 3) + (e >> 2)) + (e & 3)] = x;
                        }
            }
        } else if ((g & 3) < G && (g >> 2) == (t >> 1)) {
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++) {
                    const int col = 2 * t + jj, c2 = n >> 3, e = n & 7;
                    const int ex = VSUBN ? (vsub_sub(VQ_MMA_VSUBN, e) ? 24 : 0) - vF - vsub_pos(VQ_MMA_VSUBN, e) : -2 * (e & 3);
                    const float x = (o[n][jj] + o[n][2 + jj]) * __int_as_float((127 + ex) << 23) + mg[c2];
                    red[warp][g & 3][32 * (2 * c2 + (col >> 2)) + 8 * (col & 3) + 4 * (e >> 2) + (e & 3)] = x;
                }
        }
        if (live && t == 0) {
            wml[warp][g][0] = m_run;
            wml[warp][g][1] = l_run;
        }
    } else if (live) {
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int jj = 0; jj < 2; jj++) {
                const int col = 2 * t + jj;
                float x = (o[n][jj] + o[n][2 + jj]) * val_colscale<VM>(n, col) * (VSC ? __int_as_float((127 - vF) << 23) : 1.0f);
                if constexpr (SPLIT_MT)
                    x += (n / 4) & 1 ? mo[n / 8] : mt[n / 8];
                else if constexpr (KIVI_V)
                    x += mt[n / 4];
                red[warp][g][val_chan<VM>(n, col)] = x;
            }
        if (t == 0) {
            wml[warp][g][0] = m_run;
            wml[warp][g][1] = l_run;
        }
    }
    __syncthreads();
    if (p.cluster) /* (uniform) */
        combine_cluster<G, D, W>(p, red, wml, cw, tid);
    else
        combine_warps<G, D, W>(p, red, wml, part0, tid);
    TL(7);
}

/* the dynamic shared memory limit of this instantiation raised to what it
 * uses (once; idempotent: a race only repeats it) */
template <int D, int G, int KM, int VM, int SUB, int W, bool QI8 = false>
cudaError_t set_smem_attr()
{
    constexpr int smem = stage_smem_bytes<KM, VM, D, SUB, W>();
    static bool attr_set = false;
    if (smem > 0 && !attr_set) {
        cudaError_t e = cudaFuncSetAttribute(attn_mma<D, G, KM, VM, SUB, W, QI8>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess)
            return e;
        attr_set = true;
    }
    return cudaSuccess;
}

template <int D, int G, int KM, int VM, int SUB, int W>
int ctas_per_sm_sub()
{
    static int n = 0; /* once per instantiation */
    if (!n) {
        int r = 0;
        if (set_smem_attr<D, G, KM, VM, SUB, W>() != cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, attn_mma<D, G, KM, VM, SUB, W>, W * 32, stage_smem_bytes<KM, VM, D, SUB, W>()) != cudaSuccess ||
            r < 1)
            r = 3;
        n = r < VQ_MMA_MAX_CTAS ? r : VQ_MMA_MAX_CTAS;
    }
    return n;
}

/* the occupancy the split choice assumes: the smaller of the two
 * iteration shapes' (the launch picks one by page_tokens) */
template <int D, int G, int KM, int VM, int W = 4>
int ctas_per_sm()
{
    const int a = ctas_per_sm_sub<D, G, KM, VM, 1, W>();
    if constexpr (sub2_ok<KM, VM, D, W>()) {
        const int b = ctas_per_sm_sub<D, G, KM, VM, 2, W>();
        return b < a ? b : a;
    }
    return a;
}

template <int D, int G, int KM, int VM, int SUB, int W, bool QI8>
cudaError_t launch_mma_qi8(AttnParams &p, int batch, cudaStream_t s)
{
    constexpr int smem = stage_smem_bytes<KM, VM, D, SUB, W>();
    const cudaError_t e = set_smem_attr<D, G, KM, VM, SUB, W, QI8>();
    if (e != cudaSuccess)
        return e;
    dim3 grid(p.splits, p.n_kv, batch);
    if (p.cluster) {
        /* the chunks of a pair as one cluster (combine_cluster); where the
         * launch is refused (no cluster of this size fits), p.cluster = 0
         * and a plain launch: the caller then launches the reduce */
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(W * 32);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = p.cluster;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        if (cudaLaunchKernelEx(&cfg, attn_mma<D, G, KM, VM, SUB, W, QI8>, p) == cudaSuccess)
            return cudaSuccess;
        (void)cudaGetLastError(); /* the refusal, cleared */
        p.cluster = 0;
    }
    attn_mma<D, G, KM, VM, SUB, W, QI8><<<grid, W * 32, smem, s>>>(p);
    return cudaGetLastError();
}

/* q8_0 / q4_0 keys: the int8-query instantiation where the keys ask for it */
template <int D, int G, int KM, int VM, int SUB, int W>
cudaError_t launch_mma_sub(AttnParams &p, int batch, cudaStream_t s)
{
    if constexpr (KM == FMT_Q8 || KM == FMT_Q4)
        if (query_int8(p.kf))
            return launch_mma_qi8<D, G, KM, VM, SUB, W, true>(p, batch, s);
    return launch_mma_qi8<D, G, KM, VM, SUB, W, false>(p, batch, s);
}

template <int D, int G, int KM, int VM, int W>
cudaError_t launch_mma_w(AttnParams &p, int batch, cudaStream_t s)
{
    if constexpr (sub2_ok<KM, VM, D, W>()) {
        /* VQ_CUDA_NO_SUB2: 1 the 32-token iterations, -1 the 64-token ones
         * at any chunk length (the test checks both) */
        const char *e = getenv("VQ_CUDA_NO_SUB2");
        const int ns = e && *e ? atoi(e) : 0;
        if (p.page_tokens % (2 * WTOK) == 0 && p.chunk % (2 * WTOK) == 0 && ns != 1 &&
            (!sub2_big<KM, VM, D>() || p.chunk >= 32768 || ns == -1))
            return launch_mma_sub<D, G, KM, VM, 2, W>(p, batch, s);
    }
    return launch_mma_sub<D, G, KM, VM, 1, W>(p, batch, s);
}

/* p.warps (plan_warps in attention.cu) picks the instantiation: 4, 12
 * (wide_ok) or 16 (w16_ok) warps per CTA */
template <int D, int G, int KM, int VM>
cudaError_t launch_mma(AttnParams &p, int batch, cudaStream_t s)
{
    if constexpr (w16_ok<KM, VM, D, G>())
        if (p.warps == 16)
            return launch_mma_w<D, G, KM, VM, 16>(p, batch, s);
    if constexpr (wide_ok<KM, VM, D>())
        if (p.warps == 12)
            return launch_mma_w<D, G, KM, VM, 12>(p, batch, s);
    return launch_mma_w<D, G, KM, VM, 4>(p, batch, s);
}

/* instantiated at all: turboquant_rvq:bits=2 keys only by I8K */
template <int D, int G, int KM>
constexpr bool mma_shape_ok()
{
    return KM != FMT_RVQ2 || (VQ_MMA_I8K & 4);
}

#define VQ_MMA_PAIRS(X) \
    X(FMT_FP16, FMT_FP16) X(FMT_Q8, FMT_Q8) X(FMT_Q4, FMT_Q4) X(FMT_KIVI2, FMT_KIVI2) X(FMT_KIVI4, FMT_KIVI4) X(FMT_RVQ1, FMT_KIVI2) X(FMT_RABITQ1, FMT_KIVI2) X(FMT_RVQ2, FMT_KIVI2)

template <int D, int G>
bool launch_dg(AttnParams &p, int batch, cudaStream_t s, int km, int vm, cudaError_t *err)
{
#define VQ_TRY(K, V)                                   \
    if constexpr (mma_shape_ok<D, G, K>())             \
        if (km == K && vm == V) {                      \
            *err = launch_mma<D, G, K, V>(p, batch, s); \
            return true;                               \
        }
    VQ_MMA_PAIRS(VQ_TRY)
#undef VQ_TRY
    return false;
}

template <int D, int G>
int ctas_dg(int km, int vm)
{
#define VQ_OCC(K, V) \
    if constexpr (mma_shape_ok<D, G, K>())  \
        if (km == K && vm == V) return ctas_per_sm<D, G, K, V>();
    VQ_MMA_PAIRS(VQ_OCC)
#undef VQ_OCC
    return 3;
}

} // namespace

bool vq_mma_supported(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G, int page_tokens)
{
    if (page_tokens % WTOK || (D != 64 && D != 128) || (G != 1 && G != 2 && G != 4 && G != 8))
        return false;
    if (kf.rot && kf.method != VQ_CUDA_TQ_RVQ && kf.method != VQ_CUDA_RABITQ && kf.method != VQ_CUDA_Q8_0 &&
        kf.method != VQ_CUDA_Q4_0)
        return false;
    if (kf.method == VQ_CUDA_KIVI && (kf.role != VQ_ROLE_KEY || kf.group % WTOK))
        return false;
    /* kivi values: group 32 (D/32 groups per token; rows then 16- (D=128)
     * or 8-byte (D=64) aligned) */
    if (vf.method == VQ_CUDA_KIVI && (vf.role != VQ_ROLE_VALUE || vf.group != 32))
        return false;
    if (vf.rot && vf.method != VQ_CUDA_Q8_0 && vf.method != VQ_CUDA_Q4_0) /* (attn_reduce rotates back) */
        return false;
    const int km = fmt_code(kf), vm = fmt_code(vf);
    if (km == FMT_RVQ2 && !(VQ_MMA_I8K & 4))
        return false;
#define VQ_IS(K, V) if (km == K && vm == V) return true;
    VQ_MMA_PAIRS(VQ_IS)
#undef VQ_IS
    return false;
}

int vq_mma_ctas_per_sm(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G)
{
    const int km = fmt_code(kf), vm = fmt_code(vf);
#define VQ_DG(DD, GG) \
    if (D == DD && G == GG) return ctas_dg<DD, GG>(km, vm);
#ifdef VQ_MMA_QUICK
    VQ_DG(128, 4)
#else
    VQ_DG(64, 1) VQ_DG(64, 2) VQ_DG(64, 4) VQ_DG(64, 8)
    VQ_DG(128, 1) VQ_DG(128, 2) VQ_DG(128, 4) VQ_DG(128, 8)
#endif
#undef VQ_DG
    return 3;
}

template <int D, int G>
int wide_ctas_dg(int km, int vm)
{
#define VQ_OCCW(K, V)                                         \
    if constexpr (mma_shape_ok<D, G, K>() && wide_ok<K, V, D>()) \
        if (km == K && vm == V) return ctas_per_sm<D, G, K, V, 12>();
    VQ_MMA_PAIRS(VQ_OCCW)
#undef VQ_OCCW
    return 0;
}

template <int D, int G>
int w16_ctas_dg(int km, int vm)
{
#define VQ_OCC16(K, V)                                          \
    if constexpr (mma_shape_ok<D, G, K>() && w16_ok<K, V, D, G>()) \
        if (km == K && vm == V) return ctas_per_sm<D, G, K, V, 16>();
    VQ_MMA_PAIRS(VQ_OCC16)
#undef VQ_OCC16
    return 0;
}

int vq_mma_wide_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G)
{
    const int km = fmt_code(kf), vm = fmt_code(vf);
#define VQ_DG(DD, GG) \
    if (D == DD && G == GG) return wide_ctas_dg<DD, GG>(km, vm);
#ifdef VQ_MMA_QUICK
    VQ_DG(128, 4)
#else
    VQ_DG(64, 1) VQ_DG(64, 2) VQ_DG(64, 4) VQ_DG(64, 8)
    VQ_DG(128, 1) VQ_DG(128, 2) VQ_DG(128, 4) VQ_DG(128, 8)
#endif
#undef VQ_DG
    return 0;
}

int vq_mma_w16_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G)
{
    const int km = fmt_code(kf), vm = fmt_code(vf);
#define VQ_DG(DD, GG) \
    if (D == DD && G == GG) return w16_ctas_dg<DD, GG>(km, vm);
#ifdef VQ_MMA_QUICK
    VQ_DG(128, 4)
#else
    VQ_DG(64, 1) VQ_DG(64, 2) VQ_DG(64, 4)
    VQ_DG(128, 1) VQ_DG(128, 2) VQ_DG(128, 4)
#endif
#undef VQ_DG
    return 0;
}

int vq_mma_plan_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G, int pairs, int sms)
{
    const int occ = vq_mma_ctas_per_sm(kf, vf, D, G);
    const int km = fmt_code(kf), vm = fmt_code(vf);
    const bool few = 4 * pairs < sms;
    if (D == 64) /* fp16 at small batch: one fewer than the occupancy (4) */
        return km == FMT_FP16 && few && occ > 3 ? 3 : occ;
    if (D != 128 || occ <= 2)
        return occ;
    bool stg_v = false; /* keys and values staged (all D = 128 pairs but fp16 and q8_0 values) */
#define VQ_SV(K, V) \
    if (km == K && vm == V) stg_v = staged_v<K, V, 128>();
    VQ_MMA_PAIRS(VQ_SV)
#undef VQ_SV
    return km == FMT_FP16 || (stg_v && few) ? 2 : occ;
}

bool vq_mma_launch(AttnParams &p, int D, int G, int batch, cudaStream_t s, cudaError_t *err)
{
    if (!vq_mma_supported(p.kf, p.vf, D, G, p.page_tokens))
        return false;
    const int km = fmt_code(p.kf), vm = fmt_code(p.vf);
#define VQ_DG(DD, GG) \
    if (D == DD && G == GG) return launch_dg<DD, GG>(p, batch, s, km, vm, err);
#ifdef VQ_MMA_QUICK /* a fast compile for checking the code: one shape */
    VQ_DG(128, 4)
#else
    VQ_DG(64, 1) VQ_DG(64, 2) VQ_DG(64, 4) VQ_DG(64, 8)
    VQ_DG(128, 1) VQ_DG(128, 2) VQ_DG(128, 4) VQ_DG(128, 8)
#endif
#undef VQ_DG
    return false;
}
