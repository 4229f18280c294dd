/* cli_opts.h -- the one option parser of every command: a table of options
 * read with getopt_long, one help layout and one wording of errors.
 *
 * A command describes itself with a cli_command (name, synopsis, its option
 * table) and calls cli_parse(&cmd, argc, argv) with argv[0] = the command's
 * own name. Options are long only (--name VALUE or --name=VALUE), plus -h
 * for --help; a name must be written out in full (getopt_long's unique
 * prefixes are refused, so adding an option never changes what an older
 * command line means). Arguments that are not options are refused unless
 * the command takes positionals (cli_command.positional).
 *
 * Values are checked when read: CLI_INT is a whole number and CLI_NUM a
 * number (strtod syntax), both in [lo, hi] (lo excluded with CLI_ABOVE_LO);
 * CLI_CALL hands the value to fn, which stores it or says what was wanted.
 * Every problem prints exactly one line "veloxquant NAME: MESSAGE" to
 * stderr, then the usage line and a pointer to --help (lines that do not
 * start with "veloxquant"), and the parse returns 2. The messages:
 *   unknown option '--x'
 *   option --x needs a value
 *   option --x takes no value             (--flag=VALUE)
 *   bad value for --x: 'V' (want ...)
 *   option --x given twice                (CLI_ONCE options)
 *   --x is required / --x and --y are required   (CLI_REQUIRED options)
 *   unexpected argument 'V'
 *
 * Help (--help, on stdout, exit status 0): the usage line, the command's
 * about text, then every option as "  --name ARG" padded to a column and its
 * help (a '\n' in the help continues at that column); CLI_SECTION entries
 * print a heading line, CLI_NOTE entries a line of text. */
#ifndef VQ_TOOLS_CLI_OPTS_H
#define VQ_TOOLS_CLI_OPTS_H

#include <stdio.h>

typedef enum {
    CLI_FLAG,    /* no value: *(int *)dst = 1 */
    CLI_STR,     /* *(const char **)dst = the value (argv's own storage) */
    CLI_INT,     /* whole number in [lo, hi]: *(int *)dst */
    CLI_NUM,     /* number in [lo, hi]: *(double *)dst */
    CLI_CALL,    /* fn(dst, value): NULL when stored, else what is wanted */
    CLI_SECTION, /* not an option: a heading in the help (help = its text) */
    CLI_NOTE     /* not an option: a line of help text (help = its text) */
} cli_kind;

enum {
    CLI_ONCE = 1,     /* refused when given twice */
    CLI_REQUIRED = 2, /* must be given */
    CLI_ABOVE_LO = 4  /* CLI_NUM: the value must be > lo (not >= lo) */
};

typedef const char *(*cli_store_fn)(void *dst, const char *value);

typedef struct {
    const char *name; /* without "--"; NULL ends the table */
    cli_kind kind;
    void *dst;
    const char *arg;  /* the value's placeholder in the help ("N", "FILE") */
    const char *help;
    double lo, hi;
    cli_store_fn fn;
    unsigned flags;
} cli_opt;

/* Table entries. */
#define CLI_OPT_FLAG(n, d, h) { n, CLI_FLAG, d, NULL, h, 0, 0, NULL, 0 }
#define CLI_OPT_STR(n, d, a, h) { n, CLI_STR, d, a, h, 0, 0, NULL, 0 }
#define CLI_OPT_INT(n, d, a, l, u, h) { n, CLI_INT, d, a, h, l, u, NULL, 0 }
#define CLI_OPT_NUM(n, d, a, l, u, h) { n, CLI_NUM, d, a, h, l, u, NULL, 0 }
#define CLI_OPT_CALL(n, f, d, a, h) { n, CLI_CALL, d, a, h, 0, 0, f, 0 }
#define CLI_OPT_SECTION(text) { "", CLI_SECTION, NULL, NULL, text, 0, 0, NULL, 0 }
#define CLI_OPT_NOTE(text) { "", CLI_NOTE, NULL, NULL, text, 0, 0, NULL, 0 }
#define CLI_OPT_END { NULL, CLI_FLAG, NULL, NULL, NULL, 0, 0, NULL, 0 }

typedef struct {
    const char *name;     /* "generate", "bench attention" */
    const char *synopsis; /* the usage line after "veloxquant NAME " */
    const char *about;    /* lines before the options, or NULL */
    const cli_opt *opts;  /* ends with CLI_OPT_END */
    /* positionals: NULL refuses them; else their name in the help, and each
     * one is stored in pos[n_pos++] (at most max_pos) */
    const char *positional;
    const char **pos;
    int max_pos;
    int *n_pos;
} cli_command;

/* Parse argv[1..argc-1]. Returns -1 when the command should run, 0 after
 * printing the help (--help, -h), 2 after a usage error (message printed). */
int cli_parse(const cli_command *c, int argc, char **argv);

/* A usage error found after parsing (a bad combination of options): prints
 * "veloxquant NAME: MESSAGE" and the usage lines as cli_parse does; returns
 * 2 (the exit status). */
int cli_usage_error(const cli_command *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The whole help text. */
void cli_help(const cli_command *c, FILE *f);

#endif
