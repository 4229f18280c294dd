/* validate_arm.c -- one arm of `veloxquant validate` in this process (see
 * validate.h): the model generates greedily with its K/V in the arm's cache;
 * bytes (codec accounting and the cache allocator), the resident bound,
 * speed, peak memory, an output preview, then the quality pass. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_common.h"
#include "util/clock.h"
#include "validate.h"

int validate_fail(validate_result *r, const char *what, const char *msg)
{
    snprintf(r->error, sizeof r->error, "%s: %s", what, msg && *msg ? msg : "failed");
    r->ok = 0;
    return 1;
}

/* page=N from canonical config text, 256 if absent */
static long config_page(const char *canon)
{
    const char *p = strstr(canon, "page=");
    long v = p ? strtol(p + 5, NULL, 10) : 256; /* auto: 0 -> 256, a last page grows by at most that */
    return v > 0 ? v : 256;
}

static void fill_stats(validate_result *r, vq_cache *cache)
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
static void fill_formula(validate_result *r, vq_ctx *ctx)
{
    uint64_t t = (uint64_t)vq_ctx_n_tokens(ctx);
    uint64_t b = (uint64_t)r->n_layers * (uint64_t)r->n_kv_heads * (uint64_t)r->head_dim * t * 2;
    r->fp16_key_bytes = r->fp16_value_bytes = b;
    r->compressed_key_bytes = r->compressed_value_bytes = b;
    r->resident_key_bytes = r->resident_value_bytes = vq_ctx_kv_bytes(ctx) / 2;
    r->resident_bound_bytes = vq_ctx_kv_bytes(ctx);
    r->tokens_held = t * (uint64_t)r->n_kv_heads * (uint64_t)r->n_layers;
}

/* Run one arm; fills r and *gen (malloc'd, r->n_generated ids).
 * is_ref: write the reference logits file while decoding. */
int validate_run_arm(const validate_opts *o, const validate_arm *a, int is_ref, validate_result *r, int32_t **gen)
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
            validate_fail(r, "cache config", vq_last_error());
            goto done;
        }
        snprintf(r->cache_canon, sizeof r->cache_canon, "%s", vq_cache_config_str(cfg));
        vq_cache_config_free(cfg);
    }
    if (vq_model_load(o->model, &m) != VQ_OK) {
        validate_fail(r, "model", vq_last_error());
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
            validate_fail(r, "chat template", vq_last_error());
            goto done;
        }
        ptxt = templated;
    }
    if (vq_model_tokenize(m, ptxt, strlen(ptxt), 1, o->chat, &prompt, &n_prompt) != VQ_OK) {
        validate_fail(r, "tokenize", vq_last_error());
        goto done;
    }
    r->n_prompt = (int)n_prompt;
    int cap = (int)n_prompt + o->max_tokens;
    vq_status st;
    st = eval_ctx_open(m, a->cache, cap, o->threads, &ctx, &cache);
    if (st != VQ_OK) {
        validate_fail(r, "context", vq_last_error());
        goto done;
    }
    r->rss_model_mb = (double)cli_current_rss_bytes() / VALIDATE_MB;
    logits = malloc((size_t)info.n_vocab * sizeof *logits);
    out = malloc((size_t)(o->max_tokens > 0 ? o->max_tokens : 1) * sizeof *out);
    if (!logits || !out) {
        validate_fail(r, "memory", "out of memory");
        goto done;
    }
    if (is_ref) {
        reff = fopen(o->ref->logits_path, "wb");
        if (!reff) {
            validate_fail(r, "reference logits", strerror(errno));
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
    double t0 = cli_now_seconds();
    for (size_t p0 = 0; p0 < n_prompt; p0 += 256) {
        int cnt = (int)(n_prompt - p0 < 256 ? n_prompt - p0 : 256);
        if (vq_ctx_forward(ctx, prompt + p0, cnt, logits, VQ_LOGITS_LAST) != VQ_OK) {
            validate_fail(r, "prefill", vq_ctx_error(ctx));
            goto done;
        }
        eval_progress_update(&pp, (double)(p0 + (size_t)cnt), (double)n_prompt);
    }
    r->prefill_s = cli_now_seconds() - t0;
    /* greedy decode, exactly max_tokens tokens */
    eval_progress pr;
    char label[96];
    snprintf(label, sizeof label, "  %s decode", a->name);
    eval_progress_start(&pr, label, "tok");
    double dec = 0;
    int eog_at = -1;
    for (int i = 0; i < o->max_tokens; i++) {
        double s0 = cli_now_seconds();
        int32_t t = (int32_t)eval_argmax(logits, info.n_vocab);
        double s1 = cli_now_seconds();
        if (reff && fwrite(logits, sizeof *logits, (size_t)info.n_vocab, reff) != (size_t)info.n_vocab) {
            validate_fail(r, "reference logits", "write failed");
            goto done;
        }
        out[i] = t;
        r->n_generated = i + 1;
        if (eog_at < 0 && vq_model_is_eog(m, t))
            eog_at = i;
        double s2 = cli_now_seconds();
        if (i + 1 < o->max_tokens && vq_ctx_forward(ctx, &t, 1, logits, VQ_LOGITS_LAST) != VQ_OK) {
            validate_fail(r, "decode", vq_ctx_error(ctx));
            goto done;
        }
        dec += (s1 - s0) + (cli_now_seconds() - s2);
        eval_progress_update(&pr, i + 1, o->max_tokens);
    }
    r->decode_s = dec;
    r->rss_peak_mb = (double)cli_peak_rss_bytes() / VALIDATE_MB; /* before the quality pass */
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
            validate_fail(r, "reference logits", "close failed");
            goto done;
        }
        reff = NULL;
        o->ref->tokens = out;
        o->ref->n = r->n_generated;
    }
    /* preview */
    if (vq_model_detokenize(m, out, (size_t)(eog_at >= 0 ? eog_at : r->n_generated), &text) == VQ_OK) {
        size_t n = strlen(text), k = n < VALIDATE_PREVIEW_CHARS ? n : VALIDATE_PREVIEW_CHARS;
        while (k < n && ((unsigned char)text[k] & 0xC0) == 0x80)
            k++; /* do not cut a UTF-8 sequence */
        memcpy(r->preview, text, k);
        r->preview[k] = 0;
    }
    /* quality against the reference */
    if (o->ref->tokens && o->ref->n > 0 && !o->no_quality) {
        int pre = 0;
        while (pre < o->ref->n && pre < r->n_generated && out[pre] == o->ref->tokens[pre])
            pre++;
        r->greedy_prefix = pre;
        r->greedy_match = pre == o->ref->n && pre == r->n_generated;
        if (validate_quality_pass(o, ctx, prompt, (int)n_prompt, r, logits, info.n_vocab))
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
    if (o->ref->tokens == *gen && !is_ref)
        o->ref->tokens = NULL;
    free(out);
    free(text);
    free(logits);
    free(prompt);
    free(templated);
    eval_ctx_close(ctx, cache);
    vq_model_free(m);
    return rc;
}
