/* cli_opts.c -- see cli_opts.h. */
#include "cli_opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_OPTS 96
#define HELP_COL 24 /* the help text starts at this column */

static int is_option(const cli_opt *o)
{
    return o->kind != CLI_SECTION && o->kind != CLI_NOTE;
}

static void usage_lines(const cli_command *c, FILE *f)
{
    fprintf(f, "usage: veloxquant %s %s\n", c->name, c->synopsis);
}

int cli_usage_error(const cli_command *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_error(c->name, "%s", msg);
    usage_lines(c, stderr);
    fprintf(stderr, "(veloxquant %s --help lists the options)\n", c->name);
    return 2;
}

/* One help entry: "  --name ARG", padded to HELP_COL, then the help with
 * each '\n' continuing at HELP_COL. */
static void help_entry(FILE *f, const char *left, const char *help)
{
    int n = fprintf(f, "  %s", left);
    if (!help || !*help) {
        fputc('\n', f);
        return;
    }
    if (n >= HELP_COL - 1) {
        fputc('\n', f);
        n = 0;
    }
    for (const char *p = help; *p;) {
        size_t k = strcspn(p, "\n");
        fprintf(f, "%*s%.*s\n", HELP_COL - n, "", (int)k, p);
        n = 0;
        p += k + (p[k] == '\n');
    }
}

void cli_help(const cli_command *c, FILE *f)
{
    usage_lines(c, f);
    if (c->about)
        fprintf(f, "%s\n", c->about);
    fprintf(f, "options:\n");
    for (const cli_opt *o = c->opts; o->name; o++) {
        char left[128];
        if (o->kind == CLI_SECTION) {
            fprintf(f, "%s\n", o->help);
            continue;
        }
        if (o->kind == CLI_NOTE) {
            fprintf(f, "  %s\n", o->help);
            continue;
        }
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        help_entry(f, left, o->help);
    }
    help_entry(f, "-h, --help", "this help");
}

/* the range part of a "want ..." message */
static void want_range(const cli_opt *o, char *buf, size_t cap)
{
    const char *what = o->kind == CLI_INT ? "a whole number" : "a number";
    if (o->flags & CLI_ABOVE_LO)
        snprintf(buf, cap, "%s above %.15g, at most %.15g", what, o->lo, o->hi);
    else
        snprintf(buf, cap, "%s in %.15g..%.15g", what, o->lo, o->hi);
}

/* Check and store one value; NULL when stored, else what was wanted (in
 * buf or a string of fn). */
static const char *store(const cli_opt *o, const char *v, char *buf, size_t cap)
{
    switch (o->kind) {
    case CLI_FLAG:
        *(int *)o->dst = 1;
        return NULL;
    case CLI_STR:
        *(const char **)o->dst = v;
        return NULL;
    case CLI_CALL:
        return o->fn(o->dst, v);
    case CLI_INT:
    case CLI_NUM: {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        int ok = !errno && end != v && !*end && isfinite(x) && x <= o->hi &&
                 ((o->flags & CLI_ABOVE_LO) ? x > o->lo : x >= o->lo) && (o->kind == CLI_NUM || x == floor(x));
        if (!ok) {
            want_range(o, buf, cap);
            return buf;
        }
        if (o->kind == CLI_INT)
            *(int *)o->dst = (int)x;
        else
            *(double *)o->dst = x;
        return NULL;
    }
    default:
        return NULL;
    }
}

/* the argv element that named option `o` (getopt_long has just returned
 * it at optind): "--name", "--name=value" or an abbreviation of it */
static const char *option_token(char **argv, const cli_opt *o)
{
    const char *t = argv[optind - 1];
    if (o->kind != CLI_FLAG && optarg == t && optind >= 2)
        t = argv[optind - 2]; /* the value came as the next element */
    return t;
}

static int positional(const cli_command *c, const char *arg)
{
    if (!c->positional || *c->n_pos >= c->max_pos)
        return cli_usage_error(c, "unexpected argument '%s'", arg);
    c->pos[(*c->n_pos)++] = arg;
    return -1;
}

int cli_parse(const cli_command *c, int argc, char **argv)
{
    struct option lo[MAX_OPTS + 2];
    const cli_opt *map[MAX_OPTS];
    int seen[MAX_OPTS] = { 0 };
    int n = 0;
    for (const cli_opt *o = c->opts; o->name && n < MAX_OPTS; o++) {
        if (!is_option(o))
            continue;
        lo[n] = (struct option){ o->name, o->kind == CLI_FLAG ? no_argument : required_argument, NULL, 0 };
        map[n++] = o;
    }
    lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
    lo[n + 1] = (struct option){ NULL, 0, NULL, 0 };
    if (c->n_pos)
        *c->n_pos = 0;
    /* "-": arguments that are not options come back in order (as 1);
     * ":": a missing value is reported as ':' */
    optind = 0;
    opterr = 0;
    for (;;) {
        int idx = -1;
        int r = getopt_long(argc, argv, "-:h", lo, &idx);
        if (r == -1)
            break;
        if (r == 1) {
            if (positional(c, optarg) >= 0)
                return 2;
            continue;
        }
        if (r == 'h') {
            if (strcmp(argv[optind - 1], "-h") != 0 && strcmp(argv[optind - 1], "--help") != 0)
                return cli_usage_error(c, "unknown option '%s' (options are written out in full)", argv[optind - 1]);
            cli_help(c, stdout);
            return 0;
        }
        if (r == '?') {
            const char *t = argv[optind - 1];
            if (optopt && t[0] == '-' && t[1] != '-')
                return cli_usage_error(c, "unknown option '-%c'", optopt);
            size_t k = strcspn(t, "=");
            for (int i = 0; i < n && t[k] == '=' && strncmp(t, "--", 2) == 0; i++)
                if (strlen(map[i]->name) == k - 2 && strncmp(t + 2, map[i]->name, k - 2) == 0)
                    return cli_usage_error(c, "option --%s takes no value", map[i]->name);
            return cli_usage_error(c, "unknown option '%.*s'", (int)k, t);
        }
        if (r == ':')
            return cli_usage_error(c, "option %s needs a value", argv[optind - 1]);
        if (idx < 0 || idx >= n)
            return cli_usage_error(c, "unknown option '%s'", argv[optind - 1]);
        const cli_opt *o = map[idx];
        const char *tok = option_token(argv, o);
        size_t nl = strlen(o->name);
        if (strncmp(tok, "--", 2) != 0 || strncmp(tok + 2, o->name, nl) != 0 || (tok[2 + nl] && tok[2 + nl] != '='))
            return cli_usage_error(c, "unknown option '%.*s' (options are written out in full: --%s)",
                                   (int)strcspn(tok, "="), tok, o->name);
        if ((o->flags & CLI_ONCE) && seen[idx])
            return cli_usage_error(c, "option --%s given twice", o->name);
        seen[idx]++;
        char want[160];
        const char *bad = store(o, optarg ? optarg : "", want, sizeof want);
        if (bad)
            return cli_usage_error(c, "bad value for --%s: '%s' (want %s)", o->name, optarg ? optarg : "", bad);
    }
    for (int i = optind; i < argc; i++) /* after "--" */
        if (positional(c, argv[i]) >= 0)
            return 2;
    /* the required options that are missing, in one message */
    char miss[512] = "";
    int n_miss = 0, last = -1;
    for (int i = 0; i < n; i++)
        if ((map[i]->flags & CLI_REQUIRED) && !seen[i])
            n_miss++, last = i;
    if (n_miss) {
        size_t off = 0;
        for (int i = 0, k = 0; i < n && off < sizeof miss; i++) {
            if (!(map[i]->flags & CLI_REQUIRED) || seen[i])
                continue;
            off += (size_t)snprintf(miss + off, sizeof miss - off, "%s--%s", k == 0 ? "" : i == last ? " and " : ", ",
                                    map[i]->name);
            k++;
        }
        return cli_usage_error(c, "%s %s required", miss, n_miss == 1 ? "is" : "are");
    }
    return -1;
}
