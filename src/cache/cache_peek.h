/* cache_peek.h -- read-only views into a vq_cache for library code outside
 * src/cache/ (the model runtime's adapter, calibration files) that cannot
 * include cache_internal.h (its page-pool type clashes with the thread
 * pool's name), and the lending of a context's thread pool. */
#ifndef VQ_CACHE_PEEK_H
#define VQ_CACHE_PEEK_H

#include <stdint.h>

#include "veloxquant.h"

/* The packed codec of (layer, role), owned by the cache; NULL if layer is
 * out of range. Callers only query it (bytes per token, readiness, spec,
 * calibration state), never encode through it. */
vq_codec *vq_cache_codec_of(const vq_cache *c, int layer, vq_role role);
/* Newest position appended to layer (-1: none). */
int32_t vq_cache_last_pos(const vq_cache *c, int layer);
int vq_cache_n_layers(const vq_cache *c);
uint64_t vq_cache_fingerprint(const vq_cache *c);

/* Lend a thread pool (core/pool.h) to the cache's attention when the cache
 * has none (no vq_cache_set_n_threads): its work items (KV head x context
 * chunk) then run on the pool's threads. Returns 1 if the cache now uses
 * pool (the lender must call vq_cache_unlend_pool before freeing it), 0 if
 * it keeps its own threads or stays serial. The result of attention does
 * not depend on it (chunks are fixed by position). The pool must not be
 * running a job while the cache attends. */
struct vq_pool;
int vq_cache_lend_pool(vq_cache *c, struct vq_pool *pool);
/* Back to serial attention if the cache uses pool; else nothing. */
void vq_cache_unlend_pool(vq_cache *c, struct vq_pool *pool);

#endif
