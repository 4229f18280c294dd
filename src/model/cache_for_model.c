/* cache_for_model.c -- KVCacheBuilder.for_model: the packed cache shaped for
 * a loaded model, its fingerprint, and loading a saved cache against a model
 * (public API, veloxquant.h model section). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_peek.h"
#include "cache/prerope.h"
#include "model/cache_check.h"
#include "model/model_internal.h"

/* Fixed seed of caches built for models (rotations, sign diagonals): a
 * saved cache stores its seed, and calibration files are made with the
 * same one. */
#define VQ_MODEL_CACHE_SEED 0x76656c6f78716bULL

/* FNV-1a 64 over bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv_i(uint64_t h, int64_t v) { return fnv(h, &v, sizeof v); }

static uint64_t fnv_w(uint64_t h, const vq_wmat *w)
{
    h = fnv_i(h, w->rows);
    h = fnv_i(h, w->cols);
    h = fnv_i(h, (int64_t)w->type);
    if (w->file_data) /* the file's first 256 bytes of the first row (< row_bytes never matters: rows are >= 16 B) */
        h = fnv(h, w->file_data, w->row_bytes < 256 ? w->row_bytes : 256);
    return h;
}

uint64_t vq_model_fingerprint(const vq_model *m)
{
    if (!m)
        return 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, m->arch_name, strlen(m->arch_name));
    const int64_t dims[] = { m->n_layers, m->n_embd, m->n_ff, m->n_vocab, m->n_q_heads, m->n_kv_heads,
                             m->head_dim, m->sliding_window, m->n_swa_layers };
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        h = fnv_i(h, dims[i]);
    for (int l = 0; l < m->n_layers; l++) {
        const vq_layer *L = &m->layers[l];
        h = fnv_i(h, L->n_q_heads);
        h = fnv_i(h, L->n_kv_heads);
        h = fnv_i(h, L->head_dim);
        h = fnv_i(h, L->window);
        h = fnv(h, &L->rope_base, sizeof L->rope_base);
    }
    h = fnv_w(h, &m->tok_embd);
    h = fnv_w(h, &m->layers[0].wk);
    h = fnv_w(h, &m->layers[m->n_layers - 1].wv);
    return h;
}

/* shape of the model's cache; layers malloc'd into *layers */
static vq_status model_shape(const vq_model *m, vq_cache_shape *s, vq_layer_shape **layers)
{
    vq_layer_shape *ls = calloc((size_t)m->n_layers, sizeof *ls);
    if (!ls)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache for model: out of memory");
    for (int l = 0; l < m->n_layers; l++)
        vq_model_layer_shape(m, l, &ls[l]);
    s->n_layers = m->n_layers;
    s->layers = ls;
    s->fingerprint = vq_model_fingerprint(m);
    *layers = ls;
    return VQ_OK;
}

static vq_status create_for_model(const vq_model *m, const vq_cache_config *cfg, int need_ready, vq_cache **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_for_model: out is NULL");
    *out = NULL;
    if (!m || !cfg)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_for_model: NULL argument");
    vq_cache_shape s;
    vq_layer_shape *ls = NULL;
    VQ_TRY(model_shape(m, &s, &ls));
    vq_cache *c = NULL;
    vq_status st = vq_cache_create(cfg, &s, VQ_MODEL_CACHE_SEED, &c);
    free(ls);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "vq_cache_for_model: %s", vq_last_error());
    for (int l = 0; vq_cache_prerope_on(c) && l < m->n_layers; l++) /* prerope=1: the layers' RoPE */
        if ((st = vq_cache_set_rope(c, l, m->layers[l].inv_freq, m->rope_neox)) != VQ_OK) {
            vq_fail(NULL, st, "vq_cache_for_model: %s", vq_cache_error(c));
            vq_cache_free(c);
            return st;
        }
    for (int l = 0; need_ready && l < m->n_layers; l++)
        for (int r = 0; r < 2; r++) {
            const vq_codec *cd = vq_cache_codec_of(c, l, (vq_role)r);
            if (!vq_codec_is_ready(cd)) {
                vq_fail(NULL, VQ_ERR_NEEDS_CALIBRATION,
                        "vq_cache_for_model: layer %d %s codec %s needs calibration: run `veloxquant calibrate "
                        "--model MODEL --method %s --out FILE`, then add calib=FILE to its spec",
                        l, r ? "values" : "keys", vq_codec_spec(cd), vq_codec_name(cd));
                vq_cache_free(c);
                return VQ_ERR_NEEDS_CALIBRATION;
            }
        }
    *out = c;
    return VQ_OK;
}

/* check=warn|strict (model/cache_check.h): measure the config on the model */
static vq_status check_config(const vq_model *m, const vq_cache_config *cfg, vq_cache *c)
{
    char text[8192];
    snprintf(text, sizeof text, "%s", vq_cache_config_str(cfg));
    char *p = strstr(text, " check=");
    if (p) { /* measure the same config without the check */
        char *e = strchr(p + 1, ' ');
        memmove(p, e ? e : p + strlen(p), strlen(e ? e : p + strlen(p)) + 1);
    }
    double kl = 0, top1 = 0;
    int n = 0;
    VQ_TRY(vq_cache_check_kl(m, text, &kl, &top1, &n));
    if (kl < VQ_CHECK_BREAKS_KL)
        return VQ_OK;
    if (cfg->check == 2)
        return vq_fail(NULL, VQ_ERR_UNSUPPORTED,
                       "vq_cache_for_model: check=strict: the config breaks this model (KL %.3g nats/token >= %.2g, "
                       "top-1 agreement %.0f%% over %d tokens against fp16): %s",
                       kl, VQ_CHECK_BREAKS_KL, 100 * top1, n, text);
    snprintf((char *)vq_cache_error(c), VQ_ERRLEN,
             "warning: the config breaks this model (KL %.3g nats/token >= %.2g, top-1 %.0f%% over %d tokens "
             "against fp16)",
             kl, VQ_CHECK_BREAKS_KL, 100 * top1, n);
    return VQ_OK;
}

vq_status vq_cache_for_model(const vq_model *m, const vq_cache_config *cfg, vq_cache **out)
{
    VQ_TRY(create_for_model(m, cfg, 1, out));
    if (cfg->check) {
        vq_status st = check_config(m, cfg, *out);
        if (st != VQ_OK) {
            vq_cache_free(*out);
            *out = NULL;
            return st;
        }
    }
    return VQ_OK;
}

vq_status vq_cache_create_for_calibration(const vq_model *m, const vq_cache_config *cfg, vq_cache **out)
{
    return create_for_model(m, cfg, 0, out);
}

vq_status vq_cache_load_for_model(const vq_model *m, const char *path, vq_cache **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_load_for_model: out is NULL");
    *out = NULL;
    if (!m || !path)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_load_for_model: NULL argument");
    vq_cache_shape s;
    vq_layer_shape *ls = NULL;
    VQ_TRY(model_shape(m, &s, &ls));
    vq_status st = vq_cache_load(path, &s, out);
    free(ls);
    for (int l = 0; st == VQ_OK && vq_cache_prerope_on(*out) && l < m->n_layers; l++)
        if (!vq_cache_prerope_matches(*out, l, m->layers[l].inv_freq, m->rope_neox)) { /* prerope=1/2 */
            st = vq_fail(NULL, VQ_ERR_FORMAT, "%s: layer %d: the cache's RoPE differs from the model's", path, l);
            vq_cache_free(*out);
            *out = NULL;
        }
    return st;
}
