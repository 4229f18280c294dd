/* soak.c -- a long generation with a bounded cache, memory sampled.
 *
 *   build/soak/soak --model smollm2-135m --tokens 50000 --every 500
 *                   [--cache "CONFIG"] [--csv FILE] [--threads N]
 *
 * Loads the model, builds the cache (default: q4_0 with rotation for keys
 * and values, streaming_llm with 4 sinks and a window of 1020 tokens),
 * prefills a short prompt and samples (temperature 0.8, seed 1, end-of-
 * generation tokens ignored) until --tokens tokens are generated. Every
 * --every tokens one CSV line: tokens generated, seconds, process resident
 * memory (/proc/self/statm) and its anonymous part (resident - shared: the
 * heap without the mapped model file), peak resident memory, the cache's tokens
 * held and resident bytes (vq_cache_stats). Lines are flushed as they are
 * written, so an interrupted run keeps what it measured.
 * Exit status 0 when all tokens were generated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "veloxquant.h"

typedef struct {
    vq_cache *cache;
    FILE *csv;
    long every, done;
    struct timespec t0;
} soak_state;

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

/* resident anonymous memory (resident - shared pages of /proc/self/statm):
 * the heap, without the file pages of the mapped model, which are paged in
 * as new tokens touch their embedding rows */
static size_t anon_rss(void)
{
    unsigned long size, res, shared;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%lu %lu %lu", &size, &res, &shared);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 3 && res >= shared && page > 0 ? (size_t)(res - shared) * (size_t)page : 0;
}

static void sample(soak_state *s)
{
    vq_cache_usage u;
    memset(&u, 0, sizeof u);
    vq_cache_stats(s->cache, -1, &u);
    fprintf(s->csv, "%ld,%.1f,%zu,%zu,%zu,%llu,%llu\n", s->done, since(&s->t0), vq_current_rss_bytes(), anon_rss(),
            vq_peak_rss_bytes(), (unsigned long long)u.keys.tokens,
            (unsigned long long)(u.keys.resident_bytes + u.values.resident_bytes + u.index_bytes));
    fflush(s->csv);
}

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token, (void)piece, (void)len;
    soak_state *s = user;
    s->done++;
    if (s->done % s->every == 0)
        sample(s);
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = "smollm2-135m", *csv = NULL;
    const char *config = "keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=4,window=1020";
    long tokens = 50000, every = 500;
    int threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--model") == 0)
            model = argv[i + 1];
        else if (strcmp(argv[i], "--tokens") == 0)
            tokens = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--every") == 0)
            every = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--cache") == 0)
            config = argv[i + 1];
        else if (strcmp(argv[i], "--csv") == 0)
            csv = argv[i + 1];
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "soak: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (tokens < 1 || every < 1 || tokens > 10000000) {
        fprintf(stderr, "soak: bad --tokens or --every\n");
        return 2;
    }
    vq_model *m = NULL;
    vq_cache_config *cfg = NULL;
    soak_state s = { 0 };
    vq_ctx *c = NULL;
    int rc = 1;
    if (vq_model_load(model, &m) != VQ_OK || vq_cache_config_parse(config, &cfg) != VQ_OK ||
        vq_cache_for_model(m, cfg, &s.cache) != VQ_OK ||
        vq_ctx_create_cached(m, s.cache, (int)(tokens + 64), threads, &c) != VQ_OK) {
        fprintf(stderr, "soak: %s\n", vq_last_error());
        goto done;
    }
    s.csv = csv ? fopen(csv, "w") : stdout;
    if (!s.csv) {
        fprintf(stderr, "soak: cannot write %s\n", csv);
        goto done;
    }
    s.every = every;
    fprintf(s.csv, "# model=%s cache=\"%s\" tokens=%ld threads=%d\n", model, config, tokens, threads);
    fprintf(s.csv, "generated,seconds,rss_bytes,anon_rss_bytes,peak_rss_bytes,cache_tokens_held,cache_resident_bytes\n");
    clock_gettime(CLOCK_MONOTONIC, &s.t0);
    sample(&s);
    vq_gen_params p = vq_gen_defaults();
    p.max_tokens = (int)tokens;
    p.stop_at_eog = 0;
    p.sampler.temperature = 0.8f;
    p.sampler.seed = 1;
    vq_status st = vq_generate(c, "The history of the city begins", &p, on_token, &s, NULL);
    if (st != VQ_OK) {
        fprintf(stderr, "soak: after %ld tokens: %s\n", s.done, vq_ctx_error(c));
        goto done;
    }
    if (s.done % every != 0)
        sample(&s);
    rc = s.done == tokens ? 0 : 1;
done:
    if (s.csv && s.csv != stdout)
        fclose(s.csv);
    vq_ctx_free(c);
    vq_cache_free(s.cache);
    vq_cache_config_free(cfg);
    vq_model_free(m);
    return rc;
}
