/* test_cache_persist.c -- vq_cache_save / vq_cache_load: a round trip
 * continues with bit-identical attention; truncated and corrupted files
 * and another model's file are refused with VQ_ERR_FORMAT and a message;
 * a failed save leaves no file and keeps an existing one intact; a writer
 * killed (SIGKILL) mid-save leaves the previous file loadable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "core/timer.h"
#include "test.h"
#include "test_files.h"
#include "synth_kv.h"
#include "test_cache_util.h"

static const vq_layer_shape SH[2] = { { 2, 4, 64, 0, 0 }, { 1, 2, 32, 24, 0 } };
static const vq_cache_shape SHAPE = { 2, SH, 0xfeedbeefcafe1234ull };

static vq_cache *build(const char *text)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    CHECK_OK(vq_cache_config_parse(text, &cfg));
    if (cfg)
        CHECK_OK(vq_cache_create(cfg, &SHAPE, 77, &c));
    vq_cache_config_free(cfg);
    return c;
}

/* append + attend tokens [t0, t0+n) with data from seed; outputs of both
 * layers into out (may be NULL) */
static void drive(vq_cache *c, size_t t0, size_t n, uint64_t seed, float *out)
{
    vq_rng g;
    vq_rng_seed(&g, seed + t0);
    size_t o = 0;
    for (int l = 0; l < 2; l++) {
        size_t kvf = (size_t)SH[l].n_kv_heads * (size_t)SH[l].head_dim;
        size_t qf = (size_t)SH[l].n_q_heads * (size_t)SH[l].head_dim;
        float *k = malloc(n * kvf * 4), *v = malloc(n * kvf * 4), *q = malloc(n * qf * 4), *y = malloc(n * qf * 4);
        tc_fill(&g, k, n * kvf, 1.0f);
        tc_fill(&g, v, n * kvf, 1.0f);
        tc_fill(&g, q, n * qf, 1.5f);
        CHECK_OK(vq_cache_append(c, l, k, v, n, (int32_t)t0));
        CHECK_OK(vq_cache_attend(c, l, q, n, SH[l].n_q_heads, 1.0f / sqrtf((float)SH[l].head_dim), y));
        if (out)
            memcpy(out + o, y, n * qf * 4);
        o += n * qf;
        free(k), free(v), free(q), free(y);
    }
}

static size_t out_floats(size_t n)
{
    return n * ((size_t)SH[0].n_q_heads * SH[0].head_dim + (size_t)SH[1].n_q_heads * SH[1].head_dim);
}

static void roundtrip(const char *cfgtext)
{
    vq_cache *a = build(cfgtext);
    if (!a)
        return;
    drive(a, 0, 70, 1, NULL);
    for (size_t t = 70; t < 90; t++)
        drive(a, t, 1, 1, NULL);
    const char *path = vq_test_tmp_path("rt.vqkc");
    CHECK_OK(vq_cache_save(a, path));
    vq_cache *b = NULL;
    CHECK_OK(vq_cache_load(path, &SHAPE, &b));
    if (!b) {
        vq_cache_free(a);
        return;
    }
    CHECK(strcmp(vq_cache_codec_spec(a, 0, VQ_ROLE_KEY), vq_cache_codec_spec(b, 0, VQ_ROLE_KEY)) == 0);
    vq_cache_usage ua, ub;
    CHECK_OK(vq_cache_stats(a, -1, &ua));
    CHECK_OK(vq_cache_stats(b, -1, &ub));
    CHECK(ua.keys.tokens == ub.keys.tokens && ua.values.accounted_bytes == ub.values.accounted_bytes);
    size_t nf = out_floats(1);
    float *ya = malloc(nf * 4), *yb = malloc(nf * 4);
    /* values summed with int8 weights (q4_0's default) round the weights
     * per block of 32 rows as a call lays them out, and a loaded cache
     * holds an evicted layout compacted: its outputs may differ by that
     * rounding (test_cache_attend's 3e-2 bound); every other config
     * continues with the same bits */
    const int w8 = strstr(vq_cache_codec_spec(a, 0, VQ_ROLE_VALUE), "qbits=8") != NULL;
    int same = 1;
    double worst = 0.0;
    for (size_t t = 90; t < 120; t++) {
        drive(a, t, 1, 2, ya);
        drive(b, t, 1, 2, yb);
        same &= memcmp(ya, yb, nf * 4) == 0;
        worst = fmax(worst, sqrt(vq_rel_err2(yb, ya, nf)));
    }
    if (w8)
        CHECKF(worst <= 3e-2, "%s: loaded cache's attention outputs %.3g off", cfgtext, worst);
    else
        CHECKF(same, "%s: loaded cache gives different attention outputs", cfgtext);
    /* the held tokens are the same after continued decoding (eviction
     * state, e.g. h2o scores, was saved too) */
    for (int h = 0; h < SH[0].n_kv_heads; h++) {
        size_t na = 0, nb = 0;
        int32_t pa[256], pb[256];
        CHECK_OK(vq_cache_gather(a, 0, h, 256, pa, NULL, NULL, &na));
        CHECK_OK(vq_cache_gather(b, 0, h, 256, pb, NULL, NULL, &nb));
        CHECK(na == nb && memcmp(pa, pb, na * 4) == 0);
    }
    printf("  round trip ok: %s\n", cfgtext);
    free(ya), free(yb);
    vq_cache_free(a), vq_cache_free(b);
}

static void test_roundtrip(void)
{
    roundtrip("keys=fp16 values=fp16");
    roundtrip("keys=fp16 values=fp16 residual=16 page=32 evict=h2o:budget=48,sinks=2,recent=8");
    const char *spec;
    for (int i = 0; vq_codec_method(i, &spec); i++) {
        if (strcmp(spec, "fp16") == 0)
            continue;
        char buf[1200];
        snprintf(buf, sizeof buf, "keys=%s values=%s residual=4 evict=streaming_llm:sinks=4,window=40", spec, spec);
        vq_cache *probe = build(buf);
        if (!probe)
            continue;
        vq_cache_free(probe);
        vq_codec *cd = NULL;
        if (vq_codec_create(spec, 64, VQ_ROLE_KEY, 1, &cd) == VQ_OK && vq_codec_needs_calibration(cd)) {
            vq_codec_free(cd);
            /* calibrate, then the state travels with the file */
            vq_cache *a = build(buf);
            vq_rng g;
            vq_rng_seed(&g, 3);
            for (int l = 0; l < 2; l++) {
                size_t n = 256 * (size_t)SH[l].n_kv_heads * (size_t)SH[l].head_dim;
                float *x = malloc(n * 4);
                tc_fill(&g, x, n, 1.0f);
                CHECK_OK(vq_cache_calibrate(a, l, x, x, 256));
                free(x);
            }
            drive(a, 0, 40, 1, NULL);
            const char *path = vq_test_tmp_path("cal.vqkc");
            CHECK_OK(vq_cache_save(a, path));
            vq_cache *b = NULL;
            CHECK_OK(vq_cache_load(path, &SHAPE, &b));
            size_t nf = out_floats(1);
            float *ya = malloc(nf * 4), *yb = malloc(nf * 4);
            if (b) {
                drive(a, 40, 1, 2, ya);
                drive(b, 40, 1, 2, yb);
                CHECKF(memcmp(ya, yb, nf * 4) == 0, "%s: calibrated cache differs after load", spec);
                printf("  round trip ok (calibration state saved): %s\n", buf);
            }
            free(ya), free(yb);
            vq_cache_free(a), vq_cache_free(b);
            continue;
        }
        vq_codec_free(cd);
        roundtrip(buf);
    }
}

/* plain write (no fsync: thousands of test files) */
static void test_refuse_bad_files(void)
{
    vq_cache *a = build("keys=fp16 values=fp16 residual=4");
    if (!a)
        return;
    drive(a, 0, 30, 1, NULL);
    const char *path = vq_test_tmp_path("good.vqkc");
    CHECK_OK(vq_cache_save(a, path));
    vq_cache_free(a);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_OK(vq_file_read_all(path, 1u << 30, &buf, &len, NULL));
    if (!buf)
        return;
    const char *bad = vq_test_tmp_path("bad.vqkc");
    vq_cache *b = NULL;
    /* every truncation refused (quick mode: a sample of lengths) */
    size_t stepn = vq_test_quick() ? 97 : 7, refused = 0, tried = 0;
    for (size_t n = 0; n < len; n += stepn, tried++) {
        CHECK(vq_test_write_file(bad, buf, n) == 0);
        vq_status st = vq_cache_load(bad, NULL, &b);
        refused += st == VQ_ERR_FORMAT && b == NULL && strlen(vq_last_error()) > 0;
        vq_cache_free(b);
        b = NULL;
    }
    CHECKF(refused == tried, "%zu of %zu truncations refused with VQ_ERR_FORMAT", refused, tried);
    /* single-byte corruption anywhere */
    refused = tried = 0;
    for (size_t off = 0; off < len; off += stepn * 3, tried++) {
        buf[off] ^= 0x5a;
        CHECK(vq_test_write_file(bad, buf, len) == 0);
        buf[off] ^= 0x5a;
        vq_status st = vq_cache_load(bad, NULL, &b);
        refused += st == VQ_ERR_FORMAT && b == NULL;
        vq_cache_free(b);
        b = NULL;
    }
    CHECKF(refused == tried, "%zu of %zu corruptions refused", refused, tried);
    CHECK(vq_cache_load(bad, NULL, &b) == VQ_ERR_FORMAT && strstr(vq_last_error(), "checksum") != NULL);
    CHECK(vq_cache_load(vq_test_tmp_path("missing.vqkc"), NULL, &b) == VQ_ERR_IO);
    /* another model */
    vq_cache_shape other = SHAPE;
    other.fingerprint ^= 1;
    CHECK(vq_cache_load(path, &other, &b) == VQ_ERR_FORMAT && b == NULL);
    CHECK(strstr(vq_last_error(), "another model") != NULL);
    vq_layer_shape sh2[2] = { SH[0], SH[1] };
    sh2[1].window = 0;
    vq_cache_shape other2 = { 2, sh2, SHAPE.fingerprint };
    CHECK(vq_cache_load(path, &other2, &b) == VQ_ERR_FORMAT);
    CHECK_OK(vq_cache_load(path, &SHAPE, &b));
    vq_cache_free(b);
    free(buf);
}

/* Mutations with the CRC recomputed, so that the field checks behind the
 * checksum are exercised: every load either succeeds with a usable cache
 * or fails with VQ_ERR_FORMAT; nothing crashes (ASan run) or hangs. Also
 * targeted edits of counts and positions. */
static void test_hostile_fields(void)
{
    vq_cache *a = build("keys=q8_0 values=fp16 residual=4 evict=h2o:budget=20,sinks=1,recent=4");
    if (!a)
        return;
    drive(a, 0, 30, 1, NULL);
    const char *path = vq_test_tmp_path("h.vqkc");
    CHECK_OK(vq_cache_save(a, path));
    vq_cache_free(a);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_OK(vq_file_read_all(path, 1u << 30, &buf, &len, NULL));
    if (!buf)
        return;
    uint8_t *m = malloc(len);
    vq_rng g;
    vq_rng_seed(&g, 99);
    int iters = vq_test_quick() ? 300 : 3000, ok = 0, fmt = 0, other = 0, usable = 1;
    const char *bad = vq_test_tmp_path("hm.vqkc");
    for (int it = 0; it < iters; it++) {
        memcpy(m, buf, len);
        int edits = 1 + (int)(vq_rng_next(&g) % 4);
        for (int e = 0; e < edits; e++) {
            size_t off = (size_t)(vq_rng_next(&g) % (len - 4));
            int kind = (int)(vq_rng_next(&g) % 3);
            if (kind == 0)
                m[off] ^= (uint8_t)(1u << (vq_rng_next(&g) % 8));
            else if (kind == 1 && off + 4 <= len - 4)
                vq_put_u32(m + off, (uint32_t)vq_rng_next(&g));
            else if (off + 8 <= len - 4)
                vq_put_u64(m + off, vq_rng_next(&g) % 2 ? ~0ull : (uint64_t)(vq_rng_next(&g) % 1000));
        }
        vq_put_u32(m + len - 4, vq_crc32(0, m, len - 4));
        CHECK(vq_test_write_file(bad, m, len) == 0);
        vq_cache *b = NULL;
        vq_status st = vq_cache_load(bad, NULL, &b);
        if (st == VQ_OK) {
            ok++;
            /* a loaded cache must work: one more step */
            vq_cache_shape sh;
            if (vq_cache_get_shape(b, &sh) == VQ_OK && sh.n_layers == 2 && sh.layers[0].n_kv_heads == SH[0].n_kv_heads &&
                sh.layers[0].head_dim == SH[0].head_dim && sh.layers[1].head_dim == SH[1].head_dim &&
                sh.layers[1].n_kv_heads == SH[1].n_kv_heads && sh.layers[0].n_q_heads == SH[0].n_q_heads &&
                sh.layers[1].n_q_heads == SH[1].n_q_heads) {
                float k[4 * 64] = { 0 }, q[4 * 64] = { 0 }, y[4 * 64];
                int32_t next = 1 << 20;
                if (vq_cache_append(b, 0, k, k, 1, next) == VQ_OK)
                    usable &= vq_cache_attend(b, 0, q, 1, SH[0].n_q_heads, 0.1f, y) == VQ_OK;
            }
        } else if (st == VQ_ERR_FORMAT) {
            fmt++;
        } else {
            other++;
        }
        vq_cache_free(b);
    }
    CHECKF(other == 0, "%d mutated files gave a status other than OK/FORMAT", other);
    CHECK(usable);
    printf("  %d CRC-fixed mutations: %d loaded (harmless edits, e.g. scores), %d refused\n", iters, ok, fmt);
    /* targeted edits of the structure (offsets from docs/cache-format.md) */
    /* version 3: the writer field at 8 moves everything after it by 4 */
    size_t C = vq_get_u32(buf + 28), l0 = 32 + C + 4 + 2 * 20, h0 = l0 + 12 + 4 + 4;
    struct {
        size_t off;
        int width;
        uint64_t val;
        const char *what;
    } ed[] = {
        { 32 + C, 4, 0, "n_layers=0" },
        { 32 + C, 4, 3, "n_layers=3" },
        { 32 + C + 12, 4, 48, "head_dim=48" },
        { 32 + C + 12, 4, 32, "head_dim=32 (valid, data sizes disagree)" },
        { h0, 8, 1ull << 40, "n_packed huge" },
        { h0, 8, 3, "n_packed not matching" },
        { h0 + 8, 8, 1000, "n_res beyond the window" },
        { h0 + 16, 8, 7, "dead count" },
        { h0 + 24, 4, 1000, "positions not increasing" },
        { l0, 4, 5, "last_pos inconsistent" },
        { l0 + 12, 4, 100, "state length" },
        { 8, 4, 1000000, "writer field out of range" },
    };
    for (size_t i = 0; i < sizeof ed / sizeof *ed; i++) {
        memcpy(m, buf, len);
        if (ed[i].width == 4)
            vq_put_u32(m + ed[i].off, (uint32_t)ed[i].val);
        else
            vq_put_u64(m + ed[i].off, ed[i].val);
        vq_put_u32(m + len - 4, vq_crc32(0, m, len - 4));
        CHECK(vq_test_write_file(bad, m, len) == 0);
        vq_cache *b = NULL;
        vq_status st = vq_cache_load(bad, NULL, &b);
        CHECKF(st == VQ_ERR_FORMAT && !b, "edit '%s' not refused (%s)", ed[i].what, vq_status_str(st));
        vq_cache_free(b);
    }
    free(m);
    free(buf);
}

static void test_failed_save(void)
{
    vq_cache *a = build("keys=fp16 values=fp16");
    if (!a)
        return;
    drive(a, 0, 10, 1, NULL);
    /* unwritable location: the parent is a regular file */
    const char *blocker = vq_test_tmp_path("afile");
    CHECK_OK(vq_file_write_buffer(blocker, "x", 1, NULL));
    char path[600];
    snprintf(path, sizeof path, "%s/cache.vqkc", blocker);
    CHECK(vq_cache_save(a, path) == VQ_ERR_IO);
    CHECK(strstr(vq_cache_error(a), "cache save") != NULL);
    struct stat sb;
    CHECK(stat(path, &sb) != 0);
    /* an existing file stays intact when a save fails: block the
     * temporary file's name with a directory */
    const char *keep = vq_test_tmp_path("keep.vqkc");
    CHECK_OK(vq_cache_save(a, keep));
    uint8_t *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    CHECK_OK(vq_file_read_all(keep, 1u << 30, &before, &nb, NULL));
    char tmpname[700];
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", keep, (long)getpid());
    CHECK(mkdir(tmpname, 0700) == 0);
    drive(a, 10, 5, 1, NULL);
    CHECK(vq_cache_save(a, keep) == VQ_ERR_IO);
    CHECK_OK(vq_file_read_all(keep, 1u << 30, &after, &na, NULL));
    CHECK(before && after && na == nb && memcmp(before, after, nb) == 0);
    vq_cache *b = NULL;
    CHECK_OK(vq_cache_load(keep, &SHAPE, &b));
    vq_cache_free(b);
    rmdir(tmpname);
    free(before), free(after);
    vq_cache_free(a);
}

/* A process killed (SIGKILL) at a random moment while saving leaves the
 * previous file intact: a child keeps re-saving a grown cache over `keep`
 * until the parent kills it after 1..400 ms; every time, `keep` must still
 * load and be either the old file or a complete new one (the write goes
 * to a temporary name that is renamed over `keep` only when complete). */
static void test_killed_save(void)
{
    vq_cache *a = build("keys=fp16 values=fp16");
    if (!a)
        return;
    size_t n0 = vq_test_quick() ? 300 : 2000;
    drive(a, 0, n0, 3, NULL);
    const char *keep = vq_test_tmp_path("killed.vqkc");
    double t_save = vq_now_seconds();
    CHECK_OK(vq_cache_save(a, keep));
    t_save = vq_now_seconds() - t_save;
    struct stat sb0;
    CHECK(stat(keep, &sb0) == 0);
    const int delays_ms[] = { 1, 7, 30, 90, 200, 400 };
    int n_new = 0;
    for (size_t r = 0; r < sizeof delays_ms / sizeof *delays_ms; r++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid < 0)
            break;
        if (pid == 0) {
            drive(a, n0 + 100 * r, 20, 4, NULL); /* a different, larger file */
            for (;;)
                if (vq_cache_save(a, keep) != VQ_OK) {
                    fprintf(stderr, "child save: %s\n", vq_cache_error(a));
                    _exit(1);
                }
        }
        struct timespec ts = { 0, delays_ms[r] * 1000000L };
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int wst = 0;
        waitpid(pid, &wst, 0);
        CHECK(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
        vq_cache *b = NULL;
        vq_status st = vq_cache_load(keep, &SHAPE, &b);
        CHECKF(st == VQ_OK, "after a kill at %d ms the saved cache does not load: %s", delays_ms[r],
               vq_last_error());
        struct stat sb;
        CHECK(stat(keep, &sb) == 0);
        n_new += sb.st_size != sb0.st_size;
        vq_cache_free(b);
        char tmpname[700];
        snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", keep, (long)pid);
        unlink(tmpname); /* the killed writer's temporary, never `keep` itself */
    }
    printf("  killed saves (one save of %lld bytes takes %.0f ms): %d of %zu kills left a complete new\n"
           "  file, the rest the old one\n", (long long)sb0.st_size, 1e3 * t_save, n_new,
           sizeof delays_ms / sizeof *delays_ms);
    vq_cache_free(a);
}

int main(void)
{
    RUN(test_roundtrip);
    RUN(test_refuse_bad_files);
    RUN(test_hostile_fields);
    RUN(test_failed_save);
    RUN(test_killed_save);
    return vq_test_summary("cache_persist");
}
