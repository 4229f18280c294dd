/* real_model.h -- checks shared by the real-model tests
 * (tests/test_model_smollm2.c, tests/test_model_gemma3.c).
 *
 * Golden files (tests/golden/NAME.txt, format "veloxquant golden v1"):
 *   line 1: "# veloxquant golden v1"
 *   line 2: "# <free comment: model, how it was produced>"
 *   line 3: "prompt: <the prompt, one line, UTF-8>"
 *   line 4: "tokens: <id> <id> ..." the greedy continuation (32 ids)
 * The test regenerates the continuation and compares the first 16 ids
 * exactly (later tokens may legitimately differ with kernel rounding once
 * two candidates are near-tied). VQ_GOLDEN_WRITE=1 rewrites the file
 * instead (done once, after checking the text is coherent English). */
#ifndef VQ_TESTS_REAL_MODEL_H
#define VQ_TESTS_REAL_MODEL_H

#include "veloxquant.h"

/* Greedy continuation of prompt (n tokens) as text; malloc'd. Also the ids
 * when ids != NULL (room for n). */
char *vq_rt_greedy(vq_model *m, const char *prompt, int n, int32_t *ids);

/* Compare with (or write) the golden file; checks are counted. */
void vq_rt_check_golden(vq_model *m, const char *golden_path, const char *prompt);

/* Perplexity over the first n_tokens tokens of the text file (BOS per
 * chunk when the model uses one), chunks of ctx tokens. <0 on failure. */
double vq_rt_perplexity(vq_model *m, const char *path, int n_tokens, int ctx);

/* Teacher-force gold[0..n) after the prompt; *flips counts steps where the
 * golden token is not the argmax, *worst is the largest margin
 * max_logit - logit[golden] (1e30 on failure). */
void vq_rt_golden_margins(vq_model *m, const char *prompt, const int32_t *gold, int n,
                          int *flips, float *worst);

#endif
