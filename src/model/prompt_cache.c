/* prompt_cache.c -- vq_prompt_cache_save / vq_prompt_cache_load (contract in
 * veloxquant.h). The sidecar PATH.prompt, version 1, little-endian:
 *
 *   "VQPT" | u32 version=1 | u64 model fingerprint
 *   u64 size of the cache file | u32 the cache file's trailing CRC-32
 *   u32 n | n x i32 prompt tokens
 *   u32 CRC-32 (IEEE) of every preceding byte
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

#define PT_MAGIC "VQPT"
#define PT_VERSION 1u
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
    size_t len = 4 + 4 + 8 + 8 + 4 + 4 + 4 * n + 4;
    uint8_t *buf = malloc(len), *p = buf;
    if (!buf)
        return vq_fail(NULL, VQ_ERR_NOMEM, "prompt cache save: out of memory");
    memcpy(p, PT_MAGIC, 4);
    vq_put_u32(p + 4, PT_VERSION);
    vq_put_u64(p + 8, fp);
    vq_put_u64(p + 16, size);
    vq_put_u32(p + 24, fcrc);
    vq_put_u32(p + 28, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        vq_put_u32(p + 32 + 4 * i, (uint32_t)tokens[i]);
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
    vq_status st = vq_file_read_all(side, 36 + 4 * (size_t)PT_MAX_TOKENS, &b, &len, NULL);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "prompt cache load: %s (the sidecar written by --save-cache)", vq_last_error());
    st = VQ_ERR_FORMAT;
    const char *why = NULL;
    if (len < 36 || memcmp(b, PT_MAGIC, 4) != 0)
        why = "not a prompt cache sidecar (bad magic or too short)";
    else if (vq_get_u32(b + 4) != PT_VERSION)
        why = "unsupported sidecar version";
    else if (vq_crc32(0, b, len - 4) != vq_get_u32(b + len - 4))
        why = "sidecar checksum mismatch (corrupted)";
    else if ((size_t)vq_get_u32(b + 28) > (len - 36) / 4 || 36 + 4 * (size_t)vq_get_u32(b + 28) != len)
        why = "sidecar token count does not match its length";
    else if (vq_get_u64(b + 8) != vq_model_fingerprint(m))
        why = "the prompt cache belongs to another model";
    else {
        size_t sn = vq_get_u32(b + 28);
        int same = sn == n;
        for (size_t i = 0; same && i < n; i++)
            same = (int32_t)vq_get_u32(b + 32 + 4 * i) == tokens[i];
        if (!same)
            why = "the prompt cache was saved for another prompt (tokens differ)";
    }
    uint64_t want_size = len >= 36 ? vq_get_u64(b + 16) : 0;
    uint32_t want_crc = len >= 36 ? vq_get_u32(b + 24) : 0;
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
