/* timer.h -- monotonic wall time and process peak memory. */
#ifndef VQ_CORE_TIMER_H
#define VQ_CORE_TIMER_H

#include <stddef.h>

double vq_now_seconds(void);      /* CLOCK_MONOTONIC */
size_t vq_peak_rss_bytes(void);   /* getrusage ru_maxrss (VmHWM) */
size_t vq_current_rss_bytes(void);/* /proc/self/statm resident, 0 if unknown */

#endif
