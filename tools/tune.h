/* tune.h -- pieces of `veloxquant tune` shared by cmd_tune.c (pick a config
 * among candidates) and tune_plan.c (a per-layer bit plan). */
#ifndef VQ_TOOLS_TUNE_H
#define VQ_TOOLS_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

/* KL (nats/token) vs the fp16 cache beyond which a config breaks the
 * model (top-1 agreement collapses); tune never picks one. */
#define TUNE_BREAKS_KL 0.5

/* Measured bits per element of a cache after a run: packed bytes per token
 * per layer (fp16 residual window excluded) plus the slot index, K and V
 * averaged over layers and heads; NaN when a layer packed nothing yet. */
double tune_measured_bpe(vq_cache *cache);

/* The choices of `tune --plan`: keys at klow or khigh bits, values at vlow
 * or vhigh; kspec / vspec: codec specs without bits (NULL: kivix with
 * kgroup tokens per key block (0: 128) and 64 outliers, kivix with vgroup
 * channels per value scale (0: min(head_dim, 128))); cache: the cache
 * fields after residual= (NULL: "sinks=4 prerope=1"). vlow = vhigh keeps
 * every value at that width (its sensitivity runs are skipped). */
typedef struct {
    int klow, khigh, vlow, vhigh;
    int kgroup, vgroup;
    const char *kspec, *vspec;
    const char *cache;
} tune_plan_opts;

/* `tune --plan LOW,HIGH`: sensitivity per (layer, role), a plan within
 * `budget` bits per element, the plan measured and printed. toks: n tokens
 * (BOS first when the model uses one). Returns the exit status. */
int tune_plan(const vq_model *m, const char *model, const int32_t *toks, size_t n, double budget,
              const tune_plan_opts *opts, int json);

#endif
