/* YAML to cJSON with PyYAML safe_load semantics (see config_yaml.h).
 *
 * Three stages, as in PyYAML: libyaml's events are composed into a node
 * graph (anchors resolved, aliases pointing at the anchored node), then
 * each node is constructed into a cJSON value, resolving the tag of plain
 * scalars with the YAML 1.1 rules and flattening merge keys. */
#include "config.h"
#include "config_yaml.h"
#include <yaml.h> /* libyaml's */
#ifndef YAML_DECLARE
#error "<yaml.h> is not libyaml's: is a header named yaml.h on the include path?"
#endif

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"
#include "mini/json.h"

#define T_PREFIX "tag:yaml.org,2002:"
#define T_STR T_PREFIX "str"
#define T_NULL T_PREFIX "null"
#define T_BOOL T_PREFIX "bool"
#define T_INT T_PREFIX "int"
#define T_FLOAT T_PREFIX "float"
#define T_SEQ T_PREFIX "seq"
#define T_MAP T_PREFIX "map"
#define T_MERGE T_PREFIX "merge"
#define T_VALUE T_PREFIX "value"
#define T_TIMESTAMP T_PREFIX "timestamp"

enum ykind { Y_SCALAR, Y_SEQ, Y_MAP };

struct ynode {
    enum ykind kind;
    char *tag;   /* as written (libyaml expands handles); NULL: none */
    bool plain;  /* scalar in plain style */
    char *value; /* scalar text, NUL-terminated copy */
    size_t len;
    struct ynode **kids; /* sequence: items; mapping: key, value, key, value, ... */
    size_t nkids, cap;
    unsigned long line, col; /* 1-based */
    bool busy;               /* being constructed or flattened: a cycle if met again */
    struct ynode *all_next;
};

/* A string-keyed open-addressing hash table (anchors, keys of a mapping). */
struct smap_ent {
    const char *key; /* NULL: empty slot */
    size_t klen;
    void *val;
};
struct smap {
    struct smap_ent *slots;
    size_t cap, n;
};

struct pair {
    struct ynode *k, *v;
};
struct pairs {
    struct pair *p;
    size_t n, cap;
};

struct ctx {
    yaml_parser_t parser;
    const char *name;
    struct mini_err *e;
    struct ynode *all;    /* every node, for freeing */
    struct smap anchors;  /* anchor name (owned copy) -> node */
    size_t values, bytes; /* construction budget used */
};

/* ---- small helpers ---- */

static int cerr(struct ctx *c, unsigned long line, unsigned long col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int cerr(struct ctx *c, unsigned long line, unsigned long col, const char *fmt, ...)
{
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = c->name ? c->name : "<string>";
    if (line)
        return mini_err_set(c->e, MINI_E_CONFIG, "%s:%lu:%lu: %s", name, line, col, msg);
    return mini_err_set(c->e, MINI_E_CONFIG, "%s: %s", name, msg);
}

static int nomem(struct ctx *c) { return mini_err_set(c->e, MINI_E_NOMEM, "out of memory"); }

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static struct smap_ent *smap_slot(struct smap *m, const char *key, size_t klen)
{
    size_t mask = m->cap - 1, i = (size_t)hash_bytes(key, klen) & mask;
    for (;;) {
        struct smap_ent *s = &m->slots[i];
        if (!s->key || (s->klen == klen && memcmp(s->key, key, klen) == 0))
            return s;
        i = (i + 1) & mask;
    }
}

/* The entry for key, or NULL. */
static struct smap_ent *smap_find(struct smap *m, const char *key, size_t klen)
{
    if (!m->cap)
        return NULL;
    struct smap_ent *s = smap_slot(m, key, klen);
    return s->key ? s : NULL;
}

/* Add key (not present; the map keeps the pointer, not a copy).  0 or -1. */
static int smap_add(struct smap *m, const char *key, size_t klen, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        struct smap_ent *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        struct smap old = *m;
        m->slots = ns;
        m->cap = ncap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].key)
                *smap_slot(m, old.slots[i].key, old.slots[i].klen) = old.slots[i];
        free(old.slots);
    }
    struct smap_ent *s = smap_slot(m, key, klen);
    s->key = key;
    s->klen = klen;
    s->val = val;
    m->n++;
    return 0;
}

static void smap_free(struct smap *m, bool free_keys)
{
    if (free_keys)
        for (size_t i = 0; i < m->cap; i++)
            free((char *)m->slots[i].key);
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

static int pairs_push(struct pairs *ps, struct ynode *k, struct ynode *v)
{
    if (ps->n == ps->cap) {
        size_t ncap = ps->cap ? ps->cap * 2 : 8;
        struct pair *np = realloc(ps->p, ncap * sizeof *np);
        if (!np)
            return -1;
        ps->p = np;
        ps->cap = ncap;
    }
    ps->p[ps->n++] = (struct pair){ k, v };
    return 0;
}

static bool in_set(char ch, const char *set) { return ch && strchr(set, ch); }

static bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static const char *kind_name(const struct ynode *n)
{
    return n->kind == Y_SCALAR ? "scalar" : n->kind == Y_SEQ ? "sequence" : "mapping";
}

/* ---- composing: events to nodes ---- */

static int next_event(struct ctx *c, yaml_event_t *ev)
{
    if (yaml_parser_parse(&c->parser, ev))
        return 0;
    yaml_parser_t *p = &c->parser;
    if (p->error == YAML_MEMORY_ERROR)
        return nomem(c);
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_READER_ERROR)
        return cerr(c, 0, 0, "%s at byte %zu", problem, p->problem_offset);
    if (p->context)
        return cerr(c, p->problem_mark.line + 1, p->problem_mark.column + 1, "%s %s (line %lu)", p->context, problem,
                    (unsigned long)p->context_mark.line + 1);
    return cerr(c, p->problem_mark.line + 1, p->problem_mark.column + 1, "%s", problem);
}

static struct ynode *new_node(struct ctx *c, enum ykind kind, const yaml_event_t *ev, const yaml_char_t *tag)
{
    struct ynode *n = calloc(1, sizeof *n);
    if (!n) {
        nomem(c);
        return NULL;
    }
    n->kind = kind;
    n->line = ev->start_mark.line + 1;
    n->col = ev->start_mark.column + 1;
    n->all_next = c->all;
    c->all = n;
    if (tag && !(n->tag = strdup((const char *)tag))) {
        nomem(c);
        return NULL;
    }
    return n;
}

static int add_kid(struct ctx *c, struct ynode *parent, struct ynode *kid)
{
    if (parent->nkids == parent->cap) {
        size_t ncap = parent->cap ? parent->cap * 2 : 4;
        struct ynode **nk = realloc(parent->kids, ncap * sizeof *nk);
        if (!nk)
            return nomem(c);
        parent->kids = nk;
        parent->cap = ncap;
    }
    parent->kids[parent->nkids++] = kid;
    return 0;
}

static int register_anchor(struct ctx *c, const yaml_char_t *anchor, struct ynode *n)
{
    if (!anchor)
        return 0;
    size_t alen = strlen((const char *)anchor);
    struct smap_ent *old = smap_find(&c->anchors, (const char *)anchor, alen);
    if (old) {
        const struct ynode *first = old->val;
        return cerr(c, n->line, n->col, "found duplicate anchor \"%.*s\"; first occurrence at line %lu",
                    MINI_JSON_SHOW((const char *)anchor), first->line);
    }
    char *copy = strdup((const char *)anchor);
    if (!copy || smap_add(&c->anchors, copy, alen, n) < 0) {
        free(copy);
        return nomem(c);
    }
    return 0;
}

/* Compose the node that starts with *ev (which the caller deletes). */
static struct ynode *compose(struct ctx *c, yaml_event_t *ev, int depth)
{
    if (depth > MINI_YAML_MAX_DEPTH) {
        cerr(c, ev->start_mark.line + 1, ev->start_mark.column + 1, "nested deeper than %d levels",
             MINI_YAML_MAX_DEPTH);
        return NULL;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        const char *a = (const char *)ev->data.alias.anchor;
        struct smap_ent *s = smap_find(&c->anchors, a, strlen(a));
        if (!s) {
            cerr(c, ev->start_mark.line + 1, ev->start_mark.column + 1, "found undefined alias \"%.*s\"",
                 MINI_JSON_SHOW(a));
            return NULL;
        }
        return s->val;
    }
    case YAML_SCALAR_EVENT: {
        struct ynode *n = new_node(c, Y_SCALAR, ev, ev->data.scalar.tag);
        if (!n)
            return NULL;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->len = ev->data.scalar.length;
        n->value = malloc(n->len + 1);
        if (!n->value) {
            nomem(c);
            return NULL;
        }
        memcpy(n->value, ev->data.scalar.value, n->len);
        n->value[n->len] = '\0';
        if (register_anchor(c, ev->data.scalar.anchor, n) < 0)
            return NULL;
        return n;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
        struct ynode *n =
            new_node(c, seq ? Y_SEQ : Y_MAP, ev, seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag);
        if (!n)
            return NULL;
        /* Registered before the children, as PyYAML does: an alias inside
         * refers to this node (a cycle, refused when constructing). */
        if (register_anchor(c, seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor, n) < 0)
            return NULL;
        yaml_event_type_t end = seq ? YAML_SEQUENCE_END_EVENT : YAML_MAPPING_END_EVENT;
        for (;;) {
            yaml_event_t kev;
            if (next_event(c, &kev) < 0)
                return NULL;
            if (kev.type == end) {
                yaml_event_delete(&kev);
                break;
            }
            struct ynode *kid = compose(c, &kev, depth + 1);
            yaml_event_delete(&kev);
            if (!kid || add_kid(c, n, kid) < 0)
                return NULL;
        }
        if (!seq && n->nkids % 2) {
            cerr(c, n->line, n->col, "mapping with a key but no value");
            return NULL;
        }
        return n;
    }
    default: cerr(c, ev->start_mark.line + 1, ev->start_mark.column + 1, "unexpected YAML event"); return NULL;
    }
}

/* ---- resolving plain scalars: PyYAML's implicit resolvers, in order ---- */

static bool m_null(const char *s, size_t n)
{
    return n == 0 || (n == 1 && s[0] == '~') ||
        (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

static bool m_bool(const char *s)
{
    static const char *const words[] = {
        "yes",   "Yes",   "YES",   "no", "No", "NO", "true", "True", "TRUE",
        "false", "False", "FALSE", "on", "On", "ON", "off",  "Off",  "OFF",
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(words); i++)
        if (!strcmp(s, words[i]))
            return true;
    return false;
}

static size_t skip_digits_us(const char *s, size_t i, size_t n)
{
    while (i < n && (is_digit(s[i]) || s[i] == '_'))
        i++;
    return i;
}

/* One group of (?::[0-5]?[0-9])+ starting at the ':' at s[i]; the group must
 * be followed by one of `after` or the end (when end_ok).  Returns the index
 * after the group, or 0 when there is no such group. */
static size_t sexa_group(const char *s, size_t i, size_t n, const char *after, bool end_ok)
{
    i++; /* ':' */
    bool two = i + 1 < n && s[i] >= '0' && s[i] <= '5' && is_digit(s[i + 1]);
    if (two && (i + 2 == n ? end_ok : in_set(s[i + 2], after)))
        return i + 2;
    if (i < n && is_digit(s[i]) && (i + 1 == n ? end_ok : in_set(s[i + 1], after)))
        return i + 1;
    return 0;
}

/* [eE][-+][0-9]+ at s[i] (optional): index after it, or 0 if malformed. */
static size_t exponent(const char *s, size_t i, size_t n)
{
    if (i == n || (s[i] != 'e' && s[i] != 'E'))
        return i;
    i++;
    if (i == n || (s[i] != '-' && s[i] != '+'))
        return 0;
    i++;
    if (i == n || !is_digit(s[i]))
        return 0;
    while (i < n && is_digit(s[i]))
        i++;
    return i;
}

static bool m_float(const char *s, size_t n)
{
    size_t i = 0;
    bool sign = n && (s[0] == '-' || s[0] == '+');
    if (!sign && n == 4 && s[0] == '.' &&
        (!memcmp(s + 1, "nan", 3) || !memcmp(s + 1, "NaN", 3) || !memcmp(s + 1, "NAN", 3)))
        return true;
    if (sign)
        i++;
    if (n - i == 4 && s[i] == '.' &&
        (!memcmp(s + i + 1, "inf", 3) || !memcmp(s + i + 1, "Inf", 3) || !memcmp(s + i + 1, "INF", 3)))
        return true;
    if (!sign && i < n && s[i] == '.') { /* \.[0-9][0-9_]*(exp)? */
        if (i + 1 >= n || !is_digit(s[i + 1]))
            return false;
        size_t j = exponent(s, skip_digits_us(s, i + 2, n), n);
        return j == n;
    }
    if (i >= n || !is_digit(s[i]))
        return false;
    size_t j = skip_digits_us(s, i + 1, n);
    if (j < n && s[j] == '.') { /* [0-9][0-9_]*\.[0-9_]*(exp)? */
        j = exponent(s, skip_digits_us(s, j + 1, n), n);
        return j == n;
    }
    if (j < n && s[j] == ':') { /* base 60 with a fraction */
        while (j < n && s[j] == ':')
            if (!(j = sexa_group(s, j, n, ":.", false)))
                return false;
        if (j >= n || s[j] != '.')
            return false;
        return skip_digits_us(s, j + 1, n) == n;
    }
    return false;
}

static bool all_in(const char *s, size_t i, size_t n, const char *set)
{
    if (i >= n)
        return false;
    for (; i < n; i++)
        if (!in_set(s[i], set))
            return false;
    return true;
}

static bool m_int(const char *s, size_t n)
{
    size_t i = n && (s[0] == '-' || s[0] == '+');
    if (i >= n)
        return false;
    if (s[i] == '0') {
        if (i + 1 == n)
            return true;
        if (s[i + 1] == 'b')
            return all_in(s, i + 2, n, "01_");
        if (s[i + 1] == 'x')
            return all_in(s, i + 2, n, "0123456789abcdefABCDEF_");
        return all_in(s, i + 1, n, "01234567_");
    }
    if (s[i] < '1' || s[i] > '9')
        return false;
    size_t j = skip_digits_us(s, i + 1, n);
    while (j < n && s[j] == ':')
        if (!(j = sexa_group(s, j, n, ":", true)))
            return false;
    return j == n;
}

/* Digits: at least min, at most max, at s[*i]. */
static bool digits(const char *s, size_t *i, size_t n, int min, int max)
{
    int k = 0;
    while (*i < n && is_digit(s[*i]) && k < max) {
        (*i)++;
        k++;
    }
    return k >= min && !(*i < n && is_digit(s[*i]));
}

static bool m_timestamp(const char *s, size_t n)
{
    size_t i = 0;
    if (!digits(s, &i, n, 4, 4) || i >= n || s[i++] != '-')
        return false;
    size_t save = i;
    /* yyyy-mm-dd alone */
    if (digits(s, &i, n, 2, 2) && i < n && s[i] == '-') {
        size_t k = i + 1;
        if (digits(s, &k, n, 2, 2) && k == n)
            return true;
    }
    i = save;
    if (!digits(s, &i, n, 1, 2) || i >= n || s[i++] != '-')
        return false;
    if (!digits(s, &i, n, 1, 2) || i >= n)
        return false;
    if (s[i] == 'T' || s[i] == 't')
        i++;
    else if (s[i] == ' ' || s[i] == '\t')
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
    else
        return false;
    if (!digits(s, &i, n, 1, 2) || i >= n || s[i++] != ':')
        return false;
    if (!digits(s, &i, n, 2, 2) || i >= n || s[i++] != ':')
        return false;
    if (!digits(s, &i, n, 2, 2))
        return false;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++)
            ;
    if (i == n)
        return true;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i < n && s[i] == 'Z')
        return i + 1 == n;
    if (i >= n || (s[i] != '-' && s[i] != '+'))
        return false;
    i++;
    if (!digits(s, &i, n, 1, 2))
        return false;
    if (i < n && s[i] == ':') {
        i++;
        if (!digits(s, &i, n, 2, 2))
            return false;
    }
    return i == n;
}

static const char *resolve_plain(const char *s, size_t n)
{
    if (n == 0)
        return T_NULL;
    char ch = s[0];
    if (in_set(ch, "yYnNtTfFoO") && m_bool(s))
        return T_BOOL;
    if (in_set(ch, "-+0123456789.") && m_float(s, n))
        return T_FLOAT;
    if (in_set(ch, "-+0123456789") && m_int(s, n))
        return T_INT;
    if (n == 2 && s[0] == '<' && s[1] == '<')
        return T_MERGE;
    if (in_set(ch, "~nN") && m_null(s, n))
        return T_NULL;
    if (is_digit(ch) && m_timestamp(s, n))
        return T_TIMESTAMP;
    if (n == 1 && ch == '=')
        return T_VALUE;
    return T_STR;
}

/* The tag a node is constructed with. */
static const char *node_tag(const struct ynode *n)
{
    bool nonspecific = n->tag && !strcmp(n->tag, "!");
    if (n->tag && !nonspecific)
        return n->tag;
    if (n->kind == Y_SEQ)
        return T_SEQ;
    if (n->kind == Y_MAP)
        return T_MAP;
    /* PyYAML resolves `!`-tagged scalars, quoted or not, like plain ones. */
    if (n->plain || nonspecific)
        return resolve_plain(n->value, n->len);
    return T_STR;
}

/* ---- constructing scalars as PyYAML's SafeConstructor does ---- */

static bool py_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f); }

/* Python's int(s, base) on s (underscores already removed): surrounding
 * whitespace, a sign, an optional 0b/0o/0x prefix matching base. */
static bool py_int(const char *s, int base, double *out)
{
    size_t n = strlen(s), i = 0;
    while (i < n && py_space(s[i]))
        i++;
    while (n > i && py_space(s[n - 1]))
        n--;
    double sign = 1;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        sign = s[i++] == '-' ? -1 : 1;
    if (i + 1 < n && s[i] == '0') {
        char p = (char)(s[i + 1] | 0x20);
        if ((base == 2 && p == 'b') || (base == 8 && p == 'o') || (base == 16 && p == 'x'))
            i += 2;
    }
    if (i >= n)
        return false;
    uint64_t v = 0;
    bool exact = true;
    long double approx = 0;
    for (size_t k = i; k < n; k++) {
        int d;
        char ch = s[k];
        if (is_digit(ch))
            d = ch - '0';
        else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')
            d = (ch | 0x20) - 'a' + 10;
        else
            return false;
        if (d >= base)
            return false;
        if (exact && v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            exact = false;
        if (exact)
            v = v * (uint64_t)base + (uint64_t)d;
        approx = approx * base + d;
    }
    if (!exact && base == 10) {
        /* Correctly rounded, as Python's float(int) would be. */
        _cleanup_free_ char *digits_only = strndup(s + i, n - i);
        if (!digits_only)
            return false;
        *out = sign * strtod(digits_only, NULL);
        return true;
    }
    *out = sign * (exact ? (double)v : (double)approx);
    return true;
}

static locale_t c_locale(void)
{
    static locale_t loc;
    locale_t l = __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
    if (!l) {
        l = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        locale_t expected = (locale_t)0;
        if (l && !__atomic_compare_exchange_n(&loc, &expected, l, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            freelocale(l);
            l = expected;
        }
    }
    return l;
}

/* Python's float(s) for a lower-cased, underscore-free s. */
static bool py_float(const char *s, double *out)
{
    size_t n = strlen(s), i = 0;
    while (i < n && py_space(s[i]))
        i++;
    while (n > i && py_space(s[n - 1]))
        n--;
    size_t start = i;
    double sign = 1;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        sign = s[i++] == '-' ? -1 : 1;
    size_t rest = n - i;
    if ((rest == 3 && !memcmp(s + i, "inf", 3)) || (rest == 8 && !memcmp(s + i, "infinity", 8))) {
        *out = sign * INFINITY;
        return true;
    }
    if (rest == 3 && !memcmp(s + i, "nan", 3)) {
        *out = NAN;
        return true;
    }
    size_t d = 0;
    while (i < n && is_digit(s[i]))
        i++, d++;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++)
            d++;
    if (!d)
        return false;
    if (i < n && s[i] == 'e') {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return false;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i != n)
        return false;
    _cleanup_free_ char *num = strndup(s + start, n - start);
    if (!num)
        return false;
    locale_t l = c_locale();
    *out = l ? strtod_l(num, NULL, l) : strtod(num, NULL);
    return true;
}

/* value.replace('_', ''), optionally lower-cased; the sign split off. */
static char *strip_underscores(const char *s, size_t n, bool lower, double *sign)
{
    char *t = malloc(n + 1);
    if (!t)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            t[k++] = lower && s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] | 0x20) : s[i];
    t[k] = '\0';
    *sign = 1;
    if (k && t[0] == '-')
        *sign = -1;
    if (k && (t[0] == '-' || t[0] == '+'))
        memmove(t, t + 1, k); /* includes the NUL */
    return t;
}

static int construct_int(struct ctx *c, const struct ynode *n, double *out)
{
    if (!n->len)
        return cerr(c, n->line, n->col, "invalid integer \"\"");
    double sign;
    _cleanup_free_ char *v = strip_underscores(n->value, n->len, false, &sign);
    if (!v)
        return nomem(c);
    bool ok;
    if (!strcmp(v, "0")) {
        *out = 0;
        ok = true;
    } else if (!strncmp(v, "0b", 2)) {
        ok = py_int(v + 2, 2, out);
    } else if (!strncmp(v, "0x", 2)) {
        ok = py_int(v + 2, 16, out);
    } else if (v[0] == '0') {
        ok = py_int(v, 8, out);
    } else if (v[0] && strchr(v, ':')) {
        /* Base 60: the last part counts 1, the one before 60, ... */
        double total = 0, base = 1;
        ok = true;
        for (char *end = v + strlen(v); ok;) {
            char *colon = end;
            while (colon > v && colon[-1] != ':')
                colon--;
            *end = '\0';
            double part;
            ok = py_int(colon, 10, &part);
            total += part * base;
            base *= 60;
            if (colon == v)
                break;
            end = colon - 1;
        }
        *out = total;
    } else {
        ok = v[0] && py_int(v, 10, out);
    }
    if (!ok)
        return cerr(c, n->line, n->col, "invalid integer \"%.*s\"", MINI_JSON_SHOW(n->value));
    *out *= sign;
    return 0;
}

static int construct_float(struct ctx *c, const struct ynode *n, double *out)
{
    double sign;
    _cleanup_free_ char *v = strip_underscores(n->value, n->len, true, &sign);
    if (!v)
        return nomem(c);
    bool ok = n->len > 0;
    if (ok && !strcmp(v, ".inf")) {
        *out = INFINITY;
    } else if (ok && !strcmp(v, ".nan")) {
        *out = NAN;
        sign = 1;
    } else if (ok && strchr(v, ':')) {
        double total = 0, base = 1;
        for (char *end = v + strlen(v); ok;) {
            char *colon = end;
            while (colon > v && colon[-1] != ':')
                colon--;
            *end = '\0';
            double part;
            ok = py_float(colon, &part);
            total += part * base;
            base *= 60;
            if (colon == v)
                break;
            end = colon - 1;
        }
        *out = total;
    } else if (ok) {
        ok = py_float(v, out);
    }
    if (!ok)
        return cerr(c, n->line, n->col, "invalid float \"%.*s\"", MINI_JSON_SHOW(n->value));
    *out *= sign;
    return 0;
}

static int construct_bool(struct ctx *c, const struct ynode *n, bool *out)
{
    static const struct {
        const char *w;
        bool v;
    } words[] = {
        { "yes", true }, { "no", false }, { "true", true }, { "false", false }, { "on", true }, { "off", false },
    };
    if (n->len <= 5) {
        char low[6];
        for (size_t i = 0; i <= n->len; i++)
            low[i] = n->value[i] >= 'A' && n->value[i] <= 'Z' ? (char)(n->value[i] | 0x20) : n->value[i];
        for (size_t i = 0; i < MINI_ARRAY_SIZE(words); i++)
            if (!strcmp(low, words[i].w)) {
                *out = words[i].v;
                return 0;
            }
    }
    return cerr(c, n->line, n->col, "invalid boolean \"%.*s\"", MINI_JSON_SHOW(n->value));
}

/* ---- constructing values ---- */

static int budget(struct ctx *c, const struct ynode *n, size_t bytes)
{
    if (++c->values > MINI_YAML_MAX_VALUES)
        return cerr(c, n->line, n->col, "more than %d values (after expanding aliases)", MINI_YAML_MAX_VALUES);
    if (bytes > MINI_YAML_MAX_STRING_BYTES - c->bytes)
        return cerr(c, n->line, n->col, "more than %u bytes of strings (after expanding aliases)",
                    MINI_YAML_MAX_STRING_BYTES);
    c->bytes += bytes;
    return 0;
}

static cJSON *construct(struct ctx *c, struct ynode *n, int depth);

static int expect_scalar(struct ctx *c, const struct ynode *n, const char *tag)
{
    if (n->kind == Y_SCALAR)
        return 0;
    return cerr(c, n->line, n->col, "expected a scalar node for tag %s, but found a %s", tag, kind_name(n));
}

static cJSON *construct_scalar(struct ctx *c, struct ynode *n, const char *tag)
{
    if (expect_scalar(c, n, tag) < 0 || budget(c, n, n->len) < 0)
        return NULL;
    cJSON *v = NULL;
    if (!strcmp(tag, T_STR)) {
        if (memchr(n->value, '\0', n->len)) {
            cerr(c, n->line, n->col, "a string containing a NUL character is not supported");
            return NULL;
        }
        v = cJSON_CreateString(n->value);
    } else if (!strcmp(tag, T_NULL)) {
        v = cJSON_CreateNull();
    } else if (!strcmp(tag, T_BOOL)) {
        bool b = false;
        if (construct_bool(c, n, &b) < 0)
            return NULL;
        v = cJSON_CreateBool(b);
    } else if (!strcmp(tag, T_INT) || !strcmp(tag, T_FLOAT)) {
        double d = 0;
        bool is_int = !strcmp(tag, T_INT);
        if ((is_int ? construct_int(c, n, &d) : construct_float(c, n, &d)) < 0)
            return NULL;
        /* Floats keep being floats: 3.0 prints as "3.0" in templates. */
        v = is_int ? cJSON_CreateNumber(d) : mini_json_create_float(d);
    } else {
        return NULL; /* not a scalar tag: the caller reports it */
    }
    if (!v)
        nomem(c);
    return v;
}

static bool is_merge_key(const struct ynode *k) { return k->kind == Y_SCALAR && !strcmp(node_tag(k), T_MERGE); }

/* PyYAML's flatten_mapping: the pairs of mapping n, those merged in through
 * `<<` first (so that the mapping's own keys win), in the order they are
 * applied. */
static int flatten(struct ctx *c, struct ynode *n, struct pairs *out, int depth)
{
    if (depth > MINI_YAML_MAX_DEPTH)
        return cerr(c, n->line, n->col, "merge keys nested deeper than %d levels", MINI_YAML_MAX_DEPTH);
    if (n->busy)
        return cerr(c, n->line, n->col, "recursive merge: a mapping merges itself");
    n->busy = true;
    int rc = -1;
    struct pairs own = { 0 };
    for (size_t i = 0; i + 1 < n->nkids; i += 2) {
        struct ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (!is_merge_key(k)) {
            if (pairs_push(&own, k, v) < 0) {
                nomem(c);
                goto out;
            }
            continue;
        }
        if (budget(c, k, 0) < 0) /* each merge counts, even of empty mappings */
            goto out;
        if (v->kind == Y_MAP && !strcmp(node_tag(v), T_MAP)) {
            if (flatten(c, v, out, depth + 1) < 0)
                goto out;
        } else if (v->kind == Y_SEQ && !strcmp(node_tag(v), T_SEQ)) {
            /* Of several mappings the first wins: apply them last to first. */
            for (size_t j = v->nkids; j-- > 0;) {
                struct ynode *m = v->kids[j];
                if (m->kind != Y_MAP) {
                    cerr(c, m->line, m->col, "expected a mapping for merging, but found a %s", kind_name(m));
                    goto out;
                }
                if (flatten(c, m, out, depth + 1) < 0)
                    goto out;
            }
        } else {
            cerr(c, v->line, v->col, "expected a mapping or list of mappings for merging, but found a %s",
                 kind_name(v));
            goto out;
        }
    }
    for (size_t i = 0; i < own.n; i++) {
        if (budget(c, own.p[i].k, 0) < 0)
            goto out;
        if (pairs_push(out, own.p[i].k, own.p[i].v) < 0) {
            nomem(c);
            goto out;
        }
    }
    rc = 0;
out:
    free(own.p);
    n->busy = false;
    return rc;
}

static void describe_scalar(char *buf, size_t size, const struct ynode *k, const char *tag)
{
    const char *what = !strcmp(tag, T_INT) ? "integer"
        : !strcmp(tag, T_FLOAT)            ? "float"
        : !strcmp(tag, T_BOOL)             ? "boolean"
        : !strcmp(tag, T_NULL)             ? "null"
        : !strcmp(tag, T_TIMESTAMP)        ? "timestamp"
                                           : "value";
    snprintf(buf, size, "%s %.*s", what, MINI_JSON_SHOW(k->value));
}

/* The string a mapping key stands for; NULL with the error reported. */
static const char *key_string(struct ctx *c, const struct ynode *k)
{
    if (k->kind != Y_SCALAR) {
        cerr(c, k->line, k->col, "mapping key must be a string, found a %s", kind_name(k));
        return NULL;
    }
    const char *tag = node_tag(k);
    if (!strcmp(tag, T_VALUE))
        return "=";
    if (strcmp(tag, T_STR)) {
        char what[160];
        describe_scalar(what, sizeof what, k, tag);
        cerr(c, k->line, k->col, "mapping key must be a string, found %s (quote it)", what);
        return NULL;
    }
    if (memchr(k->value, '\0', k->len)) {
        cerr(c, k->line, k->col, "a key containing a NUL character is not supported");
        return NULL;
    }
    return k->value;
}

static cJSON *construct_mapping(struct ctx *c, struct ynode *n, int depth)
{
    struct pairs ps = { 0 };
    struct smap own = { 0 }, have = { 0 };
    cJSON *obj = NULL;
    if (flatten(c, n, &ps, 0) < 0)
        goto fail;
    /* The mapping's own keys must not repeat (PyYAML would keep the last). */
    for (size_t i = 0; i + 1 < n->nkids; i += 2) {
        const struct ynode *k = n->kids[i];
        if (is_merge_key(k))
            continue;
        const char *ks = key_string(c, k);
        if (!ks)
            goto fail;
        struct smap_ent *prev = smap_find(&own, ks, strlen(ks));
        if (prev) {
            const struct ynode *pk = prev->val;
            cerr(c, k->line, k->col, "duplicate key \"%.*s\" (first at line %lu)", MINI_JSON_SHOW(ks), pk->line);
            goto fail;
        }
        if (smap_add(&own, ks, strlen(ks), (void *)k) < 0) {
            nomem(c);
            goto fail;
        }
    }
    if (budget(c, n, 0) < 0)
        goto fail;
    if (!(obj = cJSON_CreateObject())) {
        nomem(c);
        goto fail;
    }
    n->busy = true;
    for (size_t i = 0; i < ps.n; i++) {
        const char *ks = key_string(c, ps.p[i].k);
        if (!ks)
            goto fail;
        size_t kl = strlen(ks);
        if (budget(c, ps.p[i].k, kl) < 0)
            goto fail;
        cJSON *v = construct(c, ps.p[i].v, depth + 1);
        if (!v)
            goto fail;
        struct smap_ent *prev = smap_find(&have, ks, kl);
        if (prev) {
            /* A merged value overridden: it keeps its place, as in a dict. */
            cJSON *old = prev->val;
            v->string = old->string;
            old->string = NULL;
            cJSON_ReplaceItemViaPointer(obj, old, v);
            prev->val = v;
        } else {
            if (!cJSON_AddItemToObject(obj, ks, v) || !v->string) {
                cJSON_Delete(v);
                nomem(c);
                goto fail;
            }
            if (smap_add(&have, v->string, kl, v) < 0) {
                nomem(c);
                goto fail;
            }
        }
    }
    n->busy = false;
    free(ps.p);
    smap_free(&own, false);
    smap_free(&have, false);
    return obj;
fail:
    n->busy = false;
    free(ps.p);
    smap_free(&own, false);
    smap_free(&have, false);
    cJSON_Delete(obj);
    return NULL;
}

static cJSON *construct(struct ctx *c, struct ynode *n, int depth)
{
    if (depth > MINI_YAML_MAX_DEPTH) {
        cerr(c, n->line, n->col, "nested deeper than %d levels (after expanding aliases)", MINI_YAML_MAX_DEPTH);
        return NULL;
    }
    if (n->busy) {
        cerr(c, n->line, n->col, "recursive structure (an alias inside its own anchor) is not supported");
        return NULL;
    }
    const char *tag = node_tag(n);
    if (!strcmp(tag, T_SEQ)) {
        if (n->kind != Y_SEQ) {
            cerr(c, n->line, n->col, "expected a sequence node, but found a %s", kind_name(n));
            return NULL;
        }
        if (budget(c, n, 0) < 0)
            return NULL;
        cJSON *arr = cJSON_CreateArray();
        if (!arr) {
            nomem(c);
            return NULL;
        }
        n->busy = true;
        for (size_t i = 0; i < n->nkids; i++) {
            cJSON *v = construct(c, n->kids[i], depth + 1);
            if (!v || !cJSON_AddItemToArray(arr, v)) {
                if (v) {
                    cJSON_Delete(v);
                    nomem(c);
                }
                n->busy = false;
                cJSON_Delete(arr);
                return NULL;
            }
        }
        n->busy = false;
        return arr;
    }
    if (!strcmp(tag, T_MAP)) {
        if (n->kind != Y_MAP) {
            cerr(c, n->line, n->col, "expected a mapping node, but found a %s", kind_name(n));
            return NULL;
        }
        return construct_mapping(c, n, depth);
    }
    if (!strcmp(tag, T_STR) || !strcmp(tag, T_NULL) || !strcmp(tag, T_BOOL) || !strcmp(tag, T_INT) ||
        !strcmp(tag, T_FLOAT))
        return construct_scalar(c, n, tag);
    if (!strcmp(tag, T_TIMESTAMP)) {
        cerr(c, n->line, n->col, "timestamp \"%.*s\" is not supported (quote it to make it a string)",
             MINI_JSON_SHOW(n->value ? n->value : ""));
        return NULL;
    }
    if (!strcmp(tag, T_PREFIX "binary") || !strcmp(tag, T_PREFIX "set") || !strcmp(tag, T_PREFIX "omap") ||
        !strcmp(tag, T_PREFIX "pairs")) {
        cerr(c, n->line, n->col, "tag %s is not supported", tag);
        return NULL;
    }
    cerr(c, n->line, n->col, "could not determine a constructor for the tag \"%.*s\"", MINI_JSON_SHOW(tag));
    return NULL;
}

/* ---- the document ---- */

static cJSON *parse_stream(struct ctx *c)
{
    yaml_event_t ev;
    if (next_event(c, &ev) < 0)
        return NULL;
    if (ev.type != YAML_STREAM_START_EVENT) {
        yaml_event_delete(&ev);
        cerr(c, 0, 0, "malformed YAML stream");
        return NULL;
    }
    yaml_event_delete(&ev);
    if (next_event(c, &ev) < 0)
        return NULL;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        cJSON *v = cJSON_CreateNull();
        if (!v)
            nomem(c);
        return v;
    }
    unsigned long doc_line = ev.start_mark.line + 1;
    yaml_event_delete(&ev); /* DOCUMENT_START */
    if (next_event(c, &ev) < 0)
        return NULL;
    struct ynode *root = compose(c, &ev, 0);
    yaml_event_delete(&ev);
    if (!root)
        return NULL;
    if (next_event(c, &ev) < 0) /* DOCUMENT_END */
        return NULL;
    yaml_event_delete(&ev);
    if (next_event(c, &ev) < 0)
        return NULL;
    if (ev.type != YAML_STREAM_END_EVENT) {
        cerr(c, ev.start_mark.line + 1, ev.start_mark.column + 1,
             "expected a single document in the stream, but found another document (the first starts at line %lu)",
             doc_line);
        yaml_event_delete(&ev);
        return NULL;
    }
    yaml_event_delete(&ev);
    return construct(c, root, 0);
}

cJSON *mini_yaml_parse(const char *text, size_t len, const char *name, struct mini_err *e)
{
    struct ctx c = { .name = name, .e = e };
    if (e)
        mini_err_clear(e);
    if (!yaml_parser_initialize(&c.parser)) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)(text ? text : ""), text ? len : 0);
    /* PyYAML reads configs as text decoded from UTF-8. */
    yaml_parser_set_encoding(&c.parser, YAML_UTF8_ENCODING);
    cJSON *root = parse_stream(&c);
    yaml_parser_delete(&c.parser);
    smap_free(&c.anchors, true);
    for (struct ynode *n = c.all, *next; n; n = next) {
        next = n->all_next;
        free(n->tag);
        free(n->value);
        free(n->kids);
        free(n);
    }
    return root;
}
