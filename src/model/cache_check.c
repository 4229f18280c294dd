/* cache_check.c -- KL of a cache config against fp16 on the model itself
 * (contract in cache_check.h). */
#include "model/cache_check.h"

#include "core/error.h"


#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_BATCH 32
#define CHECK_MAX_TOKENS 512

/* Plain English prose written for this check (no external source): long
 * enough for about 400 tokens with common tokenizers. */
static const char CHECK_TEXT[] =
    "The harbour town woke slowly on the first cold morning of the year. Fishing boats that had come in before "
    "dawn were tied along the stone wall, and the men who worked them carried crates of silver fish up the ramp "
    "to the market hall, where the buyers were already arguing about prices. A baker opened his shutters and the "
    "smell of fresh bread drifted across the square. Children on their way to school stopped to watch the gulls "
    "fight over scraps, until a teacher called them on. In the library at the top of the hill, an old woman "
    "sorted the letters that had arrived by the night train. Most were bills and notices, but one envelope was "
    "addressed by hand in green ink, and it had travelled a long way: the stamps came from three different "
    "countries. She set it aside to read later, because the first visitors of the day were already waiting at "
    "the door. By noon the wind had turned to the west and the sky had cleared. The ferry left for the island "
    "with a dozen passengers, a crate of chickens and a bicycle strapped to the rail. On the island, the "
    "lighthouse keeper was repairing the lamp, which had failed twice that week. He had asked the council for a "
    "new one many times, and every time the answer had been the same: next year, when the budget allows. He did "
    "not mind very much. He liked the work, and the quiet, and the long evenings when he could read by the stove "
    "while the light turned above him. That afternoon the woman from the library finally opened the envelope. "
    "Inside was a single page and a photograph of a house she had not seen for forty years. The letter was from "
    "her brother, who had left the town as a young man to study engineering in the capital and had never come "
    "back. He wrote that he was old now, that his children had grown and moved away, and that he would like to "
    "see the sea again before winter. She read the letter twice, then put on her coat and walked down to the "
    "harbour to ask when the next train from the capital would arrive. The station master looked at the "
    "timetable, then at her, and said that if the weather held there would be one on Thursday evening.";

/* KL(p || q) of two logit rows and whether their argmax agree */
static double row_kl(const float *a, const float *b, int n, int *same)
{
    float ma = a[0], mb = b[0];
    int ia = 0, ib = 0;
    for (int i = 1; i < n; i++) {
        if (a[i] > ma)
            ma = a[i], ia = i;
        if (b[i] > mb)
            mb = b[i], ib = i;
    }
    double sa = 0, sb = 0;
    for (int i = 0; i < n; i++) {
        sa += exp((double)a[i] - ma);
        sb += exp((double)b[i] - mb);
    }
    double la = ma + log(sa), lb = mb + log(sb), kl = 0;
    for (int i = 0; i < n; i++) {
        double lp = (double)a[i] - la;
        kl += exp(lp) * (lp - ((double)b[i] - lb));
    }
    *same = ia == ib;
    return kl > 0 ? kl : 0;
}

static vq_status open_ctx(const vq_model *m, const char *text, int n, vq_cache **cache, vq_ctx **ctx)
{
    vq_cache_config *cfg = NULL;
    vq_status st = vq_cache_config_parse(text, &cfg);
    if (st == VQ_OK)
        st = vq_cache_for_model(m, cfg, cache);
    vq_cache_config_free(cfg);
    if (st == VQ_OK && (st = vq_ctx_create_cached(m, *cache, n, 0, ctx)) != VQ_OK) {
        vq_cache_free(*cache);
        *cache = NULL;
    }
    return st;
}

vq_status vq_cache_check_kl(const vq_model *m, const char *cfg_text, double *kl, double *top1, int *n_scored)
{
    if (!m || !cfg_text || !kl || !top1 || !n_scored)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_check_kl: NULL argument");
    vq_model_info info;
    VQ_TRY(vq_model_info_get(m, &info));
    int32_t *toks = NULL;
    size_t nt = 0;
    if (vq_model_tokenize(m, CHECK_TEXT, sizeof CHECK_TEXT - 1, 1, 0, &toks, &nt) != VQ_OK || nt < 64) {
        /* no tokenizer (test models): a fixed pseudo-random sequence */
        free(toks);
        nt = 448;
        toks = malloc(nt * sizeof *toks);
        if (!toks)
            return vq_fail(NULL, VQ_ERR_NOMEM, "cache check: out of memory");
        uint64_t s = 0x9e3779b97f4a7c15ULL;
        for (size_t i = 0; i < nt; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            toks[i] = (int32_t)((s >> 33) % (uint64_t)info.n_vocab);
        }
    }
    int n = nt < CHECK_MAX_TOKENS ? (int)nt : CHECK_MAX_TOKENS;
    if (info.n_ctx_train > 64 && n > info.n_ctx_train)
        n = info.n_ctx_train;
    /* score from residual + 128 on (what is packed by then), at least 64 positions */
    long residual = 0;
    const char *r = strstr(cfg_text, "residual=");
    if (r)
        residual = strtol(r + 9, NULL, 10);
    int start = residual + 128 < n - 64 ? (int)residual + 128 : n - 64;
    vq_cache *rc = NULL, *tc = NULL;
    vq_ctx *rx = NULL, *tx = NULL;
    float *la = malloc((size_t)CHECK_BATCH * (size_t)info.n_vocab * sizeof *la);
    float *lb = malloc((size_t)CHECK_BATCH * (size_t)info.n_vocab * sizeof *lb);
    vq_status st = la && lb ? VQ_OK : vq_fail(NULL, VQ_ERR_NOMEM, "cache check: out of memory");
    if (st == VQ_OK)
        st = open_ctx(m, "keys=fp16 values=fp16", n, &rc, &rx);
    if (st == VQ_OK)
        st = open_ctx(m, cfg_text, n, &tc, &tx);
    double sum = 0;
    long same = 0, cnt = 0;
    for (int t0 = 0; st == VQ_OK && t0 < n; t0 += CHECK_BATCH) {
        int b = n - t0 < CHECK_BATCH ? n - t0 : CHECK_BATCH;
        st = vq_ctx_forward(rx, toks + t0, b, la, VQ_LOGITS_ALL);
        if (st == VQ_OK)
            st = vq_ctx_forward(tx, toks + t0, b, lb, VQ_LOGITS_ALL);
        for (int i = 0; st == VQ_OK && i < b; i++) {
            if (t0 + i < start)
                continue;
            int sm;
            sum += row_kl(la + (size_t)i * (size_t)info.n_vocab, lb + (size_t)i * (size_t)info.n_vocab,
                          info.n_vocab, &sm);
            same += sm;
            cnt++;
        }
    }
    vq_ctx_free(rx);
    vq_ctx_free(tx);
    vq_cache_free(rc);
    vq_cache_free(tc);
    free(la);
    free(lb);
    free(toks);
    if (st != VQ_OK)
        return vq_fail(NULL, st, "cache check: %s", vq_last_error());
    *kl = cnt ? sum / (double)cnt : 0;
    *top1 = cnt ? (double)same / (double)cnt : 1;
    *n_scored = (int)cnt;
    return VQ_OK;
}
