/* reserve.c -- vq_cache_reserve (veloxquant.h): the pages that the next n
 * tokens will take, made ahead in the page pool and their memory touched.
 *
 * Per (layer, KV head) the appends are followed as store.c makes them: the
 * residual window packs a group of G tokens when it reaches res_cap tokens
 * (the first time after res_cap - n_res appends, then every G), and each
 * packed group either grows the head's last page to its next quarter-page
 * step (vq_cache_page_step) or starts a new page. So a head needs, of its
 * keys' and of its values' page sizes, one whole-sized page per page that
 * reaches that size (a last page past its last quarter step is whole-sized)
 * and one page of each partial size its last page passes through (it gives
 * the smaller page back as it grows, so one of each at a time). Demands of
 * the same page size (keys and values of one codec, layers of one shape)
 * are summed; the pool then holds at least that many idle pages of each
 * size. With an eviction budget or a sliding window the packed slots are
 * capped at what the layer keeps plus the compaction slack. Cross-layer
 * caches reserve nothing: their layers merge, share or regroup slots in
 * their own files (minicache.c, xquant.c, xkv.c). */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache/cache_internal.h"

typedef struct {
    size_t bytes, pages;
} page_demand;

/* demands of at most 8 sizes per layer: whole and up to three partial
 * pages, keys and values */
#define DEMANDS_PER_LAYER 8

static void add_demand(page_demand *d, size_t *nd, size_t bytes, size_t pages)
{
    if (!pages)
        return;
    for (size_t i = 0; i < *nd; i++)
        if (d[i].bytes == bytes) {
            d[i].pages += pages;
            return;
        }
    d[(*nd)++] = (page_demand){ bytes, pages };
}

/* packed slots H holds once n more tokens are appended */
static size_t packed_after(const vq_cache_layer *L, const vq_cache_head *H, size_t n)
{
    const size_t G = L->group, R = L->res_cap;
    size_t p = H->n_packed;
    if (H->n_res + n >= R)
        p += G * (1 + (H->n_res + n - R) / G);
    size_t keep = SIZE_MAX; /* what eviction or the window keeps, else none */
    if (L->budget > 0)
        keep = (size_t)L->budget;
    if (L->shape.window > 0 && (size_t)L->shape.window < keep)
        keep = (size_t)L->shape.window;
    if (keep != SIZE_MAX) {
        const size_t slack = L->page_tokens / 4 > G ? L->page_tokens / 4 : G; /* store.c vq_cache_compact */
        keep += slack + G;
        if (p > keep)
            p = keep > H->n_packed ? keep : H->n_packed;
    }
    return p;
}

/* pages of the whole page size a head holds with p packed slots (a last
 * page past its last quarter step is whole-sized too) */
static size_t whole_pages(const vq_cache_layer *L, size_t p)
{
    const size_t P = L->page_tokens;
    return p / P + (p % P && vq_cache_page_step(L, p % P) == P);
}

/* the pages head H takes while its packed slots go from p0 to p1 */
static void head_demand(const vq_cache_layer *L, size_t p0, size_t p1, page_demand *d, size_t *nd)
{
    const size_t P = L->page_tokens, G = L->group;
    const size_t bk = vq_codec_bytes_per_token(L->kc), bv = vq_codec_bytes_per_token(L->vc);
    add_demand(d, nd, L->kpage_bytes, whole_pages(L, p1) - whole_pages(L, p0));
    add_demand(d, nd, L->vpage_bytes, whole_pages(L, p1) - whole_pages(L, p0));
    /* the last page's sizes on the way: one page span shows every one */
    size_t seen[4], n_seen = 0;
    const size_t end = p1 - p0 > P ? p0 + P : p1;
    for (size_t x = p0 + G; x <= end; x += G) {
        const size_t t = vq_cache_page_step(L, x - (x - 1) / P * P);
        size_t i = 0;
        while (i < n_seen && seen[i] != t)
            i++;
        if (t == P || i < n_seen || n_seen == 4)
            continue;
        seen[n_seen++] = t;
        add_demand(d, nd, t * bk, 1);
        add_demand(d, nd, t * bv, 1);
    }
}

vq_status vq_cache_reserve(vq_cache *c, size_t n_tokens)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_reserve: cache is NULL");
    if (n_tokens > INT32_MAX)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_reserve: %zu tokens exceed the positions a cache holds",
                       n_tokens);
    if (c->cross || n_tokens == 0)
        return VQ_OK;
    page_demand *d = malloc((size_t)c->n_layers * DEMANDS_PER_LAYER * sizeof *d);
    if (!d)
        return vq_fail(c->err, VQ_ERR_NOMEM, "vq_cache_reserve: out of memory");
    size_t nd = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const vq_cache_layer *L = &c->layers[l];
        for (int h = 0; L->heads && h < L->shape.n_kv_heads; h++) {
            const vq_cache_head *H = &L->heads[h];
            head_demand(L, H->n_packed, packed_after(L, H, n_tokens), d, &nd);
        }
    }
    /* more than the machine's memory is refused before anything is made:
     * touching it would bring the OOM killer rather than a failed malloc */
    double want = 0.0;
    for (size_t i = 0; i < nd; i++)
        want += (double)d[i].pages * (double)d[i].bytes;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double phys = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    if (phys > 0.0 && want > phys) {
        free(d);
        return vq_fail(c->err, VQ_ERR_NOMEM, "vq_cache_reserve: %zu tokens take %.0f MB of pages, more than the %.0f MB "
                       "of this machine's memory", n_tokens, want / 1e6, phys / 1e6);
    }
    int ok = 1;
    for (size_t i = 0; i < nd && ok; i++)
        ok = vq_page_pool_reserve(&c->pool, d[i].bytes, d[i].pages);
    free(d);
    return ok ? VQ_OK : vq_fail(c->err, VQ_ERR_NOMEM, "vq_cache_reserve: out of memory for pages");
}
