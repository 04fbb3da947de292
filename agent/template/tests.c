/* The tests (`x is odd`), and looking them up by name. */
#include "builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

static int test_result(struct tv *out, bool b)
{
    *out = tpl_tv_bool(b);
    return 0;
}

#define TEST(name) static int name(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out)

static int one_arg(struct tpl *t, int line, const char *name, struct callargs *a, struct tv *arg)
{
    static const char *const names[] = { "other" };
    bool has;
    if (tpl_bind(t, line, name, a, names, 1, arg, &has) < 0)
        return -1;
    if (!has)
        return tpl_fail(t, line, "%s() missing 1 required positional argument", name);
    return 0;
}

TEST(t_defined)
{
    NOARGS("defined");
    return test_result(out, v->kind != TV_UNDEF);
}
TEST(t_undefined)
{
    NOARGS("undefined");
    return test_result(out, v->kind == TV_UNDEF);
}
TEST(t_none)
{
    NOARGS("none");
    return test_result(out, v->kind == TV_NONE);
}
TEST(t_boolean)
{
    NOARGS("boolean");
    return test_result(out, v->kind == TV_BOOL);
}
TEST(t_true)
{
    NOARGS("true");
    return test_result(out, v->kind == TV_BOOL && v->u.b);
}
TEST(t_false)
{
    NOARGS("false");
    return test_result(out, v->kind == TV_BOOL && !v->u.b);
}
TEST(t_integer)
{
    NOARGS("integer");
    return test_result(out, v->kind == TV_INT);
}
TEST(t_float)
{
    NOARGS("float");
    return test_result(out, v->kind == TV_FLOAT);
}
TEST(t_number)
{
    NOARGS("number");
    return test_result(out, tpl_tv_isnum(v));
}
TEST(t_string)
{
    NOARGS("string");
    return test_result(out, v->kind == TV_STR);
}
TEST(t_mapping)
{
    NOARGS("mapping");
    return test_result(out, v->kind == TV_DICT);
}
TEST(t_escaped)
{
    NOARGS("escaped");
    return test_result(out, v->kind == TV_STR && v->sub);
}

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
    return test_result(out,
                       v->kind == TV_STR || v->kind == TV_SEQ || v->kind == TV_DICT || v->kind == TV_LOOP ||
                           v->kind == TV_UNDEF || v->kind == TV_GEN);
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
        case TV_DICT:
        case TV_NS: r = v->u.d == o.u.d; break;
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
    if (tpl_bind(t, line, lower ? "lower" : "upper", a, NULL, 0, NULL, NULL) < 0)
        return -1;
    struct tv s;
    if (tpl_str_of(t, line, v, &s) < 0)
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
    { "odd", t_odd, false },
    { "even", t_even, false },
    { "divisibleby", t_divisibleby, false },
    { "defined", t_defined, false },
    { "undefined", t_undefined, false },
    { "filter", t_filter, false },
    { "test", t_test, false },
    { "none", t_none, false },
    { "boolean", t_boolean, false },
    { "false", t_false, false },
    { "true", t_true, false },
    { "integer", t_integer, false },
    { "float", t_float, false },
    { "lower", t_lower, false },
    { "upper", t_upper, false },
    { "string", t_string, false },
    { "mapping", t_mapping, false },
    { "number", t_number, false },
    { "sequence", t_sequence, false },
    { "iterable", t_iterable, false },
    { "callable", t_callable, false },
    { "sameas", t_sameas, false },
    { "escaped", t_escaped, false },
    { "in", t_in, false },
    { "==", t_eq, false },
    { "eq", t_eq, false },
    { "equalto", t_eq, false },
    { "!=", t_ne, false },
    { "ne", t_ne, false },
    { ">", t_gt, false },
    { "gt", t_gt, false },
    { "greaterthan", t_gt, false },
    { "ge", t_ge, false },
    { ">=", t_ge, false },
    { "<", t_lt, false },
    { "lt", t_lt, false },
    { "lessthan", t_lt, false },
    { "<=", t_le, false },
    { "le", t_le, false },
};

const struct tpl_builtin *tpl_find_test(const char *name, size_t n)
{
    return tpl_find_builtin(tests, MINI_ARRAY_SIZE(tests), name, n);
}

int tpl_call_test_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v, struct callargs *a,
                          bool *out)
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
