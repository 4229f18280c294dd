/* gguf.c -- GGUF v2/v3 reader (contract and policy in gguf.h).
 *
 * Parsing is one forward pass with a bounds-checked cursor: every read asks
 * the cursor for n bytes, and the cursor refuses when fewer are left. Counts
 * read from the file are capped by the bytes left divided by the smallest
 * encoding of one item, before anything is allocated for them, so a hostile
 * header cannot make us allocate more than a small multiple of the file size.
 * Keys and tensor names are indexed in open-addressing hash tables (which
 * also find duplicates in linear time, so fuzzed files with many entries
 * stay fast). */
#include "model/gguf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "model/quants.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads little-endian GGUF files by memcpy: little-endian host required"
#endif

#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_ALIGNMENT (1u << 24)
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_ELEMS ((uint64_t)1 << 62)
/* Smallest encodings, used to cap counts against the bytes left. */
#define MIN_KV_BYTES 13      /* key length 8 + 1 key byte + type 4 (+ value >= 0) */
#define MIN_TENSOR_BYTES 33  /* name length 8 + 1 + n_dims 4 + ne 8 + type 4 + offset 8 */

typedef struct {
    vq_gguf_str key;
    uint32_t type;
    uint32_t arr_type;    /* arrays only */
    uint64_t arr_n;       /* arrays only */
    const uint8_t *val;   /* scalar value / first array element / string length field */
    uint64_t *str_off;    /* string arrays: offset of element i's length field from val */
} gguf_kv;

struct vq_gguf {
    const uint8_t *base;
    size_t size;
    int mapped; /* 1: base is our mmap, unmapped at close */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    vq_gguf_tensor *tensors;
    uint32_t *kv_hash;  /* index + 1; 0 = empty; capacity kv_hcap (power of 2) */
    uint64_t kv_hcap;
    uint32_t *t_hash;
    uint64_t t_hcap;
};

/* ---- bounded cursor ------------------------------------------------------ */

typedef struct {
    const uint8_t *base;
    size_t size;
    size_t pos;
    char *err;
} cursor;

static size_t left(const cursor *c) { return c->size - c->pos; }

static vq_status need(cursor *c, uint64_t n, const char *what)
{
    if (n > left(c))
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: truncated at byte %zu reading %s (need %llu bytes, %zu left)",
                       c->pos, what, (unsigned long long)n, left(c));
    return VQ_OK;
}

static vq_status rd_u32(cursor *c, uint32_t *v, const char *what)
{
    VQ_TRY(need(c, 4, what));
    memcpy(v, c->base + c->pos, 4);
    c->pos += 4;
    return VQ_OK;
}

static vq_status rd_u64(cursor *c, uint64_t *v, const char *what)
{
    VQ_TRY(need(c, 8, what));
    memcpy(v, c->base + c->pos, 8);
    c->pos += 8;
    return VQ_OK;
}

static vq_status rd_str(cursor *c, vq_gguf_str *s, const char *what)
{
    uint64_t len;
    size_t at = c->pos;
    VQ_TRY(rd_u64(c, &len, what));
    if (len > left(c))
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: %s at byte %zu has length %llu but only %zu bytes are left",
                       what, at, (unsigned long long)len, left(c));
    s->ptr = (const char *)(c->base + c->pos);
    s->len = len;
    c->pos += (size_t)len;
    return VQ_OK;
}

/* ---- value types ----------------------------------------------------------- */

/* Size of a fixed-size scalar type; 0 for string/array/unknown. */
static size_t scalar_size(uint32_t t)
{
    switch (t) {
    case VQ_GGUF_UINT8: case VQ_GGUF_INT8: case VQ_GGUF_BOOL: return 1;
    case VQ_GGUF_UINT16: case VQ_GGUF_INT16: return 2;
    case VQ_GGUF_UINT32: case VQ_GGUF_INT32: case VQ_GGUF_FLOAT32: return 4;
    case VQ_GGUF_UINT64: case VQ_GGUF_INT64: case VQ_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* Print at most 64 bytes of a file string, replacing non-printables. */
static const char *show(vq_gguf_str s, char buf[72])
{
    size_t n = s.len < 64 ? (size_t)s.len : 64, j = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        buf[j++] = (ch >= 32 && ch < 127) ? (char)ch : '?';
    }
    if (s.len > 64) {
        buf[j++] = '.';
        buf[j++] = '.';
        buf[j++] = '.';
    }
    buf[j] = '\0';
    return buf;
}

/* ---- hashing ---------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (uint64_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int str_eq(vq_gguf_str a, const char *p, uint64_t n)
{
    return a.len == n && (n == 0 || memcmp(a.ptr, p, (size_t)n) == 0);
}

static uint64_t hash_cap(uint64_t n)
{
    uint64_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    return cap;
}

/* ---- key/value section ------------------------------------------------------- */

static vq_status parse_kv(cursor *c, gguf_kv *kv, uint64_t idx)
{
    char kb[72];
    char what[64];
    snprintf(what, sizeof what, "key %llu", (unsigned long long)idx);
    VQ_TRY(rd_str(c, &kv->key, what));
    if (kv->key.len == 0)
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: key %llu at byte %zu is empty",
                       (unsigned long long)idx, c->pos - 8);
    const char *k = show(kv->key, kb);
    VQ_TRY(rd_u32(c, &kv->type, "value type"));
    size_t vpos = c->pos;
    kv->val = c->base + c->pos;
    if (kv->type == VQ_GGUF_STRING) {
        vq_gguf_str s;
        VQ_TRY(rd_str(c, &s, "string value"));
        return VQ_OK;
    }
    if (kv->type != VQ_GGUF_ARRAY) {
        size_t sz = scalar_size(kv->type);
        if (!sz)
            return vq_fail(c->err, VQ_ERR_FORMAT,
                           "gguf: key '%s' at byte %zu has unknown value type %u", k, vpos,
                           kv->type);
        if (sz > left(c))
            return vq_fail(c->err, VQ_ERR_FORMAT,
                           "gguf: key '%s': value truncated at byte %zu", k, vpos);
        c->pos += sz;
        return VQ_OK;
    }
    /* array: element type, count, elements */
    if (rd_u32(c, &kv->arr_type, "array type") || rd_u64(c, &kv->arr_n, "array count"))
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: key '%s': array header truncated at byte %zu",
                       k, vpos);
    kv->val = c->base + c->pos;
    if (kv->arr_type == VQ_GGUF_ARRAY)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: key '%s': arrays of arrays are not supported", k);
    if (kv->arr_type == VQ_GGUF_STRING) {
        if (kv->arr_n > left(c) / 8)
            return vq_fail(c->err, VQ_ERR_FORMAT,
                           "gguf: key '%s': string array count %llu exceeds the %zu bytes left",
                           k, (unsigned long long)kv->arr_n, left(c));
        kv->str_off = malloc((size_t)(kv->arr_n ? kv->arr_n : 1) * sizeof(uint64_t));
        if (!kv->str_off)
            return vq_fail(c->err, VQ_ERR_NOMEM, "gguf: key '%s': no memory for %llu offsets", k,
                           (unsigned long long)kv->arr_n);
        size_t start = c->pos;
        for (uint64_t i = 0; i < kv->arr_n; i++) {
            kv->str_off[i] = c->pos - start;
            uint64_t len;
            if (left(c) < 8)
                return vq_fail(c->err, VQ_ERR_FORMAT,
                               "gguf: key '%s': string %llu of %llu truncated at byte %zu", k,
                               (unsigned long long)i, (unsigned long long)kv->arr_n, c->pos);
            memcpy(&len, c->base + c->pos, 8);
            c->pos += 8;
            if (len > left(c))
                return vq_fail(c->err, VQ_ERR_FORMAT,
                               "gguf: key '%s': string %llu has length %llu, only %zu bytes left",
                               k, (unsigned long long)i, (unsigned long long)len, left(c));
            c->pos += (size_t)len;
        }
        return VQ_OK;
    }
    size_t sz = scalar_size(kv->arr_type);
    if (!sz)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: key '%s': array of unknown element type %u", k, kv->arr_type);
    if (kv->arr_n > left(c) / sz)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: key '%s': array of %llu x %zu-byte elements exceeds the %zu bytes left",
                       k, (unsigned long long)kv->arr_n, sz, left(c));
    c->pos += (size_t)(kv->arr_n * sz);
    return VQ_OK;
}

static vq_status index_keys(vq_gguf *g, char *err)
{
    g->kv_hcap = hash_cap(g->n_kv);
    g->kv_hash = calloc((size_t)g->kv_hcap, sizeof *g->kv_hash);
    if (!g->kv_hash)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory for the key index");
    for (uint64_t i = 0; i < g->n_kv; i++) {
        vq_gguf_str k = g->kv[i].key;
        uint64_t h = hash_bytes(k.ptr, k.len) & (g->kv_hcap - 1);
        while (g->kv_hash[h]) {
            if (str_eq(g->kv[g->kv_hash[h] - 1].key, k.ptr, k.len)) {
                char kb[72];
                return vq_fail(err, VQ_ERR_FORMAT, "gguf: duplicate key '%s'", show(k, kb));
            }
            h = (h + 1) & (g->kv_hcap - 1);
        }
        g->kv_hash[h] = (uint32_t)(i + 1);
    }
    return VQ_OK;
}

static const gguf_kv *find_kv(const vq_gguf *g, const char *key)
{
    if (!g || !key || !g->kv_hash)
        return NULL;
    uint64_t n = strlen(key);
    uint64_t h = hash_bytes(key, n) & (g->kv_hcap - 1);
    while (g->kv_hash[h]) {
        const gguf_kv *kv = &g->kv[g->kv_hash[h] - 1];
        if (str_eq(kv->key, key, n))
            return kv;
        h = (h + 1) & (g->kv_hcap - 1);
    }
    return NULL;
}

/* ---- tensor infos ---------------------------------------------------------------- */

static vq_status parse_tensor(cursor *c, vq_gguf_tensor *t, uint64_t idx, uint32_t alignment)
{
    char nb[72];
    char what[64];
    snprintf(what, sizeof what, "tensor %llu name", (unsigned long long)idx);
    VQ_TRY(rd_str(c, &t->name, what));
    if (t->name.len == 0)
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor %llu has an empty name",
                       (unsigned long long)idx);
    const char *nm = show(t->name, nb);
    if (need(c, 4, "n_dims"))
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor '%s': info truncated at byte %zu",
                       nm, c->pos);
    (void)rd_u32(c, &t->n_dims, "n_dims");
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor '%s': n_dims %u not in 1..%d", nm,
                       t->n_dims, GGUF_MAX_DIMS);
    if (need(c, 8ull * t->n_dims + 12, "tensor info"))
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor '%s': info truncated at byte %zu",
                       nm, c->pos);
    uint64_t nelem = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        (void)rd_u64(c, &t->ne[d], "ne");
        if (t->ne[d] == 0 || t->ne[d] > GGUF_MAX_ELEMS)
            return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor '%s': ne[%u] = %llu out of range",
                           nm, d, (unsigned long long)t->ne[d]);
        if (nelem > GGUF_MAX_ELEMS / t->ne[d])
            return vq_fail(c->err, VQ_ERR_FORMAT,
                           "gguf: tensor '%s': element count overflows (ne[%u] = %llu)", nm, d,
                           (unsigned long long)t->ne[d]);
        nelem *= t->ne[d];
    }
    (void)rd_u32(c, &t->type, "type");
    (void)rd_u64(c, &t->offset, "offset");
    size_t be = vq_wtype_block_elems(t->type);
    if (!be)
        return vq_fail(c->err, VQ_ERR_FORMAT, "gguf: tensor '%s': unknown type %u", nm, t->type);
    if (t->ne[0] % be)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: tensor '%s': row length %llu is not a multiple of the %s block of %zu",
                       nm, (unsigned long long)t->ne[0], vq_wtype_name(t->type), be);
    /* nelem <= 2^62 and block_bytes/block_elems <= 8, so this cannot overflow */
    t->nbytes = nelem / be * vq_wtype_block_bytes(t->type);
    if (t->offset % alignment)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "gguf: tensor '%s': offset %llu is not a multiple of the alignment %u", nm,
                       (unsigned long long)t->offset, alignment);
    return VQ_OK;
}

static vq_status index_tensors(vq_gguf *g, char *err)
{
    g->t_hcap = hash_cap(g->n_tensors);
    g->t_hash = calloc((size_t)g->t_hcap, sizeof *g->t_hash);
    if (!g->t_hash)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory for the tensor index");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        vq_gguf_str k = g->tensors[i].name;
        uint64_t h = hash_bytes(k.ptr, k.len) & (g->t_hcap - 1);
        while (g->t_hash[h]) {
            if (str_eq(g->tensors[g->t_hash[h] - 1].name, k.ptr, k.len)) {
                char kb[72];
                return vq_fail(err, VQ_ERR_FORMAT, "gguf: duplicate tensor name '%s'",
                               show(k, kb));
            }
            h = (h + 1) & (g->t_hcap - 1);
        }
        g->t_hash[h] = (uint32_t)(i + 1);
    }
    return VQ_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const vq_gguf_tensor *x = *(const vq_gguf_tensor *const *)a;
    const vq_gguf_tensor *y = *(const vq_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Every tensor's data inside the file, and no two overlapping. */
static vq_status check_extents(vq_gguf *g, char *err)
{
    uint64_t avail = g->size - g->data_offset; /* data_offset <= size checked by caller */
    char nb[72];
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        vq_gguf_tensor *t = &g->tensors[i];
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return vq_fail(err, VQ_ERR_FORMAT,
                           "gguf: tensor '%s': data [%llu, +%llu) lies outside the %llu-byte data "
                           "section",
                           show(t->name, nb), (unsigned long long)t->offset,
                           (unsigned long long)t->nbytes, (unsigned long long)avail);
        t->data = g->base + g->data_offset + t->offset;
    }
    if (g->n_tensors < 2)
        return VQ_OK;
    const vq_gguf_tensor **order = malloc((size_t)g->n_tensors * sizeof *order);
    if (!order)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory to sort tensors");
    for (uint64_t i = 0; i < g->n_tensors; i++)
        order[i] = &g->tensors[i];
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_offset);
    vq_status st = VQ_OK;
    for (uint64_t i = 1; i < g->n_tensors; i++) {
        const vq_gguf_tensor *a = order[i - 1], *b = order[i];
        if (a->offset + a->nbytes > b->offset) {
            char nb2[72];
            st = vq_fail(err, VQ_ERR_FORMAT, "gguf: tensors '%s' and '%s' overlap",
                         show(a->name, nb), show(b->name, nb2));
            break;
        }
    }
    free(order);
    return st;
}

/* ---- open / close ---------------------------------------------------------------- */

void vq_gguf_drop_pages(const vq_gguf *g, const void *p, size_t len)
{
    if (!g || !g->mapped || !p)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base = (uintptr_t)g->base;
    uintptr_t a = (uintptr_t)p, e = a + len;
    if (a < base || e > base + g->size || e < a)
        return;
    a = (a + page - 1) / page * page;
    e = e / page * page;
    if (e > a)
        madvise((void *)a, e - a, MADV_DONTNEED);
}

void vq_gguf_close(vq_gguf *g)
{
    if (!g)
        return;
    if (g->kv)
        for (uint64_t i = 0; i < g->n_kv; i++)
            free(g->kv[i].str_off);
    free(g->kv);
    free(g->tensors);
    free(g->kv_hash);
    free(g->t_hash);
    if (g->mapped)
        munmap((void *)g->base, g->size);
    free(g);
}

static vq_status parse(vq_gguf *g, char *err)
{
    cursor c = { g->base, g->size, 0, err };
    if (g->size < 4 || memcmp(g->base, "GGUF", 4) != 0)
        return vq_fail(err, VQ_ERR_FORMAT, "gguf: bad magic (not a GGUF file)");
    c.pos = 4;
    VQ_TRY(rd_u32(&c, &g->version, "version"));
    if (g->version == 1)
        return vq_fail(err, VQ_ERR_FORMAT,
                       "gguf: version 1 is not supported (v2 and v3 only; re-convert the model)");
    if (g->version != 2 && g->version != 3)
        return vq_fail(err, VQ_ERR_FORMAT, "gguf: version %u is not supported (v2 and v3 only%s)",
                       g->version, (g->version & 0xffffu) == 0 ? "; big-endian file?" : "");
    uint64_t n_tensors, n_kv;
    VQ_TRY(rd_u64(&c, &n_tensors, "tensor count"));
    VQ_TRY(rd_u64(&c, &n_kv, "key/value count"));
    if (n_kv > left(&c) / MIN_KV_BYTES)
        return vq_fail(err, VQ_ERR_FORMAT,
                       "gguf: key/value count %llu cannot fit in the %zu bytes left",
                       (unsigned long long)n_kv, left(&c));
    if (n_tensors > left(&c) / MIN_TENSOR_BYTES)
        return vq_fail(err, VQ_ERR_FORMAT,
                       "gguf: tensor count %llu cannot fit in the %zu bytes left",
                       (unsigned long long)n_tensors, left(&c));
    if (n_kv >= UINT32_MAX || n_tensors >= UINT32_MAX)
        return vq_fail(err, VQ_ERR_FORMAT, "gguf: more than 2^32-2 keys or tensors");

    g->kv = calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kv);
    if (!g->kv)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory for %llu key/values",
                       (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        g->n_kv = i + 1; /* so close() frees what was allocated */
        VQ_TRY(parse_kv(&c, &g->kv[i], i));
    }
    g->n_kv = n_kv;
    VQ_TRY(index_keys(g, err));

    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *al = find_kv(g, "general.alignment");
    if (al) {
        uint32_t a;
        if (al->type != VQ_GGUF_UINT32)
            return vq_fail(err, VQ_ERR_FORMAT, "gguf: general.alignment has type %u, not UINT32",
                           al->type);
        memcpy(&a, al->val, 4);
        if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGNMENT)
            return vq_fail(err, VQ_ERR_FORMAT,
                           "gguf: general.alignment %u is not a power of two in [1, 2^24]", a);
        g->alignment = a;
    }

    if (n_tensors > left(&c) / MIN_TENSOR_BYTES)
        return vq_fail(err, VQ_ERR_FORMAT,
                       "gguf: tensor count %llu cannot fit in the %zu bytes left after the keys",
                       (unsigned long long)n_tensors, left(&c));
    g->tensors = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
    if (!g->tensors)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory for %llu tensor infos",
                       (unsigned long long)n_tensors);
    g->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++)
        VQ_TRY(parse_tensor(&c, &g->tensors[i], i, g->alignment));
    VQ_TRY(index_tensors(g, err));

    /* data section: after the infos, padded to the alignment */
    uint64_t data = ((uint64_t)c.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (data > g->size) {
        if (n_tensors)
            return vq_fail(err, VQ_ERR_FORMAT,
                           "gguf: data section would start at byte %llu, past the end (%zu bytes)",
                           (unsigned long long)data, g->size);
        data = g->size; /* vocab-only files may end without padding */
    }
    g->data_offset = data;
    return check_extents(g, err);
}

vq_status vq_gguf_open_memory(const void *data, size_t size, vq_gguf **out, char *err)
{
    if (!out)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "gguf: out is NULL");
    *out = NULL;
    if (!data && size)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "gguf: data is NULL");
    vq_gguf *g = calloc(1, sizeof *g);
    if (!g)
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory");
    g->base = data;
    g->size = size;
    vq_status st = parse(g, err);
    if (st != VQ_OK) {
        vq_gguf_close(g);
        return st;
    }
    *out = g;
    return VQ_OK;
}

vq_status vq_gguf_open(const char *path, vq_gguf **out, char *err)
{
    if (!out || !path)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "gguf: NULL path or out");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vq_fail(err, VQ_ERR_IO, "gguf: cannot open %s", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return vq_fail(err, VQ_ERR_IO, "gguf: %s is not a regular file", path);
    }
    if (sb.st_size < 24 || (uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return vq_fail(err, VQ_ERR_FORMAT, "gguf: %s: %lld bytes is too small for a GGUF header",
                       path, (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return vq_fail(err, VQ_ERR_IO, "gguf: cannot map %s", path);
    vq_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        munmap(map, size);
        return vq_fail(err, VQ_ERR_NOMEM, "gguf: no memory");
    }
    g->base = map;
    g->size = size;
    g->mapped = 1;
    char msg[VQ_ERRLEN];
    vq_status st = parse(g, msg);
    if (st != VQ_OK) {
        vq_gguf_close(g);
        return vq_fail(err, st, "%s: %s", path, msg);
    }
    *out = g;
    return VQ_OK;
}

/* ---- accessors ----------------------------------------------------------------- */

uint32_t vq_gguf_version(const vq_gguf *g) { return g ? g->version : 0; }
uint32_t vq_gguf_alignment(const vq_gguf *g) { return g ? g->alignment : 0; }
uint64_t vq_gguf_data_offset(const vq_gguf *g) { return g ? g->data_offset : 0; }

int vq_gguf_has(const vq_gguf *g, const char *key) { return find_kv(g, key) != NULL; }

/* Integer value of kv as (negative flag, magnitude); 0 if not an integer. */
static int kv_int(const gguf_kv *kv, int *neg, uint64_t *mag)
{
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; int64_t i64;
    int64_t s;
    switch (kv->type) {
    case VQ_GGUF_UINT8: memcpy(&u8, kv->val, 1); *neg = 0; *mag = u8; return 1;
    case VQ_GGUF_UINT16: memcpy(&u16, kv->val, 2); *neg = 0; *mag = u16; return 1;
    case VQ_GGUF_UINT32: memcpy(&u32, kv->val, 4); *neg = 0; *mag = u32; return 1;
    case VQ_GGUF_UINT64: memcpy(mag, kv->val, 8); *neg = 0; return 1;
    case VQ_GGUF_INT8: memcpy(&i8, kv->val, 1); s = i8; break;
    case VQ_GGUF_INT16: memcpy(&i16, kv->val, 2); s = i16; break;
    case VQ_GGUF_INT32: memcpy(&i32, kv->val, 4); s = i32; break;
    case VQ_GGUF_INT64: memcpy(&i64, kv->val, 8); s = i64; break;
    default: return 0;
    }
    *neg = s < 0;
    *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    return 1;
}

int vq_gguf_get_u32(const vq_gguf *g, const char *key, uint32_t *out)
{
    const gguf_kv *kv = find_kv(g, key);
    int neg;
    uint64_t m;
    if (!kv || !kv_int(kv, &neg, &m) || neg || m > UINT32_MAX)
        return 0;
    if (out)
        *out = (uint32_t)m;
    return 1;
}

int vq_gguf_get_i64(const vq_gguf *g, const char *key, int64_t *out)
{
    const gguf_kv *kv = find_kv(g, key);
    int neg;
    uint64_t m;
    if (!kv || !kv_int(kv, &neg, &m))
        return 0;
    if (!neg && m > (uint64_t)INT64_MAX)
        return 0;
    if (neg && m > (uint64_t)INT64_MAX + 1)
        return 0;
    if (out)
        *out = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    return 1;
}

int vq_gguf_get_f32(const vq_gguf *g, const char *key, float *out)
{
    const gguf_kv *kv = find_kv(g, key);
    if (!kv)
        return 0;
    if (kv->type == VQ_GGUF_FLOAT32) {
        if (out)
            memcpy(out, kv->val, 4);
        return 1;
    }
    if (kv->type == VQ_GGUF_FLOAT64) {
        double d;
        memcpy(&d, kv->val, 8);
        if (out)
            *out = (float)d;
        return 1;
    }
    return 0;
}

int vq_gguf_get_bool(const vq_gguf *g, const char *key, int *out)
{
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != VQ_GGUF_BOOL)
        return 0;
    if (out)
        *out = kv->val[0] != 0;
    return 1;
}

int vq_gguf_get_str(const vq_gguf *g, const char *key, vq_gguf_str *out)
{
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != VQ_GGUF_STRING)
        return 0;
    if (out) {
        memcpy(&out->len, kv->val, 8);
        out->ptr = (const char *)kv->val + 8;
    }
    return 1;
}

int vq_gguf_get_arr(const vq_gguf *g, const char *key, uint32_t *type, uint64_t *n,
                    const void **data)
{
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != VQ_GGUF_ARRAY)
        return 0;
    if (type)
        *type = kv->arr_type;
    if (n)
        *n = kv->arr_n;
    if (data)
        *data = kv->val;
    return 1;
}

int vq_gguf_get_arr_str(const vq_gguf *g, const char *key, uint64_t i, vq_gguf_str *out)
{
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != VQ_GGUF_ARRAY || kv->arr_type != VQ_GGUF_STRING || i >= kv->arr_n)
        return 0;
    if (out) {
        const uint8_t *p = kv->val + kv->str_off[i];
        memcpy(&out->len, p, 8);
        out->ptr = (const char *)p + 8;
    }
    return 1;
}

uint64_t vq_gguf_n_tensors(const vq_gguf *g) { return g ? g->n_tensors : 0; }

const vq_gguf_tensor *vq_gguf_tensor_at(const vq_gguf *g, uint64_t i)
{
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const vq_gguf_tensor *vq_gguf_find_tensor(const vq_gguf *g, const char *name)
{
    if (!g || !name || !g->t_hash)
        return NULL;
    uint64_t n = strlen(name);
    uint64_t h = hash_bytes(name, n) & (g->t_hcap - 1);
    while (g->t_hash[h]) {
        const vq_gguf_tensor *t = &g->tensors[g->t_hash[h] - 1];
        if (str_eq(t->name, name, n))
            return t;
        h = (h + 1) & (g->t_hcap - 1);
    }
    return NULL;
}

uint64_t vq_gguf_n_kv(const vq_gguf *g) { return g ? g->n_kv : 0; }

vq_gguf_str vq_gguf_kv_key(const vq_gguf *g, uint64_t i)
{
    vq_gguf_str none = { NULL, 0 };
    return g && i < g->n_kv ? g->kv[i].key : none;
}

int vq_gguf_kv_type(const vq_gguf *g, uint64_t i, uint32_t *type, uint32_t *arr_type,
                    uint64_t *arr_n)
{
    if (!g || i >= g->n_kv)
        return 0;
    if (type)
        *type = g->kv[i].type;
    if (arr_type)
        *arr_type = g->kv[i].type == VQ_GGUF_ARRAY ? g->kv[i].arr_type : 0;
    if (arr_n)
        *arr_n = g->kv[i].type == VQ_GGUF_ARRAY ? g->kv[i].arr_n : 0;
    return 1;
}
