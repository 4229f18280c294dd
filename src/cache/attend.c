/* attend.c -- attention straight from the packed cache.
 *
 * Per layer and KV head, the query tokens are taken in tiles of
 * VQ_CACHE_QUERY_TILE; the g query heads of the KV head times the tile's
 * tokens form nq prepared queries that vq_codec_score scores together, so
 * every page of packed keys is read once per (KV head, tile). For each page:
 *   s = scale * score(q, k_i), masked to -inf where the slot is dead, later
 *       than the query or outside the layer's sliding window;
 *   online softmax (Milakov & Gimelshein 2018): running max m and sum l per
 *   query; when m grows, the accumulators are rescaled by exp(m_old-m_new);
 *   w_i = exp(s_i - m); vq_codec_accumulate adds sum_i w_i v_i in the value
 *   codec's domain.
 * The fp16 residual window is scored and accumulated the same way with the
 * layer's fp16 codecs, into a separate plain-float accumulator sharing the
 * same m and l. At the end out = (accum_finish(acc) + acc_residual) / l.
 * This relies on accum_finish being linear (true of every codec: it undoes
 * a rotation or applies scales), so rescaling acc before finish is exact.
 *
 * When the eviction policy needs attention weights (h2o, tova, snapkv,
 * pyramidkv), the masked scaled scores of each tile are kept per slot in
 * c->wbuf and turned into final weights exp(s - m)/l after the tile. */
#include <math.h>
#include <string.h>

#include "cache/cache_internal.h"

/* Turn masked scaled scores s[j*n + i] (-inf = invisible) into softmax
 * numerators in place, updating m, l and rescaling acc rows (asz floats)
 * and accr rows (D floats). Scalar reference. */
static void online_update(float *s, size_t nq, size_t n, float *m, float *l, float *acc, size_t asz,
                          float *accr, size_t D)
{
    for (size_t j = 0; j < nq; j++) {
        float *row = s + j * n;
        float cmax = -INFINITY;
        for (size_t i = 0; i < n; i++)
            cmax = row[i] > cmax ? row[i] : cmax;
        if (cmax == -INFINITY) {
            memset(row, 0, n * sizeof *row);
            continue;
        }
        if (cmax > m[j]) {
            float f = m[j] == -INFINITY ? 0.0f : expf(m[j] - cmax);
            if (f != 1.0f) {
                for (size_t d = 0; d < asz; d++)
                    acc[j * asz + d] *= f;
                for (size_t d = 0; d < D; d++)
                    accr[j * D + d] *= f;
                l[j] *= f;
            }
            m[j] = cmax;
        }
        float sum = 0.0f, mj = m[j];
        for (size_t i = 0; i < n; i++) {
            float w = row[i] == -INFINITY ? 0.0f : expf(row[i] - mj);
            row[i] = w;
            sum += w;
        }
        l[j] += sum;
    }
}

typedef struct {
    const int32_t *qpos; /* [nt] query positions */
    size_t g, nt;
    int32_t window;
    float scale;
    float softcap; /* 0 = none */
} mask_ctx;

/* scale and mask raw scores of n slots with positions pos[] and liveness
 * alive[] (NULL = all live); keep a copy in wrow (stride wstride) if set */
static void mask_scores(const mask_ctx *mc, float *s, size_t n, const int32_t *pos, const uint8_t *alive,
                        float *wrow, size_t wstride)
{
    for (size_t j = 0; j < mc->g * mc->nt; j++) {
        int32_t p = mc->qpos[j / mc->g];
        float *row = s + j * n;
        for (size_t i = 0; i < n; i++) {
            int vis = (!alive || alive[i]) && pos[i] <= p && (mc->window == 0 || pos[i] > p - mc->window);
            float x = row[i] * mc->scale;
            if (mc->softcap > 0.0f)
                x = mc->softcap * tanhf(x / mc->softcap);
            row[i] = vis ? x : -INFINITY;
        }
        if (wrow)
            memcpy(wrow + j * wstride, row, n * sizeof *row);
    }
}

static int needs_weights(const vq_cache *c)
{
    return c->ev.kind == VQ_EVICT_H2O || c->ev.kind == VQ_EVICT_TOVA || c->ev.kind == VQ_EVICT_SNAPKV ||
           c->ev.kind == VQ_EVICT_PYRAMIDKV;
}

/* Add the final weights of the tile's queries to the slot scores. qt0 is
 * the call-relative index of the tile's first token, n_call the call's
 * token count. */
static void add_weights(vq_cache *c, vq_cache_head *H, size_t g, size_t nt, size_t qt0, size_t n_call)
{
    size_t ns = vq_head_slots(H);
    for (size_t tt = 0; tt < nt; tt++) {
        size_t t = qt0 + tt;
        int use;
        switch (c->ev.kind) {
        case VQ_EVICT_H2O:
            use = 1;
            break;
        case VQ_EVICT_TOVA:
            use = t == n_call - 1;
            break;
        default: /* snapkv / pyramidkv: the last `window` queries of a prompt */
            use = n_call > 1 && t + (size_t)c->ev.window >= n_call;
            break;
        }
        if (!use)
            continue;
        for (size_t gi = 0; gi < g; gi++) {
            size_t j = tt * g + gi;
            const float *row = c->wbuf + j * ns;
            float mj = c->m[j], inv = c->l[j] > 0.0f ? 1.0f / c->l[j] : 0.0f;
            for (size_t i = 0; i < ns; i++)
                if (row[i] != -INFINITY)
                    *vq_head_score(H, i) += expf(row[i] - mj) * inv;
        }
    }
}

static vq_status attend_head(vq_cache *c, vq_cache_layer *L, int h, const float *q, size_t n, int nqh,
                             float scale, float *out, int32_t qpos0)
{
    vq_cache_head *H = &L->heads[h];
    const size_t D = (size_t)L->shape.head_dim, g = (size_t)(nqh / L->shape.n_kv_heads);
    const size_t kqb = vq_codec_query_bytes(L->kc), fqb = vq_codec_query_bytes(L->fk);
    const size_t asz = vq_codec_accum_size(L->vc), P = L->page_tokens;
    const int want_w = needs_weights(c);
    int32_t qpos[VQ_CACHE_QUERY_TILE];

    if (want_w && (c->ev.kind == VQ_EVICT_TOVA || (n > 1 && c->ev.kind != VQ_EVICT_H2O)))
        for (size_t i = 0; i < vq_head_slots(H); i++) /* scores of this call only */
            *vq_head_score(H, i) = 0.0f;

    for (size_t t0 = 0; t0 < n; t0 += VQ_CACHE_QUERY_TILE) {
        size_t nt = n - t0 < VQ_CACHE_QUERY_TILE ? n - t0 : VQ_CACHE_QUERY_TILE, nq = nt * g;
        for (size_t tt = 0; tt < nt; tt++) {
            qpos[tt] = qpos0 + (int32_t)(t0 + tt);
            for (size_t gi = 0; gi < g; gi++) {
                const float *qv = q + ((t0 + tt) * (size_t)nqh + (size_t)h * g + gi) * D;
                size_t j = tt * g + gi;
                VQ_TRY(vq_codec_prepare_query(L->kc, qv, c->qbuf + j * kqb));
                VQ_TRY(vq_codec_prepare_query(L->fk, qv, (uint8_t *)c->qf + j * fqb));
            }
        }
        for (size_t j = 0; j < nq; j++) {
            c->m[j] = -INFINITY;
            c->l[j] = 0.0f;
        }
        memset(c->acc, 0, nq * asz * sizeof(float));
        memset(c->accr, 0, nq * D * sizeof(float));
        size_t ns = vq_head_slots(H);
        float *wb = NULL;
        if (want_w) {
            VQ_TRY(vq_cache_grow_wbuf(c, nq * ns));
            wb = c->wbuf;
            for (size_t i = 0; i < nq * ns; i++)
                wb[i] = -INFINITY;
        }
        mask_ctx mc = { qpos, g, nt, L->shape.window, scale, L->shape.softcap };
        int32_t qmin = qpos[0], qmax = qpos[nt - 1];

        /* packed pages */
        for (size_t s0 = 0; s0 < H->n_packed; s0 += P) {
            size_t m = H->n_packed - s0 < P ? H->n_packed - s0 : P;
            if (H->pos[s0] > qmax)
                break; /* positions increase: nothing later is visible */
            if (L->shape.window > 0 && H->pos[s0 + m - 1] <= qmin - L->shape.window)
                continue;
            const uint8_t *kp = H->kpages[s0 / P], *vp = H->vpages[s0 / P];
            VQ_TRY(vq_codec_score(L->kc, c->qbuf, (int)nq, kp, m, c->sc));
            mask_scores(&mc, c->sc, m, H->pos + s0, H->alive + s0, wb ? wb + s0 : NULL, ns);
            online_update(c->sc, nq, m, c->m, c->l, c->acc, asz, c->accr, D);
            VQ_TRY(vq_codec_accumulate(L->vc, c->sc, (int)nq, vp, m, c->acc));
        }
        /* fp16 residual window */
        if (H->n_res > 0) {
            size_t m = H->n_res;
            VQ_TRY(vq_codec_score(L->fk, c->qf, (int)nq, H->rk, m, c->sc));
            mask_scores(&mc, c->sc, m, H->rpos, NULL, wb ? wb + H->n_packed : NULL, ns);
            online_update(c->sc, nq, m, c->m, c->l, c->acc, asz, c->accr, D);
            VQ_TRY(vq_codec_accumulate(L->fv, c->sc, (int)nq, H->rv, m, c->accr));
        }
        for (size_t tt = 0; tt < nt; tt++)
            for (size_t gi = 0; gi < g; gi++) {
                size_t j = tt * g + gi;
                float *o = out + ((t0 + tt) * (size_t)nqh + (size_t)h * g + gi) * D;
                VQ_TRY(vq_codec_accum_finish(L->vc, c->acc + j * asz, c->tmp));
                float inv = c->l[j] > 0.0f ? 1.0f / c->l[j] : 0.0f;
                for (size_t d = 0; d < D; d++)
                    o[d] = (c->tmp[d] + c->accr[j * D + d]) * inv;
            }
        if (want_w)
            add_weights(c, H, g, nt, t0, n);
    }
    return VQ_OK;
}

vq_status vq_cache_attend(vq_cache *c, int layer, const float *q, size_t n,
                          int n_q_heads, float scale, float *out)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_attend: cache is NULL");
    if (layer < 0 || layer >= c->n_layers)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_attend: layer %d out of range [0, %d)", layer,
                       c->n_layers);
    vq_cache_layer *L = &c->layers[layer];
    if (!q || !out)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_attend: q or out is NULL");
    if (n_q_heads != L->shape.n_q_heads)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_attend: layer %d has %d query heads, got %d", layer,
                       L->shape.n_q_heads, n_q_heads);
    if (n == 0 || n > L->app_n)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "vq_cache_attend: layer %d: %zu query tokens, the last append had %zu", layer, n, L->app_n);
    if (!(scale > 0.0f) || !isfinite(scale))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_attend: scale %g is not a positive number",
                       (double)scale);
    int32_t qpos0 = L->app_pos0 + (int32_t)(L->app_n - n);
    for (int h = 0; h < L->shape.n_kv_heads; h++)
        VQ_TRY(attend_head(c, L, h, q, n, n_q_heads, scale, out, qpos0));
    return vq_cache_enforce(c, layer, L->last_pos, n > 1 ? 2 : 1);
}
