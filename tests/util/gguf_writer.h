/* gguf_writer.h -- a minimal GGUF v2/v3 writer for tests: tiny random-weight
 * models, round-trip tests of the reader, and deliberately malformed files.
 *
 * Usage:
 *     vq_gw *w = vq_gw_begin(3);
 *     vq_gw_add_str(w, "general.architecture", "llama");
 *     vq_gw_add_u32(w, "llama.block_count", 2);
 *     const char *toks[] = { "<s>", "a" };
 *     vq_gw_add_arr_str(w, "tokenizer.ggml.tokens", 2, toks);
 *     uint64_t ne[2] = { 64, 32 };           // ne[0] = row length
 *     vq_gw_add_tensor(w, "output.weight", 2, ne, VQ_W_F32, floats);
 *     vq_gw_write_file(w, path);             // or vq_gw_finish(w, &buf, &len)
 *     vq_gw_free(w);
 *
 * Layout written (ggml docs/gguf.md): "GGUF", version u32, tensor count u64,
 * kv count u64, kvs in insertion order, tensor infos in insertion order, zero
 * padding to the alignment, tensor data, each tensor at an offset that is a
 * multiple of the alignment (32, or the value of a "general.alignment" UINT32
 * key added before finishing). Tensor data and array payloads are copied at
 * the add call, so callers may free theirs.
 *
 * Test-only escape hatches for malformed files: vq_gw_add_kv_raw (any type
 * number with any payload), vq_gw_add_tensor_raw (any info fields, no data),
 * vq_gw_set_counts (lie about the counts in the header).
 *
 * Errors: this is test code; an allocation failure aborts. Functions taking a
 * key or name copy it. */
#ifndef VQ_TESTS_GGUF_WRITER_H
#define VQ_TESTS_GGUF_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct vq_gw vq_gw;

vq_gw *vq_gw_begin(uint32_t version);
void vq_gw_free(vq_gw *w);

void vq_gw_add_u8(vq_gw *w, const char *key, uint8_t v);
void vq_gw_add_i8(vq_gw *w, const char *key, int8_t v);
void vq_gw_add_u16(vq_gw *w, const char *key, uint16_t v);
void vq_gw_add_i16(vq_gw *w, const char *key, int16_t v);
void vq_gw_add_u32(vq_gw *w, const char *key, uint32_t v); /* general.alignment sets it */
void vq_gw_add_i32(vq_gw *w, const char *key, int32_t v);
void vq_gw_add_u64(vq_gw *w, const char *key, uint64_t v);
void vq_gw_add_i64(vq_gw *w, const char *key, int64_t v);
void vq_gw_add_f32(vq_gw *w, const char *key, float v);
void vq_gw_add_f64(vq_gw *w, const char *key, double v);
void vq_gw_add_bool(vq_gw *w, const char *key, int v);
void vq_gw_add_str(vq_gw *w, const char *key, const char *v);
/* Numeric array: elem_type a vq_gguf_vtype scalar; data holds n packed
 * little-endian elements of that type. */
void vq_gw_add_arr(vq_gw *w, const char *key, uint32_t elem_type, uint64_t n, const void *data);
void vq_gw_add_arr_str(vq_gw *w, const char *key, uint64_t n, const char *const *strs);

/* A tensor: ne[0] is the row length (a multiple of the type's block size);
 * data holds the tensor's bytes in the type's block layout
 * (vq_wtype_row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3] bytes). */
void vq_gw_add_tensor(vq_gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, const void *data);

/* Malformed-file helpers. kv_raw writes key, the type number, then payload
 * bytes verbatim. tensor_raw writes an info with exactly these fields (the
 * offset as given; no data is added). set_counts overrides the header counts
 * (UINT64_MAX = keep the real count). */
void vq_gw_add_kv_raw(vq_gw *w, const char *key, uint32_t type, const void *payload, size_t n);
void vq_gw_add_tensor_raw(vq_gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
                          uint32_t type, uint64_t offset);
void vq_gw_set_counts(vq_gw *w, uint64_t n_tensors, uint64_t n_kv);

/* Serialize into a new malloc'd buffer (*buf, caller frees). Returns 0. */
int vq_gw_finish(vq_gw *w, uint8_t **buf, size_t *len);
/* Serialize to a file. Returns 0, or -1 if the file cannot be written. */
int vq_gw_write_file(vq_gw *w, const char *path);

#endif
