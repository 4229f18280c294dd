/* make_old_files.c -- writes the files of tests/formats/ with the library
 * it is linked against (scripts/make_old_format_files.sh links it against
 * an older commit, so the files are in the formats that library wrote):
 *   plain.vqkc   cache of FMT_CFG_PLAIN (vq_cache_save)
 *   xkv.vqkc     cache of FMT_CFG_XKV
 *   calib.vqcm   model calibration file of the plain cache
 *                (vq_cache_save_calibration)
 *   codec.vqcs   codec calibration state of fmt_codec()
 *                (vq_codec_state_write)
 * Usage: make_old_files DIR */
#include <stdio.h>
#include <stdlib.h>

#include "recipe.h"

static int fail(const char *what)
{
    fprintf(stderr, "make_old_files: %s: %s\n", what, vq_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_old_files DIR\n");
        return 2;
    }
    char path[4096];
    vq_cache *c = fmt_cache(FMT_CFG_PLAIN);
    if (!c)
        return fail("plain cache");
    snprintf(path, sizeof path, "%s/plain.vqkc", argv[1]);
    if (vq_cache_save(c, path) != VQ_OK)
        return fail(path);
    snprintf(path, sizeof path, "%s/calib.vqcm", argv[1]);
    if (vq_cache_save_calibration(c, path) != VQ_OK)
        return fail(path);
    vq_cache_free(c);
    c = fmt_cache(FMT_CFG_XKV);
    if (!c)
        return fail("xkv cache");
    snprintf(path, sizeof path, "%s/xkv.vqkc", argv[1]);
    if (vq_cache_save(c, path) != VQ_OK)
        return fail(path);
    vq_cache_free(c);
    vq_codec *k = fmt_codec();
    size_t len = 0;
    if (!k || vq_codec_state_write(k, NULL, 0, &len) != VQ_OK)
        return fail("codec");
    unsigned char *b = malloc(len);
    if (!b || vq_codec_state_write(k, b, len, &len) != VQ_OK)
        return fail("codec state");
    snprintf(path, sizeof path, "%s/codec.vqcs", argv[1]);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, len, f) != len || fclose(f) != 0)
        return fail(path);
    free(b);
    vq_codec_free(k);
    return 0;
}
