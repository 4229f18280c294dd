/* calibrate.c -- calibration of a model's cache codecs on real K/V
 * (vq_cache_calibrate_model) and the whole-model calibration file
 * (vq_cache_save_calibration; format: codec/calib_set.h). */
#include <stdlib.h>

#include "cache/cache_peek.h"
#include "codec/calib_set.h"
#include "model/forward.h"
#include "model/kv_record.h"

static vq_status make_recorder(const vq_kv_shape *shape, vq_pool *pool, void *arg, vq_kv **out)
{
    (void)arg;
    return vq_kv_record_create(shape, pool, out);
}

vq_status vq_cache_calibrate_model(vq_cache *cache, const vq_model *m, const int32_t *tokens, size_t n,
                                   int n_threads, vq_progress_cb progress, void *user)
{
    if (!cache || !m || !tokens)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "calibrate: NULL argument");
    if (n < 2 || n > (1u << 20))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "calibrate: %zu tokens (need 2..%u)", n, 1u << 20);
    if (vq_cache_n_layers(cache) != m->n_layers || vq_cache_fingerprint(cache) != vq_model_fingerprint(m))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "calibrate: the cache was not built for this model");
    vq_ctx *c = NULL;
    VQ_TRY(vq_ctx_create_with_kv(m, (int)n, n_threads, make_recorder, NULL, &c));
    vq_status st = VQ_OK;
    for (size_t done = 0; done < n && st == VQ_OK;) {
        int b = (int)(n - done < (size_t)c->batch ? n - done : (size_t)c->batch);
        st = vq_ctx_forward(c, tokens + done, b, NULL, VQ_LOGITS_LAST);
        done += (size_t)b;
        if (progress)
            progress("forward", done, n, user);
    }
    if (st != VQ_OK)
        st = vq_fail(NULL, st, "calibrate: %s", c->err);
    for (int l = 0; st == VQ_OK && l < m->n_layers; l++) {
        size_t nk = 0, nv = 0;
        const float *k = vq_kv_record_keys(c->kv, l, &nk), *v = vq_kv_record_values(c->kv, l, &nv);
        st = vq_cache_calibrate(cache, l, k, v, nk);
        if (st != VQ_OK)
            st = vq_fail(NULL, st, "calibrate: layer %d: %s", l, vq_cache_error(cache));
        if (progress)
            progress("calibrate", (size_t)l + 1, (size_t)m->n_layers, user);
    }
    vq_ctx_free(c);
    return st;
}

vq_status vq_cache_save_calibration(const vq_cache *c, const char *path)
{
    if (!c || !path)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_save_calibration: NULL argument");
    int nl = vq_cache_n_layers(c);
    vq_codec **codecs = calloc((size_t)nl * 2, sizeof *codecs);
    if (!codecs)
        return vq_fail(NULL, VQ_ERR_NOMEM, "vq_cache_save_calibration: out of memory");
    for (int l = 0; l < nl; l++) {
        codecs[2 * l] = vq_cache_codec_of(c, l, VQ_ROLE_KEY);
        codecs[2 * l + 1] = vq_cache_codec_of(c, l, VQ_ROLE_VALUE);
    }
    vq_status st = vq_calib_set_write(path, vq_cache_fingerprint(c), nl, codecs, NULL);
    free(codecs);
    return st;
}
