/* make_seeds.c -- writes the seed inputs of the fuzz corpora
 * (tests/fuzz/corpus/NAME/seed-*) from the library itself, so that the
 * seeds are valid files of the current formats:
 *   model/     tiny models of each architecture and weight type
 *   config/    cache-config texts (every field, every method)
 *   spec/      codec specs (byte 0: head_dim/role choice, fuzz_spec.c)
 *   cache/     saved caches of several configs on the fuzz_seeds.h shape
 *              (byte 0: mode, fuzz_cache.c)
 *   calib/     codec calibration states and whole-model calibration files
 *              (bytes 0-1: mode and codec, fuzz_calib.c)
 *   tokenizer/ texts for every tokenizer type and vocabulary GGUFs
 *              (byte 0: mode, fuzz_tokenizer.c)
 * Build and run: `make fuzz-seeds` (writes into tests/fuzz/corpus/). The
 * gguf/ corpus comes from tests/test_gguf.c (VQ_GGUF_WRITE_CORPUS).
 * cache/seed-v1-* and calib/seed-v1-* are the seeds an earlier build wrote
 * (cache format 1, calibration state version 1: the readers still take
 * them, and the replay requires it); this program does not rewrite them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/prerope.h"
#include "core/error.h"
#include "core/file.h"
#include "fuzz_seeds.h"
#include "gguf_writer.h"
#include "model/quants.h"
#include "tiny_model.h"

vq_gw *vq_fuzz_vocab(int kind); /* fuzz_tokenizer.c */

static const char *g_root = "tests/fuzz/corpus";

static void put(const char *dir, const char *name, const uint8_t *pre, size_t npre, const void *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed-%s", g_root, dir, name);
    uint8_t *buf = malloc(npre + n + 1);
    memcpy(buf, pre, npre);
    if (n)
        memcpy(buf + npre, data, n);
    if (vq_file_write_buffer(path, buf, npre + n, NULL) != VQ_OK) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    free(buf);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *buf = NULL;
    if (vq_file_read_all(path, (size_t)1 << 30, &buf, len, NULL) != VQ_OK) {
        fprintf(stderr, "cannot read %s: %s\n", path, vq_last_error());
        exit(1);
    }
    return buf;
}

static void models(const char *tmp)
{
    static const vq_tiny_spec specs[] = {
        { "llama", 2, 32, 64, 2, 1, 16, 64, 0, 10000.0f, 1e-5f, VQ_W_F32, 0, 0, 1 },
        { "llama", 1, 32, 64, 4, 2, 8, 48, 0, 10000.0f, 1e-5f, VQ_W_Q8_0, 1, 1, 2 },
        { "qwen2", 1, 32, 64, 2, 2, 16, 40, 0, 1e6f, 1e-6f, VQ_W_F16, 0, 0, 3 },
        { "qwen3", 1, 32, 64, 2, 1, 16, 40, 0, 1e6f, 1e-6f, VQ_W_F16, 1, 1, 4 },
        { "gemma3", 2, 32, 64, 2, 1, 32, 40, 4, 1e6f, 1e-6f, VQ_W_F32, 1, 1, 5 },
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        char path[512], name[64];
        snprintf(path, sizeof path, "%s/m.gguf", tmp);
        if (vq_tiny_write(&specs[i], path) != 0) {
            fprintf(stderr, "tiny model %zu refused\n", i);
            exit(1);
        }
        size_t len;
        uint8_t *b = slurp(path, &len);
        snprintf(name, sizeof name, "%s-%zu.gguf", specs[i].arch, i);
        put("model", name, NULL, 0, b, len);
        free(b);
    }
}

static const char *const k_configs[] = {
    "",
    "keys=q8_0 values=q4_0",
    "keys=turboquant_rvq:bits=2 values=kivi:bits=2,group=32 residual=4",
    "keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=2,window=8",
    "keys=kivi:bits=4 values=kivi:bits=4 evict=h2o:budget=8,sinks=1,recent=2",
    "keys=rabitq values=fp16 evict=snapkv:budget=8,window=4",
    "keys=qjl values=turboquant_mse:bits=2 evict=tova:budget=8 page=16",
    "keys=turboquant_prod values=q8_0 evict=pyramidkv:budget=8,window=4,min_ratio=0.5",
    "keys=q8_0 values=q8_0 cross=minicache:start=0.5,threshold=0.9",
    "keys=fp16 values=fp16 cross=xkv:group=2,energy=0.95",
    "cross=xquant:bits=4",
    "keys=turboquant_rvq values=turboquant_rvq bits=1,2,4",
    "keys=q4_0 values=q4_0 keep_first=1 keep_last=1 keep_spec=q8_0",
    "keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32 page=64",
    "keys=kivix:bits=3,group=16,outliers=4 values=kivix:bits=3,group=16 residual=0 prerope=2",
};

static void configs(void)
{
    for (size_t i = 0; i < sizeof k_configs / sizeof k_configs[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "%02zu.txt", i);
        put("config", name, NULL, 0, k_configs[i], strlen(k_configs[i]));
    }
}

static void specs(void)
{
    int n = 0;
    for (int i = 0;; i++) {
        const char *def = NULL, *m = vq_codec_method(i, &def);
        if (!m)
            break;
        static const uint8_t dims[4] = { 0, 1 | 8, 2, 3 | 8 }; /* 32 key, 64 value, 128 key, 256 value */
        for (int j = 0; j < 4; j++) {
            char name[64];
            uint8_t pre = dims[j];
            snprintf(name, sizeof name, "%s-%d", m, j);
            put("spec", name, &pre, 1, def, strlen(def));
            n++;
        }
    }
    static const char *const extra[] = { "kivi:bits=4,group=64", "q4_0:rot=1", "turboquant_rvq:bits=4",
                                         "rabitq:bits=1,qbits=8", "qjl:dim=64", "vecinfer:sub_dim=4,bits=4",
                                         "x:a=1,b=2,c=3", "fp16:", "q8_0:rot=1,rot=0" };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        char name[32];
        uint8_t pre = 1;
        snprintf(name, sizeof name, i >= 6 ? "bad-extra-%zu" : "extra-%zu", i);
        put("spec", name, &pre, 1, extra[i], strlen(extra[i]));
    }
    /* int8 value sums (value codecs at head_dim 64), and the same on keys (refused) */
    static const char *const w8[] = { "spectral:bits=4,qbits=8", "turboquant_prod:bits=2,qbits=8",
                                      "turboquant_prod:qbits=8" };
    for (size_t i = 0; i < sizeof w8 / sizeof w8[0]; i++) {
        char name[32];
        uint8_t pre = i < 2 ? 1 | 8 : 1;
        snprintf(name, sizeof name, i < 2 ? "w8-%zu" : "bad-w8-%zu", i);
        put("spec", name, &pre, 1, w8[i], strlen(w8[i]));
    }
}

static void fill(float *x, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)(*s >> 40) / (float)(1 << 24) - 0.5f;
    }
}

static vq_cache *seed_cache(const char *text, int calibrate)
{
    vq_cache_config *cfg = NULL;
    if (vq_cache_config_parse(text, &cfg) != VQ_OK) {
        fprintf(stderr, "config '%s': %s\n", text, vq_last_error());
        exit(1);
    }
    vq_layer_shape ls[VQ_SEED_LAYERS];
    vq_seed_cache_shape(ls);
    vq_cache_shape sh = { VQ_SEED_LAYERS, ls, VQ_SEED_FINGERPRINT };
    vq_cache *c = NULL;
    if (vq_cache_create(cfg, &sh, 11, &c) != VQ_OK) {
        fprintf(stderr, "cache '%s': %s\n", text, vq_last_error());
        exit(1);
    }
    vq_cache_config_free(cfg);
    for (int l = 0; strstr(text, "prerope=") && l < VQ_SEED_LAYERS; l++) { /* the model's part: its RoPE */
        float f[VQ_SEED_HEAD_DIM / 2];
        for (int i = 0; i < VQ_SEED_HEAD_DIM / 2; i++)
            f[i] = 1.0f / (float)(1 << i);
        if (vq_cache_set_rope(c, l, f, l == 1) != VQ_OK) {
            fprintf(stderr, "prerope: %s\n", vq_last_error());
            exit(1);
        }
    }
    enum { N = 40, D = 2 * VQ_SEED_HEAD_DIM };
    static float k[N * D], v[N * D], q[N * 2 * D], out[N * 2 * D];
    uint64_t s = 99;
    fill(k, N * D, &s);
    fill(v, N * D, &s);
    fill(q, N * 2 * D, &s);
    for (int l = 0; l < VQ_SEED_LAYERS; l++) {
        if (calibrate && vq_cache_calibrate(c, l, k, v, N) != VQ_OK) {
            fprintf(stderr, "calibrate: %s\n", vq_last_error());
            exit(1);
        }
        if (calibrate)
            continue;
        /* a prefill of 10 and 6 decode steps */
        for (int step = 0; step < 7; step++) {
            size_t n = step ? 1 : 10;
            int32_t p0 = step ? 9 + step : 0;
            if (vq_cache_append(c, l, k + (size_t)p0 * D, v + (size_t)p0 * D, n, p0) != VQ_OK ||
                vq_cache_attend(c, l, q, n, 4, 0.17f, out) != VQ_OK) {
                fprintf(stderr, "cache '%s' layer %d: %s\n", text, l, vq_last_error());
                exit(1);
            }
        }
    }
    return c;
}

static void caches(const char *tmp)
{
    char path[512];
    snprintf(path, sizeof path, "%s/c.vqkc", tmp);
    for (size_t i = 0; i < sizeof k_configs / sizeof k_configs[0]; i++) {
        if (strstr(k_configs[i], "xquant"))
            continue;
        vq_cache *c = seed_cache(k_configs[i], 0);
        if (vq_cache_save(c, path) != VQ_OK) {
            fprintf(stderr, "save: %s\n", vq_last_error());
            exit(1);
        }
        vq_cache_free(c);
        size_t len;
        uint8_t *b = slurp(path, &len);
        for (uint8_t mode = 0; mode < 4; mode += 3) {
            char name[32];
            snprintf(name, sizeof name, "%02zu-m%u.vqkc", i, mode);
            put("cache", name, &mode, 1, b, len);
        }
        free(b);
    }
}

static void calibs(const char *tmp)
{
    /* single-codec states */
    for (int pick = 0; pick < 4; pick++) {
        for (int role = 0; role < 2; role++) {
            vq_codec *c = NULL;
            if (vq_codec_create(vq_seed_calib_specs[pick], VQ_SEED_HEAD_DIM, (vq_role)role, 1, &c) != VQ_OK) {
                fprintf(stderr, "codec: %s\n", vq_last_error());
                exit(1);
            }
            float x[256 * VQ_SEED_HEAD_DIM];
            uint64_t s = 7 + (uint64_t)pick;
            fill(x, sizeof x / sizeof x[0], &s);
            size_t len = 0;
            if (vq_codec_calibrate(c, x, 256) != VQ_OK || vq_codec_state_write(c, NULL, 0, &len) != VQ_OK) {
                fprintf(stderr, "calibrate %s: %s\n", vq_seed_calib_specs[pick], vq_last_error());
                exit(1);
            }
            uint8_t *b = malloc(len);
            if (vq_codec_state_write(c, b, len, &len) != VQ_OK)
                exit(1);
            uint8_t pre[2] = { (uint8_t)(role ? 4 : 0), (uint8_t)pick };
            char name[32];
            snprintf(name, sizeof name, "state-%d-%d", pick, role);
            put("calib", name, pre, 2, b, len);
            free(b);
            vq_codec_free(c);
        }
    }
    /* whole-model files: keys with one method, values with another */
    static const char *const cfgs[2] = { "keys=vecinfer:sub_dim=8,bits=8 values=spectral:bits=2,signal_bits=2",
                                         "keys=spectral:bits=4,signal_bits=4 values=vecinfer:sub_dim=4,bits=4" };
    char path[512];
    snprintf(path, sizeof path, "%s/m.vqcm", tmp);
    for (int i = 0; i < 2; i++) {
        vq_cache *c = seed_cache(cfgs[i], 1);
        if (vq_cache_save_calibration(c, path) != VQ_OK) {
            fprintf(stderr, "save calibration: %s\n", vq_last_error());
            exit(1);
        }
        vq_cache_free(c);
        size_t len;
        uint8_t *b = slurp(path, &len);
        /* key codec of cfg 0 is pick 0; value codec pick 2; cfg 1: 3 and 1 */
        static const uint8_t picks[2][2] = { { 0, 2 }, { 3, 1 } };
        for (int role = 0; role < 2; role++) {
            for (int layer = 0; layer < VQ_SEED_LAYERS; layer += 2) {
                uint8_t pre[2] = { (uint8_t)(2 | (role ? 4 : 0)), (uint8_t)(picks[i][role] | (layer << 2)) };
                char name[32];
                snprintf(name, sizeof name, "file-%d-%d-%d", i, role, layer);
                put("calib", name, pre, 2, b, len);
            }
        }
        free(b);
    }
}

static void tokenizer_seeds(void)
{
    static const char *const texts[] = { "Hello world", "the théâtre\n\n  x", "<|im_start|>user\nhi<|end|>",
                                         "a<u>b", "\xff\xfe invalid \xc3", "12345 don't I'm",
                                         "\xe2\x96\x81\xe2\x96\x81spaces\t\t", "emoji \xf0\x9f\x98\x80!" };
    for (int kind = 0; kind < 7; kind++) {
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            uint8_t mode = (uint8_t)(kind | (i % 3 == 1 ? 8 : 0) | (i % 4 == 2 ? 16 : 0));
            char name[32];
            snprintf(name, sizeof name, "t%d-%zu", kind, i);
            put("tokenizer", name, &mode, 1, texts[i], strlen(texts[i]));
        }
        uint8_t *buf;
        size_t len;
        vq_gw *w = vq_fuzz_vocab(kind);
        vq_gw_finish(w, &buf, &len);
        vq_gw_free(w);
        uint8_t mode = 7;
        char name[32];
        snprintf(name, sizeof name, "vocab-%d.gguf", kind);
        put("tokenizer", name, &mode, 1, buf, len);
        free(buf);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_root = argv[1];
    char tmp[] = "/tmp/vq_seeds_XXXXXX";
    if (!mkdtemp(tmp))
        return 1;
    models(tmp);
    configs();
    specs();
    caches(tmp);
    calibs(tmp);
    tokenizer_seeds();
    char path[600];
    snprintf(path, sizeof path, "%s/m.gguf", tmp), remove(path);
    snprintf(path, sizeof path, "%s/c.vqkc", tmp), remove(path);
    snprintf(path, sizeof path, "%s/m.vqcm", tmp), remove(path);
    rmdir(tmp);
    printf("seeds written under %s\n", g_root);
    return 0;
}
