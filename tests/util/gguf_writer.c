/* gguf_writer.c -- minimal GGUF writer for tests (see gguf_writer.h). */
#include "gguf_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "model/quants.h"

typedef struct {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(bytes *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(bytes *b, uint64_t v) { put(b, &v, 8); }
static void put_str(bytes *b, const char *s)
{
    size_t n = strlen(s);
    put_u64(b, n);
    put(b, s, n);
}
static void put_zeros(bytes *b, size_t n)
{
    static const uint8_t z[64];
    while (n) {
        size_t k = n < sizeof z ? n : sizeof z;
        put(b, z, k);
        n -= k;
    }
}

typedef struct {
    size_t info_start;     /* where this tensor's info begins in infos */
    size_t offset_pos;     /* position of its offset field in infos (0: raw, fixed offset) */
    bytes data;
} gw_tensor;

struct vq_gw {
    uint32_t version;
    uint32_t alignment;
    uint64_t n_kv;
    bytes kvs;
    bytes infos;
    gw_tensor *t;
    uint64_t n_t, cap_t;
    uint64_t force_tensors, force_kv;
};

vq_gw *vq_gw_begin(uint32_t version)
{
    vq_gw *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    w->version = version;
    w->alignment = 32;
    w->force_tensors = w->force_kv = UINT64_MAX;
    return w;
}

void vq_gw_free(vq_gw *w)
{
    if (!w)
        return;
    free(w->kvs.p);
    free(w->infos.p);
    for (uint64_t i = 0; i < w->n_t; i++)
        free(w->t[i].data.p);
    free(w->t);
    free(w);
}

static void kv_head(vq_gw *w, const char *key, uint32_t type)
{
    put_str(&w->kvs, key);
    put_u32(&w->kvs, type);
    w->n_kv++;
}

#define SCALAR_ADDER(fn, ctype, vtype)                        \
    void fn(vq_gw *w, const char *key, ctype v)              \
    {                                                         \
        kv_head(w, key, vtype);                               \
        put(&w->kvs, &v, sizeof v);                           \
    }
SCALAR_ADDER(vq_gw_add_u8, uint8_t, VQ_GGUF_UINT8)
SCALAR_ADDER(vq_gw_add_i8, int8_t, VQ_GGUF_INT8)
SCALAR_ADDER(vq_gw_add_u16, uint16_t, VQ_GGUF_UINT16)
SCALAR_ADDER(vq_gw_add_i16, int16_t, VQ_GGUF_INT16)
SCALAR_ADDER(vq_gw_add_i32, int32_t, VQ_GGUF_INT32)
SCALAR_ADDER(vq_gw_add_u64, uint64_t, VQ_GGUF_UINT64)
SCALAR_ADDER(vq_gw_add_i64, int64_t, VQ_GGUF_INT64)
SCALAR_ADDER(vq_gw_add_f32, float, VQ_GGUF_FLOAT32)
SCALAR_ADDER(vq_gw_add_f64, double, VQ_GGUF_FLOAT64)

void vq_gw_add_u32(vq_gw *w, const char *key, uint32_t v)
{
    kv_head(w, key, VQ_GGUF_UINT32);
    put_u32(&w->kvs, v);
    if (strcmp(key, "general.alignment") == 0 && v && !(v & (v - 1)))
        w->alignment = v;
}

void vq_gw_add_bool(vq_gw *w, const char *key, int v)
{
    uint8_t b = v ? 1 : 0;
    kv_head(w, key, VQ_GGUF_BOOL);
    put(&w->kvs, &b, 1);
}

void vq_gw_add_str(vq_gw *w, const char *key, const char *v)
{
    kv_head(w, key, VQ_GGUF_STRING);
    put_str(&w->kvs, v);
}

static size_t vtype_size(uint32_t t)
{
    switch (t) {
    case VQ_GGUF_UINT8: case VQ_GGUF_INT8: case VQ_GGUF_BOOL: return 1;
    case VQ_GGUF_UINT16: case VQ_GGUF_INT16: return 2;
    case VQ_GGUF_UINT32: case VQ_GGUF_INT32: case VQ_GGUF_FLOAT32: return 4;
    case VQ_GGUF_UINT64: case VQ_GGUF_INT64: case VQ_GGUF_FLOAT64: return 8;
    default: abort(); /* test misuse */
    }
}

void vq_gw_add_arr(vq_gw *w, const char *key, uint32_t elem_type, uint64_t n, const void *data)
{
    kv_head(w, key, VQ_GGUF_ARRAY);
    put_u32(&w->kvs, elem_type);
    put_u64(&w->kvs, n);
    put(&w->kvs, data, (size_t)n * vtype_size(elem_type));
}

void vq_gw_add_arr_str(vq_gw *w, const char *key, uint64_t n, const char *const *strs)
{
    kv_head(w, key, VQ_GGUF_ARRAY);
    put_u32(&w->kvs, VQ_GGUF_STRING);
    put_u64(&w->kvs, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(&w->kvs, strs[i]);
}

void vq_gw_add_kv_raw(vq_gw *w, const char *key, uint32_t type, const void *payload, size_t n)
{
    kv_head(w, key, type);
    put(&w->kvs, payload, n);
}

static gw_tensor *new_tensor(vq_gw *w)
{
    if (w->n_t == w->cap_t) {
        w->cap_t = w->cap_t ? 2 * w->cap_t : 16;
        w->t = realloc(w->t, (size_t)w->cap_t * sizeof *w->t);
        if (!w->t)
            abort();
    }
    gw_tensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    return t;
}

static void put_info(vq_gw *w, gw_tensor *t, const char *name, uint32_t n_dims,
                     const uint64_t *ne, uint32_t type, uint64_t offset)
{
    t->info_start = w->infos.n;
    put_str(&w->infos, name);
    put_u32(&w->infos, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        put_u64(&w->infos, ne[d]);
    put_u32(&w->infos, type);
    t->offset_pos = w->infos.n;
    put_u64(&w->infos, offset);
}

void vq_gw_add_tensor(vq_gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, const void *data)
{
    gw_tensor *t = new_tensor(w);
    size_t nbytes = vq_wtype_row_bytes(type, ne[0]);
    if (!nbytes || n_dims < 1 || n_dims > 4)
        abort(); /* test misuse: unknown type or bad row length */
    for (uint32_t d = 1; d < n_dims; d++)
        nbytes *= (size_t)ne[d];
    put_info(w, t, name, n_dims, ne, type, 0);
    put(&t->data, data, nbytes);
}

void vq_gw_add_tensor_raw(vq_gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                          uint32_t type, uint64_t offset)
{
    gw_tensor *t = new_tensor(w);
    put_info(w, t, name, n_dims, ne, type, offset);
    t->offset_pos = 0; /* keep the given offset */
}

void vq_gw_set_counts(vq_gw *w, uint64_t n_tensors, uint64_t n_kv)
{
    w->force_tensors = n_tensors;
    w->force_kv = n_kv;
}

static size_t pad_to(size_t n, size_t a) { return (n + a - 1) / a * a; }

int vq_gw_finish(vq_gw *w, uint8_t **buf, size_t *len)
{
    /* assign data offsets */
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_t; i++) {
        gw_tensor *t = &w->t[i];
        if (!t->offset_pos)
            continue;
        off = pad_to(off, w->alignment);
        memcpy(w->infos.p + t->offset_pos, &off, 8);
        off += t->data.n;
    }
    bytes out = { 0 };
    put(&out, "GGUF", 4);
    put_u32(&out, w->version);
    put_u64(&out, w->force_tensors != UINT64_MAX ? w->force_tensors : w->n_t);
    put_u64(&out, w->force_kv != UINT64_MAX ? w->force_kv : w->n_kv);
    put(&out, w->kvs.p, w->kvs.n);
    put(&out, w->infos.p, w->infos.n);
    put_zeros(&out, pad_to(out.n, w->alignment) - out.n);
    size_t data_start = out.n;
    for (uint64_t i = 0; i < w->n_t; i++) {
        gw_tensor *t = &w->t[i];
        if (!t->offset_pos)
            continue;
        put_zeros(&out, pad_to(out.n - data_start, w->alignment) - (out.n - data_start));
        put(&out, t->data.p, t->data.n);
    }
    if (!out.p)
        put(&out, "", 0);
    *buf = out.p;
    *len = out.n;
    return 0;
}

int vq_gw_write_file(vq_gw *w, const char *path)
{
    uint8_t *buf;
    size_t len;
    vq_gw_finish(w, &buf, &len);
    FILE *f = fopen(path, "wb");
    int rc = -1;
    if (f) {
        rc = fwrite(buf, 1, len, f) == len ? 0 : -1;
        if (fclose(f) != 0)
            rc = -1;
    }
    free(buf);
    return rc;
}
