/* model_internal.h -- the loaded model as the forward pass sees it.
 *
 * A vq_model owns: the GGUF mapping (weights are used in place, never
 * copied, except the small vectors below), the tokenizer (NULL when the
 * file has none), the hyperparameters and, per layer, views of the weight
 * matrices. Small vectors (norm weights, biases, RoPE frequency tables)
 * are converted to owned float arrays at load, whatever their file type.
 *
 * Weight matrices follow GGUF's convention: ne[0] = cols (input width),
 * ne[1] = rows (outputs); row r starts at data + r * row_bytes. */
#ifndef VQ_MODEL_MODEL_INTERNAL_H
#define VQ_MODEL_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/gguf.h"
#include "model/kv_iface.h"
#include "model/tok_gguf.h"

typedef enum { VQ_ARCH_LLAMA, VQ_ARCH_QWEN2, VQ_ARCH_QWEN3, VQ_ARCH_GEMMA3 } vq_arch;

typedef struct {
    const uint8_t *data; /* what the products read: a copy in the model's w_arena (model.c place_weights) */
    const uint8_t *file_data; /* into the mapping, the file's layout; NULL if absent */
    int x16;             /* 1: data is interleaved by 16 rows (quants_x16.h); 0: the file's layout */
    uint32_t type;       /* ggml type (quants.h) */
    int64_t rows, cols;
    size_t row_bytes;
} vq_wmat;

typedef struct {
    vq_wmat wq, wk, wv, wo;          /* [nq*hd x n_embd], [nkv*hd x n_embd] x2, [n_embd x nq*hd] */
    vq_wmat w_gate, w_up, w_down;    /* [n_ff x n_embd] x2, [n_embd x n_ff] */
    float *attn_norm, *ffn_norm;     /* [n_embd] */
    float *post_attn_norm, *post_ffn_norm; /* gemma3 [n_embd]; NULL otherwise */
    float *q_norm, *k_norm;          /* qwen3/gemma3 [head_dim]; NULL otherwise */
    float *bq, *bk, *bv;             /* qwen2 biases (llama: when present); NULL otherwise */
    int n_q_heads, n_kv_heads, head_dim;
    int window;                      /* 0 = full attention */
    float rope_base;
    float *inv_freq;                 /* [head_dim/2] */
} vq_layer;

struct vq_model {
    vq_gguf *g;
    vq_tokenizer *tok;               /* NULL if the file has no tokenizer */
    vq_arch arch;
    char arch_name[16];
    char name[128];
    int n_layers, n_embd, n_ff, n_vocab, n_ctx_train;
    int n_q_heads, n_kv_heads, head_dim; /* of layer 0 */
    float rms_eps;
    float rope_base, rope_base_local;
    int sliding_window, n_swa_layers;
    int rope_neox;                   /* 1: NEOX pairing (qwen2/3, gemma3) */
    float attn_scale;
    float attn_softcap, final_softcap; /* 0 = none */
    float embd_scale;                /* gemma3: sqrt(n_embd); else 1 */
    int gelu_ffn;                    /* 1: GeGLU (tanh gelu); 0: SwiGLU */
    vq_wmat tok_embd;                /* [n_vocab x n_embd] */
    vq_wmat output;                  /* [n_vocab x n_embd]; = tok_embd if tied */
    float *output_norm;
    vq_layer *layers;
    uint8_t *w_arena;                /* the layer matrices and the output head, on huge pages (core/huge.h) */
    size_t max_act_cols;             /* widest matmul input */
    size_t weight_bytes, n_params;
    char err[VQ_ERRLEN];
};

/* What a KV cache must know about layer `layer` (0 <= layer < n_layers):
 * the one layer-shape struct (veloxquant.h), used by the float buffers,
 * vq_cache_for_model and vq_model_layer_info alike. */
void vq_model_layer_shape(const vq_model *m, int layer, vq_layer_shape *out);

#endif
