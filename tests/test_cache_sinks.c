/* test_cache_sinks.c -- attention-sink tokens kept exact (sinks=N) and keys
 * packed before RoPE (prerope=1): reference tests.
 *
 * - sinks: the first N tokens of every head stay fp16 (gather returns
 *   them bit-exact as fp16), the rest is packed as without sinks; attention
 *   equals the double-precision reference over the cache's own decoded
 *   contents; bytes: packed slots = tokens - sinks - window; save/load
 *   keeps attention identical; eviction and cross= are refused.
 * - prerope: scoring decodes pre-RoPE keys and applies RoPE at the token's
 *   position, so attention equals the reference over the decoded (RoPE'd)
 *   keys gather returns; with fp16 keys the gathered keys equal the input
 *   up to fp16 rounding; without the model's RoPE, append refuses.
 * - prerope=2 (keys centred per head before the codec): the same reference
 *   holds, a shared pre-RoPE offset no longer costs a rotated codec, and
 *   the centres are in total_bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/prerope.h"
#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "heap_bytes.h"
#include "test.h"
#include "test_cache_util.h"

#define NL 2
static const vq_layer_shape SHAPE[NL] = { { 2, 4, 64, 0, 0 }, { 1, 2, 128, 0, 0 } };

static vq_cache *make(const char *text)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_cache_shape sh = { NL, SHAPE, 7 };
    if (vq_cache_config_parse(text, &cfg) != VQ_OK)
        return NULL;
    if (vq_cache_create(cfg, &sh, 11, &c) != VQ_OK)
        c = NULL;
    vq_cache_config_free(cfg);
    return c;
}

/* keys with a large per-channel mean (outlier channels) and a sink-like
 * first token */
static void fill_kv(vq_rng *r, float *k, float *v, size_t n, size_t D, size_t nh)
{
    tc_fill(r, k, n * nh * D, 1.0f);
    tc_fill(r, v, n * nh * D, 1.0f);
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < nh * D; i++)
            k[t * nh * D + i] += (i % 7 == 0) ? 8.0f : 0.0f;
    for (size_t i = 0; i < nh * D; i++)
        k[i] *= 6.0f; /* token 0: large keys */
}

static void set_rope(vq_cache *c)
{
    for (int l = 0; l < NL; l++) {
        float f[64];
        size_t half = (size_t)SHAPE[l].head_dim / 2;
        for (size_t i = 0; i < half; i++)
            f[i] = (float)pow(10000.0, -2.0 * (double)i / (double)SHAPE[l].head_dim);
        CHECK(vq_cache_set_rope(c, l, f, l) == VQ_OK); /* layer 0 adjacent pairs, layer 1 NEOX */
    }
}

/* append n tokens to every layer in steps of `step`, attend the last step;
 * worst relative error against the reference from the cache's contents */
static double run(vq_cache *c, size_t n, size_t step, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    double worst = 0;
    for (int l = 0; l < NL; l++) {
        const vq_layer_shape *ls = &SHAPE[l];
        size_t D = (size_t)ls->head_dim, nh = (size_t)ls->n_kv_heads, nq = (size_t)ls->n_q_heads;
        float *k = malloc(n * nh * D * sizeof *k), *v = malloc(n * nh * D * sizeof *v);
        float *q = malloc(step * nq * D * sizeof *q), *out = malloc(step * nq * D * sizeof *out);
        double *ref = malloc(step * nq * D * sizeof *ref);
        fill_kv(&r, k, v, n, D, nh);
        for (size_t t0 = 0; t0 < n; t0 += step) {
            size_t m = n - t0 < step ? n - t0 : step;
            CHECK(vq_cache_append(c, l, k + t0 * nh * D, v + t0 * nh * D, m, (int32_t)t0) == VQ_OK);
            if (t0 + m < n)
                continue;
            tc_fill(&r, q, m * nq * D, 0.5f);
            float scale = 1.0f / sqrtf((float)D);
            CHECK(vq_cache_attend(c, l, q, m, (int)nq, scale, out) == VQ_OK);
            CHECK(tc_ref_from_cache(c, l, ls, q, m, (int32_t)t0, scale, ref) == 0);
            double e = tc_rel_err(out, ref, m * nq * D);
            worst = e > worst ? e : worst;
        }
        free(k), free(v), free(q), free(out), free(ref);
    }
    return worst;
}

static void test_sinks_exact(void)
{
    const char *cfgs[] = { "keys=kivix:bits=2,group=32,qbits=0 values=kivix:bits=2,group=32,qbits=0 residual=16 sinks=4",
                           "keys=q4_0:qbits=0 values=q4_0:qbits=0 residual=0 sinks=1",
                           "keys=kivi:bits=2,group=32,qbits=0 values=kivi:bits=2,qbits=0 residual=8 sinks=37 page=64" };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        vq_cache *c = make(cfgs[i]);
        CHECKF(c != NULL, "create %s: %s", cfgs[i], vq_last_error());
        if (!c)
            continue;
        long sinks = strtol(strstr(cfgs[i], "sinks=") + 6, NULL, 10);
        long resid = strtol(strstr(cfgs[i], "residual=") + 9, NULL, 10);
        double e = run(c, 300, 7, 3 + i);
        CHECKF(e < 1e-4, "%s: attention vs reference over the cache's contents: %g", cfgs[i], e);
        /* the sinks come back exactly (fp16 of the input) and first */
        vq_rng r;
        vq_rng_seed(&r, 3 + i);
        size_t D = 64, nh = 2, n = 300;
        float *k = malloc(n * nh * D * sizeof *k), *v = malloc(n * nh * D * sizeof *v);
        fill_kv(&r, k, v, n, D, nh);
        size_t cnt = 0;
        CHECK(vq_cache_gather(c, 0, 1, 0, NULL, NULL, NULL, &cnt) == VQ_OK && cnt == n);
        int32_t *pos = malloc(cnt * sizeof *pos);
        float *gk = malloc(cnt * D * sizeof *gk), *gv = malloc(cnt * D * sizeof *gv);
        CHECK(vq_cache_gather(c, 0, 1, cnt, pos, gk, gv, &cnt) == VQ_OK);
        int sorted = 1, exact = 1;
        for (size_t t = 0; t < cnt; t++)
            sorted &= pos[t] == (int32_t)t;
        for (long t = 0; t < sinks; t++)
            for (size_t d = 0; d < D; d++) {
                float x = k[((size_t)t * nh + 1) * D + d];
                exact &= fabsf(gk[(size_t)t * D + d] - x) <= 1e-3f * fabsf(x) + 1e-6f;
            }
        CHECKF(sorted, "%s: gather in position order", cfgs[i]);
        CHECKF(exact, "%s: sink keys kept at fp16 precision", cfgs[i]);
        /* bytes: packed slots = tokens - sinks - (window of residual..residual+group-1) */
        vq_cache_usage u;
        CHECK(vq_cache_stats(c, 0, &u) == VQ_OK);
        uint64_t res_tok = u.keys.residual_tokens / 2; /* two heads */
        CHECKF(res_tok >= (uint64_t)(sinks + resid) && u.keys.stored_slots == 2 * n,
               "%s: window holds the sinks and the recent tokens (%llu)", cfgs[i], (unsigned long long)res_tok);
        CHECKF(u.keys.residual_bytes == 2ull * (uint64_t)(sinks + resid + (i == 1 ? 1 : 32)) * 2 * D,
               "%s: window buffer counts the sinks: %llu", cfgs[i], (unsigned long long)u.keys.residual_bytes);
        /* save / load keeps attention */
        char path[512];
        snprintf(path, sizeof path, "%s/sinks_%zu.vqc", vq_test_tmpdir(), i);
        CHECK(vq_cache_save(c, path) == VQ_OK);
        vq_cache *c2 = NULL;
        vq_cache_shape sh = { NL, SHAPE, 7 };
        CHECKF(vq_cache_load(path, &sh, &c2) == VQ_OK, "load: %s", vq_last_error());
        if (c2) {
            size_t cnt2 = 0;
            int32_t *pos2 = malloc(cnt * sizeof *pos2);
            float *gk2 = malloc(cnt * D * sizeof *gk2), *gv2 = malloc(cnt * D * sizeof *gv2);
            CHECK(vq_cache_gather(c2, 0, 1, cnt, pos2, gk2, gv2, &cnt2) == VQ_OK && cnt2 == cnt);
            CHECK(memcmp(pos, pos2, cnt * sizeof *pos) == 0 && memcmp(gk, gk2, cnt * D * sizeof *gk) == 0);
            /* both go on alike: append 40 tokens to layer 0, attend */
            size_t m = 40, nq = 4;
            float *k3 = malloc(m * nh * D * sizeof *k3), *v3 = malloc(m * nh * D * sizeof *v3);
            float *q3 = malloc(m * nq * D * sizeof *q3), *o1 = malloc(m * nq * D * sizeof *o1),
                  *o2 = malloc(m * nq * D * sizeof *o2);
            fill_kv(&r, k3, v3, m, D, nh);
            tc_fill(&r, q3, m * nq * D, 0.5f);
            CHECK(vq_cache_append(c, 0, k3, v3, m, (int32_t)n) == VQ_OK);
            CHECK(vq_cache_append(c2, 0, k3, v3, m, (int32_t)n) == VQ_OK);
            CHECK(vq_cache_attend(c, 0, q3, m, (int)nq, 0.125f, o1) == VQ_OK);
            CHECK(vq_cache_attend(c2, 0, q3, m, (int)nq, 0.125f, o2) == VQ_OK);
            CHECK(memcmp(o1, o2, m * nq * D * sizeof *o1) == 0);
            free(k3), free(v3), free(q3), free(o1), free(o2);
            free(pos2), free(gk2), free(gv2);
            vq_cache_free(c2);
        }
        remove(path);
        free(k), free(v), free(pos), free(gk), free(gv);
        vq_cache_free(c);
    }
}

static void test_sinks_refused(void)
{
    CHECK(make("keys=q4_0 values=q4_0 sinks=4 evict=h2o:budget=64") == NULL);
    CHECK(strstr(vq_last_error(), "sinks") != NULL);
    CHECK(make("keys=q4_0 values=q4_0 sinks=4 cross=xquant") == NULL);
    CHECK(make("keys=q4_0 values=q4_0 prerope=1 cross=minicache") == NULL);
    CHECK(strstr(vq_last_error(), "prerope") != NULL);
    vq_cache_config *cfg = NULL;
    CHECK(vq_cache_config_parse("keys=q4_0 sinks=4097", &cfg) != VQ_OK);
    CHECK(vq_cache_config_parse("keys=q4_0 sinks=4", &cfg) == VQ_OK);
    CHECK(cfg && strstr(vq_cache_config_str(cfg), " sinks=4") != NULL);
    vq_cache_config_free(cfg);
}

/* vq_cache_set_rope's refusals: each a status and a message naming the
 * problem, the cache left as it was (a prerope cache without RoPE still
 * refuses appends; with it, appends) */
static void test_set_rope_errors(void)
{
    float f[64], k[2 * 64] = { 0 }, v[2 * 64] = { 0 };
    for (int i = 0; i < 64; i++)
        f[i] = (float)pow(10000.0, -(double)i / 32.0);
    vq_cache *plain = make("keys=q4_0 values=q4_0");
    CHECK(plain != NULL);
    CHECK(vq_cache_set_rope(plain, 0, f, 0) == VQ_ERR_STATE);
    CHECK(strstr(vq_cache_error(plain), "prerope") != NULL);
    vq_cache_free(plain);
    vq_cache *c = make("keys=q4_0 values=q4_0 prerope=1");
    CHECK(c != NULL);
    CHECK(vq_cache_set_rope(NULL, 0, f, 0) == VQ_ERR_INVALID_ARG);
    CHECK(vq_cache_set_rope(c, 0, NULL, 0) == VQ_ERR_INVALID_ARG);
    CHECK(vq_cache_set_rope(c, -1, f, 0) == VQ_ERR_INVALID_ARG);
    CHECK(vq_cache_set_rope(c, NL, f, 0) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_cache_error(c), "out of range") != NULL);
    f[5] = NAN;
    CHECK(vq_cache_set_rope(c, 0, f, 0) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_cache_error(c), "inv_freq[5]") != NULL);
    f[5] = -1.0f;
    CHECK(vq_cache_set_rope(c, 0, f, 0) == VQ_ERR_INVALID_ARG);
    f[5] = (float)pow(10000.0, -5.0 / 32.0);
    CHECK(vq_cache_append(c, 0, k, v, 1, 0) != VQ_OK); /* still no RoPE on layer 0 */
    CHECK(strstr(vq_cache_error(c), "RoPE") != NULL);
    CHECK(vq_cache_set_rope(c, 0, f, 0) == VQ_OK);
    CHECK(vq_cache_append(c, 0, k, v, 1, 0) == VQ_OK);
    vq_cache_free(c);
}

/* AddressSanitizer's allocated-bytes counter: exact for small blocks
 * (glibc's mallinfo2 is not: blocks reused from its per-thread cache do
 * not move it), so this check runs in the ASan build only */
static int heap_bytes(size_t *out) { return vq_test_heap_bytes(out, 1); }

/* the RoPE tables prerope holds are in the cache's total bytes: heap growth
 * of setting them equals the growth of total_bytes (ASan counts requested
 * bytes, so exactly) */
static void test_prerope_bytes(void)
{
    vq_cache *c = make("keys=kivix:bits=3,group=32 values=kivix:bits=3,group=32 residual=16 prerope=1");
    CHECK(c != NULL);
    size_t h0, h1;
    if (!c || !heap_bytes(&h0)) {
        printf("  skipped: exact heap counter only under AddressSanitizer\n");
        vq_cache_free(c);
        return;
    }
    vq_cache_usage a, b;
    CHECK(vq_cache_stats(c, -1, &a) == VQ_OK);
    heap_bytes(&h0);
    set_rope(c);
    heap_bytes(&h1);
    CHECK(vq_cache_stats(c, -1, &b) == VQ_OK);
    long dh = (long)h1 - (long)h0, dt = (long)(b.total_bytes - a.total_bytes);
    CHECKF(dt > 0 && dh == dt, "prerope tables: heap +%ld, total_bytes +%ld", dh, dt);
    vq_cache_free(c);
}

/* a saved prerope cache loads with its RoPE and centres (version 4): the
 * gathered keys are the same, and both caches go on alike -- the same
 * tokens appended to every layer give bit-identical attention; the file's
 * version field says 4; a RoPE flag out of range (CRC recomputed) is
 * refused with VQ_ERR_FORMAT */
static void prerope_round_trip(vq_cache *c, const char *path, const char *cfg, uint64_t seed)
{
    vq_cache *c2 = NULL;
    vq_cache_shape sh = { NL, SHAPE, 7 };
    CHECKF(vq_cache_load(path, &sh, &c2) == VQ_OK, "%s: load: %s", cfg, vq_last_error());
    if (!c2)
        return;
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (int l = 0; l < NL; l++) {
        const size_t D = (size_t)SHAPE[l].head_dim, nh = (size_t)SHAPE[l].n_kv_heads, nq = (size_t)SHAPE[l].n_q_heads;
        size_t n1 = 0, n2 = 0;
        CHECK(vq_cache_gather(c, l, 0, 0, NULL, NULL, NULL, &n1) == VQ_OK);
        float *g1 = malloc((n1 + 1) * D * sizeof *g1), *g2 = malloc((n1 + 1) * D * sizeof *g2);
        CHECK(vq_cache_gather(c, l, 0, n1, NULL, g1, NULL, &n1) == VQ_OK);
        CHECK(vq_cache_gather(c2, l, 0, n1, NULL, g2, NULL, &n2) == VQ_OK && n2 == n1);
        CHECKF(memcmp(g1, g2, n1 * D * sizeof *g1) == 0, "%s layer %d: gathered keys differ after load", cfg, l);
        const size_t m = 40;
        float *k = malloc(m * nh * D * sizeof *k), *v = malloc(m * nh * D * sizeof *v);
        float *q = malloc(m * nq * D * sizeof *q), *o1 = malloc(m * nq * D * sizeof *o1), *o2 = malloc(m * nq * D * sizeof *o2);
        fill_kv(&r, k, v, m, D, nh);
        tc_fill(&r, q, m * nq * D, 0.5f);
        const int32_t p0 = (int32_t)n1; /* run() appended positions 0 .. n1 - 1 */
        CHECK(vq_cache_append(c, l, k, v, m, p0) == VQ_OK);
        CHECK(vq_cache_append(c2, l, k, v, m, p0) == VQ_OK);
        CHECK(vq_cache_attend(c, l, q, m, (int)nq, 0.125f, o1) == VQ_OK);
        CHECK(vq_cache_attend(c2, l, q, m, (int)nq, 0.125f, o2) == VQ_OK);
        CHECKF(memcmp(o1, o2, m * nq * D * sizeof *o1) == 0, "%s layer %d: attention differs after load", cfg, l);
        free(g1), free(g2), free(k), free(v), free(q), free(o1), free(o2);
    }
    vq_cache_free(c2);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK(vq_file_read_all(path, 1u << 30, &buf, &len, NULL) == VQ_OK);
    if (!buf)
        return;
    CHECK(len > 40 && vq_get_u32(buf + 4) == 4);
    /* the section is the file's tail: layer 1's neox flag sits before its 64 inv_freq
     * floats, its centre flag and (prerope=2, packed) its centres; edit layer 0's flag */
    const size_t sec = len - 4 - (8 + 4 * 32) - (8 + 4 * 64) -
                       (strstr(cfg, "prerope=2") ? 4 * (2 * 64 + 1 * 128) : 0);
    vq_put_u32(buf + sec, 2);
    vq_put_u32(buf + len - 4, vq_crc32(0, buf, len - 4));
    char bad[600];
    snprintf(bad, sizeof bad, "%s.bad", path);
    CHECK(vq_file_write_buffer(bad, buf, len, NULL) == VQ_OK);
    vq_cache *c3 = NULL;
    CHECKF(vq_cache_load(bad, &sh, &c3) == VQ_ERR_FORMAT && !c3 && strstr(vq_last_error(), "prerope") != NULL,
           "%s: a bad RoPE flag not refused: %s", cfg, vq_last_error());
    remove(bad);
    free(buf);
}

static void test_prerope_reference(void)
{
    const char *cfgs[] = { "keys=kivix:bits=3,group=32,outliers=8 values=kivix:bits=3,group=32,qbits=0 residual=16 prerope=1",
                           "keys=fp16 values=fp16 residual=0 prerope=1",
                           "keys=kivix:bits=4,group=64,outliers=64 values=fp16 residual=16 sinks=4 prerope=1",
                           "keys=kivi:bits=2,group=32,qbits=0 values=kivi:bits=2,qbits=0 residual=8 sinks=4 prerope=1",
                           "keys=turboquant_rvq:bits=1 values=kivix:bits=3,group=32,qbits=0 residual=16 sinks=4 prerope=2",
                           "keys=fp16 values=fp16 residual=0 prerope=2" };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        vq_cache *c = make(cfgs[i]);
        CHECKF(c != NULL, "create %s: %s", cfgs[i], vq_last_error());
        if (!c)
            continue;
        /* no RoPE yet: appends refuse */
        float z[2 * 64] = { 0 };
        CHECK(vq_cache_append(c, 0, z, z, 1, 0) == VQ_ERR_STATE);
        set_rope(c);
        double e = run(c, 260, 5, 21 + i);
        CHECKF(e < 1e-4, "%s: pre-RoPE scoring vs post-RoPE reference on decoded keys: %g", cfgs[i], e);
        if (strncmp(cfgs[i], "keys=fp16", 9) == 0) { /* fp16: the gathered keys are the input keys */
            vq_rng r;
            vq_rng_seed(&r, 21 + i);
            size_t D = 64, nh = 2, n = 260;
            float *k = malloc(n * nh * D * sizeof *k), *v = malloc(n * nh * D * sizeof *v);
            fill_kv(&r, k, v, n, D, nh);
            float *gk = malloc(n * D * sizeof *gk);
            size_t cnt = 0;
            CHECK(vq_cache_gather(c, 0, 0, n, NULL, gk, NULL, &cnt) == VQ_OK && cnt == n);
            double num = 0, den = 0;
            for (size_t t = 0; t < n; t++)
                for (size_t d = 0; d < D; d++) {
                    double x = k[t * nh * D + d], y = gk[t * D + d];
                    num += (x - y) * (x - y);
                    den += x * x;
                }
            CHECKF(sqrt(num / den) < 2e-3, "fp16 prerope keys round trip: %g", sqrt(num / den));
            free(k), free(v), free(gk);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/prerope_%zu.vqc", vq_test_tmpdir(), i);
        CHECKF(vq_cache_save(c, path) == VQ_OK, "%s: save: %s", cfgs[i], vq_last_error());
        prerope_round_trip(c, path, cfgs[i], 40 + i);
        remove(path);
        vq_cache_free(c);
    }
    /* a cache whose layers have no RoPE yet cannot be saved (nothing to carry) */
    vq_cache *c = make(cfgs[0]);
    char path[512];
    snprintf(path, sizeof path, "%s/prerope_none.vqc", vq_test_tmpdir());
    CHECK(c && vq_cache_save(c, path) == VQ_ERR_STATE && strstr(vq_last_error(), "RoPE") != NULL);
    vq_cache_free(c);
}

/* RoPE at position p (layer 0's adjacent pairs or layer 1's NEOX halves) */
static void rope_at(float *x, size_t D, int32_t p, int neox)
{
    size_t half = D / 2;
    for (size_t i = 0; i < half; i++) {
        double a = (double)p * pow(10000.0, -2.0 * (double)i / (double)D), cs = cos(a), sn = sin(a);
        size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        double x0 = x[i0], x1 = x[i1];
        x[i0] = (float)(x0 * cs - x1 * sn);
        x[i1] = (float)(x0 * sn + x1 * cs);
    }
}

/* prerope=2 centres each head's pre-RoPE keys on the mean of its first
 * packed group: with keys whose pre-RoPE form has a large shared offset, a
 * rotated per-token codec (error proportional to |k|) loses less than with
 * prerope=1; the centre costs D floats per head, counted in total_bytes
 * (heap growth minus total_bytes growth is the same as for prerope=1,
 * checked under ASan) */
static void test_prerope_center(void)
{
    const char *cfgs[2] = { "keys=turboquant_rvq:bits=1 values=fp16 residual=16 prerope=1",
                            "keys=turboquant_rvq:bits=1 values=fp16 residual=16 prerope=2" };
    const size_t n = 256;
    double err[2] = { 0, 0 }, gap[2] = { 0, 0 };
    int have_heap = 0;
    for (int i = 0; i < 2; i++) {
        vq_cache *c = make(cfgs[i]);
        CHECKF(c != NULL, "create %s: %s", cfgs[i], vq_last_error());
        if (!c)
            return;
        set_rope(c);
        size_t h0 = 0, h1 = 0;
        have_heap = heap_bytes(&h0);
        vq_cache_usage a, b;
        CHECK(vq_cache_stats(c, -1, &a) == VQ_OK);
        double num = 0, den = 0;
        for (int l = 0; l < NL; l++) {
            size_t D = (size_t)SHAPE[l].head_dim, nh = (size_t)SHAPE[l].n_kv_heads;
            float *k = malloc(n * nh * D * sizeof *k), *v = malloc(n * nh * D * sizeof *v);
            float *gk = malloc(n * D * sizeof *gk);
            vq_rng r;
            vq_rng_seed(&r, 77 + (uint64_t)l);
            tc_fill(&r, k, n * nh * D, 1.0f);
            tc_fill(&r, v, n * nh * D, 1.0f);
            for (size_t t = 0; t < n; t++)
                for (size_t hd = 0; hd < nh; hd++) {
                    float *x = k + (t * nh + hd) * D;
                    for (size_t d = 0; d < D; d++)
                        x[d] += (d % 5 == 0) ? 10.0f : 0.0f; /* the pre-RoPE offset */
                    rope_at(x, D, (int32_t)t, l);
                }
            CHECK(vq_cache_append(c, l, k, v, n, 0) == VQ_OK);
            size_t cnt = 0;
            CHECK(vq_cache_gather(c, l, 0, n, NULL, gk, NULL, &cnt) == VQ_OK && cnt == n);
            for (size_t t = 0; t < n - 32; t++) /* the packed part (the window is fp16) */
                for (size_t d = 0; d < D; d++) {
                    double x = k[t * nh * D + d], y = gk[t * D + d];
                    num += (x - y) * (x - y);
                    den += x * x;
                }
            free(k), free(v), free(gk);
        }
        if (have_heap)
            heap_bytes(&h1);
        CHECK(vq_cache_stats(c, -1, &b) == VQ_OK);
        gap[i] = ((double)h1 - (double)h0) - ((double)b.total_bytes - (double)a.total_bytes);
        err[i] = sqrt(num / den);
        vq_cache_free(c);
    }
    CHECKF(err[1] < 0.6 * err[0], "centred keys: relative error %.4f vs %.4f without", err[1], err[0]);
    if (have_heap)
        CHECKF(gap[0] == gap[1], "prerope=2: heap minus total_bytes growth %.0f B vs %.0f B for prerope=1", gap[1],
               gap[0]);
    vq_cache_config *cfg = NULL;
    CHECK(vq_cache_config_parse("keys=fp16 values=fp16 prerope=3", &cfg) != VQ_OK);
    vq_cache_config_free(cfg);
}

int main(void)
{
    RUN(test_sinks_exact);
    RUN(test_sinks_refused);
    RUN(test_set_rope_errors);
    RUN(test_prerope_reference);
    RUN(test_prerope_bytes);
    RUN(test_prerope_center);
    return vq_test_summary("cache_sinks");
}
