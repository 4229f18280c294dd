/* test_validate.c -- `veloxquant validate` and `veloxquant ppl` on the real
 * default model (smollm2-135m), checked through their JSON output:
 *   - results.json has every top-level and per-arm field of the schema;
 *   - key_compression = fp16_key_bytes / (compressed_key_bytes +
 *     index_bytes / 2) for every arm (ratios include the slot index);
 *   - the RVQ-1bit key ratio is 2D / (ceil(2D/8) + 2) for the model's D;
 *   - accounted <= resident_kv_bytes <= the stated bound, and the bound is
 *     itself within an independent slack (one page per layer, head and
 *     role, plus the residual window);
 *   - output_preview is non-empty for every arm that did not fail; a
 *     failing arm records `error` and later arms still run;
 *   - the fp16 arm against itself: KL 0, top-1 1;
 *   - at a grown prompt the RVQ-1bit arm's resident key bytes are at most
 *     1/5 of fp16's (7.1x by formula, same page rounding) and its K+V
 *     resident bytes at most 0.6 of fp16's (keys packed, values fp16);
 *   - ppl: the fp16 cache config against the fp16 reference gives KL 0,
 *     top-1 1, dPPL 0; a lossy config (q4_0 with rotation) gives KL > 0.
 * Sizes: normal 8 generated tokens / prompt repeated 12 times (~600
 * tokens, 2 pages); quick mode 3 tokens / 9 repeats (~330 tokens). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_read.h"
#include "test.h"

static char cli[512];
static const char *model;

static cli_json_node *run_json_file(const char *cmd, const char *path)
{
    int rc = system(cmd);
    CHECKF(rc == 0, "command failed (%d): %s", rc, cmd);
    FILE *f = fopen(path, "rb");
    CHECKF(f != NULL, "%s missing after: %s", path, cmd);
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cli_json_node *root = NULL;
    char err[CLI_JSON_ERRLEN] = "";
    vq_status st = cli_json_parse(buf, n, &root, err);
    CHECKF(st == VQ_OK, "%s is not valid JSON: %s", path, err);
    return root;
}

static const cli_json_node *arm(const cli_json_node *root, const char *name)
{
    const cli_json_node *arms = cli_json_get(root, "arms");
    for (size_t i = 0; arms && i < arms->n; i++)
        if (strcmp(cli_json_get_str(&arms->children[i], "name", ""), name) == 0)
            return &arms->children[i];
    return NULL;
}

static double num(const cli_json_node *o, const char *k)
{
    const cli_json_node *n = cli_json_get(o, k);
    CHECKF(n && n->type == CLI_JSON_NUMBER, "field %s missing or not a number", k);
    return n && n->type == CLI_JSON_NUMBER ? n->num : NAN;
}

static void check_arm_invariants(const cli_json_node *root, const cli_json_node *a)
{
    static const char *const fields[] = {
        "tokens_in_cache_max", "fp16_key_bytes", "fp16_key_mb", "compressed_key_bytes", "compressed_key_mb",
        "key_compression", "fp16_value_bytes", "compressed_value_bytes", "value_compression",
        "full_kv_compression", "resident_kv_bytes", "residual_bytes", "peak_mb", "rss_peak_mb",
        "cache_share_of_rss_peak", "prefill_tok_s", "decode_tok_s", "throughput_tok_s",
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        num(a, fields[i]);
    CHECK(cli_json_get(a, "kl_vs_fp16") && cli_json_get(a, "top1_agreement_vs_fp16") &&
          cli_json_get(a, "greedy_matches_fp16"));
    double fk = num(a, "fp16_key_bytes"), ck = num(a, "compressed_key_bytes");
    double ix = num(a, "index_bytes");
    CHECK(fk > 0 && ck > 0 && ix >= 0);
    CHECK_NEAR(num(a, "key_compression"), fk / (ck + ix / 2), 1e-6 * fk / ck);
    double fv = num(a, "fp16_value_bytes"), cv = num(a, "compressed_value_bytes");
    CHECK_NEAR(num(a, "full_kv_compression"), (fk + fv) / (ck + cv + ix), 1e-6 * (fk + fv) / (ck + cv));
    CHECK(num(a, "total_cache_bytes") >= num(a, "resident_kv_bytes") + ix);
    double acc = num(a, "accounted_kv_bytes"), res = num(a, "resident_kv_bytes"), bound = num(a, "resident_bound_bytes");
    CHECKF(acc <= res && res <= bound, "%s: accounted %.0f resident %.0f bound %.0f",
           cli_json_get_str(a, "name", "?"), acc, res, bound);
    /* independent slack: one page (<= 256+63 tokens of fp16 width) per
     * layer, KV head and role, plus the residual window capacity */
    double L = num(root, "n_layers"), H = num(root, "n_kv_heads"), D = num(root, "head_dim");
    double slack = L * H * 2 * (256 + 63) * 2 * D + num(a, "residual_bytes");
    CHECKF(res - acc <= slack, "%s: resident exceeds accounted by %.0f > %.0f", cli_json_get_str(a, "name", "?"),
           res - acc, slack);
    /* a preview string for every arm; it may be empty when the arm's first
     * token ends generation (a broken config can do that), never for fp16 */
    const cli_json_node *pv = cli_json_get(a, "output_preview");
    CHECKF(pv && pv->type == CLI_JSON_STRING, "%s: no output_preview", cli_json_get_str(a, "name", "?"));
    if (strcmp(cli_json_get_str(a, "name", ""), "fp16") == 0)
        CHECKF(cli_json_get_str(a, "output_preview", "")[0] != 0, "fp16: empty output_preview");
}

static void test_validate_short(void)
{
    char out[600], cmd[2048], path[700];
    snprintf(out, sizeof out, "%s/v1", vq_test_tmpdir());
    int toks = vq_test_quick() ? 3 : 8;
    snprintf(cmd, sizeof cmd,
             "%s validate --model %s --max-tokens %d --out %s --arm 'name=fp16 keys=fp16 values=fp16' "
             "--arm 'name=bad keys=nosuch_method' --arm 'name=RVQ-1bit keys=turboquant_rvq:bits=1 values=fp16' "
             "--arm 'name=q4_0-rot keys=q4_0:rot=1 values=q4_0:rot=1' >/dev/null 2>&1",
             cli, model, toks, out);
    snprintf(path, sizeof path, "%s/smollm2-135m/results.json", out);
    cli_json_node *root = run_json_file(cmd, path);
    if (!root)
        return;
    CHECK(strcmp(cli_json_get_str(root, "schema", ""), "veloxquant.validate/1") == 0);
    static const char *const top[] = { "n_layers", "n_kv_heads", "n_q_heads", "head_dim", "max_tokens", "prompt_repeat" };
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        CHECK(num(root, top[i]) > 0);
    CHECK(num(root, "max_tokens") == toks);
    const cli_json_node *hw = cli_json_get(root, "hardware");
    CHECK(hw && cli_json_get_str(hw, "cpu_model", "")[0] && num(hw, "cores") >= 1 && num(hw, "memory_mb") > 0);
    CHECK(cli_json_get_str(root, "prompt", "")[0] && cli_json_get_str(root, "git_commit", "")[0] &&
          strstr(cli_json_get_str(root, "command_line", ""), "validate") &&
          strlen(cli_json_get_str(root, "date_utc", "")) == 20);
    const cli_json_node *f = arm(root, "fp16"), *bad = arm(root, "bad"), *rvq = arm(root, "RVQ-1bit"),
                       *q4 = arm(root, "q4_0-rot");
    CHECK(f && bad && rvq && q4);
    CHECKF(bad && strstr(cli_json_get_str(bad, "error", ""), "nosuch_method"), "bad arm: error names the method");
    const cli_json_node *list[] = { f, rvq, q4 };
    for (int i = 0; i < 3; i++) {
        CHECKF(list[i] && !cli_json_get(list[i], "error"), "arm %d failed: %s", i,
               list[i] ? cli_json_get_str(list[i], "error", "") : "missing");
        if (list[i] && !cli_json_get(list[i], "error"))
            check_arm_invariants(root, list[i]);
    }
    if (rvq && !cli_json_get(rvq, "error")) {
        double D = num(root, "head_dim");
        /* codec bytes per token: 2 bits per element + fp16 norm */
        double ck = num(rvq, "compressed_key_bytes"), held = num(rvq, "fp16_key_bytes") / (2 * D);
        CHECK_NEAR(ck / held, ceil(2 * D / 8) + 2, 1e-9 * ck / held);
    }
    if (f && !cli_json_get(f, "error")) {
        CHECK_NEAR(num(f, "kl_vs_fp16"), 0, 1e-6); /* teacher-forced batch vs step decode: same math */
        CHECK(num(f, "top1_agreement_vs_fp16") == 1);
        CHECK(num(f, "compressed_key_bytes") == num(f, "fp16_key_bytes"));
        CHECK(num(f, "key_compression") <= 1 && num(f, "key_compression") > 0.9); /* index: no per-slot tables */
    }
    cli_json_node_free(root);
}

static void test_validate_grown_prompt(void)
{
    char out[600], cmd[2048], path[700];
    snprintf(out, sizeof out, "%s/v2", vq_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s validate --model %s --max-tokens 2 --prompt-repeat %d --out %s "
                              "--arms fp16,RVQ-1bit >/dev/null 2>&1",
             cli, model, vq_test_quick() ? 9 : 12, out);
    snprintf(path, sizeof path, "%s/smollm2-135m/results.json", out);
    cli_json_node *root = run_json_file(cmd, path);
    if (!root)
        return;
    const cli_json_node *f = arm(root, "fp16"), *rvq = arm(root, "RVQ-1bit");
    CHECK(f && rvq && !cli_json_get(f, "error") && !cli_json_get(rvq, "error"));
    if (f && rvq && !cli_json_get(f, "error") && !cli_json_get(rvq, "error")) {
        CHECK(num(f, "tokens_in_cache_max") > 256); /* more than one page */
        check_arm_invariants(root, f);
        check_arm_invariants(root, rvq);
        double fk = num(f, "resident_key_bytes"), rk = num(rvq, "resident_key_bytes");
        CHECKF(rk <= fk / 5, "RVQ resident keys %.0f vs fp16 %.0f: not packed", rk, fk);
        double ft = num(f, "resident_kv_bytes"), rt = num(rvq, "resident_kv_bytes");
        CHECKF(rt <= 0.6 * ft, "RVQ resident K+V %.0f vs fp16 %.0f", rt, ft);
    }
    cli_json_node_free(root);
}

static void test_ppl_kl(void)
{
    const char *wiki = vq_test_data("wikitext-2-test.txt");
    if (!wiki)
        return;
    char cmd[2048], path[700];
    snprintf(path, sizeof path, "%s/ppl.json", vq_test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "%s ppl --model %s --file %s --skip 0.25 --ctx %d --chunks 1 --cache 'keys=fp16 values=fp16' "
             "--cache 'keys=q4_0:rot=1 values=q4_0:rot=1' --json > %s 2>/dev/null",
             cli, model, wiki, vq_test_quick() ? 48 : 128, path);
    cli_json_node *root = run_json_file(cmd, path);
    if (!root)
        return;
    const cli_json_node *cf = cli_json_get(root, "configs");
    CHECK(cf && cf->type == CLI_JSON_ARRAY && cf->n == 2);
    if (cf && cf->n == 2) {
        const cli_json_node *same = &cf->children[0], *lossy = &cf->children[1];
        CHECK(num(same, "kl") == 0 && num(same, "top1") == 1 && num(same, "dppl") == 0);
        /* codec bits (fp16 16; q4_0: 18 bytes per 32 values) plus the slot
         * index, here only the page tables (2 pointers per page, the first
         * table of 4 pages): 64 B per head over the few tokens held */
        double idx_bits = 8.0 * 64 / (vq_test_quick() ? 48 : 128) / 2 / num(root, "head_dim");
        CHECK_NEAR(num(same, "bits_per_element"), 16 + idx_bits, 0.01);
        CHECK(num(lossy, "kl") > 0);
        CHECK_NEAR(num(lossy, "bits_per_element"), 4.5 + idx_bits, 0.01);
        CHECK(num(lossy, "kv_bytes_8k") < num(same, "kv_bytes_8k") / 3);
    }
    cli_json_node_free(root);
}

int main(void)
{
    const char *b = getenv("VQ_BUILD");
    snprintf(cli, sizeof cli, "%s/veloxquant", b && *b ? b : "build");
    model = vq_test_model("smollm2-135m");
    FILE *f = fopen(cli, "r");
    CHECKF(f != NULL, "%s not built (run `make` first)", cli);
    if (f && model) {
        fclose(f);
        RUN(test_validate_short);
        RUN(test_validate_grown_prompt);
        RUN(test_ppl_kl);
    } else if (f) {
        fclose(f);
    }
    return vq_test_summary("validate");
}
