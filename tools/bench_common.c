/* bench_common.c -- see bench_common.h. */
#include "bench_common.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 64 bytes as one vector, read with the widest loads the CPU has (each
 * clone of xor_lines is compiled for its ISA; the loader picks one at
 * start), so that the floor is what a kernel's loads could reach, not what
 * a narrow loop does: a floor below what the memory can do would flatter
 * every kernel measured against it. */
typedef uint64_t line64 __attribute__((vector_size(64)));

typedef struct {
    const line64 *p;
    size_t n;
    uint64_t sum;
} read_job;

/* XOR of n lines in 4 independent chains (the loads, not the arithmetic,
 * bound the loop) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static uint64_t xor_lines(const line64 *p, size_t n)
{
    line64 s0 = { 0 }, s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 ^= p[i];
        s1 ^= p[i + 1];
        s2 ^= p[i + 2];
        s3 ^= p[i + 3];
    }
    for (; i < n; i++)
        s0 ^= p[i];
    const line64 s = s0 ^ s1 ^ s2 ^ s3;
    return s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7];
}

static void *read_lines(void *arg)
{
    read_job *j = arg;
    j->sum = xor_lines(j->p, j->n);
    return NULL;
}

/* fn on jobs[0..n) (job k at jobs + k*size), job k > 0 on a thread of its
 * own (on the caller when no thread starts), job 0 on the caller; returns
 * when all are done */
static void run_threads(void *(*fn)(void *), void *jobs, size_t size, int n)
{
    enum { MAXT = 64 };
    pthread_t th[MAXT];
    int started[MAXT] = { 0 };
    char *j = jobs;
    for (int k = 1; k < n && k < MAXT; k++)
        started[k] = pthread_create(&th[k], NULL, fn, j + (size_t)k * size) == 0;
    fn(j);
    for (int k = 1; k < n && k < MAXT; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        else
            fn(j + (size_t)k * size);
    }
}

void *bench_alloc_huge(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes > (size_t)-1 - huge)
        return NULL;
    const size_t alloc = bytes ? (bytes + huge - 1) / huge * huge : huge;
    void *p = aligned_alloc(huge, alloc);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, alloc, MADV_HUGEPAGE);
#endif
    return p;
}

/* GB/s of reading `bytes` (a multiple of 64) once, median of `passes`
 * passes after one warm-up pass. The buffer is on huge pages where the OS
 * offers them (bench_alloc_huge); with 4 KB pages a stream pays a TLB miss
 * per 4 KB (2-core AMD EPYC, 512 MB, best of 7, load 0.26: 1 thread 26.1 ->
 * 29.6 GB/s, 2 threads 32.0 -> 34.3). */
static double read_rate(int n_threads, size_t bytes, int passes)
{
    enum { MAXP = 64, MAXT = 64 };
    const size_t n = bytes / sizeof(line64);
    if (n_threads < 1)
        n_threads = 1;
    if (n_threads > MAXT)
        n_threads = MAXT;
    if (passes > MAXP)
        passes = MAXP;
    line64 *buf = bench_alloc_huge(bytes);
    if (!buf)
        return 0.0;
    uint64_t *w = (uint64_t *)(void *)buf;
    for (size_t i = 0; i < bytes / sizeof(uint64_t); i++)
        w[i] = i * 0x9E3779B97F4A7C15ull;
    double t[MAXP];
    volatile uint64_t sink = 0;
    for (int r = -1; r < passes; r++) {
        read_job jobs[MAXT];
        for (int k = 0; k < n_threads; k++) {
            size_t b = n * (size_t)k / (size_t)n_threads, e = n * (size_t)(k + 1) / (size_t)n_threads;
            jobs[k] = (read_job){ buf + b, e - b, 0 };
        }
        double t0 = bench_now();
        run_threads(read_lines, jobs, sizeof *jobs, n_threads);
        if (r >= 0)
            t[r] = bench_now() - t0;
        for (int k = 0; k < n_threads; k++)
            sink ^= jobs[k].sum;
    }
    (void)sink;
    free(buf);
    return (double)bytes / bench_median(t, passes) / 1e9;
}

double bench_read_bandwidth(int n_threads)
{
    /* at least twice the last-level cache (some machines of this kind
     * report 480 MiB of L3), at most 2 GiB */
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t bytes = (size_t)512 << 20;
    if (l3 > 0 && (size_t)l3 * 2 > bytes)
        bytes = (size_t)l3 * 2;
    if (bytes > ((size_t)2 << 30))
        bytes = (size_t)2 << 30;
    return read_rate(n_threads, bytes / 64 * 64, 5);
}

double bench_read_bandwidth_cached(int n_threads, size_t bytes)
{
    return read_rate(n_threads, (bytes + 63) / 64 * 64, 9);
}

/* ---- thread scaling --------------------------------------------------- */

typedef struct {
    long iters;
    double sum;
} spin_job;

/* arithmetic only: 8 independent chains of multiply-adds (no memory) */
static void *spin_arith(void *arg)
{
    spin_job *j = arg;
    double x[8] = { 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7 };
    for (long i = 0; i < j->iters; i++)
        for (int c = 0; c < 8; c++)
            x[c] = x[c] * 0.999999 + 1e-6;
    j->sum = x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
    return NULL;
}

/* seconds for n threads (the caller one of them) to run the loop each */
static double spin_time(int n, long iters)
{
    enum { MAXT = 64 };
    spin_job jobs[MAXT];
    for (int k = 0; k < n; k++)
        jobs[k] = (spin_job){ iters, 0.0 };
    const double t0 = bench_now();
    run_threads(spin_arith, jobs, sizeof *jobs, n);
    const double t = bench_now() - t0;
    volatile double sink = 0.0;
    for (int k = 0; k < n; k++)
        sink += jobs[k].sum;
    (void)sink;
    return t;
}

double bench_thread_scaling(int n_threads)
{
    enum { ROUNDS = 5 };
    if (n_threads <= 1)
        return 1.0;
    if (n_threads > 64)
        n_threads = 64;
    long iters = 1 << 16; /* grown until one thread takes about 20 ms */
    while (spin_time(1, iters) < 0.02 && iters < (1L << 30))
        iters *= 2;
    double r[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) { /* alternated: the host's drift cancels */
        const double t1 = spin_time(1, iters), tn = spin_time(n_threads, iters);
        const double x = tn > 0.0 ? n_threads * t1 / tn : (double)n_threads;
        r[k] = x < n_threads ? x : n_threads; /* more: the one-thread run was held up (as core/pool.c's probe) */
    }
    return bench_median(r, ROUNDS);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_parse_list(const char *s, long *out, int cap, long max)
{
    int k = 0;
    const char *p = s;
    if (!s || !*s)
        return -1;
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9')
            return -1;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > max || k >= cap)
            return -1;
        out[k++] = v;
        if (*end == '\0')
            return k;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

const char *bench_store_ctx_list(void *list, const char *text)
{
    bench_ctx_list *l = list;
    static char want[96];
    int n = bench_parse_list(text, l->v, l->cap, l->max);
    if (n < 0) {
        snprintf(want, sizeof want, "a list of at most %d token counts in 1..%ld, e.g. 4096,16384", l->cap, l->max);
        return want;
    }
    l->n = n;
    return NULL;
}

const char *bench_store_config(void *list, const char *text)
{
    bench_config_list *l = list;
    static char want[64];
    if (l->n >= l->cap) {
        snprintf(want, sizeof want, "no more than %d configs in all", l->cap);
        return want;
    }
    l->text[l->n++] = text;
    return NULL;
}

/* the value of a /proc/cpuinfo line ("key<tabs>: value"), or NULL */
static const char *cpuinfo_value(char *line, const char *key)
{
    const size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\t' && line[k] != ':'))
        return NULL;
    char *c = strchr(line, ':');
    if (!c)
        return NULL;
    c++;
    while (*c == ' ' || *c == '\t')
        c++;
    c[strcspn(c, "\n")] = '\0';
    return c;
}

/* whether the space-separated flag list holds flag */
static int has_flag(const char *flags, const char *flag)
{
    const size_t k = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += k)
        if ((p == flags || p[-1] == ' ') && (p[k] == ' ' || p[k] == '\0'))
            return 1;
    return 0;
}

void bench_cpu_name(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[4096], name[256] = "unknown", fam[16] = "?", model[16] = "?", isa[64] = "";
    const char *v;
    while (fgets(line, sizeof line, f)) {
        if ((v = cpuinfo_value(line, "model name")) != NULL)
            snprintf(name, sizeof name, "%s", v);
        else if ((v = cpuinfo_value(line, "cpu family")) != NULL)
            snprintf(fam, sizeof fam, "%s", v);
        else if ((v = cpuinfo_value(line, "model")) != NULL)
            snprintf(model, sizeof model, "%s", v);
        else if ((v = cpuinfo_value(line, "flags")) != NULL) {
            /* the widest vector set, as the kernel tables choose (kernels.h) */
            if (has_flag(v, "avx512f") && has_flag(v, "avx512bw") && has_flag(v, "avx512vl") && has_flag(v, "avx512dq"))
                snprintf(isa, sizeof isa, "AVX-512%s%s%s", has_flag(v, "avx512_vnni") ? " VNNI" : "",
                         has_flag(v, "avx512vbmi") ? " VBMI" : "", has_flag(v, "avx512_vpopcntdq") ? " VPOPCNTDQ" : "");
            else if (has_flag(v, "avx2") && has_flag(v, "fma"))
                snprintf(isa, sizeof isa, "AVX2");
            else
                snprintf(isa, sizeof isa, "no AVX2");
            break; /* the first CPU's block is complete */
        }
    }
    fclose(f);
    snprintf(buf, cap, "%s (family %s, model %s%s%s)", name, fam, model, isa[0] ? "; " : "", isa);
}
