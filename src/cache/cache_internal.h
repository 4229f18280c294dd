/* cache_internal.h -- the structures behind vq_cache, shared by the files
 * of src/cache/ (config, pool, store, attend, evict, persist).
 *
 * Storage model (docs/cache.md has the full picture):
 *   - per layer: one key codec and one value codec (seeded per layer and
 *     role), plus fp16 codecs used for the residual window;
 *   - per (layer, KV head) a `vq_cache_head`: a packed region of n_packed
 *     slots (slot order == position order) stored in pages of
 *     page_tokens tokens (one K page and one V page per page index), and a
 *     residual window of n_res fp16 tokens (newer than every packed slot);
 *   - a "group" is lcm(key block_tokens, value block_tokens) tokens: the
 *     unit moved from the residual window into packed pages and the unit
 *     removed by compaction. Eviction marks single slots dead (alive=0,
 *     masked out of attention); compaction drops groups whose slots are
 *     all dead. For 1-token codecs this is exact per token; for block
 *     codecs (KIVI keys) a partly dead block stays stored (and counted in
 *     accounted bytes) until all its tokens are dead. */
#ifndef VQ_CACHE_INTERNAL_H
#define VQ_CACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/pool.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/spec.h"
#include "veloxquant.h"

/* page=auto (the default): pages of VQ_CACHE_PAGE_LONG tokens, but
 * VQ_CACHE_PAGE_SHORT in a layer with a sliding window and in a cache that
 * evicts or shares slots across layers (their held bytes follow the live
 * slots page by page). A stream's last page grows a quarter page at a time
 * (store.c page_fit), so long pages cost no more idle bytes than short
 * ones. A page is a unit of the attention loop: every page
 * costs a kernel call per role and a softmax update of its own (2 threads,
 * smollm2's shape, AMD EPYC: attention at 4k tokens 0.81x the time with
 * 1024-token pages for fp16, 0.94x for KIVI-2; bench/bench_attn_ab,
 * figures/bench/ab-session20.txt). */
#define VQ_CACHE_PAGE_LONG 1024
#define VQ_CACHE_PAGE_SHORT 256
#define VQ_CACHE_QUERY_TILE 8 /* query tokens scored together */
/* Attention splits each KV head's context into chunks of this many tokens
 * (whole pages, at least one), fixed by position rather than by thread
 * count, so that the result has the same bits with any number of threads;
 * a context of at most this many tokens is one chunk. While a layer would
 * have fewer than VQ_CACHE_ATTN_ITEMS (KV head, chunk) items, the chunk is
 * halved, down to VQ_CACHE_ATTN_CHUNK_MIN tokens: a few large items leave a
 * thread idle when the cores are not equally fast (attend.c; 3 KV heads,
 * 2 threads, AMD EPYC: attention at 2k / 4k tokens 0.87x / 0.95-0.98x the
 * time with 1024-token chunks, at 8k / 16k 1.03x, hence the threshold). */
#define VQ_CACHE_ATTN_CHUNK 2048
#define VQ_CACHE_ATTN_CHUNK_MIN 1024
#define VQ_CACHE_ATTN_ITEMS 8

/* ---- config ------------------------------------------------------------- */

struct vq_cache_config {
    char keys[VQ_SPEC_MAX_LEN];
    char values[VQ_SPEC_MAX_LEN];
    long residual;
    long page;                    /* tokens per page before rounding */
    char evict[VQ_SPEC_MAX_LEN];  /* "none" or a spec */
    char cross[VQ_SPEC_MAX_LEN];  /* "none" or a spec */
    int n_bits;                   /* 0: no per-layer bits list */
    int *bits;
    int n_kbits, n_vbits;         /* per-layer bits of keys / values only */
    int *kbits, *vbits;           /* (override bits for that role) */
    long keep_first, keep_last;
    long sinks;                   /* first tokens kept fp16 (sinks.h) */
    long prerope;                 /* 1: keys packed before RoPE (prerope.h) */
    int check;                    /* 0 none, 1 warn, 2 strict (model/cache_check.h) */
    double vdrop;                 /* 0, or the attention weight that value blocks
                                     may leave out (attend.c, accumulate_kept) */
    char keep_spec[VQ_SPEC_MAX_LEN];
    char *text;                   /* canonical text */
};

/* Copy a config (deep). */
vq_status vq_cache_config_copy(const vq_cache_config *src, vq_cache_config **out);
/* The key or value codec spec of layer l of n (keep_first/last and bits
 * applied) into buf. Errors name the field. */
vq_status vq_cache_config_layer_spec(const vq_cache_config *cfg, int l, int n, vq_role role,
                                     char *buf, size_t cap, char *err);

/* ---- eviction policy ------------------------------------------------------ */

typedef enum {
    VQ_EVICT_NONE = 0,
    VQ_EVICT_STREAMING,
    VQ_EVICT_H2O,
    VQ_EVICT_SNAPKV,
    VQ_EVICT_TOVA,
    VQ_EVICT_PYRAMIDKV
} vq_evict_kind;

typedef struct {
    vq_evict_kind kind;
    long sinks, window, budget, recent;
    double min_ratio;
} vq_evict_params;

/* Parse "none" or an eviction spec; errors name the parameter. */
vq_status vq_cache_evict_parse(const char *text, vq_evict_params *ev, char *err);
/* Canonical form into buf. */
void vq_cache_evict_str(const vq_evict_params *ev, char *buf, size_t cap);
/* Validate a cross-layer spec ("none" or minicache/xkv/xquant). */
vq_status vq_cache_cross_parse(const char *text, char *canon, size_t cap, char *err);

typedef struct vq_evict_cand {
    float score;
    size_t slot;
} vq_evict_cand;

/* ---- page pool ------------------------------------------------------------ */

typedef struct {
    size_t bytes;       /* page size of this class */
    size_t stride;      /* bytes rounded up to a cache line: pages' spacing in a slab */
    void **free;        /* idle pages */
    size_t n_free, cap_free;
    size_t n_out;       /* pages handed out */
    uint8_t *carve;     /* the newest slab's first page not yet handed out */
    size_t carve_left;  /* bytes of it left */
    size_t slab_bytes;  /* all slabs of this class */
} vq_page_class;

typedef struct {
    vq_page_class *cls;
    size_t n_cls;
    void **slabs; /* every slab (freed with the pool) */
    size_t n_slabs, cap_slabs;
} vq_page_pool;

/* A page of `bytes` bytes (contents undefined, 64-byte aligned); NULL when
 * out of memory. Pages are carved from slabs that grow with the class:
 * 16 pages, then doubling up to 2 MB slabs on transparent huge pages
 * (core/huge.h), so a long cache is read through few TLB entries. */
void *vq_page_get(vq_page_pool *p, size_t bytes);
/* Return a page of `bytes` bytes obtained from vq_page_get to its free
 * list. Never fails and never allocates (vq_page_get keeps a slot waiting
 * for every page it hands out). */
void vq_page_put(vq_page_pool *p, void *page, size_t bytes);
/* At least n idle pages of `bytes` bytes in the pool, their memory written
 * once per 4 KB so that it is mapped now rather than at a later
 * vq_page_get's first write (a fresh transparent huge page can take
 * milliseconds to fault in). 0 when out of memory (pages made so far stay
 * idle in the pool). */
int vq_page_pool_reserve(vq_page_pool *p, size_t bytes, size_t n);
/* bytes the pool holds beyond the pages handed out (idle pages, slabs'
 * uncarved tails, line padding) */
size_t vq_page_pool_free_bytes(const vq_page_pool *p);
void vq_page_pool_destroy(vq_page_pool *p);

/* ---- cache ---------------------------------------------------------------- */

/* Shared slots (MiniCache, minicache.c): per slot of a layer that lends
 * its slots to another layer, whether the borrowing layer's token of the
 * same position was merged into it, and the borrower's norm ratios
 * |x_borrower| / |x_lender| for keys and values (fp16). The store keeps
 * these records beside the slots they describe (moved, compacted, saved
 * with them) wherever the head holds them (x, rx non-NULL). */
typedef struct {
    uint16_t rk, rv;
    uint8_t merged;
} vq_xslot;

/* per-worker attention scratch */
typedef struct {
    uint8_t *qbuf; /* nq_max * max key query_bytes */
    uint8_t *qbuf2;/* same, prepared for the lending layer's key codec */
    float *qf;     /* nq_max * max head_dim (fp16 residual queries) */
    float *sc;     /* sc_floats scores: nq_max * max(page_tokens, res_cap) */
    float *pk;     /* prerope only (prerope.c): a decoded key block, group_max * d_max */
    float *pqh;    /* prerope only: the queries turned by a hi row, nq_max * d_max */
    int32_t *prows;/* prerope only: the keys' lo rows, group_max */
    float *wkeep;  /* vdrop only: nq_max * page_max weights of kept blocks */
    float *enc;    /* workers 1..: a group decoded from the fp16 window for a
                      parallel flush (flush.c), group_max * d_max; worker 0
                      uses the cache's tmp */
    vq_status st;  /* first failure of this worker in a job */
    size_t qhead;  /* the KV head whose queries qbuf, qbuf2 and qf hold in
                      this tile job (SIZE_MAX: none yet) */
} vq_attn_worker;

typedef struct {
    /* packed region: slot i lives in page i / page_tokens. Every page but
     * the last holds page_tokens slots (kpage_bytes, vpage_bytes); the last
     * one holds klast / vlast bytes and grows a step at a time
     * (store.c page_step: a quarter page), so that a stream's partly
     * filled page costs at most a step of idle bytes. */
    uint8_t **kpages, **vpages;
    size_t n_pages, cap_pages;
    size_t klast, vlast; /* bytes of the last page (0 without pages) */
    /* Slot index. Positions: NULL while the packed slots hold consecutive
     * positions (slot i is at pos_base + i, 0 bytes per slot); a table is
     * made when a gap appears (eviction inside the region, or appends with
     * skipped positions) and dropped again when compaction leaves them
     * consecutive. Liveness: NULL while no packed slot is dead (made by the
     * first eviction, dropped when compaction removes every dead slot).
     * Scores: only for policies that rank by attention (h2o, tova, snapkv,
     * pyramidkv). So a cache that evicts nothing holds no per-slot index. */
    int32_t *pos;      /* [cap_slots] positions, increasing, or NULL */
    int32_t pos_base;  /* position of packed slot 0 when pos is NULL */
    uint8_t *alive;    /* [cap_slots] 1 live, 0 evicted (masked), or NULL */
    float *score;      /* [cap_slots] policy score (h2o sum, tova, votes) or NULL */
    size_t n_packed, cap_slots, n_dead;
    size_t dead_floor; /* dead slots left by the last compaction (partly
                          dead groups); compaction reruns when n_dead has
                          grown by a threshold over this */
    /* residual window: n_res fp16 tokens, oldest first */
    uint8_t *rk, *rv;  /* [res_cap][2*head_dim] */
    int32_t *rpos;
    float *rscore;     /* [res_cap], NULL unless the policy uses scores */
    size_t n_res;
    /* layers that lend their slots only (else NULL): [cap_slots], [res_cap] */
    vq_xslot *x, *rx;
} vq_cache_head;

/* a layer's part in a cross-layer method (cross=...) */
typedef enum {
    VQ_CROSS_NONE = 0, /* a plain layer */
    VQ_CROSS_ANCHOR,   /* first layer of a pair (minicache, xquant) */
    VQ_CROSS_FOLLOWER, /* second layer of a pair (minicache, xquant) */
    VQ_CROSS_GROUP     /* member of a group (xkv) */
} vq_cross_role;

typedef struct vq_cross_ops vq_cross_ops;

typedef struct {
    vq_layer_shape shape;
    vq_codec *kc, *vc;   /* packed codecs */
    vq_codec *fk, *fv;   /* fp16 codecs of the residual window */
    /* per-worker codec handles ([0] = kc/vc/fk/fv; the others are
     * vq_codec_clone's, since a codec handle's scratch is not safe for
     * concurrent calls) */
    vq_codec **kcw, **vcw, **fkw, **fvw;
    size_t group;        /* lcm of the codecs' block tokens */
    size_t page_tokens;  /* multiple of group */
    size_t kpage_bytes, vpage_bytes;
    size_t res_cap;      /* residual + group tokens */
    long budget;         /* token budget of the policy at this layer (0 none) */
    int32_t last_pos;    /* newest appended position, -1 if none */
    int32_t app_pos0;    /* the last append: positions app_pos0.. */
    size_t app_n;
    vq_cache_head *heads;
    /* cross-layer sharing: this layer's part, read and written only by
     * the method's file (minicache.c, xquant.c, xkv.c) */
    vq_cross_role xrole;
    int xpeer;           /* the paired layer, or the group's index (xkv) */
} vq_cache_layer;

struct vq_cache {
    vq_cache_config *cfg;
    vq_evict_params ev;
    const vq_cross_ops *cross;     /* cross=..., NULL for none */
    void *xstate;                  /* the cross method's state */
    struct vq_prerope *prerope;    /* RoPE tables of prerope=1 (prerope.c) */
    int n_layers;
    vq_cache_layer *layers;
    vq_layer_shape *shapes; /* copy handed out by get_shape */
    uint64_t seed, fingerprint;
    vq_page_pool pool;
    /* attention: one scratch per worker (worker 0 = the calling thread)
     * and partial results per work item (KV head x context chunk), sized
     * for the largest layer (threads.c) */
    struct vq_pool *threads;      /* borrowed thread pool, NULL = serial */
    struct vq_pool *own_pool;     /* made by vq_cache_set_n_threads, or NULL */
    int n_workers;
    vq_attn_worker *workers;      /* [n_workers] */
    float *part;                  /* [part_items][part_stride] (grows) */
    size_t part_items, part_stride;
    size_t attn_chunk;            /* VQ_CACHE_ATTN_CHUNK; tests may lower it */
    size_t attn_items;            /* VQ_CACHE_ATTN_ITEMS; 0: chunks never halved (benchmarks) */
    size_t nq_max, asz_max, d_max;
    size_t sc_floats; /* each worker's sc */
    float *tmp;       /* group * max head_dim floats (encode staging,
                         gather, accum_finish) */
    size_t scratch_bytes; /* tmp + workers' scratch + part (threads.c) */
    /* per-slot raw scores for policies that need attention weights
     * (grows geometrically; bounded by the budget in steady state) */
    float *wbuf;
    size_t wbuf_cap;
    /* eviction scratch (candidates) */
    struct vq_evict_cand *ebuf;
    size_t ebuf_cap;
    char err[VQ_ERRLEN];
};

/* create with an option to drop calib= from codec specs (load) */
vq_status vq_cache_create_ex(const vq_cache_config *cfg, const vq_cache_shape *shape,
                             uint64_t seed, int strip_calib, vq_cache **out);

/* threads.c: (re)build the per-worker scratch and codec clones for
 * `pool` (NULL or size 1 = serial). Called by create with NULL. */
vq_status vq_cache_set_threads(vq_cache *c, struct vq_pool *pool);
void vq_cache_free_workers(vq_cache *c);
/* drop calib= from a codec spec in place */
void vq_cache_strip_calib(char *spec);

/* flush.c: the oldest groups of a residual window packed into pages, until
 * at most keep + group - 1 tokens past the head's sinks remain (one head);
 * every head of L whose window is full (n_res >= res_cap), their key and
 * value encodes spread over the cache's pool */
vq_status vq_cache_flush_residual(vq_cache *c, vq_cache_layer *L, vq_cache_head *h, size_t keep);
vq_status vq_cache_flush_full(vq_cache *c, vq_cache_layer *L, size_t keep);

/* store.c */
void vq_cache_compact(vq_cache *c, vq_cache_layer *L, vq_cache_head *h, int force);
/* tokens a growing last page holds: `need` rounded up to a step of a
 * quarter page (whole codec groups), at most the page */
size_t vq_cache_page_step(const vq_cache_layer *L, size_t need);
/* ensure packed capacity for `n` slots (slot arrays and page table) */
vq_status vq_cache_reserve_slots(vq_cache *c, vq_cache_layer *L, vq_cache_head *h, size_t n);
/* *buf of *cap units of `unit` floats grown (doubling from `first`) to at
 * least need units; on failure unchanged, VQ_ERR_NOMEM naming `what` */
vq_status vq_cache_grow_floats(vq_cache *c, float **buf, size_t *cap, size_t need, size_t unit, size_t first,
                               const char *what);
vq_status vq_cache_grow_wbuf(vq_cache *c, size_t n);
/* room for the partials of n work items (threads.c) */
vq_status vq_cache_grow_parts(vq_cache *c, size_t n);

/* the packed key / value codes of slot i of h (its page must exist) */
static inline uint8_t *vq_cache_kslot(const vq_cache_layer *L, const vq_cache_head *h, size_t i)
{
    return h->kpages[i / L->page_tokens] + (i % L->page_tokens) * vq_codec_bytes_per_token(L->kc);
}
static inline uint8_t *vq_cache_vslot(const vq_cache_layer *L, const vq_cache_head *h, size_t i)
{
    return h->vpages[i / L->page_tokens] + (i % L->page_tokens) * vq_codec_bytes_per_token(L->vc);
}

/* Slot access in the combined index space: [0, n_packed) packed,
 * [n_packed, n_packed + n_res) residual. */
static inline size_t vq_head_slots(const vq_cache_head *h) { return h->n_packed + h->n_res; }
static inline int32_t vq_head_pos(const vq_cache_head *h, size_t i)
{
    if (i >= h->n_packed)
        return h->rpos[i - h->n_packed];
    return h->pos ? h->pos[i] : h->pos_base + (int32_t)i;
}
static inline int vq_head_alive(const vq_cache_head *h, size_t i)
{
    return i < h->n_packed && h->alive ? h->alive[i] : 1;
}
/* only for caches whose policy uses scores (vq_cache_uses_scores) */
static inline float *vq_head_score(vq_cache_head *h, size_t i)
{
    return i < h->n_packed ? &h->score[i] : &h->rscore[i - h->n_packed];
}
/* the policy ranks tokens by attention weights (per-slot scores kept) */
static inline int vq_cache_uses_scores(const vq_cache *c)
{
    return c->ev.kind == VQ_EVICT_H2O || c->ev.kind == VQ_EVICT_TOVA || c->ev.kind == VQ_EVICT_SNAPKV ||
           c->ev.kind == VQ_EVICT_PYRAMIDKV;
}

/* ---- cross-layer sharing (cross=...) -------------------------------------
 *
 * A method is a vq_cross_ops table (minicache.c, xquant.c, xkv.c; listed in
 * cross.c). The rest of the cache calls it only through the vq_cross_*
 * helpers below, each a no-op for a cache without cross= or a method
 * without that entry. Every entry but name, canon and setup is optional. */
struct vq_cross_ops {
    const char *name;
    /* Check the parameters of `sp` (name already matched) and write the
     * canonical spec into canon (config parsing, no cache yet). */
    vq_status (*canon)(vq_spec *sp, char *canon, size_t cap, char *err);
    /* Read c->cfg->cross and assign the layers' xrole/xpeer; c->shapes and
     * c->ev are set, the layers have no codecs yet. May set c->xstate. */
    vq_status (*setup)(vq_cache *c, char *err);
    /* Make layer l's codec for `role` in place of the configured one:
     * answer 1 (status in *st) or 0 (use the configured codec). */
    int (*codec)(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st);
    /* Every layer has its codecs and heads. */
    vq_status (*layers_ready)(vq_cache *c, char *err);
    /* Before the layer stores an append (arguments checked, nothing done
     * yet): *done = 1 when the method stored the tokens itself. */
    vq_status (*append)(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0, int *done);
    /* The residual window of L is full: grow it to hold `need` tokens
     * (*grown = 1) instead of moving tokens into pages (*grown = 0). */
    vq_status (*grow)(vq_cache *c, vq_cache_layer *L, size_t need, int *grown);
    /* After the layer stored an append. */
    vq_status (*after_append)(vq_cache *c, int layer);
    /* Before codes of `slot` (a group's first) of head h are encoded,
     * decoded or scored with kc/vc (the layer's codecs or a worker's). */
    vq_status (*bind)(vq_cache *c, const vq_cache_layer *L, size_t h, size_t slot, vq_codec *kc, vq_codec *vc);
    /* vq_cache_gather of the layer (arguments checked): *done = 1 when the
     * method answered. */
    vq_status (*gather)(vq_cache *c, int layer, int h, size_t cap, int32_t *pos, float *k, float *v, size_t *n,
                        int *done);
    /* The layer whose shared slots (vq_xslot) L attends besides its own,
     * or NULL. */
    vq_cache_layer *(*lender)(vq_cache *c, const vq_cache_layer *L);
    /* Add what the method holds for L to u (per layer), and its buffers
     * (bytes, whole cache). */
    void (*stats)(const vq_cache *c, const vq_cache_layer *L, vq_cache_usage *u);
    size_t (*buffer_bytes)(const vq_cache *c);
    void (*reset)(vq_cache *c);
    /* The method's section of a cache file (persist.c): when save is set
     * the file is version 2 and holds save's bytes after the shapes;
     * dst NULL -> size in *len. load reads the section from src (len
     * bytes left), *used = its size; errors name the file's fault. */
    vq_status (*save)(const vq_cache *c, uint8_t *dst, size_t cap, size_t *len);
    vq_status (*load)(vq_cache *c, const uint8_t *src, size_t len, size_t *used, char *err);
    void (*free)(vq_cache *c);
};

extern const vq_cross_ops vq_cross_minicache_ops, vq_cross_xquant_ops, vq_cross_xkv_ops;

/* cross.c: the method named by a spec, or NULL ("none" or unknown) */
const vq_cross_ops *vq_cross_find(const char *spec);
/* set c->cross from c->cfg->cross and run its setup (create) */
vq_status vq_cross_setup(vq_cache *c, char *err);
int vq_cross_codec(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st);
vq_status vq_cross_layers_ready(vq_cache *c, char *err);
vq_status vq_cross_append(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0, int *done);
vq_status vq_cross_grow(vq_cache *c, vq_cache_layer *L, size_t need, int *grown);
vq_status vq_cross_after_append(vq_cache *c, int layer);
/* whether the method binds codecs to slots (vq_cross_bind does something) */
int vq_cross_binds(const vq_cache *c);
vq_status vq_cross_bind(vq_cache *c, const vq_cache_layer *L, size_t h, size_t slot, vq_codec *kc, vq_codec *vc);
vq_status vq_cross_gather(vq_cache *c, int layer, int h, size_t cap, int32_t *pos, float *k, float *v, size_t *n,
                          int *done);
vq_cache_layer *vq_cross_lender(vq_cache *c, const vq_cache_layer *L);
void vq_cross_stats(const vq_cache *c, const vq_cache_layer *L, vq_cache_usage *u);
size_t vq_cross_buffer_bytes(const vq_cache *c);
void vq_cross_reset(vq_cache *c);
int vq_cross_has_section(const vq_cache *c);
void vq_cross_free(vq_cache *c);

/* store.c: vq_cache_gather of the layer's own slots only */
vq_status vq_cache_gather_own(vq_cache *c, int layer, int kv_head, size_t cap, int32_t *pos, float *k, float *v,
                              size_t *n);
/* slot index of position p in head H (combined index space), or SIZE_MAX */
size_t vq_head_find_pos(const vq_cache_head *H, int32_t p);
/* resize the residual window of every head of L to cap tokens */
vq_status vq_cache_resize_window(vq_cache *c, vq_cache_layer *L, size_t cap);

/* evict.c: enforce the sliding window (drop pos <= ref - window) and the
 * policy on layer l; `after_attend` says whether weights were just added. */
vq_status vq_cache_enforce(vq_cache *c, int l, int32_t ref_pos, int after_attend);
/* Remove one slot (packed: mark dead, making the liveness table on the
 * first eviction; residual: shift out). */
vq_status vq_cache_kill_slot(vq_cache *c, vq_cache_head *h, size_t i, size_t head_dim);
/* store.c: make the position table of H (slot i at pos_base + i so far) */
vq_status vq_cache_head_materialize_pos(vq_cache *c, vq_cache_head *h);
/* store.c: the heap bytes of the slot index of H (tables allocated) */
size_t vq_cache_head_index_bytes(const vq_cache_head *h, size_t res_cap);

#endif
