/* test_bench_cli.c -- `veloxquant bench attention` as a user runs it (the
 * built CLI, $VQ_BUILD/veloxquant, default build/, from the repo root): its
 * --json holds every config with the fields the issue names, fp16 is its
 * own reference (speed-ups exactly 1), the byte counts order the codecs as
 * the library does, the fractions agree with the rates, and bad input is a
 * usage error naming the bad part. Times are not checked
 * (they are benchmarks, not tests). */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/json_read.h"
#include "veloxquant.h"

static char cli[512];

/* result i of the run, NULL when absent */
static const cli_json_node *result(const cli_json_node *root, size_t i)
{
    const cli_json_node *r = cli_json_get(root, "results");
    return r && r->type == CLI_JSON_ARRAY && i < r->n ? &r->children[i] : NULL;
}

/* `bench attention ARGS --json`: its parsed output (NULL, with a failed
 * check, when the run fails or prints no JSON; free with cli_json_node_free) */
static cli_json_node *run_json(const char *args)
{
    static char out[65536];
    char cmd[1024], err[CLI_JSON_ERRLEN];
    snprintf(cmd, sizeof cmd, "%s bench attention %s --json 2>/dev/null", cli, args);
    CHECKF(vq_test_run(cmd, out, sizeof out) == 0, "'%s' failed", cmd);
    cli_json_node *root = NULL;
    CHECKF(cli_json_parse(out, strlen(out), &root, err) == VQ_OK, "not JSON: %s", err);
    return root;
}

static void test_attention_json(void)
{
    cli_json_node *root = run_json("--ctx 300,520 --head-dim 64 --kv-heads 1 --q-heads 2 --repeats 3 "
                                   "--config 'keys=q8_0 values=q8_0' "
                                   "--config 'keys=kivi:bits=2,qbits=8 values=kivi:bits=2'");
    if (!root)
        return;
    const double bw = cli_json_get_num(root, "bandwidth_gbs", -1.0);
    CHECK(bw > 0.0);
    const double scaling = cli_json_get_num(root, "thread_scaling", -1.0), threads = cli_json_get_num(root, "threads", 0);
    CHECKF(scaling > 0.0 && scaling <= threads, "thread_scaling %g with %g thread(s)", scaling, threads);
    CHECK(cli_json_get_num(root, "head_dim", 0) == 64 && cli_json_get_num(root, "kv_heads", 0) == 1);
    static const char *const keys[3] = { "fp16", "q8_0", "kivi:bits=2,qbits=8" };
    for (size_t c = 0; c < 2; c++) {
        double bytes[3] = { 0 };
        for (size_t k = 0; k < 3; k++) {
            const cli_json_node *r = result(root, 3 * c + k);
            CHECKF(r != NULL, "result %zu missing", 3 * c + k);
            if (!r)
                continue;
            CHECK(cli_json_get_num(r, "ctx", 0) == (c ? 520 : 300));
            CHECKF(strcmp(cli_json_get_str(r, "keys", ""), keys[k]) == 0, "keys %s, want %s",
                   cli_json_get_str(r, "keys", ""), keys[k]);
            const double ms = cli_json_get_num(r, "ms_per_token", -1.0), gbs = cli_json_get_num(r, "gbs", -1.0);
            bytes[k] = cli_json_get_num(r, "kv_bytes", -1.0);
            CHECK(ms > 0.0 && cli_json_get_num(r, "score_ms_per_token", -1.0) > 0.0 && bytes[k] > 0.0);
            CHECK_NEAR(gbs, bytes[k] / (ms * 1e-3) / 1e9, 2e-3 * gbs + 1e-3);
            CHECK_NEAR(cli_json_get_num(r, "fraction_of_bandwidth", -1.0), gbs / bw, 1e-3);
            CHECK(cli_json_get_num(r, "speedup_vs_fp16", -1.0) > 0.0);
            CHECK(cli_json_get_num(r, "score_speedup_vs_fp16", -1.0) > 0.0);
            if (k == 0) /* the reference of itself */
                CHECK(cli_json_get_num(r, "speedup_vs_fp16", 0) == 1.0 &&
                      cli_json_get_num(r, "score_speedup_vs_fp16", 0) == 1.0);
        }
        /* accounted bytes: fp16 > q8_0 > 2-bit KIVI */
        CHECKF(bytes[0] > bytes[1] && bytes[1] > bytes[2], "ctx %d bytes %g %g %g", c ? 520 : 300, bytes[0],
               bytes[1], bytes[2]);
    }
    CHECK(result(root, 6) == NULL);
    cli_json_node_free(root);
}

/* a prerope=1 config runs (the bench sets llama's RoPE on its caches;
 * before, every append was refused): its row is there, scored and summed,
 * with fewer bytes than fp16's */
static void test_attention_prerope(void)
{
    cli_json_node *root = run_json("--ctx 300 --head-dim 64 --kv-heads 1 --q-heads 2 --repeats 3 "
                                   "--config 'keys=kivix:bits=4 values=fp16 prerope=1'");
    if (!root)
        return;
    const cli_json_node *f = result(root, 0), *r = result(root, 1);
    CHECK(f != NULL && r != NULL && result(root, 2) == NULL);
    if (f && r) {
        CHECKF(strcmp(cli_json_get_str(r, "keys", ""), "kivix:bits=4") == 0, "keys %s",
               cli_json_get_str(r, "keys", ""));
        CHECK(cli_json_get_num(r, "ms_per_token", -1.0) > 0.0 && cli_json_get_num(r, "score_ms_per_token", -1.0) > 0.0);
        CHECK(cli_json_get_num(r, "kv_bytes", -1.0) > 0.0 &&
              cli_json_get_num(r, "kv_bytes", -1.0) < cli_json_get_num(f, "kv_bytes", 0.0));
    }
    cli_json_node_free(root);
}

/* bad input: exit status 2 (a usage error), the first stderr line naming
 * the bad part, then the usage lines */
static void expect_bad(const char *args, const char *needle)
{
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "%s bench attention %s 2>&1 >/dev/null", cli, args);
    int rc = vq_test_run(cmd, err, sizeof err);
    CHECKF(rc == 2, "'%s' exited %d", args, rc);
    const char *nl = strchr(err, '\n');
    CHECKF(nl && strstr(err, needle) && strstr(err, needle) < nl, "'%s': first line of '%s' does not name '%s'", args,
           err, needle);
    CHECKF(strstr(err, "usage: veloxquant bench attention") != NULL, "'%s': no usage line: %s", args, err);
}

static void test_bad_input(void)
{
    expect_bad("--config 'keys=nosuch values=fp16'", "nosuch");
    expect_bad("--head-dim 48", "48");
    expect_bad("--kv-heads 2 --q-heads 3", "--q-heads 3");
    expect_bad("--ctx 0", "ctx");
}

int main(void)
{
    const char *path = vq_test_cli();
    if (path) {
        snprintf(cli, sizeof cli, "%s", path);
        RUN(test_attention_json);
        RUN(test_attention_prerope);
        RUN(test_bad_input);
    }
    return vq_test_summary("test_bench_cli");
}
