/* cache_flags.h -- the command-line flags that select a packed KV cache,
 * shared by the subcommands that run a model (generate, ppl, needle), as
 * entries of their option tables (cli_opts.h). Public API only.
 *
 *   --cache "CONFIG"   full config text (veloxquant.h cache section)
 *   --keys SPEC --values SPEC --residual N --evict SPEC --cross SPEC
 *                      single fields, added to the --cache text; a field
 *                      given twice (flag and --cache) is refused by the
 *                      config parser, which names it; so is a flag given
 *                      twice (CLI_ONCE: it would otherwise silently replace
 *                      the first).
 *
 * Use: cli_cache_flags f = {0}; put CLI_CACHE_SECTION, CLI_CACHE_OPT_CONFIG(&f)
 * (generate) and CLI_CACHE_FIELD_OPTS(&f) in the option table; after the
 * parse cli_cache_config(&f, cmd, &cfg) gives the parsed config, or NULL
 * when no cache flag was given (callers then use the float K/V buffer).
 *
 * ppl and needle compare several configs: each --cache CONFIG of theirs
 * (repeatable, cli_config_add) and the one the single flags describe
 * (cli_config_add_flags) go to a cli_config_list. */
#ifndef VQ_TOOLS_CACHE_FLAGS_H
#define VQ_TOOLS_CACHE_FLAGS_H

#include <stdio.h>

#include "cli_opts.h"
#include "veloxquant.h"

typedef struct {
    const char *cache_text;
    const char *keys, *values, *residual, *evict, *cross;
} cli_cache_flags;

#define CLI_CACHE_SECTION CLI_OPT_SECTION("KV cache (packed codes; without these flags the plain float32 K/V buffer is used):")
#define CLI_CACHE_OPT_ONCE(n, d, a, h) { n, CLI_STR, d, a, h, 0, 0, NULL, CLI_ONCE }
#define CLI_CACHE_OPT_CONFIG(f)                                                                                  \
    CLI_CACHE_OPT_ONCE("cache", &(f)->cache_text, "\"CONFIG\"",                                                 \
                       "full config: keys=SPEC values=SPEC residual=N evict=SPEC\n"                              \
                       "cross=SPEC page=N bits=B0,B1,.. keep_first=N keep_last=N keep_spec=SPEC")
#define CLI_CACHE_FIELD_OPTS(f)                                                                                  \
    CLI_CACHE_OPT_ONCE("keys", &(f)->keys, "SPEC", "key codec, e.g. turboquant_rvq:bits=4, q8_0, q4_0:rot=1, fp16"), \
        CLI_CACHE_OPT_ONCE("values", &(f)->values, "SPEC", "value codec, e.g. kivi:bits=4"),                     \
        CLI_CACHE_OPT_ONCE("residual", &(f)->residual, "N", "newest N tokens kept fp16"),                         \
        CLI_CACHE_OPT_ONCE("evict", &(f)->evict, "SPEC",                                                          \
                           "streaming_llm:sinks=4,window=W | h2o:budget=B | snapkv:budget=B |\n"                  \
                           "tova:budget=B | pyramidkv:budget=B"),                                                 \
        CLI_CACHE_OPT_ONCE("cross", &(f)->cross, "SPEC", "minicache | xkv | xquant (cross-layer)"),               \
        CLI_OPT_NOTE("(vecinfer/spectral need calib=FILE from `veloxquant calibrate`)")

/* 1 if any cache flag was given. */
int cli_cache_given(const cli_cache_flags *f);

/* The config text the flags describe into buf ("" when none given).
 * Returns 0 if it does not fit. */
int cli_cache_text(const cli_cache_flags *f, char *buf, size_t cap);

/* Parse the flags into *out (NULL when no cache flag was given). On a
 * parse error prints "veloxquant CMD: MESSAGE" and returns 0; else 1. */
int cli_cache_config(const cli_cache_flags *f, const char *cmd, vq_cache_config **out);

#define CLI_MAX_CONFIGS 12

/* Config texts to compare (ppl, needle); text[0..n). max: how many the
 * list takes (at most CLI_MAX_CONFIGS + 1). */
typedef struct {
    const char *text[CLI_MAX_CONFIGS + 1];
    int n, max;
    char flags_text[1024]; /* storage of the flags' config */
} cli_config_list;

/* CLI_CALL store for a repeatable --cache CONFIG (dst: the list). */
const char *cli_config_add(void *list, const char *config);

/* Add the config the single flags describe (nothing when none given).
 * Prints "veloxquant CMD: ..." and returns 0 when the list is full or the
 * text too long; else 1. */
int cli_config_add_flags(cli_config_list *l, const cli_cache_flags *f, const char *cmd);

/* One line about a cache: tokens held, accounted and resident K/V bytes
 * (keys + values), the fp16 bytes of the same tokens and the ratios
 * fp16/accounted and fp16/resident, shared codec state. No newline. */
void cli_cache_stats_line(FILE *out, const vq_cache *c);

#endif
