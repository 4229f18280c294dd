/* three_lines.c -- the C integration in three lines: load a model, build a
 * compressed KV cache for it, generate. Build: make examples, then
 *   ./build/examples/three_lines [MODEL] [CACHE CONFIG] [PROMPT]
 * (defaults: smollm2-135m, "keys=turboquant_rvq:bits=4 values=kivi:bits=4",
 * "The capital of France is"). Prints the text, then the cache's bytes. */
#include <stdio.h>

#include "veloxquant.h"

static int print_piece(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    (void)user;
    fwrite(piece, 1, len, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "smollm2-135m";
    const char *config = argc > 2 ? argv[2] : "keys=turboquant_rvq:bits=4 values=kivi:bits=4";
    const char *prompt = argc > 3 ? argv[3] : "The capital of France is";
    vq_model *m = NULL;
    vq_cache_config *cfg = NULL;
    vq_cache *cache = NULL;
    vq_ctx *ctx = NULL;
    vq_gen_params gp = vq_gen_defaults();
    gp.sampler.temperature = 0; /* greedy */
    gp.max_tokens = 16;

    /* the three lines */
    vq_status st = vq_model_load(model, &m);
    if (st == VQ_OK && (st = vq_cache_config_parse(config, &cfg)) == VQ_OK)
        st = vq_cache_for_model(m, cfg, &cache);
    if (st == VQ_OK && (st = vq_ctx_create_cached(m, cache, 0, 0, &ctx)) == VQ_OK)
        st = vq_generate(ctx, prompt, &gp, print_piece, NULL, NULL);

    if (st != VQ_OK) {
        fprintf(stderr, "three_lines: %s\n", vq_last_error());
    } else {
        vq_cache_usage u;
        vq_cache_stats(cache, -1, &u);
        printf("\nKV cache: %llu bytes accounted, %llu resident, %llu as fp16\n",
               (unsigned long long)(u.keys.accounted_bytes + u.values.accounted_bytes),
               (unsigned long long)(u.keys.resident_bytes + u.values.resident_bytes),
               (unsigned long long)(u.keys.fp16_bytes + u.values.fp16_bytes));
    }
    vq_ctx_free(ctx); /* the context borrows the cache: free it first */
    vq_cache_free(cache);
    vq_cache_config_free(cfg);
    vq_model_free(m);
    return st == VQ_OK ? 0 : 1;
}
