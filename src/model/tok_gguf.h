/* tok_gguf.h -- a tokenizer from a GGUF file's tokenizer.* metadata (the
 * GGUF reader as the tokenizer's metadata source, tok/tok_meta.h). */
#ifndef VQ_MODEL_TOK_GGUF_H
#define VQ_MODEL_TOK_GGUF_H

#include "model/gguf.h"
#include "tok/tokenizer.h"

/* The gguf may be closed once this returns (the tokenizer copies). */
vq_status vq_tokenizer_from_gguf(const vq_gguf *g, vq_tokenizer **out, char *err);

#endif
