/* bytes_check.c -- prints FNV-1a hashes of what the codecs produce (the
 * encoded bytes, the decoded vectors, the scores and accumulations of two
 * queries) for 22 specs x 2 head dims x 2 roles, and of the cache files of
 * 8 configs (xquant, xkv, kivi), to show that a refactoring left the packed
 * bytes (which the GPU kernels read too) and the numbers unchanged:
 * build it against two libraries and diff the outputs
 * (docs/internals.md has the commands). Public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "veloxquant.h"

static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
    return h;
}
static float rnd(uint64_t *s) { *s = *s * 6364136223846793005ull + 1442695040888963407ull; return (float)((*s >> 33) % 20001) / 10000.0f - 1.0f; }

int main(void)
{
    const char *specs[] = { "fp16", "q8_0", "q4_0", "turboquant_rvq:bits=1", "turboquant_rvq:bits=3", "turboquant_mse:bits=3",
        "turboquant_prod:bits=3", "turboquant_prod:bits=2", "qjl", "rabitq:bits=1", "rabitq:bits=3", "kivi:bits=2", "kivi:bits=4",
        "kivix:bits=3", "kivix:bits=2", "vecinfer:bits=8", "vecinfer:bits=12", "vecinfer:bits=5", "spectral:bits=2",
        "spectral:bits=3,signal_bits=5", "spectral:bits=1,signal_bits=7", NULL };
    int dims[] = { 64, 128 };
    for (int di = 0; di < 2; di++) for (int r = 0; r < 2; r++) for (int i = 0; specs[i]; i++) {
        int D = dims[di];
        size_t N = 128;
        float *x = malloc(N * D * 4 * sizeof *x);
        uint64_t s = 7;
        for (size_t j = 0; j < N * D * 4; j++) x[j] = rnd(&s) + (j % D == 5 ? 6.0f : 0.0f);
        vq_codec *c;
        if (vq_codec_create(specs[i], D, r ? VQ_ROLE_VALUE : VQ_ROLE_KEY, 99, &c) != VQ_OK) { printf("%s: create failed %s\n", specs[i], vq_last_error()); free(x); continue; }
        if (vq_codec_needs_calibration(c) && vq_codec_calibrate(c, x + N * D, 3 * N) != VQ_OK) { printf("%s: calib failed\n", specs[i]); }
        size_t nb = N * vq_codec_bytes_per_token(c);
        uint8_t *b = calloc(nb, 1);
        vq_status st = vq_codec_encode(c, x, N, b);
        float *y = malloc(N * D * sizeof *y);
        vq_codec_decode(c, b, N, y);
        uint8_t *qb = malloc(vq_codec_query_bytes(c) * 2 + 16);
        float sc[2 * 128], *acc = calloc(2 * vq_codec_accum_size(c), sizeof *acc), w[2 * 128], out[2 * 256];
        for (int j = 0; j < 2 * 128; j++) w[j] = (float)(j % 5) * 0.1f;
        vq_codec_prepare_query(c, x + 5 * D, qb);
        vq_codec_prepare_query(c, x + 9 * D, qb + vq_codec_query_bytes(c));
        vq_codec_score(c, qb, 2, b, N, sc);
        vq_codec_accumulate(c, w, 2, b, N, acc);
        vq_codec_accum_finish(c, acc, out);
        vq_codec_accum_finish(c, acc + vq_codec_accum_size(c), out + D);
        printf("   score %016llx acc %016llx\n", (unsigned long long)fnv((uint8_t *)sc, sizeof(float) * 2 * N, 14695981039346656037ull),
               (unsigned long long)fnv((uint8_t *)out, sizeof(float) * 2 * D, 14695981039346656037ull));
        free(qb); free(acc);
        printf("D=%d role=%d %-32s st=%d %016llx dec %016llx\n", D, r, specs[i], st, (unsigned long long)fnv(b, nb, 14695981039346656037ull),
               (unsigned long long)fnv((uint8_t *)y, N * D * sizeof *y, 14695981039346656037ull));
        free(b); free(y); free(x); vq_codec_free(c);
    }
    const char *cfgs[] = { "residual=8 page=16 cross=xquant:bits=4,rbits=2", "residual=8 page=16 cross=xquant:bits=2,rbits=4", "residual=8 cross=xquant:bits=8,rbits=0", "residual=4 page=16 keys=kivi:bits=2 values=kivi:bits=4", "residual=4 keys=spectral:bits=3,signal_bits=5,calib=none",
                           "residual=8 page=16 cross=xkv:group=2,bits=4,min=16", "cross=xkv:group=2,bits=2,min=16", "cross=xkv:group=4,bits=8,min=16,energy=0.7", NULL };
    for (int i = 0; cfgs[i]; i++) {
        vq_cache_config *cfg;
        if (vq_cache_config_parse(cfgs[i], &cfg) != VQ_OK) { printf("cfg fail %s\n", vq_last_error()); continue; }
        vq_cache_layer_shape ls[4];
        for (int l = 0; l < 4; l++) ls[l] = (vq_cache_layer_shape){ 2, 4, 64, 0, 0.0f };
        vq_cache_shape sh = { 4, ls, 123 };
        vq_cache *c;
        if (vq_cache_create(cfg, &sh, 5, &c) != VQ_OK) { printf("create fail %s\n", vq_last_error()); continue; }
        uint64_t s = 11;
        int T = 80;
        float *k = malloc((size_t)T * 2 * 64 * sizeof *k), *v = malloc((size_t)T * 2 * 64 * sizeof *v);
        for (int l = 0; l < 4; l++) {
            for (int j = 0; j < T * 2 * 64; j++) { k[j] = rnd(&s) + (j % 64 == 3 ? 4.0f : 0.0f); v[j] = rnd(&s); }
            if (vq_cache_append(c, l, k, v, (size_t)T, 0) != VQ_OK) printf("append fail %s\n", vq_last_error());
        }
        vq_cache_save(c, "bytes_check.vqc");
        FILE *f = fopen("bytes_check.vqc", "rb");
        uint8_t buf[1 << 16]; size_t n; uint64_t h = 14695981039346656037ull; size_t tot = 0;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) { h = fnv(buf, n, h); tot += n; }
        fclose(f);
        printf("%-45s file %zu bytes %016llx\n", cfgs[i], tot, (unsigned long long)h);
        free(k); free(v); vq_cache_free(c); vq_cache_config_free(cfg);
    }
    return 0;
}
