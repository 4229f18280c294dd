/* bench_quants.c -- matrix-vector speed of vq_dot per weight type and kernel
 * variant, against the streaming-read bandwidth measured in the same run
 * (see docs PERF.md: ratios within one run are what holds on a noisy
 * machine).
 *
 * For each type: a random weight matrix of about MB megabytes (rows of
 * n = 2048 elements, larger than the caches), one prepared activation vector,
 * and `rows` calls of the kernel (one matvec, single thread). Reported:
 * weight GB/s (weight bytes / time), that as a fraction of the measured read
 * bandwidth, and ns per row. Median of REPS repetitions, with min and max.
 * A last line per type ("multi4") times vq_dot_multi with 4 activation
 * vectors (batched prefill): ns per row and vector, and its speed-up over
 * 4 vq_dot calls of the dispatched kernel. A line "rows" times the whole
 * matrix through vq_dot_rows (the decode path).
 *
 * Usage: bench_quants [MB]   (default 64; VQ_FORCE_ISA limits the variants) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "core/rng.h"
#include "core/timer.h"
#include "model/quants.h"
#include "model/quants_x16.h"

#define REPS 5
#define N_ELEMS 2048

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Streaming read: sum of 64-bit words over a buffer of `bytes` (4
 * independent accumulators so the adds are not the limit). GB/s. */
static double read_bandwidth(size_t bytes, double *mn, double *mx)
{
    size_t n = bytes / 8;
    uint64_t *buf = malloc(n * 8);
    if (!buf)
        return 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = i * 0x9e3779b97f4a7c15ull;
    double t[REPS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < REPS; r++) {
        double t0 = vq_now_seconds();
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i + 4 <= n; i += 4) {
            s0 += buf[i];
            s1 += buf[i + 1];
            s2 += buf[i + 2];
            s3 += buf[i + 3];
        }
        sink += s0 + s1 + s2 + s3;
        t[r] = (double)bytes / (vq_now_seconds() - t0) / 1e9;
    }
    (void)sink;
    free(buf);
    qsort(t, REPS, sizeof *t, cmp_double);
    *mn = t[0];
    *mx = t[REPS - 1];
    return t[REPS / 2];
}

/* Random blocks for timing: random bytes, with bit 6 of every odd byte
 * cleared so that no fp16/bf16 field is Inf/NaN (speed does not depend on
 * the values otherwise). */
static void fill_random(uint8_t *p, size_t bytes, vq_rng *r)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)vq_rng_next(r);
    for (size_t i = 1; i < bytes; i += 2)
        p[i] &= 0xbf;
}

/* times fn over the whole matrix (REPS runs) and prints its line */
typedef void (*rows_fn)(vq_wtype, const void *, size_t, size_t, const void *, size_t, float *);
static int time_matrix(vq_wtype t, const char *label, rows_fn fn, const uint8_t *w, size_t row_bytes, size_t rows,
                       const void *act, float *out, double bw)
{
    double gbs[REPS], ns[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = vq_now_seconds();
        fn(t, w, row_bytes, rows, act, N_ELEMS, out);
        double dt = vq_now_seconds() - t0;
        gbs[rep] = (double)(rows * row_bytes) / dt / 1e9;
        ns[rep] = dt / (double)rows * 1e9;
    }
    qsort(gbs, REPS, sizeof *gbs, cmp_double);
    qsort(ns, REPS, sizeof *ns, cmp_double);
    printf("%-5s %-7s %9.2f %9.2f %9.2f %6.0f%% %9.0f\n", vq_wtype_name(t), label, gbs[REPS / 2], gbs[0],
           gbs[REPS - 1], 100.0 * gbs[REPS / 2] / bw, ns[REPS / 2]);
    return 0;
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 64;
    if (mb < 1 || mb > 4096) {
        fprintf(stderr, "usage: bench_quants [MB 1..4096]\n");
        return 2;
    }
    double bw_min = 0, bw_max = 0;
    double bw = read_bandwidth(4 * mb << 20, &bw_min, &bw_max);
    printf("streaming read: %.1f GB/s (min %.1f, max %.1f) over %zu MB; cpu: %s\n", bw, bw_min,
           bw_max, 4 * mb, vq_cpu_isa_name());
    printf("%-5s %-7s %9s %9s %9s %7s %9s\n", "type", "variant", "GB/s", "min", "max", "of bw",
           "ns/row");

    const vq_wtype types[] = { VQ_W_F32, VQ_W_F16, VQ_W_BF16, VQ_W_Q8_0, VQ_W_Q4_0, VQ_W_Q4_1,
                               VQ_W_Q5_0, VQ_W_Q5_1, VQ_W_Q2_K, VQ_W_Q3_K, VQ_W_Q4_K, VQ_W_Q5_K,
                               VQ_W_Q6_K };
    const unsigned isas[] = { 0, VQ_CPU_AVX2, VQ_CPU_AVX512_VNNI };
    const char *isa_names[] = { "scalar", "avx2", "avx512x" };
    vq_rng r;
    vq_rng_seed(&r, 1);
    float x[N_ELEMS];
    for (int i = 0; i < N_ELEMS; i++)
        x[i] = vq_rng_normal(&r);

    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        vq_wtype t = types[k];
        size_t row_bytes = vq_wtype_row_bytes(t, N_ELEMS);
        size_t rows = (mb << 20) / row_bytes;
        uint8_t *w = malloc(rows * row_bytes);
        void *act = malloc(vq_act_bytes(t, N_ELEMS));
        if (!w || !act) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        fill_random(w, rows * row_bytes, &r);
        vq_act_prepare(t, x, N_ELEMS, act);
        for (size_t v = 0; v < sizeof isas / sizeof *isas; v++) {
            vq_dot_fn fn = vq_dot_variant(t, isas[v]);
            if (!fn)
                continue;
            double gbs[REPS], ns[REPS];
            volatile float sink = 0;
            for (int rep = 0; rep < REPS; rep++) {
                double t0 = vq_now_seconds();
                float s = 0;
                for (size_t i = 0; i < rows; i++)
                    s += fn(w + i * row_bytes, act, N_ELEMS);
                double dt = vq_now_seconds() - t0;
                sink += s;
                gbs[rep] = (double)(rows * row_bytes) / dt / 1e9;
                ns[rep] = dt / (double)rows * 1e9;
            }
            (void)sink;
            qsort(gbs, REPS, sizeof *gbs, cmp_double);
            qsort(ns, REPS, sizeof *ns, cmp_double);
            printf("%-5s %-7s %9.2f %9.2f %9.2f %6.0f%% %9.0f\n", vq_wtype_name(t), isa_names[v],
                   gbs[REPS / 2], gbs[0], gbs[REPS - 1], 100.0 * gbs[REPS / 2] / bw, ns[REPS / 2]);
        }
        /* the whole matrix through vq_dot_rows (decode: four rows per
         * call where a 4-row kernel exists), and where the CPU has them
         * through the 16-row interleaved kernels (model/quants_x16.h:
         * what decode reads for Q4_0 / Q4_1) */
        rows &= ~(size_t)(VQ_X16_ROWS - 1);
        float *outr = malloc(rows * sizeof *outr);
        if (!outr || time_matrix(t, "rows", vq_dot_rows, w, row_bytes, rows, act, outr, bw))
            return 1;
        if (vq_x16_available(t)) {
            uint8_t *wx = malloc(rows * row_bytes);
            float *outx = malloc(rows * sizeof *outx);
            if (!wx || !outx || !vq_x16_repack(t, w, rows, row_bytes, wx) ||
                time_matrix(t, "x16", vq_x16_rows, wx, row_bytes, rows, act, outx, bw))
                return 1;
            double worst = 0; /* the two arithmetics agree to float rounding */
            for (size_t i = 0; i < rows; i++) {
                double e = fabs((double)outx[i] - outr[i]) / (fabs((double)outr[i]) + 1e-3);
                worst = e > worst ? e : worst;
            }
            printf("%-5s x16 against rows: worst relative difference %.2e\n", vq_wtype_name(t), worst);
            free(wx), free(outx);
        }
        free(outr);
        /* 4 activation vectors at once (dispatched kernels) */
        size_t ab = vq_act_bytes(t, N_ELEMS);
        uint8_t *act4 = malloc(4 * ab);
        for (int j = 0; j < 4; j++)
            vq_act_prepare(t, x, N_ELEMS, act4 + j * ab);
        double single[REPS], multi[REPS];
        volatile float sink = 0;
        for (int rep = 0; rep < REPS; rep++) {
            float out[4];
            double t0 = vq_now_seconds();
            for (size_t i = 0; i < rows; i++)
                for (int j = 0; j < 4; j++)
                    out[j] = vq_dot(t, w + i * row_bytes, act4 + j * ab, N_ELEMS);
            double t1 = vq_now_seconds();
            for (size_t i = 0; i < rows; i++)
                vq_dot_multi(t, w + i * row_bytes, act4, ab, 4, N_ELEMS, out);
            double t2 = vq_now_seconds();
            sink += out[0];
            single[rep] = (t1 - t0) / (double)rows / 4 * 1e9;
            multi[rep] = (t2 - t1) / (double)rows / 4 * 1e9;
        }
        (void)sink;
        qsort(single, REPS, sizeof *single, cmp_double);
        qsort(multi, REPS, sizeof *multi, cmp_double);
        printf("%-5s %-7s %9s %9s %9s %6.2fx %9.0f\n", vq_wtype_name(t), "multi4", "", "", "",
               single[REPS / 2] / multi[REPS / 2], multi[REPS / 2]);
        free(act4);
        free(w);
        free(act);
    }
    return 0;
}
