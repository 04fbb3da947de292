/* The builtins: filters, tests, the methods of str, dict, list and range,
 * the global functions, printf-style formatting, argument binding. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* ---------------------------------------------------------- callables */

struct method { const char *name; int id; };

static const struct method str_methods[] = {
    { "capitalize", S_CAPITALIZE }, { "casefold", F_UNSUPPORTED }, { "center", S_CENTER },
    { "count", S_COUNT }, { "encode", F_UNSUPPORTED }, { "endswith", S_ENDSWITH },
    { "expandtabs", F_UNSUPPORTED }, { "find", S_FIND }, { "format", F_UNSUPPORTED },
    { "format_map", F_UNSUPPORTED }, { "index", S_INDEX }, { "isalnum", S_ISALNUM },
    { "isalpha", S_ISALPHA }, { "isascii", S_ISASCII }, { "isdecimal", S_ISDECIMAL },
    { "isdigit", S_ISDIGIT }, { "isidentifier", F_UNSUPPORTED }, { "islower", S_ISLOWER },
    { "isnumeric", S_ISNUMERIC }, { "isprintable", F_UNSUPPORTED }, { "isspace", S_ISSPACE },
    { "istitle", F_UNSUPPORTED }, { "isupper", S_ISUPPER }, { "join", S_JOIN },
    { "ljust", S_LJUST }, { "lower", S_LOWER }, { "lstrip", S_LSTRIP },
    { "maketrans", F_UNSUPPORTED }, { "partition", S_PARTITION },
    { "removeprefix", S_REMOVEPREFIX }, { "removesuffix", S_REMOVESUFFIX },
    { "replace", S_REPLACE }, { "rfind", S_RFIND }, { "rindex", S_RINDEX }, { "rjust", S_RJUST },
    { "rpartition", S_RPARTITION }, { "rsplit", S_RSPLIT }, { "rstrip", S_RSTRIP },
    { "split", S_SPLIT }, { "splitlines", S_SPLITLINES }, { "startswith", S_STARTSWITH },
    { "strip", S_STRIP }, { "swapcase", F_UNSUPPORTED }, { "title", S_TITLE },
    { "translate", F_UNSUPPORTED }, { "upper", S_UPPER }, { "zfill", S_ZFILL },
    { NULL, 0 },
};

static const struct method dict_methods[] = {
    { "clear", F_UNSUPPORTED }, { "copy", D_COPY }, { "fromkeys", F_UNSUPPORTED }, { "get", D_GET },
    { "items", D_ITEMS }, { "keys", D_KEYS }, { "pop", F_UNSUPPORTED },
    { "popitem", F_UNSUPPORTED }, { "setdefault", F_UNSUPPORTED }, { "update", F_UNSUPPORTED },
    { "values", D_VALUES }, { NULL, 0 },
};

static const struct method list_methods[] = {
    { "append", F_UNSUPPORTED }, { "clear", F_UNSUPPORTED }, { "copy", Q_COPY },
    { "count", Q_COUNT }, { "extend", F_UNSUPPORTED }, { "index", Q_INDEX },
    { "insert", F_UNSUPPORTED }, { "pop", F_UNSUPPORTED }, { "remove", F_UNSUPPORTED },
    { "reverse", F_UNSUPPORTED }, { "sort", F_UNSUPPORTED }, { NULL, 0 },
};

static const struct method tuple_methods[] = {
    { "count", Q_COUNT }, { "index", Q_INDEX }, { NULL, 0 },
};

static const struct method view_methods[] = {
    { "isdisjoint", F_UNSUPPORTED }, { "mapping", F_UNSUPPORTED }, { NULL, 0 },
};

bool tpl_method(const struct tv *obj, const char *name, size_t len, int *id, const char **mname)
{
    const struct method *m = NULL;
    switch (obj->kind) {
    case TV_STR: m = str_methods; break;
    case TV_DICT: m = dict_methods; break;
    case TV_SEQ:
        m = obj->sub == SEQ_LIST ? list_methods :
            obj->sub == SEQ_TUPLE || obj->sub == SEQ_RANGE ? tuple_methods : view_methods;
        break;
    default:
        return false;
    }
    for (; m->name; m++)
        if (strlen(m->name) == len && memcmp(m->name, name, len) == 0) {
            *id = m->id;
            *mname = m->name;
            return true;
        }
    return false;
}

int tpl_make_func(struct tpl *t, int id, const struct tv *self, const char *name, struct tv *out)
{
    struct tfunc *f = tpl_alloc(t, sizeof *f);
    if (!f)
        return -1;
    f->id = id;
    if (self)
        f->self = *self;
    else
        f->self.kind = TV_NONE;
    f->name = name;
    out->kind = TV_FUNC;
    out->sub = 0;
    out->u.fn = f;
    return 0;
}

int tpl_describe(struct tpl *t, const struct tv *v, struct mini_buf *b)
{
    (void)t;
    if (v->kind == TV_LOOP) {
        const struct tloop *l = v->u.loop;
        return mini_buf_printf(b, "<LoopContext %zu/%zu>", l->index0 + 1, l->items->n);
    }
    if (v->kind == TV_GEN)
        return mini_buf_printf(b, "<%s object>", v->u.gen->type);
    const struct tfunc *f = v->u.fn;
    switch (f->id) {
    case G_RANGE: return mini_buf_puts(b, "<class 'range'>");
    case G_DICT: return mini_buf_puts(b, "<class 'dict'>");
    case G_NAMESPACE: return mini_buf_puts(b, "<class 'jinja2.utils.Namespace'>");
    case G_CYCLER: return mini_buf_puts(b, "<class 'jinja2.utils.Cycler'>");
    case G_JOINER: return mini_buf_puts(b, "<class 'jinja2.utils.Joiner'>");
    case G_LIPSUM: return mini_buf_puts(b, "<function generate_lorem_ipsum>");
    default:
        return mini_buf_printf(b, "<built-in method %s of %s object>", f->name, tpl_tv_type(&f->self));
    }
}

static int call_filter_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                               struct callargs *a, struct tv *out);
static int call_test_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                             struct callargs *a, bool *out);

/* ------------------------------------------------------------ helpers */

/* Bind positional and keyword arguments to the parameters `names`. */
static int bind(struct tpl *t, int line, const char *fn, const struct callargs *a,
                const char *const *names, size_t nn, struct tv *vals, bool *have)
{
    for (size_t i = 0; i < nn; i++)
        have[i] = false;
    if (a->n > nn)
        return tpl_fail(t, line, "%s() takes at most %zu argument%s (%zu given)", fn, nn,
                        nn == 1 ? "" : "s", a->n);
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
            return tpl_fail(t, line, "%s() got an unexpected keyword argument '%.*s'", fn,
                            (int)a->kw[k].n, a->kw[k].name);
        if (have[i])
            return tpl_fail(t, line, "%s() got multiple values for argument '%s'", fn, names[i]);
        vals[i] = a->kwv[k];
        have[i] = true;
    }
    return 0;
}

static int no_kwargs(struct tpl *t, int line, const char *fn, const struct callargs *a)
{
    if (a->nkw)
        return tpl_fail(t, line, "%s() takes no keyword arguments", fn);
    return 0;
}

static int get_int(struct tpl *t, int line, const struct tv *v, int64_t *out)
{
    if (v->kind == TV_INT || v->kind == TV_BOOL) {
        *out = v->kind == TV_INT ? v->u.i : v->u.b;
        return 0;
    }
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, line, v);
    return tpl_fail(t, line, "'%s' object cannot be interpreted as an integer", tpl_tv_type(v));
}

static int need_str(struct tpl *t, int line, const struct tv *v, const char *what)
{
    if (v->kind == TV_STR)
        return 0;
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, line, v);
    return tpl_fail(t, line, "%s must be str, not %s", what, tpl_tv_type(v));
}

/* str(v): a plain string, also for a Markup one. */
static int str_of(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    if (tpl_tv_to_str(t, line, v, out) < 0)
        return -1;
    out->sub = 0;
    return 0;
}

/* str(v) with its Markup flag kept (Jinja's soft_str). */
static int soft_str(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    return tpl_tv_to_str(t, line, v, out);
}

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
static int escape_value(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    if (v->kind == TV_STR && v->sub) {
        *out = *v;
        return 0;
    }
    struct tv s;
    if (str_of(t, line, v, &s) < 0)
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

static void strip_span(const char *p, size_t n, const struct tv *chars, int how, size_t *b, size_t *e)
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

static const char *rfind_bytes(const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn > hn)
        return NULL;
    for (size_t i = hn - nn + 1; i-- > 0; )
        if (memcmp(h + i, nd, nn) == 0)
            return h + i;
    return NULL;
}

/* ------------------------------------------------- printf-style % */

/* Append n copies of c. */
static int buf_fill(struct mini_buf *b, char c, size_t n)
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

static void pad_to(struct mini_buf *b, size_t have, int64_t width, bool left, const char *body,
                   size_t blen)
{
    size_t pad = width > 0 && (uint64_t)width > have ? (size_t)width - have : 0;
    if (!left)
        buf_fill(b, ' ', pad);
    mini_buf_append(b, body, blen);
    if (left)
        buf_fill(b, ' ', pad);
}

static int fmt_int(struct mini_buf *b, int64_t v, char conv, const char *flags, int64_t width,
                   int64_t prec)
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
    if (strchr(flags, '0') && !strchr(flags, '-') && width > 0 &&
        (uint64_t)width > bl + zeros + nd)
        zeros = (size_t)width - bl - nd;
    if (zeros > 100000)
        return -1;
    _cleanup_buf_ struct mini_buf tmp = MINI_BUF_INIT;
    mini_buf_append(&tmp, body, bl);
    buf_fill(&tmp, '0', zeros);
    while (nd)
        mini_buf_putc(&tmp, digits[--nd]);
    pad_to(b, tmp.len, width, strchr(flags, '-') != NULL, tmp.data, tmp.len);
    return 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void fmt_double(struct mini_buf *b, double v, char conv, const char *flags, int64_t width,
                       int64_t prec)
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

int tpl_percent_format(struct tpl *t, int line, const struct tv *fmt, const struct tv *args,
                          struct tv *out)
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
    for (size_t i = 0; i < n; ) {
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
            if (get_int(t, line, &argv[ai++], &width) < 0)
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
                if (get_int(t, line, &argv[ai++], &prec) < 0)
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
        case 'd': case 'i': case 'u': case 'o': case 'x': case 'X': {
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
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
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
        default:
            return tpl_fail(t, line, "unsupported format character '%c'", conv);
        }
    }
    if (!maplike && ai < argc)
        return tpl_fail(t, line, "not all arguments converted during string formatting");
    return tpl_tv_from_buf(t, line, &b, fmt->sub, out);
}

/* ------------------------------------------------------ string methods */

static int str_split(struct tpl *t, int line, const struct tv *s, const struct tv *sep,
                     int64_t maxsplit, bool right, struct tv *out)
{
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    struct tseq tmp = { 0 };
    size_t cap = 0;
    int rc = -1;
#define ADD(ptr, len) do { \
        if (tpl_grow(t, (void **)&tmp.v, &cap, tmp.n + 1, sizeof *tmp.v) < 0) goto out; \
        tmp.v[tmp.n] = tpl_tv_strn((ptr), (len)); tmp.v[tmp.n++].sub = s->sub; \
    } while (0)
    if (!sep) {
        size_t l;
        if (!right) {
            size_t i = 0;
            for (;;) {
                while (i < n && tpl_uni_isspace(tpl_u8_decode(p + i, n - i, &l)))
                    i += l;
                if (i >= n)
                    break;
                if (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) {
                    ADD(p + i, n - i);
                    break;
                }
                size_t j = i;
                while (j < n && !tpl_uni_isspace(tpl_u8_decode(p + j, n - j, &l)))
                    j += l;
                ADD(p + i, j - i);
                i = j;
            }
        } else {
            size_t j = n;
            for (;;) {
                while (j > 0) {
                    size_t k = j - 1;
                    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80 && j - k < 4)
                        k--;
                    if (!tpl_uni_isspace(tpl_u8_decode(p + k, j - k, &l)))
                        break;
                    j = k;
                }
                if (j == 0)
                    break;
                if (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) {
                    ADD(p, j);
                    break;
                }
                size_t i = j;
                while (i > 0) {
                    size_t k = i - 1;
                    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80 && i - k < 4)
                        k--;
                    if (tpl_uni_isspace(tpl_u8_decode(p + k, i - k, &l)))
                        break;
                    i = k;
                }
                ADD(p + i, j - i);
                j = i;
            }
        }
    } else {
        if (sep->u.s.n == 0) {
            tpl_fail(t, line, "empty separator");
            goto out;
        }
        const char *q = sep->u.s.p;
        size_t qn = sep->u.s.n;
        if (!right) {
            size_t i = 0;
            for (;;) {
                const char *f = (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) ? NULL
                                : tpl_find(p + i, n - i, q, qn);
                if (!f) {
                    ADD(p + i, n - i);
                    break;
                }
                ADD(p + i, (size_t)(f - (p + i)));
                i = (size_t)(f - p) + qn;
            }
        } else {
            size_t j = n;
            for (;;) {
                const char *f = (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) ? NULL
                                : rfind_bytes(p, j, q, qn);
                if (!f) {
                    ADD(p, j);
                    break;
                }
                ADD(f + qn, j - (size_t)(f - p) - qn);
                j = (size_t)(f - p);
            }
        }
    }
#undef ADD
    if (tpl_tv_new_seq(t, tmp.n, SEQ_LIST, out) < 0)
        goto out;
    for (size_t i = 0; i < tmp.n; i++)
        out->u.seq->v[i] = tmp.v[right ? tmp.n - 1 - i : i];
    rc = 0;
out:
    free(tmp.v);
    return rc;
}

static int str_splitlines(struct tpl *t, int line, const struct tv *s, bool keepends, struct tv *out)
{
    const char *p = s->u.s.p;
    size_t n = s->u.s.n, l, count = 0;
    (void)line;
    for (int pass = 0; pass < 2; pass++) {
        size_t i = 0, k = 0;
        while (i < n) {
            size_t j = i;
            uint32_t c = 0;
            while (j < n && !tpl_uni_islinebreak(c = tpl_u8_decode(p + j, n - j, &l)))
                j += l;
            size_t eol = j;
            if (j < n) {
                j += l;
                if (c == '\r' && j < n && p[j] == '\n')
                    j++;
            }
            if (pass == 1) {
                out->u.seq->v[k] = tpl_tv_strn(p + i, (keepends ? j : eol) - i);
                out->u.seq->v[k].sub = s->sub;
            }
            k++;
            i = j;
        }
        if (pass == 0) {
            count = k;
            if (tpl_tv_new_seq(t, count, SEQ_LIST, out) < 0)
                return -1;
        }
    }
    return 0;
}

/* s.replace(old, new, count) into a new string. */
static int str_replace(struct tpl *t, int line, const struct tv *s, const struct tv *old,
                       const struct tv *new, int64_t count, bool markup, struct tv *out)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *p = s->u.s.p;
    size_t n = s->u.s.n, l;
    int64_t done = 0;
    if (old->u.s.n == 0) {
        for (size_t i = 0; ; i += l) {
            if (count < 0 || done < count) {
                mini_buf_append(&b, new->u.s.p, new->u.s.n);
                done++;
            }
            if (i >= n)
                break;
            tpl_u8_decode(p + i, n - i, &l);
            mini_buf_append(&b, p + i, l);
            if (b.len > tpl_mem_limit(t))
                return tpl_charge(t, line, SIZE_MAX);
        }
        return tpl_tv_from_buf(t, line, &b, markup, out);
    }
    size_t i = 0;
    while (i <= n) {
        const char *f = (count < 0 || done < count) ? tpl_find(p + i, n - i, old->u.s.p, old->u.s.n) : NULL;
        if (!f) {
            mini_buf_append(&b, p + i, n - i);
            break;
        }
        mini_buf_append(&b, p + i, (size_t)(f - (p + i)));
        mini_buf_append(&b, new->u.s.p, new->u.s.n);
        if (b.len > tpl_mem_limit(t))
            return tpl_charge(t, line, SIZE_MAX);
        done++;
        i = (size_t)(f - p) + old->u.s.n;
    }
    return tpl_tv_from_buf(t, line, &b, markup, out);
}

static int str_pad(struct tpl *t, int line, const struct tv *s, int64_t width, const struct tv *fill,
                   int how /* 0 center, 1 ljust, 2 rjust */, struct tv *out)
{
    size_t len = tpl_u8_count(s->u.s.p, s->u.s.n);
    if (fill && tpl_u8_count(fill->u.s.p, fill->u.s.n) != 1)
        return tpl_fail(t, line, "The fill character must be exactly one character long");
    if (width <= 0 || (uint64_t)width <= len) {
        *out = *s;
        return 0;
    }
    if (tpl_charge(t, line, (size_t)width * (fill ? fill->u.s.n : 1)) < 0)
        return -1;
    size_t marg = (size_t)width - len, left;
    if (how == 0)
        left = marg / 2 + (marg & (size_t)width & 1);
    else
        left = how == 1 ? 0 : marg;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *fp = fill ? fill->u.s.p : " ";
    size_t fl = fill ? fill->u.s.n : 1;
    if (tpl_work(t, line, marg * fl) < 0)
        return -1;
    if (fl == 1) {
        buf_fill(&b, *fp, left);
        mini_buf_append(&b, s->u.s.p, s->u.s.n);
        buf_fill(&b, *fp, marg - left);
    } else {
        for (size_t i = 0; i < left; i++)
            mini_buf_append(&b, fp, fl);
        mini_buf_append(&b, s->u.s.p, s->u.s.n);
        for (size_t i = left; i < marg; i++)
            mini_buf_append(&b, fp, fl);
    }
    if (!b.data)
        return tpl_oom(t);
    return tpl_tv_from_buf(t, line, &b, s->sub, out);
}

static int str_case(struct tpl *t, int line, const struct tv *s, int how, struct tv *out)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (tpl_uni_case(&b, s->u.s.p, s->u.s.n, how) < 0)
        return tpl_oom(t);
    return tpl_tv_from_buf(t, line, &b, s->sub, out);
}

/* Code point range [start, end) of s from optional slice-like arguments. */
static int sub_range(struct tpl *t, int line, const struct tv *s, const struct callargs *a, size_t first,
                     size_t *bstart, size_t *bend, int64_t *cstart)
{
    int64_t len = (int64_t)tpl_u8_count(s->u.s.p, s->u.s.n), start = 0, end = len, v = 0;
    if (a->n > first && a->v[first].kind != TV_NONE) {
        if (get_int(t, line, &a->v[first], &v) < 0)
            return -1;
        start = v < 0 ? (v + len < 0 ? 0 : v + len) : v;
    }
    if (a->n > first + 1 && a->v[first + 1].kind != TV_NONE) {
        if (get_int(t, line, &a->v[first + 1], &v) < 0)
            return -1;
        end = v < 0 ? (v + len < 0 ? 0 : v + len) : v > len ? len : v;
    }
    *cstart = start;
    if (start > len || end < start) {
        *bstart = *bend = SIZE_MAX;     /* empty and out of range */
        return 0;
    }
    *bstart = tpl_u8_offset(s->u.s.p, s->u.s.n, (size_t)start);
    *bend = *bstart + tpl_u8_offset(s->u.s.p + *bstart, s->u.s.n - *bstart, (size_t)(end - start));
    return 0;
}

static int call_str_method(struct tpl *t, int line, const struct tfunc *f, struct callargs *a,
                           struct tv *out)
{
    const struct tv *s = &f->self;
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    struct tv vals[4];
    bool have[4];
    if (tpl_work(t, line, n) < 0)
        return -1;
    switch (f->id) {
    case S_LOWER: case S_UPPER: case S_TITLE: case S_CAPITALIZE:
        if (no_kwargs(t, line, f->name, a) < 0 || bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
            return -1;
        return str_case(t, line, s, f->id == S_LOWER ? CASE_LOWER : f->id == S_UPPER ? CASE_UPPER :
                        f->id == S_TITLE ? CASE_TITLE : CASE_CAPITALIZE, out);
    case S_STRIP: case S_LSTRIP: case S_RSTRIP: {
        static const char *const names[] = { "chars" };
        if (no_kwargs(t, line, f->name, a) < 0 || bind(t, line, f->name, a, names, 1, vals, have) < 0)
            return -1;
        const struct tv *chars = have[0] && vals[0].kind != TV_NONE ? &vals[0] : NULL;
        if (chars && need_str(t, line, chars, "strip arg") < 0)
            return -1;
        size_t b, e;
        strip_span(p, n, chars, f->id == S_STRIP ? 3 : f->id == S_LSTRIP ? 1 : 2, &b, &e);
        return tpl_new_str(t, line, p + b, e - b, s->sub, out);
    }
    case S_STARTSWITH: case S_ENDSWITH: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > 3)
            return tpl_fail(t, line, "%s() takes from 1 to 3 arguments", f->name);
        size_t b, e;
        int64_t cs;
        if (sub_range(t, line, s, a, 1, &b, &e, &cs) < 0)
            return -1;
        const struct tv *pre = &a->v[0];
        const struct tv *list = pre;
        size_t cnt = 1;
        if (pre->kind == TV_SEQ && pre->sub == SEQ_TUPLE) {
            list = pre->u.seq->v;
            cnt = pre->u.seq->n;
        }
        *out = tpl_tv_bool(false);
        for (size_t i = 0; i < cnt; i++) {
            if (list[i].kind != TV_STR)
                return tpl_fail(t, line, "%s first arg must be str or a tuple of str, not %s",
                                f->name, tpl_tv_type(&list[i]));
            if (b == SIZE_MAX)
                continue;
            size_t l = list[i].u.s.n;
            if (l <= e - b && memcmp(f->id == S_STARTSWITH ? p + b : p + e - l, list[i].u.s.p, l) == 0) {
                *out = tpl_tv_bool(true);
                return 0;
            }
        }
        return 0;
    }
    case S_FIND: case S_RFIND: case S_INDEX: case S_RINDEX: case S_COUNT: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > 3)
            return tpl_fail(t, line, "%s() takes from 1 to 3 arguments", f->name);
        if (need_str(t, line, &a->v[0], "substring") < 0)
            return -1;
        size_t b, e;
        int64_t cs;
        if (sub_range(t, line, s, a, 1, &b, &e, &cs) < 0)
            return -1;
        const struct tv *sub = &a->v[0];
        if (f->id == S_COUNT) {
            int64_t c = 0;
            if (b != SIZE_MAX) {
                if (sub->u.s.n == 0) {
                    c = (int64_t)tpl_u8_count(p + b, e - b) + 1;
                } else {
                    for (size_t i = b; ; c++) {
                        const char *x = tpl_find(p + i, e - i, sub->u.s.p, sub->u.s.n);
                        if (!x)
                            break;
                        i = (size_t)(x - p) + sub->u.s.n;
                    }
                }
            }
            *out = tpl_tv_int(c);
            return 0;
        }
        const char *x = NULL;
        if (b != SIZE_MAX)
            x = (f->id == S_FIND || f->id == S_INDEX) ? tpl_find(p + b, e - b, sub->u.s.p, sub->u.s.n)
                                                       : rfind_bytes(p + b, e - b, sub->u.s.p, sub->u.s.n);
        if (!x) {
            if (f->id == S_INDEX || f->id == S_RINDEX)
                return tpl_fail(t, line, "substring not found");
            *out = tpl_tv_int(-1);
            return 0;
        }
        *out = tpl_tv_int(cs + (int64_t)tpl_u8_count(p + b, (size_t)(x - (p + b))));
        return 0;
    }
    case S_REPLACE: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 2 || a->n > 3)
            return tpl_fail(t, line, "replace() takes from 2 to 3 arguments");
        if (need_str(t, line, &a->v[0], "replace() argument 1") < 0 ||
            need_str(t, line, &a->v[1], "replace() argument 2") < 0)
            return -1;
        int64_t count = -1;
        if (a->n == 3 && get_int(t, line, &a->v[2], &count) < 0)
            return -1;
        struct tv o = a->v[0], nw = a->v[1];
        if (s->sub) {                   /* Markup.replace escapes its arguments */
            if (escape_value(t, line, &a->v[0], &o) < 0 || escape_value(t, line, &a->v[1], &nw) < 0)
                return -1;
        }
        return str_replace(t, line, s, &o, &nw, count, s->sub, out);
    }
    case S_SPLIT: case S_RSPLIT: {
        static const char *const names[] = { "sep", "maxsplit" };
        if (bind(t, line, f->name, a, names, 2, vals, have) < 0)
            return -1;
        const struct tv *sep = have[0] && vals[0].kind != TV_NONE ? &vals[0] : NULL;
        if (sep && need_str(t, line, sep, "separator") < 0)
            return -1;
        int64_t maxsplit = -1;
        if (have[1] && get_int(t, line, &vals[1], &maxsplit) < 0)
            return -1;
        return str_split(t, line, s, sep, maxsplit, f->id == S_RSPLIT, out);
    }
    case S_SPLITLINES: {
        static const char *const names[] = { "keepends" };
        if (bind(t, line, f->name, a, names, 1, vals, have) < 0)
            return -1;
        bool keep = false;
        if (have[0] && tpl_tv_truth(t, line, &vals[0], &keep) < 0)
            return -1;
        return str_splitlines(t, line, s, keep, out);
    }
    case S_JOIN: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n != 1)
            return tpl_fail(t, line, "join() takes exactly one argument");
        struct tseq *items;
        if (tpl_tv_iter(t, line, &a->v[0], &items) < 0)
            return -1;
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        for (size_t i = 0; i < items->n; i++) {
            if (items->v[i].kind != TV_STR)
                return tpl_fail(t, line, "sequence item %zu: expected str instance, %s found", i,
                                tpl_tv_type(&items->v[i]));
            if (i)
                mini_buf_append(&b, p, n);
            mini_buf_append(&b, items->v[i].u.s.p, items->v[i].u.s.n);
            if (b.len > tpl_mem_limit(t))
                return tpl_charge(t, line, SIZE_MAX);
        }
        return tpl_tv_from_buf(t, line, &b, s->sub, out);
    }
    case S_CENTER: case S_LJUST: case S_RJUST: case S_ZFILL: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > (f->id == S_ZFILL ? 1u : 2u))
            return tpl_fail(t, line, "%s() takes a width argument", f->name);
        int64_t width = 0;
        if (get_int(t, line, &a->v[0], &width) < 0)
            return -1;
        if (f->id == S_ZFILL) {
            size_t len = tpl_u8_count(p, n);
            if (width <= 0 || (uint64_t)width <= len) {
                *out = *s;
                return 0;
            }
            if (tpl_charge(t, line, (size_t)width) < 0)
                return -1;
            _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
            size_t skip = n && (p[0] == '+' || p[0] == '-');
            mini_buf_append(&b, p, skip);
            buf_fill(&b, '0', (size_t)width - len);
            mini_buf_append(&b, p + skip, n - skip);
            return tpl_tv_from_buf(t, line, &b, s->sub, out);
        }
        if (a->n == 2 && need_str(t, line, &a->v[1], "fill character") < 0)
            return -1;
        return str_pad(t, line, s, width, a->n == 2 ? &a->v[1] : NULL,
                       f->id == S_CENTER ? 0 : f->id == S_LJUST ? 1 : 2, out);
    }
    case S_REMOVEPREFIX: case S_REMOVESUFFIX: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n != 1 || need_str(t, line, &a->v[0], "argument") < 0)
            return a->n != 1 ? tpl_fail(t, line, "%s() takes exactly one argument", f->name) : -1;
        size_t l = a->v[0].u.s.n;
        if (l <= n && memcmp(f->id == S_REMOVEPREFIX ? p : p + n - l, a->v[0].u.s.p, l) == 0)
            return tpl_new_str(t, line, f->id == S_REMOVEPREFIX ? p + l : p, n - l, s->sub, out);
        *out = *s;
        return 0;
    }
    case S_PARTITION: case S_RPARTITION: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n != 1 || need_str(t, line, &a->v[0], "separator") < 0)
            return a->n != 1 ? tpl_fail(t, line, "%s() takes exactly one argument", f->name) : -1;
        if (a->v[0].u.s.n == 0)
            return tpl_fail(t, line, "empty separator");
        const struct tv *sep = &a->v[0];
        const char *x = f->id == S_PARTITION ? tpl_find(p, n, sep->u.s.p, sep->u.s.n)
                                             : rfind_bytes(p, n, sep->u.s.p, sep->u.s.n);
        if (tpl_tv_new_seq(t, 3, SEQ_TUPLE, out) < 0)
            return -1;
        struct tv *v = out->u.seq->v;
        if (!x) {
            v[0] = f->id == S_PARTITION ? *s : tpl_tv_strn("", 0);
            v[1] = tpl_tv_strn("", 0);
            v[2] = f->id == S_PARTITION ? tpl_tv_strn("", 0) : *s;
        } else {
            v[0] = tpl_tv_strn(p, (size_t)(x - p));
            v[1] = *sep;
            v[2] = tpl_tv_strn(x + sep->u.s.n, n - (size_t)(x - p) - sep->u.s.n);
        }
        return 0;
    }
    default: {                          /* the is*() predicates */
        if (no_kwargs(t, line, f->name, a) < 0 || bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
            return -1;
        if (f->id == S_ISLOWER || f->id == S_ISUPPER) {
            *out = tpl_tv_bool(f->id == S_ISLOWER ? tpl_uni_islower_str(p, n) : tpl_uni_isupper_str(p, n));
            return 0;
        }
        bool ok = f->id == S_ISASCII || n > 0;
        size_t l;
        for (size_t i = 0; i < n && ok; i += l) {
            uint32_t c = tpl_u8_decode(p + i, n - i, &l);
            switch (f->id) {
            case S_ISASCII: ok = c < 0x80; break;
            case S_ISSPACE: ok = tpl_uni_isspace(c); break;
            case S_ISALPHA: ok = tpl_uni_is(c, UNI_ALPHA); break;
            case S_ISALNUM: ok = tpl_uni_is(c, UNI_ALNUM); break;
            case S_ISDIGIT: ok = tpl_uni_is(c, UNI_DIGIT); break;
            case S_ISDECIMAL: ok = tpl_uni_is(c, UNI_DECIMAL); break;
            default: ok = tpl_uni_is(c, UNI_NUMERIC); break;
            }
        }
        *out = tpl_tv_bool(ok);
        return 0;
    }
    }
}

/* ------------------------------------------------------------- calls */

static int dict_view(struct tpl *t, const struct tdict *d, int kind, struct tv *out)
{
    if (kind == SEQ_ITEMS) {
        if (tpl_tv_new_seq(t, d->n, SEQ_ITEMS, out) < 0)
            return -1;
        for (size_t i = 0; i < d->n; i++) {
            struct tv pair;
            if (tpl_tv_new_seq(t, 2, SEQ_TUPLE, &pair) < 0)
                return -1;
            pair.u.seq->v[0] = d->k[i];
            pair.u.seq->v[1] = d->v[i];
            out->u.seq->v[i] = pair;
        }
        return 0;
    }
    struct tseq *s = tpl_alloc(t, sizeof *s);
    if (!s)
        return -1;
    s->n = d->n;
    s->v = kind == SEQ_KEYS ? d->k : d->v;
    out->kind = TV_SEQ;
    out->sub = (uint8_t)kind;
    out->u.seq = s;
    return 0;
}

static int make_range(struct tpl *t, int line, struct callargs *a, struct tv *out)
{
    if (no_kwargs(t, line, "range", a) < 0)
        return -1;
    if (a->n < 1 || a->n > 3)
        return tpl_fail(t, line, "range expected 1 to 3 arguments, got %zu", a->n);
    int64_t v[3] = { 0, 0, 1 };
    for (size_t i = 0; i < a->n; i++)
        if (get_int(t, line, &a->v[i], &v[a->n == 1 ? 1 : i]) < 0)
            return -1;
    if (v[2] == 0)
        return tpl_fail(t, line, "range() arg 3 must not be zero");
    int64_t start = v[0], stop = v[1], step = v[2];
    uint64_t count = 0;
    if (step > 0 && stop > start)
        count = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
    else if (step < 0 && start > stop)
        count = ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1;
    if (count > tpl_mem_limit(t) / sizeof(struct tv))
        return tpl_charge(t, line, SIZE_MAX);
    if (tpl_tv_new_seq(t, (size_t)count, SEQ_RANGE, out) < 0)
        return -1;
    for (uint64_t i = 0; i < count; i++)
        out->u.seq->v[i] = tpl_tv_int((int64_t)((uint64_t)start + i * (uint64_t)step));
    out->u.seq->start = start;
    out->u.seq->stop = stop;
    out->u.seq->step = step;
    return 0;
}

/* dict(...) and namespace(...): a mapping or pairs, then keyword arguments. */
static int make_dict(struct tpl *t, int line, const char *fn, struct callargs *a, struct tv *out)
{
    if (a->n > 1)
        return tpl_fail(t, line, "%s expected at most 1 argument, got %zu", fn, a->n);
    if (tpl_tv_new_dict(t, 0, out) < 0)
        return -1;
    struct tdict *d = out->u.d;
    if (a->n == 1) {
        const struct tv *src = &a->v[0];
        if (src->kind == TV_DICT) {
            for (size_t i = 0; i < src->u.d->n; i++)
                if (tpl_tv_dict_set(t, line, d, &src->u.d->k[i], &src->u.d->v[i]) < 0)
                    return -1;
        } else {
            struct tseq *items;
            if (tpl_tv_iter(t, line, src, &items) < 0)
                return -1;
            for (size_t i = 0; i < items->n; i++) {
                struct tseq *pair;
                if (tpl_tv_iter(t, line, &items->v[i], &pair) < 0)
                    return -1;
                if (pair->n != 2)
                    return tpl_fail(t, line, "dictionary update sequence element #%zu has length %zu; "
                                    "2 is required", i, pair->n);
                if (tpl_tv_dict_set(t, line, d, &pair->v[0], &pair->v[1]) < 0)
                    return -1;
            }
        }
    }
    for (size_t k = 0; k < a->nkw; k++) {
        struct tv key = tpl_tv_strn(a->kw[k].name, a->kw[k].n);
        if (tpl_tv_dict_set(t, line, d, &key, &a->kwv[k]) < 0)
            return -1;
    }
    return 0;
}

int tpl_call(struct tpl *t, int line, const struct tv *callee, struct callargs *a,
                      struct tv *out)
{
    if (callee->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, callee);
    if (callee->kind == TV_LOOP) {
        const struct tloop *l = callee->u.loop;
        if (!l->st->recursive)
            return tpl_fail(t, line, "The loop must have the 'recursive' marker to be called "
                            "recursively.");
        if (a->n != 1 || a->nkw)
            return tpl_fail(t, line, "loop() takes exactly one argument");
        if (l->depth0 + 1 > TPL_MAX_DEPTH)
            return tpl_fail(t, line, "recursive loop nests too deeply");
        struct mini_buf *saved_out = t->out;
        struct frame *saved_scope = t->scope;
        struct mini_buf b = MINI_BUF_INIT;
        t->out = &b;
        t->scope = l->outer;
        int rc = tpl_run_for(t, l->st, &a->v[0], l->depth0 + 1);
        t->out = saved_out;
        t->scope = saved_scope;
        if (rc == 0)
            rc = tpl_tv_from_buf(t, line, &b, false, out);
        mini_buf_free(&b);
        return rc;
    }
    if (callee->kind != TV_FUNC)
        return tpl_fail(t, line, "'%s' object is not callable", tpl_tv_type(callee));
    const struct tfunc *f = callee->u.fn;
    struct tv vals[2];
    bool have[2];
    switch (f->id) {
    case G_RANGE:
        return make_range(t, line, a, out);
    case G_DICT:
        return make_dict(t, line, "dict", a, out);
    case G_NAMESPACE:
        if (make_dict(t, line, "namespace", a, out) < 0)
            return -1;
        for (size_t i = 0; i < out->u.d->n; i++)
            if (out->u.d->k[i].kind != TV_STR)
                return tpl_fail(t, line, "namespace keywords must be strings");
        out->kind = TV_NS;
        return 0;
    case L_CYCLE: {
        if (no_kwargs(t, line, "cycle", a) < 0)
            return -1;
        if (a->n == 0)
            return tpl_fail(t, line, "no items for cycling given");
        *out = a->v[f->self.u.loop->index0 % a->n];
        return 0;
    }
    case L_CHANGED: {
        struct tloop *l = f->self.u.loop;
        struct tv now;
        if (no_kwargs(t, line, "changed", a) < 0 || tpl_tv_new_seq(t, a->n, SEQ_TUPLE, &now) < 0)
            return -1;
        if (a->n)
            memcpy(now.u.seq->v, a->v, a->n * sizeof *a->v);
        bool same = false;
        if (l->has_changed && tpl_tv_eq(t, line, &l->last_changed, &now, &same) < 0)
            return -1;
        l->last_changed = now;
        l->has_changed = true;
        *out = tpl_tv_bool(!same);
        return 0;
    }
    case D_GET: {
        if (no_kwargs(t, line, "get", a) < 0)
            return -1;
        if (a->n < 1 || a->n > 2)
            return tpl_fail(t, line, "get expected 1 or 2 arguments, got %zu", a->n);
        long i = tpl_tv_dict_find(t, line, f->self.u.d, &a->v[0]);
        if (i < -1)
            return -1;
        *out = i >= 0 ? f->self.u.d->v[i] : a->n == 2 ? a->v[1] : tpl_tv_none();
        return 0;
    }
    case D_ITEMS: case D_KEYS: case D_VALUES: case D_COPY:
        if (no_kwargs(t, line, f->name, a) < 0 || bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
            return -1;
        if (f->id == D_COPY) {
            if (tpl_tv_new_dict(t, f->self.u.d->n, out) < 0)
                return -1;
            memcpy(out->u.d->k, f->self.u.d->k, f->self.u.d->n * sizeof(struct tv));
            memcpy(out->u.d->v, f->self.u.d->v, f->self.u.d->n * sizeof(struct tv));
            out->u.d->n = f->self.u.d->n;
            return 0;
        }
        return dict_view(t, f->self.u.d, f->id == D_ITEMS ? SEQ_ITEMS : f->id == D_KEYS ? SEQ_KEYS
                                                                                        : SEQ_VALUES, out);
    case Q_COUNT: case Q_INDEX: {
        if (no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > (f->id == Q_COUNT ? 1u : 3u))
            return tpl_fail(t, line, "%s() takes %s argument", f->name,
                            f->id == Q_COUNT ? "exactly one" : "1 to 3");
        const struct tseq *s = f->self.u.seq;
        int64_t c = 0, from = 0, to = (int64_t)s->n;
        if (a->n > 1 && get_int(t, line, &a->v[1], &from) < 0)
            return -1;
        if (a->n > 2 && get_int(t, line, &a->v[2], &to) < 0)
            return -1;
        if (from < 0 && (from += (int64_t)s->n) < 0)
            from = 0;
        if (to < 0 && (to += (int64_t)s->n) < 0)
            to = 0;
        if (to > (int64_t)s->n)
            to = (int64_t)s->n;
        for (int64_t i = f->id == Q_COUNT ? 0 : from; i < (f->id == Q_COUNT ? (int64_t)s->n : to); i++) {
            bool eq;
            if (tpl_step(t, line) < 0 || tpl_tv_eq(t, line, &s->v[i], &a->v[0], &eq) < 0)
                return -1;
            if (eq && f->id == Q_INDEX) {
                *out = tpl_tv_int(i);
                return 0;
            }
            c += eq;
        }
        if (f->id == Q_INDEX)
            return tpl_fail(t, line, "value is not in %s", tpl_tv_type(&f->self));
        *out = tpl_tv_int(c);
        return 0;
    }
    case Q_COPY:
        if (no_kwargs(t, line, f->name, a) < 0 || bind(t, line, f->name, a, NULL, 0, vals, have) < 0 ||
            tpl_tv_new_seq(t, f->self.u.seq->n, SEQ_LIST, out) < 0)
            return -1;
        if (f->self.u.seq->n)
            memcpy(out->u.seq->v, f->self.u.seq->v, f->self.u.seq->n * sizeof(struct tv));
        return 0;
    case F_UNSUPPORTED:
    case G_LIPSUM:
    case G_CYCLER:
    case G_JOINER:
        return tpl_fail(t, line, "%s.%s() is not supported by mini's template engine",
                        f->id == F_UNSUPPORTED ? tpl_tv_type(&f->self) : "jinja2", f->name);
    default:
        return call_str_method(t, line, f, a, out);
    }
}

/* ------------------------------------------------------------ filters */

#define FILTER(name) static int name(struct tpl *t, int line, struct tv *v, struct callargs *a, \
                                     struct tv *out)
#define BIND(fname, ...) \
    static const char *const names_[] = { __VA_ARGS__ }; \
    struct tv p[MINI_ARRAY_SIZE(names_)]; \
    bool has[MINI_ARRAY_SIZE(names_)]; \
    if (bind(t, line, fname, a, names_, MINI_ARRAY_SIZE(names_), p, has) < 0) \
        return -1
#define NOARGS(fname) \
    if (bind(t, line, fname, a, NULL, 0, NULL, NULL) < 0) \
        return -1

/* make_attrgetter(): follow "a.b.0" (digit parts as ints) through getitem. */
static int attr_get(struct tpl *t, int line, const struct tv *item, const struct tv *attr,
                    const struct tv *dflt, bool lower, struct tv *out)
{
    *out = *item;
    if (attr && attr->kind != TV_NONE) {
        if (attr->kind == TV_STR) {
            const char *p = attr->u.s.p, *end = p + attr->u.s.n;
            for (;;) {
                const char *dot = memchr(p, '.', (size_t)(end - p));
                size_t l = dot ? (size_t)(dot - p) : (size_t)(end - p);
                bool digits = l > 0;
                int64_t iv = 0;
                for (size_t i = 0; i < l && digits; i++) {
                    digits = p[i] >= '0' && p[i] <= '9';
                    if (digits && iv < INT64_MAX / 10 - 10)
                        iv = iv * 10 + (p[i] - '0');
                }
                struct tv key = digits ? tpl_tv_int(iv) : tpl_tv_strn(p, l), next;
                if (tpl_getitem(t, line, out, &key, &next) < 0)
                    return -1;
                *out = next;
                if (dflt && out->kind == TV_UNDEF)
                    *out = *dflt;
                if (!dot)
                    break;
                p = dot + 1;
            }
        } else {
            struct tv next;
            if (tpl_getitem(t, line, out, attr, &next) < 0)
                return -1;
            *out = next;
            if (dflt && out->kind == TV_UNDEF)
                *out = *dflt;
        }
    }
    if (lower && out->kind == TV_STR)
        return str_case(t, line, out, CASE_LOWER, out);
    return 0;
}

FILTER(f_abs)
{
    NOARGS("abs");
    switch (v->kind) {
    case TV_BOOL: *out = tpl_tv_int(v->u.b); return 0;
    case TV_INT:
        if (v->u.i == INT64_MIN)
            return tpl_overflow(t, line);
        *out = tpl_tv_int(v->u.i < 0 ? -v->u.i : v->u.i);
        return 0;
    case TV_FLOAT: *out = tpl_tv_float(fabs(v->u.f)); return 0;
    case TV_UNDEF: return tpl_tv_undef_error(t, line, v);
    default: return tpl_fail(t, line, "bad operand type for abs(): '%s'", tpl_tv_type(v));
    }
}

FILTER(f_attr)
{
    BIND("attr", "name");
    if (!has[0])
        return tpl_fail(t, line, "attr() missing required argument 'name'");
    if (p[0].kind != TV_STR)
        return tpl_fail(t, line, "attribute name must be string");
    bool found;
    if (v->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, v);
    if (tpl_py_getattr(t, line, v, p[0].u.s.p, p[0].u.s.n, out, &found) < 0)
        return -1;
    if (!found)
        *out = tpl_undef_attr(t, v, p[0].u.s.p, p[0].u.s.n);
    return 0;
}

FILTER(f_default)
{
    BIND("default", "default_value", "boolean");
    bool boolean = false, truth = true;
    if (has[1] && tpl_tv_truth(t, line, &p[1], &boolean) < 0)
        return -1;
    if (v->kind != TV_UNDEF && boolean && tpl_tv_truth(t, line, v, &truth) < 0)
        return -1;
    if (v->kind == TV_UNDEF || (boolean && !truth))
        *out = has[0] ? p[0] : tpl_tv_strn("", 0);
    else
        *out = *v;
    return 0;
}

FILTER(f_length)
{
    NOARGS("length");
    size_t n;
    if (tpl_tv_len(t, line, v, &n) < 0)
        return -1;
    *out = tpl_tv_int((int64_t)n);
    return 0;
}

FILTER(f_tojson)
{
    BIND("tojson", "indent");
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT, ind = MINI_BUF_INIT;
    const char *indent = NULL;
    if (has[0] && p[0].kind != TV_NONE) {
        if (p[0].kind == TV_STR) {
            mini_buf_append(&ind, p[0].u.s.p, p[0].u.s.n);
        } else {
            int64_t w = 0;
            if (get_int(t, line, &p[0], &w) < 0)
                return -1;
            if (w > 0 && (tpl_charge(t, line, (size_t)w) < 0 || buf_fill(&ind, ' ', (size_t)w) < 0))
                return t->a.failed ? -1 : tpl_oom(t);
        }
        indent = ind.data ? ind.data : "";
    }
    if (tpl_tv_tojson(t, line, v, indent, ind.len, &b) < 0)
        return -1;
    return tpl_tv_from_buf(t, line, &b, true, out);
}

/* Jinja's do_int: int(value, base) for a string, int(value) otherwise; on a
 * TypeError or ValueError, int(float(value)); on another, the default.  (An
 * infinity in the second step gives the default too: jinja2 >= 3.1.3.) */
FILTER(f_int)
{
    BIND("int", "default", "base");
    struct tv dflt = has[0] ? p[0] : tpl_tv_int(0);
    switch (v->kind) {
    case TV_UNDEF:
        return tpl_tv_undef_error(t, line, v);  /* Undefined.__int__ raises */
    case TV_INT:
        *out = *v;
        return 0;
    case TV_BOOL:
        *out = tpl_tv_int(v->u.b);
        return 0;
    case TV_FLOAT:
        if (isnan(v->u.f))
            break;                          /* ValueError; float(nan) again: default */
        if (isinf(v->u.f))
            return tpl_fail(t, line, "cannot convert float infinity to integer");
        if (fabs(v->u.f) >= 9223372036854775808.0)
            return tpl_overflow(t, line);
        *out = tpl_tv_int((int64_t)v->u.f);
        return 0;
    case TV_STR: {
        int64_t base = 10, iv;
        bool ovf, ok = true;
        if (has[1]) {
            if (p[1].kind == TV_INT || p[1].kind == TV_BOOL)
                base = p[1].kind == TV_INT ? p[1].u.i : p[1].u.b;
            else
                ok = false;                 /* TypeError: not an index */
        }
        if (ok && base != 0 && (base < 2 || base > 36))
            ok = false;                     /* ValueError */
        if (ok && tpl_parse_int(v->u.s.p, v->u.s.n, (int)base, &iv, &ovf) == 0) {
            if (ovf)
                return tpl_overflow(t, line);
            *out = tpl_tv_int(iv);
            return 0;
        }
        double d;
        int pr = tpl_parse_float(v->u.s.p, v->u.s.n, &d);
        if (pr == -2)
            return tpl_oom(t);
        if (pr == 0 && isfinite(d)) {
            if (fabs(d) >= 9223372036854775808.0)
                return tpl_overflow(t, line);
            *out = tpl_tv_int((int64_t)d);
            return 0;
        }
        break;
    }
    default:
        break;                              /* TypeError twice */
    }
    *out = dflt;
    return 0;
}

FILTER(f_float)
{
    BIND("float", "default");
    struct tv dflt = has[0] ? p[0] : tpl_tv_float(0.0);
    double d;
    switch (v->kind) {
    case TV_FLOAT: *out = *v; return 0;
    case TV_INT: *out = tpl_tv_float((double)v->u.i); return 0;
    case TV_BOOL: *out = tpl_tv_float(v->u.b); return 0;
    case TV_STR: {
        int pr = tpl_parse_float(v->u.s.p, v->u.s.n, &d);
        if (pr == -2)
            return tpl_oom(t);
        if (pr == 0) {
            *out = tpl_tv_float(d);
            return 0;
        }
        break;
    }
    case TV_UNDEF:
        if (!v->sub)
            return tpl_tv_undef_error(t, line, v);
        break;
    default:
        break;
    }
    *out = dflt;
    return 0;
}

FILTER(f_string)
{
    NOARGS("string");
    return soft_str(t, line, v, out);
}

static int case_filter(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out,
                       const char *name, int how)
{
    if (bind(t, line, name, a, NULL, 0, NULL, NULL) < 0)
        return -1;
    struct tv s;
    if (soft_str(t, line, v, &s) < 0)
        return -1;
    return str_case(t, line, &s, how, out);
}

FILTER(f_lower) { return case_filter(t, line, v, a, out, "lower", CASE_LOWER); }
FILTER(f_upper) { return case_filter(t, line, v, a, out, "upper", CASE_UPPER); }
FILTER(f_capitalize) { return case_filter(t, line, v, a, out, "capitalize", CASE_CAPITALIZE); }

static bool title_sep(uint32_t c)
{
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || tpl_uni_isspace(c);
}

FILTER(f_title)
{
    NOARGS("title");
    struct tv s;
    if (soft_str(t, line, v, &s) < 0)
        return -1;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, l;
    for (size_t i = 0; i < n; ) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        bool sep = title_sep(c);
        size_t j = i + l;
        while (j < n && title_sep(tpl_u8_decode(p + j, n - j, &l)) == sep)
            j += l;
        /* item[0].upper() + item[1:].lower() */
        tpl_u8_decode(p + i, n - i, &l);
        if (tpl_uni_case(&b, p + i, l, CASE_UPPER) < 0 || tpl_uni_case(&b, p + i + l, j - i - l, CASE_LOWER) < 0)
            return tpl_oom(t);
        i = j;
    }
    return tpl_tv_from_buf(t, line, &b, s.sub, out);
}

FILTER(f_trim)
{
    BIND("trim", "chars");
    struct tv s;
    if (soft_str(t, line, v, &s) < 0)
        return -1;
    const struct tv *chars = has[0] && p[0].kind != TV_NONE ? &p[0] : NULL;
    if (chars && need_str(t, line, chars, "strip arg") < 0)
        return -1;
    size_t b, e;
    strip_span(s.u.s.p, s.u.s.n, chars, 3, &b, &e);
    return tpl_new_str(t, line, s.u.s.p + b, e - b, s.sub, out);
}

FILTER(f_replace)
{
    BIND("replace", "old", "new", "count");
    if (!has[0] || !has[1])
        return tpl_fail(t, line, "replace() missing required arguments");
    struct tv s, o, nw;
    int64_t count = -1;
    if (str_of(t, line, v, &s) < 0 || str_of(t, line, &p[0], &o) < 0 || str_of(t, line, &p[1], &nw) < 0)
        return -1;
    if (has[2] && p[2].kind != TV_NONE && get_int(t, line, &p[2], &count) < 0)
        return -1;
    s.sub = 0;
    return str_replace(t, line, &s, &o, &nw, count, false, out);
}

FILTER(f_join)
{
    BIND("join", "d", "attribute");
    struct tv sep = tpl_tv_strn("", 0);
    if (has[0] && str_of(t, line, &p[0], &sep) < 0)
        return -1;
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    for (size_t i = 0; i < items->n; i++) {
        struct tv item = items->v[i];
        if (has[1] && attr_get(t, line, &items->v[i], &p[1], NULL, false, &item) < 0)
            return -1;
        if (i)
            mini_buf_append(&b, sep.u.s.p, sep.u.s.n);
        if (tpl_tv_str(t, line, &item, &b) < 0)
            return -1;
        if (b.len > tpl_mem_limit(t))
            return tpl_charge(t, line, SIZE_MAX);
    }
    return tpl_tv_from_buf(t, line, &b, false, out);
}

FILTER(f_first)
{
    NOARGS("first");
    struct tseq *items;
    if (v->kind == TV_GEN) {                /* next(gen): takes one item */
        struct tgen *g = v->u.gen;
        if (tpl_tv_gen_ready(t, line, g) < 0)
            return -1;
        *out = g->pos < g->seq->n ? g->seq->v[g->pos++] : tpl_tv_undef(t, "No first item, sequence was empty.");
        return 0;
    }
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    *out = items->n ? items->v[0] : tpl_tv_undef(t, "No first item, sequence was empty.");
    return 0;
}

FILTER(f_last)
{
    NOARGS("last");
    if (v->kind == TV_GEN)
        return tpl_fail(t, line, "'%s' object is not reversible", tpl_tv_type(v));
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    *out = items->n ? items->v[items->n - 1] : tpl_tv_undef(t, "No last item, sequence was empty.");
    return 0;
}

FILTER(f_list)
{
    NOARGS("list");
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0 || tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
        return -1;
    if (items->n)
        memcpy(out->u.seq->v, items->v, items->n * sizeof *items->v);
    return 0;
}

FILTER(f_items)
{
    NOARGS("items");
    if (v->kind == TV_UNDEF)
        return tpl_tv_new_seq(t, 0, SEQ_LIST, out);
    if (v->kind != TV_DICT)
        return tpl_fail(t, line, "Can only get item pairs from a mapping.");
    if (dict_view(t, v->u.d, SEQ_ITEMS, out) < 0)
        return -1;
    out->sub = SEQ_LIST;
    return 0;
}

FILTER(f_escape)
{
    NOARGS("escape");
    return escape_value(t, line, v, out);
}

FILTER(f_forceescape)
{
    NOARGS("forceescape");
    struct tv s;
    if (str_of(t, line, v, &s) < 0)
        return -1;
    s.sub = 0;
    return escape_value(t, line, &s, out);
}

FILTER(f_safe)
{
    NOARGS("safe");
    if (str_of(t, line, v, out) < 0)
        return -1;
    out->sub = 1;
    return 0;
}

FILTER(f_center)
{
    BIND("center", "width");
    int64_t width = 80;
    if (has[0] && get_int(t, line, &p[0], &width) < 0)
        return -1;
    struct tv s;
    if (soft_str(t, line, v, &s) < 0)
        return -1;
    return str_pad(t, line, &s, width, NULL, 0, out);
}

FILTER(f_indent)
{
    BIND("indent", "width", "first", "blank");
    _cleanup_buf_ struct mini_buf ind = MINI_BUF_INIT, b = MINI_BUF_INIT;
    if (has[0] && p[0].kind == TV_STR) {
        mini_buf_append(&ind, p[0].u.s.p, p[0].u.s.n);
    } else {
        int64_t w = 4;
        if (has[0] && get_int(t, line, &p[0], &w) < 0)
            return -1;
        if (w > 0 && (tpl_charge(t, line, (size_t)w) < 0 || buf_fill(&ind, ' ', (size_t)w) < 0))
            return t->a.failed ? -1 : tpl_oom(t);
    }
    bool first = false, blank = false;
    if ((has[1] && tpl_tv_truth(t, line, &p[1], &first) < 0) || (has[2] && tpl_tv_truth(t, line, &p[2], &blank) < 0))
        return -1;
    if (v->kind != TV_STR) {
        if (tpl_tv_isstrict_undef(v))
            return tpl_tv_undef_error(t, line, v);
        return tpl_fail(t, line, "unsupported operand type(s) for +=: '%s' and 'str'", tpl_tv_type(v));
    }
    /* s += "\n"; lines = s.splitlines() */
    _cleanup_buf_ struct mini_buf s = MINI_BUF_INIT;
    mini_buf_append(&s, v->u.s.p, v->u.s.n);
    mini_buf_putc(&s, '\n');
    struct tv sv = tpl_tv_strn(s.data, s.len), lines;
    if (str_splitlines(t, line, &sv, false, &lines) < 0)
        return -1;
    const struct tseq *ls = lines.u.seq;
    if (first)
        mini_buf_append(&b, ind.data ? ind.data : "", ind.len);
    for (size_t i = 0; i < ls->n; i++) {
        if (i) {
            mini_buf_putc(&b, '\n');
            if (blank || ls->v[i].u.s.n)
                mini_buf_append(&b, ind.data ? ind.data : "", ind.len);
        }
        mini_buf_append(&b, ls->v[i].u.s.p, ls->v[i].u.s.n);
        if (b.len > tpl_mem_limit(t))
            return tpl_charge(t, line, SIZE_MAX);
    }
    return tpl_tv_from_buf(t, line, &b, v->sub, out);
}

FILTER(f_truncate)
{
    BIND("truncate", "length", "killwords", "end", "leeway");
    int64_t length = 255, leeway = 5;
    bool killwords = false;
    struct tv end = tpl_tv_strn("...", 3);
    if (has[0] && get_int(t, line, &p[0], &length) < 0)
        return -1;
    if (has[1] && tpl_tv_truth(t, line, &p[1], &killwords) < 0)
        return -1;
    if (has[2]) {
        if (need_str(t, line, &p[2], "end") < 0)
            return -1;
        end = p[2];
    }
    if (has[3] && p[3].kind != TV_NONE && get_int(t, line, &p[3], &leeway) < 0)
        return -1;
    int64_t endlen = (int64_t)tpl_u8_count(end.u.s.p, end.u.s.n);
    if (length < endlen)
        return tpl_fail(t, line, "expected length >= %" PRId64 ", got %" PRId64, endlen, length);
    if (leeway < 0)
        return tpl_fail(t, line, "expected leeway >= 0, got %" PRId64, leeway);
    size_t len;
    if (tpl_tv_len(t, line, v, &len) < 0)
        return -1;
    if ((int64_t)len <= length + leeway) {
        *out = *v;
        return 0;
    }
    if (v->kind != TV_STR)
        return tpl_fail(t, line, "truncate() of a %s is not supported", tpl_tv_type(v));
    size_t cut = tpl_u8_offset(v->u.s.p, v->u.s.n, (size_t)(length - endlen));
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (killwords) {
        mini_buf_append(&b, v->u.s.p, cut);
    } else {
        const char *sp = rfind_bytes(v->u.s.p, cut, " ", 1);
        mini_buf_append(&b, v->u.s.p, sp ? (size_t)(sp - v->u.s.p) : cut);
    }
    mini_buf_append(&b, end.u.s.p, end.u.s.n);
    return tpl_tv_from_buf(t, line, &b, v->sub, out);
}

FILTER(f_wordcount)
{
    NOARGS("wordcount");
    struct tv s;
    if (str_of(t, line, v, &s) < 0)
        return -1;
    int64_t words = 0;
    bool in = false;
    size_t l;
    for (size_t i = 0; i < s.u.s.n; i += l) {
        uint32_t c = tpl_u8_decode(s.u.s.p + i, s.u.s.n - i, &l);
        bool w = c == '_' || tpl_uni_is(c, UNI_ALNUM);     /* re's \w */
        if (w && !in)
            words++;
        in = w;
    }
    *out = tpl_tv_int(words);
    return 0;
}

FILTER(f_reverse)
{
    NOARGS("reverse");
    if (v->kind == TV_STR) {
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        size_t i = v->u.s.n, l;
        while (i > 0) {
            size_t k = i - 1;
            while (k > 0 && ((unsigned char)v->u.s.p[k] & 0xC0) == 0x80 && i - k < 4)
                k--;
            tpl_u8_decode(v->u.s.p + k, i - k, &l);
            if (k + l != i)
                k = i - 1;              /* a stray byte */
            mini_buf_append(&b, v->u.s.p + k, i - k);
            i = k;
        }
        return tpl_tv_from_buf(t, line, &b, v->sub, out);
    }
    /* reversed(x): a single-use iterator; a generator becomes a reversed list. */
    struct tseq *items;
    if ((v->kind != TV_SEQ && v->kind != TV_DICT && v->kind != TV_GEN) || tpl_tv_iter(t, line, v, &items) < 0)
        return t->a.failed ? -1 : tpl_fail(t, line, "argument must be iterable");
    struct tv r;
    if (tpl_tv_new_seq(t, items->n, SEQ_LIST, &r) < 0)
        return -1;
    for (size_t i = 0; i < items->n; i++)
        r.u.seq->v[i] = items->v[items->n - 1 - i];
    if (v->kind == TV_GEN) {
        *out = r;
        return 0;
    }
    struct tgen *g = tpl_alloc(t, sizeof *g);
    if (!g)
        return -1;
    g->seq = r.u.seq;
    g->type = v->kind == TV_DICT ? "dict_reversekeyiterator" :
              v->sub == SEQ_RANGE ? "range_iterator" :
              v->sub == SEQ_LIST ? "list_reverseiterator" : "reversed";
    out->kind = TV_GEN;
    out->sub = 0;
    out->u.gen = g;
    return 0;
}

/* Stable merge sort of items[] by keys[] (Python's sorted()). */
static int sort_rec(struct tpl *t, int line, struct tv *keys, struct tv *items, struct tv *tk,
                    struct tv *ti, size_t n, bool reverse)
{
    if (n < 2)
        return 0;
    size_t h = n / 2;
    if (sort_rec(t, line, keys, items, tk, ti, h, reverse) < 0 ||
        sort_rec(t, line, keys + h, items + h, tk, ti, n - h, reverse) < 0)
        return -1;
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c;
        if (tpl_step(t, line) < 0 || tpl_tv_cmp(t, line, &keys[j], &keys[i], &c) < 0)
            return -1;
        bool take_right = c != 2 && (reverse ? c > 0 : c < 0);
        if (take_right) {
            tk[k] = keys[j];
            ti[k++] = items[j++];
        } else {
            tk[k] = keys[i];
            ti[k++] = items[i++];
        }
    }
    while (i < h) {
        tk[k] = keys[i];
        ti[k++] = items[i++];
    }
    while (j < n) {
        tk[k] = keys[j];
        ti[k++] = items[j++];
    }
    memcpy(keys, tk, n * sizeof *keys);
    memcpy(items, ti, n * sizeof *items);
    return 0;
}

/* Keys for sort/min/max/unique: the item or its attribute(s), lowercased
 * strings unless case_sensitive; `multi` splits attribute on commas. */
static int make_keys(struct tpl *t, int line, const struct tseq *items, const struct tv *attr,
                     bool lower, bool multi, struct tv **keys)
{
    *keys = items->n ? tpl_alloc(t, items->n * sizeof **keys) : NULL;
    if (items->n && !*keys)
        return -1;
    for (size_t i = 0; i < items->n; i++) {
        if (multi && attr && attr->kind == TV_STR && memchr(attr->u.s.p, ',', attr->u.s.n)) {
            size_t parts = 1;
            for (size_t k = 0; k < attr->u.s.n; k++)
                parts += attr->u.s.p[k] == ',';
            struct tv key;
            if (tpl_tv_new_seq(t, parts, SEQ_LIST, &key) < 0)
                return -1;
            const char *q = attr->u.s.p, *end = q + attr->u.s.n;
            for (size_t k = 0; k < parts; k++) {
                const char *c = memchr(q, ',', (size_t)(end - q));
                struct tv part = tpl_tv_strn(q, c ? (size_t)(c - q) : (size_t)(end - q));
                if (attr_get(t, line, &items->v[i], &part, NULL, lower, &key.u.seq->v[k]) < 0)
                    return -1;
                q = c ? c + 1 : end;
            }
            (*keys)[i] = key;
        } else if (attr_get(t, line, &items->v[i], attr, NULL, lower, &(*keys)[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

FILTER(f_sort)
{
    BIND("sort", "reverse", "case_sensitive", "attribute");
    bool reverse = false, cs = false;
    if ((has[0] && tpl_tv_truth(t, line, &p[0], &reverse) < 0) || (has[1] && tpl_tv_truth(t, line, &p[1], &cs) < 0))
        return -1;
    struct tseq *items;
    struct tv *keys;
    if (tpl_tv_iter(t, line, v, &items) < 0 ||
        make_keys(t, line, items, has[2] ? &p[2] : NULL, !cs, true, &keys) < 0 ||
        tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
        return -1;
    if (!items->n)
        return 0;
    memcpy(out->u.seq->v, items->v, items->n * sizeof *items->v);
    struct tv *tk = tpl_alloc(t, items->n * sizeof *tk), *ti = tpl_alloc(t, items->n * sizeof *ti);
    if (!tk || !ti)
        return -1;
    return sort_rec(t, line, keys, out->u.seq->v, tk, ti, items->n, reverse);
}

FILTER(f_dictsort)
{
    BIND("dictsort", "case_sensitive", "by", "reverse");
    bool cs = false, reverse = false;
    int pos = 0;
    if ((has[0] && tpl_tv_truth(t, line, &p[0], &cs) < 0) || (has[2] && tpl_tv_truth(t, line, &p[2], &reverse) < 0))
        return -1;
    if (has[1]) {
        if (p[1].kind == TV_STR && p[1].u.s.n == 3 && memcmp(p[1].u.s.p, "key", 3) == 0)
            pos = 0;
        else if (p[1].kind == TV_STR && p[1].u.s.n == 5 && memcmp(p[1].u.s.p, "value", 5) == 0)
            pos = 1;
        else
            return tpl_fail(t, line, "You can only sort by either \"key\" or \"value\"");
    }
    if (v->kind != TV_DICT)
        return tpl_fail(t, line, "'%s' object has no attribute 'items'", tpl_tv_type(v));
    struct tv items;
    if (dict_view(t, v->u.d, SEQ_ITEMS, &items) < 0)
        return -1;
    size_t n = items.u.seq->n;
    struct tv *keys = n ? tpl_alloc(t, n * sizeof *keys) : NULL;
    if (n && !keys)
        return -1;
    for (size_t i = 0; i < n; i++) {
        keys[i] = items.u.seq->v[i].u.seq->v[pos];
        if (!cs && keys[i].kind == TV_STR && str_case(t, line, &keys[i], CASE_LOWER, &keys[i]) < 0)
            return -1;
    }
    items.sub = SEQ_LIST;
    *out = items;
    if (!n)
        return 0;
    struct tv *tk = tpl_alloc(t, n * sizeof *tk), *ti = tpl_alloc(t, n * sizeof *ti);
    if (!tk || !ti)
        return -1;
    return sort_rec(t, line, keys, out->u.seq->v, tk, ti, n, reverse);
}

static int min_max(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out, bool max)
{
    BIND(max ? "max" : "min", "case_sensitive", "attribute");
    bool cs = false;
    if (has[0] && tpl_tv_truth(t, line, &p[0], &cs) < 0)
        return -1;
    struct tseq *items;
    struct tv *keys;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    if (!items->n) {
        *out = tpl_tv_undef(t, "No aggregated item, sequence was empty.");
        return 0;
    }
    if (make_keys(t, line, items, has[1] ? &p[1] : NULL, !cs, false, &keys) < 0)
        return -1;
    size_t best = 0;
    for (size_t i = 1; i < items->n; i++) {
        int c;
        if (tpl_tv_cmp(t, line, &keys[i], &keys[best], &c) < 0)
            return -1;
        if (c != 2 && (max ? c > 0 : c < 0))
            best = i;
    }
    *out = items->v[best];
    return 0;
}

FILTER(f_max) { return min_max(t, line, v, a, out, true); }
FILTER(f_min) { return min_max(t, line, v, a, out, false); }

FILTER(f_unique)
{
    BIND("unique", "case_sensitive", "attribute");
    bool cs = false;
    if (has[0] && tpl_tv_truth(t, line, &p[0], &cs) < 0)
        return -1;
    struct tseq *items;
    struct tv *keys, seen;
    if (tpl_tv_iter(t, line, v, &items) < 0 ||
        make_keys(t, line, items, has[1] ? &p[1] : NULL, !cs, false, &keys) < 0 ||
        tpl_tv_new_dict(t, 0, &seen) < 0 || tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < items->n; i++) {
        long at = tpl_tv_dict_find(t, line, seen.u.d, &keys[i]);
        if (at < -1)
            return -1;
        if (at >= 0)
            continue;
        struct tv none = tpl_tv_none();
        if (tpl_tv_dict_set(t, line, seen.u.d, &keys[i], &none) < 0)
            return -1;
        out->u.seq->v[k++] = items->v[i];
    }
    out->u.seq->n = k;
    return 0;
}

FILTER(f_sum)
{
    BIND("sum", "attribute", "start");
    struct tv acc = has[1] ? p[1] : tpl_tv_int(0);
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    for (size_t i = 0; i < items->n; i++) {
        struct tv item = items->v[i], r;
        if (has[0] && attr_get(t, line, &items->v[i], &p[0], NULL, false, &item) < 0)
            return -1;
        if (tpl_step(t, line) < 0 || tpl_arith(t, line, OP_ADD, &acc, &item, &r) < 0)
            return -1;
        acc = r;
    }
    *out = acc;
    return 0;
}

FILTER(f_round)
{
    BIND("round", "precision", "method");
    int64_t prec = 0;
    if (has[0] && get_int(t, line, &p[0], &prec) < 0)
        return -1;
    int method = 0;                     /* common, ceil, floor */
    if (has[1]) {
        if (p[1].kind == TV_STR && p[1].u.s.n == 4 && memcmp(p[1].u.s.p, "ceil", 4) == 0)
            method = 1;
        else if (p[1].kind == TV_STR && p[1].u.s.n == 5 && memcmp(p[1].u.s.p, "floor", 5) == 0)
            method = 2;
        else if (!(p[1].kind == TV_STR && p[1].u.s.n == 6 && memcmp(p[1].u.s.p, "common", 6) == 0))
            return tpl_fail(t, line, "method must be common, ceil or floor");
    }
    if (!tpl_tv_isnum(v)) {
        if (tpl_tv_isstrict_undef(v))
            return tpl_tv_undef_error(t, line, v);
        return tpl_fail(t, line, "type %s doesn't define __round__ method", tpl_tv_type(v));
    }
    if (prec > 400)
        prec = 400;
    if (prec < -400)
        prec = -400;
    if (method) {
        double x = v->kind == TV_FLOAT ? v->u.f : (double)(v->kind == TV_INT ? v->u.i : v->u.b);
        double scale = pow(10.0, (double)prec), m = x * scale;
        if (!isfinite(m))
            return tpl_fail(t, line, "cannot convert float infinity to integer");
        m = method == 1 ? ceil(m) : floor(m);
        *out = tpl_tv_float(m / scale);
        return 0;
    }
    if (v->kind != TV_FLOAT) {
        int64_t x = v->kind == TV_INT ? v->u.i : v->u.b;
        if (prec >= 0) {
            *out = tpl_tv_int(x);
            return 0;
        }
        if (prec < -18) {
            *out = tpl_tv_int(0);
            return 0;
        }
        int64_t pw = 1;
        for (int64_t i = 0; i < -prec; i++)
            pw *= 10;
        int64_t q = x / pw, r = x % pw;
        if (r < 0) {
            r += pw;
            q--;
        }
        if (r * 2 > pw || (r * 2 == pw && (q & 1)))
            q++;
        if (__builtin_mul_overflow(q, pw, &x))
            return tpl_overflow(t, line);
        *out = tpl_tv_int(x);
        return 0;
    }
    double x = v->u.f;
    if (!isfinite(x) || x == 0.0) {
        *out = tpl_tv_float(x);
        return 0;
    }
    char buf[512];
    if (prec >= 0) {
        snprintf(buf, sizeof buf, "%.*f", (int)(prec > 340 ? 340 : prec), x);
        *out = tpl_tv_float(strtod(buf, NULL));
        return 0;
    }
    /* Negative precision: keep (digits before the point + prec) significant
     * digits, correctly rounded, like Python's round(). */
    int e10 = (int)floor(log10(fabs(x)));
    snprintf(buf, sizeof buf, "%.0e", x);
    int sig = e10 + 1 + (int)prec;
    if (sig > 0) {
        snprintf(buf, sizeof buf, "%.*e", sig - 1, x);
        *out = tpl_tv_float(strtod(buf, NULL));
    } else if (sig == 0) {
        double unit = pow(10.0, (double)-prec), frac = fabs(x) / unit;
        *out = tpl_tv_float(frac > 0.5 ? copysign(unit, x) : copysign(0.0, x));
    } else {
        *out = tpl_tv_float(copysign(0.0, x));
    }
    return 0;
}

FILTER(f_batch)
{
    BIND("batch", "linecount", "fill_with");
    int64_t lc = 0;
    if (!has[0])
        return tpl_fail(t, line, "batch() missing required argument 'linecount'");
    if (get_int(t, line, &p[0], &lc) < 0)
        return -1;
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    /* Jinja's loop, literally: a batch is yielded when it holds linecount
     * items, checked before each item is added (so linecount 0 yields an
     * empty batch first); the last one is padded with fill_with. */
    struct tseq acc = { 0 };
    size_t cap = 0, from = 0;
    int rc = -1;
    struct tv batch;
    for (size_t i = 0; i <= items->n; i++) {
        size_t len = i - from;
        bool last = i == items->n;
        if (!last && (int64_t)len != lc)
            continue;
        if (last && len == 0)
            break;
        size_t total = len;
        bool fill = last && has[1] && p[1].kind != TV_NONE && (int64_t)len < lc;
        if (fill)
            total = (size_t)lc;
        if (tpl_step(t, line) < 0 || tpl_tv_new_seq(t, total, SEQ_LIST, &batch) < 0)
            goto out;
        for (size_t k = 0; k < total; k++)
            batch.u.seq->v[k] = k < len ? items->v[from + k] : p[1];
        if (tpl_grow(t, (void **)&acc.v, &cap, acc.n + 1, sizeof *acc.v) < 0)
            goto out;
        acc.v[acc.n++] = batch;
        from = i;
    }
    if (tpl_tv_new_seq(t, acc.n, SEQ_LIST, out) < 0)
        goto out;
    if (acc.n)
        memcpy(out->u.seq->v, acc.v, acc.n * sizeof *acc.v);
    rc = 0;
out:
    free(acc.v);
    return rc;
}

FILTER(f_slice)
{
    BIND("slice", "slices", "fill_with");
    int64_t slices = 0;
    if (!has[0])
        return tpl_fail(t, line, "slice() missing required argument 'slices'");
    if (get_int(t, line, &p[0], &slices) < 0)
        return -1;
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    if (slices == 0)
        return tpl_fail(t, line, "integer division or modulo by zero");
    if (slices < 0 || (uint64_t)slices > tpl_mem_limit(t) / sizeof(struct tv))
        slices = slices < 0 ? 0 : slices;
    int64_t len = (int64_t)items->n, per = len / slices, extra = len % slices, offset = 0;
    if (per < 0 || extra < 0)               /* negative slices: Python floors; nothing is produced */
        slices = 0;
    if ((uint64_t)slices > tpl_mem_limit(t) / sizeof(struct tv))
        return tpl_charge(t, line, SIZE_MAX);
    if (tpl_tv_new_seq(t, (size_t)slices, SEQ_LIST, out) < 0)
        return -1;
    bool fill = has[1] && p[1].kind != TV_NONE;
    for (int64_t s = 0; s < slices; s++) {
        int64_t start = offset + s * per;
        if (s < extra)
            offset++;
        int64_t end = offset + (s + 1) * per;
        size_t cnt = (size_t)(end - start), total = cnt + (fill && s >= extra);
        struct tv *slot = &out->u.seq->v[s];
        if (tpl_tv_new_seq(t, total, SEQ_LIST, slot) < 0)
            return -1;
        for (size_t i = 0; i < cnt; i++)
            slot->u.seq->v[i] = items->v[start + (int64_t)i];
        if (total > cnt)
            slot->u.seq->v[cnt] = p[1];
    }
    return 0;
}

FILTER(f_format)
{
    if (a->n && a->nkw)
        return tpl_fail(t, line, "can't handle positional and keyword arguments at the same time");
    struct tv s, args;
    if (soft_str(t, line, v, &s) < 0)
        return -1;
    if (a->nkw) {
        if (tpl_tv_new_dict(t, a->nkw, &args) < 0)
            return -1;
        for (size_t k = 0; k < a->nkw; k++) {
            struct tv key = tpl_tv_strn(a->kw[k].name, a->kw[k].n);
            if (tpl_tv_dict_set(t, line, args.u.d, &key, &a->kwv[k]) < 0)
                return -1;
        }
    } else {
        if (tpl_tv_new_seq(t, a->n, SEQ_TUPLE, &args) < 0)
            return -1;
        if (a->n)
            memcpy(args.u.seq->v, a->v, a->n * sizeof *a->v);
    }
    return tpl_percent_format(t, line, &s, &args, out);
}

/* map / select / reject / selectattr / rejectattr */
static int sub_args(struct tpl *t, struct callargs *a, size_t skip, struct callargs *out)
{
    (void)t;
    *out = *a;
    out->n = a->n > skip ? a->n - skip : 0;
    out->v = a->n > skip ? a->v + skip : NULL;
    return 0;
}

FILTER(f_map)
{
    struct tseq *items;
    bool truth;
    if (tpl_tv_truth(t, line, v, &truth) < 0)
        return -1;
    if (!truth)
        return tpl_tv_new_seq(t, 0, SEQ_LIST, out);
    if (tpl_tv_iter(t, line, v, &items) < 0 || tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
        return -1;
    if (a->n == 0) {
        const struct tv *attr = NULL, *dflt = NULL;
        for (size_t k = 0; k < a->nkw; k++) {
            if (a->kw[k].n == 9 && memcmp(a->kw[k].name, "attribute", 9) == 0)
                attr = &a->kwv[k];
            else if (a->kw[k].n == 7 && memcmp(a->kw[k].name, "default", 7) == 0)
                dflt = &a->kwv[k];
            else
                return tpl_fail(t, line, "Unexpected keyword argument '%.*s'", (int)a->kw[k].n, a->kw[k].name);
        }
        if (!attr)
            return tpl_fail(t, line, "map requires a filter argument");
        if (dflt && dflt->kind == TV_NONE)
            dflt = NULL;
        for (size_t i = 0; i < items->n; i++)
            if (attr_get(t, line, &items->v[i], attr, dflt, false, &out->u.seq->v[i]) < 0)
                return -1;
        return 0;
    }
    struct callargs rest;
    sub_args(t, a, 1, &rest);
    for (size_t i = 0; i < items->n; i++)
        if (tpl_step(t, line) < 0 ||
            call_filter_by_name(t, line, &a->v[0], &items->v[i], &rest, &out->u.seq->v[i]) < 0)
            return -1;
    return 0;
}

static int select_reject(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out,
                         bool want, bool by_attr)
{
    struct tseq *items;
    bool truth;
    if (tpl_tv_truth(t, line, v, &truth) < 0)
        return -1;
    if (!truth)
        return tpl_tv_new_seq(t, 0, SEQ_LIST, out);
    if (by_attr && a->n == 0)
        return tpl_fail(t, line, "Missing parameter for attribute name");
    size_t off = by_attr ? 1 : 0;
    if (tpl_tv_iter(t, line, v, &items) < 0 || tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
        return -1;
    struct callargs rest;
    sub_args(t, a, off + 1, &rest);
    size_t k = 0;
    for (size_t i = 0; i < items->n; i++) {
        struct tv x = items->v[i];
        bool r;
        if (tpl_step(t, line) < 0)
            return -1;
        if (by_attr && attr_get(t, line, &items->v[i], &a->v[0], NULL, false, &x) < 0)
            return -1;
        if (a->n > off) {
            if (call_test_by_name(t, line, &a->v[off], &x, &rest, &r) < 0)
                return -1;
        } else if (tpl_tv_truth(t, line, &x, &r) < 0) {
            return -1;
        }
        if (r == want)
            out->u.seq->v[k++] = items->v[i];
    }
    out->u.seq->n = k;
    return 0;
}

FILTER(f_select) { return select_reject(t, line, v, a, out, true, false); }
FILTER(f_reject) { return select_reject(t, line, v, a, out, false, false); }
FILTER(f_selectattr) { return select_reject(t, line, v, a, out, true, true); }
FILTER(f_rejectattr) { return select_reject(t, line, v, a, out, false, true); }

static const struct tpl_builtin filters[] = {
    { "abs", f_abs, false }, { "attr", f_attr, false }, { "batch", f_batch, true },
    { "capitalize", f_capitalize, false }, { "center", f_center, false },
    { "count", f_length, false }, { "d", f_default, false }, { "default", f_default, false },
    { "dictsort", f_dictsort, false }, { "e", f_escape, false }, { "escape", f_escape, false },
    { "first", f_first, false }, { "float", f_float, false }, { "forceescape", f_forceescape, false },
    { "format", f_format, false }, { "indent", f_indent, false }, { "int", f_int, false },
    { "items", f_items, true }, { "join", f_join, false }, { "last", f_last, false },
    { "length", f_length, false }, { "list", f_list, false }, { "lower", f_lower, false },
    { "map", f_map, true }, { "max", f_max, false }, { "min", f_min, false },
    { "reject", f_reject, true }, { "rejectattr", f_rejectattr, true },
    { "replace", f_replace, false }, { "reverse", f_reverse, false }, { "round", f_round, false },
    { "safe", f_safe, false }, { "select", f_select, true }, { "selectattr", f_selectattr, true },
    { "slice", f_slice, true }, { "sort", f_sort, false }, { "string", f_string, false },
    { "sum", f_sum, false }, { "title", f_title, false }, { "tojson", f_tojson, false },
    { "trim", f_trim, false }, { "truncate", f_truncate, false }, { "unique", f_unique, true },
    { "upper", f_upper, false }, { "wordcount", f_wordcount, false },
};

/* Call a filter; a lazy one becomes a generator that runs when consumed. */
int tpl_apply_filter(struct tpl *t, int line, const struct tpl_builtin *f, const struct tv *v,
                        struct callargs *a, struct tv *out)
{
    if (!f->lazy) {
        struct tv in = *v;
        return f->fn(t, line, &in, a, out);
    }
    struct tgen *g = tpl_alloc(t, sizeof *g);
    if (!g)
        return -1;
    g->fn = f;
    g->input = *v;
    g->args = *a;
    g->line = line;
    g->type = "generator";
    out->kind = TV_GEN;
    out->sub = 0;
    out->u.gen = g;
    return 0;
}

/* Jinja filters this engine lacks: known, so the error says "not supported". */
static const char *const missing_filters[] = {
    "filesizeformat", "groupby", "mark_unsafe", "pprint", "random", "striptags", "urlencode",
    "urlize", "wordwrap", "xmlattr", NULL,
};

/* -------------------------------------------------------------- tests */

static int test_result(struct tv *out, bool b)
{
    *out = tpl_tv_bool(b);
    return 0;
}

#define TEST(name) static int name(struct tpl *t, int line, struct tv *v, struct callargs *a, \
                                   struct tv *out)

static int one_arg(struct tpl *t, int line, const char *name, struct callargs *a, struct tv *arg)
{
    static const char *const names[] = { "other" };
    bool has;
    if (bind(t, line, name, a, names, 1, arg, &has) < 0)
        return -1;
    if (!has)
        return tpl_fail(t, line, "%s() missing 1 required positional argument", name);
    return 0;
}

TEST(t_defined) { NOARGS("defined"); return test_result(out, v->kind != TV_UNDEF); }
TEST(t_undefined) { NOARGS("undefined"); return test_result(out, v->kind == TV_UNDEF); }
TEST(t_none) { NOARGS("none"); return test_result(out, v->kind == TV_NONE); }
TEST(t_boolean) { NOARGS("boolean"); return test_result(out, v->kind == TV_BOOL); }
TEST(t_true) { NOARGS("true"); return test_result(out, v->kind == TV_BOOL && v->u.b); }
TEST(t_false) { NOARGS("false"); return test_result(out, v->kind == TV_BOOL && !v->u.b); }
TEST(t_integer) { NOARGS("integer"); return test_result(out, v->kind == TV_INT); }
TEST(t_float) { NOARGS("float"); return test_result(out, v->kind == TV_FLOAT); }
TEST(t_number) { NOARGS("number"); return test_result(out, tpl_tv_isnum(v)); }
TEST(t_string) { NOARGS("string"); return test_result(out, v->kind == TV_STR); }
TEST(t_mapping) { NOARGS("mapping"); return test_result(out, v->kind == TV_DICT); }
TEST(t_escaped) { NOARGS("escaped"); return test_result(out, v->kind == TV_STR && v->sub); }

TEST(t_sequence)
{
    NOARGS("sequence");
    bool r = v->kind == TV_STR || v->kind == TV_DICT || (v->kind == TV_UNDEF && v->sub) ||
             (v->kind == TV_SEQ && (v->sub == SEQ_LIST || v->sub == SEQ_TUPLE || v->sub == SEQ_RANGE));
    /* len() works on dict views, but they have no __getitem__. */
    return test_result(out, r);
}

TEST(t_iterable)
{
    NOARGS("iterable");
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, line, v);
    return test_result(out, v->kind == TV_STR || v->kind == TV_SEQ || v->kind == TV_DICT ||
                            v->kind == TV_LOOP || v->kind == TV_UNDEF || v->kind == TV_GEN);
}

TEST(t_callable)
{
    NOARGS("callable");
    return test_result(out, v->kind == TV_FUNC || v->kind == TV_UNDEF || v->kind == TV_LOOP);
}

TEST(t_sameas)
{
    struct tv o;
    if (one_arg(t, line, "sameas", a, &o) < 0)
        return -1;
    bool r = false;
    if (v->kind == o.kind) {
        switch (v->kind) {
        case TV_NONE: r = true; break;
        case TV_BOOL: r = v->u.b == o.u.b; break;
        case TV_INT: r = v->u.i == o.u.i && v->u.i >= -5 && v->u.i <= 256; break;
        case TV_STR: r = v->u.s.p == o.u.s.p && v->u.s.n == o.u.s.n; break;
        case TV_SEQ: r = v->u.seq == o.u.seq; break;
        case TV_DICT: case TV_NS: r = v->u.d == o.u.d; break;
        case TV_LOOP: r = v->u.loop == o.u.loop; break;
        case TV_FUNC: r = v->u.fn == o.u.fn; break;
        default: break;
        }
    }
    return test_result(out, r);
}

TEST(t_in)
{
    struct tv o;
    bool r;
    if (one_arg(t, line, "in", a, &o) < 0 || tpl_contains(t, line, &o, v, &r) < 0)
        return -1;
    return test_result(out, r);
}

static int mod_eq(struct tpl *t, int line, struct tv *v, const struct tv *m, int64_t want, bool *r)
{
    struct tv x, w = tpl_tv_int(want);
    if (tpl_arith(t, line, OP_MOD, v, m, &x) < 0)
        return -1;
    return tpl_tv_eq(t, line, &x, &w, r);
}

TEST(t_even)
{
    NOARGS("even");
    struct tv two = tpl_tv_int(2);
    bool r;
    return mod_eq(t, line, v, &two, 0, &r) < 0 ? -1 : test_result(out, r);
}

TEST(t_odd)
{
    NOARGS("odd");
    struct tv two = tpl_tv_int(2);
    bool r;
    return mod_eq(t, line, v, &two, 1, &r) < 0 ? -1 : test_result(out, r);
}

TEST(t_divisibleby)
{
    struct tv o;
    bool r;
    if (one_arg(t, line, "divisibleby", a, &o) < 0 || mod_eq(t, line, v, &o, 0, &r) < 0)
        return -1;
    return test_result(out, r);
}

static int case_test(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out, bool lower)
{
    if (bind(t, line, lower ? "lower" : "upper", a, NULL, 0, NULL, NULL) < 0)
        return -1;
    struct tv s;
    if (str_of(t, line, v, &s) < 0)
        return -1;
    return test_result(out, lower ? tpl_uni_islower_str(s.u.s.p, s.u.s.n) : tpl_uni_isupper_str(s.u.s.p, s.u.s.n));
}

TEST(t_lower) { return case_test(t, line, v, a, out, true); }
TEST(t_upper) { return case_test(t, line, v, a, out, false); }

static int cmp_test(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out, int op)
{
    struct tv o;
    bool r;
    if (one_arg(t, line, "comparison test", a, &o) < 0 || tpl_compare(t, line, op, v, &o, &r) < 0)
        return -1;
    return test_result(out, r);
}

TEST(t_eq) { return cmp_test(t, line, v, a, out, CMP_EQ); }
TEST(t_ne) { return cmp_test(t, line, v, a, out, CMP_NE); }
TEST(t_lt) { return cmp_test(t, line, v, a, out, CMP_LT); }
TEST(t_le) { return cmp_test(t, line, v, a, out, CMP_LE); }
TEST(t_gt) { return cmp_test(t, line, v, a, out, CMP_GT); }
TEST(t_ge) { return cmp_test(t, line, v, a, out, CMP_GE); }

TEST(t_filter)
{
    NOARGS("filter");
    return test_result(out, v->kind == TV_STR && tpl_find_filter(v->u.s.p, v->u.s.n) != NULL);
}

TEST(t_test)
{
    NOARGS("test");
    return test_result(out, v->kind == TV_STR && tpl_find_test(v->u.s.p, v->u.s.n) != NULL);
}

static const struct tpl_builtin tests[] = {
    { "odd", t_odd, false }, { "even", t_even, false }, { "divisibleby", t_divisibleby, false }, { "defined", t_defined, false },
    { "undefined", t_undefined, false }, { "filter", t_filter, false }, { "test", t_test, false }, { "none", t_none, false },
    { "boolean", t_boolean, false }, { "false", t_false, false }, { "true", t_true, false }, { "integer", t_integer, false },
    { "float", t_float, false }, { "lower", t_lower, false }, { "upper", t_upper, false }, { "string", t_string, false },
    { "mapping", t_mapping, false }, { "number", t_number, false }, { "sequence", t_sequence, false },
    { "iterable", t_iterable, false }, { "callable", t_callable, false }, { "sameas", t_sameas, false },
    { "escaped", t_escaped, false }, { "in", t_in, false }, { "==", t_eq, false }, { "eq", t_eq, false }, { "equalto", t_eq, false },
    { "!=", t_ne, false }, { "ne", t_ne, false }, { ">", t_gt, false }, { "gt", t_gt, false }, { "greaterthan", t_gt, false },
    { "ge", t_ge, false }, { ">=", t_ge, false }, { "<", t_lt, false }, { "lt", t_lt, false }, { "lessthan", t_lt, false },
    { "<=", t_le, false }, { "le", t_le, false },
};

static const struct tpl_builtin *find_builtin(const struct tpl_builtin *b, size_t n, const char *name,
                                              size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(b[i].name) == len && memcmp(b[i].name, name, len) == 0)
            return &b[i];
    return NULL;
}

const struct tpl_builtin *tpl_find_filter(const char *name, size_t n)
{
    return find_builtin(filters, MINI_ARRAY_SIZE(filters), name, n);
}

const struct tpl_builtin *tpl_find_test(const char *name, size_t n)
{
    return find_builtin(tests, MINI_ARRAY_SIZE(tests), name, n);
}

static int call_filter_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                               struct callargs *a, struct tv *out)
{
    if (name->kind != TV_STR)
        return tpl_fail(t, line, "filter name must be a string");
    const struct tpl_builtin *f = tpl_find_filter(name->u.s.p, name->u.s.n);
    if (!f) {
        for (size_t i = 0; missing_filters[i]; i++)
            if (strlen(missing_filters[i]) == name->u.s.n &&
                memcmp(missing_filters[i], name->u.s.p, name->u.s.n) == 0)
                return tpl_fail(t, line, "the '%s' filter is not supported", missing_filters[i]);
        return tpl_fail(t, line, "No filter named '%.*s'.", (int)name->u.s.n, name->u.s.p);
    }
    return tpl_apply_filter(t, line, f, v, a, out);
}

static int call_test_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                             struct callargs *a, bool *out)
{
    if (name->kind != TV_STR)
        return tpl_fail(t, line, "test name must be a string");
    const struct tpl_builtin *f = tpl_find_test(name->u.s.p, name->u.s.n);
    if (!f)
        return tpl_fail(t, line, "No test named '%.*s'.", (int)name->u.s.n, name->u.s.p);
    struct tv in = *v, r;
    if (f->fn(t, line, &in, a, &r) < 0)
        return -1;
    *out = r.u.b;
    return 0;
}
