/* minicache.c -- cross-layer sharing of KV directions (MiniCache, Liu et
 * al. 2024, "MiniCache: KV Cache Compression in Depth Dimension").
 *
 * `cross=minicache:start=0.5,threshold=0.9`: from layer ceil(start * L)
 * on, adjacent layers form pairs (anchor a, follower a+1) when their shapes
 * and codec specs are equal and the codecs encode single tokens (a merged
 * token is re-encoded in place). For each token and KV head, when the
 * cosine similarity of the two layers' keys AND of their values reaches
 * `threshold`, the token is merged: the shared direction is the SLERP
 * midpoint (t = 0.5) of the two unit vectors, which for t = 0.5 is the
 * normalised sum; the anchor's stored vector becomes |x_a| * d (re-encoded
 * in place), and the follower keeps only the norm ratio |x_f| / |x_a| as
 * fp16 (2 bytes per role). Tokens below the threshold keep the follower's
 * own full vectors (its normal storage). The follower's attention reads
 * its own tokens plus the anchor's merged slots with scores and value
 * weights scaled by the ratios (x_f = ratio * x_a' exactly).
 *
 * Contract: the anchor layer is appended first, the follower next with the
 * same positions (what a forward pass does, layer by layer). The anchor's
 * attention of those tokens ran before the merge (on unmerged vectors).
 * Eviction policies are refused with minicache (the pair must hold the same
 * tokens); sliding windows are fine (paired layers have the same one). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/fp16.h"
#include "core/mem.h"

/* per follower's anchor layer: the floats of its last append, kept until
 * the follower has merged them */
typedef struct {
    float *k, *v; /* [n][n_kv_heads][head_dim] */
    size_t n, cap;
    int valid;
} mc_stage;

typedef struct {
    double start, threshold;
    mc_stage *stage; /* [n_layers] (anchors only) */
} mc_state;

static vq_status mc_canon(vq_spec *sp, char *canon, size_t cap, char *err)
{
    double start, thr;
    VQ_TRY(vq_spec_float(sp, "start", 0.5, 0.0, 1.0, &start, err));
    VQ_TRY(vq_spec_float(sp, "threshold", 0.9, -1.0, 1.0, &thr, err));
    snprintf(canon, cap, "minicache:start=%g,threshold=%g", start, thr);
    return VQ_OK;
}

static vq_status mc_setup(vq_cache *c, char *err)
{
    vq_spec sp;
    mc_state *S = calloc(1, sizeof *S);
    if (!S)
        return vq_fail(err, VQ_ERR_NOMEM, "minicache: out of memory");
    c->xstate = S;
    S->stage = calloc((size_t)c->n_layers, sizeof *S->stage);
    if (!S->stage)
        return vq_fail(err, VQ_ERR_NOMEM, "minicache: out of memory");
    VQ_TRY(vq_spec_parse(c->cfg->cross, &sp, err));
    VQ_TRY(vq_spec_float(&sp, "start", 0.5, 0.0, 1.0, &S->start, err));
    VQ_TRY(vq_spec_float(&sp, "threshold", 0.9, -1.0, 1.0, &S->threshold, err));
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED, "cache config: cross: minicache cannot be combined with evict=%s",
                       c->cfg->evict);
    return VQ_OK;
}

/* pairs are made once the layers have codecs (their specs must be equal) */
static vq_status mc_layers_ready(vq_cache *c, char *err)
{
    const mc_state *S = c->xstate;
    int first = (int)ceil(S->start * c->n_layers);
    for (int a = first; a + 1 < c->n_layers; a += 2) {
        vq_cache_layer *A = &c->layers[a], *F = &c->layers[a + 1];
        const vq_layer_shape *x = &A->shape, *y = &F->shape;
        if (x->n_kv_heads != y->n_kv_heads || x->n_q_heads != y->n_q_heads || x->head_dim != y->head_dim ||
            x->window != y->window || x->softcap != y->softcap || A->group != 1 || F->group != 1 ||
            strcmp(vq_codec_spec(A->kc), vq_codec_spec(F->kc)) != 0 ||
            strcmp(vq_codec_spec(A->vc), vq_codec_spec(F->vc)) != 0)
            continue; /* not pairable: both stay plain layers */
        A->xrole = VQ_CROSS_ANCHOR;
        A->xpeer = a + 1;
        F->xrole = VQ_CROSS_FOLLOWER;
        F->xpeer = a;
        for (int h = 0; h < x->n_kv_heads; h++) {
            A->heads[h].rx = calloc(A->res_cap, sizeof(vq_xslot));
            if (!A->heads[h].rx)
                return vq_fail(err, VQ_ERR_NOMEM, "minicache: out of memory");
        }
    }
    return VQ_OK;
}

static vq_status stage(vq_cache *c, int layer, const float *k, const float *v, size_t n)
{
    const vq_cache_layer *L = &c->layers[layer];
    mc_stage *st = &((mc_state *)c->xstate)->stage[layer];
    size_t f = n * (size_t)L->shape.n_kv_heads * (size_t)L->shape.head_dim;
    if (f > st->cap) {
        size_t nc = st->cap ? st->cap : f;
        while (nc < f)
            nc *= 2;
        int ok = vq_resize(&st->k, nc * sizeof *st->k);
        ok &= vq_resize(&st->v, nc * sizeof *st->v);
        if (!ok)
            return vq_fail(c->err, VQ_ERR_NOMEM, "minicache: out of memory");
        st->cap = nc;
    }
    memcpy(st->k, k, f * sizeof *k);
    memcpy(st->v, v, f * sizeof *v);
    st->n = n;
    st->valid = 1;
    return VQ_OK;
}

size_t vq_head_find_pos(const vq_cache_head *H, int32_t p)
{
    size_t lo = 0, hi = H->n_packed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (vq_head_pos(H, mid) < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < H->n_packed && vq_head_pos(H, lo) == p)
        return lo;
    for (size_t r = 0; r < H->n_res; r++)
        if (H->rpos[r] == p)
            return H->n_packed + r;
    return SIZE_MAX;
}

/* cosine of a and b; norms out */
static double cosine(const float *a, const float *b, size_t D, double *na, double *nb)
{
    double ab = 0, aa = 0, bb = 0;
    for (size_t d = 0; d < D; d++) {
        ab += (double)a[d] * b[d];
        aa += (double)a[d] * a[d];
        bb += (double)b[d] * b[d];
    }
    *na = sqrt(aa);
    *nb = sqrt(bb);
    return *na > 0 && *nb > 0 ? ab / (*na * *nb) : -2.0;
}

/* out = na * normalise(a/na + b/nb): the anchor's merged vector */
static void merged_vector(const float *a, const float *b, size_t D, double na, double nb, float *out)
{
    double s = 0;
    for (size_t d = 0; d < D; d++) {
        double x = a[d] / na + b[d] / nb;
        out[d] = (float)x;
        s += x * x;
    }
    double f = s > 0 ? na / sqrt(s) : 0;
    for (size_t d = 0; d < D; d++)
        out[d] = (float)(out[d] * f);
}

static vq_status write_anchor_slot(vq_cache_layer *A, vq_cache_head *H, size_t i, const float *k, const float *v)
{
    const size_t D = (size_t)A->shape.head_dim;
    if (i < H->n_packed) {
        size_t P = A->page_tokens;
        VQ_TRY(vq_codec_encode(A->kc, k, 1, H->kpages[i / P] + (i % P) * vq_codec_bytes_per_token(A->kc)));
        VQ_TRY(vq_codec_encode(A->vc, v, 1, H->vpages[i / P] + (i % P) * vq_codec_bytes_per_token(A->vc)));
    } else {
        size_t r = i - H->n_packed;
        VQ_TRY(vq_codec_encode(A->fk, k, 1, H->rk + r * 2 * D));
        VQ_TRY(vq_codec_encode(A->fv, v, 1, H->rv + r * 2 * D));
    }
    return VQ_OK;
}

/* the follower's append: merge with the anchor's staged floats */
static vq_status follower_append(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0)
{
    const mc_state *S = c->xstate;
    vq_cache_layer *F = &c->layers[layer], *A = &c->layers[F->xpeer];
    mc_stage *sg = &S->stage[F->xpeer];
    if (!sg->valid || A->app_pos0 != pos0 || A->app_n != n || sg->n != n)
        return vq_fail(c->err, VQ_ERR_STATE,
                       "minicache: layer %d must be appended right after its anchor layer %d, with the same tokens",
                       layer, F->xpeer);
    VQ_TRY(vq_cache_enforce(c, layer, pos0, 0));
    const size_t D = (size_t)F->shape.head_dim, nh = (size_t)F->shape.n_kv_heads, rb = 2 * D;
    const size_t keep = (size_t)c->cfg->residual;
    float *mk = c->tmp, *mv = c->tmp + D; /* tmp holds >= 2*D floats (set_threads) */
    for (size_t t = 0; t < n; t++) {
        for (size_t h = 0; h < nh; h++) {
            const float *ka = sg->k + (t * nh + h) * D, *va = sg->v + (t * nh + h) * D;
            const float *kf = k + (t * nh + h) * D, *vf = v + (t * nh + h) * D;
            double nka, nkf, nva, nvf;
            double ck = cosine(ka, kf, D, &nka, &nkf), cv = cosine(va, vf, D, &nva, &nvf);
            vq_cache_head *HA = &A->heads[h], *HF = &F->heads[h];
            size_t slot = SIZE_MAX;
            if (ck >= S->threshold && cv >= S->threshold)
                slot = vq_head_find_pos(HA, pos0 + (int32_t)t);
            if (slot != SIZE_MAX && vq_head_alive(HA, slot)) {
                merged_vector(ka, kf, D, nka, nkf, mk);
                merged_vector(va, vf, D, nva, nvf, mv);
                VQ_TRY(write_anchor_slot(A, HA, slot, mk, mv));
                vq_xslot x = { vq_fp32_to_fp16((float)(nkf / nka)), vq_fp32_to_fp16((float)(nvf / nva)), 1 };
                if (slot < HA->n_packed)
                    HA->x[slot] = x;
                else
                    HA->rx[slot - HA->n_packed] = x;
                continue;
            }
            /* not merged: the follower keeps its own vectors */
            VQ_TRY(vq_codec_encode(F->fk, kf, 1, HF->rk + HF->n_res * rb));
            VQ_TRY(vq_codec_encode(F->fv, vf, 1, HF->rv + HF->n_res * rb));
            HF->rpos[HF->n_res] = pos0 + (int32_t)t;
            if (HF->rscore)
                HF->rscore[HF->n_res] = 0.0f;
            HF->n_res++;
            if (HF->n_res == F->res_cap)
                VQ_TRY(vq_cache_flush_residual(c, F, HF, keep));
        }
    }
    sg->valid = 0;
    F->last_pos = pos0 + (int32_t)(n - 1);
    F->app_pos0 = pos0;
    F->app_n = n;
    return VQ_OK;
}

static vq_status mc_append(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0, int *done)
{
    const vq_cache_layer *L = &c->layers[layer];
    if (L->xrole == VQ_CROSS_FOLLOWER) {
        *done = 1;
        return follower_append(c, layer, k, v, n, pos0);
    }
    return L->xrole == VQ_CROSS_ANCHOR ? stage(c, layer, k, v, n) : VQ_OK;
}

/* the follower: its own tokens and the anchor's merged ones (anchor
 * vector x ratio), merged by position */
static vq_status gather_follower(vq_cache *c, int layer, int h, size_t cap, int32_t *pos, float *k, float *v,
                                 size_t *n)
{
    vq_cache_layer *F = &c->layers[layer], *A = &c->layers[F->xpeer];
    vq_cache_head *HA = &A->heads[h];
    const size_t D = (size_t)F->shape.head_dim;
    size_t nown = 0, na = 0, nm = 0;
    VQ_TRY(vq_cache_gather_own(c, layer, h, 0, NULL, NULL, NULL, &nown));
    VQ_TRY(vq_cache_gather_own(c, F->xpeer, h, 0, NULL, NULL, NULL, &na));
    for (size_t i = 0; i < vq_head_slots(HA); i++) {
        const vq_xslot *x = i < HA->n_packed ? &HA->x[i] : &HA->rx[i - HA->n_packed];
        nm += vq_head_alive(HA, i) && x->merged;
    }
    *n = nown + nm;
    if (!pos && !k && !v)
        return VQ_OK;
    if (*n > cap)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_gather: %zu tokens held, capacity %zu", *n, cap);
    size_t tot = nown + na + 1;
    int32_t *p1 = malloc(tot * sizeof *p1);
    float *k1 = malloc(tot * D * sizeof *k1), *v1 = malloc(tot * D * sizeof *v1);
    vq_status st = p1 && k1 && v1 ? VQ_OK : vq_fail(c->err, VQ_ERR_NOMEM, "vq_cache_gather: out of memory");
    if (st == VQ_OK)
        st = vq_cache_gather_own(c, layer, h, nown, p1, k1, v1, &nown);
    if (st == VQ_OK)
        st = vq_cache_gather_own(c, F->xpeer, h, na, p1 + nown, k1 + nown * D, v1 + nown * D, &na);
    if (st == VQ_OK) {
        /* keep only the anchor's merged tokens, scaled by the ratios */
        size_t live = 0, w = nown;
        for (size_t i = 0; i < vq_head_slots(HA); i++) {
            if (!vq_head_alive(HA, i))
                continue;
            const vq_xslot *x = i < HA->n_packed ? &HA->x[i] : &HA->rx[i - HA->n_packed];
            size_t src = nown + live++;
            if (!x->merged)
                continue;
            float rk = vq_fp16_to_fp32(x->rk), rv = vq_fp16_to_fp32(x->rv);
            p1[w] = p1[src];
            for (size_t d = 0; d < D; d++) {
                k1[w * D + d] = k1[src * D + d] * rk;
                v1[w * D + d] = v1[src * D + d] * rv;
            }
            w++;
        }
        /* merge the two position-sorted runs [0, nown) and [nown, w) */
        size_t i = 0, j = nown, o = 0;
        while (o < w) {
            size_t pick = (j >= w || (i < nown && p1[i] < p1[j])) ? i++ : j++;
            if (pos)
                pos[o] = p1[pick];
            if (k)
                memcpy(k + o * D, k1 + pick * D, D * sizeof *k);
            if (v)
                memcpy(v + o * D, v1 + pick * D, D * sizeof *v);
            o++;
        }
    }
    free(p1), free(k1), free(v1);
    return st;
}

static vq_status mc_gather(vq_cache *c, int layer, int h, size_t cap, int32_t *pos, float *k, float *v, size_t *n,
                           int *done)
{
    if (c->layers[layer].xrole != VQ_CROSS_FOLLOWER)
        return VQ_OK;
    *done = 1;
    return gather_follower(c, layer, h, cap, pos, k, v, n);
}

static vq_cache_layer *mc_lender(vq_cache *c, const vq_cache_layer *L)
{
    return L->xrole == VQ_CROSS_FOLLOWER ? &c->layers[L->xpeer] : NULL;
}

/* merged tokens cost the follower 2 bytes (fp16 norm ratio) per role; the
 * ratio arrays live beside the anchor's slots */
static void mc_stats(const vq_cache *c, const vq_cache_layer *L, vq_cache_usage *u)
{
    if (L->xrole != VQ_CROSS_FOLLOWER)
        return;
    const uint64_t D = (uint64_t)L->shape.head_dim;
    vq_cache_role_stats *rs[2] = { &u->keys, &u->values };
    const vq_cache_layer *A = &c->layers[L->xpeer];
    for (int h = 0; h < A->shape.n_kv_heads; h++) {
        const vq_cache_head *H = &A->heads[h];
        uint64_t merged = 0;
        for (size_t i = 0; i < vq_head_slots(H); i++) {
            const vq_xslot *x = i < H->n_packed ? &H->x[i] : &H->rx[i - H->n_packed];
            merged += vq_head_alive(H, i) && x->merged;
        }
        for (int r = 0; r < 2; r++) {
            rs[r]->tokens += merged;
            rs[r]->stored_slots += merged;
            rs[r]->fp16_bytes += merged * 2 * D;
            rs[r]->accounted_bytes += merged * 2;
            rs[r]->resident_bytes += ((uint64_t)H->cap_slots + A->res_cap) * 2;
        }
        u->index_bytes += (uint64_t)H->cap_slots + A->res_cap; /* merged flags */
    }
}

static size_t mc_buffer_bytes(const vq_cache *c)
{
    const mc_state *S = c->xstate;
    size_t b = 0;
    for (int l = 0; S && S->stage && l < c->n_layers; l++)
        b += 2 * S->stage[l].cap * sizeof(float);
    return b;
}

static void mc_reset(vq_cache *c)
{
    mc_state *S = c->xstate;
    for (int l = 0; S && S->stage && l < c->n_layers; l++)
        S->stage[l].valid = 0;
}

static void mc_free(vq_cache *c)
{
    mc_state *S = c->xstate;
    if (!S)
        return;
    for (int l = 0; S->stage && l < c->n_layers; l++) {
        free(S->stage[l].k);
        free(S->stage[l].v);
    }
    free(S->stage);
    free(S);
}

const vq_cross_ops vq_cross_minicache_ops = {
    .name = "minicache",
    .canon = mc_canon,
    .setup = mc_setup,
    .layers_ready = mc_layers_ready,
    .append = mc_append,
    .gather = mc_gather,
    .lender = mc_lender,
    .stats = mc_stats,
    .buffer_bytes = mc_buffer_bytes,
    .reset = mc_reset,
    .free = mc_free,
};
