/* fuzz_config.c -- libFuzzer target for the cache-config parser
 * (vq_cache_config_parse) and what a parsed config drives: the input is the
 * config text. Contracts: a refusal carries a message and no config; an
 * accepted config's canonical text parses to the same canonical text; a
 * cache built from it on a small shape takes appends and attends without a
 * crash (a refusal anywhere carries a message). Configs asking for more
 * than 4096 residual tokens or a page of more than 4096 tokens are parsed
 * but not built (memory, not correctness). Corpus: tests/fuzz/corpus/config/. */
#include <string.h>

#include "cache/cache_internal.h"
#include "fuzz.h"

const char vq_fuzz_corpus[] = "config";

enum { HD = 64, NQ = 2, NKV = 1, NT = 5 };

static void exercise(const vq_cache_config *cfg, int n_layers)
{
    vq_layer_shape ls[8];
    for (int l = 0; l < n_layers; l++)
        ls[l] = (vq_layer_shape){ NKV, NQ, HD, l == 1 ? 3 : 0, 0.0f };
    vq_cache_shape sh = { n_layers, ls, 42 };
    vq_cache *c = NULL;
    vq_status st = vq_cache_create(cfg, &sh, 7, &c);
    if (st != VQ_OK) {
        FUZZ_CHECK(c == NULL && vq_last_error()[0]);
        return;
    }
    float k[NT * NKV * HD], v[NT * NKV * HD], q[NT * NQ * HD], out[NT * NQ * HD];
    uint64_t s = 1;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        k[i] = (float)vq_fuzz_rand(&s) / 4294967296.0f - 0.5f;
        v[i] = (float)vq_fuzz_rand(&s) / 4294967296.0f - 0.5f;
    }
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        q[i] = (float)vq_fuzz_rand(&s) / 4294967296.0f - 0.5f;
    for (int round = 0; round < 2; round++) {
        for (int l = 0; l < n_layers; l++) {
            size_t n = round ? 1 : NT;
            st = vq_cache_append(c, l, k, v, n, round ? NT : 0);
            if (st != VQ_OK) {
                FUZZ_CHECK(vq_cache_error(c)[0] || vq_last_error()[0]);
                continue;
            }
            st = vq_cache_attend(c, l, q, n, NQ, 0.125f, out);
            FUZZ_CHECK(st == VQ_OK || vq_last_error()[0]);
        }
    }
    vq_cache_usage u;
    FUZZ_CHECK(vq_cache_stats(c, -1, &u) == VQ_OK);
    size_t n = 0;
    if (vq_cache_gather(c, 0, 0, 0, NULL, NULL, NULL, &n) == VQ_OK && n <= NT + 1) {
        int32_t pos[NT + 1];
        float gk[(NT + 1) * HD], gv[(NT + 1) * HD];
        FUZZ_CHECK(vq_cache_gather(c, 0, 0, NT + 1, pos, gk, gv, &n) == VQ_OK);
    }
    vq_cache_reset(c);
    vq_cache_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = vq_fuzz_cstr(data, size);
    if (!text)
        return 0;
    vq_cache_config *cfg = NULL;
    vq_status st = vq_cache_config_parse(text, &cfg);
    free(text);
    if (st != VQ_OK) {
        FUZZ_CHECK(cfg == NULL && vq_last_error()[0]);
        return 0;
    }
    vq_fuzz_accepted++;
    /* canonical text is a fixed point */
    const char *canon = vq_cache_config_str(cfg);
    FUZZ_CHECK(canon != NULL);
    vq_cache_config *again = NULL;
    FUZZ_CHECK(vq_cache_config_parse(canon, &again) == VQ_OK);
    FUZZ_CHECK(strcmp(vq_cache_config_str(again), canon) == 0);
    vq_cache_config_free(again);
    int n_layers = cfg->n_bits > 0 ? cfg->n_bits : 2;
    if (cfg->residual <= 4096 && cfg->page <= 4096 && n_layers <= 8)
        exercise(cfg, n_layers);
    vq_cache_config_free(cfg);
    return 0;
}
