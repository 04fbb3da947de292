/* Unit tests of the template engine's C API (agent/template/template.h): results,
 * error reporting, limits.  Output fidelity against jinja2 is checked by
 * tests/template/diff.py and random_diff.py. */
#include "check.h"
#include "template/template.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* Render src with vars given as JSON text (NULL for none). */
static int render(const char *src, const char *vars_json, struct mini_buf *out, struct mini_err *e)
{
    cJSON *vars = vars_json ? cJSON_Parse(vars_json) : NULL;
    if (vars_json && !vars)
        abort();
    int rc = mini_tpl_render(src, strlen(src), vars, out, e);
    cJSON_Delete(vars);
    return rc;
}

/* Expect src to render to want. */
static void ok(const char *src, const char *vars, const char *want)
{
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    int rc = render(src, vars, &out, &e);
    CHECK_MSG(rc == 0, "render of %s failed: %s", src, e.msg);
    if (rc == 0)
        CHECK_MSG(out.len == strlen(want) && memcmp(out.data ? out.data : "", want, out.len) == 0,
                  "%s: got [%.*s], want [%s]", src, (int)out.len, out.data ? out.data : "", want);
    mini_buf_free(&out);
}

/* Expect src to fail with a template error whose message contains `part`. */
static void fails(const char *src, const char *vars, const char *part)
{
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    int rc = render(src, vars, &out, &e);
    CHECK_MSG(rc == -1, "%s rendered [%.*s] but should fail", src, (int)out.len, out.data ? out.data : "");
    if (rc == -1) {
        CHECK_MSG(e.code == MINI_E_TEMPLATE, "%s: code %s", src, mini_errc_name(e.code));
        CHECK_MSG(strstr(e.msg, part) != NULL, "%s: message [%s] lacks [%s]", src, e.msg, part);
    }
    CHECK(out.len == 0);
    mini_buf_free(&out);
}

static char *repeat(const char *unit, size_t times)
{
    size_t n = strlen(unit);
    char *s = malloc(n * times + 1);
    if (!s)
        abort();
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * n, unit, n);
    s[n * times] = 0;
    return s;
}

static void test_basics(void)
{
    ok("Hello {{ name }}!", "{\"name\":\"W\\u00f6rld\"}", "Hello W\xc3\xb6rld!");
    ok("", NULL, "");
    ok("plain\n", NULL, "plain"); /* one trailing newline dropped */
    ok("plain\n\n", NULL, "plain\n");
    ok("a\r\nb\rc\n", NULL, "a\nb\nc"); /* newlines normalised */
    ok("{{ n }} {{ f }} {{ big }} {{ neg }}", "{\"n\":3,\"f\":2.5,\"big\":1e300,\"neg\":-0.0}", "3 2.5 1e+300 0");
    ok("{{ 1.0 }} {{ 10 / 4 }} {{ 2 ** 0.5 }} {{ 1e16 }} {{ 0.1 + 0.2 }}", NULL,
       "1.0 2.5 1.4142135623730951 1e+16 0.30000000000000004");
    ok("{{ x|length }}:{{ x[1:3] }}:{{ x[-1] }}", "{\"x\":\"h\\u00e9llo\\ud83d\\ude00\"}",
       "6:\xc3\xa9l:\xf0\x9f\x98\x80");
    /* A NUL kept in command output as C0 80 is one character, U+0000, as
     * the NUL is to Jinja2: "a\0b" gives 3|a\0|\0|A\0B|"a\u0000b"|['\x00']|a-b. */
    ok("{{ x|length }}|{{ x[:2] }}|{{ x[1] }}|{{ x|upper }}|{{ x|tojson }}|{{ [x[1]] }}|{{ x|replace(x[1], \"-\") }}",
       "{\"x\":\"a\xC0\x80"
       "b\"}",
       "3|a\xC0\x80|\xC0\x80|A\xC0\x80"
       "B|\"a\\u0000b\"|['\\x00']|a-b");
    ok("{{ d|tojson }}", "{\"d\":{\"b\":[1,\"<&'>\"],\"a\":\"\\u00e9\\ud83d\\ude00\"}}",
       "{\"a\": \"\\u00e9\\ud83d\\ude00\", \"b\": [1, \"\\u003c\\u0026\\u0027\\u003e\"]}");
    ok("{%- if x -%}\n  yes\n{%- endif -%}\n!", "{\"x\":true}", "yes!");
    ok("{% for k, v in d.items() %}{{ loop.index }}{{ k }}={{ v }};{% endfor %}", "{\"d\":{\"z\":1,\"a\":[2]}}",
       "1z=1;2a=[2];");
    ok("{{ missing|default('dflt') }} {{ missing is defined }}", NULL, "dflt False");
    ok("{{ [1, 'a', none, true, 1.5, (1,)] }} {{ {'k': 'v'} }}", NULL, "[1, 'a', None, True, 1.5, (1,)] {'k': 'v'}");

    /* Where jinja2 3.1.6 differs from 3.1.2, mini follows 3.1.6. */
    ok("{{ 'inf'|int }} {{ 'nan'|int(7) }}", NULL, "0 7");
    ok("{% set ns = namespace() %}{% set ns.a, b = 1, 2 %}{{ ns.a }}{{ b }}", NULL, "12");

    /* The result is appended to what `out` holds already. */
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    mini_buf_puts(&out, "prefix:");
    CHECK(render("{{ 1 + 1 }}", NULL, &out, &e) == 0);
    CHECK_STR(out.data, "prefix:2");
    /* On error it is left as it was. */
    CHECK(render("{{ 1 + 1 }}{{ nope }}", NULL, &out, &e) == -1);
    CHECK_STR(out.data, "prefix:2");
    mini_buf_free(&out);

    /* Variables that are not an object. */
    cJSON *arr = cJSON_CreateArray();
    CHECK(mini_tpl_render("x", 1, arr, &out, &e) == -1 && e.code == MINI_E_TEMPLATE);
    cJSON_Delete(arr);
    mini_buf_free(&out);

    /* Raw numbers keep Python's int/float distinction. */
    cJSON *raw = cJSON_CreateObject();
    cJSON_AddRawToObject(raw, "c", "3.0");
    cJSON_AddRawToObject(raw, "i", "3");
    cJSON_AddRawToObject(raw, "big", "9007199254740993");
    cJSON_AddRawToObject(raw, "e", "-1E2");
    cJSON_AddNumberToObject(raw, "plain", 3.0);
    const char *rt = "{{ c }} {{ i }} {{ big }} {{ e }} {{ plain }} {{ c is float }}";
    CHECK(mini_tpl_render(rt, strlen(rt), raw, &out, &e) == 0);
    CHECK_STR(out.data, "3.0 3 9007199254740993 -100.0 3 True");
    mini_buf_free(&out);
    /* A number that kept its source text in valuestring. */
    cJSON *kept = cJSON_AddNumberToObject(raw, "kept", 3.0);
    kept->valuestring = strdup("3.");
    cJSON *kepti = cJSON_AddNumberToObject(raw, "kepti", 12.0);
    kepti->valuestring = strdup("12");
    const char *kt = "{{ kept }} {{ kepti }} {{ kept * 2 }}";
    CHECK(mini_tpl_render(kt, strlen(kt), raw, &out, &e) == 0);
    CHECK_STR(out.data, "3.0 12 6.0");
    mini_buf_free(&out);
    cJSON *dup = cJSON_Duplicate(raw, true); /* cJSON copies and frees the text */
    CHECK(mini_tpl_render(kt, strlen(kt), dup, &out, &e) == 0);
    CHECK_STR(out.data, "3.0 12 6.0");
    cJSON_Delete(dup);
    mini_buf_free(&out);
    cJSON_AddRawToObject(raw, "bad", "[1, 2]");
    cJSON_AddRawToObject(raw, "huge", "99999999999999999999");
    CHECK(mini_tpl_render("{{ c }}", 7, raw, &out, &e) == 0); /* unused: fine */
    mini_buf_free(&out);
    CHECK(mini_tpl_render("{{ bad }}", 9, raw, &out, &e) == -1 && strstr(e.msg, "raw JSON"));
    CHECK(mini_tpl_render("{{ huge }}", 10, raw, &out, &e) == -1 && strstr(e.msg, "too large"));
    cJSON_Delete(raw);
    mini_buf_free(&out);

    /* Template text with a NUL byte and without a terminator. */
    CHECK(mini_tpl_render("a\0b{{ 1 }}zzz", 10, NULL, &out, &e) == 0);
    CHECK_MEM(out.data, out.len, "a\0b1", 4);
    mini_buf_free(&out);
}

static void test_mswea_observation(void)
{
    static const char tpl[] = "<returncode>{{output.returncode}}</returncode>\n"
                              "{% if output.output | length < 10000 -%}\n"
                              "<output>\n"
                              "{{ output.output -}}\n"
                              "</output>\n"
                              "{%- else -%}\n"
                              "<warning>too long</warning>\n"
                              "{%- set elided_chars = output.output | length - 10000 -%}\n"
                              "<output_head>\n"
                              "{{ output.output[:5000] }}\n"
                              "</output_head>\n"
                              "<elided_chars>\n"
                              "{{ elided_chars }} characters elided\n"
                              "</elided_chars>\n"
                              "<output_tail>\n"
                              "{{ output.output[-5000:] }}\n"
                              "</output_tail>\n"
                              "{%- endif -%}\n";
    ok(tpl, "{\"output\":{\"returncode\":0,\"output\":\"hi\\n\"}}",
       "<returncode>0</returncode>\n<output>\nhi\n</output>");

    /* 12001 characters, two bytes each: the head and tail are cut by
     * characters, not bytes. */
    char *body = repeat("\xc3\xa9", 12001);
    cJSON *vars = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(vars, "output");
    cJSON_AddNumberToObject(o, "returncode", 1);
    cJSON_AddStringToObject(o, "output", body);
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    CHECK(mini_tpl_render(tpl, strlen(tpl), vars, &out, &e) == 0);
    char *head = repeat("\xc3\xa9", 5000);
    _cleanup_buf_ struct mini_buf want = MINI_BUF_INIT;
    mini_buf_printf(&want,
                    "<returncode>1</returncode>\n<warning>too long</warning><output_head>\n%s\n"
                    "</output_head>\n<elided_chars>\n2001 characters elided\n</elided_chars>\n"
                    "<output_tail>\n%s\n</output_tail>",
                    head, head);
    CHECK_MEM(out.data, out.len, want.data, want.len);
    free(head);
    free(body);
    cJSON_Delete(vars);
    mini_buf_free(&out);
}

static void test_errors(void)
{
    fails("line 1\n{{ nope }}", NULL, "line 2: 'nope' is undefined");
    fails("{{ output.missing }}", "{\"output\":{}}", "'dict object' has no attribute 'missing'");
    fails("{% if nope %}x{% endif %}", NULL, "'nope' is undefined");
    fails("{{ x|nosuch }}", "{\"x\":1}", "No filter named 'nosuch'");
    fails("{{ x is nosuch }}", "{\"x\":1}", "No test named 'nosuch'");
    fails("{% if true %}", NULL, "line 1: Unexpected end of template");
    fails("a\n\n{% frob %}", NULL, "line 3: Encountered unknown tag 'frob'");
    fails("{{ 1 +* 2 }}", NULL, "unexpected");
    fails("{{ 'abc }}", NULL, "unexpected char");
    fails("{# open", NULL, "Missing end of comment tag");
    fails("{{ 1 / 0 }}", NULL, "division by zero");
    fails("{{ 9223372036854775807 + 1 }}", NULL, "integer overflow");
    fails("{{ 99999999999999999999 }}", NULL, "too large");
    fails("{% macro m() %}{% endmacro %}", NULL, "not supported");
    fails("{{ '\\ud800' }}", NULL, "surrogate");

    /* Invalid UTF-8 in the template, with the line it is on. */
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    CHECK(mini_tpl_render("ok\nbad \xff here", 13, NULL, &out, &e) == -1);
    CHECK(strstr(e.msg, "line 2") && strstr(e.msg, "UTF-8"));
    mini_buf_free(&out);
}

static void test_limits(void)
{
    /* Deep nesting is an error, never a crash. */
    char *open = repeat("(", 5000), *close = repeat(")", 5000);
    _cleanup_buf_ struct mini_buf src = MINI_BUF_INIT;
    mini_buf_printf(&src, "{{ %s1%s }}", open, close);
    fails(src.data, NULL, "nest");
    free(open);
    free(close);

    char *ifs = repeat("{% if true %}", 3000), *ends = repeat("{% endif %}", 3000);
    mini_buf_reset(&src);
    mini_buf_printf(&src, "%s%s", ifs, ends);
    fails(src.data, NULL, "nest");
    free(ifs);
    free(ends);

    /* A long left-leaning chain: 1+1+1+... */
    char *chain = repeat("1+", 5000);
    mini_buf_reset(&src);
    mini_buf_printf(&src, "{{ %s1 }}", chain);
    fails(src.data, NULL, "recursion");
    free(chain);

    /* Deeply nested variables. */
    cJSON *root = cJSON_CreateObject(), *cur = root;
    for (int i = 0; i < 2000; i++)
        cur = cJSON_AddObjectToObject(cur, "a");
    struct mini_buf out = MINI_BUF_INIT;
    struct mini_err e;
    CHECK(mini_tpl_render("{{ a }}", 7, root, &out, &e) == -1 && strstr(e.msg, "nest"));
    CHECK(mini_tpl_render("{{ 1 }}", 7, root, &out, &e) == 0); /* unused: not converted */
    cJSON_Delete(root);
    mini_buf_free(&out);

    /* Memory and time. */
    fails("{{ 'x' * 1000000000 }}", NULL, "memory");
    fails("{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{{ s }}{% endfor %}", NULL, "memory");
    fails("{% set r = range(10000) %}{% for a in r %}{% for b in r %}{% endfor %}{% endfor %}", NULL, "too many steps");
    fails("{{ range(10000000000)|length }}", NULL, "memory");
    fails("{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}{% endfor %}"
          "{{ ns.x }}",
          NULL, "recursion");

    /* Limits chosen by the caller. */
    {
        struct mini_tpl_limits lim = { .mem = (size_t)1 << 20, .steps = 1000 };
        _cleanup_buf_ struct mini_buf o = MINI_BUF_INIT;
        struct mini_err le;
        const char *loop = "{% for i in range(100) %}{{ i }}{% endfor %}";
        CHECK(mini_tpl_render_limited(loop, strlen(loop), NULL, &lim, &o, &le) == 0 && o.len == 190);
        const char *slow = "{% for i in range(2000) %}{% endfor %}";
        CHECK(mini_tpl_render_limited(slow, strlen(slow), NULL, &lim, &o, &le) == -1 &&
              strstr(le.msg, "too many steps") && o.len == 190);
        const char *big = "{{ 'x' * 2000000 }}";
        CHECK(mini_tpl_render_limited(big, strlen(big), NULL, &lim, &o, &le) == -1 && strstr(le.msg, "memory"));
        CHECK(mini_tpl_render_limited(big, strlen(big), NULL, NULL, &o, &le) == 0 && o.len == 190 + 2000000);
    }

    /* Big but reasonable inputs are fine. */
    char *big = repeat("0123456789", 100000);
    cJSON *vars = cJSON_CreateObject();
    cJSON_AddStringToObject(vars, "s", big);
    const char *t = "{{ s|length }} {{ s[-3:] }} {{ s|replace('9', '') |length }}";
    CHECK(mini_tpl_render(t, strlen(t), vars, &out, &e) == 0);
    CHECK_STR(out.data, "1000000 789 900000");
    cJSON_Delete(vars);
    free(big);
    mini_buf_free(&out);
}

int main(void)
{
    test_basics();
    test_mswea_observation();
    test_errors();
    test_limits();
    return check_summary();
}
