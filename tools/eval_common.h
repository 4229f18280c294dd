/* eval_common.h -- shared pieces of the evaluation commands (validate, ppl,
 * needle): opening a context whose K/V lives in a packed cache, comparing
 * two logit vectors, progress lines on stderr. */
#ifndef VQ_TOOLS_EVAL_COMMON_H
#define VQ_TOOLS_EVAL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

/* A context for `model` whose K/V is held by a packed cache built from the
 * cache config text `cfg_text` (vq_cache_config_parse, vq_cache_for_model,
 * vq_ctx_create_cached); *cache gets the cache (for vq_cache_stats). With
 * cfg_text NULL: the plain float K/V context and *cache = NULL. Free with
 * eval_ctx_close (context first, then the cache it borrows). On failure
 * returns the status and a message in vq_last_error(). */
vq_status eval_ctx_open(const vq_model *m, const char *cfg_text, int max_tokens, int n_threads,
                        vq_ctx **ctx, vq_cache **cache);
void eval_ctx_close(vq_ctx *ctx, vq_cache *cache);

/* KL(P || Q) in nats and whether the argmaxes agree, where P = softmax(ref)
 * and Q = softmax(x), n logits each (computed in double; KL >= 0 up to
 * rounding, clamped at 0). */
double eval_kl(const float *ref, const float *x, int n, int *top1_same);
int eval_argmax(const float *x, int n); /* ties: lowest index */

/* Progress on stderr: "label: done/total (pct) rate unit/s ETA Ns".
 * Prints at most about once a second (and always when done == total), and
 * only once the task has run for 2 seconds, so short runs stay quiet. */
typedef struct {
    const char *label;
    const char *unit;
    double t0, last;
    int printed;
} eval_progress;
void eval_progress_start(eval_progress *p, const char *label, const char *unit);
void eval_progress_update(eval_progress *p, double done, double total);

/* Whole file into a NUL-terminated malloc'd buffer (caller frees); NULL on
 * failure. */
char *eval_read_text(const char *path, size_t *len);

#endif
