/* test_json.c -- the streaming JSON writer and the JSON reader: exact output for nesting,
 * escaping (quotes, backslashes, control characters, invalid UTF-8),
 * numbers, misuse detection, and the machine-facts helper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_write.h"
#include "util/json_read.h"
#include "util/sysinfo.h"
#include "test.h"

/* Write with a fresh buffer sink, return the malloc'd text (or NULL). */
static char *finish_text(cli_json *j, cli_json_buf *b, vq_status *st)
{
    *st = cli_json_finish(j);
    return b->data;
}

static void test_nesting_compact(void)
{
    cli_json_buf b = { 0 };
    cli_json j;
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_begin_object(&j);
    cli_json_kint(&j, "a", -3);
    cli_json_key(&j, "b");
    cli_json_begin_array(&j);
    cli_json_uint(&j, 18446744073709551615ull);
    cli_json_begin_object(&j);
    cli_json_end_object(&j);
    cli_json_begin_array(&j);
    cli_json_end_array(&j);
    cli_json_null(&j);
    cli_json_bool(&j, 1);
    cli_json_end_array(&j);
    cli_json_knum(&j, "c", 0.5);
    cli_json_knum(&j, "nan", 0.0 / 0.0);
    cli_json_kstr(&j, "d", NULL);
    cli_json_end_object(&j);
    vq_status st;
    char *t = finish_text(&j, &b, &st);
    CHECK(st == VQ_OK);
    CHECKF(t && strcmp(t, "{\"a\":-3,\"b\":[18446744073709551615,{},[],null,true],\"c\":0.5,\"nan\":null,\"d\":null}") == 0,
           "got %s", t ? t : "(null)");
    free(b.data);
}

static void test_pretty(void)
{
    cli_json_buf b = { 0 };
    cli_json j;
    cli_json_init(&j, cli_json_sink_buf, &b, 1);
    cli_json_begin_object(&j);
    cli_json_kint(&j, "x", 1);
    cli_json_key(&j, "y");
    cli_json_begin_array(&j);
    cli_json_int(&j, 2);
    cli_json_end_array(&j);
    cli_json_end_object(&j);
    vq_status st;
    char *t = finish_text(&j, &b, &st);
    CHECK(st == VQ_OK);
    CHECKF(t && strcmp(t, "{\n  \"x\": 1,\n  \"y\": [\n    2\n  ]\n}\n") == 0, "got %s", t ? t : "(null)");
    free(b.data);
}

static void test_escaping(void)
{
    cli_json_buf b = { 0 };
    cli_json j;
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_begin_array(&j);
    cli_json_str(&j, "q\"b\\s/\n\r\t\b\f\x01\x1f end");
    /* valid UTF-8 (é, €, 😀) passes through unchanged */
    cli_json_str(&j, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    /* invalid: lone continuation, truncated sequence, overlong, surrogate */
    cli_json_str(&j, "a\x80" "b\xC3");
    cli_json_str(&j, "\xC0\xAF|\xED\xA0\x80");
    /* embedded NUL via strn */
    cli_json_strn(&j, "x\0y", 3);
    cli_json_key(&j, "k"); /* key in an array: misuse */
    cli_json_end_array(&j);
    vq_status st;
    char *t = finish_text(&j, &b, &st);
    CHECK(st == VQ_ERR_STATE);
    const char *want = "[\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0001\\u001f end\","
                       "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\","
                       "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\","
                       "\"\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\","
                       "\"x\\u0000y\"";
    CHECKF(t && strcmp(t, want) == 0, "got %s", t ? t : "(null)");
    free(b.data);
}

static void test_misuse(void)
{
    cli_json j;
    cli_json_buf b = { 0 };
    /* value without key in an object */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_begin_object(&j);
    cli_json_int(&j, 1);
    cli_json_end_object(&j);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    /* unbalanced */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_begin_array(&j);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    /* wrong closer */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_begin_array(&j);
    cli_json_end_object(&j);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    /* two roots */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    cli_json_int(&j, 1);
    cli_json_int(&j, 2);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    /* nothing */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    /* too deep: CLI_JSON_MAX_DEPTH levels are fine, one more is refused */
    cli_json_init(&j, cli_json_sink_buf, &b, 0);
    for (int i = 0; i < CLI_JSON_MAX_DEPTH; i++)
        cli_json_begin_array(&j);
    CHECK(j.st == VQ_OK);
    cli_json_begin_array(&j);
    CHECK(cli_json_finish(&j) == VQ_ERR_STATE);
    free(b.data);
}

static int failing_sink(void *user, const char *d, size_t n)
{
    (void)d;
    int *budget = user;
    if ((size_t)*budget < n)
        return -1;
    *budget -= (int)n;
    return 0;
}

static void test_sink_failure(void)
{
    int budget = 5;
    cli_json j;
    cli_json_init(&j, failing_sink, &budget, 0);
    cli_json_begin_object(&j);
    cli_json_kstr(&j, "long key", "value");
    cli_json_end_object(&j);
    CHECK(cli_json_finish(&j) == VQ_ERR_IO);
}

/* one string literal straight to a FILE (the printf-style commands) */
static void test_print_str(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    cli_json_print_str(f, "a\"b\\c\nd\x01 \xff!");
    cli_json_print_str(f, NULL);
    long n = ftell(f);
    char buf[64] = "";
    rewind(f);
    CHECK(n > 0 && n < (long)sizeof buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    CHECKF(strcmp(buf, "\"a\\\"b\\\\c\\nd\\u0001 \xef\xbf\xbd!\"\"\"") == 0, "got '%s'", buf);
}

static void test_sysinfo(void)
{
    cli_sysinfo s;
    cli_sysinfo_get(&s);
    CHECK(s.cpu_model[0] != 0);
    CHECK(s.n_cores >= 1);
    CHECK(s.mem_total_bytes > (uint64_t)64 << 20); /* any machine that runs the tests has > 64 MB */
    char d[32];
    cli_utc_now_iso8601(d, sizeof d);
    CHECKF(strlen(d) == 20 && d[4] == '-' && d[10] == 'T' && d[19] == 'Z', "date %s", d);
}


static void test_parse_roundtrip(void)
{
    /* what the writer writes, the reader reads back */
    cli_json_buf b = { 0 };
    cli_json j;
    cli_json_init(&j, cli_json_sink_buf, &b, 1);
    cli_json_begin_object(&j);
    cli_json_kstr(&j, "s", "a\"b\\c\n\x01\xC3\xA9");
    cli_json_knum(&j, "x", -1.25e-3);
    cli_json_key(&j, "arr");
    cli_json_begin_array(&j);
    cli_json_int(&j, 7);
    cli_json_bool(&j, 0);
    cli_json_null(&j);
    cli_json_end_array(&j);
    cli_json_end_object(&j);
    CHECK(cli_json_finish(&j) == VQ_OK);
    cli_json_node *root = NULL;
    CHECK_OK(cli_json_parse(b.data, b.len, &root, NULL));
    CHECK(root && root->type == CLI_JSON_OBJECT && root->n == 3);
    CHECK(strcmp(cli_json_get_str(root, "s", ""), "a\"b\\c\n\x01\xC3\xA9") == 0);
    CHECK_NEAR(cli_json_get_num(root, "x", 0), -1.25e-3, 1e-15);
    const cli_json_node *arr = cli_json_get(root, "arr");
    CHECK(arr && arr->type == CLI_JSON_ARRAY && arr->n == 3 && arr->children[0].num == 7 &&
          arr->children[1].type == CLI_JSON_BOOL && arr->children[2].type == CLI_JSON_NULL);
    CHECK(cli_json_get(root, "missing") == NULL && cli_json_get_num(root, "s", 5) == 5);
    cli_json_node_free(root);
    free(b.data);
}

static void test_parse_escapes(void)
{
    const char *t = "[\"\\u00e9\\u20ac\\ud83d\\ude00\\/\"]";
    cli_json_node *r = NULL;
    CHECK_OK(cli_json_parse(t, strlen(t), &r, NULL));
    CHECK(r && r->n == 1 && strcmp(r->children[0].str, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80/") == 0);
    cli_json_node_free(r);
}

static void test_parse_hostile(void)
{
    /* each must be refused with VQ_ERR_FORMAT, none may crash */
    static const char *const bad[] = {
        "", "   ", "{", "[1,]", "{\"a\" 1}", "{\"a\":}", "[1 2]", "\"abc", "\"a\\qb\"", "\"\\u12\"",
        "\"\\ud800\"", "\"\\udc00x\"", "\"\\ud800\\u0041\"", "01", "1.", "1e", "-", "+1", "nul", "truex",
        "[1] x", "{\"a\":1,}", "\"tab\there\"", "1e999", "[[[[",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cli_json_node *r = (cli_json_node *)1;
        vq_status st = cli_json_parse(bad[i], strlen(bad[i]), &r, NULL);
        CHECKF(st == VQ_ERR_FORMAT && r == NULL, "input %zu '%s' gave %s", i, bad[i], vq_status_str(st));
    }
    /* the message goes to err and names the byte offset */
    char err[CLI_JSON_ERRLEN] = "";
    cli_json_node *r0 = NULL;
    CHECK(cli_json_parse("[1,]", 4, &r0, err) == VQ_ERR_FORMAT && r0 == NULL);
    CHECKF(strstr(err, "json: ") == err && strstr(err, "at byte 3") != NULL, "message '%s'", err);
    /* nesting: the limit is accepted, one more refused */
    char deep[2 * CLI_JSON_PARSE_MAX_DEPTH + 4];
    int d = CLI_JSON_PARSE_MAX_DEPTH;
    for (int k = 0; k < 2; k++, d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        cli_json_node *r = NULL;
        vq_status st = cli_json_parse(deep, 2 * (size_t)d, &r, NULL);
        CHECKF(k == 0 ? st == VQ_OK : st == VQ_ERR_FORMAT, "depth %d gave %s", d, vq_status_str(st));
        cli_json_node_free(r);
    }
    /* not NUL-terminated: only len bytes are read */
    const char buf[3] = { '[', '1', ']' };
    cli_json_node *r = NULL;
    CHECK_OK(cli_json_parse(buf, 3, &r, NULL));
    cli_json_node_free(r);
}

int main(void)
{
    RUN(test_parse_roundtrip);
    RUN(test_parse_escapes);
    RUN(test_parse_hostile);
    RUN(test_nesting_compact);
    RUN(test_pretty);
    RUN(test_escaping);
    RUN(test_misuse);
    RUN(test_sink_failure);
    RUN(test_print_str);
    RUN(test_sysinfo);
    return vq_test_summary("json");
}
