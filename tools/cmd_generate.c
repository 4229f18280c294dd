/* cmd_generate.c -- `veloxquant generate --model MODEL --prompt TEXT ...`:
 * streams the generated text to stdout, then one stats line on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_flags.h"
#include "cli.h"
#include "cli_opts.h"
#include "util/clock.h"
#include "veloxquant.h"

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    *(int *)user = 1; /* something was printed: end the line later */
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* The prompt as generate would run it (chat template, BOS) in *toks. */
static int tokenize_prompt(const vq_model *m, const char *prompt, int chat, int32_t **toks, size_t *n)
{
    char *templated = NULL;
    if (chat && vq_model_chat(m, prompt, &templated) != VQ_OK)
        return 0;
    const char *text = templated ? templated : prompt;
    vq_status st = vq_model_tokenize(m, text, strlen(text), 1, chat, toks, n);
    free(templated);
    return st == VQ_OK && *n > 0;
}

/* Generate with the float buffer (cfg NULL, no cache files) or a packed
 * cache: fresh from cfg, saved after the prompt, or loaded. */
static int run_generate(const vq_model *m, const vq_cache_config *cfg, const char *prompt, const vq_gen_params *gp,
                        int ctx_tokens, int threads, const char *save_cache, const char *load_cache)
{
    vq_cache *cache = NULL;
    vq_ctx *c = NULL;
    int32_t *toks = NULL;
    size_t n = 0;
    int rc = 1;
    vq_gen_stats st;
    memset(&st, 0, sizeof st);
    vq_status s = VQ_OK;
    if ((save_cache || load_cache) && !tokenize_prompt(m, prompt, gp->chat, &toks, &n)) {
        cli_error("generate", "cannot tokenize the prompt: %s", vq_last_error());
        goto done;
    }
    if (load_cache)
        s = vq_prompt_cache_load(m, load_cache, toks, n - 1, &cache);
    else if (cfg)
        s = vq_cache_for_model(m, cfg, &cache);
    if (s == VQ_OK)
        s = cache ? vq_ctx_create_cached(m, cache, ctx_tokens, threads, &c) : vq_ctx_create(m, ctx_tokens, threads, &c);
    if (s != VQ_OK) {
        cli_error("generate", "%s", vq_last_error());
        goto done;
    }
    double t_pre = 0.0; /* --save-cache: the passes of all but the last prompt token (not the save) */
    if (save_cache && n > 1) {
        const double t0 = cli_now_seconds();
        if (vq_ctx_forward(c, toks, (int)(n - 1), NULL, VQ_LOGITS_LAST) != VQ_OK) {
            cli_error("generate", "%s", vq_ctx_error(c));
            goto done;
        }
        t_pre = cli_now_seconds() - t0;
    }
    if (save_cache) {
        if (vq_prompt_cache_save(m, cache, toks, n - 1, save_cache) != VQ_OK) {
            cli_error("generate", "%s", vq_last_error());
            goto done;
        }
        fprintf(stderr, "saved the prompt cache (%zu tokens) to %s\n", n - 1, save_cache);
    }
    int printed = 0;
    if (toks) /* the last prompt token gives the first logits */
        s = vq_generate_tokens(c, toks + n - 1, 1, gp, on_token, &printed, &st);
    else
        s = vq_generate(c, prompt, gp, on_token, &printed, &st);
    if (s == VQ_OK || printed) /* a refusal prints nothing on stdout */
        printf("\n");
    fflush(stdout);
    if (s != VQ_OK) {
        cli_error("generate", "%s", vq_ctx_error(c));
        goto done;
    }
    if (toks) { /* the rate over the prompt tokens run here: all of them, or after --load-cache the last */
        const double secs = t_pre + st.prefill_seconds;
        st.n_prompt = (int)n;
        st.prefill_tok_s = secs > 0.0 ? (double)(load_cache ? 1 : n) / secs : 0.0;
    }
    fprintf(stderr,
            "prompt tokens: %d, generated tokens: %d, prefill: %.1f tok/s, decode: %.1f tok/s, "
            "KV bytes: %zu, peak RSS: %.1f MiB\n",
            st.n_prompt, st.n_generated, st.prefill_tok_s, st.decode_tok_s, st.kv_bytes,
            (double)st.peak_rss / (1024.0 * 1024.0));
    if (load_cache)
        fprintf(stderr, "(prefill: the last prompt token; the %zu before it came from %s)\n", n - 1, load_cache);
    if (cache) {
        cli_cache_stats_line(stderr, cache);
        fprintf(stderr, "\n");
    }
    rc = 0;
done:
    vq_ctx_free(c);
    vq_cache_free(cache);
    free(toks);
    return rc;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL;
    vq_gen_params gp = vq_gen_defaults();
    int ctx_tokens = 0, threads = 0, max_tokens = gp.max_tokens, top_k = gp.sampler.top_k;
    double temp = gp.sampler.temperature, top_p = gp.sampler.top_p, min_p = gp.sampler.min_p;
    double repeat_penalty = gp.sampler.repeat_penalty, seed = (double)gp.sampler.seed;
    cli_cache_flags cf;
    memset(&cf, 0, sizeof cf);
    const char *save_cache = NULL, *load_cache = NULL;
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name (smollm2-135m, gemma3-270m)", 0, 0, NULL,
          CLI_REQUIRED },
        { "prompt", CLI_STR, &prompt, "TEXT", "the prompt", 0, 0, NULL, CLI_REQUIRED },
        CLI_OPT_INT("max-tokens", &max_tokens, "N", 0, 1 << 20, "tokens to generate (default 128)"),
        CLI_OPT_NUM("temp", &temp, "T", 0, 100, "temperature; 0 = greedy (default 0.8)"),
        CLI_OPT_INT("top-k", &top_k, "K", 0, 1 << 24, "(default 40; 0 = off)"),
        CLI_OPT_NUM("top-p", &top_p, "P", 1e-6, 1, "(default 0.95; 1 = off)"),
        CLI_OPT_NUM("min-p", &min_p, "P", 0, 1, "(default 0.05; 0 = off)"),
        CLI_OPT_NUM("repeat-penalty", &repeat_penalty, "R", 1e-3, 100, "(default 1.0 = off)"),
        CLI_OPT_NUM("seed", &seed, "S", 0, 1.8e19, "(default 42)"),
        CLI_OPT_INT("ctx", &ctx_tokens, "N", 1, 1 << 22, "context capacity in tokens (default: prompt + max tokens)"),
        CLI_OPT_INT("threads", &threads, "N", 1, 64, "(default: all cores)"),
        CLI_OPT_FLAG("chat", &gp.chat, "wrap the prompt in the model's chat template"),
        CLI_OPT_STR("save-cache", &save_cache, "F",
                    "after the prompt (all but its last token), save the packed\n"
                    "prompt cache to F (+ F.prompt: its tokens), then generate"),
        CLI_OPT_STR("load-cache", &load_cache, "F",
                    "continue from a saved prompt cache without re-running the\n"
                    "prompt (same model and prompt required; its config is used)"),
        CLI_CACHE_SECTION,
        CLI_CACHE_OPT_CONFIG(&cf),
        CLI_CACHE_FIELD_OPTS(&cf),
        CLI_OPT_END,
    };
    const cli_command cmd = { "generate", "--model MODEL --prompt TEXT [options]",
                              "Streams the generated text to stdout, then one stats line on stderr.", opts, NULL, NULL,
                              0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    gp.max_tokens = max_tokens;
    gp.sampler.temperature = (float)temp;
    gp.sampler.top_k = top_k;
    gp.sampler.top_p = (float)top_p;
    gp.sampler.min_p = (float)min_p;
    gp.sampler.repeat_penalty = (float)repeat_penalty;
    gp.sampler.seed = (uint64_t)seed;
    if (load_cache && (cli_cache_given(&cf) || save_cache))
        return cli_usage_error(&cmd, "--load-cache uses the saved cache's own config; drop the cache flags / --save-cache");
    vq_cache_config *cfg = NULL;
    if (!cli_cache_config(&cf, "generate", &cfg))
        return 2;
    if (save_cache && !cfg && vq_cache_config_parse("keys=fp16 values=fp16", &cfg) != VQ_OK) {
        cli_error("generate", "%s", vq_last_error());
        return 1;
    }
    vq_model *m = NULL;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("generate", "%s", vq_last_error());
        vq_cache_config_free(cfg);
        return 1;
    }
    if (ctx_tokens == 0) {
        /* room for the prompt (a generous bound: one token per byte, plus
         * the chat template) and the generated tokens */
        size_t need = strlen(prompt) + 256 + (size_t)gp.max_tokens;
        ctx_tokens = need > (1u << 22) ? (1 << 22) : (int)need;
    }
    int rc = run_generate(m, cfg, prompt, &gp, ctx_tokens, threads, save_cache, load_cache);
    vq_cache_config_free(cfg);
    vq_model_free(m);
    return rc;
}
