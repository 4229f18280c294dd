/* test_cache_config.c -- the cache config text form: defaults, canonical
 * text round trip, per-layer overrides, and errors that name the field. */
#include <stdio.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/rng.h"
#include "test.h"
#include "veloxquant.h"

static void test_defaults_and_canonical(void)
{
    vq_cache_config *c = NULL;
    CHECK_OK(vq_cache_config_parse("", &c));
    CHECK(c && strcmp(vq_cache_config_str(c), "keys=fp16 values=fp16 residual=0 evict=none cross=none page=auto") == 0);
    vq_cache_config_free(c);
    const char *good[] = {
        "keys=q4_0:rot=1 values=q8_0 residual=128",
        "  keys=fp16\tvalues=fp16\n",
        "evict=streaming_llm:sinks=4,window=1020",
        "evict=streaming_llm",
        "evict=h2o:budget=512,sinks=4,recent=64",
        "evict=h2o:budget=100",
        "evict=snapkv:budget=256,window=32",
        "evict=tova:budget=300",
        "evict=pyramidkv:budget=256",
        "cross=minicache:start=0.5,threshold=0.9",
        "cross=xkv:group=2,energy=0.95",
        "cross=xquant:bits=4",
        "keys=kivi:bits=2 values=kivi:bits=2 bits=4,4,2 keep_first=1 keep_last=1 keep_spec=q8_0",
        "page=64 residual=0",
        "page=auto",
        "vdrop=0.001",
        "vdrop=0.00123456789 keys=kivi:bits=2",
        "vdrop=0",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        vq_cache_config *a = NULL, *b = NULL;
        vq_status st = vq_cache_config_parse(good[i], &a);
        CHECKF(st == VQ_OK, "'%s' refused: %s", good[i], vq_last_error());
        if (!a)
            continue;
        /* the canonical text parses to the same canonical text */
        CHECK_OK(vq_cache_config_parse(vq_cache_config_str(a), &b));
        CHECKF(b && strcmp(vq_cache_config_str(a), vq_cache_config_str(b)) == 0, "'%s' -> '%s' not stable", good[i],
               vq_cache_config_str(a));
        vq_cache_config_free(a);
        vq_cache_config_free(b);
    }
    CHECK_OK(vq_cache_config_parse("vdrop=1e-3", &c));
    CHECK(c && strstr(vq_cache_config_str(c), " vdrop=0.001") != NULL);
    vq_cache_config_free(c);
    CHECK_OK(vq_cache_config_parse("vdrop=0", &c));
    CHECK(c && strstr(vq_cache_config_str(c), "vdrop") == NULL);
    vq_cache_config_free(c);
    CHECK_OK(vq_cache_config_parse("evict=h2o:budget=100", &c));
    CHECK(strstr(vq_cache_config_str(c), "evict=h2o:budget=100,sinks=0,recent=50") != NULL);
    vq_cache_config_free(c);
}

static void test_errors_name_the_field(void)
{
    struct {
        const char *text, *needle;
    } bad[] = {
        { "keys=nosuch", "keys" },
        { "values=nosuch:bits=2", "values" },
        { "keys=", "keys" },
        { "keys=q4_0:", "keys" },
        { "residual=-1", "residual" },
        { "residual=abc", "residual" },
        { "residual=99999999", "residual" },
        { "evict=lru:budget=3", "evict" },
        { "evict=h2o:budget=10,sinks=5,recent=5", "evict" },
        { "evict=h2o:budgett=10", "budgett" },
        { "evict=streaming_llm:window=0", "window" },
        { "evict=snapkv:budget=16,window=32", "window" },
        { "cross=minicache:threshold=2", "threshold" },
        { "cross=foo", "cross" },
        { "bits=4,x,2", "bits" },
        { "bits=4,,2", "bits" },
        { "bits=4,99", "bits" },
        { "keep_first=-2", "keep_first" },
        { "keep_spec=nosuch", "keep_spec" },
        { "page=0", "page" },
        { "vdrop=0.5", "vdrop" },
        { "vdrop=-0.01", "vdrop" },
        { "vdrop=x", "vdrop" },
        { "vdrop=0.01x", "vdrop" },
        { "vdrop=nan", "vdrop" },
        { "colour=blue", "colour" },
        { "keys", "keys" },
        { "keys=fp16 keys=fp16", "twice" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vq_cache_config *c = (vq_cache_config *)&c; /* must be reset to NULL */
        vq_status st = vq_cache_config_parse(bad[i].text, &c);
        CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL, "'%s' accepted", bad[i].text);
        CHECKF(strstr(vq_last_error(), bad[i].needle) != NULL, "'%s': message '%s' does not name '%s'", bad[i].text,
               vq_last_error(), bad[i].needle);
    }
    CHECK(vq_cache_config_parse(NULL, NULL) == VQ_ERR_INVALID_ARG);
    vq_cache_config_free(NULL);
}

/* per-layer overrides reach the codecs of each layer */
static void test_per_layer_specs(void)
{
    vq_cache_config *cfg = NULL;
    const char *kivi = NULL;
    int have_kivi = 0;
    for (int i = 0; vq_codec_method(i, &kivi); i++)
        have_kivi |= strcmp(vq_codec_method(i, NULL), "kivi") == 0;
    vq_layer_shape ls[4] = { { 1, 1, 64, 0, 0 }, { 1, 1, 64, 0, 0 }, { 1, 1, 64, 0, 0 }, { 1, 1, 64, 0, 0 } };
    vq_cache_shape sh = { 4, ls, 0 };
    vq_cache *c = NULL;
    /* keep_first / keep_last */
    CHECK_OK(vq_cache_config_parse("keys=q8_0 values=q8_0 keep_first=1 keep_last=1 keep_spec=fp16", &cfg));
    if (cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_OK) {
        CHECK(strcmp(vq_cache_codec_spec(c, 0, VQ_ROLE_KEY), "fp16") == 0);
        CHECK(strncmp(vq_cache_codec_spec(c, 1, VQ_ROLE_KEY), "q8_0", 4) == 0);
        CHECK(strncmp(vq_cache_codec_spec(c, 2, VQ_ROLE_VALUE), "q8_0", 4) == 0);
        CHECK(strcmp(vq_cache_codec_spec(c, 3, VQ_ROLE_VALUE), "fp16") == 0);
        vq_cache_free(c);
        c = NULL;
    } else {
        CHECKF(0, "create: %s", vq_last_error());
    }
    vq_cache_config_free(cfg);
    if (have_kivi) {
        CHECK_OK(vq_cache_config_parse("keys=kivi:bits=2 values=fp16 bits=4,2,4,2", &cfg));
        if (cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_OK) {
            CHECKF(strstr(vq_cache_codec_spec(c, 0, VQ_ROLE_KEY), "bits=4") != NULL, "layer 0: %s",
                   vq_cache_codec_spec(c, 0, VQ_ROLE_KEY));
            CHECK(strstr(vq_cache_codec_spec(c, 1, VQ_ROLE_KEY), "bits=2") != NULL);
            CHECK(strcmp(vq_cache_codec_spec(c, 1, VQ_ROLE_VALUE), "fp16") == 0);
            vq_cache_free(c);
            c = NULL;
        } else {
            CHECKF(0, "create: %s", vq_last_error());
        }
        vq_cache_config_free(cfg);
        /* wrong list length: named at create, where the layer count is known */
        CHECK_OK(vq_cache_config_parse("keys=kivi:bits=2 bits=4,2", &cfg));
        CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG && c == NULL);
        CHECK(strstr(vq_last_error(), "bits") != NULL);
        vq_cache_config_free(cfg);
    }
    /* kbits / vbits: each role its own per-layer list, over bits */
    CHECK_OK(vq_cache_config_parse("keys=kivix:bits=4 values=kivix:bits=2 bits=3,3,3,3 kbits=4,3,2,8 vbits=2,2,5,1",
                                   &cfg));
    if (cfg) {
        vq_cache_config *re = NULL; /* (create copies the config: kbits travel) */
        CHECK(strstr(vq_cache_config_str(cfg), " kbits=4,3,2,8 vbits=2,2,5,1") != NULL);
        CHECK_OK(vq_cache_config_parse(vq_cache_config_str(cfg), &re));
        CHECK(re && strcmp(vq_cache_config_str(re), vq_cache_config_str(cfg)) == 0);
        vq_cache_config_free(re);
        if (vq_cache_create(cfg, &sh, 1, &c) == VQ_OK) {
            static const int kb[4] = { 4, 3, 2, 8 }, vb[4] = { 2, 2, 5, 1 };
            for (int l = 0; l < 4; l++) {
                char want[32];
                snprintf(want, sizeof want, "kivix:bits=%d,", kb[l]);
                CHECKF(strncmp(vq_cache_codec_spec(c, l, VQ_ROLE_KEY), want, strlen(want)) == 0, "layer %d keys %s",
                       l, vq_cache_codec_spec(c, l, VQ_ROLE_KEY));
                snprintf(want, sizeof want, "kivix:bits=%d,", vb[l]);
                CHECKF(strncmp(vq_cache_codec_spec(c, l, VQ_ROLE_VALUE), want, strlen(want)) == 0,
                       "layer %d values %s", l, vq_cache_codec_spec(c, l, VQ_ROLE_VALUE));
            }
            vq_cache_free(c);
            c = NULL;
        } else {
            CHECKF(0, "create: %s", vq_last_error());
        }
    }
    vq_cache_config_free(cfg);
    CHECK_OK(vq_cache_config_parse("keys=kivix vbits=2,2,2", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG && strstr(vq_last_error(), "vbits"));
    vq_cache_config_free(cfg);
    CHECK_OK(vq_cache_config_parse("keys=q8_0 kbits=2,2,2,2", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG && strstr(vq_last_error(), "kbits"));
    vq_cache_config_free(cfg);
    /* bits with no codec taking bits */
    CHECK_OK(vq_cache_config_parse("bits=4,4,4,4", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "bits") != NULL);
    vq_cache_config_free(cfg);
    /* a codec parameter out of range is named with the layer */
    CHECK_OK(vq_cache_config_parse("keys=q4_0:nosuch=1", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "nosuch") != NULL && strstr(vq_last_error(), "layer 0") != NULL);
    vq_cache_config_free(cfg);
    /* cross-layer methods refuse eviction (the rest is in test_cache_cross) */
    CHECK_OK(vq_cache_config_parse("cross=xquant:bits=4 evict=h2o:budget=8", &cfg));
    CHECK(cfg && vq_cache_create(cfg, &sh, 1, &c) == VQ_ERR_UNSUPPORTED);
    vq_cache_config_free(cfg);
}

/* random concatenations of grammar fragments: every result is either a
 * config whose canonical text re-parses to itself, or INVALID_ARG with a
 * non-empty message (the ASan run checks for memory errors) */
static void test_random_texts(void)
{
    static const char *frag[] = { "keys=", "values=", "residual=", "evict=", "cross=", "page=", "bits=",
                                  "keep_first=", "keep_last=", "keep_spec=", "fp16", "q4_0", "kivi:bits=2",
                                  "h2o:budget=", "streaming_llm:sinks=", ",window=", "snapkv", "tova:budget=",
                                  "minicache:start=0.5", "xquant:bits=", "vdrop=", "0.001", "4", "0", "-1", "99999999999", "32", ",",
                                  ":", "=", " ", "  ", "\t", "x", "4,2,4", "1e3", "" };
    vq_rng g;
    vq_rng_seed(&g, 77);
    int ok = 0, bad = 0, iters = vq_test_quick() ? 2000 : 20000;
    for (int it = 0; it < iters; it++) {
        char text[512] = "";
        int nf = 1 + (int)(vq_rng_next(&g) % 8);
        for (int f = 0; f < nf; f++) {
            const char *fr = frag[vq_rng_next(&g) % (sizeof frag / sizeof *frag)];
            if (strlen(text) + strlen(fr) < sizeof text)
                strcat(text, fr);
        }
        vq_cache_config *c = NULL, *d = NULL;
        vq_status st = vq_cache_config_parse(text, &c);
        if (st == VQ_OK) {
            ok++;
            int stable = vq_cache_config_parse(vq_cache_config_str(c), &d) == VQ_OK &&
                         strcmp(vq_cache_config_str(c), vq_cache_config_str(d)) == 0;
            CHECKF(stable, "'%s' -> '%s' does not re-parse to itself", text, vq_cache_config_str(c));
        } else {
            bad++;
            CHECKF(st == VQ_ERR_INVALID_ARG && c == NULL && vq_last_error()[0], "'%s': status %s", text,
                   vq_status_str(st));
        }
        vq_cache_config_free(c);
        vq_cache_config_free(d);
    }
    printf("  %d random texts: %d accepted, %d refused\n", iters, ok, bad);
    CHECK(ok > 0 && bad > 0);
}

/* page=auto: long pages where attention reads every page, short ones in a
 * sliding-window layer and in caches that evict or share slots; an explicit
 * page wins everywhere */
static void test_auto_page(void)
{
    const vq_layer_shape ls[2] = { { 2, 4, 64, 0, 0.0f }, { 2, 4, 64, 512, 0.0f } };
    const vq_cache_shape sh = { 2, ls, 7 };
    const struct {
        const char *text;
        size_t page0, page1;
    } cases[] = {
        { "", VQ_CACHE_PAGE_LONG, VQ_CACHE_PAGE_SHORT },
        { "page=auto keys=kivi:bits=2 values=kivi:bits=2", VQ_CACHE_PAGE_LONG, VQ_CACHE_PAGE_SHORT },
        { "evict=streaming_llm:sinks=4,window=256", VQ_CACHE_PAGE_SHORT, VQ_CACHE_PAGE_SHORT },
        { "cross=minicache:start=0.5,threshold=0.9", VQ_CACHE_PAGE_SHORT, VQ_CACHE_PAGE_SHORT },
        { "page=96", 96, 96 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vq_cache_config *cfg = NULL;
        vq_cache *c = NULL;
        CHECK_OK(vq_cache_config_parse(cases[i].text, &cfg));
        CHECK_OK(vq_cache_create(cfg, &sh, 1, &c));
        if (c)
            CHECKF(c->layers[0].page_tokens == cases[i].page0 && c->layers[1].page_tokens == cases[i].page1,
                   "'%s': pages of %zu and %zu tokens", cases[i].text, c->layers[0].page_tokens,
                   c->layers[1].page_tokens);
        vq_cache_free(c);
        vq_cache_config_free(cfg);
    }
    vq_cache_config *cfg = NULL;
    CHECK(vq_cache_config_parse("page=0", &cfg) != VQ_OK && cfg == NULL);
}

int main(void)
{
    RUN(test_defaults_and_canonical);
    RUN(test_errors_name_the_field);
    RUN(test_per_layer_specs);
    RUN(test_random_texts);
    RUN(test_auto_page);
    return vq_test_summary("cache_config");
}
