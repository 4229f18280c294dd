/* test_model_gemma3.c -- the real Gemma 3 270M (gemma3 arch, Q4_K_M mix:
 * sliding-window layers, QK-norm, GeGLU): greedy facts, golden tokens,
 * WikiText-2 perplexity.
 *
 * "The capital of France is": this 270M base model's greedy continuation
 * is " the capital of the country of France. It is the largest city in
 * France..." -- " Paris" is its third choice (logits: " the" 19.16,
 * " a" 18.60, " Paris" 18.33), a property of the model, not a near-tie
 * that kernel rounding could flip. So the test checks (1) " Paris" is in
 * the top 3 next tokens of that prompt and (2) the greedy answer to the
 * question form "Question: What is the capital of France?\nAnswer:"
 * contains "Paris".
 *
 * Perplexity range [8, 45]: measured 19.5 on the first 2 chunks of 512
 * tokens. The RoPE-base ablation (global base on local layers) doubles it
 * to 45 at ctx 256, so the upper bound also catches that class of bug;
 * a 262k vocabulary makes tokens longer, which keeps per-token perplexity
 * in the same band as smaller-vocabulary models of this size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "real_model.h"
#include "test.h"
#include "util/clock.h"

#define PPL_LO 8.0
#define PPL_HI 45.0

static vq_model *m;

static void test_paris(void)
{
    const char *prompt = "The capital of France is";
    int32_t *toks = NULL, *paris = NULL;
    size_t n = 0, np = 0;
    CHECK_OK(vq_model_tokenize(m, prompt, strlen(prompt), 1, 0, &toks, &n));
    CHECK_OK(vq_model_tokenize(m, " Paris", 6, 0, 0, &paris, &np));
    vq_model_info in;
    vq_model_info_get(m, &in);
    vq_ctx *c = NULL;
    CHECK_OK(vq_ctx_create(m, 64, 0, &c));
    float *lg = malloc((size_t)in.n_vocab * sizeof *lg);
    if (c && toks && paris && np == 1) {
        CHECK_OK(vq_ctx_forward(c, toks, (int)n, lg, VQ_LOGITS_LAST));
        int higher = 0;
        for (int i = 0; i < in.n_vocab; i++)
            higher += lg[i] > lg[paris[0]];
        CHECKF(higher < 3, "' Paris' ranks %d, expected top 3", higher + 1);
    } else {
        CHECKF(0, "setup failed (' Paris' is %zu tokens)", np);
    }
    free(lg);
    vq_ctx_free(c);
    free(toks);
    free(paris);
    char *t = vq_rt_greedy(m, "Question: What is the capital of France?\nAnswer:", 8, NULL);
    CHECKF(t && strstr(t, "Paris"), "answer lacks Paris: '%s'", t ? t : "(failed)");
    free(t);
}

static void test_golden(void)
{
    vq_rt_check_golden(m, "tests/golden/gemma3-270m.txt",
                       "Once upon a time, in a small village by the sea,");
}

static void test_perplexity(void)
{
    const char *data = vq_test_data("wikitext-2-test.txt");
    if (!data)
        return;
    int n = vq_test_quick() ? 512 : 4096, ctx = vq_test_quick() ? 512 : 1024;
    double ppl = vq_rt_perplexity(m, data, n, ctx);
    printf("  wikitext-2 perplexity %.3f (first %d tokens, chunks of %d)\n", ppl, n, ctx);
    CHECKF(ppl >= PPL_LO && ppl <= PPL_HI, "perplexity %.3f outside [%g, %g]", ppl, PPL_LO, PPL_HI);
}

#if defined(__SANITIZE_ADDRESS__)
#define VQ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VQ_ASAN 1
#endif
#endif


/* Loading copies the weights into the model's arena, slice by slice, the
 * file's pages of each slice dropped before the next (model.c
 * place_weights): the peak resident set right after the load stays near
 * the weights' bytes. Measured 260 MiB for 235 MiB of weights; a whole
 * matrix at a time kept the file's 178 MB output head resident beside the
 * arena: 415.5 MiB. (Not under AddressSanitizer, whose shadow memory is
 * resident too.) */
static void test_load_peak_rss(void)
{
#ifndef VQ_ASAN
    vq_model_info in;
    vq_model_info_get(m, &in);
    const size_t peak = cli_peak_rss_bytes(), slack = (size_t)100 << 20;
    if (peak == 0) {
        printf("  peak RSS unknown (getrusage failed): not checked\n");
        return;
    }
    printf("  peak RSS after the load %.1f MiB, weights %.1f MiB\n", peak / 1048576.0, in.weight_bytes / 1048576.0);
    CHECKF(peak <= in.weight_bytes + slack, "peak RSS %.1f MiB > weights %.1f MiB + 100 MiB", peak / 1048576.0,
           in.weight_bytes / 1048576.0);
#endif
}

int main(void)
{
    const char *path = vq_test_model("gemma3-270m");
    if (path) {
        CHECK_OK(vq_model_load(path, &m));
        if (m) {
            RUN(test_load_peak_rss); /* first: before any other test grows the process */
            RUN(test_paris);
            RUN(test_golden);
            RUN(test_perplexity);
            vq_model_free(m);
        }
    }
    return vq_test_summary("model_gemma3");
}
