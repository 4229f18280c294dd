/* bench_common.h -- pieces shared by the `veloxquant bench` subcommands:
 * the machine's streaming read bandwidth, wall-clock time, medians, a
 * comma-separated list of integers, JSON string output. */
#ifndef VQ_TOOLS_BENCH_COMMON_H
#define VQ_TOOLS_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

/* Seconds from a monotonic clock. */
double bench_now(void);

/* `bytes` on 2 MB-aligned memory advised onto huge pages (madvise
 * MADV_HUGEPAGE, as the cache's pages and the model's weights are:
 * core/huge.h), so that a benchmark streams it as the library streams its
 * own; free() releases it. NULL when out of memory. */
void *bench_alloc_huge(size_t bytes);

/* GB/s of reading a buffer of max(512 MiB, 2 x the L3 cache) (at most
 * 2 GiB) once, split over n_threads threads (median of 5 passes after a
 * warm-up; the buffer is written first so its pages exist): the memory
 * bandwidth. 0 when the buffer cannot be allocated. */
double bench_read_bandwidth(int n_threads);
/* The same for a buffer of `bytes` read again and again (median of 9):
 * what a working set of that size gets, from the caches when it fits. */
double bench_read_bandwidth_cached(int n_threads, size_t bytes);

/* The compute rate of n_threads threads running an arithmetic loop at
 * once, over one thread's alone (median of 5 alternated rounds of about
 * 20 ms per thread): n_threads where every thread has a core of its own,
 * about 1 where they share one physical core (SMT siblings, or virtual
 * CPUs that the host runs on one core). Every figure taken with threads
 * is read against it. Each round is capped at n_threads (a higher reading
 * is the one-thread run held up), so the result is in (0, n_threads]. 1
 * for n_threads <= 1. */
double bench_thread_scaling(int n_threads);

/* Median of n values (sorts v in place); n >= 1. */
double bench_median(double *v, int n);

/* Parse "a,b,c" positive integers into out[cap]; returns the count, or -1
 * on a malformed list (empty item, not a number, <= 0, > max, too many). */
int bench_parse_list(const char *s, long *out, int cap, long max);

/* --ctx LIST for the option table (cli_opts.h CLI_CALL): token counts
 * into v[0..n), at most cap (<= 16) of them, each in 1..max. */
typedef struct {
    long v[16];
    int n, cap;
    long max;
} bench_ctx_list;
const char *bench_store_ctx_list(void *list, const char *text);

/* Repeatable config texts (CLI_CALL): text[n++], at most cap (<= 40). */
typedef struct {
    const char *text[40];
    int n, cap;
} bench_config_list;
const char *bench_store_config(void *list, const char *text);


/* CPU model name from /proc/cpuinfo into buf ("unknown" if not found). */
void bench_cpu_name(char *buf, size_t cap);

#endif
