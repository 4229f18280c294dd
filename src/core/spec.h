/* spec.h -- the `NAME[:key=value[,key=value...]]` grammar shared by codec
 * specs, eviction specs and cross-layer specs.
 *
 * Grammar: NAME is [a-z0-9_]+; keys are [a-z0-9_]+; values are any bytes
 * except ',' (so a path may appear as `calib=/a/b.vqc`). Whitespace is not
 * allowed. At most VQ_SPEC_MAX_KV pairs; a key may appear once.
 *
 * Use: vq_spec_parse, then vq_spec_int/vq_spec_float/vq_spec_str for each
 * parameter the consumer knows (each marks the key as used), then
 * vq_spec_check_unused, which names the first key nobody asked for. */
#ifndef VQ_CORE_SPEC_H
#define VQ_CORE_SPEC_H

#include "veloxquant.h"

#define VQ_SPEC_MAX_KV 16
#define VQ_SPEC_MAX_LEN 512

typedef struct {
    char name[64];
    int n;
    struct {
        char key[32];
        char val[VQ_SPEC_MAX_LEN];
        int used;
    } kv[VQ_SPEC_MAX_KV];
} vq_spec;

/* Parse text into s. On error writes a message to err (may be NULL) naming
 * the bad part and returns VQ_ERR_INVALID_ARG. */
vq_status vq_spec_parse(const char *text, vq_spec *s, char *err);

/* Look up key: if absent *out = def. If present it must parse completely as
 * the type and lie in [lo, hi], else VQ_ERR_INVALID_ARG naming the key. */
vq_status vq_spec_int(vq_spec *s, const char *key, long def, long lo, long hi,
                      long *out, char *err);
/* An integer parameter of a table read by vq_spec_ints: the arguments of
 * vq_spec_int. */
typedef struct vq_spec_int_field {
    const char *key;
    long def, lo, hi;
    long *out;
} vq_spec_int_field;
/* vq_spec_int for each of the n fields, in order; stops at the first error. */
vq_status vq_spec_ints(vq_spec *s, const vq_spec_int_field *f, size_t n, char *err);
vq_status vq_spec_float(vq_spec *s, const char *key, double def, double lo,
                        double hi, double *out, char *err);
/* *out points into s (or to def); NULL def means "absent is fine, *out=NULL" */
vq_status vq_spec_str(vq_spec *s, const char *key, const char *def,
                      const char **out, char *err);

/* VQ_ERR_INVALID_ARG naming the first key that no lookup consumed. */
vq_status vq_spec_check_unused(const vq_spec *s, char *err);

#endif
