/* tok_internal.h -- the tokenizer object shared by tokenizer*.c and tok_*.c.
 * Not part of any public interface. */
#ifndef VQ_MODEL_TOK_INTERNAL_H
#define VQ_MODEL_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tok/tok_pretok.h"
#include "tok/tokenizer.h"

/* GGUF token types (tokenizer.ggml.token_type), as llama.cpp defines them. */
enum {
    VQ_TOKT_UNDEFINED = 0,
    VQ_TOKT_NORMAL = 1,
    VQ_TOKT_UNKNOWN = 2,
    VQ_TOKT_CONTROL = 3,
    VQ_TOKT_USER_DEFINED = 4,
    VQ_TOKT_UNUSED = 5,
    VQ_TOKT_BYTE = 6
};

typedef enum { VQ_TOK_SPM = 1, VQ_TOK_BPE = 2 } vq_tok_model;

/* Per-token flags. */
enum {
    VQ_TOKF_LSTRIP = 1, /* a special match eats the whitespace before it */
    VQ_TOKF_RSTRIP = 2, /* ... and after it */
    VQ_TOKF_EOG = 4     /* generation stops here */
};

/* Open-addressing hash from token text to id. */
typedef struct {
    int32_t *slot; /* id, or -1 when empty */
    uint32_t *tag; /* high hash bits of the slot's text: most misses never
                      touch the token texts */
    size_t mask;   /* capacity - 1 (power of two) */
} vq_tok_strmap;

/* Open-addressing hash from a pair of token ids to (rank, merged id). */
typedef struct {
    uint64_t *key; /* (left << 32 | right) + 1, 0 when empty */
    int32_t *rank;
    int32_t *result;
    size_t mask;
} vq_tok_pairmap;

/* Byte trie over the texts of the special tokens that can be matched in
 * raw text; node 0 is the root. */
typedef struct {
    uint64_t *key;   /* (node << 8 | byte) + 1, 0 when empty */
    int32_t *child;
    size_t mask;
    int32_t *term;   /* per node: rank of the token ending here, or -1 */
    size_t n_nodes, cap_nodes;
} vq_tok_trie;

struct vq_tokenizer {
    vq_tok_model model;
    int32_t n_vocab;
    char *text;        /* all token texts, back to back */
    uint64_t *off;     /* n_vocab + 1 offsets into text */
    float *score;      /* SPM scores (0 when the GGUF has none) */
    uint8_t *type;     /* VQ_TOKT_* */
    uint8_t *flags;    /* VQ_TOKF_* */
    vq_tok_strmap map; /* text -> id (the last id wins for duplicate texts) */

    /* special tokens (control, user-defined, unknown) in matching order:
     * longer texts first, then by id */
    int32_t *special;
    size_t n_special;
    vq_tok_trie trie;

    int32_t byte_tok[256]; /* SPM: <0xNN> token; BPE: the byte's mapped char; -1 none */

    /* BPE */
    vq_tok_pairmap merges;
    vq_pretok_kind pre;
    int ignore_merges; /* a piece that is a whole token is taken as it is */

    int32_t bos, eos, unk, eot;
    int add_bos, add_space_prefix;

    char *chat_template; /* tokenizer.chat_template, NUL-terminated, or NULL */
};

static inline const char *vq_tok_text(const vq_tokenizer *t, int32_t id, size_t *len)
{
    *len = (size_t)(t->off[id + 1] - t->off[id]);
    return t->text + t->off[id];
}

/* text -> id, or -1 */
int32_t vq_tok_lookup(const vq_tokenizer *t, const char *s, size_t len);

/* A growable id vector. */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} vq_tok_vec;

vq_status vq_tok_vec_push(vq_tok_vec *v, int32_t id, char *err);

/* Scratch space for one encode call (reused across fragments). */
typedef struct {
    int32_t id;         /* token of this symbol's text, -1 if none (BPE) */
    int32_t prev, next; /* neighbours in the live list, -1 at the ends */
    uint32_t n;         /* bytes; 0 once merged into its left neighbour */
    size_t start;       /* byte offset in the fragment */
} vq_tok_sym;

typedef struct {
    double key;      /* SPM: -score; BPE: merge rank. Smaller pops first */
    int32_t left, right;
    uint32_t size;   /* bytes of left + right when the pair was queued */
    int32_t result;  /* the merged token */
} vq_tok_bigram;

typedef struct {
    vq_tok_sym *sym;
    size_t sym_cap;
    vq_tok_bigram *heap;
    size_t heap_n, heap_cap;
    char *buf;
    size_t buf_cap;
    vq_pretok_ws pre;
} vq_tok_work;

void vq_tok_work_free(vq_tok_work *w);
/* Make room for n symbols, a heap of 3n entries (n-1 initial pairs plus at
 * most two per merge) and a buffer of nbuf bytes. */
vq_status vq_tok_work_reserve(vq_tok_work *w, size_t n, size_t nbuf, char *err);
/* Bigram heap (min on key, then on left). */
void vq_tok_heap_push(vq_tok_work *w, vq_tok_bigram b);
vq_tok_bigram vq_tok_heap_pop(vq_tok_work *w);

/* SentencePiece encoding of one fragment, already space-escaped (U+2581). */
vq_status vq_tok_spm_encode(const vq_tokenizer *t, vq_tok_work *w, const char *text, size_t len,
                            vq_tok_vec *out, char *err);
/* Byte-level BPE encoding of one raw fragment (pre-tokenized inside). */
vq_status vq_tok_bpe_encode(const vq_tokenizer *t, vq_tok_work *w, const char *text, size_t len,
                            vq_tok_vec *out, char *err);
/* Build the merge table from tokenizer.ggml.merges. */
vq_status vq_tok_bpe_load_merges(vq_tokenizer *t, const vq_tok_meta *g, char *err);

/* Special-token partitioning (tokenizer_special.c): split text into raw
 * fragments and special-token ids as llama.cpp does. Calls raw(ctx, ...)
 * for each raw fragment and tok(ctx, id) for each special token, in order. */
typedef vq_status (*vq_tok_raw_fn)(void *ctx, const char *s, size_t len, char *err);
typedef vq_status (*vq_tok_special_fn)(void *ctx, int32_t id, char *err);
vq_status vq_tok_partition(const vq_tokenizer *t, const char *text, size_t len, int parse_special,
                           vq_tok_raw_fn raw, vq_tok_special_fn tok, void *ctx, char *err);
vq_status vq_tok_special_build(vq_tokenizer *t, char *err);
void vq_tok_special_free(vq_tokenizer *t);

/* the hash of the tokenizer's open-addressing tables (merges, special
 * token trie): splitmix64's finaliser */
static inline uint64_t vq_tok_mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return x;
}

#endif
