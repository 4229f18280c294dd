/* attention_vecinfer.cu -- the split kernel of paged decode attention for
 * vecinfer keys and values (key scores by table lookups on the CUDA cores,
 * the value product on the tensor cores), and vq_cuda_tables_upload (the
 * codebooks on the device). Same partial results and same reduce launch
 * as attention.cu's kernels; one CTA of VNW warps per context chunk, KV
 * head and sequence, the split count planned for its occupancy
 * (vq_vecinfer_ctas: one CTA per SM).
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
 * 16-byte word), then the value codebook in fp16 (vq_cuda_tables_upload
 * rounds it, scaled by a power of two; rows of VROW bytes, below).
 *
 * Lanes: a warp takes tiles of 32 tokens. Scores: lane i takes token i and
 * reads its M code bytes in one load; at step s it looks up piece
 * m = (s + r) mod M, r = its lane rotation, so that the 8 lanes of a
 * quarter-warp read 8 different pieces: 16-byte words in 8 different bank
 * groups (no bank conflict whatever the codes). Online softmax per head
 * over the warp; the tile's weights (times 2^PSH) and value code rows go
 * to shared memory. Values: O^T += V^T P^T by mma.sync m16n8k16 per
 * 16-token k-tile: A = the fp16 codebook entries of the tokens' codes (rows
 * = channels: lane (gq, tq) looks up the 4-channel units of its D / 8
 * channels for its tokens and pairs two tokens' halves by byte permutes),
 * B = the weights split into fp16 hi and lo halves (columns: head x
 * {hi, lo}), float32 accumulators. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn_common.cuh"
#include "formats.cuh"
#include "mma_ops.cuh"
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
constexpr int WS = 36;                   /* wts row stride (floats; conflict-free B loads) */
constexpr int PSH = 15;                  /* weights are split into fp16 hi / lo times 2^PSH (<= 2^15) */

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

/* bytes of the static shared arrays of attn_vecinfer<D, G> (weights,
 * staged value rows (and the queries before the tiles), warp (m, l)) */
template <int D, int G>
constexpr size_t static_smem() { return sizeof(float) * (VNW * WS * G + VNW * G * 2) + VNW * 32 * VRB; }

/* bytes of the fp16 value codebook [K][D] after the float tables and its
 * 16-byte header (one float: vinv, the factor that undoes its scaling) in
 * the tables of a value format (vq_cuda_tables_upload) */
__host__ __device__ constexpr size_t vcb_bytes(int D, int bits) { return (size_t)2 * D << bits; }
__host__ __device__ constexpr size_t vcb_floats_before(int D, int bits) { return (size_t)D + ((size_t)D << bits); }

/* The codebook in shared memory: rows of VROW bytes, row k at k * VROW
 * (a unit's offset in it is code << 8 | its offset in the row: one byte
 * permute). D = 128: the row is C_k's 128 channels; where it fits (C2), a
 * second copy follows at byte C2_OFF with the 16-byte halves of each 32
 * bytes swapped, read by the lanes tq >= 2 (then the 4 lanes of a row read
 * 4 different bank groups with one select stage instead of two). D = 64:
 * the first 128 bytes are the 64 channels, the last 128 bytes a second copy
 * with its two 64-byte halves swapped, which the lanes tq >= 2 read: with
 * two units per lane, the 4 lanes of a row read 4 different bank groups
 * only so. */
constexpr int VROW = 256;
constexpr int C2_OFF = 65536; /* (byte 2 of a unit's offset: still one byte permute) */

/* the fp16 value codebook (global, after the float tables and the header)
 * into vcb's rows by asynchronous copies of all NT threads; the caller
 * waits (cp.async.wait_all) and synchronises. Returns vinv. */
template <bool C2>
__device__ __forceinline__ float copy_vcb(const vq_cuda_format &vf, int D, uint8_t *vcb, int tid)
{
    const float *hdr = vf.tables + vcb_floats_before(D, vf.bits);
    const uint8_t *src = (const uint8_t *)(hdr + 4);
    const int n = (VROW / 16) << vf.bits; /* 16-byte pieces of the shared rows */
    for (int i = tid; i < n; i += NT) {
        const int k = i >> 4, j = i & 15; /* row, its piece */
        const int sj = D == 128 ? 16 * k + j : 8 * k + (j < 8 ? j : (j + 4) & 7);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(vcb + 16 * (size_t)i)),
                     "l"(src + 16 * (size_t)sj)
                     : "memory");
        if (C2) /* (D = 128) */
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                             (unsigned)__cvta_generic_to_shared(vcb + C2_OFF + 16 * (size_t)i)),
                         "l"(src + 16 * (size_t)(sj ^ 1))
                         : "memory");
    }
    return __ldg(hdr);
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

/* unit slot s of a lane's U value units after the lookups holds unit
 * s ^ ur (ur: the lane's rotation, whose bits lie in RB); back to unit s,
 * by ur's bits (a select per register and bit) */
template <int U, int RB>
__device__ __forceinline__ void unrotate(uint2 (&x)[U], int ur)
{
#pragma unroll
    for (int b = 1; b < U; b <<= 1) {
        if (!(RB & b))
            continue;
        const bool sw = ur & b;
#pragma unroll
        for (int s = 0; s < U; s++)
            if (!(s & b)) {
                const uint2 lo = x[s], hi = x[s ^ b];
                x[s] = sw ? hi : lo;
                x[s ^ b] = sw ? lo : hi;
            }
    }
}

/* the warp's pass over its tiles and its share of the CTA's partial.
 * vcb: the value codebook in fp16 (rows of VROW bytes: channel c of row k
 * = element c % vS of centroid C_{c / vS, k}), scaled by 1 / vinv. */
template <int D, int G, bool FAST, bool C2>
__device__ __forceinline__ void vi_main(const AttnParams &p, const CtaWork &cw, const float *lut, const uint8_t *vcb,
                                        float vinv, float (&wts)[VNW][G][WS], uint8_t (&vrow)[VNW][32][VRB],
                                        float (&wml)[VNW][G][2], float *dyn, int tid)
{
    constexpr int MT = D / 16, U = D / 32, NTN = (2 * G + 7) / 8;
    const int warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
    const int s0 = cw.s0, s1 = cw.s1;
    const int kS = p.kf.sub_dim, M = D / kS, kbits = p.kf.bits, vS = p.vf.sub_dim, vbits = p.vf.bits;
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
    /* value units: lane (gq, tq) owns channels gq * D / 8 .. + D / 8 - 1,
     * U units of 4; its lookup of slot s reads unit s ^ ur (so that the 4
     * lanes of one gq read 4 different units: no bank conflict), uoff the
     * unit's byte offset in a codebook row, ush the bit offset of its
     * piece's code in word cwi of the token's row (the lane's pieces are
     * D / 8 / vS aligned codes of vbits <= 8 bits: inside one word) */
    constexpr int RB = D == 128 && !C2 ? 3 : 1; /* the rotation's bits (a second copy takes tq's bit 1) */
    const int ur = tq & RB;
    const int cwi = gq * (D / 8) / vS * vbits >> 5;
    const unsigned vmask = (1u << vbits) - 1u;
    uint32_t uoff[U], ush[U]; /* (fast path: ush = the byte permute's selector) */
#pragma unroll
    for (int s = 0; s < U; s++) {
        const int c0 = gq * (D / 8) + 4 * (s ^ ur); /* the unit's first channel */
        if (D == 64)
            uoff[s] = tq >= 2 ? 128 + ((2 * c0 + 64) & 127) : 2 * c0;
        else
            uoff[s] = C2 && tq >= 2 ? C2_OFF + (2 * c0 ^ 16) : 2 * c0;
        ush[s] = c0 / vS * vbits & 31;
        if (FAST) /* byte 0: uoff's, byte 1: the code byte, bytes 2-3: uoff's (uoff % 256 + C2_OFF) */
            ush[s] = 0x7604u | ush[s] >> 3 << 4;
    }
    /* B operand: column n = 8 nt + gq is head 4 nt + gq / 2, hi (gq even)
     * or lo half of its weights */
    const int32_t *pt = p.page_table + ((size_t)cw.b * p.n_kv + cw.kvh) * p.max_pages;

    float m_run[G], l_run[G], acc[NTN][MT][4];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m_run[g] = -INFINITY;
        l_run[g] = 0.0f;
    }
#pragma unroll
    for (int nt = 0; nt < NTN; nt++)
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[nt][i][e] = 0.0f;
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
            float al[G];
#pragma unroll
            for (int g = 0; g < G; g++) {
                al[g] = exp2f(m_run[g] - mnew[g]);
                m_run[g] = mnew[g];
                l_run[g] *= al[g];
            }
#pragma unroll
            for (int nt = 0; nt < NTN; nt++) {
                float a = al[0]; /* head 4 nt + tq's (columns 2 tq, 2 tq + 1) */
#pragma unroll
                for (int g = 1; g < G; g++)
                    a = g == 4 * nt + tq ? al[g] : a;
#pragma unroll
                for (int i = 0; i < MT; i++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[nt][i][e] *= a;
            }
        }
        /* weights times 2^PSH (l_run and the accumulators alike: the
         * scale cancels in the reduce launch's division) */
#pragma unroll
        for (int g = 0; g < G; g++) {
            const float pw = t < s1 ? exp2f(sc[g] - m_run[g] + (float)PSH) : 0.0f;
            l_run[g] += pw;
            wts[warp][g][lane] = pw;
        }
        __syncwarp();
        /* values: O^T += V^T P^T per 16-token k-tile; k = 2 tq + e + 8 f
         * is token 16 kt + 8 f + 4 e + tq (the 4 lanes tq of a row read
         * 4 different banks of the staged rows and weights); A = the
         * codebook entries of the lane's tokens, B = hi / lo halves of the
         * weights */
#pragma unroll
        for (int kt = 0; kt < 2; kt++) {
            uint32_t b[NTN][2];
#pragma unroll
            for (int nt = 0; nt < NTN; nt++) {
                const int hb = 4 * nt + (gq >> 1);
#pragma unroll
                for (int f = 0; f < 2; f++) {
                    const float *w = &wts[warp][hb < G ? hb : 0][16 * kt + 8 * f + tq];
                    uint32_t hi, lo;
                    split2(w[0], w[4], hi, lo);
                    b[nt][f] = hb >= G ? 0u : gq & 1 ? lo : hi;
                }
            }
            uint2 x[2][2][U]; /* [f][e][unit]: token 16 kt + 8 f + 4 e + tq */
#pragma unroll
            for (int f = 0; f < 2; f++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const uint32_t cw = *(const uint32_t *)&vrow[warp][16 * kt + 8 * f + 4 * e + tq][4 * cwi];
#pragma unroll
                    for (int s = 0; s < U; s++) {
                        const uint32_t off = FAST ? __byte_perm(cw, uoff[s], ush[s]) : (cw >> ush[s] & vmask) << 8 | uoff[s];
                        x[f][e][s] = *(const uint2 *)(vcb + off);
                    }
                    unrotate<U, RB>(x[f][e], ur);
                }
#pragma unroll
            for (int i = 0; i < MT; i++) {
                const int u0 = i >> 2, u1 = U / 2 + (i >> 2), j = i & 3;
                const uint32_t sel = j & 1 ? 0x7632u : 0x5410u;
                uint4 a;
                a.x = __byte_perm(j < 2 ? x[0][0][u0].x : x[0][0][u0].y, j < 2 ? x[0][1][u0].x : x[0][1][u0].y, sel);
                a.y = __byte_perm(j < 2 ? x[0][0][u1].x : x[0][0][u1].y, j < 2 ? x[0][1][u1].x : x[0][1][u1].y, sel);
                a.z = __byte_perm(j < 2 ? x[1][0][u0].x : x[1][0][u0].y, j < 2 ? x[1][1][u0].x : x[1][1][u0].y, sel);
                a.w = __byte_perm(j < 2 ? x[1][0][u1].x : x[1][0][u1].y, j < 2 ? x[1][1][u1].x : x[1][1][u1].y, sel);
#pragma unroll
                for (int nt = 0; nt < NTN; nt++)
                    mma16816(acc[nt][i], a, b[nt][0], b[nt][1]);
            }
        }
        __syncwarp();
        cur = nxt;
    }
    /* the warp's (m, l) */
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            l_run[g] += __shfl_xor_sync(FULL, l_run[g], o);
    __syncthreads(); /* every warp is done with the tables: red overlays them */
    float(&red)[VNW][G][D] = *reinterpret_cast<float(*)[VNW][G][D]>(dyn);
    /* lane (gq, tq): m-tile i row gq = channel gq * D / 8 + i, row gq + 8 =
     * that + D / 16; columns 2 tq (hi) and 2 tq + 1 (lo) of head 4 nt + tq */
#pragma unroll
    for (int nt = 0; nt < NTN; nt++) {
        const int h = 4 * nt + tq;
        if (h < G)
#pragma unroll
            for (int i = 0; i < MT; i++) {
                red[warp][h][gq * (D / 8) + i] = (acc[nt][i][0] + acc[nt][i][1]) * vinv;
                red[warp][h][gq * (D / 8) + D / 16 + i] = (acc[nt][i][2] + acc[nt][i][3]) * vinv;
            }
    }
#pragma unroll
    for (int g = 0; g < G; g++)
        if (lane == 0) {
            wml[warp][g][0] = m_run[g];
            wml[warp][g][1] = l_run[g];
        }
    __syncthreads();
    combine_warps<G, D, VNW>(p, red, wml, cw.part0, tid);
}

template <int D, int G, bool C2>
__global__ void __launch_bounds__(NT, 1) attn_vecinfer(const __grid_constant__ AttnParams p)
{
    __shared__ __align__(16) float wts[VNW][G][WS];
    __shared__ __align__(16) uint8_t vrow[VNW][32][VRB]; /* (the rotated queries before the tiles) */
    __shared__ float wml[VNW][G][2];
    extern __shared__ __align__(16) float dyn[]; /* lut, then the fp16 value codebook; red at the end */
    static_assert(sizeof(float) * G * D <= sizeof vrow, "the queries overlay vrow");
    float(&qs)[G][D] = *reinterpret_cast<float(*)[G][D]>(&vrow[0][0][0]);

    const int tid = threadIdx.x;
    const CtaWork cw = cta_work<G>(p);
    if (empty_chunk<G>(p, cw, tid))
        return;
    const int S = p.kf.sub_dim, M = D / S, K = 1 << p.kf.bits;
    const float *klam = p.kf.tables, *kcb = p.kf.tables + D;
    float *lut = dyn;
    uint8_t *vcb = (uint8_t *)(dyn + (size_t)G * M * K);

    /* the value codebook, in flight while the key tables are built */
    const float vinv = copy_vcb<C2>(p.vf, D, vcb, tid);
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
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads(); /* (also: every thread has read qs before vrow is written) */
    if (S == 8 && p.kf.bits == 8 && p.vf.sub_dim == 8 && p.vf.bits == 8)
        vi_main<D, G, true, C2>(p, cw, lut, vcb, vinv, wts, vrow, wml, dyn, tid);
    else
        vi_main<D, G, false, C2>(p, cw, lut, vcb, vinv, wts, vrow, wml, dyn, tid);
}

/* dynamic shared memory of attn_vecinfer<D, G, c2> for these formats: the
 * key tables and the fp16 value codebook, or the warps' accumulators (red)
 * where those are larger */
size_t vi_dyn_bytes(const vq_cuda_format &kf, const vq_cuda_format &vf, int G, bool c2)
{
    const int D = kf.head_dim;
    const size_t lut = (size_t)G * (D / kf.sub_dim) * ((size_t)1 << kf.bits) * sizeof(float);
    const size_t vt = (c2 ? (size_t)C2_OFF : 0) + ((size_t)VROW << vf.bits);
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

/* whether the D = 128 codebook takes its second copy (it fits; not with
 * VQ_CUDA_VI_ONECOPY=1 in the environment: the test runs both) */
bool vi_c2(const vq_cuda_format &kf, const vq_cuda_format &vf, int G)
{
    const char *e = getenv("VQ_CUDA_VI_ONECOPY");
    if (kf.head_dim != 128 || (e && !strcmp(e, "1")))
        return false;
    return vi_dyn_bytes(kf, vf, G, true) + static_bytes(kf.head_dim, G) <= (size_t)SMEM_MAX;
}

template <int D, int G, bool C2>
cudaError_t vi_attr()
{
    static bool attr_set = false; /* once per instantiation (idempotent) */
    if (attr_set)
        return cudaSuccess;
    const cudaError_t e = cudaFuncSetAttribute(attn_vecinfer<D, G, C2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)(SMEM_MAX - static_smem<D, G>()));
    attr_set = e == cudaSuccess;
    return e;
}

template <int D, int G, bool C2>
cudaError_t launch_vi(const AttnParams &p, int batch, size_t smem, cudaStream_t s)
{
    const cudaError_t e = vi_attr<D, G, C2>();
    if (e != cudaSuccess)
        return e;
    attn_vecinfer<D, G, C2><<<dim3(p.splits, p.n_kv, batch), NT, smem, s>>>(p);
    return cudaGetLastError();
}

template <int D, int G, bool C2>
int ctas_vi(size_t smem)
{
    int n = 0;
    if (vi_attr<D, G, C2>() != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, attn_vecinfer<D, G, C2>, NT, smem) != cudaSuccess || n < 1)
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
    if (vi_dyn_bytes(kf, vf, G, false) + static_bytes(kf.head_dim, G) > (size_t)SMEM_MAX)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED,
                            "cuda: decode_attention: vecinfer tables and value codebook of %zu bytes for %d query "
                            "heads per KV head exceed the shared memory",
                            vi_dyn_bytes(kf, vf, G, false), G);
    return VQ_OK;
}

/* CTAs of attn_vecinfer per SM for these formats (the occupancy
 * calculator's answer, at most VQ_MMA_MAX_CTAS; 1 where it fails): the
 * split count plans for it */
int vq_vecinfer_ctas(const vq_cuda_format &kf, const vq_cuda_format &vf, int D, int G)
{
    const bool c2 = vi_c2(kf, vf, G);
    const size_t smem = vi_dyn_bytes(kf, vf, G, c2);
    int n = 1;
#define VQ_VI(DD, GG) \
    if (D == DD && G == GG) n = c2 ? ctas_vi<DD, GG, DD == 128>(smem) : ctas_vi<DD, GG, false>(smem);
    VQ_VI(64, 1) VQ_VI(64, 2) VQ_VI(64, 4) VQ_VI(64, 8)
    VQ_VI(128, 1) VQ_VI(128, 2) VQ_VI(128, 4) VQ_VI(128, 8)
#undef VQ_VI
    return n < VQ_MMA_MAX_CTAS ? n : VQ_MMA_MAX_CTAS;
}

cudaError_t vq_vecinfer_launch(const AttnParams &p, int D, int G, int batch, cudaStream_t s)
{
    const bool c2 = vi_c2(p.kf, p.vf, G);
    const size_t smem = vi_dyn_bytes(p.kf, p.vf, G, c2);
#define VQ_VI(DD, GG) \
    if (D == DD && G == GG) \
        return c2 ? launch_vi<DD, GG, DD == 128>(p, batch, smem, s) : launch_vi<DD, GG, false>(p, batch, smem, s);
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
    /* values: then a header (vinv) and the codebook in fp16 [K][D], scaled
     * by 2^sh so that its largest entry lies in [2^14, 2^15) */
    const int D = f->head_dim, K = 1 << f->bits, vS = f->sub_dim;
    const bool val = f->role == VQ_ROLE_VALUE;
    const size_t nb = n * sizeof(float) + (val ? 16 + vcb_bytes(D, f->bits) : 0);
    if (val && n != vcb_floats_before(D, f->bits)) {
        free(host);
        return vq_cuda_fail(VQ_ERR_STATE, "cuda: tables_upload: %zu floats, expected %zu", n,
                            vcb_floats_before(D, f->bits));
    }
    if (bytes < nb) {
        free(host);
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables_upload: buffer of %zu bytes < %zu", bytes, nb);
    }
    uint8_t *buf = (uint8_t *)malloc(nb);
    if (!buf) {
        free(host);
        return vq_cuda_fail(VQ_ERR_NOMEM, "cuda: tables_upload: out of memory");
    }
    memcpy(buf, host, n * sizeof(float));
    if (val) {
        float mx = 0.0f;
        for (size_t i = D; i < n; i++)
            mx = fmaxf(mx, fabsf(host[i]));
        int ex = 0;
        if (mx > 0.0f)
            frexpf(mx, &ex); /* mx < 2^ex */
        const int sh = mx > 0.0f ? (15 - ex < -100 ? -100 : 15 - ex > 100 ? 100 : 15 - ex) : 0;
        const float hdr[4] = {ldexpf(1.0f, -sh), 0.0f, 0.0f, 0.0f};
        memcpy(buf + n * sizeof(float), hdr, sizeof hdr);
        __half *cb = (__half *)(buf + n * sizeof(float) + 16);
        for (int k = 0; k < K; k++)
            for (int ch = 0; ch < D; ch++)
                cb[(size_t)k * D + ch] =
                    __float2half_rn(ldexpf(host[D + ((size_t)(ch / vS) * K + k) * vS + ch % vS], sh));
    }
    free(host);
    cudaError_t e = cudaMemcpy(dev, buf, nb, cudaMemcpyHostToDevice);
    free(buf);
    if (e != cudaSuccess)
        return vq_cuda_fail(VQ_ERR_STATE, "cuda: tables_upload: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    f->tables = (const float *)dev;
    return VQ_OK;
}
