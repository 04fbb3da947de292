/* The parser: Jinja's parser.py, rule for rule, from the tokens of lex.c
 * to the syntax tree of internal.h. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

static struct token *cur(struct tpl *t) { return &t->toks[t->pos]; }

static struct token *look(struct tpl *t) { return &t->toks[t->pos + 1 < t->ntok ? t->pos + 1 : t->ntok - 1]; }

static struct token *next(struct tpl *t)
{
    struct token *k = &t->toks[t->pos];
    if (t->pos + 1 < t->ntok)
        t->pos++;
    return k;
}

static bool tok_is(const struct token *k, const char *name)
{
    return k->type == TK_NAME && k->n == strlen(name) && memcmp(k->p, name, k->n) == 0;
}

static int fail_tok(struct tpl *t, const char *what)
{
    struct token *k = cur(t);
    if (k->type == TK_EOF)
        return tpl_fail(t, k->line, "unexpected end of template, expected %s", what);
    if (k->type == TK_NAME)
        return tpl_fail(t, k->line, "expected %s, got '%.*s'", what, (int)k->n, k->p);
    return tpl_fail(t, k->line, "expected %s, got '%s'", what, tpl_token_desc(k->type));
}

static int expect(struct tpl *t, int type)
{
    if (cur(t)->type != type) {
        char what[64];
        snprintf(what, sizeof what, "'%s'", tpl_token_desc(type));
        return fail_tok(t, what);
    }
    next(t);
    return 0;
}

static int expect_name(struct tpl *t, const char *name)
{
    if (!tok_is(cur(t), name)) {
        char what[64];
        snprintf(what, sizeof what, "'%s'", name);
        return fail_tok(t, what);
    }
    next(t);
    return 0;
}

static struct node *new_node(struct tpl *t, int kind, int line)
{
    struct node *n = tpl_alloc(t, sizeof *n);
    if (n) {
        n->kind = (uint8_t)kind;
        n->line = line;
    }
    return n;
}

/* A growable list of node pointers, in malloc'd memory until finished. */
struct nlist {
    struct node **v;
    size_t n, cap;
};

/* Frees what nl_finish did not move into the arena (_cleanup_(nl_freep)). */
static inline void nl_freep(struct nlist *l) { free(l->v); }

static int nl_push(struct tpl *t, struct nlist *l, struct node *x)
{
    if (tpl_grow(t, (void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0)
        return -1;
    l->v[l->n++] = x;
    return 0;
}

/* Move the list into the arena. */
static struct node **nl_finish(struct tpl *t, struct nlist *l)
{
    struct node **v = l->n ? tpl_alloc(t, l->n * sizeof *v) : NULL;
    if (v)
        memcpy(v, l->v, l->n * sizeof *v);
    free(l->v);
    l->v = NULL;
    l->cap = 0;
    return v;
}

static struct node *parse_expression(struct tpl *t, bool with_condexpr);
static struct node *parse_tuple(struct tpl *t, bool simplified, bool with_condexpr, const char *extra_end,
                                bool explicit_parens);
static struct node *parse_target_tuple(struct tpl *t, const char *extra_end, bool with_namespace);
static struct node *parse_unary(struct tpl *t, bool with_filter);
static struct node *parse_primary(struct tpl *t);
static struct node *parse_postfix(struct tpl *t, struct node *n);
static struct node *parse_filter(struct tpl *t, struct node *n, bool start_inline);

static int enter(struct tpl *t)
{
    if (++t->depth > TPL_MAX_NEST) {
        tpl_fail(t, cur(t)->line, "template nests too deeply (more than %d levels)", TPL_MAX_NEST);
        return -1;
    }
    return 0;
}

static struct node *parse_condexpr(struct tpl *t);
static struct node *parse_or(struct tpl *t);

static struct node *parse_expression(struct tpl *t, bool with_condexpr)
{
    if (enter(t) < 0)
        return NULL;
    struct node *r;
    if (with_condexpr) {
        r = parse_condexpr(t);
    } else {
        r = parse_or(t);
    }
    t->depth--;
    return r;
}

static struct node *parse_and(struct tpl *t);
static struct node *parse_not(struct tpl *t);
static struct node *parse_compare(struct tpl *t);
static struct node *parse_math1(struct tpl *t);
static struct node *parse_concat(struct tpl *t);
static struct node *parse_math2(struct tpl *t);
static struct node *parse_pow(struct tpl *t);

static struct node *parse_condexpr(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *e1 = parse_or(t);
    while (e1 && tok_is(cur(t), "if")) {
        next(t);
        struct node *e2 = parse_or(t), *e3 = NULL;
        if (!e2)
            return NULL;
        if (tok_is(cur(t), "else")) {
            next(t);
            if (enter(t) < 0)
                return NULL;
            e3 = parse_condexpr(t);
            t->depth--;
            if (!e3)
                return NULL;
        }
        struct node *c = new_node(t, N_COND, line);
        if (!c)
            return NULL;
        c->a = e1;
        c->b = e2;
        c->x = e3;
        e1 = c;
        line = cur(t)->line;
    }
    return e1;
}

/* operand (WORD operand)*: `or` and `and`, left-associative. */
static struct node *parse_logical(struct tpl *t, const char *word, int kind, struct node *(*operand)(struct tpl *))
{
    int line = cur(t)->line;
    struct node *l = operand(t);
    while (l && tok_is(cur(t), word)) {
        next(t);
        struct node *r = operand(t), *n = r ? new_node(t, kind, line) : NULL;
        if (!n)
            return NULL;
        n->a = l;
        n->b = r;
        l = n;
        line = cur(t)->line;
    }
    return l;
}

static struct node *parse_or(struct tpl *t) { return parse_logical(t, "or", N_OR, parse_and); }

static struct node *parse_and(struct tpl *t) { return parse_logical(t, "and", N_AND, parse_not); }

static struct node *parse_not(struct tpl *t)
{
    if (tok_is(cur(t), "not")) {
        int line = next(t)->line;
        if (enter(t) < 0)
            return NULL;
        struct node *x = parse_not(t), *n = x ? new_node(t, N_NOT, line) : NULL;
        t->depth--;
        if (n)
            n->a = x;
        return n;
    }
    return parse_compare(t);
}

static struct node *parse_compare(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *e = parse_math1(t);
    if (!e)
        return NULL;
    _cleanup_(nl_freep) struct nlist ops = { 0 };
    _cleanup_free_ uint8_t *opv = NULL;
    size_t nops = 0, opcap = 0;
    if (nl_push(t, &ops, e) < 0)
        return NULL;
    for (;;) {
        struct token *k = cur(t);
        int op = -1;
        switch (k->type) {
        case TK_EQ: op = CMP_EQ; break;
        case TK_NE: op = CMP_NE; break;
        case TK_LT: op = CMP_LT; break;
        case TK_LTEQ: op = CMP_LE; break;
        case TK_GT: op = CMP_GT; break;
        case TK_GTEQ: op = CMP_GE; break;
        default:
            if (tok_is(k, "in"))
                op = CMP_IN;
            else if (tok_is(k, "not") && tok_is(look(t), "in"))
                op = CMP_NOTIN;
            break;
        }
        if (op < 0)
            break;
        if (tpl_grow(t, (void **)&opv, &opcap, nops + 1, 1) < 0)
            return NULL;
        next(t);
        if (op == CMP_NOTIN)
            next(t);
        struct node *x = parse_math1(t);
        if (!x || nl_push(t, &ops, x) < 0)
            return NULL;
        opv[nops++] = (uint8_t)op;
        line = cur(t)->line;
    }
    if (nops == 0)
        return e;
    struct node *r = new_node(t, N_CMP, line);
    if (!r)
        return NULL;
    r->nv = ops.n;
    r->v = nl_finish(t, &ops);
    r->ops = (uint8_t *)tpl_memdup(t, opv, nops);
    if (!r->v || !r->ops)
        return NULL;
    return r;
}

static struct node *binop(struct tpl *t, int op, int line, struct node *l, struct node *r)
{
    struct node *n = r ? new_node(t, N_BIN, line) : NULL;
    if (n) {
        n->op = (uint8_t)op;
        n->a = l;
        n->b = r;
    }
    return n;
}

static struct node *parse_math1(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *l = parse_concat(t);
    while (l && (cur(t)->type == TK_ADD || cur(t)->type == TK_SUB)) {
        int op = next(t)->type == TK_ADD ? OP_ADD : OP_SUB;
        l = binop(t, op, line, l, parse_concat(t));
        line = cur(t)->line;
    }
    return l;
}

static struct node *parse_concat(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *first = parse_math2(t);
    if (!first || cur(t)->type != TK_TILDE)
        return first;
    _cleanup_(nl_freep) struct nlist args = { 0 };
    if (nl_push(t, &args, first) < 0)
        return NULL;
    while (cur(t)->type == TK_TILDE) {
        next(t);
        struct node *x = parse_math2(t);
        if (!x || nl_push(t, &args, x) < 0)
            return NULL;
    }
    struct node *r = new_node(t, N_CONCAT, line);
    if (r) {
        r->nv = args.n;
        r->v = nl_finish(t, &args);
        if (!r->v)
            r = NULL;
    }
    return r;
}

static struct node *parse_math2(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *l = parse_pow(t);
    for (;;) {
        int ty = cur(t)->type, op;
        if (ty == TK_MUL)
            op = OP_MUL;
        else if (ty == TK_DIV)
            op = OP_DIV;
        else if (ty == TK_FLOORDIV)
            op = OP_FLOORDIV;
        else if (ty == TK_MOD)
            op = OP_MOD;
        else
            break;
        if (!l)
            return NULL;
        next(t);
        l = binop(t, op, line, l, parse_pow(t));
        line = cur(t)->line;
    }
    return l;
}

static struct node *parse_pow(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *l = parse_unary(t, true);
    while (l && cur(t)->type == TK_POW) {
        next(t);
        l = binop(t, OP_POW, line, l, parse_unary(t, true));
        line = cur(t)->line;
    }
    return l;
}

static struct node *parse_filter_expr(struct tpl *t, struct node *n);

static struct node *parse_unary(struct tpl *t, bool with_filter)
{
    if (enter(t) < 0)
        return NULL;
    struct token *k = cur(t);
    int line = k->line;
    struct node *n;
    if (k->type == TK_SUB || k->type == TK_ADD) {
        int kind = k->type == TK_SUB ? N_NEG : N_POS;
        next(t);
        struct node *x = parse_unary(t, false);
        n = x ? new_node(t, kind, line) : NULL;
        if (n)
            n->a = x;
    } else {
        n = parse_primary(t);
    }
    if (n)
        n = parse_postfix(t, n);
    if (n && with_filter)
        n = parse_filter_expr(t, n);
    t->depth--;
    return n;
}

static struct node *parse_list(struct tpl *t, int close, int kind, int line)
{
    _cleanup_(nl_freep) struct nlist items = { 0 };
    while (cur(t)->type != close) {
        if (items.n && expect(t, TK_COMMA) < 0)
            return NULL;
        if (cur(t)->type == close)
            break;
        struct node *k = parse_expression(t, true);
        if (!k || nl_push(t, &items, k) < 0)
            return NULL;
        if (kind == N_DICT) {
            if (expect(t, TK_COLON) < 0)
                return NULL;
            struct node *v = parse_expression(t, true);
            if (!v || nl_push(t, &items, v) < 0)
                return NULL;
        }
    }
    if (expect(t, close) < 0)
        return NULL;
    struct node *r = new_node(t, kind, line);
    if (r) {
        r->nv = kind == N_DICT ? items.n / 2 : items.n;
        r->v = nl_finish(t, &items);
        if (items.n && !r->v)
            r = NULL;
    }
    return r;
}

static struct node *parse_primary(struct tpl *t)
{
    struct token *k = cur(t);
    struct node *n;
    switch (k->type) {
    case TK_NAME:
        next(t);
        n = new_node(t, N_CONST, k->line);
        if (!n)
            return NULL;
        if (tok_is(k, "true") || tok_is(k, "True")) {
            n->c = tpl_tv_bool(true);
        } else if (tok_is(k, "false") || tok_is(k, "False")) {
            n->c = tpl_tv_bool(false);
        } else if (tok_is(k, "none") || tok_is(k, "None")) {
            n->c = tpl_tv_none();
        } else {
            n->kind = N_NAME;
            n->name = k->p;
            n->nlen = k->n;
        }
        return n;
    case TK_STRING: {
        next(t);
        n = new_node(t, N_CONST, k->line);
        if (!n)
            return NULL;
        if (cur(t)->type != TK_STRING) {
            n->c = tpl_tv_strn(k->p, k->n);
            return n;
        }
        struct mini_buf b = MINI_BUF_INIT;
        mini_buf_append(&b, k->p, k->n);
        while (cur(t)->type == TK_STRING) {
            mini_buf_append(&b, cur(t)->p, cur(t)->n);
            next(t);
        }
        int rc = tpl_tv_from_buf(t, k->line, &b, false, &n->c);
        mini_buf_free(&b);
        return rc < 0 ? NULL : n;
    }
    case TK_INT:
    case TK_FLOAT:
        next(t);
        n = new_node(t, N_CONST, k->line);
        if (n)
            n->c = k->type == TK_INT ? tpl_tv_int(k->num.i) : tpl_tv_float(k->num.f);
        return n;
    case TK_LPAREN:
        next(t);
        n = parse_tuple(t, false, true, NULL, true);
        if (n && expect(t, TK_RPAREN) < 0)
            return NULL;
        return n;
    case TK_LBRACKET: next(t); return parse_list(t, TK_RBRACKET, N_LIST, k->line);
    case TK_LBRACE: next(t); return parse_list(t, TK_RBRACE, N_DICT, k->line);
    default:
        if (k->type == TK_EOF)
            tpl_fail(t, k->line, "unexpected end of template");
        else
            tpl_fail(t, k->line, "unexpected '%s'", tpl_token_desc(k->type));
        return NULL;
    }
}

static bool is_tuple_end(struct tpl *t, const char *extra_end)
{
    int ty = cur(t)->type;
    if (ty == TK_VAR_END || ty == TK_BLOCK_END || ty == TK_RPAREN)
        return true;
    return extra_end && tok_is(cur(t), extra_end);
}

static struct node *parse_tuple_ns(struct tpl *t, bool simplified, bool with_condexpr, const char *extra_end,
                                   bool explicit_parens, bool with_namespace);

static struct node *parse_tuple(struct tpl *t, bool simplified, bool with_condexpr, const char *extra_end,
                                bool explicit_parens)
{
    return parse_tuple_ns(t, simplified, with_condexpr, extra_end, explicit_parens, false);
}

static struct node *parse_target_tuple(struct tpl *t, const char *extra_end, bool with_namespace)
{
    return parse_tuple_ns(t, true, true, extra_end, false, with_namespace);
}

/* `name.attr` as an assignment target of set (jinja2 3.1.6 also allows it
 * inside a tuple; 3.1.2 only alone). */
static struct node *parse_nsref(struct tpl *t)
{
    struct token *name = next(t);
    next(t); /* the dot */
    struct token *attr = cur(t);
    if (attr->type != TK_NAME) {
        fail_tok(t, "name");
        return NULL;
    }
    next(t);
    struct node *n = new_node(t, N_NSREF, name->line);
    if (n && !(n->a = new_node(t, N_NAME, name->line)))
        return NULL;
    if (n) {
        n->a->name = name->p;
        n->a->nlen = name->n;
        n->name = attr->p;
        n->nlen = attr->n;
    }
    return n;
}

/* parse_tuple_ns inside its level of nesting. */
static struct node *parse_tuple_items(struct tpl *t, bool simplified, bool with_condexpr, const char *extra_end,
                                      bool explicit_parens, bool with_namespace)
{
    int line = cur(t)->line;
    _cleanup_(nl_freep) struct nlist items = { 0 };
    bool is_tuple = false;
    for (;;) {
        if (items.n && expect(t, TK_COMMA) < 0)
            return NULL;
        if (is_tuple_end(t, extra_end))
            break;
        struct node *x;
        if (with_namespace && cur(t)->type == TK_NAME && look(t)->type == TK_DOT)
            x = parse_nsref(t);
        else
            x = simplified ? parse_primary(t) : parse_expression(t, with_condexpr);
        if (!x || nl_push(t, &items, x) < 0)
            return NULL;
        if (cur(t)->type == TK_COMMA)
            is_tuple = true;
        else
            break;
        line = cur(t)->line;
    }
    if (!is_tuple) {
        if (items.n)
            return items.v[0];
        if (!explicit_parens) {
            fail_tok(t, "an expression");
            return NULL;
        }
    }
    struct node *r = new_node(t, N_TUPLE, line);
    if (r) {
        r->nv = items.n;
        r->v = nl_finish(t, &items);
        if (items.n && !r->v)
            r = NULL;
    }
    return r;
}

static struct node *parse_tuple_ns(struct tpl *t, bool simplified, bool with_condexpr, const char *extra_end,
                                   bool explicit_parens, bool with_namespace)
{
    if (enter(t) < 0)
        return NULL;
    struct node *r = parse_tuple_items(t, simplified, with_condexpr, extra_end, explicit_parens, with_namespace);
    t->depth--;
    return r;
}

/* Arguments of a call, filter or test: `(a, b, k=v)`. */
static int parse_call_args(struct tpl *t, struct node *n)
{
    int line = cur(t)->line;
    _cleanup_(nl_freep) struct nlist args = { 0 };
    _cleanup_free_ struct kwarg *kw = NULL;
    size_t nkw = 0, kwcap = 0;
    if (expect(t, TK_LPAREN) < 0)
        return -1;
    bool need_comma = false;
    while (cur(t)->type != TK_RPAREN) {
        if (need_comma) {
            if (expect(t, TK_COMMA) < 0)
                return -1;
            if (cur(t)->type == TK_RPAREN)
                break;
        }
        if (cur(t)->type == TK_MUL || cur(t)->type == TK_POW)
            return tpl_fail(t, cur(t)->line, "*args and **kwargs in calls are not supported");
        if (cur(t)->type == TK_NAME && look(t)->type == TK_ASSIGN) {
            struct token *name = next(t);
            next(t);
            struct node *v = parse_expression(t, true);
            if (!v || tpl_grow(t, (void **)&kw, &kwcap, nkw + 1, sizeof *kw) < 0)
                return -1;
            kw[nkw++] = (struct kwarg){ name->p, name->n, v };
        } else {
            if (nkw)
                return tpl_fail(t, line, "invalid syntax for function call expression");
            struct node *v = parse_expression(t, true);
            if (!v || nl_push(t, &args, v) < 0)
                return -1;
        }
        need_comma = true;
    }
    if (expect(t, TK_RPAREN) < 0)
        return -1;
    n->nv = args.n;
    n->v = nl_finish(t, &args);
    if (args.n && !n->v)
        return -1;
    if (nkw) {
        n->kw = tpl_alloc(t, nkw * sizeof *kw);
        if (!n->kw)
            return -1;
        memcpy(n->kw, kw, nkw * sizeof *kw);
        n->nkw = nkw;
    }
    return 0;
}

static struct node *parse_call(struct tpl *t, struct node *callee)
{
    struct node *n = new_node(t, N_CALL, cur(t)->line);
    if (!n)
        return NULL;
    n->a = callee;
    return parse_call_args(t, n) < 0 ? NULL : n;
}

static struct node *parse_subscribed(struct tpl *t)
{
    int line = cur(t)->line;
    struct node *args[3] = { NULL, NULL, NULL };
    if (cur(t)->type == TK_COLON) {
        next(t);
    } else {
        struct node *n = parse_expression(t, true);
        if (!n || cur(t)->type != TK_COLON)
            return n;
        next(t);
        args[0] = n;
    }
    if (cur(t)->type != TK_COLON && cur(t)->type != TK_RBRACKET && cur(t)->type != TK_COMMA) {
        if (!(args[1] = parse_expression(t, true)))
            return NULL;
    }
    if (cur(t)->type == TK_COLON) {
        next(t);
        if (cur(t)->type != TK_RBRACKET && cur(t)->type != TK_COMMA)
            if (!(args[2] = parse_expression(t, true)))
                return NULL;
    }
    struct node *s = new_node(t, N_SLICE, line);
    if (s) {
        s->a = args[0];
        s->b = args[1];
        s->x = args[2];
    }
    return s;
}

static struct node *parse_subscript(struct tpl *t, struct node *obj)
{
    struct token *k = next(t);
    if (k->type == TK_DOT) {
        struct token *a = next(t);
        if (a->type == TK_NAME) {
            struct node *n = new_node(t, N_GETATTR, k->line);
            if (n) {
                n->a = obj;
                n->name = a->p;
                n->nlen = a->n;
            }
            return n;
        }
        if (a->type != TK_INT) {
            tpl_fail(t, a->line, "expected name or number");
            return NULL;
        }
        struct node *c = new_node(t, N_CONST, a->line), *n = new_node(t, N_GETITEM, k->line);
        if (!c || !n)
            return NULL;
        c->c = tpl_tv_int(a->num.i);
        n->a = obj;
        n->b = c;
        return n;
    }
    /* '[' */
    _cleanup_(nl_freep) struct nlist args = { 0 };
    while (cur(t)->type != TK_RBRACKET) {
        if (args.n && expect(t, TK_COMMA) < 0)
            return NULL;
        struct node *x = parse_subscribed(t);
        if (!x || nl_push(t, &args, x) < 0)
            return NULL;
    }
    if (expect(t, TK_RBRACKET) < 0)
        return NULL;
    struct node *arg;
    if (args.n == 1) {
        arg = args.v[0];
    } else {
        arg = new_node(t, N_TUPLE, k->line);
        if (!arg)
            return NULL;
        arg->nv = args.n;
        arg->v = nl_finish(t, &args);
        if (args.n && !arg->v)
            return NULL;
    }
    struct node *r = new_node(t, N_GETITEM, k->line);
    if (r) {
        r->a = obj;
        r->b = arg;
    }
    return r;
}

static struct node *parse_postfix(struct tpl *t, struct node *n)
{
    while (n) {
        int ty = cur(t)->type;
        if (ty == TK_DOT || ty == TK_LBRACKET)
            n = parse_subscript(t, n);
        else if (ty == TK_LPAREN)
            n = parse_call(t, n);
        else
            break;
    }
    return n;
}

static struct node *parse_test(struct tpl *t, struct node *obj)
{
    struct token *is = next(t);
    bool negated = false;
    if (tok_is(cur(t), "not")) {
        next(t);
        negated = true;
    }
    struct token *name = cur(t);
    if (name->type != TK_NAME) {
        fail_tok(t, "name");
        return NULL;
    }
    next(t);
    if (cur(t)->type == TK_DOT) {
        tpl_fail(t, name->line, "dotted test names are not supported");
        return NULL;
    }
    struct node *n = new_node(t, N_TEST, is->line);
    if (!n)
        return NULL;
    n->a = obj;
    n->name = name->p;
    n->nlen = name->n;
    struct token *k = cur(t);
    if (k->type == TK_LPAREN) {
        if (parse_call_args(t, n) < 0)
            return NULL;
    } else if ((k->type == TK_NAME || k->type == TK_STRING || k->type == TK_INT || k->type == TK_FLOAT ||
                k->type == TK_LPAREN || k->type == TK_LBRACKET || k->type == TK_LBRACE) &&
               !tok_is(k, "else") && !tok_is(k, "or") && !tok_is(k, "and")) {
        if (tok_is(k, "is")) {
            tpl_fail(t, k->line, "You cannot chain multiple tests with is");
            return NULL;
        }
        struct node *arg = parse_primary(t);
        if (arg)
            arg = parse_postfix(t, arg);
        if (!arg)
            return NULL;
        n->v = tpl_alloc(t, sizeof *n->v);
        if (!n->v)
            return NULL;
        n->v[0] = arg;
        n->nv = 1;
    }
    n->fn = tpl_find_test(n->name, n->nlen); /* NULL: checked by check_names() */
    if (negated) {
        struct node *x = new_node(t, N_NOT, is->line);
        if (!x)
            return NULL;
        x->a = n;
        n = x;
    }
    return n;
}

static struct node *parse_filter(struct tpl *t, struct node *n, bool start_inline)
{
    while (cur(t)->type == TK_PIPE || start_inline) {
        if (!start_inline)
            next(t);
        struct token *name = cur(t);
        if (name->type != TK_NAME) {
            fail_tok(t, "name");
            return NULL;
        }
        next(t);
        if (cur(t)->type == TK_DOT) {
            tpl_fail(t, name->line, "dotted filter names are not supported");
            return NULL;
        }
        struct node *f = new_node(t, N_FILTER, name->line);
        if (!f)
            return NULL;
        f->a = n;
        f->name = name->p;
        f->nlen = name->n;
        if (cur(t)->type == TK_LPAREN && parse_call_args(t, f) < 0)
            return NULL;
        f->fn = tpl_find_filter(f->name, f->nlen); /* NULL: checked by check_names() */
        n = f;
        start_inline = false;
    }
    return n;
}

static struct node *parse_filter_expr(struct tpl *t, struct node *n)
{
    while (n) {
        int ty = cur(t)->type;
        if (ty == TK_PIPE)
            n = parse_filter(t, n, false);
        else if (tok_is(cur(t), "is"))
            n = parse_test(t, n);
        else if (ty == TK_LPAREN)
            n = parse_call(t, n);
        else
            break;
    }
    return n;
}

/* ---------------------------------------------------------- statements */

struct slist {
    struct stmt **v;
    size_t n, cap;
};

/* Frees a statement list (_cleanup_(sl_freep)); the statements are in the arena. */
static inline void sl_freep(struct slist *l) { free(l->v); }

static int sl_push(struct tpl *t, struct slist *l, struct stmt *s)
{
    if (tpl_grow(t, (void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0)
        return -1;
    l->v[l->n++] = s;
    return 0;
}

static struct stmt *new_stmt(struct tpl *t, int kind, int line)
{
    struct stmt *s = tpl_alloc(t, sizeof *s);
    if (s) {
        s->kind = (uint8_t)kind;
        s->line = line;
    }
    return s;
}

static int subparse(struct tpl *t, const char *const *end, struct body *out);

/* The body of a block statement up to one of the `end` tag names. */
static int parse_statements(struct tpl *t, const char *const *end, bool drop_needle, struct body *out)
{
    if (cur(t)->type == TK_COLON)
        next(t);
    if (expect(t, TK_BLOCK_END) < 0 || subparse(t, end, out) < 0)
        return -1;
    if (cur(t)->type == TK_EOF) {
        char want[128] = "";
        for (size_t i = 0; end[i]; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", end[i]);
        return tpl_fail(t, cur(t)->line,
                        "Unexpected end of template. Jinja was looking for the "
                        "following tags: %s.",
                        want);
    }
    if (drop_needle)
        next(t);
    return 0;
}

static bool can_assign(struct node *n)
{
    if (n->kind == N_NAME)
        return true;
    if (n->kind == N_TUPLE) {
        for (size_t i = 0; i < n->nv; i++)
            if (!can_assign(n->v[i]))
                return false;
        return true;
    }
    return n->kind == N_NSREF;
}

static struct node *parse_assign_target(struct tpl *t, bool with_namespace, const char *extra_end)
{
    struct node *n = parse_target_tuple(t, extra_end, with_namespace);
    if (n && !can_assign(n)) {
        tpl_fail(t, n->line, "can't assign to '%s'", n->kind == N_CONST ? "const" : "expression");
        return NULL;
    }
    return n;
}

static bool names_loop(const struct node *n)
{
    if (n->kind == N_NAME)
        return n->nlen == 4 && memcmp(n->name, "loop", 4) == 0;
    if (n->kind == N_TUPLE)
        for (size_t i = 0; i < n->nv; i++)
            if (names_loop(n->v[i]))
                return true;
    return false;
}

static struct stmt *parse_for(struct tpl *t)
{
    static const char *const body_end[] = { "endfor", "else", NULL }, *const else_end[] = { "endfor", NULL };
    struct stmt *s = new_stmt(t, S_FOR, next(t)->line);
    if (!s || !(s->target = parse_assign_target(t, false, "in")))
        return NULL;
    if (names_loop(s->target)) {
        tpl_fail(t, s->line, "Can't assign to special loop variable in for-loop target");
        return NULL;
    }
    if (expect_name(t, "in") < 0 || !(s->expr = parse_tuple(t, false, false, "recursive", false)))
        return NULL;
    if (tok_is(cur(t), "if")) {
        next(t);
        if (!(s->cond = parse_expression(t, true)))
            return NULL;
    }
    if (tok_is(cur(t), "recursive")) {
        next(t);
        s->recursive = true;
    }
    if (parse_statements(t, body_end, false, &s->body) < 0)
        return NULL;
    if (tok_is(next(t), "else") && parse_statements(t, else_end, true, &s->orelse) < 0)
        return NULL;
    return s;
}

static struct stmt *parse_if(struct tpl *t)
{
    static const char *const body_end[] = { "elif", "else", "endif", NULL }, *const else_end[] = { "endif", NULL };
    struct stmt *first = new_stmt(t, S_IF, next(t)->line), *s = first;
    if (!first)
        return NULL;
    for (;;) {
        if (!(s->expr = parse_tuple(t, false, false, NULL, false)) ||
            parse_statements(t, body_end, false, &s->body) < 0)
            return NULL;
        struct token *k = next(t);
        if (tok_is(k, "elif")) {
            struct stmt *e = new_stmt(t, S_IF, cur(t)->line);
            if (!e)
                return NULL;
            s->orelse.s = tpl_alloc(t, sizeof *s->orelse.s);
            if (!s->orelse.s)
                return NULL;
            s->orelse.s[0] = e;
            s->orelse.n = 1;
            s = e;
            continue;
        }
        if (tok_is(k, "else") && parse_statements(t, else_end, true, &s->orelse) < 0)
            return NULL;
        return first;
    }
}

static struct stmt *parse_set(struct tpl *t)
{
    static const char *const end[] = { "endset", NULL };
    struct stmt *s = new_stmt(t, S_SET, next(t)->line);
    if (!s || !(s->target = parse_assign_target(t, true, NULL)))
        return NULL;
    if (cur(t)->type == TK_ASSIGN) {
        next(t);
        s->expr = parse_tuple(t, false, true, NULL, false);
        return s->expr ? s : NULL;
    }
    s->kind = S_SETBLOCK;
    if (cur(t)->type == TK_PIPE && !(s->filter = parse_filter(t, NULL, false)))
        return NULL;
    if (parse_statements(t, end, true, &s->body) < 0)
        return NULL;
    return s;
}

static struct stmt *parse_with(struct tpl *t)
{
    static const char *const end[] = { "endwith", NULL };
    struct stmt *s = new_stmt(t, S_WITH, next(t)->line);
    _cleanup_(nl_freep) struct nlist targets = { 0 };
    _cleanup_(nl_freep) struct nlist values = { 0 };
    if (!s)
        return NULL;
    while (cur(t)->type != TK_BLOCK_END) {
        if (targets.n && expect(t, TK_COMMA) < 0)
            return NULL;
        struct node *tg = parse_assign_target(t, false, NULL);
        if (!tg || nl_push(t, &targets, tg) < 0 || expect(t, TK_ASSIGN) < 0)
            return NULL;
        struct node *v = parse_expression(t, true);
        if (!v || nl_push(t, &values, v) < 0)
            return NULL;
    }
    s->nwith = targets.n;
    s->targets = nl_finish(t, &targets);
    s->values = nl_finish(t, &values);
    if (s->nwith && (!s->targets || !s->values))
        return NULL;
    if (parse_statements(t, end, true, &s->body) < 0)
        return NULL;
    return s;
}

static int parse_statement(struct tpl *t, struct slist *out)
{
    static const char *const filter_end[] = { "endfilter", NULL };
    static const char *const unsupported[] = {
        "block", "extends", "macro", "include", "from", "import", "call", "autoescape", NULL,
    };
    struct token *k = cur(t);
    struct stmt *s = NULL;
    if (k->type != TK_NAME)
        return tpl_fail(t, k->line, "tag name expected");
    if (enter(t) < 0)
        return -1;
    if (tok_is(k, "for")) {
        s = parse_for(t);
    } else if (tok_is(k, "if")) {
        s = parse_if(t);
    } else if (tok_is(k, "set")) {
        s = parse_set(t);
    } else if (tok_is(k, "with")) {
        s = parse_with(t);
    } else if (tok_is(k, "filter")) {
        s = new_stmt(t, S_FILTERBLOCK, next(t)->line);
        if (s && (!(s->filter = parse_filter(t, NULL, true)) || parse_statements(t, filter_end, true, &s->body) < 0))
            s = NULL;
    } else if (tok_is(k, "print")) {
        next(t);
        bool first = true;
        while (cur(t)->type != TK_BLOCK_END) {
            if (!first && expect(t, TK_COMMA) < 0)
                return -1;
            first = false;
            struct stmt *p = new_stmt(t, S_OUT, cur(t)->line);
            if (!p || !(p->expr = parse_expression(t, true)) || sl_push(t, out, p) < 0)
                return -1;
        }
        t->depth--;
        return 0;
    } else {
        for (size_t i = 0; unsupported[i]; i++)
            if (tok_is(k, unsupported[i]))
                return tpl_fail(t, k->line, "the '%s' tag is not supported", unsupported[i]);
        return tpl_fail(t, k->line, "Encountered unknown tag '%.*s'.", (int)k->n, k->p);
    }
    t->depth--;
    if (!s)
        return -1;
    return sl_push(t, out, s);
}

/* subparse inside its level of nesting. */
static int subparse_body(struct tpl *t, const char *const *end, struct body *out)
{
    _cleanup_(sl_freep) struct slist l = { 0 };
    for (;;) {
        struct token *k = cur(t);
        if (k->type == TK_EOF)
            break;
        if (k->type == TK_DATA) {
            struct stmt *s = new_stmt(t, S_DATA, k->line);
            if (!s || sl_push(t, &l, s) < 0)
                return -1;
            s->data = k->p;
            s->dlen = k->n;
            next(t);
        } else if (k->type == TK_VAR_BEGIN) {
            next(t);
            struct stmt *s = new_stmt(t, S_OUT, k->line);
            if (!s || !(s->expr = parse_tuple(t, false, true, NULL, false)) || expect(t, TK_VAR_END) < 0 ||
                sl_push(t, &l, s) < 0)
                return -1;
        } else if (k->type == TK_BLOCK_BEGIN) {
            next(t);
            if (end) {
                bool stop = false;
                for (size_t i = 0; end[i]; i++)
                    if (tok_is(cur(t), end[i]))
                        stop = true;
                if (stop)
                    break;
            }
            if (parse_statement(t, &l) < 0 || expect(t, TK_BLOCK_END) < 0)
                return -1;
        } else {
            return tpl_fail(t, k->line, "unexpected '%s'", tpl_token_desc(k->type));
        }
    }
    out->n = l.n;
    out->s = NULL;
    if (l.n) {
        out->s = tpl_alloc(t, l.n * sizeof *out->s);
        if (!out->s)
            return -1;
        memcpy(out->s, l.v, l.n * sizeof *out->s);
    }
    return 0;
}

static int subparse(struct tpl *t, const char *const *end, struct body *out)
{
    if (enter(t) < 0)
        return -1;
    int rc = subparse_body(t, end, out);
    t->depth--;
    return rc;
}

/* Jinja's compiler rejects an unknown filter or test, except inside an
 * {% if %} (test and branches) or an inline if-expression, where the error
 * waits until the filter is actually called ("soft" frames; a for, with,
 * set or filter block inside starts a hard frame again). */
static int check_expr(struct tpl *t, const struct node *n, bool soft)
{
    if (!n)
        return 0;
    if (n->kind == N_COND)
        soft = true;
    if ((n->kind == N_FILTER || n->kind == N_TEST) && !n->fn && !soft)
        return tpl_fail(t, n->line, "No %s named '%.*s'.", n->kind == N_FILTER ? "filter" : "test", (int)n->nlen,
                        n->name);
    if (n->kind == N_CONST || n->kind == N_NAME)
        return 0;
    if (check_expr(t, n->a, soft) < 0 || check_expr(t, n->b, soft) < 0 || check_expr(t, n->x, soft) < 0)
        return -1;
    size_t nv = n->kind == N_DICT ? 2 * n->nv : n->nv;
    for (size_t i = 0; i < nv; i++)
        if (check_expr(t, n->v[i], soft) < 0)
            return -1;
    for (size_t i = 0; i < n->nkw; i++)
        if (check_expr(t, n->kw[i].value, soft) < 0)
            return -1;
    return 0;
}

static int check_body(struct tpl *t, const struct body *b, bool soft)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct stmt *s = b->s[i];
        int rc = 0;
        switch (s->kind) {
        case S_OUT:
        case S_SET: rc = check_expr(t, s->expr, soft); break;
        case S_IF:
            rc = check_expr(t, s->expr, true) < 0 || check_body(t, &s->body, true) < 0 ||
                    check_body(t, &s->orelse, true) < 0
                ? -1
                : 0;
            break;
        case S_FOR:
            rc = check_expr(t, s->expr, soft) < 0 || check_expr(t, s->cond, false) < 0 ||
                    check_body(t, &s->body, false) < 0 || check_body(t, &s->orelse, false) < 0
                ? -1
                : 0;
            break;
        case S_WITH:
            for (size_t k = 0; k < s->nwith && rc == 0; k++)
                rc = check_expr(t, s->values[k], soft);
            if (rc == 0)
                rc = check_body(t, &s->body, false);
            break;
        case S_SETBLOCK:
        case S_FILTERBLOCK:
            rc = check_body(t, &s->body, false) < 0 || check_expr(t, s->filter, false) < 0 ? -1 : 0;
            break;
        default: break;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

int tpl_parse(struct tpl *t, struct body *out)
{
    t->pos = 0;
    t->depth = 0;
    /* Without end tags subparse() stops only at the end of the template; a
     * stray {% endif %} is an unknown tag to parse_statement(). */
    if (subparse(t, NULL, out) < 0 || check_body(t, out, false) < 0)
        return -1;
    return 0;
}
