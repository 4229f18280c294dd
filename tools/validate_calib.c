/* validate_calib.c -- the VecInfer calibration file `veloxquant validate`
 * makes when none is given (see validate.h). */
#include <stdio.h>
#include <stdlib.h>

#include "eval_common.h"
#include "validate.h"

#define CALIB_TOKENS 2048

static void calib_progress(const char *stage, size_t done, size_t total, void *user)
{
    eval_progress *p = user;
    p->label = stage;
    p->unit = "steps";
    eval_progress_update(p, (double)done, (double)total);
}

/* Calibrate the codecs of `cfg_text` on the model's real keys/values for
 * the first CALIB_TOKENS tokens of the calibration text (the first quarter
 * of WikiText-2 by default; the evaluation commands skip that quarter) and
 * write the whole-model calibration file to `path`. */
int validate_make_calibration(const validate_opts *o, const char *cfg_text, const char *path, char *err, size_t cap)
{
    const char *txt_path = o->calib_text;
    char def[1024];
    if (!txt_path) {
        const char *d = getenv("VQ_SHARED_DATA");
        snprintf(def, sizeof def, "%s/wikitext-2-test.txt", d ? d : "../shared/data");
        txt_path = def;
    }
    size_t len = 0;
    char *text = eval_read_text(txt_path, &len);
    if (!text) {
        snprintf(err, cap, "cannot read calibration text %.300s (--calib-text FILE)", txt_path);
        return 1;
    }
    vq_model *m = NULL;
    vq_cache_config *cfg = NULL;
    vq_cache *cache = NULL;
    int32_t *toks = NULL;
    size_t n = 0;
    int rc = 1;
    /* first quarter of the file, at most 16 bytes per wanted token */
    size_t use = len / 4 < (size_t)CALIB_TOKENS * 16 ? len / 4 : (size_t)CALIB_TOKENS * 16;
    if (vq_model_load(o->model, &m) != VQ_OK || vq_model_tokenize(m, text, use, 1, 0, &toks, &n) != VQ_OK ||
        vq_cache_config_parse(cfg_text, &cfg) != VQ_OK || vq_cache_create_for_calibration(m, cfg, &cache) != VQ_OK) {
        snprintf(err, cap, "%s", vq_last_error());
        goto out;
    }
    if (n > CALIB_TOKENS)
        n = CALIB_TOKENS;
    eval_progress pr;
    eval_progress_start(&pr, "calibrate", "tok");
    if (vq_cache_calibrate_model(cache, m, toks, n, o->threads, calib_progress, &pr) != VQ_OK ||
        vq_cache_save_calibration(cache, path) != VQ_OK) {
        snprintf(err, cap, "%s", vq_last_error());
        goto out;
    }
    rc = 0;
out:
    vq_cache_free(cache);
    vq_cache_config_free(cfg);
    free(toks);
    vq_model_free(m);
    free(text);
    return rc;
}
