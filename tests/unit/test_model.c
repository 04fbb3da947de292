/* Unit tests of the model layer without a network: action parsing, prices,
 * retry timing, class selection, message conversion, observations and the
 * deterministic and replay models. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "check.h"
#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

static cJSON *J(const char *text)
{
    struct mini_err e;
    cJSON *j = mini_json_parse(text, strlen(text), &e);
    if (!j) {
        fprintf(stderr, "bad test JSON: %s: %s\n", e.msg, text);
        abort();
    }
    return j;
}

static char *P(const cJSON *j)
{
    struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    if (mini_json_print(&b, j, &e) < 0)
        abort();
    size_t n;
    return mini_buf_steal(&b, &n);
}

#define CHECK_JSON(item, expected) \
    do {                           \
        char *_s = P(item);        \
        cJSON *_x = J(expected);   \
        char *_t = P(_x);          \
        CHECK_STR(_s, _t);         \
        free(_s);                  \
        free(_t);                  \
        cJSON_Delete(_x);          \
    } while (0)

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *path(const cJSON *o, const char *p)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", p);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, ".")) {
        char *end;
        long idx = strtol(tok, &end, 10);
        o = *end == '\0' ? cJSON_GetArrayItem(o, (int)idx) : cJSON_GetObjectItemCaseSensitive(o, tok);
    }
    return o;
}

/* ---- regex actions ---- */

static void test_regex(void)
{
    struct mini_err e;
    pcre2_code *re = mini_action_regex_compile("```mswea_bash_command\\s*\\n(.*?)\\n```", &e);
    CHECK(re != NULL);
    cJSON *found = NULL;
    const char *none = "no block here";
    CHECK(mini_regex_findall(re, none, strlen(none), &found, &e) == 0);
    cJSON_Delete(found);
    found = NULL;
    const char *one = "THOUGHT\n```mswea_bash_command\n  ls -la\n  \n```\n";
    CHECK(mini_regex_findall(re, one, strlen(one), &found, &e) == 1);
    CHECK_STR(cJSON_GetArrayItem(found, 0)->valuestring, "ls -la");
    cJSON_Delete(found);
    found = NULL;
    const char *two = "```mswea_bash_command\na\n```\n```mswea_bash_command\nb\nc\n```";
    CHECK(mini_regex_findall(re, two, strlen(two), &found, &e) == 2);
    CHECK_STR(cJSON_GetArrayItem(found, 1)->valuestring, "b\nc"); /* DOTALL */
    cJSON_Delete(found);
    found = NULL;
    pcre2_code_free(re);

    /* no group: the whole match; Unicode whitespace stripped like str.strip() */
    re = mini_action_regex_compile("<[^>]*>", &e);
    const char *tags = "x<a> y <b>";
    CHECK(mini_regex_findall(re, tags, strlen(tags), &found, &e) == 2);
    CHECK_STR(cJSON_GetArrayItem(found, 0)->valuestring, "<a>");
    cJSON_Delete(found);
    found = NULL;
    pcre2_code_free(re);
    size_t a, b;
    const char *ws = "\xc2\xa0\xe3\x80\x80 cmd\xe2\x80\xa8\t";
    mini_py_strip(ws, strlen(ws), &a, &b);
    CHECK(b - a == 3 && memcmp(ws + a, "cmd", 3) == 0);
    const char *nbsp_inside = "a\xc2\xa0"
                              "b";
    mini_py_strip(nbsp_inside, strlen(nbsp_inside), &a, &b);
    CHECK(a == 0 && b == strlen(nbsp_inside));
    mini_py_strip("   ", 3, &a, &b);
    CHECK(a == b);

    /* empty matches do not loop */
    re = mini_action_regex_compile("x*", &e);
    CHECK(mini_regex_findall(re, "ab", 2, &found, &e) == 3);
    cJSON_Delete(found);
    found = NULL;
    pcre2_code_free(re);

    CHECK(mini_action_regex_compile("(", &e) == NULL);
    CHECK(e.code == MINI_E_CONFIG);
    CHECK(strstr(e.msg, "action_regex") != NULL);
}

/* ---- tool calls ---- */

static void test_toolcalls(void)
{
    cJSON *actions = NULL;
    char *error = NULL;
    cJSON *tc = J(
        "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\": "
        "\\\"ls\\\"}\"}},"
        "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":{\"command\":\"pwd\"}}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 0);
    CHECK_JSON(actions, "[{\"command\":\"ls\",\"tool_call_id\":\"c1\"},{\"command\":\"pwd\",\"tool_call_id\":\"c2\"}]");
    cJSON_Delete(actions);
    cJSON_Delete(tc);

    CHECK(mini_toolcall_actions(NULL, &actions, &error) == 1);
    CHECK_STR(error, "No tool calls found in the response. Every response MUST include at least one tool call.");
    free(error);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"python\",\"arguments\":\"{}\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error, "Unknown tool 'python'.Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    /* mini-swe-agent 2.4.6's texts, exactly (json.loads' message, no spaces
     * between the parts). */
    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{oops\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error,
              "Error parsing tool call arguments: Expecting property name enclosed in double quotes: "
              "line 1 column 2 (char 1).Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"python\",\"arguments\":\"{\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error,
              "Error parsing tool call arguments: Expecting property name enclosed in double quotes: "
              "line 1 column 2 (char 1).Unknown tool 'python'.Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error,
              "Error parsing tool call arguments: Expecting value: line 1 column 1 (char 0)."
              "Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":null}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error,
              "Error parsing tool call arguments: the JSON object must be str, bytes or bytearray, not "
              "NoneType.Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"cmd\\\": 1}\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error, "Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"arguments\":\"{\\\"command\\\": \\\"ls\\\"}\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error, "Unknown tool 'None'.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"a_tool_name_longer_than_sixty_four_bytes_is_quoted_whole_"
           "xxxxxxxxxxxxx\","
           "\"arguments\":\"{\\\"command\\\": \\\"ls\\\"}\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error, "Unknown tool 'a_tool_name_longer_than_sixty_four_bytes_is_quoted_whole_xxxxxxxxxxxxx'.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"[1]\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK_STR(error, "Missing 'command' argument in bash tool call.");
    free(error);
    cJSON_Delete(tc);

    tc = J("[{\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\": 3}\"}}]");
    CHECK(mini_toolcall_actions(tc, &actions, &error) == 1);
    CHECK(strstr(error, "must be a string") != NULL);
    free(error);
    cJSON_Delete(tc);
}

/* ---- Python's json.loads error messages ---- */

/* What CPython 3.11's json.loads says (the version mini-swe-agent 2.4.6 was
 * checked with); NULL: accepted. */
static const struct {
    const char *text, *msg;
} pyjson_cases[] = {
    { "{bad", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)" },
    { "", "Expecting value: line 1 column 1 (char 0)" },
    { "  ", "Expecting value: line 1 column 3 (char 2)" },
    { "[1,]", "Expecting value: line 1 column 4 (char 3)" },
    { "{\"a\":1,}", "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)" },
    { "\"\\x\"", "Invalid \\escape: line 1 column 2 (char 1)" },
    { "\"\\u12\"", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\"\\u12", "Invalid \\uXXXX escape: line 1 column 3 (char 2)" },
    { "\"\\ud800\\u12\"", "Invalid \\uXXXX escape: line 1 column 9 (char 8)" },
    { "\"abc", "Unterminated string starting at: line 1 column 1 (char 0)" },
    { "\"a\tb\"", "Invalid control character at: line 1 column 3 (char 2)" },
    { "-", "Expecting value: line 1 column 1 (char 0)" },
    { "01", "Extra data: line 1 column 2 (char 1)" },
    { "1.", "Extra data: line 1 column 2 (char 1)" },
    { "1e", "Extra data: line 1 column 2 (char 1)" },
    { "[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)" },
    { "{\"a\" 1}", "Expecting ':' delimiter: line 1 column 6 (char 5)" },
    { "tru", "Expecting value: line 1 column 1 (char 0)" },
    { "[", "Expecting value: line 1 column 2 (char 1)" },
    { "\xef\xbb\xbf{}", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)" },
    { "{\n  \"command\": \"ls\"\n  \"x\": 1}", "Expecting ',' delimiter: line 3 column 3 (char 22)" },
    { "{\"command\": \"\xc3\xa9\xe2\x82\xac\" x}", "Expecting ',' delimiter: line 1 column 18 (char 17)" },
    { "{\"command\": 'ls'}", "Expecting value: line 1 column 13 (char 12)" },
    { "{\"command\": \"ls\"}}", "Extra data: line 1 column 18 (char 17)" },
    { "{\"command\": \"ls\"", "Expecting ',' delimiter: line 1 column 17 (char 16)" },
    { "{\"command\": \"ls\n\"}", "Invalid control character at: line 1 column 16 (char 15)" },
    { " {\"a\": NaN, \"b\": -Infinity, \"c\": [1e5, -0.5E-3, true, false, null, \"\\ud83d\\ude00\"]} ", NULL },
    { "{\"command\": \"ls\"}", NULL },
};

static void test_pyjson_table(void)
{
    for (size_t i = 0; i < sizeof pyjson_cases / sizeof *pyjson_cases; i++) {
        char *m = mini_py_json_error(pyjson_cases[i].text, strlen(pyjson_cases[i].text));
        if (pyjson_cases[i].msg)
            CHECK_STR(m, pyjson_cases[i].msg);
        else
            CHECK(m == NULL);
        free(m);
    }
}

/* The same against the python3 at hand, over the table and a few thousand
 * random short strings of JSON's characters.  Python 3.13 words trailing
 * commas differently ("Illegal trailing comma ..."): from there on the
 * random strings are compared only where neither side says so. */
static const char pyjson_script[] = "import sys, json\n"
                                    "for line in sys.stdin:\n"
                                    "    s = bytes.fromhex(line.strip()).decode('utf-8')\n"
                                    "    try:\n"
                                    "        json.loads(s); print('OK')\n"
                                    "    except json.JSONDecodeError as e:\n"
                                    "        print(str(e))\n"
                                    "    except Exception as e:\n"
                                    "        print('OTHER ' + type(e).__name__)\n";

static void test_pyjson_python(void)
{
    if (system("python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)' >/dev/null 2>&1") != 0) {
        printf("SKIP python3 json differential: no python3\n");
        return;
    }
    enum { N_RANDOM = 4000 };
    static const char *const atoms[] = {
        "{",  "}",  "[",   "]",       "\"",      ":",     ",",     " ",        "\n",       "\t",
        "\\", "u",  "0",   "1",       "9",       "-",     "+",     ".",        "e",        "E",
        "a",  "d8", "00",  "true",    "null",    "fals",  "NaN",   "Infinity", "\xc3\xa9", "\xf0\x9f\x98\x80",
        "x",  "/",  "\\u", "\\ud83d", "\\u00e9", "\"k\"", "\"k\":"
    };
    /* openings that lead into objects, keys and strings, so that every one
     * of json.loads' messages comes up (each several dozen times) */
    static const char *const openings[] = { "{\"command\": ", "[", "{\"", "{\"k\"", "\"", "" };
    size_t n_fixed = sizeof pyjson_cases / sizeof *pyjson_cases, total = n_fixed + N_RANDOM;
    char **texts = calloc(total, sizeof *texts);
    CHECK(texts != NULL);
    uint32_t seed = 12345;
    for (size_t i = 0; i < total; i++) {
        struct mini_buf b = MINI_BUF_INIT;
        if (i < n_fixed) {
            mini_buf_puts(&b, pyjson_cases[i].text);
        } else {
            seed = seed * 1103515245u + 12345u;
            int len = (int)(seed >> 16) % 10;
            mini_buf_puts(&b, openings[(seed >> 8) % (sizeof openings / sizeof *openings)]);
            for (int k = 0; k < len; k++) {
                seed = seed * 1103515245u + 12345u;
                mini_buf_puts(&b, atoms[(seed >> 16) % (sizeof atoms / sizeof *atoms)]);
            }
        }
        mini_buf_putc(&b, '\0');
        texts[i] = b.data;
    }
    char in[] = "/tmp/mini-pyjson-in-XXXXXX", script[] = "/tmp/mini-pyjson-py-XXXXXX";
    int fd = mkstemp(in), sfd = mkstemp(script);
    CHECK(fd >= 0 && sfd >= 0);
    FILE *f = fdopen(fd, "w");
    for (size_t i = 0; i < total; i++) {
        for (const unsigned char *p = (const unsigned char *)texts[i]; *p; p++)
            fprintf(f, "%02x", *p);
        fputc('\n', f);
    }
    fclose(f);
    CHECK(write(sfd, pyjson_script, sizeof pyjson_script - 1) == (ssize_t)(sizeof pyjson_script - 1));
    close(sfd);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "python3 %s < %s", script, in);
    FILE *py = popen(cmd, "r");
    CHECK(py != NULL);
    char line[512];
    size_t i = 0, compared = 0, n_kinds = 0;
    char kinds[16][64];
    while (i < total && fgets(line, sizeof line, py)) {
        line[strcspn(line, "\n")] = '\0';
        char *m = mini_py_json_error(texts[i], strlen(texts[i]));
        bool newer = strstr(line, "Illegal trailing comma") != NULL;
        if (!newer && strncmp(line, "OTHER", 5) != 0) {
            const char *want = strcmp(line, "OK") == 0 ? NULL : line;
            if (!(want ? m && strcmp(m, want) == 0 : m == NULL)) {
                fprintf(stderr, "json.loads differs on \"%s\": python: %s, mini: %s\n", texts[i], line, m ? m : "OK");
                CHECK(false);
            }
            compared++;
            if (want) {
                size_t k = strcspn(want, ":");
                bool seen = false;
                for (size_t j = 0; j < n_kinds; j++)
                    seen |= strlen(kinds[j]) == k && strncmp(kinds[j], want, k) == 0;
                if (!seen && n_kinds < sizeof kinds / sizeof *kinds)
                    snprintf(kinds[n_kinds++], sizeof kinds[0], "%.*s", (int)k, want);
            }
        }
        free(m);
        i++;
    }
    CHECK(pclose(py) == 0);
    CHECK(i == total);
    CHECK(compared > total / 2);
    CHECK(n_kinds >= 9); /* all of json.loads' messages but the BOM's were compared */
    unlink(in);
    unlink(script);
    for (size_t k = 0; k < total; k++)
        free(texts[k]);
    free(texts);
}

/* ---- prices ---- */

static void test_prices(void)
{
    struct mini_price p;
    CHECK(mini_price_lookup("gpt-4o", &p) && fabs(p.input - 2.5e-6) < 1e-15 && fabs(p.output - 10e-6) < 1e-15);
    CHECK(mini_price_lookup("gpt-4o-mini", &p) && fabs(p.input - 0.15e-6) < 1e-15);
    CHECK(mini_price_lookup("gpt-4o-2024-08-06", &p) && fabs(p.input - 2.5e-6) < 1e-15);
    CHECK(mini_price_lookup("claude-sonnet-4-5-20250929", &p) && fabs(p.output - 15e-6) < 1e-15 &&
          fabs(p.cache_write - 3.75e-6) < 1e-15 && fabs(p.cache_read - 0.3e-6) < 1e-15);
    CHECK(mini_price_lookup("claude-sonnet-4.5", &p) && fabs(p.input - 3e-6) < 1e-15);
    CHECK(mini_price_lookup("claude-opus-4-5", &p) && fabs(p.input - 5e-6) < 1e-15);
    CHECK(mini_price_lookup("claude-opus-4-20250514", &p) && fabs(p.input - 15e-6) < 1e-15);
    CHECK(mini_price_lookup("gpt-4o-latest", &p));
    CHECK(!mini_price_lookup("gpt-4o-mini-tts", &p));
    CHECK(!mini_price_lookup("my-local-model", &p));
    CHECK(!mini_price_lookup("", &p));
    CHECK(mini_price_lookup("gpt-4.1", &p) && fabs(p.cache_write - p.input) < 1e-18);

    struct mini_usage u = { .present = true, .input = 100, .output = 10, .cache_read = 1000, .cache_write = 200 };
    CHECK(mini_price_lookup("claude-sonnet-4-5", &p));
    CHECK(fabs(mini_price_cost(&p, &u) - (100 * 3e-6 + 10 * 15e-6 + 1000 * 0.3e-6 + 200 * 3.75e-6)) < 1e-15);

    char tmpl[] = "/tmp/test_model_registry.XXXXXX";
    int fd = mkstemp(tmpl);
    const char *reg = "{\"a\": {\"input_cost_per_token\": 1e-6, \"output_cost_per_token\": 2e-6},"
                      " \"bad\": {\"input_cost_per_token\": \"x\"}}";
    CHECK(fd >= 0 && write(fd, reg, strlen(reg)) == (ssize_t)strlen(reg));
    close(fd);
    struct mini_err e;
    const char *names[] = { "openai/a", "a" };
    CHECK(mini_price_registry(tmpl, names, 2, &p, &e) == 1 && fabs(p.output - 2e-6) < 1e-18 &&
          fabs(p.cache_read - 1e-6) < 1e-18);
    const char *other[] = { "zzz" };
    CHECK(mini_price_registry(tmpl, other, 1, &p, &e) == 0);
    const char *bad[] = { "bad" };
    CHECK(mini_price_registry(tmpl, bad, 1, &p, &e) == -1 && e.code == MINI_E_CONFIG);
    unlink(tmpl);
    CHECK(mini_price_registry("/nonexistent/registry.json", names, 2, &p, &e) == -1);
}

/* ---- retries ---- */

static void test_retry_timing(void)
{
    /* tenacity wait_exponential(multiplier=1, min=4, max=60) in units of base */
    long expect[] = { 4, 4, 4, 8, 16, 32, 60, 60, 60 };
    for (int i = 0; i < 9; i++)
        CHECK_MSG(mini_model_backoff_ms(i + 2, 1000) == expect[i] * 1000, "attempt %d: %ld", i + 2,
                  mini_model_backoff_ms(i + 2, 1000));
    CHECK(mini_model_backoff_ms(2, 10) == 40);
    CHECK(mini_model_backoff_ms(50, 10) == 600);

    time_t now = 1700000000;
    CHECK(mini_http_retry_after_ms("1", "", now) == 1000);
    CHECK(mini_http_retry_after_ms(" 2 ", NULL, now) == 2000);
    CHECK(mini_http_retry_after_ms("1.5", "", now) == 1500);
    CHECK(mini_http_retry_after_ms("1", "250", now) == 250);
    CHECK(mini_http_retry_after_ms("", "", now) == -1);
    CHECK(mini_http_retry_after_ms("soon", "", now) == -1);
    CHECK(mini_http_retry_after_ms("-3", "", now) == -1);
    CHECK(mini_http_retry_after_ms("Tue, 14 Nov 2023 22:13:30 GMT", "", now) == 10000);
    CHECK(mini_http_retry_after_ms("Tue, 14 Nov 2023 22:00:00 GMT", "", now) == 0);
    CHECK(mini_http_retry_after_ms("1e300", "", now) == 86400L * 1000);
}

/* ---- classes and names ---- */

static void test_classes(void)
{
    enum mini_model_kind kind;
    const struct mini_model_provider_ops *prov;
    bool text;
    CHECK(mini_model_resolve_class("litellm", "anthropic/claude-sonnet-4-5", &kind, &prov, &text));
    CHECK(kind == MINI_KIND_API && prov == &mini_provider_anthropic && !text);
    CHECK(mini_model_resolve_class("minisweagent.models.litellm_textbased_model.LitellmTextbasedModel", "gpt-4o", &kind,
                                   &prov, &text));
    CHECK(kind == MINI_KIND_API && prov == &mini_provider_openai && text);
    CHECK(mini_model_resolve_class("deterministic", NULL, &kind, &prov, &text) && kind == MINI_KIND_DETERMINISTIC);
    CHECK(mini_model_resolve_class("replay", NULL, &kind, &prov, &text) && kind == MINI_KIND_REPLAY);
    CHECK(!mini_model_resolve_class("nonsense", NULL, &kind, &prov, &text));

    const char *base;
    prov = NULL;
    char *s = mini_model_strip_prefix("openai/gpt-4o", &prov, &base);
    CHECK_STR(s, "gpt-4o");
    CHECK(prov == &mini_provider_openai && base == NULL);
    free(s);
    prov = NULL;
    s = mini_model_strip_prefix("openrouter/anthropic/claude-sonnet-4.5", &prov, &base);
    CHECK_STR(s, "anthropic/claude-sonnet-4.5");
    CHECK(prov == &mini_provider_openrouter);
    free(s);
    prov = &mini_provider_openrouter; /* explicit class: "anthropic/" is part of the name */
    s = mini_model_strip_prefix("anthropic/claude-sonnet-4.5", &prov, &base);
    CHECK_STR(s, "anthropic/claude-sonnet-4.5");
    free(s);
    prov = NULL;
    s = mini_model_strip_prefix("Qwen/Qwen3-8B", &prov, &base);
    CHECK_STR(s, "Qwen/Qwen3-8B");
    CHECK(prov == &mini_provider_openai);
    free(s);
    prov = NULL;
    s = mini_model_strip_prefix("claude-haiku-4-5", &prov, &base);
    CHECK(prov == &mini_provider_anthropic);
    free(s);
    prov = NULL;
    s = mini_model_strip_prefix("ollama/llama3", &prov, &base);
    CHECK_STR(s, "llama3");
    CHECK(base && strstr(base, "11434"));
    free(s);

    /* Every provider of the table is complete, and each of its classes
     * resolves back to it, in its mode. */
    for (const struct mini_model_provider_ops *const *p = mini_model_providers; *p; p++) {
        const struct mini_model_provider_ops *o = *p;
        CHECK(o->name && o->classes && o->classes[0] && o->text_classes && o->text_classes[0]);
        CHECK(o->model_type && o->text_model_type && o->default_base && o->key_env);
        CHECK(o->url_suffix && o->auth_headers && o->request && o->parse);
        for (const char *const *c = o->classes; *c; c++)
            CHECK(mini_model_resolve_class(*c, NULL, &kind, &prov, &text) && prov == o && !text);
        for (const char *const *c = o->text_classes; *c; c++)
            CHECK(mini_model_resolve_class(*c, NULL, &kind, &prov, &text) && prov == o && text);
    }
    CHECK(mini_model_providers[0] == &mini_provider_openai); /* names nobody claims */

    struct mini_err e;
    cJSON *cfg = J("{\"model_name\": \"x\", \"model_class\": \"bogus\"}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL);
    CHECK(e.code == MINI_E_CONFIG && strstr(e.msg, "bogus") && strstr(e.msg, "deterministic"));
    cJSON_Delete(cfg);
    CHECK(mini_model_new(NULL, "openai_textbased", &e) == NULL); /* no model name */
    CHECK(strstr(e.msg, "model name") != NULL);
}

/* ---- OpenAI messages ---- */

static void test_openai_messages(void)
{
    cJSON *msgs = J("[{\"role\":\"system\",\"content\":\"s\"},"
                    "{\"role\":\"user\",\"content\":\"u\",\"extra\":{\"x\":1}},"
                    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
                    "\"function\":{\"name\":\"bash\",\"arguments\":\"{}\"}}],\"thinking_blocks\":[],\"extra\":{}},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"out\",\"extra\":{}},"
                    "{\"role\":\"exit\",\"content\":\"Submitted\"}]");
    cJSON *out = mini_openai_messages(msgs, false);
    CHECK_JSON(out,
               "[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"},"
               "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
               "\"function\":{\"name\":\"bash\",\"arguments\":\"{}\"}}]},"
               "{\"role\":\"tool\",\"content\":\"out\",\"tool_call_id\":\"c\"}]");
    cJSON_Delete(out);
    out = mini_openai_messages(msgs, true);
    /* set_cache_control("default_end"): on the last message; a tool message carries it itself */
    CHECK_JSON(cJSON_GetArrayItem(out, 3),
               "{\"role\":\"tool\",\"content\":[{\"type\":\"text\",\"text\":\"out\"}],"
               "\"tool_call_id\":\"c\",\"cache_control\":{\"type\":\"ephemeral\"}}");
    CHECK_JSON(cJSON_GetArrayItem(out, 1), "{\"role\":\"user\",\"content\":\"u\"}");
    cJSON_Delete(out);
    cJSON_Delete(msgs);

    cJSON *resp = J(
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi\",\"tool_calls\":["
        "{\"function\":{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}}]},\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":40}}}");
    cJSON *msg = NULL;
    const char *fr = NULL, *why = NULL;
    struct mini_usage u;
    CHECK(mini_openai_parse(resp, &msg, &fr, &u, &why) == 0);
    CHECK_STR(fr, "tool_calls");
    CHECK(u.present && u.input == 60 && u.cache_read == 40 && u.output == 7 && !u.has_cost);
    CHECK_STR(str(msg, "content"), "hi");
    const cJSON *tc = path(msg, "tool_calls.0");
    CHECK(str(tc, "id") && strncmp(str(tc, "id"), "call_mini_", 10) == 0); /* id filled in */
    CHECK_STR(str(tc, "type"), "function");
    CHECK_STR(str(path(tc, "function"), "arguments"), "{\"command\":\"ls\"}"); /* made a string */
    cJSON_Delete(msg);
    cJSON_Delete(resp);

    resp = J("{\"choices\":[]}");
    CHECK(mini_openai_parse(resp, &msg, &fr, &u, &why) == 1 && strstr(why, "no choices"));
    cJSON_Delete(resp);
    resp = J("{\"error\":{\"message\":\"upstream failed\"}}");
    CHECK(mini_openai_parse(resp, &msg, &fr, &u, &why) == 1);
    CHECK_STR(why, "upstream failed");
    cJSON_Delete(resp);
}

/* ---- Anthropic ---- */

static void test_anthropic(void)
{
    struct mini_err e;
    cJSON *msgs = J("[{\"role\":\"system\",\"content\":\"sys\"},"
                    "{\"role\":\"user\",\"content\":\"task\"},"
                    "{\"role\":\"assistant\",\"content\":\"let me "
                    "see\",\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"}],"
                    "\"tool_calls\":[{\"id\":\"tu1\",\"type\":\"function\",\"function\":{\"name\":\"bash\","
                    "\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}},"
                    "{\"id\":\"tu2\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{"
                    "\\\"command\\\":\\\"pwd\\\"}\"}}]},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"tu1\",\"content\":\"a\"},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"tu2\",\"content\":\"b\"},"
                    "{\"role\":\"user\",\"content\":\"Format error\"},"
                    "{\"role\":\"exit\",\"content\":\"x\"}]");
    cJSON *system = NULL, *out = NULL;
    CHECK(mini_anthropic_convert(msgs, false, &system, &out, &e) == 0);
    CHECK(cJSON_IsString(system) && strcmp(system->valuestring, "sys") == 0);
    CHECK_JSON(out,
               "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"task\"}]},"
               "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},"
               "{\"type\":\"text\",\"text\":\"let me see\"},"
               "{\"type\":\"tool_use\",\"id\":\"tu1\",\"name\":\"bash\",\"input\":{\"command\":\"ls\"}},"
               "{\"type\":\"tool_use\",\"id\":\"tu2\",\"name\":\"bash\",\"input\":{\"command\":\"pwd\"}}]},"
               "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"tu1\",\"content\":\"a\"},"
               "{\"type\":\"tool_result\",\"tool_use_id\":\"tu2\",\"content\":\"b\"},"
               "{\"type\":\"text\",\"text\":\"Format error\"}]}]");
    cJSON_Delete(system);
    cJSON_Delete(out);
    CHECK(mini_anthropic_convert(msgs, true, &system, &out, &e) == 0);
    CHECK_JSON(path(out, "2.content.2"),
               "{\"type\":\"text\",\"text\":\"Format error\",\"cache_control\":{\"type\":\"ephemeral\"}}");
    CHECK(path(out, "2.content.1.cache_control") == NULL);
    cJSON_Delete(system);
    cJSON_Delete(out);
    cJSON_Delete(msgs);

    msgs = J("[{\"role\":\"tool\",\"content\":\"no id\"}]");
    CHECK(mini_anthropic_convert(msgs, false, &system, &out, &e) == -1 && e.code == MINI_E_MODEL);
    cJSON_Delete(msgs);

    cJSON *resp = J("{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":["
                    "{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"x\"},"
                    "{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"},"
                    "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{\"command\":\"ls\"}}],"
                    "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":5,\"output_tokens\":6,"
                    "\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":8}}");
    cJSON *msg = NULL;
    const char *fr = NULL, *why = NULL;
    struct mini_usage u;
    CHECK(mini_anthropic_parse(resp, &msg, &fr, &u, &why) == 0);
    CHECK_STR(fr, "tool_calls");
    CHECK(u.input == 5 && u.output == 6 && u.cache_write == 7 && u.cache_read == 8);
    CHECK_JSON(msg,
               "{\"role\":\"assistant\",\"content\":\"ab\",\"tool_calls\":[{\"id\":\"toolu_1\",\"type\":\"function\","
               "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}],"
               "\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"x\"}]}");
    cJSON_Delete(msg);
    cJSON_Delete(resp);
    resp = J("{\"type\":\"message\",\"content\":[],\"stop_reason\":\"max_tokens\"}");
    CHECK(mini_anthropic_parse(resp, &msg, &fr, &u, &why) == 0);
    CHECK_STR(fr, "length");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(msg, "content")) && !u.present);
    cJSON_Delete(msg);
    cJSON_Delete(resp);
    resp = J("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
    CHECK(mini_anthropic_parse(resp, &msg, &fr, &u, &why) == 1);
    CHECK_STR(why, "Overloaded");
    cJSON_Delete(resp);
}

/* ---- deterministic model ---- */

static void test_deterministic(void)
{
    struct mini_err e;
    cJSON *cfg = J(
        "{\"outputs\": [\"no action\", \"```bash\\necho one\\n```\", "
        "\"/sleep 0\", \"```mswea_bash_command\\necho two\\n```\\n```bash\\nx\\n```\", "
        "{\"role\": \"assistant\", \"content\": \"obj\", \"extra\": {\"actions\": [{\"command\": \"echo three\"}]}}], "
        "\"cost_per_call\": 0.5}");
    double global0 = mini_model_global_cost();
    struct mini_model *m = mini_model_new(cfg, "deterministic", &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK_STR(mini_model_class(m), "deterministic");
    CHECK_STR(mini_model_name(m), "deterministic");
    cJSON *messages = cJSON_CreateArray();
    cJSON *a = NULL, *fe = NULL;

    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_FORMAT);
    CHECK(a == NULL && cJSON_GetArraySize(fe) == 1);
    const cJSON *msg = cJSON_GetArrayItem(fe, 0);
    CHECK_STR(str(msg, "role"), "user");
    CHECK_STR(str(msg, "content"), "Please always provide EXACTLY ONE action in triple backticks, found 0 actions.");
    CHECK_STR(str(path(msg, "extra"), "interrupt_type"), "FormatError");
    CHECK_STR(str(path(msg, "extra"), "model_response"), "no action");
    CHECK(mini_model_format_errors(m) == 1);
    cJSON_Delete(fe);

    CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
    CHECK_STR(str(a, "role"), "assistant");
    CHECK_STR(str(path(a, "extra.actions.0"), "command"), "echo one");
    CHECK(path(a, "extra.actions.0.tool_call_id") == NULL);
    CHECK(cJSON_GetNumberValue(path(a, "extra.cost")) == 0.5);
    CHECK(mini_model_format_errors(m) == 0);

    /* observations of a text-mode action: a user message */
    cJSON *outputs = J("[{\"output\": \"one\\n\", \"returncode\": 0, \"exception_info\": \"\"}]");
    cJSON *vars = J("{\"task\": \"t\", \"output\": \"shadowed\"}");
    cJSON *obs = mini_model_observations(m, a, outputs, vars, &e);
    CHECK(obs && cJSON_GetArraySize(obs) == 1);
    CHECK_JSON(path(obs, "0.role"), "\"user\"");
    CHECK_STR(str(path(obs, "0"), "content"), "<returncode>0</returncode>\n<output>\none\n</output>");
    CHECK_STR(str(path(obs, "0.extra"), "raw_output"), "one\n");
    /* mini-swe-agent keeps exception_info in extra even when it is "" */
    CHECK_JSON(path(obs, "0.extra.exception_info"), "\"\"");
    cJSON_Delete(obs);
    cJSON_Delete(outputs);
    cJSON_Delete(vars);
    cJSON_Delete(a);

    /* "/sleep 0" is skipped; two actions is a format error */
    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_FORMAT);
    CHECK_STR(str(path(fe, "0"), "content"),
              "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.");
    cJSON_Delete(fe);

    CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
    CHECK_STR(str(a, "content"), "obj");
    CHECK_STR(str(path(a, "extra.actions.0"), "command"), "echo three");
    /* DeterministicModel returns a message as given: no extra.cost is
     * added, and the agent, which sums extra.cost, is charged nothing for
     * it; only the process-wide total gets cost_per_call. */
    CHECK(path(a, "extra.cost") == NULL);
    cJSON_Delete(a);
    CHECK(fabs(mini_model_global_cost() - global0 - 2.0) < 1e-12);

    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_MODEL);
    CHECK(strstr(e.msg, "all 5 replies") != NULL);

    CHECK(mini_model_calls(m) == 4);
    CHECK(fabs(mini_model_cost(m) - 1.5) < 1e-12);
    cJSON *ser = mini_model_serialize(m);
    CHECK_STR(str(path(ser, "info.config"), "model_type"), "mini.models.test_models.DeterministicModel");
    CHECK(cJSON_GetNumberValue(path(ser, "info.model_stats.api_calls")) == 4);
    CHECK(cJSON_GetNumberValue(path(ser, "info.config.model.cost_per_call")) == 0.5);
    cJSON_Delete(ser);
    cJSON_Delete(messages);
    mini_model_free(m);

    /* a message with its own cost; a tool-call message without saved actions */
    cfg = J("{\"outputs\": [{\"content\": \"c\", \"extra\": {\"actions\": [{\"command\": \"ls\"}], \"cost\": 0.125}},"
            " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"t9\", \"type\": \"function\","
            " \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}}]}]}");
    m = mini_model_new(cfg, "deterministic", &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (m) {
        messages = cJSON_CreateArray();
        CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
        CHECK_STR(str(a, "role"), "assistant");
        cJSON_Delete(a);
        CHECK(fabs(mini_model_cost(m) - 0.125) < 1e-12);
        CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
        CHECK_JSON(path(a, "extra.actions"), "[{\"command\": \"pwd\", \"tool_call_id\": \"t9\"}]");
        CHECK(fabs(mini_model_cost(m) - 0.125) < 1e-12); /* no extra.cost: 0, as the real agent counts */
        cJSON_Delete(a);
        cJSON_Delete(messages);
        mini_model_free(m);
    }

    cfg = J("{\"outputs\": []}");
    CHECK(mini_model_new(cfg, "deterministic", &e) == NULL && strstr(e.msg, "model.outputs"));
    cJSON_Delete(cfg);
    cfg = J("{\"outputs\": [\"x\"], \"cost_per_call\": -1}");
    CHECK(mini_model_new(cfg, "deterministic", &e) == NULL && strstr(e.msg, "cost_per_call"));
    cJSON_Delete(cfg);
}

/* ---- observations of tool calls ---- */

static void test_tool_observations(void)
{
    struct mini_err e;
    cJSON *cfg = J("{\"outputs\": [\"x\"], \"observation_template\": "
                   "\"{{task}}|{{output.returncode}}|{{output.output}}{% if output.exception_info "
                   "%}|{{output.exception_info}}{% endif %}\"}");
    struct mini_model *m = mini_model_new(cfg, "deterministic", &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (!m)
        return;
    cJSON *assistant =
        J("{\"role\": \"assistant\", \"extra\": {\"actions\": ["
          "{\"command\": \"a\", \"tool_call_id\": \"c1\"}, {\"command\": \"b\", \"tool_call_id\": \"c2\"},"
          "{\"command\": \"c\", \"tool_call_id\": \"c3\"}]}}");
    cJSON *outputs =
        J("[{\"output\": \"A\", \"returncode\": 0, \"exception_info\": \"\"},"
          " {\"output\": \"B\", \"returncode\": 124, \"exception_info\": \"timed out\", \"extra\": {\"timeout\": 5}}]");
    cJSON *vars = J("{\"task\": \"T\"}");
    cJSON *obs = mini_model_observations(m, assistant, outputs, vars, &e);
    CHECK(cJSON_GetArraySize(obs) == 3);
    CHECK_STR(str(path(obs, "0"), "role"), "tool");
    CHECK_STR(str(path(obs, "0"), "tool_call_id"), "c1");
    CHECK_STR(str(path(obs, "0"), "content"), "T|0|A");
    CHECK_STR(str(path(obs, "1"), "content"), "T|124|B|timed out");
    CHECK_STR(str(path(obs, "1.extra"), "exception_info"), "timed out");
    CHECK(cJSON_GetNumberValue(path(obs, "1.extra.timeout")) == 5);
    /* the third action did not run: it is still answered */
    CHECK_STR(str(path(obs, "2"), "tool_call_id"), "c3");
    CHECK_STR(str(path(obs, "2"), "content"), "T|-1||action was not executed");
    CHECK(cJSON_GetNumberValue(path(obs, "2.extra.returncode")) == -1);
    cJSON_Delete(obs);

    /* StrictUndefined: an unknown variable is an error */
    cJSON_Delete(vars);
    vars = J("{}");
    obs = mini_model_observations(m, assistant, outputs, vars, &e);
    CHECK(obs == NULL && e.code == MINI_E_TEMPLATE && strstr(e.msg, "observation_template"));
    cJSON_Delete(vars);
    cJSON_Delete(outputs);
    cJSON_Delete(assistant);
    mini_model_free(m);
}

/* ---- replay ---- */

/* deterministic_toolcall (DeterministicToolcallModel): tool-call mode, so a
 * reply without tool calls is a format error in parse_toolcall_actions'
 * words, with has_tool_calls for the template. */
static void test_deterministic_toolcall(void)
{
    struct mini_err e;
    cJSON *cfg =
        J("{\"outputs\": [{\"role\": \"assistant\", \"content\": \"just text\"},"
          " \"plain string\","
          " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"t1\", \"type\": \"function\","
          "  \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": ls}\"}}]},"
          " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"t2\", \"type\": \"function\","
          "  \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}]}],"
          " \"format_error_template\": \"{{error}} [{{has_tool_calls}}]\"}");
    struct mini_model *m = mini_model_new(cfg, "deterministic_toolcall", &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (!m)
        return;
    cJSON *messages = cJSON_CreateArray(), *a = NULL, *fe = NULL;
    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_FORMAT);
    CHECK_STR(str(path(fe, "0"), "content"),
              "No tool calls found in the response. Every response MUST include at least one tool call. [False]");
    cJSON_Delete(fe);
    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_FORMAT);
    CHECK_STR(str(path(fe, "0"), "content"),
              "No tool calls found in the response. Every response MUST include at least one tool call. [False]");
    cJSON_Delete(fe);
    CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1 && e.code == MINI_E_FORMAT);
    CHECK_STR(str(path(fe, "0"), "content"),
              "Error parsing tool call arguments: Expecting value: line 1 column 13 (char 12)."
              "Missing 'command' argument in bash tool call. [True]");
    cJSON_Delete(fe);
    CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
    CHECK_JSON(path(a, "extra.actions"), "[{\"command\": \"ls\", \"tool_call_id\": \"t2\"}]");
    cJSON_Delete(a);
    CHECK_STR(mini_model_class(m), "deterministic_toolcall");
    cJSON *ser = mini_model_serialize(m);
    CHECK_STR(str(path(ser, "info.config"), "model_type"), "mini.models.test_models.DeterministicToolcallModel");
    CHECK_STR(str(path(ser, "info.config.model"), "model_name"), "deterministic_toolcall");
    cJSON_Delete(ser);
    cJSON_Delete(messages);
    mini_model_free(m);
}

static void test_replay(void)
{
    char tmpl[] = "/tmp/test_model_traj.XXXXXX";
    int fd = mkstemp(tmpl);
    const char *traj =
        "{\"trajectory_format\": \"mini-swe-agent-1.1\", \"messages\": ["
        "{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"u\"},"
        "{\"role\": \"assistant\", \"content\": \"one\", \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
        " \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}],"
        " \"extra\": {\"actions\": [{\"command\": \"ls\", \"tool_call_id\": \"c1\"}], \"cost\": 0.25, \"timestamp\": "
        "1}},"
        "{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"x\"},"
        "{\"role\": \"assistant\", \"content\": \"two\", \"tool_calls\": [{\"id\": \"c2\", \"type\": \"function\","
        " \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}}]},"
        "{\"role\": \"exit\", \"content\": \"Submitted\"}]}";
    CHECK(fd >= 0 && write(fd, traj, strlen(traj)) == (ssize_t)strlen(traj));
    close(fd);
    struct mini_err e;
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddStringToObject(cfg, "replay_path", tmpl);
    struct mini_model *m = mini_model_new(cfg, "replay", &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (m) {
        cJSON *messages = cJSON_CreateArray(), *a = NULL, *fe = NULL;
        CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
        CHECK_STR(str(a, "content"), "one");
        CHECK_STR(str(path(a, "extra.actions.0"), "tool_call_id"), "c1");
        CHECK(cJSON_GetNumberValue(path(a, "extra.timestamp")) > 1);
        cJSON_Delete(a);
        CHECK(mini_model_query(m, messages, &a, &fe, &e) == 0);
        CHECK_STR(str(a, "content"), "two");
        /* no saved actions: parsed from the tool calls */
        CHECK_STR(str(path(a, "extra.actions.0"), "command"), "pwd");
        CHECK_STR(str(path(a, "extra.actions.0"), "tool_call_id"), "c2");
        cJSON_Delete(a);
        CHECK(mini_model_query(m, messages, &a, &fe, &e) == -1);
        CHECK(e.code == MINI_E_MODEL && strstr(e.msg, "all 2 assistant messages") && strstr(e.msg, tmpl));
        /* the second has no cost: cost_per_call (1.0), as the real tests' make_output */
        CHECK(mini_model_calls(m) == 2 && fabs(mini_model_cost(m) - 1.25) < 1e-12);
        CHECK_STR(mini_model_class(m), "replay");
        cJSON_Delete(messages);
        mini_model_free(m);
    }
    fd = open(tmpl, O_WRONLY | O_TRUNC);
    const char *empty = "{\"messages\": [{\"role\": \"user\", \"content\": \"u\"}]}";
    CHECK(fd >= 0 && write(fd, empty, strlen(empty)) == (ssize_t)strlen(empty));
    close(fd);
    cfg = cJSON_CreateObject();
    cJSON_AddStringToObject(cfg, "replay_path", tmpl);
    CHECK(mini_model_new(cfg, "replay", &e) == NULL && strstr(e.msg, "no assistant messages"));
    cJSON_Delete(cfg);
    unlink(tmpl);
    cfg = J("{\"replay_path\": \"/nonexistent/x.traj.json\"}");
    CHECK(mini_model_new(cfg, "replay", &e) == NULL && strstr(e.msg, "/nonexistent/x.traj.json"));
    cJSON_Delete(cfg);
    CHECK(mini_model_new(NULL, "replay", &e) == NULL && strstr(e.msg, "replay_path"));
}

/* ---- API model construction (no request is made) ---- */

static void test_api_config(void)
{
    struct mini_err e;
    unsetenv("MSWEA_COST_TRACKING");
    setenv("OPENAI_API_KEY", "sk-unit-test-key-123456", 1);
    cJSON *cfg = J("{\"model_name\": \"openai/gpt-4o\", \"model_kwargs\": {\"api_key\": \"sk-config-secret-999\","
                   " \"extra_headers\": {\"X-Api-Key\": \"hdr-secret\", \"X-Trace\": \"1\"}, \"temperature\": 0.5}}");
    struct mini_model *m = mini_model_new(cfg, NULL, &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (m) {
        CHECK_STR(m->url, "https://api.openai.com/v1/chat/completions");
        CHECK_STR(m->api_model, "gpt-4o");
        CHECK_STR(m->api_key, "sk-config-secret-999");
        cJSON *vars = mini_model_template_vars(m);
        char *text = P(vars);
        CHECK(strstr(text, "sk-config-secret-999") == NULL && strstr(text, "hdr-secret") == NULL);
        CHECK(strstr(text, "\"X-Trace\":\"1\"") != NULL);
        CHECK_STR(str(vars, "cost_tracking"), "default");
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(vars, "set_cache_control")));
        CHECK_STR(str(vars, "format_error_template"), "{{ error }}");
        free(text);
        cJSON_Delete(vars);
        /* the key never survives into an error message */
        mini_err_set(&e, MINI_E_MODEL, "server said: bad key sk-config-secret-999!");
        mini_model_scrub(m, &e);
        CHECK_STR(e.msg, "server said: bad key ***!");
        mini_model_free(m);
    }
    cfg = J(
        "{\"model_name\": \"anthropic/claude-opus-4-5\", \"model_kwargs\": {\"api_base\": \"http://127.0.0.1:1/v1\"}}");
    unsetenv("ANTHROPIC_API_KEY");
    m = mini_model_new(cfg, NULL, &e);
    cJSON_Delete(cfg);
    CHECK(m != NULL);
    if (m) {
        CHECK_STR(m->url, "http://127.0.0.1:1/v1/messages");
        CHECK(m->cache_control);   /* Claude: cache control by default */
        CHECK(m->api_key == NULL); /* a custom endpoint may do without */
        mini_model_free(m);
    }
    cfg = J("{\"model_name\": \"gpt-4o\", \"model_kwargs\": {\"api_base\": \"ftp://x\"}}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL && strstr(e.msg, "http"));
    cJSON_Delete(cfg);
    cfg = J("{\"model_name\": \"gpt-4o\", \"cost_tracking\": \"sometimes\"}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL && strstr(e.msg, "cost_tracking"));
    cJSON_Delete(cfg);
    cfg = J("{\"model_name\": \"gpt-4o\", \"model_kwargs\": {\"extra_headers\": {\"X-A\": \"a\\r\\nInjected: 1\"}}}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL && strstr(e.msg, "line break"));
    cJSON_Delete(cfg);
    cfg = J("{\"model_name\": \"gpt-4o\", \"multimodal_regex\": \"<img>\"}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL && strstr(e.msg, "multimodal_regex"));
    cJSON_Delete(cfg);
    cfg = J("{\"model_name\": \"gpt-4o\", \"multimodal_regex\": \"\"}");
    struct mini_model *ok = mini_model_new(cfg, NULL, &e);
    CHECK(ok != NULL);
    mini_model_free(ok);
    cJSON_Delete(cfg);
    cfg = J("{\"model_name\": \"gpt-4o\", \"model_kwargs\": {\"timeout\": -1}}");
    CHECK(mini_model_new(cfg, NULL, &e) == NULL && strstr(e.msg, "timeout"));
    cJSON_Delete(cfg);
    unsetenv("OPENAI_API_KEY");
}

int main(void)
{
    test_regex();
    test_toolcalls();
    test_pyjson_table();
    test_pyjson_python();
    test_prices();
    test_retry_timing();
    test_classes();
    test_openai_messages();
    test_anthropic();
    test_deterministic();
    test_tool_observations();
    test_deterministic_toolcall();
    test_replay();
    test_api_config();
    return check_summary();
}
