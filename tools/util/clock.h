/* clock.h -- the CLI's wall clock and process memory figures (Linux).
 *
 * cli_now_seconds: CLOCK_MONOTONIC in seconds.
 * cli_peak_rss_bytes: the process's peak resident set (getrusage
 * ru_maxrss, i.e. VmHWM), 0 if unknown.
 * cli_current_rss_bytes: resident set now (/proc/self/statm), 0 if unknown.
 * (The library keeps its own timer in src/core for vq_gen_stats; the CLI
 * uses the public API only, so it reads the clocks itself.) */
#ifndef VQ_TOOLS_UTIL_CLOCK_H
#define VQ_TOOLS_UTIL_CLOCK_H

#include <stddef.h>

double cli_now_seconds(void);
size_t cli_peak_rss_bytes(void);
size_t cli_current_rss_bytes(void);

#endif
