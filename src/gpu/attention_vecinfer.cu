/* attention_vecinfer.cu -- the split kernel of paged decode attention for
 * vecinfer keys and values (table lookups on the CUDA cores), and
 * vq_cuda_tables_upload (the codebooks on the device). Same grid (one CTA
 * of NW warps per context chunk, KV head and sequence), same partial
 * results and same reduce launch as attention.cu's kernels.
 *
 * As the CPU codec (codec/vecinfer.c): the query of head g becomes
 * q~ = R (q * lambda) (R = H diag(sigma), the rotation.cuh butterflies), its
 * table LUT[g][m][k] = <q~_m, C_m,k> (times scale * log2 e) goes to shared
 * memory, and a token's score is sum_m LUT[g][m][code_m]. Values: the
 * weighted centroids C_m,code are summed in the rotated domain and the
 * reduce launch maps the result back (R^T: the value format has rot = 1).
 *
 * Lanes: in the score phase lane i takes token t0 + i of the warp's tile of
 * 32 and reads its M codes and G*M table entries; the online softmax is
 * per head over the warp; in the value phase lane i owns channels
 * [i*D/32, (i+1)*D/32) (one piece or part of one) and, for each token of
 * the tile, reads that piece's code and D/32 floats of its centroid. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attn_common.cuh"
#include "formats.cuh"
#include "rotation.cuh"

using namespace vqg;

extern "C" vq_status vq_cuda_fail(vq_status st, const char *fmt, ...);
extern "C" vq_status vq_cuda_tables_host(const vq_codec *c, float **out, size_t *n);

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr int LUT_MAX_BYTES = 192 * 1024; /* dynamic shared memory for the tables */

/* code of piece m in a token's row: bits [m*bits, (m+1)*bits) of the
 * LSB-first bit stream (bits 1, 2, 4 or 8: never straddles a byte) */
__device__ __forceinline__ unsigned vi_code(const uint8_t *row, int m, int bits)
{
    const int bit = m * bits;
    return (unsigned)(row[bit >> 3] >> (bit & 7)) & ((1u << bits) - 1u);
}

template <int D, int G>
__global__ void __launch_bounds__(NW * 32) attn_vecinfer(const __grid_constant__ AttnParams p)
{
    __shared__ float red[NW][G][D];  /* per warp: accumulators, then (m, l) */
    __shared__ float wml[NW][G][2];
    __shared__ float qs[G][D];       /* the rotated queries */
    extern __shared__ __align__(16) float lut[]; /* [G][M][K] */
    constexpr int CPL = D / 32;      /* value channels per lane */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const CtaWork cw = cta_work<G>(p);
    if (empty_chunk<G>(p, cw, tid))
        return;
    const int kvh = cw.kvh, b = cw.b, s0 = cw.s0, s1 = cw.s1;
    const size_t qrow0 = cw.qrow0, part0 = cw.part0;
    const int S = p.kf.sub_dim, M = D / S, kbits = p.kf.bits, K = 1 << kbits;
    const int vS = p.vf.sub_dim, vbits = p.vf.bits, vK = 1 << vbits;
    const float *klam = p.kf.tables, *kcb = p.kf.tables + D, *vcb = p.vf.tables + D;

    /* q~ = R (q * lambda), then the tables */
    for (int i = tid; i < G * D; i += NW * 32)
        qs[i / D][i % D] = p.q[qrow0 * D + i] * klam[i % D];
    __syncthreads();
    rot_forward_smem<D, G>(&qs[0][0], p.kf.sign, tid, NW * 32);
    for (int i = tid; i < G * M * K; i += NW * 32) {
        const int g = i / (M * K), mk = i % (M * K), m = mk / K;
        const float *cent = kcb + (size_t)mk * S, *qv = &qs[g][m * S];
        float s = 0.0f;
        for (int d = 0; d < S; d++)
            s += qv[d] * cent[d];
        lut[i] = s * p.qscale;
    }
    __syncthreads();

    const int32_t *pt = p.page_table + ((size_t)b * p.n_kv + kvh) * p.max_pages;
    const int P = p.page_tokens;
    const int c0 = lane * CPL, vm = c0 / vS, voff = c0 % vS; /* my channels, their piece */
    float m_run[G], l_run[G], acc[G][CPL];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m_run[g] = -INFINITY;
        l_run[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < CPL; e++)
            acc[g][e] = 0.0f;
    }
    for (int t0 = s0 + warp * 32; t0 < s1; t0 += NW * 32) {
        const int tok = min(t0 + lane, s1 - 1);
        const int32_t pg = pt[tok / P];
        const int ti = tok % P;
        const uint8_t *krow = p.kp + (size_t)pg * p.kpb + (size_t)ti * p.kf.block_bytes;
        const unsigned long long voffs = (unsigned long long)pg * p.vpb + (unsigned long long)ti * p.vf.block_bytes;
        float sc[G];
#pragma unroll
        for (int g = 0; g < G; g++)
            sc[g] = 0.0f;
        if (kbits == 8 && (p.kf.block_bytes & 3) == 0) { /* byte codes, 4 per word load */
            for (int m4 = 0; m4 < M; m4 += 4) {
                const uint32_t w = *(const uint32_t *)(krow + m4);
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const unsigned code = (w >> (8 * e)) & 255u;
#pragma unroll
                    for (int g = 0; g < G; g++)
                        sc[g] += lut[((size_t)g * M + m4 + e) * K + code];
                }
            }
        } else {
#pragma unroll 4
            for (int m = 0; m < M; m++) {
                const unsigned code = vi_code(krow, m, kbits);
#pragma unroll
                for (int g = 0; g < G; g++)
                    sc[g] += lut[((size_t)g * M + m) * K + code];
            }
        }
        /* online softmax per head over the tile (tokens past s1 weigh 0) */
        float pw[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            const float x = t0 + lane < s1 ? sc[g] : -INFINITY;
            float mx = x;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(FULL, mx, o));
            const float mnew = fmaxf(m_run[g], mx); /* finite: token t0 < s1 */
            const float al = exp2f(m_run[g] - mnew);
            m_run[g] = mnew;
            l_run[g] *= al;
#pragma unroll
            for (int e = 0; e < CPL; e++)
                acc[g][e] *= al;
            pw[g] = exp2f(x - mnew);
            l_run[g] += pw[g];
        }
        /* values of the tile's tokens, in the rotated domain, 8 tokens at a
         * time (their loads in flight together; a token past s1 has weight
         * 0 and the row of token s1 - 1) */
        const int nv = min(32, s1 - t0);
        for (int j0 = 0; j0 < nv; j0 += 8) {
            float cv[8][CPL];
#pragma unroll
            for (int jj = 0; jj < 8; jj++) {
                const unsigned long long vo = __shfl_sync(FULL, voffs, j0 + jj);
                const unsigned code = vi_code(p.vp + vo, vm, vbits);
                const float *cent = vcb + ((size_t)vm * vK + code) * vS + voff;
                if constexpr (CPL == 4) {
                    const float4 v4 = __ldg((const float4 *)cent);
                    cv[jj][0] = v4.x;
                    cv[jj][1] = v4.y;
                    cv[jj][2] = v4.z;
                    cv[jj][3] = v4.w;
                } else {
                    const float2 v2 = __ldg((const float2 *)cent);
                    cv[jj][0] = v2.x;
                    cv[jj][1] = v2.y;
                }
            }
#pragma unroll
            for (int jj = 0; jj < 8; jj++)
#pragma unroll
                for (int g = 0; g < G; g++) {
                    const float w = __shfl_sync(FULL, pw[g], j0 + jj);
#pragma unroll
                    for (int e = 0; e < CPL; e++)
                        acc[g][e] = fmaf(w, cv[jj][e], acc[g][e]);
                }
        }
    }
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            l_run[g] += __shfl_xor_sync(FULL, l_run[g], o);
#pragma unroll
        for (int e = 0; e < CPL; e++)
            red[warp][g][c0 + e] = acc[g][e];
        if (lane == 0) {
            wml[warp][g][0] = m_run[g];
            wml[warp][g][1] = l_run[g];
        }
    }
    __syncthreads();
    combine_warps<G, D>(p, red, wml, part0, tid);
}

template <int D, int G>
cudaError_t launch_vi(const AttnParams &p, int batch, size_t smem, cudaStream_t s)
{
    static bool attr_set = false; /* once per instantiation (idempotent) */
    if (!attr_set) {
        cudaError_t e = cudaFuncSetAttribute(attn_vecinfer<D, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, LUT_MAX_BYTES);
        if (e != cudaSuccess)
            return e;
        attr_set = true;
    }
    attn_vecinfer<D, G><<<dim3(p.splits, p.n_kv, batch), NW * 32, smem, s>>>(p);
    return cudaGetLastError();
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

cudaError_t vq_vecinfer_launch(const AttnParams &p, int D, int G, int batch, cudaStream_t s)
{
    const size_t smem = vq_vecinfer_lut_bytes(p.kf, G);
#define VQ_VI(DD, GG) \
    if (D == DD && G == GG) return launch_vi<DD, GG>(p, batch, smem, s);
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
