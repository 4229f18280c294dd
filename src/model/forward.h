/* forward.h -- the inference context and the forward pass.
 *
 * struct vq_ctx holds everything one sequence needs besides the model: the
 * KV cache (behind the kv_iface.h seam), the thread pool, and scratch
 * buffers sized at creation for a batch of up to `batch` tokens (so the
 * forward pass never allocates). model_ctx.c creates it; forward.c runs
 * batches through the model. */
#ifndef VQ_MODEL_FORWARD_H
#define VQ_MODEL_FORWARD_H

#include "core/pool.h"
#include "model/kv_iface.h"
#include "model/model_internal.h"

#define VQ_FWD_BATCH 64 /* tokens per prefill batch (matrix-matrix) */
#define VQ_FWD_MAX_HEAD_DIM 1024 /* = model.c's MAX_HEAD_DIM (checked at load) */

struct vq_ctx {
    const vq_model *m;
    vq_pool *pool;
    vq_kv *kv;
    int max_tokens;
    int n_tokens;       /* next position = tokens run since reset (an evicting
                           cache may hold fewer; RoPE keeps counting) */
    int batch;          /* max tokens per forward batch */
    int broken;         /* a failed forward left the cache inconsistent */
    /* scratch, sized for `batch` tokens */
    float *x;           /* [batch][n_embd] residual stream */
    float *xn;          /* [batch][n_embd] normed input of a matmul */
    float *tmp;         /* [batch][n_embd] */
    float *q, *k, *v;   /* [batch][nq*hd], [batch][nkv*hd] x2 */
    float *att;         /* [batch][nq*hd] attention output */
    float *gate, *up;   /* [batch][n_ff] */
    uint8_t *act;       /* [batch][act_stride] prepared activations */
    size_t act_stride;
    const float *act_src; /* what `act` holds now (NULL: nothing) */
    uint32_t act_type;    /* its format (vq_act_kind, quants_impl.h) */
    int act_n;
    float rope_cs[VQ_FWD_MAX_HEAD_DIM]; /* one position's RoPE cosines, then sines (ops.h) */
    /* what rope_cs holds: the angles of position rope_pos for rope_freq[0..
     * rope_half) (rope_half 0: nothing), so that layers with the same
     * frequencies reuse them within a decode step */
    int rope_pos;
    size_t rope_half;
    float rope_freq[VQ_FWD_MAX_HEAD_DIM / 2];
    char err[VQ_ERRLEN];
};

/* Run n <= c->batch tokens at positions c->n_tokens.. through the model and
 * append their K/V. logits: NULL, or n_vocab floats for the last token
 * (all = 0), or n * n_vocab floats (all = 1). Tokens are trusted (checked
 * by the caller). */
vq_status vq_forward_batch(vq_ctx *c, const int32_t *tokens, int n, float *logits, int all);

/* How a context gets its K/V store: make(shape, pool, arg, &kv) builds it
 * (the float buffer when make is NULL). Used by vq_ctx_create (float) and
 * vq_ctx_create_cached (the packed cache, ctx_cached.c). */
typedef vq_status (*vq_kv_factory)(const vq_kv_shape *shape, vq_pool *pool, void *arg, vq_kv **out);
vq_status vq_ctx_create_with_kv(const vq_model *m, int max_tokens, int n_threads, vq_kv_factory make,
                                void *arg, vq_ctx **out);

#endif
