/* Python's operators on template values: arithmetic (int overflow is an
 * error, as ints are 64-bit), `in`, and comparisons. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

int tpl_overflow(struct tpl *t, int line)
{
    return tpl_fail(t, line, "integer overflow (mini's template ints are 64-bit)");
}

static void py_fdivmod(double vx, double wx, double *floordiv, double *mod)
{
    double m = fmod(vx, wx), div = (vx - m) / wx;
    if (m != 0.0) {
        if ((wx < 0) != (m < 0)) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, wx);
    }
    if (div != 0.0) {
        double fd = floor(div);
        if (div - fd > 0.5)
            fd += 1.0;
        *floordiv = fd;
    } else {
        *floordiv = copysign(0.0, vx / wx);
    }
    *mod = m;
}

static int num_arith(struct tpl *t, int line, int op, const struct tv *a, const struct tv *b, struct tv *out)
{
    if (a->kind != TV_FLOAT && b->kind != TV_FLOAT) {
        int64_t x = a->kind == TV_INT ? a->u.i : a->u.b, y = b->kind == TV_INT ? b->u.i : b->u.b, r;
        switch (op) {
        case OP_ADD:
            if (__builtin_add_overflow(x, y, &r))
                return tpl_overflow(t, line);
            break;
        case OP_SUB:
            if (__builtin_sub_overflow(x, y, &r))
                return tpl_overflow(t, line);
            break;
        case OP_MUL:
            if (__builtin_mul_overflow(x, y, &r))
                return tpl_overflow(t, line);
            break;
        case OP_DIV:
            if (y == 0)
                return tpl_fail(t, line, "division by zero");
            *out = tpl_tv_float((double)x / (double)y);
            return 0;
        case OP_FLOORDIV:
            if (y == 0)
                return tpl_fail(t, line, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                return tpl_overflow(t, line);
            r = x / y;
            if (x % y != 0 && ((x < 0) != (y < 0)))
                r--;
            break;
        case OP_MOD:
            if (y == 0)
                return tpl_fail(t, line, "integer modulo by zero");
            if (y == -1) {
                r = 0;
                break;
            }
            r = x % y;
            if (r != 0 && ((r < 0) != (y < 0)))
                r += y;
            break;
        default: /* OP_POW */
            if (y < 0) {
                if (x == 0)
                    return tpl_fail(t, line, "0.0 cannot be raised to a negative power");
                *out = tpl_tv_float(pow((double)x, (double)y));
                return 0;
            }
            r = 1;
            for (int64_t base = x, e = y; e;) {
                if ((e & 1) && __builtin_mul_overflow(r, base, &r))
                    return tpl_overflow(t, line);
                e >>= 1;
                if (e && __builtin_mul_overflow(base, base, &base))
                    return tpl_overflow(t, line);
            }
            break;
        }
        *out = tpl_tv_int(r);
        return 0;
    }
    double x = a->kind == TV_FLOAT ? a->u.f : (double)(a->kind == TV_INT ? a->u.i : a->u.b);
    double y = b->kind == TV_FLOAT ? b->u.f : (double)(b->kind == TV_INT ? b->u.i : b->u.b);
    double fd, m;
    switch (op) {
    case OP_ADD: *out = tpl_tv_float(x + y); return 0;
    case OP_SUB: *out = tpl_tv_float(x - y); return 0;
    case OP_MUL: *out = tpl_tv_float(x * y); return 0;
    case OP_DIV:
        if (y == 0.0)
            return tpl_fail(t, line, "float division by zero");
        *out = tpl_tv_float(x / y);
        return 0;
    case OP_FLOORDIV:
    case OP_MOD:
        if (y == 0.0)
            return tpl_fail(t, line, op == OP_MOD ? "float modulo" : "float floor division by zero");
        py_fdivmod(x, y, &fd, &m);
        *out = tpl_tv_float(op == OP_MOD ? m : fd);
        return 0;
    default:
        if (x == 0.0 && y < 0)
            return tpl_fail(t, line, "0.0 cannot be raised to a negative power");
        if (x < 0 && isfinite(y) && y != floor(y))
            return tpl_fail(t, line, "a negative number raised to a fractional power is complex");
        m = pow(x, y);
        if (isinf(m) && isfinite(x) && isfinite(y))
            return tpl_fail(t, line, "(34, 'Numerical result out of range')");
        *out = tpl_tv_float(m);
        return 0;
    }
}

static int repeat(struct tpl *t, int line, const struct tv *s, int64_t times, struct tv *out)
{
    if (times < 0 || (s->kind == TV_STR ? s->u.s.n : s->u.seq->n) == 0)
        times = 0; /* nothing to repeat: no loop either */
    if (s->kind == TV_STR) {
        if (s->u.s.n && (uint64_t)times > tpl_mem_limit(t) / s->u.s.n)
            return tpl_charge(t, line, SIZE_MAX);
        if (tpl_charge(t, line, s->u.s.n * (size_t)times) < 0)
            return -1;
        char *p = tpl_alloc(t, s->u.s.n * (size_t)times + 1);
        if (!p)
            return -1;
        for (int64_t i = 0; i < times; i++)
            memcpy(p + (size_t)i * s->u.s.n, s->u.s.p, s->u.s.n);
        return tpl_new_str(t, line, p, s->u.s.n * (size_t)times, s->sub, out);
    }
    size_t n = s->u.seq->n;
    if (n && (uint64_t)times > tpl_mem_limit(t) / sizeof(struct tv) / n)
        return tpl_charge(t, line, SIZE_MAX);
    if (tpl_tv_new_seq(t, n * (size_t)times, s->sub, out) < 0)
        return -1;
    for (int64_t i = 0; i < times; i++)
        memcpy(out->u.seq->v + (size_t)i * n, s->u.seq->v, n * sizeof(struct tv));
    return 0;
}

int tpl_arith(struct tpl *t, int line, int op, const struct tv *a, const struct tv *b, struct tv *out)
{
    static const char *const opname[] = { "+", "-", "*", "/", "//", "%", "** or pow()" };
    if (op == OP_MOD && a->kind == TV_STR) /* str.__mod__ takes any operand */
        return tpl_percent_format(t, line, a, b, out);
    if (a->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, a);
    if (b->kind == TV_UNDEF)
        return tpl_tv_undef_error(t, line, b);
    if (tpl_tv_isnum(a) && tpl_tv_isnum(b))
        return num_arith(t, line, op, a, b, out);
    if (op == OP_ADD && a->kind == TV_STR && b->kind == TV_STR) {
        _cleanup_buf_ struct mini_buf buf = MINI_BUF_INIT;
        bool markup = a->sub || b->sub;
        if (markup && !a->sub)
            tpl_html_escape(&buf, a->u.s.p, a->u.s.n);
        else
            mini_buf_append(&buf, a->u.s.p, a->u.s.n);
        if (markup && !b->sub)
            tpl_html_escape(&buf, b->u.s.p, b->u.s.n);
        else
            mini_buf_append(&buf, b->u.s.p, b->u.s.n);
        return tpl_tv_from_buf(t, line, &buf, markup, out);
    }
    if (op == OP_ADD && a->kind == TV_SEQ && b->kind == TV_SEQ && a->sub == b->sub &&
        (a->sub == SEQ_LIST || a->sub == SEQ_TUPLE)) {
        size_t n1 = a->u.seq->n, n2 = b->u.seq->n;
        if (tpl_tv_new_seq(t, n1 + n2, a->sub, out) < 0)
            return -1;
        if (n1)
            memcpy(out->u.seq->v, a->u.seq->v, n1 * sizeof(struct tv));
        if (n2)
            memcpy(out->u.seq->v + n1, b->u.seq->v, n2 * sizeof(struct tv));
        return 0;
    }
    if (op == OP_MUL) {
        const struct tv *s = NULL, *k = NULL;
        if (a->kind == TV_INT || a->kind == TV_BOOL)
            s = b, k = a;
        else if (b->kind == TV_INT || b->kind == TV_BOOL)
            s = a, k = b;
        if (s && (s->kind == TV_STR || (s->kind == TV_SEQ && (s->sub == SEQ_LIST || s->sub == SEQ_TUPLE))))
            return repeat(t, line, s, k->kind == TV_INT ? k->u.i : k->u.b, out);
    }
    return tpl_fail(t, line, "unsupported operand type(s) for %s: '%s' and '%s'", opname[op], tpl_tv_type(a),
                    tpl_tv_type(b));
}

int tpl_contains(struct tpl *t, int line, const struct tv *seq, const struct tv *x, bool *out)
{
    *out = false;
    switch (seq->kind) {
    case TV_STR:
        if (x->kind != TV_STR) {
            if (tpl_tv_isstrict_undef(x))
                return tpl_tv_undef_error(t, line, x);
            return tpl_fail(t, line, "'in <string>' requires string as left operand, not %s", tpl_tv_type(x));
        }
        if (tpl_work(t, line, seq->u.s.n) < 0)
            return -1;
        *out = tpl_find(seq->u.s.p, seq->u.s.n, x->u.s.p, x->u.s.n) != NULL;
        return 0;
    case TV_SEQ:
        for (size_t i = 0; i < seq->u.seq->n; i++) {
            if (tpl_step(t, line) < 0 || tpl_tv_eq(t, line, &seq->u.seq->v[i], x, out) < 0)
                return -1;
            if (*out)
                return 0;
        }
        return 0;
    case TV_DICT: {
        long i = tpl_tv_dict_find(t, line, seq->u.d, x);
        if (i < -1)
            return -1;
        *out = i >= 0;
        return 0;
    }
    case TV_UNDEF:
        if (!seq->sub)
            return tpl_tv_undef_error(t, line, seq);
        return 0;
    case TV_GEN: { /* consumes up to the match */
        struct tgen *g = seq->u.gen;
        if (tpl_tv_gen_ready(t, line, g) < 0)
            return -1;
        while (g->pos < g->seq->n) {
            if (tpl_step(t, line) < 0 || tpl_tv_eq(t, line, &g->seq->v[g->pos++], x, out) < 0)
                return -1;
            if (*out)
                return 0;
        }
        return 0;
    }
    default: return tpl_fail(t, line, "argument of type '%s' is not iterable", tpl_tv_type(seq));
    }
}

int tpl_compare(struct tpl *t, int line, int op, const struct tv *a, const struct tv *b, bool *out)
{
    int c;
    switch (op) {
    case CMP_EQ:
    case CMP_NE:
        if (tpl_tv_eq(t, line, a, b, out) < 0)
            return -1;
        if (op == CMP_NE)
            *out = !*out;
        return 0;
    case CMP_IN:
    case CMP_NOTIN:
        if (tpl_contains(t, line, b, a, out) < 0)
            return -1;
        if (op == CMP_NOTIN)
            *out = !*out;
        return 0;
    default:
        if (tpl_tv_cmp(t, line, a, b, &c) < 0)
            return -1;
        if (c == 2)
            *out = false; /* NaN */
        else
            *out = op == CMP_LT ? c < 0 : op == CMP_LE ? c <= 0 : op == CMP_GT ? c > 0 : c >= 0;
        return 0;
    }
}
