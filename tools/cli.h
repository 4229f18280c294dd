/* cli.h -- the veloxquant command-line tool: one file per subcommand.
 * The CLI uses the public API (veloxquant.h) only: tools/ compiles with
 * -Iinclude -Itools, and scripts/check_layers.py checks it. Each command
 * reads its options with cli_parse (cli_opts.h) and returns a process exit
 * status: 0 ok, 1 failure at run time, 2 usage error. Helpers that are not
 * about KV caches (JSON, machine facts, clocks, atomic writes, git) are in
 * tools/util/. */
#ifndef VQ_TOOLS_CLI_H
#define VQ_TOOLS_CLI_H

int cmd_codecs(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_ppl(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_needle(int argc, char **argv);
int cmd_recommend(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Print "veloxquant CMD: MSG" to stderr (printf-style). */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
