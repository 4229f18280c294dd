/* cmd_codecs.c -- `veloxquant codecs --head-dim D [--spec SPEC] [--json]`:
 * one row per method (default parameters) or just the given spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "veloxquant.h"

static void print_row(vq_codec *c, int json, int first)
{
    double fp16 = 2.0 * vq_codec_head_dim(c);
    double bpt = (double)vq_codec_bytes_per_token(c);
    if (json) {
        printf("%s\n  {\"name\": \"%s\", \"spec\": \"%s\", \"head_dim\": %d, \"bits_per_element\": %.4f, "
               "\"bytes_per_token\": %zu, \"block_tokens\": %zu, \"shared_bytes\": %zu, "
               "\"compression\": %.4f, \"needs_calibration\": %s}",
               first ? "" : ",", vq_codec_name(c), vq_codec_spec(c), vq_codec_head_dim(c),
               vq_codec_bits_per_element(c), vq_codec_bytes_per_token(c), vq_codec_block_tokens(c),
               vq_codec_shared_bytes(c), fp16 / bpt, vq_codec_needs_calibration(c) ? "true" : "false");
    } else {
        printf("%-16s %-40s %7.3f %9zu %8.2fx %10zu  %s\n", vq_codec_name(c), vq_codec_spec(c),
               vq_codec_bits_per_element(c), vq_codec_bytes_per_token(c), fp16 / bpt,
               vq_codec_shared_bytes(c), vq_codec_needs_calibration(c) ? "yes" : "no");
    }
}

int cmd_codecs(int argc, char **argv)
{
    int head_dim = 128, json = 0;
    const char *spec = NULL;
    const cli_opt opts[] = {
        CLI_OPT_INT("head-dim", &head_dim, "D", 1, 4096, "vector size, a multiple of 32 in 32..256 (default 128)"),
        CLI_OPT_STR("spec", &spec, "SPEC", "only this method/parameters, e.g. kivi:bits=2"),
        CLI_OPT_FLAG("json", &json, "print a JSON array instead of a table"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "codecs", "[--head-dim D] [--spec SPEC] [--json]",
                              "One row per compression method (default parameters) or just the given spec.", opts,
                              NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (!json)
        printf("%-16s %-40s %7s %9s %9s %10s  %s\n", "method", "spec", "bits/el", "B/token", "vs fp16",
               "shared B", "calibration");
    else
        printf("[");
    int rc = 0, first = 1;
    for (int i = 0;; i++) {
        const char *def = NULL;
        const char *name = vq_codec_method(i, &def);
        if (!name)
            break;
        const char *s = spec ? spec : def;
        vq_codec *c = NULL;
        vq_status st = vq_codec_create(s, head_dim, VQ_ROLE_KEY, 1, &c);
        if (st != VQ_OK) {
            if (json)
                printf("]\n");
            cli_error("codecs", "%s", vq_last_error());
            return 1;
        }
        print_row(c, json, first);
        first = 0;
        vq_codec_free(c);
        if (spec)
            break;
    }
    if (json)
        printf("\n]\n");
    return rc;
}
