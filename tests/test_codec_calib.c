/* test_codec_calib.c -- calibration state of the calibrated codecs
 * (vecinfer, spectral): write -> read into a fresh codec -> identical
 * encoding; the reader refuses truncation at every length, every flipped
 * byte (CRC), wrong head_dim / role / parameters, hostile sizes and
 * hostile payload fields behind a valid CRC -- without crashing (this test
 * runs under ASan/UBSan in `make sanitize`); `calib=FILE` in the spec. */
#include <stdlib.h>
#include <string.h>

#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "core/rng.h"
#include "synth_kv.h"
#include "test.h"
#include "veloxquant.h"

static vq_codec *make(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(spec, D, role, 77, &c);
    CHECKF(st == VQ_OK, "create %s D=%d: %s", spec, D, vq_last_error());
    return c;
}

static float *samples(int D, size_t n, uint64_t seed)
{
    vq_synth syn;
    vq_synth_init(&syn, D, 5, 1);
    vq_rng r;
    vq_rng_seed(&r, seed);
    float *x = malloc(n * D * sizeof(float));
    vq_synth_draw(&syn, &r, x, n);
    return x;
}

/* calibrated codec and its state bytes (caller frees *state) */
static vq_codec *calibrated(const char *spec, int D, vq_role role, uint8_t **state, size_t *len)
{
    vq_codec *c = make(spec, D, role);
    *state = NULL;
    if (!c)
        return NULL;
    float *x = samples(D, 600, 1);
    CHECK_OK(vq_codec_calibrate(c, x, 600));
    free(x);
    CHECK_OK(vq_codec_state_write(c, NULL, 0, len));
    *state = malloc(*len);
    CHECK(vq_codec_state_write(c, *state, *len - 1, len) == VQ_ERR_INVALID_ARG); /* too small */
    CHECK_OK(vq_codec_state_write(c, *state, *len, len));
    return c;
}

static int same_encoding(vq_codec *a, vq_codec *b, int D)
{
    const size_t n = 64;
    float *x = samples(D, n, 99);
    size_t bytes = n * vq_codec_block_bytes(a);
    uint8_t *ca = malloc(bytes), *cb = malloc(bytes);
    int same = vq_codec_encode(a, x, n, ca) == VQ_OK && vq_codec_encode(b, x, n, cb) == VQ_OK &&
               memcmp(ca, cb, bytes) == 0;
    /* decode of state-loaded codec must also match */
    float *da = malloc(n * D * sizeof(float)), *db = malloc(n * D * sizeof(float));
    same = same && vq_codec_decode(a, ca, n, da) == VQ_OK && vq_codec_decode(b, cb, n, db) == VQ_OK &&
           memcmp(da, db, n * D * sizeof(float)) == 0;
    /* and so must a prepared query (state derived from the payload, such
     * as vecinfer's transposed codebooks, included) and its scores */
    const size_t qb = vq_codec_query_bytes(a);
    uint8_t *qa = calloc(1, qb), *qbb = calloc(1, qb);
    float sa[64], sb[64];
    same = same && vq_codec_prepare_query(a, x, qa) == VQ_OK && vq_codec_prepare_query(b, x, qbb) == VQ_OK &&
           memcmp(qa, qbb, qb) == 0 && vq_codec_score(a, qa, 1, ca, n, sa) == VQ_OK &&
           vq_codec_score(b, qbb, 1, cb, n, sb) == VQ_OK && memcmp(sa, sb, sizeof sa) == 0;
    free(x); free(ca); free(cb); free(da); free(db); free(qa); free(qbb);
    return same;
}

static void fix_crc(uint8_t *p, size_t len) { vq_put_u32(p + len - 4, vq_crc32(0, p, len - 4)); }

/* payload offset in a state buffer: 28 + L */
static size_t payload_off(const uint8_t *p) { return 32 + vq_get_u32(p + 20); } /* VQCS version 2 */

static const char *const specs[] = {
    "vecinfer:sub_dim=4,bits=3", "vecinfer:sub_dim=8,bits=5", "vecinfer:sub_dim=8,bits=8", "spectral:bits=2,signal_bits=2",
    "spectral:bits=1,signal_bits=3,signal=4",
};

static void test_roundtrip(void)
{
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
        for (int role = 0; role < 2; role++) {
            const int D = 64;
            uint8_t *st;
            size_t len;
            vq_codec *a = calibrated(specs[s], D, (vq_role)role, &st, &len);
            vq_codec *b = make(specs[s], D, (vq_role)role);
            if (!a || !b || !st) {
                vq_codec_free(a); vq_codec_free(b); free(st);
                continue;
            }
            CHECK(!vq_codec_is_ready(b));
            CHECK_OK(vq_codec_state_read(b, st, len));
            CHECK(vq_codec_is_ready(b));
            CHECKF(same_encoding(a, b, D), "%s role %d: state-loaded codec encodes or scores differently", specs[s], role);
            /* writing the loaded state gives the same bytes */
            size_t len2 = 0;
            uint8_t *st2 = malloc(len);
            CHECK_OK(vq_codec_state_write(b, st2, len, &len2));
            CHECK(len2 == len && memcmp(st, st2, len) == 0);
            free(st2);
            /* header: magic, version 2, writer, head_dim, role, canonical spec */
            CHECK(memcmp(st, "VQCS", 4) == 0 && vq_get_u32(st + 4) == 2 && vq_get_u32(st + 8) == VQ_VERSION_NUMBER &&
                  vq_get_u32(st + 12) == (uint32_t)D && vq_get_u32(st + 16) == (uint32_t)role);
            CHECK(vq_get_u32(st + 20) == strlen(vq_codec_spec(a)) &&
                  memcmp(st + 24, vq_codec_spec(a), strlen(vq_codec_spec(a))) == 0);
            vq_codec_free(a);
            vq_codec_free(b);
            free(st);
        }
}

/* every truncation, every flipped byte: refused, codec stays unready */
static void test_corruption(void)
{
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        const int D = 32;
        uint8_t *st;
        size_t len;
        vq_codec *a = calibrated(specs[s], D, VQ_ROLE_KEY, &st, &len);
        vq_codec *b = make(specs[s], D, VQ_ROLE_KEY);
        if (!a || !b || !st) {
            vq_codec_free(a); vq_codec_free(b); free(st);
            continue;
        }
        int bad_trunc = 0, bad_flip = 0;
        for (size_t l = 0; l < len; l++) {
            uint8_t *cut = malloc(l ? l : 1); /* exact-size buffer so ASan sees overreads */
            memcpy(cut, st, l);
            if (vq_codec_state_read(b, cut, l) == VQ_OK || vq_codec_is_ready(b))
                bad_trunc++;
            free(cut);
        }
        size_t step = len > 4000 ? len / 4000 : 1;
        for (size_t i = 0; i < len; i += step) {
            st[i] ^= 0x5a;
            if (vq_codec_state_read(b, st, len) == VQ_OK)
                bad_flip++;
            st[i] ^= 0x5a;
        }
        CHECKF(bad_trunc == 0, "%s: %d truncations accepted", specs[s], bad_trunc);
        CHECKF(bad_flip == 0, "%s: %d flipped bytes accepted", specs[s], bad_flip);
        CHECK(!vq_codec_is_ready(b));
        /* trailing garbage */
        uint8_t *longer = malloc(len + 1);
        memcpy(longer, st, len);
        longer[len] = 0;
        CHECK(vq_codec_state_read(b, longer, len + 1) == VQ_ERR_FORMAT);
        free(longer);
        /* unknown version / writer out of range / huge spec length / huge
         * payload length, CRC fixed */
        uint8_t *m = malloc(len);
        memcpy(m, st, len);
        vq_put_u32(m + 4, 3);
        fix_crc(m, len);
        CHECK(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT);
        memcpy(m, st, len);
        vq_put_u32(m + 8, 0xffffffffu);
        fix_crc(m, len);
        CHECK(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT);
        memcpy(m, st, len);
        vq_put_u32(m + 20, 0xffffffffu);
        CHECK(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT);
        memcpy(m, st, len);
        vq_put_u64(m + payload_off(st) - 8, ~0ull);
        CHECK(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT);
        memcpy(m, st, len);
        vq_put_u64(m + payload_off(st) - 8, (uint64_t)len); /* in range of the u64, not of the input */
        CHECK(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT);
        CHECK(!vq_codec_is_ready(b));
        free(m);
        vq_codec_free(a);
        vq_codec_free(b);
        free(st);
    }
}

/* a state for another head_dim, role or parameter set is refused */
static void test_mismatch(void)
{
    uint8_t *st;
    size_t len;
    vq_codec *a = calibrated("vecinfer:sub_dim=4,bits=3", 64, VQ_ROLE_KEY, &st, &len);
    vq_codec *c;
    c = make("vecinfer:sub_dim=4,bits=3", 32, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_ERR_FORMAT && strstr(vq_codec_error(c), "head_dim"));
    vq_codec_free(c);
    c = make("vecinfer:sub_dim=4,bits=3", 64, VQ_ROLE_VALUE);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_ERR_FORMAT);
    vq_codec_free(c);
    c = make("vecinfer:sub_dim=4,bits=4", 64, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_ERR_FORMAT && strstr(vq_codec_error(c), "bits=3"));
    vq_codec_free(c);
    c = make("spectral:bits=3", 64, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_ERR_FORMAT);
    vq_codec_free(c);
    c = make("kivi", 64, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_ERR_UNSUPPORTED);
    vq_codec_free(c);
    vq_codec_free(a);
    free(st);
}

/* qbits= chooses the queries' arithmetic, not the state: a state written
 * by vecinfer:bits=8 loads into vecinfer:bits=8,qbits=8 and back (the same
 * codes), and so does a file written before session 51, whose identity
 * kept qbits=8 (the header's spec rewritten, the CRC fixed); another bits=
 * is still refused */
static void test_identity_qbits(void)
{
    uint8_t *st, *st8;
    size_t len, len8;
    vq_codec *a = calibrated("vecinfer:sub_dim=8,bits=8", 64, VQ_ROLE_KEY, &st, &len);
    vq_codec *b = calibrated("vecinfer:sub_dim=8,bits=8,qbits=8", 64, VQ_ROLE_KEY, &st8, &len8);
    CHECK(len == len8 && memcmp(st, st8, len) == 0); /* the same samples, the same state bytes */
    vq_codec *c = make("vecinfer:sub_dim=8,bits=8,qbits=8", 64, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, st, len) == VQ_OK);
    if (a && c) { /* the same codes (their queries differ in kind) */
        float *x = samples(64, 32, 5);
        const size_t bytes = 32 * vq_codec_block_bytes(a);
        uint8_t *ca = malloc(bytes), *cc = malloc(bytes);
        CHECK(vq_codec_encode(a, x, 32, ca) == VQ_OK && vq_codec_encode(c, x, 32, cc) == VQ_OK &&
              memcmp(ca, cc, bytes) == 0);
        free(x), free(ca), free(cc);
    }
    vq_codec_free(c);
    /* a file whose identity says qbits=8 (as written before session 51) */
    const char *old = "vecinfer:sub_dim=8,bits=8,qbits=8";
    const size_t L = vq_get_u32(st + 20), Lo = strlen(old), lo = len - L + Lo;
    uint8_t *f = malloc(lo);
    memcpy(f, st, 24);
    vq_put_u32(f + 20, (uint32_t)Lo);
    memcpy(f + 24, old, Lo);
    memcpy(f + 24 + Lo, st + 24 + L, len - 24 - L);
    fix_crc(f, lo);
    c = make("vecinfer:sub_dim=8,bits=8", 64, VQ_ROLE_KEY);
    CHECKF(c && vq_codec_state_read(c, f, lo) == VQ_OK, "old identity: %s", c ? vq_codec_error(c) : "");
    CHECK(c && same_encoding(a, c, 64));
    vq_codec_free(c);
    c = make("vecinfer:sub_dim=8,bits=7", 64, VQ_ROLE_KEY);
    CHECK(c && vq_codec_state_read(c, f, lo) == VQ_ERR_FORMAT);
    vq_codec_free(c);
    free(f), free(st), free(st8);
    vq_codec_free(a), vq_codec_free(b);
}

/* Valid header and CRC, hostile payload: the method's parser must check
 * every field. Targeted fields, then random mutations (any status is fine,
 * but no crash, and an accepted state must encode/decode/score safely). */
static void test_hostile_payload(void)
{
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        const int D = 32;
        uint8_t *st;
        size_t len;
        vq_codec *a = calibrated(specs[s], D, VQ_ROLE_KEY, &st, &len);
        vq_codec *b = make(specs[s], D, VQ_ROLE_KEY);
        if (!a || !b || !st) {
            vq_codec_free(a); vq_codec_free(b); free(st);
            continue;
        }
        size_t po = payload_off(st);
        uint8_t *m = malloc(len);
        const uint32_t vals[] = { 0, 1, 2, 31, 33, 64, 0x7fffffffu, 0xffffffffu };
        int accepted = 0;
        /* the u32 header fields: vecinfer D, sub_dim, bits, smoothing (then a
         * free u64 rotation seed); spectral D, bits, signal_bits, slots, d_sig */
        const size_t nfields = strncmp(specs[s], "vecinfer", 8) == 0 ? 4 : 5;
        for (size_t f = 0; f < nfields; f++)
            for (size_t v = 0; v < sizeof vals / sizeof *vals; v++) {
                memcpy(m, st, len);
                if (vq_get_u32(m + po + 4 * f) == vals[v])
                    continue;
                vq_put_u32(m + po + 4 * f, vals[v]);
                fix_crc(m, len);
                if (vq_codec_state_read(b, m, len) == VQ_OK)
                    accepted++;
            }
        /* spectral's field 4 is d_sig: some values are legitimately valid */
        if (strncmp(specs[s], "vecinfer", 8) == 0)
            CHECKF(accepted == 0, "%s: %d bad header fields accepted", specs[s], accepted);
        /* NaN in the first and last float of the payload */
        for (int end = 0; end < 2; end++) {
            memcpy(m, st, len);
            size_t off = end ? len - 8 : po + 24;
            vq_put_f32(m + off, NAN);
            fix_crc(m, len);
            CHECKF(vq_codec_state_read(b, m, len) == VQ_ERR_FORMAT, "%s: NaN at %zu accepted", specs[s], off);
        }
        /* random mutations of 1-4 payload bytes */
        vq_rng r;
        vq_rng_seed(&r, 1 + s);
        float x[32 * 4], y[32 * 4];
        uint8_t codes[4 * 64];
        for (int i = 0; i < 32 * 4; i++)
            x[i] = vq_rng_normal(&r) * 10;
        int trials = vq_test_quick() ? 200 : 1000;
        for (int t = 0; t < trials; t++) {
            memcpy(m, st, len);
            int k = 1 + (int)(vq_rng_next(&r) % 4);
            for (int j = 0; j < k; j++)
                m[po + vq_rng_next(&r) % (len - 4 - po)] = (uint8_t)vq_rng_next(&r);
            fix_crc(m, len);
            if (vq_codec_state_read(b, m, len) == VQ_OK) {
                CHECK(vq_codec_block_bytes(b) <= 64);
                CHECK_OK(vq_codec_encode(b, x, 4, codes));
                CHECK_OK(vq_codec_decode(b, codes, 4, y));
            }
        }
        free(m);
        vq_codec_free(a);
        vq_codec_free(b);
        free(st);
    }
}

static void test_calib_file(void)
{
    const int D = 128;
    uint8_t *st;
    size_t len;
    vq_codec *a = calibrated("vecinfer:sub_dim=8,bits=8", D, VQ_ROLE_KEY, &st, &len);
    if (!a || !st) {
        vq_codec_free(a); free(st);
        return;
    }
    char path[512], spec[700];
    snprintf(path, sizeof path, "%s/vecinfer.vqc", vq_test_tmpdir());
    CHECK_OK(vq_file_write_buffer(path, st, len, NULL));
    /* calib= last, and also first: the identity check strips it either way */
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=8,calib=%s", path);
    vq_codec *b = make(spec, D, VQ_ROLE_KEY);
    CHECK(b && vq_codec_is_ready(b));
    CHECK(b && strcmp(vq_codec_spec(b), "vecinfer:sub_dim=8,bits=8") == 0);
    if (b)
        CHECK(same_encoding(a, b, D));
    vq_codec_free(b);
    snprintf(spec, sizeof spec, "vecinfer:calib=%s", path);
    b = make(spec, D, VQ_ROLE_KEY);
    CHECK(b && vq_codec_is_ready(b));
    vq_codec_free(b);
    /* a file for other parameters, a missing file, a method without state */
    vq_codec *c = (vq_codec *)1;
    snprintf(spec, sizeof spec, "vecinfer:sub_dim=8,bits=7,calib=%s", path);
    CHECK(vq_codec_create(spec, D, VQ_ROLE_KEY, 77, &c) == VQ_ERR_FORMAT && c == NULL);
    snprintf(spec, sizeof spec, "vecinfer:calib=%s.missing", path);
    CHECK(vq_codec_create(spec, D, VQ_ROLE_KEY, 77, &c) == VQ_ERR_IO && c == NULL);
    snprintf(spec, sizeof spec, "kivi:calib=%s", path);
    CHECK(vq_codec_create(spec, D, VQ_ROLE_KEY, 77, &c) == VQ_ERR_INVALID_ARG && c == NULL);
    /* spectral through a file too */
    vq_codec_free(a);
    free(st);
    a = calibrated("spectral:bits=2,signal_bits=3,signal=8", D, VQ_ROLE_VALUE, &st, &len);
    if (a && st) {
        snprintf(path, sizeof path, "%s/spectral.vqc", vq_test_tmpdir());
        CHECK_OK(vq_file_write_buffer(path, st, len, NULL));
        snprintf(spec, sizeof spec, "spectral:bits=2,signal_bits=3,signal=8,calib=%s", path);
        b = make(spec, D, VQ_ROLE_VALUE);
        CHECK(b && vq_codec_is_ready(b) && same_encoding(a, b, D));
        vq_codec_free(b);
    }
    vq_codec_free(a);
    free(st);
}

int main(void)
{
    RUN(test_roundtrip);
    RUN(test_corruption);
    RUN(test_mismatch);
    RUN(test_identity_qbits);
    RUN(test_hostile_payload);
    RUN(test_calib_file);
    return vq_test_summary("codec_calib");
}
