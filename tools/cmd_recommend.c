/* cmd_recommend.c -- `veloxquant recommend --model MODEL --ram-mb N --ctx N
 * --goal everyday|max-compression|quality|max-context|constant-memory|speed`:
 * which KV-cache config to use, and why, from the measured quality table.
 *
 * The table is figures/quality/quality.json (schema veloxquant.quality/1,
 * written by scripts/report.py from the `ppl`, `needle` and `validate`
 * results; --table FILE reads another). Per model it holds base_mb (the
 * fp16 arm's peak RSS minus its K/V: weights and runtime) and, per method,
 * the cache config, bytes (kv_bytes_per_token_full/_window, window,
 * kv_fixed_bytes), ppl/dppl/kl/top1 against fp16 and needle accuracy.
 *
 * K/V bytes at context C: full * C + window_bpt * min(C, window) + fixed
 * (evicting methods hold at most their budget). RAM for K/V = --ram-mb -
 * base_mb. Quality classes (relative dPPL = dppl / ppl_fp16):
 *   good  <= 2 %     (the published q4_0-with-rotation range is 0.2-1 %)
 *   fair  <= 10 %
 *   poor  otherwise, or KL >= 0.5 nats (the model breaks) (reported,
 *         never recommended except when asked for the smallest cache, and
 *         then with a warning).
 * Goals:
 *   everyday         no calibration, no eviction, quality good or fair:
 *                    the smallest cache (ties: lower KL); when that one
 *                    is fair and a good one is at most GOOD_PREMIUM (10 %)
 *                    larger, the (smallest such) good one
 *   max-compression  no eviction, quality good or fair: the smallest cache
 *                    (calibrated methods allowed)
 *   quality          the lowest KL among methods that compress >= 2x
 *   max-context      no eviction, quality good or fair: the most tokens
 *                    that fit in the RAM
 *   constant-memory  an evicting method: memory stops growing
 *   speed            no calibration, no eviction, quality good or fair,
 *                    measured decoding faster than the fp16 cache
 *                    (decode_vs_fp16 > 1: `bench e2e` on this model, at
 *                    decode_ctx tokens): the fastest (ties within
 *                    SIZE_TIE: the smaller cache)
 * Methods whose cache does not fit at --ctx are skipped (not for
 * constant-memory, which fits by construction when its budget fits).
 * "Smallest" compares K/V bytes at --ctx with a tolerance: caches within
 * SIZE_TIE (2 %) of each other count as the same size and the lower KL
 * wins, so a config without attention sinks (a few fixed tokens less) does
 * not beat the same codecs with sinks at several times its KL. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "util/json_read.h"
#include "eval_common.h"
#include "veloxquant.h"

#define MB (1024.0 * 1024.0)
#define GOOD_REL_DPPL 0.02
#define FAIR_REL_DPPL 0.10
#define QUALITY_MIN_COMPRESSION 2.0
#define SIZE_TIE 0.02
#define GOOD_PREMIUM 0.10

typedef struct {
    const cli_json_node *n;
    const char *name, *cache;
    double bpe, full, win, window, fixed, dppl, kl, top1, needle;
    int calibrated, evicts;
    double evict_budget; /* tokens held by an evicting method */
    double speed, speed_ctx; /* decode rate / the fp16 cache's (NAN: not measured), at that context */
    double kv_mb, max_ctx, rel;
    int fits, cls; /* 0 good, 1 fair, 2 poor */
} method;

static double kv_bytes(const method *m, double ctx)
{
    double held = m->evicts && m->evict_budget > 0 && m->evict_budget < ctx ? m->evict_budget : ctx;
    double wheld = m->window > 0 && m->window < held ? m->window : held;
    return m->full * held + m->win * wheld + m->fixed;
}

static const char *cls_name(int c) { return c == 0 ? "good" : c == 1 ? "fair" : "poor"; }

int cmd_recommend(int argc, char **argv)
{
    const char *model = NULL, *goal = NULL, *table = "figures/quality/quality.json";
    double ram = 0, ctx = 0;
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or name (the table's model)", 0, 0, NULL, CLI_REQUIRED },
        { "ram-mb", CLI_NUM, &ram, "N", "memory for the KV cache, MB", 0, 1e9, NULL,
          CLI_REQUIRED | CLI_ABOVE_LO },
        { "ctx", CLI_NUM, &ctx, "N", "context length wanted, tokens", 1, 1e8, NULL, CLI_REQUIRED },
        { "goal", CLI_STR, &goal, "GOAL", "everyday | max-compression | quality | max-context | constant-memory | speed", 0, 0,
          NULL, CLI_REQUIRED },
        CLI_OPT_STR("table", &table, "FILE", "quality table (default figures/quality/quality.json)"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "recommend", "--model MODEL --ram-mb N --ctx N --goal GOAL [--table FILE]",
                              "Which cache config to use, from the measured quality table.", opts, NULL, NULL, 0,
                              NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    ctx = floor(ctx);
    static const char *const goals[] = { "everyday", "max-compression", "quality", "max-context", "constant-memory",
                                         "speed" };
    int g = -1;
    for (int i = 0; i < (int)(sizeof goals / sizeof *goals); i++)
        if (strcmp(goal, goals[i]) == 0)
            g = i;
    if (g < 0)
        return cli_usage_error(&cmd, "bad value for --goal: '%s' (want everyday, max-compression, quality, "
                                     "max-context, constant-memory or speed)", goal);
    size_t len = 0;
    char *text = eval_read_text(table, &len);
    if (!text) {
        cli_error("recommend", "cannot read %s (made by scripts/report.py from the quality runs)", table);
        return 1;
    }
    cli_json_node *root = NULL;
    method *ms = NULL;
    int rc = 1;
    char jerr[CLI_JSON_ERRLEN] = "";
    if (cli_json_parse(text, len, &root, jerr) != VQ_OK) {
        cli_error("recommend", "%s: %s", table, jerr);
        goto out;
    }
    /* the model: by name, basename without .gguf */
    char want[128];
    {
        const char *b = strrchr(model, '/');
        snprintf(want, sizeof want, "%s", b ? b + 1 : model);
        size_t n = strlen(want);
        if (n > 5 && strcmp(want + n - 5, ".gguf") == 0)
            want[n - 5] = 0;
    }
    const cli_json_node *models = cli_json_get(root, "models"), *mod = NULL;
    for (size_t i = 0; models && models->type == CLI_JSON_ARRAY && i < models->n; i++)
        if (strcmp(cli_json_get_str(&models->children[i], "model", ""), want) == 0)
            mod = &models->children[i];
    if (!mod) {
        cli_error("recommend", "%s has no measurements for '%s'; measured:", table, want);
        for (size_t i = 0; models && models->type == CLI_JSON_ARRAY && i < models->n; i++)
            fprintf(stderr, "  %s\n", cli_json_get_str(&models->children[i], "model", "?"));
        goto out;
    }
    const cli_json_node *list = cli_json_get(mod, "methods");
    double base_mb = cli_json_get_num(mod, "base_mb", NAN), ppl_fp16 = cli_json_get_num(mod, "ppl_fp16", NAN);
    if (!list || list->type != CLI_JSON_ARRAY || list->n == 0 || !isfinite(base_mb) || !(ppl_fp16 > 0)) {
        cli_error("recommend", "%s: model '%s' lacks methods, base_mb or ppl_fp16", table, want);
        goto out;
    }
    size_t nm = list->n;
    ms = calloc(nm, sizeof *ms);
    if (!ms)
        goto out;
    double budget = (ram - base_mb) * MB;
    double fp16_kv = 0;
    for (size_t i = 0; i < nm; i++) {
        method *m = &ms[i];
        const cli_json_node *o = &list->children[i];
        m->n = o;
        m->name = cli_json_get_str(o, "name", "?");
        m->cache = cli_json_get_str(o, "cache", "");
        m->bpe = cli_json_get_num(o, "bits_per_element", NAN);
        m->full = cli_json_get_num(o, "kv_bytes_per_token_full", NAN);
        m->win = cli_json_get_num(o, "kv_bytes_per_token_window", 0);
        m->window = cli_json_get_num(o, "window", 0);
        m->fixed = cli_json_get_num(o, "kv_fixed_bytes", 0);
        m->dppl = cli_json_get_num(o, "dppl", NAN);
        m->kl = cli_json_get_num(o, "kl", NAN);
        m->top1 = cli_json_get_num(o, "top1", NAN);
        m->needle = cli_json_get_num(o, "needle", NAN);
        m->calibrated = cli_json_get_num(o, "calibrated", 0) != 0;
        m->evicts = cli_json_get_num(o, "evicts", 0) != 0;
        m->evict_budget = cli_json_get_num(o, "evict_budget", 0);
        m->speed = cli_json_get_num(o, "decode_vs_fp16", NAN);
        m->speed_ctx = cli_json_get_num(o, "decode_ctx", NAN);
        if (!isfinite(m->full) || !isfinite(m->dppl) || m->full < 0) {
            cli_error("recommend", "%s: method %zu of '%s' lacks kv_bytes_per_token_full or dppl", table, i, want);
            goto out;
        }
        m->kv_mb = kv_bytes(m, ctx) / MB;
        m->fits = kv_bytes(m, ctx) <= budget;
        /* a method measured in another run (other chunks) carries its own baseline */
        m->rel = m->dppl / cli_json_get_num(o, "ppl_fp16", ppl_fp16);
        m->cls = m->rel <= GOOD_REL_DPPL ? 0 : m->rel <= FAIR_REL_DPPL ? 1 : 2;
        if (m->kl >= 0.5) /* KL >= 0.5 nats breaks the model (tune, check=strict): never good or fair */
            m->cls = 2;
        double denom = m->evicts ? 0 : m->full;
        double room = budget - m->fixed - m->win * m->window;
        m->max_ctx = m->evicts ? INFINITY : denom > 0 && room > 0 ? room / denom : 0;
        if (strstr(m->cache, "keys=fp16 values=fp16") && !m->evicts)
            fp16_kv = kv_bytes(m, ctx);
    }
    /* choose */
    int best = -1;
    for (size_t i = 0; i < nm; i++) {
        const method *m = &ms[i];
        int ok;
        switch (g) {
        case 0: ok = !m->calibrated && !m->evicts && m->cls <= 1 && m->fits; break;
        case 1: ok = !m->evicts && m->cls <= 1 && m->fits; break;
        case 2: ok = !m->evicts && m->fits && (fp16_kv <= 0 || fp16_kv / kv_bytes(m, ctx) >= QUALITY_MIN_COMPRESSION); break;
        case 3: ok = !m->evicts && m->cls <= 1 && m->max_ctx >= 1; break;
        case 4: ok = m->evicts && m->fits; break;
        default: ok = !m->calibrated && !m->evicts && m->cls <= 1 && m->fits && m->speed > 1.0; break;
        }
        if (!ok)
            continue;
        if (best < 0) {
            best = (int)i;
            continue;
        }
        const method *b = &ms[best];
        int better;
        switch (g) {
        case 2: better = m->kl < b->kl; break;
        case 3: better = m->max_ctx > b->max_ctx; break;
        case 4: better = m->kl < b->kl; break;
        case 5: {
            double tie = SIZE_TIE * fmin(m->speed, b->speed);
            better = m->speed > b->speed + tie || (fabs(m->speed - b->speed) <= tie && m->kv_mb < b->kv_mb);
            break;
        }
        default: {
            double tie = SIZE_TIE * fmin(m->kv_mb, b->kv_mb) + 1e-9;
            better = m->kv_mb < b->kv_mb - tie || (fabs(m->kv_mb - b->kv_mb) <= tie && m->kl < b->kl);
            break;
        }
        }
        if (better)
            best = (int)i;
    }
    /* everyday: a good method at most GOOD_PREMIUM larger than the fair
     * pick replaces it (the smallest such; ties: lower KL) */
    if (g == 0 && best >= 0 && ms[best].cls == 1) {
        const double cap = ms[best].kv_mb * (1.0 + GOOD_PREMIUM) + 1e-9;
        int good = -1;
        for (size_t i = 0; i < nm; i++) {
            const method *m = &ms[i];
            if (m->calibrated || m->evicts || m->cls != 0 || !m->fits || m->kv_mb > cap)
                continue;
            if (good < 0 || m->kv_mb < ms[good].kv_mb ||
                (m->kv_mb == ms[good].kv_mb && m->kl < ms[good].kl))
                good = (int)i;
        }
        if (good >= 0)
            best = good;
    }
    printf("model %s, %.0f MB RAM (%.0f MB for weights and runtime, measured: %.0f MB left for K/V), context %.0f, "
           "goal %s\n\n",
           want, ram, base_mb, budget / MB, ctx, goals[g]);
    if (best < 0) {
        printf("no measured method meets this goal within the RAM:\n");
        if (budget <= 0)
            printf("  the weights and runtime alone need %.0f MB\n", base_mb);
        else if (g == 4)
            printf("  no evicting method was measured, or its budget does not fit\n");
        else if (g == 5)
            printf("  no method of good or fair quality that fits was measured decoding faster than the fp16 "
                   "cache on this model (veloxquant bench e2e; scripts/report.py takes figures/bench/e2e-*.json)\n");
        else
            printf("  every method whose quality is good or fair needs more than %.0f MB at %.0f tokens; "
                   "try --goal constant-memory or a shorter --ctx\n",
                   budget / MB, ctx);
        rc = 3;
    } else {
        const method *b = &ms[best];
        printf("use: %s\n  config:  %s\n  command: veloxquant generate --model %s --cache \"%s\" ...\n", b->name,
               b->cache, model, b->cache);
        printf("why: %.2f bits/element; K/V %.1f MB at %.0f tokens (%s %.0f MB); measured dPPL %+.3f (%.1f%%, %s), "
               "KL %.3g nats, top-1 agreement %.3f vs fp16",
               b->bpe, b->kv_mb, ctx, b->fits ? "fits in" : "over", budget / MB, b->dppl, 100 * b->rel,
               cls_name(b->cls), b->kl, b->top1);
        if (isfinite(b->needle))
            printf(", passkey %.0f%%", 100 * b->needle);
        printf(".\n");
        if (g == 3)
            printf("     holds about %.0f tokens in %.0f MB.\n", b->max_ctx, budget / MB);
        if (g == 5)
            printf("     decodes at %.2fx the fp16 cache's rate after %.0f tokens (veloxquant bench e2e).\n", b->speed,
                   b->speed_ctx);
        if (g == 4)
            printf("     evicts: tokens beyond its budget are dropped, so recall of old context is lost.\n");
        if (b->calibrated)
            printf("     needs a calibration file for this model (veloxquant calibrate / validate makes one).\n");
        rc = 0;
    }
    printf("\n%-18s %8s %10s %5s %12s %9s %6s %9s %6s %6s\n", "method", "bits/el", "K/V MB", "fits", "max tokens",
           "dPPL", "class", "KL", "top-1", "needle");
    for (size_t i = 0; i < nm; i++) {
        const method *m = &ms[i];
        char mx[32], nd[16] = "-";
        if (isinf(m->max_ctx))
            snprintf(mx, sizeof mx, "constant");
        else
            snprintf(mx, sizeof mx, "%.0f", m->max_ctx);
        if (isfinite(m->needle))
            snprintf(nd, sizeof nd, "%.2f", m->needle);
        printf("%-18s %8.2f %10.1f %5s %12s %+9.3f %6s %9.3g %6.3f %6s%s\n", m->name, m->bpe, m->kv_mb,
               m->fits ? "yes" : "no", mx, m->dppl, cls_name(m->cls), m->kl, m->top1, nd,
               (int)i == best ? "  <-" : "");
    }
    printf("(dPPL, KL, top-1: %s; class: good <= %.0f%%, fair <= %.0f%% relative dPPL)\n",
           cli_json_get_str(mod, "quality_source", "see the table's source"), 100 * GOOD_REL_DPPL, 100 * FAIR_REL_DPPL);
out:
    free(ms);
    cli_json_node_free(root);
    free(text);
    return rc;
}
