/* bench_runtime.c -- prefill and decode speed of the GGUF runtime, against
 * the memory bandwidth measured in the same run (docs PERF.md).
 *
 * For each model and thread count (1 and 2 by default): a fresh context,
 * a prompt of P tokens (WikiText-2 test text, tokenized by the model)
 * prefilled through vq_ctx_forward in batches of 64, then D greedy decode
 * steps (one token per vq_ctx_forward). REPS repetitions; reported: median,
 * min and max of prefill and decode tok/s (wall clock), and the median CPU
 * seconds the process used per decoded token (on a shared machine wall
 * time includes waiting for a core; CPU time does not).
 *
 * Bandwidth: a streaming read (sum of 64-bit words over 512 MiB, REPS
 * passes, median with min and max, one thread), measured before every
 * model. Decode floor = bytes of weights one decode step reads (every layer
 * matrix + the output head; the embedding lookup reads one row) / that
 * bandwidth: the time a perfectly memory-bound single-stream decode would
 * take. The load average is printed before and after so a reader can see
 * whether the machine was shared.
 *
 * Usage: bench_runtime [-p PROMPT_TOKENS] [-d DECODE_TOKENS] [-r REPS]
 *                      [-t THREADS_LIST e.g. 1,2] [-f TEXT_FILE] [MODEL...]
 * Defaults: -p 700 -d 32 -r 3 -t 1,2 -f ../shared/data/wikitext-2-test.txt
 * (or $VQ_WIKITEXT), models models/smollm2-135m.gguf models/gemma3-270m.gguf. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "model/model_internal.h"
#include "veloxquant.h"

#define MAX_REPS 15
#define BW_BYTES ((size_t)512 << 20)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    double med, mn, mx;
} stat3;

static stat3 stats(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stat3 s = { v[n / 2], v[0], v[n - 1] };
    if (n % 2 == 0)
        s.med = 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return s;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall-clock GB/s (and, in *cpu_gbs, GB per CPU-second of this thread:
 * what the read achieves while it holds a core, robust to sharing). */
static stat3 read_bandwidth(uint64_t *buf, size_t n, int reps, stat3 *cpu_gbs)
{
    double t[MAX_REPS], tc[MAX_REPS];
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = vq_now_seconds(), c0 = thread_cpu_seconds();
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i + 4 <= n; i += 4) {
            s0 += buf[i];
            s1 += buf[i + 1];
            s2 += buf[i + 2];
            s3 += buf[i + 3];
        }
        sink += s0 + s1 + s2 + s3;
        t[r] = (double)(n * 8) / (vq_now_seconds() - t0) / 1e9;
        tc[r] = (double)(n * 8) / (thread_cpu_seconds() - c0) / 1e9;
    }
    (void)sink;
    *cpu_gbs = stats(tc, reps);
    return stats(t, reps);
}

static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

static size_t wbytes(const vq_wmat *w) { return (size_t)w->rows * w->row_bytes; }

/* Weight bytes one decode step reads. */
static size_t decode_weight_bytes(const vq_model *m)
{
    size_t b = wbytes(&m->output) + m->tok_embd.row_bytes;
    for (int il = 0; il < m->n_layers; il++) {
        const vq_layer *L = &m->layers[il];
        b += wbytes(&L->wq) + wbytes(&L->wk) + wbytes(&L->wv) + wbytes(&L->wo) +
             wbytes(&L->w_gate) + wbytes(&L->w_up) + wbytes(&L->w_down);
    }
    return b;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* One repetition: returns 0 on success. */
static int run_once(vq_model *m, const int32_t *prompt, int np, int nd, int threads,
                    double *prefill_tps, double *decode_tps, double *decode_cpu_per_tok)
{
    vq_model_info mi;
    vq_model_info_get(m, &mi);
    vq_ctx *c = NULL;
    if (vq_ctx_create(m, np + nd + 8, threads, &c) != VQ_OK) {
        fprintf(stderr, "ctx: %s\n", vq_last_error());
        return -1;
    }
    float *lg = malloc((size_t)mi.n_vocab * sizeof *lg);
    int rc = 0;
    double t0 = vq_now_seconds();
    for (int i = 0; i < np && rc == 0; i += 64) {
        int k = np - i < 64 ? np - i : 64;
        rc = vq_ctx_forward(c, prompt + i, k, i + k == np ? lg : NULL, VQ_LOGITS_LAST) != VQ_OK;
    }
    double t1 = vq_now_seconds(), c1 = cpu_seconds();
    for (int s = 0; s < nd && rc == 0; s++) {
        int32_t tok = argmax(lg, mi.n_vocab);
        rc = vq_ctx_forward(c, &tok, 1, lg, VQ_LOGITS_LAST) != VQ_OK;
    }
    double t2 = vq_now_seconds(), c2 = cpu_seconds();
    if (rc)
        fprintf(stderr, "forward: %s\n", vq_ctx_error(c));
    *prefill_tps = np / (t1 - t0);
    *decode_tps = nd / (t2 - t1);
    *decode_cpu_per_tok = (c2 - c1) / nd;
    free(lg);
    vq_ctx_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    int np = 700, nd = 32, reps = 3;
    const char *threads_list = "1,2";
    const char *text_path = getenv("VQ_WIKITEXT") ? getenv("VQ_WIKITEXT")
                                                   : "../shared/data/wikitext-2-test.txt";
    const char *models[16];
    int n_models = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-p") == 0)
            np = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-d") == 0)
            nd = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
            reps = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-t") == 0)
            threads_list = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-f") == 0)
            text_path = argv[++i];
        else if (n_models < 16)
            models[n_models++] = argv[i];
    }
    if (n_models == 0) {
        models[n_models++] = "models/smollm2-135m.gguf";
        models[n_models++] = "models/gemma3-270m.gguf";
    }
    if (np < 1 || nd < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "bad -p/-d/-r (reps 1..%d)\n", MAX_REPS);
        return 2;
    }
    FILE *f = fopen(text_path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", text_path);
        return 2;
    }
    size_t cap = (size_t)np * 16 + 1;
    char *text = malloc(cap + 1);
    size_t len = fread(text, 1, cap, f);
    fclose(f);
    text[len] = 0;

    size_t nbw = BW_BYTES / 8;
    uint64_t *bw = malloc(BW_BYTES);
    if (!bw || !text)
        return 3;
    for (size_t i = 0; i < nbw; i++)
        bw[i] = i * 0x9e3779b97f4a7c15ull;

    printf("bench_runtime: prompt %d tokens, decode %d tokens, %d reps, threads %s\n", np, nd,
           reps, threads_list);
    printf("load average at start: %.2f (on %ld online CPUs)\n", loadavg(),
           sysconf(_SC_NPROCESSORS_ONLN));
    for (int mi_ = 0; mi_ < n_models; mi_++) {
        vq_model *m = NULL;
        if (vq_model_load(models[mi_], &m) != VQ_OK) {
            fprintf(stderr, "%s: %s\n", models[mi_], vq_last_error());
            continue;
        }
        int32_t *toks = NULL;
        size_t nt = 0;
        if (vq_model_tokenize(m, text, len, 1, 0, &toks, &nt) != VQ_OK || nt < (size_t)np) {
            fprintf(stderr, "%s: text gives only %zu tokens\n", models[mi_], nt);
            vq_model_free(m);
            continue;
        }
        stat3 bc, b = read_bandwidth(bw, nbw, reps, &bc);
        size_t wb = decode_weight_bytes(m);
        double floor_ms = (double)wb / (b.med * 1e9) * 1e3;
        double floor_cpu_ms = (double)wb / (bc.med * 1e9) * 1e3;
        printf("\n%s: decode reads %.1f MiB of weights/token\n"
               "  read bandwidth (1 thread) %.2f GB/s wall [%.2f..%.2f], %.2f GB per CPU-second\n"
               "  decode floor %.2f ms/token = %.1f tok/s (wall); %.2f CPU-ms/token\n",
               models[mi_], (double)wb / 1048576.0, b.med, b.mn, b.mx, bc.med, floor_ms,
               1e3 / floor_ms, floor_cpu_ms);
        printf("  threads | prefill tok/s med [min..max] | decode tok/s med [min..max] | "
               "decode CPU ms/token | decode / floor speed\n");
        const char *p = threads_list;
        while (*p) {
            int th = atoi(p);
            double pf[MAX_REPS], dc[MAX_REPS], cpu[MAX_REPS];
            int ok = th >= 1;
            for (int r = 0; ok && r < reps; r++)
                ok = run_once(m, toks, np, nd, th, &pf[r], &dc[r], &cpu[r]) == 0;
            if (ok) {
                stat3 sp = stats(pf, reps), sd = stats(dc, reps), sc = stats(cpu, reps);
                printf("  %7d | %7.1f [%7.1f..%7.1f]    | %6.1f [%6.1f..%6.1f]    | %8.2f          "
                       "| %.0f%%\n",
                       th, sp.med, sp.mn, sp.mx, sd.med, sd.mn, sd.mx, sc.med * 1e3,
                       100.0 * sd.med * floor_ms / 1e3);
            }
            while (*p && *p != ',')
                p++;
            if (*p == ',')
                p++;
        }
        free(toks);
        vq_model_free(m);
    }
    printf("\nload average at end: %.2f\n", loadavg());
    free(bw);
    free(text);
    return 0;
}
