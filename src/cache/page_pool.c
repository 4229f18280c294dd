/* page_pool.c -- the page pool of one cache: pages carved from slabs,
 * free lists per page size.
 *
 * A page goes back to its class's free list when eviction or compaction
 * returns it, so a cache in steady state (e.g. streaming_llm) allocates
 * nothing. A class that runs dry carves its next page from its newest slab,
 * and makes a slab when that is used up: 16 pages first, then as many bytes
 * as the class holds already, up to VQ_HUGE_MIN (2 MB, on transparent huge
 * pages: a decode step reads every page of a long cache, and with 4 KB
 * pages each of them would cost TLB misses). A cache has a handful of page
 * sizes (one per distinct codec/head_dim/page_tokens combination), so
 * classes are found by a linear search. */
#include <stdint.h>
#include <stdlib.h>

#include "cache/cache_internal.h"
#include "core/huge.h"

#define SLAB_FIRST_PAGES 16

static vq_page_class *find_class(vq_page_pool *p, size_t bytes, int add)
{
    for (size_t i = 0; i < p->n_cls; i++)
        if (p->cls[i].bytes == bytes)
            return &p->cls[i];
    if (!add || bytes > (size_t)-1 / 2 - VQ_HUGE_MIN)
        return NULL;
    vq_page_class *n = realloc(p->cls, (p->n_cls + 1) * sizeof *n);
    if (!n)
        return NULL;
    p->cls = n;
    vq_page_class *c = &p->cls[p->n_cls++];
    *c = (vq_page_class){ 0 };
    c->bytes = bytes;
    c->stride = (bytes + 63) & ~(size_t)63;
    return c;
}

/* a new slab for class c (its bytes counted), the carve pointer at its start */
static int add_slab(vq_page_pool *p, vq_page_class *c)
{
    if (p->n_slabs == p->cap_slabs) {
        size_t n = p->cap_slabs ? 2 * p->cap_slabs : 16;
        void **ns = realloc(p->slabs, n * sizeof *ns);
        if (!ns)
            return 0;
        p->slabs = ns;
        p->cap_slabs = n;
    }
    size_t want = c->slab_bytes ? c->slab_bytes : SLAB_FIRST_PAGES * c->stride;
    if (c->stride > (size_t)-1 / SLAB_FIRST_PAGES)
        want = c->stride;
    want = want < VQ_HUGE_MIN ? want : VQ_HUGE_MIN;
    want = want > c->stride ? want : c->stride;
    void *s;
    if (want >= VQ_HUGE_MIN) { /* its tail past the last whole page stays idle (counted) */
        want = (want + VQ_HUGE_MIN - 1) & ~(VQ_HUGE_MIN - 1); /* vq_huge_alloc's rounding */
        s = vq_huge_alloc(want);
    } else {
        want -= want % c->stride;    /* whole pages */
        s = aligned_alloc(64, want); /* a multiple of the stride, so of 64 */
    }
    if (!s)
        return 0;
    p->slabs[p->n_slabs++] = s;
    c->slab_bytes += want;
    c->carve = s;
    c->carve_left = want;
    return 1;
}

/* A page handed out always has a slot waiting in its class's free list
 * (cap_free >= n_out + n_free): the list grows before a page is carved,
 * so vq_page_put never allocates and cannot fail (a reset or an eviction
 * allocates nothing). */
static int free_list_room(vq_page_class *c, size_t need)
{
    if (need <= c->cap_free)
        return 1;
    size_t nc = c->cap_free ? 2 * c->cap_free : 16;
    while (nc < need)
        nc *= 2;
    void **nf = realloc(c->free, nc * sizeof *nf);
    if (!nf)
        return 0;
    c->free = nf;
    c->cap_free = nc;
    return 1;
}

/* the next page of c's newest slab (a new slab when it is used up), or NULL */
static uint8_t *carve_page(vq_page_pool *p, vq_page_class *c)
{
    if (!free_list_room(c, c->n_out + c->n_free + 1))
        return NULL;
    if (c->carve_left < c->stride && !add_slab(p, c))
        return NULL;
    uint8_t *page = c->carve;
    c->carve += c->stride;
    c->carve_left -= c->stride;
    return page;
}

void *vq_page_get(vq_page_pool *p, size_t bytes)
{
    vq_page_class *c = find_class(p, bytes, 1);
    if (!c)
        return NULL;
    void *page = c->n_free ? c->free[--c->n_free] : carve_page(p, c);
    c->n_out += page != NULL;
    return page;
}

int vq_page_pool_reserve(vq_page_pool *p, size_t bytes, size_t n)
{
    if (!n || !bytes)
        return 1;
    vq_page_class *c = find_class(p, bytes, 1);
    if (!c)
        return 0;
    while (c->n_free < n) {
        uint8_t *page = carve_page(p, c);
        if (!page)
            return 0;
        /* one write per 4 KB page faults the memory in now (a transparent
         * huge page's first write maps all of its 2 MB) */
        for (size_t o = 0; o < c->bytes; o += 4096)
            ((volatile uint8_t *)page)[o] = 0;
        ((volatile uint8_t *)page)[c->bytes - 1] = 0;
        c->free[c->n_free++] = page;
    }
    return 1;
}

void vq_page_put(vq_page_pool *p, void *page, size_t bytes)
{
    if (!page)
        return;
    vq_page_class *c = find_class(p, bytes, 0);
    if (!c) /* not from this pool: cannot happen (and it is not ours to free) */
        return;
    c->n_out--;
    c->free[c->n_free++] = page; /* a slot is waiting (vq_page_get) */
}

size_t vq_page_pool_free_bytes(const vq_page_pool *p)
{
    size_t t = 0;
    for (size_t i = 0; i < p->n_cls; i++)
        t += p->cls[i].slab_bytes - p->cls[i].n_out * p->cls[i].bytes;
    return t;
}

void vq_page_pool_destroy(vq_page_pool *p)
{
    for (size_t i = 0; i < p->n_cls; i++)
        free(p->cls[i].free);
    for (size_t i = 0; i < p->n_slabs; i++)
        free(p->slabs[i]);
    free(p->cls);
    free(p->slabs);
    *p = (vq_page_pool){ 0 };
}
