/* ref_forward.h -- a plain float64 reference forward pass for tests.
 *
 * Written independently of src/model/forward.c: it takes the architecture
 * and shapes from a vq_tiny_spec (not from the loader), reads each weight
 * tensor from the GGUF by name, dequantizes it with vq_dequantize into
 * doubles, and recomputes the whole sequence with full causal attention
 * (no KV cache, no batching, no threads). Architecture rules as in
 * src/model/model.c's header comment (llama.cpp's reading of each GGUF
 * conversion).
 *
 * vq_ref_forward: logits[t * n_vocab + i] for all n tokens. Returns 0, or
 * -1 if the file cannot be opened or a tensor is missing. */
#ifndef VQ_TESTS_REF_FORWARD_H
#define VQ_TESTS_REF_FORWARD_H

#include <stdint.h>

#include "tiny_model.h"

int vq_ref_forward(const vq_tiny_spec *s, const char *path, const int32_t *tokens, int n,
                   double *logits);

#endif
