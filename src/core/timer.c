/* timer.c -- clocks and memory high-water marks (Linux). */
#include "core/timer.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double vq_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t vq_peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (size_t)ru.ru_maxrss * 1024u;
}

size_t vq_current_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, res = 0;
    int ok = fscanf(f, "%lu %lu", &size, &res) == 2;
    fclose(f);
    return ok ? (size_t)res * (size_t)sysconf(_SC_PAGESIZE) : 0;
}
