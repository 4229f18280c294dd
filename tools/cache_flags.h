/* cache_flags.h -- the command-line flags that select a packed KV cache,
 * shared by the subcommands that run a model (generate, ppl, validate,
 * calibrate). Public API only.
 *
 *   --cache "CONFIG"   full config text (veloxquant.h cache section)
 *   --keys SPEC --values SPEC --residual N --evict SPEC --cross SPEC
 *                      single fields, added to the --cache text; a field
 *                      given twice (flag and --cache) is refused by the
 *                      config parser, which names it; so is a flag given
 *                      twice (it would otherwise silently replace the first).
 *
 * Use: cli_cache_flags f = {0}; in the argv loop call cli_cache_flag(&f,
 * argv[i], val) for options with a value (1: consumed, 0: not a cache
 * flag); then cli_cache_config(&f, &cfg) gives the parsed config, or NULL
 * when no cache flag was given (callers then use the float K/V buffer). */
#ifndef VQ_TOOLS_CACHE_FLAGS_H
#define VQ_TOOLS_CACHE_FLAGS_H

#include <stdio.h>

#include "veloxquant.h"

typedef struct {
    const char *cache_text;
    const char *keys, *values, *residual, *evict, *cross;
    int any;
    const char *repeated; /* the first flag given twice (refused) */
} cli_cache_flags;

/* 1 if `opt` is a cache flag (its value `val` is kept; not copied). */
int cli_cache_flag(cli_cache_flags *f, const char *opt, const char *val);

/* The config text the flags describe into buf ("" when none given).
 * Returns 0 if it does not fit. */
int cli_cache_text(const cli_cache_flags *f, char *buf, size_t cap);

/* Parse the flags into *out (NULL when no cache flag was given). On a
 * parse error prints "veloxquant CMD: MESSAGE" and returns 0; else 1. */
int cli_cache_config(const cli_cache_flags *f, const char *cmd, vq_cache_config **out);

/* The flags' lines for a usage text. */
void cli_cache_usage(FILE *out);

/* One line about a cache: tokens held, accounted and resident K/V bytes
 * (keys + values), the fp16 bytes of the same tokens and the ratios
 * fp16/accounted and fp16/resident, shared codec state. No newline. */
void cli_cache_stats_line(FILE *out, const vq_cache *c);

#endif
