/* attend.c -- attention straight from the packed cache.
 *
 * Per layer, query tokens are taken in tiles of VQ_CACHE_QUERY_TILE. For a
 * tile, the work is split into items (KV head h, context chunk s): the g
 * query heads of h times the tile's tokens form nq prepared queries that
 * vq_codec_score scores together, so each page of packed keys is read once
 * per (KV head, tile). Chunk s of every head is its pages
 * [s*cp, (s+1)*cp), cp = c->attn_chunk / page_tokens (at least 1; halved
 * while the layer has fewer than VQ_CACHE_ATTN_ITEMS items, down to
 * VQ_CACHE_ATTN_CHUNK_MIN tokens: cache_internal.h), so the
 * items run on the cache's worker threads when it has some (split-K, as
 * FlashDecoding) and the arithmetic, fixed by position, is the same with
 * any number of threads (or none). For each page of a chunk:
 *   s = scale * score(q, k_i) (soft-capped if the layer says so), masked to
 *       -inf where the slot is dead, later than the query or outside the
 *       layer's sliding window;
 *   online softmax (Milakov & Gimelshein 2018): running max m and sum l per
 *   query; when m grows, the accumulators are rescaled by exp(m_old-m_new);
 *   w_i = exp(s_i - m); vq_codec_accumulate adds sum_i w_i v_i in the value
 *   codec's domain.
 * The last chunk also covers the fp16 residual window, scored and
 * accumulated the same way with fp16 codecs into a separate plain-float
 * accumulator sharing m and l. The chunks' partials (m, l, acc, acc_res)
 * are merged by rescaling to the largest m, then
 *   out = (accum_finish(acc) + acc_res) / l,
 * head by head inside the job, by the thread that finishes the head's last
 * chunk (any thread: the merge's order is chunk 0, 1, ... whoever runs it).
 * This relies on accumulators being linear in the weights and accum_finish
 * being linear (true of every codec: it undoes a rotation or applies
 * scales), so rescaling acc before finish is exact.
 *
 * When the eviction policy needs attention weights (h2o, tova, snapkv,
 * pyramidkv), the masked scaled scores are kept per slot in c->wbuf (one
 * region per KV head) and turned into final weights exp(s - m)/l after the
 * merge. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "cache/prerope.h"
#include "core/fp16.h"
#include "core/vexp.h"
#include "kernels/prefetch.h"

/* bytes of a page fetched ahead of its first use (kernels/prefetch.h: the
 * row kernels fetch the rest as they go); for key pages the whole first
 * block up to PF_BLOCK (a codec may keep block metadata at the block's end,
 * as kivix's outlier table, read before its codes) */
#define PF_HEAD 1024
#define PF_BLOCK 8192

/* store.c's bound on a layer's KV heads */
#define ATTN_MAX_KV_HEADS 1024

/* pages scored before one online softmax update (run_item) */
#define RUN_PAGES 64

/* Scores of one page (or of the residual window) for nq queries: row j at
 * s + j*n; sc > 0 the scale still to apply (mask_scores' answer; 1 when
 * already scaled). */
typedef struct {
    float *s;
    size_t n;
    float sc;
} score_block;

/* Turn the masked scores of nb blocks (-inf = invisible) into softmax
 * numerators in place, updating m, l and rescaling acc and acc2 (may be
 * NULL) rows (asz floats) and accr rows (D floats) once for all of them.
 * The exponentials are vq_exp_shift's (vexp.h: SIMD when the CPU has it),
 * the scale applied in the same pass (the same product as scaling first;
 * the maximum of the scaled row is the scaled maximum, rounding being
 * monotonic). */
static void online_update(const score_block *b, size_t nb, size_t nq, float *m, float *l, float *acc, size_t asz,
                          float *acc2, float *accr, size_t D)
{
    for (size_t j = 0; j < nq; j++) {
        float cmax = -INFINITY;
        for (size_t k = 0; k < nb; k++) {
            const float x = vq_row_max(b[k].s + j * b[k].n, b[k].n);
            if (x != -INFINITY && x * b[k].sc > cmax)
                cmax = x * b[k].sc;
        }
        if (cmax == -INFINITY) {
            for (size_t k = 0; k < nb; k++)
                memset(b[k].s + j * b[k].n, 0, b[k].n * sizeof(float));
            continue;
        }
        if (cmax > m[j]) {
            float f = m[j] == -INFINITY ? 0.0f : expf(m[j] - cmax);
            if (f != 1.0f) {
                for (size_t d = 0; d < asz; d++)
                    acc[j * asz + d] *= f;
                for (size_t d = 0; acc2 && d < asz; d++)
                    acc2[j * asz + d] *= f;
                for (size_t d = 0; d < D; d++)
                    accr[j * D + d] *= f;
                l[j] *= f;
            }
            m[j] = cmax;
        }
        for (size_t k = 0; k < nb; k++)
            l[j] += vq_exp_shift(b[k].s + j * b[k].n, b[k].n, b[k].sc, m[j]);
    }
}

typedef struct {
    const int32_t *qpos; /* [nt] query positions */
    size_t g, nt;
    int32_t window;
    float scale;
    float softcap; /* 0 = none */
} mask_ctx;

/* scale, cap and mask raw scores of n slots with positions pos[] (NULL:
 * pos0 + i) and liveness alive[] (NULL = all live); keep a copy in wrow
 * (stride wstride) if set. Returns the scale still to apply (online_update
 * does it): in the common case without a copy the scores are left raw and
 * the answer is the scale; otherwise 1. */
static float mask_scores(const mask_ctx *mc, float *s, size_t n, const int32_t *pos, int32_t pos0,
                        const uint8_t *alive, float *wrow, size_t wstride)
{
    /* common case: every slot live and visible to every query of the tile
     * (positions increase, so the first and last slots decide) */
    int all_live = 1;
    for (size_t i = 0; alive && i < n && all_live; i++)
        all_live = alive[i] != 0;
    int32_t qlo = mc->qpos[0], qhi = mc->qpos[mc->nt - 1];
    int32_t first = n ? (pos ? pos[0] : pos0) : 0, last = n ? (pos ? pos[n - 1] : pos0 + (int32_t)n - 1) : 0;
    const int plain = all_live && n > 0 && mc->softcap <= 0.0f && (mc->window == 0 || first > qhi - mc->window);
    if (plain && last > qlo && !wrow && mc->scale > 0.0f) {
        /* a prompt tile's diagonal: the slots up to the first query's
         * position are visible to all, the few after it per query; the
         * scores stay raw (the scale still to apply) */
        for (size_t j = 0; j < mc->g * mc->nt; j++) {
            const int32_t p = mc->qpos[j / mc->g];
            float *row = s + j * n;
            for (size_t i = n; i-- > 0;) {
                const int32_t pi = pos ? pos[i] : pos0 + (int32_t)i;
                if (pi <= p)
                    break; /* positions increase */
                row[i] = -INFINITY;
            }
        }
        return mc->scale;
    }
    if (plain && last <= qlo) {
        const float sc = mc->scale;
        if (!wrow && sc > 0.0f)
            return sc;
        for (size_t j = 0; j < mc->g * mc->nt; j++) {
            float *row = s + j * n;
            for (size_t i = 0; i < n; i++)
                row[i] *= sc;
            if (wrow)
                memcpy(wrow + j * wstride, row, n * sizeof *row);
        }
        return 1.0f;
    }
    for (size_t j = 0; j < mc->g * mc->nt; j++) {
        int32_t p = mc->qpos[j / mc->g];
        float *row = s + j * n;
        for (size_t i = 0; i < n; i++) {
            int32_t pi = pos ? pos[i] : pos0 + (int32_t)i;
            int vis = (!alive || alive[i]) && pi <= p && (mc->window == 0 || pi > p - mc->window);
            float x = row[i] * mc->scale;
            if (mc->softcap > 0.0f)
                x = mc->softcap * tanhf(x / mc->softcap);
            row[i] = vis ? x : -INFINITY;
        }
        if (wrow)
            memcpy(wrow + j * wstride, row, n * sizeof *row);
    }
    return 1.0f;
}

static int needs_weights(const vq_cache *c)
{
    return c->ev.kind == VQ_EVICT_H2O || c->ev.kind == VQ_EVICT_TOVA || c->ev.kind == VQ_EVICT_SNAPKV ||
           c->ev.kind == VQ_EVICT_PYRAMIDKV;
}

/* Add the final weights of the tile's queries (scores in wrow, merged m
 * and l) to the slot scores of head H. qt0: call-relative index of the
 * tile's first token; n_call: the call's token count. */
static void add_weights(const vq_cache *c, vq_cache_head *H, const float *wrow, const float *m, const float *l,
                        size_t g, size_t nt, size_t qt0, size_t n_call)
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
            const float *row = wrow + j * ns;
            float mj = m[j], inv = l[j] > 0.0f ? 1.0f / l[j] : 0.0f;
            for (size_t i = 0; i < ns; i++)
                if (row[i] != -INFINITY)
                    *vq_head_score(H, i) += expf(row[i] - mj) * inv;
        }
    }
}

/* the slots of the page at s0 (n of them) up to the last one at a position
 * <= qmax, rounded up to whole codec groups (the slots past it are masked
 * for every query of the tile: the causal part of a prompt's pages) */
static size_t visible_prefix(const vq_cache_layer *L, const vq_cache_head *H, size_t s0, size_t n, int32_t qmax)
{
    if (vq_head_pos(H, s0 + n - 1) <= qmax)
        return n;
    size_t lo = 0, hi = n - 1; /* pos(s0 + lo) <= qmax < pos(s0 + hi): positions increase */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (vq_head_pos(H, s0 + mid) <= qmax)
            lo = mid;
        else
            hi = mid;
    }
    const size_t v = (hi + L->group - 1) / L->group * L->group;
    return v < n ? v : n;
}

/* one tile of one layer: everything the items and the merge share */
typedef struct {
    vq_cache *c;
    vq_cache_layer *L;
    const float *q;
    int nqh;
    size_t t0, nt, g, nq, chunks, chunk_pages;
    int32_t qpos[VQ_CACHE_QUERY_TILE];
    float scale;
    size_t *woff; /* per head offset into c->wbuf, NULL = no weights */
    float *out;   /* the layer's output rows (merge_head) */
    atomic_uint *left; /* [head] chunks not yet finished */
} tile_job;

/* partial results of item it: m[nq], l[nq], acc[nq*asz], accr[nq*D] */
static float *part_m(const vq_cache *c, size_t it) { return c->part + it * c->part_stride; }

/* scale the lending layer's raw scores by the borrower's key ratios and
 * drop the lent slots that are not merged; after the mask, -inf stays
 * -inf */
static void apply_ratios_k(float *s, size_t nq, size_t n, const vq_xslot *x)
{
    for (size_t j = 0; j < nq; j++)
        for (size_t i = 0; i < n; i++)
            s[j * n + i] = x[i].merged ? s[j * n + i] * vq_fp16_to_fp32(x[i].rk) : 0.0f;
}

static void mask_unmerged(float *s, size_t nq, size_t n, const vq_xslot *x)
{
    for (size_t j = 0; j < nq; j++)
        for (size_t i = 0; i < n; i++)
            if (!x[i].merged)
                s[j * n + i] = -INFINITY;
}

static void apply_ratios_v(float *w, size_t nq, size_t n, const vq_xslot *x)
{
    for (size_t j = 0; j < nq; j++)
        for (size_t i = 0; i < n; i++)
            w[j * n + i] *= vq_fp16_to_fp32(x[i].rv);
}

/* a layer that borrows slots (vq_xslot, cross=minicache): the lending
 * layer A's merged slots of head h, chunk s */
static vq_status anchor_pass(tile_job *J, vq_cache_layer *A, size_t h, size_t s, int w, float *m, float *l,
                             float *acc, float *acc2, float *accr)
{
    vq_cache *c = J->c;
    vq_attn_worker *W = &c->workers[w];
    vq_cache_head *H = &A->heads[h];
    vq_codec *kc = A->kcw[w], *vc = A->vcw[w], *fk = A->fkw[w], *fv = A->fvw[w];
    const size_t D = (size_t)A->shape.head_dim, nq = J->nq, P = A->page_tokens, asz = vq_codec_accum_size(vc);
    mask_ctx mc = { J->qpos, J->g, J->nt, A->shape.window, J->scale, A->shape.softcap };
    int32_t qmax = J->qpos[J->nt - 1];
    size_t np = (H->n_packed + P - 1) / P;
    size_t pb = s * J->chunk_pages, pe = pb + J->chunk_pages < np ? pb + J->chunk_pages : np;
    for (size_t pg = pb; pg < pe; pg++) {
        size_t s0 = pg * P, n = H->n_packed - s0 < P ? H->n_packed - s0 : P;
        if (vq_head_pos(H, s0) > qmax)
            break;
        VQ_TRY(vq_codec_score(kc, W->qbuf2, (int)nq, H->kpages[pg], n, W->sc));
        apply_ratios_k(W->sc, nq, n, H->x + s0);
        const score_block sb = { W->sc, n,
                                 mask_scores(&mc, W->sc, n, H->pos ? H->pos + s0 : NULL, vq_head_pos(H, s0),
                                             H->alive ? H->alive + s0 : NULL, NULL, 0) };
        mask_unmerged(W->sc, nq, n, H->x + s0);
        online_update(&sb, 1, nq, m, l, acc, asz, acc2, accr, D);
        apply_ratios_v(W->sc, nq, n, H->x + s0);
        VQ_TRY(vq_codec_accumulate(vc, W->sc, (int)nq, H->vpages[pg], n, acc2));
    }
    if (s == J->chunks - 1 && H->n_res > 0) {
        size_t n = H->n_res;
        VQ_TRY(vq_codec_score(fk, W->qf, (int)nq, H->rk, n, W->sc));
        apply_ratios_k(W->sc, nq, n, H->rx);
        const score_block sb = { W->sc, n, mask_scores(&mc, W->sc, n, H->rpos, 0, NULL, NULL, 0) };
        mask_unmerged(W->sc, nq, n, H->rx);
        online_update(&sb, 1, nq, m, l, acc, asz, acc2, accr, D);
        apply_ratios_v(W->sc, nq, n, H->rx);
        VQ_TRY(vq_codec_accumulate(fv, W->sc, (int)nq, H->rv, n, accr));
    }
    return VQ_OK;
}

/* vdrop: the fewest consecutive blocks left out; shorter runs of
 * negligible blocks are summed with their neighbours, since each kept span
 * is one codec call (int8-weight kernels set up per call: KIVI-2 qbits=8
 * values decoded 0.85x as fast with every 32-token block cut out,
 * figures/bench/ab-session22.txt) */
#define DROP_MIN_RUN 4

/* vdrop: tokens per block that is kept or left out whole (32, rounded up
 * to the layer's group, a multiple of the value codec's block tokens) */
static size_t drop_unit(const vq_cache_layer *L)
{
    return (32 + L->group - 1) / L->group * L->group;
}

/* weights [a, e) of the nq rows (n apart) of a page's values: accumulated,
 * through W->wkeep when they are not the whole rows (the codec reads rows
 * of the length it is given) */
static vq_status accumulate_span(vq_codec *vc, vq_attn_worker *W, const float *w, size_t nq, size_t n,
                                 const uint8_t *page, size_t a, size_t e, float *acc)
{
    if (e <= a)
        return VQ_OK;
    if (a == 0 && e == n)
        return vq_codec_accumulate(vc, w, (int)nq, page, n, acc);
    const size_t len = e - a;
    for (size_t j = 0; j < nq; j++)
        memcpy(W->wkeep + j * len, w + j * n + a, len * sizeof(float));
    return vq_codec_accumulate(vc, W->wkeep, (int)nq, page + a / vq_codec_block_tokens(vc) * vq_codec_block_bytes(vc),
                               len, acc);
}

/* vq_codec_accumulate of one page's weights w (nq rows of n) without the
 * runs of at least DROP_MIN_RUN blocks of u tokens whose weights each sum
 * to at most f * l[j] for every query j. With f = vdrop / (the chunk's blocks) the weight left out of a
 * chunk is at most vdrop times its sum l (l only grows, and both scale
 * alike when the running maximum moves), so at most vdrop of the whole
 * attention weight over the chunks: the output moves by at most vdrop
 * times the largest |value| (l keeps the weight left out: the output is
 * not renormalised). */
static vq_status accumulate_kept(vq_codec *vc, vq_attn_worker *W, const float *w, size_t nq, size_t n,
                                 const uint8_t *page, size_t u, float f, const float *l, float *acc)
{
    size_t a = 0;     /* start of the kept span not yet accumulated */
    size_t gap = n;   /* start of the run of blocks that may be left out (n: none) */
    for (size_t b = 0; b < n; b += u) {
        const size_t e = b + u < n ? b + u : n;
        int keep = 0;
        for (size_t j = 0; j < nq && !keep; j++) {
            const float *r = w + j * n;
            float sum = 0.0f;
            for (size_t i = b; i < e; i++)
                sum += r[i];
            keep = sum > f * l[j];
        }
        if (!keep) {
            gap = gap < n ? gap : b;
            continue;
        }
        if (gap < n && b - gap >= DROP_MIN_RUN * u) { /* a long enough run: left out */
            VQ_TRY(accumulate_span(vc, W, w, nq, n, page, a, gap, acc));
            a = b;
        }
        gap = n; /* a shorter run stays in its span (a call per span costs more) */
    }
    if (gap < n && n - gap >= DROP_MIN_RUN * u)
        return accumulate_span(vc, W, w, nq, n, page, a, gap, acc);
    return accumulate_span(vc, W, w, nq, n, page, a, n, acc);
}

static vq_status run_item(tile_job *J, size_t it, int w)
{
    vq_cache *c = J->c;
    vq_cache_layer *L = J->L;
    vq_attn_worker *W = &c->workers[w];
    const size_t h = it / J->chunks, s = it % J->chunks;
    vq_cache_head *H = &L->heads[h];
    vq_codec *kc = L->kcw[w], *vc = L->vcw[w], *fk = L->fkw[w], *fv = L->fvw[w];
    const size_t D = (size_t)L->shape.head_dim, g = J->g, nq = J->nq, P = L->page_tokens;
    const size_t kqb = vq_codec_query_bytes(kc), fqb = vq_codec_query_bytes(fk), asz = vq_codec_accum_size(vc);
    float *m = part_m(c, it), *l = m + nq, *acc = l + nq, *accr = acc + nq * asz, *acc2 = NULL;
    vq_cache_layer *A = vq_cross_lender(c, L);
    if (A) {
        acc2 = accr + nq * D;
        memset(acc2, 0, nq * asz * sizeof(float));
    }

    /* the head's queries, prepared once per worker and tile job (a worker
     * runs several chunks of a head) */
    for (size_t tt = 0; W->qhead != h && tt < J->nt; tt++)
        for (size_t gi = 0; gi < g; gi++) {
            const float *qv = J->q + ((J->t0 + tt) * (size_t)J->nqh + h * g + gi) * D;
            size_t j = tt * g + gi;
            VQ_TRY(vq_codec_prepare_query(kc, qv, W->qbuf + j * kqb));
            VQ_TRY(vq_codec_prepare_query(fk, qv, (uint8_t *)W->qf + j * fqb));
            if (A)
                VQ_TRY(vq_codec_prepare_query(A->kcw[w], qv, W->qbuf2 + j * kqb));
        }
    W->qhead = h;
    for (size_t j = 0; j < nq; j++) {
        m[j] = -INFINITY;
        l[j] = 0.0f;
    }
    memset(acc, 0, nq * asz * sizeof(float));
    memset(accr, 0, nq * D * sizeof(float));
    size_t ns = vq_head_slots(H);
    float *wb = J->woff ? c->wbuf + J->woff[h] : NULL;
    mask_ctx mc = { J->qpos, g, J->nt, L->shape.window, J->scale, L->shape.softcap };
    int32_t qmin = J->qpos[0], qmax = J->qpos[J->nt - 1];

    /* this chunk's pages, a run of pages at a time: each page of the run
     * scored and masked into W->sc (its rows at the run's next free float,
     * stride its token count), one online softmax update for the run, then
     * its values page by page. A run ends where W->sc is full, at RUN_PAGES
     * pages, or after one page when a cross-layer method binds the codecs
     * page by page. */
    size_t np = (H->n_packed + P - 1) / P;
    size_t pb = s * J->chunk_pages, pe = pb + J->chunk_pages < np ? pb + J->chunk_pages : np;
    size_t kpf = vq_codec_block_bytes(kc) < PF_BLOCK ? vq_codec_block_bytes(kc) : PF_BLOCK;
    kpf = kpf > PF_HEAD ? kpf : PF_HEAD;
    kpf = kpf < L->kpage_bytes ? kpf : L->kpage_bytes;
    const size_t run_max = vq_cross_binds(c) ? 1 : RUN_PAGES;
    /* a value page's head: the part its value sums do not fetch themselves
     * (codec.h value_head; fp16's dense sums fetch their own rows past 2 KB,
     * and a longer head fetch made them 7% slower: ab-session44.txt part 3) */
    const size_t vhead = vc->value_head > PF_HEAD ? vc->value_head : PF_HEAD;
    /* vdrop: value blocks of du tokens left out below drop_f * l (accumulate_kept) */
    const size_t du = drop_unit(L);
    const float drop_f = (float)(c->cfg->vdrop / (double)((J->chunk_pages * P + du - 1) / du));
    if (pb < pe)
        vq_prefetch_span(H->kpages[pb], 0, kpf);
    size_t pg = pb;
    int last = 0; /* a page past the queries met: nothing later is visible */
    while (pg < pe && !last) {
        score_block run[RUN_PAGES];
        size_t rpage[RUN_PAGES], nr = 0, used = 0;
        for (; pg < pe && nr < run_max; pg++) {
            size_t s0 = pg * P, n = H->n_packed - s0 < P ? H->n_packed - s0 : P;
            if (vq_head_pos(H, s0) > qmax) {
                last = 1; /* positions increase */
                break;
            }
            if (L->shape.window > 0 && vq_head_pos(H, s0 + n - 1) <= qmin - L->shape.window)
                continue;
            n = visible_prefix(L, H, s0, n, qmax);
            if (used + nq * n > c->sc_floats)
                break; /* (never for a run's first page: W->sc holds nq_max pages) */
            VQ_TRY(vq_cross_bind(c, L, h, s0, kc, vc));
            /* this page's values are read after the run's scores, the next
             * page's keys next: fetch both now */
            vq_prefetch_span(H->vpages[pg], 0, vhead < n * L->vpage_bytes / P ? vhead : n * L->vpage_bytes / P);
            if (pg + 1 < pe)
                vq_prefetch_span(H->kpages[pg + 1], 0, kpf);
            float *sp = W->sc + used;
            VQ_TRY(vq_cache_key_scores(c, L, H, kc, pg, n, W, nq, sp)); /* prerope.h */
            run[nr] = (score_block){ sp, n,
                                     mask_scores(&mc, sp, n, H->pos ? H->pos + s0 : NULL, vq_head_pos(H, s0),
                                                 H->alive ? H->alive + s0 : NULL, wb ? wb + s0 : NULL, ns) };
            rpage[nr++] = pg;
            used += nq * n;
        }
        if (!nr)
            continue;
        online_update(run, nr, nq, m, l, acc, asz, acc2, accr, D);
        for (size_t k = 0; k < nr; k++)
            VQ_TRY(drop_f > 0.0f ? accumulate_kept(vc, W, run[k].s, nq, run[k].n, H->vpages[rpage[k]], du, drop_f, l, acc)
                                 : vq_codec_accumulate(vc, run[k].s, (int)nq, H->vpages[rpage[k]], run[k].n, acc));
    }
    /* the fp16 residual window, with the last chunk */
    if (s == J->chunks - 1 && H->n_res > 0) {
        size_t n = H->n_res;
        VQ_TRY(vq_codec_score(fk, W->qf, (int)nq, H->rk, n, W->sc));
        const score_block sb = { W->sc, n, mask_scores(&mc, W->sc, n, H->rpos, 0, NULL, wb ? wb + H->n_packed : NULL, ns) };
        online_update(&sb, 1, nq, m, l, acc, asz, acc2, accr, D);
        VQ_TRY(vq_codec_accumulate(fv, W->sc, (int)nq, H->rv, n, accr));
    }
    if (A)
        VQ_TRY(anchor_pass(J, A, h, s, w, m, l, acc, acc2, accr));
    return VQ_OK;
}

/* a[i] = a[i] * f1 + b[i] * f2 for i < n, four lanes at a time (the same
 * operations per element as the plain loop: the same floats) */
static void rescale_add(float *restrict a, const float *restrict b, size_t n, float f1, float f2)
{
    typedef float v4 __attribute__((vector_size(16)));
    const v4 F1 = { f1, f1, f1, f1 }, F2 = { f2, f2, f2, f2 };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4 x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        x = x * F1 + y * F2;
        memcpy(a + i, &x, sizeof x);
    }
    for (; i < n; i++)
        a[i] = a[i] * f1 + b[i] * f2;
}

/* merge the chunks of head h into chunk 0's partial, finish, write out
 * (worker w's codecs and scratch) */
static vq_status merge_head(tile_job *J, size_t h, int w)
{
    vq_cache *c = J->c;
    vq_cache_layer *L = J->L;
    const size_t D = (size_t)L->shape.head_dim, nq = J->nq, asz = vq_codec_accum_size(L->vc);
    size_t it0 = h * J->chunks;
    vq_cache_layer *A = vq_cross_lender(c, L);
    float *tmp = w ? c->workers[w].enc : c->tmp, *out = J->out; /* >= 2 * D floats each (threads.c) */
    float *m = part_m(c, it0), *l = m + nq, *acc = l + nq, *accr = acc + nq * asz, *acca = accr + nq * D;
    for (size_t s = 1; s < J->chunks; s++) {
        float *m2 = part_m(c, it0 + s), *l2 = m2 + nq, *acc2 = l2 + nq, *accr2 = acc2 + nq * asz,
              *acca2 = accr2 + nq * D;
        for (size_t j = 0; j < nq; j++) {
            if (m2[j] == -INFINITY)
                continue;
            float M = m[j] > m2[j] ? m[j] : m2[j];
            float f1 = m[j] == -INFINITY ? 0.0f : expf(m[j] - M), f2 = expf(m2[j] - M);
            rescale_add(acc + j * asz, acc2 + j * asz, asz, f1, f2);
            rescale_add(accr + j * D, accr2 + j * D, D, f1, f2);
            if (A)
                rescale_add(acca + j * asz, acca2 + j * asz, asz, f1, f2);
            l[j] = l[j] * f1 + l2[j] * f2;
            m[j] = M;
        }
    }
    for (size_t tt = 0; tt < J->nt; tt++)
        for (size_t gi = 0; gi < J->g; gi++) {
            size_t j = tt * J->g + gi;
            float *o = out + ((J->t0 + tt) * (size_t)J->nqh + h * J->g + gi) * D;
            VQ_TRY(vq_codec_accum_finish(L->vcw[w], acc + j * asz, tmp));
            if (A) {
                VQ_TRY(vq_codec_accum_finish(A->vcw[w], acca + j * asz, tmp + D));
                for (size_t d = 0; d < D; d++)
                    tmp[d] += tmp[D + d];
            }
            float inv = l[j] > 0.0f ? 1.0f / l[j] : 0.0f;
            for (size_t d = 0; d < D; d++)
                o[d] = (tmp[d] + accr[j * D + d]) * inv;
        }
    return VQ_OK;
}

/* items [b, e) on worker w (vq_pool_for's tid: its scratch is free); the
 * thread that finishes a head's last chunk merges the head */
static void items_fn(void *ctx, size_t b, size_t e, int w)
{
    tile_job *J = ctx;
    for (size_t it = b; it < e; it++) {
        vq_status st = run_item(J, it, w);
        const size_t h = it / J->chunks;
        if (st == VQ_OK && atomic_fetch_sub_explicit(&J->left[h], 1u, memory_order_acq_rel) == 1u)
            st = merge_head(J, h, w);
        if (st != VQ_OK && J->c->workers[w].st == VQ_OK)
            J->c->workers[w].st = st;
    }
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
    if (c->n_workers < 1)
        return vq_fail(c->err, VQ_ERR_STATE, "vq_cache_attend: no attention workers (out of memory earlier)");
    const size_t nkv = (size_t)L->shape.n_kv_heads, g = (size_t)(n_q_heads / L->shape.n_kv_heads);
    const int32_t qpos0 = L->app_pos0 + (int32_t)(L->app_n - n);
    const int want_w = needs_weights(c);
    size_t woff[ATTN_MAX_KV_HEADS];
    atomic_uint left[ATTN_MAX_KV_HEADS];

    if (want_w && (c->ev.kind == VQ_EVICT_TOVA || (n > 1 && c->ev.kind != VQ_EVICT_H2O)))
        for (size_t h = 0; h < nkv; h++) /* scores of this call only */
            for (size_t i = 0; i < vq_head_slots(&L->heads[h]); i++)
                *vq_head_score(&L->heads[h], i) = 0.0f;

    /* chunks per head: enough for the head with the most pages (of this
     * layer and of the layer lending it slots, if any); smaller chunks while
     * the items are few (cache_internal.h) */
    size_t cp = c->attn_chunk / L->page_tokens, maxp = 1;
    cp = cp ? cp : 1;
    size_t cp_min = VQ_CACHE_ATTN_CHUNK_MIN / L->page_tokens;
    cp_min = cp_min < 1 ? 1 : cp_min > cp ? cp : cp_min;
    const vq_cache_layer *lend = vq_cross_lender(c, L);
    for (size_t h = 0; h < nkv; h++) {
        size_t np = (L->heads[h].n_packed + L->page_tokens - 1) / L->page_tokens;
        maxp = np > maxp ? np : maxp;
        if (lend) {
            np = (lend->heads[h].n_packed + lend->page_tokens - 1) / lend->page_tokens;
            maxp = np > maxp ? np : maxp;
        }
    }
    while (cp > cp_min && nkv * ((maxp + cp - 1) / cp) < c->attn_items)
        cp = (cp + 1) / 2 > cp_min ? (cp + 1) / 2 : cp_min;
    const size_t chunks = (maxp + cp - 1) / cp, items = nkv * chunks;
    VQ_TRY(vq_cache_grow_parts(c, items));
    for (size_t t0 = 0; t0 < n; t0 += VQ_CACHE_QUERY_TILE) {
        tile_job J = { c, L, q, n_q_heads, t0, 0, g, 0, chunks, cp, { 0 }, scale, NULL, out, left };
        for (size_t h = 0; h < nkv; h++)
            atomic_init(&left[h], (unsigned)chunks);
        J.nt = n - t0 < VQ_CACHE_QUERY_TILE ? n - t0 : VQ_CACHE_QUERY_TILE;
        J.nq = J.nt * g;
        for (size_t tt = 0; tt < J.nt; tt++)
            J.qpos[tt] = qpos0 + (int32_t)(t0 + tt);
        if (want_w) {
            size_t tot = 0;
            for (size_t h = 0; h < nkv; h++) {
                woff[h] = tot;
                tot += J.nq * vq_head_slots(&L->heads[h]);
            }
            VQ_TRY(vq_cache_grow_wbuf(c, tot));
            for (size_t i = 0; i < tot; i++)
                c->wbuf[i] = -INFINITY;
            J.woff = woff;
        }
        for (int w = 0; w < c->n_workers; w++)
            c->workers[w].st = VQ_OK, c->workers[w].qhead = SIZE_MAX;
        if (c->threads && items > 1)
            vq_pool_for(c->threads, items, 1, items_fn, &J);
        else
            items_fn(&J, 0, items, 0);
        for (int w = 0; w < c->n_workers; w++)
            if (c->workers[w].st != VQ_OK)
                return c->workers[w].st;
        for (size_t h = 0; want_w && h < nkv; h++) { /* chunk 0's partial holds the merged m, l */
            float *m = part_m(c, h * chunks);
            add_weights(c, &L->heads[h], c->wbuf + woff[h], m, m + J.nq, g, J.nt, t0, n);
        }
    }
    return vq_cache_enforce(c, layer, L->last_pos, n > 1 ? 2 : 1);
}
