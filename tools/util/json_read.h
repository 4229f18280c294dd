/* json_read.h -- a small JSON reader (RFC 8259) into a tree, for the CLI
 * (moved out of the library: only the CLI and its tests read JSON).
 *
 * Contract: the input is hostile. cli_json_parse reads exactly one value
 * (surrounding whitespace allowed) from text[0..len) -- no NUL needed --
 * into a tree of nodes; nesting deeper than CLI_JSON_PARSE_MAX_DEPTH,
 * malformed numbers/strings/escapes, control characters inside strings,
 * trailing bytes, and inputs over 64 MiB are refused with VQ_ERR_FORMAT
 * and a message naming the byte offset in err (CLI_JSON_ERRLEN bytes, may
 * be NULL; the library's vq_last_error is not touched). Strings are unescaped to UTF-8 (\uXXXX,
 * surrogate pairs joined; a lone surrogate is refused). Numbers are
 * doubles. Duplicate member names are kept (lookups find the first).
 * The tree is owned by the caller: cli_json_node_free (NULL harmless). */
#ifndef VQ_TOOLS_UTIL_JSON_READ_H
#define VQ_TOOLS_UTIL_JSON_READ_H

#include <stddef.h>

#include "veloxquant.h"

#define CLI_JSON_PARSE_MAX_DEPTH 64
#define CLI_JSON_ERRLEN 256

typedef enum {
    CLI_JSON_NULL = 0,
    CLI_JSON_BOOL,
    CLI_JSON_NUMBER,
    CLI_JSON_STRING,
    CLI_JSON_ARRAY,
    CLI_JSON_OBJECT
} cli_json_type;

typedef struct cli_json_node {
    cli_json_type type;
    double num;                    /* NUMBER; BOOL as 0/1 */
    char *str;                     /* STRING (NUL-terminated UTF-8) */
    size_t str_len;                /* may contain NULs from \u0000 */
    char *key;                     /* member name when inside an object */
    size_t n;                      /* ARRAY/OBJECT: children */
    struct cli_json_node *children; /* n nodes */
} cli_json_node;

vq_status cli_json_parse(const char *text, size_t len, cli_json_node **out, char *err);
void cli_json_node_free(cli_json_node *root);

/* Member `key` of an object (first match), or NULL (also when obj is NULL
 * or not an object). */
const cli_json_node *cli_json_get(const cli_json_node *obj, const char *key);
/* Typed member lookups with a default when absent or of another type. */
double cli_json_get_num(const cli_json_node *obj, const char *key, double dflt);
const char *cli_json_get_str(const cli_json_node *obj, const char *key, const char *dflt);

#endif
