/* model_score.c -- teacher-forced negative log-likelihood (vq_ctx_score). */
#include <math.h>
#include <stdlib.h>

#include "model/forward.h"

/* -ln softmax(logits)[target], computed stably in double. */
static double nll_of(const float *logits, int n_vocab, int32_t target)
{
    float mx = logits[0];
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > mx)
            mx = logits[i];
    double s = 0;
    for (int i = 0; i < n_vocab; i++)
        s += (double)expf(logits[i] - mx);
    return log(s) + mx - (double)logits[target];
}

vq_status vq_ctx_score(vq_ctx *c, const int32_t *tokens, int n, double *nll_sum, int *n_scored)
{
    if (!c || !tokens || !nll_sum || !n_scored)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "score: NULL argument");
    if (n < 2)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "score: need at least 2 tokens, got %d", n);
    int V = c->m->n_vocab;
    float *lg = malloc((size_t)c->batch * (size_t)V * sizeof(float));
    if (!lg)
        return vq_fail(c->err, VQ_ERR_NOMEM, "score: out of memory for logits");
    vq_status st = VQ_OK;
    for (int done = 0; done < n && st == VQ_OK;) {
        int b = n - done < c->batch ? n - done : c->batch;
        st = vq_ctx_forward(c, tokens + done, b, lg, VQ_LOGITS_ALL);
        for (int t = 0; st == VQ_OK && t < b; t++) {
            int i = done + t;
            if (i + 1 >= n)
                break;
            *nll_sum += nll_of(lg + (size_t)t * (size_t)V, V, tokens[i + 1]);
            (*n_scored)++;
        }
        done += b;
    }
    free(lg);
    return st;
}
