/* tok_gguf.c -- the GGUF reader behind the tokenizer's metadata table
 * (tok/tok_meta.h: same contract as gguf.h's key/value lookups). */
#include "model/tok_gguf.h"

#include "core/error.h"

static int has(const void *g, const char *key) { return vq_gguf_has(g, key); }
static int get_i64(const void *g, const char *key, int64_t *out) { return vq_gguf_get_i64(g, key, out); }
static int get_bool(const void *g, const char *key, int *out) { return vq_gguf_get_bool(g, key, out); }

static int get_str(const void *g, const char *key, vq_tok_str *out)
{
    vq_gguf_str s;
    if (!vq_gguf_get_str(g, key, &s))
        return 0;
    *out = (vq_tok_str){ s.ptr, s.len };
    return 1;
}

static int get_arr(const void *g, const char *key, uint32_t *type, uint64_t *n, const void **data)
{
    return vq_gguf_get_arr(g, key, type, n, data);
}

static int get_arr_str(const void *g, const char *key, uint64_t i, vq_tok_str *out)
{
    vq_gguf_str s;
    if (!vq_gguf_get_arr_str(g, key, i, &s))
        return 0;
    *out = (vq_tok_str){ s.ptr, s.len };
    return 1;
}

vq_status vq_tokenizer_from_gguf(const vq_gguf *g, vq_tokenizer **out, char *err)
{
    if (!g) {
        if (out)
            *out = NULL;
        return vq_fail(err, VQ_ERR_INVALID_ARG, "tokenizer: NULL gguf");
    }
    const vq_tok_meta m = { g, has, get_i64, get_bool, get_str, get_arr, get_arr_str };
    return vq_tokenizer_from_meta(&m, out, err);
}
