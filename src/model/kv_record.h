/* kv_record.h -- a recording K/V store for calibration: the float buffer
 * (kv_float.c) plus a copy of every key and value appended, per layer, as
 * [n][n_kv_heads][head_dim] floats (the post-RoPE tensors the forward pass
 * hands to the seam). Capacity: shape->max_tokens tokens per layer,
 * allocated at creation. Used by vq_cache_calibrate_model (calibrate.c). */
#ifndef VQ_MODEL_KV_RECORD_H
#define VQ_MODEL_KV_RECORD_H

#include "model/kv_iface.h"

vq_status vq_kv_record_create(const vq_kv_shape *shape, vq_pool *pool, vq_kv **out);

/* The recorded keys and values of a layer and how many tokens (*n). NULL
 * if kv is not a recorder. Valid until the kv is freed or reset. */
const float *vq_kv_record_keys(const vq_kv *kv, int layer, size_t *n);
const float *vq_kv_record_values(const vq_kv *kv, int layer, size_t *n);

#endif
