/* gguf.h -- read-only GGUF v2/v3 reader over mmap (or a caller's buffer).
 *
 * Contract: vq_gguf_open validates the whole header, every key/value and
 * every tensor descriptor before returning: every count, string length,
 * offset and tensor extent is checked against the file size and against
 * overflow. A bad file gives VQ_ERR_FORMAT with a message naming what is
 * wrong (and where: byte offset, key, tensor). After a successful open, all
 * accessors are safe: views point into the mapping and stay valid until
 * vq_gguf_close. Strings are views (ptr, len), not NUL-terminated.
 *
 * Format reference: ggml's docs/gguf.md (magic "GGUF", version, tensor
 * count, kv count, kvs, tensor infos, alignment padding, tensor data).
 *
 * Policy choices (all give VQ_ERR_FORMAT with a message):
 *   - version 1 (32-bit counts) and versions > 3 are refused;
 *   - arrays of arrays are refused (no GGUF producer writes them);
 *   - duplicate keys and duplicate tensor names are refused;
 *   - general.alignment must be a UINT32 power of two in [1, 2^24];
 *   - tensors: n_dims in 1..4, every ne > 0, element count <= 2^62,
 *     ne[0] a multiple of the type's block size, offset a multiple of the
 *     alignment, data inside the file, no two tensors' data overlapping;
 *   - a tensor type number unknown to ggml is refused (message names the
 *     tensor and number); a type ggml knows but this runtime cannot compute
 *     with (IQ*, I8, ...) is accepted and sized: the model loader refuses it
 *     via vq_wtype_supported() when it actually needs that tensor.
 * Numeric array data and scalar values are little-endian and may be
 * unaligned: read them with memcpy. The host must be little-endian.
 * Tensor data sits at a multiple of the alignment from the start of the
 * file; vq_gguf_open's mapping is page-aligned, so tensor data is aligned to
 * general.alignment. With vq_gguf_open_memory it is aligned only as well as
 * the caller's buffer is (the weight kernels need 2-byte alignment). */
#ifndef VQ_MODEL_GGUF_H
#define VQ_MODEL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

typedef enum {
    VQ_GGUF_UINT8 = 0, VQ_GGUF_INT8 = 1, VQ_GGUF_UINT16 = 2, VQ_GGUF_INT16 = 3,
    VQ_GGUF_UINT32 = 4, VQ_GGUF_INT32 = 5, VQ_GGUF_FLOAT32 = 6, VQ_GGUF_BOOL = 7,
    VQ_GGUF_STRING = 8, VQ_GGUF_ARRAY = 9, VQ_GGUF_UINT64 = 10, VQ_GGUF_INT64 = 11,
    VQ_GGUF_FLOAT64 = 12
} vq_gguf_vtype;

typedef struct {
    const char *ptr; /* into the mapping, not NUL-terminated */
    uint64_t len;
} vq_gguf_str;

typedef struct {
    vq_gguf_str name;
    uint32_t n_dims;       /* 1..4 */
    uint64_t ne[4];        /* elements per dim; ne[0] is the row length */
    uint32_t type;         /* ggml type number (see quants.h vq_wtype) */
    uint64_t offset;       /* relative to the data section */
    const void *data;      /* into the mapping */
    uint64_t nbytes;
} vq_gguf_tensor;

typedef struct vq_gguf vq_gguf;

vq_status vq_gguf_open(const char *path, vq_gguf **out, char *err);
/* Parse a caller-owned buffer (kept, not copied): for tests and fuzzing. */
vq_status vq_gguf_open_memory(const void *data, size_t size, vq_gguf **out, char *err);
void vq_gguf_close(vq_gguf *g);
/* The bytes [p, p + len) of g's tensor data will not be read again soon: for
 * a mapped file the whole pages inside them leave this process's memory
 * (a later read brings them back from the file); for a buffer opened from
 * memory nothing happens. */
void vq_gguf_drop_pages(const vq_gguf *g, const void *p, size_t len);

uint32_t vq_gguf_version(const vq_gguf *g);

/* Key/values. Lookups return 0 if the key is absent or has another type
 * (integers of any width/sign convert when the value fits). */
int vq_gguf_has(const vq_gguf *g, const char *key);
int vq_gguf_get_u32(const vq_gguf *g, const char *key, uint32_t *out);
int vq_gguf_get_i64(const vq_gguf *g, const char *key, int64_t *out);
int vq_gguf_get_f32(const vq_gguf *g, const char *key, float *out); /* f32/f64 */
int vq_gguf_get_bool(const vq_gguf *g, const char *key, int *out);
int vq_gguf_get_str(const vq_gguf *g, const char *key, vq_gguf_str *out);
/* Arrays: element type and count; for numeric arrays *data points at the
 * packed little-endian elements. */
int vq_gguf_get_arr(const vq_gguf *g, const char *key, uint32_t *type,
                    uint64_t *n, const void **data);
/* String array element i (O(1): offsets are indexed at open). */
int vq_gguf_get_arr_str(const vq_gguf *g, const char *key, uint64_t i, vq_gguf_str *out);

/* Tensors. */
uint64_t vq_gguf_n_tensors(const vq_gguf *g);
const vq_gguf_tensor *vq_gguf_tensor_at(const vq_gguf *g, uint64_t i);
const vq_gguf_tensor *vq_gguf_find_tensor(const vq_gguf *g, const char *name);

/* Number of key/values and key i's name (for `inspect`); {NULL,0} if i is
 * out of range. */
uint64_t vq_gguf_n_kv(const vq_gguf *g);
vq_gguf_str vq_gguf_kv_key(const vq_gguf *g, uint64_t i);
/* Key i's value type (vq_gguf_vtype), and for arrays the element type and
 * count (either pointer may be NULL). Returns 0 if i is out of range. */
int vq_gguf_kv_type(const vq_gguf *g, uint64_t i, uint32_t *type,
                    uint32_t *arr_type, uint64_t *arr_n);

/* general.alignment in effect (32 when absent) and the byte offset of the
 * tensor data section from the start of the file. */
uint32_t vq_gguf_alignment(const vq_gguf *g);
uint64_t vq_gguf_data_offset(const vq_gguf *g);

#endif
