/* prompt_cache.c -- vq_prompt_cache_save / vq_prompt_cache_load (contract in
 * veloxquant.h). The sidecar PATH.prompt, version 2, little-endian:
 *
 *   "VQPT" | u32 version=2 | u32 writer (core/writer.h)
 *   u64 model fingerprint
 *   u64 size of the cache file | u32 the cache file's trailing CRC-32
 *   u32 n | n x i32 prompt tokens
 *   u32 CRC-32 (IEEE) of every preceding byte
 *
 * Version 1 (still read) is the same without the writer field.
 *
 * The cache file's last 4 bytes are its own CRC over its content
 * (persist.c), so size + trailing CRC tie the sidecar to one cache file: a
 * save interrupted between the two renames leaves a pair that does not
 * match, and loading refuses it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_peek.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/file.h"
#include "core/io.h"
#include "core/writer.h"

#define PT_MAGIC "VQPT"
#define PT_VERSION 2u
#define PT_HDR(ver) ((ver) == 1 ? 8u : 12u) /* offset of the fingerprint */
#define PT_MAX_TOKENS (1u << 24)

static vq_status sidecar_path(const char *path, char *buf, size_t cap)
{
    int k = snprintf(buf, cap, "%s.prompt", path);
    if (k < 0 || (size_t)k >= cap)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache: path too long");
    return VQ_OK;
}

/* size and trailing CRC of the cache file */
static vq_status cache_file_id(const char *path, uint64_t *size, uint32_t *crc)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return vq_fail(NULL, VQ_ERR_IO, "prompt cache: cannot open %s", path);
    uint8_t b[4];
    long sz = -1;
    int ok = fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 8 && fseek(f, sz - 4, SEEK_SET) == 0 &&
             fread(b, 1, 4, f) == 4;
    fclose(f);
    if (!ok)
        return vq_fail(NULL, VQ_ERR_FORMAT, "prompt cache: %s is not a cache file (too short)", path);
    *size = (uint64_t)sz;
    *crc = vq_get_u32(b);
    return VQ_OK;
}

vq_status vq_prompt_cache_save(const vq_model *m, const vq_cache *c, const int32_t *tokens, size_t n,
                               const char *path)
{
    if (!m || !c || !path || (!tokens && n))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache save: NULL argument");
    if (n > PT_MAX_TOKENS)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache save: %zu tokens (max %u)", n, PT_MAX_TOKENS);
    uint64_t fp = vq_model_fingerprint(m);
    if (vq_cache_fingerprint(c) != fp)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache save: the cache was not built for this model");
    char side[4096];
    VQ_TRY(sidecar_path(path, side, sizeof side));
    VQ_TRY(vq_cache_save(c, path));
    uint64_t size;
    uint32_t fcrc;
    VQ_TRY(cache_file_id(path, &size, &fcrc));
    const size_t H = PT_HDR(PT_VERSION);
    size_t len = H + 8 + 8 + 4 + 4 + 4 * n + 4;
    uint8_t *buf = malloc(len), *p = buf;
    if (!buf)
        return vq_fail(NULL, VQ_ERR_NOMEM, "prompt cache save: out of memory");
    memcpy(p, PT_MAGIC, 4);
    vq_put_u32(p + 4, PT_VERSION);
    vq_put_u32(p + 8, VQ_FILE_WRITER);
    vq_put_u64(p + H, fp);
    vq_put_u64(p + H + 8, size);
    vq_put_u32(p + H + 16, fcrc);
    vq_put_u32(p + H + 20, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        vq_put_u32(p + H + 24 + 4 * i, (uint32_t)tokens[i]);
    vq_put_u32(p + len - 4, vq_crc32(0, buf, len - 4));
    vq_status st = vq_file_write_buffer(side, buf, len, NULL);
    free(buf);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "prompt cache save: %s", vq_last_error());
    return VQ_OK;
}

vq_status vq_prompt_cache_load(const vq_model *m, const char *path, const int32_t *tokens, size_t n,
                               vq_cache **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache load: out is NULL");
    *out = NULL;
    if (!m || !path || (!tokens && n))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prompt cache load: NULL argument");
    char side[4096];
    VQ_TRY(sidecar_path(path, side, sizeof side));
    uint8_t *b = NULL;
    size_t len = 0;
    vq_status st = vq_file_read_all(side, 40 + 4 * (size_t)PT_MAX_TOKENS, &b, &len, NULL);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "prompt cache load: %s (the sidecar written by --save-cache)", vq_last_error());
    st = VQ_ERR_FORMAT;
    const char *why = NULL;
    uint32_t ver = len >= 8 ? vq_get_u32(b + 4) : 0;
    const size_t H = PT_HDR(ver), fixed = H + 28; /* the fields around the tokens */
    if (len >= 8 && memcmp(b, PT_MAGIC, 4) == 0 && (ver < 1 || ver > PT_VERSION)) {
        char note[48];
        vq_file_writer_note(ver > PT_VERSION ? b : NULL, len, note);
        free(b);
        return vq_fail(NULL, st, "prompt cache load: %s: sidecar version %u%s, this build (%s) reads 1 to %u", side,
                       ver, note, VQ_VERSION_STRING, PT_VERSION);
    }
    if (len < 8 || memcmp(b, PT_MAGIC, 4) != 0)
        why = "not a prompt cache sidecar (bad magic or too short)";
    else if (len < fixed)
        why = "not a prompt cache sidecar (too short)";
    else if (vq_crc32(0, b, len - 4) != vq_get_u32(b + len - 4))
        why = "sidecar checksum mismatch (corrupted)";
    else if (ver >= 2 && vq_get_u32(b + 8) > VQ_FILE_WRITER_MAX)
        why = "sidecar writer field out of range (not a library version)";
    else if ((size_t)vq_get_u32(b + H + 20) > (len - fixed) / 4 || fixed + 4 * (size_t)vq_get_u32(b + H + 20) != len)
        why = "sidecar token count does not match its length";
    else if (vq_get_u64(b + H) != vq_model_fingerprint(m))
        why = "the prompt cache belongs to another model";
    else {
        size_t sn = vq_get_u32(b + H + 20);
        int same = sn == n;
        for (size_t i = 0; same && i < n; i++)
            same = (int32_t)vq_get_u32(b + H + 24 + 4 * i) == tokens[i];
        if (!same)
            why = "the prompt cache was saved for another prompt (tokens differ)";
    }
    uint64_t want_size = why ? 0 : vq_get_u64(b + H + 8);
    uint32_t want_crc = why ? 0 : vq_get_u32(b + H + 16);
    free(b);
    if (why)
        return vq_fail(NULL, st, "prompt cache load: %s: %s", side, why);
    uint64_t size;
    uint32_t fcrc;
    VQ_TRY(cache_file_id(path, &size, &fcrc));
    if (size != want_size || fcrc != want_crc)
        return vq_fail(NULL, VQ_ERR_FORMAT,
                       "prompt cache load: %s does not belong to its sidecar (size %llu vs %llu, or content differs)",
                       path, (unsigned long long)size, (unsigned long long)want_size);
    st = vq_cache_load_for_model(m, path, out);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "prompt cache load: %s", vq_last_error());
    return VQ_OK;
}
