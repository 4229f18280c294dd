/* validate_quality.c -- the quality part of `veloxquant validate`: each arm
 * re-runs the fp16 arm's tokens teacher-forced and compares its next-token
 * distribution with the fp16 logits saved in the reference file (see
                                                                  * validate.h, cmd_validate.c). */
#include <stdio.h>
#include <stdlib.h>

#include "eval_common.h"
#include "validate.h"

/* Teacher-forced pass over prompt + reference tokens, comparing with the
 * reference logits file. */
int validate_quality_pass(const validate_opts *o, vq_ctx *ctx, const int32_t *prompt, int n_prompt,
                          validate_result *r, float *logits, int n_vocab)
{
    FILE *f = fopen(o->ref->logits_path, "rb");
    if (!f)
        return validate_fail(r, "quality", "reference logits missing");
    enum { CHUNK = 16 };
    float *ref = malloc((size_t)n_vocab * sizeof *ref);
    float *batch = malloc((size_t)CHUNK * (size_t)n_vocab * sizeof *batch);
    int rc = 0;
    if (!ref || !batch) {
        rc = validate_fail(r, "quality", "out of memory");
        goto out;
    }
    vq_ctx_reset(ctx);
    double kl_sum = 0, kl_max = 0;
    int same = 0, n = 0;
    eval_progress pr;
    eval_progress_start(&pr, "  quality (teacher-forced)", "tok");
    if (vq_ctx_forward(ctx, prompt, n_prompt, logits, VQ_LOGITS_LAST) != VQ_OK) {
        rc = validate_fail(r, "quality prefill", vq_ctx_error(ctx));
        goto out;
    }
    /* position i predicts reference token i; logits for i = 0 come from
     * the prompt, for i >= 1 from feeding reference token i-1 */
    for (int i = 0; i < o->ref->n;) {
        int cnt = 1;
        const float *cur = logits;
        if (i > 0) {
            cnt = o->ref->n - i < CHUNK ? o->ref->n - i : CHUNK;
            if (vq_ctx_forward(ctx, o->ref->tokens + i - 1, cnt, batch, VQ_LOGITS_ALL) != VQ_OK) {
                rc = validate_fail(r, "quality forward", vq_ctx_error(ctx));
                goto out;
            }
            cur = batch;
        }
        for (int k = 0; k < cnt; k++) {
            if (fread(ref, sizeof *ref, (size_t)n_vocab, f) != (size_t)n_vocab) {
                rc = validate_fail(r, "quality", "reference logits file truncated");
                goto out;
            }
            int s = 0;
            double kl = eval_kl(ref, cur + (size_t)k * (size_t)n_vocab, n_vocab, &s);
            kl_sum += kl;
            kl_max = kl > kl_max ? kl : kl_max;
            same += s;
            n++;
        }
        i += cnt;
        eval_progress_update(&pr, i, o->ref->n);
    }
    r->quality_positions = n;
    r->kl_mean = n ? kl_sum / n : 0;
    r->kl_max = kl_max;
    r->top1 = n ? (double)same / n : 0;
out:
    free(ref);
    free(batch);
    fclose(f);
    return rc;
}
