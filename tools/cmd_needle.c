/* cmd_needle.c -- `veloxquant needle --model MODEL --ctx N [--cache CONFIG]...`:
 * passkey retrieval (after Mohtashami & Jaggi 2023, "Landmark Attention",
 * and the passkey tests of long-context papers).
 *
 * Each trial hides a random 5-digit key ("The pass key is 48213. Remember
 * it. 48213 is the pass key.") at a relative depth of repeated filler text
 * sized so the prompt fills about N - 16 tokens, ends with "What is the pass
 * key? The pass key is", and lets the model continue greedily for up to 8
 * tokens. The trial passes when the continuation contains the key. Depths
 * (default 0, 0.25, 0.5, 0.75, 1) x seeds (default 2) trials, the same
 * prompts for every config; fp16 always runs first as the baseline (a small
 * model may fail even there: then retrieval is beyond the model, not the
 * cache).
 *
 * Output: a table (accuracy per depth and overall per config) or, with
 * --json, {"model", "ctx", "depths", "seeds", "configs": [{"cache",
 * "accuracy", "per_depth": [..], "trials", "passed"}]}. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_flags.h"
#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "veloxquant.h"

#define MAX_CONFIGS 8
#define MAX_DEPTHS 16
#define ANSWER_TOKENS 8

static const char INTRO[] = "There is an important piece of information hidden inside a lot of irrelevant text. "
                            "Find it and memorize it. I will quiz you about it.\n";
static const char FILLER[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n";
static const char QUESTION[] = "What is the pass key? The pass key is";

/* --depths LIST: relative depths in [0,1], comma-separated */
typedef struct {
    double v[MAX_DEPTHS];
    int n;
} depth_list;

static const char *store_depths(void *dst, const char *text)
{
    depth_list *d = dst;
    static char want[64];
    snprintf(want, sizeof want, "numbers in [0,1], at most %d, e.g. 0,0.5,1", MAX_DEPTHS);
    d->n = 0;
    for (const char *p = text; *p;) {
        char *end;
        double x = strtod(p, &end);
        if (end == p || x < 0 || x > 1 || d->n >= MAX_DEPTHS || (*end && *end != ','))
            return want;
        d->v[d->n++] = x;
        p = *end ? end + 1 : end;
    }
    return d->n ? NULL : want;
}

/* --cache CONFIG: one more config; the baseline's own text is dropped */
static const char *store_config(void *list, const char *config)
{
    if (strcmp(config, "keys=fp16 values=fp16") == 0)
        return NULL;
    return cli_config_add(list, config);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Prompt text with `n_fill` filler lines and the needle after
 * round(depth * n_fill) of them, but never after the last one: at least one
 * filler line separates the needle from the question (with the needle's
 * "... is the pass key." right before "What is the pass key? The pass key
 * is", base models continue the sentence pattern -- smollm2-135m in fp16
 * answered " the pass key." for every depth-1 key -- which tests the
 * prompt, not retrieval); malloc'd. */
static char *build_prompt(int n_fill, double depth, int key)
{
    size_t cap = sizeof INTRO + (size_t)n_fill * (sizeof FILLER) + 256;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    size_t o = (size_t)snprintf(p, cap, "%s", INTRO);
    int at = (int)(depth * n_fill + 0.5);
    if (at >= n_fill && n_fill > 0)
        at = n_fill - 1;
    for (int i = 0; i <= n_fill; i++) {
        if (i == at)
            o += (size_t)snprintf(p + o, cap - o, "The pass key is %05d. Remember it. %05d is the pass key.\n", key, key);
        if (i < n_fill)
            o += (size_t)snprintf(p + o, cap - o, "%s", FILLER);
    }
    snprintf(p + o, cap - o, "%s", QUESTION);
    return p;
}

int cmd_needle(int argc, char **argv)
{
    const char *model = NULL;
    int ctx = 0, seeds = 2, threads = 0;
    int json = 0, show = 0;
    depth_list dl = { { 0, 0.25, 0.5, 0.75, 1 }, 5 };
    cli_config_list cl = { { "keys=fp16 values=fp16" }, 1, MAX_CONFIGS + 1, "" };
    cli_cache_flags cf = { 0 };
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        { "ctx", CLI_INT, &ctx, "N", "prompt length in tokens, about (64..65536)", 64, 65536, NULL, CLI_REQUIRED },
        CLI_OPT_CALL("cache", store_config, &cl, "CONFIG",
                     "a KV-cache config to test (repeatable, up to 8);\n"
                     "fp16 (keys=fp16 values=fp16) always runs as the baseline"),
        CLI_OPT_CALL("depths", store_depths, &dl, "LIST",
                     "relative depths of the key, e.g. 0,0.5,1 (default 0,0.25,0.5,0.75,1)"),
        CLI_OPT_INT("seeds", &seeds, "S", 1, 1000, "trials per depth, each with another key (default 2)"),
        CLI_OPT_INT("threads", &threads, "N", 1, 256, "(default: all cores)"),
        CLI_OPT_FLAG("json", &json, "one JSON object on stdout"),
        CLI_OPT_FLAG("show", &show, "print each trial's key and continuation on stderr"),
        CLI_OPT_NOTE("(the single cache flags below describe one more config)"),
        CLI_CACHE_SECTION,
        CLI_CACHE_FIELD_OPTS(&cf),
        CLI_OPT_END,
    };
    const cli_command cmd = { "needle", "--model MODEL --ctx N [options]",
                              "Passkey retrieval accuracy per KV-cache config (fp16 first, as the baseline).", opts,
                              NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (!cli_config_add_flags(&cl, &cf, "needle"))
        return 2;
    const char *const *cfgs = cl.text;
    const int n_cfg = cl.n;
    const double *depths = dl.v;
    const int n_depths = dl.n;
    vq_model *m = NULL;
    int rc = 1;
    int32_t *toks = NULL;
    float *logits = NULL;
    int passed[MAX_CONFIGS + 1][MAX_DEPTHS];
    memset(passed, 0, sizeof passed);
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("needle", "%s", vq_last_error());
        return 1;
    }
    vq_model_info info;
    vq_model_info_get(m, &info);
    logits = malloc((size_t)info.n_vocab * sizeof *logits);
    if (!logits)
        goto out;
    /* filler lines that fit: measure tokens of the parts once */
    int n_fill = 0;
    {
        size_t nt = 0;
        int32_t *t = NULL;
        char *probe = build_prompt(0, 0, 12345);
        if (!probe || vq_model_tokenize(m, probe, strlen(probe), 1, 0, &t, &nt) != VQ_OK) {
            free(probe);
            cli_error("needle", "%s", vq_last_error());
            goto out;
        }
        free(t);
        free(probe);
        size_t nf = 0;
        if (vq_model_tokenize(m, FILLER, strlen(FILLER), 0, 0, &t, &nf) != VQ_OK || nf == 0) {
            cli_error("needle", "%s", vq_last_error());
            goto out;
        }
        free(t);
        long room = ctx - ANSWER_TOKENS - 8 - (long)nt;
        n_fill = room > 0 ? (int)(room / (long)nf) : 0;
    }
    const int total = (int)(n_depths * seeds * n_cfg);
    int done = 0;
    eval_progress pr;
    eval_progress_start(&pr, "needle", "trials");
    for (int c = 0; c < n_cfg; c++) {
        vq_ctx *cx = NULL;
        vq_cache *cache = NULL;
        vq_status st = eval_ctx_open(m, cfgs[c], (int)ctx + 64, (int)threads, &cx, &cache);
        if (st != VQ_OK) {
            cli_error("needle", "cache config '%s': %s", cfgs[c], vq_last_error());
            goto out;
        }
        for (int d = 0; d < n_depths; d++)
            for (long s = 0; s < seeds; s++) {
                uint64_t rs = 0x5eed0000ull + (uint64_t)s * 7919u + (uint64_t)d * 104729u;
                int key = 10000 + (int)(splitmix(&rs) % 90000u);
                char *prompt = build_prompt(n_fill, depths[d], key);
                size_t nt = 0;
                if (!prompt || vq_model_tokenize(m, prompt, strlen(prompt), 1, 0, &toks, &nt) != VQ_OK) {
                    free(prompt);
                    eval_ctx_close(cx, cache);
                    cli_error("needle", "%s", vq_last_error());
                    goto out;
                }
                free(prompt);
                vq_ctx_reset(cx);
                int32_t ans[ANSWER_TOKENS];
                int n_ans = 0;
                st = vq_ctx_forward(cx, toks, (int)nt, logits, VQ_LOGITS_LAST);
                while (st == VQ_OK && n_ans < ANSWER_TOKENS) {
                    int32_t t = (int32_t)eval_argmax(logits, info.n_vocab);
                    if (vq_model_is_eog(m, t))
                        break;
                    ans[n_ans++] = t;
                    if (n_ans < ANSWER_TOKENS)
                        st = vq_ctx_forward(cx, &t, 1, logits, VQ_LOGITS_LAST);
                }
                free(toks);
                toks = NULL;
                if (st != VQ_OK) {
                    cli_error("needle", "%s", vq_ctx_error(cx));
                    eval_ctx_close(cx, cache);
                    goto out;
                }
                char *txt = NULL, want[8];
                snprintf(want, sizeof want, "%05d", key);
                int ok = vq_model_detokenize(m, ans, (size_t)n_ans, &txt) == VQ_OK && strstr(txt, want);
                passed[c][d] += ok;
                if (show)
                    fprintf(stderr, "\nneedle: config %d depth %g key %s (%zu tokens): %s \"%s\"\n", c, depths[d],
                            want, nt, ok ? "pass" : "FAIL", txt ? txt : "");
                free(txt);
                eval_progress_update(&pr, ++done, total);
            }
        eval_ctx_close(cx, cache);
    }
    if (json) {
        printf("{\"model\": ");
        cli_json_print_str(stdout, model);
        printf(", \"ctx\": %d, \"filler_lines\": %d, \"seeds\": %d, \"depths\": [", ctx, n_fill, seeds);
        for (int d = 0; d < n_depths; d++)
            printf("%s%g", d ? ", " : "", depths[d]);
        printf("], \"configs\": [");
        for (int c = 0; c < n_cfg; c++) {
            int tot = 0;
            for (int d = 0; d < n_depths; d++)
                tot += passed[c][d];
            printf("%s{\"cache\": ", c ? ", " : "");
            cli_json_print_str(stdout, cfgs[c]);
            printf(", \"trials\": %d, \"passed\": %d, \"accuracy\": %.4f, \"per_depth\": [",
                   n_depths * seeds, tot, (double)tot / (double)(n_depths * seeds));
            for (int d = 0; d < n_depths; d++)
                printf("%s%.4f", d ? ", " : "", (double)passed[c][d] / (double)seeds);
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("passkey retrieval, %s, ~%d tokens, %d seeds per depth\n%-50s", model, ctx, seeds, "config");
        for (int d = 0; d < n_depths; d++)
            printf(" d=%-5.2f", depths[d]);
        printf(" overall\n");
        for (int c = 0; c < n_cfg; c++) {
            int tot = 0;
            printf("%-50.50s", cfgs[c]);
            for (int d = 0; d < n_depths; d++) {
                tot += passed[c][d];
                printf(" %-7.2f", (double)passed[c][d] / (double)seeds);
            }
            printf(" %.3f\n", (double)tot / (double)(n_depths * seeds));
        }
    }
    rc = 0;
out:
    free(toks);
    free(logits);
    vq_model_free(m);
    return rc;
}
