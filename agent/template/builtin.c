/* What the filters, tests and methods share: binding arguments as Python
 * binds them, coercions, HTML escaping, stripping and searching. */
#include "builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* Bind positional and keyword arguments to the parameters `names`. */
int tpl_bind(struct tpl *t, int line, const char *fn, const struct callargs *a, const char *const *names, size_t nn,
             struct tv *vals, bool *have)
{
    for (size_t i = 0; i < nn; i++)
        have[i] = false;
    if (a->n > nn)
        return tpl_fail(t, line, "%s() takes at most %zu argument%s (%zu given)", fn, nn, nn == 1 ? "" : "s", a->n);
    for (size_t i = 0; i < a->n; i++) {
        vals[i] = a->v[i];
        have[i] = true;
    }
    for (size_t k = 0; k < a->nkw; k++) {
        size_t i;
        for (i = 0; i < nn; i++)
            if (strlen(names[i]) == a->kw[k].n && memcmp(names[i], a->kw[k].name, a->kw[k].n) == 0)
                break;
        if (i == nn)
            return tpl_fail(t, line, "%s() got an unexpected keyword argument '%.*s'", fn, (int)a->kw[k].n,
                            a->kw[k].name);
        if (have[i])
            return tpl_fail(t, line, "%s() got multiple values for argument '%s'", fn, names[i]);
        vals[i] = a->kwv[k];
        have[i] = true;
    }
    return 0;
}

int tpl_no_kwargs(struct tpl *t, int line, const char *fn, const struct callargs *a)
{
    if (a->nkw)
        return tpl_fail(t, line, "%s() takes no keyword arguments", fn);
    return 0;
}

int tpl_get_int(struct tpl *t, int line, const struct tv *v, int64_t *out)
{
    if (v->kind == TV_INT || v->kind == TV_BOOL) {
        *out = v->kind == TV_INT ? v->u.i : v->u.b;
        return 0;
    }
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, line, v);
    return tpl_fail(t, line, "'%s' object cannot be interpreted as an integer", tpl_tv_type(v));
}

int tpl_need_str(struct tpl *t, int line, const struct tv *v, const char *what)
{
    if (v->kind == TV_STR)
        return 0;
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, line, v);
    return tpl_fail(t, line, "%s must be str, not %s", what, tpl_tv_type(v));
}

/* str(v): a plain string, also for a Markup one. */
int tpl_str_of(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    if (tpl_tv_to_str(t, line, v, out) < 0)
        return -1;
    out->sub = 0;
    return 0;
}

/* str(v) with its Markup flag kept (Jinja's tpl_soft_str). */
int tpl_soft_str(struct tpl *t, int line, const struct tv *v, struct tv *out) { return tpl_tv_to_str(t, line, v, out); }

int tpl_html_escape(struct mini_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (p[i]) {
        case '&': mini_buf_puts(b, "&amp;"); break;
        case '<': mini_buf_puts(b, "&lt;"); break;
        case '>': mini_buf_puts(b, "&gt;"); break;
        case '"': mini_buf_puts(b, "&#34;"); break;
        case '\'': mini_buf_puts(b, "&#39;"); break;
        default: mini_buf_putc(b, p[i]); break;
        }
    }
    return 0;
}

/* markupsafe.escape(v): Markup. */
int tpl_escape_value(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    if (v->kind == TV_STR && v->sub) {
        *out = *v;
        return 0;
    }
    struct tv s;
    if (tpl_str_of(t, line, v, &s) < 0)
        return -1;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    tpl_html_escape(&b, s.u.s.p, s.u.s.n);
    return tpl_tv_from_buf(t, line, &b, true, out);
}

/* p[0..n) with leading/trailing characters removed: whitespace when chars
 * is NULL, else any code point of chars. how: 1 left, 2 right, 3 both. */
static bool in_chars(uint32_t c, const struct tv *chars)
{
    if (!chars)
        return tpl_uni_isspace(c);
    size_t l;
    for (size_t i = 0; i < chars->u.s.n; i += l)
        if (tpl_u8_decode(chars->u.s.p + i, chars->u.s.n - i, &l) == c)
            return true;
    return false;
}

void tpl_strip_span(const char *p, size_t n, const struct tv *chars, int how, size_t *b, size_t *e)
{
    size_t i = 0, j = n, l;
    if (how & 1)
        while (i < j) {
            uint32_t c = tpl_u8_decode(p + i, j - i, &l);
            if (!in_chars(c, chars))
                break;
            i += l;
        }
    if (how & 2)
        while (j > i) {
            size_t k = j - 1;
            while (k > i && ((unsigned char)p[k] & 0xC0) == 0x80 && j - k < 4)
                k--;
            uint32_t c = tpl_u8_decode(p + k, j - k, &l);
            if (!in_chars(c, chars))
                break;
            j = k;
        }
    *b = i;
    *e = j;
}

const char *tpl_rfind_bytes(const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn > hn)
        return NULL;
    for (size_t i = hn - nn + 1; i-- > 0;)
        if (memcmp(h + i, nd, nn) == 0)
            return h + i;
    return NULL;
}

const struct tpl_builtin *tpl_find_builtin(const struct tpl_builtin *b, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(b[i].name) == len && memcmp(b[i].name, name, len) == 0)
            return &b[i];
    return NULL;
}
