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
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/fp16.h"

vq_status vq_cache_minicache_setup(vq_cache *c, char *err)
{
    if (strncmp(c->cfg->cross, "minicache:", 10) != 0)
        return VQ_OK;
    vq_spec sp;
    VQ_TRY(vq_spec_parse(c->cfg->cross, &sp, err));
    VQ_TRY(vq_spec_float(&sp, "start", 0.5, 0.0, 1.0, &c->mc_start, err));
    VQ_TRY(vq_spec_float(&sp, "threshold", 0.9, -1.0, 1.0, &c->mc_threshold, err));
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED, "cache config: cross: minicache cannot be combined with evict=%s",
                       c->cfg->evict);
    int first = (int)ceil(c->mc_start * c->n_layers);
    for (int a = first; a + 1 < c->n_layers; a += 2) {
        vq_cache_layer *A = &c->layers[a], *F = &c->layers[a + 1];
        const vq_cache_layer_shape *x = &A->shape, *y = &F->shape;
        if (x->n_kv_heads != y->n_kv_heads || x->n_q_heads != y->n_q_heads || x->head_dim != y->head_dim ||
            x->window != y->window || x->softcap != y->softcap || A->group != 1 || F->group != 1 ||
            strcmp(vq_codec_spec(A->kc), vq_codec_spec(F->kc)) != 0 ||
            strcmp(vq_codec_spec(A->vc), vq_codec_spec(F->vc)) != 0)
            continue; /* not pairable: both stay plain layers */
        A->cross_role = 1;
        A->partner = a + 1;
        F->cross_role = 2;
        F->partner = a;
        for (int h = 0; h < x->n_kv_heads; h++) {
            A->heads[h].rx = calloc(A->res_cap, sizeof(vq_xslot));
            if (!A->heads[h].rx)
                return vq_fail(err, VQ_ERR_NOMEM, "minicache: out of memory");
        }
    }
    return VQ_OK;
}

vq_status vq_cache_minicache_stage(vq_cache *c, vq_cache_layer *L, const float *k, const float *v, size_t n)
{
    size_t f = n * (size_t)L->shape.n_kv_heads * (size_t)L->shape.head_dim;
    if (f > L->stage_cap) {
        size_t nc = L->stage_cap ? L->stage_cap : f;
        while (nc < f)
            nc *= 2;
        float *a = realloc(L->stage_k, nc * sizeof *a);
        if (a)
            L->stage_k = a;
        float *b = realloc(L->stage_v, nc * sizeof *b);
        if (b)
            L->stage_v = b;
        if (!a || !b)
            return vq_fail(c->err, VQ_ERR_NOMEM, "minicache: out of memory");
        L->stage_cap = nc;
    }
    memcpy(L->stage_k, k, f * sizeof *k);
    memcpy(L->stage_v, v, f * sizeof *v);
    L->stage_n = n;
    L->stage_valid = 1;
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

vq_status vq_cache_minicache_append(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0)
{
    vq_cache_layer *F = &c->layers[layer], *A = &c->layers[F->partner];
    if (!A->stage_valid || A->app_pos0 != pos0 || A->app_n != n || A->stage_n != n)
        return vq_fail(c->err, VQ_ERR_STATE,
                       "minicache: layer %d must be appended right after its anchor layer %d, with the same tokens",
                       layer, F->partner);
    VQ_TRY(vq_cache_enforce(c, layer, pos0, 0));
    const size_t D = (size_t)F->shape.head_dim, nh = (size_t)F->shape.n_kv_heads, rb = 2 * D;
    const size_t keep = (size_t)c->cfg->residual;
    float *mk = c->tmp, *mv = c->tmp + D; /* tmp holds >= 2*D floats (set_threads) */
    for (size_t t = 0; t < n; t++) {
        for (size_t h = 0; h < nh; h++) {
            const float *ka = A->stage_k + (t * nh + h) * D, *va = A->stage_v + (t * nh + h) * D;
            const float *kf = k + (t * nh + h) * D, *vf = v + (t * nh + h) * D;
            double nka, nkf, nva, nvf;
            double ck = cosine(ka, kf, D, &nka, &nkf), cv = cosine(va, vf, D, &nva, &nvf);
            vq_cache_head *HA = &A->heads[h], *HF = &F->heads[h];
            size_t slot = SIZE_MAX;
            if (ck >= c->mc_threshold && cv >= c->mc_threshold)
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
    A->stage_valid = 0;
    F->last_pos = pos0 + (int32_t)(n - 1);
    F->app_pos0 = pos0;
    F->app_n = n;
    return VQ_OK;
}
