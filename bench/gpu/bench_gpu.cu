/* bench_gpu.cu -- decode attention speed on the GPU (veloxquant_cuda.h).
 *
 * Prints one JSON object per line: first the device copy bandwidth
 * (cudaMemcpy device to device of 2 GiB, bytes read + written, median of
 * 20), then per format pair, head_dim, context and batch the median time of
 * one vq_cuda_decode_attention call (CUDA events around each call, 3
 * warm-ups, then up to 50 calls or 1 s). 32 query heads, 8 KV heads, one
 * query token per sequence, pages of 256 tokens scattered by a shuffled page
 * table. Caches are filled with packed blocks quantized on the GPU from
 * random data (never zeros) and replicated; when one cache is smaller than
 * 512 MiB, several copies are cycled so that L2 (60 MB) holds none of it.
 * gbs = packed cache bytes read (keys + values, metadata included) / time.
 *
 * Usage: bench_gpu [--quick] [--shape CTX,BATCH] [--splits N] [--dims 128,64]
 * [--pair N[,N...]] [--heads N] (--quick: only 64k x 8, or the --shape given;
 * --splits: forced split count; --heads: query heads, 32 unless given; for
 * tuning)   (run_bench.py runs
 * it and PyTorch SDPA in one go and writes figures/bench/h200.json). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "veloxquant.h"
#include "veloxquant_cuda.h"
#include "gpu_host_util.h"

#ifdef VQ_TIMELINE
/* diagnostic (-DVQ_TIMELINE, with a library built the same way): the last
 * call's %globaltimer stamps (src/gpu/timeline.cuh), relative to the first
 * split CTA's start, median and maximum over the CTAs, in microseconds */
extern "C" int vq_timeline_read_mma(uint64_t *host, size_t n);
extern "C" int vq_timeline_read_red(uint64_t *host, size_t n);
static void timeline_print(int ctx, int B)
{
    enum { N = 4096, S = 8 };
    static uint64_t m[N][S], r[N][S];
    if (vq_timeline_read_mma(&m[0][0], N) || vq_timeline_read_red(&r[0][0], N)) {
        fprintf(stderr, "timeline read failed\n");
        return;
    }
    uint64_t last = 0;
    for (int i = 0; i < N; i++)
        last = m[i][0] > last ? m[i][0] : last;
    auto in_call = [&](uint64_t t0) { return t0 + 1000000 > last && t0 <= last; };
    uint64_t T = last;
    for (int i = 0; i < N; i++)
        if (in_call(m[i][0]) && m[i][0] < T)
            T = m[i][0];
    auto stat = [&](uint64_t (*a)[S], int s, const char *name) {
        std::vector<double> v;
        for (int i = 0; i < N; i++)
            if (a[i][0] >= T && a[i][0] < T + 10000000ull && a[i][s] >= T && a[i][s] < T + 10000000ull)
                v.push_back((a[i][s] - T) * 1e-3);
        if (v.empty())
            return;
        std::sort(v.begin(), v.end());
        printf("#tl %dx%d %-6s n=%zu min %.2f med %.2f max %.2f us\n", ctx, B, name, v.size(), v[0], v[v.size() / 2], v.back());
    };
    const char *mn[S] = {"entry", "query", "scaled", "opnds", "data0", "loopw0", "allw", "end"};
    for (int s = 0; s < S; s++)
        stat(m, s, mn[s]);
    const char *rn[3] = {"r_ent", "r_wait", "r_end"};
    for (int s = 0; s < 3; s++)
        stat(r, s, rn[s]);
}
#endif

static double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

static double copy_bandwidth(void)
{
    const size_t n = (size_t)2 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    CK(cudaMemset(a, 0x3c, n));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int i = 0; i < 23; i++) {
        CK(cudaEventRecord(e0));
        CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 3)
            t.push_back(ms);
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 2.0 * n / (median(t) * 1e-3) / 1e9;
}

/* a bank of `nb` pages of valid packed blocks, quantized on the GPU (by
 * the CPU codec c where the GPU has no quantizer: vecinfer) */
static uint8_t *make_bank(vq_codec *c, const vq_cuda_format *f, int P, size_t pb, int nb)
{
    const int D = f->head_dim, per = P / f->block_tokens;
    const size_t rows = (size_t)nb * P;
    std::vector<float> x(rows * D);
    std::vector<float> off(D);
    for (int d = 0; d < D; d++)
        off[d] = 0.5f * gauss();
    for (size_t i = 0; i < rows; i++)
        for (int d = 0; d < D; d++)
            x[i * D + d] = off[d] + gauss();
    std::vector<int64_t> offs((size_t)nb * per);
    for (int p = 0; p < nb; p++)
        for (int k = 0; k < per; k++)
            offs[(size_t)p * per + k] = (int64_t)p * pb + (int64_t)k * f->block_bytes;
    float *dx;
    int64_t *doff;
    uint8_t *bank;
    CK(cudaMalloc(&dx, x.size() * 4));
    CK(cudaMalloc(&doff, offs.size() * 8));
    CK(cudaMalloc(&bank, (size_t)nb * pb));
    CK(cudaMemset(bank, 0, (size_t)nb * pb));
    CK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(doff, offs.data(), offs.size() * 8, cudaMemcpyHostToDevice));
    if (f->method == VQ_CUDA_VECINFER) {
        std::vector<uint8_t> host((size_t)nb * pb, 0);
        for (int p = 0; p < nb; p++)
            vq_codec_encode(c, &x[(size_t)p * P * D], (size_t)P, &host[(size_t)p * pb]);
        CK(cudaMemcpy(bank, host.data(), host.size(), cudaMemcpyHostToDevice));
    } else if (vq_cuda_quantize(f, dx, (int64_t)offs.size(), doff, bank, 0) != VQ_OK) {
        fprintf(stderr, "quantize: %s\n", vq_cuda_last_error());
        exit(2);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(dx));
    CK(cudaFree(doff));
    return bank;
}

static void fill_pool(uint8_t *pool, size_t n_pages, const uint8_t *bank, int nb, size_t pb)
{
    for (size_t p = 0; p < n_pages; p += nb) {
        size_t k = std::min((size_t)nb, n_pages - p);
        CK(cudaMemcpy(pool + p * pb, bank, k * pb, cudaMemcpyDeviceToDevice));
    }
}

static int force_splits = 0; /* --splits N: vq_cuda_attn_args.splits */
static int n_q = 32;         /* --heads N: query heads (8 KV heads; tuning runs) */

struct Pair {
    const char *k, *v;
};

static void bench_pair(const Pair &pr, int D, const int *ctxs, int nctx, const int *batches, int nb)
{
    vq_codec *kc, *vc;
    if (vq_codec_create(pr.k, D, VQ_ROLE_KEY, 11, &kc) != VQ_OK || vq_codec_create(pr.v, D, VQ_ROLE_VALUE, 12, &vc) != VQ_OK) {
        fprintf(stderr, "codec %s/%s: %s\n", pr.k, pr.v, vq_last_error());
        exit(2);
    }
    const int D_ = D;
    for (vq_codec *c : {kc, vc})
        if (vq_codec_needs_calibration(c)) { /* vecinfer: K/V-like samples */
            std::vector<float> x((size_t)4096 * D_);
            for (size_t i = 0; i < x.size(); i++)
                x[i] = 0.3f * (float)(i % D_ % 7) + gauss();
            if (vq_codec_calibrate(c, x.data(), 4096) != VQ_OK) {
                fprintf(stderr, "calibrate: %s\n", vq_last_error());
                exit(2);
            }
        }
    vq_cuda_format kf, vf;
    void *ktab = NULL, *vtab = NULL;
    if (vq_cuda_format_from_codec(kc, &kf) != VQ_OK || vq_cuda_format_from_codec(vc, &vf) != VQ_OK) {
        fprintf(stderr, "format: %s\n", vq_cuda_last_error());
        exit(2);
    }
    if (vq_cuda_tables_bytes(kc)) {
        CK(cudaMalloc(&ktab, vq_cuda_tables_bytes(kc)));
        CK(cudaMalloc(&vtab, vq_cuda_tables_bytes(vc)));
        if (vq_cuda_tables_upload(kc, &kf, ktab, vq_cuda_tables_bytes(kc)) != VQ_OK ||
            vq_cuda_tables_upload(vc, &vf, vtab, vq_cuda_tables_bytes(vc)) != VQ_OK) {
            fprintf(stderr, "tables: %s\n", vq_cuda_last_error());
            exit(2);
        }
    }
    const double kbpt = (double)vq_codec_bytes_per_token(kc), vbpt = (double)vq_codec_bytes_per_token(vc);
    const int P = 256, NQ = n_q, NKV = 8, BANK = 64;
    const size_t kpb = vq_cuda_page_bytes(&kf, P), vpb = vq_cuda_page_bytes(&vf, P);
    uint8_t *kbank = make_bank(kc, &kf, P, kpb, BANK), *vbank = make_bank(vc, &vf, P, vpb, BANK);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* the page pools of every shape: one allocation per pool, made once at
     * the largest shape, as a serving cache is allocated once (allocating
     * and freeing them per shape left fp16 at 128k x 1 12% slower after
     * the 64k x 32 pools than in a fresh process: Round gpu11) */
    auto shape_pages = [&](int ctx, int B, int *sets_out) {
        const size_t pages1 = (size_t)B * NKV * (ctx / P);
        const int sets = (int)std::min<size_t>(8, ((size_t)512 << 20) / (pages1 * (kpb + vpb)) + 1);
        if (sets_out)
            *sets_out = sets;
        return pages1 * sets;
    };
    size_t max_pages = 0;
    for (int ci = 0; ci < nctx; ci++)
        for (int bi = 0; bi < nb; bi++)
            max_pages = std::max(max_pages, shape_pages(ctxs[ci], batches[bi], NULL));
    uint8_t *kp, *vp;
    CK(cudaMalloc(&kp, max_pages * kpb));
    CK(cudaMalloc(&vp, max_pages * vpb));
    for (int ci = 0; ci < nctx; ci++)
        for (int bi = 0; bi < nb; bi++) {
            const int ctx = ctxs[ci], B = batches[bi];
            const int ppseq = ctx / P;
            const size_t pages1 = (size_t)B * NKV * ppseq;
            int sets = 1;
            const size_t n_pages = shape_pages(ctx, B, &sets);
            fill_pool(kp, n_pages, kbank, BANK, kpb);
            fill_pool(vp, n_pages, vbank, BANK, vpb);
            std::vector<int32_t> perm(n_pages);
            for (size_t i = 0; i < n_pages; i++)
                perm[i] = (int32_t)i;
            for (size_t i = n_pages - 1; i > 0; i--)
                std::swap(perm[i], perm[rnd() % (i + 1)]);
            int32_t *dtab, *dlen;
            CK(cudaMalloc(&dtab, n_pages * 4));
            CK(cudaMemcpy(dtab, perm.data(), n_pages * 4, cudaMemcpyHostToDevice));
            std::vector<int32_t> lens(B, ctx);
            CK(cudaMalloc(&dlen, B * 4));
            CK(cudaMemcpy(dlen, lens.data(), B * 4, cudaMemcpyHostToDevice));
            std::vector<float> q((size_t)B * NQ * D);
            for (auto &x : q)
                x = gauss();
            float *dq, *dout;
            CK(cudaMalloc(&dq, q.size() * 4));
            CK(cudaMalloc(&dout, q.size() * 4));
            CK(cudaMemcpy(dq, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
            vq_cuda_attn_args a = attn_args({B, NQ, NKV, D, P, ppseq, ctx}, dtab, dlen, kp, kpb, vp, vpb, dq, dout);
            a.splits = force_splits;
            size_t wsb = vq_cuda_attention_workspace(&a);
            void *ws;
            CK(cudaMalloc(&ws, wsb));
            std::vector<float> t;
            float total = 0.0f;
            for (int it = 0; it < 53 && (it < 13 || total < 1000.0f); it++) {
                a.page_table = dtab + (size_t)(it % sets) * pages1; /* each set: its own pages */
                CK(cudaEventRecord(e0));
                if (vq_cuda_decode_attention(&kf, &vf, &a, ws, wsb, 0) != VQ_OK) {
                    fprintf(stderr, "attention: %s\n", vq_cuda_last_error());
                    exit(2);
                }
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                if (it >= 3) {
                    t.push_back(ms);
                    total += ms;
                }
            }
            CK(cudaGetLastError());
#ifdef VQ_TIMELINE
            timeline_print(ctx, B);
#endif
            double ms = median(t);
            double bytes = (double)B * NKV * ctx * (kbpt + vbpt);
            printf("{\"keys\": \"%s\", \"values\": \"%s\", \"head_dim\": %d, \"ctx\": %d, \"batch\": %d, \"ms\": %.5f, "
                   "\"gbs\": %.1f, \"cache_bytes\": %.0f, \"reps\": %zu, \"kernel\": \"%s\"}\n",
                   vq_codec_spec(kc), vq_codec_spec(vc), D, ctx, B, ms, bytes / (ms * 1e-3) / 1e9, bytes, t.size(),
                   vq_cuda_attention_kernel(&kf, &vf, &a));
            fflush(stdout);
            CK(cudaFree(dtab));
            CK(cudaFree(dlen));
            CK(cudaFree(dq));
            CK(cudaFree(dout));
            CK(cudaFree(ws));
        }
    CK(cudaFree(kp));
    CK(cudaFree(vp));
    CK(cudaFree(kbank));
    CK(cudaFree(vbank));
    CK(cudaFree(ktab));
    CK(cudaFree(vtab));
    vq_codec_free(kc);
    vq_codec_free(vc);
}

int main(int argc, char **argv)
{
    int quick = 0, dims[2] = {128, 64}, ndims = 2;
    unsigned only = ~0u; /* the pairs to run (--pair N[,N...]): bit p for pair p */
    int ctx_quick[1] = {65536}, b_quick[1] = {8};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--pair") && i + 1 < argc) {
            only = 0;
            for (const char *c = argv[++i]; *c; c++)
                if (*c >= '0' && *c <= '9' && (c == argv[i] || c[-1] == ','))
                    only |= 1u << (atoi(c) & 31);
        }
        else if (!strcmp(argv[i], "--dims") && i + 1 < argc) {
            ndims = sscanf(argv[++i], "%d,%d", &dims[0], &dims[1]);
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) { /* the --quick shape */
            if (sscanf(argv[++i], "%d,%d", &ctx_quick[0], &b_quick[0]) != 2)
                return 2;
        } else if (!strcmp(argv[i], "--splits") && i + 1 < argc) {
            force_splits = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--heads") && i + 1 < argc) {
            n_q = atoi(argv[++i]);
            if (n_q != 8 && n_q != 16 && n_q != 32 && n_q != 64)
                return 2;
        } else {
            fprintf(stderr, "usage: bench_gpu [--quick] [--shape CTX,BATCH] [--splits N] [--dims 128,64] [--pair N[,N...]] [--heads 8|16|32|64]\n");
            return 2;
        }
    }
    static const Pair pairs[] = {
        {"fp16", "fp16"},
        {"q8_0", "q8_0"},
        {"q4_0:rot=1", "q4_0:rot=1"},
        {"kivi:bits=4", "kivi:bits=4"},
        {"kivi:bits=2", "kivi:bits=2"},
        {"turboquant_rvq:bits=2", "kivi:bits=2"},
        {"turboquant_rvq:bits=1", "kivi:bits=2"},
        {"rabitq:bits=1", "kivi:bits=2"},
        {"vecinfer:sub_dim=8,bits=8", "vecinfer:sub_dim=8,bits=8"},
    };
    const int ctx_full[] = {4096, 16384, 65536, 131072};
    const int b_full[] = {1, 8, 32};
    printf("{\"copy_bandwidth_gbs\": %.1f}\n", copy_bandwidth());
    fflush(stdout);
    for (int di = 0; di < ndims; di++)
        for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
            if (!(only >> p & 1))
                continue;
            if (quick)
                bench_pair(pairs[p], dims[di], ctx_quick, 1, b_quick, 1);
            else
                bench_pair(pairs[p], dims[di], ctx_full, 4, b_full, 3);
        }
    return 0;
}
