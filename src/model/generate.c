/* generate.c -- vq_generate: apply the chat template if asked, tokenize,
 * and run the generation loop of generate_tokens.c. Tokenizing is not part
 * of the timed prefill. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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
    int32_t *toks = NULL;
    size_t n_prompt = 0;
    VQ_TRY(prompt_tokens(c, prompt, gp ? gp->chat : vq_gen_defaults().chat, &toks, &n_prompt));
    if (n_prompt == 0) {
        free(toks);
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "generate: the prompt has no tokens");
    }
    vq_status st = vq_generate_tokens(c, toks, n_prompt, gp, on_token, user, stats);
    free(toks);
    return st;
}
