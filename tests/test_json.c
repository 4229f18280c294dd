/* test_json.c -- the streaming JSON writer: exact output for nesting,
 * escaping (quotes, backslashes, control characters, invalid UTF-8),
 * numbers, misuse detection, and the machine-facts helper. */
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/sysinfo.h"
#include "test.h"

/* Write with a fresh buffer sink, return the malloc'd text (or NULL). */
static char *finish_text(vq_json *j, vq_json_buf *b, vq_status *st)
{
    *st = vq_json_finish(j);
    return b->data;
}

static void test_nesting_compact(void)
{
    vq_json_buf b = { 0 };
    vq_json j;
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_begin_object(&j);
    vq_json_kint(&j, "a", -3);
    vq_json_key(&j, "b");
    vq_json_begin_array(&j);
    vq_json_uint(&j, 18446744073709551615ull);
    vq_json_begin_object(&j);
    vq_json_end_object(&j);
    vq_json_begin_array(&j);
    vq_json_end_array(&j);
    vq_json_null(&j);
    vq_json_bool(&j, 1);
    vq_json_end_array(&j);
    vq_json_knum(&j, "c", 0.5);
    vq_json_knum(&j, "nan", 0.0 / 0.0);
    vq_json_kstr(&j, "d", NULL);
    vq_json_end_object(&j);
    vq_status st;
    char *t = finish_text(&j, &b, &st);
    CHECK(st == VQ_OK);
    CHECKF(t && strcmp(t, "{\"a\":-3,\"b\":[18446744073709551615,{},[],null,true],\"c\":0.5,\"nan\":null,\"d\":null}") == 0,
           "got %s", t ? t : "(null)");
    free(b.data);
}

static void test_pretty(void)
{
    vq_json_buf b = { 0 };
    vq_json j;
    vq_json_init(&j, vq_json_sink_buf, &b, 1);
    vq_json_begin_object(&j);
    vq_json_kint(&j, "x", 1);
    vq_json_key(&j, "y");
    vq_json_begin_array(&j);
    vq_json_int(&j, 2);
    vq_json_end_array(&j);
    vq_json_end_object(&j);
    vq_status st;
    char *t = finish_text(&j, &b, &st);
    CHECK(st == VQ_OK);
    CHECKF(t && strcmp(t, "{\n  \"x\": 1,\n  \"y\": [\n    2\n  ]\n}\n") == 0, "got %s", t ? t : "(null)");
    free(b.data);
}

static void test_escaping(void)
{
    vq_json_buf b = { 0 };
    vq_json j;
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_begin_array(&j);
    vq_json_str(&j, "q\"b\\s/\n\r\t\b\f\x01\x1f end");
    /* valid UTF-8 (é, €, 😀) passes through unchanged */
    vq_json_str(&j, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    /* invalid: lone continuation, truncated sequence, overlong, surrogate */
    vq_json_str(&j, "a\x80" "b\xC3");
    vq_json_str(&j, "\xC0\xAF|\xED\xA0\x80");
    /* embedded NUL via strn */
    vq_json_strn(&j, "x\0y", 3);
    vq_json_key(&j, "k"); /* key in an array: misuse */
    vq_json_end_array(&j);
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
    vq_json j;
    vq_json_buf b = { 0 };
    /* value without key in an object */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_begin_object(&j);
    vq_json_int(&j, 1);
    vq_json_end_object(&j);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
    /* unbalanced */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_begin_array(&j);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
    /* wrong closer */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_begin_array(&j);
    vq_json_end_object(&j);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
    /* two roots */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    vq_json_int(&j, 1);
    vq_json_int(&j, 2);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
    /* nothing */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
    /* too deep: VQ_JSON_MAX_DEPTH levels are fine, one more is refused */
    vq_json_init(&j, vq_json_sink_buf, &b, 0);
    for (int i = 0; i < VQ_JSON_MAX_DEPTH; i++)
        vq_json_begin_array(&j);
    CHECK(j.st == VQ_OK);
    vq_json_begin_array(&j);
    CHECK(vq_json_finish(&j) == VQ_ERR_STATE);
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
    vq_json j;
    vq_json_init(&j, failing_sink, &budget, 0);
    vq_json_begin_object(&j);
    vq_json_kstr(&j, "long key", "value");
    vq_json_end_object(&j);
    CHECK(vq_json_finish(&j) == VQ_ERR_IO);
}

static void test_sysinfo(void)
{
    vq_sysinfo s;
    vq_sysinfo_get(&s);
    CHECK(s.cpu_model[0] != 0);
    CHECK(s.n_cores >= 1);
    CHECK(s.mem_total_bytes > (uint64_t)64 << 20); /* any machine that runs the tests has > 64 MB */
    char d[32];
    vq_utc_now_iso8601(d, sizeof d);
    CHECKF(strlen(d) == 20 && d[4] == '-' && d[10] == 'T' && d[19] == 'Z', "date %s", d);
}

int main(void)
{
    RUN(test_nesting_compact);
    RUN(test_pretty);
    RUN(test_escaping);
    RUN(test_misuse);
    RUN(test_sink_failure);
    RUN(test_sysinfo);
    return vq_test_summary("json");
}
