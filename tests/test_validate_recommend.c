/* test_validate_recommend.c -- `veloxquant recommend` on a synthetic quality
 * table (so the expected choice is known): each goal picks the method its
 * rule names (speed: from the measured decode rates), RAM limits are
 * honoured, and bad tables are refused with a
 * message instead of a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static char cli[512], table[600];

/* Methods (bytes per token, all layers full attention):
 *   fp16    2000 B/tok  dPPL 0     KL 0
 *   q4      600         0.1 (1%)   0.01   good
 *   tiny    150         0.8 (8%)   0.2    fair, calibrated
 *   rvq     1100        5.0 (50%)  1.5    poor
 *   stream  600, evicts, budget 516, KL 0.05
 * fp16 PPL 10; base_mb 100. */
static const char TABLE[] =
    "{\"schema\":\"veloxquant.quality/1\",\"models\":[{\"model\":\"m\",\"ppl_fp16\":10,\"base_mb\":100,\"methods\":["
    "{\"name\":\"fp16\",\"cache\":\"keys=fp16 values=fp16\",\"bits_per_element\":16,\"kv_bytes_per_token_full\":2000,"
    "\"dppl\":0,\"kl\":0,\"top1\":1},"
    "{\"name\":\"q4\",\"cache\":\"keys=q4_0:rot=1 values=q4_0:rot=1\",\"bits_per_element\":4.5,"
    "\"kv_bytes_per_token_full\":600,\"dppl\":0.1,\"kl\":0.01,\"top1\":0.98},"
    "{\"name\":\"tiny\",\"cache\":\"keys=vecinfer:calib=x\",\"bits_per_element\":1,\"kv_bytes_per_token_full\":150,"
    "\"dppl\":0.8,\"kl\":0.2,\"top1\":0.9,\"calibrated\":true},"
    "{\"name\":\"rvq\",\"cache\":\"keys=turboquant_rvq:bits=1\",\"bits_per_element\":9,\"kv_bytes_per_token_full\":1100,"
    "\"dppl\":5,\"kl\":1.5,\"top1\":0.4},"
    "{\"name\":\"stream\",\"cache\":\"keys=q4_0:rot=1 evict=streaming_llm:sinks=4,window=512\",\"bits_per_element\":4.5,"
    "\"kv_bytes_per_token_full\":600,\"dppl\":0.5,\"kl\":0.05,\"top1\":0.95,\"evicts\":true,\"evict_budget\":516}"
    "]}]}";

/* Run recommend; return its exit status and the "use:" line in `use`. */
static int rec(const char *args, char *use, size_t cap)
{
    char cmd[2048], out[700];
    snprintf(out, sizeof out, "%s/rec.txt", vq_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s recommend --table %s %s > %s 2>&1", cli, table, args, out);
    int rc = system(cmd);
    use[0] = 0;
    FILE *f = fopen(out, "r");
    if (f) {
        char line[1024];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "use: ", 5) == 0) {
                snprintf(use, cap, "%.200s", line + 5);
                use[strcspn(use, "\n")] = 0;
            }
        fclose(f);
    }
    return rc == -1 ? -1 : (rc >> 8) & 0xff;
}

/* Write json to the file `name` in the test directory and make it the
 * table rec() reads; the previous table's path goes to saved. 0 if it
 * could not be written. */
static int use_table(const char *json, const char *name, char *saved, size_t cap)
{
    char path[600];
    snprintf(path, sizeof path, "%.500s/%s", vq_test_tmpdir(), name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return 0;
    fputs(json, f);
    fclose(f);
    snprintf(saved, cap, "%s", table);
    snprintf(table, sizeof table, "%s", path);
    return 1;
}

static void test_goals(void)
{
    char use[256];
    /* 1000 MB RAM -> 900 MB for K/V; ctx 1000 fits everything */
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal everyday", use, sizeof use) == 0);
    CHECKF(strcmp(use, "q4") == 0, "everyday: %s (tiny needs calibration, rvq is poor)", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal max-compression", use, sizeof use) == 0);
    CHECKF(strcmp(use, "tiny") == 0, "max-compression: %s", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal quality", use, sizeof use) == 0);
    CHECKF(strcmp(use, "q4") == 0, "quality: %s (fp16 does not compress)", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal max-context", use, sizeof use) == 0);
    CHECKF(strcmp(use, "tiny") == 0, "max-context: %s", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal constant-memory", use, sizeof use) == 0);
    CHECKF(strcmp(use, "stream") == 0, "constant-memory: %s", use);
    /* 101 MB: 1 MB for K/V = 1048576 B; at 4000 tokens q4 needs 2.4 MB,
     * tiny 0.6 MB -> everyday finds nothing (exit 3), max-compression tiny */
    CHECK(rec("--model m --ram-mb 101 --ctx 4000 --goal everyday", use, sizeof use) == 3);
    CHECK(rec("--model m --ram-mb 101 --ctx 4000 --goal max-compression", use, sizeof use) == 0);
    CHECKF(strcmp(use, "tiny") == 0, "tight RAM: %s", use);
    /* the evicting method holds 516 tokens whatever the context: 0.3 MB */
    CHECK(rec("--model m --ram-mb 101 --ctx 100000 --goal constant-memory", use, sizeof use) == 0);
    CHECKF(strcmp(use, "stream") == 0, "constant-memory at 100k: %s", use);
}

/* Two configs of the same codecs, one with 4 fp16 sink tokens (93,600
 * fixed bytes, 0.5 % of the cache at 4096 tokens) and 2.5x lower KL: the
 * smallest-cache goals take the one with sinks (sizes within 2 % tie), and
 * a cache clearly smaller still wins. */
static void test_size_ties(void)
{
    static const char T2[] =
        "{\"schema\":\"veloxquant.quality/1\",\"models\":[{\"model\":\"m\",\"ppl_fp16\":10,\"base_mb\":100,\"methods\":["
        "{\"name\":\"nosinks\",\"cache\":\"keys=kivix values=kivix\",\"bits_per_element\":3,"
        "\"kv_bytes_per_token_full\":4320,\"dppl\":0.9,\"kl\":0.08,\"top1\":0.86},"
        "{\"name\":\"sinks\",\"cache\":\"keys=kivix values=kivix sinks=4\",\"bits_per_element\":3,"
        "\"kv_bytes_per_token_full\":4320,\"kv_fixed_bytes\":93600,\"dppl\":0.22,\"kl\":0.034,\"top1\":0.9},"
        "{\"name\":\"small\",\"cache\":\"keys=kivix values=kivix k2\",\"bits_per_element\":2.5,"
        "\"kv_bytes_per_token_full\":3600,\"dppl\":0.95,\"kl\":0.12,\"top1\":0.8}"
        "]}]}";
    char use[256], t2[600];
    snprintf(t2, sizeof t2, "%.500s/quality2.json", vq_test_tmpdir());
    FILE *f = fopen(t2, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(T2, f);
    fclose(f);
    char saved[600];
    snprintf(saved, sizeof saved, "%s", table);
    snprintf(table, sizeof table, "%s", t2);
    /* 'small' is 17 % smaller: it wins everyday; without it, sinks beats nosinks */
    CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal everyday", use, sizeof use) == 0);
    CHECKF(strcmp(use, "small") == 0, "everyday: %s (17%% smaller than the others)", use);
    /* with 'small' poor (dPPL 50 %) the two 3-bit configs remain: their sizes tie */
    snprintf(table, sizeof table, "%s", saved);
    f = fopen(t2, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    char *poor = malloc(sizeof T2);
    CHECK(poor != NULL);
    if (!poor) {
        fclose(f);
        return;
    }
    memcpy(poor, T2, sizeof T2);
    char *at = strstr(poor, "\"dppl\":0.95");
    CHECK(at != NULL);
    if (at)
        memcpy(at, "\"dppl\":5.00", strlen("\"dppl\":5.00"));
    fputs(poor, f);
    fclose(f);
    free(poor);
    snprintf(table, sizeof table, "%s", t2);
    CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal everyday", use, sizeof use) == 0);
    CHECKF(strcmp(use, "sinks") == 0, "everyday: %s (sizes within 2%% tie: the lower KL wins)", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal max-compression", use, sizeof use) == 0);
    CHECKF(strcmp(use, "sinks") == 0, "max-compression: %s", use);
    snprintf(table, sizeof table, "%s", saved);
}

/* everyday: a fair pick gives way to a good method at most 10 % larger
 * (gemma3's 2.78 b/e +8.3 % against the 2.98 b/e +1.7 % plan), not to one
 * a third larger; max-compression keeps the smallest. */
static void test_good_premium(void)
{
    static const char T3[] =
        "{\"schema\":\"veloxquant.quality/1\",\"models\":[{\"model\":\"m\",\"ppl_fp16\":10,\"base_mb\":100,\"methods\":["
        "{\"name\":\"fair\",\"cache\":\"keys=kivix:bits=3 values=kivix:bits=2\",\"bits_per_element\":2.78,"
        "\"kv_bytes_per_token_full\":2780,\"dppl\":0.83,\"kl\":0.076,\"top1\":0.88},"
        "{\"name\":\"good\",\"cache\":\"keys=kivix:bits=2 kbits=x\",\"bits_per_element\":2.98,"
        "\"kv_bytes_per_token_full\":2980,\"dppl\":0.17,\"kl\":0.026,\"top1\":0.92},"
        "{\"name\":\"good4\",\"cache\":\"keys=kivix:bits=4 values=kivix:bits=4\",\"bits_per_element\":4.28,"
        "\"kv_bytes_per_token_full\":4280,\"dppl\":0.02,\"kl\":0.009,\"top1\":0.95}"
        "]}]}";
    char use[256], t3[600], saved[600];
    if (!use_table(T3, "quality3.json", saved, sizeof saved))
        return;
    snprintf(t3, sizeof t3, "%s", table);
    FILE *f;
    CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal everyday", use, sizeof use) == 0);
    CHECKF(strcmp(use, "good") == 0, "everyday: %s (good and 7%% larger than the fair pick)", use);
    CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal max-compression", use, sizeof use) == 0);
    CHECKF(strcmp(use, "fair") == 0, "max-compression: %s", use);
    /* without 'good', the next good method is 54 % larger: the fair one stays */
    f = fopen(t3, "w");
    CHECK(f != NULL);
    if (f) {
        const char *g0 = strstr(T3, "{\"name\":\"good\""), *g1 = strstr(T3, "{\"name\":\"good4\"");
        if (g0 && g1) {
            fwrite(T3, 1, (size_t)(g0 - T3), f);
            fputs(g1, f);
        }
        fclose(f);
        CHECK(rec("--model m --ram-mb 1000 --ctx 4096 --goal everyday", use, sizeof use) == 0);
        CHECKF(strcmp(use, "fair") == 0, "everyday: %s (the good one is 54%% larger)", use);
    }
    snprintf(table, sizeof table, "%s", saved);
}

/* speed: only good or fair methods without calibration or eviction that
 * were measured faster than fp16 (decode_vs_fp16 > 1); the fastest, and
 * within 2 % the smaller cache; none that fits -> exit 3 */
static void test_speed(void)
{
    static const char T4[] =
        "{\"schema\":\"veloxquant.quality/1\",\"models\":[{\"model\":\"m\",\"ppl_fp16\":10,\"base_mb\":100,\"methods\":["
        "{\"name\":\"fp16\",\"cache\":\"keys=fp16 values=fp16\",\"bits_per_element\":16,"
        "\"kv_bytes_per_token_full\":2000,\"dppl\":0,\"kl\":0,\"top1\":1,\"decode_vs_fp16\":1,\"decode_ctx\":4096},"
        "{\"name\":\"slow\",\"cache\":\"keys=a\",\"bits_per_element\":4,\"kv_bytes_per_token_full\":400,"
        "\"dppl\":0.1,\"kl\":0.01,\"top1\":0.98,\"decode_vs_fp16\":0.9,\"decode_ctx\":4096},"
        "{\"name\":\"q4\",\"cache\":\"keys=b\",\"bits_per_element\":4.5,\"kv_bytes_per_token_full\":600,"
        "\"dppl\":0.1,\"kl\":0.01,\"top1\":0.98,\"decode_vs_fp16\":1.3,\"decode_ctx\":4096},"
        "{\"name\":\"q4small\",\"cache\":\"keys=c\",\"bits_per_element\":4,\"kv_bytes_per_token_full\":500,"
        "\"dppl\":0.5,\"kl\":0.04,\"top1\":0.95,\"decode_vs_fp16\":1.29,\"decode_ctx\":4096},"
        "{\"name\":\"q8\",\"cache\":\"keys=d\",\"bits_per_element\":8.5,\"kv_bytes_per_token_full\":1000,"
        "\"dppl\":0.02,\"kl\":0.004,\"top1\":0.99,\"decode_vs_fp16\":1.1,\"decode_ctx\":4096},"
        "{\"name\":\"tiny\",\"cache\":\"keys=e,calib=x\",\"bits_per_element\":1,\"kv_bytes_per_token_full\":150,"
        "\"dppl\":0.8,\"kl\":0.2,\"top1\":0.9,\"calibrated\":true,\"decode_vs_fp16\":2,\"decode_ctx\":4096},"
        "{\"name\":\"rvq\",\"cache\":\"keys=f\",\"bits_per_element\":2,\"kv_bytes_per_token_full\":300,"
        "\"dppl\":5,\"kl\":1.5,\"top1\":0.4,\"decode_vs_fp16\":3,\"decode_ctx\":4096},"
        "{\"name\":\"stream\",\"cache\":\"keys=g evict=streaming_llm:sinks=4,window=512\",\"bits_per_element\":4.5,"
        "\"kv_bytes_per_token_full\":600,\"dppl\":0.5,\"kl\":0.05,\"top1\":0.95,\"evicts\":true,\"evict_budget\":516,"
        "\"decode_vs_fp16\":4,\"decode_ctx\":4096},"
        "{\"name\":\"unmeasured\",\"cache\":\"keys=h\",\"bits_per_element\":3,\"kv_bytes_per_token_full\":300,"
        "\"dppl\":0.1,\"kl\":0.01,\"top1\":0.98}"
        "]}]}";
    char use[256], saved[600];
    if (!use_table(T4, "quality4.json", saved, sizeof saved))
        return;
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal speed", use, sizeof use) == 0);
    CHECKF(strcmp(use, "q4small") == 0, "speed: %s (q4small within 2%% of q4's rate and smaller)", use);
    /* 0.5 MB for K/V at 1000 tokens: q4small needs 0.48 MB, q4 0.57 */
    CHECK(rec("--model m --ram-mb 100.5 --ctx 1000 --goal speed", use, sizeof use) == 0);
    CHECKF(strcmp(use, "q4small") == 0, "speed, tight RAM: %s", use);
    CHECK(rec("--model m --ram-mb 100.4 --ctx 1000 --goal speed", use, sizeof use) == 3);
    snprintf(table, sizeof table, "%s", saved);
}

static void test_bad_input(void)
{
    char use[256];
    CHECK(rec("--model nosuch --ram-mb 1000 --ctx 1000 --goal everyday", use, sizeof use) == 1);
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal fastest", use, sizeof use) == 2);
    CHECK(rec("--model m --ram-mb -5 --ctx 1000 --goal everyday", use, sizeof use) == 2);
    /* a truncated table is refused */
    FILE *f = fopen(table, "w");
    if (f) {
        fwrite(TABLE, 1, sizeof TABLE / 2, f);
        fclose(f);
    }
    CHECK(rec("--model m --ram-mb 1000 --ctx 1000 --goal everyday", use, sizeof use) == 1);
}

int main(void)
{
    const char *b = getenv("VQ_BUILD");
    snprintf(cli, sizeof cli, "%s/veloxquant", b && *b ? b : "build");
    snprintf(table, sizeof table, "%s/quality.json", vq_test_tmpdir());
    FILE *f = fopen(table, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(TABLE, f);
        fclose(f);
        RUN(test_goals);
        RUN(test_size_ties);
        RUN(test_good_premium);
        RUN(test_speed);
        RUN(test_bad_input);
    }
    return vq_test_summary("validate_recommend");
}
