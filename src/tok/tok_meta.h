/* tok_meta.h -- where a tokenizer reads its vocabulary: typed key/values
 * in GGUF's model (tokenizer.ggml.tokens, .scores, .merges, ...) behind a
 * function table, so that src/tok/ depends on src/core/ only. The model
 * supplies one over its GGUF file (model/tok_gguf.c,
 * vq_tokenizer_from_gguf).
 *
 * Contract of the entries (each returns 1 on success, 0 when the key is
 * absent or has another type): get_i64 converts integers of any width and
 * sign that fit; get_arr gives the element type (VQ_TOK_T_*) and count,
 * and for numeric arrays a pointer to the packed little-endian elements;
 * get_arr_str gives string element i. Strings point into the source (not
 * NUL-terminated) and stay valid while the source does; the tokenizer
 * copies what it keeps. */
#ifndef VQ_TOK_META_H
#define VQ_TOK_META_H

#include <stdint.h>

/* array element types: GGUF's type numbers */
enum { VQ_TOK_T_UINT32 = 4, VQ_TOK_T_INT32 = 5, VQ_TOK_T_FLOAT32 = 6, VQ_TOK_T_STRING = 8 };

typedef struct {
    const char *ptr; /* not NUL-terminated */
    uint64_t len;
} vq_tok_str;

typedef struct vq_tok_meta {
    const void *ctx;
    int (*has)(const void *ctx, const char *key);
    int (*get_i64)(const void *ctx, const char *key, int64_t *out);
    int (*get_bool)(const void *ctx, const char *key, int *out);
    int (*get_str)(const void *ctx, const char *key, vq_tok_str *out);
    int (*get_arr)(const void *ctx, const char *key, uint32_t *type, uint64_t *n, const void **data);
    int (*get_arr_str)(const void *ctx, const char *key, uint64_t i, vq_tok_str *out);
} vq_tok_meta;

static inline int vq_tok_has(const vq_tok_meta *m, const char *key) { return m->has(m->ctx, key); }
static inline int vq_tok_get_i64(const vq_tok_meta *m, const char *key, int64_t *out)
{
    return m->get_i64(m->ctx, key, out);
}
static inline int vq_tok_get_bool(const vq_tok_meta *m, const char *key, int *out)
{
    return m->get_bool(m->ctx, key, out);
}
static inline int vq_tok_get_str(const vq_tok_meta *m, const char *key, vq_tok_str *out)
{
    return m->get_str(m->ctx, key, out);
}
static inline int vq_tok_get_arr(const vq_tok_meta *m, const char *key, uint32_t *type, uint64_t *n,
                                 const void **data)
{
    return m->get_arr(m->ctx, key, type, n, data);
}
static inline int vq_tok_get_arr_str(const vq_tok_meta *m, const char *key, uint64_t i, vq_tok_str *out)
{
    return m->get_arr_str(m->ctx, key, i, out);
}

#endif
