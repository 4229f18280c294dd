/* real_model.c -- see real_model.h. */
#include "real_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "test.h"

typedef struct {
    char *s;
    size_t len, cap;
    int32_t *ids;
    int n;
} gen_acc;

static int collect(int32_t tok, const char *piece, size_t len, void *user)
{
    gen_acc *a = user;
    if (a->len + len + 1 > a->cap) {
        a->cap = 2 * (a->len + len + 1);
        a->s = realloc(a->s, a->cap);
    }
    memcpy(a->s + a->len, piece, len);
    a->len += len;
    a->s[a->len] = 0;
    if (a->ids)
        a->ids[a->n] = tok;
    a->n++;
    return 0;
}

char *vq_rt_greedy(vq_model *m, const char *prompt, int n, int32_t *ids)
{
    vq_ctx *c = NULL;
    if (vq_ctx_create(m, (int)strlen(prompt) + n + 16, 0, &c) != VQ_OK)
        return NULL;
    vq_gen_params gp = vq_gen_defaults();
    gp.max_tokens = n;
    gp.sampler.temperature = 0;
    gp.stop_at_eog = 0;
    gen_acc a = { malloc(4096), 0, 4096, ids, 0 };
    a.s[0] = 0;
    vq_status st = vq_generate(c, prompt, &gp, collect, &a, NULL);
    vq_ctx_free(c);
    if (st != VQ_OK) {
        free(a.s);
        return NULL;
    }
    return a.s;
}

void vq_rt_check_golden(vq_model *m, const char *golden_path, const char *prompt)
{
    enum { N = 32, CHECKED = 16 };
    int32_t ids[N];
    char *text = vq_rt_greedy(m, prompt, N, ids);
    CHECKF(text != NULL, "greedy generation failed: %s", vq_last_error());
    if (!text)
        return;
    printf("  golden prompt: %s\n  continuation: %s\n", prompt, text);
    const char *w = getenv("VQ_GOLDEN_WRITE");
    if (w && *w == '1') {
        FILE *f = fopen(golden_path, "w");
        CHECKF(f != NULL, "cannot write %s", golden_path);
        if (f) {
            fprintf(f, "# veloxquant golden v1\n# greedy continuation, 32 tokens, veloxquant runtime\n");
            fprintf(f, "prompt: %s\ntokens:", prompt);
            for (int i = 0; i < N; i++)
                fprintf(f, " %d", ids[i]);
            fprintf(f, "\n");
            fclose(f);
            printf("  wrote %s\n", golden_path);
        }
        free(text);
        return;
    }
    FILE *f = fopen(golden_path, "r");
    CHECKF(f != NULL, "missing golden file %s", golden_path);
    if (!f) {
        free(text);
        return;
    }
    char line[8192];
    int32_t want[N];
    int nw = 0, prompt_ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "prompt: ", 8) == 0) {
            line[strcspn(line, "\n")] = 0;
            prompt_ok = strcmp(line + 8, prompt) == 0;
        } else if (strncmp(line, "tokens:", 7) == 0) {
            char *p = line + 7, *end;
            while (nw < N) {
                long v = strtol(p, &end, 10);
                if (end == p)
                    break;
                want[nw++] = (int32_t)v;
                p = end;
            }
        }
    }
    fclose(f);
    CHECKF(prompt_ok, "golden file %s is for another prompt", golden_path);
    CHECKF(nw == N, "golden file %s holds %d tokens, expected %d", golden_path, nw, N);
    int same = 0;
    while (same < CHECKED && same < nw && ids[same] == want[same])
        same++;
    if (same < CHECKED && nw == N) {
        /* The greedy path left the golden one. Decide whether that is a
         * near-tie flip or a real change: teacher-force the golden tokens
         * and look at the margin max_logit - logit[golden] at each of the
         * CHECKED steps. Activations are rounded to int8 before every
         * weight matmul (as llama.cpp does); scripts/reference_forward.py
         * measured that this moves logits of these models by up to ~0.7
         * (figures/reference-check.md), so a kernel change may flip a
         * near-tie. Accepted: at most 3 of the CHECKED steps where the golden
         * token is not the argmax, each with a margin below NEAR_TIE. A wrong forward
         * pass gives margins of several logits (wrong RoPE pairing: KL up
         * to 0.6), so this still fails on real bugs. */
        const float NEAR_TIE = 0.5f;
        int flips = 0;
        float worst = 0;
        vq_rt_golden_margins(m, prompt, want, CHECKED, &flips, &worst);
        printf("  golden: greedy left the golden path at token %d (got %d, want %d); "
               "teacher-forced: %d non-argmax steps, worst margin %.3f\n",
               same, ids[same], want[same], flips, worst);
        CHECKF(flips <= 3 && worst < NEAR_TIE,
               "golden mismatch at token %d: got %d, want %d (teacher-forced: %d flips, worst margin %.3f >= %.2f)",
               same, ids[same], want[same], flips, worst, NEAR_TIE);
    } else {
        CHECKF(same == CHECKED, "golden mismatch at token %d: got %d, want %d", same,
               same < N ? ids[same] : -1, same < nw ? want[same] : -1);
    }
    free(text);
}

void vq_rt_golden_margins(vq_model *m, const char *prompt, const int32_t *gold, int n,
                          int *flips, float *worst)
{
    *flips = 0;
    *worst = 1e30f;
    int32_t *toks = NULL;
    size_t nt = 0;
    vq_ctx *c = NULL;
    vq_model_info info;
    float *lg = NULL;
    if (vq_model_info_get(m, &info) != VQ_OK ||
        vq_model_tokenize(m, prompt, strlen(prompt), 1, 0, &toks, &nt) != VQ_OK ||
        vq_ctx_create(m, (int)nt + n + 16, 0, &c) != VQ_OK ||
        !(lg = malloc(sizeof(float) * (size_t)info.n_vocab)) ||
        vq_ctx_forward(c, toks, (int)nt, lg, VQ_LOGITS_LAST) != VQ_OK)
        goto out;
    *worst = 0;
    for (int s = 0; s < n; s++) {
        float mx = lg[0];
        for (int i = 1; i < info.n_vocab; i++)
            mx = lg[i] > mx ? lg[i] : mx;
        float margin = mx - lg[gold[s]];
        if (margin > 0)
            (*flips)++;
        if (margin > *worst)
            *worst = margin;
        if (vq_ctx_forward(c, &gold[s], 1, lg, VQ_LOGITS_LAST) != VQ_OK) {
            *worst = 1e30f;
            break;
        }
    }
out:
    free(lg);
    free(toks);
    vq_ctx_free(c);
}

double vq_rt_perplexity(vq_model *m, const char *path, int n_tokens, int ctx)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    /* ~5 bytes per token on English text; read 16 per token to be safe */
    size_t cap = (size_t)n_tokens * 16;
    char *text = malloc(cap + 1);
    size_t len = fread(text, 1, cap, f);
    fclose(f);
    text[len] = 0;
    int32_t *toks = NULL, *bos = NULL;
    size_t nt = 0, nb = 0;
    double ppl = -1;
    vq_ctx *c = NULL;
    if (vq_model_tokenize(m, text, len, 0, 0, &toks, &nt) != VQ_OK || nt < (size_t)n_tokens)
        goto out;
    if (vq_model_tokenize(m, "", 0, 1, 0, &bos, &nb) != VQ_OK)
        goto out;
    if (vq_ctx_create(m, ctx, 0, &c) != VQ_OK)
        goto out;
    int32_t *inp = malloc((size_t)ctx * sizeof *inp);
    double nll = 0;
    int scored = 0;
    int per = ctx - (nb == 1 ? 1 : 0);
    for (int k = 0; (k + 1) * per <= n_tokens; k++) {
        int n = 0;
        if (nb == 1)
            inp[n++] = bos[0];
        memcpy(inp + n, toks + (size_t)k * per, (size_t)per * sizeof *inp);
        n += per;
        vq_ctx_reset(c);
        if (vq_ctx_score(c, inp, n, &nll, &scored) != VQ_OK) {
            free(inp);
            goto out;
        }
    }
    free(inp);
    if (scored > 0)
        ppl = exp(nll / scored);
out:
    vq_ctx_free(c);
    free(toks);
    free(bos);
    free(text);
    return ppl;
}
