/* recipe.h -- how the files under tests/formats/ were made, shared by their
 * generator (make_old_files.c, built against an older library by
 * scripts/make_old_format_files.sh) and by tests/test_file_versions.c,
 * which makes the same caches and codecs with the library under test.
 * Public API only, and only calls that every library version since the
 * files' format versions has, so that both sides compute the same thing. */
#ifndef VQ_TESTS_FORMATS_RECIPE_H
#define VQ_TESTS_FORMATS_RECIPE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "veloxquant.h"

/* a cache with a calibrated codec (its state is saved inside the cache
 * file and in a model calibration file) and eviction scores */
#define FMT_CFG_PLAIN "keys=vecinfer:sub_dim=8,bits=4 values=q8_0 residual=4 evict=h2o:budget=20,sinks=1,recent=4 page=256"
/* a cache with the xkv section (cache file version 2 in the old format);
 * both written when the default page was 256 tokens (now auto) */
#define FMT_CFG_XKV "residual=4 cross=xkv:group=2,bits=4,min=16 page=256"
/* the single codec of the codec calibration state */
#define FMT_CODEC_SPEC "vecinfer:sub_dim=8,bits=4"
#define FMT_CODEC_D 32
#define FMT_SEED 77u
#define FMT_FINGERPRINT 0xfeedbeefcafe1234ull
#define FMT_TOKENS 40 /* tokens appended before saving */

static const vq_cache_layer_shape fmt_layers[2] = { { 2, 4, 64, 0, 0.0f }, { 2, 4, 64, 24, 0.0f } };
static const vq_cache_shape fmt_shape = { 2, fmt_layers, FMT_FINGERPRINT };

/* deterministic values in [-1, 1) (xorshift64*) */
static inline float fmt_rnd(uint64_t *s)
{
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (float)((*s * 2685821657736338717ull) >> 40) / (float)(1u << 23) - 1.0f;
}

static inline void fmt_fill(uint64_t *s, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = fmt_rnd(s) + (i % 64 == 3 ? 3.0f : 0.0f); /* one outlier channel */
}

/* the cache of cfg_text: calibrated on 256 tokens per layer, then
 * FMT_TOKENS tokens appended and attended one at a time; NULL on failure */
static inline vq_cache *fmt_cache(const char *cfg_text)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    if (vq_cache_config_parse(cfg_text, &cfg) != VQ_OK)
        return NULL;
    vq_status st = vq_cache_create(cfg, &fmt_shape, FMT_SEED, &c);
    vq_cache_config_free(cfg);
    if (st != VQ_OK)
        return NULL;
    const size_t kv = 2 * 64, qn = 4 * 64, ncal = 256;
    float *k = malloc(sizeof(float) * kv * ncal), *v = malloc(sizeof(float) * kv * ncal);
    float *q = malloc(sizeof(float) * qn), *y = malloc(sizeof(float) * qn);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int l = 0; st == VQ_OK && k && v && l < 2; l++) {
        fmt_fill(&s, k, kv * ncal);
        fmt_fill(&s, v, kv * ncal);
        st = vq_cache_calibrate(c, l, k, v, ncal);
    }
    for (int t = 0; st == VQ_OK && q && y && t < FMT_TOKENS; t++)
        for (int l = 0; st == VQ_OK && l < 2; l++) {
            fmt_fill(&s, k, kv);
            fmt_fill(&s, v, kv);
            fmt_fill(&s, q, qn);
            st = vq_cache_append(c, l, k, v, 1, t);
            if (st == VQ_OK)
                st = vq_cache_attend(c, l, q, 1, 4, 0.125f, y);
        }
    free(k), free(v), free(q), free(y);
    if (st != VQ_OK || !k || !v || !q || !y) {
        vq_cache_free(c);
        return NULL;
    }
    return c;
}

/* the codec of FMT_CODEC_SPEC calibrated on 512 vectors; NULL on failure */
static inline vq_codec *fmt_codec(void)
{
    vq_codec *c = NULL;
    if (vq_codec_create(FMT_CODEC_SPEC, FMT_CODEC_D, VQ_ROLE_KEY, FMT_SEED, &c) != VQ_OK)
        return NULL;
    const size_t n = 512;
    float *x = malloc(sizeof(float) * n * FMT_CODEC_D);
    uint64_t s = 12345;
    if (x)
        fmt_fill(&s, x, n * FMT_CODEC_D);
    vq_status st = x ? vq_codec_calibrate(c, x, n) : VQ_ERR_NOMEM;
    free(x);
    if (st != VQ_OK) {
        vq_codec_free(c);
        return NULL;
    }
    return c;
}

#endif
