/* Strict JSON parsing on top of cJSON (see include/mini/json.h). */
#include "mini/json.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/proto.h"
#include "mini/utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static bool is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool is_number_char(unsigned char c)
{
    return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

int mini_json_clip(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n > max)
        n = max - mini_utf8_incomplete_tail(s, max);
    return (int)n;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and nothing else. */
static bool number_ok(const unsigned char *s, size_t n)
{
    size_t i = 0, d;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && is_digit(s[i]))
        while (i < n && is_digit(s[i]))
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        for (d = ++i; i < n && is_digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && is_digit(s[i]); i++)
            ;
        if (i == d)
            return false;
    }
    return i == n;
}

static int syntax(struct mini_err *e, size_t *where, size_t at, const char *why)
{
    if (where)
        *where = at;
    return mini_err_set(e, MINI_E_BAD_REQUEST, "invalid JSON at byte %zu: %s", at, why);
}

/* One pass over the text for what cJSON lets through.  Structure (brackets,
 * commas, escapes) is left to cJSON, which sees the same string boundaries. */
static int lex_check(const unsigned char *s, size_t len, size_t *where, struct mini_err *e)
{
    size_t depth = 0, values = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '"' || c == '-' || is_digit(c) || c == '[' || c == '{' || c == 't' || c == 'f' || c == 'n') {
            /* A value or a key starts here (keys count: they cost a value's memory). */
            if (++values > MINI_JSON_MAX_VALUES)
                return syntax(e, where, i, "more than " STR(MINI_JSON_MAX_VALUES) " values");
        }
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i++) {
                if (s[i] < 0x20)
                    return syntax(e, where, i, "control character in a string");
                if (s[i] == '\\') {
                    if (len - i >= 6 && memcmp(s + i + 1, "u0000", 5) == 0)
                        return syntax(e, where, i, "\\u0000 in a string");
                    i++; /* the escaped character cannot end the string */
                }
            }
            i++;
        } else if (c == '-' || is_digit(c)) {
            size_t start = i;
            while (i < len && is_number_char(s[i]))
                i++;
            if (i - start > MINI_JSON_MAX_NUMBER)
                return syntax(e, where, start, "number longer than " STR(MINI_JSON_MAX_NUMBER) " characters");
            if (!number_ok(s + start, i - start))
                return syntax(e, where, start, "malformed number");
        } else {
            if ((c == '[' || c == '{') && ++depth > MINI_JSON_MAX_DEPTH)
                return syntax(e, where, i, "nested deeper than " STR(MINI_JSON_MAX_DEPTH) " levels");
            if ((c == ']' || c == '}') && depth)
                depth--;
            if (c < 0x20 && !is_ws(c))
                return syntax(e, where, i, "control character");
            i++;
        }
    }
    return 0;
}

static bool all_finite(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return isfinite(v->valuedouble);
    for (const cJSON *c = v->child; c; c = c->next)
        if (!all_finite(c))
            return false;
    return true;
}

cJSON *mini_json_parse(const char *p, size_t len, struct mini_err *e) { return mini_json_parse_where(p, len, NULL, e); }

cJSON *mini_json_parse_where(const char *p, size_t len, size_t *where, struct mini_err *e)
{
    if (where)
        *where = 0;
    if (len == 0) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "invalid JSON: empty");
        return NULL;
    }
    const char *nul = memchr(p, '\0', len);
    if (nul) {
        if (where)
            *where = (size_t)(nul - p);
        mini_err_set(e, MINI_E_BAD_REQUEST, "invalid JSON: NUL byte at byte %zu", (size_t)(nul - p));
        return NULL;
    }
    if (!mini_utf8_valid(p, len)) {
        mini_err_set(e, MINI_E_BAD_REQUEST, "invalid JSON: not valid UTF-8");
        return NULL;
    }
    if (lex_check((const unsigned char *)p, len, where, e) < 0)
        return NULL;
    /* require_null_terminated would demand a NUL at p[len]: check the end here. */
    const char *end = p;
    cJSON *v = cJSON_ParseWithLengthOpts(p, len, &end, 0);
    size_t off = end >= p && end <= p + len ? (size_t)(end - p) : 0;
    if (!v) {
        syntax(e, where, off, "syntax error");
        return NULL;
    }
    while (off < len && is_ws((unsigned char)p[off]))
        off++;
    if (off < len) {
        cJSON_Delete(v);
        syntax(e, where, off, "unexpected data after the value");
        return NULL;
    }
    if (!all_finite(v)) {
        cJSON_Delete(v);
        mini_err_set(e, MINI_E_BAD_REQUEST, "invalid JSON: number out of range");
        return NULL;
    }
    return v;
}

cJSON *mini_json_parse_object(const char *payload, size_t len, struct mini_err *e)
{
    cJSON *v = mini_json_parse(payload, len, e);
    if (!v)
        return NULL;
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        mini_err_set(e, MINI_E_BAD_REQUEST, "message is not a JSON object");
        return NULL;
    }
    if (mini_json_check_unique_keys(v, NULL, e) < 0) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

/* ------------------------------------------------------ duplicate keys */

/* Where the walk is: a chain of keys (or array indexes) up to the root,
 * kept on the stack and only turned into text for an error. */
struct seg {
    const struct seg *up;
    const char *key; /* NULL: an array element */
    size_t index;
};

struct keys {
    const char **v;
    size_t cap;
};

static void path_text(struct mini_buf *b, const struct seg *s)
{
    if (!s)
        return;
    path_text(b, s->up);
    if (s->key)
        mini_buf_printf(b, "%s%.*s", b->len ? "." : "", MINI_JSON_SHOW(s->key));
    else
        mini_buf_printf(b, "[%zu]", s->index);
}

static int duplicate(const struct seg *at, const char *key, struct mini_err *e)
{
    struct mini_buf path = MINI_BUF_INIT;
    path_text(&path, at);
    mini_err_set(e, MINI_E_BAD_REQUEST, "%s%sduplicate key \"%.*s\"", path.len ? path.data : "", path.len ? ": " : "",
                 MINI_JSON_SHOW(key));
    mini_buf_free(&path);
    return -1;
}

static int cmp_keys(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int unique_walk(const cJSON *v, const struct seg *at, struct keys *ks, struct mini_err *e)
{
    if (cJSON_IsObject(v)) {
        size_t n = 0;
        for (const cJSON *c = v->child; c; c = c->next)
            n++;
        if (n > ks->cap) {
            const char **nv = realloc(ks->v, n * sizeof *nv);
            if (!nv)
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            ks->v = nv;
            ks->cap = n;
        }
        n = 0;
        for (const cJSON *c = v->child; c; c = c->next)
            ks->v[n++] = c->string ? c->string : "";
        if (n > 1)
            qsort(ks->v, n, sizeof *ks->v, cmp_keys);
        for (size_t i = 1; i < n; i++)
            if (strcmp(ks->v[i - 1], ks->v[i]) == 0)
                return duplicate(at, ks->v[i], e);
    } else if (!cJSON_IsArray(v)) {
        return 0;
    }
    size_t i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
            continue;
        struct seg s = { at, cJSON_IsObject(v) ? (c->string ? c->string : "") : NULL, i };
        if (unique_walk(c, &s, ks, e) < 0)
            return -1;
    }
    return 0;
}

int mini_json_check_unique_keys(const cJSON *item, const char *where, struct mini_err *e)
{
    struct keys ks = { NULL, 0 };
    struct seg root = { NULL, where, 0 };
    int r = unique_walk(item, where && *where ? &root : NULL, &ks, e);
    free(ks.v);
    return r;
}

/* --------------------------------------------------------------- values */

bool mini_json_get_int(const cJSON *item, int64_t min, int64_t max, int64_t *out)
{
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    /* The range test fails for NaN and keeps the cast below defined. */
    if (!(d >= (double)min && d <= (double)max) || (double)(int64_t)d != d)
        return false;
    *out = (int64_t)d;
    return true;
}

/* ------------------------------------------------------------ printing */

static const char *escape_of(unsigned char c)
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: return NULL; /* other control characters: \u00XX */
    }
}

static int print_string(struct mini_buf *b, const char *s)
{
    if (mini_buf_putc(b, '"') < 0)
        return -1;
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool nul = c == 0xC0 && (unsigned char)s[1] == 0x80; /* MINI_UTF8_NUL */
        if (c >= 0x20 && c != '"' && c != '\\' && !nul)
            continue;
        if (mini_buf_append(b, run, (size_t)(s - run)) < 0)
            return -1;
        s += nul;
        run = s + 1;
        const char *esc = nul ? "\\u0000" : escape_of(c);
        if (esc ? mini_buf_puts(b, esc) < 0 : mini_buf_printf(b, "\\u%04x", c) < 0)
            return -1;
    }
    if (mini_buf_append(b, run, (size_t)(s - run)) < 0)
        return -1;
    return mini_buf_putc(b, '"');
}

static int print_number(struct mini_buf *b, double d)
{
    if (!isfinite(d))
        return mini_buf_puts(b, "null");
    if (d >= -(double)MINI_JSON_INT_MAX && d <= (double)MINI_JSON_INT_MAX && d == (double)(int64_t)d)
        return mini_buf_printf(b, "%" PRId64, (int64_t)d);
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* printf and strtod follow LC_NUMERIC; JSON wants '.'. */
    char point = localeconv()->decimal_point[0];
    char *p = point != '.' ? strchr(tmp, point) : NULL;
    if (p)
        *p = '.';
    return mini_buf_puts(b, tmp);
}

static int print_value(struct mini_buf *b, const cJSON *v)
{
    switch (v->type & 0xFF) {
    case cJSON_NULL: return mini_buf_puts(b, "null");
    case cJSON_False: return mini_buf_puts(b, "false");
    case cJSON_True: return mini_buf_puts(b, "true");
    case cJSON_Number: return print_number(b, v->valuedouble);
    case cJSON_String: return print_string(b, v->valuestring ? v->valuestring : "");
    case cJSON_Raw: return v->valuestring ? mini_buf_puts(b, v->valuestring) : -2;
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = cJSON_IsObject(v);
        if (mini_buf_putc(b, obj ? '{' : '[') < 0)
            return -1;
        for (const cJSON *c = v->child; c; c = c->next) {
            int r;
            if ((c != v->child && mini_buf_putc(b, ',') < 0) ||
                (obj && (print_string(b, c->string ? c->string : "") < 0 || mini_buf_putc(b, ':') < 0)))
                return -1;
            if ((r = print_value(b, c)) < 0)
                return r;
        }
        return mini_buf_putc(b, obj ? '}' : ']');
    }
    default: return -2;
    }
}

int mini_json_print(struct mini_buf *out, const cJSON *item, struct mini_err *e)
{
    size_t len = out->len;
    int r = item ? print_value(out, item) : -2;
    if (r == 0)
        return 0;
    out->len = len;
    if (out->data)
        out->data[len] = '\0';
    return r == -1 ? mini_err_set(e, MINI_E_NOMEM, "out of memory")
                   : mini_err_set(e, MINI_E_INTERNAL, "cannot print an invalid JSON item");
}

/* ------------------------------------------- printing as Python's json */

/* One code point of valid UTF-8 at s; its length in *len. */
static uint32_t utf8_next(const unsigned char *s, int *len)
{
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    if (s[0] < 0xE0) {
        *len = 2;
        return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (s[0] < 0xF0) {
        *len = 3;
        return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
        (s[3] & 0x3F);
}

static int py_string(struct mini_buf *b, const char *str)
{
    size_t n = strlen(str);
    struct mini_buf clean = MINI_BUF_INIT;
    const unsigned char *s = (const unsigned char *)str;
    if (!mini_utf8_valid(str, n)) {
        /* A NUL kept as C0 80 stays one: utf8_next reads it as U+0000. */
        if (mini_utf8_sanitize_keep_nul(&clean, str, n) < 0)
            return -1;
        s = (const unsigned char *)(clean.data ? clean.data : "");
    }
    int r = mini_buf_putc(b, '"');
    const unsigned char *run = s;
    while (r == 0 && *s) {
        if (*s >= 0x20 && *s < 0x7F && *s != '"' && *s != '\\') {
            s++;
            continue;
        }
        if (mini_buf_append(b, run, (size_t)(s - (const unsigned char *)run)) < 0) {
            r = -1;
            break;
        }
        int len;
        uint32_t cp = utf8_next(s, &len);
        const char *esc = cp < 0x80 ? escape_of((unsigned char)cp) : NULL;
        if (esc)
            r = mini_buf_puts(b, esc);
        else if (cp < 0x10000)
            r = mini_buf_printf(b, "\\u%04x", cp);
        else
            r = mini_buf_printf(b, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                                0xDC00 + ((cp - 0x10000) & 0x3FF));
        s += len;
        run = s;
    }
    if (r == 0 && mini_buf_append(b, run, (size_t)(s - run)) < 0)
        r = -1;
    if (r == 0)
        r = mini_buf_putc(b, '"');
    mini_buf_free(&clean);
    return r < 0 ? -1 : 0;
}

/* Python's repr of a float. */
static int py_float(struct mini_buf *b, double d)
{
    if (isnan(d))
        return mini_buf_puts(b, "NaN");
    if (isinf(d))
        return mini_buf_puts(b, d < 0 ? "-Infinity" : "Infinity");
    /* The fewest significant digits whose rounding reads back as d.
     * Rounding to more digits is never farther from d, and where d's two
     * neighbours are equally far (all but the powers of two) nearer means
     * it still reads back: so when 15 digits do not, neither do fewer, and
     * a timestamp's 16 or 17 are found in 3 tries instead of 17. */
    char tmp[48];
    int exp2, first = 1;
    if (frexp(d, &exp2) != 0.5 && frexp(d, &exp2) != -0.5) {
        snprintf(tmp, sizeof tmp, "%.*e", 14, d);
        if (strtod(tmp, NULL) != d)
            first = 16;
    }
    for (int prec = first; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* tmp: [-]D[.DDD]e(+|-)XX */
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < (int)sizeof digits - 1)
            digits[nd++] = *p;
    digits[nd] = '\0';
    int exp = *p == 'e' ? atoi(p + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    struct mini_buf *o = b;
    if (neg && mini_buf_putc(o, '-') < 0)
        return -1;
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            for (int i = 0; i <= exp; i++)
                if (mini_buf_putc(o, i < nd ? digits[i] : '0') < 0)
                    return -1;
            if (mini_buf_putc(o, '.') < 0)
                return -1;
            if (nd > exp + 1)
                return mini_buf_puts(o, digits + exp + 1);
            return mini_buf_putc(o, '0');
        }
        if (mini_buf_puts(o, "0.") < 0)
            return -1;
        for (int i = 0; i < -exp - 1; i++)
            if (mini_buf_putc(o, '0') < 0)
                return -1;
        return mini_buf_puts(o, digits);
    }
    if (mini_buf_putc(o, digits[0]) < 0)
        return -1;
    if (nd > 1 && mini_buf_printf(o, ".%s", digits + 1) < 0)
        return -1;
    return mini_buf_printf(o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

static bool float_key(const char *key, const char *const *keys)
{
    for (; key && keys && *keys; keys++)
        if (strcmp(key, *keys) == 0)
            return true;
    return false;
}

static int py_indent(struct mini_buf *b, int level)
{
    if (mini_buf_putc(b, '\n') < 0)
        return -1;
    for (int i = 0; i < level; i++)
        if (mini_buf_puts(b, "  ") < 0)
            return -1;
    return 0;
}

static int py_value(struct mini_buf *b, const cJSON *v, const char *const *float_keys, int level)
{
    switch (v->type & 0xFF) {
    case cJSON_NULL: return mini_buf_puts(b, "null");
    case cJSON_False: return mini_buf_puts(b, "false");
    case cJSON_True: return mini_buf_puts(b, "true");
    case cJSON_Number: {
        double d = v->valuedouble;
        bool integral =
            isfinite(d) && d >= -(double)MINI_JSON_INT_MAX && d <= (double)MINI_JSON_INT_MAX && d == (double)(int64_t)d;
        const char *text = v->valuestring;
        bool is_float = text && *text ? mini_json_is_float(v) : float_key(v->string, float_keys);
        if (integral && !is_float)
            return mini_buf_printf(b, "%" PRId64, (int64_t)d);
        return py_float(b, d);
    }
    case cJSON_String: return py_string(b, v->valuestring ? v->valuestring : "");
    case cJSON_Raw: return v->valuestring ? mini_buf_puts(b, v->valuestring) : -2;
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = cJSON_IsObject(v);
        if (mini_buf_putc(b, obj ? '{' : '[') < 0)
            return -1;
        if (!v->child)
            return mini_buf_putc(b, obj ? '}' : ']');
        for (const cJSON *c = v->child; c; c = c->next) {
            int r;
            if ((c != v->child && mini_buf_putc(b, ',') < 0) || py_indent(b, level + 1) < 0 ||
                (obj && (py_string(b, c->string ? c->string : "") < 0 || mini_buf_puts(b, ": ") < 0)))
                return -1;
            if ((r = py_value(b, c, float_keys, level + 1)) < 0)
                return r;
        }
        if (py_indent(b, level) < 0)
            return -1;
        return mini_buf_putc(b, obj ? '}' : ']');
    }
    default: return -2;
    }
}

int mini_json_print_py(struct mini_buf *out, const cJSON *item, const char *const *float_keys, struct mini_err *e)
{
    size_t len = out->len;
    int r = item ? py_value(out, item, float_keys, 0) : -2;
    if (r == 0)
        return 0;
    out->len = len;
    if (out->data)
        out->data[len] = '\0';
    return r == -1 ? mini_err_set(e, MINI_E_NOMEM, "out of memory")
                   : mini_err_set(e, MINI_E_INTERNAL, "cannot print an invalid JSON item");
}

int mini_json_mark_float(cJSON *n)
{
    struct mini_buf b = MINI_BUF_INIT;
    if (py_float(&b, n->valuedouble) < 0 || !b.data) {
        mini_buf_free(&b);
        return -1;
    }
    free(n->valuestring); /* cJSON's default allocator is malloc */
    n->valuestring = b.data;
    return 0;
}

cJSON *mini_json_create_float(double d)
{
    cJSON *n = cJSON_CreateNumber(d);
    if (n && mini_json_mark_float(n) < 0) {
        cJSON_Delete(n);
        return NULL;
    }
    return n;
}

bool mini_json_is_float(const cJSON *n)
{
    return cJSON_IsNumber(n) && n->valuestring && strpbrk(n->valuestring, ".eEnN");
}

int mini_json_append_line(int fd, const cJSON *item, struct mini_err *e)
{
    _cleanup_free_ char *line = cJSON_PrintUnformatted(item);
    if (!line)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    size_t n = strlen(line);
    line[n++] = '\n'; /* over the NUL: the line and its end in one write */
    ssize_t w;
    while ((w = write(fd, line, n)) < 0 && errno == EINTR)
        ;
    if (w < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "appending a line");
    if ((size_t)w != n)
        return mini_err_set(e, MINI_E_IO, "appending a line: short write (%zd of %zu bytes)", w, n);
    return 0;
}
