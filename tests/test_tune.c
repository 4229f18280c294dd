/* test_tune.c -- `veloxquant tune` on smollm2-135m (256 tokens, few
 * candidates, so it stays under a minute):
 *   - the pick is one of the measured candidates, within the budget
 *     (measured bits per element), with the lowest KL of the eligible ones;
 *   - it never picks a config beyond --max-kl: with a threshold below every
 *     candidate's KL nothing is picked and the exit status is 1;
 *   - a budget below every candidate is refused with a message;
 *   - --groups KG,VG outside 16..256 and --vplan LOW > HIGH are usage
 *     errors (exit 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_read.h"
#include "test.h"

static char cli[512];

/* run tune with args, parse its JSON stdout; returns exit status */
static int tune(const char *model, const char *wiki, const char *args, cli_json_node **root)
{
    char cmd[2048], out[700];
    snprintf(out, sizeof out, "%s/tune.json", vq_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s tune --model %s --file %s --tokens 256 --json %s > %s 2>/dev/null", cli, model,
             wiki, args, out);
    int rc = system(cmd);
    *root = NULL;
    FILE *f = fopen(out, "rb");
    if (f) {
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        if (n && cli_json_parse(buf, n, root, NULL) != VQ_OK)
            *root = NULL;
    }
    return rc == -1 ? -1 : (rc >> 8) & 0xff;
}

static void test_pick(const char *model, const char *wiki)
{
    cli_json_node *r = NULL;
    int rc = tune(model, wiki, "--budget 4.6 --candidates 2", &r);
    CHECKF(rc == 0 && r, "tune --budget 4.6: exit %d", rc);
    if (!r)
        return;
    const char *pick = cli_json_get_str(r, "pick", "");
    const cli_json_node *cs = cli_json_get(r, "candidates");
    CHECK(cs && cs->type == CLI_JSON_ARRAY && cs->n == 2);
    double best = 1e30;
    int found = 0;
    for (size_t i = 0; cs && i < cs->n; i++) {
        const cli_json_node *c = &cs->children[i];
        double kl = cli_json_get_num(c, "kl", -1), bpe = cli_json_get_num(c, "bits_per_element", 99);
        int eligible = cli_json_get_num(c, "eligible", 0) != 0; /* BOOL reads as 0/1 */
        CHECK(kl >= 0 && bpe > 1 && bpe < 16);
        CHECK(eligible == (bpe <= 4.6 + 1e-9 && kl <= 0.5));
        if (eligible && kl < best)
            best = kl;
        if (strcmp(cli_json_get_str(c, "cache", ""), pick) == 0) {
            found = 1;
            CHECK(eligible && bpe <= 4.6 + 1e-9);
            CHECK_NEAR(kl, best, 0); /* the lowest so far; checked against all below */
        }
    }
    CHECKF(found, "pick '%s' is not among the measured candidates", pick);
    for (size_t i = 0; cs && i < cs->n; i++) {
        const cli_json_node *c = &cs->children[i];
        if (cli_json_get_num(c, "eligible", 0) != 0)
            CHECK(cli_json_get_num(c, "kl", -1) >= best);
    }
    cli_json_node_free(r);
}

static void test_never_breaks(const char *model, const char *wiki)
{
    cli_json_node *r = NULL;
    int rc = tune(model, wiki, "--budget 4.6 --candidates 2 --max-kl 1e-9", &r);
    CHECKF(rc == 1, "tune with --max-kl 1e-9 exits %d (want 1: nothing picked)", rc);
    if (r) {
        const cli_json_node *p = cli_json_get(r, "pick");
        CHECK(p && p->type == CLI_JSON_NULL);
        cli_json_node_free(r);
    }
    rc = tune(model, wiki, "--budget 1.0", &r);
    CHECKF(rc == 1 && r == NULL, "tune --budget 1.0: exit %d", rc);
    cli_json_node_free(r);
}

static void test_groups_refused(const char *model, const char *wiki)
{
    cli_json_node *r = NULL;
    const char *bad[] = { "--groups 300,64", "--groups 8,64", "--groups 128", "--groups 128,64,1", "--vplan 3,2",
                          "--vplan 0,2" };
    for (int i = 0; i < 6; i++) {
        char args[128];
        snprintf(args, sizeof args, "--budget 3 --plan 2,3 %s", bad[i]);
        int rc = tune(model, wiki, args, &r);
        CHECKF(rc == 2, "tune %s: exit %d (want 2, a usage error)", args, rc);
        cli_json_node_free(r);
        r = NULL;
    }
}

int main(void)
{
    const char *b = getenv("VQ_BUILD");
    snprintf(cli, sizeof cli, "%s/veloxquant", b && *b ? b : "build");
    const char *model = vq_test_model("smollm2-135m");
    const char *wiki = vq_test_data("wikitext-2-test.txt");
    if (model && wiki) {
        test_pick(model, wiki);
        test_never_breaks(model, wiki);
        test_groups_refused(model, wiki);
    }
    return vq_test_summary("tune");
}
