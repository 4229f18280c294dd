/* tok_work.c -- scratch buffers and the bigram heap shared by the SPM and
 * BPE merge loops. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/tok_internal.h"

void vq_tok_work_free(vq_tok_work *w)
{
    if (!w)
        return;
    free(w->sym);
    free(w->heap);
    free(w->buf);
    vq_pretok_ws_free(&w->pre);
    memset(w, 0, sizeof *w);
}

vq_status vq_tok_work_reserve(vq_tok_work *w, size_t n, size_t nbuf, char *err)
{
    if (n > ((size_t)-1) / (3 * sizeof(vq_tok_bigram)) || n > INT32_MAX)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: fragment of %zu symbols too large", n);
    if (n > w->sym_cap) {
        vq_tok_sym *s = realloc(w->sym, n * sizeof *s);
        if (!s)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory (%zu symbols)", n);
        w->sym = s;
        w->sym_cap = n;
    }
    if (3 * n > w->heap_cap) {
        vq_tok_bigram *h = realloc(w->heap, 3 * n * sizeof *h);
        if (!h)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory (%zu pairs)", 3 * n);
        w->heap = h;
        w->heap_cap = 3 * n;
    }
    if (nbuf > w->buf_cap) {
        char *b = realloc(w->buf, nbuf);
        if (!b)
            return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory (%zu bytes)", nbuf);
        w->buf = b;
        w->buf_cap = nbuf;
    }
    w->heap_n = 0;
    return VQ_OK;
}

static int before(const vq_tok_bigram *a, const vq_tok_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

void vq_tok_heap_push(vq_tok_work *w, vq_tok_bigram b)
{
    /* capacity is guaranteed by vq_tok_work_reserve (see its bound) */
    size_t i = w->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &w->heap[parent]))
            break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = b;
}

vq_tok_bigram vq_tok_heap_pop(vq_tok_work *w)
{
    vq_tok_bigram top = w->heap[0];
    vq_tok_bigram last = w->heap[--w->heap_n];
    size_t n = w->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n > 0)
        w->heap[i] = last;
    return top;
}
