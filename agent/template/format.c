/* Python's printf-style formatting, `fmt % args`, for the % operator and
 * the format filter. */
#include "builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* Append n copies of c. */
int tpl_buf_fill(struct mini_buf *b, char c, size_t n)
{
    if (n == 0)
        return 0;
    if (mini_buf_reserve(b, n) < 0)
        return -1;
    memset(b->data + b->len, c, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

static void pad_to(struct mini_buf *b, size_t have, int64_t width, bool left, const char *body, size_t blen)
{
    size_t pad = width > 0 && (uint64_t)width > have ? (size_t)width - have : 0;
    if (!left)
        tpl_buf_fill(b, ' ', pad);
    mini_buf_append(b, body, blen);
    if (left)
        tpl_buf_fill(b, ' ', pad);
}

static int fmt_int(struct mini_buf *b, int64_t v, char conv, const char *flags, int64_t width, int64_t prec)
{
    char digits[80];
    size_t nd = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X') ? 16 : 10;
    const char *hex = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        digits[nd++] = hex[u % base];
        u /= base;
    } while (u);
    char body[200];
    size_t bl = 0;
    if (v < 0)
        body[bl++] = '-';
    else if (strchr(flags, '+'))
        body[bl++] = '+';
    else if (strchr(flags, ' '))
        body[bl++] = ' ';
    if (strchr(flags, '#') && base != 10) {
        body[bl++] = '0';
        body[bl++] = conv == 'o' ? 'o' : conv;
    }
    size_t zeros = prec > 0 && (uint64_t)prec > nd ? (size_t)prec - nd : 0;
    if (strchr(flags, '0') && !strchr(flags, '-') && width > 0 && (uint64_t)width > bl + zeros + nd)
        zeros = (size_t)width - bl - nd;
    if (zeros > 100000)
        return -1;
    _cleanup_buf_ struct mini_buf tmp = MINI_BUF_INIT;
    mini_buf_append(&tmp, body, bl);
    tpl_buf_fill(&tmp, '0', zeros);
    while (nd)
        mini_buf_putc(&tmp, digits[--nd]);
    pad_to(b, tmp.len, width, strchr(flags, '-') != NULL, tmp.data, tmp.len);
    return 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void fmt_double(struct mini_buf *b, double v, char conv, const char *flags, int64_t width, int64_t prec)
{
    char f[32];
    snprintf(f, sizeof f, "%%%s*.*%c", flags, conv);
    int w = width > 100000 ? 100000 : (int)width, p = prec < 0 ? 6 : prec > 1000 ? 1000 : (int)prec;
    int n = snprintf(NULL, 0, f, w, p, v);
    if (n > 0 && mini_buf_reserve(b, (size_t)n + 1) == 0) {
        snprintf(b->data + b->len, (size_t)n + 1, f, w, p, v);
        b->len += (size_t)n;
    }
}
#pragma GCC diagnostic pop

int tpl_percent_format(struct tpl *t, int line, const struct tv *fmt, const struct tv *args, struct tv *out)
{
    const struct tv *argv = args;
    size_t argc = 1, ai = 0;
    const struct tdict *map = NULL;
    /* Python skips the "not all arguments converted" check when the one
     * argument has __getitem__ (a mapping, a list, an Undefined). */
    bool maplike = args->kind == TV_DICT || args->kind == TV_UNDEF ||
        (args->kind == TV_SEQ && (args->sub == SEQ_LIST || args->sub == SEQ_RANGE));
    if (args->kind == TV_SEQ && args->sub == SEQ_TUPLE) {
        argv = args->u.seq->v;
        argc = args->u.seq->n;
    } else if (args->kind == TV_DICT) {
        map = args->u.d;
    }
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *p = fmt->u.s.p;
    size_t n = fmt->u.s.n;
    for (size_t i = 0; i < n;) {
        if (p[i] != '%') {
            mini_buf_putc(&b, p[i++]);
            continue;
        }
        i++;
        if (i < n && p[i] == '%') {
            mini_buf_putc(&b, '%');
            i++;
            continue;
        }
        const struct tv *val = NULL;
        struct tv keyed;
        if (i < n && p[i] == '(') {
            if (!map) {
                if (tpl_tv_isstrict_undef(args))
                    return tpl_tv_undef_error(t, line, args);
                return tpl_fail(t, line, "format requires a mapping");
            }
            size_t depth = 1, ks = ++i;
            while (i < n && depth) {
                depth += p[i] == '(';
                depth -= p[i] == ')';
                i++;
            }
            if (depth)
                return tpl_fail(t, line, "incomplete format key");
            struct tv key = tpl_tv_strn(p + ks, i - 1 - ks);
            long at = tpl_tv_dict_find(t, line, map, &key);
            if (at < -1)
                return -1;
            if (at < 0)
                return tpl_fail(t, line, "KeyError: '%.*s'", (int)key.u.s.n, key.u.s.p);
            keyed = map->v[at];
            val = &keyed;
        }
        char flags[8] = "";
        size_t nf = 0;
        while (i < n && strchr("-+ #0", p[i]) && p[i]) {
            if (!strchr(flags, p[i]) && nf < sizeof flags - 1) {
                flags[nf++] = p[i];
                flags[nf] = 0;
            }
            i++;
        }
        int64_t width = 0, prec = -1;
        if (i < n && p[i] == '*') {
            i++;
            if (ai >= argc)
                return tpl_fail(t, line, "not enough arguments for format string");
            if (tpl_get_int(t, line, &argv[ai++], &width) < 0)
                return -1;
            if (width < 0) {
                width = -width;
                if (!strchr(flags, '-') && nf < sizeof flags - 1) {
                    flags[nf++] = '-';
                    flags[nf] = 0;
                }
            }
        } else {
            while (i < n && p[i] >= '0' && p[i] <= '9') {
                if (width > 100000000)
                    return tpl_fail(t, line, "width too big");
                width = width * 10 + (p[i++] - '0');
            }
        }
        if (i < n && p[i] == '.') {
            i++;
            prec = 0;
            if (i < n && p[i] == '*') {
                i++;
                if (ai >= argc)
                    return tpl_fail(t, line, "not enough arguments for format string");
                if (tpl_get_int(t, line, &argv[ai++], &prec) < 0)
                    return -1;
            } else {
                while (i < n && p[i] >= '0' && p[i] <= '9') {
                    if (prec > 100000000)
                        return tpl_fail(t, line, "precision too big");
                    prec = prec * 10 + (p[i++] - '0');
                }
            }
        }
        while (i < n && (p[i] == 'h' || p[i] == 'l' || p[i] == 'L'))
            i++;
        if (i >= n)
            return tpl_fail(t, line, "incomplete format");
        char conv = p[i++];
        if (!val) {
            if (ai >= argc)
                return tpl_fail(t, line, "not enough arguments for format string");
            val = &argv[ai++];
        }
        if (tpl_tv_isstrict_undef(val))
            return tpl_tv_undef_error(t, line, val);
        if (tpl_charge(t, line, (size_t)width) < 0 || tpl_work(t, line, (size_t)width) < 0)
            return -1;
        switch (conv) {
        case 's':
        case 'r':
        case 'a': {
            _cleanup_buf_ struct mini_buf s = MINI_BUF_INIT;
            if ((conv == 's' ? tpl_tv_str(t, line, val, &s) : tpl_tv_repr(t, line, val, &s)) < 0)
                return -1;
            if (conv == 'a') {
                _cleanup_buf_ struct mini_buf a = MINI_BUF_INIT;
                size_t l;
                for (size_t k = 0; k < s.len; k += l) {
                    uint32_t c = tpl_u8_decode(s.data + k, s.len - k, &l);
                    if (c < 0x80)
                        mini_buf_putc(&a, (char)c);
                    else if (c < 0x100)
                        mini_buf_printf(&a, "\\x%02x", c);
                    else if (c < 0x10000)
                        mini_buf_printf(&a, "\\u%04x", c);
                    else
                        mini_buf_printf(&a, "\\U%08x", c);
                }
                mini_buf_reset(&s);
                mini_buf_append(&s, a.data ? a.data : "", a.len);
            }
            if (fmt->sub && !(val->kind == TV_STR && val->sub)) {
                _cleanup_buf_ struct mini_buf e = MINI_BUF_INIT;
                tpl_html_escape(&e, s.data ? s.data : "", s.len);
                mini_buf_reset(&s);
                mini_buf_append(&s, e.data ? e.data : "", e.len);
            }
            size_t len = s.len, cps = tpl_u8_count(s.data ? s.data : "", s.len);
            if (prec >= 0 && (uint64_t)prec < cps) {
                len = tpl_u8_offset(s.data, s.len, (size_t)prec);
                cps = (size_t)prec;
            }
            pad_to(&b, cps, width, strchr(flags, '-') != NULL, s.data ? s.data : "", len);
            break;
        }
        case 'd':
        case 'i':
        case 'u':
        case 'o':
        case 'x':
        case 'X': {
            int64_t iv;
            if (val->kind == TV_FLOAT && (conv == 'd' || conv == 'i' || conv == 'u')) {
                if (!isfinite(val->u.f))
                    return tpl_fail(t, line, "cannot convert float %s to integer",
                                    isnan(val->u.f) ? "NaN" : "infinity");
                if (fabs(val->u.f) >= 9.2e18)
                    return tpl_overflow(t, line);
                iv = (int64_t)val->u.f;
            } else if (val->kind == TV_INT || val->kind == TV_BOOL) {
                iv = val->kind == TV_INT ? val->u.i : val->u.b;
            } else {
                return tpl_fail(t, line, "%%%c format: %s is required, not %s", conv,
                                conv == 'd' || conv == 'i' || conv == 'u' ? "a real number" : "an integer",
                                tpl_tv_type(val));
            }
            if (fmt_int(&b, iv, conv == 'i' || conv == 'u' ? 'd' : conv, flags, width, prec) < 0)
                return tpl_fail(t, line, "precision too big");
            break;
        }
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': {
            if (!tpl_tv_isnum(val))
                return tpl_fail(t, line, "must be real number, not %s", tpl_tv_type(val));
            double d = val->kind == TV_FLOAT ? val->u.f : (double)(val->kind == TV_INT ? val->u.i : val->u.b);
            fmt_double(&b, d, conv, flags, width, prec);
            break;
        }
        case 'c': {
            _cleanup_buf_ struct mini_buf s = MINI_BUF_INIT;
            if (val->kind == TV_INT || val->kind == TV_BOOL) {
                int64_t c = val->kind == TV_INT ? val->u.i : val->u.b;
                if (c < 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
                    return tpl_fail(t, line, "%%c arg not in range(0x110000)");
                tpl_u8_put(&s, (uint32_t)c);
            } else if (val->kind == TV_STR && tpl_u8_count(val->u.s.p, val->u.s.n) == 1) {
                mini_buf_append(&s, val->u.s.p, val->u.s.n);
            } else {
                return tpl_fail(t, line, "%%c requires int or char");
            }
            pad_to(&b, 1, width, strchr(flags, '-') != NULL, s.data, s.len);
            break;
        }
        default: return tpl_fail(t, line, "unsupported format character '%c'", conv);
        }
    }
    if (!maplike && ai < argc)
        return tpl_fail(t, line, "not all arguments converted during string formatting");
    return tpl_tv_from_buf(t, line, &b, fmt->sub, out);
}
