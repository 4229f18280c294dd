/* fuzz_cache.c -- libFuzzer target for the saved-cache loader
 * (vq_cache_load, src/cache/persist.c). Input: byte 0 is a mode, the rest
 * the file. Mode bit 0: replace the file's last 4 bytes with the CRC-32 of
 * the rest first, so mutations get past the checksum and reach the
 * structure checks; bit 1: load against the seeds' shape (expect), which
 * must then match. A file that loads is used: stats, one more token
 * appended to and attended on every layer, gather of every head.
 * Contracts: a refusal carries a message and no cache; a loaded cache holds
 * only finite vectors and takes appends (no crash, no sanitizer report).
 * Corpus: tests/fuzz/corpus/cache/ (saved caches of several configs,
 * written by tests/fuzz/make_seeds.c on the shape below). */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "core/crc32.h"
#include "core/io.h"
#include "fuzz.h"
#include "fuzz_seeds.h"

const char vq_fuzz_corpus[] = "cache";

static void use_cache(vq_cache *c)
{
    vq_cache_usage u;
    FUZZ_CHECK(vq_cache_stats(c, -1, &u) == VQ_OK);
    vq_cache_shape sh;
    FUZZ_CHECK(vq_cache_get_shape(c, &sh) == VQ_OK);
    for (int l = 0; l < sh.n_layers; l++) {
        const vq_layer_shape *ls = &sh.layers[l];
        size_t hd = (size_t)ls->head_dim, nkv = (size_t)ls->n_kv_heads, nq = (size_t)ls->n_q_heads;
        if (hd * nkv > 4096 || hd * nq > 8192)
            continue;
        for (int h = 0; h < ls->n_kv_heads; h++) {
            size_t n = 0;
            if (vq_cache_gather(c, l, h, 0, NULL, NULL, NULL, &n) != VQ_OK || n > 4096)
                continue;
            int32_t *pos = malloc((n + 1) * sizeof *pos);
            float *k = malloc((n + 1) * hd * sizeof *k), *v = malloc((n + 1) * hd * sizeof *v);
            if (pos && k && v && vq_cache_gather(c, l, h, n, pos, k, v, &n) == VQ_OK)
                for (size_t i = 0; i < n * hd; i++)
                    FUZZ_CHECK(isfinite(k[i]) && isfinite(v[i]));
            free(pos), free(k), free(v);
        }
        int32_t next = c->layers[l].last_pos + 1;
        if (next < 0 || next == INT32_MAX)
            continue;
        float *kv = calloc(nkv * hd, sizeof *kv), *q = calloc(nq * hd, sizeof *q), *out = malloc(nq * hd * sizeof *out);
        if (kv && q && out) {
            for (size_t i = 0; i < nkv * hd; i++)
                kv[i] = (float)(i % 7) * 0.1f - 0.3f;
            for (size_t i = 0; i < nq * hd; i++)
                q[i] = (float)(i % 5) * 0.1f - 0.2f;
            if (vq_cache_append(c, l, kv, kv, 1, next) == VQ_OK) {
                vq_status st = vq_cache_attend(c, l, q, 1, ls->n_q_heads, 0.125f, out);
                FUZZ_CHECK(st == VQ_OK || vq_last_error()[0]);
            }
        }
        free(kv), free(q), free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0];
    size_t len = size - 1;
    uint8_t *file = malloc(len ? len : 1);
    if (!file)
        return 0;
    if (len)
        memcpy(file, data + 1, len);
    if ((mode & 1) && len >= 8)
        vq_put_u32(file + len - 4, vq_crc32(0, file, len - 4));
    char path[64];
    int fd = vq_fuzz_memfile(file, len, path, sizeof path);
    free(file);
    if (fd < 0)
        return 0;
    vq_layer_shape ls[VQ_SEED_LAYERS];
    vq_seed_cache_shape(ls);
    vq_cache_shape expect = { VQ_SEED_LAYERS, ls, VQ_SEED_FINGERPRINT };
    vq_cache *c = NULL;
    vq_status st = vq_cache_load(path, (mode & 2) ? &expect : NULL, &c);
    close(fd);
    if (st != VQ_OK) {
        FUZZ_CHECK(c == NULL && vq_last_error()[0]);
        return 0;
    }
    vq_fuzz_accepted++;
    use_cache(c);
    vq_cache_free(c);
    return 0;
}
