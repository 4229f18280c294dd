/* sinks.h -- attention-sink tokens kept exact (cache config `sinks=N`).
 *
 * The first N tokens appended to a (layer, KV head) stay in the fp16
 * residual window for the cache's life: flushing the window into packed
 * pages skips them. They sit at the front of the window, so the window is
 * [sinks | recent tokens], each part in increasing position order; the
 * packed slots lie between the two in position. Their count is not stored:
 * the leading window tokens older than packed slot 0 are the sinks (before
 * the first flush, the first min(N, n_res) tokens). Layers with a sliding
 * window keep none (the sinks would leave the window). Bytes: like the
 * residual window they are fp16 (4·D bytes per token, K+V) plus a 4-byte
 * position, a fixed cost outside the packed bits/element
 * (docs/quality.md). */
#ifndef VQ_CACHE_SINKS_H
#define VQ_CACHE_SINKS_H

#include "cache/cache_internal.h"

/* sink tokens layer L keeps (cfg sinks, 0 on sliding-window layers) */
size_t vq_cache_layer_sinks(const vq_cache *c, const vq_cache_layer *L);
/* how many of H's leading residual tokens are sinks now */
size_t vq_cache_head_sinks(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H);
/* refuse configs sinks cannot serve (eviction, cross-layer sharing) */
vq_status vq_cache_sinks_check(const vq_cache *c, char *err);
/* after loading H: its residual is [sinks (< packed slot 0, at most N) |
 * tokens after last_packed]; else VQ_ERR_FORMAT */
vq_status vq_cache_sinks_validate(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H,
                                  int64_t last_packed, char *err);

#endif
