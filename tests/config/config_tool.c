/* Helper for the differential tests in tests/config/run_diff.py.
 *
 *   config_tool yaml FILE...     one line per file: FILE<TAB>OK<TAB>JSON
 *                                or FILE<TAB>ERR<TAB>message
 *   config_tool dotenv FILE...   the same for mini_config_parse_dotenv
 *   config_tool load SPEC...     mini_config_load + mini_config_validate,
 *                                one line: OK<TAB>JSON or ERR<TAB>message
 *
 * JSON numbers are printed with 17 significant digits, non-finite ones as
 * NaN / Infinity / -Infinity (which Python's json module reads), so the
 * runner can compare values exactly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/dotenv.h"
#include "config/config_yaml.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"

static void put_string(struct mini_buf *b, const char *s)
{
    mini_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': mini_buf_puts(b, "\\\""); break;
        case '\\': mini_buf_puts(b, "\\\\"); break;
        case '\n': mini_buf_puts(b, "\\n"); break;
        case '\r': mini_buf_puts(b, "\\r"); break;
        case '\t': mini_buf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                mini_buf_printf(b, "\\u%04x", *p);
            else
                mini_buf_putc(b, (char)*p);
        }
    }
    mini_buf_putc(b, '"');
}

static void put_json(struct mini_buf *b, const cJSON *v)
{
    if (cJSON_IsNull(v)) {
        mini_buf_puts(b, "null");
    } else if (cJSON_IsTrue(v)) {
        mini_buf_puts(b, "true");
    } else if (cJSON_IsFalse(v)) {
        mini_buf_puts(b, "false");
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (isnan(d))
            mini_buf_puts(b, "NaN");
        else if (isinf(d))
            mini_buf_puts(b, d > 0 ? "Infinity" : "-Infinity");
        else
            mini_buf_printf(b, "%.17g", d);
    } else if (cJSON_IsString(v)) {
        put_string(b, v->valuestring);
    } else if (cJSON_IsArray(v)) {
        mini_buf_putc(b, '[');
        const cJSON *c;
        int first = 1;
        cJSON_ArrayForEach (c, v) {
            if (!first)
                mini_buf_putc(b, ',');
            first = 0;
            put_json(b, c);
        }
        mini_buf_putc(b, ']');
    } else if (cJSON_IsObject(v)) {
        mini_buf_putc(b, '{');
        const cJSON *c;
        int first = 1;
        cJSON_ArrayForEach (c, v) {
            if (!first)
                mini_buf_putc(b, ',');
            first = 0;
            put_string(b, c->string);
            mini_buf_putc(b, ':');
            put_json(b, c);
        }
        mini_buf_putc(b, '}');
    }
}

static void one_line(const char *label, cJSON *v, const struct mini_err *e)
{
    struct mini_buf out = MINI_BUF_INIT;
    if (label)
        mini_buf_printf(&out, "%s\t", label);
    if (v) {
        mini_buf_puts(&out, "OK\t");
        put_json(&out, v);
    } else {
        mini_buf_puts(&out, "ERR\t");
        for (const char *p = e->msg; *p; p++)
            mini_buf_putc(&out, *p == '\n' || *p == '\t' ? ' ' : *p);
    }
    mini_buf_putc(&out, '\n');
    fwrite(out.data, 1, out.len, stdout);
    mini_buf_free(&out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: config_tool yaml|dotenv|load ARGS...\n"
                "       config_tool dotenv-set KEY VALUE FILE... | dotenv-unset KEY FILE...\n");
        return 2;
    }
    const char *mode = argv[1];
    /* The text python-dotenv's set_key / unset_key would leave, as a JSON
     * string (the files are not changed). */
    bool set = !strcmp(mode, "dotenv-set");
    if (set || !strcmp(mode, "dotenv-unset")) {
        int first = set ? 4 : 3;
        if (argc < first)
            return 2;
        for (int i = first; i < argc; i++) {
            struct mini_err e;
            mini_err_clear(&e);
            _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT, out = MINI_BUF_INIT;
            bool found;
            cJSON *v = NULL;
            if (mini_read_file(argv[i], &text, 64u << 20, &e) == 0 &&
                mini_config_dotenv_edit(text.data ? text.data : "", text.len, argv[2], set ? argv[3] : NULL, &out,
                                        &found, &e) == 0)
                v = cJSON_CreateString(out.data ? out.data : "");
            one_line(argv[i], v, &e);
            cJSON_Delete(v);
        }
        fflush(stdout);
        return 0;
    }
    if (!strcmp(mode, "load")) {
        struct mini_err e;
        mini_err_clear(&e);
        cJSON *cfg = mini_config_load((const char *const *)argv + 2, (size_t)argc - 2, &e);
        if (cfg && mini_config_validate(cfg, &e) < 0) {
            cJSON_Delete(cfg);
            cfg = NULL;
        }
        one_line(NULL, cfg, &e);
        cJSON_Delete(cfg);
        return 0;
    }
    for (int i = 2; i < argc; i++) {
        struct mini_err e;
        mini_err_clear(&e);
        _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
        cJSON *v = NULL;
        if (mini_read_file(argv[i], &text, 64u << 20, &e) == 0) {
            const char *t = text.data ? text.data : "";
            if (!strcmp(mode, "yaml"))
                v = mini_yaml_parse(t, text.len, argv[i], &e);
            else
                v = mini_config_parse_dotenv(t, text.len, NULL, &e);
        }
        one_line(argv[i], v, &e);
        cJSON_Delete(v);
    }
    fflush(stdout);
    return 0;
}
