/* tokenizer.h -- tokenizers read from GGUF-style metadata (tokenizer.ggml.*,
 * through tok_meta.h; model/tok_gguf.h reads them from a GGUF file):
 * SentencePiece-style ("llama": scores + byte fallback; gemma) and
 * byte-level BPE ("gpt2": merges, with the pre-tokenizer the model names in
 * tokenizer.ggml.pre: gpt2, llama3 / llama-bpe, qwen2, smollm, ...).
 *
 * Ownership: the tokenizer copies what it needs; the metadata source may
 * be freed after vq_tokenizer_from_meta returns. */
#ifndef VQ_TOK_TOKENIZER_H
#define VQ_TOK_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tok/tok_meta.h"
#include "veloxquant.h"

typedef struct vq_tokenizer vq_tokenizer;

vq_status vq_tokenizer_from_meta(const vq_tok_meta *m, vq_tokenizer **out, char *err);
void vq_tokenizer_free(vq_tokenizer *t);

/* Encode len bytes of UTF-8 text. add_bos: prepend BOS if the model wants
 * it (tokenizer.ggml.add_bos_token); parse_special: recognise special /
 * control tokens written in the text (e.g. "<|im_start|>"). *tokens is a new
 * malloc'd array (caller frees) of *n ids. */
vq_status vq_tokenizer_encode(const vq_tokenizer *t, const char *text, size_t len,
                              int add_bos, int parse_special, int32_t **tokens,
                              size_t *n, char *err);

/* The bytes of one token as text (byte-level BPE mapped back to bytes,
 * SentencePiece's U+2581 to a space, <0xNN> byte tokens to the byte).
 * Writes at most cap bytes, returns the full length. Control tokens give
 * "" unless render_special. */
size_t vq_tokenizer_piece(const vq_tokenizer *t, int32_t id, int render_special,
                          char *buf, size_t cap);

/* Decode n ids to text: the pieces concatenated; for SentencePiece models
 * with add_space_prefix, the one space the encoder put in front of the text
 * is removed from the first non-empty piece. So decode(encode(x)) == x for
 * any bytes x that do not start with a special token (invalid UTF-8 too),
 * except in SentencePiece models, where a U+2581 in the text decodes as a
 * space and, with add_space_prefix, every fragment after a special or
 * user-defined token also gets a space (both as in llama.cpp).
 * *out is malloc'd and NUL-terminated (caller frees); *len (may be NULL)
 * gets its length. */
vq_status vq_tokenizer_decode(const vq_tokenizer *t, const int32_t *ids, size_t n,
                              int render_special, char **out, size_t *len, char *err);

int32_t vq_tokenizer_n_vocab(const vq_tokenizer *t);
int32_t vq_tokenizer_bos(const vq_tokenizer *t);  /* -1 if none */
int32_t vq_tokenizer_eos(const vq_tokenizer *t);  /* -1 if none */
/* 1 if generation should stop at this token (eos, eot, <end_of_turn>, ...) */
int vq_tokenizer_is_eog(const vq_tokenizer *t, int32_t id);

/* Wrap one user message in the model's chat template (built in per
 * architecture / template family), ending where the assistant speaks.
 * *out is malloc'd (caller frees). The family comes from the GGUF's
 * tokenizer.chat_template when it has one (ChatML, Gemma, Llama 3), else
 * from arch (gemma*, qwen2/qwen3, llama). BOS is not written: encode the
 * result with add_bos = 1 and parse_special = 1. VQ_ERR_UNSUPPORTED when no
 * template fits or the vocabulary lacks the template's special tokens. */
vq_status vq_tokenizer_chat(const vq_tokenizer *t, const char *arch,
                            const char *user, char **out, char *err);

#endif
