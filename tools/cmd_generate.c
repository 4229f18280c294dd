/* cmd_generate.c -- `veloxquant generate --model MODEL --prompt TEXT ...`:
 * streams the generated text to stdout, then one stats line on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "veloxquant.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: veloxquant generate --model MODEL --prompt TEXT [options]\n"
            "  --model MODEL         GGUF path or installed name (smollm2-135m, gemma3-270m)\n"
            "  --prompt TEXT         the prompt\n"
            "  --max-tokens N        tokens to generate (default 128)\n"
            "  --temp T              temperature; 0 = greedy (default 0.8)\n"
            "  --top-k K             (default 40; 0 = off)\n"
            "  --top-p P             (default 0.95; 1 = off)\n"
            "  --min-p P             (default 0.05; 0 = off)\n"
            "  --repeat-penalty R    (default 1.0 = off)\n"
            "  --seed S              (default 42)\n"
            "  --ctx N               context capacity in tokens (default: prompt + max tokens)\n"
            "  --threads N           (default: all cores)\n"
            "  --chat                wrap the prompt in the model's chat template\n");
}

static int num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return 0;
    *out = v;
    return 1;
}

static int on_token(int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL;
    vq_gen_params gp = vq_gen_defaults();
    int ctx_tokens = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--chat") == 0) {
            gp.chat = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("generate", "option %s needs a value (or is unknown)", a);
            usage(stderr);
            return 2;
        }
        const char *val = argv[++i];
        if (strcmp(a, "--model") == 0)
            model = val;
        else if (strcmp(a, "--prompt") == 0)
            prompt = val;
        else if (strcmp(a, "--max-tokens") == 0 && num(val, 0, 1 << 20, &v))
            gp.max_tokens = (int)v;
        else if (strcmp(a, "--temp") == 0 && num(val, 0, 100, &v))
            gp.sampler.temperature = (float)v;
        else if (strcmp(a, "--top-k") == 0 && num(val, 0, 1 << 24, &v))
            gp.sampler.top_k = (int)v;
        else if (strcmp(a, "--top-p") == 0 && num(val, 1e-6, 1, &v))
            gp.sampler.top_p = (float)v;
        else if (strcmp(a, "--min-p") == 0 && num(val, 0, 1, &v))
            gp.sampler.min_p = (float)v;
        else if (strcmp(a, "--repeat-penalty") == 0 && num(val, 1e-3, 100, &v))
            gp.sampler.repeat_penalty = (float)v;
        else if (strcmp(a, "--seed") == 0 && num(val, 0, 1.8e19, &v))
            gp.sampler.seed = (uint64_t)v;
        else if (strcmp(a, "--ctx") == 0 && num(val, 1, 1 << 22, &v))
            ctx_tokens = (int)v;
        else if (strcmp(a, "--threads") == 0 && num(val, 1, 64, &v))
            threads = (int)v;
        else {
            cli_error("generate", "bad option or value: %s %s", a, val);
            usage(stderr);
            return 2;
        }
    }
    if (!model || !prompt) {
        cli_error("generate", "--model and --prompt are required");
        usage(stderr);
        return 2;
    }
    vq_model *m = NULL;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("generate", "%s", vq_last_error());
        return 1;
    }
    if (ctx_tokens == 0) {
        /* room for the prompt (a generous bound: one token per byte, plus
         * the chat template) and the generated tokens */
        size_t need = strlen(prompt) + 256 + (size_t)gp.max_tokens;
        ctx_tokens = need > (1u << 22) ? (1 << 22) : (int)need;
    }
    vq_ctx *c = NULL;
    if (vq_ctx_create(m, ctx_tokens, threads, &c) != VQ_OK) {
        cli_error("generate", "%s", vq_last_error());
        vq_model_free(m);
        return 1;
    }
    vq_gen_stats st;
    vq_status s = vq_generate(c, prompt, &gp, on_token, NULL, &st);
    printf("\n");
    fflush(stdout);
    int rc = 0;
    if (s != VQ_OK) {
        cli_error("generate", "%s", vq_ctx_error(c));
        rc = 1;
    } else {
        fprintf(stderr,
                "prompt tokens: %d, generated tokens: %d, prefill: %.1f tok/s, decode: %.1f tok/s, "
                "KV bytes: %zu, peak RSS: %.1f MiB\n",
                st.n_prompt, st.n_generated, st.prefill_tok_s, st.decode_tok_s, st.kv_bytes,
                (double)st.peak_rss / (1024.0 * 1024.0));
    }
    vq_ctx_free(c);
    vq_model_free(m);
    return rc;
}
