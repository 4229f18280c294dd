/* bench_stream.c -- one codec's attention kernel on one core, its codes
 * streamed from memory against the same calls on codes in the CPU's
 * caches: how much of a kernel's time is waiting for memory. Public API
 * only; wall time (pin it with taskset, run it on a quiet machine).
 *
 * 8,192 synthetic vectors are encoded once and the codes copied end to
 * end into a 192 MB buffer. "stream": vq_codec_score (keys) or
 * vq_codec_accumulate (values, spec prefixed "V:") over the whole buffer,
 * 1,024 tokens (a cache page) per call, with N_Q prepared queries (a GQA
 * group); "hot": as many calls, each on the first 1,024 tokens. Best of 5
 * passes; prints GB/s of codes and ns per token (all N_Q queries).
 *
 * Usage: bench_stream HEAD_DIM N_Q SPEC [SPEC ...]
 *   e.g. taskset -c 1 build/bench/bench_stream 128 4 fp16 V:fp16 kivi:bits=2,qbits=8 V:kivi:bits=2,qbits=8 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "veloxquant.h"

enum { N_ENC = 8192, PAGE = 1024, PASSES = 5 };
#define BUF_BYTES ((size_t)192 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* one spec; 0 on success, else a message on stderr */
static int run_spec(const char *arg, int D, int nq, const float *x)
{
    const int values = strncmp(arg, "V:", 2) == 0;
    const char *spec = values ? arg + 2 : arg;
    vq_codec *c = NULL;
    if (vq_codec_create(spec, D, values ? VQ_ROLE_VALUE : VQ_ROLE_KEY, 7, &c) != VQ_OK) {
        fprintf(stderr, "bench_stream: %s: %s\n", spec, vq_last_error());
        return 1;
    }
    int rc = 1;
    uint8_t *codes = NULL, *buf = NULL, *qbuf = NULL;
    float *scores = NULL, *acc = NULL, *w = NULL;
    if (vq_codec_needs_calibration(c) && vq_codec_calibrate(c, x, N_ENC) != VQ_OK) {
        fprintf(stderr, "bench_stream: %s: calibration: %s\n", spec, vq_codec_error(c));
        goto done;
    }
    const size_t bt = vq_codec_block_tokens(c), bb = vq_codec_block_bytes(c);
    const size_t enc_bytes = N_ENC / bt * bb, page_bytes = PAGE / bt * bb;
    const size_t copies = BUF_BYTES / enc_bytes, pages = copies * enc_bytes / page_bytes;
    const size_t qb = vq_codec_query_bytes(c), as = vq_codec_accum_size(c);
    codes = malloc(enc_bytes);
    buf = malloc(copies * enc_bytes);
    qbuf = malloc((size_t)nq * qb + 64);
    scores = malloc((size_t)nq * PAGE * sizeof *scores);
    acc = calloc((size_t)nq * as + 64, sizeof *acc);
    w = malloc((size_t)nq * PAGE * sizeof *w);
    if (!codes || !buf || !qbuf || !scores || !acc || !w || PAGE % bt || N_ENC % PAGE) {
        fprintf(stderr, "bench_stream: %s: out of memory\n", spec);
        goto done;
    }
    if (vq_codec_encode(c, x, N_ENC, codes) != VQ_OK) {
        fprintf(stderr, "bench_stream: %s: encode: %s\n", spec, vq_codec_error(c));
        goto done;
    }
    for (size_t k = 0; k < copies; k++)
        memcpy(buf + k * enc_bytes, codes, enc_bytes);
    for (int j = 0; j < nq; j++)
        if (vq_codec_prepare_query(c, x + (size_t)(j + 1) * (size_t)D, qbuf + (size_t)j * qb) != VQ_OK) {
            fprintf(stderr, "bench_stream: %s: prepare: %s\n", spec, vq_codec_error(c));
            goto done;
        }
    for (size_t i = 0; i < (size_t)nq * PAGE; i++)
        w[i] = 1.0f / (float)(1 + i % 37);
    for (int hot = 0; hot < 2; hot++) {
        double best = 1e30;
        for (int p = 0; p < PASSES; p++) {
            const double t0 = now();
            for (size_t g = 0; g < pages; g++) {
                const uint8_t *at = buf + (hot ? 0 : g * page_bytes);
                vq_status st = values ? vq_codec_accumulate(c, w, nq, at, PAGE, acc)
                                      : vq_codec_score(c, qbuf, nq, at, PAGE, scores);
                if (st != VQ_OK) {
                    fprintf(stderr, "bench_stream: %s: %s\n", spec, vq_codec_error(c));
                    goto done;
                }
            }
            const double t = now() - t0;
            best = t < best ? t : best;
        }
        printf("%-44s D=%d n_q=%d %-6s %s: %6.2f GB/s %7.2f ns/token\n", spec, D, nq, values ? "values" : "keys",
               hot ? "hot   " : "stream", (double)(pages * page_bytes) / best * 1e-9,
               best / (double)(pages * PAGE) * 1e9);
    }
    rc = 0;
done:
    free(codes), free(buf), free(qbuf), free(scores), free(acc), free(w);
    vq_codec_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_stream HEAD_DIM N_Q SPEC [SPEC ...]  (values: V:SPEC)\n");
        return 2;
    }
    const int D = atoi(argv[1]), nq = atoi(argv[2]);
    if (D < 32 || D > 256 || D % 32 || nq < 1 || nq > 64) {
        fprintf(stderr, "bench_stream: HEAD_DIM a multiple of 32 in 32..256, N_Q in 1..64\n");
        return 2;
    }
    float *x = malloc((size_t)(N_ENC + 64) * (size_t)D * sizeof *x);
    if (!x) {
        fprintf(stderr, "bench_stream: out of memory\n");
        return 1;
    }
    unsigned s = 1; /* uniform in about [-1.4, 1.4] (an LCG: the same data every run) */
    for (size_t i = 0; i < (size_t)(N_ENC + 64) * (size_t)D; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = (float)((int)(s >> 9) % 2001 - 1000) / 700.0f;
    }
    int rc = 0;
    for (int a = 3; a < argc; a++)
        rc |= run_spec(argv[a], D, nq, x);
    free(x);
    return rc;
}
