/* tokenizer_special.c -- special tokens written in the text.
 *
 * Before the model's own algorithm runs, the text is cut at occurrences of
 * special tokens, as llama.cpp's tokenizer_st_partition does: the special
 * tokens (types control, user-defined, unknown; with parse_special == 0
 * only user-defined ones, which Hugging Face tokenizers also always match)
 * are tried one after another, longest text first (ties: lower id first),
 * and each one claims all its leftmost non-overlapping occurrences in the
 * text not yet claimed. A token flagged LSTRIP / RSTRIP also swallows the
 * ASCII whitespace next to it. What is left are raw fragments.
 *
 * Implementation: a byte trie of the special texts. One walk per position
 * finds where special tokens start (candidates); then one pass per distinct
 * token length (longest first) collects the occurrences of that length in
 * the unclaimed text, claimed in (priority, position) order. The cost is
 * O(text x longest special) for the walks plus O(candidates x distinct
 * lengths), independent of the number of special tokens (gemma has
 * thousands). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tok/tok_internal.h"

static int32_t trie_child(const vq_tok_trie *tr, int32_t node, unsigned char b)
{
    uint64_t key = (((uint64_t)(uint32_t)node << 8) | b) + 1;
    size_t i = (size_t)vq_tok_mix64(key) & tr->mask;
    while (tr->key[i]) {
        if (tr->key[i] == key)
            return tr->child[i];
        i = (i + 1) & tr->mask;
    }
    return -1;
}

static int cmp_special(const void *a, const void *b, void *tp)
{
    const vq_tokenizer *t = tp;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint64_t lx = t->off[x + 1] - t->off[x], ly = t->off[y + 1] - t->off[y];
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

void vq_tok_special_free(vq_tokenizer *t)
{
    free(t->special);
    free(t->trie.key);
    free(t->trie.child);
    free(t->trie.term);
    t->special = NULL;
    memset(&t->trie, 0, sizeof t->trie);
}

vq_status vq_tok_special_build(vq_tokenizer *t, char *err)
{
    size_t n = 0, bytes = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        uint8_t ty = t->type[id];
        if ((ty == VQ_TOKT_CONTROL || ty == VQ_TOKT_USER_DEFINED || ty == VQ_TOKT_UNKNOWN) &&
            t->off[id + 1] > t->off[id]) {
            n++;
            bytes += (size_t)(t->off[id + 1] - t->off[id]);
        }
    }
    t->n_special = n;
    t->special = malloc((n ? n : 1) * sizeof *t->special);
    size_t cap = 16;
    while (cap < 2 * (bytes + 1))
        cap *= 2;
    vq_tok_trie *tr = &t->trie;
    tr->key = calloc(cap, sizeof *tr->key);
    tr->child = malloc(cap * sizeof *tr->child);
    tr->mask = cap - 1;
    tr->cap_nodes = bytes + 1;
    tr->term = malloc(tr->cap_nodes * sizeof *tr->term);
    if (!t->special || !tr->key || !tr->child || !tr->term)
        return vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory for %zu special tokens", n);
    n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        uint8_t ty = t->type[id];
        if ((ty == VQ_TOKT_CONTROL || ty == VQ_TOKT_USER_DEFINED || ty == VQ_TOKT_UNKNOWN) &&
            t->off[id + 1] > t->off[id])
            t->special[n++] = id;
    }
    if (n > 1)
        qsort_r(t->special, n, sizeof *t->special, cmp_special, t);
    tr->n_nodes = 1;
    tr->term[0] = -1;
    for (size_t r = 0; r < n; r++) {
        size_t len;
        const unsigned char *s = (const unsigned char *)vq_tok_text(t, t->special[r], &len);
        int32_t node = 0;
        for (size_t k = 0; k < len; k++) {
            int32_t c = trie_child(tr, node, s[k]);
            if (c < 0) {
                c = (int32_t)tr->n_nodes++;
                tr->term[c] = -1;
                uint64_t key = (((uint64_t)(uint32_t)node << 8) | s[k]) + 1;
                size_t i = (size_t)vq_tok_mix64(key) & tr->mask;
                while (tr->key[i])
                    i = (i + 1) & tr->mask;
                tr->key[i] = key;
                tr->child[i] = c;
            }
            node = c;
        }
        if (tr->term[node] < 0)
            tr->term[node] = (int32_t)r; /* duplicates: the first in order wins */
    }
    return VQ_OK;
}

typedef struct {
    int32_t rank;
    size_t pos;
} match;

static int cmp_match(const void *a, const void *b)
{
    const match *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_match_pos(const void *a, const void *b)
{
    const match *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int is_c_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

enum { FREE = 0, TAKEN = 1, STRIPPED = 2 };

vq_status vq_tok_partition(const vq_tokenizer *t, const char *text, size_t len, int parse_special,
                           vq_tok_raw_fn raw, vq_tok_special_fn tok, void *ctx, char *err)
{
    if (len == 0)
        return VQ_OK;
    int any = 0;
    size_t maxlen = 0;
    for (size_t r = 0; r < t->n_special; r++) {
        int32_t id = t->special[r];
        if (parse_special || t->type[id] == VQ_TOKT_USER_DEFINED) {
            any = 1;
            size_t l = (size_t)(t->off[id + 1] - t->off[id]);
            if (l > maxlen)
                maxlen = l;
        }
    }
    if (!any)
        return raw(ctx, text, len, err);

    const unsigned char *u = (const unsigned char *)text;
    uint8_t *state = calloc(len, 1);
    /* has_len[l]: some usable special token has l bytes */
    uint8_t *has_len = calloc(maxlen + 1, 1);
    match *found = NULL, *taken = NULL, *cand = NULL;
    size_t n_found = 0, cap_found = 0, n_taken = 0, cap_taken = 0, n_cand = 0, cap_cand = 0;
    vq_status st = VQ_OK;
    if (!state || !has_len) {
        st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (size_t r = 0; r < t->n_special; r++) {
        int32_t id = t->special[r];
        if (parse_special || t->type[id] == VQ_TOKT_USER_DEFINED)
            has_len[t->off[id + 1] - t->off[id]] = 1;
    }
    /* candidates: positions where some usable special token starts, with
     * the longest such length (one trie walk per position) */
    for (size_t p = 0; p < len; p++) {
        int32_t node = 0;
        size_t longest = 0;
        for (size_t d = 0; p + d < len && d < maxlen; d++) {
            node = trie_child(&t->trie, node, u[p + d]);
            if (node < 0)
                break;
            int32_t r = t->trie.term[node];
            if (r >= 0 && (parse_special || t->type[t->special[r]] == VQ_TOKT_USER_DEFINED))
                longest = d + 1;
        }
        if (longest) {
            if (n_cand == cap_cand) {
                size_t nc = cap_cand ? 2 * cap_cand : 64;
                match *ncand = realloc(cand, nc * sizeof *ncand);
                if (!ncand) {
                    st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
                    goto done;
                }
                cand = ncand;
                cap_cand = nc;
            }
            cand[n_cand].pos = p;
            cand[n_cand].rank = (int32_t)longest; /* here: the longest match length */
            n_cand++;
        }
    }
    for (size_t L = maxlen; L >= 1 && n_cand > 0; L--) {
        if (!has_len[L] || L > len)
            continue;
        n_found = 0;
        for (size_t c = 0; c < n_cand; c++) {
            size_t p = cand[c].pos;
            if ((size_t)cand[c].rank < L || state[p] != FREE)
                continue;
            int32_t node = 0;
            size_t d = 0;
            for (; d < L; d++) {
                if (state[p + d] != FREE || (node = trie_child(&t->trie, node, u[p + d])) < 0)
                    break;
            }
            if (d < L || t->trie.term[node] < 0)
                continue;
            int32_t rank = t->trie.term[node];
            int32_t id = t->special[rank];
            if (!parse_special && t->type[id] != VQ_TOKT_USER_DEFINED)
                continue;
            if (n_found == cap_found) {
                size_t nc = cap_found ? 2 * cap_found : 64;
                match *nf = realloc(found, nc * sizeof *nf);
                if (!nf) {
                    st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
                    goto done;
                }
                found = nf;
                cap_found = nc;
            }
            found[n_found].rank = rank;
            found[n_found].pos = p;
            n_found++;
        }
        if (n_found > 1) /* qsort(NULL, 0, ...) is undefined */
            qsort(found, n_found, sizeof *found, cmp_match);
        for (size_t i = 0; i < n_found; i++) {
            size_t p = found[i].pos, k;
            for (k = 0; k < L && state[p + k] == FREE; k++)
                ;
            if (k < L)
                continue; /* claimed by an earlier token of this length */
            memset(state + p, TAKEN, L);
            uint8_t fl = t->flags[t->special[found[i].rank]];
            if (fl & VQ_TOKF_LSTRIP)
                for (size_t q = p; q > 0 && state[q - 1] == FREE && is_c_space(u[q - 1]); q--)
                    state[q - 1] = STRIPPED;
            if (fl & VQ_TOKF_RSTRIP)
                for (size_t q = p + L; q < len && state[q] == FREE && is_c_space(u[q]); q++)
                    state[q] = STRIPPED;
            if (n_taken == cap_taken) {
                size_t nc = cap_taken ? 2 * cap_taken : 64;
                match *nt = realloc(taken, nc * sizeof *nt);
                if (!nt) {
                    st = vq_fail(err, VQ_ERR_NOMEM, "tokenizer: out of memory");
                    goto done;
                }
                taken = nt;
                cap_taken = nc;
            }
            taken[n_taken++] = found[i];
        }
    }
    if (n_taken > 1)
        qsort(taken, n_taken, sizeof *taken, cmp_match_pos);
    size_t p = 0, next = 0;
    while (p < len && st == VQ_OK) {
        if (next < n_taken && taken[next].pos == p) {
            int32_t id = t->special[taken[next].rank];
            st = tok(ctx, id, err);
            p += (size_t)(t->off[id + 1] - t->off[id]);
            next++;
        } else if (state[p] != FREE) {
            p++; /* swallowed whitespace */
        } else {
            size_t q = p;
            while (q < len && state[q] == FREE)
                q++;
            st = raw(ctx, text + p, q - p, err);
            p = q;
        }
    }
done:
    free(state);
    free(has_len);
    free(found);
    free(taken);
    free(cand);
    return st;
}
