/* cmd_validate.c -- `veloxquant validate`: the validation harness.
 *
 * For each arm (a name and a cache config) the model generates greedily
 * from the same prompt with its K/V in that cache, and the harness records
 * bytes (accounted by the codec formulas and resident in the cache's
 * allocator), memory, speed, an output preview and quality against the
 * fp16 arm; all of it goes to <out>/<model>/results.json (format below)
 * and a table on stdout.
 *
 * Measurement protocol (docs/validation-report.md explains each number):
 *   - Every arm runs in its own child process (fork), which loads the model
 *     itself, so `rss_peak_mb` (VmHWM) is that arm's own peak: weights
 *     touched, runtime scratch and its cache. The parent never loads the
 *     model. (--no-fork runs arms in-process; peaks are then cumulative.)
 *   - Generation is greedy and runs exactly --max-tokens tokens (end-of-
 *     generation tokens do not stop it, so every arm does the same work);
 *     the preview is cut at the first end-of-generation token.
 *   - The peak is read right after generation, before the quality pass.
 *   - Quality: the fp16 arm runs first and saves its logits at every
 *     decode step (to a temporary file). Each arm then re-runs the fp16
 *     arm's token sequence teacher-forced in its own cache and compares its
 *     next-token distribution with fp16's at each generated position:
 *     kl_vs_fp16 = mean KL(p_fp16 || p_arm) (nats), top1_agreement_vs_fp16 =
 *     share of positions with the same argmax. greedy_matches_fp16: the
 *     arm's own greedy continuation equals fp16's token for token. The fp16
 *     arm's own figures (teacher-forced batch vs step-by-step decode) show
 *     the noise floor of the runtime.
 *
 * results.json, schema "veloxquant.validate/1": see write_results(). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "core/file.h"
#include "core/json.h"
#include "core/sysinfo.h"
#include "core/timer.h"
#include "eval_common.h"
#include "veloxquant.h"

#define MAX_ARMS 16
#define PREVIEW_CHARS 200
#define SCHEMA "veloxquant.validate/1"
#define MB (1024.0 * 1024.0)

static const char DEFAULT_PROMPT[] =
    "Explain what the key-value cache of a transformer language model stores, why it grows "
    "with the length of the conversation, and how quantization makes it smaller.";

typedef struct {
    char name[64];
    char cache[768]; /* config text as given */
} arm_def;

/* Everything one arm measured; sent from the child as raw bytes, followed
 * by n_generated int32 token ids. */
typedef struct {
    int ok;
    char error[512];
    char cache_canon[768];
    /* model */
    char arch[32];
    char model_name[96];
    int n_layers, n_kv_heads, n_q_heads, head_dim, n_vocab;
    /* run */
    int n_prompt, n_generated, tokens_in_cache_max;
    int have_stats;
    uint64_t fp16_key_bytes, compressed_key_bytes, fp16_value_bytes, compressed_value_bytes;
    uint64_t resident_key_bytes, resident_value_bytes, residual_bytes, index_bytes, shared_bytes;
    uint64_t total_cache_bytes; /* vq_cache_usage.total_bytes (0 for float arms) */
    uint64_t resident_bound_bytes, tokens_held;
    double prefill_s, decode_s, prefill_tok_s, decode_tok_s, throughput_tok_s;
    double rss_model_mb, rss_peak_mb;
    /* quality */
    int quality_positions;
    double kl_mean, kl_max, top1;
    int greedy_match, greedy_prefix;
    char preview[PREVIEW_CHARS * 4 + 1];
} arm_result;

typedef struct {
    const char *model;
    int max_tokens, prompt_repeat, threads, chat, no_fork, no_quality;
    const char *prompt, *out_dir, *calib, *calib_text;
    char *prompt_text; /* prompt repeated */
    arm_def arms[MAX_ARMS];
    int n_arms;
    int argc;
    char **argv;
} opts;

/* The reference (fp16) arm's generated tokens and logits file, set in the
 * parent before later arms fork (the children inherit them). */
static int32_t *g_ref_tokens;
static int g_ref_n;
static char g_ref_logits_path[1400];

/* ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: veloxquant validate --model MODEL [options]\n"
            "  --max-tokens N      tokens generated per arm (default 128)\n"
            "  --prompt TEXT       prompt (default: a question about the KV cache)\n"
            "  --prompt-repeat R   repeat the prompt R times to grow the prefill (default 1)\n"
            "  --arm \"name=NAME CONFIG\"  an arm (repeatable; replaces the defaults);\n"
            "                      CONFIG is cache config text, e.g. keys=turboquant_rvq:bits=1\n"
            "  --arms A,B,...      run only these default arms\n"
            "  --calib FILE        VecInfer calibration file, made there when missing\n"
            "                      (default OUT/MODEL/calib-vecinfer.vqc)\n"
            "  --calib-text FILE   text for that calibration (default ../shared/data/\n"
            "                      wikitext-2-test.txt or $VQ_SHARED_DATA; its first quarter)\n"
            "  --out DIR           results directory (default figures/validation)\n"
            "  --no-chat           use the prompt as plain text (default: chat template)\n"
            "  --threads N         threads per arm (default: all cores)\n"
            "  --no-fork           run arms in this process (peak RSS becomes cumulative)\n"
            "  --no-quality        skip the teacher-forced comparison with fp16 (halves the\n"
            "                      work at long prompts; quality fields become null)\n"
            "default arms: fp16, RVQ-1bit, VecInfer-1bit, KIVI-2, q4_0-rot, RaBitQ-1bit\n");
}

static int default_arms(opts *o, const char *only)
{
    static const char *const defs[][2] = {
        { "fp16", "keys=fp16 values=fp16" },
        { "RVQ-1bit", "keys=turboquant_rvq:bits=1 values=fp16" },
        { "VecInfer-1bit", "keys=vecinfer:sub_dim=8,bits=8,calib=%s values=fp16" },
        { "KIVI-2", "keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32" },
        { "q4_0-rot", "keys=q4_0:rot=1 values=q4_0:rot=1" },
        { "RaBitQ-1bit", "keys=rabitq:bits=1 values=q4_0:rot=1" },
    };
    for (size_t i = 0; i < sizeof defs / sizeof *defs; i++) {
        if (only) {
            /* comma-separated names, exact match */
            size_t nl = strlen(defs[i][0]);
            const char *p = only;
            int found = 0;
            while (*p) {
                size_t k = strcspn(p, ",");
                if (k == nl && strncmp(p, defs[i][0], k) == 0)
                    found = 1;
                p += k + (p[k] == ',');
            }
            if (!found)
                continue;
        }
        arm_def *a = &o->arms[o->n_arms++];
        snprintf(a->name, sizeof a->name, "%s", defs[i][0]);
        snprintf(a->cache, sizeof a->cache, defs[i][1], "@CALIB@");
    }
    return o->n_arms;
}

/* ------------------------------------------------------------------------ */
/*  One arm (runs in the child)                                            */
/* ------------------------------------------------------------------------ */

static int on_fail(arm_result *r, const char *what, const char *msg)
{
    snprintf(r->error, sizeof r->error, "%s: %s", what, msg && *msg ? msg : "failed");
    r->ok = 0;
    return 1;
}

/* page=N from canonical config text, 256 if absent */
static long config_page(const char *canon)
{
    const char *p = strstr(canon, "page=");
    long v = p ? strtol(p + 5, NULL, 10) : 256;
    return v > 0 ? v : 256;
}

static void fill_stats(arm_result *r, vq_cache *cache)
{
    vq_cache_usage u;
    if (!cache || vq_cache_stats(cache, -1, &u) != VQ_OK)
        return;
    r->have_stats = 1;
    r->fp16_key_bytes = u.keys.fp16_bytes;
    r->fp16_value_bytes = u.values.fp16_bytes;
    r->compressed_key_bytes = u.keys.accounted_bytes;
    r->compressed_value_bytes = u.values.accounted_bytes;
    r->total_cache_bytes = u.total_bytes;
    r->resident_key_bytes = u.keys.resident_bytes;
    r->resident_value_bytes = u.values.resident_bytes;
    r->residual_bytes = u.keys.residual_bytes + u.values.residual_bytes;
    r->index_bytes = u.index_bytes;
    r->shared_bytes = u.keys.shared_bytes + u.values.shared_bytes;
    r->tokens_held = u.keys.tokens;
    /* bound: accounted + residual capacity + at most one partly filled page
     * per (layer, KV head, role). Page bytes = page tokens x bytes/token,
     * bytes/token taken from the layer's packed slots. */
    uint64_t bound = u.keys.accounted_bytes + u.values.accounted_bytes + r->residual_bytes;
    long page = config_page(r->cache_canon);
    vq_cache_shape sh;
    if (vq_cache_get_shape(cache, &sh) == VQ_OK) {
        for (int l = 0; l < sh.n_layers; l++) {
            vq_cache_usage lu;
            if (vq_cache_stats(cache, l, &lu) != VQ_OK)
                continue;
            const vq_cache_role_stats *rs[2] = { &lu.keys, &lu.values };
            uint64_t D = (uint64_t)sh.layers[l].head_dim;
            for (int k = 0; k < 2; k++) {
                uint64_t packed = rs[k]->stored_slots - rs[k]->residual_tokens;
                if (packed == 0)
                    continue;
                double bpt = (double)(rs[k]->accounted_bytes - rs[k]->residual_tokens * 2 * D) / (double)packed;
                /* round the page up to a 64-token multiple: codec blocks
                 * (KIVI groups) may round the page size up */
                uint64_t pt = (uint64_t)((page + 63) / 64 * 64);
                bound += (uint64_t)sh.layers[l].n_kv_heads * (uint64_t)ceil(bpt * (double)pt);
            }
        }
    }
    r->resident_bound_bytes = bound;
}

/* Fallback when the context has no cache (plain fp32 context, no cache
 * build): the formula of the seed, fp16 bytes for every token. */
static void fill_formula(arm_result *r, vq_ctx *ctx)
{
    uint64_t t = (uint64_t)vq_ctx_n_tokens(ctx);
    uint64_t b = (uint64_t)r->n_layers * (uint64_t)r->n_kv_heads * (uint64_t)r->head_dim * t * 2;
    r->fp16_key_bytes = r->fp16_value_bytes = b;
    r->compressed_key_bytes = r->compressed_value_bytes = b;
    r->resident_key_bytes = r->resident_value_bytes = vq_ctx_kv_bytes(ctx) / 2;
    r->resident_bound_bytes = vq_ctx_kv_bytes(ctx);
    r->tokens_held = t * (uint64_t)r->n_kv_heads * (uint64_t)r->n_layers;
}

/* Reference-logits files of validate runs that were killed (their process
 * is gone) are removed; a running validate's file is left alone. */
static void remove_stale_ref_logits(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid = 0, len = 0;
        if (sscanf(e->d_name, ".ref-logits.%d.tmp%n", &pid, &len) != 1 || e->d_name[len] != 0 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[1400];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
            unlink(p);
    }
    closedir(d);
}

/* Teacher-forced pass over prompt + reference tokens, comparing with the
 * reference logits file. */
static int quality_pass(const opts *o, vq_ctx *ctx, const int32_t *prompt, int n_prompt,
                        arm_result *r, float *logits, int n_vocab)
{
    (void)o;
    FILE *f = fopen(g_ref_logits_path, "rb");
    if (!f)
        return on_fail(r, "quality", "reference logits missing");
    enum { CHUNK = 16 };
    float *ref = malloc((size_t)n_vocab * sizeof *ref);
    float *batch = malloc((size_t)CHUNK * (size_t)n_vocab * sizeof *batch);
    int rc = 0;
    if (!ref || !batch) {
        rc = on_fail(r, "quality", "out of memory");
        goto out;
    }
    vq_ctx_reset(ctx);
    double kl_sum = 0, kl_max = 0;
    int same = 0, n = 0;
    eval_progress pr;
    eval_progress_start(&pr, "  quality (teacher-forced)", "tok");
    if (vq_ctx_forward(ctx, prompt, n_prompt, logits, VQ_LOGITS_LAST) != VQ_OK) {
        rc = on_fail(r, "quality prefill", vq_ctx_error(ctx));
        goto out;
    }
    /* position i predicts reference token i; logits for i = 0 come from
     * the prompt, for i >= 1 from feeding reference token i-1 */
    for (int i = 0; i < g_ref_n;) {
        int cnt = 1;
        const float *cur = logits;
        if (i > 0) {
            cnt = g_ref_n - i < CHUNK ? g_ref_n - i : CHUNK;
            if (vq_ctx_forward(ctx, g_ref_tokens + i - 1, cnt, batch, VQ_LOGITS_ALL) != VQ_OK) {
                rc = on_fail(r, "quality forward", vq_ctx_error(ctx));
                goto out;
            }
            cur = batch;
        }
        for (int k = 0; k < cnt; k++) {
            if (fread(ref, sizeof *ref, (size_t)n_vocab, f) != (size_t)n_vocab) {
                rc = on_fail(r, "quality", "reference logits file truncated");
                goto out;
            }
            int s = 0;
            double kl = eval_kl(ref, cur + (size_t)k * (size_t)n_vocab, n_vocab, &s);
            kl_sum += kl;
            kl_max = kl > kl_max ? kl : kl_max;
            same += s;
            n++;
        }
        i += cnt;
        eval_progress_update(&pr, i, g_ref_n);
    }
    r->quality_positions = n;
    r->kl_mean = n ? kl_sum / n : 0;
    r->kl_max = kl_max;
    r->top1 = n ? (double)same / n : 0;
out:
    free(ref);
    free(batch);
    fclose(f);
    return rc;
}

/* Run one arm; fills r and *gen (malloc'd, r->n_generated ids).
 * is_ref: write the reference logits file while decoding. */
static int run_arm(const opts *o, const arm_def *a, int is_ref, arm_result *r, int32_t **gen)
{
    memset(r, 0, sizeof *r);
    r->ok = 1;
    *gen = NULL;
    vq_model *m = NULL;
    vq_ctx *ctx = NULL;
    vq_cache *cache = NULL;
    int32_t *prompt = NULL, *out = NULL;
    float *logits = NULL;
    char *templated = NULL, *text = NULL;
    FILE *reff = NULL;
    size_t n_prompt = 0;
    int rc = 1;

    snprintf(r->cache_canon, sizeof r->cache_canon, "%s", a->cache);
    {
        vq_cache_config *cfg = NULL;
        if (vq_cache_config_parse(a->cache, &cfg) != VQ_OK) {
            on_fail(r, "cache config", vq_last_error());
            goto done;
        }
        snprintf(r->cache_canon, sizeof r->cache_canon, "%s", vq_cache_config_str(cfg));
        vq_cache_config_free(cfg);
    }
    if (vq_model_load(o->model, &m) != VQ_OK) {
        on_fail(r, "model", vq_last_error());
        goto done;
    }
    vq_model_info info;
    vq_model_info_get(m, &info);
    snprintf(r->arch, sizeof r->arch, "%s", info.arch);
    snprintf(r->model_name, sizeof r->model_name, "%s", info.name);
    r->n_layers = info.n_layers;
    r->n_kv_heads = info.n_kv_heads;
    r->n_q_heads = info.n_q_heads;
    r->head_dim = info.head_dim;
    r->n_vocab = info.n_vocab;

    const char *ptxt = o->prompt_text;
    if (o->chat) {
        if (vq_model_chat(m, o->prompt_text, &templated) != VQ_OK) {
            on_fail(r, "chat template", vq_last_error());
            goto done;
        }
        ptxt = templated;
    }
    if (vq_model_tokenize(m, ptxt, strlen(ptxt), 1, o->chat, &prompt, &n_prompt) != VQ_OK) {
        on_fail(r, "tokenize", vq_last_error());
        goto done;
    }
    r->n_prompt = (int)n_prompt;
    int cap = (int)n_prompt + o->max_tokens;
    vq_status st;
    st = eval_ctx_open(m, a->cache, cap, o->threads, &ctx, &cache);
    if (st != VQ_OK) {
        on_fail(r, "context", vq_last_error());
        goto done;
    }
    r->rss_model_mb = (double)vq_current_rss_bytes() / MB;
    logits = malloc((size_t)info.n_vocab * sizeof *logits);
    out = malloc((size_t)(o->max_tokens > 0 ? o->max_tokens : 1) * sizeof *out);
    if (!logits || !out) {
        on_fail(r, "memory", "out of memory");
        goto done;
    }
    if (is_ref) {
        reff = fopen(g_ref_logits_path, "wb");
        if (!reff) {
            on_fail(r, "reference logits", strerror(errno));
            goto done;
        }
    }
    /* prefill */
    /* in pieces of 256 tokens so long prompts show progress (the context
     * batches each piece itself; positions simply continue) */
    eval_progress pp;
    char plabel[96];
    snprintf(plabel, sizeof plabel, "  %s prefill", a->name);
    eval_progress_start(&pp, plabel, "tok");
    double t0 = vq_now_seconds();
    for (size_t p0 = 0; p0 < n_prompt; p0 += 256) {
        int cnt = (int)(n_prompt - p0 < 256 ? n_prompt - p0 : 256);
        if (vq_ctx_forward(ctx, prompt + p0, cnt, logits, VQ_LOGITS_LAST) != VQ_OK) {
            on_fail(r, "prefill", vq_ctx_error(ctx));
            goto done;
        }
        eval_progress_update(&pp, (double)(p0 + (size_t)cnt), (double)n_prompt);
    }
    r->prefill_s = vq_now_seconds() - t0;
    /* greedy decode, exactly max_tokens tokens */
    eval_progress pr;
    char label[96];
    snprintf(label, sizeof label, "  %s decode", a->name);
    eval_progress_start(&pr, label, "tok");
    double dec = 0;
    int eog_at = -1;
    for (int i = 0; i < o->max_tokens; i++) {
        double s0 = vq_now_seconds();
        int32_t t = (int32_t)eval_argmax(logits, info.n_vocab);
        double s1 = vq_now_seconds();
        if (reff && fwrite(logits, sizeof *logits, (size_t)info.n_vocab, reff) != (size_t)info.n_vocab) {
            on_fail(r, "reference logits", "write failed");
            goto done;
        }
        out[i] = t;
        r->n_generated = i + 1;
        if (eog_at < 0 && vq_model_is_eog(m, t))
            eog_at = i;
        double s2 = vq_now_seconds();
        if (i + 1 < o->max_tokens && vq_ctx_forward(ctx, &t, 1, logits, VQ_LOGITS_LAST) != VQ_OK) {
            on_fail(r, "decode", vq_ctx_error(ctx));
            goto done;
        }
        dec += (s1 - s0) + (vq_now_seconds() - s2);
        eval_progress_update(&pr, i + 1, o->max_tokens);
    }
    r->decode_s = dec;
    r->rss_peak_mb = (double)vq_peak_rss_bytes() / MB; /* before the quality pass */
    r->tokens_in_cache_max = vq_ctx_n_tokens(ctx);
    r->prefill_tok_s = r->prefill_s > 0 ? n_prompt / r->prefill_s : 0;
    /* the last token is sampled but not fed: n_generated - 1 forwards */
    r->decode_tok_s = dec > 0 ? (r->n_generated > 1 ? r->n_generated - 1 : 1) / dec : 0;
    r->throughput_tok_s = r->n_generated / (r->prefill_s + dec);
    if (cache)
        fill_stats(r, cache);
    else
        fill_formula(r, ctx);
    if (reff) {
        if (fclose(reff) != 0) {
            reff = NULL;
            on_fail(r, "reference logits", "close failed");
            goto done;
        }
        reff = NULL;
        g_ref_tokens = out;
        g_ref_n = r->n_generated;
    }
    /* preview */
    if (vq_model_detokenize(m, out, (size_t)(eog_at >= 0 ? eog_at : r->n_generated), &text) == VQ_OK) {
        size_t n = strlen(text), k = n < PREVIEW_CHARS ? n : PREVIEW_CHARS;
        while (k < n && ((unsigned char)text[k] & 0xC0) == 0x80)
            k++; /* do not cut a UTF-8 sequence */
        memcpy(r->preview, text, k);
        r->preview[k] = 0;
    }
    /* quality against the reference */
    if (g_ref_tokens && g_ref_n > 0 && !o->no_quality) {
        int pre = 0;
        while (pre < g_ref_n && pre < r->n_generated && out[pre] == g_ref_tokens[pre])
            pre++;
        r->greedy_prefix = pre;
        r->greedy_match = pre == g_ref_n && pre == r->n_generated;
        if (quality_pass(o, ctx, prompt, (int)n_prompt, r, logits, info.n_vocab))
            goto done;
    }
    rc = 0;
done:
    if (reff)
        fclose(reff);
    if (rc == 0 || r->n_generated > 0) {
        *gen = out;
        out = NULL;
    }
    if (g_ref_tokens == *gen && !is_ref)
        g_ref_tokens = NULL;
    free(out);
    free(text);
    free(logits);
    free(prompt);
    free(templated);
    eval_ctx_close(ctx, cache);
    vq_model_free(m);
    return rc;
}

/* ------------------------------------------------------------------------ */
/*  VecInfer calibration (when no file is given)                            */
/* ------------------------------------------------------------------------ */

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
static int make_calibration(const opts *o, const char *cfg_text, const char *path, char *err, size_t cap)
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

/* Run make_calibration in a child process (its memory is not the arms'). */
static int make_calibration_isolated(const opts *o, const char *cfg_text, const char *path, char *err, size_t cap)
{
    int fds[2];
    if (o->no_fork || pipe(fds) != 0)
        return make_calibration(o, cfg_text, path, err, cap);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return make_calibration(o, cfg_text, path, err, cap);
    }
    if (pid == 0) {
        close(fds[0]);
        char e[512] = "";
        int rc = make_calibration(o, cfg_text, path, e, sizeof e);
        ssize_t w = write(fds[1], e, sizeof e);
        (void)w;
        close(fds[1]);
        _exit(rc);
    }
    close(fds[1]);
    char e[512] = "";
    ssize_t got = read(fds[0], e, sizeof e);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    e[sizeof e - 1] = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    snprintf(err, cap, "%s", got > 0 && e[0] ? e : "calibration process failed");
    return 1;
}

/* ------------------------------------------------------------------------ */
/*  Parent: fork per arm                                                    */
/* ------------------------------------------------------------------------ */

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Run an arm in a child; *gen gets the generated tokens (malloc'd). */
static void run_arm_isolated(const opts *o, const arm_def *a, int is_ref, arm_result *r, int32_t **gen)
{
    *gen = NULL;
    if (o->no_fork) {
        run_arm(o, a, is_ref, r, gen);
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        run_arm(o, a, is_ref, r, gen);
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        run_arm(o, a, is_ref, r, gen);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        arm_result *res = calloc(1, sizeof *res);
        int32_t *toks = NULL;
        if (!res)
            _exit(3);
        run_arm(o, a, is_ref, res, &toks);
        int n = toks ? res->n_generated : 0;
        int bad = write_all(fds[1], res, sizeof *res) || write_all(fds[1], &n, sizeof n) ||
                  (n > 0 && write_all(fds[1], toks, (size_t)n * sizeof *toks));
        close(fds[1]);
        fflush(NULL);
        _exit(bad ? 4 : 0);
    }
    close(fds[1]);
    memset(r, 0, sizeof *r);
    int n = 0;
    int got = read_all(fds[0], r, sizeof *r) == 0 && read_all(fds[0], &n, sizeof n) == 0 &&
              n >= 0 && n <= o->max_tokens;
    if (got && n > 0) {
        *gen = malloc((size_t)n * sizeof **gen);
        if (!*gen || read_all(fds[0], *gen, (size_t)n * sizeof **gen) != 0) {
            free(*gen);
            *gen = NULL;
            got = 0;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int ok_fields = got;
        if (!ok_fields)
            memset(r, 0, sizeof *r);
        r->ok = 0;
        if (WIFSIGNALED(status))
            snprintf(r->error, sizeof r->error, "arm process died with signal %d (%s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
        else if (!r->error[0])
            snprintf(r->error, sizeof r->error, "arm process failed (exit %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        snprintf(r->cache_canon, sizeof r->cache_canon, "%s", a->cache);
    }
}

/* ------------------------------------------------------------------------ */
/*  results.json                                                            */
/* ------------------------------------------------------------------------ */

static void git_commit(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *p = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!p)
        return;
    char line[128];
    if (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\r\n")] = 0;
        size_t n = strlen(line);
        if (n == 40 && n < cap) /* a full SHA-1 that fits: copy it whole */
            memcpy(buf, line, n + 1);
    }
    pclose(p);
    /* mark a dirty tree: the numbers came from uncommitted code */
    p = popen("git status --porcelain --untracked-files=no 2>/dev/null | head -1", "r");
    if (p) {
        if (fgets(line, sizeof line, p) && strlen(buf) + 7 < cap)
            strcat(buf, "-dirty");
        pclose(p);
    }
}

static void knum_or_null(vq_json *j, const char *k, double v, int have)
{
    vq_json_key(j, k);
    if (have)
        vq_json_num(j, v);
    else
        vq_json_null(j);
}

static vq_status write_results(const opts *o, const char *path, const arm_result *res, int n_done,
                               const char *date, const char *commit)
{
    vq_json_buf b = { 0 };
    vq_json j;
    vq_json_init(&j, vq_json_sink_buf, &b, 1);
    vq_sysinfo si;
    vq_sysinfo_get(&si);
    const arm_result *shape = NULL;
    for (int i = 0; i < n_done; i++)
        if (res[i].n_layers > 0) {
            shape = &res[i];
            break;
        }
    vq_json_begin_object(&j);
    vq_json_kstr(&j, "schema", SCHEMA);
    vq_json_kstr(&j, "model", o->model);
    vq_json_kstr(&j, "model_name", shape ? shape->model_name : "");
    vq_json_kstr(&j, "arch", shape ? shape->arch : "");
    vq_json_kint(&j, "n_layers", shape ? shape->n_layers : 0);
    vq_json_kint(&j, "n_kv_heads", shape ? shape->n_kv_heads : 0);
    vq_json_kint(&j, "n_q_heads", shape ? shape->n_q_heads : 0);
    vq_json_kint(&j, "head_dim", shape ? shape->head_dim : 0);
    vq_json_kint(&j, "max_tokens", o->max_tokens);
    vq_json_kint(&j, "prompt_repeat", o->prompt_repeat);
    vq_json_kstr(&j, "prompt", o->prompt);
    vq_json_kbool(&j, "chat", o->chat);
    vq_json_kint(&j, "prompt_tokens", shape ? shape->n_prompt : 0);
    vq_json_key(&j, "hardware");
    vq_json_begin_object(&j);
    vq_json_kstr(&j, "cpu_model", si.cpu_model);
    vq_json_kint(&j, "cores", si.n_cores);
    vq_json_knum(&j, "memory_mb", (double)si.mem_total_bytes / MB);
    vq_json_kstr(&j, "os", si.os);
    vq_json_kint(&j, "threads", o->threads);
    vq_json_end_object(&j);
    vq_json_kstr(&j, "git_commit", commit);
    vq_json_kstr(&j, "version", vq_version());
    vq_json_key(&j, "command_line");
    {
        char cl[2048];
        size_t off = 0;
        cl[0] = 0;
        for (int i = 0; i < o->argc && off < sizeof cl; i++) {
            int q = strpbrk(o->argv[i], " \t\"'") != NULL;
            off += (size_t)snprintf(cl + off, sizeof cl - off, "%s%s%s%s", i ? " " : "",
                                    q ? "'" : "", i == 0 ? "veloxquant validate" : o->argv[i], q ? "'" : "");
        }
        vq_json_str(&j, cl);
    }
    vq_json_kstr(&j, "date_utc", date);
    vq_json_kbool(&j, "per_arm_process", !o->no_fork);
    vq_json_kbool(&j, "quality_measured", !o->no_quality);
    vq_json_key(&j, "arms");
    vq_json_begin_array(&j);
    for (int i = 0; i < n_done; i++) {
        const arm_result *r = &res[i];
        vq_json_begin_object(&j);
        vq_json_kstr(&j, "name", o->arms[i].name);
        vq_json_kstr(&j, "cache", r->cache_canon);
        if (!r->ok)
            vq_json_kstr(&j, "error", r->error);
        if (r->ok) {
            vq_json_kint(&j, "prompt_tokens", r->n_prompt);
            vq_json_kint(&j, "generated_tokens", r->n_generated);
            vq_json_kint(&j, "tokens_in_cache_max", r->tokens_in_cache_max);
            vq_json_kuint(&j, "fp16_key_bytes", r->fp16_key_bytes);
            vq_json_knum(&j, "fp16_key_mb", r->fp16_key_bytes / MB);
            vq_json_kuint(&j, "compressed_key_bytes", r->compressed_key_bytes);
            vq_json_knum(&j, "compressed_key_mb", r->compressed_key_bytes / MB);
            /* ratios include the slot index, half to each role */
            double ik = (double)r->index_bytes / 2;
            vq_json_knum(&j, "key_compression", r->compressed_key_bytes ? (double)r->fp16_key_bytes / (r->compressed_key_bytes + ik) : 0);
            vq_json_kuint(&j, "fp16_value_bytes", r->fp16_value_bytes);
            vq_json_knum(&j, "fp16_value_mb", r->fp16_value_bytes / MB);
            vq_json_kuint(&j, "compressed_value_bytes", r->compressed_value_bytes);
            vq_json_knum(&j, "compressed_value_mb", r->compressed_value_bytes / MB);
            vq_json_knum(&j, "value_compression", r->compressed_value_bytes ? (double)r->fp16_value_bytes / (r->compressed_value_bytes + ik) : 0);
            uint64_t fa = r->fp16_key_bytes + r->fp16_value_bytes, ca = r->compressed_key_bytes + r->compressed_value_bytes;
            vq_json_knum(&j, "full_kv_compression", ca ? (double)fa / ((double)ca + 2 * ik) : 0);
            vq_json_kuint(&j, "accounted_kv_bytes", ca);
            vq_json_kuint(&j, "resident_kv_bytes", r->resident_key_bytes + r->resident_value_bytes);
            vq_json_knum(&j, "resident_kv_mb", (r->resident_key_bytes + r->resident_value_bytes) / MB);
            vq_json_kuint(&j, "resident_key_bytes", r->resident_key_bytes);
            vq_json_kuint(&j, "resident_value_bytes", r->resident_value_bytes);
            vq_json_kuint(&j, "resident_bound_bytes", r->resident_bound_bytes);
            vq_json_kuint(&j, "residual_bytes", r->residual_bytes);
            vq_json_kuint(&j, "index_bytes", r->index_bytes);
            vq_json_kuint(&j, "total_cache_bytes", r->total_cache_bytes);
            vq_json_kuint(&j, "shared_state_bytes", r->shared_bytes);
            vq_json_kbool(&j, "measured_from_cache_allocator", r->have_stats);
            vq_json_knum(&j, "peak_mb", r->rss_peak_mb);
            vq_json_knum(&j, "rss_peak_mb", r->rss_peak_mb);
            vq_json_knum(&j, "rss_after_load_mb", r->rss_model_mb);
            vq_json_knum(&j, "cache_share_of_rss_peak",
                         r->rss_peak_mb > 0 ? (r->resident_key_bytes + r->resident_value_bytes + r->index_bytes) / MB / r->rss_peak_mb : 0);
            vq_json_knum(&j, "prefill_s", r->prefill_s);
            vq_json_knum(&j, "decode_s", r->decode_s);
            vq_json_knum(&j, "prefill_tok_s", r->prefill_tok_s);
            vq_json_knum(&j, "decode_tok_s", r->decode_tok_s);
            vq_json_knum(&j, "throughput_tok_s", r->throughput_tok_s);
            vq_json_kstr(&j, "output_preview", r->preview);
            int q = r->quality_positions > 0;
            knum_or_null(&j, "kl_vs_fp16", r->kl_mean, q);
            knum_or_null(&j, "kl_max_vs_fp16", r->kl_max, q);
            knum_or_null(&j, "top1_agreement_vs_fp16", r->top1, q);
            vq_json_kint(&j, "quality_positions", r->quality_positions);
            vq_json_key(&j, "greedy_matches_fp16");
            if (q)
                vq_json_bool(&j, r->greedy_match);
            else
                vq_json_null(&j);
            vq_json_kint(&j, "greedy_prefix_match_tokens", r->greedy_prefix);
        }
        vq_json_end_object(&j);
    }
    vq_json_end_array(&j);
    vq_json_end_object(&j);
    vq_status st = vq_json_finish(&j);
    char err[256] = "";
    if (st == VQ_OK)
        st = vq_file_write_buffer(path, b.data, b.len, err);
    free(b.data);
    return st;
}

/* ------------------------------------------------------------------------ */

static void print_table(const opts *o, const arm_result *res)
{
    printf("\n%-14s %8s %8s %11s %15s %7s %11s %9s %6s %6s\n", "Arm", "tok/s", "Peak MB", "Keys fp16",
           "Keys compressed", "Claim", "Resident KV", "KL", "top-1", "greedy");
    for (int i = 0; i < o->n_arms; i++) {
        const arm_result *r = &res[i];
        if (!r->ok) {
            printf("%-14s failed: %s\n", o->arms[i].name, r->error);
            continue;
        }
        char kl[32] = "-", t1[32] = "-";
        if (r->quality_positions > 0) {
            snprintf(kl, sizeof kl, "%.2e", r->kl_mean);
            snprintf(t1, sizeof t1, "%.3f", r->top1);
        }
        printf("%-14s %8.1f %8.0f %8.3f MB %12.3f MB %6.2fx %8.3f MB %9s %6s %6s\n", o->arms[i].name,
               r->throughput_tok_s, r->rss_peak_mb, r->fp16_key_bytes / MB, r->compressed_key_bytes / MB,
               r->compressed_key_bytes ? (double)r->fp16_key_bytes / (r->compressed_key_bytes + r->index_bytes / 2.0) : 0,
               (r->resident_key_bytes + r->resident_value_bytes) / MB, kl, t1,
               r->quality_positions > 0 ? (r->greedy_match ? "same" : "diff") : "-");
        if (r->quality_positions > 0 && r->kl_mean >= 0.5) /* tune's and check=strict's line */
            printf("%-14s warning: KL %.2f nats >= 0.5: this config breaks the model\n", o->arms[i].name, r->kl_mean);
    }
    printf("claim = fp16_key_bytes / (compressed_key_bytes + index_bytes / 2); tok/s = generated tokens / (prefill + decode) "
           "seconds; Peak MB = the arm process's VmHWM; KL = mean KL(fp16 || arm) in nats per generated "
           "position\n");
}

static int make_dirs(const char *path)
{
    char tmp[1024];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* the model's short name: basename without .gguf */
static void model_short(const char *model, char *buf, size_t cap)
{
    const char *b = strrchr(model, '/');
    b = b ? b + 1 : model;
    snprintf(buf, cap, "%s", b);
    size_t n = strlen(buf);
    if (n > 5 && strcmp(buf + n - 5, ".gguf") == 0)
        buf[n - 5] = 0;
}

int cmd_validate(int argc, char **argv)
{
    opts o = { 0 };
    o.max_tokens = 128;
    o.prompt_repeat = 1;
    o.chat = 1;
    o.prompt = DEFAULT_PROMPT;
    o.out_dir = "figures/validation";
    o.argc = argc;
    o.argv = argv;
    const char *only = NULL;
    int user_arms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--no-chat") == 0) {
            o.chat = 0;
            continue;
        }
        if (strcmp(a, "--no-fork") == 0) {
            o.no_fork = 1;
            continue;
        }
        if (strcmp(a, "--no-quality") == 0) {
            o.no_quality = 1;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("validate", "option %s needs a value (or is unknown)", a);
            return 2;
        }
        const char *v = argv[++i];
        char *end;
        long n = strtol(v, &end, 10);
        int isnum = end != v && !*end;
        if (strcmp(a, "--model") == 0)
            o.model = v;
        else if (strcmp(a, "--max-tokens") == 0 && isnum && n >= 1 && n <= 65536)
            o.max_tokens = (int)n;
        else if (strcmp(a, "--prompt-repeat") == 0 && isnum && n >= 1 && n <= 100000)
            o.prompt_repeat = (int)n;
        else if (strcmp(a, "--threads") == 0 && isnum && n >= 1 && n <= 256)
            o.threads = (int)n;
        else if (strcmp(a, "--prompt") == 0)
            o.prompt = v;
        else if (strcmp(a, "--out") == 0)
            o.out_dir = v;
        else if (strcmp(a, "--calib") == 0)
            o.calib = v;
        else if (strcmp(a, "--calib-text") == 0)
            o.calib_text = v;
        else if (strcmp(a, "--arms") == 0)
            only = v;
        else if (strcmp(a, "--arm") == 0) {
            if (o.n_arms >= MAX_ARMS) {
                cli_error("validate", "at most %d arms", MAX_ARMS);
                return 2;
            }
            if (strncmp(v, "name=", 5) != 0) {
                cli_error("validate", "--arm must start with name=NAME: %s", v);
                return 2;
            }
            size_t k = strcspn(v + 5, " ");
            arm_def *ad = &o.arms[o.n_arms++];
            if (k == 0 || k >= sizeof ad->name || strlen(v + 5 + k) >= sizeof ad->cache) {
                cli_error("validate", "bad --arm: %s", v);
                return 2;
            }
            memcpy(ad->name, v + 5, k);
            ad->name[k] = 0;
            const char *c = v + 5 + k;
            while (*c == ' ')
                c++;
            snprintf(ad->cache, sizeof ad->cache, "%s", *c ? c : "keys=fp16 values=fp16");
            user_arms = 1;
        } else {
            cli_error("validate", "bad option or value: %s %s", a, v);
            usage(stderr);
            return 2;
        }
    }
    if (!o.model) {
        cli_error("validate", "--model is required");
        usage(stderr);
        return 2;
    }
    if (!user_arms && default_arms(&o, only) == 0) {
        cli_error("validate", "--arms selects no default arm: %s", only);
        return 2;
    }
    /* the fp16 arm (if any) goes first: it is the quality reference */
    for (int i = 1; i < o.n_arms; i++)
        if (strcmp(o.arms[i].name, "fp16") == 0) {
            arm_def t = o.arms[i];
            memmove(&o.arms[1], &o.arms[0], (size_t)i * sizeof t);
            o.arms[0] = t;
        }

    char mshort[128], dir[1200], path[1400], calib_path[1400];
    model_short(o.model, mshort, sizeof mshort);
    snprintf(dir, sizeof dir, "%s/%s", o.out_dir, mshort);
    snprintf(path, sizeof path, "%s/results.json", dir);
    if (make_dirs(dir) != 0) {
        cli_error("validate", "cannot create %s: %s", dir, strerror(errno));
        return 1;
    }
    snprintf(calib_path, sizeof calib_path, "%s", o.calib ? o.calib : "");
    if (!o.calib)
        snprintf(calib_path, sizeof calib_path, "%s/calib-vecinfer.vqc", dir);
    for (int i = 0; i < o.n_arms; i++) {
        char *at = strstr(o.arms[i].cache, "@CALIB@");
        if (at) {
            char buf[sizeof o.arms[i].cache];
            if (snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - o.arms[i].cache), o.arms[i].cache,
                         calib_path, at + 7) >= (int)sizeof buf) {
                cli_error("validate", "calibration path too long");
                return 2;
            }
            snprintf(o.arms[i].cache, sizeof o.arms[i].cache, "%s", buf);
        }
    }
    /* the calibration file for arms that use the default one */
    char calib_err[512] = "";
    int calib_failed = 0;
    for (int i = 0; i < o.n_arms; i++) {
        if (strstr(o.arms[i].cache, calib_path) && access(calib_path, R_OK) != 0) {
            fprintf(stderr, "validate: calibrating vecinfer on the model's keys -> %s\n", calib_path);
            if (make_calibration_isolated(&o, "keys=vecinfer:sub_dim=8,bits=8 values=fp16", calib_path, calib_err,
                                          sizeof calib_err)) {
                fprintf(stderr, "validate: calibration failed: %s\n", calib_err);
                calib_failed = 1;
            }
            break;
        }
    }
    (void)calib_failed;
    /* prompt, repeated */
    size_t pl = strlen(o.prompt);
    o.prompt_text = malloc((pl + 1) * (size_t)o.prompt_repeat + 1);
    if (!o.prompt_text)
        return 1;
    o.prompt_text[0] = 0;
    for (int r = 0; r < o.prompt_repeat; r++) {
        memcpy(o.prompt_text + r * (pl + 1), o.prompt, pl);
        o.prompt_text[r * (pl + 1) + pl] = r + 1 < o.prompt_repeat ? '\n' : 0;
    }
    remove_stale_ref_logits(dir);
    if (snprintf(g_ref_logits_path, sizeof g_ref_logits_path, "%s/.ref-logits.%d.tmp", dir,
                 (int)getpid()) >= (int)sizeof g_ref_logits_path) {
        cli_error("validate", "output path too long");
        return 2;
    }

    char date[32], commit[80];
    vq_utc_now_iso8601(date, sizeof date);
    git_commit(commit, sizeof commit);
    arm_result *res = calloc((size_t)o.n_arms, sizeof *res);
    if (!res) {
        free(o.prompt_text);
        return 1;
    }
    int n_failed = 0;
    double t_all = vq_now_seconds();
    for (int i = 0; i < o.n_arms; i++) {
        int is_ref = i == 0 && strcmp(o.arms[0].name, "fp16") == 0 && !o.no_quality;
        fprintf(stderr, "validate: arm %d/%d %s (%s), %.0fs so far\n", i + 1, o.n_arms, o.arms[i].name,
                o.arms[i].cache, vq_now_seconds() - t_all);
        int32_t *gen = NULL;
        run_arm_isolated(&o, &o.arms[i], is_ref, &res[i], &gen);
        if (is_ref && res[i].ok && gen) {
            g_ref_tokens = gen;
            g_ref_n = res[i].n_generated;
        } else {
            if (gen == g_ref_tokens) { /* --no-fork: a failed reference arm */
                g_ref_tokens = NULL;
                g_ref_n = 0;
            }
            free(gen);
        }
        if (!res[i].ok) {
            n_failed++;
            fprintf(stderr, "validate: arm %s failed: %s\n", o.arms[i].name, res[i].error);
        }
        /* results so far, atomically (a later crash keeps them) */
        if (write_results(&o, path, res, i + 1, date, commit) != VQ_OK)
            cli_error("validate", "cannot write %s: %s", path, vq_last_error());
    }
    unlink(g_ref_logits_path);
    print_table(&o, res);
    printf("results: %s (%d arms, %d failed)\n", path, o.n_arms, n_failed);
    free(g_ref_tokens);
    free(res);
    free(o.prompt_text);
    return n_failed == o.n_arms ? 1 : 0;
}
