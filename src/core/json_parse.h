/* json_parse.h -- a small JSON reader (RFC 8259) into a tree.
 *
 * Contract: the input is hostile. vq_json_parse reads exactly one value
 * (surrounding whitespace allowed) from text[0..len) -- no NUL needed --
 * into a tree of nodes; nesting deeper than VQ_JSON_PARSE_MAX_DEPTH,
 * malformed numbers/strings/escapes, control characters inside strings,
 * trailing bytes, and inputs over 64 MiB are refused with VQ_ERR_FORMAT
 * and a message naming the byte offset (in err, VQ_ERRLEN bytes, may be
 * NULL, and vq_last_error). Strings are unescaped to UTF-8 (\uXXXX,
 * surrogate pairs joined; a lone surrogate is refused). Numbers are
 * doubles. Duplicate member names are kept (lookups find the first).
 * The tree is owned by the caller: vq_json_node_free (NULL harmless). */
#ifndef VQ_CORE_JSON_PARSE_H
#define VQ_CORE_JSON_PARSE_H

#include <stddef.h>

#include "veloxquant.h"

#define VQ_JSON_PARSE_MAX_DEPTH 64

typedef enum {
    VQ_JSON_NULL = 0,
    VQ_JSON_BOOL,
    VQ_JSON_NUMBER,
    VQ_JSON_STRING,
    VQ_JSON_ARRAY,
    VQ_JSON_OBJECT
} vq_json_type;

typedef struct vq_json_node {
    vq_json_type type;
    double num;                    /* NUMBER; BOOL as 0/1 */
    char *str;                     /* STRING (NUL-terminated UTF-8) */
    size_t str_len;                /* may contain NULs from \u0000 */
    char *key;                     /* member name when inside an object */
    size_t n;                      /* ARRAY/OBJECT: children */
    struct vq_json_node *children; /* n nodes */
} vq_json_node;

vq_status vq_json_parse(const char *text, size_t len, vq_json_node **out, char *err);
void vq_json_node_free(vq_json_node *root);

/* Member `key` of an object (first match), or NULL (also when obj is NULL
 * or not an object). */
const vq_json_node *vq_json_get(const vq_json_node *obj, const char *key);
/* Typed member lookups with a default when absent or of another type. */
double vq_json_get_num(const vq_json_node *obj, const char *key, double dflt);
const char *vq_json_get_str(const vq_json_node *obj, const char *key, const char *dflt);

#endif
