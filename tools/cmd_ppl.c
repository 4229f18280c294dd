/* cmd_ppl.c -- `veloxquant ppl --model MODEL --file TEXT --ctx N
 * [--chunks K] [--json]`: perplexity of the model on a text file.
 *
 * Method: the file is tokenized (no BOS); it is cut into consecutive chunks
 * of N tokens (N-1 text tokens after a BOS when the model uses one). Each
 * chunk starts from an empty context and is scored teacher-forced: every
 * token but the chunk's first input is predicted from the tokens before it
 * in the chunk. PPL = exp(mean negative log-likelihood over all scored
 * tokens). At most K chunks (default: as many as the file holds). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "veloxquant.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: veloxquant ppl --model MODEL --file TEXT --ctx N [--chunks K] [--json]\n"
               "  --ctx N      tokens per chunk (2..65536)\n"
               "  --chunks K   score at most K chunks (default: all)\n"
               "  --threads N  (default: all cores)\n"
               "  --json       one JSON object on stdout\n");
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

int cmd_ppl(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    long ctx = 0, chunks = 0, threads = 0;
    int json = 0;
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
            cli_error("ppl", "option %s needs a value (or is unknown)", a);
            return 2;
        }
        const char *val = argv[++i];
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        int isnum = !errno && end != val && !*end;
        if (strcmp(a, "--model") == 0)
            model = val;
        else if (strcmp(a, "--file") == 0)
            file = val;
        else if (strcmp(a, "--ctx") == 0 && isnum && v >= 2 && v <= 65536)
            ctx = v;
        else if (strcmp(a, "--chunks") == 0 && isnum && v >= 1 && v <= 1000000)
            chunks = v;
        else if (strcmp(a, "--threads") == 0 && isnum && v >= 1 && v <= 64)
            threads = v;
        else {
            cli_error("ppl", "bad option or value: %s %s", a, val);
            usage(stderr);
            return 2;
        }
    }
    if (!model || !file || !ctx) {
        cli_error("ppl", "--model, --file and --ctx are required");
        usage(stderr);
        return 2;
    }
    size_t len = 0;
    char *text = read_file(file, &len);
    if (!text) {
        cli_error("ppl", "cannot read %s", file);
        return 1;
    }
    vq_model *m = NULL;
    vq_ctx *c = NULL;
    int32_t *toks = NULL, *inp = NULL;
    size_t n_tok = 0;
    int rc = 1;
    if (vq_model_load(model, &m) != VQ_OK || vq_ctx_create(m, (int)ctx, (int)threads, &c) != VQ_OK) {
        cli_error("ppl", "%s", vq_last_error());
        goto out;
    }
    /* tokenize only what the chunks need when K is given (about 16 bytes
     * per token is generous for English text) */
    size_t use = len;
    if (chunks && (size_t)(chunks * ctx) * 16 < len)
        use = (size_t)(chunks * ctx) * 16;
    if (vq_model_tokenize(m, text, use, 0, 0, &toks, &n_tok) != VQ_OK) {
        cli_error("ppl", "%s", vq_last_error());
        goto out;
    }
    int32_t bos = -1;
    {
        int32_t *t1 = NULL;
        size_t n1 = 0;
        if (vq_model_tokenize(m, "", 0, 1, 0, &t1, &n1) == VQ_OK && n1 == 1)
            bos = t1[0];
        free(t1);
    }
    size_t per = (size_t)ctx - (bos >= 0 ? 1 : 0);
    size_t avail = n_tok / per;
    size_t n_chunks = chunks && (size_t)chunks < avail ? (size_t)chunks : avail;
    if (n_chunks == 0) {
        cli_error("ppl", "%s has %zu tokens, fewer than one chunk of %ld", file, n_tok, ctx);
        goto out;
    }
    inp = malloc((size_t)ctx * sizeof *inp);
    if (!inp) {
        cli_error("ppl", "out of memory");
        goto out;
    }
    double nll = 0;
    int scored = 0;
    vq_model_info info;
    vq_model_info_get(m, &info);
    for (size_t k = 0; k < n_chunks; k++) {
        size_t n = 0;
        if (bos >= 0)
            inp[n++] = bos;
        memcpy(inp + n, toks + k * per, per * sizeof *inp);
        n += per;
        vq_ctx_reset(c);
        if (vq_ctx_score(c, inp, (int)n, &nll, &scored) != VQ_OK) {
            cli_error("ppl", "%s", vq_ctx_error(c));
            goto out;
        }
        if (!json)
            fprintf(stderr, "[%zu/%zu] running ppl %.4f\n", k + 1, n_chunks, exp(nll / scored));
    }
    double ppl = exp(nll / scored);
    if (json)
        printf("{\"model\": \"%s\", \"arch\": \"%s\", \"file\": \"%s\", \"ctx\": %ld, \"chunks\": %zu, "
               "\"tokens_scored\": %d, \"nll\": %.6f, \"ppl\": %.4f}\n",
               model, info.arch, file, ctx, n_chunks, scored, nll / scored, ppl);
    else
        printf("perplexity: %.4f over %d tokens (%zu chunks of %ld)\n", ppl, scored, n_chunks, ctx);
    rc = 0;
out:
    free(inp);
    free(toks);
    vq_ctx_free(c);
    vq_model_free(m);
    free(text);
    return rc;
}
