/* Internals of the template engine, private to agent/template/.
 *
 * One render is one `struct tpl`: its arena (arena.h: the memory of every
 * token, node and value made while rendering, freed in one go at the end,
 * the limits and the first error), the tokens and the evaluation state.
 * Values (`struct tv`) are small tagged unions passed by value; strings
 * are (pointer, length) slices into the source, into the caller's cJSON
 * tree or into the arena, and are never modified.
 *
 * The files, in the order a render uses them:
 *   template.c      entry point (mini_tpl_render, template.h)
 *   arena.c         arena, budget, errors (arena.h)
 *   lex.c, parse.c  Jinja's lexer and parser: tokens, then the syntax tree
 *   eval.c          constant folding, statements, expressions, getattr/getitem
 *   ops.c           arithmetic, `in`, comparisons
 *   filters.c, tests.c, methods.c, format.c, builtin.c (builtin.h)
 *                   the builtins, their lookup by name, the % operator
 *   value.c         values with Python semantics: str, repr, ==, <, iter, json
 *   unicode.c       UTF-8 and Unicode (unicode.h), tables in unicode_tables.c */
#ifndef MINI_TEMPLATE_INTERNAL_H
#define MINI_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "mini/buf.h"
#include "mini/err.h"
#include "arena.h"
#include "template.h"
#include "unicode.h"

#define TPL_MAX_NEST 200  /* nesting of expressions and blocks in the source */
#define TPL_MAX_DEPTH 400 /* recursion while evaluating or walking values */

/* ---- values ---- */

enum tv_kind { TV_UNDEF, TV_NONE, TV_BOOL, TV_INT, TV_FLOAT, TV_STR, TV_SEQ, TV_DICT, TV_NS, TV_LOOP, TV_FUNC, TV_GEN };
/* Sequence flavours: they differ in repr() and in what they support. */
enum seq_kind { SEQ_LIST, SEQ_TUPLE, SEQ_ITEMS, SEQ_KEYS, SEQ_VALUES, SEQ_RANGE };

struct tv;
struct tseq {
    size_t n;
    struct tv *v;
    int64_t start, stop, step; /* SEQ_RANGE */
};
struct tdict {
    size_t n, cap;
    struct tv *k, *v;
}; /* insertion ordered */
struct tloop;
struct tfunc;
struct tgen;

struct tv {
    uint8_t kind;
    uint8_t sub; /* TV_STR: 1 = Markup; TV_SEQ: enum seq_kind; TV_UNDEF: 1 = lenient */
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t n;
        } s;
        struct tseq *seq;
        struct tdict *d; /* TV_DICT; TV_NS (mutable) */
        struct tloop *loop;
        struct tfunc *fn;
        struct tgen *gen;
        const char *undef; /* TV_UNDEF: what is undefined (message) */
    } u;
};

/* ---- lexer tokens ---- */

enum tk {
    TK_EOF,
    TK_DATA,
    TK_VAR_BEGIN,
    TK_VAR_END,
    TK_BLOCK_BEGIN,
    TK_BLOCK_END,
    TK_NAME,
    TK_STRING,
    TK_INT,
    TK_FLOAT,
    TK_ADD,
    TK_SUB,
    TK_DIV,
    TK_FLOORDIV,
    TK_MUL,
    TK_MOD,
    TK_POW,
    TK_TILDE,
    TK_LBRACKET,
    TK_RBRACKET,
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACE,
    TK_RBRACE,
    TK_EQ,
    TK_NE,
    TK_GT,
    TK_GTEQ,
    TK_LT,
    TK_LTEQ,
    TK_ASSIGN,
    TK_DOT,
    TK_COLON,
    TK_PIPE,
    TK_COMMA,
    TK_SEMICOLON,
};

struct token {
    uint8_t type;
    int line;
    const char *p; /* DATA, NAME, STRING (decoded): text */
    size_t n;
    union {
        int64_t i;
        double f;
    } num;
};

/* ---- syntax tree ---- */

enum nk {
    N_CONST,
    N_NAME,
    N_TUPLE,
    N_LIST,
    N_DICT,
    N_GETATTR,
    N_GETITEM,
    N_SLICE,
    N_CALL,
    N_FILTER,
    N_TEST,
    N_NOT,
    N_NEG,
    N_POS,
    N_BIN,
    N_AND,
    N_OR,
    N_CONCAT,
    N_CMP,
    N_COND,
    N_NSREF,
};
/* N_BIN operators and N_CMP operators. */
enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW };
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN };

struct node;
struct tpl;
struct kwarg {
    const char *name;
    size_t n;
    struct node *value;
};

/* Evaluated arguments of a call, filter or test. */
struct callargs {
    size_t n;
    struct tv *v;
    size_t nkw;
    const struct kwarg *kw; /* names */
    struct tv *kwv;
};

typedef int (*tpl_filter_fn)(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out);
/* A filter or test.  A lazy filter is a Python generator in Jinja: it runs
 * when its result is first iterated, and the result is single-use. */
struct tpl_builtin {
    const char *name;
    tpl_filter_fn fn;
    bool lazy;
};

/* TV_GEN: a generator or iterator.  Either `fn` is still to be run on
 * `input` (giving a list), or `seq` holds the items and `pos` how many were
 * consumed. */
struct tgen {
    const struct tpl_builtin *fn;
    struct tv input;
    struct callargs args;
    int line;
    struct tseq *seq;
    size_t pos;
    const char *type; /* Python type name, for messages */
};

struct node {
    uint8_t kind;
    uint8_t op; /* N_BIN: OP_*; N_TEST: negated is a separate N_NOT */
    int line;
    struct tv c;      /* N_CONST */
    const char *name; /* N_NAME, N_GETATTR, N_NSREF (attribute), N_FILTER, N_TEST */
    size_t nlen;
    struct node *a, *b, *x; /* operands; N_SLICE start/stop/step; N_COND: a=value b=test x=else */
    struct node **v;        /* N_TUPLE/N_LIST items, N_DICT keys and values (2n), N_CALL/
                                 N_FILTER/N_TEST args, N_CMP/N_CONCAT operands */
    size_t nv;
    uint8_t *ops; /* N_CMP: the nv-1 operators */
    struct kwarg *kw;
    size_t nkw;
    const struct tpl_builtin *fn; /* N_FILTER, N_TEST */
};

enum sk { S_DATA, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_WITH, S_FILTERBLOCK };

struct stmt;
struct body {
    struct stmt **s;
    size_t n;
};

struct stmt {
    uint8_t kind;
    bool recursive; /* S_FOR */
    int line;
    const char *data; /* S_DATA */
    size_t dlen;
    struct node *expr;               /* S_OUT, S_IF test, S_FOR iterable, S_SET value */
    struct node *target;             /* S_FOR, S_SET, S_SETBLOCK */
    struct node *cond;               /* S_FOR filter */
    struct node *filter;             /* S_SETBLOCK, S_FILTERBLOCK: chain of N_FILTER with a NULL base */
    struct node **targets, **values; /* S_WITH */
    size_t nwith;
    struct body body, orelse; /* S_IF, S_FOR (else), S_SETBLOCK, S_WITH, S_FILTERBLOCK */
};

/* ---- a render ---- */

struct frame;

struct tpl {
    struct tpl_arena a; /* memory, budget and the first error */
    /* lexer and parser */
    int depth;          /* parser nesting or evaluation recursion */
    struct token *toks; /* malloc'd, owned here */
    size_t ntok, tokcap, pos;
    /* evaluation */
    const cJSON *vars;
    struct frame *globals;       /* converted context variables (cache) */
    struct mini_buf *out;        /* where output goes now */
    struct frame *scope;         /* innermost variable scope */
    const struct tv *chain_base; /* input of a {% filter %} / {% set | f %} chain */
};

/* The arena of a render (arena.h), as the rest of the engine uses it. */
static inline void *tpl_alloc(struct tpl *t, size_t n) { return tpl_arena_alloc(&t->a, n); }
static inline char *tpl_memdup(struct tpl *t, const void *p, size_t n) { return tpl_arena_memdup(&t->a, p, n); }
static inline int tpl_grow(struct tpl *t, void **arr, size_t *cap, size_t need, size_t size)
{
    return tpl_arena_grow(&t->a, arr, cap, need, size);
}
static inline int tpl_oom(struct tpl *t) { return tpl_arena_oom(&t->a); }
static inline int tpl_charge(struct tpl *t, int line, size_t n) { return tpl_arena_charge(&t->a, line, n); }
static inline int tpl_step(struct tpl *t, int line) { return tpl_arena_step(&t->a, line); }
static inline int tpl_work(struct tpl *t, int line, size_t n) { return tpl_arena_work(&t->a, line, n); }
static inline bool tpl_failed(const struct tpl *t) { return t->a.failed; }
static inline size_t tpl_mem_limit(const struct tpl *t) { return t->a.lim.mem; }
int tpl_fail(struct tpl *t, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* lex.c, parse.c */
int tpl_lex(struct tpl *t, const char *src, size_t len);
const char *tpl_token_desc(int type);
int tpl_parse(struct tpl *t, struct body *out);
/* filters.c, tests.c: a filter or test by name (the parser resolves them
 * when it builds the tree), NULL when there is none. */
const struct tpl_builtin *tpl_find_filter(const char *name, size_t n);
const struct tpl_builtin *tpl_find_test(const char *name, size_t n);

/* ---- evaluation ---- */

struct frame;
struct tloop {
    struct tseq *items;
    size_t index0, depth0;
    struct tv last_changed;
    bool has_changed;
    const struct stmt *st;
    struct frame *outer;
};

/* What a TV_FUNC calls. */
enum fid {
    F_UNSUPPORTED,
    /* globals */
    G_RANGE,
    G_DICT,
    G_NAMESPACE,
    G_LIPSUM,
    G_CYCLER,
    G_JOINER,
    /* loop */
    L_CYCLE,
    L_CHANGED,
    /* str */
    S_CAPITALIZE,
    S_CENTER,
    S_COUNT,
    S_ENDSWITH,
    S_FIND,
    S_INDEX,
    S_ISALNUM,
    S_ISALPHA,
    S_ISASCII,
    S_ISDECIMAL,
    S_ISDIGIT,
    S_ISLOWER,
    S_ISNUMERIC,
    S_ISSPACE,
    S_ISUPPER,
    S_JOIN,
    S_LJUST,
    S_LOWER,
    S_LSTRIP,
    S_PARTITION,
    S_REMOVEPREFIX,
    S_REMOVESUFFIX,
    S_REPLACE,
    S_RFIND,
    S_RINDEX,
    S_RJUST,
    S_RPARTITION,
    S_RSPLIT,
    S_RSTRIP,
    S_SPLIT,
    S_SPLITLINES,
    S_STARTSWITH,
    S_STRIP,
    S_TITLE,
    S_UPPER,
    S_ZFILL,
    /* dict */
    D_GET,
    D_ITEMS,
    D_KEYS,
    D_VALUES,
    D_COPY,
    /* list, tuple, range */
    Q_COUNT,
    Q_INDEX,
    Q_COPY,
};

struct tfunc {
    int id;
    struct tv self;
    const char *name;
};

/* eval.c: statements, expressions, Jinja's attribute and item rules,
 * constant folding. */
int tpl_fold(struct tpl *t, struct body *b);
int tpl_exec(struct tpl *t, const struct body *b);
/* Python's getattr (*found false when there is no such attribute). */
int tpl_py_getattr(struct tpl *t, int line, const struct tv *obj, const char *name, size_t len, struct tv *out,
                   bool *found);
int tpl_getitem(struct tpl *t, int line, const struct tv *obj, const struct tv *key, struct tv *out);
struct tv tpl_undef_attr(struct tpl *t, const struct tv *obj, const char *name, size_t len);
int tpl_run_for(struct tpl *t, const struct stmt *st, const struct tv *iterable, size_t depth0);
/* ops.c */
int tpl_arith(struct tpl *t, int line, int op, const struct tv *a, const struct tv *b, struct tv *out);
int tpl_contains(struct tpl *t, int line, const struct tv *seq, const struct tv *x, bool *out);
int tpl_compare(struct tpl *t, int line, int op, const struct tv *a, const struct tv *b, bool *out);
int tpl_overflow(struct tpl *t, int line);

/* methods.c: methods and global functions. */
int tpl_make_func(struct tpl *t, int id, const struct tv *self, const char *name, struct tv *out);
/* The method `name` of obj's type: its id and canonical name, or false. */
bool tpl_method(const struct tv *obj, const char *name, size_t len, int *id, const char **mname);
int tpl_call(struct tpl *t, int line, const struct tv *callee, struct callargs *a, struct tv *out);
/* "<LoopContext i/n>" and the names of functions. */
int tpl_describe(struct tpl *t, const struct tv *v, struct mini_buf *b);
/* filters.c: call a filter; a lazy one becomes a generator that runs when consumed. */
int tpl_apply_filter(struct tpl *t, int line, const struct tpl_builtin *f, const struct tv *v, struct callargs *a,
                     struct tv *out);
/* format.c: fmt % args. */
int tpl_percent_format(struct tpl *t, int line, const struct tv *fmt, const struct tv *args, struct tv *out);
/* builtin.c: markupsafe's escaping of p[0..n), appended to b. */
int tpl_html_escape(struct mini_buf *b, const char *p, size_t n);

/* value.c: values */
static inline struct tv tpl_tv_none(void)
{
    struct tv v = { .kind = TV_NONE };
    return v;
}
static inline struct tv tpl_tv_bool(bool b)
{
    struct tv v = { .kind = TV_BOOL, .u.b = b };
    return v;
}
static inline struct tv tpl_tv_int(int64_t i)
{
    struct tv v = { .kind = TV_INT, .u.i = i };
    return v;
}
static inline struct tv tpl_tv_float(double f)
{
    struct tv v = { .kind = TV_FLOAT, .u.f = f };
    return v;
}
static inline struct tv tpl_tv_strn(const char *p, size_t n)
{
    struct tv v = { .kind = TV_STR, .u.s = { p, n } };
    return v;
}
static inline bool tpl_tv_isnum(const struct tv *v)
{
    return v->kind == TV_BOOL || v->kind == TV_INT || v->kind == TV_FLOAT;
}
static inline bool tpl_tv_isstrict_undef(const struct tv *v) { return v->kind == TV_UNDEF && !v->sub; }
struct tv tpl_tv_undef(struct tpl *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tpl_tv_undef_error(struct tpl *t, int line, const struct tv *v);
const char *tpl_tv_type(const struct tv *v); /* Python type name */
/* A string made from b's bytes (copied into the arena); b is reset. */
int tpl_tv_from_buf(struct tpl *t, int line, struct mini_buf *b, bool markup, struct tv *out);
int tpl_tv_new_seq(struct tpl *t, size_t n, int kind, struct tv *out); /* n items, zeroed */
int tpl_tv_new_dict(struct tpl *t, size_t cap, struct tv *out);
int tpl_tv_dict_set(struct tpl *t, int line, struct tdict *d, const struct tv *k, const struct tv *v);
/* Index of key in d, or -1; error (-2) when the key is unhashable. */
long tpl_tv_dict_find(struct tpl *t, int line, const struct tdict *d, const struct tv *k);
int tpl_tv_from_json(struct tpl *t, const cJSON *j, struct tv *out, int depth);
bool tpl_tv_hashable(const struct tv *v);

int tpl_tv_truth(struct tpl *t, int line, const struct tv *v, bool *out);
int tpl_tv_str(struct tpl *t, int line, const struct tv *v, struct mini_buf *b);
int tpl_tv_repr(struct tpl *t, int line, const struct tv *v, struct mini_buf *b);
/* str(v) as a string value (no copy when v is a string). */
int tpl_tv_to_str(struct tpl *t, int line, const struct tv *v, struct tv *out);
int tpl_tv_eq(struct tpl *t, int line, const struct tv *a, const struct tv *b, bool *out);
/* Python ordering: *out < 0, 0, > 0; error when the types do not order. */
int tpl_tv_cmp(struct tpl *t, int line, const struct tv *a, const struct tv *b, int *out);
int tpl_tv_len(struct tpl *t, int line, const struct tv *v, size_t *out);
/* The items iter(v) yields, as a sequence (no copy for lists and dicts);
 * consumes a generator. */
int tpl_tv_iter(struct tpl *t, int line, const struct tv *v, struct tseq **out);
/* Run a generator's filter if it has not run yet. */
int tpl_tv_gen_ready(struct tpl *t, int line, struct tgen *g);
int tpl_tv_tojson(struct tpl *t, int line, const struct tv *v, const char *indent, size_t ilen, struct mini_buf *b);
/* A string value of p[0..n) (not copied), Markup when `markup`. */
static inline int tpl_new_str(struct tpl *t, int line, const char *p, size_t n, bool markup, struct tv *out)
{
    (void)t;
    (void)line;
    *out = tpl_tv_strn(p, n);
    out->sub = markup;
    return 0;
}
/* memmem() that finds an empty needle at the start. */
static inline const char *tpl_find(const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0)
        return h;
    if (nn > hn)
        return NULL;
    return memmem(h, hn, nd, nn);
}
/* Python's float(str) and int(str, base) parsers: 0, -1 (ValueError) or
 * -2 (out of memory; float only). */
int tpl_parse_float(const char *p, size_t n, double *out);
int tpl_parse_int(const char *p, size_t n, int base, int64_t *out, bool *overflow);

#endif
