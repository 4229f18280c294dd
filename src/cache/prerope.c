/* prerope.c -- keys packed before RoPE (contract in prerope.h). */
#include "cache/prerope.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/sinks.h"
#include "core/io.h"
#include "kernels/kernels.h"

/* Scoring applies RoPE to every decoded key. Its angles p * f_i come from
 * two small tables instead of cos/sin calls: with p = 256 h + r,
 *   lo[r][i] = (cos, sin)(r f_i) for r < 256,  hi[h][i] = (cos, sin)(256 h f_i),
 * each computed in double and rounded to float; RoPE at p is the turn by
 * lo[r] composed with the turn by hi[h] (error a few float ulps, far below
 * any codec's), and scoring moves the hi turn onto the queries. The memory is bounded: lo is 256 x D floats, hi grows by D
 * floats per 256 positions (when append packs keys beyond it, so it covers
 * every packed position before any scoring, which runs on worker threads
 * and only reads it). Layers with the same inv_freq share the tables (the
 * first such layer owns them). */
#define ROPE_LO 256
struct vq_prerope {
    int n_layers;
    float **inv_freq; /* [n_layers][D/2] or NULL (not set) */
    int *neox;
    int *owner;       /* [n_layers]: the layer whose tables this one reads */
    float **lo, **hi; /* [n_layers]: owned tables, NULL for readers */
    int32_t *hi_n;    /* [n_layers]: rows of an owned hi table */
    float **mean;     /* prerope=2: [n_layers] -> [n_kv_heads][D] key means, NULL until a flush */
};

int vq_cache_prerope_on(const vq_cache *c) { return c && c->cfg->prerope; }

vq_status vq_cache_prerope_check(const vq_cache *c, char *err)
{
    if (c->cfg->prerope && strcmp(c->cfg->cross, "none") != 0)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: prerope=1 needs cross=none");
    return VQ_OK;
}

vq_status vq_cache_set_rope(vq_cache *c, int l, const float *inv_freq, int neox)
{
    if (!c || !inv_freq)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "vq_cache_set_rope: NULL argument");
    if (!c->cfg->prerope)
        return vq_fail(c->err, VQ_ERR_STATE, "vq_cache_set_rope: the cache config has no prerope=1 or 2");
    if (l < 0 || l >= c->n_layers)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "prerope: layer %d out of range", l);
    if (!c->prerope) {
        struct vq_prerope *p = calloc(1, sizeof *p);
        if (p) {
            p->inv_freq = calloc((size_t)c->n_layers, sizeof *p->inv_freq);
            p->neox = calloc((size_t)c->n_layers, sizeof *p->neox);
            p->owner = calloc((size_t)c->n_layers, sizeof *p->owner);
            p->lo = calloc((size_t)c->n_layers, sizeof *p->lo);
            p->hi = calloc((size_t)c->n_layers, sizeof *p->hi);
            p->hi_n = calloc((size_t)c->n_layers, sizeof *p->hi_n);
            p->mean = calloc((size_t)c->n_layers, sizeof *p->mean);
        }
        if (!p || !p->inv_freq || !p->neox || !p->owner || !p->lo || !p->hi || !p->hi_n || !p->mean) {
            if (p) {
                free(p->inv_freq);
                free(p->neox);
                free(p->owner);
                free(p->lo);
                free(p->hi);
                free(p->hi_n);
                free(p->mean);
            }
            free(p);
            return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory");
        }
        p->n_layers = c->n_layers;
        c->prerope = p;
    }
    size_t half = (size_t)c->layers[l].shape.head_dim / 2;
    float *f = c->prerope->inv_freq[l] ? c->prerope->inv_freq[l] : malloc(half * sizeof *f);
    if (!f)
        return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory");
    for (size_t i = 0; i < half; i++)
        if (!isfinite(inv_freq[i]) || inv_freq[i] < 0.0f) {
            if (!c->prerope->inv_freq[l])
                free(f);
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "prerope: layer %d: inv_freq[%zu] invalid", l, i);
        }
    memcpy(f, inv_freq, half * sizeof *f);
    struct vq_prerope *p = c->prerope;
    p->inv_freq[l] = f;
    p->neox[l] = neox != 0;
    /* share the tables of an earlier layer with the same frequencies */
    free(p->lo[l]);
    free(p->hi[l]);
    p->lo[l] = p->hi[l] = NULL;
    p->hi_n[l] = 0;
    p->owner[l] = l;
    for (int o = 0; o < l; o++)
        if (p->inv_freq[o] && p->owner[o] == o && (size_t)c->layers[o].shape.head_dim / 2 == half &&
            memcmp(p->inv_freq[o], f, half * sizeof *f) == 0) {
            p->owner[l] = o;
            break;
        }
    return VQ_OK;
}

/* rows [r0, r1) of a table of angles step * row * f_i: each row the D/2
 * cosines, then the D/2 sines */
static void angles(float *t, size_t half, const float *f, double step, int32_t r0, int32_t r1)
{
    for (int32_t r = r0; r < r1; r++)
        for (size_t i = 0; i < half; i++) {
            double th = step * (double)r * (double)f[i];
            t[(size_t)r * 2 * half + i] = (float)cos(th);
            t[(size_t)r * 2 * half + half + i] = (float)sin(th);
        }
}

/* layer l's tables cover positions [0, need) */
static vq_status tab_grow(vq_cache *c, int l, int32_t need)
{
    struct vq_prerope *p = c->prerope;
    const int o = p->owner[l];
    const size_t half = (size_t)c->layers[o].shape.head_dim / 2;
    if (!p->lo[o]) {
        float *t = malloc((size_t)ROPE_LO * 2 * half * sizeof *t);
        if (!t)
            return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory for the RoPE tables");
        angles(t, half, p->inv_freq[o], 1.0, 0, ROPE_LO);
        p->lo[o] = t;
    }
    int32_t rows = need / ROPE_LO + 1;
    if (rows <= p->hi_n[o])
        return VQ_OK;
    rows = rows < 2 * p->hi_n[o] ? 2 * p->hi_n[o] : rows;
    float *t = realloc(p->hi[o], (size_t)rows * 2 * half * sizeof *t);
    if (!t)
        return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory for the RoPE tables");
    angles(t, half, p->inv_freq[o], (double)ROPE_LO, p->hi_n[o], rows);
    p->hi[o] = t;
    p->hi_n[o] = rows;
    return VQ_OK;
}

vq_status vq_cache_prerope_ready(vq_cache *c, const vq_cache_layer *L)
{
    int l = (int)(L - c->layers);
    if (!c->cfg->prerope || (c->prerope && c->prerope->inv_freq[l]))
        return VQ_OK;
    return vq_fail(c->err, VQ_ERR_STATE,
                   "cache layer %d: prerope=1 needs the model's RoPE (create the cache with vq_cache_for_model)", l);
}

/* rotate the pairs of x (D floats) by sign * pos * inv_freq */
static void rope_one(float *x, size_t D, int32_t pos, const float *inv_freq, int neox, double sign)
{
    size_t half = D / 2;
    for (size_t i = 0; i < half; i++) {
        double th = sign * (double)pos * (double)inv_freq[i];
        float cs = (float)cos(th), sn = (float)sin(th);
        size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * cs - b * sn;
        x[i1] = a * sn + b * cs;
    }
}

void vq_cache_prerope_unrope_rows(const vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n,
                                  float *x)
{
    const int l = (int)(L - c->layers);
    if (!c->cfg->prerope || !c->prerope || !c->prerope->inv_freq[l])
        return;
    const size_t D = (size_t)L->shape.head_dim;
    for (size_t t = 0; t < n; t++)
        rope_one(x + t * D, D, pos[t], c->prerope->inv_freq[l], c->prerope->neox[l], -1.0);
}

vq_status vq_cache_prerope_tabulate(vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n)
{
    if (!c->cfg->prerope)
        return VQ_OK;
    VQ_TRY(vq_cache_prerope_ready(c, L));
    int32_t need = 0;
    for (size_t t = 0; t < n; t++)
        need = pos[t] >= need ? pos[t] + 1 : need;
    return tab_grow(c, (int)(L - c->layers), need);
}

vq_status vq_cache_prerope_unrope(vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n, float *x)
{
    if (!c->cfg->prerope)
        return VQ_OK;
    VQ_TRY(vq_cache_prerope_ready(c, L));
    vq_cache_prerope_unrope_rows(c, L, pos, n, x);
    return vq_cache_prerope_tabulate(c, L, pos, n); /* these keys are packed next: scoring reads their angles */
}

/* x turned by table row t (kernels/rope.h: head_dim is a multiple of 32,
 * so half is a multiple of 16) */
static inline void rope_tab(float *x, const float *t, size_t half, int neox, float sgn)
{
    vq_kernels_get()->rope_pairs(x, t, half, neox, sgn);
}

vq_status vq_cache_prerope_center(vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t s, size_t n,
                                  float *x)
{
    if (c->cfg->prerope != 2 || !c->prerope || n == 0)
        return VQ_OK;
    const int l = (int)(L - c->layers);
    const size_t D = (size_t)L->shape.head_dim, h = (size_t)(H - L->heads);
    struct vq_prerope *p = c->prerope;
    if (!p->mean[l]) {
        p->mean[l] = calloc((size_t)L->shape.n_kv_heads * D, sizeof(float));
        if (!p->mean[l])
            return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory for the key means");
    }
    float *mu = p->mean[l] + h * D;
    if (s == 0) { /* the head's first packed group: the mean of the window's non-sink tokens (pre-RoPE), this
                   * group first in it, is the centre from now on */
        const size_t ns = vq_cache_head_sinks(c, L, H), nw = H->n_res - ns;
        float *w = malloc(nw * D * sizeof *w);
        if (!w)
            return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory for the key centre");
        vq_status st = vq_codec_decode(L->fk, H->rk + ns * 2 * D, nw, w);
        if (st == VQ_OK)
            st = vq_cache_prerope_unrope(c, L, H->rpos + ns, nw, w);
        for (size_t d = 0; st == VQ_OK && d < D; d++) {
            double a = 0.0;
            for (size_t t = 0; t < nw; t++)
                a += w[t * D + d];
            mu[d] = (float)(a / (double)nw);
        }
        free(w);
        VQ_TRY(st);
    }
    for (size_t t = 0; t < n; t++)
        for (size_t d = 0; d < D; d++)
            x[t * D + d] -= mu[d];
    return VQ_OK;
}

void vq_cache_prerope_rerope(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t s0,
                             size_t n, float *x)
{
    if (!c->cfg->prerope || !c->prerope)
        return;
    int l = (int)(L - c->layers);
    const struct vq_prerope *p = c->prerope;
    size_t D = (size_t)L->shape.head_dim, half = D / 2;
    if (!p->inv_freq[l])
        return;
    if (p->mean[l]) { /* prerope=2: the centre back before RoPE */
        const float *mu = p->mean[l] + (size_t)(H - L->heads) * D;
        for (size_t t = 0; t < n; t++)
            for (size_t d = 0; d < D; d++)
                x[t * D + d] += mu[d];
    }
    const int o = p->owner[l], neox = p->neox[l];
    for (size_t t = 0; t < n; t++) {
        int32_t pos = vq_head_pos(H, s0 + t);
        float *xt = x + t * D;
        if (pos < 0 || !p->lo[o] || pos / ROPE_LO >= p->hi_n[o]) { /* not tabled (not for packed keys) */
            rope_one(xt, D, pos, p->inv_freq[l], neox, 1.0);
            continue;
        }
        rope_tab(xt, p->lo[o] + (size_t)(pos % ROPE_LO) * D, half, neox, 1.0f);
        rope_tab(xt, p->hi[o] + (size_t)(pos / ROPE_LO) * D, half, neox, 1.0f);
    }
}

/* Scores with prerope: RoPE(k, lo + hi) . q = RoPE(k, lo) . RoPE(q, -hi),
 * so the keys turn by their lo angles only (one table row, no angle sum)
 * and the queries by -hi, once per run of keys with the same p / 256
 * (positions increase, so runs are contiguous). A run is scored from the
 * codes by the codec's score_rope where it has one (codec.h); otherwise,
 * and for prerope=2's centre, the block is decoded once and its keys turned
 * in place. A key outside the tables (not a packed one) turns by rope_one
 * against the plain queries. */
vq_status vq_cache_key_scores(vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, vq_codec *kc,
                              size_t pg, size_t n, vq_attn_worker *W, size_t nq, float *out)
{
    if (!c->cfg->prerope)
        return vq_codec_score(kc, W->qbuf, (int)nq, H->kpages[pg], n, out);
    const float *qf = W->qf;
    const size_t D = (size_t)L->shape.head_dim, half = D / 2, B = vq_codec_block_tokens(kc),
                 bpt = vq_codec_bytes_per_token(kc);
    const size_t s0 = pg * L->page_tokens;
    const vq_kernels *kern = vq_kernels_get();
    const int l = (int)(L - c->layers);
    const struct vq_prerope *p = c->prerope;
    const int o = p ? p->owner[l] : 0, neox = p ? p->neox[l] : 0;
    const int fused = kc->ops->score_rope && !(p && p->mean[l]);
    float *k = W->pk, *qh = W->pqh;
    int32_t *rows = W->prows;
    vq_status st = VQ_OK;
    int32_t cur_hi = -1; /* the hi row the queries in qh are turned by */
    for (size_t b = 0; b < n && st == VQ_OK; b += B) {
        const uint8_t *src = H->kpages[pg] + b * bpt;
        const size_t m = n - b < B ? n - b : B;
        int decoded = 0;
        for (size_t t = 0; t < m && st == VQ_OK;) {
            const int32_t pos = vq_head_pos(H, s0 + b + t);
            const int tabled = p && p->inv_freq[l] && pos >= 0 && p->lo[o] && pos / ROPE_LO < p->hi_n[o];
            size_t e = t + 1;
            if (tabled && !H->pos) { /* consecutive positions (cache_internal.h): up to the next hi row */
                const size_t run = (size_t)(ROPE_LO - pos % ROPE_LO);
                e = t + run < m ? t + run : m;
                for (size_t u = t; u < e; u++)
                    rows[u] = (int32_t)(pos % ROPE_LO + (int32_t)(u - t));
            } else if (tabled) { /* the run of keys with this hi row, and their lo rows */
                rows[t] = pos % ROPE_LO;
                while (e < m) {
                    const int32_t pe = vq_head_pos(H, s0 + b + e);
                    if (pe < 0 || pe / ROPE_LO != pos / ROPE_LO)
                        break;
                    rows[e++] = pe % ROPE_LO;
                }
            }
            if (tabled && pos / ROPE_LO != cur_hi) {
                cur_hi = pos / ROPE_LO;
                memcpy(qh, qf, nq * D * sizeof *qh);
                for (size_t j = 0; j < nq; j++)
                    rope_tab(qh + j * D, p->hi[o] + (size_t)cur_hi * D, half, neox, -1.0f);
            }
            if (tabled && fused) {
                if (kc->ops->score_rope(kc, src, t, e - t, p->lo[o], rows + t, neox, qh, D, (int)nq, out + b + t, n)) {
                    t = e;
                    continue;
                }
            }
            if (!decoded) {
                st = vq_codec_decode(kc, src, B, k);
                if (st != VQ_OK)
                    break;
                if (p && p->mean[l]) { /* prerope=2: the centre back before RoPE */
                    const float *mu = p->mean[l] + (size_t)(H - L->heads) * D;
                    for (size_t u = 0; u < m; u++)
                        for (size_t d = 0; d < D; d++)
                            k[u * D + d] += mu[d];
                }
                decoded = 1;
            }
            float *kt = k + t * D;
            if (!tabled) {
                if (p && p->inv_freq[l])
                    rope_one(kt, D, pos, p->inv_freq[l], neox, 1.0);
                kern->dense_dot(qf, D, (int)nq, kt, VQ_ELEM_F32, 1, D, out + b + t, n);
                t++;
                continue;
            }
            for (size_t u = t; u < e; u++)
                rope_tab(k + u * D, p->lo[o] + (size_t)rows[u] * D, half, neox, 1.0f);
            kern->dense_dot(qh, D, (int)nq, kt, VQ_ELEM_F32, e - t, D, out + b + t, n);
            t = e;
        }
    }
    return st;
}

/* ---- the saved section (persist.c; docs/cache-format.md, version 4) ----
 * per layer: u32 neox | head_dim/2 x f32 inv_freq | u32 has_centre |
 * has_centre: n_kv_heads x head_dim x f32 (prerope=2's centres) */
size_t vq_cache_prerope_section_bytes(const vq_cache *c)
{
    size_t b = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const vq_layer_shape *ls = &c->layers[l].shape;
        b += 8 + (size_t)ls->head_dim / 2 * 4;
        if (c->prerope && c->prerope->mean[l])
            b += (size_t)ls->n_kv_heads * (size_t)ls->head_dim * 4;
    }
    return b;
}

vq_status vq_cache_prerope_section_write(const vq_cache *c, uint8_t *out, size_t cap)
{
    if (cap < vq_cache_prerope_section_bytes(c))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prerope section: %zu bytes of room", cap);
    for (int l = 0; l < c->n_layers; l++)
        if (!c->prerope || !c->prerope->inv_freq[l])
            return vq_fail(NULL, VQ_ERR_STATE, "cache save: prerope layer %d has no RoPE (nothing appended yet)", l);
    const struct vq_prerope *p = c->prerope;
    for (int l = 0; l < c->n_layers; l++) {
        const vq_layer_shape *ls = &c->layers[l].shape;
        const size_t half = (size_t)ls->head_dim / 2, nm = (size_t)ls->n_kv_heads * (size_t)ls->head_dim;
        vq_put_u32(out, (uint32_t)p->neox[l]);
        out += 4;
        for (size_t i = 0; i < half; i++, out += 4)
            vq_put_f32(out, p->inv_freq[l][i]);
        vq_put_u32(out, p->mean[l] != NULL);
        out += 4;
        for (size_t i = 0; p->mean[l] && i < nm; i++, out += 4)
            vq_put_f32(out, p->mean[l][i]);
    }
    return VQ_OK;
}

vq_status vq_cache_prerope_section_read(vq_cache *c, const uint8_t *in, size_t len, size_t *used, char *err)
{
    size_t off = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const vq_cache_layer *L = &c->layers[l];
        const size_t half = (size_t)L->shape.head_dim / 2, nm = (size_t)L->shape.n_kv_heads * (size_t)L->shape.head_dim;
        if (8 + 4 * half > len - off)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: truncated in the prerope section (layer %d)", l);
        const uint32_t neox = vq_get_u32(in + off), has = vq_get_u32(in + off + 4 + 4 * half);
        if (neox > 1 || has > 1)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: prerope layer %d: flags %u, %u out of range", l, neox, has);
        float *f = malloc(half * sizeof *f);
        if (!f)
            return vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
        for (size_t i = 0; i < half; i++)
            f[i] = vq_get_f32(in + off + 4 + 4 * i);
        off += 8 + 4 * half;
        vq_status st = vq_cache_set_rope(c, l, f, (int)neox);
        free(f);
        if (st != VQ_OK)
            return vq_fail(err, st == VQ_ERR_NOMEM ? st : VQ_ERR_FORMAT, "cache file: %s", vq_cache_error(c));
        size_t packed = 0;
        for (int h = 0; h < L->shape.n_kv_heads; h++)
            packed += L->heads[h].n_packed;
        if (has ? c->cfg->prerope != 2 : c->cfg->prerope == 2 && packed > 0)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: prerope layer %d: %s key centres for prerope=%d", l,
                           has ? "unexpected" : "missing", (int)c->cfg->prerope);
        if (has) {
            if (nm > (len - off) / 4)
                return vq_fail(err, VQ_ERR_FORMAT, "cache file: truncated in the prerope centres (layer %d)", l);
            float *mu = malloc(nm * sizeof *mu);
            if (!mu)
                return vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
            for (size_t i = 0; i < nm; i++) {
                mu[i] = vq_get_f32(in + off + 4 * i);
                if (!isfinite(mu[i])) {
                    free(mu);
                    return vq_fail(err, VQ_ERR_FORMAT, "cache file: prerope layer %d: non-finite key centre", l);
                }
            }
            free(c->prerope->mean[l]);
            c->prerope->mean[l] = mu;
            off += 4 * nm;
        }
        if (L->last_pos >= 0 && (st = tab_grow(c, l, L->last_pos + 1)) != VQ_OK) /* every packed position */
            return vq_fail(err, st, "cache load: %s", vq_cache_error(c));
    }
    *used = off;
    return VQ_OK;
}

int vq_cache_prerope_matches(const vq_cache *c, int l, const float *inv_freq, int neox)
{
    if (!c->prerope || l < 0 || l >= c->n_layers || !c->prerope->inv_freq[l])
        return 0;
    const size_t half = (size_t)c->layers[l].shape.head_dim / 2;
    return c->prerope->neox[l] == (neox != 0) && memcmp(c->prerope->inv_freq[l], inv_freq, half * sizeof *inv_freq) == 0;
}

size_t vq_cache_prerope_bytes(const vq_cache *c)
{
    if (!c->prerope)
        return 0;
    const struct vq_prerope *p = c->prerope;
    size_t b = sizeof *p + (size_t)c->n_layers * (3 * sizeof(float *) + 2 * sizeof(int) + sizeof(int32_t));
    for (int l = 0; l < c->n_layers; l++) {
        size_t D = (size_t)c->layers[l].shape.head_dim;
        if (p->inv_freq[l])
            b += D / 2 * sizeof(float);
        if (p->lo[l])
            b += (size_t)ROPE_LO * D * sizeof(float);
        if (p->hi[l])
            b += (size_t)p->hi_n[l] * D * sizeof(float);
        if (p->mean[l])
            b += (size_t)c->layers[l].shape.n_kv_heads * D * sizeof(float);
    }
    return b + (size_t)c->n_layers * sizeof(float *);
}

void vq_cache_prerope_free(vq_cache *c)
{
    if (!c->prerope)
        return;
    for (int l = 0; l < c->prerope->n_layers; l++) {
        free(c->prerope->inv_freq[l]);
        free(c->prerope->lo[l]);
        free(c->prerope->hi[l]);
        free(c->prerope->mean[l]);
    }
    free(c->prerope->mean);
    free(c->prerope->inv_freq);
    free(c->prerope->neox);
    free(c->prerope->owner);
    free(c->prerope->lo);
    free(c->prerope->hi);
    free(c->prerope->hi_n);
    free(c->prerope);
    c->prerope = NULL;
}
