/* json_write.c -- streaming JSON writer (contract in json_write.h). */
#include "util/json_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_json_init(cli_json *j, cli_json_sink_fn sink, void *user, int pretty)
{
    memset(j, 0, sizeof *j);
    j->sink = sink;
    j->user = user;
    j->pretty = pretty;
    j->st = sink ? VQ_OK : VQ_ERR_INVALID_ARG;
}

static void put(cli_json *j, const char *s, size_t n)
{
    if (j->st != VQ_OK || n == 0)
        return;
    if (j->sink(j->user, s, n) != 0)
        j->st = VQ_ERR_IO;
}

static void puts_(cli_json *j, const char *s) { put(j, s, strlen(s)); }

static void newline_indent(cli_json *j)
{
    if (!j->pretty)
        return;
    static const char spaces[] = "                                                                ";
    put(j, "\n", 1);
    size_t n = (size_t)j->depth * 2;
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        put(j, spaces, k);
        n -= k;
    }
}

/* Before any value: check the grammar and write the separator. */
static int before_value(cli_json *j)
{
    if (j->st != VQ_OK)
        return 0;
    if (j->depth == 0) {
        if (j->n_roots > 0) {
            j->st = VQ_ERR_STATE;
            return 0;
        }
        j->n_roots = 1;
        return 1;
    }
    int lvl = j->depth - 1;
    if (j->is_object[lvl]) {
        if (!j->have_key) {
            j->st = VQ_ERR_STATE;
            return 0;
        }
        j->have_key = 0;
        return 1;
    }
    if (j->n_items[lvl])
        put(j, ",", 1);
    j->n_items[lvl] = 1;
    newline_indent(j);
    return 1;
}

static void escape(cli_json *j, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    put(j, "\"", 1);
    size_t run = 0; /* start of the pending run of bytes copied verbatim */
    size_t i = 0;
    while (i < n && j->st == VQ_OK) {
        unsigned c = p[i];
        const char *esc = NULL;
        char ubuf[8];
        size_t adv = 1;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
            esc = ubuf;
        } else if (c >= 0x80) {
            /* validate one UTF-8 sequence (RFC 3629: no overlongs, no
             * surrogates, nothing above U+10FFFF) */
            size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
            int ok = len > 0 && i + len <= n;
            for (size_t k = 1; ok && k < len; k++)
                ok = (p[i + k] & 0xC0) == 0x80;
            if (ok && len == 3) {
                if (c == 0xE0 && p[i + 1] < 0xA0)
                    ok = 0;
                if (c == 0xED && p[i + 1] >= 0xA0)
                    ok = 0;
            }
            if (ok && len == 4) {
                if (c == 0xF0 && p[i + 1] < 0x90)
                    ok = 0;
                if (c == 0xF4 && p[i + 1] >= 0x90)
                    ok = 0;
            }
            if (ok)
                adv = len;
            else
                esc = "\xEF\xBF\xBD"; /* U+FFFD for one bad byte */
        }
        if (esc) {
            put(j, s + run, i - run);
            puts_(j, esc);
            run = i + 1;
        }
        i += adv;
    }
    put(j, s + run, (i < n ? i : n) - run);
    put(j, "\"", 1);
}

void cli_json_begin_object(cli_json *j)
{
    if (!before_value(j))
        return;
    if (j->depth >= CLI_JSON_MAX_DEPTH) {
        j->st = VQ_ERR_STATE;
        return;
    }
    put(j, "{", 1);
    j->is_object[j->depth] = 1;
    j->n_items[j->depth] = 0;
    j->depth++;
}

void cli_json_begin_array(cli_json *j)
{
    if (!before_value(j))
        return;
    if (j->depth >= CLI_JSON_MAX_DEPTH) {
        j->st = VQ_ERR_STATE;
        return;
    }
    put(j, "[", 1);
    j->is_object[j->depth] = 0;
    j->n_items[j->depth] = 0;
    j->depth++;
}

static void end_container(cli_json *j, int object)
{
    if (j->st != VQ_OK)
        return;
    if (j->depth == 0 || j->is_object[j->depth - 1] != object || j->have_key) {
        j->st = VQ_ERR_STATE;
        return;
    }
    int had = j->n_items[j->depth - 1];
    j->depth--;
    if (had)
        newline_indent(j);
    put(j, object ? "}" : "]", 1);
}

void cli_json_end_object(cli_json *j) { end_container(j, 1); }
void cli_json_end_array(cli_json *j) { end_container(j, 0); }

void cli_json_key(cli_json *j, const char *key)
{
    if (j->st != VQ_OK)
        return;
    if (!key || j->depth == 0 || !j->is_object[j->depth - 1] || j->have_key) {
        j->st = VQ_ERR_STATE;
        return;
    }
    int lvl = j->depth - 1;
    if (j->n_items[lvl])
        put(j, ",", 1);
    j->n_items[lvl] = 1;
    newline_indent(j);
    escape(j, key, strlen(key));
    put(j, j->pretty ? ": " : ":", j->pretty ? 2 : 1);
    j->have_key = 1;
}

void cli_json_strn(cli_json *j, const char *s, size_t n)
{
    if (!s) {
        cli_json_null(j);
        return;
    }
    if (before_value(j))
        escape(j, s, n);
}

void cli_json_str(cli_json *j, const char *s) { cli_json_strn(j, s, s ? strlen(s) : 0); }

void cli_json_int(cli_json *j, int64_t v)
{
    char b[32];
    if (before_value(j))
        put(j, b, (size_t)snprintf(b, sizeof b, "%lld", (long long)v));
}

void cli_json_uint(cli_json *j, uint64_t v)
{
    char b[32];
    if (before_value(j))
        put(j, b, (size_t)snprintf(b, sizeof b, "%llu", (unsigned long long)v));
}

void cli_json_num(cli_json *j, double v)
{
    char b[40];
    if (!before_value(j))
        return;
    if (!isfinite(v))
        puts_(j, "null");
    else
        put(j, b, (size_t)snprintf(b, sizeof b, "%.10g", v));
}

void cli_json_bool(cli_json *j, int v)
{
    if (before_value(j))
        puts_(j, v ? "true" : "false");
}

void cli_json_null(cli_json *j)
{
    if (before_value(j))
        puts_(j, "null");
}

void cli_json_kstr(cli_json *j, const char *key, const char *s) { cli_json_key(j, key); cli_json_str(j, s); }
void cli_json_kint(cli_json *j, const char *key, int64_t v) { cli_json_key(j, key); cli_json_int(j, v); }
void cli_json_kuint(cli_json *j, const char *key, uint64_t v) { cli_json_key(j, key); cli_json_uint(j, v); }
void cli_json_knum(cli_json *j, const char *key, double v) { cli_json_key(j, key); cli_json_num(j, v); }
void cli_json_kbool(cli_json *j, const char *key, int v) { cli_json_key(j, key); cli_json_bool(j, v); }

void cli_json_print_str(FILE *f, const char *s)
{
    cli_json j;
    cli_json_init(&j, cli_json_sink_file, f, 0);
    cli_json_str(&j, s ? s : "");
    (void)cli_json_finish(&j);
}

vq_status cli_json_finish(cli_json *j)
{
    if (j->st == VQ_OK && (j->depth != 0 || j->n_roots != 1))
        j->st = VQ_ERR_STATE;
    if (j->st == VQ_OK && j->pretty)
        put(j, "\n", 1);
    return j->st;
}

int cli_json_sink_file(void *file, const char *data, size_t n)
{
    return fwrite(data, 1, n, (FILE *)file) == n ? 0 : -1;
}

int cli_json_sink_buf(void *buf, const char *data, size_t n)
{
    cli_json_buf *b = buf;
    if (n > SIZE_MAX / 2 - b->len - 1)
        return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}
