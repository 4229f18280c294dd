/* json_read.c -- recursive-descent JSON reader (contract in json_read.h). */
#include "util/json_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUT ((size_t)64 << 20)

typedef struct {
    const char *s;
    size_t len, pos;
    char *err;
    vq_status st;
} parser;

/* Keep the first error's message in err (CLI_JSON_ERRLEN bytes, may be
 * NULL) and return st. */
static vq_status json_fail(char *err, vq_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static vq_status json_fail(char *err, vq_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, CLI_JSON_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return st;
}

static int fail(parser *p, const char *what)
{
    if (p->st == VQ_OK)
        p->st = json_fail(p->err, VQ_ERR_FORMAT, "json: %s at byte %zu", what, p->pos);
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static int literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, "unknown literal");
    p->pos += n;
    return 0;
}

static int hex4(parser *p, unsigned *out)
{
    if (p->len - p->pos < 4)
        return fail(p, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(p, "bad hex digit in \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string at p->pos (at the opening quote): malloc'd unescaped text. The
 * output is never longer than the input (escapes shrink or keep size). */
static int string(parser *p, char **out, size_t *out_len)
{
    p->pos++; /* " */
    size_t start = p->pos;
    /* find the closing quote to size the buffer */
    size_t end = start;
    while (end < p->len && p->s[end] != '"') {
        if (p->s[end] == '\\')
            end++;
        end++;
    }
    if (end >= p->len)
        return fail(p, "unterminated string");
    char *d = malloc(end - start + 1);
    if (!d) {
        p->st = json_fail(p->err, VQ_ERR_NOMEM, "json: out of memory");
        return -1;
    }
    size_t o = 0;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) {
            free(d);
            return fail(p, "control character in string");
        }
        if (c != '\\') {
            d[o++] = (char)c;
            p->pos++;
            continue;
        }
        p->pos++;
        char e = p->s[p->pos++];
        switch (e) {
        case '"': d[o++] = '"'; break;
        case '\\': d[o++] = '\\'; break;
        case '/': d[o++] = '/'; break;
        case 'b': d[o++] = '\b'; break;
        case 'f': d[o++] = '\f'; break;
        case 'n': d[o++] = '\n'; break;
        case 'r': d[o++] = '\r'; break;
        case 't': d[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p, &cp)) {
                free(d);
                return -1;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(d);
                return fail(p, "lone low surrogate");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    free(d);
                    return fail(p, "lone high surrogate");
                }
                p->pos += 2;
                if (hex4(p, &lo)) {
                    free(d);
                    return -1;
                }
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    free(d);
                    return fail(p, "bad surrogate pair");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += put_utf8(d + o, cp); /* 6 or 12 input bytes give <= 4 */
            break;
        }
        default:
            free(d);
            return fail(p, "bad escape");
        }
    }
    p->pos = end + 1;
    d[o] = 0;
    *out = d;
    *out_len = o;
    return 0;
}

static int number(parser *p, double *out)
{
    size_t i = p->pos;
    const char *s = p->s;
    if (i < p->len && s[i] == '-')
        i++;
    if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
        return fail(p, "bad number");
    if (s[i] == '0')
        i++;
    else
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i < p->len && s[i] == '.') {
        i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
            return fail(p, "bad fraction");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->len || !(s[i] >= '0' && s[i] <= '9'))
            return fail(p, "bad exponent");
        while (i < p->len && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    char buf[64];
    if (i - p->pos >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, s + p->pos, i - p->pos);
    buf[i - p->pos] = 0;
    *out = strtod(buf, NULL);
    if (!isfinite(*out))
        return fail(p, "number out of range");
    p->pos = i;
    return 0;
}

static int value(parser *p, cli_json_node *n, int depth);

/* Append a child (grows by doubling). */
static cli_json_node *push(parser *p, cli_json_node *n, size_t *cap)
{
    if (n->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        cli_json_node *c = realloc(n->children, nc * sizeof *c);
        if (!c) {
            p->st = json_fail(p->err, VQ_ERR_NOMEM, "json: out of memory");
            return NULL;
        }
        n->children = c;
        *cap = nc;
    }
    cli_json_node *c = &n->children[n->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static int container(parser *p, cli_json_node *n, int depth, int object)
{
    if (depth >= CLI_JSON_PARSE_MAX_DEPTH)
        return fail(p, "nesting too deep");
    n->type = object ? CLI_JSON_OBJECT : CLI_JSON_ARRAY;
    p->pos++;
    size_t cap = 0;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
        p->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        cli_json_node *c = push(p, n, &cap);
        if (!c)
            return -1;
        if (object) {
            size_t kl;
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, "expected member name");
            if (string(p, &c->key, &kl))
                return -1;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail(p, "expected ':'");
            p->pos++;
        }
        if (value(p, c, depth + 1))
            return -1;
        skip_ws(p);
        if (p->pos >= p->len)
            return fail(p, "unterminated container");
        char ch = p->s[p->pos++];
        if (ch == ',')
            continue;
        if (ch == (object ? '}' : ']'))
            return 0;
        p->pos--;
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(parser *p, cli_json_node *n, int depth)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end");
    char c = p->s[p->pos];
    switch (c) {
    case '{': return container(p, n, depth, 1);
    case '[': return container(p, n, depth, 0);
    case '"': n->type = CLI_JSON_STRING; return string(p, &n->str, &n->str_len);
    case 't': n->type = CLI_JSON_BOOL; n->num = 1; return literal(p, "true");
    case 'f': n->type = CLI_JSON_BOOL; return literal(p, "false");
    case 'n': n->type = CLI_JSON_NULL; return literal(p, "null");
    default: n->type = CLI_JSON_NUMBER; return number(p, &n->num);
    }
}

static void node_clear(cli_json_node *n)
{
    for (size_t i = 0; i < n->n; i++)
        node_clear(&n->children[i]);
    free(n->children);
    free(n->str);
    free(n->key);
}

void cli_json_node_free(cli_json_node *root)
{
    if (!root)
        return;
    node_clear(root);
    free(root);
}

vq_status cli_json_parse(const char *text, size_t len, cli_json_node **out, char *err)
{
    if (!out || (!text && len))
        return json_fail(err, VQ_ERR_INVALID_ARG, "json: NULL argument");
    *out = NULL;
    if (len > MAX_INPUT)
        return json_fail(err, VQ_ERR_FORMAT, "json: input of %zu bytes exceeds 64 MiB", len);
    parser p = { text, len, 0, err, VQ_OK };
    cli_json_node *root = calloc(1, sizeof *root);
    if (!root)
        return json_fail(err, VQ_ERR_NOMEM, "json: out of memory");
    if (value(&p, root, 0) == 0) {
        skip_ws(&p);
        if (p.pos != p.len)
            fail(&p, "trailing bytes");
    }
    if (p.st != VQ_OK) {
        cli_json_node_free(root);
        return p.st;
    }
    *out = root;
    return VQ_OK;
}

const cli_json_node *cli_json_get(const cli_json_node *obj, const char *key)
{
    if (!obj || obj->type != CLI_JSON_OBJECT || !key)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->children[i].key && strcmp(obj->children[i].key, key) == 0)
            return &obj->children[i];
    return NULL;
}

double cli_json_get_num(const cli_json_node *obj, const char *key, double dflt)
{
    const cli_json_node *n = cli_json_get(obj, key);
    return n && (n->type == CLI_JSON_NUMBER || n->type == CLI_JSON_BOOL) ? n->num : dflt;
}

const char *cli_json_get_str(const cli_json_node *obj, const char *key, const char *dflt)
{
    const cli_json_node *n = cli_json_get(obj, key);
    return n && n->type == CLI_JSON_STRING ? n->str : dflt;
}
