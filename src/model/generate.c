/* generate.c -- the generation loop: tokenize, prefill in batches, then
 * sample and decode one token at a time, streaming each token's text.
 * Buffers (logits, history) are allocated once per call, never per token.
 *
 * Timing: prefill_seconds covers the prompt's forward passes (tokenizing
 * excluded); decode_seconds covers sampling and the one-token forward
 * passes of generated tokens. The last generated token is not run through
 * the model (nothing would read its logits), so decode tok/s counts the
 * decode steps actually run. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "model/forward.h"

vq_gen_params vq_gen_defaults(void)
{
    vq_gen_params p;
    memset(&p, 0, sizeof p);
    p.max_tokens = 128;
    p.sampler = vq_sampler_defaults();
    p.chat = 0;
    p.stop_at_eog = 1;
    p.prefill_batch = 0;
    return p;
}

static vq_status prompt_tokens(vq_ctx *c, const char *prompt, int chat, int32_t **toks, size_t *n)
{
    const vq_model *m = c->m;
    char *templated = NULL;
    if (chat) {
        vq_status st = vq_model_chat(m, prompt, &templated);
        if (st != VQ_OK)
            return vq_fail(c->err, st, "generate: %s", vq_last_error());
        prompt = templated;
    }
    vq_status st = vq_model_tokenize(m, prompt, strlen(prompt), c->n_tokens == 0, chat, toks, n);
    free(templated);
    if (st != VQ_OK)
        return vq_fail(c->err, st, "generate: %s", vq_last_error());
    return VQ_OK;
}

vq_status vq_generate(vq_ctx *c, const char *prompt, const vq_gen_params *gp,
                      vq_token_cb on_token, void *user, vq_gen_stats *stats)
{
    if (!c || !prompt)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "generate: NULL argument");
    vq_gen_params p = gp ? *gp : vq_gen_defaults();
    if (p.max_tokens < 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "generate: max_tokens %d < 0", p.max_tokens);
    if (stats)
        memset(stats, 0, sizeof *stats);
    const vq_model *m = c->m;
    int32_t *toks = NULL;
    size_t n_prompt = 0;
    VQ_TRY(prompt_tokens(c, prompt, p.chat, &toks, &n_prompt));
    if (n_prompt == 0) {
        free(toks);
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "generate: the prompt has no tokens");
    }
    if (n_prompt > (size_t)(c->max_tokens - c->n_tokens)) {
        free(toks);
        return vq_fail(c->err, VQ_ERR_STATE, "generate: %zu prompt tokens do not fit (%d of %d held)",
                       n_prompt, c->n_tokens, c->max_tokens);
    }
    vq_sampler *smp = NULL;
    vq_status st = vq_sampler_create(&p.sampler, m->n_vocab, &smp);
    size_t hist_cap = n_prompt + (size_t)p.max_tokens;
    int32_t *hist = st == VQ_OK ? realloc(toks, hist_cap * sizeof *hist) : NULL;
    float *logits = malloc((size_t)m->n_vocab * sizeof(float));
    if (st == VQ_OK && (!hist || !logits))
        st = vq_fail(c->err, VQ_ERR_NOMEM, "generate: out of memory");
    if (st != VQ_OK) {
        vq_sampler_free(smp);
        free(hist ? hist : toks);
        free(logits);
        return st;
    }
    toks = NULL;

    /* prefill */
    int pb = p.prefill_batch > 0 && p.prefill_batch < c->batch ? p.prefill_batch : c->batch;
    double t0 = vq_now_seconds();
    for (size_t done = 0; done < n_prompt && st == VQ_OK;) {
        int b = (int)(n_prompt - done < (size_t)pb ? n_prompt - done : (size_t)pb);
        st = vq_ctx_forward(c, hist + done, b, done + (size_t)b == n_prompt ? logits : NULL,
                            VQ_LOGITS_LAST);
        done += (size_t)b;
    }
    double t1 = vq_now_seconds();

    /* decode */
    size_t n_hist = n_prompt;
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
        stats->n_prompt = (int)n_prompt;
        stats->n_generated = n_gen;
        stats->prefill_seconds = t1 - t0;
        stats->decode_seconds = t2 - t1;
        stats->prefill_tok_s = t1 > t0 ? (double)n_prompt / (t1 - t0) : 0;
        stats->decode_tok_s = steps > 0 && t2 > t1 ? (double)steps / (t2 - t1) : 0;
        stats->kv_bytes = vq_ctx_kv_bytes(c);
        stats->peak_rss = vq_peak_rss_bytes();
    }
    vq_sampler_free(smp);
    free(hist);
    free(logits);
    return st;
}
