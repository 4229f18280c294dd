/* generate_tokens.c -- the generation loop, for a tokenized prompt
 * (vq_generate tokenizes and calls it; a loaded prompt cache continues with
 * it): prefill in batches, then sample and decode one token at a time,
 * streaming each token's text. Buffers (logits, history) are allocated once
 * per call, never per token.
 *
 * Timing: prefill_seconds covers the prompt's forward passes and the
 * reservation of the cache's memory for the whole sequence;
 * decode_seconds covers sampling and the one-token forward passes of
 * generated tokens. The last generated token is not run through the model
 * (nothing would read its logits), so decode tok/s counts the decode steps
 * actually run. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "model/forward.h"

vq_status vq_generate_tokens(vq_ctx *c, const int32_t *tokens, size_t n, const vq_gen_params *gp,
                             vq_token_cb on_token, void *user, vq_gen_stats *stats)
{
    if (!c || !tokens)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "generate: NULL argument");
    vq_gen_params p = gp ? *gp : vq_gen_defaults();
    if (p.max_tokens < 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "generate: max_tokens %d < 0", p.max_tokens);
    if (n == 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "generate: the prompt has no tokens");
    if (n > (size_t)(c->max_tokens - c->n_tokens))
        return vq_fail(c->err, VQ_ERR_STATE, "generate: %zu prompt tokens do not fit (position %d of %d)", n,
                       c->n_tokens, c->max_tokens);
    if (stats)
        memset(stats, 0, sizeof *stats);
    const vq_model *m = c->m;
    vq_sampler *smp = NULL;
    VQ_TRY(vq_sampler_create(&p.sampler, m->n_vocab, &smp));
    size_t hist_cap = n + (size_t)p.max_tokens;
    int32_t *hist = malloc(hist_cap * sizeof *hist);
    float *logits = malloc((size_t)m->n_vocab * sizeof(float));
    if (!hist || !logits) {
        vq_sampler_free(smp);
        free(hist);
        free(logits);
        return vq_fail(c->err, VQ_ERR_NOMEM, "generate: out of memory");
    }
    memcpy(hist, tokens, n * sizeof *hist);
    vq_status st = VQ_OK;

    int pb = p.prefill_batch > 0 && p.prefill_batch < c->batch ? p.prefill_batch : c->batch;
    double t0 = vq_now_seconds();
    /* the cache's memory for the prompt and every token to come, made now:
     * no decode step waits for fresh pages (counted in prefill). Best
     * effort: a max_tokens past what memory holds still generates until
     * the sequence stops, its pages made as they are needed */
    (void)vq_ctx_reserve(c, p.max_tokens > INT_MAX - (int)n ? INT_MAX : (int)n + p.max_tokens);
    for (size_t done = 0; done < n && st == VQ_OK;) {
        int b = (int)(n - done < (size_t)pb ? n - done : (size_t)pb);
        st = vq_ctx_forward(c, hist + done, b, done + (size_t)b == n ? logits : NULL, VQ_LOGITS_LAST);
        done += (size_t)b;
    }
    double t1 = vq_now_seconds();

    size_t n_hist = n;
    int n_gen = 0, steps = 0;
    char piece[1024];
    while (st == VQ_OK && n_gen < p.max_tokens) {
        int32_t tok = vq_sampler_sample(smp, logits, hist, n_hist);
        if (p.stop_at_eog && vq_model_is_eog(m, tok))
            break;
        hist[n_hist++] = tok;
        n_gen++;
        if (on_token) {
            size_t len = vq_model_token_piece(m, tok, 0, piece, sizeof piece);
            if (len > sizeof piece)
                len = sizeof piece;
            if (on_token(tok, piece, len, user))
                break;
        }
        if (n_gen == p.max_tokens || c->n_tokens >= c->max_tokens)
            break;
        st = vq_ctx_forward(c, &tok, 1, logits, VQ_LOGITS_LAST);
        steps++;
    }
    double t2 = vq_now_seconds();
    if (stats) {
        stats->n_prompt = (int)n;
        stats->n_generated = n_gen;
        stats->prefill_seconds = t1 - t0;
        stats->decode_seconds = t2 - t1;
        stats->prefill_tok_s = t1 > t0 ? (double)n / (t1 - t0) : 0;
        stats->decode_tok_s = steps > 0 && t2 > t1 ? (double)steps / (t2 - t1) : 0;
        stats->kv_bytes = vq_ctx_kv_bytes(c);
        stats->peak_rss = vq_peak_rss_bytes();
    }
    vq_sampler_free(smp);
    free(hist);
    free(logits);
    return st;
}
