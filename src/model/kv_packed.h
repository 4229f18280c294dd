/* kv_packed.h -- the packed cache (src/cache/, vq_cache) behind the
 * kv_iface.h seam, and the calls that build one for a model.
 *
 * vq_kv_packed_create wraps a caller-owned vq_cache (borrowed: it must
 * outlive the vq_kv; destroying the vq_kv does not free it). When the
 * cache has no threads of its own (vq_cache_set_n_threads), it borrows pool
 * (may be NULL) for its attention until the vq_kv is destroyed; attention
 * results do not depend on it. The cache's
 * shape must match the model's K/V shape layer by layer (heads, head_dim,
 * sliding window, attention logit soft-capping -- the cache applies the
 * same s = softcap * tanh(s / softcap) after scaling as kv_float.c).
 *
 * Semantics equal kv_float.c's (kv_iface.h): same GQA grouping, same
 * window rule (a query at p sees p - W < j <= p), scale applied to the raw
 * dot product, softmax in float. Differences are only those of the codecs
 * (fp16 rounds K/V to half precision) and of eviction, which drops tokens
 * the float buffer would keep. */
#ifndef VQ_MODEL_KV_PACKED_H
#define VQ_MODEL_KV_PACKED_H

#include "model/kv_iface.h"
#include "veloxquant.h"

vq_status vq_kv_packed_create(const vq_kv_shape *shape, vq_cache *cache, vq_pool *pool, vq_kv **out);

/* The cache behind kv if it is a packed one, else NULL. */
vq_cache *vq_kv_packed_cache(const vq_kv *kv);

/* The position after the newest token the cache holds on any layer (0 for
 * an empty cache): where a context over a loaded cache continues. */
int vq_kv_packed_next_pos(const vq_cache *cache);

#endif
