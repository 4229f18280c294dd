/* cache_flags.c -- see cache_flags.h. */
#include "cache_flags.h"

#include <string.h>

#include "cli.h"

int cli_cache_given(const cli_cache_flags *f)
{
    return f->cache_text || f->keys || f->values || f->residual || f->evict || f->cross;
}

int cli_cache_text(const cli_cache_flags *f, char *buf, size_t cap)
{
    const char *names[] = { "keys", "values", "residual", "evict", "cross" };
    const char *vals[] = { f->keys, f->values, f->residual, f->evict, f->cross };
    size_t o = 0;
    buf[0] = 0;
    if (f->cache_text) {
        int k = snprintf(buf, cap, "%s", f->cache_text);
        if (k < 0 || (size_t)k >= cap)
            return 0;
        o = (size_t)k;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!vals[i])
            continue;
        int k = snprintf(buf + o, cap - o, "%s%s=%s", o ? " " : "", names[i], vals[i]);
        if (k < 0 || (size_t)k >= cap - o)
            return 0;
        o += (size_t)k;
    }
    return 1;
}

int cli_cache_config(const cli_cache_flags *f, const char *cmd, vq_cache_config **out)
{
    *out = NULL;
    if (!cli_cache_given(f))
        return 1;
    char text[4096];
    if (!cli_cache_text(f, text, sizeof text)) {
        cli_error(cmd, "cache config too long");
        return 0;
    }
    if (vq_cache_config_parse(text, out) != VQ_OK) {
        cli_error(cmd, "cache config \"%s\": %s", text, vq_last_error());
        return 0;
    }
    return 1;
}

const char *cli_config_add(void *list, const char *config)
{
    cli_config_list *l = list;
    static char want[64];
    if (l->n >= l->max) {
        snprintf(want, sizeof want, "no more than %d configs in all", l->max);
        return want;
    }
    l->text[l->n++] = config;
    return NULL;
}

int cli_config_add_flags(cli_config_list *l, const cli_cache_flags *f, const char *cmd)
{
    if (!cli_cache_given(f))
        return 1;
    if (l->n >= l->max || !cli_cache_text(f, l->flags_text, sizeof l->flags_text)) {
        cli_error(cmd, "too many configs, or cache flags too long");
        return 0;
    }
    l->text[l->n++] = l->flags_text;
    return 1;
}

void cli_cache_stats_line(FILE *out, const vq_cache *c)
{
    vq_cache_usage u;
    if (vq_cache_stats(c, -1, &u) != VQ_OK) {
        fprintf(out, "KV cache: stats unavailable (%s)", vq_last_error());
        return;
    }
    /* ratios include the slot index; "total" adds idle pool pages and the
     * cache's buffers */
    unsigned long long acc = u.keys.accounted_bytes + u.values.accounted_bytes + u.index_bytes;
    unsigned long long res = u.keys.resident_bytes + u.values.resident_bytes + u.index_bytes;
    unsigned long long f16 = u.keys.fp16_bytes + u.values.fp16_bytes;
    unsigned long long sh = u.keys.shared_bytes + u.values.shared_bytes;
    fprintf(out,
            "KV cache: %llu tokens held (all layers and heads), accounted %llu B, resident %llu B, "
            "fp16 %llu B, ratio vs fp16 %.2fx accounted / %.2fx resident (slot index %llu B included), "
            "shared state %llu B, total held %llu B",
            (unsigned long long)u.keys.tokens, acc, res, f16, acc ? (double)f16 / (double)acc : 0.0,
            res ? (double)f16 / (double)res : 0.0, (unsigned long long)u.index_bytes, sh,
            (unsigned long long)u.total_bytes);
}
