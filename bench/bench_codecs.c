/* bench_codecs.c -- per-token cost of one codec's attention kernels, in CPU
 * time of the calling thread (robust to other jobs on the machine, unlike
 * wall time; pin it with taskset), public API only.
 *
 * For each spec: 16,384 tokens of synthetic vectors are encoded (a codec
 * that needs calibration is first calibrated on them); then the
 * best of 20 passes of vq_codec_score (keys) or vq_codec_accumulate
 * (values, spec prefixed "V:") over the codes, 256 tokens per call, with
 * n_q prepared queries (a GQA group). Prints ns per token (all n_q queries),
 * the encode's ns per token (one pass over the 16,384 tokens: what an
 * append costs per token and head) and, for keys, the ns of one
 * vq_codec_prepare_query (the mean over 2,000 rounds of the n_q queries).
 *
 * Usage: bench_codecs HEAD_DIM N_Q SPEC [SPEC ...]
 *   e.g. taskset -c 1 build/bench/bench_codecs 128 4 fp16 q4_0:rot=1,qbits=8 V:fp16 V:q4_0:rot=1 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "veloxquant.h"

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_codecs HEAD_DIM N_Q SPEC [SPEC ...]  (values: V:SPEC)\n");
        return 2;
    }
    const int D = atoi(argv[1]), nq = atoi(argv[2]);
    const size_t n = 16384, per_call = 256;
    if (D < 16 || nq < 1 || nq > 64) {
        fprintf(stderr, "bench_codecs: bad HEAD_DIM %s or N_Q %s\n", argv[1], argv[2]);
        return 2;
    }
    for (int a = 3; a < argc; a++) {
        const int values = strncmp(argv[a], "V:", 2) == 0;
        const char *spec = argv[a] + (values ? 2 : 0);
        vq_codec *c = NULL;
        if (vq_codec_create(spec, D, values ? VQ_ROLE_VALUE : VQ_ROLE_KEY, 1, &c) != VQ_OK) {
            printf("%s: %s\n", spec, vq_last_error());
            continue;
        }
        float *x = malloc(sizeof(float) * (size_t)D * n);
        size_t bpt = vq_codec_bytes_per_token(c), qb = vq_codec_query_bytes(c);
        uint8_t *codes = malloc(bpt * n), *q = malloc(qb * (size_t)nq);
        float *s = malloc(sizeof(float) * per_call * (size_t)nq), *acc = calloc((size_t)nq * vq_codec_accum_size(c), 4);
        if (!x || !codes || !q || !s || !acc) {
            fprintf(stderr, "bench_codecs: out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < (size_t)D * n; i++)
            x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        vq_status st = VQ_OK;
        if (vq_codec_needs_calibration(c)) /* (spectral, vecinfer) on the same synthetic vectors */
            st = vq_codec_calibrate(c, x, n);
        double enc = cpu_seconds();
        if (st == VQ_OK)
            st = vq_codec_encode(c, x, n, codes);
        enc = cpu_seconds() - enc;
        double prep = cpu_seconds();
        for (int r = 0; r < (values ? 1 : 2000); r++)
            for (int j = 0; st == VQ_OK && j < nq; j++)
                st = vq_codec_prepare_query(c, x + (size_t)(j + r % 7) * D, q + (size_t)j * qb);
        prep = (cpu_seconds() - prep) / (values ? 1.0 : 2000.0 * nq);
        for (size_t i = 0; i < per_call * (size_t)nq; i++)
            s[i] = 1.0f / (float)n;
        double best = 1e30;
        for (int rep = 0; st == VQ_OK && rep < 20; rep++) {
            double t0 = cpu_seconds();
            for (size_t p = 0; st == VQ_OK && p < n; p += per_call)
                st = values ? vq_codec_accumulate(c, s, nq, codes + p * bpt, per_call, acc)
                            : vq_codec_score(c, q, nq, codes + p * bpt, per_call, s);
            double t = cpu_seconds() - t0;
            best = t < best ? t : best;
        }
        if (st != VQ_OK)
            printf("%s: %s\n", spec, vq_last_error());
        else {
            printf("%-36s %s D=%d n_q=%d: %.1f ns/token (encode %.1f ns/token", spec, values ? "accumulate" : "score",
                   D, nq, best * 1e9 / (double)n, enc * 1e9 / (double)n);
            if (!values)
                printf(", prepare %.1f ns/query", prep * 1e9);
            printf(")\n");
        }
        vq_codec_free(c);
        free(x), free(codes), free(q), free(s), free(acc);
    }
    return 0;
}
