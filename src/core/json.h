/* json.h -- a small streaming JSON writer.
 *
 * Contract:
 *   - Output goes to a sink callback as it is produced; the writer itself
 *     never allocates (its nesting stack is a fixed array of
 *     VQ_JSON_MAX_DEPTH levels inside vq_json).
 *   - Strings are escaped per RFC 8259: '"' and '\\' get a backslash,
 *     control characters (< 0x20) are written as \n, \t, ... or \u00XX,
 *     and bytes that are not valid UTF-8 are replaced by U+FFFD, so the
 *     output is always valid UTF-8 JSON whatever the input bytes.
 *   - Numbers: integers exactly; doubles with 10 significant digits
 *     ("%.10g"); NaN and infinities (not representable in JSON) as null.
 *   - Misuse (a value in an object without a key, a key outside an object,
 *     unbalanced end_*, nesting deeper than VQ_JSON_MAX_DEPTH) and sink
 *     failures are sticky: later calls do nothing and vq_json_finish
 *     returns the first error (VQ_ERR_STATE for misuse, VQ_ERR_IO for a
 *     sink failure). vq_json_finish also fails if containers are open.
 *   - pretty != 0 writes one member per line, indented by two spaces.
 *
 * Sinks provided: vq_json_sink_file (user: FILE *) and vq_json_sink_buf
 * (user: vq_json_buf *, a malloc'd buffer that grows by doubling; the
 * caller frees buf->data). */
#ifndef VQ_CORE_JSON_H
#define VQ_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

#define VQ_JSON_MAX_DEPTH 32

/* Write n bytes; return 0 on success, nonzero on failure. */
typedef int (*vq_json_sink_fn)(void *user, const char *data, size_t n);

typedef struct {
    vq_json_sink_fn sink;
    void *user;
    int pretty;
    int depth;                           /* open containers */
    uint8_t is_object[VQ_JSON_MAX_DEPTH]; /* per level: object (1) or array (0) */
    uint8_t n_items[VQ_JSON_MAX_DEPTH];   /* per level: 0 = empty so far, 1 = has members */
    int have_key;                        /* a key was written, its value is due */
    int n_roots;                         /* top-level values written (at most 1) */
    vq_status st;                        /* first error, sticky */
} vq_json;

void vq_json_init(vq_json *j, vq_json_sink_fn sink, void *user, int pretty);

void vq_json_begin_object(vq_json *j);
void vq_json_end_object(vq_json *j);
void vq_json_begin_array(vq_json *j);
void vq_json_end_array(vq_json *j);
/* A member name inside an object; the next call must write its value. */
void vq_json_key(vq_json *j, const char *key);

void vq_json_str(vq_json *j, const char *s);          /* NULL writes null */
void vq_json_strn(vq_json *j, const char *s, size_t n);
void vq_json_int(vq_json *j, int64_t v);
void vq_json_uint(vq_json *j, uint64_t v);
void vq_json_num(vq_json *j, double v);
void vq_json_bool(vq_json *j, int v);
void vq_json_null(vq_json *j);

/* Key + value in one call. */
void vq_json_kstr(vq_json *j, const char *key, const char *s);
void vq_json_kint(vq_json *j, const char *key, int64_t v);
void vq_json_kuint(vq_json *j, const char *key, uint64_t v);
void vq_json_knum(vq_json *j, const char *key, double v);
void vq_json_kbool(vq_json *j, const char *key, int v);

/* VQ_OK if exactly one complete value was written without error; also
 * writes a final newline when pretty. */
vq_status vq_json_finish(vq_json *j);

/* Sinks. */
int vq_json_sink_file(void *file, const char *data, size_t n);

typedef struct {
    char *data; /* NUL-terminated after every write; malloc'd, caller frees */
    size_t len;
    size_t cap;
} vq_json_buf;
int vq_json_sink_buf(void *buf, const char *data, size_t n);

#endif
