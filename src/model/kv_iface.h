/* kv_iface.h -- THE SEAM between the forward pass and the KV cache.
 *
 * The forward pass computes, for each layer, the queries, keys and values of
 * a batch of n new tokens at positions pos0 .. pos0+n-1 (keys and queries
 * already RoPE-rotated, QK-norm applied). It then makes exactly one call:
 *
 *     vq_attn_layer(kv, layer, q, k, v, n, pos0, out)
 *
 * which appends the new K/V to the cache and computes causal attention of
 * the n queries over everything cached for that layer (the new tokens
 * included). Nothing else in the forward pass touches K/V. A cache
 * implementation is a vq_kv_ops table; the plain float buffer
 * (kv_float.c, vq_kv_float_create) is the first, the packed cache of
 * src/cache/ plugs in the same way without changes to forward.c.
 *
 * Tensor layouts (row-major floats, owned by the caller, read-only for the
 * cache):
 *   q   [n][n_q_heads][head_dim]   (of this layer)
 *   k,v [n][n_kv_heads][head_dim]
 *   out [n][n_q_heads][head_dim]   written by attend
 *
 * Attention semantics an implementation must give (the float buffer is the
 * reference): query token t (position p = pos0 + t), query head h, uses KV
 * head g = h / (n_q_heads / n_kv_heads) (GQA; heads of one group are
 * consecutive). It attends to cached positions j with j <= p and, when the
 * layer's window W > 0, p - j < W (W keys, itself included: llama.cpp's
 * "standard" sliding window, as HF Gemma 3). Scores are
 * s_j = scale * <q, k_j>; when softcap > 0, s_j = softcap * tanh(s_j / softcap);
 * out = sum_j softmax(s)_j v_j.
 *
 * Positions: pos0 is the position of the first new token (RoPE already
 * applied with it). Positions count up contiguously over the calls on a
 * layer (layers are filled in order 0..n_layers-1 for each batch); the
 * context tracks the next position itself (vq_ctx.n_tokens), because an
 * implementation that evicts (the packed cache with an eviction policy or
 * sliding-window layers) holds fewer tokens than positions seen, and new
 * tokens keep counting from the last position. The float buffer never
 * evicts, so for it pos0 also equals the tokens held. `reset` forgets
 * everything (positions restart at 0). `bytes` is the K/V memory the
 * implementation holds for the tokens cached now (resident bytes, what a
 * user pays), bytes_per_token its steady-state cost per token, all layers.
 *
 * Threading: implementations may use the pool given at creation for the
 * attention of one call; calls themselves come from one thread.
 * Errors: append/attend return vq_status and record a message in kv->err
 * (capacity exhausted: VQ_ERR_STATE). */
#ifndef VQ_MODEL_KV_IFACE_H
#define VQ_MODEL_KV_IFACE_H

#include <stddef.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/pool.h"

/* What the cache must know about the layers: each layer's shape (the
 * cache's, veloxquant.h) and the score scale, usually 1/sqrt(head_dim). */
typedef struct {
    int n_layers;
    int max_tokens; /* capacity per layer (positions 0 .. max_tokens-1) */
    float scale;
    vq_layer_shape layer[VQ_MAX_LAYERS];
} vq_kv_shape;

typedef struct vq_kv vq_kv;

typedef struct vq_kv_ops {
    const char *name;
    vq_status (*append)(vq_kv *kv, int layer, const float *k, const float *v, int n, int pos0);
    vq_status (*attend)(vq_kv *kv, int layer, const float *q, int n, int pos0, float *out);
    void (*reset)(vq_kv *kv);
    size_t (*bytes)(const vq_kv *kv);
    size_t (*bytes_per_token)(const vq_kv *kv);
    void (*destroy)(vq_kv *kv);
    /* optional (NULL: nothing to prepare): make the memory that n more
     * tokens will take ready now, so appends up to then do not grow it */
    vq_status (*reserve)(vq_kv *kv, int n);
} vq_kv_ops;

/* The generic part of every implementation; impl holds the rest. */
struct vq_kv {
    const vq_kv_ops *ops;
    vq_kv_shape shape;
    vq_pool *pool;  /* borrowed; may be NULL (single thread) */
    char err[VQ_ERRLEN];
    void *impl;
};

/* The attention entry point of the forward pass: append, then attend. */
vq_status vq_attn_layer(vq_kv *kv, int layer, const float *q, const float *k, const float *v,
                        int n, int pos0, float *out);

/* Release a cache through its ops (NULL is harmless). */
void vq_kv_free(vq_kv *kv);

/* The plain float32 K/V buffer: capacity max_tokens per layer, memory
 * reserved up front but only touched (resident) as tokens arrive; bytes()
 * counts the tokens held. pool is borrowed and must outlive the cache. */
vq_status vq_kv_float_create(const vq_kv_shape *shape, vq_pool *pool, vq_kv **out);

#endif
