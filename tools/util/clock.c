/* clock.c -- see clock.h. */
#include "util/clock.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double cli_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t cli_peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (size_t)ru.ru_maxrss * 1024u : 0;
}

size_t cli_current_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, resident = 0;
    int ok = fscanf(f, "%lu %lu", &size, &resident) == 2;
    fclose(f);
    return ok ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}
