/* cache_flags.c -- see cache_flags.h. */
#include "cache_flags.h"

#include <string.h>

#include "cli.h"

int cli_cache_flag(cli_cache_flags *f, const char *opt, const char *val)
{
    const char **slot = NULL;
    if (strcmp(opt, "--cache") == 0)
        slot = &f->cache_text;
    else if (strcmp(opt, "--keys") == 0)
        slot = &f->keys;
    else if (strcmp(opt, "--values") == 0)
        slot = &f->values;
    else if (strcmp(opt, "--residual") == 0)
        slot = &f->residual;
    else if (strcmp(opt, "--evict") == 0)
        slot = &f->evict;
    else if (strcmp(opt, "--cross") == 0)
        slot = &f->cross;
    if (!slot)
        return 0;
    if (*slot && !f->repeated)
        f->repeated = opt;
    *slot = val;
    f->any = 1;
    return 1;
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
    if (!f->any)
        return 1;
    if (f->repeated) {
        cli_error(cmd, "option %s given twice", f->repeated);
        return 0;
    }
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

void cli_cache_usage(FILE *out)
{
    fprintf(out,
            "KV cache (packed codes; without these flags the plain float32 K/V buffer is used):\n"
            "  --cache \"CONFIG\"      full config: keys=SPEC values=SPEC residual=N evict=SPEC\n"
            "                        cross=SPEC page=N bits=B0,B1,.. keep_first=N keep_last=N keep_spec=SPEC\n"
            "  --keys SPEC           key codec, e.g. turboquant_rvq:bits=4, q8_0, q4_0:rot=1, fp16\n"
            "  --values SPEC         value codec, e.g. kivi:bits=4\n"
            "  --residual N          newest N tokens kept fp16\n"
            "  --evict SPEC          streaming_llm:sinks=4,window=W | h2o:budget=B | snapkv:budget=B |\n"
            "                        tova:budget=B | pyramidkv:budget=B\n"
            "  --cross SPEC          minicache | xkv | xquant (cross-layer)\n"
            "  (vecinfer/spectral need calib=FILE from `veloxquant calibrate`)\n");
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
