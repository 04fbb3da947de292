/* libFuzzer target: the template engine.  The input is a template, then
 * optionally a NUL byte and JSON variables (else a fixed set of variables
 * of every type is used).  Invariants: rendering never crashes or leaks;
 * it is deterministic; on error the output buffer is untouched and the
 * error is a template error with a message; with valid UTF-8 variables the
 * output is valid UTF-8 (slicing never splits a character). */
#include "template/template.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mini/utf8.h"

/* Rendered text is valid UTF-8, except that a NUL (U+0000) is written as
 * MINI_UTF8_NUL (C0 80) so that C strings carry it (mini/utf8.h). */
static bool valid_output(const char *p, size_t n)
{
    struct mini_buf clean = MINI_BUF_INIT;
    bool ok =
        mini_utf8_sanitize_keep_nul(&clean, p, n) == 0 && clean.len == n && (n == 0 || memcmp(clean.data, p, n) == 0);
    mini_buf_free(&clean);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_vars[] =
    "{\"s\":\"h\\u00e9llo \\ud83d\\ude00 world\",\"e\":\"\",\"i\":7,\"f\":2.5,\"t\":true,\"n\":null,"
    "\"l\":[3,1,\"two\",[4,{\"k\":\"v\"}],null],\"d\":{\"a\":1,\"b\":\"x\",\"items\":[1,2]},"
    "\"output\":{\"returncode\":0,\"output\":\"line1\\nline2\\r\\n\\u4e16\\u754c\"},"
    "\"actions\":[\"ls\",\"pwd\"],\"system\":\"Linux\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits keep each run fast; the limits themselves are tested by
     * the unit tests. */
    static const struct mini_tpl_limits lim = { .mem = (size_t)32 << 20, .steps = 200000 };

    const char *src = (const char *)data;
    size_t len = size;
    const char *nul = memchr(data, 0, size);
    cJSON *vars;
    bool own_vars_valid = true;
    if (nul) {
        len = (size_t)(nul - src);
        vars = cJSON_ParseWithLength(nul + 1, size - len - 1);
        if (vars && !cJSON_IsObject(vars)) {
            cJSON_Delete(vars);
            vars = NULL;
        }
        own_vars_valid = mini_utf8_valid(nul + 1, size - len - 1);
    } else {
        vars = cJSON_Parse(default_vars);
    }

    struct mini_buf out1 = MINI_BUF_INIT, out2 = MINI_BUF_INIT;
    struct mini_err e1, e2;
    mini_buf_puts(&out1, "keep");
    int r1 = mini_tpl_render_limited(src, len, vars, &lim, &out1, &e1);
    int r2 = mini_tpl_render_limited(src, len, vars, &lim, &out2, &e2);
    if (r1 != r2)
        abort();
    if (r1 == 0) {
        if (out1.len != out2.len + 4 || memcmp(out1.data + 4, out2.data ? out2.data : "", out2.len) != 0)
            abort();
        if (own_vars_valid && !valid_output(out2.data ? out2.data : "", out2.len))
            abort();
    } else {
        if (out1.len != 4 || out2.len != 0 || e1.msg[0] == 0 || strcmp(e1.msg, e2.msg) != 0)
            abort();
        if (e1.code != MINI_E_TEMPLATE && e1.code != MINI_E_NOMEM)
            abort();
    }
    mini_buf_free(&out1);
    mini_buf_free(&out2);
    cJSON_Delete(vars);
    return 0;
}
