/* test_gpu.cu -- the GPU kernels against the CPU codecs (run on a machine
 * with an NVIDIA GPU: `make cuda && build/cuda/test_gpu`).
 *
 * For each key/value format pair, head_dim and GQA shape, on fresh random
 * K/V/Q (never zeros):
 *  1. quantize-on-append: the GPU's bytes for every block equal
 *     vq_codec_encode's (counted byte by byte);
 *  2. decode attention from the CPU-encoded pages, scattered over a pool by
 *     a shuffled page table, several batch sizes, ragged sequence lengths
 *     (last pages partly filled), auto and forced split counts; the output
 *     is poisoned (0xFF bytes: NaN) before each run, every element must be
 *     finite and the relative L2 error per (sequence, head) against the CPU
 *     reference (vq_codec_prepare_query / score / softmax in double /
 *     accumulate / accum_finish) must stay under TOL (vecinfer values:
 *     under TOL + VI_FP16_U * kappa, below). q8_0 / q4_0 keys both as
 *     qbits=0 (float query) and as the CPU's default (qbits=8: query
 *     rounded to int8 per block); for the latter, a control run with the
 *     format's qbits set to 0 (the GPU scoring with the float query) must
 *     miss TOL, so that these cases can tell the two arithmetics apart;
 *  3. argument errors come back as vq_status with a message. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

extern "C" {
#include "test.h"
}
#include "veloxquant.h"
#include "veloxquant_cuda.h"
#include "gpu_host_util.h"

#define TOL 2e-4
/* vecinfer values: the GPU multiplies the weights with the value codebook
 * rounded to fp16 (scaled by a power of two so that its largest entry lies
 * in [2^14, 2^15)). Round-to-nearest moves each entry by at most its
 * magnitude times the unit roundoff 2^-11 (entries that become subnormal:
 * by at most 2^-25 in the scaled units, below 2^-39 of the largest entry),
 * so the output moves by at most 2^-11 * sum_t w_t |v_t| in L2 norm (v_t
 * the token's decoded value: the rotation keeps norms), i.e. by
 * VI_FP16_U * kappa relative to the reference, kappa = sum_t w_t |v_t| /
 * |out|; the test allows that on top of TOL. */
#define VI_FP16_U (1.0 / 2048.0)

/* K/V-like data: per-channel offsets and scales plus noise */
static void fill_kv(float *x, size_t n, int D)
{
    std::vector<float> off(D), sc(D);
    for (int d = 0; d < D; d++) {
        off[d] = 0.5f * gauss();
        sc[d] = 0.5f + (float)unif() * (d % 17 == 0 ? 4.0f : 1.0f);
    }
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < D; d++)
            x[i * D + d] = off[d] + sc[d] * gauss();
}

struct Case {
    const char *kspec, *vspec;
    /* values: 0 as fill_kv makes them; 1 each token's row times 2^u, u
     * uniform in [-10, 10] (kivi value scales spread over 2^20, so the
     * tensor-core kernel's weight exponent changes inside a chunk); 2 every
     * row times 2^-10 (small scales only); 3 every row times 2^10 (large
     * scales only) */
    int vmode;
};

/* q8_0 / q4_0 keys as qbits=0 (float queries) and as the CPU's default
 * spec (no qbits: qbits=8 since session 53, the query rounded to int8 per
 * block of 32; vq_cuda_format.qbits carries it to the kernels). The
 * default-spec cases cover the tensor-core pairs (q8_0, q4_0 with and
 * without rotation) and, through q8_0:rot=1 keys with q4_0 values, the
 * CUDA-core generic kernel; the runs with VQ_CUDA_NO_MMA=1 take the
 * CUDA-core kernels of the tensor-core pairs. q4_0 values name qbits=0:
 * the GPU sums every value format with float weights, the CPU's qbits=0,
 * while q4_0 values default to int8 weights (qbits=8) on the CPU since
 * session 54. kivi names qbits=0 for both roles: its CPU default is
 * qbits=8 (int8 queries and weights) since session 55, the GPU's kivi
 * arithmetic is float. 1-bit turboquant_rvq keys name qbits=0: the CPU
 * scores them against the query's 4-bit planes by default since session
 * 56, the GPU against its own rounding of the float query (as rabitq,
 * named qbits=0 likewise). */
static const Case cases[] = {
    {"fp16", "fp16", 0},
    {"q8_0:qbits=0", "q8_0", 0},
    {"q8_0:rot=1,qbits=0", "q4_0:qbits=0", 0},
    {"q8_0:rot=1,qbits=0", "q8_0:rot=1", 0},
    {"q4_0:rot=1,qbits=0", "q4_0:rot=1,qbits=0", 0},
    {"q4_0:qbits=0", "q4_0:qbits=0", 0},
    {"kivi:bits=2,qbits=0", "kivi:bits=2,qbits=0", 0},
    {"kivi:bits=4,qbits=0", "kivi:bits=4,qbits=0", 0},
    {"kivi:bits=4,group=64,qbits=0", "kivi:bits=4,group=16,qbits=0", 0},
    {"kivi:bits=2,group=16,qbits=0", "kivi:bits=2,group=64,qbits=0", 0}, /* D=64: keys unfolded (group < warp-tile) */
    {"kivi:bits=2,group=64,qbits=0", "kivi:bits=2,qbits=0", 0},         /* tensor cores: key blocks of 2 iterations */
    {"turboquant_rvq:bits=1,qbits=0", "kivi:bits=2,qbits=0", 0},
    {"turboquant_rvq:bits=2", "turboquant_rvq:bits=1", 0},
    {"turboquant_rvq:bits=4", "fp16", 0},
    {"turboquant_rvq:bits=2,fit=1", "turboquant_rvq:bits=4,fit=1", 0}, /* tables from tq_stage2.h */
    {"turboquant_rvq:bits=1,qbits=0,fit=1", "kivi:bits=2,qbits=0", 0},
    {"rabitq:bits=1,qbits=0", "kivi:bits=2,qbits=0", 0},
    {"kivi:bits=2,qbits=0", "kivi:bits=2,qbits=0", 1},
    {"turboquant_rvq:bits=1,qbits=0", "kivi:bits=2,qbits=0", 2},
    {"turboquant_rvq:bits=2", "kivi:bits=2,qbits=0", 0}, /* tensor cores at G <= 4 */
    {"turboquant_rvq:bits=2", "kivi:bits=2,qbits=0", 1},
    {"fp16", "rabitq:bits=1,qbits=0", 0},
    {"q8_0:qbits=0", "q8_0", 1}, /* block scales d spread over 2^20 */
    {"q8_0:qbits=0", "q8_0", 2}, /* small d: P * d below the fp16 normal range unless scaled */
    {"q4_0:rot=1,qbits=0", "q4_0:rot=1,qbits=0", 2},
    {"q4_0:qbits=0", "q4_0:qbits=0", 1},
    {"q8_0:rot=1,qbits=0", "q4_0:qbits=0", 3},
    {"q8_0:qbits=0", "q8_0", 3},
    {"vecinfer:sub_dim=8,bits=8", "vecinfer:sub_dim=8,bits=8", 0}, /* calibrated here; tables uploaded */
    {"vecinfer:sub_dim=4,bits=4", "vecinfer:sub_dim=8,bits=2", 0},
    /* the CPU's default q8_0 / q4_0 key spec (qbits=8); last, so that the
     * cases above keep their shapes (main) */
    {"q8_0", "q8_0", 0},
    {"q4_0:rot=1", "q4_0:rot=1,qbits=0", 0},
    {"q4_0", "q4_0:qbits=0", 0},
    {"q8_0:rot=1", "q4_0:qbits=0", 0},
    {"q8_0", "q8_0", 1},
};

/* calibrate a codec that needs it on fresh K/V-like samples */
static bool calibrate_if_needed(vq_codec *c, int D)
{
    if (!vq_codec_needs_calibration(c))
        return true;
    const size_t n = 2048;
    std::vector<float> x(n * D);
    fill_kv(x.data(), n, D);
    return vq_codec_calibrate(c, x.data(), n) == VQ_OK;
}

/* device copy of a format's tables (vecinfer), or NULL where it has none */
static void *upload_tables(vq_codec *c, vq_cuda_format *f)
{
    const size_t bytes = vq_cuda_tables_bytes(c);
    if (!bytes)
        return NULL;
    void *d;
    CK(cudaMalloc(&d, bytes + 16));
    vq_cuda_format g = *f;
    CHECK(vq_cuda_tables_upload(c, &g, d, bytes - 4) == VQ_ERR_INVALID_ARG);           /* too small */
    CHECK(vq_cuda_tables_upload(c, &g, (char *)d + 4, bytes) == VQ_ERR_INVALID_ARG);   /* misaligned */
    CHECK(g.tables == NULL);
    CHECKF(vq_cuda_tables_upload(c, f, d, bytes) == VQ_OK, "tables upload: %s", vq_cuda_last_error());
    return d;
}

/* CPU reference: one query head over n packed tokens; *kappa (where not
 * NULL) = sum_t w_t |v_t| / |out| (VI_FP16_U) */
static void ref_attend(vq_codec *kc, vq_codec *vc, const float *q, const uint8_t *kp, const uint8_t *vp, size_t n,
                       float scale, float *out, double *kappa)
{
    const int D = vq_codec_head_dim(kc);
    std::vector<uint8_t> qb(vq_codec_query_bytes(kc));
    std::vector<float> s(n), w(n), acc(vq_codec_accum_size(vc), 0.0f);
    if (kappa)
        *kappa = 0.0;
    if (n == 0) {
        for (int d = 0; d < D; d++)
            out[d] = 0.0f;
        return;
    }
    vq_codec_prepare_query(kc, q, qb.data());
    vq_codec_score(kc, qb.data(), 1, kp, n, s.data());
    double mx = -1e300, sum = 0.0;
    for (size_t i = 0; i < n; i++)
        mx = fmax(mx, (double)s[i] * scale);
    for (size_t i = 0; i < n; i++)
        sum += exp((double)s[i] * scale - mx);
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(exp((double)s[i] * scale - mx) / sum);
    vq_codec_accumulate(vc, w.data(), 1, vp, n, acc.data());
    vq_codec_accum_finish(vc, acc.data(), out);
    if (kappa) {
        std::vector<float> v((size_t)n * D);
        CHECK(vq_codec_decode(vc, vp, n, v.data()) == VQ_OK);
        double wn = 0.0, o2 = 0.0;
        for (size_t i = 0; i < n; i++) {
            double v2 = 0.0;
            for (int d = 0; d < D; d++)
                v2 += (double)v[i * D + d] * v[i * D + d];
            wn += w[i] * sqrt(v2);
        }
        for (int d = 0; d < D; d++)
            o2 += (double)out[d] * out[d];
        *kappa = wn / (o2 > 0 ? sqrt(o2) : 1e-30);
    }
}

/* one decode-attention call into out: its workspace and dout poisoned
 * (0xFF bytes: NaN) first; the call must succeed */
static void attend_into(const vq_cuda_format &kf, const vq_cuda_format &vf, const vq_cuda_attn_args &a, float *dout,
                        std::vector<float> &out)
{
    const size_t wsb = vq_cuda_attention_workspace(&a);
    void *ws;
    CK(cudaMalloc(&ws, wsb));
    CK(cudaMemset(ws, 0xFF, wsb));
    CK(cudaMemset(dout, 0xFF, out.size() * 4)); /* NaN poison */
    vq_status st = vq_cuda_decode_attention(&kf, &vf, &a, ws, wsb, 0);
    CHECKF(st == VQ_OK, "attention: %s", vq_cuda_last_error());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(ws));
}

/* ||out_r - ref_r|| / ||ref_r|| of row r (D floats); *nonfinite counts
 * the row's outputs that are not finite */
static double row_rel_err(const std::vector<float> &out, const std::vector<float> &ref, int r, int D,
                          size_t *nonfinite)
{
    double e2 = 0.0, r2 = 0.0;
    for (int d = 0; d < D; d++) {
        double o = out[(size_t)r * D + d], x = ref[(size_t)r * D + d];
        if (!isfinite(o))
            ++*nonfinite;
        e2 += (o - x) * (o - x);
        r2 += x * x;
    }
    return sqrt(e2 / (r2 > 0 ? r2 : 1e-30));
}

static void run_case(const Case &cs, int D, int nq, int nkv)
{
    vq_codec *kc = NULL, *vc = NULL;
    uint64_t ks = rnd(), vs = rnd();
    if (vq_codec_create(cs.kspec, D, VQ_ROLE_KEY, ks, &kc) != VQ_OK ||
        vq_codec_create(cs.vspec, D, VQ_ROLE_VALUE, vs, &vc) != VQ_OK) {
        CHECKF(0, "codec create %s / %s: %s", cs.kspec, cs.vspec, vq_last_error());
        return;
    }
    CHECKF(calibrate_if_needed(kc, D) && calibrate_if_needed(vc, D), "calibrate %s / %s: %s", cs.kspec, cs.vspec,
           vq_last_error());
    vq_cuda_format kf, vf;
    CHECK(vq_cuda_format_from_codec(kc, &kf) == VQ_OK);
    CHECK(vq_cuda_format_from_codec(vc, &vf) == VQ_OK);
    void *ktab = upload_tables(kc, &kf), *vtab = upload_tables(vc, &vf);
    const bool gpu_quant = kf.method != VQ_CUDA_VECINFER && vf.method != VQ_CUDA_VECINFER;
    const int kbt = kf.block_tokens, vbt = vf.block_tokens;
    const int unit = kbt > vbt ? kbt : vbt; /* lengths are multiples of this */
    const int P = 256 > unit ? 256 : unit;  /* page tokens */
    const size_t kpb = vq_cuda_page_bytes(&kf, P), vpb = vq_cuda_page_bytes(&vf, P);
    const int batches[] = {1, 3, 8};
    for (int bi = 0; bi < 3; bi++) {
        const int B = batches[bi];
        /* ragged lengths: multiples of unit, not of P; one very short */
        std::vector<int> len(B);
        int maxlen = 0;
        for (int b = 0; b < B; b++) {
            int n = (int)(unif() * 2600) + 1;
            if (b == 1)
                n = (int)(unif() * 200) + 1;
            n = (n + unit - 1) / unit * unit;
            len[b] = n;
            maxlen = n > maxlen ? n : maxlen;
        }
        const int max_pages = (maxlen + P - 1) / P;
        const int n_pages = B * nkv * max_pages;
        std::vector<int32_t> perm(n_pages), table(n_pages);
        for (int i = 0; i < n_pages; i++)
            perm[i] = i;
        for (int i = n_pages - 1; i > 0; i--) {
            int r = (int)(rnd() % (uint64_t)(i + 1));
            int t = perm[i];
            perm[i] = perm[r];
            perm[r] = t;
        }
        table = perm;
        std::vector<uint8_t> kpool((size_t)n_pages * kpb, 0xA5), vpool((size_t)n_pages * vpb, 0x5A);
        std::vector<float> q((size_t)B * nq * D), ref((size_t)B * nq * D), out((size_t)B * nq * D);
        std::vector<double> kap((size_t)B * nq, 0.0); /* vecinfer values: kappa per row (VI_FP16_U) */
        const bool vi_val = vf.method == VQ_CUDA_VECINFER;
        for (auto &x : q)
            x = 2.0f * gauss();
        std::vector<std::vector<uint8_t>> kpk(B * nkv), vpk(B * nkv);
        std::vector<float> allk, allv; /* rows for the GPU quantizer, block order */
        std::vector<int64_t> koffs, voffs;
        const float scale = 1.0f / sqrtf((float)D);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < nkv; h++) {
                const int n = len[b];
                std::vector<float> k((size_t)n * D), v((size_t)n * D);
                fill_kv(k.data(), n, D);
                fill_kv(v.data(), n, D);
                for (int i = 0; i < n && cs.vmode; i++) {
                    const float f = cs.vmode == 1 ? exp2f((float)(unif() * 20.0 - 10.0)) : cs.vmode == 2 ? 1.0f / 1024.0f : 1024.0f;
                    for (int d = 0; d < D; d++)
                        v[(size_t)i * D + d] *= f;
                }
                auto &kp = kpk[b * nkv + h];
                auto &vp = vpk[b * nkv + h];
                kp.resize((size_t)n / kbt * kf.block_bytes);
                vp.resize((size_t)n / vbt * vf.block_bytes);
                vq_codec_encode(kc, k.data(), n, kp.data());
                vq_codec_encode(vc, v.data(), n, vp.data());
                const int32_t *row = &table[(size_t)(b * nkv + h) * max_pages];
                for (int blk = 0; blk < n / kbt; blk++) {
                    int tok = blk * kbt;
                    size_t off = (size_t)row[tok / P] * kpb + (size_t)(tok % P) / kbt * kf.block_bytes;
                    memcpy(&kpool[off], &kp[(size_t)blk * kf.block_bytes], kf.block_bytes);
                    koffs.push_back((int64_t)off);
                }
                for (int blk = 0; blk < n / vbt; blk++) {
                    int tok = blk * vbt;
                    size_t off = (size_t)row[tok / P] * vpb + (size_t)(tok % P) / vbt * vf.block_bytes;
                    memcpy(&vpool[off], &vp[(size_t)blk * vf.block_bytes], vf.block_bytes);
                    voffs.push_back((int64_t)off);
                }
                allk.insert(allk.end(), k.begin(), k.end());
                allv.insert(allv.end(), v.begin(), v.end());
                for (int g = 0; g < nq / nkv; g++) {
                    size_t qi = ((size_t)b * nq + h * (nq / nkv) + g) * D;
                    ref_attend(kc, vc, &q[qi], kp.data(), vp.data(), n, scale, &ref[qi],
                               vi_val ? &kap[qi / D] : NULL);
                }
            }
        /* upload */
        uint8_t *dk, *dv, *dk2, *dv2;
        float *dq, *dout, *dxk, *dxv;
        int32_t *dtab, *dlen;
        int64_t *dko, *dvo;
        CK(cudaMalloc(&dk, kpool.size()));
        CK(cudaMalloc(&dv, vpool.size()));
        CK(cudaMalloc(&dk2, kpool.size()));
        CK(cudaMalloc(&dv2, vpool.size()));
        CK(cudaMalloc(&dq, q.size() * 4));
        CK(cudaMalloc(&dout, out.size() * 4));
        CK(cudaMalloc(&dtab, table.size() * 4));
        CK(cudaMalloc(&dlen, (size_t)B * 4));
        CK(cudaMalloc(&dxk, allk.size() * 4));
        CK(cudaMalloc(&dxv, allv.size() * 4));
        CK(cudaMalloc(&dko, koffs.size() * 8));
        CK(cudaMalloc(&dvo, voffs.size() * 8));
        CK(cudaMemcpy(dk, kpool.data(), kpool.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dv, vpool.data(), vpool.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dk2, kpool.data(), kpool.size(), cudaMemcpyHostToDevice)); /* same filler bytes */
        CK(cudaMemcpy(dv2, vpool.data(), vpool.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dq, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dtab, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dlen, len.data(), (size_t)B * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dxk, allk.data(), allk.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dxv, allv.data(), allv.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dko, koffs.data(), koffs.size() * 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dvo, voffs.data(), voffs.size() * 8, cudaMemcpyHostToDevice));

        /* 1. quantize-on-append: same bytes as the CPU (vecinfer: refused,
         * the pool left as it was) */
        CK(cudaMemset(dk2, 0xA5, kpool.size()));
        CK(cudaMemset(dv2, 0x5A, vpool.size()));
        if (gpu_quant) {
            CHECKF(vq_cuda_quantize(&kf, dxk, (int64_t)koffs.size(), dko, dk2, 0) == VQ_OK, "quantize: %s",
                   vq_cuda_last_error());
            CHECKF(vq_cuda_quantize(&vf, dxv, (int64_t)voffs.size(), dvo, dv2, 0) == VQ_OK, "quantize: %s",
                   vq_cuda_last_error());
        } else {
            CHECK(vq_cuda_quantize(&kf, dxk, (int64_t)koffs.size(), dko, dk2, 0) == VQ_ERR_UNSUPPORTED);
            CK(cudaMemcpy(dk2, kpool.data(), kpool.size(), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dv2, vpool.data(), vpool.size(), cudaMemcpyHostToDevice));
        }
        CK(cudaDeviceSynchronize());
        std::vector<uint8_t> gk(kpool.size()), gv(vpool.size());
        CK(cudaMemcpy(gk.data(), dk2, gk.size(), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(gv.data(), dv2, gv.size(), cudaMemcpyDeviceToHost));
        size_t kdiff = 0, vdiff = 0;
        for (size_t i = 0; i < gk.size(); i++)
            kdiff += gk[i] != kpool[i];
        for (size_t i = 0; i < gv.size(); i++)
            vdiff += gv[i] != vpool[i];
        CHECKF(kdiff == 0 && vdiff == 0, "%s/%s D=%d B=%d: quantize bytes differ: keys %zu of %zu, values %zu of %zu",
               cs.kspec, cs.vspec, D, B, kdiff, gk.size(), vdiff, gv.size());

        /* 2. attention, auto and forced splits */
        vq_cuda_attn_args a = attn_args({B, nq, nkv, D, P, max_pages, maxlen}, dtab, dlen, dk, kpb, dv, vpb, dq, dout);
        /* the tensor-core kernel where it has the pair, and then the
         * CUDA-core kernel for the same data (VQ_CUDA_NO_MMA) */
        const bool has_mma = !strcmp(vq_cuda_attention_kernel(&kf, &vf, &a), "mma");
        const bool is_vi = !strcmp(vq_cuda_attention_kernel(&kf, &vf, &a), "vecinfer");
        const int split_modes[] = {0, 1, 7};
        /* runs 0..2: the kernel the call picks, 3..5: CUDA cores, 6: the
         * tensor-core kernel with 32-token warp iterations only
         * (VQ_CUDA_NO_SUB2; pages here hold 256 tokens, so pairs with
         * 64-token iterations take those otherwise); 7..9: its 12-warp
         * instantiation where the pair has one (VQ_CUDA_MMA_WIDE=1; these
         * short contexts never pick it), 9 with 32-token iterations;
         * 10..12: its 16-warp instantiation where the pair has one, else
         * the 12-warp one (VQ_CUDA_MMA_WIDE=2), 12 with 32-token iterations;
         * the other runs with 64-token iterations wherever instantiated
         * (VQ_CUDA_NO_SUB2=-1: the 12-warp q4_0 and rvq2/kivi2 ones too,
         * which the launch takes for chunks of >= 32768 tokens only);
         * vecinfer: 3..5 with one copy of the value codebook at head_dim
         * 128 (VQ_CUDA_VI_ONECOPY=1, the instantiation for tables that
         * leave no room for the second) */
        const int nrun = has_mma ? 13 : is_vi ? 6 : 3;
        /* the last run (extra): the kernel the call picks with 37 splits,
         * more than the reduce launch's one-pass path takes (32; the
         * other runs have fewer), some of them empty */
        for (int run = 0; run <= nrun; run++) {
            const bool extra = run == nrun;
            const int sm = run % 3;
            setenv("VQ_CUDA_VI_ONECOPY", is_vi && run >= 3 && !extra ? "1" : "0", 1);
            setenv("VQ_CUDA_NO_MMA", run >= 3 && run < 6 && !extra ? "1" : "0", 1);
            setenv("VQ_CUDA_NO_SUB2", (run == 6 || run == 9 || run == 12) && !extra ? "1" : "-1", 1);
            setenv("VQ_CUDA_MMA_WIDE", extra || run < 7 ? "-1" : run < 10 ? "1" : "2", 1);
            const char *kname = extra ? "picked-37-splits" : run == 6 ? "mma-32tok" : run == 9 ? "mma-w12-32tok"
                                : run == 12 ? "mma-w16-32tok" : run >= 10 ? "mma-w16" : run >= 7 ? "mma-w12"
                                : is_vi && run >= 3 ? "vecinfer-1copy"
                                : vq_cuda_attention_kernel(&kf, &vf, &a);
            a.splits = extra ? 37 : split_modes[sm];
            attend_into(kf, vf, a, dout, out);
            size_t bad = 0;
            double worst = 0.0, worst_tol = 0.0; /* largest error; largest error over its row's tolerance */
            for (int r = 0; r < B * nq; r++) {
                double rel = row_rel_err(out, ref, r, D, &bad);
                const double tol = TOL + (vi_val ? VI_FP16_U * kap[r] : 0.0);
                worst = rel > worst || rel != rel ? rel : worst;
                worst_tol = rel / tol > worst_tol || rel != rel ? rel / tol : worst_tol;
            }
            CHECKF(bad == 0, "%s/%s (values %d) D=%d B=%d splits=%d %s: %zu outputs not finite", cs.kspec, cs.vspec, cs.vmode, D, B,
                   a.splits, kname, bad);
            CHECKF(worst_tol <= 1.0, "%s/%s (values %d) D=%d G=%d B=%d splits=%d %s: relative error %.3g, %.3g x its tolerance",
                   cs.kspec, cs.vspec, cs.vmode, D, nq / nkv, B, a.splits, kname, worst, worst_tol);
            if (sm == 0 && !extra) {
                char note[64] = "";
                if (vi_val) /* how much of its tolerance the worst row used */
                    snprintf(note, sizeof note, "  (%.2f of its tolerance)", worst_tol);
                printf("  %-24s %-22s%s D=%3d G=%d B=%d maxlen=%5d  quantize bytes equal=%s  %-12s rel.err %.2e%s\n",
                       cs.kspec, cs.vspec, cs.vmode == 1 ? "~" : cs.vmode == 2 ? "-" : cs.vmode == 3 ? "+" : " ", D, nq / nkv, B, maxlen, !gpu_quant ? "n/a" : kdiff == 0 && vdiff == 0 ? "yes" : "NO",
                       kname, worst, note);
            }
        }
        setenv("VQ_CUDA_NO_MMA", "0", 1);
        setenv("VQ_CUDA_NO_SUB2", "0", 1);
        setenv("VQ_CUDA_MMA_WIDE", "-1", 1);
        setenv("VQ_CUDA_VI_ONECOPY", "0", 1);
        if (kf.qbits == 8) {
            /* control: the same call with the float query (qbits 0) against
             * the CPU's int8-query reference must miss TOL (what the GPU
             * did before session 54), so the runs above can fail */
            vq_cuda_format kf0 = kf;
            kf0.qbits = 0;
            a.splits = 0;
            attend_into(kf0, vf, a, dout, out);
            double worst = 0.0;
            size_t nonfinite = 0; /* (a NaN row makes worst NaN, which fails the check below too) */
            for (int r = 0; r < B * nq; r++) {
                double rel = row_rel_err(out, ref, r, D, &nonfinite);
                worst = rel > worst || rel != rel ? rel : worst;
            }
            CHECKF(!(worst <= TOL), "%s/%s D=%d G=%d B=%d: the float query's error %.3g is within TOL: the "
                   "case cannot tell it from the int8 query", cs.kspec, cs.vspec, D, nq / nkv, B, worst);
            printf("  %-24s %-22s  D=%3d G=%d B=%d  control, float query (qbits 0): rel.err %.2e (%.0f x TOL)\n",
                   cs.kspec, cs.vspec, D, nq / nkv, B, worst, worst / TOL);
        }
        cudaFree(dk);
        cudaFree(dv);
        cudaFree(dk2);
        cudaFree(dv2);
        cudaFree(dq);
        cudaFree(dout);
        cudaFree(dtab);
        cudaFree(dlen);
        cudaFree(dxk);
        cudaFree(dxv);
        cudaFree(dko);
        cudaFree(dvo);
    }
    cudaFree(ktab);
    cudaFree(vtab);
    vq_codec_free(kc);
    vq_codec_free(vc);
}

/* The qbits=8 specs of q8_0, q4_0 and kivi keys (integer scoring on the
 * CPU) store the same bytes as their qbits=0 twins: the GPU must accept
 * them and see the same format except for qbits (8 for q8_0 / q4_0 keys,
 * the default spec's too; 0 for kivi keys, scored with the float query, and
 * for values, summed with the float weights), and the GPU quantizer must
 * write the bytes the qbits=8 CPU codec writes. A format with another qbits
 * is refused by the attention call. */
static void test_qbits8_specs(void)
{
    static const struct {
        const char *s8, *s0;
        int role, qbits; /* the qbits vq_cuda_format_from_codec gives s8 */
    } pairs[] = {
        {"q8_0:qbits=8", "q8_0:qbits=0", VQ_ROLE_KEY, 8},
        {"q8_0", "q8_0:qbits=0", VQ_ROLE_KEY, 8}, /* the keys' default */
        {"q8_0:rot=1,qbits=8", "q8_0:rot=1,qbits=0", VQ_ROLE_KEY, 8},
        {"q4_0:qbits=8", "q4_0:qbits=0", VQ_ROLE_KEY, 8},
        {"q4_0:rot=1", "q4_0:rot=1,qbits=0", VQ_ROLE_KEY, 8},
        {"q4_0:rot=1,qbits=8", "q4_0:rot=1,qbits=0", VQ_ROLE_KEY, 8},
        {"kivi:bits=2,qbits=8", "kivi:bits=2,qbits=0", VQ_ROLE_KEY, 0},
        {"kivi:bits=2", "kivi:bits=2,qbits=0", VQ_ROLE_KEY, 0}, /* kivi's default (session 55) */
        {"kivi:bits=4,group=64,qbits=8", "kivi:bits=4,group=64,qbits=0", VQ_ROLE_KEY, 0},
        {"kivi:bits=2", "kivi:bits=2,qbits=0", VQ_ROLE_VALUE, 0},
        {"q8_0:qbits=8", "q8_0", VQ_ROLE_VALUE, 0},
        {"q4_0:rot=1,qbits=8", "q4_0:rot=1,qbits=0", VQ_ROLE_VALUE, 0},
        {"q4_0:rot=1", "q4_0:rot=1,qbits=0", VQ_ROLE_VALUE, 0}, /* the q4_0 values' default (session 54) */
    };
    const int dims[] = {64, 128};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        for (int di = 0; di < 2; di++) {
            const int D = dims[di];
            const uint64_t seed = rnd();
            const char *s8 = pairs[i].s8, *s0 = pairs[i].s0;
            vq_codec *c8 = NULL, *c0 = NULL;
            if (vq_codec_create(s8, D, (vq_role)pairs[i].role, seed, &c8) != VQ_OK ||
                vq_codec_create(s0, D, (vq_role)pairs[i].role, seed, &c0) != VQ_OK) {
                CHECKF(0, "codec create %s / %s: %s", s8, s0, vq_last_error());
                vq_codec_free(c8);
                continue;
            }
            vq_cuda_format f8, f0;
            CHECKF(vq_cuda_format_from_codec(c8, &f8) == VQ_OK, "%s D=%d: %s", s8, D, vq_cuda_last_error());
            CHECK(vq_cuda_format_from_codec(c0, &f0) == VQ_OK);
            CHECKF(f8.qbits == pairs[i].qbits && f0.qbits == 0, "%s D=%d role %d: qbits %d / %d (%s), expected %d / 0",
                   s8, D, pairs[i].role, f8.qbits, f0.qbits, s0, pairs[i].qbits);
            f0.qbits = f8.qbits;
            CHECKF(memcmp(&f8, &f0, sizeof f8) == 0, "%s D=%d: format differs from %s beyond qbits", s8, D, s0);
            /* one block of random rows: CPU (qbits=8) and GPU bytes */
            const int bt = f8.block_tokens, bb = f8.block_bytes;
            std::vector<float> x((size_t)bt * D);
            fill_kv(x.data(), (size_t)bt, D);
            std::vector<uint8_t> cpu(bb), gpu(bb, 0xA5);
            vq_codec_encode(c8, x.data(), (size_t)bt, cpu.data());
            float *dx;
            int64_t *doff;
            uint8_t *dpool;
            const int64_t off0 = 0;
            CK(cudaMalloc(&dx, x.size() * sizeof(float)));
            CK(cudaMalloc(&doff, sizeof off0));
            CK(cudaMalloc(&dpool, (size_t)bb));
            CK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(doff, &off0, sizeof off0, cudaMemcpyHostToDevice));
            CK(cudaMemset(dpool, 0xA5, (size_t)bb));
            CHECK(vq_cuda_quantize(&f8, dx, 1, doff, dpool, 0) == VQ_OK);
            CK(cudaMemcpy(gpu.data(), dpool, (size_t)bb, cudaMemcpyDeviceToHost));
            CHECKF(memcmp(cpu.data(), gpu.data(), (size_t)bb) == 0, "%s D=%d: GPU bytes differ", s8, D);
            cudaFree(dx);
            cudaFree(doff);
            cudaFree(dpool);
            vq_codec_free(c8);
            vq_codec_free(c0);
        }
}

static void test_errors(void)
{
    vq_cuda_format f;
    CHECK(vq_cuda_format_from_codec(NULL, &f) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_cuda_last_error(), "NULL") != NULL);
    vq_codec *c = NULL;
    CHECK(vq_codec_create("turboquant_rvq:bits=3", 128, VQ_ROLE_KEY, 1, &c) == VQ_OK);
    CHECK(vq_cuda_format_from_codec(c, &f) == VQ_ERR_UNSUPPORTED);
    vq_codec_free(c);
    CHECK(vq_codec_create("vecinfer", 128, VQ_ROLE_KEY, 1, &c) == VQ_OK); /* not calibrated */
    CHECK(vq_cuda_format_from_codec(c, &f) == VQ_ERR_NEEDS_CALIBRATION);
    CHECK(strstr(vq_cuda_last_error(), "calibrated") != NULL);
    vq_codec_free(c);
    CHECK(vq_codec_create("qjl", 128, VQ_ROLE_KEY, 1, &c) == VQ_OK);
    CHECK(vq_cuda_format_from_codec(c, &f) == VQ_ERR_UNSUPPORTED);
    vq_codec_free(c);
    CHECK(vq_codec_create("fp16", 128, VQ_ROLE_KEY, 1, &c) == VQ_OK);
    CHECK(vq_cuda_format_from_codec(c, &f) == VQ_OK);
    vq_codec_free(c);
    vq_cuda_attn_args a;
    memset(&a, 0, sizeof a);
    CHECK(vq_cuda_decode_attention(&f, &f, &a, NULL, 0, 0) == VQ_ERR_INVALID_ARG);
    {
        /* qbits other than 0, or 8 on a method other than q8_0 / q4_0:
         * refused before anything is read (the pointers are never used) */
        vq_cuda_format q8;
        CHECK(vq_codec_create("q8_0", 128, VQ_ROLE_KEY, 1, &c) == VQ_OK);
        CHECK(vq_cuda_format_from_codec(c, &q8) == VQ_OK);
        vq_codec_free(c);
        CHECK(q8.qbits == 8);
        int32_t dummy[4];
        vq_cuda_attn_args b = attn_args({1, 1, 1, 128, 256, 1, 256}, dummy, dummy, dummy, 4096, dummy, 4096,
                                        (const float *)dummy, (float *)dummy);
        vq_cuda_format bad = q8;
        bad.qbits = 4;
        CHECK(vq_cuda_decode_attention(&bad, &f, &b, dummy, sizeof dummy, 0) == VQ_ERR_INVALID_ARG);
        CHECK(strstr(vq_cuda_last_error(), "qbits") != NULL);
        bad = f; /* fp16 */
        bad.qbits = 8;
        CHECK(vq_cuda_decode_attention(&bad, &f, &b, dummy, sizeof dummy, 0) == VQ_ERR_INVALID_ARG);
        CHECK(strstr(vq_cuda_last_error(), "qbits") != NULL);
    }
    CHECK(vq_cuda_quantize(&f, NULL, 1, NULL, NULL, 0) == VQ_ERR_INVALID_ARG);
    /* a real CUDA failure (bad device pointer) comes back as a status */
    float *bogus = (float *)(uintptr_t)0x10;
    int64_t *dof;
    CK(cudaMalloc(&dof, 8));
    CK(cudaMemset(dof, 0, 8));
    vq_status st = vq_cuda_quantize(&f, bogus, 1, dof, (void *)bogus, 0);
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(st == VQ_OK); /* launch itself succeeds; the fault is asynchronous */
    CHECK(e != cudaSuccess);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        printf("test_gpu: no CUDA device\n");
        return 1;
    }
    printf("test_gpu on %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
    const int shapes[][2] = {{32, 8}, {8, 8}, {16, 2}, {16, 8}};
    const char *only = getenv("TEST_GPU_KEYS"); /* tuning runs: only the cases whose key spec contains this */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (only && !strstr(cases[c].kspec, only))
            continue;
        run_case(cases[c], 128, shapes[0][0], shapes[0][1]);
        run_case(cases[c], 64, shapes[(c % 3) + 1][0], shapes[(c % 3) + 1][1]);
        run_case(cases[c], 64, shapes[0][0], shapes[0][1]); /* D = 64, G = 4: the benchmark's shape */
        if (cases[c].vmode) /* also D = 128 with G = 2 (rows of absent heads in the tensor-core operands) */
            run_case(cases[c], 128, 16, 8);
        if (cases[c].vmode || strstr(cases[c].kspec, "rvq:bits=2")) /* and G = 8 (two int8 A tiles for rvq2 keys) */
            run_case(cases[c], 128, 16, 2);
    }
    test_qbits8_specs();
    test_errors(); /* last: it leaves the context in an error state */
    return vq_test_summary("gpu");
}
