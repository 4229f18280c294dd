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
#include "eval_common.h"
#include "veloxquant.h"

#define MAX_CONFIGS 8
#define MAX_DEPTHS 16
#define ANSWER_TOKENS 8

static const char INTRO[] = "There is an important piece of information hidden inside a lot of irrelevant text. "
                            "Find it and memorize it. I will quiz you about it.\n";
static const char FILLER[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n";
static const char QUESTION[] = "What is the pass key? The pass key is";

static void usage(FILE *f)
{
    fprintf(f, "usage: veloxquant needle --model MODEL --ctx N [options]\n"
               "  --ctx N          prompt length in tokens, about (64..65536)\n"
               "  --cache CONFIG   a KV-cache config to test (repeatable, up to 8);\n"
               "                   fp16 (keys=fp16 values=fp16) always runs as the baseline\n"
               "  --depths LIST    relative depths of the key, e.g. 0,0.5,1 (default 0,0.25,0.5,0.75,1)\n"
               "  --seeds S        trials per depth, each with another key (default 2)\n"
               "  --threads N      (default: all cores)\n"
               "  --json           one JSON object on stdout\n"
               "  (the single cache flags below describe one more config)\n");
    cli_cache_usage(f);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Prompt text with `n_fill` filler lines and the needle after
 * round(depth * n_fill) of them; malloc'd. */
static char *build_prompt(int n_fill, double depth, int key)
{
    size_t cap = sizeof INTRO + (size_t)n_fill * (sizeof FILLER) + 256;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    size_t o = (size_t)snprintf(p, cap, "%s", INTRO);
    int at = (int)(depth * n_fill + 0.5);
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
    long ctx = 0, seeds = 2, threads = 0;
    int json = 0;
    double depths[MAX_DEPTHS] = { 0, 0.25, 0.5, 0.75, 1 };
    int n_depths = 5;
    const char *cfgs[MAX_CONFIGS + 1] = { "keys=fp16 values=fp16" };
    int n_cfg = 1;
    cli_cache_flags cf = { 0 };
    char flags_cfg[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("needle", "option %s needs a value (or is unknown)", a);
            return 2;
        }
        const char *v = argv[++i];
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        int isnum = !errno && end != v && !*end;
        if (strcmp(a, "--model") == 0)
            model = v;
        else if (strcmp(a, "--ctx") == 0 && isnum && n >= 64 && n <= 65536)
            ctx = n;
        else if (strcmp(a, "--seeds") == 0 && isnum && n >= 1 && n <= 1000)
            seeds = n;
        else if (strcmp(a, "--threads") == 0 && isnum && n >= 1 && n <= 256)
            threads = n;
        else if (strcmp(a, "--cache") == 0 && n_cfg <= MAX_CONFIGS) {
            if (strcmp(v, "keys=fp16 values=fp16") != 0)
                cfgs[n_cfg++] = v;
        } else if (strcmp(a, "--cache") != 0 && cli_cache_flag(&cf, a, v)) {
            continue;
        } else if (strcmp(a, "--depths") == 0) {
            n_depths = 0;
            const char *p = v;
            while (*p) {
                double d = strtod(p, &end);
                if (end == p || d < 0 || d > 1 || n_depths >= MAX_DEPTHS || (*end && *end != ',')) {
                    cli_error("needle", "bad --depths: %s (numbers in [0,1], at most %d)", v, MAX_DEPTHS);
                    return 2;
                }
                depths[n_depths++] = d;
                p = *end ? end + 1 : end;
            }
            if (n_depths == 0) {
                cli_error("needle", "empty --depths");
                return 2;
            }
        } else {
            cli_error("needle", "bad option or value: %s %s", a, v);
            usage(stderr);
            return 2;
        }
    }
    if (cf.any) {
        if (n_cfg > MAX_CONFIGS || !cli_cache_text(&cf, flags_cfg, sizeof flags_cfg)) {
            cli_error("needle", "too many configs, or cache flags too long");
            return 2;
        }
        cfgs[n_cfg++] = flags_cfg;
    }
    if (!model || !ctx) {
        cli_error("needle", "--model and --ctx are required");
        usage(stderr);
        return 2;
    }
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
                if (vq_model_detokenize(m, ans, (size_t)n_ans, &txt) == VQ_OK && strstr(txt, want))
                    passed[c][d]++;
                free(txt);
                eval_progress_update(&pr, ++done, total);
            }
        eval_ctx_close(cx, cache);
    }
    if (json) {
        printf("{\"model\": \"%s\", \"ctx\": %ld, \"filler_lines\": %d, \"seeds\": %ld, \"depths\": [", model, ctx,
               n_fill, seeds);
        for (int d = 0; d < n_depths; d++)
            printf("%s%g", d ? ", " : "", depths[d]);
        printf("], \"configs\": [");
        for (int c = 0; c < n_cfg; c++) {
            int tot = 0;
            for (int d = 0; d < n_depths; d++)
                tot += passed[c][d];
            printf("%s{\"cache\": \"", c ? ", " : "");
            for (const char *p = cfgs[c]; *p; p++)
                printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
            printf("\", \"trials\": %ld, \"passed\": %d, \"accuracy\": %.4f, \"per_depth\": [",
                   n_depths * seeds, tot, (double)tot / (double)(n_depths * seeds));
            for (int d = 0; d < n_depths; d++)
                printf("%s%.4f", d ? ", " : "", (double)passed[c][d] / (double)seeds);
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("passkey retrieval, %s, ~%ld tokens, %ld seeds per depth\n%-50s", model, ctx, seeds, "config");
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
