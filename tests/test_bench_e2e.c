/* test_bench_e2e.c -- `veloxquant bench e2e` as a user runs it (the built
 * CLI, $VQ_BUILD/veloxquant, on smollm2-135m): its --json holds the float
 * buffer, fp16 and the given config at each context with the fields the
 * issue names and the slowest decode step; fp16 is its own reference
 * (speed-up exactly 1); the floor and its fraction agree with the bytes
 * and rates; a config's slowest step is no shorter than its mean step; the
 * packed config holds fewer bytes than fp16. Times are not checked
 * otherwise (they are benchmarks, not tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/json_read.h"
#include "veloxquant.h"

static const char *cli, *model;

static void test_e2e_json(void)
{
    static char out[65536];
    char cmd[2048], err[CLI_JSON_ERRLEN];
    snprintf(cmd, sizeof cmd,
             "%s bench e2e --model %s --ctx 40,72 --decode 3 --threads 1 "
             "--cache 'keys=kivi:bits=2 values=kivi:bits=2 residual=8' --json 2>/dev/null",
             cli, model);
    CHECKF(vq_test_run(cmd, out, sizeof out) == 0, "'%s' failed", cmd);
    cli_json_node *root = NULL;
    CHECKF(cli_json_parse(out, strlen(out), &root, err) == VQ_OK, "not JSON: %s", err);
    if (!root)
        return;
    const double bw = cli_json_get_num(root, "bandwidth_gbs", -1.0), wb = cli_json_get_num(root, "weight_bytes", -1);
    CHECK(bw > 0.0 && wb > 0.0);
    const cli_json_node *res = cli_json_get(root, "results");
    CHECKF(res && res->type == CLI_JSON_ARRAY && res->n == 6, "%zu results, want 6", res ? res->n : 0);
    static const char *const names[3] = { "float", "keys=fp16 values=fp16",
                                          "keys=kivi:bits=2 values=kivi:bits=2 residual=8" };
    for (size_t i = 0; res && res->type == CLI_JSON_ARRAY && i < res->n && i < 6; i++) {
        const cli_json_node *r = &res->children[i];
        CHECK(cli_json_get_num(r, "ctx", 0) == (i < 3 ? 40 : 72));
        CHECKF(strstr(cli_json_get_str(r, "cache", ""), names[i % 3]) != NULL, "cache %s, want %s",
               cli_json_get_str(r, "cache", ""), names[i % 3]);
        const double dec = cli_json_get_num(r, "decode_tok_s", -1.0), step = cli_json_get_num(r, "bytes_per_step", -1);
        const double floor = cli_json_get_num(r, "floor_tok_s", -1.0), kv = cli_json_get_num(r, "kv_bytes", -1.0);
        const double max_ms = cli_json_get_num(r, "decode_step_max_ms", -1.0);
        CHECK(cli_json_get_num(r, "prefill_tok_s", -1.0) > 0.0 && dec > 0.0 && kv > 0.0);
        CHECK_NEAR(step, wb + kv, 1.0);
        CHECK_NEAR(floor, bw * 1e9 / step, 1e-3 * floor);
        CHECK_NEAR(cli_json_get_num(r, "fraction_of_floor", -1.0), dec / floor, 1e-3);
        /* the slowest of the timed steps is at least their mean */
        CHECKF(max_ms >= 0.999 * 1e3 / dec - 1e-3, "%s: slowest step %g ms, mean %g ms", names[i % 3], max_ms,
               1e3 / dec);
        if (i % 3 == 1)
            CHECK(cli_json_get_num(r, "speedup_vs_fp16", 0) == 1.0);
        if (i % 3 == 2) /* 2-bit KIVI after its residual holds fewer bytes than fp16 */
            CHECK(kv < cli_json_get_num(&res->children[i - 1], "kv_bytes", 0));
    }
    cli_json_node_free(root);
}

int main(void)
{
    cli = vq_test_cli();
    model = vq_test_model("smollm2-135m");
    if (cli && model)
        RUN(test_e2e_json);
    return vq_test_summary("test_bench_e2e");
}
