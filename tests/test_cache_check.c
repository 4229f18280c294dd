/* test_cache_check.c -- check=warn|strict (model/cache_check.h) on a tiny
 * random model with strong key outlier channels (qwen2, key biases of
 * +-k_outlier on every 8th channel).
 *
 *   - the fp16 config measures KL ~ 0 and passes both modes;
 *   - for a 1-bit config and a 4-bit one: vq_cache_for_model with
 *     check=strict refuses exactly when vq_cache_check_kl measures KL >=
 *     0.5 (and says so), check=warn returns the cache with a "warning: "
 *     message exactly then, and without check= nothing is measured;
 *   - more bits never measure a larger KL here (1-bit vs 8-bit keys). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cache_check.h"
#include "model/quants.h"
#include "test.h"
#include "tiny_model.h"
#include "veloxquant.h"

static vq_model *load_outlier_model(void)
{
    vq_tiny_spec s = vq_tiny_outlier_spec();
    char path[600];
    snprintf(path, sizeof path, "%s/outlier_qwen2.gguf", vq_test_tmpdir());
    vq_model *m = NULL;
    CHECK(vq_tiny_write_outliers(&s, 40.0f, path) == 0);
    CHECKF(vq_model_load(path, &m) == VQ_OK, "load: %s", vq_last_error());
    remove(path);
    return m;
}

static vq_cache *for_model(vq_model *m, const char *text, vq_status *st)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    *st = vq_cache_config_parse(text, &cfg);
    CHECKF(*st == VQ_OK, "parse %s: %s", text, vq_last_error());
    if (*st == VQ_OK)
        *st = vq_cache_for_model(m, cfg, &c);
    vq_cache_config_free(cfg);
    return c;
}

static void test_check_modes(void)
{
    vq_model *m = load_outlier_model();
    if (!m)
        return;
    double kl = 1, top1 = 0, kl8 = 0;
    int n = 0;
    CHECK(vq_cache_check_kl(m, "keys=fp16 values=fp16", &kl, &top1, &n) == VQ_OK);
    CHECKF(kl < 1e-6 && top1 == 1.0 && n >= 64, "fp16 against fp16: KL %g top-1 %g over %d", kl, top1, n);
    const char *cfgs[] = { "keys=kivix:bits=1,group=16 values=kivix:bits=1,group=64 residual=0",
                           "keys=q4_0 values=q4_0 residual=0" };
    CHECK(vq_cache_check_kl(m, "keys=kivix:bits=8,group=16 values=kivix:bits=8,group=64 residual=0", &kl8, &top1,
                            &n) == VQ_OK);
    for (size_t i = 0; i < 2; i++) {
        CHECK(vq_cache_check_kl(m, cfgs[i], &kl, &top1, &n) == VQ_OK);
        printf("  %s: KL %.4g, top-1 %.3f over %d tokens\n", cfgs[i], kl, top1, n);
        if (i == 0)
            CHECKF(kl >= kl8, "1-bit KL %g below 8-bit KL %g", kl, kl8);
        int breaks = kl >= VQ_CHECK_BREAKS_KL;
        char text[256];
        vq_status st;
        snprintf(text, sizeof text, "%s check=strict", cfgs[i]);
        vq_cache *c = for_model(m, text, &st);
        CHECKF((st == VQ_ERR_UNSUPPORTED) == breaks && (c != NULL) == !breaks, "%s: strict status %d, KL %g", text,
               st, kl);
        if (breaks)
            CHECK(strstr(vq_last_error(), "breaks this model") != NULL);
        vq_cache_free(c);
        snprintf(text, sizeof text, "%s check=warn", cfgs[i]);
        c = for_model(m, text, &st);
        CHECK(st == VQ_OK && c != NULL);
        if (c)
            CHECKF((strncmp(vq_cache_error(c), "warning: ", 9) == 0) == breaks, "%s: warn message '%s', KL %g", text,
                   vq_cache_error(c), kl);
        vq_cache_free(c);
        c = for_model(m, cfgs[i], &st);
        CHECK(st == VQ_OK && c && vq_cache_error(c)[0] == '\0');
        vq_cache_free(c);
    }
    vq_status st;
    vq_cache *c = for_model(m, "keys=fp16 values=fp16 check=strict", &st);
    CHECK(st == VQ_OK && c != NULL);
    vq_cache_free(c);
    vq_cache_config *cfg = NULL;
    CHECK(vq_cache_config_parse("keys=fp16 check=loud", &cfg) == VQ_ERR_INVALID_ARG);
    vq_model_free(m);
}

int main(void)
{
    RUN(test_check_modes);
    return vq_test_summary("cache_check");
}
