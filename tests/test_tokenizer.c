/* test_tokenizer.c -- tokenizers from GGUF metadata.
 *
 *  - llama.cpp's tokenizer test vectors (../shared/data/tokenizer/NAME.gguf
 *    with .inp/.out), under the conventions of llama.cpp's
 *    test-tokenizer-0: inputs separated by "\n__ggml_vocab_test__\n", no
 *    BOS (add_special = false), special tokens not parsed; every vector
 *    must match exactly.
 *  - Pre-tokenizer splits of literal strings, the GPT-2 byte map, UTF-8.
 *  - Hand-built vocabularies (tiny GGUFs written in memory) pinning the
 *    SPM and BPE merge orders, byte fallback, special tokens, BOS.
 *  - The default models: decode(encode(x)) == x on WikiText, special
 *    tokens, chat templates, hostile input, speed.
 *  - Malformed vocabulary metadata -> VQ_ERR_FORMAT naming the key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "gguf_writer.h"
#include "model/gguf.h"
#include "tok/tok_pretok.h"
#include "tok/tok_unicode.h"
#include "model/tok_gguf.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static vq_tokenizer *load_tok(const char *path, vq_gguf **gout)
{
    vq_gguf *g = NULL;
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_gguf_open(path, &g, err);
    CHECKF(st == VQ_OK, "open %s: %s", path, err);
    if (st != VQ_OK)
        return NULL;
    vq_tokenizer *t = NULL;
    st = vq_tokenizer_from_gguf(g, &t, err);
    CHECKF(st == VQ_OK, "tokenizer %s: %s", path, err);
    if (gout)
        *gout = g;
    else
        vq_gguf_close(g);
    return t;
}

/* A tokenizer from a GGUF built in memory (the buffer must outlive g only
 * during loading: the tokenizer copies what it needs). */
static vq_status tok_from_writer(vq_gw *w, vq_tokenizer **t, char *err)
{
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    vq_gw_free(w);
    vq_gguf *g = NULL;
    vq_status st = vq_gguf_open_memory(buf, len, &g, err);
    if (st == VQ_OK) {
        st = vq_tokenizer_from_gguf(g, t, err);
        vq_gguf_close(g);
    }
    free(buf);
    return st;
}

static size_t encode(const vq_tokenizer *t, const char *s, size_t len, int bos, int special,
                     int32_t *out, size_t cap)
{
    int32_t *ids = NULL;
    size_t n = 0;
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_tokenizer_encode(t, s, len, bos, special, &ids, &n, err);
    CHECKF(st == VQ_OK, "encode: %s", err);
    for (size_t i = 0; i < n && i < cap; i++)
        out[i] = ids[i];
    free(ids);
    return n;
}

static int32_t id_of(const vq_tokenizer *t, const char *s)
{
    int32_t out[4];
    size_t n = encode(t, s, strlen(s), 0, 1, out, 4);
    return n == 1 ? out[0] : -1;
}

/* ---- the llama.cpp test vectors ------------------------------------------ */

static void run_vectors(const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizer/%s", name);
    const char *path = vq_test_data(rel);
    if (!path)
        return;
    char p_inp[600], p_out[600];
    snprintf(p_inp, sizeof p_inp, "%s.inp", path);
    snprintf(p_out, sizeof p_out, "%s.out", path);
    size_t n_inp, n_out;
    char *inp = read_all(p_inp, &n_inp), *out = read_all(p_out, &n_out);
    CHECKF(inp && out, "%s: .inp/.out unreadable", name);
    vq_tokenizer *t = load_tok(path, NULL);
    if (!inp || !out || !t) {
        free(inp);
        free(out);
        vq_tokenizer_free(t);
        return;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t pos = 0, opos = 0, n_cases = 0, n_ok = 0;
    while (pos < n_inp) {
        const char *next = strstr(inp + pos, sep);
        size_t len = next ? (size_t)(next - (inp + pos)) : n_inp - pos;
        /* expected ids: one line of .out */
        char *eol = strchr(out + opos, '\n');
        size_t olen = eol ? (size_t)(eol - (out + opos)) : n_out - opos;
        int32_t want[1024];
        size_t n_want = 0;
        char *q = out + opos, *end = out + opos + olen;
        while (q < end) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q)
                break;
            if (n_want < 1024)
                want[n_want++] = (int32_t)v;
            q = e;
        }
        int32_t got[1024];
        size_t n_got = encode(t, inp + pos, len, 0, 0, got, 1024);
        int ok = n_got == n_want;
        for (size_t i = 0; ok && i < n_got; i++)
            ok = got[i] == want[i];
        n_cases++;
        n_ok += ok;
        if (!ok) {
            fprintf(stderr, "%s case %zu '%.*s':\n  want", name, n_cases, (int)len, inp + pos);
            for (size_t i = 0; i < n_want; i++)
                fprintf(stderr, " %d", want[i]);
            fprintf(stderr, "\n  got ");
            for (size_t i = 0; i < n_got && i < 1024; i++)
                fprintf(stderr, " %d", got[i]);
            fprintf(stderr, "\n");
        }
        opos += olen + (eol ? 1 : 0);
        if (!next)
            break;
        pos = (size_t)(next - inp) + sizeof sep - 1;
    }
    printf("%s: %zu/%zu vectors match\n", name, n_ok, n_cases);
    CHECKF(n_cases >= 40, "%s: only %zu cases parsed", name, n_cases);
    CHECKF(n_ok == n_cases, "%s: %zu of %zu vectors differ", name, n_cases - n_ok, n_cases);
    vq_tokenizer_free(t);
    free(inp);
    free(out);
}

static void test_vectors_llama_spm(void) { run_vectors("ggml-vocab-llama-spm.gguf"); }
static void test_vectors_phi3(void) { run_vectors("ggml-vocab-phi-3.gguf"); }
static void test_vectors_gpt2(void) { run_vectors("ggml-vocab-gpt-2.gguf"); }

/* ---- pre-tokenizers, byte map, UTF-8 ------------------------------------- */

/* Split s and compare with the pieces in want (NULL-terminated). */
static void check_split(vq_pretok_kind k, const char *s, const char *const *want)
{
    vq_pretok_ws ws;
    memset(&ws, 0, sizeof ws);
    const size_t *ends;
    size_t n;
    char err[VQ_ERRLEN] = "";
    CHECK_OK(vq_pretok_split(k, s, strlen(s), &ws, &ends, &n, err));
    size_t n_want = 0;
    while (want[n_want])
        n_want++;
    int ok = n == n_want;
    size_t b = 0;
    for (size_t i = 0; ok && i < n; i++) {
        ok = ends[i] - b == strlen(want[i]) && memcmp(s + b, want[i], ends[i] - b) == 0;
        b = ends[i];
    }
    if (!ok) {
        fprintf(stderr, "%s split of '%s':", vq_pretok_kind_name(k), s);
        b = 0;
        for (size_t i = 0; i < n; i++) {
            fprintf(stderr, " [%.*s]", (int)(ends[i] - b), s + b);
            b = ends[i];
        }
        fprintf(stderr, "\n");
    }
    CHECKF(ok, "%s split of '%s' differs", vq_pretok_kind_name(k), s);
    vq_pretok_ws_free(&ws);
}

static void test_pretok_splits(void)
{
    /* expected pieces worked out by hand from the regexes in tok_pretok.h */
    const char *s1 = "Hello world's  test 123\n\nabc";
    check_split(VQ_PRETOK_GPT2, s1,
                (const char *[]){ "Hello", " world", "'s", " ", " test", " 123", "\n", "\n",
                                  "abc", NULL });
    check_split(VQ_PRETOK_LLAMA3, s1,
                (const char *[]){ "Hello", " world", "'s", " ", " test", " ", "123", "\n\n",
                                  "abc", NULL });
    check_split(VQ_PRETOK_LLAMA3, "12345", (const char *[]){ "123", "45", NULL });
    check_split(VQ_PRETOK_QWEN2, "12345", (const char *[]){ "1", "2", "3", "4", "5", NULL });
    /* contractions: case-insensitive in llama3, not in gpt2 */
    check_split(VQ_PRETOK_LLAMA3, "IT'S", (const char *[]){ "IT", "'S", NULL });
    check_split(VQ_PRETOK_GPT2, "IT'S", (const char *[]){ "IT", "'", "S", NULL });
    check_split(VQ_PRETOK_LLAMA3, "a.\r\nb", (const char *[]){ "a", ".\r\n", "b", NULL });
    check_split(VQ_PRETOK_SMOLLM, "abc123 x45",
                (const char *[]){ "abc", "1", "2", "3", " x", "4", "5", NULL });
    check_split(VQ_PRETOK_DEFAULT, "Hi!! 1234567 ok",
                (const char *[]){ "Hi", "!!", " ", "123", "456", "7", " ok", NULL });
    /* non-ASCII letters, whitespace, and an invalid byte (class "other") */
    check_split(VQ_PRETOK_GPT2, "na\xc3\xafve caf\xc3\xa9",
                (const char *[]){ "na\xc3\xafve", " caf\xc3\xa9", NULL });
    check_split(VQ_PRETOK_GPT2, "a\xe3\x80\x80" "b", (const char *[]){ "a", "\xe3\x80\x80", "b", NULL });
    check_split(VQ_PRETOK_GPT2, "ab\xff" "cd", (const char *[]){ "ab", "\xff", "cd", NULL });
    check_split(VQ_PRETOK_GPT2, "   ", (const char *[]){ "   ", NULL });
    check_split(VQ_PRETOK_GPT2, "", (const char *[]){ NULL });

    vq_pretok_kind k;
    CHECK(vq_pretok_from_name("smollm", 6, &k) && k == VQ_PRETOK_SMOLLM);
    CHECK(vq_pretok_from_name("llama-bpe", 9, &k) && k == VQ_PRETOK_LLAMA3);
    CHECK(!vq_pretok_from_name("nonsense", 8, &k));
}

static void test_byte_map_and_utf8(void)
{
    int seen[512] = { 0 }, bad = 0;
    for (int b = 0; b < 256; b++) {
        uint32_t cp = vq_tok_byte_to_cp((uint8_t)b);
        if (cp >= 512 || seen[cp]++ || vq_tok_cp_to_byte(cp) != b)
            bad++;
    }
    CHECKF(bad == 0, "%d bytes do not map one-to-one", bad);
    CHECK(vq_tok_byte_to_cp(' ') == 0x120);  /* 'Ġ' */
    CHECK(vq_tok_byte_to_cp('\n') == 0x10A); /* 'Ċ' */
    CHECK(vq_tok_byte_to_cp('A') == 'A');
    CHECK(vq_tok_cp_to_byte(0x20) == -1);

    uint32_t cp;
    CHECK(vq_tok_utf8_next("\xc3\xa9", 2, &cp) == 2 && cp == 0xE9);
    CHECK(vq_tok_utf8_next("\xf0\x9f\xa6\x99", 4, &cp) == 4 && cp == 0x1F999);
    CHECK(vq_tok_utf8_next("\xc0\xaf", 2, &cp) == 1 && cp == VQ_TOK_CP_INVALID); /* overlong */
    CHECK(vq_tok_utf8_next("\xed\xa0\x80", 3, &cp) == 1 && cp == VQ_TOK_CP_INVALID); /* surrogate */
    CHECK(vq_tok_utf8_next("\xe2\x82", 2, &cp) == 1 && cp == VQ_TOK_CP_INVALID); /* truncated */
    CHECK(vq_tok_utf8_next("\x80", 1, &cp) == 1 && cp == VQ_TOK_CP_INVALID);
    CHECK(vq_tok_cp_class('a') == VQ_TOK_CP_LETTER && vq_tok_cp_class(0x4E2D) == VQ_TOK_CP_LETTER);
    CHECK(vq_tok_cp_class('7') == VQ_TOK_CP_NUMBER && vq_tok_cp_class(0x0663) == VQ_TOK_CP_NUMBER);
    CHECK(vq_tok_cp_class(0x3000) == VQ_TOK_CP_SPACE && vq_tok_cp_class('!') == VQ_TOK_CP_PUNCT);
    CHECK(vq_tok_cp_class(0x1F600) == VQ_TOK_CP_OTHER && vq_tok_cp_class(0x0301) == VQ_TOK_CP_OTHER);
}

/* ---- hand-built vocabularies ---------------------------------------------- */

/* SPM: <unk> <s> </s>, the 256 byte tokens, then pieces with scores. */
static vq_gw *spm_vocab(const char *const *pieces, const float *scores, size_t n, int prefix)
{
    size_t total = 3 + 256 + n;
    const char **toks = malloc(total * sizeof *toks);
    char(*bytes)[8] = malloc(256 * sizeof *bytes);
    float *sc = calloc(total, sizeof *sc);
    int32_t *ty = malloc(total * sizeof *ty);
    toks[0] = "<unk>", toks[1] = "<s>", toks[2] = "</s>";
    ty[0] = 2, ty[1] = 3, ty[2] = 3;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], 8, "<0x%02X>", b);
        toks[3 + b] = bytes[b];
        ty[3 + b] = 6;
    }
    for (size_t i = 0; i < n; i++) {
        toks[259 + i] = pieces[i];
        sc[259 + i] = scores[i];
        ty[259 + i] = pieces[i][0] == '<' && pieces[i][1] == '|' ? 3
                      : pieces[i][0] == '<'                      ? 4
                                                                 : 1;
    }
    vq_gw *w = vq_gw_begin(3);
    vq_gw_add_str(w, "general.architecture", "llama");
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", total, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.scores", VQ_GGUF_FLOAT32, total, sc);
    vq_gw_add_arr(w, "tokenizer.ggml.token_type", VQ_GGUF_INT32, total, ty);
    vq_gw_add_bool(w, "tokenizer.ggml.add_space_prefix", prefix);
    vq_gw_add_bool(w, "tokenizer.ggml.add_bos_token", 1);
    free(toks);
    free(bytes);
    free(sc);
    free(ty);
    return w;
}

static void check_ids(const vq_tokenizer *t, const char *s, int bos, int special,
                      const char *const *want_pieces)
{
    int32_t got[64];
    size_t n = encode(t, s, strlen(s), bos, special, got, 64);
    size_t n_want = 0;
    while (want_pieces[n_want])
        n_want++;
    int ok = n == n_want;
    for (size_t i = 0; ok && i < n; i++) {
        char piece[64];
        size_t k = vq_tokenizer_piece(t, got[i], 1, piece, sizeof piece - 1);
        piece[k < sizeof piece - 1 ? k : sizeof piece - 1] = 0;
        ok = strcmp(piece, want_pieces[i]) == 0;
    }
    if (!ok) {
        fprintf(stderr, "encode '%s':", s);
        for (size_t i = 0; i < n && i < 64; i++) {
            char piece[64];
            size_t k = vq_tokenizer_piece(t, got[i], 1, piece, sizeof piece - 1);
            fprintf(stderr, " %d[%.*s]", got[i], (int)(k < 63 ? k : 63), piece);
        }
        fprintf(stderr, "\n");
    }
    CHECKF(ok, "encode '%s' gives other pieces", s);
}

static void test_spm_tiny(void)
{
    static const char *const p[] = { "a", "b", "c", "ab", "bc", "abc", "\xe2\x96\x81",
                                     "\342\226\201a" /* U+2581 then a */, "<|x|>", "<u>" };
    static const float s1[] = { -5, -5, -5, -1, -0.5f, -3, -5, -4, 0, 0 };
    char err[VQ_ERRLEN] = "";
    vq_tokenizer *t = NULL;
    CHECK_OK(tok_from_writer(spm_vocab(p, s1, 10, 0), &t, err));
    if (!t)
        return;
    /* bc (-0.5) beats ab (-1); then a+bc = abc exists (-3) */
    check_ids(t, "abc", 0, 0, (const char *[]){ "abc", NULL });
    check_ids(t, "ab", 0, 0, (const char *[]){ "ab", NULL });
    check_ids(t, "cab", 0, 0, (const char *[]){ "c", "ab", NULL });
    /* byte fallback for characters missing from the vocabulary */
    int32_t ids[8];
    size_t n = encode(t, "a\xc3\xa9", 3, 0, 0, ids, 8);
    CHECK(n == 3 && ids[1] == 3 + 0xC3 && ids[2] == 3 + 0xA9);
    /* spaces become U+2581; no prefix since add_space_prefix = false */
    check_ids(t, "a a", 0, 0, (const char *[]){ "a", " a", NULL });
    /* BOS (add_bos_token = true) only when asked */
    n = encode(t, "a", 1, 1, 0, ids, 8);
    CHECK(n == 2 && ids[0] == 1);
    /* special tokens: control <|x|> only with parse_special, user-defined <u> always */
    n = encode(t, "a<|x|>b", 7, 0, 1, ids, 8);
    CHECK(n == 3 && ids[1] == 259 + 8);
    n = encode(t, "a<|x|>b", 7, 0, 0, ids, 8);
    int has_x = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        has_x |= ids[i] == 259 + 8;
    CHECK(n > 3 && !has_x);
    n = encode(t, "a<u>b", 5, 0, 0, ids, 8);
    CHECK(n == 3 && ids[1] == 259 + 9);
    /* control tokens render as "" unless asked */
    char buf[16];
    CHECK(vq_tokenizer_piece(t, 259 + 8, 0, buf, sizeof buf) == 0);
    CHECK(vq_tokenizer_piece(t, 259 + 8, 1, buf, sizeof buf) == 5 && memcmp(buf, "<|x|>", 5) == 0);
    vq_tokenizer_free(t);

    /* add_space_prefix: the text and every fragment after a special token
     * gets a leading U+2581; decode removes the first one */
    CHECK_OK(tok_from_writer(spm_vocab(p, s1, 10, 1), &t, err));
    if (!t)
        return;
    check_ids(t, "a", 0, 0, (const char *[]){ " a", NULL });
    check_ids(t, "a<|x|>a", 0, 1, (const char *[]){ " a", "<|x|>", " a", NULL });
    int32_t *all;
    size_t na;
    CHECK_OK(vq_tokenizer_encode(t, "abc a", 5, 1, 0, &all, &na, err));
    char *text;
    size_t len;
    CHECK_OK(vq_tokenizer_decode(t, all, na, 0, &text, &len, err));
    CHECK(len == 5 && strcmp(text, "abc a") == 0);
    free(all);
    free(text);
    vq_tokenizer_free(t);
}

/* BPE over byte-level chars: a b c, Ġ (space), merges in the given order. */
static vq_gw *bpe_vocab(const char *const *merges, size_t n_merges, const char *pre)
{
    static const char *const toks[] = { "<|end|>", "a", "b", "c", "\xc4\xa0", "ab", "bc", "abc",
                                        "\304\240a" /* U+0120 then a */, "<u>" };
    static const int32_t ty[] = { 3, 1, 1, 1, 1, 1, 1, 1, 1, 4 };
    vq_gw *w = vq_gw_begin(3);
    vq_gw_add_str(w, "general.architecture", "llama");
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_str(w, "tokenizer.ggml.pre", pre);
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 10, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.token_type", VQ_GGUF_INT32, 10, ty);
    vq_gw_add_arr_str(w, "tokenizer.ggml.merges", n_merges, merges);
    vq_gw_add_u32(w, "tokenizer.ggml.eos_token_id", 0);
    return w;
}

static void test_bpe_tiny(void)
{
    char err[VQ_ERRLEN] = "";
    vq_tokenizer *t = NULL;
    /* b+c first, then a+bc */
    static const char *const m1[] = { "b c", "a b", "a bc", "\xc4\xa0 a" };
    CHECK_OK(tok_from_writer(bpe_vocab(m1, 4, "gpt-2"), &t, err));
    if (!t)
        return;
    check_ids(t, "abc", 0, 0, (const char *[]){ "abc", NULL });
    check_ids(t, "abab", 0, 0, (const char *[]){ "ab", "ab", NULL });
    /* " abc": b+c (rank 0), then a+bc (rank 2) before Ġ+a (rank 3) */
    check_ids(t, "a abc", 0, 0, (const char *[]){ "a", " ", "abc", NULL });
    check_ids(t, "a ab", 0, 0, (const char *[]){ "a", " ", "ab", NULL });
    check_ids(t, "a a", 0, 0, (const char *[]){ "a", " a", NULL });
    check_ids(t, "c<|end|>", 0, 1, (const char *[]){ "c", "<|end|>", NULL });
    check_ids(t, "c<u>a", 0, 0, (const char *[]){ "c", "<u>", "a", NULL });
    CHECK(vq_tokenizer_is_eog(t, 0) && !vq_tokenizer_is_eog(t, 1));
    /* no BOS token declared: add_bos adds nothing */
    int32_t ids[8];
    CHECK(encode(t, "a", 1, 1, 0, ids, 8) == 1);
    vq_tokenizer_free(t);

    /* a+b first: "abc" stays ab + c (there is no "ab c" merge) */
    static const char *const m2[] = { "a b", "b c" };
    CHECK_OK(tok_from_writer(bpe_vocab(m2, 2, "gpt-2"), &t, err));
    if (!t)
        return;
    check_ids(t, "abc", 0, 0, (const char *[]){ "ab", "c", NULL });
    vq_tokenizer_free(t);

    /* llama3 ignores merges for a piece that is a whole token */
    static const char *const m3[] = { "a b", "b c" };
    CHECK_OK(tok_from_writer(bpe_vocab(m3, 2, "llama-bpe"), &t, err));
    if (!t)
        return;
    check_ids(t, "abc", 0, 0, (const char *[]){ "abc", NULL });
    vq_tokenizer_free(t);
}

/* ---- malformed metadata ---------------------------------------------------- */

static void expect_load_error(vq_gw *w, vq_status want, const char *needle, const char *what)
{
    char err[VQ_ERRLEN] = "";
    vq_tokenizer *t = NULL;
    vq_status st = tok_from_writer(w, &t, err);
    CHECKF(st == want, "%s: got %s (%s)", what, vq_status_str(st), err);
    CHECKF(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
    CHECK(t == NULL);
    vq_tokenizer_free(t);
}

static void test_malformed_metadata(void)
{
    static const char *const toks[] = { "<unk>", "<s>", "</s>", "a", "b", "ab" };
    static const float sc6[] = { 0, 0, 0, -1, -1, -0.5f };
    static const int32_t ty6[] = { 2, 3, 3, 1, 1, 1 };
    vq_gw *w;

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.tokens", "tokens missing");

    w = vq_gw_begin(3);
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.model", "model missing");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "bert");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    expect_load_error(w, VQ_ERR_UNSUPPORTED, "bert", "model bert");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr(w, "tokenizer.ggml.tokens", VQ_GGUF_UINT32, 6, ty6);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.tokens", "tokens not strings");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.scores", VQ_GGUF_FLOAT32, 5, sc6);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.scores", "scores count");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.scores", VQ_GGUF_INT32, 6, ty6);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.scores", "scores type");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.token_type", VQ_GGUF_INT32, 4, ty6);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.token_type", "token_type count");

    static const int32_t ty_bad[] = { 2, 3, 3, 1, 9, 1 };
    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr(w, "tokenizer.ggml.token_type", VQ_GGUF_INT32, 6, ty_bad);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.token_type[4]", "token_type value");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_u32(w, "tokenizer.ggml.bos_token_id", 6);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.bos_token_id", "bos out of range");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "llama");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_str(w, "tokenizer.ggml.eos_token_id", "2");
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.eos_token_id", "eos not integer");

    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.merges", "merges missing");

    static const char *const m_unknown[] = { "a b", "a zz" };
    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr_str(w, "tokenizer.ggml.merges", 2, m_unknown);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.merges[1]", "merge of unknown token");

    static const char *const m_result[] = { "b a" }; /* "ba" is not a token */
    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr_str(w, "tokenizer.ggml.merges", 1, m_result);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.merges[0]", "merge result unknown");

    static const char *const m_nospace[] = { "ab" };
    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr_str(w, "tokenizer.ggml.merges", 1, m_nospace);
    expect_load_error(w, VQ_ERR_FORMAT, "tokenizer.ggml.merges[0]", "merge without space");

    static const char *const m_ok[] = { "a b" };
    w = vq_gw_begin(3);
    vq_gw_add_str(w, "tokenizer.ggml.model", "gpt2");
    vq_gw_add_str(w, "tokenizer.ggml.pre", "no-such-pre");
    vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
    vq_gw_add_arr_str(w, "tokenizer.ggml.merges", 1, m_ok);
    expect_load_error(w, VQ_ERR_UNSUPPORTED, "tokenizer.ggml.pre", "unknown pre-tokenizer");

    /* NULL arguments */
    char err[VQ_ERRLEN];
    vq_tokenizer *t = NULL;
    CHECK(vq_tokenizer_from_gguf(NULL, &t, err) == VQ_ERR_INVALID_ARG);
    int32_t *ids;
    size_t n;
    CHECK(vq_tokenizer_encode(NULL, "a", 1, 0, 0, &ids, &n, err) == VQ_ERR_INVALID_ARG);
}

/* ---- the default models ---------------------------------------------------- */

typedef struct {
    const char *name;     /* models/NAME.gguf */
    const char *arch;
    const char *bos_text; /* BOS token text */
    int add_bos;          /* tokenizer.ggml.add_bos_token */
    const char *turn;     /* a control token of its chat template */
    const char *chat;     /* the exact chat string for the message "Hi there" */
    size_t n_unrepresentable; /* byte values missing from the vocabulary, counted
                                 with an independent GGUF reader (Python) */
} model_case;

static const model_case k_models[] = {
    { "smollm2-135m", "llama", "<|im_start|>", 0, "<|im_start|>",
      "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
      "Face<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n", 21 },
    { "gemma3-270m", "gemma3", "<bos>", 1, "<start_of_turn>",
      "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n", 0 },
};

/* The first n_lines lines of WikiText-2 test. */
static char *wikitext(size_t n_lines, size_t *len)
{
    const char *path = vq_test_data("wikitext-2-test.txt");
    size_t n;
    char *all = path ? read_all(path, &n) : NULL;
    if (!all)
        return NULL;
    size_t pos = 0;
    for (size_t l = 0; l < n_lines && pos < n; l++) {
        const char *nl = memchr(all + pos, '\n', n - pos);
        pos = nl ? (size_t)(nl - all) + 1 : n;
    }
    all[pos] = 0;
    *len = pos;
    return all;
}

/* Bytes the vocabulary cannot express at all (byte-level BPE vocabularies
 * may lack byte values that never occur in UTF-8 text): those for which
 * decode(encode(b)) != b. The tokenizer drops them, as llama.cpp does. */
static uint8_t g_drop[256];

static void find_unrepresentable(const vq_tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        char c = (char)b, *back = NULL;
        int32_t *ids = NULL;
        size_t n = 0, blen = 0;
        char err[VQ_ERRLEN];
        g_drop[b] = 1;
        if (vq_tokenizer_encode(t, &c, 1, 0, 0, &ids, &n, err) == VQ_OK &&
            vq_tokenizer_decode(t, ids, n, 0, &back, &blen, err) == VQ_OK)
            g_drop[b] = !(blen == 1 && back[0] == c);
        free(ids);
        free(back);
    }
}

/* decode(encode(text)) == text minus the g_drop bytes, no BOS, no special
 * parsing. Returns the token count. */
static size_t check_roundtrip(const vq_tokenizer *t, const char *text_in, size_t len_in,
                              const char *what)
{
    char *text = malloc(len_in + 1);
    size_t len = 0;
    for (size_t i = 0; i < len_in; i++)
        if (!g_drop[(unsigned char)text_in[i]])
            text[len++] = text_in[i];
    int32_t *ids = NULL;
    size_t n = 0;
    char err[VQ_ERRLEN] = "";
    vq_status st = vq_tokenizer_encode(t, text_in, len_in, 0, 0, &ids, &n, err);
    CHECKF(st == VQ_OK, "%s: encode: %s", what, err);
    char *back = NULL;
    size_t blen = 0;
    st = vq_tokenizer_decode(t, ids, n, 0, &back, &blen, err);
    CHECKF(st == VQ_OK, "%s: decode: %s", what, err);
    int same = back && blen == len && memcmp(back, text, len) == 0;
    if (!same && back) {
        size_t k = 0;
        while (k < len && k < blen && back[k] == text[k])
            k++;
        fprintf(stderr, "%s: first difference at byte %zu of %zu (decoded %zu): '%.20s' vs '%.20s'\n",
                what, k, len, blen, text + k, back + k);
    }
    CHECKF(same, "%s: decode(encode(text)) != text", what);
    free(text);
    free(ids);
    free(back);
    return n;
}

static void model_checks(const model_case *mc)
{
    const char *path = vq_test_model(mc->name);
    if (!path)
        return;
    double t0 = vq_now_seconds();
    vq_tokenizer *t = load_tok(path, NULL);
    if (!t)
        return;
    printf("%s: tokenizer loaded in %.3f s, %d tokens\n", mc->name, vq_now_seconds() - t0,
           (int)vq_tokenizer_n_vocab(t));
    char err[VQ_ERRLEN] = "";

    /* BOS per add_bos_token */
    int32_t ids[64];
    int32_t bos = vq_tokenizer_bos(t);
    CHECK(bos >= 0 && id_of(t, mc->bos_text) == bos);
    size_t n = encode(t, "Hello", 5, 1, 0, ids, 64);
    CHECKF((n > 0 && ids[0] == bos) == mc->add_bos, "%s: BOS added = %d, model says %d",
           mc->name, n > 0 && ids[0] == bos, mc->add_bos);
    CHECK(encode(t, "", 0, 1, 0, ids, 64) == (size_t)mc->add_bos);
    CHECK(encode(t, "", 0, 0, 0, ids, 64) == 0);

    /* a control token is one id with parse_special, plain text without */
    int32_t turn = id_of(t, mc->turn);
    CHECKF(turn >= 0, "%s: %s is not a single token", mc->name, mc->turn);
    n = encode(t, mc->turn, strlen(mc->turn), 0, 0, ids, 64);
    int found = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        found |= ids[i] == turn;
    CHECKF(n > 1 && !found, "%s: %s recognised without parse_special", mc->name, mc->turn);
    CHECK(vq_tokenizer_is_eog(t, vq_tokenizer_eos(t)));

    /* chat template: exact string, and it encodes with the turn tokens */
    char *chat = NULL;
    CHECK_OK(vq_tokenizer_chat(t, mc->arch, "Hi there", &chat, err));
    CHECKF(chat && strcmp(chat, mc->chat) == 0, "%s: chat string '%s'", mc->name,
           chat ? chat : "(null)");
    if (chat) {
        n = encode(t, chat, strlen(chat), 1, 1, ids, 64);
        size_t n_turn = 0;
        for (size_t i = 0; i < n && i < 64; i++)
            n_turn += ids[i] == turn;
        CHECKF(n_turn >= 2, "%s: chat encodes with %zu turn tokens", mc->name, n_turn);
    }
    free(chat);

    /* round trips: WikiText, hostile bytes, empty text */
    find_unrepresentable(t);
    size_t n_drop = 0;
    for (int b = 0; b < 256; b++)
        n_drop += g_drop[b];
    printf("%s: %zu byte values cannot be expressed by the vocabulary\n", mc->name, n_drop);
    CHECKF(n_drop == mc->n_unrepresentable, "%s: %zu unrepresentable bytes, expected %zu",
           mc->name, n_drop, mc->n_unrepresentable);
    for (int b = 0; b < 128; b++) /* printable ASCII, tab, newline, CR: always there */
        if ((b >= 0x20 && b < 0x7F) || b == '\t' || b == '\n' || b == '\r')
            CHECKF(!g_drop[b], "%s: byte %d cannot be expressed", mc->name, b);
    size_t lines = vq_test_quick() ? 40 : 200, len;
    char *wt = wikitext(lines, &len);
    if (wt) {
        double t1 = vq_now_seconds();
        size_t nt = check_roundtrip(t, wt, len, mc->name);
        double dt = vq_now_seconds() - t1;
        printf("%s: WikiText first %zu lines: %zu bytes -> %zu tokens, round trip in %.3f s\n",
               mc->name, lines, len, nt, dt);
        /* sanity of the compression: English BPE/SPM gives 3-6 bytes per token */
        CHECKF(nt * 3 < len && nt * 7 > len, "%s: %zu bytes gave %zu tokens", mc->name, len, nt);
    }
    free(wt);
    static const char hostile[] = "ok \xff\xfe bad \xc3 cut \xe2\x82 \xed\xa0\x80 sur \xf4\x90\x80\x80"
                                  " big \x80 cont \xc0\xaf over <|im_start|> <start_of_turn> \x01\x02\t\r\n";
    check_roundtrip(t, hostile, sizeof hostile - 1, "hostile bytes");
    char all_bytes[256];
    for (int b = 0; b < 256; b++)
        all_bytes[b] = (char)(255 - b);
    check_roundtrip(t, all_bytes, 256, "all 256 byte values");
    check_roundtrip(t, "", 0, "empty");

    /* speed: the WikiText slice the perplexity test uses (about 4096 tokens)
     * must tokenize well under a second; 1 MB texts near-linearly */
    wt = wikitext(vq_test_quick() ? 400 : 1000000, &len);
    if (wt) {
        size_t slice = len < 20000 ? len : 20000; /* ~4.5k tokens of WikiText */
        double t1 = vq_now_seconds();
        int32_t *all;
        size_t na;
        CHECK_OK(vq_tokenizer_encode(t, wt, slice, 1, 0, &all, &na, err));
        double dt = vq_now_seconds() - t1;
        free(all);
        printf("%s: %zu bytes -> %zu tokens in %.4f s\n", mc->name, slice, na, dt);
        /* speed is reported, not asserted: timed checks belong in bench/,
         * where a loaded machine cannot fail the build for nothing */

        size_t big = vq_test_quick() ? ((size_t)1 << 18) : ((size_t)1 << 20);
        if (big > len)
            big = len;
        t1 = vq_now_seconds();
        CHECK_OK(vq_tokenizer_encode(t, wt, big, 0, 0, &all, &na, err));
        double dt_big = vq_now_seconds() - t1;
        free(all);
        printf("%s: %zu bytes -> %zu tokens in %.3f s (%.2f MB/s)\n", mc->name, big, na, dt_big,
               (double)big / 1e6 / (dt_big > 0 ? dt_big : 1e-9));
        (void)dt;
    }
    free(wt);

    /* pathological texts: one long run of spaces, of newlines, of one letter,
     * and of random bytes; all must round-trip in bounded time */
    size_t big = vq_test_quick() ? ((size_t)1 << 16) : ((size_t)1 << 20);
    char *p = malloc(big);
    const char fills[] = { ' ', '\n', 'a' };
    for (int k = 0; k < 4; k++) {
        if (k < 3) {
            memset(p, fills[k], big);
        } else {
            uint64_t x = 88172645463325252ULL;
            for (size_t i = 0; i < big; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                p[i] = (char)(x >> 56);
            }
        }
        double t1 = vq_now_seconds();
        char what[64];
        snprintf(what, sizeof what, "%s: %zu bytes of fill %d", mc->name, big, k);
        size_t nt = check_roundtrip(t, p, big, what);
        double dt = vq_now_seconds() - t1;
        printf("%s -> %zu tokens, encode+decode %.3f s\n", what, nt, dt);
    }
    free(p);
    vq_tokenizer_free(t);
}

static void test_model_smollm2(void) { model_checks(&k_models[0]); }
static void test_model_gemma3(void) { model_checks(&k_models[1]); }

int main(void)
{
    RUN(test_vectors_llama_spm);
    RUN(test_vectors_phi3);
    RUN(test_vectors_gpt2);
    RUN(test_pretok_splits);
    RUN(test_byte_map_and_utf8);
    RUN(test_spm_tiny);
    RUN(test_bpe_tiny);
    RUN(test_malformed_metadata);
    RUN(test_model_smollm2);
    RUN(test_model_gemma3);
    return vq_test_summary("tokenizer");
}
