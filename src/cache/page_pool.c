/* pool.c -- the page pool of one cache: free lists per page size.
 *
 * Pages are malloc'd on first demand and recycled through a free list when
 * eviction or compaction returns them, so a cache in steady state (e.g.
 * streaming_llm) allocates nothing. A cache has a handful of page sizes
 * (one per distinct codec/head_dim/page_tokens combination), so classes are
 * found by a linear search. */
#include <stdlib.h>

#include "cache/cache_internal.h"

static vq_page_class *find_class(vq_page_pool *p, size_t bytes, int add)
{
    for (size_t i = 0; i < p->n_cls; i++)
        if (p->cls[i].bytes == bytes)
            return &p->cls[i];
    if (!add)
        return NULL;
    vq_page_class *n = realloc(p->cls, (p->n_cls + 1) * sizeof *n);
    if (!n)
        return NULL;
    p->cls = n;
    vq_page_class *c = &p->cls[p->n_cls++];
    c->bytes = bytes;
    c->free = NULL;
    c->n_free = c->cap_free = c->n_out = 0;
    return c;
}

/* A page handed out always has a slot waiting in its class's free list
 * (cap_free >= n_out + n_free): the list grows here, when a new page is
 * made, so vq_page_put never allocates and cannot fail (a reset or an
 * eviction allocates nothing). */
void *vq_page_get(vq_page_pool *p, size_t bytes)
{
    vq_page_class *c = find_class(p, bytes, 1);
    if (!c)
        return NULL;
    if (c->n_free) {
        c->n_out++;
        return c->free[--c->n_free];
    }
    if (c->n_out + 1 > c->cap_free) {
        size_t nc = c->cap_free ? 2 * c->cap_free : 16;
        void **nf = realloc(c->free, nc * sizeof *nf);
        if (!nf)
            return NULL;
        c->free = nf;
        c->cap_free = nc;
    }
    void *page = malloc(bytes);
    if (page)
        c->n_out++;
    return page;
}

void vq_page_put(vq_page_pool *p, void *page, size_t bytes)
{
    if (!page)
        return;
    vq_page_class *c = find_class(p, bytes, 0);
    if (!c) { /* not from this pool: cannot happen; do not leak */
        free(page);
        return;
    }
    c->n_out--;
    c->free[c->n_free++] = page; /* a slot is waiting (vq_page_get) */
}

size_t vq_page_pool_free_bytes(const vq_page_pool *p)
{
    size_t t = 0;
    for (size_t i = 0; i < p->n_cls; i++)
        t += p->cls[i].n_free * p->cls[i].bytes;
    return t;
}

void vq_page_pool_destroy(vq_page_pool *p)
{
    for (size_t i = 0; i < p->n_cls; i++) {
        for (size_t j = 0; j < p->cls[i].n_free; j++)
            free(p->cls[i].free[j]);
        free(p->cls[i].free);
    }
    free(p->cls);
    p->cls = NULL;
    p->n_cls = 0;
}
