/* veloxquant.c -- entry point: dispatch to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "veloxquant.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    { "codecs", cmd_codecs, "list compression methods and their byte costs" },
    { "inspect", cmd_inspect, "describe a GGUF model" },
    { "generate", cmd_generate, "generate text with a model and a KV-cache config" },
    { "ppl", cmd_ppl, "perplexity / KL vs fp16 on a text file" },
    { "calibrate", cmd_calibrate, "collect real K/V and write a calibration file" },
    { "validate", cmd_validate, "run the validation harness, write results.json" },
    { "bench", cmd_bench, "benchmark codecs and attention" },
    { "needle", cmd_needle, "passkey retrieval accuracy with a KV-cache config" },
    { "recommend", cmd_recommend, "which cache config to use, from the measured quality table" },
    { "tune", cmd_tune, "measure candidate cache configs on a model, pick the best within a bit budget" },
};

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "veloxquant %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: veloxquant COMMAND [options]   (veloxquant COMMAND --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("veloxquant %s\n", vq_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "veloxquant: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
