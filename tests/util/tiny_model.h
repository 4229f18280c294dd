/* tiny_model.h -- tiny random-weight GGUF models for tests.
 *
 * vq_tiny_write writes a model of the given architecture and shape to path
 * (through tests/util/gguf_writer): metadata as llama.cpp's converters name
 * it, random weights (normal, std 1/sqrt(fan-in)), norm weights near 1,
 * biases small. Matrices are stored in `wtype` (F32, F16 or Q8_0; the
 * quantizers here are the plain round-to-nearest block formats); norms and
 * biases in F32. Same spec and seed, same file. No tokenizer is written.
 * Returns 0, or -1 when the file cannot be written or the spec is bad. */
#ifndef VQ_TESTS_TINY_MODEL_H
#define VQ_TESTS_TINY_MODEL_H

#include <stdint.h>

typedef struct {
    const char *arch;   /* "llama", "qwen2", "qwen3", "gemma3" */
    int n_layers, n_embd, n_ff, n_q_heads, n_kv_heads, head_dim, n_vocab;
    int window;         /* gemma3: attention.sliding_window (0: key absent) */
    float rope_base;
    float rms_eps;
    uint32_t wtype;     /* VQ_W_F32, VQ_W_F16 or VQ_W_Q8_0 */
    int tied;           /* 1: no output.weight (tied embeddings) */
    int write_key_length; /* 1: write attention.key_length/value_length */
    uint64_t seed;
} vq_tiny_spec;

int vq_tiny_write(const vq_tiny_spec *s, const char *path);
/* As vq_tiny_write; for qwen2, k_outlier > 0 sets every 8th key-bias
 * channel to +-k_outlier (strong key outlier channels, as real Qwen2
 * models have) instead of small biases. For llama, k_outlier > 0 adds
 * that attn_k.bias alone (llama GGUFs may carry optional biases). */
int vq_tiny_write_outliers(const vq_tiny_spec *s, float k_outlier, const char *path);
/* The shape the outlier tests use with vq_tiny_write_outliers: qwen2, 2
 * layers, 128 wide, 2 query heads on 1 KV head of dim 64, 300 tokens, F32,
 * seed 4. */
vq_tiny_spec vq_tiny_outlier_spec(void);

#endif
