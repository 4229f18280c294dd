/* json_write.h -- a small streaming JSON writer, for the CLI's result files
 * (moved out of the library: only the CLI and its tests write JSON).
 *
 * Contract:
 *   - Output goes to a sink callback as it is produced; the writer itself
 *     never allocates (its nesting stack is a fixed array of
 *     CLI_JSON_MAX_DEPTH levels inside cli_json).
 *   - Strings are escaped per RFC 8259: '"' and '\\' get a backslash,
 *     control characters (< 0x20) are written as \n, \t, ... or \u00XX,
 *     and bytes that are not valid UTF-8 are replaced by U+FFFD, so the
 *     output is always valid UTF-8 JSON whatever the input bytes.
 *   - Numbers: integers exactly; doubles with 10 significant digits
 *     ("%.10g"); NaN and infinities (not representable in JSON) as null.
 *   - Misuse (a value in an object without a key, a key outside an object,
 *     unbalanced end_*, nesting deeper than CLI_JSON_MAX_DEPTH) and sink
 *     failures are sticky: later calls do nothing and cli_json_finish
 *     returns the first error (VQ_ERR_STATE for misuse, VQ_ERR_IO for a
 *     sink failure). cli_json_finish also fails if containers are open.
 *   - pretty != 0 writes one member per line, indented by two spaces.
 *
 * Sinks provided: cli_json_sink_file (user: FILE *) and cli_json_sink_buf
 * (user: cli_json_buf *, a malloc'd buffer that grows by doubling; the
 * caller frees buf->data). */
#ifndef VQ_TOOLS_UTIL_JSON_WRITE_H
#define VQ_TOOLS_UTIL_JSON_WRITE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "veloxquant.h"

#define CLI_JSON_MAX_DEPTH 32

/* Write n bytes; return 0 on success, nonzero on failure. */
typedef int (*cli_json_sink_fn)(void *user, const char *data, size_t n);

typedef struct {
    cli_json_sink_fn sink;
    void *user;
    int pretty;
    int depth;                           /* open containers */
    uint8_t is_object[CLI_JSON_MAX_DEPTH]; /* per level: object (1) or array (0) */
    uint8_t n_items[CLI_JSON_MAX_DEPTH];   /* per level: 0 = empty so far, 1 = has members */
    int have_key;                        /* a key was written, its value is due */
    int n_roots;                         /* top-level values written (at most 1) */
    vq_status st;                        /* first error, sticky */
} cli_json;

void cli_json_init(cli_json *j, cli_json_sink_fn sink, void *user, int pretty);

void cli_json_begin_object(cli_json *j);
void cli_json_end_object(cli_json *j);
void cli_json_begin_array(cli_json *j);
void cli_json_end_array(cli_json *j);
/* A member name inside an object; the next call must write its value. */
void cli_json_key(cli_json *j, const char *key);

void cli_json_str(cli_json *j, const char *s);          /* NULL writes null */
void cli_json_strn(cli_json *j, const char *s, size_t n);
void cli_json_int(cli_json *j, int64_t v);
void cli_json_uint(cli_json *j, uint64_t v);
void cli_json_num(cli_json *j, double v);
void cli_json_bool(cli_json *j, int v);
void cli_json_null(cli_json *j);

/* Key + value in one call. */
void cli_json_kstr(cli_json *j, const char *key, const char *s);
void cli_json_kint(cli_json *j, const char *key, int64_t v);
void cli_json_kuint(cli_json *j, const char *key, uint64_t v);
void cli_json_knum(cli_json *j, const char *key, double v);
void cli_json_kbool(cli_json *j, const char *key, int v);

/* VQ_OK if exactly one complete value was written without error; also
 * writes a final newline when pretty. */
vq_status cli_json_finish(cli_json *j);

/* One string as a JSON string literal on f (quotes included, escaped as
 * above): for commands that print small JSON objects with printf. */
void cli_json_print_str(FILE *f, const char *s);

/* Sinks. */
int cli_json_sink_file(void *file, const char *data, size_t n);

typedef struct {
    char *data; /* NUL-terminated after every write; malloc'd, caller frees */
    size_t len;
    size_t cap;
} cli_json_buf;
int cli_json_sink_buf(void *buf, const char *data, size_t n);

#endif
