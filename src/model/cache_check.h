/* cache_check.h -- does a cache config break this model? (cache config
 * `check=warn|strict`, read by vq_cache_for_model).
 *
 * vq_cache_check_kl runs a fixed built-in English text (about 400 tokens,
 * cache_check.c) teacher-forced through the model twice, once with an fp16
 * cache and once with a cache made from cfg (without its check= field),
 * and returns the mean KL(p_fp16 || p_cfg) in nats per scored token and
 * the top-1 agreement. Positions before the first packed token carry no
 * information about the codecs, so the text is at least residual + 2 key
 * groups long or the KL is over what was packed (ppl's rule otherwise).
 *
 * vq_cache_for_model with check=warn or check=strict calls it after making
 * the cache: KL >= VQ_CHECK_BREAKS_KL (0.5 nats, tune's "broken") with
 * check=strict refuses (VQ_ERR_UNSUPPORTED, the message gives the KL and
 * says which config broke); with check=warn the cache is returned and
 * vq_cache_error(cache) starts with "warning: " and says the same (the
 * library prints nothing). Cost: two forward passes of the text. */
#ifndef VQ_MODEL_CACHE_CHECK_H
#define VQ_MODEL_CACHE_CHECK_H

#include "veloxquant.h"

#define VQ_CHECK_BREAKS_KL 0.5

vq_status vq_cache_check_kl(const vq_model *m, const char *cfg_text, double *kl, double *top1, int *n_scored);

#endif
