/* test_threads.c -- one loaded model shared by several threads.
 *
 * The default model (smollm2-135m) is loaded once. Each job has its own
 * prompt, cache config (float buffer, q8_0, q4_0 with rotation and
 * streaming_llm eviction, KIVI) and context (one worker thread each), and
 * generates greedily. The jobs run first one after the other, then all at
 * once on their own threads (twice, so every job also overlaps with itself
 * from the other round's threads): every concurrent run must give exactly
 * the tokens of its job alone. Tokenization and detokenization run
 * concurrently too. `make tsan` builds and runs this test under
 * ThreadSanitizer (quick form: fewer tokens). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "veloxquant.h"

enum { N_JOBS = 4, MAX_GEN = 24 };

typedef struct {
    const char *prompt;
    const char *config; /* NULL: the float K/V buffer */
    int32_t tokens[MAX_GEN];
    int n;
    vq_status st;
    char text_check; /* 1 if detokenize(tokenize(prompt)) == prompt */
} job;

static const vq_model *g_model;
static int g_gen;

static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    (void)piece;
    (void)len;
    job *j = user;
    if (j->n < MAX_GEN)
        j->tokens[j->n++] = token;
    return 0;
}

static void *run_job(void *arg)
{
    job *j = arg;
    j->n = 0;
    j->st = VQ_OK;
    int32_t *toks = NULL;
    size_t nt = 0;
    j->text_check = 0;
    if (vq_model_tokenize(g_model, j->prompt, strlen(j->prompt), 0, 0, &toks, &nt) == VQ_OK) {
        char *text = NULL;
        if (vq_model_detokenize(g_model, toks, nt, &text) == VQ_OK)
            j->text_check = strcmp(text, j->prompt) == 0;
        free(text);
        free(toks);
    }
    vq_cache_config *cfg = NULL;
    vq_cache *cache = NULL;
    vq_ctx *c = NULL;
    if (j->config) {
        j->st = vq_cache_config_parse(j->config, &cfg);
        if (j->st == VQ_OK)
            j->st = vq_cache_for_model(g_model, cfg, &cache);
        if (j->st == VQ_OK)
            j->st = vq_ctx_create_cached(g_model, cache, 512, 1, &c);
    } else {
        j->st = vq_ctx_create(g_model, 512, 1, &c);
    }
    if (j->st == VQ_OK) {
        vq_gen_params p = vq_gen_defaults();
        p.max_tokens = g_gen;
        p.sampler.temperature = 0.0f;
        p.stop_at_eog = 0;
        j->st = vq_generate(c, j->prompt, &p, collect, j, NULL);
    }
    vq_ctx_free(c);
    vq_cache_free(cache);
    vq_cache_config_free(cfg);
    return NULL;
}

static void test_shared_model(void)
{
    const char *path = vq_test_model("smollm2-135m");
    if (!path)
        return;
    vq_model *m = NULL;
    CHECK_OK(vq_model_load(path, &m));
    if (!m)
        return;
    g_model = m;
    g_gen = vq_test_quick() ? 6 : MAX_GEN;
    static const char *const prompts[N_JOBS] = {
        "The capital of France is",
        "Once upon a time, in a small village,",
        "def fibonacci(n):",
        "The three primary colors are",
    };
    static const char *const configs[N_JOBS] = {
        NULL,
        "keys=q8_0 values=q8_0",
        "keys=q4_0:rot=1 values=q4_0:rot=1 evict=streaming_llm:sinks=4,window=8",
        "keys=kivi:bits=4 values=kivi:bits=4 residual=4",
    };
    job alone[N_JOBS], together[2][N_JOBS];
    for (int i = 0; i < N_JOBS; i++) {
        alone[i] = (job){ prompts[i], configs[i], { 0 }, 0, VQ_OK, 0 };
        run_job(&alone[i]);
        CHECKF(alone[i].st == VQ_OK && alone[i].n == g_gen, "job %d alone: %s, %d tokens", i,
               vq_status_str(alone[i].st), alone[i].n);
        CHECKF(alone[i].text_check, "job %d: detokenize(tokenize(prompt)) differs", i);
    }
    pthread_t th[2][N_JOBS];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N_JOBS; i++) {
            together[r][i] = (job){ prompts[i], configs[i], { 0 }, 0, VQ_OK, 0 };
            CHECK(pthread_create(&th[r][i], NULL, run_job, &together[r][i]) == 0);
        }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N_JOBS; i++)
            pthread_join(th[r][i], NULL);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N_JOBS; i++) {
            job *a = &alone[i], *t = &together[r][i];
            CHECKF(t->st == VQ_OK && t->n == a->n && memcmp(t->tokens, a->tokens, sizeof a->tokens) == 0,
                   "job %d (%s) on %d threads: other tokens than alone (%s, %d tokens)", i,
                   configs[i] ? configs[i] : "float buffer", 2 * N_JOBS, vq_status_str(t->st), t->n);
            CHECK(t->text_check);
        }
    printf("threads: %d jobs x 2 rounds at once, %d tokens each, same tokens as alone\n", N_JOBS, g_gen);
    vq_model_free(m);
}

int main(void)
{
    RUN(test_shared_model);
    return vq_test_summary("threads");
}
