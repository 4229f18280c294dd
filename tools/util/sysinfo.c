/* sysinfo.c -- machine facts for result files (contract in sysinfo.h). */
#include "util/sysinfo.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Copy the value after the first ':' of `line` into dst, trimmed. */
static void copy_value(const char *line, char *dst, size_t cap)
{
    const char *p = strchr(line, ':');
    if (!p)
        return;
    p++;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, "\r\n");
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

void cli_sysinfo_get(cli_sysinfo *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->cpu_model, sizeof out->cpu_model, "unknown");
    snprintf(out->os, sizeof out->os, "unknown");
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                copy_value(line, out->cpu_model, sizeof out->cpu_model);
                break;
            }
        fclose(f);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    out->n_cores = n > 0 && n < 1 << 20 ? (int)n : 0;
    f = fopen("/proc/meminfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
                out->mem_total_bytes = (uint64_t)kb * 1024;
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(out->os, sizeof out->os, "%.30s %.40s %.20s", u.sysname, u.release, u.machine);
}

void cli_utc_now_iso8601(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (cap == 0)
        return;
    if (!gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "unknown");
}
