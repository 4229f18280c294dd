/* tok_spm.c -- SentencePiece-style encoding with scores and byte fallback
 * (the algorithm of llama.cpp's llm_tokenizer_spm, itself the BPE-with-
 * scores mode of SentencePiece): split the fragment into UTF-8 characters
 * (an invalid byte is a character of its own),
 * then repeatedly merge the adjacent pair whose concatenation is a vocabulary
 * token with the highest score (ties: the leftmost pair). Every final symbol
 * is its token, or, if the vocabulary lacks it (a single character only,
 * since merges only ever form tokens), one <0xNN> token per byte. */
#include "core/error.h"
#include "tok/tok_internal.h"
#include "tok/tok_unicode.h"

static void try_pair(const vq_tokenizer *t, vq_tok_work *w, const char *text, int32_t left,
                     int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const vq_tok_sym *l = &w->sym[left], *r = &w->sym[right];
    uint32_t size = l->n + r->n;
    int32_t id = vq_tok_lookup(t, text + l->start, size);
    if (id < 0)
        return;
    vq_tok_bigram b = { -(double)t->score[id], left, right, size, id };
    vq_tok_heap_push(w, b);
}

static vq_status emit_symbol(const vq_tokenizer *t, const char *s, size_t n, vq_tok_vec *out,
                             char *err)
{
    int32_t id = vq_tok_lookup(t, s, n);
    if (id >= 0)
        return vq_tok_vec_push(out, id, err);
    for (size_t i = 0; i < n; i++) {
        int32_t b = t->byte_tok[(unsigned char)s[i]];
        if (b < 0 && t->unk >= 0 && t->type[t->unk] == VQ_TOKT_UNKNOWN)
            b = t->unk; /* no byte token: <unk>; dropped if there is none */
        if (b >= 0)
            VQ_TRY(vq_tok_vec_push(out, b, err));
    }
    return VQ_OK;
}

vq_status vq_tok_spm_encode(const vq_tokenizer *t, vq_tok_work *w, const char *text, size_t len,
                            vq_tok_vec *out, char *err)
{
    if (len == 0)
        return VQ_OK;
    VQ_TRY(vq_tok_work_reserve(w, len, 0, err));
    int32_t n = 0;
    for (size_t off = 0; off < len; n++) {
        /* one character, or one byte where the UTF-8 is invalid (llama.cpp
         * goes by the lead byte alone and may swallow the next character's
         * bytes into a byte-fallback run; same result for valid UTF-8) */
        uint32_t cp;
        size_t k = vq_tok_utf8_next(text + off, len - off, &cp);
        vq_tok_sym *s = &w->sym[n];
        s->id = -1;
        s->start = off;
        s->n = (uint32_t)k;
        s->prev = n - 1;
        off += k;
        s->next = off < len ? n + 1 : -1;
    }
    for (int32_t i = 1; i < n; i++)
        try_pair(t, w, text, i - 1, i);
    while (w->heap_n > 0) {
        vq_tok_bigram b = vq_tok_heap_pop(w);
        vq_tok_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
        /* stale: one side was merged away or grew since the pair was queued */
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            w->sym[r->next].prev = b.left;
        try_pair(t, w, text, l->prev, b.left);
        try_pair(t, w, text, b.left, l->next);
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next)
        VQ_TRY(emit_symbol(t, text + w->sym[i].start, w->sym[i].n, out, err));
    return VQ_OK;
}
