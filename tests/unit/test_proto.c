/* The wire protocol: strict JSON, request and reply validation with precise
 * messages, and encode -> decode -> encode round trips of every message. */
#include "check.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/proto.h"
#include "mini/utf8.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXID "9007199254740991"

/* '*' in want matches any run of characters. */
static bool msg_matches(const char *got, const char *want)
{
    if (*want == '*')
        return msg_matches(got, want + 1) || (*got && msg_matches(got + 1, want));
    if (*want == '\0' || *got != *want)
        return *want == '\0' && *got == '\0';
    return msg_matches(got + 1, want + 1);
}

static void bad_req_len(int line, const char *json, size_t len, int64_t want_id, const char *want)
{
    struct mini_req req;
    struct mini_err e;
    int64_t id = 12345;
    mini_err_clear(&e);
    int r = mini_req_decode(json, len, &req, &id, &e);
    CHECK_MSG(r == -1, "line %d: accepted %s", line, json);
    CHECK_MSG(e.code == MINI_E_BAD_REQUEST, "line %d: code %s", line, mini_errc_name(e.code));
    CHECK_MSG(id == want_id, "line %d: id %" PRId64 ", want %" PRId64, line, id, want_id);
    CHECK_MSG(msg_matches(e.msg, want), "line %d: message \"%s\", want \"%s\"", line, e.msg, want);
    CHECK_MSG(mini_utf8_valid(e.msg, strlen(e.msg)), "line %d: message is not UTF-8", line);
    mini_req_free(&req); /* harmless after a failure */
}
#define BAD_REQ(json, id, want) bad_req_len(__LINE__, json, strlen(json), id, want)

static void bad_rep(int line, const char *json, const char *want)
{
    struct mini_rep rep;
    struct mini_err e;
    mini_err_clear(&e);
    int r = mini_rep_decode(json, strlen(json), &rep, &e);
    CHECK_MSG(r == -1, "line %d: accepted %s", line, json);
    CHECK_MSG(e.code == MINI_E_BAD_REQUEST, "line %d: code %s", line, mini_errc_name(e.code));
    CHECK_MSG(msg_matches(e.msg, want), "line %d: message \"%s\", want \"%s\"", line, e.msg, want);
    mini_rep_free(&rep);
}
#define BAD_REP(json, want) bad_rep(__LINE__, json, want)

static int decode_req(const char *json, struct mini_req *req)
{
    struct mini_err e;
    int64_t id;
    int r = mini_req_decode(json, strlen(json), req, &id, &e);
    CHECK_MSG(r == 0, "rejected %s: %s", json, e.msg);
    CHECK(r != 0 || id == req->id);
    return r;
}

static int decode_rep(const char *json, struct mini_rep *rep)
{
    struct mini_err e;
    int r = mini_rep_decode(json, strlen(json), rep, &e);
    CHECK_MSG(r == 0, "rejected %s: %s", json, e.msg);
    return r;
}

/* ------------------------------------------------------------ strict JSON */

#define PARSE(s) mini_json_parse(s, strlen(s), &e)

/* mini_json_print_py: the bytes Python's json.dumps(v, indent=2) writes
 * (expected values from CPython 3). */
static void test_json_py(void)
{
    struct mini_err e;
    static const struct {
        double d;
        const char *py;
    } nums[] = {
        { 1.0, "1.0" },
        { 0.1, "0.1" },
        { 1e16, "1e+16" },
        { 1e-5, "1e-05" },
        { 123456789012345678.0, "1.2345678901234568e+17" },
        { 1.5e-7, "1.5e-07" },
        { 0.0001, "0.0001" },
        { -2.5, "-2.5" },
        { 1e22, "1e+22" },
        { 1234.5678, "1234.5678" },
        { 1763977447.123456, "1763977447.123456" },
        { 5e-324, "5e-324" },
        { 1.7976931348623157e308, "1.7976931348623157e+308" },
        { 100.0, "100.0" },
    };
    static const char *const fk[] = { "cost", NULL };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(nums); i++) {
        struct mini_buf b = MINI_BUF_INIT;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "cost", nums[i].d);
        CHECK(mini_json_print_py(&b, cJSON_GetObjectItem(o, "cost"), fk, &e) == 0);
        CHECK_STR(b.data, nums[i].py);
        mini_buf_free(&b);
        cJSON_Delete(o);
    }
    cJSON *v = PARSE("{\"a\":[],\"b\":{},\"c\":[1,{\"d\":\"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\\"\\\\\"}],"
                     "\"cost\":1,\"n\":3}");
    CHECK(v != NULL);
    struct mini_buf b = MINI_BUF_INIT;
    CHECK(mini_json_print_py(&b, v, fk, &e) == 0);
    CHECK_STR(b.data,
              "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n"
              "      \"d\": \"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\\"\\\\\"\n    }\n  ],\n"
              "  \"cost\": 1.0,\n  \"n\": 3\n}");
    mini_buf_free(&b);
    cJSON_Delete(v);
    /* Invalid UTF-8 as bytes.decode(errors="replace") makes it. */
    v = cJSON_CreateString("a\xff"
                           "b");
    CHECK(mini_json_print_py(&b, v, NULL, &e) == 0);
    CHECK_STR(b.data, "\"a\\ufffdb\"");
    mini_buf_free(&b);
    cJSON_Delete(v);
    /* A NUL kept as C0 80 is \u0000 (json.dumps("a\0b")), checked before
     * the invalid UTF-8 around it becomes U+FFFD. */
    v = cJSON_CreateString("a\xC0\x80"
                           "b\xff\xC0\x80\xC0");
    CHECK(mini_json_print_py(&b, v, NULL, &e) == 0);
    CHECK_STR(b.data, "\"a\\u0000b\\ufffd\\u0000\\ufffd\"");
    mini_buf_free(&b);
    cJSON_Delete(v);
    v = cJSON_CreateString("\xC0\x80");
    CHECK(mini_json_print_py(&b, v, NULL, &e) == 0);
    CHECK_STR(b.data, "\"\\u0000\"");
    mini_buf_free(&b);
    cJSON_Delete(v);
}

static void test_json(void)
{
    struct mini_err e;
    cJSON *v;

    /* Not NUL-terminated: the length is what counts. */
    v = mini_json_parse("{\"a\":1}garbage", 7, &e);
    CHECK(cJSON_IsObject(v));
    cJSON_Delete(v);
    v = PARSE(" \t\r\n[1, 2.5e3, -0, true, false, null, \"\\u00e9\\ud83d\\ude00\"] \n");
    CHECK(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 7);
    CHECK_STR(cJSON_GetArrayItem(v, 6)->valuestring, "é😀");
    cJSON_Delete(v);

    static const struct {
        const char *json;
        const char *msg;
    } bad[] = {
        { "", "invalid JSON: empty" },
        { "   ", "invalid JSON at byte *" },
        { "{", "invalid JSON at byte *" },
        { "{\"a\":1}}", "invalid JSON at byte 7: unexpected data after the value" },
        { "{\"a\":1} x", "invalid JSON at byte 8: unexpected data after the value" },
        { "{\"a\":1}{}", "invalid JSON at byte 7: unexpected data after the value" },
        { "{\"a\":1,}", "invalid JSON at byte *: syntax error" },
        { "[1,]", "invalid JSON at byte *: syntax error" },
        { "{'a':1}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":01}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":-01}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":1.}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":1.e5}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":1e}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":-}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":1e+}", "invalid JSON at byte 5: malformed number" },
        { "{\"a\":+1}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":.5}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":1e400}", "invalid JSON: number out of range" },
        { "{\"a\":-1e400}", "invalid JSON: number out of range" },
        { "{\"a\":NaN}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":Infinity}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":\"x\ty\"}", "invalid JSON at byte 7: control character in a string" },
        { "{\"a\":\"x\ny\"}", "invalid JSON at byte 7: control character in a string" },
        { "{\"a\":\"x\\u0000y\"}", "invalid JSON at byte 7: \\u0000 in a string" },
        { "{\"a\\u0000b\":1}", "invalid JSON at byte 3: \\u0000 in a string" },
        { "{\"a\":\"\\ud800\"}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":\"\\x\"}", "invalid JSON at byte *: syntax error" },
        { "{\x01\"a\":1}", "invalid JSON at byte 1: control character" },
        { "{\"a\":1}\x0b", "invalid JSON at byte 7: control character" },
        { "{\"a\":\"\xff\"}", "invalid JSON: not valid UTF-8" },
        { "{\"a\":\"\xed\xa0\x80\"}", "invalid JSON: not valid UTF-8" },
        { "{\"a\":\"\xc0\xaf\"}", "invalid JSON: not valid UTF-8" },
        { "{\"a\":tru}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":\"unterminated}", "invalid JSON at byte *: syntax error" },
        { "{\"a\":\"x\\\"}", "invalid JSON at byte *: syntax error" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(bad); i++) {
        mini_err_clear(&e);
        v = mini_json_parse(bad[i].json, strlen(bad[i].json), &e);
        CHECK_MSG(!v, "accepted %s", bad[i].json);
        CHECK_MSG(e.code == MINI_E_BAD_REQUEST && msg_matches(e.msg, bad[i].msg), "%s: \"%s\", want \"%s\"",
                  bad[i].json, e.msg, bad[i].msg);
        cJSON_Delete(v);
    }
    /* An escaped backslash before "u0000" is text, not a NUL. */
    v = PARSE("\"\\\\u0000\"");
    CHECK(cJSON_IsString(v) && strcmp(v->valuestring, "\\u0000") == 0);
    cJSON_Delete(v);

    /* A NUL byte, in or out of a string. */
    v = mini_json_parse("{\"a\":\"x\0y\"}", 11, &e);
    CHECK(!v && strcmp(e.msg, "invalid JSON: NUL byte at byte 7") == 0);
    v = mini_json_parse("{}\0", 3, &e);
    CHECK(!v && strcmp(e.msg, "invalid JSON: NUL byte at byte 2") == 0);

    /* mini_json_parse_where: the offset of the error, for a line and column. */
    size_t where = 99;
    v = mini_json_parse_where("{\"a\":\"x\0y\"}", 11, &where, &e);
    CHECK(!v && where == 7);
    v = mini_json_parse_where("[1,\n 01]", 8, &where, &e);
    CHECK(!v && where == 5 && strstr(e.msg, "malformed number"));
    v = mini_json_parse_where("{\"a\": 1} x", 10, &where, &e);
    CHECK(!v && where == 9 && strstr(e.msg, "unexpected data"));
    v = mini_json_parse_where("[1, 2]", 6, &where, &e);
    CHECK(cJSON_IsArray(v) && where == 0);
    cJSON_Delete(v);

    /* Nesting: 1000 levels parse, 1001 do not. */
    struct mini_buf b = MINI_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        mini_buf_putc(&b, '[');
    for (int i = 0; i < 1000; i++)
        mini_buf_putc(&b, ']');
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(v != NULL);
    cJSON_Delete(v);
    mini_buf_reset(&b);
    for (int i = 0; i < 1001; i++)
        mini_buf_puts(&b, "{\"a\":");
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(!v && strcmp(e.msg, "invalid JSON at byte 5000: nested deeper than 1000 levels") == 0);

    /* Numbers: 63 characters parse, 64 do not. */
    mini_buf_reset(&b);
    mini_buf_puts(&b, "[1");
    for (int i = 0; i < 62; i++)
        mini_buf_putc(&b, '0');
    mini_buf_puts(&b, "]");
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(v && cJSON_GetArrayItem(v, 0)->valuedouble == 1e62);
    cJSON_Delete(v);
    mini_buf_reset(&b);
    mini_buf_puts(&b, "[1");
    for (int i = 0; i < 63; i++)
        mini_buf_putc(&b, '0');
    mini_buf_puts(&b, "]");
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(!v && strcmp(e.msg, "invalid JSON at byte 1: number longer than 63 characters") == 0);

    /* Value count. */
    mini_buf_reset(&b);
    mini_buf_putc(&b, '[');
    for (int i = 0; i < MINI_JSON_MAX_VALUES - 1; i++)
        mini_buf_puts(&b, i ? ",0" : "0");
    mini_buf_putc(&b, ']');
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(v && cJSON_GetArraySize(v) == MINI_JSON_MAX_VALUES - 1);
    cJSON_Delete(v);
    mini_buf_reset(&b);
    mini_buf_putc(&b, '[');
    for (int i = 0; i < MINI_JSON_MAX_VALUES; i++)
        mini_buf_puts(&b, i ? ",0" : "0");
    mini_buf_putc(&b, ']');
    v = mini_json_parse(b.data, b.len, &e);
    CHECK(!v && strstr(e.msg, "more than 100000 values") != NULL);
    mini_buf_free(&b);

    /* Objects only, and no repeated keys at any depth. */
    v = mini_json_parse_object("[]", 2, &e);
    CHECK(!v && strcmp(e.msg, "message is not a JSON object") == 0);
    static const struct {
        const char *json;
        const char *msg;
    } dups[] = {
        { "{\"a\":1,\"a\":1}", "duplicate key \"a\"" },
        { "{\"a\":1,\"b\":2,\"c\":3,\"b\":4}", "duplicate key \"b\"" },
        { "{\"a\":{\"b\":1,\"b\":2}}", "a: duplicate key \"b\"" },
        { "{\"a\":[1,{\"x\":[{}, {\"k\":1,\"k\":2}]}]}", "a[1].x[1]: duplicate key \"k\"" },
        { "[{\"z\":{\"y\":{\"\":1,\"\":2}}}]", "[0].z.y: duplicate key \"\"" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(dups); i++) {
        v = mini_json_parse(dups[i].json, strlen(dups[i].json), &e);
        CHECK(v != NULL);
        mini_err_clear(&e);
        CHECK(mini_json_check_unique_keys(v, NULL, &e) == -1);
        CHECK_MSG(e.code == MINI_E_BAD_REQUEST && strcmp(e.msg, dups[i].msg) == 0, "%s: \"%s\"", dups[i].json, e.msg);
        cJSON_Delete(v);
        if (dups[i].json[0] == '{') {
            v = mini_json_parse_object(dups[i].json, strlen(dups[i].json), &e);
            CHECK(!v && strcmp(e.msg, dups[i].msg) == 0);
        }
    }
    v = PARSE("{\"a\":{\"b\":1,\"b\":2}}");
    CHECK(mini_json_check_unique_keys(v, "open.overrides", &e) == -1);
    CHECK_STR(e.msg, "open.overrides.a: duplicate key \"b\"");
    cJSON_Delete(v);
    /* Same key in different objects, and keys equal up to case, are fine. */
    v = PARSE("{\"a\":{\"k\":1},\"b\":{\"k\":1},\"K\":0,\"k\":0}");
    CHECK(mini_json_check_unique_keys(v, NULL, &e) == 0);
    CHECK(v != NULL);
    cJSON_Delete(v);

    /* Integers. */
    int64_t x;
    v = PARSE("[9007199254740991, -9007199254740991, 9007199254740992, 1.5, 1e2, \"1\", -0]");
    CHECK(v != NULL);
    CHECK(mini_json_get_int(cJSON_GetArrayItem(v, 0), 0, MINI_JSON_INT_MAX, &x) && x == MINI_JSON_INT_MAX);
    CHECK(!mini_json_get_int(cJSON_GetArrayItem(v, 1), 0, MINI_JSON_INT_MAX, &x));
    CHECK(mini_json_get_int(cJSON_GetArrayItem(v, 1), -MINI_JSON_INT_MAX, 0, &x) && x == -MINI_JSON_INT_MAX);
    CHECK(!mini_json_get_int(cJSON_GetArrayItem(v, 2), 0, MINI_JSON_INT_MAX, &x));
    CHECK(!mini_json_get_int(cJSON_GetArrayItem(v, 3), 0, 10, &x));
    CHECK(mini_json_get_int(cJSON_GetArrayItem(v, 4), 0, 100, &x) && x == 100);
    CHECK(!mini_json_get_int(cJSON_GetArrayItem(v, 4), 0, 99, &x));
    CHECK(!mini_json_get_int(cJSON_GetArrayItem(v, 5), 0, 10, &x));
    CHECK(mini_json_get_int(cJSON_GetArrayItem(v, 6), 0, 10, &x) && x == 0);
    CHECK(!mini_json_get_int(NULL, 0, 10, &x));
    cJSON_Delete(v);

    /* Printing: exact numbers, escapes, compact. */
    struct mini_buf pb = MINI_BUF_INIT;
    v = PARSE("[9007199254740991,-9007199254740991,0.1,1e300,0.30000000000000004,-0,1.5,1e21,-2.5e-7,123456789012]");
    CHECK(mini_json_print(&pb, v, &e) == 0);
    CHECK_STR(pb.data,
              "[9007199254740991,-9007199254740991,0.1,1e+300,0.30000000000000004,0,1.5,1e+21,-2.5e-07,"
              "123456789012]");
    cJSON_Delete(v);
    mini_buf_reset(&pb);
    v = PARSE("{\"k\\\"\\n\":\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f/"
              "\u00e9\",\"o\":{},\"a\":[],\"t\":[true,false,null]}");
    CHECK(v != NULL);
    CHECK(mini_json_print(&pb, v, &e) == 0);
    CHECK_STR(pb.data,
              "{\"k\\\"\\n\":\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\u00e9\",\"o\":{},\"a\":[],"
              "\"t\":[true,false,null]}");
    cJSON *back = mini_json_parse(pb.data, pb.len, &e);
    CHECK(back && cJSON_Compare(v, back, 1));
    cJSON_Delete(back);
    cJSON_Delete(v);
    /* Any double reads back as itself. */
    uint64_t seed = 88172645463325252ULL;
    int mismatches = 0;
    for (int i = 0; i < 20000; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        double d;
        memcpy(&d, &seed, sizeof d);
        if (!isfinite(d))
            continue;
        mini_buf_reset(&pb);
        cJSON *n = cJSON_CreateNumber(d);
        mini_json_print(&pb, n, &e);
        cJSON_Delete(n);
        n = mini_json_parse(pb.data, pb.len, &e);
        mismatches += !n || n->valuedouble != d;
        cJSON_Delete(n);
    }
    CHECK_MSG(mismatches == 0, "%d doubles did not survive printing", mismatches);
    /* NaN and infinities print as null; an invalid item is an error. */
    mini_buf_reset(&pb);
    v = cJSON_CreateArray();
    cJSON_AddItemToArray(v, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(v, cJSON_CreateNumber(-INFINITY));
    CHECK(mini_json_print(&pb, v, &e) == 0);
    CHECK_STR(pb.data, "[null,null]");
    cJSON_Delete(v);
    /* A NUL kept as C0 80 is \u0000; a lone C0 passes as before. */
    mini_buf_reset(&pb);
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "a\xC0\x80", "x\xC0\x80y\xC0z\xC0\x80");
    CHECK(mini_json_print(&pb, v, &e) == 0);
    CHECK_STR(pb.data, "{\"a\\u0000\":\"x\\u0000y\xC0z\\u0000\"}");
    cJSON_Delete(v);
    cJSON invalid;
    memset(&invalid, 0, sizeof invalid);
    mini_buf_reset(&pb);
    mini_buf_puts(&pb, "keep");
    CHECK(mini_json_print(&pb, &invalid, &e) == -1 && e.code == MINI_E_INTERNAL);
    CHECK(mini_json_print(&pb, NULL, &e) == -1);
    CHECK_STR(pb.data, "keep");
    /* The decimal point is '.' whatever the locale. */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        mini_buf_reset(&pb);
        v = cJSON_CreateNumber(2.5);
        CHECK(mini_json_print(&pb, v, &e) == 0);
        CHECK_STR(pb.data, "2.5");
        cJSON_Delete(v);
        setlocale(LC_NUMERIC, "C");
    }
    mini_buf_free(&pb);

    /* Clipping names for messages: never inside a character. */
    CHECK(mini_json_clip("abc", 64) == 3);
    CHECK(mini_json_clip("abcdef", 4) == 4);
    CHECK(mini_json_clip("ab\xc3\xa9", 3) == 2);
    CHECK(mini_json_clip("a\xe2\x82\xac", 3) == 1);
    CHECK(mini_json_clip("a\xe2\x82\xac", 4) == 4);
}

/* ------------------------------------------------------ bad requests */

static void test_bad_requests(void)
{
    /* Not an object, not JSON. */
    BAD_REQ("[]", -1, "request: must be a JSON object");
    BAD_REQ("\"exec\"", -1, "request: must be a JSON object");
    BAD_REQ("42", -1, "request: must be a JSON object");
    BAD_REQ("null", -1, "request: must be a JSON object");
    BAD_REQ("{\"op\":\"stats\",\"id\":1", -1, "invalid JSON at byte *: syntax error");
    BAD_REQ("{\"op\":\"stats\",\"id\":1} x", -1, "invalid JSON at byte 22: unexpected data after the value");
    BAD_REQ("{\"op\":\"stats\",\"id\":1}{\"op\":\"stats\",\"id\":2}", -1,
            "invalid JSON at byte 21: unexpected data after the value");
    bad_req_len(__LINE__, "{\"op\":\"stats\",\"id\":1}\0", 22, -1, "invalid JSON: NUL byte at byte 21");
    bad_req_len(__LINE__, "{\"op\":\"stats\",\0\"id\":1}", 22, -1, "invalid JSON: NUL byte at byte 14");
    BAD_REQ("", -1, "invalid JSON: empty");

    /* op. */
    BAD_REQ("{\"id\":1}", 1, "op: missing");
    BAD_REQ("{\"op\":1,\"id\":1}", 1, "op: must be a string");
    BAD_REQ("{\"op\":null,\"id\":1}", 1, "op: must be a string");
    BAD_REQ("{\"op\":\"foo\",\"id\":2}", 2, "op: unknown op \"foo\"");
    BAD_REQ("{\"op\":\"Exec\",\"id\":2}", 2, "op: unknown op \"Exec\"");
    BAD_REQ("{\"op\":\"exit\",\"id\":2}", 2, "op: \"exit\" is not a request");
    BAD_REQ("{\"op\":\"error\",\"id\":2}", 2, "op: \"error\" is not a request");

    /* id. */
    BAD_REQ("{\"op\":\"stats\"}", -1, "id: missing");
    BAD_REQ("{\"op\":\"stats\",\"id\":-1}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":1.5}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":\"1\"}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":null}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":true}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":9007199254740992}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":1e300}", -1, "id: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"stats\",\"id\":[1]}", -1, "id: must be an integer between 0 and " MAXID);

    /* Repeated keys: the id is still reported when it is itself unambiguous. */
    BAD_REQ("{\"op\":\"stats\",\"id\":1,\"op\":\"stats\"}", 1, "stats: duplicate key \"op\"");
    BAD_REQ("{\"op\":\"stats\",\"id\":1,\"id\":2}", -1, "stats: duplicate key \"id\"");
    BAD_REQ("{\"op\":\"exec\",\"id\":7,\"session\":\"s\",\"command\":\"c\",\"env\":{\"A\":\"1\",\"A\":\"2\"}}", 7,
            "exec.env: duplicate key \"A\"");
    BAD_REQ("{\"op\":\"open\",\"id\":3,\"workspace\":\"/w\",\"overrides\":{\"fs\":[{\"x\":1},{\"y\":1,\"y\":2}]}}", 3,
            "open.overrides.fs[1]: duplicate key \"y\"");
    BAD_REQ("{\"op\":\"bogus\",\"id\":3,\"a\":{\"y\":1,\"y\":2}}", 3, "a: duplicate key \"y\"");
    BAD_REQ("{\"op\":\"exec\",\"id\":4,\"session\":\"s\",\"session\":\"t\",\"command\":\"c\"}", 4,
            "exec: duplicate key \"session\"");

    /* hello. */
    BAD_REQ("{\"op\":\"hello\",\"id\":1}", 1, "hello.version: missing");
    BAD_REQ("{\"op\":\"hello\",\"id\":1,\"version\":\"1\"}", 1,
            "hello.version: must be an integer between 1 and " MAXID);
    BAD_REQ("{\"op\":\"hello\",\"id\":1,\"version\":0}", 1, "hello.version: must be an integer between 1 and " MAXID);
    BAD_REQ("{\"op\":\"hello\",\"id\":1,\"version\":1,\"client\":5}", 1, "hello.client: must be a string");
    BAD_REQ("{\"op\":\"hello\",\"id\":1,\"version\":1,\"Client\":\"x\"}", 1, "hello: unknown field \"Client\"");

    /* open. */
    BAD_REQ("{\"op\":\"open\",\"id\":2}", 2, "open.workspace: missing");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":1}", 2, "open.workspace: must be a string");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":null}", 2, "open.workspace: must be a string");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"profile\":[]}", 2, "open.profile: must be a string");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"profile_data\":\"strict\"}", 2,
            "open.profile_data: must be an object");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"overrides\":[]}", 2, "open.overrides: must be an object");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":[]}", 2, "open.env: must be an object");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":\"A=1\"}", 2, "open.env: must be an object");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":{\"A\":1}}", 2, "open.env.A: must be a string");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":{\"A\":null}}", 2, "open.env.A: must be a string");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":{\"\":\"x\"}}", 2,
            "open.env: variable names must not be empty");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"env\":{\"A=B\":\"x\"}}", 2,
            "open.env: variable name \"A=B\" must not contain '='");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"profile\":\"strict\",\"profile_data\":{}}", 2,
            "open: at most one of \"profile\" and \"profile_data\" may be given");
    BAD_REQ("{\"op\":\"open\",\"id\":2,\"workspace\":\"/w\",\"session\":\"s\"}", 2, "open: unknown field \"session\"");

    /* exec. */
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"command\":\"ls\"}", 3, "exec.session: missing");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":7,\"command\":\"ls\"}", 3, "exec.session: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\"}", 3,
            "exec: exactly one of \"command\" and \"argv\" is required");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"argv\":[\"ls\"]}", 3,
            "exec: exactly one of \"command\" and \"argv\" is required");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":[\"ls\"]}", 3, "exec.command: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"argv\":[]}", 3,
            "exec.argv: must be a non-empty array of strings");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"argv\":\"ls\"}", 3,
            "exec.argv: must be a non-empty array of strings");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"argv\":{\"0\":\"ls\"}}", 3,
            "exec.argv: must be a non-empty array of strings");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"argv\":[\"ls\",1]}", 3, "exec.argv[1]: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"argv\":[\"ls\",null]}", 3, "exec.argv[1]: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"cwd\":false}", 3,
            "exec.cwd: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"env\":{\"FOO\":1}}", 3,
            "exec.env.FOO: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"env\":{\"OK\":\"1\",\"FOO\":{}}}", 3,
            "exec.env.FOO: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"env\":[\"A=1\"]}", 3,
            "exec.env: must be an object");
    static const char *const bad_timeouts[] = { "0", "-1", "-0", "\"5\"", "null", "true", "[5]", "1e-400" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(bad_timeouts); i++) {
        char json[200];
        snprintf(json, sizeof json, "{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"timeout\":%s}",
                 bad_timeouts[i]);
        BAD_REQ(json, 3, "exec.timeout: must be a positive number");
    }
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"timeout\":1000000.5}", 3,
            "exec.timeout: must be at most 1000000 seconds");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"stdin\":1}", 3,
            "exec.stdin: must be a string");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"stream\":\"yes\"}", 3,
            "exec.stream: must be true or false");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"stream\":1}", 3,
            "exec.stream: must be true or false");
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"session\":\"s\",\"command\":\"ls\",\"tiemout\":5}", 3,
            "exec: unknown field \"tiemout\"");
    /* A bad field is reported before a missing one, and the id either way. */
    BAD_REQ("{\"op\":\"exec\",\"id\":3,\"timeout\":-5}", 3, "exec.timeout: must be a positive number");
    BAD_REQ("{\"timeout\":-5,\"id\":3,\"op\":\"exec\"}", 3, "exec.timeout: must be a positive number");

    /* cancel, close, stats. */
    BAD_REQ("{\"op\":\"cancel\",\"id\":4}", 4, "cancel.target: missing");
    BAD_REQ("{\"op\":\"cancel\",\"id\":4,\"target\":-1}", 4, "cancel.target: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"cancel\",\"id\":4,\"target\":\"3\"}", 4,
            "cancel.target: must be an integer between 0 and " MAXID);
    BAD_REQ("{\"op\":\"close\",\"id\":5}", 5, "close.session: missing");
    BAD_REQ("{\"op\":\"close\",\"id\":5,\"session\":null}", 5, "close.session: must be a string");
    BAD_REQ("{\"op\":\"stats\",\"id\":6,\"verbose\":true}", 6, "stats: unknown field \"verbose\"");

    /* Names from the peer are clipped in messages, on a character boundary. */
    struct mini_buf b = MINI_BUF_INIT;
    mini_buf_puts(&b, "{\"op\":\"stats\",\"id\":6,\"");
    for (int i = 0; i < 63; i++)
        mini_buf_putc(&b, 'k');
    mini_buf_puts(&b, "\xc3\xa9\xc3\xa9\":1}");
    BAD_REQ(b.data, 6, "stats: unknown field \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\"");
    mini_buf_free(&b);

    /* from_json on a tree built in memory. */
    struct mini_req req;
    struct mini_err e;
    int64_t id = 99;
    CHECK(mini_req_from_json(NULL, &req, &id, &e) == -1 && id == -1);
    CHECK_STR(e.msg, "request: must be a JSON object");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "close");
    cJSON_AddNumberToObject(o, "id", 8);
    cJSON_AddStringToObject(o, "session", "a");
    cJSON_AddStringToObject(o, "session", "b");
    CHECK(mini_req_from_json(o, &req, &id, &e) == -1 && id == 8);
    CHECK_STR(e.msg, "close: duplicate key \"session\"");
    cJSON_Delete(o);
    /* id_out may be NULL. */
    CHECK(mini_req_decode("{\"op\":\"stats\",\"id\":1}", 21, &req, NULL, &e) == 0);
    mini_req_free(&req);
}

/* -------------------------------------------------------- bad replies */

static void test_bad_replies(void)
{
    BAD_REP("[]", "reply: must be a JSON object");
    BAD_REP("{\"op\":\"exec\",\"id\":1}", "op: \"exec\" is not a reply");
    BAD_REP("{\"op\":\"ok\",\"id\":null}", "id: must be an integer between 0 and " MAXID);
    BAD_REP("{\"op\":\"error\",\"id\":-1,\"code\":\"busy\",\"message\":\"m\"}",
            "id: must be an integer between 0 and " MAXID ", or null");
    BAD_REP("{\"op\":\"ok\",\"id\":1,\"extra\":1}", "ok: unknown field \"extra\"");
    BAD_REP("{\"op\":\"hello\",\"id\":1,\"version\":1,\"server\":\"s\",\"features\":[]}",
            "hello.features: must be an object");
    BAD_REP("{\"op\":\"hello\",\"id\":1,\"version\":1,\"server\":\"s\"}", "hello.features: missing");
    BAD_REP("{\"op\":\"opened\",\"id\":1,\"session\":\"s\",\"profile\":\"p\",\"isolation\":{},\"notes\":[1]}",
            "opened.notes[0]: must be a string");
    BAD_REP("{\"op\":\"opened\",\"id\":1,\"session\":\"s\",\"profile\":\"p\",\"isolation\":{},\"notes\":\"n\"}",
            "opened.notes: must be an array of strings");
    BAD_REP(
        "{\"op\":\"opened\",\"id\":1,\"session\":\"s\",\"profile\":\"p\",\"isolation\":{\"a\":1,\"a\":1},\"notes\":[]}",
        "opened.isolation: duplicate key \"a\"");
    BAD_REP("{\"op\":\"output\",\"id\":1,\"data\":5}", "output.data: must be a string");
    BAD_REP("{\"op\":\"output\",\"id\":1}", "output.data: missing");

#define EXIT_START "{\"op\":\"exit\",\"id\":1,\"returncode\":"
#define EXIT_REST(lim)                                                                            \
    ",\"signal\":0,\"timed_out\":false,\"oom_killed\":false,\"output\":\"\",\"truncated\":false," \
    "\"output_bytes\":0,\"duration_ms\":1,\"cpu_ms\":0,\"max_rss_kb\":10,\"limit\":" lim ",\"notes\":[]}"
    struct mini_rep rep;
    if (decode_rep(EXIT_START "0" EXIT_REST("null"), &rep) == 0)
        CHECK(rep.op == MINI_OP_EXIT && rep.u.exit.limit == MINI_LIMIT_NONE);
    mini_rep_free(&rep);
    BAD_REP(EXIT_START "256" EXIT_REST("null"), "exit.returncode: must be an integer between 0 and 255");
    BAD_REP(EXIT_START "-1" EXIT_REST("null"), "exit.returncode: must be an integer between 0 and 255");
    BAD_REP(EXIT_START "0" EXIT_REST("\"none\""),
            "exit.limit: must be null or a limit name (\"timeout\", \"memory\", ...)");
    BAD_REP(EXIT_START "0" EXIT_REST("\"bogus\""),
            "exit.limit: must be null or a limit name (\"timeout\", \"memory\", ...)");
    BAD_REP(EXIT_START "0" EXIT_REST("5"), "exit.limit: must be null or a limit name (\"timeout\", \"memory\", ...)");
    BAD_REP("{\"op\":\"exit\",\"id\":1,\"returncode\":0}", "exit.signal: missing");
    BAD_REP("{\"op\":\"exit\",\"id\":1,\"returncode\":0,\"signal\":200}",
            "exit.signal: must be an integer between 0 and 127");
    BAD_REP("{\"op\":\"exit\",\"id\":1,\"timed_out\":0}", "exit.timed_out: must be true or false");
    BAD_REP("{\"op\":\"stats\",\"id\":1,\"sessions\":1,\"running\":1,\"execs_total\":-4,\"clients\":1,\"uptime_ms\":1}",
            "stats.execs_total: must be an integer between 0 and " MAXID);
    BAD_REP("{\"op\":\"error\",\"id\":1,\"code\":\"nope\",\"message\":\"m\"}",
            "error.code: must be an error code name");
    BAD_REP("{\"op\":\"error\",\"id\":1,\"code\":\"ok\",\"message\":\"m\"}", "error.code: must be an error code name");
    BAD_REP("{\"op\":\"error\",\"id\":1,\"code\":1,\"message\":\"m\"}", "error.code: must be an error code name");
    BAD_REP("{\"op\":\"error\",\"id\":1,\"code\":\"busy\"}", "error.message: missing");
}

/* ------------------------------------------------------- round trips */

static char *print(const cJSON *o)
{
    struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    CHECK(o != NULL);
    CHECK(mini_json_print(&b, o, &e) == 0);
    return mini_buf_steal(&b, NULL);
}

/* to_json -> text -> decode -> to_json -> text: the texts must agree. */
static void req_round_trip(const struct mini_req *in, struct mini_req *out)
{
    cJSON *o1 = mini_req_to_json(in);
    char *t1 = print(o1);
    int rc = decode_req(t1, out);
    cJSON *o2 = rc == 0 ? mini_req_to_json(out) : NULL;
    char *t2 = print(o2);
    CHECK_STR(t1, t2);
    CHECK(out->op == in->op && out->id == in->id);
    cJSON_Delete(o1);
    cJSON_Delete(o2);
    free(t1);
    free(t2);
}

static void rep_round_trip(const struct mini_rep *in, struct mini_rep *out)
{
    cJSON *o1 = mini_rep_to_json(in);
    char *t1 = print(o1);
    int rc = decode_rep(t1, out);
    cJSON *o2 = rc == 0 ? mini_rep_to_json(out) : NULL;
    char *t2 = print(o2);
    CHECK_STR(t1, t2);
    CHECK(out->op == in->op && out->id == in->id);
    cJSON_Delete(o1);
    cJSON_Delete(o2);
    free(t1);
    free(t2);
}

static bool json_equal(const cJSON *a, const cJSON *b) { return a && b && cJSON_Compare(a, b, 1); }

static void check_env(const struct mini_env *a, const struct mini_env *b)
{
    CHECK(a->n == b->n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        CHECK_STR(a->keys[i], b->keys[i]);
        CHECK_STR(a->values[i], b->values[i]);
    }
}

static void test_request_round_trips(void)
{
    struct mini_req out;
    char *keys[] = { "PATH", "LANG", "EMPTY" }, *values[] = { "/usr/bin:/bin", "C.UTF-8", "" };
    struct mini_env env = { 3, keys, values };

    /* hello */
    struct mini_req hello = { .op = MINI_OP_HELLO, .id = 0, .u.hello = { .version = 1, .client = "mini/0.1" } };
    req_round_trip(&hello, &out);
    CHECK(out.u.hello.version == 1);
    CHECK_STR(out.u.hello.client, "mini/0.1");
    mini_req_free(&out);
    hello.u.hello.client = NULL;
    req_round_trip(&hello, &out);
    CHECK(out.u.hello.client == NULL);
    mini_req_free(&out);

    /* open, with everything, then with a named profile and nothing else */
    cJSON *pd = cJSON_Parse("{\"name\":\"mine\",\"limits\":{\"timeout\":30,\"pids\":[1,2.5,\"x\",null,true]}}");
    cJSON *ov = cJSON_Parse("{\"network\":\"none\"}");
    struct mini_req open = { .op = MINI_OP_OPEN,
                             .id = MINI_ID_MAX,
                             .u.open = {
                                 .workspace = "/home/u/proj", .profile_data = pd, .overrides = ov, .env = env } };
    req_round_trip(&open, &out);
    CHECK_STR(out.u.open.workspace, "/home/u/proj");
    CHECK(out.u.open.profile == NULL);
    CHECK(json_equal(out.u.open.profile_data, pd));
    CHECK(out.u.open.profile_data != pd);
    CHECK(json_equal(out.u.open.overrides, ov));
    check_env(&out.u.open.env, &env);
    mini_req_free(&out);
    struct mini_req open2 = { .op = MINI_OP_OPEN, .id = 5, .u.open = { .workspace = "/w", .profile = "strict" } };
    req_round_trip(&open2, &out);
    CHECK_STR(out.u.open.profile, "strict");
    CHECK(out.u.open.profile_data == NULL && out.u.open.overrides == NULL && out.u.open.env.n == 0);
    mini_req_free(&out);
    cJSON_Delete(pd);
    cJSON_Delete(ov);

    /* exec with a command and every option; then with argv */
    struct mini_req exec = { .op = MINI_OP_EXEC,
                             .id = 17,
                             .u.exec = { .session = "s-1",
                                         .command = "echo \"hi\" | tr a-z A-Z; exit 3",
                                         .cwd = "sub/dir",
                                         .env = env,
                                         .timeout = 2.75,
                                         .stdin_data = "line 1\nline 2 é\n",
                                         .stdin_len = 17,
                                         .stream = true } };
    req_round_trip(&exec, &out);
    CHECK_STR(out.u.exec.session, "s-1");
    CHECK_STR(out.u.exec.command, exec.u.exec.command);
    CHECK(out.u.exec.argv == NULL && out.u.exec.argc == 0);
    CHECK_STR(out.u.exec.cwd, "sub/dir");
    check_env(&out.u.exec.env, &env);
    CHECK(out.u.exec.timeout == 2.75);
    CHECK_MEM(out.u.exec.stdin_data, out.u.exec.stdin_len, "line 1\nline 2 é\n", 17);
    CHECK(out.u.exec.stream == true);
    mini_req_free(&out);

    char *argv[] = { "python3", "-c", "print('x')", "", "ünï", NULL };
    struct mini_req exec2 = { .op = MINI_OP_EXEC,
                              .id = 18,
                              .u.exec = { .session = "s-1", .argv = argv, .argc = 5, .timeout = 1e6 } };
    req_round_trip(&exec2, &out);
    CHECK(out.u.exec.command == NULL);
    CHECK(out.u.exec.argc == 5 && out.u.exec.argv && out.u.exec.argv[5] == NULL);
    for (int i = 0; i < 5 && out.u.exec.argv; i++)
        CHECK_STR(out.u.exec.argv[i], argv[i]);
    CHECK(out.u.exec.cwd == NULL && out.u.exec.env.n == 0 && out.u.exec.stdin_data == NULL);
    CHECK(out.u.exec.timeout == 1e6 && out.u.exec.stream == false);
    mini_req_free(&out);

    /* Doubles survive exactly (cJSON_Print would round 0.30000000000000004 to 0.3). */
    exec2.u.exec.timeout = 0.1 + 0.2;
    req_round_trip(&exec2, &out);
    CHECK(out.u.exec.timeout == 0.1 + 0.2);
    mini_req_free(&out);

    /* cancel, close, stats */
    struct mini_req cancel = { .op = MINI_OP_CANCEL, .id = 19, .u.cancel = { .target = 17 } };
    req_round_trip(&cancel, &out);
    CHECK(out.u.cancel.target == 17);
    mini_req_free(&out);
    struct mini_req closer = { .op = MINI_OP_CLOSE, .id = 20, .u.close = { .session = "s-1" } };
    req_round_trip(&closer, &out);
    CHECK_STR(out.u.close.session, "s-1");
    mini_req_free(&out);
    struct mini_req stats = { .op = MINI_OP_STATS, .id = 21 };
    req_round_trip(&stats, &out);
    mini_req_free(&out);

    /* The JSON text itself, for one request. */
    cJSON *o = mini_req_to_json(&cancel);
    char *t = print(o);
    CHECK_STR(t, "{\"op\":\"cancel\",\"id\":19,\"target\":17}");
    free(t);
    cJSON_Delete(o);

    /* Not a request. */
    struct mini_req notreq = { .op = MINI_OP_EXIT, .id = 1 };
    CHECK(mini_req_to_json(&notreq) == NULL);
    notreq.op = MINI_OP_COUNT;
    CHECK(mini_req_to_json(&notreq) == NULL);

    /* stdin with NUL bytes and invalid UTF-8 is sent as text with U+FFFD. */
    struct mini_req odd = { .op = MINI_OP_EXEC,
                            .id = 22,
                            .u.exec = { .session = "s",
                                        .command = "cat",
                                        .stdin_data = "a\0b\xff"
                                                      "c",
                                        .stdin_len = 5 } };
    req_round_trip(&odd, &out);
    CHECK_MEM(out.u.exec.stdin_data, out.u.exec.stdin_len,
              "a\xef\xbf\xbd"
              "b\xef\xbf\xbd"
              "c",
              9);
    mini_req_free(&out);

    /* Accepted spellings that normalise: 1.0 and 1e2 as integers. */
    if (decode_req("{\"op\":\"cancel\",\"id\":1.0,\"target\":1e2}", &out) == 0)
        CHECK(out.id == 1 && out.u.cancel.target == 100);
    mini_req_free(&out);
    if (decode_req("{\"op\":\"stats\",\"id\":" MAXID "}", &out) == 0)
        CHECK(out.id == MINI_ID_MAX);
    mini_req_free(&out);
    /* Field order does not matter; env keeps its order. */
    if (decode_req("{\"env\":{\"B\":\"2\",\"A\":\"1\"},\"argv\":[\"true\"],\"session\":\"x\",\"id\":3,\"op\":\"exec\"}",
                   &out) == 0) {
        CHECK(out.u.exec.env.n == 2);
        CHECK_STR(out.u.exec.env.keys[0], "B");
        CHECK_STR(out.u.exec.env.values[1], "1");
    }
    mini_req_free(&out);
}

static void test_reply_round_trips(void)
{
    struct mini_rep out;
    char *notes[] = { "no cgroup delegation: memory limit via RLIMIT_AS", "landlock unavailable", NULL };

    /* hello */
    cJSON *features = cJSON_Parse("{\"userns\":true,\"seccomp\":true,\"landlock_abi\":3,\"cgroup\":\"v2\"}");
    struct mini_rep hello = { .op = MINI_OP_HELLO,
                              .id = 1,
                              .u.hello = { .version = 1, .server = "mini-sandboxd 0.1.0", .features = features } };
    rep_round_trip(&hello, &out);
    CHECK(out.u.hello.version == 1);
    CHECK_STR(out.u.hello.server, "mini-sandboxd 0.1.0");
    CHECK(json_equal(out.u.hello.features, features) && out.u.hello.features != features);
    mini_rep_free(&out);
    cJSON_Delete(features);

    /* opened */
    cJSON *iso = cJSON_Parse("{\"namespaces\":[\"user\",\"pid\",\"net\"],\"seccomp\":true}");
    struct mini_rep opened = {
        .op = MINI_OP_OPENED,
        .id = 2,
        .u.opened = { .session = "s-1", .profile = "strict", .isolation = iso, .notes = notes, .n_notes = 2 }
    };
    rep_round_trip(&opened, &out);
    CHECK_STR(out.u.opened.session, "s-1");
    CHECK_STR(out.u.opened.profile, "strict");
    CHECK(json_equal(out.u.opened.isolation, iso));
    CHECK(out.u.opened.n_notes == 2 && out.u.opened.notes[2] == NULL);
    CHECK_STR(out.u.opened.notes[0], notes[0]);
    CHECK_STR(out.u.opened.notes[1], notes[1]);
    mini_rep_free(&out);
    cJSON_Delete(iso);

    /* output */
    struct mini_rep output = { .op = MINI_OP_OUTPUT,
                               .id = 3,
                               .u.output = { .data = "partial \xe2\x82\xac line\n", .len = 17 } };
    rep_round_trip(&output, &out);
    CHECK_MEM(out.u.output.data, out.u.output.len, "partial \xe2\x82\xac line\n", 17);
    mini_rep_free(&out);

    /* exit: every field, and every limit */
    for (int l = 0; l < MINI_LIMIT_COUNT; l++) {
        struct mini_rep ex = { .op = MINI_OP_EXIT,
                               .id = 4,
                               .u.exit = { .returncode = 137,
                                           .signal = 9,
                                           .timed_out = l == MINI_LIMIT_TIMEOUT,
                                           .oom_killed = true,
                                           .output = "head\n...\ntail\n",
                                           .output_len = 14,
                                           .truncated = true,
                                           .output_bytes = 123456789012LL,
                                           .duration_ms = 1500,
                                           .cpu_ms = 1499,
                                           .max_rss_kb = 65536,
                                           .limit = (enum mini_limit)l,
                                           .notes = notes,
                                           .n_notes = 2 } };
        rep_round_trip(&ex, &out);
        CHECK(out.u.exit.returncode == 137 && out.u.exit.signal == 9);
        CHECK(out.u.exit.timed_out == (l == MINI_LIMIT_TIMEOUT) && out.u.exit.oom_killed);
        CHECK_MEM(out.u.exit.output, out.u.exit.output_len, "head\n...\ntail\n", 14);
        CHECK(out.u.exit.truncated);
        CHECK(out.u.exit.output_bytes == 123456789012LL && out.u.exit.duration_ms == 1500);
        CHECK(out.u.exit.cpu_ms == 1499 && out.u.exit.max_rss_kb == 65536);
        CHECK(out.u.exit.limit == (enum mini_limit)l);
        CHECK(out.u.exit.n_notes == 2);
        CHECK_STR(out.u.exit.notes[1], notes[1]);
        mini_rep_free(&out);
    }
    /* An exit with nothing set: empty output and notes are sent, not omitted. */
    struct mini_rep bare = { .op = MINI_OP_EXIT, .id = 5 };
    cJSON *o = mini_rep_to_json(&bare);
    char *t = print(o);
    CHECK_STR(t,
              "{\"op\":\"exit\",\"id\":5,\"returncode\":0,\"signal\":0,\"timed_out\":false,\"oom_killed\":false,"
              "\"output\":\"\",\"truncated\":false,\"output_bytes\":0,\"duration_ms\":0,\"cpu_ms\":0,"
              "\"max_rss_kb\":0,\"limit\":null,\"notes\":[]}");
    free(t);
    cJSON_Delete(o);
    rep_round_trip(&bare, &out);
    CHECK(out.u.exit.output && out.u.exit.output_len == 0 && out.u.exit.notes && out.u.exit.n_notes == 0);
    mini_rep_free(&out);

    /* Output with NUL bytes and invalid UTF-8 arrives as valid text. */
    struct mini_rep odd = { .op = MINI_OP_OUTPUT, .id = 6, .u.output = { .data = "x\0\xc3", .len = 3 } };
    rep_round_trip(&odd, &out);
    CHECK_MEM(out.u.output.data, out.u.output.len, "x\xef\xbf\xbd\xef\xbf\xbd", 7);
    mini_rep_free(&out);

    /* exec.last: absent reads as false */
    {
        struct mini_err e;
        struct mini_req rq;
        cJSON *j = cJSON_Parse("{\"op\":\"exec\",\"id\":9,\"session\":\"s1\",\"command\":\"true\",\"last\":true}");
        CHECK(j && mini_req_from_json(j, &rq, NULL, &e) == 0 && rq.op == MINI_OP_EXEC && rq.u.exec.last);
        mini_req_free(&rq);
        cJSON_Delete(j);
        j = cJSON_Parse("{\"op\":\"exec\",\"id\":9,\"session\":\"s1\",\"command\":\"true\"}");
        CHECK(j && mini_req_from_json(j, &rq, NULL, &e) == 0 && !rq.u.exec.last);
        mini_req_free(&rq);
        cJSON_Delete(j);
        j = cJSON_Parse("{\"op\":\"exec\",\"id\":9,\"session\":\"s1\",\"command\":\"true\",\"last\":1}");
        CHECK(j && mini_req_from_json(j, &rq, NULL, &e) < 0);
        cJSON_Delete(j);
        /* A false one is not sent: a daemon from before it refuses fields
         * it does not know. */
        struct mini_req x = { .op = MINI_OP_EXEC, .id = 9 };
        x.u.exec.session = "s1";
        x.u.exec.command = "true";
        j = mini_req_to_json(&x);
        CHECK(j && !cJSON_GetObjectItemCaseSensitive(j, "last") && !cJSON_GetObjectItemCaseSensitive(j, "stream"));
        cJSON_Delete(j);
        x.u.exec.last = true;
        j = mini_req_to_json(&x);
        CHECK(j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "last")));
        cJSON_Delete(j);
    }
    /* ok, stats */
    struct mini_rep ok = { .op = MINI_OP_OK, .id = 7 };
    rep_round_trip(&ok, &out);
    mini_rep_free(&out);
    struct mini_rep stats = { .op = MINI_OP_STATS,
                              .id = 8,
                              .u.stats = { .sessions = 3,
                                           .running = 2,
                                           .execs_total = 1000000,
                                           .clients = 4,
                                           .uptime_ms = MINI_ID_MAX,
                                           .preparing = 5,
                                           .held_ahead = 1 } };
    rep_round_trip(&stats, &out);
    CHECK(out.u.stats.sessions == 3 && out.u.stats.running == 2 && out.u.stats.execs_total == 1000000);
    CHECK(out.u.stats.clients == 4 && out.u.stats.uptime_ms == MINI_ID_MAX && out.u.stats.preparing == 5 &&
          out.u.stats.held_ahead == 1);
    mini_rep_free(&out);
    /* A daemon from before stats.preparing: it reads as 0. */
    {
        struct mini_err e;
        cJSON *old = cJSON_Parse(
            "{\"op\":\"stats\",\"id\":1,\"sessions\":0,\"running\":0,\"execs_total\":0,\"clients\":1,\"uptime_ms\":1}");
        CHECK(old && mini_rep_from_json(old, &out, &e) == 0 && out.u.stats.preparing == 0 &&
              out.u.stats.held_ahead == 0);
        mini_rep_free(&out);
        cJSON_Delete(old);
    }

    /* error: every wire code but ok; the agent's categories go out as
     * "internal" and are refused when received. */
    for (int c = MINI_E_CONFIG; c < MINI_ERRC_COUNT; c++) {
        struct mini_rep er = { .op = MINI_OP_ERROR, .id = 9, .u.error = { .code = (enum mini_errc)c, .message = "m" } };
        rep_round_trip(&er, &out);
        CHECK(out.u.error.code == MINI_E_INTERNAL);
        mini_rep_free(&out);
    }
    CHECK(mini_errc_from_name("config_invalid") == MINI_E_INTERNAL);
    CHECK(mini_errc_from_name("format_error") == MINI_E_INTERNAL);
    for (int c = 1; c < MINI_ERRC_WIRE_COUNT; c++) {
        struct mini_rep er = { .op = MINI_OP_ERROR,
                               .id = 9,
                               .u.error = { .code = (enum mini_errc)c, .message = "what failed: why" } };
        rep_round_trip(&er, &out);
        CHECK(out.u.error.code == (enum mini_errc)c);
        CHECK_STR(out.u.error.message, "what failed: why");
        mini_rep_free(&out);
    }

    /* mini_error_json: a null id when unreadable, the message made valid UTF-8. */
    struct mini_err e;
    mini_err_set(&e, MINI_E_NO_SUCH_SESSION, "close: no session \"abc\xe2\x82\"");
    o = mini_error_json(-1, &e);
    t = print(o);
    CHECK_STR(t,
              "{\"op\":\"error\",\"id\":null,\"code\":\"no_such_session\",\"message\":\"close: no session "
              "\\\"abc\xef\xbf\xbd\\\"\"}");
    if (decode_rep(t, &out) == 0) {
        CHECK(out.op == MINI_OP_ERROR && out.id == -1 && out.u.error.code == MINI_E_NO_SUCH_SESSION);
    }
    mini_rep_free(&out);
    free(t);
    cJSON_Delete(o);
    mini_err_clear(&e);
    o = mini_error_json(12, &e);
    t = print(o);
    CHECK_STR(t, "{\"op\":\"error\",\"id\":12,\"code\":\"internal\",\"message\":\"unknown error\"}");
    free(t);
    cJSON_Delete(o);

    struct mini_rep notrep = { .op = MINI_OP_EXEC, .id = 1 };
    CHECK(mini_rep_to_json(&notrep) == NULL);

    /* A request-validation error becomes an error reply that echoes the id. */
    struct mini_req req;
    int64_t id;
    const char *bad = "{\"op\":\"exec\",\"id\":31,\"session\":\"s\",\"command\":\"ls\",\"timeout\":0}";
    CHECK(mini_req_decode(bad, strlen(bad), &req, &id, &e) == -1);
    o = mini_error_json(id, &e);
    t = print(o);
    CHECK_STR(t,
              "{\"op\":\"error\",\"id\":31,\"code\":\"bad_request\",\"message\":\"exec.timeout: must be a positive "
              "number\"}");
    free(t);
    cJSON_Delete(o);
}

static void test_names(void)
{
    for (int i = 0; i < MINI_OP_COUNT; i++)
        CHECK(mini_op_from_name(mini_op_name((enum mini_op)i)) == i);
    CHECK(mini_op_from_name("nope") == -1);
    CHECK(mini_op_from_name(NULL) == -1);
    CHECK_STR(mini_op_name(MINI_OP_COUNT), "unknown");
    CHECK_STR(mini_op_name(MINI_OP_EXEC), "exec");
    for (int i = 0; i < MINI_LIMIT_COUNT; i++)
        CHECK(mini_limit_from_name(mini_limit_name((enum mini_limit)i)) == i);
    CHECK_STR(mini_limit_name(MINI_LIMIT_NONE), "none");
    CHECK_STR(mini_limit_name(MINI_LIMIT_FILE_SIZE), "file_size");
    CHECK(mini_limit_from_name("bogus") == -1);

    /* Environments. */
    struct mini_env env;
    struct mini_err e;
    cJSON *o = cJSON_Parse("{\"A\":\"1\",\"B\":\"two words\"}");
    CHECK(mini_env_from_json(o, &env, "profile.env", &e) == 0);
    CHECK(env.n == 2);
    cJSON *back = mini_env_to_json(&env);
    CHECK(json_equal(o, back));
    cJSON_Delete(back);
    mini_env_free(&env);
    CHECK(env.n == 0 && env.keys == NULL);
    mini_env_free(&env); /* twice is fine */
    cJSON_Delete(o);
    o = cJSON_Parse("{\"A\":\"1\",\"B\":2}");
    CHECK(mini_env_from_json(o, &env, "profile.env", &e) == -1);
    CHECK_STR(e.msg, "profile.env.B: must be a string");
    CHECK(env.n == 0 && env.keys == NULL);
    cJSON_Delete(o);
}

int main(void)
{
    test_json();
    test_json_py();
    test_bad_requests();
    test_bad_replies();
    test_request_round_trips();
    test_reply_round_trips();
    test_names();
    return check_summary();
}
