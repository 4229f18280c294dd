/* flush.c -- the residual window's oldest groups packed into pages.
 *
 * A head's window holds its newest tokens in fp16. Once it holds keep +
 * group tokens past its sinks, its oldest group is decoded from fp16, its
 * keys turned back before RoPE and centred where the cache packs them so
 * (prerope.h), and encoded with the layer's codecs into the head's next
 * packed slots; then the window moves down by a group.
 *
 * A decode step fills every head of a layer at the same token, so all of
 * them flush at once (smollm2 at 4k: 90 groups of 128 tokens in one step,
 * ~13 ms against ~7 for a whole step without). vq_cache_flush_full runs
 * those encodes as tasks on the cache's pool, one per (head, keys or
 * values): page allocation and the window's bookkeeping stay on the
 * caller, before and after; a task touches only its head's fp16 rows, the
 * slots made for it, its worker's codec clone (threads.c: they encode
 * exactly as the layer's own) and its worker's scratch. So the pages hold
 * the bytes the serial flush writes. */
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "cache/prerope.h"
#include "cache/sinks.h"

/* H's next group made room for: the slots and pages it goes to (on the
 * caller: the page pool is not shared between threads) */
static vq_status flush_begin(vq_cache *c, vq_cache_layer *L, vq_cache_head *H)
{
    VQ_TRY(vq_cache_prerope_ready(c, L));
    VQ_TRY(vq_cache_reserve_slots(c, L, H, H->n_packed + L->group));
    return vq_cross_bind(c, L, (size_t)(H - L->heads), H->n_packed, L->kc, L->vc);
}

/* H's oldest group past the sinks out of its window into its next slots:
 * the keys (values == 0) through fp16 codec fc and packed codec pc, or the
 * values; tmp holds group * head_dim floats. On failure *failed is the
 * codec holding the message (NULL: c->err holds it). Touches nothing
 * shared but reads: a task may run it (prerope=2's centring, which sets
 * the head's centre at its first group and can fail, is serial only:
 * vq_cache_flush_full). */
static vq_status flush_encode(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, int values, vq_codec *fc,
                              vq_codec *pc, float *tmp, vq_codec **failed)
{
    const size_t G = L->group, rb = 2 * (size_t)L->shape.head_dim, s = H->n_packed;
    const size_t ns = vq_cache_head_sinks(c, L, H); /* leading sink tokens stay (sinks.h) */
    *failed = fc;
    VQ_TRY(vq_codec_decode(fc, (values ? H->rv : H->rk) + ns * rb, G, tmp));
    if (!values) {
        vq_cache_prerope_unrope_rows(c, L, H->rpos + ns, G, tmp);
        *failed = NULL;
        VQ_TRY(vq_cache_prerope_center(c, L, H, s, G, tmp));
    }
    *failed = pc;
    return vq_codec_encode(pc, tmp, G, values ? vq_cache_vslot(L, H, s) : vq_cache_kslot(L, H, s));
}

/* the message of a failed flush_encode: the codec's, named by role */
static vq_status encode_failed(vq_cache *c, vq_status st, int values, const vq_codec *failed)
{
    if (!failed)
        return st;
    return vq_fail(c->err, st, "cache: %s: %s", values ? "values" : "keys", vq_codec_error(failed));
}

/* the packed group counted in and the window moved down (on the caller) */
static vq_status flush_end(vq_cache *c, vq_cache_layer *L, vq_cache_head *H)
{
    const size_t G = L->group, rb = 2 * (size_t)L->shape.head_dim, s = H->n_packed;
    const size_t ns = vq_cache_head_sinks(c, L, H);
    uint8_t *rk = H->rk + ns * rb, *rv = H->rv + ns * rb;
    int32_t *rpos = H->rpos + ns;
    float *rscore = H->rscore ? H->rscore + ns : NULL;
    vq_xslot *rx = H->rx ? H->rx + ns : NULL;
    VQ_TRY(vq_cache_prerope_tabulate(c, L, rpos, G)); /* scoring reads these keys' angles */
    if (s == 0 && !H->pos)
        H->pos_base = rpos[0];
    if (!H->pos && rpos[G - 1] - H->pos_base != (int32_t)(s + G - 1))
        VQ_TRY(vq_cache_head_materialize_pos(c, H)); /* a gap in the positions */
    for (size_t i = 0; i < G; i++) {
        if (H->pos)
            H->pos[s + i] = rpos[i];
        if (H->score)
            H->score[s + i] = rscore[i];
        if (H->x)
            H->x[s + i] = rx[i];
        if (H->alive)
            H->alive[s + i] = 1;
    }
    H->n_packed += G;
    size_t rest = H->n_res - ns - G;
    memmove(rk, rk + G * rb, rest * rb);
    memmove(rv, rv + G * rb, rest * rb);
    memmove(rpos, rpos + G, rest * sizeof *rpos);
    if (rscore)
        memmove(rscore, rscore + G, rest * sizeof *rscore);
    if (rx)
        memmove(rx, rx + G, rest * sizeof *rx);
    H->n_res = ns + rest;
    return VQ_OK;
}

static int needs_flush(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t keep)
{
    return H->n_res >= vq_cache_head_sinks(c, L, H) + keep + L->group;
}

vq_status vq_cache_flush_residual(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t keep)
{
    while (needs_flush(c, L, H, keep)) {
        VQ_TRY(flush_begin(c, L, H));
        for (int values = 0; values < 2; values++) {
            vq_codec *failed;
            vq_status st = values ? flush_encode(c, L, H, 1, L->fv, L->vc, c->tmp, &failed)
                                  : flush_encode(c, L, H, 0, L->fk, L->kc, c->tmp, &failed);
            if (st != VQ_OK)
                return encode_failed(c, st, values, failed);
        }
        VQ_TRY(flush_end(c, L, H));
    }
    return VQ_OK;
}

/* a head flushing on the pool: its two tasks' outcomes (0 keys, 1 values) */
typedef struct {
    size_t head;
    vq_status st[2];
    vq_codec *failed[2]; /* the codec holding a failure's message */
} flush_item;

typedef struct {
    vq_cache *c;
    vq_cache_layer *L;
    flush_item *items; /* task i is role i % 2 of items[i / 2] */
} flush_job;

static void flush_task(void *ctx, size_t b, size_t e, int tid)
{
    flush_job *J = ctx;
    vq_cache_layer *L = J->L;
    float *tmp = tid ? J->c->workers[tid].enc : J->c->tmp;
    for (size_t i = b; i < e; i++) {
        const int values = (int)(i & 1);
        flush_item *it = &J->items[i / 2];
        vq_codec *fc = values ? L->fvw[tid] : L->fkw[tid], *pc = values ? L->vcw[tid] : L->kcw[tid];
        it->st[values] = flush_encode(J->c, L, &L->heads[it->head], values, fc, pc, tmp, &it->failed[values]);
    }
}

/* one group of each listed head, the encodes on the pool */
static vq_status flush_parallel(vq_cache *c, vq_cache_layer *L, flush_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        VQ_TRY(flush_begin(c, L, &L->heads[items[i].head]));
    flush_job J = { c, L, items };
    vq_pool_for(c->threads, 2 * n, 1, flush_task, &J);
    vq_status first = VQ_OK;
    for (size_t i = 0; i < n; i++) {
        const flush_item *it = &items[i];
        if (it->st[0] != VQ_OK || it->st[1] != VQ_OK) { /* this head's group stays in its window */
            const int v = it->st[0] == VQ_OK;
            if (first == VQ_OK)
                first = encode_failed(c, it->st[v], v, it->failed[v]);
            continue;
        }
        vq_status se = flush_end(c, L, &L->heads[it->head]);
        first = first == VQ_OK ? se : first;
    }
    return first;
}

/* groups of fewer tokens flush serially: encoding one costs less than
 * handing it to the pool (fp16, q4_0, q8_0 flush a 1-token group on every
 * append: q4_0 at 4k decoded 144 -> 119 tok/s with those on the pool,
 * figures/bench/ab-session33.txt part 3) */
#define FLUSH_POOL_MIN_GROUP 32

vq_status vq_cache_flush_full(vq_cache *c, vq_cache_layer *L, size_t keep)
{
    const size_t nh = (size_t)L->shape.n_kv_heads;
    /* serial: no pool; small groups; prerope=2 (a head's first group sets
     * its centre); cross-layer sharing (binds codecs to lenders per slot) */
    const int parallel = c->threads && c->n_workers > 1 && L->group >= FLUSH_POOL_MIN_GROUP &&
                         c->cfg->prerope != 2 && !vq_cross_binds(c);
    flush_item *items = parallel ? malloc(nh * sizeof *items) : NULL; /* none: serial */
    vq_status ret = VQ_OK;
    if (items) {
        size_t n = 0;
        for (size_t h = 0; h < nh; h++)
            if (L->heads[h].n_res >= L->res_cap && needs_flush(c, L, &L->heads[h], keep))
                items[n++].head = h;
        ret = n ? flush_parallel(c, L, items, n) : VQ_OK;
    }
    /* the rest (all of it when serial): a head still at its window's end */
    for (size_t h = 0; ret == VQ_OK && h < nh; h++)
        if (L->heads[h].n_res >= L->res_cap)
            ret = vq_cache_flush_residual(c, L, &L->heads[h], keep);
    free(items);
    return ret;
}
