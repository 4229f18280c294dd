/* cli.h -- the veloxquant command-line tool: one file per subcommand.
 * The CLI uses the public API (veloxquant.h) only. Each command returns a
 * process exit status: 0 ok, 1 failure at run time, 2 usage error. */
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
