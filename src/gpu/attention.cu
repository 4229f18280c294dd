/* attention.cu -- paged split-K decode attention over packed caches
 * (veloxquant_cuda.h has the contract).
 *
 * Launch 1 (attn_split): one CTA of 8 warps per (context chunk, KV head,
 * sequence). It reads its KV head's pages once for all G = n_q/n_kv query
 * heads: the G queries (rotated by the key codec's R and multiplied by
 * scale*log2(e)) sit in registers, each token is read by D/8 lanes (8 values
 * each, formats.cuh), the partial dots are summed across those lanes by
 * shuffles. Tokens go in tiles of 128: scores of a tile in shared memory,
 * an online softmax (running max m, sum l, in base 2) per query head, then
 * the tile's values are accumulated with the weights. The CTA writes its
 * partial (m, l, acc[D]) per query head.
 * Launch 2 (attn_reduce): per (sequence, query head), combine the chunks'
 * partials, divide by the total weight and map the accumulator back to
 * channels (R^T when the value codec is rotated).
 * Arithmetic is float32 throughout; the packed bytes are read as they are. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats.cuh"
#include "rotation.cuh"

using namespace vqg;

#include "attn_common.cuh"

/* ---- errors ---------------------------------------------------------------- */

static thread_local char g_err[256];

extern "C" vq_status vq_cuda_fail(vq_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return st;
}

extern "C" const char *vq_cuda_last_error(void) { return g_err; }

static vq_status cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return VQ_OK;
    return vq_cuda_fail(e == cudaErrorMemoryAllocation ? VQ_ERR_NOMEM : VQ_ERR_STATE, "cuda: %s: %s (%s)", what,
                        cudaGetErrorString(e), cudaGetErrorName(e));
}

/* ---- split kernel ---------------------------------------------------------- */

/* One warp's pass over its warp-tiles of WT = STEPS * TPW consecutive tokens
 * (warp-tiles are dealt round-robin to the CTA's warps). Everything stays in
 * registers: scores, the online softmax state (m, l per query head, equal in
 * all lanes) and the accumulator (8 channels x G heads per lane). */
template <int D, int G, int KM, int VM>
__global__ void __launch_bounds__(NW * 32) attn_split(const __grid_constant__ AttnParams p)
{
    /* KM/VM: formats.cuh codes, or FMT_ANY (read at run time; slower: the
     * loads of a warp-tile cannot be issued together across the branches).
     * With both known, the host guarantees page_tokens % WT == 0, so a
     * warp-tile lies in one page and its page is looked up once. */
    constexpr bool FAST = KM != FMT_ANY && VM != FMT_ANY;
    constexpr bool KIVI_K = FAST && (KM == FMT_KIVI2 || KM == FMT_KIVI4); /* (keys role: host-checked) */
    constexpr bool KIVI_V = FAST && (VM == FMT_KIVI2 || VM == FMT_KIVI4);
    constexpr int LPT = D / 8;     /* lanes per token */
    constexpr int TPW = 32 / LPT;  /* tokens per warp step */
    constexpr int WT = STEPS * TPW;
    __shared__ __align__(16) float qs[G][D];
    __shared__ float ktabs[2][16], vtabs[2][16];
    __shared__ float red[NW][G][D];
    __shared__ float wml[NW][G][2];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const CtaWork cw = cta_work<G>(p);
    if (empty_chunk<G>(p, cw, tid))
        return;
    load_query<G, D>(p, cw, qs, tid);
    const int j = lane % LPT, tg = lane / LPT;
    const int kvh = cw.kvh, b = cw.b, s0 = cw.s0, s1 = cw.s1;
    const size_t part0 = cw.part0;
    if (tid < 16) {
        ktabs[0][tid] = p.kf.c1[tid];
        ktabs[1][tid] = p.kf.c2[tid];
        vtabs[0][tid] = p.vf.c1[tid];
        vtabs[1][tid] = p.vf.c2[tid];
    }
    __syncthreads();
    if (p.kf.rot)
        rot_forward_smem<D, G>(&qs[0][0], p.kf.sign, tid, NW * 32);
    __syncthreads();
    /* q8_0 / q4_0 keys of qbits=8 (uniform): the CPU codec's int8 query */
    if ((KM == FMT_ANY || KM == FMT_Q8 || KM == FMT_Q4) && query_int8(p.kf)) {
        for (int r = warp; r < G; r += NW)
            round_query_row<D>(&qs[r][0], lane, 1.0f);
        __syncthreads();
    }
    float qr[G][8];
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int e = 0; e < 8; e++)
            qr[g][e] = qs[g][chan(p.kf, j, e)] * p.qscale;

    float acc[G][8], accm[G], m_run[G], l_run[G];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m_run[g] = -INFINITY;
        l_run[g] = 0.0f;
        accm[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[g][e] = 0.0f;
    }
    const int32_t *pt = p.page_table + ((size_t)b * p.n_kv + kvh) * p.max_pages;
    const int P = p.page_tokens;

    for (int t0 = s0 + warp * WT; t0 < s1; t0 += NW * WT) {
        float sc[STEPS][G];
        const int32_t pg0 = FAST ? pt[t0 / P] : 0;
        const int in0 = FAST ? t0 % P : 0;
        bool done = false;
        if constexpr (KIVI_K) {
            /* KIVI keys, warp-tile inside one block of `group` tokens: the
             * block's per-channel scales fold into the query once per tile
             * (kivi.c's score: base + sum_c q_c s_c code_c) */
            if (p.kf.group % WT == 0) {
                constexpr int KB = KM & 15;
                const int lg = __ffs(p.kf.group) - 1;
                const uint8_t *blk = p.kp + (size_t)pg0 * p.kpb + (size_t)(in0 >> lg) * p.kf.block_bytes;
                const int tt0 = in0 & (p.kf.group - 1);
                const uint4 sw = *(const uint4 *)(blk + 16 * j), mw = *(const uint4 *)(blk + 2 * D + 16 * j);
                const __half2 *sh = (const __half2 *)&sw, *mh = (const __half2 *)&mw;
                float qk[G][8], base[G];
#pragma unroll
                for (int g = 0; g < G; g++)
                    base[g] = 0.0f;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float2 sv = __half22float2(sh[i]), mv = __half22float2(mh[i]);
#pragma unroll
                    for (int g = 0; g < G; g++) {
                        qk[g][2 * i] = qr[g][2 * i] * sv.x;
                        qk[g][2 * i + 1] = qr[g][2 * i + 1] * sv.y;
                        base[g] = fmaf(qr[g][2 * i], mv.x, base[g]);
                        base[g] = fmaf(qr[g][2 * i + 1], mv.y, base[g]);
                    }
                }
                const uint8_t *rows = blk + 4 * D + (size_t)tt0 * (KB * D / 8) + KB * j;
#pragma unroll
                for (int st = 0; st < STEPS; st++) {
                    const int tok = min(t0 + st * TPW + tg, s1 - 1);
                    const uint8_t *row = rows + (size_t)(tok - t0) * (KB * D / 8);
                    const uint32_t c = KB == 2 ? (uint32_t)ld16(row) : ld32a2(row);
                    float x[8];
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        x[e] = u2f((c >> (e * KB)) & ((1u << KB) - 1));
#pragma unroll
                    for (int g = 0; g < G; g++) {
                        float d = base[g];
#pragma unroll
                        for (int e = 0; e < 8; e++)
                            d = fmaf(qk[g][e], x[e], d);
                        sc[st][g] = d;
                    }
                }
                done = true;
            }
        }
        if (!done) {
#pragma unroll
            for (int st = 0; st < STEPS; st++) {
                const int tok = min(t0 + st * TPW + tg, s1 - 1); /* clamped: loads stay in bounds */
                float v[8];
                if (FAST)
                    load8m<KM>(p.kf, p.kp + (size_t)pg0 * p.kpb, in0 + (tok - t0), j, ktabs[0], ktabs[1], v);
                else
                    load8m<KM>(p.kf, p.kp + (size_t)pt[tok / P] * p.kpb, tok % P, j, ktabs[0], ktabs[1], v);
#pragma unroll
                for (int g = 0; g < G; g++) {
                    float d = 0.0f;
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        d = fmaf(qr[g][e], v[e], d);
                    sc[st][g] = d;
                }
            }
        }
        /* sum over the LPT lanes of each token */
#pragma unroll
        for (int off = LPT / 2; off > 0; off >>= 1)
#pragma unroll
            for (int st = 0; st < STEPS; st++)
#pragma unroll
                for (int g = 0; g < G; g++)
                    sc[st][g] += __shfl_xor_sync(0xffffffffu, sc[st][g], off);
        /* online softmax over the warp-tile */
#pragma unroll
        for (int g = 0; g < G; g++) {
            float mx = -INFINITY;
#pragma unroll
            for (int st = 0; st < STEPS; st++) {
                if (t0 + st * TPW + tg >= s1)
                    sc[st][g] = -INFINITY;
                mx = fmaxf(mx, sc[st][g]);
            }
#pragma unroll
            for (int off = LPT; off < 32; off <<= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float m_new = fmaxf(m_run[g], mx);
            const float alpha = exp2f(m_run[g] - m_new);
            float sum = 0.0f;
#pragma unroll
            for (int st = 0; st < STEPS; st++) {
                sc[st][g] = exp2f(sc[st][g] - m_new);
                sum += sc[st][g];
            }
#pragma unroll
            for (int off = LPT; off < 32; off <<= 1)
                sum += __shfl_xor_sync(0xffffffffu, sum, off);
            l_run[g] = l_run[g] * alpha + sum;
            m_run[g] = m_new;
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[g][e] *= alpha;
            accm[g] *= alpha;
        }
        /* values */
#pragma unroll
        for (int st = 0; st < STEPS; st++) {
            /* clamped like the keys: a token past the end has weight 0 and
             * reads the (finite) last token's values */
            const int tok = min(t0 + st * TPW + tg, s1 - 1);
            if constexpr (KIVI_V) {
                /* KIVI values: the token's group scale folds into the weight,
                 * the group min into one sum per head */
                constexpr int VB = VM & 15;
                const int lg = __ffs(p.vf.group) - 1, ng = D >> lg, gi = (8 * j) >> lg;
                const uint8_t *row = p.vp + (size_t)pg0 * p.vpb + (size_t)(in0 + (tok - t0)) * p.vf.block_bytes;
                const float sv = h2f(ld16(row + 2 * gi)), mv = h2f(ld16(row + 2 * ng + 2 * gi));
                const uint8_t *cr = row + 4 * ng + VB * j;
                const uint32_t c = VB == 2 ? (uint32_t)ld16(cr) : ld32a2(cr);
                float x[8];
#pragma unroll
                for (int e = 0; e < 8; e++)
                    x[e] = u2f((c >> (e * VB)) & ((1u << VB) - 1));
#pragma unroll
                for (int g = 0; g < G; g++) {
                    const float ws = sc[st][g] * sv;
                    accm[g] = fmaf(sc[st][g], mv, accm[g]);
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        acc[g][e] = fmaf(ws, x[e], acc[g][e]);
                }
            } else {
                float v[8];
                if (FAST)
                    load8m<VM>(p.vf, p.vp + (size_t)pg0 * p.vpb, in0 + (tok - t0), j, vtabs[0], vtabs[1], v);
                else
                    load8m<VM>(p.vf, p.vp + (size_t)pt[tok / P] * p.vpb, tok % P, j, vtabs[0], vtabs[1], v);
#pragma unroll
                for (int g = 0; g < G; g++)
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        acc[g][e] = fmaf(sc[st][g], v[e], acc[g][e]);
            }
        }
    }
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[g][e] += accm[g];

    /* the TPW token lanes of a warp share m: plain sums */
#pragma unroll
    for (int off = LPT; off < 32; off <<= 1)
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], off);
    if (tg == 0) {
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int e = 0; e < 8; e++)
                red[warp][g][chan(p.vf, j, e)] = acc[g][e];
    }
    if (lane < G) {
        float mv = m_run[0], lv = l_run[0];
#pragma unroll
        for (int g = 1; g < G; g++) {
            mv = lane == g ? m_run[g] : mv;
            lv = lane == g ? l_run[g] : lv;
        }
        wml[warp][lane][0] = mv;
        wml[warp][lane][1] = lv;
    }
    __syncthreads();
    combine_warps<G, D>(p, red, wml, part0, tid);
}

#include "timeline.cuh"
#ifdef VQ_TIMELINE
VQ_TL_DEFINE(vq_tl_red, vq_timeline_read_red)
#define TLR(s) VQ_TL_STAMP0(vq_tl_red, s)
#else
#define TLR(s) ((void)0)
#endif

/* ---- reduce kernel --------------------------------------------------------- */

#ifndef VQ_RED_FAST /* 1: up to 32 splits reduced in one pass of loads, more with a warp-shuffle maximum (0: the tiled path with a shared-memory tree always, for comparisons) */
#define VQ_RED_FAST 1
#endif

/* One CTA of D threads per (query head, sequence). Up to RS = 32 splits
 * (every shape of the benchmark but batch 1 at D = 64 and some CUDA-core
 * plans; VQ_RED_FAST) each thread loads every chunk's (m, l) and its
 * channel's values at once and combines them in registers: one memory
 * latency after the split grid (the tiled path below has three in a row
 * plus a barrier tree). More splits: the chunks' weights
 * exp2(m_s - M) are computed in parallel, RT splits at a time, into shared
 * memory; each thread then sums its channel over the chunks with
 * independent loads (unrolled), so the time does not grow with the split
 * count times the memory latency. Both paths add the same terms in the
 * same order (the same results). */
template <int D>
__global__ void __launch_bounds__(D) attn_reduce(const __grid_constant__ AttnParams p)
{
    constexpr int RT = 256; /* splits per tile */
    __shared__ float o[D];
    __shared__ float wt[RT], red[D];
    const int h = blockIdx.x, b = blockIdx.y, c = threadIdx.x;
    const size_t row = (size_t)b * p.n_q + h;
    TLR(0);
    /* launched as a programmatic dependent launch (launch_reduce): wait for
     * the split kernel's grid to finish and its writes to be visible (a
     * no-op in a plain launch) */
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    TLR(1);
    const float *ml = p.part_ml + 2 * row * p.splits;
    const float *pa = p.part_acc + row * p.splits * D;
    const int ns = p.splits;
#if VQ_RED_FAST
    constexpr int RS = 32; /* at most this many splits take the one-pass path */
    if (ns <= RS) {
        /* few chunks: every load at once (the chunks' (m, l), the same
         * for all threads, and the channel's values), one memory latency
         * instead of three; the same sums in the same order as below */
        float m[RS], l[RS], x[RS];
#pragma unroll
        for (int s = 0; s < RS; s++)
            if (s < ns) {
                m[s] = ml[2 * s];
                l[s] = ml[2 * s + 1];
                x[s] = pa[(size_t)s * D + c];
            }
        float M = -INFINITY;
#pragma unroll
        for (int s = 0; s < RS; s++)
            if (s < ns)
                M = fmaxf(M, m[s]);
        float L = 0.0f, a = 0.0f;
#pragma unroll
        for (int s = 0; s < RS; s++)
            if (s < ns && M != -INFINITY) {
                const float w = m[s] == -INFINITY ? 0.0f : exp2f(m[s] - M); /* empty chunk: l, x never written */
                L += w != 0.0f ? l[s] * w : 0.0f;
                a += w != 0.0f ? x[s] * w : 0.0f;
            }
        const float v = L > 0.0f ? a / L : 0.0f;
        if (!p.vf.rot) { /* (uniform) */
            p.out[row * D + c] = v;
            TLR(2);
            return;
        }
        o[c] = v;
        __syncthreads();
        rot_inverse_smem<D, 1>(o, p.vf.sign, c, D);
        __syncthreads();
        p.out[row * D + c] = o[c];
        return;
    }
#endif
    float M = -INFINITY;
    for (int s = c; s < ns; s += D)
        M = fmaxf(M, ml[2 * s]);
#if VQ_RED_FAST
    /* the maximum over the warp by shuffles, then over the D / 32 warps */
#pragma unroll
    for (int k = 16; k > 0; k >>= 1)
        M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, k));
    if ((c & 31) == 0)
        red[c >> 5] = M;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < D / 32; w++)
        M = fmaxf(M, red[w]);
#else
    red[c] = M;
    __syncthreads();
    for (int k = D / 2; k > 0; k >>= 1) {
        if (c < k)
            red[c] = fmaxf(red[c], red[c + k]);
        __syncthreads();
    }
    M = red[0];
#endif
    float L = 0.0f, a = 0.0f;
    if (M != -INFINITY)
        for (int s0 = 0; s0 < ns; s0 += RT) {
            const int n = min(RT, ns - s0);
            __syncthreads(); /* the previous tile's weights are used up */
            for (int i = c; i < n; i += D) {
                const float m = ml[2 * (s0 + i)];
                wt[i] = m == -INFINITY ? 0.0f : exp2f(m - M); /* empty chunk: acc never written */
            }
            __syncthreads();
#pragma unroll 16
            for (int i = 0; i < n; i++) {
                /* loads always (they stay inside the workspace), a select
                 * drops an empty chunk's unwritten values */
                const float w = wt[i], l = ml[2 * (s0 + i) + 1], x = pa[(size_t)(s0 + i) * D + c];
                L += w != 0.0f ? l * w : 0.0f;
                a += w != 0.0f ? x * w : 0.0f;
            }
        }
    o[c] = L > 0.0f ? a / L : 0.0f;
    __syncthreads();
    if (p.vf.rot)
        rot_inverse_smem<D, 1>(o, p.vf.sign, c, D);
    __syncthreads();
    p.out[row * D + c] = o[c];
}

/* ---- host ------------------------------------------------------------------ */

static int sm_count(void)
{
    static int n = 0;
    if (!n) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            n = 132;
    }
    return n;
}

static int choose_splits(const vq_cuda_attn_args *a)
{
    if (a->splits > 0)
        return a->splits;
    int pairs = a->batch * a->n_kv_heads;
    int tiles = (a->max_seq_len + CHUNK_MIN - 1) / CHUNK_MIN;
    int want = (8 * sm_count() + pairs - 1) / pairs; /* about eight CTAs per SM */
    if (want < 1)
        want = 1;
    if (want > tiles)
        want = tiles;
    return want < 1 ? 1 : want;
}

/* Splits for the tensor-core kernel (ctas resident CTAs of 4 warps per SM
 * planned for: vq_mma_plan_ctas, at most the kernel's occupancy): the fewest that fill the
 * resident CTA slots to >= 90% in whole waves (a partial last wave costs a
 * whole wave's time), chunks of >= 256 tokens. */
static int choose_splits_mma(const vq_cuda_attn_args *a, int ctas)
{
    if (a->splits > 0)
        return a->splits;
    /* (called on every launch, for each occupancy by the workspace size:
     * the waves are counted up as s grows and the 90% test is done in
     * integers, 10 n >= 9 w slots, which is (double)n / (w slots) >= 0.9
     * exactly; no division on the path that returns) */
    const long pairs = (long)a->batch * a->n_kv_heads, slots = (long)ctas * sm_count();
    const int max_s = a->max_seq_len / 256 > 1 ? a->max_seq_len / 256 : 1;
    int best = 1;
    double best_eff = 0.0;
    long n = 0, waves = 0; /* CTAs and waves at s splits */
    for (int s = 1; s <= max_s && s <= 1024; s++) {
        n += pairs;
        while (n > waves * slots)
            waves++;
        if (10 * n >= 9 * waves * slots)
            return s;
        const double eff = (double)n / ((double)waves * slots);
        if (eff > best_eff + 1e-9) {
            best_eff = eff;
            best = s;
        }
    }
    return best;
}

/* Splits for the vecinfer kernel (ctas resident CTAs per SM:
 * vq_vecinfer_ctas): as the tensor-core kernel's, the fewest that fill the
 * resident CTA slots to >= 90% in whole waves, chunks of >= 256 tokens.
 * Each CTA first builds its key tables (and copies the value codebook),
 * so fewer, longer chunks pay that less often (Round gpu13 in
 * docs/gpu.md). ctas <= VQ_MMA_MAX_CTAS: the workspace size covers it. */
static int choose_splits_vecinfer(const vq_cuda_attn_args *a, int ctas)
{
    return choose_splits_mma(a, ctas);
}

static int chunk_of(const vq_cuda_attn_args *a, int splits)
{
    int per = (a->max_seq_len + splits - 1) / splits;
    per = (per + CHUNK_MIN - 1) / CHUNK_MIN * CHUNK_MIN;
    return per;
}

/* Warps per CTA of the tensor-core kernel, and the CTAs per SM its split
 * count plans for (*ctas): 12 warps, one CTA per SM, where the pair has
 * that instantiation (vq_mma_wide_ctas: keys and values staged; D = 128,
 * and D = 64 since Round gpu26)
 * and each of its warps gets a 64-token tile of the chunk (chunk >= 768
 * tokens), unless the (sequence, KV head) pairs alone fill the SMs and
 * the chunks are short (< 6144 tokens); else 4 warps and
 * vq_mma_plan_ctas. Fewer, longer chunks with the same 12 warps per SM
 * (8 at batch 1 before): each CTA's setup, its partials and the reduce
 * are paid a third as often. Measured on the H200 (Round gpu12 in
 * docs/gpu.md): 1-10% faster at batch 1 and 8 from 4k x 8, within +-2%
 * at 16k / 64k x 32, 1-2% slower for some pairs at 4k x 32 (which keeps
 * 4 warps). Where 12 warps are taken and the pair has the 16-warp
 * instantiation (vq_mma_w16_ctas, also one CTA per SM: the same splits),
 * chunks of >= 8192 tokens take 16 (Round gpu21: 1-5% faster from 64k x 8,
 * 0-8% slower at 4k x 8 and 16k x 1, whose chunks are 2048 and 1024).
 * VQ_CUDA_MMA_WIDE=0 / 1 / 2 in the environment: never wide / always 12
 * warps where instantiated / always 16 where instantiated, else 12
 * (comparisons, the test). */
static int plan_warps(const vq_cuda_format *kf, const vq_cuda_format *vf, const vq_cuda_attn_args *a, int D, int G,
                      int *ctas)
{
    const int pairs = a->batch * a->n_kv_heads;
    *ctas = vq_mma_plan_ctas(*kf, *vf, D, G, pairs, sm_count());
    const int wc = vq_mma_wide_ctas(*kf, *vf, D, G);
    const char *e = getenv("VQ_CUDA_MMA_WIDE");
    const int force = e && *e ? atoi(e) : -1;
    if (wc < 1 || force == 0)
        return 4;
    const int chunk = chunk_of(a, choose_splits_mma(a, wc));
    if (force < 1 && (chunk < 12 * 64 || (pairs >= sm_count() && chunk < 6144)))
        return 4;
    const int wc16 = vq_mma_w16_ctas(*kf, *vf, D, G);
    if (wc16 >= 1 && (force == 2 || (force < 1 && chunk >= 8192))) {
        *ctas = wc16;
        return 16;
    }
    *ctas = wc;
    return 12;
}

extern "C" size_t vq_cuda_attention_workspace(const vq_cuda_attn_args *a)
{
    if (!a || a->batch < 1 || a->n_q_heads < 1 || a->head_dim < 1)
        return 0;
    int s = choose_splits(a);
    for (int c = 1; c <= VQ_MMA_MAX_CTAS; c++) { /* either kernel may run, at any occupancy */
        const int sm = choose_splits_mma(a, c);
        s = sm > s ? sm : s;
    }
    size_t rows = (size_t)a->batch * a->n_q_heads * s;
    return rows * ((size_t)a->head_dim + 2) * sizeof(float);
}

extern "C" size_t vq_cuda_page_bytes(const vq_cuda_format *f, int page_tokens)
{
    if (!f || f->block_tokens < 1 || page_tokens % f->block_tokens)
        return 0;
    size_t b = (size_t)page_tokens / f->block_tokens * f->block_bytes;
    return (b + 15) / 16 * 16;
}

static vq_status check_format(const vq_cuda_format *f, int D, const char *which)
{
    if (f->head_dim != D)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: %s format head_dim %d != %d", which, f->head_dim, D);
    if (f->method < VQ_CUDA_FP16 || f->method > VQ_CUDA_VECINFER)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: %s format: unknown method %d", which, f->method);
    if (f->method == VQ_CUDA_KIVI && f->role == VQ_ROLE_VALUE && D % f->group)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: %s format: kivi group %d does not divide %d", which, f->group, D);
    if ((f->qbits != 0 && f->qbits != 8) || (f->qbits && f->method != VQ_CUDA_Q8_0 && f->method != VQ_CUDA_Q4_0))
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: %s format: qbits %d (0, or 8 for q8_0 / q4_0)", which, f->qbits);
    return VQ_OK;
}

/* The reduce launch goes out as a programmatic dependent launch: the
 * GPU may set it up while the split kernel still runs (attn_reduce waits
 * for the split kernel's completion and memory with griddepcontrol.wait
 * before it reads anything). VQ_CUDA_NO_PDL=1 in the environment launches
 * it plainly (for comparisons). */
static bool no_pdl(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("VQ_CUDA_NO_PDL");
        v = e && *e && *e != '0';
    }
    return v;
}

template <int D>
static cudaError_t launch_reduce(const AttnParams &p, int batch, cudaStream_t s)
{
    if (no_pdl()) {
        attn_reduce<D><<<dim3(p.n_q, batch), D, 0, s>>>(p);
        return cudaGetLastError();
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p.n_q, batch);
    cfg.blockDim = dim3(D);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, attn_reduce<D>, p);
}

static bool no_cluster(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("VQ_CUDA_NO_CLUSTER");
        v = e && *e && *e != '0';
    }
    return v;
}

static bool no_mma(void)
{
    const char *e = getenv("VQ_CUDA_NO_MMA");
    return e && *e && *e != '0';
}

template <int D, int G, int KM, int VM>
static cudaError_t launch(const AttnParams &p, int batch, cudaStream_t s)
{
    dim3 grid(p.splits, p.n_kv, batch);
    attn_split<D, G, KM, VM><<<grid, NW * 32, 0, s>>>(p);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    return launch_reduce<D>(p, batch, s);
}

/* specialised (key, value) format pairs; every other pair runs FMT_ANY */
#define VQ_PAIRS(X)                                                                  \
    X(FMT_FP16, FMT_FP16) X(FMT_Q8, FMT_Q8) X(FMT_Q4, FMT_Q4) X(FMT_KIVI4, FMT_KIVI4) \
    X(FMT_KIVI2, FMT_KIVI2) X(FMT_RVQ2, FMT_KIVI2) X(FMT_RVQ1, FMT_KIVI2)            \
    X(FMT_RABITQ1, FMT_KIVI2)

template <int D, int G>
static cudaError_t launch_dg(const AttnParams &p, int batch, cudaStream_t s, int km, int vm)
{
#define VQ_TRY_PAIR(K, V) \
    if (km == K && vm == V) \
        return launch<D, G, K, V>(p, batch, s);
    VQ_PAIRS(VQ_TRY_PAIR)
#undef VQ_TRY_PAIR
    return launch<D, G, FMT_ANY, FMT_ANY>(p, batch, s);
}

extern "C" const char *vq_cuda_attention_kernel(const vq_cuda_format *kf, const vq_cuda_format *vf,
                                                const vq_cuda_attn_args *a)
{
    if (!kf || !vf || !a || a->n_kv_heads < 1)
        return "none";
    if (kf->method == VQ_CUDA_VECINFER || vf->method == VQ_CUDA_VECINFER)
        return "vecinfer";
    const bool odd_role = (kf->method == VQ_CUDA_KIVI && kf->role != VQ_ROLE_KEY) ||
                          (vf->method == VQ_CUDA_KIVI && vf->role != VQ_ROLE_VALUE);
    if (!odd_role && !no_mma() &&
        vq_mma_supported(*kf, *vf, a->head_dim, a->n_q_heads / a->n_kv_heads, a->page_tokens))
        return "mma";
    const int wt = STEPS * 256 / (a->head_dim > 0 ? a->head_dim : 128);
    const int km = fmt_code(*kf), vm = fmt_code(*vf);
    bool known = false;
#define VQ_IS_PAIR(K, V) known = known || (km == K && vm == V);
    VQ_PAIRS(VQ_IS_PAIR)
#undef VQ_IS_PAIR
    return a->page_tokens % wt || odd_role || !known ? "simt-generic" : "simt";
}

extern "C" vq_status vq_cuda_decode_attention(const vq_cuda_format *kf, const vq_cuda_format *vf,
                                              const vq_cuda_attn_args *a, void *ws, size_t ws_bytes,
                                              cudaStream_t stream)
{
    if (!kf || !vf || !a || !a->page_table || !a->seq_lens || !a->k_pages || !a->v_pages || !a->q || !a->out)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: NULL argument");
    const int D = a->head_dim;
    if (D != 64 && D != 128)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: decode_attention: head_dim %d unsupported (64 or 128)", D);
    if (a->batch < 1 || a->n_kv_heads < 1 || a->n_q_heads % a->n_kv_heads)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: bad shape (batch %d, %d q heads, %d kv heads)",
                            a->batch, a->n_q_heads, a->n_kv_heads);
    const int G = a->n_q_heads / a->n_kv_heads;
    if (G != 1 && G != 2 && G != 4 && G != 8)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: decode_attention: %d query heads per KV head (1, 2, 4 or 8)", G);
    vq_status fst = check_format(kf, D, "key");
    if (fst == VQ_OK)
        fst = check_format(vf, D, "value");
    if (fst != VQ_OK)
        return fst;
    if (a->max_seq_len < 0 || a->page_tokens < 1 || a->max_pages < 1 ||
        (size_t)a->max_pages * a->page_tokens < (size_t)a->max_seq_len)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: max_seq_len %d exceeds %d pages of %d tokens",
                            a->max_seq_len, a->max_pages, a->page_tokens);
    if (a->page_tokens % kf->block_tokens || a->page_tokens % vf->block_tokens)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: page_tokens %d not a multiple of the block tokens",
                            a->page_tokens);
    if (a->k_page_bytes < vq_cuda_page_bytes(kf, a->page_tokens) || a->k_page_bytes % 16 ||
        a->v_page_bytes < vq_cuda_page_bytes(vf, a->page_tokens) || a->v_page_bytes % 16)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: page bytes too small or not multiples of 16");
    if (((uintptr_t)a->k_pages | (uintptr_t)a->v_pages) % 16)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: page pools must be 16-byte aligned");
    size_t need = vq_cuda_attention_workspace(a);
    if (!ws || ws_bytes < need)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: workspace of %zu bytes needed", need);

    AttnParams p;
    p.cluster = 0;
    p.kf = *kf;
    p.vf = *vf;
    p.n_q = a->n_q_heads;
    p.n_kv = a->n_kv_heads;
    p.page_tokens = a->page_tokens;
    p.max_pages = a->max_pages;
    /* the tensor-core kernel where it has the pair (attention_mma.cu);
     * VQ_CUDA_NO_MMA=1 in the environment forces the CUDA-core kernels (the
     * test runs both) */
    const bool odd_role = (kf->method == VQ_CUDA_KIVI && kf->role != VQ_ROLE_KEY) ||
                          (vf->method == VQ_CUDA_KIVI && vf->role != VQ_ROLE_VALUE);
    const bool mma = !odd_role && !no_mma() && vq_mma_supported(*kf, *vf, D, G, a->page_tokens);
    const bool vecinfer = kf->method == VQ_CUDA_VECINFER || vf->method == VQ_CUDA_VECINFER;
    if (vecinfer) {
        const vq_status vst = vq_vecinfer_check(*kf, *vf, G);
        if (vst != VQ_OK)
            return vst;
    }
    int ctas = 0;
    p.warps = mma ? plan_warps(kf, vf, a, D, G, &ctas) : NW;
    if (vecinfer)
        ctas = vq_vecinfer_ctas(*kf, *vf, D, G);
    p.splits = mma ? choose_splits_mma(a, ctas) : vecinfer ? choose_splits_vecinfer(a, ctas) : choose_splits(a);
    p.chunk = chunk_of(a, p.splits);
    p.page_table = a->page_table;
    p.seq_lens = a->seq_lens;
    p.kp = (const uint8_t *)a->k_pages;
    p.vp = (const uint8_t *)a->v_pages;
    p.kpb = a->k_page_bytes;
    p.vpb = a->v_page_bytes;
    p.q = a->q;
    p.out = a->out;
    p.qscale = a->scale * LOG2E;
    p.part_acc = (float *)ws;
    p.part_ml = p.part_acc + (size_t)a->batch * a->n_q_heads * p.splits * D;

    /* a warp-tile is STEPS * 32 / (D / 8) tokens; the fast kernels need whole
     * warp-tiles per page */
    const int wt = STEPS * 256 / D;
    /* (a kivi format of the other role has the other layout: generic kernel) */
    const int km = a->page_tokens % wt || odd_role ? -1 : fmt_code(*kf);
    const int vm = a->page_tokens % wt || odd_role ? -1 : fmt_code(*vf);
    cudaError_t e;
    if (vecinfer) {
        e = vq_vecinfer_launch(p, D, G, a->batch, stream);
        if (e == cudaSuccess)
            e = D == 64 ? launch_reduce<64>(p, a->batch, stream) : launch_reduce<128>(p, a->batch, stream);
        return cuda_check(e, "decode_attention launch (vecinfer)");
    }
    /* up to 8 chunks per pair, KIVI values (no value rotation) at head_dim
     * 128, wide CTAs (12 or 16 warps, one CTA per SM): the chunks run as one
     * cluster that writes the output (no reduce launch). Only there: session
     * 25's H200 readings (figures/bench/gpu25-ab.txt) put it 1-3% ahead for
     * those pairs, but 25-42% behind the reduce launch at head_dim 64 (every
     * pair, batch >= 8) and 45% behind for q8_0 at 128; session 26's
     * (gpu26-ab.txt) 17-23% behind at 4k x 32, the one D = 128 shape
     * measured with 4-warp CTAs (several per SM), 1-4% ahead at 4k x 8 and
     * 16k x 32 (wide). VQ_CUDA_NO_CLUSTER=1 turns it off (comparisons, the
     * test). */
    p.cluster = mma && vf->method == VQ_CUDA_KIVI && !vf->rot && D == 128 && p.warps >= 12 && p.splits <= 8 &&
                        !no_cluster()
                    ? p.splits
                    : 0;
    if (mma && vq_mma_launch(p, D, G, a->batch, stream, &e)) {
        if (e == cudaSuccess && !p.cluster)
            e = D == 64 ? launch_reduce<64>(p, a->batch, stream) : launch_reduce<128>(p, a->batch, stream);
        return cuda_check(e, "decode_attention launch (mma)");
    }
#define VQ_LAUNCH(DD, GG) \
    if (D == DD && G == GG) e = launch_dg<DD, GG>(p, a->batch, stream, km, vm); else
    VQ_LAUNCH(64, 1) VQ_LAUNCH(64, 2) VQ_LAUNCH(64, 4) VQ_LAUNCH(64, 8)
    VQ_LAUNCH(128, 1) VQ_LAUNCH(128, 2) VQ_LAUNCH(128, 4) VQ_LAUNCH(128, 8)
    e = cudaErrorInvalidValue;
#undef VQ_LAUNCH
    return cuda_check(e, "decode_attention launch");
}
