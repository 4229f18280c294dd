/* quantize.cu -- quantize-on-append (veloxquant_cuda.h: vq_cuda_quantize).
 *
 * One CTA of 128 threads encodes one codec block (one token, or a KIVI key
 * group of `group` tokens) into the CPU codec's exact bytes: every rounding
 * step is the CPU's (fp16 round-to-nearest-even, IEEE division, roundf, the
 * rotation's butterflies in core/hadamard.c's order, and the norms that
 * turboquant.c / rabitq.c sum in double, summed here in double in the same
 * order by one thread). Bits are assembled in shared memory (atomicOr on
 * words) and copied out with 2-byte stores (block offsets are even). */
#include <cuda_runtime.h>
#include <math.h>

#include "codec/kivi_quant.h" /* kivi_range, kivi_code: the CPU codec's own */
#include "formats.cuh"
#include "rotation.cuh"

using namespace vqg;

#define QT 128                 /* threads per CTA */
#define OUT_WORDS 2304         /* 9216 bytes >= the largest block (kivi keys, G=128, D=128, 4 bits) */

extern "C" vq_status vq_cuda_fail(vq_status st, const char *fmt, ...);

__device__ __forceinline__ uint16_t f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }

__device__ __forceinline__ void put_bits(uint32_t *w, int bitpos, uint32_t v)
{
    atomicOr(&w[bitpos >> 5], v << (bitpos & 31)); /* widths 1, 2, 4, 8 never straddle a word */
}
__device__ __forceinline__ void put_u16(uint32_t *w, int byte, uint16_t v) { put_bits(w, 8 * byte, v); }

__device__ __forceinline__ int lm_index(const float *thr, int levels, float x)
{
    int i = 0;
    while (i < levels - 1 && x > thr[i])
        i++;
    return i;
}

template <int D>
__global__ void __launch_bounds__(QT) quantize_kernel(const __grid_constant__ vq_cuda_format f, const float *x,
                                                      const int64_t *offsets, uint8_t *pool)
{
    __shared__ float y[D];
    __shared__ uint32_t ob[OUT_WORDS];
    __shared__ float s_norm;
    const int blk = blockIdx.x, tid = threadIdx.x;
    const int nwords = (f.block_bytes + 3) / 4;
    for (int i = tid; i < nwords; i += QT)
        ob[i] = 0;
    const float *xb = x + (size_t)blk * f.block_tokens * D;

    if (f.method == VQ_CUDA_KIVI && f.role == VQ_ROLE_KEY) {
        /* per channel over the block's G tokens: scales, mins, codes */
        const int G = f.group, B = f.bits, row = B * D / 8;
        const unsigned maxc = (1u << B) - 1;
        __syncthreads();
        for (int ch = tid; ch < D; ch += QT) {
            float s, m;
            kivi_range(xb + ch, G, D, B, &s, &m);
            put_u16(ob, 2 * ch, f2h(s));
            put_u16(ob, 2 * D + 2 * ch, f2h(m));
            for (int t = 0; t < G; t++)
                put_bits(ob, 8 * (4 * D + t * row) + ch * B, kivi_code(xb[t * D + ch], s, m, maxc));
        }
    } else {
        for (int i = tid; i < D; i += QT)
            y[i] = xb[i];
        __syncthreads();
        if (f.method == VQ_CUDA_TQ_RVQ || f.method == VQ_CUDA_RABITQ) {
            if (tid == 0) { /* the CPU's double sum, same order */
                double nn = 0.0;
                for (int d = 0; d < D; d++)
                    nn += (double)y[d] * y[d];
                s_norm = (float)sqrt(nn);
            }
            __syncthreads();
            float norm = s_norm, inv = norm > 0.0f ? __fdiv_rn(1.0f, norm) : 0.0f;
            for (int i = tid; i < D; i += QT)
                y[i] = __fmul_rn(y[i], inv);
            __syncthreads();
        }
        if (f.rot)
            rot_forward_smem<D, 1>(y, f.sign, tid, QT);
        switch (f.method) {
        case VQ_CUDA_FP16:
            for (int i = tid; i < D; i += QT)
                put_u16(ob, 2 * i, f2h(y[i]));
            break;
        case VQ_CUDA_Q8_0:
            for (int b = tid; b < D / 32; b += QT) {
                const float *v = y + 32 * b;
                float amax = 0.0f;
                for (int i = 0; i < 32; i++)
                    amax = fmaxf(amax, fabsf(v[i]));
                uint16_t dh = f2h(__fdiv_rn(amax, 127.0f));
                float d = h2f(dh), id = d > 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
                put_u16(ob, 34 * b, dh);
                for (int i = 0; i < 32; i++) {
                    float q = fminf(127.0f, fmaxf(-127.0f, roundf(__fmul_rn(v[i], id))));
                    put_bits(ob, 8 * (34 * b + 2 + i), (uint32_t)(uint8_t)(int8_t)q);
                }
            }
            break;
        case VQ_CUDA_Q4_0:
            for (int b = tid; b < D / 32; b += QT) {
                const float *v = y + 32 * b;
                float amax = 0.0f, vmax = 0.0f;
                for (int i = 0; i < 32; i++)
                    if (fabsf(v[i]) > amax) {
                        amax = fabsf(v[i]);
                        vmax = v[i];
                    }
                uint16_t dh = f2h(__fdiv_rn(vmax, -8.0f));
                float d = h2f(dh), id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
                put_u16(ob, 18 * b, dh);
                for (int i = 0; i < 16; i++) {
                    float a = fminf(15.0f, fmaxf(0.0f, __fadd_rn(roundf(__fmul_rn(v[i], id)), 8.0f)));
                    float c = fminf(15.0f, fmaxf(0.0f, __fadd_rn(roundf(__fmul_rn(v[i + 16], id)), 8.0f)));
                    put_bits(ob, 8 * (18 * b + 2 + i), (unsigned)a | (unsigned)c << 4);
                }
            }
            break;
        case VQ_CUDA_KIVI: { /* values: per token over groups of channels */
            const int G = f.group, B = f.bits, ng = D / G;
            const unsigned maxc = (1u << B) - 1;
            for (int g = tid; g < ng; g += QT) {
                float s, m;
                kivi_range(y + g * G, G, 1, B, &s, &m);
                put_u16(ob, 2 * g, f2h(s));
                put_u16(ob, 2 * ng + 2 * g, f2h(m));
                for (int ch = g * G; ch < (g + 1) * G; ch++)
                    put_bits(ob, 8 * 4 * ng + ch * B, kivi_code(y[ch], s, m, maxc));
            }
            break;
        }
        case VQ_CUDA_TQ_RVQ: {
            const int B = f.bits, c1off = 2, c2off = 2 + B * D / 8;
            if (tid == 0)
                put_u16(ob, 0, f2h(s_norm));
            for (int d = tid; d < D; d += QT) {
                int j1 = lm_index(f.t1, f.levels1, __fdiv_rn(y[d], f.s1));
                float r = __fsub_rn(y[d], f.c1[j1]);
                int j2 = lm_index(f.t2, f.levels2, __fdiv_rn(r, f.s2));
                put_bits(ob, 8 * c1off + d * B, (uint32_t)j1);
                put_bits(ob, 8 * c2off + d * B, (uint32_t)j2);
            }
            break;
        }
        case VQ_CUDA_RABITQ: {
            for (int d = tid; d < D; d += QT)
                if (y[d] >= 0.0f)
                    put_bits(ob, 8 * 4 + d, 1u);
            if (tid == 0) {
                double s = 0.0;
                for (int d = 0; d < D; d++)
                    s += fabs((double)y[d]);
                double corr = s / sqrt((double)D);
                put_u16(ob, 0, f2h(s_norm));
                put_u16(ob, 2, f2h(corr > 0.0 ? (float)corr : 1.0f));
            }
            break;
        }
        default:
            break;
        }
    }
    __syncthreads();
    uint16_t *dst = (uint16_t *)(pool + offsets[blk]);
    const uint16_t *src = (const uint16_t *)ob;
    for (int i = tid; i < f.block_bytes / 2; i += QT)
        dst[i] = src[i];
}

extern "C" vq_status vq_cuda_quantize(const vq_cuda_format *f, const float *x, int64_t n_blocks,
                                      const int64_t *offsets, void *pool, cudaStream_t stream)
{
    if (!f || !x || !offsets || !pool)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: quantize: NULL argument");
    if (n_blocks < 0 || n_blocks > 0x7fffffff)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: quantize: n_blocks %lld out of range", (long long)n_blocks);
    if (f->method < VQ_CUDA_FP16 || f->method > VQ_CUDA_RABITQ)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: quantize: method %d has no GPU quantizer%s", f->method,
                            f->method == VQ_CUDA_VECINFER ? " (vecinfer: encode with vq_codec_encode)" : "");
    if (f->block_bytes > 4 * OUT_WORDS || f->block_bytes % 2)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: quantize: block of %d bytes unsupported", f->block_bytes);
    if (n_blocks == 0)
        return VQ_OK;
    if (f->head_dim == 64)
        quantize_kernel<64><<<(unsigned)n_blocks, QT, 0, stream>>>(*f, x, offsets, (uint8_t *)pool);
    else if (f->head_dim == 128)
        quantize_kernel<128><<<(unsigned)n_blocks, QT, 0, stream>>>(*f, x, offsets, (uint8_t *)pool);
    else
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: quantize: head_dim %d unsupported (64 or 128)", f->head_dim);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return vq_cuda_fail(VQ_ERR_STATE, "cuda: quantize launch: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    return VQ_OK;
}
