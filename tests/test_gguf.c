/* test_gguf.c -- the GGUF reader: round trips through the test writer,
 * malformed files (truncated at every byte, bad magic/version, huge counts,
 * bad tensors...) that must give VQ_ERR_FORMAT with a message and never
 * crash, random mutations, the fuzz corpus replayed, and the real model and
 * vocabulary files.
 *
 * VQ_GGUF_WRITE_CORPUS=DIR additionally writes the seed files of the fuzz
 * corpus (tests/fuzz/corpus/gguf/) into DIR. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "gguf_writer.h"
#include "model/gguf.h"
#include "model/quants.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------- */

/* Open a copy of exactly len bytes (so ASan sees any overread). */
static vq_status open_copy(const uint8_t *buf, size_t len, vq_gguf **g, char *err)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, buf, len);
    vq_status st = vq_gguf_open_memory(copy, len, g, err);
    if (st == VQ_OK) {
        /* touch everything the accessors expose, then close */
        for (uint64_t i = 0; i < vq_gguf_n_tensors(*g); i++) {
            const vq_gguf_tensor *t = vq_gguf_tensor_at(*g, i);
            if (t->nbytes) {
                volatile uint8_t x = ((const uint8_t *)t->data)[0];
                x = ((const uint8_t *)t->data)[t->nbytes - 1];
                (void)x;
            }
        }
        vq_gguf_close(*g);
        *g = NULL;
    }
    free(copy);
    return st;
}

/* Expect VQ_ERR_FORMAT with a message containing `needle`. */
static void expect_format(vq_gw *w, const char *needle, const char *what)
{
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    vq_gguf *g = NULL;
    char err[VQ_ERRLEN] = "";
    vq_status st = open_copy(buf, len, &g, err);
    CHECKF(st == VQ_ERR_FORMAT, "%s: got %s (%s)", what, vq_status_str(st), err);
    CHECKF(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
    CHECKF(strcmp(err, vq_last_error()) == 0, "%s: thread message differs", what);
    if (getenv("VQ_GGUF_SHOW_ERRORS"))
        printf("%-32s -> %s\n", what, err);
    free(buf);
    vq_gw_free(w);
}

static const char *const small_tokens[] = { "<unk>", "<s>", "</s>", "hello", "", "w\xc3\xb6rld" };
#define N_SMALL_TOKENS (sizeof small_tokens / sizeof *small_tokens)

/* A small valid file with every value type and several tensor types. */
static vq_gw *small_file(uint32_t version)
{
    vq_gw *w = vq_gw_begin(version);
    vq_gw_add_str(w, "general.architecture", "llama");
    vq_gw_add_u8(w, "t.u8", 200);
    vq_gw_add_i8(w, "t.i8", -100);
    vq_gw_add_u16(w, "t.u16", 60000);
    vq_gw_add_i16(w, "t.i16", -30000);
    vq_gw_add_u32(w, "llama.context_length", 4096);
    vq_gw_add_i32(w, "t.i32", -7);
    vq_gw_add_u64(w, "t.u64", (uint64_t)1 << 40);
    vq_gw_add_i64(w, "t.i64", -((int64_t)1 << 40));
    vq_gw_add_f32(w, "t.f32", 1.5f);
    vq_gw_add_f64(w, "t.f64", 0.25);
    vq_gw_add_bool(w, "t.bool", 1);
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", N_SMALL_TOKENS, small_tokens);
    float scores[4] = { 0.5f, -1.0f, 2.0f, 3.0f };
    vq_gw_add_arr(w, "tokenizer.ggml.scores", VQ_GGUF_FLOAT32, 4, scores);
    int32_t empty = 0;
    vq_gw_add_arr(w, "t.empty", VQ_GGUF_INT32, 0, &empty);
    float f[2 * 8];
    for (int i = 0; i < 16; i++)
        f[i] = (float)i;
    uint64_t ne1[2] = { 8, 2 };
    vq_gw_add_tensor(w, "a.weight", 2, ne1, VQ_W_F32, f);
    uint8_t q[3 * 144];
    for (size_t i = 0; i < sizeof q; i++)
        q[i] = (uint8_t)(i * 7);
    uint64_t ne2[1] = { 768 };
    vq_gw_add_tensor(w, "b.weight", 1, ne2, VQ_W_Q4_K, q);
    uint64_t ne3[3] = { 32, 1, 2 };
    uint8_t q8[2 * 34] = { 0 };
    vq_gw_add_tensor(w, "c.weight", 3, ne3, VQ_W_Q8_0, q8);
    return w;
}

/* ---- round trip ------------------------------------------------------------- */

static void check_small(const vq_gguf *g)
{
    uint32_t u32;
    int64_t i64;
    float f;
    int b;
    vq_gguf_str s;
    CHECK(vq_gguf_get_str(g, "general.architecture", &s) && s.len == 5 &&
          memcmp(s.ptr, "llama", 5) == 0);
    CHECK(vq_gguf_get_u32(g, "t.u8", &u32) && u32 == 200);
    CHECK(vq_gguf_get_i64(g, "t.i8", &i64) && i64 == -100);
    CHECK(!vq_gguf_get_u32(g, "t.i8", &u32)); /* negative does not fit */
    CHECK(vq_gguf_get_u32(g, "t.u16", &u32) && u32 == 60000);
    CHECK(vq_gguf_get_i64(g, "t.i16", &i64) && i64 == -30000);
    CHECK(vq_gguf_get_u32(g, "llama.context_length", &u32) && u32 == 4096);
    CHECK(vq_gguf_get_i64(g, "t.i32", &i64) && i64 == -7);
    CHECK(!vq_gguf_get_u32(g, "t.u64", &u32)); /* 2^40 does not fit */
    CHECK(vq_gguf_get_i64(g, "t.u64", &i64) && i64 == (int64_t)1 << 40);
    CHECK(vq_gguf_get_i64(g, "t.i64", &i64) && i64 == -((int64_t)1 << 40));
    CHECK(vq_gguf_get_f32(g, "t.f32", &f) && f == 1.5f);
    CHECK(vq_gguf_get_f32(g, "t.f64", &f) && f == 0.25f);
    CHECK(!vq_gguf_get_f32(g, "t.u8", &f));
    CHECK(vq_gguf_get_bool(g, "t.bool", &b) && b == 1);
    CHECK(!vq_gguf_get_str(g, "t.bool", &s));
    CHECK(!vq_gguf_has(g, "missing") && vq_gguf_has(g, "t.bool"));
    CHECK(!vq_gguf_has(g, "t.boo") && !vq_gguf_has(g, "t.bool2"));
    uint32_t at;
    uint64_t n;
    const void *data;
    CHECK(vq_gguf_get_arr(g, "tokenizer.ggml.tokens", &at, &n, NULL) && at == VQ_GGUF_STRING &&
          n == N_SMALL_TOKENS);
    for (uint64_t i = 0; i < N_SMALL_TOKENS; i++) {
        CHECK(vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s));
        CHECK(s.len == strlen(small_tokens[i]) && memcmp(s.ptr, small_tokens[i], s.len) == 0);
    }
    CHECK(!vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", N_SMALL_TOKENS, &s));
    CHECK(!vq_gguf_get_arr_str(g, "tokenizer.ggml.scores", 0, &s));
    CHECK(vq_gguf_get_arr(g, "tokenizer.ggml.scores", &at, &n, &data) &&
          at == VQ_GGUF_FLOAT32 && n == 4);
    float sc[4];
    memcpy(sc, data, sizeof sc);
    CHECK(sc[0] == 0.5f && sc[3] == 3.0f);
    CHECK(vq_gguf_get_arr(g, "t.empty", &at, &n, &data) && n == 0);
    CHECK(vq_gguf_n_kv(g) == 15);
    vq_gguf_str k0 = vq_gguf_kv_key(g, 0);
    CHECK(k0.len == 20 && memcmp(k0.ptr, "general.architecture", 20) == 0);
    CHECK(vq_gguf_kv_key(g, 15).ptr == NULL);
    uint32_t ty, aty;
    CHECK(vq_gguf_kv_type(g, 12, &ty, &aty, &n) && ty == VQ_GGUF_ARRAY && aty == VQ_GGUF_STRING);

    CHECK(vq_gguf_n_tensors(g) == 3);
    const vq_gguf_tensor *a = vq_gguf_find_tensor(g, "a.weight");
    const vq_gguf_tensor *bt = vq_gguf_find_tensor(g, "b.weight");
    const vq_gguf_tensor *c = vq_gguf_find_tensor(g, "c.weight");
    CHECK(a && bt && c && !vq_gguf_find_tensor(g, "a.weigh"));
    if (!a || !bt || !c)
        return;
    CHECK(a->n_dims == 2 && a->ne[0] == 8 && a->ne[1] == 2 && a->type == VQ_W_F32 &&
          a->nbytes == 64);
    float f2[16];
    memcpy(f2, a->data, sizeof f2);
    CHECK(f2[0] == 0.0f && f2[15] == 15.0f);
    CHECK(bt->nbytes == 3 * 144 && ((const uint8_t *)bt->data)[1] == 7);
    CHECK(c->n_dims == 3 && c->ne[2] == 2 && c->ne[3] == 1 && c->nbytes == 68);
    CHECK(((uintptr_t)a->data - (uintptr_t)a->data % 1) % 1 == 0);
    CHECK(vq_gguf_alignment(g) == 32 && vq_gguf_data_offset(g) % 32 == 0);
    CHECK(a->offset % 32 == 0 && bt->offset % 32 == 0 && c->offset % 32 == 0);
    CHECK(vq_gguf_tensor_at(g, 3) == NULL);
}

static void test_roundtrip(void)
{
    for (uint32_t v = 2; v <= 3; v++) {
        vq_gw *w = small_file(v);
        uint8_t *buf;
        size_t len;
        vq_gw_finish(w, &buf, &len);
        vq_gguf *g = NULL;
        CHECK_OK(vq_gguf_open_memory(buf, len, &g, NULL));
        if (g) {
            CHECK(vq_gguf_version(g) == v);
            check_small(g);
            vq_gguf_close(g);
        }
        /* through a file and mmap too */
        char path[512];
        snprintf(path, sizeof path, "%s/small.gguf", vq_test_tmpdir());
        CHECK(vq_gw_write_file(w, path) == 0);
        CHECK_OK(vq_gguf_open(path, &g, NULL));
        if (g) {
            check_small(g);
            vq_gguf_close(g);
        }
        free(buf);
        vq_gw_free(w);
    }
    /* custom alignment */
    vq_gw *w = vq_gw_begin(3);
    vq_gw_add_u32(w, "general.alignment", 256);
    float x[4] = { 1, 2, 3, 4 };
    uint64_t ne[1] = { 4 };
    vq_gw_add_tensor(w, "x", 1, ne, VQ_W_F32, x);
    vq_gw_add_tensor(w, "y", 1, ne, VQ_W_F32, x);
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    vq_gguf *g = NULL;
    CHECK_OK(vq_gguf_open_memory(buf, len, &g, NULL));
    if (g) {
        CHECK(vq_gguf_alignment(g) == 256 && vq_gguf_data_offset(g) % 256 == 0);
        CHECK(vq_gguf_find_tensor(g, "y")->offset == 256);
        vq_gguf_close(g);
    }
    free(buf);
    vq_gw_free(w);
    CHECK(vq_gguf_open("/nonexistent/x.gguf", &g, NULL) == VQ_ERR_IO);
    CHECK(strstr(vq_last_error(), "/nonexistent/x.gguf") != NULL);
    CHECK(vq_gguf_open_memory(NULL, 0, NULL, NULL) == VQ_ERR_INVALID_ARG);
    vq_gguf_close(NULL);
}

/* ---- malformed files ------------------------------------------------------------ */

static void test_truncated_everywhere(void)
{
    vq_gw *w = small_file(3);
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    int bad = 0, no_msg = 0;
    for (size_t cut = 0; cut < len; cut++) {
        vq_gguf *g = NULL;
        char err[VQ_ERRLEN] = "";
        vq_status st = open_copy(buf, cut, &g, err);
        if (st != VQ_ERR_FORMAT)
            bad++;
        if (!err[0])
            no_msg++;
    }
    CHECKF(bad == 0, "%d of %zu truncations not refused with VQ_ERR_FORMAT", bad, len);
    CHECKF(no_msg == 0, "%d truncations without a message", no_msg);
    free(buf);
    vq_gw_free(w);
}

static void test_bad_headers(void)
{
    uint8_t *buf;
    size_t len;
    vq_gw *w = small_file(3);
    vq_gw_finish(w, &buf, &len);
    vq_gw_free(w);
    vq_gguf *g = NULL;
    char err[VQ_ERRLEN];

    buf[0] = 'X';
    CHECK(open_copy(buf, len, &g, err) == VQ_ERR_FORMAT && strstr(err, "magic"));
    buf[0] = 'G';
    uint32_t v = 1;
    memcpy(buf + 4, &v, 4);
    CHECK(open_copy(buf, len, &g, err) == VQ_ERR_FORMAT && strstr(err, "version 1"));
    v = 4;
    memcpy(buf + 4, &v, 4);
    CHECK(open_copy(buf, len, &g, err) == VQ_ERR_FORMAT && strstr(err, "version 4"));
    v = 0x03000000u;
    memcpy(buf + 4, &v, 4);
    CHECK(open_copy(buf, len, &g, err) == VQ_ERR_FORMAT && strstr(err, "big-endian"));
    free(buf);

    w = small_file(3);
    vq_gw_set_counts(w, UINT64_MAX, (uint64_t)1 << 60);
    expect_format(w, "key/value count", "kv count 2^60");
    w = small_file(3);
    vq_gw_set_counts(w, (uint64_t)1 << 62, UINT64_MAX);
    expect_format(w, "tensor count", "tensor count 2^62");
    w = small_file(3);
    vq_gw_set_counts(w, UINT64_MAX, 16); /* one kv more than present: parses infos as a kv */
    expect_format(w, "tensor 0 name", "kv count one too many"); /* infos parsed as a key */
    w = small_file(3);
    vq_gw_set_counts(w, 4, UINT64_MAX); /* one tensor more than present */
    expect_format(w, "tensor 3", "tensor count one too many");
}

static void test_bad_values(void)
{
    vq_gw *w;
    /* string length 2^63 in a value */
    w = vq_gw_begin(3);
    uint64_t huge = (uint64_t)1 << 63;
    vq_gw_add_kv_raw(w, "k.str", VQ_GGUF_STRING, &huge, 8);
    expect_format(w, "length", "string length 2^63");
    /* key length 2^63: a raw kv whose "key" we cannot express, so forge it
     * via a value: key string follows the header directly */
    {
        uint8_t f[24 + 8 + 8];
        memcpy(f, "GGUF", 4);
        uint32_t ver = 3;
        memcpy(f + 4, &ver, 4);
        uint64_t nt = 0, nk = 1;
        memcpy(f + 8, &nt, 8);
        memcpy(f + 16, &nk, 8);
        memcpy(f + 24, &huge, 8);
        memset(f + 32, 'a', 8);
        vq_gguf *g = NULL;
        char err[VQ_ERRLEN] = "";
        /* 1 kv needs >= 13 bytes and 16 are left, so the count passes and the key fails */
        CHECK(open_copy(f, sizeof f, &g, err) == VQ_ERR_FORMAT && strstr(err, "key 0"));
    }
    /* unknown value type */
    w = vq_gw_begin(3);
    uint32_t pay = 0;
    vq_gw_add_kv_raw(w, "k.weird", 13, &pay, 4);
    expect_format(w, "k.weird", "unknown value type");
    /* arrays: huge counts, nested, unknown element type */
    struct {
        uint32_t type;
        uint64_t n;
    } __attribute__((packed)) ah;
    ah.type = VQ_GGUF_UINT32;
    ah.n = (uint64_t)1 << 62;
    w = vq_gw_begin(3);
    vq_gw_add_kv_raw(w, "k.arr", VQ_GGUF_ARRAY, &ah, sizeof ah);
    expect_format(w, "k.arr", "array count 2^62");
    ah.type = VQ_GGUF_STRING;
    ah.n = UINT64_MAX;
    w = vq_gw_begin(3);
    vq_gw_add_kv_raw(w, "k.sarr", VQ_GGUF_ARRAY, &ah, sizeof ah);
    expect_format(w, "k.sarr", "string array count 2^64-1");
    ah.type = VQ_GGUF_ARRAY;
    ah.n = 1;
    w = vq_gw_begin(3);
    vq_gw_add_kv_raw(w, "k.nest", VQ_GGUF_ARRAY, &ah, sizeof ah);
    expect_format(w, "arrays of arrays", "nested array");
    ah.type = 99;
    ah.n = 1;
    w = vq_gw_begin(3);
    vq_gw_add_kv_raw(w, "k.unk", VQ_GGUF_ARRAY, &ah, sizeof ah);
    expect_format(w, "element type 99", "array of unknown type");
    /* a string inside a string array too long */
    {
        uint8_t p[4 + 8 + 8 + 2];
        uint32_t st = VQ_GGUF_STRING;
        uint64_t n = 1, l = 1000;
        memcpy(p, &st, 4);
        memcpy(p + 4, &n, 8);
        memcpy(p + 12, &l, 8);
        p[20] = p[21] = 'x';
        w = vq_gw_begin(3);
        vq_gw_add_kv_raw(w, "k.s", VQ_GGUF_ARRAY, p, sizeof p);
        expect_format(w, "string 0", "string element too long");
    }
    /* duplicate key */
    w = vq_gw_begin(3);
    vq_gw_add_u32(w, "k.dup", 1);
    vq_gw_add_u32(w, "k.dup", 2);
    expect_format(w, "duplicate key 'k.dup'", "duplicate key");
    /* empty key */
    w = vq_gw_begin(3);
    vq_gw_add_u32(w, "", 1);
    expect_format(w, "empty", "empty key");
    /* alignment */
    w = vq_gw_begin(3);
    vq_gw_add_u32(w, "general.alignment", 48);
    expect_format(w, "alignment 48", "alignment not a power of two");
    w = vq_gw_begin(3);
    vq_gw_add_u32(w, "general.alignment", 0);
    expect_format(w, "alignment 0", "alignment 0");
    w = vq_gw_begin(3);
    vq_gw_add_u64(w, "general.alignment", 32);
    expect_format(w, "not UINT32", "alignment of type u64");
}

static void test_bad_tensors(void)
{
    vq_gw *w;
    uint64_t ne[5] = { 32, 2, 1, 1, 1 };
    uint8_t data[4096] = { 0 };

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "ok", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor_raw(w, "outside", 1, ne, VQ_W_F32, 1 << 20);
    expect_format(w, "'outside'", "tensor offset outside the file");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "ok", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor_raw(w, "past_end", 1, ne, VQ_W_F32, UINT64_MAX - 31);
    expect_format(w, "'past_end'", "tensor offset near 2^64");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "ok", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor_raw(w, "tail", 2, ne, VQ_W_F32, 128); /* 256 bytes from 128: past 256 */
    expect_format(w, "'tail'", "tensor data crossing the end");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "ok", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor_raw(w, "mis", 1, ne, VQ_W_F32, 4);
    expect_format(w, "'mis': offset 4 is not a multiple", "misaligned offset");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "ok", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor_raw(w, "lap", 1, ne, VQ_W_F32, 64);
    expect_format(w, "overlap", "overlapping tensors");

    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.unk", 1, ne, 77, 0);
    expect_format(w, "'t.unk': unknown type 77", "unknown tensor type");
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.gap", 1, ne, 4, 0); /* removed Q4_2 */
    expect_format(w, "unknown type 4", "removed tensor type");

    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.dims0", 0, ne, VQ_W_F32, 0);
    expect_format(w, "n_dims 0", "n_dims 0");
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.dims5", 5, ne, VQ_W_F32, 0);
    expect_format(w, "n_dims 5", "n_dims 5");

    uint64_t big[4] = { (uint64_t)1 << 40, (uint64_t)1 << 40, 1, 1 };
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.big", 2, big, VQ_W_F32, 0);
    expect_format(w, "overflow", "ne product overflow");
    uint64_t zero[2] = { 32, 0 };
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.zero", 2, zero, VQ_W_F32, 0);
    expect_format(w, "ne[1] = 0", "ne zero");
    uint64_t neg[1] = { UINT64_MAX };
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.neg", 1, neg, VQ_W_F32, 0);
    expect_format(w, "ne[0]", "ne = -1 as int64");
    uint64_t odd[1] = { 100 };
    w = vq_gw_begin(3);
    vq_gw_add_tensor_raw(w, "t.odd", 1, odd, VQ_W_Q4_0, 0);
    expect_format(w, "not a multiple of the Q4_0 block", "row not a block multiple");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "twin", 2, ne, VQ_W_F32, data);
    vq_gw_add_tensor(w, "twin", 2, ne, VQ_W_F32, data);
    expect_format(w, "duplicate tensor name 'twin'", "duplicate tensor");

    w = vq_gw_begin(3);
    vq_gw_add_tensor(w, "", 2, ne, VQ_W_F32, data);
    expect_format(w, "empty name", "empty tensor name");

    /* a known-but-unsupported type (IQ2_XXS) is accepted and sized */
    w = vq_gw_begin(3);
    uint64_t ne256[1] = { 256 };
    vq_gw_add_tensor(w, "iq", 1, ne256, 16, data);
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    vq_gguf *g = NULL;
    CHECK_OK(vq_gguf_open_memory(buf, len, &g, NULL));
    if (g) {
        const vq_gguf_tensor *t = vq_gguf_find_tensor(g, "iq");
        CHECK(t && t->nbytes == 66 && !vq_wtype_supported(t->type));
        vq_gguf_close(g);
    }
    free(buf);
    vq_gw_free(w);
}

/* Random byte mutations of a valid file: any status is fine, a crash or a
 * sanitizer report is not. Also checks that every refusal has a message. */
static void test_random_mutations(void)
{
    vq_gw *w = small_file(3);
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    vq_gw_free(w);
    uint8_t *m = malloc(len);
    vq_rng r;
    vq_rng_seed(&r, 1234);
    int iters = vq_test_quick() ? 500 : 5000, no_msg = 0, ok = 0;
    for (int it = 0; it < iters; it++) {
        memcpy(m, buf, len);
        int flips = 1 + (int)((uint32_t)vq_rng_next(&r) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (uint32_t)vq_rng_next(&r) % len;
            uint32_t kind = (uint32_t)vq_rng_next(&r) % 3;
            m[at] = kind == 0 ? (uint8_t)(uint32_t)vq_rng_next(&r) : kind == 1 ? 0xff : (uint8_t)(m[at] ^ 0x80);
        }
        size_t cut = ((uint32_t)vq_rng_next(&r) % 4 == 0) ? (uint32_t)vq_rng_next(&r) % (len + 1) : len;
        vq_gguf *g = NULL;
        char err[VQ_ERRLEN] = "";
        vq_status st = open_copy(m, cut, &g, err);
        if (st == VQ_OK)
            ok++;
        else if (!err[0])
            no_msg++;
    }
    CHECKF(no_msg == 0, "%d refusals without a message", no_msg);
    printf("mutations: %d of %d still valid\n", ok, iters);
    free(m);
    free(buf);
}

/* ---- fuzz corpus ------------------------------------------------------------ */

static void write_corpus(const char *dir)
{
    char path[512];
    uint8_t *buf;
    size_t len;
    for (uint32_t v = 2; v <= 3; v++) {
        vq_gw *w = small_file(v);
        snprintf(path, sizeof path, "%s/small-v%u.gguf", dir, v);
        vq_gw_write_file(w, path);
        vq_gw_free(w);
    }
    vq_gw *w = vq_gw_begin(3);
    vq_gw_add_u32(w, "general.alignment", 64);
    const char *toks[] = { "a", "bb", "ccc" };
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 3, toks);
    uint8_t q[2 * 210] = { 1, 2, 3 };
    uint64_t ne[2] = { 256, 2 };
    vq_gw_add_tensor(w, "q6", 2, ne, VQ_W_Q6_K, q);
    snprintf(path, sizeof path, "%s/align64-q6k.gguf", dir);
    vq_gw_write_file(w, path);
    vq_gw_free(w);
    w = vq_gw_begin(3);
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    vq_gw_write_file(w, path);
    vq_gw_free(w);
    /* a truncated one */
    w = small_file(3);
    vq_gw_finish(w, &buf, &len);
    vq_gw_free(w);
    snprintf(path, sizeof path, "%s/truncated.gguf", dir);
    vq_file_write_buffer(path, buf, len / 2, NULL);
    free(buf);
}

static void test_corpus_replay(void)
{
    const char *dir = "tests/fuzz/corpus/gguf";
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "corpus directory %s missing", dir);
    if (!d)
        return;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (vq_file_read_all(path, 1 << 24, &buf, &len, NULL) != VQ_OK)
            continue;
        vq_gguf *g = NULL;
        char err[VQ_ERRLEN] = "";
        vq_status st = open_copy(buf, len, &g, err);
        CHECKF(st == VQ_OK || err[0], "%s refused without a message", path);
        free(buf);
        n++;
    }
    closedir(d);
    CHECKF(n >= 5, "only %d corpus files", n);
    printf("corpus: replayed %d files\n", n);
}

/* Opens a real file and prints a one-line summary plus a per-type count. */
static void check_real_file(const char *path, int expect_tensors)
{
    if (!path)
        return;
    vq_gguf *g = NULL;
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_gguf_open(path, &g, err);
    CHECKF(st == VQ_OK, "%s: %s", path, err);
    if (st != VQ_OK)
        return;
    vq_gguf_str arch = { "", 0 };
    vq_gguf_get_str(g, "general.architecture", &arch);
    uint64_t n_tok = 0;
    uint32_t at = 0;
    CHECK(vq_gguf_get_arr(g, "tokenizer.ggml.tokens", &at, &n_tok, NULL));
    CHECK(at == VQ_GGUF_STRING && n_tok > 1000);
    vq_gguf_str t0, tl;
    CHECK(vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 0, &t0));
    CHECK(vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", n_tok - 1, &tl));
    CHECK(!vq_gguf_get_arr_str(g, "tokenizer.ggml.tokens", n_tok, &tl));
    printf("%s: v%u, %llu kv, %llu tensors, arch '%.*s', %llu tokens, data at %llu\n", path,
           vq_gguf_version(g), (unsigned long long)vq_gguf_n_kv(g),
           (unsigned long long)vq_gguf_n_tensors(g), (int)arch.len, arch.ptr,
           (unsigned long long)n_tok, (unsigned long long)vq_gguf_data_offset(g));
    if (expect_tensors) {
        CHECK(vq_gguf_n_tensors(g) > 10);
        uint64_t count[64] = { 0 }, bytes[64] = { 0 };
        for (uint64_t i = 0; i < vq_gguf_n_tensors(g); i++) {
            const vq_gguf_tensor *t = vq_gguf_tensor_at(g, i);
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            CHECK(vq_gguf_find_tensor(g, name) == t);
            if (t->type < 64) {
                count[t->type]++;
                bytes[t->type] += t->nbytes;
            }
        }
        for (int ty = 0; ty < 64; ty++)
            if (count[ty])
                printf("    %-6s %4llu tensors %10llu bytes%s\n", vq_wtype_name((uint32_t)ty),
                       (unsigned long long)count[ty], (unsigned long long)bytes[ty],
                       vq_wtype_supported((uint32_t)ty) ? "" : " (unsupported)");
        uint32_t ctx = 0;
        char key[128];
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr);
        CHECKF(vq_gguf_get_u32(g, key, &ctx) && ctx > 0, "%s missing", key);
    }
    vq_gguf_close(g);
}

static void test_real_files(void)
{
    check_real_file(vq_test_model("smollm2-135m"), 1);
    check_real_file(vq_test_model("gemma3-270m"), 1);
    const char *vocabs[] = { "tokenizer/ggml-vocab-gpt-2.gguf", "tokenizer/ggml-vocab-llama-spm.gguf",
                             "tokenizer/ggml-vocab-phi-3.gguf" };
    for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++)
        check_real_file(vq_test_data(vocabs[i]), 0);
}

int main(void)
{
    const char *cdir = getenv("VQ_GGUF_WRITE_CORPUS");
    if (cdir)
        write_corpus(cdir);
    RUN(test_roundtrip);
    RUN(test_truncated_everywhere);
    RUN(test_bad_headers);
    RUN(test_bad_values);
    RUN(test_bad_tensors);
    RUN(test_random_mutations);
    RUN(test_corpus_replay);
    RUN(test_real_files);
    return vq_test_summary("gguf");
}
