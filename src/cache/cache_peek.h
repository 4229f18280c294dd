/* cache_peek.h -- read-only views into a vq_cache for library code outside
 * src/cache/ (the model runtime's adapter, calibration files) that cannot
 * include cache_internal.h (its page-pool type clashes with the thread
 * pool's name). */
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

#endif
