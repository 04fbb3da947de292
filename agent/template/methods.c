/* Callables: the methods of str, dict, list, tuple and range, the loop
 * object's, the global functions (range, dict, namespace, ...), and how a
 * call binds and runs them. */
#include "builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

struct method {
    const char *name;
    int id;
};

static const struct method str_methods[] = {
    { "capitalize", S_CAPITALIZE },
    { "casefold", F_UNSUPPORTED },
    { "center", S_CENTER },
    { "count", S_COUNT },
    { "encode", F_UNSUPPORTED },
    { "endswith", S_ENDSWITH },
    { "expandtabs", F_UNSUPPORTED },
    { "find", S_FIND },
    { "format", F_UNSUPPORTED },
    { "format_map", F_UNSUPPORTED },
    { "index", S_INDEX },
    { "isalnum", S_ISALNUM },
    { "isalpha", S_ISALPHA },
    { "isascii", S_ISASCII },
    { "isdecimal", S_ISDECIMAL },
    { "isdigit", S_ISDIGIT },
    { "isidentifier", F_UNSUPPORTED },
    { "islower", S_ISLOWER },
    { "isnumeric", S_ISNUMERIC },
    { "isprintable", F_UNSUPPORTED },
    { "isspace", S_ISSPACE },
    { "istitle", F_UNSUPPORTED },
    { "isupper", S_ISUPPER },
    { "join", S_JOIN },
    { "ljust", S_LJUST },
    { "lower", S_LOWER },
    { "lstrip", S_LSTRIP },
    { "maketrans", F_UNSUPPORTED },
    { "partition", S_PARTITION },
    { "removeprefix", S_REMOVEPREFIX },
    { "removesuffix", S_REMOVESUFFIX },
    { "replace", S_REPLACE },
    { "rfind", S_RFIND },
    { "rindex", S_RINDEX },
    { "rjust", S_RJUST },
    { "rpartition", S_RPARTITION },
    { "rsplit", S_RSPLIT },
    { "rstrip", S_RSTRIP },
    { "split", S_SPLIT },
    { "splitlines", S_SPLITLINES },
    { "startswith", S_STARTSWITH },
    { "strip", S_STRIP },
    { "swapcase", F_UNSUPPORTED },
    { "title", S_TITLE },
    { "translate", F_UNSUPPORTED },
    { "upper", S_UPPER },
    { "zfill", S_ZFILL },
    { NULL, 0 },
};

static const struct method dict_methods[] = {
    { "clear", F_UNSUPPORTED },
    { "copy", D_COPY },
    { "fromkeys", F_UNSUPPORTED },
    { "get", D_GET },
    { "items", D_ITEMS },
    { "keys", D_KEYS },
    { "pop", F_UNSUPPORTED },
    { "popitem", F_UNSUPPORTED },
    { "setdefault", F_UNSUPPORTED },
    { "update", F_UNSUPPORTED },
    { "values", D_VALUES },
    { NULL, 0 },
};

static const struct method list_methods[] = {
    { "append", F_UNSUPPORTED }, { "clear", F_UNSUPPORTED },   { "copy", Q_COPY },          { "count", Q_COUNT },
    { "extend", F_UNSUPPORTED }, { "index", Q_INDEX },         { "insert", F_UNSUPPORTED }, { "pop", F_UNSUPPORTED },
    { "remove", F_UNSUPPORTED }, { "reverse", F_UNSUPPORTED }, { "sort", F_UNSUPPORTED },   { NULL, 0 },
};

static const struct method tuple_methods[] = {
    { "count", Q_COUNT },
    { "index", Q_INDEX },
    { NULL, 0 },
};

static const struct method view_methods[] = {
    { "isdisjoint", F_UNSUPPORTED },
    { "mapping", F_UNSUPPORTED },
    { NULL, 0 },
};

bool tpl_method(const struct tv *obj, const char *name, size_t len, int *id, const char **mname)
{
    const struct method *m = NULL;
    switch (obj->kind) {
    case TV_STR: m = str_methods; break;
    case TV_DICT: m = dict_methods; break;
    case TV_SEQ:
        m = obj->sub == SEQ_LIST                             ? list_methods
            : obj->sub == SEQ_TUPLE || obj->sub == SEQ_RANGE ? tuple_methods
                                                             : view_methods;
        break;
    default: return false;
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
    default: return mini_buf_printf(b, "<built-in method %s of %s object>", f->name, tpl_tv_type(&f->self));
    }
}

/* ------------------------------------------------------ string methods */

static int str_split(struct tpl *t, int line, const struct tv *s, const struct tv *sep, int64_t maxsplit, bool right,
                     struct tv *out)
{
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    _cleanup_(tpl_seq_freep) struct tseq tmp = { 0 };
    size_t cap = 0;
#define ADD(ptr, len)                                                         \
    do {                                                                      \
        if (tpl_grow(t, (void **)&tmp.v, &cap, tmp.n + 1, sizeof *tmp.v) < 0) \
            return -1;                                                        \
        tmp.v[tmp.n] = tpl_tv_strn((ptr), (len));                             \
        tmp.v[tmp.n++].sub = s->sub;                                          \
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
        if (sep->u.s.n == 0)
            return tpl_fail(t, line, "empty separator");
        const char *q = sep->u.s.p;
        size_t qn = sep->u.s.n;
        if (!right) {
            size_t i = 0;
            for (;;) {
                const char *f = (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) ? NULL : tpl_find(p + i, n - i, q, qn);
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
                const char *f = (maxsplit >= 0 && (int64_t)tmp.n == maxsplit) ? NULL : tpl_rfind_bytes(p, j, q, qn);
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
        return -1;
    for (size_t i = 0; i < tmp.n; i++)
        out->u.seq->v[i] = tmp.v[right ? tmp.n - 1 - i : i];
    return 0;
}

int tpl_str_splitlines(struct tpl *t, int line, const struct tv *s, bool keepends, struct tv *out)
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
int tpl_str_replace(struct tpl *t, int line, const struct tv *s, const struct tv *old, const struct tv *new,
                    int64_t count, bool markup, struct tv *out)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    const char *p = s->u.s.p;
    size_t n = s->u.s.n, l;
    int64_t done = 0;
    if (old->u.s.n == 0) {
        for (size_t i = 0;; i += l) {
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

int tpl_str_pad(struct tpl *t, int line, const struct tv *s, int64_t width, const struct tv *fill,
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
        tpl_buf_fill(&b, *fp, left);
        mini_buf_append(&b, s->u.s.p, s->u.s.n);
        tpl_buf_fill(&b, *fp, marg - left);
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

int tpl_str_case(struct tpl *t, int line, const struct tv *s, int how, struct tv *out)
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
        if (tpl_get_int(t, line, &a->v[first], &v) < 0)
            return -1;
        start = v < 0 ? (v + len < 0 ? 0 : v + len) : v;
    }
    if (a->n > first + 1 && a->v[first + 1].kind != TV_NONE) {
        if (tpl_get_int(t, line, &a->v[first + 1], &v) < 0)
            return -1;
        end = v < 0 ? (v + len < 0 ? 0 : v + len) : v > len ? len : v;
    }
    *cstart = start;
    if (start > len || end < start) {
        *bstart = *bend = SIZE_MAX; /* empty and out of range */
        return 0;
    }
    *bstart = tpl_u8_offset(s->u.s.p, s->u.s.n, (size_t)start);
    *bend = *bstart + tpl_u8_offset(s->u.s.p + *bstart, s->u.s.n - *bstart, (size_t)(end - start));
    return 0;
}

static int call_str_method(struct tpl *t, int line, const struct tfunc *f, struct callargs *a, struct tv *out)
{
    const struct tv *s = &f->self;
    const char *p = s->u.s.p;
    size_t n = s->u.s.n;
    struct tv vals[4];
    bool have[4];
    if (tpl_work(t, line, n) < 0)
        return -1;
    switch (f->id) {
    case S_LOWER:
    case S_UPPER:
    case S_TITLE:
    case S_CAPITALIZE:
        if (tpl_no_kwargs(t, line, f->name, a) < 0 || tpl_bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
            return -1;
        return tpl_str_case(t, line, s,
                            f->id == S_LOWER       ? CASE_LOWER
                                : f->id == S_UPPER ? CASE_UPPER
                                : f->id == S_TITLE ? CASE_TITLE
                                                   : CASE_CAPITALIZE,
                            out);
    case S_STRIP:
    case S_LSTRIP:
    case S_RSTRIP: {
        static const char *const names[] = { "chars" };
        if (tpl_no_kwargs(t, line, f->name, a) < 0 || tpl_bind(t, line, f->name, a, names, 1, vals, have) < 0)
            return -1;
        const struct tv *chars = have[0] && vals[0].kind != TV_NONE ? &vals[0] : NULL;
        if (chars && tpl_need_str(t, line, chars, "strip arg") < 0)
            return -1;
        size_t b, e;
        tpl_strip_span(p, n, chars, f->id == S_STRIP ? 3 : f->id == S_LSTRIP ? 1 : 2, &b, &e);
        return tpl_new_str(t, line, p + b, e - b, s->sub, out);
    }
    case S_STARTSWITH:
    case S_ENDSWITH: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
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
                return tpl_fail(t, line, "%s first arg must be str or a tuple of str, not %s", f->name,
                                tpl_tv_type(&list[i]));
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
    case S_FIND:
    case S_RFIND:
    case S_INDEX:
    case S_RINDEX:
    case S_COUNT: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > 3)
            return tpl_fail(t, line, "%s() takes from 1 to 3 arguments", f->name);
        if (tpl_need_str(t, line, &a->v[0], "substring") < 0)
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
                    for (size_t i = b;; c++) {
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
                                                      : tpl_rfind_bytes(p + b, e - b, sub->u.s.p, sub->u.s.n);
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
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 2 || a->n > 3)
            return tpl_fail(t, line, "replace() takes from 2 to 3 arguments");
        if (tpl_need_str(t, line, &a->v[0], "replace() argument 1") < 0 ||
            tpl_need_str(t, line, &a->v[1], "replace() argument 2") < 0)
            return -1;
        int64_t count = -1;
        if (a->n == 3 && tpl_get_int(t, line, &a->v[2], &count) < 0)
            return -1;
        struct tv o = a->v[0], nw = a->v[1];
        if (s->sub) { /* Markup.replace escapes its arguments */
            if (tpl_escape_value(t, line, &a->v[0], &o) < 0 || tpl_escape_value(t, line, &a->v[1], &nw) < 0)
                return -1;
        }
        return tpl_str_replace(t, line, s, &o, &nw, count, s->sub, out);
    }
    case S_SPLIT:
    case S_RSPLIT: {
        static const char *const names[] = { "sep", "maxsplit" };
        if (tpl_bind(t, line, f->name, a, names, 2, vals, have) < 0)
            return -1;
        const struct tv *sep = have[0] && vals[0].kind != TV_NONE ? &vals[0] : NULL;
        if (sep && tpl_need_str(t, line, sep, "separator") < 0)
            return -1;
        int64_t maxsplit = -1;
        if (have[1] && tpl_get_int(t, line, &vals[1], &maxsplit) < 0)
            return -1;
        return str_split(t, line, s, sep, maxsplit, f->id == S_RSPLIT, out);
    }
    case S_SPLITLINES: {
        static const char *const names[] = { "keepends" };
        if (tpl_bind(t, line, f->name, a, names, 1, vals, have) < 0)
            return -1;
        bool keep = false;
        if (have[0] && tpl_tv_truth(t, line, &vals[0], &keep) < 0)
            return -1;
        return tpl_str_splitlines(t, line, s, keep, out);
    }
    case S_JOIN: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
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
    case S_CENTER:
    case S_LJUST:
    case S_RJUST:
    case S_ZFILL: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > (f->id == S_ZFILL ? 1u : 2u))
            return tpl_fail(t, line, "%s() takes a width argument", f->name);
        int64_t width = 0;
        if (tpl_get_int(t, line, &a->v[0], &width) < 0)
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
            tpl_buf_fill(&b, '0', (size_t)width - len);
            mini_buf_append(&b, p + skip, n - skip);
            return tpl_tv_from_buf(t, line, &b, s->sub, out);
        }
        if (a->n == 2 && tpl_need_str(t, line, &a->v[1], "fill character") < 0)
            return -1;
        return tpl_str_pad(t, line, s, width, a->n == 2 ? &a->v[1] : NULL,
                           f->id == S_CENTER      ? 0
                               : f->id == S_LJUST ? 1
                                                  : 2,
                           out);
    }
    case S_REMOVEPREFIX:
    case S_REMOVESUFFIX: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n != 1 || tpl_need_str(t, line, &a->v[0], "argument") < 0)
            return a->n != 1 ? tpl_fail(t, line, "%s() takes exactly one argument", f->name) : -1;
        size_t l = a->v[0].u.s.n;
        if (l <= n && memcmp(f->id == S_REMOVEPREFIX ? p : p + n - l, a->v[0].u.s.p, l) == 0)
            return tpl_new_str(t, line, f->id == S_REMOVEPREFIX ? p + l : p, n - l, s->sub, out);
        *out = *s;
        return 0;
    }
    case S_PARTITION:
    case S_RPARTITION: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n != 1 || tpl_need_str(t, line, &a->v[0], "separator") < 0)
            return a->n != 1 ? tpl_fail(t, line, "%s() takes exactly one argument", f->name) : -1;
        if (a->v[0].u.s.n == 0)
            return tpl_fail(t, line, "empty separator");
        const struct tv *sep = &a->v[0];
        const char *x = f->id == S_PARTITION ? tpl_find(p, n, sep->u.s.p, sep->u.s.n)
                                             : tpl_rfind_bytes(p, n, sep->u.s.p, sep->u.s.n);
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
    default: { /* the is*() predicates */
        if (tpl_no_kwargs(t, line, f->name, a) < 0 || tpl_bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
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

int tpl_dict_view(struct tpl *t, const struct tdict *d, int kind, struct tv *out)
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
    if (tpl_no_kwargs(t, line, "range", a) < 0)
        return -1;
    if (a->n < 1 || a->n > 3)
        return tpl_fail(t, line, "range expected 1 to 3 arguments, got %zu", a->n);
    int64_t v[3] = { 0, 0, 1 };
    for (size_t i = 0; i < a->n; i++)
        if (tpl_get_int(t, line, &a->v[i], &v[a->n == 1 ? 1 : i]) < 0)
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
                    return tpl_fail(t, line,
                                    "dictionary update sequence element #%zu has length %zu; "
                                    "2 is required",
                                    i, pair->n);
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

int tpl_call(struct tpl *t, int line, const struct tv *callee, struct callargs *a, struct tv *out)
{
    if (callee->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, callee);
    if (callee->kind == TV_LOOP) {
        const struct tloop *l = callee->u.loop;
        if (!l->st->recursive)
            return tpl_fail(t, line,
                            "The loop must have the 'recursive' marker to be called "
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
    case G_RANGE: return make_range(t, line, a, out);
    case G_DICT: return make_dict(t, line, "dict", a, out);
    case G_NAMESPACE:
        if (make_dict(t, line, "namespace", a, out) < 0)
            return -1;
        for (size_t i = 0; i < out->u.d->n; i++)
            if (out->u.d->k[i].kind != TV_STR)
                return tpl_fail(t, line, "namespace keywords must be strings");
        out->kind = TV_NS;
        return 0;
    case L_CYCLE: {
        if (tpl_no_kwargs(t, line, "cycle", a) < 0)
            return -1;
        if (a->n == 0)
            return tpl_fail(t, line, "no items for cycling given");
        *out = a->v[f->self.u.loop->index0 % a->n];
        return 0;
    }
    case L_CHANGED: {
        struct tloop *l = f->self.u.loop;
        struct tv now;
        if (tpl_no_kwargs(t, line, "changed", a) < 0 || tpl_tv_new_seq(t, a->n, SEQ_TUPLE, &now) < 0)
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
        if (tpl_no_kwargs(t, line, "get", a) < 0)
            return -1;
        if (a->n < 1 || a->n > 2)
            return tpl_fail(t, line, "get expected 1 or 2 arguments, got %zu", a->n);
        long i = tpl_tv_dict_find(t, line, f->self.u.d, &a->v[0]);
        if (i < -1)
            return -1;
        *out = i >= 0 ? f->self.u.d->v[i] : a->n == 2 ? a->v[1] : tpl_tv_none();
        return 0;
    }
    case D_ITEMS:
    case D_KEYS:
    case D_VALUES:
    case D_COPY:
        if (tpl_no_kwargs(t, line, f->name, a) < 0 || tpl_bind(t, line, f->name, a, NULL, 0, vals, have) < 0)
            return -1;
        if (f->id == D_COPY) {
            if (tpl_tv_new_dict(t, f->self.u.d->n, out) < 0)
                return -1;
            memcpy(out->u.d->k, f->self.u.d->k, f->self.u.d->n * sizeof(struct tv));
            memcpy(out->u.d->v, f->self.u.d->v, f->self.u.d->n * sizeof(struct tv));
            out->u.d->n = f->self.u.d->n;
            return 0;
        }
        return tpl_dict_view(t, f->self.u.d,
                             f->id == D_ITEMS      ? SEQ_ITEMS
                                 : f->id == D_KEYS ? SEQ_KEYS
                                                   : SEQ_VALUES,
                             out);
    case Q_COUNT:
    case Q_INDEX: {
        if (tpl_no_kwargs(t, line, f->name, a) < 0)
            return -1;
        if (a->n < 1 || a->n > (f->id == Q_COUNT ? 1u : 3u))
            return tpl_fail(t, line, "%s() takes %s argument", f->name, f->id == Q_COUNT ? "exactly one" : "1 to 3");
        const struct tseq *s = f->self.u.seq;
        int64_t c = 0, from = 0, to = (int64_t)s->n;
        if (a->n > 1 && tpl_get_int(t, line, &a->v[1], &from) < 0)
            return -1;
        if (a->n > 2 && tpl_get_int(t, line, &a->v[2], &to) < 0)
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
        if (tpl_no_kwargs(t, line, f->name, a) < 0 || tpl_bind(t, line, f->name, a, NULL, 0, vals, have) < 0 ||
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
    default: return call_str_method(t, line, f, a, out);
    }
}
