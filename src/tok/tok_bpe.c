/* tok_bpe.c -- byte-level BPE (GPT-2 style, tokenizer.ggml.model "gpt2").
 *
 * Each pre-tokenizer piece is taken as bytes; byte b stands for the
 * vocabulary character vq_tok_byte_to_cp(b). Adjacent symbols merge in the
 * order of tokenizer.ggml.merges (lower index first; ties: the leftmost
 * pair), as in llama.cpp's llm_tokenizer_bpe and Hugging Face tokenizers.
 * With ignore_merges (llama3), a piece that is a whole token is emitted as
 * it is. Merges are stored by token ids: (left, right) -> (rank, merged). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/tok_internal.h"
#include "tok/tok_unicode.h"

/* Returns 1 if inserted, 0 if the pair was already present (first wins). */
static int pair_insert(vq_tok_pairmap *m, int32_t l, int32_t r, int32_t rank, int32_t res)
{
    uint64_t key = (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1;
    size_t i = (size_t)vq_tok_mix64(key) & m->mask;
    while (m->key[i]) {
        if (m->key[i] == key)
            return 0;
        i = (i + 1) & m->mask;
    }
    m->key[i] = key;
    m->rank[i] = rank;
    m->result[i] = res;
    return 1;
}

static int pair_find(const vq_tok_pairmap *m, int32_t l, int32_t r, int32_t *rank, int32_t *res)
{
    if (!m->key)
        return 0;
    uint64_t key = (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1;
    size_t i = (size_t)vq_tok_mix64(key) & m->mask;
    while (m->key[i]) {
        if (m->key[i] == key) {
            *rank = m->rank[i];
            *res = m->result[i];
            return 1;
        }
        i = (i + 1) & m->mask;
    }
    return 0;
}

vq_status vq_tok_bpe_load_merges(vq_tokenizer *t, const vq_tok_meta *g, char *err)
{
    const char *key = "tokenizer.ggml.merges";
    uint32_t type;
    uint64_t n;
    const void *data;
    if (!vq_tok_get_arr(g, key, &type, &n, &data))
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s missing (needed by model gpt2)", key);
    if (type != VQ_TOK_T_STRING)
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s has element type %u, not string", key,
                       type);
    if (n > (uint64_t)INT32_MAX)
        return vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s has %llu entries (too many)", key,
                       (unsigned long long)n);
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    vq_tok_pairmap *m = &t->merges;
    m->key = calloc(cap, sizeof *m->key);
    m->rank = malloc(cap * sizeof *m->rank);
    m->result = malloc(cap * sizeof *m->result);
    m->mask = cap - 1;
    if (!m->key || !m->rank || !m->result)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for %llu merges",
                       (unsigned long long)n);
    char *buf = NULL;
    size_t buf_cap = 0;
    vq_status st = VQ_OK;
    for (uint64_t i = 0; i < n && st == VQ_OK; i++) {
        vq_tok_str s;
        if (!vq_tok_get_arr_str(g, key, i, &s)) {
            st = vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s[%llu] unreadable", key,
                         (unsigned long long)i);
            break;
        }
        /* "left right": split at the first space after the first byte */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (!sp) {
            st = vq_fail(err, VQ_ERR_FORMAT, "tokenizer: %s[%llu] '%.*s' is not 'left right'",
                         key, (unsigned long long)i, (int)(s.len > 40 ? 40 : s.len), s.ptr);
            break;
        }
        size_t ll = (size_t)(sp - s.ptr), rl = (size_t)s.len - ll - 1;
        int32_t l = vq_tok_lookup(t, s.ptr, ll), r = vq_tok_lookup(t, sp + 1, rl);
        if (ll + rl > buf_cap) {
            char *nb = realloc(buf, ll + rl);
            if (!nb) {
                st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
                break;
            }
            buf = nb;
            buf_cap = ll + rl;
        }
        memcpy(buf, s.ptr, ll);
        memcpy(buf + ll, sp + 1, rl);
        int32_t res = vq_tok_lookup(t, buf, ll + rl);
        if (l < 0 || r < 0 || res < 0) {
            const char *what = l < 0 ? s.ptr : r < 0 ? sp + 1 : buf;
            size_t wl = l < 0 ? ll : r < 0 ? rl : ll + rl;
            st = vq_fail(err, VQ_ERR_FORMAT,
                         "tokenizer: %s[%llu] refers to '%.*s', which is not in "
                         "tokenizer.ggml.tokens",
                         key, (unsigned long long)i, (int)(wl > 40 ? 40 : wl), what);
            break;
        }
        pair_insert(m, l, r, (int32_t)i, res);
    }
    free(buf);
    return st;
}

static void try_pair(const vq_tokenizer *t, vq_tok_work *w, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const vq_tok_sym *l = &w->sym[left], *r = &w->sym[right];
    int32_t rank, res;
    if (l->id < 0 || r->id < 0 || !pair_find(&t->merges, l->id, r->id, &rank, &res))
        return;
    vq_tok_bigram b = { (double)rank, left, right, l->n + r->n, res };
    vq_tok_heap_push(w, b);
}

static vq_status push_or_unk(const vq_tokenizer *t, int32_t id, vq_tok_vec *out, char *err)
{
    /* a byte the vocabulary cannot express (SmolLM2 lacks 21 of the 256):
     * <unk> if the model has a real one, else dropped, as llama.cpp does */
    if (id < 0 && t->unk >= 0 && t->type[t->unk] == VQ_TOKT_UNKNOWN)
        id = t->unk;
    return id >= 0 ? vq_tok_vec_push(out, id, err) : VQ_OK;
}

static vq_status encode_piece(const vq_tokenizer *t, vq_tok_work *w, const unsigned char *p,
                              size_t len, vq_tok_vec *out, char *err)
{
    VQ_TRY(vq_tok_work_reserve(w, len, 2 * len, err));
    if (t->ignore_merges) {
        size_t m = 0;
        for (size_t i = 0; i < len; i++)
            m += vq_tok_utf8_put(vq_tok_byte_to_cp(p[i]), w->buf + m);
        int32_t id = vq_tok_lookup(t, w->buf, m);
        if (id >= 0)
            return vq_tok_vec_push(out, id, err);
    }
    int32_t n = (int32_t)len;
    for (int32_t i = 0; i < n; i++) {
        vq_tok_sym *s = &w->sym[i];
        s->id = t->byte_tok[p[i]];
        s->start = (size_t)i;
        s->n = 1;
        s->prev = i - 1;
        s->next = i + 1 < n ? i + 1 : -1;
    }
    for (int32_t i = 1; i < n; i++)
        try_pair(t, w, i - 1, i);
    while (w->heap_n > 0) {
        vq_tok_bigram b = vq_tok_heap_pop(w);
        vq_tok_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue; /* stale */
        l->n += r->n;
        l->id = b.result;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            w->sym[r->next].prev = b.left;
        try_pair(t, w, l->prev, b.left);
        try_pair(t, w, b.left, l->next);
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next)
        VQ_TRY(push_or_unk(t, w->sym[i].id, out, err));
    return VQ_OK;
}

vq_status vq_tok_bpe_encode(const vq_tokenizer *t, vq_tok_work *w, const char *text, size_t len,
                            vq_tok_vec *out, char *err)
{
    const size_t *ends;
    size_t n;
    VQ_TRY(vq_pretok_split(t->pre, text, len, &w->pre, &ends, &n, err));
    size_t b = 0;
    for (size_t i = 0; i < n; i++) {
        VQ_TRY(encode_piece(t, w, (const unsigned char *)text + b, ends[i] - b, out, err));
        b = ends[i];
    }
    return VQ_OK;
}
