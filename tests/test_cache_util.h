/* test_cache_util.h -- helpers shared by the cache tests (static, header
 * only): random data, reference attention in double over decoded vectors,
 * relative errors. */
#ifndef VQ_TEST_CACHE_UTIL_H
#define VQ_TEST_CACHE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "veloxquant.h"

static inline void tc_fill(vq_rng *r, float *x, size_t n, float sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = sd * vq_rng_normal(r);
}

/* Reference attention in double of one query vector q (D) over n tokens
 * with positions pos, keys k and values v ([n][D], row stride D), for a
 * query at position p with sliding window win (0 = none). Returns the
 * softmax weights in w (n doubles) if w != NULL. */
static inline void tc_ref_attend_cap(const float *q, size_t D, size_t n, const int32_t *pos, const float *k,
                                     const float *v, int32_t p, int win, double scale, double softcap, double *out,
                                     double *w)
{
    double mx = -INFINITY, sum = 0;
    double *s = malloc((n ? n : 1) * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        int vis = pos[i] <= p && (win == 0 || pos[i] > p - win);
        double d = 0;
        for (size_t e = 0; e < D; e++)
            d += (double)q[e] * k[i * D + e];
        d *= scale;
        if (softcap > 0)
            d = softcap * tanh(d / softcap);
        s[i] = vis ? d : -INFINITY;
        if (s[i] > mx)
            mx = s[i];
    }
    for (size_t e = 0; e < D; e++)
        out[e] = 0;
    for (size_t i = 0; i < n; i++) {
        double e_ = s[i] == -INFINITY ? 0 : exp(s[i] - mx);
        s[i] = e_;
        sum += e_;
    }
    for (size_t i = 0; i < n; i++) {
        double wi = sum > 0 ? s[i] / sum : 0;
        if (w)
            w[i] = wi;
        for (size_t e = 0; e < D; e++)
            out[e] += wi * v[i * D + e];
    }
    free(s);
}

static inline void tc_ref_attend(const float *q, size_t D, size_t n, const int32_t *pos, const float *k,
                                 const float *v, int32_t p, int win, double scale, double *out, double *w)
{
    tc_ref_attend_cap(q, D, n, pos, k, v, p, win, scale, 0.0, out, w);
}

/* a cache of config text over n_layers layers of `shapes` (seed 11), or
 * NULL when the config or the cache is refused */
static inline vq_cache *tc_cache_make(const char *text, int n_layers, const vq_layer_shape *shapes)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_cache_shape sh = { n_layers, shapes, 7 };
    if (vq_cache_config_parse(text, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 11, &c) != VQ_OK)
        c = NULL;
    vq_cache_config_free(cfg);
    return c;
}

/* the bytes of the cache's page pool: pages in use (resident bytes less the
 * residual windows) plus idle pages */
static inline uint64_t tc_pool_bytes(const vq_cache *c)
{
    vq_cache_usage u;
    if (vq_cache_stats(c, -1, &u) != VQ_OK)
        return 0;
    return u.keys.resident_bytes - u.keys.residual_bytes + u.values.resident_bytes - u.values.residual_bytes +
           u.pool_free_bytes;
}

/* ||a - b|| / ||b|| over n entries (b in double) */
static inline double tc_rel_err(const float *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-30));
}

/* Reference attention of the last n query tokens of `layer` from the
 * cache's own decoded contents (vq_cache_gather); out [n][nqh][D] double.
 * Positions of the queries: qpos0 + t. Returns 0 on success. */
static inline int tc_ref_from_cache(vq_cache *c, int layer, const vq_layer_shape *ls, const float *q,
                                    size_t n, int32_t qpos0, double scale, double *out)
{
    size_t D = (size_t)ls->head_dim, g = (size_t)(ls->n_q_heads / ls->n_kv_heads);
    for (int h = 0; h < ls->n_kv_heads; h++) {
        size_t cnt = 0;
        if (vq_cache_gather(c, layer, h, 0, NULL, NULL, NULL, &cnt) != VQ_OK)
            return -1;
        int32_t *pos = malloc((cnt + 1) * sizeof *pos);
        float *k = malloc((cnt + 1) * D * sizeof *k), *v = malloc((cnt + 1) * D * sizeof *v);
        if (vq_cache_gather(c, layer, h, cnt, pos, k, v, &cnt) != VQ_OK) {
            free(pos), free(k), free(v);
            return -1;
        }
        for (size_t t = 0; t < n; t++)
            for (size_t gi = 0; gi < g; gi++) {
                size_t qh = (size_t)h * g + gi;
                tc_ref_attend_cap(q + (t * (size_t)ls->n_q_heads + qh) * D, D, cnt, pos, k, v, qpos0 + (int32_t)t,
                                  ls->window, scale, ls->softcap, out + (t * (size_t)ls->n_q_heads + qh) * D, NULL);
            }
        free(pos), free(k), free(v);
    }
    return 0;
}

#endif
