/* test_codec_cli.c -- `veloxquant codecs` as a user runs it: the built CLI
 * ($VQ_BUILD/veloxquant, default build/, run from the repo root) must list
 * every registered method with the library's byte counts in --json, and a
 * bad spec must exit non-zero with one line on stderr naming the bad part. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "veloxquant.h"

static char cli[512];

/* the JSON object (up to its closing brace) whose name is `name` */
static const char *find_object(const char *json, const char *name, char *obj, size_t cap)
{
    char key[128];
    snprintf(key, sizeof key, "\"name\": \"%s\"", name);
    const char *p = strstr(json, key);
    if (!p)
        return NULL;
    const char *e = strchr(p, '}');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= cap)
        n = cap - 1;
    memcpy(obj, p, n);
    obj[n] = '\0';
    return obj;
}

static long field_long(const char *obj, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", field);
    const char *p = strstr(obj, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void test_json_lists_every_method(void)
{
    static char out[65536];
    char cmd[1024], obj[1024];
    snprintf(cmd, sizeof cmd, "%s codecs --head-dim 128 --json", cli);
    CHECKF(vq_test_run(cmd, out, sizeof out) == 0, "'%s' failed", cmd);
    CHECK(out[0] == '[' && strstr(out, "]") != NULL);
    int n = 0;
    for (int i = 0;; i++) {
        const char *def = NULL;
        const char *name = vq_codec_method(i, &def);
        if (!name)
            break;
        n++;
        CHECKF(find_object(out, name, obj, sizeof obj) != NULL, "method %s missing from the JSON", name);
        if (!find_object(out, name, obj, sizeof obj))
            continue;
        vq_codec *c = NULL;
        CHECK_OK(vq_codec_create(def, 128, VQ_ROLE_KEY, 1, &c));
        if (c) {
            CHECKF(field_long(obj, "bytes_per_token") == (long)vq_codec_bytes_per_token(c),
                   "%s: CLI says %ld bytes, library %zu", name, field_long(obj, "bytes_per_token"),
                   vq_codec_bytes_per_token(c));
            CHECK(strstr(obj, "\"bits_per_element\": ") && strstr(obj, "\"compression\": ") &&
                  strstr(obj, "\"needs_calibration\": ") && strstr(obj, "\"spec\": "));
            CHECK(strstr(obj, vq_codec_needs_calibration(c) ? "\"needs_calibration\": true"
                                                             : "\"needs_calibration\": false"));
        }
        vq_codec_free(c);
    }
    CHECK(n >= 8);
    CHECK(find_object(out, "turboquant_rvq", obj, sizeof obj) != NULL);
    CHECK(field_long(obj, "bytes_per_token") == 34);
    CHECK(strstr(obj, "\"compression\": 7.529") != NULL);
    CHECK(strstr(obj, "\"spec\": \"turboquant_rvq:bits=1,qbits=4\"") != NULL);
    CHECK(find_object(out, "q8_0", obj, sizeof obj) && field_long(obj, "bytes_per_token") == 4 * 34);
    CHECK(find_object(out, "q4_0", obj, sizeof obj) && field_long(obj, "bytes_per_token") == 4 * 18);
}

static void test_one_spec_and_table(void)
{
    static char out[65536];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s codecs --head-dim 64 --spec q4_0:rot=1 --json", cli);
    CHECK(vq_test_run(cmd, out, sizeof out) == 0);
    CHECK(strstr(out, "\"spec\": \"q4_0:rot=1,qbits=8\"") && strstr(out, "\"bytes_per_token\": 36"));
    CHECK(strstr(out, "\"name\": \"fp16\"") == NULL); /* only the given spec */
    snprintf(cmd, sizeof cmd, "%s codecs --head-dim 256", cli);
    CHECK(vq_test_run(cmd, out, sizeof out) == 0);
    CHECK(strstr(out, "turboquant_rvq") && strstr(out, "rabitq"));
}

/* bad input: non-zero exit, exactly one stderr line naming the bad part */
static void expect_bad(const char *args, const char *needle)
{
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "%s codecs %s 2>&1 >/dev/null", cli, args);
    int rc = vq_test_run(cmd, err, sizeof err);
    CHECKF(rc != 0 && rc != -1, "'%s' exited %d", args, rc);
    int lines = 0;
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    CHECKF(lines == 1, "'%s': %d stderr lines: %s", args, lines, err);
    CHECKF(strstr(err, needle) != NULL, "'%s': message '%s' does not name '%s'", args, err, needle);
}

static void test_bad_spec(void)
{
    expect_bad("--spec turboquant_rvq:bits=9", "bits");
    expect_bad("--spec nosuch", "nosuch");
    expect_bad("--spec q8_0:frobnicate=1", "frobnicate");
    expect_bad("--head-dim 48", "48");
    expect_bad("--head-dim 128 --spec 'rabitq:bits='", "bits");
}

int main(void)
{
    const char *path = vq_test_cli();
    if (path) {
        snprintf(cli, sizeof cli, "%s", path);
        RUN(test_json_lists_every_method);
        RUN(test_one_spec_and_table);
        RUN(test_bad_spec);
    }
    return vq_test_summary("test_codec_cli");
}
