/* spec.c -- parser for `NAME[:key=value,...]` strings (see spec.h). */
#include "core/spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static int is_ident(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
}

vq_status vq_spec_parse(const char *text, vq_spec *s, char *err)
{
    if (!text || !s)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec: NULL argument");
    memset(s, 0, sizeof *s);
    size_t len = strlen(text);
    if (len == 0)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec: empty string");
    if (len >= VQ_SPEC_MAX_LEN)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec: longer than %d bytes", VQ_SPEC_MAX_LEN - 1);
    const char *p = text;
    size_t nl = 0;
    while (is_ident(p[nl]))
        nl++;
    if (nl == 0)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': expected a method name", text);
    if (nl >= sizeof s->name)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': method name too long", text);
    memcpy(s->name, p, nl);
    p += nl;
    if (*p == '\0')
        return VQ_OK;
    if (*p != ':')
        return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': unexpected '%c' after method name", text, *p);
    p++;
    for (;;) {
        size_t kl = 0;
        while (is_ident(p[kl]))
            kl++;
        if (kl == 0 || p[kl] != '=')
            return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': expected key=value at '%s'", text, p);
        if (kl >= sizeof s->kv[0].key)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': key too long at '%s'", text, p);
        if (s->n == VQ_SPEC_MAX_KV)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': more than %d parameters", text, VQ_SPEC_MAX_KV);
        char key[32];
        memcpy(key, p, kl);
        key[kl] = '\0';
        for (int i = 0; i < s->n; i++)
            if (strcmp(s->kv[i].key, key) == 0)
                return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': parameter '%s' given twice", text, key);
        p += kl + 1;
        size_t vl = strcspn(p, ",");
        if (vl == 0)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': empty value for '%s'", text, key);
        for (size_t i = 0; i < vl; i++)
            if ((unsigned char)p[i] <= ' ')
                return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': whitespace or control byte in value of '%s'", text, key);
        memcpy(s->kv[s->n].key, key, kl + 1);
        memcpy(s->kv[s->n].val, p, vl);
        s->kv[s->n].val[vl] = '\0';
        s->n++;
        p += vl;
        if (*p == '\0')
            return VQ_OK;
        p++; /* ',' */
        if (*p == '\0')
            return vq_fail(err, VQ_ERR_INVALID_ARG, "spec '%s': trailing ','", text);
    }
}

static int find(vq_spec *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->kv[i].key, key) == 0) {
            s->kv[i].used = 1;
            return i;
        }
    return -1;
}

/* key's value as a number (strtol base 10 when `integer`, else strtod,
 * NaN refused): *found = 0 when absent; a failure names the key */
static vq_status number(vq_spec *s, const char *key, int integer, int *found, long *xl, double *xd, char *err)
{
    int i = find(s, key);
    *found = i >= 0;
    if (i < 0)
        return VQ_OK;
    const char *v = s->kv[i].val;
    char *end;
    errno = 0;
    if (integer)
        *xl = strtol(v, &end, 10);
    else
        *xd = strtod(v, &end);
    if (errno || *end != '\0' || end == v || (!integer && *xd != *xd))
        return integer ? vq_fail(err, VQ_ERR_INVALID_ARG, "%s: parameter %s='%s' is not an integer", s->name, key, v)
                       : vq_fail(err, VQ_ERR_INVALID_ARG, "%s: parameter %s='%s' is not a number", s->name, key, v);
    return VQ_OK;
}

vq_status vq_spec_int(vq_spec *s, const char *key, long def, long lo, long hi,
                      long *out, char *err)
{
    int found;
    long x = def;
    VQ_TRY(number(s, key, 1, &found, &x, NULL, err));
    if (found && (x < lo || x > hi))
        return vq_fail(err, VQ_ERR_INVALID_ARG, "%s: parameter %s=%ld out of range [%ld, %ld]", s->name, key, x, lo, hi);
    *out = x;
    return VQ_OK;
}

vq_status vq_spec_ints(vq_spec *s, const vq_spec_int_field *f, size_t n, char *err)
{
    for (size_t i = 0; i < n; i++)
        VQ_TRY(vq_spec_int(s, f[i].key, f[i].def, f[i].lo, f[i].hi, f[i].out, err));
    return VQ_OK;
}

vq_status vq_spec_float(vq_spec *s, const char *key, double def, double lo,
                        double hi, double *out, char *err)
{
    int found;
    double x = def;
    VQ_TRY(number(s, key, 0, &found, NULL, &x, err));
    if (found && (x < lo || x > hi))
        return vq_fail(err, VQ_ERR_INVALID_ARG, "%s: parameter %s=%g out of range [%g, %g]", s->name, key, x, lo, hi);
    *out = x;
    return VQ_OK;
}

vq_status vq_spec_str(vq_spec *s, const char *key, const char *def,
                      const char **out, char *err)
{
    (void)err;
    int i = find(s, key);
    *out = i < 0 ? def : s->kv[i].val;
    return VQ_OK;
}

vq_status vq_spec_check_unused(const vq_spec *s, char *err)
{
    for (int i = 0; i < s->n; i++)
        if (!s->kv[i].used)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "%s: unknown parameter '%s'", s->name, s->kv[i].key);
    return VQ_OK;
}
