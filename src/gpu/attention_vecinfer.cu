/* attention_vecinfer.cu -- the split kernel of paged decode attention for
 * vecinfer keys and values (table lookups on the CUDA cores), and
 * vq_cuda_tables_upload (the codebooks on the device). Same partial
 * results and same reduce launch as attention.cu's kernels; one CTA of VNW
 * warps per context chunk, KV head and sequence, the split count planned
 * for its occupancy (vq_vecinfer_ctas: one CTA per SM where the value
 * codebook sits in shared memory).
 *
 * As the CPU codec (codec/vecinfer.c): the query of head g becomes
 * q~ = R (q * lambda) (R = H diag(sigma), the rotation.cuh butterflies), its
 * table LUT[g][m][k] = <q~_m, C_m,k> (times scale * log2 e) goes to shared
 * memory, and a token's score is sum_m LUT[g][m][code_m]. Values: the
 * weighted centroids C_m,code are summed in the rotated domain and the
 * reduce launch maps the result back (R^T: the value format has rot = 1).
 *
 * Shared memory: the key tables as lut[k][m][g] (for G >= 4
 * lut[k][g/4][m][g%4]: a token's 4 heads' entries of piece m are one
 * 16-byte word), then, where it fits (VSM), the value codebook as
 * vtab[k][h][m] (16-byte words: floats 4h..4h+3 of centroid C_m,k).
 *
 * Lanes: a warp takes tiles of 32 tokens. Scores: lane i takes token i and
 * reads its M code bytes in one load; at step s it looks up piece
 * m = (s + r) mod M, r = its lane rotation, so that the 8 lanes of a
 * quarter-warp read 8 different pieces: 16-byte words in 8 different bank
 * groups (no bank conflict whatever the codes). Online softmax per head
 * over the warp; the tile's weights and value rows go to shared memory.
 * Values: lane i owns piece m = i mod MV (MV = D / vsub pieces) of token
 * i / MV of each group of 32 / MV tokens, adds the weight times the
 * centroid's vsub floats (G heads), and the lanes of the same piece are
 * summed at the end. The value lookups of a quarter-warp fall in 8
 * different bank groups too (vtab's m is the innermost index). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn_common.cuh"
#include "formats.cuh"
#include "rotation.cuh"

using namespace vqg;

extern "C" vq_status vq_cuda_fail(vq_status st, const char *fmt, ...);
extern "C" vq_status vq_cuda_tables_host(const vq_codec *c, float **out, size_t *n);

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr int LUT_MAX_BYTES = 192 * 1024; /* key tables' limit (vq_vecinfer_check) */
#ifndef VQ_VI_NW
#define VQ_VI_NW 16
#endif
constexpr int VNW = VQ_VI_NW;            /* warps per CTA */
constexpr int NT = VNW * 32;
constexpr int VRB = 32;                  /* staged value row bytes (ceil(MV * bits / 8) <= 32) */
constexpr int SMEM_MAX = 227 * 1024;     /* shared memory per CTA (sm_90 opt-in limit) */

/* code of piece m in a token's row: bits [m*bits, (m+1)*bits) of the
 * LSB-first bit stream (bits 1, 2, 4 or 8: never straddles a byte) */
__device__ __forceinline__ unsigned vi_code(const uint8_t *row, int m, int bits)
{
    const int bit = m * bits;
    return (unsigned)(row[bit >> 3] >> (bit & 7)) & ((1u << bits) - 1u);
}

/* index of LUT entry (k, m, g) in the layout above */
template <int G>
__device__ __forceinline__ int lut_idx(int k, int m, int g, int M)
{
    constexpr int GQ = G >= 4 ? G / 4 : 1, GW = G >= 4 ? 4 : G;
    return ((k * GQ + g / GW) * M + m) * GW + g % GW;
}

/* bytes of the static shared arrays of attn_vecinfer<D, G> (queries,
 * weights, staged value rows, warp (m, l)) */
template <int D, int G>
constexpr size_t static_smem() { return sizeof(float) * (G * D + VNW * 32 * G + VNW * G * 2) + VNW * 32 * VRB; }

/* the value codebook [m][k][vsub] (global) into vtab[k][h][m] (16-byte
 * words, shared) by asynchronous copies of all NT threads; the caller
 * waits (cp.async.wait_all) and synchronises */
__device__ __forceinline__ void copy_vtab(const vq_cuda_format &vf, int D, float *vtab, int tid)
{
    const int vS = vf.sub_dim, MV = D / vS, H = vS / 4, vK = 1 << vf.bits;
    const float *vcb = vf.tables + D;
    for (int i = tid; i < vK * H * MV; i += NT) {
        const int m = i % MV, h = (i / MV) % H, k = i / (MV * H);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(vtab + 4 * (size_t)i)),
                     "l"(vcb + ((size_t)m * vK + k) * vS + 4 * h)
                     : "memory");
    }
}

/* the key centroids of entries i0, i0 + NT, ... (EPR of them, piece m;
 * an entry past the end loads the last one's) into c, zero-padded to 8 */
template <int EPR>
__device__ __forceinline__ void load_cents(const float *kcb, int m, int K, int S, int M, int i0, float (&c)[EPR][8])
{
#pragma unroll
    for (int u = 0; u < EPR; u++) {
        const int k = min(i0 + u * NT, M * K - 1) / M;
        const float *cent = kcb + ((size_t)m * K + k) * S;
        const float4 c0 = __ldg((const float4 *)cent);
        c[u][0] = c0.x, c[u][1] = c0.y, c[u][2] = c0.z, c[u][3] = c0.w;
        if (S == 8) {
            const float4 c1 = __ldg((const float4 *)cent + 1);
            c[u][4] = c1.x, c[u][5] = c1.y, c[u][6] = c1.z, c[u][7] = c1.w;
        } else {
            c[u][4] = c[u][5] = c[u][6] = c[u][7] = 0.0f;
        }
    }
}

/* a lane's rotation by r bytes of its token's W code words (byte j of
 * the result = byte (j + r) mod 4W of the row), 0 <= r < 4W */
template <int W>
__device__ __forceinline__ void rotate_bytes(uint32_t (&w)[W], int r)
{
#pragma unroll
    for (int sh = 1; sh < W; sh <<= 1)
        if (r & (4 * sh)) {
            uint32_t t[W];
#pragma unroll
            for (int i = 0; i < W; i++)
                t[i] = w[(i + sh) % W];
#pragma unroll
            for (int i = 0; i < W; i++)
                w[i] = t[i];
        }
    const int b = 8 * (r & 3);
    uint32_t t[W];
#pragma unroll
    for (int i = 0; i < W; i++)
        t[i] = __funnelshift_r(w[i], w[(i + 1) % W], b);
#pragma unroll
    for (int i = 0; i < W; i++)
        w[i] = t[i];
}

/* a token's value row (bb <= VRB bytes at src, aligned as the pool and
 * row size allow) into shared memory */
__device__ __forceinline__ void stage_row(const uint8_t *src, int bb, uint8_t *dst)
{
    if (bb == 16) {
        *(uint4 *)dst = __ldg((const uint4 *)src);
    } else if (bb == 8) {
        *(uint2 *)dst = __ldg((const uint2 *)src);
    } else if (bb == 32) {
        *(uint4 *)dst = __ldg((const uint4 *)src);
        *(uint4 *)(dst + 16) = __ldg((const uint4 *)src + 1);
    } else if ((bb & 3) == 0) {
        for (int i = 0; i < bb; i += 4)
            *(uint32_t *)(dst + i) = __ldg((const uint32_t *)(src + i));
    } else {
        for (int i = 0; i < bb; i++)
            dst[i] = src[i];
    }
}

/* A lane's token of the next tile, loaded ahead (the tile before is
 * processed meanwhile): its rows' addresses, the key codes of the fast
 * instantiation (byte codes of 8-float pieces: D / 8 bytes; kfast) and a
 * value row of 8 or 16 bytes (others are staged from vrow when used) */
template <int D>
struct TokRows {
    const uint8_t *krow, *vrow;
    uint32_t kw[D / 32];
    uint4 vw;
};

template <int D>
__device__ __forceinline__ void load_rows(const AttnParams &p, const int32_t *pt, int tok, bool kfast, int vbb,
                                          TokRows<D> &r)
{
    const int32_t pg = pt[tok / p.page_tokens];
    const int ti = tok % p.page_tokens;
    r.krow = p.kp + (size_t)pg * p.kpb + (size_t)ti * p.kf.block_bytes;
    r.vrow = p.vp + (size_t)pg * p.vpb + (size_t)ti * vbb;
    if (kfast) {
        if constexpr (D == 128) {
            const uint4 v = __ldg((const uint4 *)r.krow);
            r.kw[0] = v.x, r.kw[1] = v.y, r.kw[2] = v.z, r.kw[3] = v.w;
        } else {
            const uint2 v = __ldg((const uint2 *)r.krow);
            r.kw[0] = v.x, r.kw[1] = v.y;
        }
    }
    if (vbb == 16) {
        r.vw = __ldg((const uint4 *)r.vrow);
    } else if (vbb == 8) {
        const uint2 v = __ldg((const uint2 *)r.vrow);
        r.vw.x = v.x, r.vw.y = v.y;
    }
}

/* score of one token for its G heads (scaled, base 2), the formats other
 * than the fast instantiation's: piece by piece from the row in global
 * memory (piece m = (s + rot) mod M at step s, as fast_scores) */
template <int D, int G>
__device__ __forceinline__ void token_scores(const float *lut, const uint8_t *krow, int M, int kbits, int rot,
                                             float (&sc)[G])
{
#pragma unroll
    for (int g = 0; g < G; g++)
        sc[g] = 0.0f;
    for (int s = 0; s < M; s++) {
        const int m = (s + rot) & (M - 1);
        const unsigned code = vi_code(krow, m, kbits);
#pragma unroll
        for (int g = 0; g < G; g++)
            sc[g] += lut[lut_idx<G>(code, m, g, M)];
    }
}

/* The fast path's score (byte codes of 8-float pieces, preloaded): the
 * lane's code words rotated by rot bytes; piece s of the rotated row is
 * m = (s + rot) mod MF, and one byte permute makes the byte offset
 * (code * 256 + mb[s]) / SC of its entry, mb (mbw: two pieces' per word,
 * bytes 0 and 2) the lane's m * 256 / ROWB, SC = 256 / ROWB */
template <int D, int G>
__device__ __forceinline__ void fast_scores(const float *lut, const uint32_t (&kw)[D / 32],
                                            const uint32_t (&mbw)[D / 16], int rot, float (&sc)[G])
{
    constexpr int MF = D / 8, W = MF / 4;
    constexpr int GQ = G >= 4 ? G / 4 : 1, GW = G >= 4 ? 4 : G;
    constexpr int ROWB = GQ * MF * GW * 4; /* bytes per code k */
    uint32_t w[W];
#pragma unroll
    for (int i = 0; i < W; i++)
        w[i] = kw[i];
    rotate_bytes<W>(w, rot);
#pragma unroll
    for (int g = 0; g < G; g++)
        sc[g] = 0.0f;
    const char *lb = (const char *)lut;
#pragma unroll
    for (int s = 0; s < MF; s++) {
        const unsigned sel = (s & 1 ? 6u : 4u) | (unsigned)(s & 3) << 4 | 0x5500u;
        const unsigned x = __byte_perm(w[s >> 2], mbw[s >> 1], sel);
        const unsigned off = ROWB >= 256 ? x * (ROWB / 256) : x / (256 / ROWB);
        if constexpr (G >= 4) {
#pragma unroll
            for (int q = 0; q < G / 4; q++) {
                const float4 e = *(const float4 *)(lb + off + q * MF * 16);
                sc[4 * q] += e.x;
                sc[4 * q + 1] += e.y;
                sc[4 * q + 2] += e.z;
                sc[4 * q + 3] += e.w;
            }
        } else if constexpr (G == 2) {
            const float2 e = *(const float2 *)(lb + off);
            sc[0] += e.x;
            sc[1] += e.y;
        } else {
            sc[0] += *(const float *)(lb + off);
        }
    }
}

/* the warp's pass over its tiles and its share of the CTA's partial
 * (VS: the value pieces' floats, 4 or 8) */
template <int D, int G, bool VSM, int VS, bool FAST>
__device__ __forceinline__ void vi_main(const AttnParams &p, const CtaWork &cw, const float *lut, const float *vtab,
                                        float (&wts)[VNW][32][G], uint8_t (&vrow)[VNW][32][VRB],
                                        float (&wml)[VNW][G][2], float *dyn, int tid)
{
    constexpr int MV = D / VS, TPI = 32 / MV, H = VS / 4;
    const int warp = tid >> 5, lane = tid & 31;
    const int s0 = cw.s0, s1 = cw.s1;
    const int kS = p.kf.sub_dim, M = D / kS, kbits = p.kf.bits, vbits = p.vf.bits, vK = 1 << vbits;
    const int rmask = G >= 4 ? 7 : G == 2 ? 15 : 31;
    const int rot = lane & rmask & (M - 1);
    const int vbb = FAST ? D / 8 : p.vf.block_bytes;
    /* fast path: the lane's entry offsets m * 256 / ROWB per piece step
     * (fast_scores), two per word */
    uint32_t mbw[D / 16];
    if constexpr (FAST) {
        constexpr int MF = D / 8, GQ = G >= 4 ? G / 4 : 1;
#pragma unroll
        for (int j = 0; j < MF / 2; j++)
            mbw[j] = (uint32_t)(((2 * j + rot) & (MF - 1)) * (256 / (MF * GQ))) |
                     (uint32_t)(((2 * j + 1 + rot) & (MF - 1)) * (256 / (MF * GQ))) << 16;
    }
    const int vm = lane % MV, tsub = lane / MV; /* my value piece, my token in each group of TPI */
    const float *vcb = p.vf.tables + D;
    const int32_t *pt = p.page_table + ((size_t)cw.b * p.n_kv + cw.kvh) * p.max_pages;

    float m_run[G], l_run[G], acc[G][VS];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m_run[g] = -INFINITY;
        l_run[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < VS; e++)
            acc[g][e] = 0.0f;
    }
    TokRows<D> cur, nxt;
    if (s0 + warp * 32 < s1)
        load_rows<D>(p, pt, min(s0 + warp * 32 + lane, s1 - 1), FAST, vbb, cur);
    for (int t0 = s0 + warp * 32; t0 < s1; t0 += NT) {
        const int t = t0 + lane;
        if (t0 + NT < s1) /* the next tile's rows, in flight during this one */
            load_rows<D>(p, pt, min(t + NT, s1 - 1), FAST, vbb, nxt);
        if (vbb == 16)
            *(uint4 *)vrow[warp][lane] = cur.vw;
        else if (vbb == 8)
            *(uint2 *)vrow[warp][lane] = make_uint2(cur.vw.x, cur.vw.y);
        else
            stage_row(cur.vrow, vbb, vrow[warp][lane]);
        float sc[G];
        if constexpr (FAST)
            fast_scores<D, G>(lut, cur.kw, mbw, rot, sc);
        else
            token_scores<D, G>(lut, cur.krow, M, kbits, rot, sc);
        /* online softmax per head over the tile (tokens past s1 weigh 0);
         * the accumulators are rescaled only when a running max grows */
        bool grow = false;
        float mnew[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            float mx = t < s1 ? sc[g] : -INFINITY;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, o));
            mnew[g] = fmaxf(m_run[g], mx); /* finite: token t0 < s1 */
            grow |= mnew[g] > m_run[g];
        }
        if (grow) { /* warp-uniform */
#pragma unroll
            for (int g = 0; g < G; g++) {
                const float al = exp2f(m_run[g] - mnew[g]);
                m_run[g] = mnew[g];
                l_run[g] *= al;
#pragma unroll
                for (int e = 0; e < VS; e++)
                    acc[g][e] *= al;
            }
        }
        float pw[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            pw[g] = t < s1 ? exp2f(sc[g] - m_run[g]) : 0.0f;
            l_run[g] += pw[g];
        }
        if constexpr (G >= 4) {
#pragma unroll
            for (int q = 0; q < G / 4; q++)
                *(float4 *)&wts[warp][lane][4 * q] = make_float4(pw[4 * q], pw[4 * q + 1], pw[4 * q + 2], pw[4 * q + 3]);
        } else {
#pragma unroll
            for (int g = 0; g < G; g++)
                wts[warp][lane][g] = pw[g];
        }
        __syncwarp();
        /* values: TPI tokens per round, lane (vm, tsub); all 32 tokens
         * (those past s1 weigh 0 and have the row of token s1 - 1) */
#pragma unroll
        for (int i = 0; i < 32; i += TPI) {
            const int tt = i + tsub;
            const unsigned code = FAST ? vrow[warp][tt][vm] : vi_code(vrow[warp][tt], vm, vbits);
            float w[G];
            if constexpr (G >= 4) {
#pragma unroll
                for (int q = 0; q < G / 4; q++) {
                    const float4 w4 = *(const float4 *)&wts[warp][tt][4 * q];
                    w[4 * q] = w4.x, w[4 * q + 1] = w4.y, w[4 * q + 2] = w4.z, w[4 * q + 3] = w4.w;
                }
            } else {
#pragma unroll
                for (int g = 0; g < G; g++)
                    w[g] = wts[warp][tt][g];
            }
#pragma unroll
            for (int h = 0; h < H; h++) {
                float4 c;
                if constexpr (VSM)
                    c = *(const float4 *)&vtab[(((int)code * H + h) * MV + vm) * 4];
                else
                    c = __ldg((const float4 *)&vcb[((size_t)vm * vK + code) * VS + 4 * h]);
#pragma unroll
                for (int g = 0; g < G; g++) {
                    acc[g][4 * h] = fmaf(w[g], c.x, acc[g][4 * h]);
                    acc[g][4 * h + 1] = fmaf(w[g], c.y, acc[g][4 * h + 1]);
                    acc[g][4 * h + 2] = fmaf(w[g], c.z, acc[g][4 * h + 2]);
                    acc[g][4 * h + 3] = fmaf(w[g], c.w, acc[g][4 * h + 3]);
                }
            }
        }
        __syncwarp();
        cur = nxt;
    }
    /* the lanes of one piece summed; the warp's (m, l) */
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
        for (int o = MV; o < 32; o <<= 1)
#pragma unroll
            for (int e = 0; e < VS; e++)
                acc[g][e] += __shfl_xor_sync(FULL, acc[g][e], o);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            l_run[g] += __shfl_xor_sync(FULL, l_run[g], o);
    }
    __syncthreads(); /* every warp is done with the tables: red overlays them */
    float(&red)[VNW][G][D] = *reinterpret_cast<float(*)[VNW][G][D]>(dyn);
#pragma unroll
    for (int g = 0; g < G; g++) {
        if (tsub == 0)
#pragma unroll
            for (int e = 0; e < VS; e++)
                red[warp][g][vm * VS + e] = acc[g][e];
        if (lane == 0) {
            wml[warp][g][0] = m_run[g];
            wml[warp][g][1] = l_run[g];
        }
    }
    __syncthreads();
    combine_warps<G, D, VNW>(p, red, wml, cw.part0, tid);
}

template <int D, int G, bool VSM>
__global__ void __launch_bounds__(NT, 1) attn_vecinfer(const __grid_constant__ AttnParams p)
{
    __shared__ float qs[G][D]; /* the rotated queries */
    __shared__ __align__(16) float wts[VNW][32][G];
    __shared__ __align__(16) uint8_t vrow[VNW][32][VRB];
    __shared__ float wml[VNW][G][2];
    extern __shared__ __align__(16) float dyn[]; /* lut, then vtab (VSM); red at the end */

    const int tid = threadIdx.x;
    const CtaWork cw = cta_work<G>(p);
    if (empty_chunk<G>(p, cw, tid))
        return;
    const int S = p.kf.sub_dim, M = D / S, K = 1 << p.kf.bits;
    const float *klam = p.kf.tables, *kcb = p.kf.tables + D;
    float *lut = dyn, *vtab = dyn + (size_t)G * M * K;

    if constexpr (VSM) /* the value codebook, in flight while the key tables are built */
        copy_vtab(p.vf, D, vtab, tid);
    /* the key tables: entry (k, m) for all G heads, EPR entries per round
     * (NT is a multiple of M: a thread keeps its piece m and its G query
     * pieces); the first round's centroid loads are issued before the
     * query's rotation */
    constexpr int EPR = G >= 8 ? 2 : 8; /* (G = 8: qv takes the registers) */
    const int m = tid % M;
    float c[EPR][8];
    load_cents<EPR>(kcb, m, K, S, M, tid, c);

    /* q~ = R (q * lambda) */
    for (int i = tid; i < G * D; i += NT)
        qs[i / D][i % D] = p.q[cw.qrow0 * D + i] * klam[i % D];
    __syncthreads();
    rot_forward_smem<D, G>(&qs[0][0], p.kf.sign, tid, NT);
    float qv[G][8];
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int d = 0; d < 8; d++)
            qv[g][d] = d < S ? qs[g][m * S + d] : 0.0f;
    for (int i0 = tid; i0 < M * K; i0 += EPR * NT) {
#pragma unroll
        for (int u = 0; u < EPR; u++) {
            if (i0 + u * NT >= M * K)
                break;
            const int k = (i0 + u * NT) / M;
#pragma unroll
            for (int g = 0; g < G; g++) {
                /* the CPU's order: sum over d, then times the scale
                 * (c[d] = 0 and qv[g][d] = 0 for d >= S: exact) */
                float s = 0.0f;
#pragma unroll
                for (int d = 0; d < 8; d++)
                    s += qv[g][d] * c[u][d];
                lut[lut_idx<G>(k, m, g, M)] = s * p.qscale;
            }
        }
        if (i0 + EPR * NT < M * K)
            load_cents<EPR>(kcb, m, K, S, M, i0 + EPR * NT, c);
    }
    if constexpr (VSM)
        asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();
    if (S == 8 && p.kf.bits == 8 && p.vf.sub_dim == 8 && p.vf.bits == 8)
        vi_main<D, G, VSM, 8, true>(p, cw, lut, vtab, wts, vrow, wml, dyn, tid);
    else if (p.vf.sub_dim == 8)
        vi_main<D, G, VSM, 8, false>(p, cw, lut, vtab, wts, vrow, wml, dyn, tid);
    else
        vi_main<D, G, VSM, 4, false>(p, cw, lut, vtab, wts, vrow, wml, dyn, tid);
}

/* dynamic shared memory of attn_vecinfer<D, G, VSM> for these formats */
size_t vi_dyn_bytes(const vq_cuda_format &kf, const vq_cuda_format &vf, int G, bool vsm)
{
    const int D = kf.head_dim;
    const size_t lut = (size_t)G * (D / kf.sub_dim) * ((size_t)1 << kf.bits) * sizeof(float);
    const size_t vt = vsm ? (size_t)D * ((size_t)1 << vf.bits) * sizeof(float) : 0;
    const size_t red = (size_t)VNW * G * D * sizeof(float);
    return lut + vt > red ? lut + vt : red;
}

size_t static_bytes(int D, int G)
{
#define VQ_SB(DD, GG) \
    if (D == DD && G == GG) return static_smem<DD, GG>();
    VQ_SB(64, 1) VQ_SB(64, 2) VQ_SB(64, 4) VQ_SB(64, 8)
    VQ_SB(128, 1) VQ_SB(128, 2) VQ_SB(128, 4) VQ_SB(128, 8)
#undef VQ_SB
    return 0;
}

/* whether the value codebook goes to shared memory (it fits beside the
 * key tables); else the value lookups read it through the read-only cache */
bool vi_vsm(const vq_cuda_format &kf, const vq_cuda_format &vf, int G)
{
    const char *e = getenv("VQ_CUDA_VI_VGLOBAL");
    if (e && !strcmp(e, "1")) /* the test runs both */
        return false;
    return vi_dyn_bytes(kf, vf, G, true) + static_bytes(kf.head_dim, G) <= (size_t)SMEM_MAX;
}

template <int D, int G, bool VSM>
cudaError_t vi_attr()
{
    static bool attr_set = false; /* once per instantiation (idempotent) */
    if (attr_set)
        return cudaSuccess;
    const cudaError_t e = cudaFuncSetAttribute(attn_vecinfer<D, G, VSM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)(SMEM_MAX - static_smem<D, G>()));
    attr_set = e == cudaSuccess;
    return e;
}

template <int D, int G, bool VSM>
cudaError_t launch_vi(const AttnParams &p, int batch, size_t smem, cudaStream_t s)
{
    const cudaError_t e = vi_attr<D, G, VSM>();
    if (e != cudaSuccess)
        return e;
    attn_vecinfer<D, G, VSM><<<dim3(p.splits, p.n_kv, batch), NT, smem, s>>>(p);
    return cudaGetLastError();
}

template <int D, int G, bool VSM>
int ctas_vi(size_t smem)
{
    int n = 0;
    if (vi_attr<D, G, VSM>() != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, attn_vecinfer<D, G, VSM>, NT, smem) != cudaSuccess || n < 1)
        return 1;
    return n;
}

} // namespace

size_t vq_vecinfer_lut_bytes(const vq_cuda_format &kf, int G)
{
    return (size_t)G * (kf.head_dim / (kf.sub_dim > 0 ? kf.sub_dim : 1)) * ((size_t)1 << kf.bits) * sizeof(float);
}

vq_status vq_vecinfer_check(const vq_cuda_format &kf, const vq_cuda_format &vf, int G)
{
    if (kf.method != VQ_CUDA_VECINFER || vf.method != VQ_CUDA_VECINFER)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: decode_attention: vecinfer runs with vecinfer keys and values only");
    if (kf.role != VQ_ROLE_KEY || vf.role != VQ_ROLE_VALUE)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: vecinfer formats of the wrong role");
    if (!kf.tables || !vf.tables)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: vecinfer tables not uploaded (vq_cuda_tables_upload)");
    if ((kf.sub_dim != 4 && kf.sub_dim != 8) || (vf.sub_dim != 4 && vf.sub_dim != 8) || kf.bits < 1 || kf.bits > 8 ||
        vf.bits < 1 || vf.bits > 8)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: decode_attention: bad vecinfer format");
    if (vq_vecinfer_lut_bytes(kf, G) > (size_t)LUT_MAX_BYTES)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED,
                            "cuda: decode_attention: vecinfer tables of %zu bytes for %d query heads per KV head "
                            "exceed %d bytes of shared memory",
                            vq_vecinfer_lut_bytes(kf, G), G, LUT_MAX_BYTES);
    return VQ_OK;
}

/* CTAs of attn_vecinfer per SM for these formats (the occupancy
 * calculator's answer, at most VQ_MMA_MAX_CTAS; 1 where it fails): the
 * split count plans for it */
int vq_vecinfer_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G)
{
    const bool vsm = vi_vsm(kf, vf, G);
    const size_t smem = vi_dyn_bytes(kf, vf, G, vsm);
    int n = 1;
#define VQ_VI(DD, GG) \
    if (D == DD && G == GG) n = vsm ? ctas_vi<DD, GG, true>(smem) : ctas_vi<DD, GG, false>(smem);
    VQ_VI(64, 1) VQ_VI(64, 2) VQ_VI(64, 4) VQ_VI(64, 8)
    VQ_VI(128, 1) VQ_VI(128, 2) VQ_VI(128, 4) VQ_VI(128, 8)
#undef VQ_VI
    return n < VQ_MMA_MAX_CTAS ? n : VQ_MMA_MAX_CTAS;
}

cudaError_t vq_vecinfer_launch(const AttnParams &p, int D, int G, int batch, cudaStream_t s)
{
    const bool vsm = vi_vsm(p.kf, p.vf, G);
    const size_t smem = vi_dyn_bytes(p.kf, p.vf, G, vsm);
#define VQ_VI(DD, GG) \
    if (D == DD && G == GG) \
        return vsm ? launch_vi<DD, GG, true>(p, batch, smem, s) : launch_vi<DD, GG, false>(p, batch, smem, s);
    VQ_VI(64, 1) VQ_VI(64, 2) VQ_VI(64, 4) VQ_VI(64, 8)
    VQ_VI(128, 1) VQ_VI(128, 2) VQ_VI(128, 4) VQ_VI(128, 8)
#undef VQ_VI
    return cudaErrorInvalidValue;
}

extern "C" vq_status vq_cuda_tables_upload(const vq_codec *c, vq_cuda_format *f, void *dev, size_t bytes)
{
    if (!c || !f || !dev)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables_upload: NULL argument");
    if ((uintptr_t)dev % 16)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables_upload: buffer not 16-byte aligned");
    if (f->method != VQ_CUDA_VECINFER)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables_upload: format %d has no tables", f->method);
    float *host;
    size_t n;
    const vq_status st = vq_cuda_tables_host(c, &host, &n);
    if (st != VQ_OK)
        return st;
    if (bytes < n * sizeof(float)) {
        free(host);
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables_upload: buffer of %zu bytes < %zu", bytes,
                            n * sizeof(float));
    }
    cudaError_t e = cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice);
    free(host);
    if (e != cudaSuccess)
        return vq_cuda_fail(VQ_ERR_STATE, "cuda: tables_upload: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    f->tables = (const float *)dev;
    return VQ_OK;
}
