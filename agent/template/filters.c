/* The filters, and looking them up by name. */
#include "builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

static int tpl_call_filter_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                                   struct callargs *a, struct tv *out);

/* make_attrgetter(): follow "a.b.0" (digit parts as ints) through getitem. */
static int attr_get(struct tpl *t, int line, const struct tv *item, const struct tv *attr, const struct tv *dflt,
                    bool lower, struct tv *out)
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
        return tpl_str_case(t, line, out, CASE_LOWER, out);
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
            if (tpl_get_int(t, line, &p[0], &w) < 0)
                return -1;
            if (w > 0 && (tpl_charge(t, line, (size_t)w) < 0 || tpl_buf_fill(&ind, ' ', (size_t)w) < 0))
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
    case TV_UNDEF: return tpl_tv_undef_error(t, line, v); /* Undefined.__int__ raises */
    case TV_INT: *out = *v; return 0;
    case TV_BOOL: *out = tpl_tv_int(v->u.b); return 0;
    case TV_FLOAT:
        if (isnan(v->u.f))
            break; /* ValueError; float(nan) again: default */
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
                ok = false; /* TypeError: not an index */
        }
        if (ok && base != 0 && (base < 2 || base > 36))
            ok = false; /* ValueError */
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
    default: break; /* TypeError twice */
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
    default: break;
    }
    *out = dflt;
    return 0;
}

FILTER(f_string)
{
    NOARGS("string");
    return tpl_soft_str(t, line, v, out);
}

static int case_filter(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out, const char *name,
                       int how)
{
    if (tpl_bind(t, line, name, a, NULL, 0, NULL, NULL) < 0)
        return -1;
    struct tv s;
    if (tpl_soft_str(t, line, v, &s) < 0)
        return -1;
    return tpl_str_case(t, line, &s, how, out);
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
    if (tpl_soft_str(t, line, v, &s) < 0)
        return -1;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, l;
    for (size_t i = 0; i < n;) {
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
    if (tpl_soft_str(t, line, v, &s) < 0)
        return -1;
    const struct tv *chars = has[0] && p[0].kind != TV_NONE ? &p[0] : NULL;
    if (chars && tpl_need_str(t, line, chars, "strip arg") < 0)
        return -1;
    size_t b, e;
    tpl_strip_span(s.u.s.p, s.u.s.n, chars, 3, &b, &e);
    return tpl_new_str(t, line, s.u.s.p + b, e - b, s.sub, out);
}

FILTER(f_replace)
{
    BIND("replace", "old", "new", "count");
    if (!has[0] || !has[1])
        return tpl_fail(t, line, "replace() missing required arguments");
    struct tv s, o, nw;
    int64_t count = -1;
    if (tpl_str_of(t, line, v, &s) < 0 || tpl_str_of(t, line, &p[0], &o) < 0 || tpl_str_of(t, line, &p[1], &nw) < 0)
        return -1;
    if (has[2] && p[2].kind != TV_NONE && tpl_get_int(t, line, &p[2], &count) < 0)
        return -1;
    s.sub = 0;
    return tpl_str_replace(t, line, &s, &o, &nw, count, false, out);
}

FILTER(f_join)
{
    BIND("join", "d", "attribute");
    struct tv sep = tpl_tv_strn("", 0);
    if (has[0] && tpl_str_of(t, line, &p[0], &sep) < 0)
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
    if (v->kind == TV_GEN) { /* next(gen): takes one item */
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
    if (tpl_dict_view(t, v->u.d, SEQ_ITEMS, out) < 0)
        return -1;
    out->sub = SEQ_LIST;
    return 0;
}

FILTER(f_escape)
{
    NOARGS("escape");
    return tpl_escape_value(t, line, v, out);
}

FILTER(f_forceescape)
{
    NOARGS("forceescape");
    struct tv s;
    if (tpl_str_of(t, line, v, &s) < 0)
        return -1;
    s.sub = 0;
    return tpl_escape_value(t, line, &s, out);
}

FILTER(f_safe)
{
    NOARGS("safe");
    if (tpl_str_of(t, line, v, out) < 0)
        return -1;
    out->sub = 1;
    return 0;
}

FILTER(f_center)
{
    BIND("center", "width");
    int64_t width = 80;
    if (has[0] && tpl_get_int(t, line, &p[0], &width) < 0)
        return -1;
    struct tv s;
    if (tpl_soft_str(t, line, v, &s) < 0)
        return -1;
    return tpl_str_pad(t, line, &s, width, NULL, 0, out);
}

FILTER(f_indent)
{
    BIND("indent", "width", "first", "blank");
    _cleanup_buf_ struct mini_buf ind = MINI_BUF_INIT, b = MINI_BUF_INIT;
    if (has[0] && p[0].kind == TV_STR) {
        mini_buf_append(&ind, p[0].u.s.p, p[0].u.s.n);
    } else {
        int64_t w = 4;
        if (has[0] && tpl_get_int(t, line, &p[0], &w) < 0)
            return -1;
        if (w > 0 && (tpl_charge(t, line, (size_t)w) < 0 || tpl_buf_fill(&ind, ' ', (size_t)w) < 0))
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
    if (tpl_str_splitlines(t, line, &sv, false, &lines) < 0)
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
    if (has[0] && tpl_get_int(t, line, &p[0], &length) < 0)
        return -1;
    if (has[1] && tpl_tv_truth(t, line, &p[1], &killwords) < 0)
        return -1;
    if (has[2]) {
        if (tpl_need_str(t, line, &p[2], "end") < 0)
            return -1;
        end = p[2];
    }
    if (has[3] && p[3].kind != TV_NONE && tpl_get_int(t, line, &p[3], &leeway) < 0)
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
        const char *sp = tpl_rfind_bytes(v->u.s.p, cut, " ", 1);
        mini_buf_append(&b, v->u.s.p, sp ? (size_t)(sp - v->u.s.p) : cut);
    }
    mini_buf_append(&b, end.u.s.p, end.u.s.n);
    return tpl_tv_from_buf(t, line, &b, v->sub, out);
}

FILTER(f_wordcount)
{
    NOARGS("wordcount");
    struct tv s;
    if (tpl_str_of(t, line, v, &s) < 0)
        return -1;
    int64_t words = 0;
    bool in = false;
    size_t l;
    for (size_t i = 0; i < s.u.s.n; i += l) {
        uint32_t c = tpl_u8_decode(s.u.s.p + i, s.u.s.n - i, &l);
        bool w = c == '_' || tpl_uni_is(c, UNI_ALNUM); /* re's \w */
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
                k = i - 1; /* a stray byte */
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
    g->type = v->kind == TV_DICT ? "dict_reversekeyiterator"
        : v->sub == SEQ_RANGE    ? "range_iterator"
        : v->sub == SEQ_LIST     ? "list_reverseiterator"
                                 : "reversed";
    out->kind = TV_GEN;
    out->sub = 0;
    out->u.gen = g;
    return 0;
}

/* Stable merge sort of items[] by keys[] (Python's sorted()). */
static int sort_rec(struct tpl *t, int line, struct tv *keys, struct tv *items, struct tv *tk, struct tv *ti, size_t n,
                    bool reverse)
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
static int make_keys(struct tpl *t, int line, const struct tseq *items, const struct tv *attr, bool lower, bool multi,
                     struct tv **keys)
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
    if (tpl_tv_iter(t, line, v, &items) < 0 || make_keys(t, line, items, has[2] ? &p[2] : NULL, !cs, true, &keys) < 0 ||
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
    if (tpl_dict_view(t, v->u.d, SEQ_ITEMS, &items) < 0)
        return -1;
    size_t n = items.u.seq->n;
    struct tv *keys = n ? tpl_alloc(t, n * sizeof *keys) : NULL;
    if (n && !keys)
        return -1;
    for (size_t i = 0; i < n; i++) {
        keys[i] = items.u.seq->v[i].u.seq->v[pos];
        if (!cs && keys[i].kind == TV_STR && tpl_str_case(t, line, &keys[i], CASE_LOWER, &keys[i]) < 0)
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
        make_keys(t, line, items, has[1] ? &p[1] : NULL, !cs, false, &keys) < 0 || tpl_tv_new_dict(t, 0, &seen) < 0 ||
        tpl_tv_new_seq(t, items->n, SEQ_LIST, out) < 0)
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
    if (has[0] && tpl_get_int(t, line, &p[0], &prec) < 0)
        return -1;
    int method = 0; /* common, ceil, floor */
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
    if (tpl_get_int(t, line, &p[0], &lc) < 0)
        return -1;
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    /* Jinja's loop, literally: a batch is yielded when it holds linecount
     * items, checked before each item is added (so linecount 0 yields an
     * empty batch first); the last one is padded with fill_with. */
    _cleanup_(tpl_seq_freep) struct tseq acc = { 0 };
    size_t cap = 0, from = 0;
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
            return -1;
        for (size_t k = 0; k < total; k++)
            batch.u.seq->v[k] = k < len ? items->v[from + k] : p[1];
        if (tpl_grow(t, (void **)&acc.v, &cap, acc.n + 1, sizeof *acc.v) < 0)
            return -1;
        acc.v[acc.n++] = batch;
        from = i;
    }
    if (tpl_tv_new_seq(t, acc.n, SEQ_LIST, out) < 0)
        return -1;
    if (acc.n)
        memcpy(out->u.seq->v, acc.v, acc.n * sizeof *acc.v);
    return 0;
}

FILTER(f_slice)
{
    BIND("slice", "slices", "fill_with");
    int64_t slices = 0;
    if (!has[0])
        return tpl_fail(t, line, "slice() missing required argument 'slices'");
    if (tpl_get_int(t, line, &p[0], &slices) < 0)
        return -1;
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    if (slices == 0)
        return tpl_fail(t, line, "integer division or modulo by zero");
    if (slices < 0) /* Jinja2 loops over range(slices): nothing */
        return tpl_tv_new_seq(t, 0, SEQ_LIST, out);
    int64_t len = (int64_t)items->n, per = len / slices, extra = len % slices, offset = 0;
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
    if (tpl_soft_str(t, line, v, &s) < 0)
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
            tpl_call_filter_by_name(t, line, &a->v[0], &items->v[i], &rest, &out->u.seq->v[i]) < 0)
            return -1;
    return 0;
}

static int select_reject(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out, bool want,
                         bool by_attr)
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
            if (tpl_call_test_by_name(t, line, &a->v[off], &x, &rest, &r) < 0)
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
    { "abs", f_abs, false },
    { "attr", f_attr, false },
    { "batch", f_batch, true },
    { "capitalize", f_capitalize, false },
    { "center", f_center, false },
    { "count", f_length, false },
    { "d", f_default, false },
    { "default", f_default, false },
    { "dictsort", f_dictsort, false },
    { "e", f_escape, false },
    { "escape", f_escape, false },
    { "first", f_first, false },
    { "float", f_float, false },
    { "forceescape", f_forceescape, false },
    { "format", f_format, false },
    { "indent", f_indent, false },
    { "int", f_int, false },
    { "items", f_items, true },
    { "join", f_join, false },
    { "last", f_last, false },
    { "length", f_length, false },
    { "list", f_list, false },
    { "lower", f_lower, false },
    { "map", f_map, true },
    { "max", f_max, false },
    { "min", f_min, false },
    { "reject", f_reject, true },
    { "rejectattr", f_rejectattr, true },
    { "replace", f_replace, false },
    { "reverse", f_reverse, false },
    { "round", f_round, false },
    { "safe", f_safe, false },
    { "select", f_select, true },
    { "selectattr", f_selectattr, true },
    { "slice", f_slice, true },
    { "sort", f_sort, false },
    { "string", f_string, false },
    { "sum", f_sum, false },
    { "title", f_title, false },
    { "tojson", f_tojson, false },
    { "trim", f_trim, false },
    { "truncate", f_truncate, false },
    { "unique", f_unique, true },
    { "upper", f_upper, false },
    { "wordcount", f_wordcount, false },
};

/* Call a filter; a lazy one becomes a generator that runs when consumed. */
int tpl_apply_filter(struct tpl *t, int line, const struct tpl_builtin *f, const struct tv *v, struct callargs *a,
                     struct tv *out)
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
    "filesizeformat", "groupby", "mark_unsafe", "pprint",  "random", "striptags",
    "urlencode",      "urlize",  "wordwrap",    "xmlattr", NULL,
};

const struct tpl_builtin *tpl_find_filter(const char *name, size_t n)
{
    return tpl_find_builtin(filters, MINI_ARRAY_SIZE(filters), name, n);
}

/* Call the filter or the test named by a string value (map, select, ...). */
static int tpl_call_filter_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v,
                                   struct callargs *a, struct tv *out)
{
    if (name->kind != TV_STR)
        return tpl_fail(t, line, "filter name must be a string");
    const struct tpl_builtin *f = tpl_find_filter(name->u.s.p, name->u.s.n);
    if (!f) {
        for (size_t i = 0; missing_filters[i]; i++)
            if (strlen(missing_filters[i]) == name->u.s.n && memcmp(missing_filters[i], name->u.s.p, name->u.s.n) == 0)
                return tpl_fail(t, line, "the '%s' filter is not supported", missing_filters[i]);
        return tpl_fail(t, line, "No filter named '%.*s'.", (int)name->u.s.n, name->u.s.p);
    }
    return tpl_apply_filter(t, line, f, v, a, out);
}
