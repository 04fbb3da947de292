/* Evaluation: statements and scopes, expressions, Jinja's getattr/getitem
 * rules and the compile-time constant folding of Jinja's optimizer.  The
 * operators are in ops.c, the builtins in filters.c, tests.c, methods.c. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

/* ------------------------------------------------------------- frames */

struct frame {
    struct frame *parent;
    size_t n, cap;
    const char **names;
    size_t *lens;
    struct tv *vals;
};

static struct tv *frame_find(struct frame *f, const char *name, size_t len)
{
    for (; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (f->lens[i] == len && memcmp(f->names[i], name, len) == 0)
                return &f->vals[i];
    return NULL;
}

static int frame_set(struct tpl *t, struct frame *f, const char *name, size_t len, const struct tv *v)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->lens[i] == len && memcmp(f->names[i], name, len) == 0) {
            f->vals[i] = *v;
            return 0;
        }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4;
        const char **nn = tpl_alloc(t, cap * sizeof *nn);
        size_t *nl = tpl_alloc(t, cap * sizeof *nl);
        struct tv *nv = tpl_alloc(t, cap * sizeof *nv);
        if (!nn || !nl || !nv)
            return -1;
        if (f->n) {
            memcpy(nn, f->names, f->n * sizeof *nn);
            memcpy(nl, f->lens, f->n * sizeof *nl);
            memcpy(nv, f->vals, f->n * sizeof *nv);
        }
        f->names = nn;
        f->lens = nl;
        f->vals = nv;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->lens[f->n] = len;
    f->vals[f->n] = *v;
    f->n++;
    return 0;
}

/* ------------------------------------------------------------ forward */

static int eval_expr(struct tpl *t, const struct node *n, struct tv *out);
static int exec_body(struct tpl *t, const struct body *b);

/* Code point index ranges: Python's slice.indices(). */
static void slice_adjust(int64_t len, bool has_start, int64_t start, bool has_stop, int64_t stop, int64_t step,
                         int64_t *rstart, int64_t *rstop, int64_t *rcount)
{
    if (step > 0) {
        if (!has_start)
            start = 0;
        else if (start < 0 && (start += len) < 0)
            start = 0;
        else if (start > len)
            start = len;
        if (!has_stop)
            stop = len;
        else if (stop < 0 && (stop += len) < 0)
            stop = 0;
        else if (stop > len)
            stop = len;
        *rcount = stop > start ? (stop - start - 1) / step + 1 : 0;
    } else {
        if (!has_start)
            start = len - 1;
        else if (start < 0 && (start += len) < 0)
            start = -1;
        else if (start >= len)
            start = len - 1;
        if (!has_stop)
            stop = -1;
        else if (stop < 0 && (stop += len) < 0)
            stop = -1;
        else if (stop >= len)
            stop = len - 1;
        *rcount = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
    }
    *rstart = start;
    *rstop = stop;
}

/* ------------------------------------------------------- attributes */

static const char *type_repr(const struct tv *v, char *buf, size_t size)
{
    if (v->kind == TV_NONE)
        return "None";
    if (v->kind == TV_NS)
        return "jinja2.utils.Namespace object";
    if (v->kind == TV_LOOP)
        return "jinja2.runtime.LoopContext object";
    if (v->kind == TV_STR && v->sub)
        return "markupsafe.Markup object";
    snprintf(buf, size, "%s object", tpl_tv_type(v));
    return buf;
}

struct tv tpl_undef_attr(struct tpl *t, const struct tv *obj, const char *name, size_t len)
{
    char buf[64];
    return tpl_tv_undef(t, "'%s' has no attribute '%.*s'", type_repr(obj, buf, sizeof buf),
                        (int)(len > 200 ? 200 : len), name);
}

static struct tv undef_item(struct tpl *t, int line, const struct tv *obj, const struct tv *key)
{
    char buf[64];
    if (key->kind == TV_STR)
        return tpl_undef_attr(t, obj, key->u.s.p, key->u.s.n);
    struct mini_buf b = MINI_BUF_INIT;
    if (key->kind == TV_INT || key->kind == TV_BOOL || key->kind == TV_FLOAT || key->kind == TV_NONE)
        tpl_tv_str(t, line, key, &b);
    else
        mini_buf_printf(&b, "<%s>", tpl_tv_type(key));
    struct tv u = tpl_tv_undef(t, "%s has no element %.*s", type_repr(obj, buf, sizeof buf),
                               (int)(b.len > 200 ? 200 : b.len), b.data ? b.data : "?");
    mini_buf_free(&b);
    return u;
}

/* Attribute lookup proper (Python's getattr); *found false when there is none. */
int tpl_py_getattr(struct tpl *t, int line, const struct tv *obj, const char *name, size_t len, struct tv *out,
                   bool *found)
{
    *found = false;
    switch (obj->kind) {
    case TV_SEQ:
        if (obj->sub == SEQ_RANGE) {
            const struct tseq *s = obj->u.seq;
            if (len == 5 && memcmp(name, "start", 5) == 0)
                *out = tpl_tv_int(s->start);
            else if (len == 4 && memcmp(name, "stop", 4) == 0)
                *out = tpl_tv_int(s->stop);
            else if (len == 4 && memcmp(name, "step", 4) == 0)
                *out = tpl_tv_int(s->step);
            else
                break;
            *found = true;
            return 0;
        }
        break;
    case TV_NS: {
        const struct tdict *d = obj->u.d;
        for (size_t i = 0; i < d->n; i++)
            if (d->k[i].u.s.n == len && memcmp(d->k[i].u.s.p, name, len) == 0) {
                *out = d->v[i];
                *found = true;
                return 0;
            }
        return 0;
    }
    case TV_LOOP: {
        const struct tloop *l = obj->u.loop;
        size_t n = l->items->n, i = l->index0;
        static const char *const names[] = {
            "index", "index0", "revindex", "revindex0", "first", "last",    "length",
            "depth", "depth0", "previtem", "nextitem",  "cycle", "changed",
        };
        size_t k;
        for (k = 0; k < MINI_ARRAY_SIZE(names); k++)
            if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
                break;
        *found = true;
        switch (k) {
        case 0: *out = tpl_tv_int((int64_t)i + 1); break;
        case 1: *out = tpl_tv_int((int64_t)i); break;
        case 2: *out = tpl_tv_int((int64_t)(n - i)); break;
        case 3: *out = tpl_tv_int((int64_t)(n - i - 1)); break;
        case 4: *out = tpl_tv_bool(i == 0); break;
        case 5: *out = tpl_tv_bool(i + 1 == n); break;
        case 6: *out = tpl_tv_int((int64_t)n); break;
        case 7: *out = tpl_tv_int((int64_t)l->depth0 + 1); break;
        case 8: *out = tpl_tv_int((int64_t)l->depth0); break;
        case 9: *out = i == 0 ? tpl_tv_undef(t, "there is no previous item") : l->items->v[i - 1]; break;
        case 10: *out = i + 1 >= n ? tpl_tv_undef(t, "there is no next item") : l->items->v[i + 1]; break;
        case 11: return tpl_make_func(t, L_CYCLE, obj, "cycle", out);
        case 12: return tpl_make_func(t, L_CHANGED, obj, "changed", out);
        default: *found = false; break;
        }
        return 0;
    }
    case TV_UNDEF: return tpl_tv_undef_error(t, line, obj);
    default: break;
    }
    int id;
    const char *mname;
    if (!tpl_method(obj, name, len, &id, &mname))
        return 0;
    *found = true;
    return tpl_make_func(t, id, obj, mname, out);
}

/* Jinja's Environment.getattr: the attribute, else the item. */
static int tpl_getattr(struct tpl *t, int line, const struct tv *obj, const char *name, size_t len, struct tv *out)
{
    bool found;
    if (tpl_py_getattr(t, line, obj, name, len, out, &found) < 0)
        return -1;
    if (found)
        return 0;
    if (obj->kind == TV_DICT) {
        struct tv key = tpl_tv_strn(name, len);
        long i = tpl_tv_dict_find(t, line, obj->u.d, &key);
        if (i < -1)
            return -1;
        if (i >= 0) {
            *out = obj->u.d->v[i];
            return 0;
        }
    }
    *out = tpl_undef_attr(t, obj, name, len);
    return 0;
}

static int slice_value(struct tpl *t, int line, const struct tv *obj, const struct node *sl, struct tv *out);

/* obj[key] by Python's rules; *found false when Python raises a LookupError
 * or TypeError (which Jinja turns into an attribute lookup or undefined). */
static int py_getitem(struct tpl *t, int line, const struct tv *obj, const struct tv *key, struct tv *out, bool *found)
{
    *found = false;
    if (obj->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, obj);
    if (obj->kind == TV_DICT) {
        if (tpl_tv_isstrict_undef(key))
            return tpl_tv_undef_error(t, line, key);
        long i = -1;
        /* An unhashable key is a TypeError, which Jinja turns into undefined. */
        if (tpl_tv_hashable(key) && (i = tpl_tv_dict_find(t, line, obj->u.d, key)) < -1)
            return -1;
        if (i >= 0) {
            *out = obj->u.d->v[i];
            *found = true;
        }
        return 0;
    }
    bool indexable = obj->kind == TV_STR ||
        (obj->kind == TV_SEQ && (obj->sub == SEQ_LIST || obj->sub == SEQ_TUPLE || obj->sub == SEQ_RANGE));
    if (!indexable || (key->kind != TV_INT && key->kind != TV_BOOL))
        return 0;
    int64_t idx = key->kind == TV_INT ? key->u.i : key->u.b;
    if (obj->kind == TV_STR) {
        if (tpl_work(t, line, obj->u.s.n) < 0)
            return -1;
        int64_t len = (int64_t)tpl_u8_count(obj->u.s.p, obj->u.s.n);
        if (idx < 0)
            idx += len;
        if (idx < 0 || idx >= len)
            return 0;
        size_t off = tpl_u8_offset(obj->u.s.p, obj->u.s.n, (size_t)idx), l;
        tpl_u8_decode(obj->u.s.p + off, obj->u.s.n - off, &l);
        *found = true;
        return tpl_new_str(t, line, obj->u.s.p + off, l, obj->sub, out);
    }
    int64_t len = (int64_t)obj->u.seq->n;
    if (idx < 0)
        idx += len;
    if (idx < 0 || idx >= len)
        return 0;
    *out = obj->u.seq->v[idx];
    *found = true;
    return 0;
}

/* Jinja's Environment.getitem: the item, else (for a str key) the attribute. */
int tpl_getitem(struct tpl *t, int line, const struct tv *obj, const struct tv *key, struct tv *out)
{
    bool found;
    if (py_getitem(t, line, obj, key, out, &found) < 0)
        return -1;
    if (found)
        return 0;
    if (key->kind == TV_STR) {
        if (tpl_py_getattr(t, line, obj, key->u.s.p, key->u.s.n, out, &found) < 0)
            return -1;
        if (found)
            return 0;
    }
    *out = undef_item(t, line, obj, key);
    return 0;
}

static int slice_value(struct tpl *t, int line, const struct tv *obj, const struct node *sl, struct tv *out)
{
    struct tv parts[3];
    bool has[3] = { false, false, false };
    int64_t vals[3] = { 0, 0, 1 };
    bool bad = false;
    const struct node *pn[3] = { sl->a, sl->b, sl->x };
    for (int i = 0; i < 3; i++) {
        if (!pn[i])
            continue;
        if (eval_expr(t, pn[i], &parts[i]) < 0)
            return -1;
        if (parts[i].kind == TV_NONE)
            continue;
        if (parts[i].kind == TV_INT || parts[i].kind == TV_BOOL) {
            vals[i] = parts[i].kind == TV_INT ? parts[i].u.i : parts[i].u.b;
            has[i] = true;
        } else {
            bad = true;
        }
    }
    /* Jinja compiles a slice to a plain Python subscription (not through
     * Environment.getitem), so every failure is an error. */
    if (obj->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, obj);
    bool sliceable = obj->kind == TV_STR ||
        (obj->kind == TV_SEQ && (obj->sub == SEQ_LIST || obj->sub == SEQ_TUPLE || obj->sub == SEQ_RANGE));
    if (obj->kind == TV_DICT)
        return tpl_fail(t, line, "unhashable type: 'slice'");
    if (!sliceable)
        return tpl_fail(t, line, "'%s' object is not subscriptable", tpl_tv_type(obj));
    if (bad)
        return tpl_fail(t, line, "slice indices must be integers or None or have an __index__ method");
    if (has[2] && vals[2] == 0)
        return tpl_fail(t, line, "slice step cannot be zero");
    int64_t step = vals[2] == INT64_MIN ? -INT64_MAX : vals[2];
    int64_t start, stop, count;
    if (obj->kind == TV_STR) {
        if (tpl_work(t, line, obj->u.s.n) < 0)
            return -1;
        const char *p = obj->u.s.p;
        size_t n = obj->u.s.n;
        bool ascii = true;
        for (size_t i = 0; i < n && ascii; i++)
            ascii = (unsigned char)p[i] < 0x80;
        int64_t len = ascii ? (int64_t)n : (int64_t)tpl_u8_count(p, n);
        slice_adjust(len, has[0], vals[0], has[1], vals[1], step, &start, &stop, &count);
        if (count <= 0)
            return tpl_new_str(t, line, p, 0, obj->sub, out);
        if (step == 1 || count == 1) {
            size_t b = ascii ? (size_t)start : tpl_u8_offset(p, n, (size_t)start);
            size_t e = ascii ? (size_t)(start + count) : b + tpl_u8_offset(p + b, n - b, (size_t)count);
            return tpl_new_str(t, line, p + b, e - b, obj->sub, out);
        }
        _cleanup_free_ size_t *offs = malloc(((size_t)len + 1) * sizeof *offs);
        if (!offs)
            return tpl_oom(t);
        size_t off = 0, l;
        for (int64_t i = 0; i < len; i++, off += l) {
            offs[i] = off;
            tpl_u8_decode(p + off, n - off, &l);
        }
        offs[len] = n;
        _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
        for (int64_t i = 0, k = start; i < count; i++, k += step)
            mini_buf_append(&b, p + offs[k], offs[k + 1] - offs[k]);
        return tpl_tv_from_buf(t, line, &b, obj->sub, out);
    }
    const struct tseq *s = obj->u.seq;
    slice_adjust((int64_t)s->n, has[0], vals[0], has[1], vals[1], step, &start, &stop, &count);
    if (tpl_tv_new_seq(t, (size_t)count, obj->sub, out) < 0)
        return -1;
    for (int64_t i = 0, k = start; i < count; i++, k += step)
        out->u.seq->v[i] = s->v[k];
    if (obj->sub == SEQ_RANGE) {
        /* range(r.start + start*r.step, r.start + stop*r.step, r.step*step) */
        int64_t a, b, c;
        if (__builtin_mul_overflow(start, s->step, &a) || __builtin_add_overflow(a, s->start, &a) ||
            __builtin_mul_overflow(stop, s->step, &b) || __builtin_add_overflow(b, s->start, &b) ||
            __builtin_mul_overflow(s->step, step, &c))
            return tpl_overflow(t, line);
        out->u.seq->start = a;
        out->u.seq->stop = b;
        out->u.seq->step = c;
    }
    return 0;
}

/* -------------------------------------------------------- expressions */

static int lookup(struct tpl *t, int line, const char *name, size_t len, struct tv *out)
{
    struct tv *v = frame_find(t->scope, name, len);
    if (!v)
        v = frame_find(t->globals, name, len);
    if (v) {
        *out = *v;
        return 0;
    }
    if (t->vars) {
        for (const cJSON *c = t->vars->child; c; c = c->next) {
            if (c->string && strlen(c->string) == len && memcmp(c->string, name, len) == 0) {
                if (tpl_tv_from_json(t, c, out, 0) < 0 || frame_set(t, t->globals, c->string, len, out) < 0)
                    return -1;
                return 0;
            }
        }
    }
    static const struct {
        const char *name;
        int id;
    } globals[] = {
        { "range", G_RANGE },   { "dict", G_DICT },     { "namespace", G_NAMESPACE },
        { "lipsum", G_LIPSUM }, { "cycler", G_CYCLER }, { "joiner", G_JOINER },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(globals); i++)
        if (strlen(globals[i].name) == len && memcmp(globals[i].name, name, len) == 0)
            return tpl_make_func(t, globals[i].id, NULL, globals[i].name, out);
    (void)line;
    *out = tpl_tv_undef(t, "'%.*s' is undefined", (int)(len > 200 ? 200 : len), name);
    return 0;
}

static int eval_args(struct tpl *t, const struct node *n, struct callargs *a)
{
    memset(a, 0, sizeof *a);
    if (n->nv) {
        a->v = tpl_alloc(t, n->nv * sizeof *a->v);
        if (!a->v)
            return -1;
        for (size_t i = 0; i < n->nv; i++)
            if (eval_expr(t, n->v[i], &a->v[i]) < 0)
                return -1;
        a->n = n->nv;
    }
    if (n->nkw) {
        a->kwv = tpl_alloc(t, n->nkw * sizeof *a->kwv);
        if (!a->kwv)
            return -1;
        for (size_t i = 0; i < n->nkw; i++)
            if (eval_expr(t, n->kw[i].value, &a->kwv[i]) < 0)
                return -1;
        a->kw = n->kw;
        a->nkw = n->nkw;
    }
    return 0;
}

static int eval_inner(struct tpl *t, const struct node *n, struct tv *out)
{
    struct tv a, b;
    bool r;
    switch (n->kind) {
    case N_CONST: *out = n->c; return 0;
    case N_NAME: return lookup(t, n->line, n->name, n->nlen, out);
    case N_TUPLE:
    case N_LIST:
        if (tpl_tv_new_seq(t, n->nv, n->kind == N_TUPLE ? SEQ_TUPLE : SEQ_LIST, out) < 0)
            return -1;
        for (size_t i = 0; i < n->nv; i++)
            if (eval_expr(t, n->v[i], &out->u.seq->v[i]) < 0)
                return -1;
        return 0;
    case N_DICT:
        if (tpl_tv_new_dict(t, n->nv, out) < 0)
            return -1;
        for (size_t i = 0; i < n->nv; i++) {
            if (eval_expr(t, n->v[2 * i], &a) < 0 || eval_expr(t, n->v[2 * i + 1], &b) < 0 ||
                tpl_tv_dict_set(t, n->line, out->u.d, &a, &b) < 0)
                return -1;
        }
        return 0;
    case N_GETATTR:
        if (eval_expr(t, n->a, &a) < 0)
            return -1;
        return tpl_getattr(t, n->line, &a, n->name, n->nlen, out);
    case N_SLICE: {
        /* A slice inside a tuple subscript, x[1:2, 3]: unhashable, and no
         * sequence accepts it as an index, so the lookup gives undefined. */
        const struct node *pn[3] = { n->a, n->b, n->x };
        if (tpl_tv_new_seq(t, 3, SEQ_LIST, out) < 0)
            return -1;
        for (int i = 0; i < 3; i++) {
            out->u.seq->v[i] = tpl_tv_none();
            if (pn[i] && eval_expr(t, pn[i], &out->u.seq->v[i]) < 0)
                return -1;
        }
        return 0;
    }
    case N_GETITEM:
        if (eval_expr(t, n->a, &a) < 0)
            return -1;
        if (n->b->kind == N_SLICE)
            return slice_value(t, n->line, &a, n->b, out);
        if (eval_expr(t, n->b, &b) < 0)
            return -1;
        return tpl_getitem(t, n->line, &a, &b, out);
    case N_CALL: {
        struct callargs args;
        if (eval_expr(t, n->a, &a) < 0 || eval_args(t, n, &args) < 0 || tpl_step(t, n->line) < 0)
            return -1;
        return tpl_call(t, n->line, &a, &args, out);
    }
    case N_FILTER:
    case N_TEST: {
        struct callargs args;
        if (n->a) {
            if (eval_expr(t, n->a, &a) < 0)
                return -1;
        } else {
            a = *t->chain_base;
        }
        if (eval_args(t, n, &args) < 0 || tpl_step(t, n->line) < 0)
            return -1;
        if (!n->fn)
            return tpl_fail(t, n->line, "No %s named '%.*s' found.", n->kind == N_FILTER ? "filter" : "test",
                            (int)n->nlen, n->name);
        if (a.kind == TV_STR && tpl_work(t, n->line, a.u.s.n) < 0)
            return -1;
        if (n->kind == N_FILTER)
            return tpl_apply_filter(t, n->line, n->fn, &a, &args, out);
        return n->fn->fn(t, n->line, &a, &args, out);
    }
    case N_NOT:
        if (eval_expr(t, n->a, &a) < 0 || tpl_tv_truth(t, n->line, &a, &r) < 0)
            return -1;
        *out = tpl_tv_bool(!r);
        return 0;
    case N_NEG:
    case N_POS:
        if (eval_expr(t, n->a, &a) < 0)
            return -1;
        if (a.kind == TV_UNDEF)
            return tpl_tv_undef_error(t, n->line, &a);
        if (a.kind == TV_BOOL)
            a = tpl_tv_int(a.u.b);
        if (a.kind == TV_INT) {
            if (n->kind == N_NEG && a.u.i == INT64_MIN)
                return tpl_overflow(t, n->line);
            *out = tpl_tv_int(n->kind == N_NEG ? -a.u.i : a.u.i);
            return 0;
        }
        if (a.kind == TV_FLOAT) {
            *out = tpl_tv_float(n->kind == N_NEG ? -a.u.f : a.u.f);
            return 0;
        }
        return tpl_fail(t, n->line, "bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+',
                        tpl_tv_type(&a));
    case N_BIN:
        if (eval_expr(t, n->a, &a) < 0 || eval_expr(t, n->b, &b) < 0)
            return -1;
        return tpl_arith(t, n->line, n->op, &a, &b, out);
    case N_AND:
    case N_OR:
        if (eval_expr(t, n->a, &a) < 0 || tpl_tv_truth(t, n->line, &a, &r) < 0)
            return -1;
        if (r == (n->kind == N_OR)) {
            *out = a;
            return 0;
        }
        return eval_expr(t, n->b, out);
    case N_CONCAT: {
        _cleanup_buf_ struct mini_buf buf = MINI_BUF_INIT;
        for (size_t i = 0; i < n->nv; i++) {
            if (eval_expr(t, n->v[i], &a) < 0 || tpl_tv_str(t, n->line, &a, &buf) < 0)
                return -1;
            if (buf.len > tpl_mem_limit(t))
                return tpl_charge(t, n->line, SIZE_MAX);
        }
        return tpl_tv_from_buf(t, n->line, &buf, false, out);
    }
    case N_CMP:
        if (eval_expr(t, n->v[0], &a) < 0)
            return -1;
        for (size_t i = 1; i < n->nv; i++) {
            if (eval_expr(t, n->v[i], &b) < 0 || tpl_compare(t, n->line, n->ops[i - 1], &a, &b, &r) < 0)
                return -1;
            if (!r)
                break;
            a = b;
        }
        *out = tpl_tv_bool(r);
        return 0;
    case N_COND:
        if (eval_expr(t, n->b, &a) < 0 || tpl_tv_truth(t, n->line, &a, &r) < 0)
            return -1;
        if (r)
            return eval_expr(t, n->a, out);
        if (n->x)
            return eval_expr(t, n->x, out);
        *out = tpl_tv_undef(t, "the inline if-expression evaluated to false and no else section was defined");
        out->sub = 1; /* Jinja uses the lenient Undefined here */
        return 0;
    default: return tpl_fail(t, n->line, "internal error: unexpected expression node %d", n->kind);
    }
}

static int eval_expr(struct tpl *t, const struct node *n, struct tv *out)
{
    if (++t->depth > TPL_MAX_DEPTH) {
        t->depth--;
        return tpl_fail(t, n->line, "maximum recursion depth exceeded");
    }
    int rc = eval_inner(t, n, out);
    t->depth--;
    return rc;
}

/* ------------------------------------------------- constant folding */

/* Jinja's compiler runs an optimizer that evaluates expressions made only of
 * literals ("as_const") before the template runs.  Its rules differ from
 * run time in two observable ways, which this pass reproduces:
 *   - a subscript of literals goes through Environment.getitem even for a
 *     slice, so `1[0:2]` is undefined rather than a TypeError, and a parent
 *     such as `is defined` can then fold to a constant;
 *   - some errors (str() or bool() of an undefined in ~, and, or, if-else;
 *     an unhashable dict key) escape the optimizer and fail the template at
 *     compile time, even in a branch that never runs.
 * A node whose value has a "safe repr" (None, bool, int, float, str, range
 * and lists, tuples and dicts of those) is replaced by the constant. */

enum { FOLD_NO, FOLD_CONST, FOLD_ERR };

struct try_state {
    bool failed;
    struct mini_err e;
};

static void try_begin(struct tpl *t, struct try_state *s)
{
    s->failed = t->a.failed;
    if (t->a.e)
        s->e = *t->a.e;
}

/* Forget an error raised while trying (Jinja's `except Exception: raise
 * Impossible`). */
static int try_end(struct tpl *t, struct try_state *s, int r)
{
    if (r == FOLD_CONST)
        return r;
    t->a.failed = s->failed;
    if (t->a.e)
        *t->a.e = s->e;
    return FOLD_NO;
}

static bool safe_repr(const struct tv *v, int depth)
{
    if (depth > TPL_MAX_DEPTH)
        return false;
    switch (v->kind) {
    case TV_NONE:
    case TV_BOOL:
    case TV_INT:
    case TV_FLOAT:
    case TV_STR: return true;
    case TV_SEQ:
        if (v->sub == SEQ_RANGE)
            return true;
        if (v->sub != SEQ_LIST && v->sub != SEQ_TUPLE)
            return false;
        for (size_t i = 0; i < v->u.seq->n; i++)
            if (!safe_repr(&v->u.seq->v[i], depth + 1))
                return false;
        return true;
    case TV_DICT:
        for (size_t i = 0; i < v->u.d->n; i++)
            if (!safe_repr(&v->u.d->k[i], depth + 1) || !safe_repr(&v->u.d->v[i], depth + 1))
                return false;
        return true;
    default: return false;
    }
}

static int as_const(struct tpl *t, const struct node *n, struct tv *out);

/* as_const of a child whose failure propagates. */
#define CHILD(node, val)                     \
    do {                                     \
        int r_ = as_const(t, (node), (val)); \
        if (r_ != FOLD_CONST)                \
            return r_;                       \
    } while (0)

static int const_args(struct tpl *t, const struct node *n, struct callargs *a)
{
    memset(a, 0, sizeof *a);
    if (n->nv && !(a->v = tpl_alloc(t, n->nv * sizeof *a->v)))
        return FOLD_ERR;
    if (n->nkw && !(a->kwv = tpl_alloc(t, n->nkw * sizeof *a->kwv)))
        return FOLD_ERR;
    for (size_t i = 0; i < n->nv; i++)
        CHILD(n->v[i], &a->v[i]);
    for (size_t i = 0; i < n->nkw; i++)
        CHILD(n->kw[i].value, &a->kwv[i]);
    a->n = n->nv;
    a->kw = n->kw;
    a->nkw = n->nkw;
    return FOLD_CONST;
}

/* Environment.getitem(obj, slice): the slice, else undefined on a
 * TypeError; other errors make the fold impossible. */
static int const_slice(struct tpl *t, const struct node *n, struct tv *obj, struct tv *out)
{
    const struct node *sl = n->b, *pn[3] = { sl->a, sl->b, sl->x };
    struct tv parts[3];
    for (int i = 0; i < 3; i++)
        if (pn[i])
            CHILD(pn[i], &parts[i]);
    if (obj->kind == TV_UNDEF)
        return FOLD_NO; /* Undefined.__getitem__ raises */
    bool sliceable = obj->kind == TV_STR ||
        (obj->kind == TV_SEQ && (obj->sub == SEQ_LIST || obj->sub == SEQ_TUPLE || obj->sub == SEQ_RANGE));
    bool ints = true;
    for (int i = 0; i < 3; i++)
        if (pn[i] && parts[i].kind != TV_NONE && parts[i].kind != TV_INT && parts[i].kind != TV_BOOL)
            ints = false;
    if (!sliceable || !ints) {
        char buf[64];
        *out = tpl_tv_undef(t, "%s has no element slice(...)", type_repr(obj, buf, sizeof buf));
        return FOLD_CONST;
    }
    /* Evaluate the real slice on constant nodes. */
    struct node tmp[3];
    struct node s2 = *sl;
    for (int i = 0; i < 3; i++) {
        if (!pn[i])
            continue;
        memset(&tmp[i], 0, sizeof tmp[i]);
        tmp[i].kind = N_CONST;
        tmp[i].line = n->line;
        tmp[i].c = parts[i];
    }
    s2.a = pn[0] ? &tmp[0] : NULL;
    s2.b = pn[1] ? &tmp[1] : NULL;
    s2.x = pn[2] ? &tmp[2] : NULL;
    return slice_value(t, n->line, obj, &s2, out) < 0 ? FOLD_ERR : FOLD_CONST;
}

static int as_const(struct tpl *t, const struct node *n, struct tv *out)
{
    struct tv a, b;
    struct try_state ts;
    int r;
    bool truth;
    if (++t->depth > TPL_MAX_DEPTH) {
        t->depth--;
        return FOLD_NO;
    }
    switch (n->kind) {
    case N_CONST:
        *out = n->c;
        r = FOLD_CONST;
        break;
    case N_TUPLE:
    case N_LIST:
        if (tpl_tv_new_seq(t, n->nv, n->kind == N_TUPLE ? SEQ_TUPLE : SEQ_LIST, out) < 0) {
            r = FOLD_ERR;
            break;
        }
        r = FOLD_CONST;
        for (size_t i = 0; i < n->nv && r == FOLD_CONST; i++)
            r = as_const(t, n->v[i], &out->u.seq->v[i]);
        break;
    case N_DICT:
        if (tpl_tv_new_dict(t, n->nv, out) < 0) {
            r = FOLD_ERR;
            break;
        }
        r = FOLD_CONST;
        for (size_t i = 0; i < n->nv && r == FOLD_CONST; i++) {
            if ((r = as_const(t, n->v[2 * i], &a)) == FOLD_CONST &&
                (r = as_const(t, n->v[2 * i + 1], &b)) == FOLD_CONST &&
                tpl_tv_dict_set(t, n->line, out->u.d, &a, &b) < 0)
                r = FOLD_ERR; /* dict() raises TypeError: not caught */
        }
        break;
    case N_GETATTR:
        try_begin(t, &ts);
        r = as_const(t, n->a, &a);
        if (r == FOLD_CONST && tpl_getattr(t, n->line, &a, n->name, n->nlen, out) < 0)
            r = FOLD_ERR;
        r = try_end(t, &ts, r);
        break;
    case N_GETITEM:
        try_begin(t, &ts);
        r = as_const(t, n->a, &a);
        if (r == FOLD_CONST) {
            if (n->b->kind == N_SLICE)
                r = const_slice(t, n, &a, out);
            else if ((r = as_const(t, n->b, &b)) == FOLD_CONST && tpl_getitem(t, n->line, &a, &b, out) < 0)
                r = FOLD_ERR;
        }
        r = try_end(t, &ts, r);
        break;
    case N_FILTER:
    case N_TEST: {
        static const char *const ctx_filters[] = {
            "map", "select", "reject", "selectattr", "rejectattr", "random", NULL
        };
        r = FOLD_NO;
        if (!n->fn || !n->a)
            break;
        bool ctx = false;
        for (size_t i = 0; n->kind == N_FILTER && ctx_filters[i]; i++)
            ctx |= strcmp(ctx_filters[i], n->fn->name) == 0;
        if (ctx)
            break;
        struct callargs args;
        if ((r = as_const(t, n->a, &a)) != FOLD_CONST || (r = const_args(t, n, &args)) != FOLD_CONST)
            break;
        try_begin(t, &ts);
        r = (n->kind == N_FILTER ? tpl_apply_filter(t, n->line, n->fn, &a, &args, out)
                                 : n->fn->fn(t, n->line, &a, &args, out)) < 0
            ? FOLD_ERR
            : FOLD_CONST;
        r = try_end(t, &ts, r);
        break;
    }
    case N_NOT:
    case N_NEG:
    case N_POS:
    case N_BIN:
        try_begin(t, &ts);
        r = as_const(t, n->a, &a);
        if (r == FOLD_CONST && n->kind == N_BIN)
            r = as_const(t, n->b, &b);
        if (r == FOLD_CONST) {
            if (n->kind == N_BIN) {
                if (tpl_arith(t, n->line, n->op, &a, &b, out) < 0)
                    r = FOLD_ERR;
            } else if (n->kind == N_NOT) {
                if (tpl_tv_truth(t, n->line, &a, &truth) < 0)
                    r = FOLD_ERR;
                else
                    *out = tpl_tv_bool(!truth);
            } else {
                struct node tmp = *n, c = { .kind = N_CONST, .line = n->line, .c = a };
                tmp.a = &c;
                if (eval_expr(t, &tmp, out) < 0)
                    r = FOLD_ERR;
            }
        }
        r = try_end(t, &ts, r);
        break;
    case N_AND:
    case N_OR:
        if ((r = as_const(t, n->a, &a)) != FOLD_CONST)
            break;
        if (tpl_tv_truth(t, n->line, &a, &truth) < 0) {
            r = FOLD_ERR; /* bool() of an undefined escapes */
            break;
        }
        if (truth == (n->kind == N_OR))
            *out = a;
        else
            r = as_const(t, n->b, out);
        break;
    case N_CONCAT: {
        _cleanup_buf_ struct mini_buf buf = MINI_BUF_INIT;
        r = FOLD_CONST;
        for (size_t i = 0; i < n->nv && r == FOLD_CONST; i++)
            if ((r = as_const(t, n->v[i], &a)) == FOLD_CONST && tpl_tv_str(t, n->line, &a, &buf) < 0)
                r = FOLD_ERR; /* str() of an undefined escapes */
        if (r == FOLD_CONST && tpl_tv_from_buf(t, n->line, &buf, false, out) < 0)
            r = FOLD_ERR;
        break;
    }
    case N_CMP:
        if ((r = as_const(t, n->v[0], &a)) != FOLD_CONST)
            break;
        try_begin(t, &ts);
        truth = true;
        for (size_t i = 1; i < n->nv && r == FOLD_CONST && truth; i++) {
            if ((r = as_const(t, n->v[i], &b)) == FOLD_CONST &&
                tpl_compare(t, n->line, n->ops[i - 1], &a, &b, &truth) < 0)
                r = FOLD_ERR;
            a = b;
        }
        *out = tpl_tv_bool(truth);
        r = try_end(t, &ts, r);
        break;
    case N_COND:
        if ((r = as_const(t, n->b, &a)) != FOLD_CONST)
            break;
        if (tpl_tv_truth(t, n->line, &a, &truth) < 0) {
            r = FOLD_ERR;
            break;
        }
        if (truth)
            r = as_const(t, n->a, out);
        else
            r = n->x ? as_const(t, n->x, out) : FOLD_NO;
        break;
    default: /* names, calls, slices */ r = FOLD_NO; break;
    }
    t->depth--;
    return r;
}

#undef CHILD

static int fold_tree_inner(struct tpl *t, struct node *n);

/* The optimizer on one expression tree: children first, then the node. */
static int fold_tree(struct tpl *t, struct node *n)
{
    if (!n || n->kind == N_CONST || n->kind == N_NAME)
        return 0;
    if (++t->depth > TPL_MAX_DEPTH) {
        t->depth--;
        return tpl_fail(t, n->line, "maximum recursion depth exceeded (expression too deep)");
    }
    int rc = fold_tree_inner(t, n);
    t->depth--;
    return rc;
}

static int fold_tree_inner(struct tpl *t, struct node *n)
{
    if (n->kind == N_SLICE)
        return fold_tree(t, n->a) < 0 || fold_tree(t, n->b) < 0 || fold_tree(t, n->x) < 0 ? -1 : 0;
    if (fold_tree(t, n->a) < 0 || fold_tree(t, n->b) < 0 || fold_tree(t, n->x) < 0)
        return -1;
    size_t nv = n->kind == N_DICT ? 2 * n->nv : n->kind == N_NSREF ? 0 : n->nv;
    for (size_t i = 0; i < nv; i++)
        if (fold_tree(t, n->v[i]) < 0)
            return -1;
    for (size_t i = 0; i < n->nkw; i++)
        if (fold_tree(t, n->kw[i].value) < 0)
            return -1;
    struct tv v;
    int r = as_const(t, n, &v);
    if (r == FOLD_ERR)
        return -1;
    if (r == FOLD_CONST && safe_repr(&v, 0)) {
        n->kind = N_CONST;
        n->c = v;
    }
    return 0;
}

/* Jinja runs the optimizer on each expression the compiler visits through a
 * node type it optimizes; literals, names, lists, tuples and dicts are
 * visited item by item. */
static int fold_expr(struct tpl *t, struct node *n)
{
    if (!n)
        return 0;
    switch (n->kind) {
    case N_CONST:
    case N_NAME:
    case N_NSREF: return 0;
    case N_TUPLE:
    case N_LIST:
    case N_DICT:
        for (size_t i = 0; i < (n->kind == N_DICT ? 2 * n->nv : n->nv); i++)
            if (fold_expr(t, n->v[i]) < 0)
                return -1;
        return 0;
    default: return fold_tree(t, n);
    }
}

/* Jinja's compiler first tries each {{ expr }} as a whole: if as_const and
 * str() of the value both succeed (any error is caught), the text is
 * output as a constant, even when the value has no safe repr
 * (`{{ [1[0:1]] }}` prints "[Undefined]"). */
static int fold_output(struct tpl *t, struct stmt *s)
{
    struct try_state ts;
    struct tv v, text;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    try_begin(t, &ts);
    int r = as_const(t, s->expr, &v);
    if (r == FOLD_CONST && (tpl_tv_str(t, s->line, &v, &b) < 0 || tpl_tv_from_buf(t, s->line, &b, false, &text) < 0))
        r = FOLD_ERR;
    if (try_end(t, &ts, r) != FOLD_CONST)
        return 0;
    s->kind = S_DATA;
    s->data = text.u.s.p;
    s->dlen = text.u.s.n;
    return 1;
}

int tpl_fold(struct tpl *t, struct body *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct stmt *s = b->s[i];
        if (s->kind == S_OUT && fold_output(t, s))
            continue;
        for (size_t k = 0; k < s->nwith; k++)
            if (fold_expr(t, s->values[k]) < 0)
                return -1;
        if (fold_expr(t, s->expr) < 0 || fold_expr(t, s->cond) < 0 || fold_expr(t, s->filter) < 0 ||
            tpl_fold(t, &s->body) < 0 || tpl_fold(t, &s->orelse) < 0)
            return -1;
    }
    return 0;
}

/* --------------------------------------------------------- statements */

static int assign(struct tpl *t, int line, const struct node *target, const struct tv *v)
{
    if (target->kind == N_NAME)
        return frame_set(t, t->scope, target->name, target->nlen, v);
    if (target->kind == N_NSREF) {
        struct tv ns;
        if (lookup(t, line, target->a->name, target->a->nlen, &ns) < 0)
            return -1;
        if (ns.kind != TV_NS)
            return tpl_fail(t, line, "can't assign attribute on non-namespace object");
        struct tv key = tpl_tv_strn(target->name, target->nlen);
        return tpl_tv_dict_set(t, line, ns.u.d, &key, v);
    }
    /* N_TUPLE: unpack */
    struct tseq *items;
    if (tpl_tv_iter(t, line, v, &items) < 0)
        return -1;
    if (items->n != target->nv) {
        if (items->n > target->nv)
            return tpl_fail(t, line, "too many values to unpack (expected %zu)", target->nv);
        return tpl_fail(t, line, "not enough values to unpack (expected %zu, got %zu)", target->nv, items->n);
    }
    for (size_t i = 0; i < target->nv; i++)
        if (assign(t, line, target->v[i], &items->v[i]) < 0)
            return -1;
    return 0;
}

static int emit_out(struct tpl *t, int line, const char *p, size_t n)
{
    if (tpl_charge(t, line, n) < 0)
        return -1;
    if (mini_buf_append(t->out, p, n) < 0)
        return tpl_oom(t);
    return 0;
}

int tpl_run_for(struct tpl *t, const struct stmt *st, const struct tv *iterable, size_t depth0)
{
    struct tseq *items;
    struct frame *outer = t->scope;
    int rc = -1;
    if (tpl_tv_iter(t, st->line, iterable, &items) < 0)
        return -1;
    if (st->cond) {
        struct tseq *kept = tpl_alloc(t, sizeof *kept);
        if (!kept || (items->n && !(kept->v = tpl_alloc(t, items->n * sizeof *kept->v))))
            return -1;
        struct frame f = { .parent = outer };
        t->scope = &f;
        for (size_t i = 0; i < items->n; i++) {
            struct tv c;
            bool keep;
            f.n = 0;
            if (tpl_step(t, st->line) < 0 || assign(t, st->line, st->target, &items->v[i]) < 0 ||
                eval_expr(t, st->cond, &c) < 0 || tpl_tv_truth(t, st->line, &c, &keep) < 0)
                goto out;
            if (keep)
                kept->v[kept->n++] = items->v[i];
        }
        t->scope = outer;
        items = kept;
    }
    struct frame f = { .parent = outer };
    t->scope = &f;
    if (items->n == 0) {
        rc = exec_body(t, &st->orelse);
        goto out;
    }
    struct tloop *l = tpl_alloc(t, sizeof *l);
    if (!l)
        goto out;
    l->items = items;
    l->depth0 = depth0;
    l->st = st;
    l->outer = outer;
    struct tv lv = { .kind = TV_LOOP, .u.loop = l };
    for (size_t i = 0; i < items->n; i++) {
        f.n = 0;
        l->index0 = i;
        if (tpl_step(t, st->line) < 0 || assign(t, st->line, st->target, &items->v[i]) < 0 ||
            frame_set(t, &f, "loop", 4, &lv) < 0 || exec_body(t, &st->body) < 0)
            goto out;
    }
    rc = 0;
out:
    t->scope = outer;
    return rc;
}

/* Render a body into a string (set blocks, filter blocks). */
static int render_to_str(struct tpl *t, const struct body *b, struct tv *out)
{
    struct mini_buf *saved = t->out;
    struct mini_buf buf = MINI_BUF_INIT;
    t->out = &buf;
    int rc = exec_body(t, b);
    t->out = saved;
    if (rc == 0)
        rc = tpl_tv_from_buf(t, 0, &buf, false, out);
    mini_buf_free(&buf);
    return rc;
}

static int apply_chain(struct tpl *t, const struct node *chain, const struct tv *in, struct tv *out)
{
    const struct tv *saved = t->chain_base;
    t->chain_base = in;
    int rc = eval_expr(t, chain, out);
    t->chain_base = saved;
    return rc;
}

static int exec_stmt(struct tpl *t, const struct stmt *s)
{
    struct tv v;
    bool r;
    switch (s->kind) {
    case S_DATA: return emit_out(t, s->line, s->data, s->dlen);
    case S_OUT: {
        size_t before = t->out->len;
        if (eval_expr(t, s->expr, &v) < 0 || tpl_tv_str(t, s->line, &v, t->out) < 0)
            return -1;
        return tpl_charge(t, s->line, t->out->len - before);
    }
    case S_IF:
        if (eval_expr(t, s->expr, &v) < 0 || tpl_tv_truth(t, s->line, &v, &r) < 0)
            return -1;
        return exec_body(t, r ? &s->body : &s->orelse);
    case S_FOR:
        if (eval_expr(t, s->expr, &v) < 0)
            return -1;
        return tpl_run_for(t, s, &v, 0);
    case S_SET:
        if (eval_expr(t, s->expr, &v) < 0)
            return -1;
        return assign(t, s->line, s->target, &v);
    case S_SETBLOCK: {
        struct frame f = { .parent = t->scope }, *outer = t->scope;
        t->scope = &f;
        int rc = render_to_str(t, &s->body, &v);
        t->scope = outer;
        if (rc < 0)
            return -1;
        if (s->filter) {
            struct tv fv;
            if (apply_chain(t, s->filter, &v, &fv) < 0)
                return -1;
            v = fv;
        }
        return assign(t, s->line, s->target, &v);
    }
    case S_FILTERBLOCK: {
        struct frame f = { .parent = t->scope }, *outer = t->scope;
        struct tv fv;
        t->scope = &f;
        int rc = render_to_str(t, &s->body, &v);
        t->scope = outer;
        if (rc < 0 || apply_chain(t, s->filter, &v, &fv) < 0)
            return -1;
        size_t before = t->out->len;
        if (tpl_tv_str(t, s->line, &fv, t->out) < 0)
            return -1;
        return tpl_charge(t, s->line, t->out->len - before);
    }
    case S_WITH: {
        struct tv *vals = s->nwith ? tpl_alloc(t, s->nwith * sizeof *vals) : NULL;
        if (s->nwith && !vals)
            return -1;
        for (size_t i = 0; i < s->nwith; i++)
            if (eval_expr(t, s->values[i], &vals[i]) < 0)
                return -1;
        struct frame f = { .parent = t->scope }, *outer = t->scope;
        t->scope = &f;
        int rc = 0;
        for (size_t i = 0; i < s->nwith && rc == 0; i++)
            rc = assign(t, s->line, s->targets[i], &vals[i]);
        if (rc == 0)
            rc = exec_body(t, &s->body);
        t->scope = outer;
        return rc;
    }
    default: return tpl_fail(t, s->line, "internal error: unexpected statement %d", s->kind);
    }
}

static int exec_body(struct tpl *t, const struct body *b)
{
    if (++t->depth > TPL_MAX_DEPTH) {
        t->depth--;
        return tpl_fail(t, 0, "maximum recursion depth exceeded");
    }
    int rc = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++)
        rc = exec_stmt(t, b->s[i]);
    t->depth--;
    return rc;
}

int tpl_exec(struct tpl *t, const struct body *b)
{
    struct frame *root = tpl_alloc(t, sizeof *root), *globals = tpl_alloc(t, sizeof *globals);
    if (!root || !globals)
        return -1;
    t->globals = globals;
    t->scope = root;
    t->depth = 0;
    return exec_body(t, b);
}
