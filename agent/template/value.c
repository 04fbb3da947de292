/* Template values with Python semantics: str() / repr(), equality and
 * ordering, len(), iteration, json.dumps, Python's number parsers. */
#include "internal.h"
#include "mini/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* --------------------------------------------------------------- values */

struct tv tpl_tv_undef(struct tpl *t, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct tv v = { .kind = TV_UNDEF };
    v.u.undef = tpl_memdup(t, msg, strlen(msg));
    if (!v.u.undef)
        v.u.undef = "value is undefined";
    return v;
}

int tpl_tv_undef_error(struct tpl *t, int line, const struct tv *v)
{
    return tpl_fail(t, line, "%s", v->u.undef ? v->u.undef : "value is undefined");
}

const char *tpl_tv_type(const struct tv *v)
{
    static const char *const seqs[] = {
        [SEQ_LIST] = "list",      [SEQ_TUPLE] = "tuple",        [SEQ_ITEMS] = "dict_items",
        [SEQ_KEYS] = "dict_keys", [SEQ_VALUES] = "dict_values", [SEQ_RANGE] = "range",
    };
    switch (v->kind) {
    case TV_UNDEF: return v->sub ? "Undefined" : "StrictUndefined";
    case TV_NONE: return "NoneType";
    case TV_BOOL: return "bool";
    case TV_INT: return "int";
    case TV_FLOAT: return "float";
    case TV_STR: return v->sub ? "Markup" : "str";
    case TV_SEQ: return v->sub < MINI_ARRAY_SIZE(seqs) ? seqs[v->sub] : "list";
    case TV_DICT: return "dict";
    case TV_NS: return "Namespace";
    case TV_LOOP: return "LoopContext";
    case TV_GEN: return v->u.gen->type;
    default: return "builtin_function_or_method";
    }
}

int tpl_tv_from_buf(struct tpl *t, int line, struct mini_buf *b, bool markup, struct tv *out)
{
    if (tpl_charge(t, line, b->len) < 0)
        return -1;
    char *p = tpl_memdup(t, b->data ? b->data : "", b->len);
    if (!p)
        return -1;
    *out = tpl_tv_strn(p, b->len);
    out->sub = markup;
    mini_buf_reset(b);
    return 0;
}

int tpl_tv_new_seq(struct tpl *t, size_t n, int kind, struct tv *out)
{
    struct tseq *s = tpl_alloc(t, sizeof *s);
    if (!s)
        return -1;
    if (n) {
        if (n > SIZE_MAX / sizeof(struct tv))
            return tpl_fail(t, 0, "sequence too long");
        s->v = tpl_alloc(t, n * sizeof(struct tv));
        if (!s->v)
            return -1;
    }
    s->n = n;
    out->kind = TV_SEQ;
    out->sub = (uint8_t)kind;
    out->u.seq = s;
    return 0;
}

int tpl_tv_new_dict(struct tpl *t, size_t cap, struct tv *out)
{
    struct tdict *d = tpl_alloc(t, sizeof *d);
    if (!d)
        return -1;
    if (cap) {
        if (cap > SIZE_MAX / sizeof(struct tv) / 2)
            return tpl_fail(t, 0, "dict too large");
        d->k = tpl_alloc(t, cap * sizeof(struct tv));
        d->v = tpl_alloc(t, cap * sizeof(struct tv));
        if (!d->k || !d->v)
            return -1;
        d->cap = cap;
    }
    out->kind = TV_DICT;
    out->sub = 0;
    out->u.d = d;
    return 0;
}

bool tpl_tv_hashable(const struct tv *v)
{
    if (tpl_tv_isstrict_undef(v) || v->kind == TV_DICT ||
        (v->kind == TV_SEQ && v->sub != SEQ_TUPLE && v->sub != SEQ_RANGE))
        return false;
    if (v->kind == TV_SEQ && v->sub == SEQ_TUPLE)
        for (size_t i = 0; i < v->u.seq->n; i++)
            if (!tpl_tv_hashable(&v->u.seq->v[i]))
                return false;
    return true;
}

long tpl_tv_dict_find(struct tpl *t, int line, const struct tdict *d, const struct tv *k)
{
    if (tpl_tv_isstrict_undef(k))
        return tpl_tv_undef_error(t, line, k) - 1;
    if (!tpl_tv_hashable(k))
        return tpl_fail(t, line, "unhashable type: '%s'", tpl_tv_type(k)) - 1;
    for (size_t i = 0; i < d->n; i++) {
        const struct tv *x = &d->k[i];
        /* Fast path for the common case: string keys. */
        if (x->kind == TV_STR && k->kind == TV_STR) {
            if (x->u.s.n == k->u.s.n && memcmp(x->u.s.p, k->u.s.p, k->u.s.n) == 0)
                return (long)i;
            continue;
        }
        bool eq;
        if (tpl_tv_eq(t, line, x, k, &eq) < 0)
            return -2;
        if (eq)
            return (long)i;
    }
    return -1;
}

int tpl_tv_dict_set(struct tpl *t, int line, struct tdict *d, const struct tv *k, const struct tv *v)
{
    long i = tpl_tv_dict_find(t, line, d, k);
    if (i < -1)
        return -1;
    if (i >= 0) {
        d->v[i] = *v;
        return 0;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof(struct tv) / 2)
            return tpl_fail(t, line, "dict too large");
        struct tv *nk = tpl_alloc(t, cap * sizeof *nk), *nv = tpl_alloc(t, cap * sizeof *nv);
        if (!nk || !nv)
            return -1;
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = *k;
    d->v[d->n] = *v;
    d->n++;
    return 0;
}

/* The length of the JSON number at s (RFC 8259 grammar), or 0. */
static size_t json_number_len(const char *s)
{
    size_t i = 0;
    if (s[i] == '-')
        i++;
    if (s[i] == '0')
        i++;
    else if (s[i] >= '1' && s[i] <= '9')
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (s[i] == '.') {
        if (!(s[++i] >= '0' && s[i] <= '9'))
            return 0;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-')
            i++;
        if (!(s[i] >= '0' && s[i] <= '9'))
            return 0;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i;
}

/* A raw item holding a JSON number, read as Python's json module reads it:
 * an int unless it has a fraction or an exponent. */
static int raw_number(struct tpl *t, const char *s, struct tv *out)
{
    size_t n = json_number_len(s);
    if (n == 0 || s[n] != 0)
        return tpl_fail(t, 0, "a raw JSON variable must be a number, not \"%.40s\"", s);
    if (strpbrk(s, ".eE")) {
        *out = tpl_tv_float(strtod(s, NULL));
        return 0;
    }
    int64_t v;
    bool overflow;
    if (tpl_parse_int(s, n, 10, &v, &overflow) < 0 || overflow)
        return tpl_fail(t, 0, "integer variable %.40s is too large (ints are 64-bit)", s);
    *out = tpl_tv_int(v);
    return 0;
}

int tpl_tv_from_json(struct tpl *t, const cJSON *j, struct tv *out, int depth)
{
    if (depth > TPL_MAX_DEPTH)
        return tpl_fail(t, 0, "variables nest deeper than %d levels", TPL_MAX_DEPTH);
    if (!j || cJSON_IsNull(j) || cJSON_IsInvalid(j)) {
        *out = tpl_tv_none();
    } else if (cJSON_IsBool(j)) {
        *out = tpl_tv_bool(cJSON_IsTrue(j));
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        const char *text = j->valuestring;
        if (text && *text) {
            /* The number's source text, kept by its producer: a float when
             * written with a point, an exponent, inf or nan, else an int
             * (exact from the text when it is plain decimal digits). */
            int64_t v;
            bool ovf;
            const char *digits = *text == '+' ? text + 1 : text;
            if (mini_json_is_float(j))
                *out = tpl_tv_float(d);
            else if (tpl_parse_int(digits, strlen(digits), 10, &v, &ovf) == 0 && !ovf)
                *out = tpl_tv_int(v);
            else if (isfinite(d) && d == floor(d) && fabs(d) < 9223372036854775808.0)
                *out = tpl_tv_int((int64_t)d);
            else
                *out = tpl_tv_float(d);
        } else if (isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0) {
            *out = tpl_tv_int((int64_t)d);
        } else {
            *out = tpl_tv_float(d);
        }
    } else if (cJSON_IsRaw(j)) {
        return raw_number(t, j->valuestring ? j->valuestring : "", out);
    } else if (cJSON_IsString(j)) {
        const char *s = j->valuestring ? j->valuestring : "";
        *out = tpl_tv_strn(s, strlen(s));
    } else if (cJSON_IsArray(j)) {
        size_t n = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            n++;
        if (tpl_tv_new_seq(t, n, SEQ_LIST, out) < 0)
            return -1;
        size_t i = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            if (tpl_tv_from_json(t, c, &out->u.seq->v[i++], depth + 1) < 0)
                return -1;
    } else if (cJSON_IsObject(j)) {
        size_t n = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            n++;
        if (tpl_tv_new_dict(t, n, out) < 0)
            return -1;
        struct tdict *d = out->u.d;
        for (const cJSON *c = j->child; c; c = c->next) {
            struct tv k = tpl_tv_strn(c->string ? c->string : "", c->string ? strlen(c->string) : 0);
            struct tv v;
            if (tpl_tv_from_json(t, c, &v, depth + 1) < 0)
                return -1;
            /* A repeated key keeps its last value, as Python's json does
             * (checked for small objects only: the check is quadratic). */
            long at = n <= 256 ? tpl_tv_dict_find(t, 0, d, &k) : -1;
            if (at >= 0) {
                d->v[at] = v;
                continue;
            }
            d->k[d->n] = k;
            d->v[d->n++] = v;
        }
    } else {
        *out = tpl_tv_none();
    }
    return 0;
}

int tpl_tv_truth(struct tpl *t, int line, const struct tv *v, bool *out)
{
    switch (v->kind) {
    case TV_UNDEF:
        if (!v->sub)
            return tpl_tv_undef_error(t, line, v);
        *out = false;
        break;
    case TV_NONE: *out = false; break;
    case TV_BOOL: *out = v->u.b; break;
    case TV_INT: *out = v->u.i != 0; break;
    case TV_FLOAT: *out = v->u.f != 0.0; break;
    case TV_STR: *out = v->u.s.n > 0; break;
    case TV_SEQ: *out = v->u.seq->n > 0; break;
    case TV_DICT: *out = v->u.d->n > 0; break;
    default: *out = true; break;
    }
    return 0;
}

/* ------------------------------------------------------------- printing */

static void tpl_fmt_float(struct mini_buf *b, double x)
{
    if (isnan(x)) {
        mini_buf_puts(b, "nan");
        return;
    }
    if (isinf(x)) {
        mini_buf_puts(b, x < 0 ? "-inf" : "inf");
        return;
    }
    /* Shortest digits that read back as x, like Python's repr(). */
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x)
            break;
    }
    char digits[24];
    size_t nd = 0;
    const char *s = tmp;
    if (*s == '-') {
        mini_buf_putc(b, '-');
        s++;
    }
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && nd < sizeof digits)
            digits[nd++] = *s;
    int exp10 = *s == 'e' ? atoi(s + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int decpt = exp10 + 1; /* value = 0.DIGITS * 10^decpt */
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            mini_buf_puts(b, "0.");
            for (int i = 0; i < -decpt; i++)
                mini_buf_putc(b, '0');
            mini_buf_append(b, digits, nd);
        } else if ((size_t)decpt >= nd) {
            mini_buf_append(b, digits, nd);
            for (size_t i = nd; i < (size_t)decpt; i++)
                mini_buf_putc(b, '0');
            mini_buf_puts(b, ".0");
        } else {
            mini_buf_append(b, digits, (size_t)decpt);
            mini_buf_putc(b, '.');
            mini_buf_append(b, digits + decpt, nd - (size_t)decpt);
        }
    } else {
        mini_buf_putc(b, digits[0]);
        if (nd > 1) {
            mini_buf_putc(b, '.');
            mini_buf_append(b, digits + 1, nd - 1);
        }
        mini_buf_printf(b, "e%c%02d", decpt - 1 < 0 ? '-' : '+', abs(decpt - 1));
    }
}

static int str_repr(struct mini_buf *b, const char *p, size_t n)
{
    char quote = '\'';
    if (memchr(p, '\'', n) && !memchr(p, '"', n))
        quote = '"';
    mini_buf_putc(b, quote);
    size_t l;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        if (c == (uint32_t)quote || c == '\\') {
            mini_buf_putc(b, '\\');
            mini_buf_putc(b, (char)c);
        } else if (c == '\t') {
            mini_buf_puts(b, "\\t");
        } else if (c == '\n') {
            mini_buf_puts(b, "\\n");
        } else if (c == '\r') {
            mini_buf_puts(b, "\\r");
        } else if (c < 0x20 || c == 0x7F) {
            mini_buf_printf(b, "\\x%02x", c);
        } else if (c < 0x7F) {
            mini_buf_putc(b, (char)c);
        } else if (tpl_uni_printable(c)) {
            mini_buf_append(b, p + i, l);
        } else if (c <= 0xFF) {
            mini_buf_printf(b, "\\x%02x", c);
        } else if (c <= 0xFFFF) {
            mini_buf_printf(b, "\\u%04x", c);
        } else {
            mini_buf_printf(b, "\\U%08x", c);
        }
    }
    return mini_buf_putc(b, quote);
}

/* repr() state: the lists and dicts being printed, so that a container
 * that contains itself prints as [...] or {...}, as Python's does. */
struct repr_ctx {
    struct tpl *t;
    int line;
    struct mini_buf *b;
    int n;
    const void *active[TPL_MAX_DEPTH + 2];
};

static int repr_rec(struct repr_ctx *c, const struct tv *v);

static bool repr_enter(struct repr_ctx *c, const void *p)
{
    for (int i = 0; i < c->n; i++)
        if (c->active[i] == p)
            return false;
    c->active[c->n++] = p;
    return true;
}

static int repr_items(struct repr_ctx *c, const struct tseq *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (i)
            mini_buf_puts(c->b, ", ");
        if (repr_rec(c, &s->v[i]) < 0)
            return -1;
    }
    return 0;
}

static int repr_dict(struct repr_ctx *c, const struct tdict *d)
{
    if (!repr_enter(c, d))
        return mini_buf_puts(c->b, "{...}");
    mini_buf_putc(c->b, '{');
    for (size_t i = 0; i < d->n; i++) {
        if (i)
            mini_buf_puts(c->b, ", ");
        if (repr_rec(c, &d->k[i]) < 0)
            return -1;
        mini_buf_puts(c->b, ": ");
        if (repr_rec(c, &d->v[i]) < 0)
            return -1;
    }
    c->n--;
    return mini_buf_putc(c->b, '}');
}

static int repr_rec(struct repr_ctx *c, const struct tv *v)
{
    struct mini_buf *b = c->b;
    if (c->n > TPL_MAX_DEPTH)
        return tpl_fail(c->t, c->line, "maximum recursion depth exceeded while printing a value");
    if (tpl_step(c->t, c->line) < 0)
        return -1;
    if (b->len > tpl_mem_limit(c->t))
        return tpl_fail(c->t, c->line, "value too large to print");
    switch (v->kind) {
    case TV_UNDEF: return mini_buf_puts(b, "Undefined");
    case TV_STR:
        if (v->sub) {
            mini_buf_puts(b, "Markup(");
            str_repr(b, v->u.s.p, v->u.s.n);
            return mini_buf_putc(b, ')');
        }
        return str_repr(b, v->u.s.p, v->u.s.n);
    case TV_SEQ: {
        const struct tseq *s = v->u.seq;
        int r;
        switch (v->sub) {
        case SEQ_RANGE:
            if (s->step == 1)
                return mini_buf_printf(b, "range(%" PRId64 ", %" PRId64 ")", s->start, s->stop);
            return mini_buf_printf(b, "range(%" PRId64 ", %" PRId64 ", %" PRId64 ")", s->start, s->stop, s->step);
        case SEQ_TUPLE:
            c->active[c->n++] = s; /* depth only: a tuple cannot contain itself */
            mini_buf_putc(b, '(');
            if (repr_items(c, s) < 0)
                return -1;
            c->n--;
            return mini_buf_puts(b, s->n == 1 ? ",)" : ")");
        case SEQ_ITEMS:
        case SEQ_KEYS:
        case SEQ_VALUES:
            c->active[c->n++] = s;
            mini_buf_puts(b,
                          v->sub == SEQ_ITEMS      ? "dict_items(["
                              : v->sub == SEQ_KEYS ? "dict_keys(["
                                                   : "dict_values([");
            if (repr_items(c, s) < 0)
                return -1;
            c->n--;
            return mini_buf_puts(b, "])");
        default:
            if (!repr_enter(c, s))
                return mini_buf_puts(b, "[...]");
            mini_buf_putc(b, '[');
            r = repr_items(c, s);
            c->n--;
            return r < 0 ? -1 : mini_buf_putc(b, ']');
        }
    }
    case TV_DICT: return repr_dict(c, v->u.d);
    case TV_NS:
        mini_buf_puts(b, "<Namespace ");
        if (repr_dict(c, v->u.d) < 0)
            return -1;
        return mini_buf_putc(b, '>');
    default: return tpl_tv_str(c->t, c->line, v, b);
    }
}

int tpl_tv_repr(struct tpl *t, int line, const struct tv *v, struct mini_buf *b)
{
    struct repr_ctx *c = malloc(sizeof *c);
    if (!c)
        return tpl_oom(t);
    c->t = t;
    c->line = line;
    c->b = b;
    c->n = 0;
    int rc = repr_rec(c, v);
    free(c);
    if (rc < 0)
        return -1;
    return b->data || b->len == 0 ? 0 : tpl_oom(t);
}

int tpl_tv_str(struct tpl *t, int line, const struct tv *v, struct mini_buf *b)
{
    int r = 0;
    switch (v->kind) {
    case TV_UNDEF:
        if (!v->sub)
            return tpl_tv_undef_error(t, line, v);
        return 0;
    case TV_NONE: r = mini_buf_puts(b, "None"); break;
    case TV_BOOL: r = mini_buf_puts(b, v->u.b ? "True" : "False"); break;
    case TV_INT: r = mini_buf_printf(b, "%" PRId64, v->u.i); break;
    case TV_FLOAT: tpl_fmt_float(b, v->u.f); break;
    case TV_STR: r = mini_buf_append(b, v->u.s.p, v->u.s.n); break;
    case TV_LOOP:
    case TV_FUNC:
    case TV_GEN: r = tpl_describe(t, v, b); break;
    default: return tpl_tv_repr(t, line, v, b);
    }
    if (r < 0)
        return tpl_oom(t);
    return 0;
}

int tpl_tv_to_str(struct tpl *t, int line, const struct tv *v, struct tv *out)
{
    if (v->kind == TV_STR) {
        *out = *v;
        return 0;
    }
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (tpl_tv_str(t, line, v, &b) < 0)
        return -1;
    return tpl_tv_from_buf(t, line, &b, false, out);
}

/* ----------------------------------------------------------- comparison */

static int64_t num_i(const struct tv *v) { return v->kind == TV_INT ? v->u.i : (int64_t)v->u.b; }

/* Exact comparison of an int with a float: -1, 0, 1, or 2 when f is NaN. */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f))
        return 2;
    if (f >= 9223372036854775808.0)
        return -1;
    if (f < -9223372036854775808.0)
        return 1;
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    if (i != fi)
        return i < fi ? -1 : 1;
    return f > fl ? -1 : 0;
}

static int cmp_num(const struct tv *a, const struct tv *b)
{
    if (a->kind != TV_FLOAT && b->kind != TV_FLOAT) {
        int64_t x = num_i(a), y = num_i(b);
        return x < y ? -1 : x > y;
    }
    if (a->kind != TV_FLOAT)
        return cmp_int_float(num_i(a), b->u.f);
    if (b->kind != TV_FLOAT) {
        int c = cmp_int_float(num_i(b), a->u.f);
        return c == 2 ? 2 : -c;
    }
    double x = a->u.f, y = b->u.f;
    if (isnan(x) || isnan(y))
        return 2;
    return x < y ? -1 : x > y;
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn;
}

static int eq_rec(struct tpl *t, int line, const struct tv *a, const struct tv *b, bool *out, int depth);

static int seq_contains(struct tpl *t, int line, const struct tseq *s, const struct tv *x, bool *out, int depth)
{
    for (size_t i = 0; i < s->n; i++) {
        if (eq_rec(t, line, &s->v[i], x, out, depth + 1) < 0)
            return -1;
        if (*out)
            return 0;
    }
    *out = false;
    return 0;
}

static int eq_rec(struct tpl *t, int line, const struct tv *a, const struct tv *b, bool *out, int depth)
{
    if (depth > TPL_MAX_DEPTH)
        return tpl_fail(t, line, "maximum recursion depth exceeded in comparison");
    if (tpl_step(t, line) < 0)
        return -1;
    if (tpl_tv_isstrict_undef(a))
        return tpl_tv_undef_error(t, line, a);
    if (tpl_tv_isstrict_undef(b))
        return tpl_tv_undef_error(t, line, b);
    *out = false;
    if (tpl_tv_isnum(a) && tpl_tv_isnum(b)) {
        *out = cmp_num(a, b) == 0;
        return 0;
    }
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case TV_UNDEF:
    case TV_NONE: *out = true; return 0;
    case TV_STR: *out = a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0; return 0;
    case TV_SEQ: {
        const struct tseq *x = a->u.seq, *y = b->u.seq;
        if (x == y && a->sub == b->sub) {
            *out = true;
            return 0;
        }
        bool lt = a->sub == SEQ_LIST || a->sub == SEQ_TUPLE || a->sub == SEQ_RANGE;
        if (a->sub != b->sub || x->n != y->n || a->sub == SEQ_VALUES)
            return 0;
        for (size_t i = 0; i < x->n; i++) {
            if (lt ? eq_rec(t, line, &x->v[i], &y->v[i], out, depth + 1) < 0
                   : seq_contains(t, line, y, &x->v[i], out, depth) < 0)
                return -1;
            if (!*out)
                return 0;
        }
        *out = true;
        return 0;
    }
    case TV_DICT: {
        const struct tdict *x = a->u.d, *y = b->u.d;
        if (x->n != y->n)
            return 0;
        for (size_t i = 0; i < x->n; i++) {
            long j = tpl_tv_dict_find(t, line, y, &x->k[i]);
            if (j < -1)
                return -1;
            if (j < 0)
                return 0;
            if (eq_rec(t, line, &x->v[i], &y->v[j], out, depth + 1) < 0)
                return -1;
            if (!*out)
                return 0;
        }
        *out = true;
        return 0;
    }
    case TV_NS: *out = a->u.d == b->u.d; return 0;
    case TV_LOOP: *out = a->u.loop == b->u.loop; return 0;
    case TV_GEN: *out = a->u.gen == b->u.gen; return 0;
    default: *out = a->u.fn == b->u.fn; return 0;
    }
}

int tpl_tv_eq(struct tpl *t, int line, const struct tv *a, const struct tv *b, bool *out)
{
    return eq_rec(t, line, a, b, out, 0);
}

static int cmp_rec(struct tpl *t, int line, const struct tv *a, const struct tv *b, int *out, int depth)
{
    if (depth > TPL_MAX_DEPTH)
        return tpl_fail(t, line, "maximum recursion depth exceeded in comparison");
    if (tpl_tv_isstrict_undef(a))
        return tpl_tv_undef_error(t, line, a);
    if (tpl_tv_isstrict_undef(b))
        return tpl_tv_undef_error(t, line, b);
    if (tpl_tv_isnum(a) && tpl_tv_isnum(b)) {
        *out = cmp_num(a, b);
        return 0;
    }
    if (a->kind == TV_STR && b->kind == TV_STR) {
        *out = cmp_bytes(a->u.s.p, a->u.s.n, b->u.s.p, b->u.s.n);
        return 0;
    }
    if (a->kind == TV_SEQ && b->kind == TV_SEQ && a->sub == b->sub && (a->sub == SEQ_LIST || a->sub == SEQ_TUPLE)) {
        const struct tseq *x = a->u.seq, *y = b->u.seq;
        size_t n = x->n < y->n ? x->n : y->n;
        for (size_t i = 0; i < n; i++) {
            bool eq;
            if (eq_rec(t, line, &x->v[i], &y->v[i], &eq, depth + 1) < 0)
                return -1;
            if (!eq)
                return cmp_rec(t, line, &x->v[i], &y->v[i], out, depth + 1);
        }
        *out = x->n < y->n ? -1 : x->n > y->n;
        return 0;
    }
    return tpl_fail(t, line, "ordering comparison not supported between instances of '%s' and '%s'", tpl_tv_type(a),
                    tpl_tv_type(b));
}

int tpl_tv_cmp(struct tpl *t, int line, const struct tv *a, const struct tv *b, int *out)
{
    return cmp_rec(t, line, a, b, out, 0);
}

int tpl_tv_len(struct tpl *t, int line, const struct tv *v, size_t *out)
{
    switch (v->kind) {
    case TV_UNDEF:
        if (!v->sub)
            return tpl_tv_undef_error(t, line, v);
        *out = 0;
        return 0;
    case TV_STR:
        if (tpl_work(t, line, v->u.s.n) < 0)
            return -1;
        *out = tpl_u8_count(v->u.s.p, v->u.s.n);
        return 0;
    case TV_SEQ: *out = v->u.seq->n; return 0;
    case TV_DICT: *out = v->u.d->n; return 0;
    default: break;
    }
    return tpl_fail(t, line, "object of type '%s' has no len()", tpl_tv_type(v));
}

int tpl_tv_iter(struct tpl *t, int line, const struct tv *v, struct tseq **out)
{
    switch (v->kind) {
    case TV_UNDEF: {
        if (!v->sub)
            return tpl_tv_undef_error(t, line, v);
        struct tseq *s = tpl_alloc(t, sizeof *s);
        if (!s)
            return -1;
        *out = s;
        return 0;
    }
    case TV_STR: {
        if (tpl_work(t, line, v->u.s.n) < 0)
            return -1;
        size_t n = tpl_u8_count(v->u.s.p, v->u.s.n), l;
        struct tv r = { 0 };
        if (tpl_tv_new_seq(t, n, SEQ_LIST, &r) < 0)
            return -1;
        size_t off = 0;
        for (size_t i = 0; i < n; i++, off += l) {
            tpl_u8_decode(v->u.s.p + off, v->u.s.n - off, &l);
            r.u.seq->v[i] = tpl_tv_strn(v->u.s.p + off, l);
        }
        *out = r.u.seq;
        return 0;
    }
    case TV_SEQ: *out = v->u.seq; return 0;
    case TV_DICT: {
        struct tseq *s = tpl_alloc(t, sizeof *s);
        if (!s)
            return -1;
        s->n = v->u.d->n;
        s->v = v->u.d->k;
        *out = s;
        return 0;
    }
    case TV_GEN: {
        struct tgen *g = v->u.gen;
        struct tseq *s = tpl_alloc(t, sizeof *s);
        if (!s || tpl_tv_gen_ready(t, line, g) < 0)
            return -1;
        s->n = g->seq->n - g->pos;
        s->v = s->n ? g->seq->v + g->pos : NULL;
        g->pos = g->seq->n;
        *out = s;
        return 0;
    }
    default: return tpl_fail(t, line, "'%s' object is not iterable", tpl_tv_type(v));
    }
}

int tpl_tv_gen_ready(struct tpl *t, int line, struct tgen *g)
{
    if (g->seq)
        return 0;
    struct tv r;
    const struct tpl_builtin *fn = g->fn;
    if (!fn)
        return tpl_fail(t, line, "generator already failed");
    g->fn = NULL;
    if (fn->fn(t, g->line ? g->line : line, &g->input, &g->args, &r) < 0)
        return -1;
    if (r.kind != TV_SEQ)
        return tpl_fail(t, line, "internal error: generator filter returned %s", tpl_tv_type(&r));
    g->seq = r.u.seq;
    return 0;
}

/* ----------------------------------------------------------------- JSON */

static void json_str(struct mini_buf *b, const char *p, size_t n)
{
    mini_buf_putc(b, '"');
    size_t l;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        switch (c) {
        case '"': mini_buf_puts(b, "\\\""); continue;
        case '\\': mini_buf_puts(b, "\\\\"); continue;
        case '\n': mini_buf_puts(b, "\\n"); continue;
        case '\r': mini_buf_puts(b, "\\r"); continue;
        case '\t': mini_buf_puts(b, "\\t"); continue;
        case '\b': mini_buf_puts(b, "\\b"); continue;
        case '\f': mini_buf_puts(b, "\\f"); continue;
        case '<':
        case '>':
        case '&':
        case '\'': /* htmlsafe_json_dumps */ mini_buf_printf(b, "\\u%04x", c); continue;
        default: break;
        }
        if (c >= 0x20 && c < 0x7F) {
            mini_buf_putc(b, (char)c);
        } else if (c < 0x10000) {
            mini_buf_printf(b, "\\u%04x", c);
        } else {
            c -= 0x10000;
            mini_buf_printf(b, "\\u%04x\\u%04x", 0xD800 | (c >> 10), 0xDC00 | (c & 0x3FF));
        }
    }
    mini_buf_putc(b, '"');
}

static void json_float(struct mini_buf *b, double f)
{
    if (isnan(f))
        mini_buf_puts(b, "NaN");
    else if (isinf(f))
        mini_buf_puts(b, f < 0 ? "-Infinity" : "Infinity");
    else
        tpl_fmt_float(b, f);
}

struct json_ctx {
    struct tpl *t;
    int line;
    const char *indent;
    size_t ilen;
};

static void json_newline(struct json_ctx *c, struct mini_buf *b, int level)
{
    mini_buf_putc(b, '\n');
    for (int i = 0; i < level; i++)
        mini_buf_append(b, c->indent, c->ilen);
}

static int json_sort_keys(struct json_ctx *c, const struct tdict *d, size_t *idx)
{
    /* Insertion sort by key (Python's sorted(dct.items()); keys are unique). */
    for (size_t i = 0; i < d->n; i++) {
        size_t j = i;
        while (j > 0) {
            int r;
            if (tpl_step(c->t, c->line) < 0 || tpl_tv_cmp(c->t, c->line, &d->k[idx[j - 1]], &d->k[i], &r) < 0)
                return -1;
            if (r <= 0)
                break;
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return 0;
}

static int json_rec(struct json_ctx *c, const struct tv *v, struct mini_buf *b, int level)
{
    struct tpl *t = c->t;
    if (level > TPL_MAX_DEPTH)
        return tpl_fail(t, c->line, "maximum recursion depth exceeded in tojson");
    if (tpl_step(t, c->line) < 0)
        return -1;
    if (b->len > tpl_mem_limit(t))
        return tpl_fail(t, c->line, "value too large for tojson");
    switch (v->kind) {
    case TV_NONE: mini_buf_puts(b, "null"); return 0;
    case TV_BOOL: mini_buf_puts(b, v->u.b ? "true" : "false"); return 0;
    case TV_INT: mini_buf_printf(b, "%" PRId64, v->u.i); return 0;
    case TV_FLOAT: json_float(b, v->u.f); return 0;
    case TV_STR: json_str(b, v->u.s.p, v->u.s.n); return 0;
    case TV_SEQ:
        if (v->sub != SEQ_LIST && v->sub != SEQ_TUPLE)
            break;
        if (v->u.seq->n == 0) {
            mini_buf_puts(b, "[]");
            return 0;
        }
        mini_buf_putc(b, '[');
        for (size_t i = 0; i < v->u.seq->n; i++) {
            if (i)
                mini_buf_puts(b, c->indent ? "," : ", ");
            if (c->indent)
                json_newline(c, b, level + 1);
            if (json_rec(c, &v->u.seq->v[i], b, level + 1) < 0)
                return -1;
        }
        if (c->indent)
            json_newline(c, b, level);
        mini_buf_putc(b, ']');
        return 0;
    case TV_DICT: {
        const struct tdict *d = v->u.d;
        if (d->n == 0) {
            mini_buf_puts(b, "{}");
            return 0;
        }
        for (size_t i = 0; i < d->n; i++) {
            uint8_t k = d->k[i].kind;
            if (k != TV_STR && k != TV_INT && k != TV_FLOAT && k != TV_BOOL && k != TV_NONE)
                return tpl_fail(t, c->line, "keys must be str, int, float, bool or None, not %s",
                                tpl_tv_type(&d->k[i]));
        }
        size_t *idx = tpl_alloc(t, d->n * sizeof *idx);
        if (!idx || json_sort_keys(c, d, idx) < 0)
            return -1;
        mini_buf_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            const struct tv *k = &d->k[idx[i]];
            if (i)
                mini_buf_puts(b, c->indent ? "," : ", ");
            if (c->indent)
                json_newline(c, b, level + 1);
            if (k->kind == TV_STR) {
                json_str(b, k->u.s.p, k->u.s.n);
            } else {
                mini_buf_putc(b, '"');
                if (k->kind == TV_FLOAT)
                    json_float(b, k->u.f);
                else if (k->kind == TV_INT)
                    mini_buf_printf(b, "%" PRId64, k->u.i);
                else
                    mini_buf_puts(b, k->kind == TV_NONE ? "null" : k->u.b ? "true" : "false");
                mini_buf_putc(b, '"');
            }
            mini_buf_puts(b, ": ");
            if (json_rec(c, &d->v[idx[i]], b, level + 1) < 0)
                return -1;
        }
        if (c->indent)
            json_newline(c, b, level);
        mini_buf_putc(b, '}');
        return 0;
    }
    default: break;
    }
    if (tpl_tv_isstrict_undef(v))
        return tpl_tv_undef_error(t, c->line, v);
    return tpl_fail(t, c->line, "Object of type %s is not JSON serializable", tpl_tv_type(v));
}

int tpl_tv_tojson(struct tpl *t, int line, const struct tv *v, const char *indent, size_t ilen, struct mini_buf *b)
{
    struct json_ctx c = { t, line, indent, ilen };
    if (json_rec(&c, v, b, 0) < 0)
        return -1;
    return b->data ? 0 : tpl_oom(t);
}

/* ------------------------------------------------------ number parsing */

static void strip_ws(const char **p, size_t *n)
{
    size_t l;
    while (*n) {
        uint32_t c = tpl_u8_decode(*p, *n, &l);
        if (!tpl_uni_isspace(c))
            break;
        *p += l;
        *n -= l;
    }
    while (*n) {
        size_t i = tpl_u8_prev(*p, *n);
        uint32_t c = tpl_u8_decode(*p + i, *n - i, &l);
        if (!tpl_uni_isspace(c))
            break;
        *n = i;
    }
}

/* Digits with single underscores between them; appends the digits to out. */
static size_t scan_digits(const char *p, size_t n, char *out, size_t *olen, size_t omax)
{
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (*olen < omax)
            out[(*olen)++] = p[i];
        i++;
        if (i + 1 < n && p[i] == '_' && p[i + 1] >= '0' && p[i + 1] <= '9')
            i++;
    }
    return i;
}

static bool word_ieq(const char *p, size_t n, const char *w)
{
    size_t wl = strlen(w);
    if (n != wl)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((p[i] | 0x20) != w[i])
            return false;
    return true;
}

int tpl_parse_float(const char *p, size_t n, double *out)
{
    strip_ws(&p, &n);
    if (n > SIZE_MAX - 4)
        return -2;
    _cleanup_free_ char *buf = malloc(n + 4); /* the digits, '-', '.', 'e', sign */
    if (!buf)
        return -2;
    size_t bl = 0, i = 0, cap = n + 3;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    if (word_ieq(p + i, n - i, "inf") || word_ieq(p + i, n - i, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (word_ieq(p + i, n - i, "nan")) {
        *out = neg ? -NAN : NAN;
        return 0;
    }
    if (neg)
        buf[bl++] = '-';
    size_t mant = 0, d = scan_digits(p + i, n - i, buf, &bl, cap);
    i += d;
    mant += d;
    if (i < n && p[i] == '.') {
        buf[bl++] = '.';
        i++;
        d = scan_digits(p + i, n - i, buf, &bl, cap);
        i += d;
        mant += d;
    }
    if (mant == 0)
        return -1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        buf[bl++] = 'e';
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            buf[bl++] = p[i++];
        d = scan_digits(p + i, n - i, buf, &bl, cap);
        if (d == 0)
            return -1;
        i += d;
    }
    if (i != n)
        return -1; /* trailing junk */
    buf[bl] = 0;
    *out = strtod(buf, NULL);
    return 0;
}

int tpl_parse_int(const char *p, size_t n, int base, int64_t *out, bool *overflow)
{
    *overflow = false;
    strip_ws(&p, &n);
    size_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    if (i + 1 < n && p[i] == '0') {
        char x = (char)(p[i + 1] | 0x20);
        int pb = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            i += 2;
            if (i < n && p[i] == '_') /* "0x_1f" */
                i++;
        }
    }
    bool base0_decimal = base == 0;
    if (base == 0)
        base = 10;
    if (base < 2 || base > 36 || i >= n)
        return -1;
    uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool nonzero = false;
    size_t start = i;
    while (i < n) {
        int dv;
        char c = p[i];
        if (c >= '0' && c <= '9')
            dv = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
            dv = (c | 0x20) - 'a' + 10;
        else if (c == '_' && i > start && i + 1 < n && p[i + 1] != '_') {
            i++;
            continue;
        } else
            return -1;
        if (dv >= base)
            return -1;
        if (dv)
            nonzero = true;
        if (acc > (lim - (uint64_t)dv) / (uint64_t)base)
            *overflow = true;
        else
            acc = acc * (uint64_t)base + (uint64_t)dv;
        i++;
    }
    /* int("010", 0) is an error: base 0 decimals may not have leading zeros. */
    if (base0_decimal && p[start] == '0' && nonzero)
        return -1;
    if (*overflow)
        return 0;
    *out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return 0;
}
