/* cmd_calibrate.c -- `veloxquant calibrate --model MODEL --method
 * vecinfer|spectral [--spec SPEC] [--file TEXT] [--tokens N] --out FILE`:
 * runs the model (float K/V) over calibration text, records every layer's
 * post-RoPE keys and values, calibrates that layer's key and value codecs
 * on them and writes one whole-model calibration file (docs/FORMATS.md).
 *
 * Default text: the first quarter (by bytes, cut at a line end) of
 * ../shared/data/wikitext-2-test.txt ($VQ_SHARED_DATA overrides the
 * directory). Evaluations (tests, `validate`) use the text after that
 * quarter, so calibration never sees evaluation text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "veloxquant.h"

#define DEFAULT_TOKENS 4096

/* progress lines on stderr, one stage ("forward": tokens, "calibrate":
 * layers) after the other (eval_common.h: about once a second, each on
 * its own line) */
typedef struct {
    eval_progress p;
    const char *stage;
    char label[40];
} calib_progress;

static void progress(const char *stage, size_t done, size_t total, void *user)
{
    calib_progress *cp = user;
    if (!cp->stage || strcmp(cp->stage, stage) != 0) {
        cp->stage = stage;
        snprintf(cp->label, sizeof cp->label, "calibrate%s%s", strcmp(stage, "calibrate") ? " " : "",
                 strcmp(stage, "calibrate") ? stage : "");
        eval_progress_start(&cp->p, cp->label, strcmp(stage, "forward") == 0 ? "tokens" : "layers");
    }
    eval_progress_update(&cp->p, (double)done, (double)total);
}

int cmd_calibrate(int argc, char **argv)
{
    const char *model = NULL, *method = NULL, *spec = NULL, *file = NULL, *out = NULL;
    int tokens_arg = DEFAULT_TOKENS, threads_arg = 0;
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        { "method", CLI_STR, &method, "M", "vecinfer or spectral", 0, 0, NULL, CLI_REQUIRED },
        CLI_OPT_STR("spec", &spec, "SPEC",
                    "the codec spec to calibrate (default: the method's defaults, e.g.\n"
                    "vecinfer:sub_dim=8,bits=8); keys and values are both calibrated"),
        CLI_OPT_STR("file", &file, "TEXT",
                    "calibration text (default: the first quarter of\n"
                    "../shared/data/wikitext-2-test.txt; evaluations use the rest)"),
        CLI_OPT_INT("tokens", &tokens_arg, "N", 16, 1 << 20, "tokens of text to run (default 4096)"),
        CLI_OPT_INT("threads", &threads_arg, "N", 1, 64, "(default: all cores)"),
        { "out", CLI_STR, &out, "FILE", "the calibration file (written atomically)", 0, 0, NULL, CLI_REQUIRED },
        CLI_OPT_NOTE("Use it with: --keys SPEC,calib=FILE (same parameters as --spec)"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "calibrate", "--model MODEL --method vecinfer|spectral --out FILE [options]",
                              "Records every layer's keys and values over calibration text and writes one\n"
                              "whole-model calibration file.",
                              opts, NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    long tokens = tokens_arg, threads = threads_arg;
    if (strcmp(method, "vecinfer") != 0 && strcmp(method, "spectral") != 0)
        return cli_usage_error(&cmd, "bad value for --method: '%s' (want vecinfer or spectral: only they need "
                                     "calibration)", method);
    const char *def = NULL;
    for (int i = 0; vq_codec_method(i, &def); i++)
        if (strcmp(vq_codec_method(i, NULL), method) == 0)
            break;
    if (!spec)
        spec = def;
    if (!spec || strncmp(spec, method, strlen(method)) != 0)
        return cli_usage_error(&cmd, "bad value for --spec: '%s' (want a %s spec)", spec ? spec : "", method);

    /* the text: the given file whole, or the default file's first quarter */
    char path[4096];
    int quarter = !file;
    if (!file) {
        const char *dir = getenv("VQ_SHARED_DATA");
        snprintf(path, sizeof path, "%s/wikitext-2-test.txt", dir && *dir ? dir : "../shared/data");
        file = path;
    }
    size_t len = 0;
    char *text = eval_read_text(file, &len);
    if (!text) {
        cli_error("calibrate", "cannot read %s", file);
        return 1;
    }
    if (quarter) {
        size_t q = len / 4;
        while (q > 0 && text[q - 1] != '\n')
            q--;
        text[q] = 0;
        len = q;
    }
    int rc = 1;
    vq_model *m = NULL;
    vq_cache_config *cfg = NULL;
    vq_cache *cache = NULL;
    int32_t *toks = NULL;
    size_t n = 0;
    char cfgtext[1024];
    snprintf(cfgtext, sizeof cfgtext, "keys=%s values=%s", spec, spec);
    if (vq_model_load(model, &m) != VQ_OK || vq_model_tokenize(m, text, len, 1, 0, &toks, &n) != VQ_OK ||
        vq_cache_config_parse(cfgtext, &cfg) != VQ_OK || vq_cache_create_for_calibration(m, cfg, &cache) != VQ_OK) {
        cli_error("calibrate", "%s", vq_last_error());
        goto done;
    }
    if (n > (size_t)tokens)
        n = (size_t)tokens;
    if (n < 16) {
        cli_error("calibrate", "%s has only %zu tokens", file, n);
        goto done;
    }
    fprintf(stderr, "calibrate: %s on %zu tokens of %s%s\n", spec, n, file, quarter ? " (first quarter)" : "");
    calib_progress prog = { 0 };
    if (vq_cache_calibrate_model(cache, m, toks, n, (int)threads, progress, &prog) != VQ_OK ||
        vq_cache_save_calibration(cache, out) != VQ_OK) {
        cli_error("calibrate", "%s", vq_last_error());
        goto done;
    }
    fprintf(stderr, "calibrate: wrote %s; use it as --keys %s,calib=%s (or --values)\n", out, spec, out);
    rc = 0;
done:
    free(toks);
    free(text);
    vq_cache_free(cache);
    vq_cache_config_free(cfg);
    vq_model_free(m);
    return rc;
}
