/* sysinfo.h -- facts about the machine a measurement ran on (Linux), for
 * the CLI's result files.
 *
 * cli_sysinfo_get fills every field it can and leaves the rest at their
 * "unknown" values ("unknown", 0); it never fails. Sources: the first
 * "model name" line of /proc/cpuinfo, sysconf(_SC_NPROCESSORS_ONLN), the
 * MemTotal line of /proc/meminfo, uname(2).
 * cli_utc_now_iso8601 writes the current UTC time as "YYYY-MM-DDTHH:MM:SSZ"
 * into buf (at least 21 bytes). */
#ifndef VQ_TOOLS_UTIL_SYSINFO_H
#define VQ_TOOLS_UTIL_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char cpu_model[128];
    int n_cores;            /* online logical CPUs, 0 if unknown */
    uint64_t mem_total_bytes; /* physical memory, 0 if unknown */
    char os[96];            /* "Linux 6.1.0 x86_64" */
} cli_sysinfo;

void cli_sysinfo_get(cli_sysinfo *out);
void cli_utc_now_iso8601(char *buf, size_t cap);

#endif
