/* config.c -- the cache config text form (grammar in veloxquant.h, "KV
 * cache" section): parse, canonical text, per-layer codec specs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"

#define MAX_FIELD_LEN 8192

static const char *const FIELDS[] = { "keys", "values", "residual", "evict", "cross", "page",
                                      "bits", "keep_first", "keep_last", "keep_spec", "kbits", "vbits", "sinks", "prerope", "check", "vdrop",
                                      NULL };

/* the method of a codec spec must be registered */
static vq_status check_codec_spec(const char *field, const char *text, char *buf, size_t cap)
{
    vq_spec sp;
    char err[VQ_ERRLEN];
    if (vq_spec_parse(text, &sp, err) != VQ_OK)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: %s", field, err);
    int found = 0;
    for (int i = 0; vq_codec_method(i, NULL); i++)
        if (strcmp(vq_codec_method(i, NULL), sp.name) == 0)
            found = 1;
    if (!found)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: unknown codec method '%s'", field, sp.name);
    if (strlen(text) >= cap)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: spec too long", field);
    snprintf(buf, cap, "%s", text);
    return VQ_OK;
}

/* a fraction in [lo, hi] */
static vq_status parse_frac(const char *field, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end != '\0' || !(x == x))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s='%s' is not a number", field, v);
    if (x < lo || x > hi)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s=%g out of range [%g, %g]", field, x, lo, hi);
    *out = x;
    return VQ_OK;
}

static vq_status parse_long(const char *field, const char *v, long lo, long hi, long *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0')
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s='%s' is not an integer", field, v);
    if (x < lo || x > hi)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s=%ld out of range [%ld, %ld]", field, x, lo, hi);
    *out = x;
    return VQ_OK;
}

/* a per-layer list "B0,B1,..." (bits, kbits, vbits) into *arr / *n_out */
static vq_status parse_bits(const char *field, const char *v, int **arr, int *n_out)
{
    size_t n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ',';
    if (n > VQ_MAX_LAYERS)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: more than %d entries", field, VQ_MAX_LAYERS);
    *arr = calloc(n, sizeof **arr);
    if (!*arr)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache config: out of memory");
    const char *p = v;
    for (size_t i = 0; i < n; i++) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0'))
            return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: entry %zu is not an integer", field, i);
        if (x < 1 || x > 16)
            return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: entry %zu = %ld out of range [1, 16]", field, i,
                           x);
        (*arr)[i] = (int)x;
        p = *end ? end + 1 : end;
    }
    *n_out = (int)n;
    return VQ_OK;
}

static size_t put_list(char *buf, size_t cap, const char *field, const int *a, int n)
{
    size_t o = (size_t)snprintf(buf, cap, " %s=", field);
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%d", i ? "," : "", a[i]);
    return o < cap ? o : cap - 1;
}

static vq_status build_text(vq_cache_config *cfg)
{
    size_t cap = 6 * VQ_SPEC_MAX_LEN + 200 + (size_t)(cfg->n_bits + cfg->n_kbits + cfg->n_vbits) * 4;
    free(cfg->text);
    cfg->text = malloc(cap);
    if (!cfg->text)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache config: out of memory");
    char page[24] = "auto";
    if (cfg->page)
        snprintf(page, sizeof page, "%ld", cfg->page);
    size_t o = (size_t)snprintf(cfg->text, cap, "keys=%s values=%s residual=%ld evict=%s cross=%s page=%s",
                                cfg->keys, cfg->values, cfg->residual, cfg->evict, cfg->cross, page);
    if (cfg->n_bits)
        o += put_list(cfg->text + o, cap - o, "bits", cfg->bits, cfg->n_bits);
    if (cfg->n_kbits)
        o += put_list(cfg->text + o, cap - o, "kbits", cfg->kbits, cfg->n_kbits);
    if (cfg->n_vbits)
        o += put_list(cfg->text + o, cap - o, "vbits", cfg->vbits, cfg->n_vbits);
    if (cfg->sinks)
        o += (size_t)snprintf(cfg->text + o, cap - o, " sinks=%ld", cfg->sinks);
    if (cfg->prerope)
        o += (size_t)snprintf(cfg->text + o, cap - o, " prerope=%ld", cfg->prerope);
    if (cfg->check)
        o += (size_t)snprintf(cfg->text + o, cap - o, " check=%s", cfg->check == 2 ? "strict" : "warn");
    if (cfg->vdrop > 0.0) { /* the shortest text that reads back as the same double */
        char num[32];
        snprintf(num, sizeof num, "%g", cfg->vdrop);
        if (strtod(num, NULL) != cfg->vdrop)
            snprintf(num, sizeof num, "%.17g", cfg->vdrop);
        o += (size_t)snprintf(cfg->text + o, cap - o, " vdrop=%s", num);
    }
    if (cfg->keep_first || cfg->keep_last)
        snprintf(cfg->text + o, cap - o, " keep_first=%ld keep_last=%ld keep_spec=%s", cfg->keep_first,
                 cfg->keep_last, cfg->keep_spec);
    return VQ_OK;
}

static vq_status apply_field(vq_cache_config *cfg, const char *key, const char *val)
{
    char canon[VQ_SPEC_MAX_LEN];
    if (val[0] == '\0')
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: %s: empty value", key);
    if (strcmp(key, "keys") == 0)
        return check_codec_spec(key, val, cfg->keys, sizeof cfg->keys);
    if (strcmp(key, "values") == 0)
        return check_codec_spec(key, val, cfg->values, sizeof cfg->values);
    if (strcmp(key, "keep_spec") == 0)
        return check_codec_spec(key, val, cfg->keep_spec, sizeof cfg->keep_spec);
    if (strcmp(key, "residual") == 0)
        return parse_long(key, val, 0, 1L << 20, &cfg->residual);
    if (strcmp(key, "page") == 0) { /* auto: 0 (store.c setup_layer chooses) */
        if (strcmp(val, "auto") == 0) {
            cfg->page = 0;
            return VQ_OK;
        }
        return parse_long(key, val, 1, 1L << 16, &cfg->page);
    }
    if (strcmp(key, "sinks") == 0) /* cache/sinks.h */
        return parse_long(key, val, 0, 4096, &cfg->sinks);
    if (strcmp(key, "vdrop") == 0) /* attend.c: value blocks of negligible weight */
        return parse_frac(key, val, 0.0, 0.25, &cfg->vdrop);
    if (strcmp(key, "prerope") == 0) /* cache/prerope.h */
        return parse_long(key, val, 0, 2, &cfg->prerope);
    if (strcmp(key, "check") == 0) { /* model/cache_check.h */
        static const char *const CHECKS[] = { "none", "warn", "strict" };
        for (int i = 0; i < 3; i++)
            if (strcmp(val, CHECKS[i]) == 0) {
                cfg->check = i;
                return VQ_OK;
            }
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: check='%s' is not none, warn or strict", val);
    }
    if (strcmp(key, "keep_first") == 0)
        return parse_long(key, val, 0, VQ_MAX_LAYERS, &cfg->keep_first);
    if (strcmp(key, "keep_last") == 0)
        return parse_long(key, val, 0, VQ_MAX_LAYERS, &cfg->keep_last);
    if (strcmp(key, "bits") == 0)
        return parse_bits(key, val, &cfg->bits, &cfg->n_bits);
    if (strcmp(key, "kbits") == 0)
        return parse_bits(key, val, &cfg->kbits, &cfg->n_kbits);
    if (strcmp(key, "vbits") == 0)
        return parse_bits(key, val, &cfg->vbits, &cfg->n_vbits);
    if (strcmp(key, "evict") == 0) {
        vq_evict_params ev;
        char err[VQ_ERRLEN];
        if (vq_cache_evict_parse(val, &ev, err) != VQ_OK)
            return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: evict: %s", err);
        vq_cache_evict_str(&ev, cfg->evict, sizeof cfg->evict);
        return VQ_OK;
    }
    if (strcmp(key, "cross") == 0) {
        char err[VQ_ERRLEN];
        if (vq_cache_cross_parse(val, canon, sizeof canon, err) != VQ_OK)
            return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: cross: %s", err);
        memcpy(cfg->cross, canon, sizeof canon);
        return VQ_OK;
    }
    return vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: unknown field '%s'", key);
}

void vq_cache_config_free(vq_cache_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->bits);
    free(cfg->kbits);
    free(cfg->vbits);
    free(cfg->text);
    free(cfg);
}

vq_status vq_cache_config_parse(const char *text, vq_cache_config **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_config_parse: out is NULL");
    *out = NULL;
    if (!text)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_config_parse: text is NULL");
    vq_cache_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache config: out of memory");
    strcpy(cfg->keys, "fp16");
    strcpy(cfg->values, "fp16");
    strcpy(cfg->evict, "none");
    strcpy(cfg->cross, "none");
    strcpy(cfg->keep_spec, "fp16");
    cfg->page = 0; /* auto */
    int seen[sizeof FIELDS / sizeof *FIELDS] = { 0 };
    vq_status st = VQ_OK;
    const char *p = text;
    char field[MAX_FIELD_LEN];
    while (st == VQ_OK) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, " \t\n");
        if (n >= sizeof field) {
            st = vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: field '%.20s...' too long", p);
            break;
        }
        memcpy(field, p, n);
        field[n] = '\0';
        p += n;
        char *eq = strchr(field, '=');
        if (!eq) {
            st = vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: '%s' is not FIELD=VALUE", field);
            break;
        }
        *eq = '\0';
        int idx = -1;
        for (int i = 0; FIELDS[i]; i++)
            if (strcmp(FIELDS[i], field) == 0)
                idx = i;
        if (idx < 0) {
            st = vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: unknown field '%s'", field);
            break;
        }
        if (seen[idx]++) {
            st = vq_fail(NULL, VQ_ERR_INVALID_ARG, "cache config: field '%s' given twice", field);
            break;
        }
        st = apply_field(cfg, field, eq + 1);
    }
    if (st == VQ_OK)
        st = build_text(cfg);
    if (st != VQ_OK) {
        vq_cache_config_free(cfg);
        return st;
    }
    *out = cfg;
    return VQ_OK;
}

const char *vq_cache_config_str(const vq_cache_config *cfg)
{
    return cfg && cfg->text ? cfg->text : "";
}

vq_status vq_cache_config_copy(const vq_cache_config *src, vq_cache_config **out)
{
    *out = NULL;
    vq_cache_config *c = malloc(sizeof *c);
    if (!c)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache config: out of memory");
    *c = *src;
    c->bits = c->kbits = c->vbits = NULL;
    c->text = NULL;
    int *const *from[3] = { &src->bits, &src->kbits, &src->vbits };
    int **to[3] = { &c->bits, &c->kbits, &c->vbits };
    const int ns[3] = { src->n_bits, src->n_kbits, src->n_vbits };
    for (int k = 0; k < 3; k++) {
        if (!ns[k])
            continue;
        *to[k] = malloc((size_t)ns[k] * sizeof(int));
        if (!*to[k]) {
            vq_cache_config_free(c);
            return vq_fail(NULL, VQ_ERR_NOMEM, "cache config: out of memory");
        }
        memcpy(*to[k], *from[k], (size_t)ns[k] * sizeof(int));
    }
    vq_status st = build_text(c);
    if (st != VQ_OK) {
        vq_cache_config_free(c);
        return st;
    }
    *out = c;
    return VQ_OK;
}

/* does the method's default spec have a bits parameter? */
static int method_takes_bits(const char *name)
{
    const char *def = NULL;
    for (int i = 0; vq_codec_method(i, &def); i++)
        if (strcmp(vq_codec_method(i, NULL), name) == 0)
            return def && strstr(def, "bits=") != NULL;
    return 0;
}

/* write spec back as text, with bits set to `bits` */
static vq_status spec_with_bits(vq_spec *sp, int bits, char *buf, size_t cap, char *err)
{
    int found = 0;
    for (int i = 0; i < sp->n; i++)
        if (strcmp(sp->kv[i].key, "bits") == 0) {
            snprintf(sp->kv[i].val, sizeof sp->kv[i].val, "%d", bits);
            found = 1;
        }
    if (!found) {
        if (sp->n == VQ_SPEC_MAX_KV)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "bits: spec '%s' has too many parameters", sp->name);
        snprintf(sp->kv[sp->n].key, sizeof sp->kv[0].key, "bits");
        snprintf(sp->kv[sp->n].val, sizeof sp->kv[0].val, "%d", bits);
        sp->n++;
    }
    size_t o = (size_t)snprintf(buf, cap, "%s", sp->name);
    for (int i = 0; i < sp->n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%c%s=%s", i ? ',' : ':', sp->kv[i].key, sp->kv[i].val);
    if (o >= cap)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "bits: spec '%s' too long with bits", sp->name);
    return VQ_OK;
}

vq_status vq_cache_config_layer_spec(const vq_cache_config *cfg, int l, int n, vq_role role,
                                     char *buf, size_t cap, char *err)
{
    if (l < cfg->keep_first || l >= n - cfg->keep_last) {
        snprintf(buf, cap, "%s", cfg->keep_spec);
        return VQ_OK;
    }
    const char *base = role == VQ_ROLE_KEY ? cfg->keys : cfg->values;
    /* kbits / vbits: this role's own per-layer list (overrides bits) */
    const int *own = role == VQ_ROLE_KEY ? cfg->kbits : cfg->vbits;
    int n_own = role == VQ_ROLE_KEY ? cfg->n_kbits : cfg->n_vbits;
    if (n_own) {
        if (n_own != n)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: %s has %d entries, the model has %d layers",
                           role == VQ_ROLE_KEY ? "kbits" : "vbits", n_own, n);
        vq_spec sp;
        VQ_TRY(vq_spec_parse(base, &sp, err));
        if (!method_takes_bits(sp.name))
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: %s: the %s codec '%s' has no bits parameter",
                           role == VQ_ROLE_KEY ? "kbits" : "vbits", role == VQ_ROLE_KEY ? "keys" : "values", sp.name);
        return spec_with_bits(&sp, own[l], buf, cap, err);
    }
    if (cfg->n_bits == 0) {
        snprintf(buf, cap, "%s", base);
        return VQ_OK;
    }
    if (cfg->n_bits != n)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: bits has %d entries, the model has %d layers",
                       cfg->n_bits, n);
    vq_spec sp;
    VQ_TRY(vq_spec_parse(base, &sp, err));
    if (!method_takes_bits(sp.name)) {
        vq_spec other;
        const char *os = role == VQ_ROLE_KEY ? cfg->values : cfg->keys;
        if (vq_spec_parse(os, &other, NULL) != VQ_OK || !method_takes_bits(other.name))
            return vq_fail(err, VQ_ERR_INVALID_ARG,
                           "cache config: bits: neither the keys codec nor the values codec has a bits parameter");
        snprintf(buf, cap, "%s", base);
        return VQ_OK;
    }
    return spec_with_bits(&sp, cfg->bits[l], buf, cap, err);
}
