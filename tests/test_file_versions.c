/* test_file_versions.c -- the binary files' format versions and writer
 * field (core/writer.h, docs/FORMATS.md, docs/cache-format.md):
 *   - files written by an older library (tests/formats/, made by
 *     scripts/make_old_format_files.sh from commit 20154e5 with the recipe
 *     in tests/formats/recipe.h) still load: a cache file of version 1 and
 *     one of version 2 (xkv) continue with the attention outputs of the
 *     same cache built now, bit for bit; a codec state of version 1 loads
 *     and encodes as the codec calibrated now; a model calibration file of
 *     version 1 serves a cache config as the one written now does;
 *   - the current versions (cache 3 and 4, VQCS 2, VQCM 2, VQPT 2) carry the
 *     writer field VQ_VERSION_NUMBER at offset 8, and the cache file and
 *     codec state are the old file plus that field, byte for byte;
 *   - a prompt sidecar of version 1 (the current one without the field,
 *     the layout is four fields) still loads;
 *   - a writer field out of range is refused (VQ_ERR_FORMAT) in each
 *     format, and a file of a newer format version is refused with a
 *     message naming the library that wrote it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/recipe.h"
#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "model/quants.h"
#include "test.h"
#include "test_files.h"
#include "tiny_model.h"

#define OLD_DIR "tests/formats/"

static uint8_t *read_file(const char *path, size_t *len)
{
    uint8_t *b = NULL;
    *len = 0;
    CHECKF(vq_file_read_all(path, 1u << 26, &b, len, NULL) == VQ_OK, "cannot read %s", path);
    return b;
}

/* p (len bytes, writer field at 8) as the previous version of its format:
 * the 4 bytes at offset 8 dropped, version `ver`, the trailing CRC-32 over
 * everything before it recomputed; *out_len = len - 4 */
static uint8_t *drop_writer(const uint8_t *p, size_t len, uint32_t ver, size_t *out_len)
{
    uint8_t *o = malloc(len - 4);
    memcpy(o, p, 8);
    memcpy(o + 8, p + 12, len - 12);
    vq_put_u32(o + 4, ver);
    vq_put_u32(o + len - 8, vq_crc32(0, o, len - 8));
    *out_len = len - 4;
    return o;
}

/* the same tokens appended to and attended by a and b: same outputs? */
static int same_continuation(vq_cache *a, vq_cache *b)
{
    float k[2 * 64], v[2 * 64], q[4 * 64], ya[4 * 64], yb[4 * 64];
    uint64_t s = 4242;
    int same = 1;
    for (int t = FMT_TOKENS; t < FMT_TOKENS + 12; t++)
        for (int l = 0; l < 2; l++) {
            fmt_fill(&s, k, sizeof k / sizeof *k);
            fmt_fill(&s, v, sizeof v / sizeof *v);
            fmt_fill(&s, q, sizeof q / sizeof *q);
            CHECK_OK(vq_cache_append(a, l, k, v, 1, t));
            CHECK_OK(vq_cache_append(b, l, k, v, 1, t));
            CHECK_OK(vq_cache_attend(a, l, q, 1, 4, 0.125f, ya));
            CHECK_OK(vq_cache_attend(b, l, q, 1, 4, 0.125f, yb));
            same &= memcmp(ya, yb, sizeof ya) == 0;
        }
    return same;
}

/* an old cache file (version old_ver) against the cache of cfg built now;
 * same_bytes: the config has no calibrated codec, so the file written now
 * is the old one plus the writer field (codec states inside a cache file
 * carry their own writer field) */
static void old_cache_file(const char *name, const char *cfg, uint32_t old_ver, int same_bytes)
{
    char old[256];
    snprintf(old, sizeof old, OLD_DIR "%s", name);
    vq_cache *now = fmt_cache(cfg), *loaded = NULL;
    CHECKF(now != NULL, "%s: %s", cfg, vq_last_error());
    if (!now)
        return;
    /* the file written now: version 3, the writer field, else the old bytes */
    const char *path = vq_test_tmp_path(name);
    CHECK_OK(vq_cache_save(now, path));
    size_t nlen = 0, olen = 0, slen = 0;
    uint8_t *nb = read_file(path, &nlen), *ob = read_file(old, &olen);
    if (nb && ob && nlen > 16) {
        CHECK(vq_get_u32(nb + 4) == 3 && vq_get_u32(nb + 8) == VQ_VERSION_NUMBER);
        CHECK(vq_get_u32(ob + 4) == old_ver);
    }
    if (nb && ob && nlen > 16 && same_bytes) {
        uint8_t *stripped = drop_writer(nb, nlen, old_ver, &slen);
        CHECKF(slen == olen && memcmp(stripped, ob, olen) == 0,
               "%s: the version-3 file is not the version-%u file plus the writer field (a codec changed its bits? "
               "regenerate tests/formats only if that is intended)",
               name, old_ver);
        free(stripped);
    }
    free(nb), free(ob);
    /* the old file loads and continues as the cache built now */
    CHECK_OK(vq_cache_load(old, &fmt_shape, &loaded));
    if (loaded) {
        CHECKF(same_continuation(now, loaded), "%s: the loaded old file attends differently", name);
        printf("  %s (version %u) loads and continues bit-identically\n", name, old_ver);
    }
    vq_cache_free(now), vq_cache_free(loaded);
}

static void test_old_cache_files(void)
{
    old_cache_file("plain.vqkc", FMT_CFG_PLAIN, 1, 0);
    old_cache_file("xkv.vqkc", FMT_CFG_XKV, 2, 1);
}

static void test_old_codec_state(void)
{
    vq_codec *now = fmt_codec(), *old = NULL;
    CHECK(now != NULL);
    size_t nlen = 0, olen = 0, slen = 0;
    uint8_t *ob = read_file(OLD_DIR "codec.vqcs", &olen), *nb = NULL;
    if (!now || !ob) {
        vq_codec_free(now), free(ob);
        return;
    }
    CHECK_OK(vq_codec_state_write(now, NULL, 0, &nlen));
    nb = malloc(nlen);
    CHECK_OK(vq_codec_state_write(now, nb, nlen, &nlen));
    CHECK(vq_get_u32(nb + 4) == 2 && vq_get_u32(nb + 8) == VQ_VERSION_NUMBER && vq_get_u32(ob + 4) == 1);
    uint8_t *stripped = drop_writer(nb, nlen, 1, &slen);
    CHECK(slen == olen && memcmp(stripped, ob, olen) == 0);
    /* the version-1 state loads and encodes as the codec calibrated now */
    CHECK_OK(vq_codec_create(FMT_CODEC_SPEC, FMT_CODEC_D, VQ_ROLE_KEY, FMT_SEED, &old));
    if (old) {
        CHECK_OK(vq_codec_state_read(old, ob, olen));
        float x[8 * FMT_CODEC_D];
        uint64_t s = 99;
        fmt_fill(&s, x, sizeof x / sizeof *x);
        size_t bpt = vq_codec_bytes_per_token(now);
        uint8_t *ca = calloc(8, bpt), *cb = calloc(8, bpt);
        CHECK_OK(vq_codec_encode(now, x, 8, ca));
        CHECK_OK(vq_codec_encode(old, x, 8, cb));
        CHECK(memcmp(ca, cb, 8 * bpt) == 0);
        free(ca), free(cb);
        /* a hostile writer field: refused, the codec keeps its state */
        nb[8] = 0xff, nb[11] = 0xff;
        vq_put_u32(nb + nlen - 4, vq_crc32(0, nb, nlen - 4));
        CHECK(vq_codec_state_read(old, nb, nlen) == VQ_ERR_FORMAT && strstr(vq_codec_error(old), "writer") != NULL);
        CHECK(vq_codec_is_ready(old));
        /* a newer version names its writer */
        vq_put_u32(nb + 4, 3);
        vq_put_u32(nb + 8, 20304);
        CHECK(vq_codec_state_read(old, nb, nlen) == VQ_ERR_FORMAT &&
              strstr(vq_codec_error(old), "written by veloxquant 2.3.4") != NULL);
        printf("  codec.vqcs (version 1) loads and encodes bit-identically\n");
    }
    free(stripped), free(nb), free(ob);
    vq_codec_free(now), vq_codec_free(old);
}

/* a cache whose keys read their state from calib_path; NULL (and the
 * message in vq_last_error) when it cannot be created */
static vq_cache *calib_cache(const char *calib_path)
{
    char text[1024];
    snprintf(text, sizeof text, "keys=vecinfer:sub_dim=8,bits=4,calib=%s values=q8_0 residual=4", calib_path);
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse(text, &cfg));
    if (cfg && vq_cache_create(cfg, &fmt_shape, FMT_SEED, &c) != VQ_OK)
        c = NULL;
    vq_cache_config_free(cfg);
    return c;
}

static void test_old_model_calibration(void)
{
    vq_cache *src = fmt_cache(FMT_CFG_PLAIN);
    CHECK(src != NULL);
    if (!src)
        return;
    const char *path = vq_test_tmp_path("calib.vqcm");
    CHECK_OK(vq_cache_save_calibration(src, path));
    vq_cache_free(src);
    size_t len = 0;
    uint8_t *b = read_file(path, &len);
    if (b && len > 32)
        CHECK(memcmp(b, "VQCM", 4) == 0 && vq_get_u32(b + 4) == 2 && vq_get_u32(b + 8) == VQ_VERSION_NUMBER);
    vq_cache *a = calib_cache(path);
    CHECKF(a != NULL, "the calibration file written now does not load: %s", vq_last_error());
    vq_cache *o = calib_cache(OLD_DIR "calib.vqcm");
    CHECKF(o != NULL, "the version-1 calibration file does not load: %s", vq_last_error());
    if (a && o) {
        CHECK(same_continuation(a, o));
        printf("  calib.vqcm (version 1) serves a cache as the file written now\n");
    }
    vq_cache_free(a), vq_cache_free(o);
    /* a hostile writer field (header CRC recomputed): refused */
    if (b && len > 32) {
        uint32_t E = vq_get_u32(b + 24);
        size_t h = 28 + 28 * (size_t)E;
        vq_put_u32(b + 8, 0xffffffffu);
        vq_put_u32(b + h, vq_crc32(0, b, h));
        const char *bad = vq_test_tmp_path("bad.vqcm");
        CHECK(vq_test_write_file(bad, b, len) == 0);
        vq_cache *x = calib_cache(bad);
        CHECK(x == NULL && strstr(vq_last_error(), "writer") != NULL);
        vq_put_u32(b + 4, 9);
        vq_put_u32(b + 8, 10203);
        CHECK(vq_test_write_file(bad, b, len) == 0);
        x = calib_cache(bad);
        CHECK(x == NULL && strstr(vq_last_error(), "written by veloxquant 1.2.3") != NULL);
        vq_cache_free(x);
    }
    free(b);
}

static void test_cache_writer_field(void)
{
    vq_cache *c = fmt_cache(FMT_CFG_PLAIN);
    if (!c)
        return;
    const char *path = vq_test_tmp_path("w.vqkc"), *bad = vq_test_tmp_path("wbad.vqkc");
    CHECK_OK(vq_cache_save(c, path));
    vq_cache_free(c);
    size_t len = 0;
    uint8_t *b = read_file(path, &len);
    if (!b)
        return;
    vq_cache *x = NULL;
    vq_put_u32(b + 8, VQ_VERSION_NUMBER + 1); /* another library version: fine */
    vq_put_u32(b + len - 4, vq_crc32(0, b, len - 4));
    CHECK(vq_test_write_file(bad, b, len) == 0);
    CHECK_OK(vq_cache_load(bad, &fmt_shape, &x));
    vq_cache_free(x);
    x = NULL;
    vq_put_u32(b + 8, 1000000); /* 100.0.0: no library version */
    vq_put_u32(b + len - 4, vq_crc32(0, b, len - 4));
    CHECK(vq_test_write_file(bad, b, len) == 0);
    CHECK(vq_cache_load(bad, &fmt_shape, &x) == VQ_ERR_FORMAT && !x && strstr(vq_last_error(), "writer") != NULL);
    vq_put_u32(b + 4, 5); /* 4 is read (prerope configs, docs/cache-format.md) */
    vq_put_u32(b + 8, 20000);
    CHECK(vq_test_write_file(bad, b, len) == 0);
    CHECK(vq_cache_load(bad, &fmt_shape, &x) == VQ_ERR_FORMAT && !x);
    CHECK(strstr(vq_last_error(), "version 5 (written by veloxquant 2.0.0)") != NULL);
    vq_put_u32(b + 4, 4); /* version 4 with a config without prerope */
    vq_put_u32(b + 8, VQ_VERSION_NUMBER);
    vq_put_u32(b + len - 4, vq_crc32(0, b, len - 4));
    CHECK(vq_test_write_file(bad, b, len) == 0);
    CHECK(vq_cache_load(bad, &fmt_shape, &x) == VQ_ERR_FORMAT && !x && strstr(vq_last_error(), "prerope") != NULL);
    free(b);
}

static void test_prompt_sidecar(void)
{
    vq_tiny_spec s;
    memset(&s, 0, sizeof s);
    s.arch = "llama", s.n_layers = 2, s.n_embd = 128, s.n_ff = 96, s.n_q_heads = 4, s.n_kv_heads = 2;
    s.head_dim = 32, s.n_vocab = 100, s.rope_base = 10000.0f, s.rms_eps = 1e-5f, s.wtype = VQ_W_F32, s.seed = 3;
    const char *mp = vq_test_tmp_path("tiny.gguf");
    CHECK(vq_tiny_write(&s, mp) == 0);
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(mp, &m));
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL, *back = NULL;
    CHECK_OK(vq_cache_config_parse("keys=fp16 values=fp16", &cfg));
    if (m && cfg)
        CHECK_OK(vq_cache_for_model(m, cfg, &c));
    vq_cache_config_free(cfg);
    if (!c) {
        vq_model_free(m);
        return;
    }
    const int32_t toks[3] = { 5, 7, 11 };
    const char *path = vq_test_tmp_path("p.vqkc");
    char side[600];
    snprintf(side, sizeof side, "%s.prompt", path);
    CHECK_OK(vq_prompt_cache_save(m, c, toks, 3, path));
    size_t len = 0, olen = 0;
    uint8_t *b = read_file(side, &len);
    if (b && len > 12) {
        CHECK(vq_get_u32(b + 4) == 2 && vq_get_u32(b + 8) == VQ_VERSION_NUMBER);
        uint8_t *o = drop_writer(b, len, 1, &olen);
        CHECK(vq_test_write_file(side, o, olen) == 0);
        CHECKF(vq_prompt_cache_load(m, path, toks, 3, &back) == VQ_OK, "version-1 sidecar: %s", vq_last_error());
        vq_cache_free(back);
        back = NULL;
        free(o);
        vq_put_u32(b + 8, 0x7fffffffu);
        vq_put_u32(b + len - 4, vq_crc32(0, b, len - 4));
        CHECK(vq_test_write_file(side, b, len) == 0);
        CHECK(vq_prompt_cache_load(m, path, toks, 3, &back) == VQ_ERR_FORMAT && !back);
        CHECK(strstr(vq_last_error(), "writer") != NULL);
        vq_put_u32(b + 4, 3);
        vq_put_u32(b + 8, 100);
        CHECK(vq_test_write_file(side, b, len) == 0);
        CHECK(vq_prompt_cache_load(m, path, toks, 3, &back) == VQ_ERR_FORMAT && !back);
        CHECK(strstr(vq_last_error(), "version 3 (written by veloxquant 0.1.0)") != NULL);
    }
    free(b);
    vq_cache_free(c);
    vq_model_free(m);
}

int main(void)
{
    RUN(test_old_cache_files);
    RUN(test_old_codec_state);
    RUN(test_old_model_calibration);
    RUN(test_cache_writer_field);
    RUN(test_prompt_sidecar);
    return vq_test_summary("file_versions");
}
