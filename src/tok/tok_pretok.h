/* tok_pretok.h -- byte-level BPE pre-tokenizers: split text into the pieces
 * that BPE merges never cross, as the regexes a model names in
 * tokenizer.ggml.pre do (the regex lists are llama.cpp's, which mirror the
 * Hugging Face tokenizer.json pre_tokenizers):
 *
 *   gpt2    : 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 *   llama3  : (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2   : llama3 with \p{N} instead of \p{N}{1,3}
 *   smollm  : \p{N}, then gpt2                      (also starcoder, refact, ...)
 *   default : [\p{P}\$\+<=>\^`\|]+, then gpt2, then \p{N}+, then [0-9][0-9][0-9]
 *
 * A list of regexes applies in order, each one re-splitting every piece the
 * previous one produced; text between matches stays a piece of its own.
 * Each regex is a hand-written matcher over code points with the same
 * leftmost-first alternation semantics as the regex.
 *
 * Invalid UTF-8: each invalid byte is one unit of class "other" (the regex
 * engines see U+FFFD there); the bytes themselves are kept, so pieces always
 * tile the input exactly. */
#ifndef VQ_MODEL_TOK_PRETOK_H
#define VQ_MODEL_TOK_PRETOK_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

typedef enum {
    VQ_PRETOK_DEFAULT = 0,
    VQ_PRETOK_GPT2,
    VQ_PRETOK_LLAMA3,
    VQ_PRETOK_QWEN2,
    VQ_PRETOK_SMOLLM
} vq_pretok_kind;

/* Map a tokenizer.ggml.pre name to a kind. Returns 1 if known, 0 if not. */
int vq_pretok_from_name(const char *name, size_t len, vq_pretok_kind *out);
const char *vq_pretok_kind_name(vq_pretok_kind k);

/* Reusable buffers for vq_pretok_split (no allocation once warmed up).
 * Zero-initialise, release with vq_pretok_ws_free. */
typedef struct {
    uint32_t *cp;   /* code point per unit (VQ_TOK_CP_INVALID for a bad byte) */
    uint8_t *cls;   /* class bits per unit */
    size_t *off;    /* byte offset of each unit, plus one past the end */
    size_t *ends_a; /* piece ends, in units */
    size_t *ends_b;
    size_t cap;
} vq_pretok_ws;

void vq_pretok_ws_free(vq_pretok_ws *ws);

/* Split text[0..len) into pieces. On success *piece_ends points into ws:
 * *n_pieces byte offsets, strictly increasing, the last equal to len (no
 * pieces for empty text). Valid until the next call with ws. */
vq_status vq_pretok_split(vq_pretok_kind kind, const char *text, size_t len, vq_pretok_ws *ws,
                          const size_t **piece_ends, size_t *n_pieces, char *err);

#endif
