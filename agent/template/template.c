/* The template engine's entry point: checks the input, then lexes, parses,
 * folds and executes it in one arena.  See template.h for what is
 * supported and internal.h for which file does what. */
#include "template.h"
#include "internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"
#include "mini/utf8.h"

int tpl_fail(struct tpl *t, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tpl_arena_vfail(&t->a, line, fmt, ap);
    va_end(ap);
    return rc;
}

/* Jinja's source preparation: every "\r\n", "\r" and "\n" becomes "\n", and
 * one trailing newline is dropped (keep_trailing_newline=False). */
static char *normalize(struct tpl *t, const char *src, size_t len, size_t *out_len)
{
    char *s = tpl_alloc(t, len + 1);
    if (!s)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n')
        n--;
    s[n] = 0;
    *out_len = n;
    return s;
}

static int render(struct tpl *t, const char *src, size_t len, const cJSON *vars, struct mini_buf *out,
                  struct mini_err *e)
{
    if (!src && len)
        return mini_err_set(e, MINI_E_TEMPLATE, "no template text");
    if (vars && !cJSON_IsObject(vars))
        return mini_err_set(e, MINI_E_TEMPLATE, "template variables must be a JSON object");
    if (!mini_utf8_valid(src ? src : "", len)) {
        /* A newline never sits inside a character: check line by line. */
        int line = 1;
        for (size_t i = 0; i < len; line++) {
            const char *nl = memchr(src + i, '\n', len - i);
            size_t end = nl ? (size_t)(nl - src) : len;
            if (!mini_utf8_valid(src + i, end - i))
                break;
            i = end + 1;
        }
        return mini_err_set(e, MINI_E_TEMPLATE, "line %d: template is not valid UTF-8", line);
    }
    size_t n;
    struct body body;
    const char *s = normalize(t, src ? src : "", len, &n);
    if (!s || tpl_lex(t, s, n) < 0 || tpl_parse(t, &body) < 0 || tpl_fold(t, &body) < 0)
        return -1;
    _cleanup_buf_ struct mini_buf result = MINI_BUF_INIT;
    t->vars = vars;
    t->out = &result;
    if (tpl_exec(t, &body) < 0 || tpl_failed(t))
        return -1;
    if (mini_buf_append(out, result.data ? result.data : "", result.len) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory while rendering a template");
    return 0;
}

static void tpl_freep(struct tpl *t)
{
    tpl_arena_free(&t->a);
    free(t->toks);
}

int mini_tpl_render_limited(const char *src, size_t len, const cJSON *vars, const struct mini_tpl_limits *lim,
                            struct mini_buf *out, struct mini_err *e)
{
    if (e)
        mini_err_clear(e);
    _cleanup_(tpl_freep) struct tpl t = { 0 };
    tpl_arena_init(&t.a, e, lim);
    if (render(&t, src, len, vars, out, e) == 0)
        return 0;
    if (e && e->code == MINI_OK)
        mini_err_set(e, MINI_E_TEMPLATE, "template rendering failed");
    return -1;
}

int mini_tpl_render(const char *src, size_t len, const cJSON *vars, struct mini_buf *out, struct mini_err *e)
{
    return mini_tpl_render_limited(src, len, vars, NULL, out, e);
}
