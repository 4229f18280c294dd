/* test_soak.c -- the short form of the long run (tests/soak/run-soak.sh):
 * smollm2-135m generates with a streaming_llm cache (4 sinks, a window of
 * 28) well past the window; after the window has filled, the tokens held
 * per layer and head never exceed sinks + window, and the cache's resident
 * bytes never exceed what they were in the first stretch after filling
 * (pages are reused, nothing grows). Under `make sanitize` LeakSanitizer
 * checks the whole run for leaks at exit. */
#include <string.h>

#include "test.h"
#include "veloxquant.h"

enum { SINKS = 4, WINDOW = 28 };

typedef struct {
    vq_cache *cache;
    int n, n_layers, n_kv;
    uint64_t max_first, max_later, max_tokens;
} soak;

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token, (void)piece, (void)len;
    soak *s = user;
    s->n++;
    vq_cache_usage u;
    if (vq_cache_stats(s->cache, -1, &u) != VQ_OK)
        return 1;
    uint64_t res = u.keys.resident_bytes + u.values.resident_bytes + u.index_bytes;
    if (s->n >= 2 * (SINKS + WINDOW)) {
        if (s->n < 4 * (SINKS + WINDOW))
            s->max_first = res > s->max_first ? res : s->max_first;
        else
            s->max_later = res > s->max_later ? res : s->max_later;
        uint64_t per_head = u.keys.tokens / (uint64_t)(s->n_layers * s->n_kv);
        s->max_tokens = per_head > s->max_tokens ? per_head : s->max_tokens;
    }
    return 0;
}

static void test_streaming_bounded(void)
{
    const char *path = vq_test_model("smollm2-135m");
    if (!path)
        return;
    vq_model *m = NULL;
    vq_cache_config *cfg = NULL;
    soak s = { 0 };
    vq_ctx *c = NULL;
    CHECK_OK(vq_model_load(path, &m));
    CHECK_OK(vq_cache_config_parse("keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=4,window=28", &cfg));
    if (m && cfg)
        CHECK_OK(vq_cache_for_model(m, cfg, &s.cache));
    if (s.cache)
        CHECK_OK(vq_ctx_create_cached(m, s.cache, 1024, 1, &c));
    if (c) {
        vq_model_info info;
        CHECK_OK(vq_model_info_get(m, &info));
        s.n_layers = info.n_layers;
        s.n_kv = info.n_kv_heads;
        vq_gen_params p = vq_gen_defaults();
        p.max_tokens = vq_test_quick() ? 6 * (SINKS + WINDOW) : 12 * (SINKS + WINDOW);
        p.stop_at_eog = 0;
        p.sampler.seed = 3;
        CHECK_OK(vq_generate(c, "Once upon a time", &p, on_token, &s, NULL));
        CHECK(s.n == p.max_tokens);
        CHECKF(s.max_tokens <= SINKS + WINDOW, "%llu tokens held per head, window %d + %d sinks",
               (unsigned long long)s.max_tokens, WINDOW, SINKS);
        CHECKF(s.max_first > 0 && s.max_later <= s.max_first,
               "cache resident bytes grew after the window filled: %llu then %llu", (unsigned long long)s.max_first,
               (unsigned long long)s.max_later);
        printf("soak: %d tokens, cache resident at most %llu B after the window filled (then %llu B)\n", s.n,
               (unsigned long long)s.max_first, (unsigned long long)s.max_later);
    }
    vq_ctx_free(c);
    vq_cache_free(s.cache);
    vq_cache_config_free(cfg);
    vq_model_free(m);
}

int main(void)
{
    RUN(test_streaming_bounded);
    return vq_test_summary("soak");
}
