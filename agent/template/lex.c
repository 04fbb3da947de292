/* The lexer: Jinja's lexer.py, rule for rule, for the default delimiters
 * and options (whitespace control, raw blocks, Python literals). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/cleanup.h"

struct lexer {
    struct tpl *t;
    const char *s;
    size_t n, pos;
    int line;
    char stack[TPL_MAX_NEST]; /* open brackets in the current tag */
    size_t depth;
};

static int emit(struct lexer *x, int type, const char *p, size_t n)
{
    struct tpl *t = x->t;
    if (tpl_grow(t, (void **)&t->toks, &t->tokcap, t->ntok + 1, sizeof *t->toks) < 0)
        return -1;
    struct token *k = &t->toks[t->ntok++];
    memset(k, 0, sizeof *k);
    k->type = (uint8_t)type;
    k->line = x->line;
    k->p = p;
    k->n = n;
    return 0;
}

static void count_lines(struct lexer *x, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (x->s[i] == '\n')
            x->line++;
}

/* Length of Unicode whitespace at s[i..n). */
static size_t ws_len(const char *s, size_t n, size_t i)
{
    size_t start = i, l;
    while (i < n) {
        if (!tpl_uni_isspace(tpl_u8_decode(s + i, n - i, &l)))
            break;
        i += l;
    }
    return i - start;
}

/* p[0..n) without trailing Unicode whitespace (Python's str.rstrip()). */
static size_t rstrip_len(const char *p, size_t n)
{
    size_t i = 0, l, last = 0;
    while (i < n) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        i += l;
        if (!tpl_uni_isspace(c))
            last = i;
    }
    return last;
}

static bool at(const struct lexer *x, size_t i, const char *lit)
{
    size_t l = strlen(lit);
    return i <= x->n && x->n - i >= l && memcmp(x->s + i, lit, l) == 0;
}

/* `{%(-|+|)\s*raw\s*(?:-%}\s*|%})` at i: end of the match, or 0. */
static size_t match_raw_begin(const struct lexer *x, size_t i)
{
    size_t j = i + 2;
    if (j < x->n && (x->s[j] == '-' || x->s[j] == '+'))
        j++;
    j += ws_len(x->s, x->n, j);
    if (!at(x, j, "raw"))
        return 0;
    j += 3;
    j += ws_len(x->s, x->n, j);
    if (at(x, j, "-%}"))
        return j + 3 + ws_len(x->s, x->n, j + 3);
    if (at(x, j, "%}"))
        return j + 2;
    return 0;
}

/* `{%(-|+|)\s*endraw\s*(?:\+%}|-%}\s*|%})` at i: end of the match or 0;
 * *strip is set when the tag starts with `{%-`. */
static size_t match_raw_end(const struct lexer *x, size_t i, bool *strip)
{
    size_t j = i + 2;
    *strip = false;
    if (j < x->n && (x->s[j] == '-' || x->s[j] == '+'))
        *strip = x->s[j++] == '-';
    j += ws_len(x->s, x->n, j);
    if (!at(x, j, "endraw"))
        return 0;
    j += 6;
    j += ws_len(x->s, x->n, j);
    if (at(x, j, "+%}"))
        return j + 3;
    if (at(x, j, "-%}"))
        return j + 3 + ws_len(x->s, x->n, j + 3);
    if (at(x, j, "%}"))
        return j + 2;
    return 0;
}

/* `(\d+_)*\d+` at i: its length (0 when no digit). */
static size_t digits_us(const struct lexer *x, size_t i)
{
    size_t j = i;
    while (j < x->n && x->s[j] >= '0' && x->s[j] <= '9') {
        j++;
        if (j + 1 < x->n && x->s[j] == '_' && x->s[j + 1] >= '0' && x->s[j + 1] <= '9')
            j++;
    }
    return j - i;
}

/* Jinja's float_re at i: length or 0. */
static size_t match_float(const struct lexer *x, size_t i)
{
    if (i > 0 && x->s[i - 1] == '.')
        return 0;
    size_t d = digits_us(x, i);
    if (!d)
        return 0;
    size_t j = i + d;
    /* (\.digits)? e[+-]?digits */
    size_t k = j;
    if (k < x->n && x->s[k] == '.') {
        size_t f = digits_us(x, k + 1);
        if (f)
            k += 1 + f;
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t e = pass == 0 ? k : j;
        if (e < x->n && (x->s[e] | 0x20) == 'e') {
            size_t m = e + 1;
            if (m < x->n && (x->s[m] == '+' || x->s[m] == '-'))
                m++;
            size_t ed = digits_us(x, m);
            if (ed)
                return m + ed - i;
        }
        if (k == j)
            break;
    }
    /* \.digits */
    if (j < x->n && x->s[j] == '.') {
        size_t f = digits_us(x, j + 1);
        if (f)
            return j + 1 + f - i;
    }
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Jinja's integer_re at i: length or 0; the value in *v (error on overflow). */
static size_t match_int(struct lexer *x, size_t i, int64_t *v, bool *overflow)
{
    const char *s = x->s;
    size_t n = x->n, j;
    int base = 10;
    *overflow = false;
    if (i + 2 < n && s[i] == '0' &&
        ((s[i + 1] | 0x20) == 'b' || (s[i + 1] | 0x20) == 'o' || (s[i + 1] | 0x20) == 'x')) {
        char k = (char)(s[i + 1] | 0x20);
        base = k == 'b' ? 2 : k == 'o' ? 8 : 16;
        j = i + 2;
        size_t count = 0;
        for (;;) {
            size_t m = j;
            if (m < n && s[m] == '_')
                m++;
            int d = m < n ? hexval(s[m]) : -1;
            if (d < 0 || d >= base)
                break;
            j = m + 1;
            count++;
        }
        if (count == 0)
            goto decimal;
    } else {
decimal:
        base = 10;
        if (s[i] >= '1' && s[i] <= '9') {
            j = i + 1;
            for (;;) {
                size_t m = j;
                if (m < n && s[m] == '_')
                    m++;
                if (m < n && s[m] >= '0' && s[m] <= '9')
                    j = m + 1;
                else
                    break;
            }
        } else if (s[i] == '0') {
            j = i + 1;
            for (;;) {
                size_t m = j;
                if (m < n && s[m] == '_')
                    m++;
                if (m < n && s[m] == '0')
                    j = m + 1;
                else
                    break;
            }
        } else {
            return 0;
        }
    }
    uint64_t acc = 0;
    for (size_t k = (base == 10 ? i : i + 2); k < j; k++) {
        int d = hexval(s[k]);
        if (d < 0)
            continue; /* underscore */
        if (acc > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base)
            *overflow = true;
        acc = acc * (uint64_t)base + (uint64_t)d;
    }
    *v = (int64_t)acc;
    return j - i;
}

static size_t match_name(const struct lexer *x, size_t i)
{
    const char *s = x->s;
    char c = s[i];
    if (!(c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
        return 0;
    size_t j = i + 1;
    while (j < x->n && (s[j] == '_' || ((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'z') || (s[j] >= '0' && s[j] <= '9')))
        j++;
    return j - i;
}

/* Decode the body of a string literal like Python's
 * .encode("ascii", "backslashreplace").decode("unicode-escape"). */
static int decode_string(struct lexer *x, const char *p, size_t n, struct token *k)
{
    struct tpl *t = x->t;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    size_t l;
    for (size_t i = 0; i < n;) {
        if (p[i] != '\\') {
            size_t j = i;
            while (j < n && p[j] != '\\')
                j++;
            mini_buf_append(&b, p + i, j - i);
            i = j;
            continue;
        }
        i++; /* the lexer guarantees a character follows */
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x80) {
            /* "\é": the backslash escapes the backslash of "\xe9". */
            uint32_t cp = tpl_u8_decode(p + i, n - i, &l);
            if (cp < 0x100)
                mini_buf_printf(&b, "\\x%02x", cp);
            else if (cp < 0x10000)
                mini_buf_printf(&b, "\\u%04x", cp);
            else
                mini_buf_printf(&b, "\\U%08x", cp);
            i += l;
            continue;
        }
        i++;
        switch (c) {
        case '\n': break;
        case '\\': mini_buf_putc(&b, '\\'); break;
        case '\'': mini_buf_putc(&b, '\''); break;
        case '"': mini_buf_putc(&b, '"'); break;
        case 'a': mini_buf_putc(&b, '\a'); break;
        case 'b': mini_buf_putc(&b, '\b'); break;
        case 'f': mini_buf_putc(&b, '\f'); break;
        case 'n': mini_buf_putc(&b, '\n'); break;
        case 'r': mini_buf_putc(&b, '\r'); break;
        case 't': mini_buf_putc(&b, '\t'); break;
        case 'v': mini_buf_putc(&b, '\v'); break;
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7': {
            uint32_t v = c - '0';
            for (int d = 0; d < 2 && i < n && p[i] >= '0' && p[i] <= '7'; d++)
                v = v * 8 + (uint32_t)(p[i++] - '0');
            tpl_u8_put(&b, v);
            break;
        }
        case 'x':
        case 'u':
        case 'U': {
            int want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int d = 0; d < want; d++) {
                int h = i < n ? hexval(p[i]) : -1;
                if (h < 0)
                    return tpl_fail(t, k->line, "truncated \\%c escape in string literal", c);
                v = v * 16 + (uint32_t)h;
                i++;
            }
            if (v > 0x10FFFF)
                return tpl_fail(t, k->line, "illegal Unicode character in string literal");
            if (v >= 0xD800 && v <= 0xDFFF)
                return tpl_fail(t, k->line, "surrogate escapes (\\u%04x) are not supported", v);
            tpl_u8_put(&b, v);
            break;
        }
        case 'N': return tpl_fail(t, k->line, "\\N{...} escapes are not supported");
        default:
            mini_buf_putc(&b, '\\');
            mini_buf_putc(&b, (char)c);
            break;
        }
    }
    if (b.len && !b.data)
        return tpl_oom(t);
    k->n = b.len;
    k->p = tpl_memdup(t, b.data ? b.data : "", b.len);
    return k->p ? 0 : -1;
}

static const struct {
    const char *op;
    uint8_t tk;
} operators[] = {
    { "//", TK_FLOORDIV }, { "**", TK_POW },   { "==", TK_EQ },      { "!=", TK_NE },      { ">=", TK_GTEQ },
    { "<=", TK_LTEQ },     { "+", TK_ADD },    { "-", TK_SUB },      { "/", TK_DIV },      { "*", TK_MUL },
    { "%", TK_MOD },       { "~", TK_TILDE },  { "[", TK_LBRACKET }, { "]", TK_RBRACKET }, { "(", TK_LPAREN },
    { ")", TK_RPAREN },    { "{", TK_LBRACE }, { "}", TK_RBRACE },   { ">", TK_GT },       { "<", TK_LT },
    { "=", TK_ASSIGN },    { ".", TK_DOT },    { ":", TK_COLON },    { "|", TK_PIPE },     { ",", TK_COMMA },
    { ";", TK_SEMICOLON },
};

/* Tokens inside {{ }} (block = false) or {% %} until the end tag. */
static int lex_tag(struct lexer *x, bool block)
{
    struct tpl *t = x->t;
    x->depth = 0;
    for (;;) {
        size_t i = x->pos;
        if (i >= x->n)
            return tpl_fail(t, x->line, "unexpected end of template, expected '%s'",
                            block ? "end of statement block" : "end of print statement");
        if (x->depth == 0) {
            size_t end = 0;
            if (block && at(x, i, "+%}"))
                end = i + 3;
            else if (block && at(x, i, "-%}"))
                end = i + 3 + ws_len(x->s, x->n, i + 3);
            else if (block && at(x, i, "%}"))
                end = i + 2;
            else if (!block && at(x, i, "-}}"))
                end = i + 3 + ws_len(x->s, x->n, i + 3);
            else if (!block && at(x, i, "}}"))
                end = i + 2;
            if (end) {
                if (emit(x, block ? TK_BLOCK_END : TK_VAR_END, NULL, 0) < 0)
                    return -1;
                count_lines(x, i, end);
                x->pos = end;
                return 0;
            }
        }
        size_t l = ws_len(x->s, x->n, i);
        if (l) {
            count_lines(x, i, i + l);
            x->pos += l;
            continue;
        }
        if ((l = match_float(x, i)) > 0) {
            _cleanup_free_ char *buf = malloc(l + 1);
            size_t bl = 0;
            if (!buf)
                return tpl_oom(t);
            for (size_t j = i; j < i + l; j++)
                if (x->s[j] != '_')
                    buf[bl++] = x->s[j];
            buf[bl] = 0;
            if (emit(x, TK_FLOAT, x->s + i, l) < 0)
                return -1;
            t->toks[t->ntok - 1].num.f = strtod(buf, NULL);
            x->pos += l;
            continue;
        }
        int64_t iv;
        bool overflow;
        if ((l = match_int(x, i, &iv, &overflow)) > 0) {
            if (overflow)
                return tpl_fail(t, x->line, "integer literal %.*s is too large (ints are 64-bit)",
                                (int)(l > 40 ? 40 : l), x->s + i);
            if (emit(x, TK_INT, x->s + i, l) < 0)
                return -1;
            t->toks[t->ntok - 1].num.i = iv;
            x->pos += l;
            continue;
        }
        if ((l = match_name(x, i)) > 0) {
            if (emit(x, TK_NAME, x->s + i, l) < 0)
                return -1;
            x->pos += l;
            continue;
        }
        char q = x->s[i];
        if (q == '\'' || q == '"') {
            size_t j = i + 1;
            while (j < x->n && x->s[j] != q)
                j += x->s[j] == '\\' ? 2 : 1;
            if (j < x->n) {
                if (emit(x, TK_STRING, NULL, 0) < 0)
                    return -1;
                struct token *k = &t->toks[t->ntok - 1];
                if (decode_string(x, x->s + i + 1, j - i - 1, k) < 0)
                    return -1;
                count_lines(x, i, j);
                x->pos = j + 1;
                continue;
            }
        }
        size_t o;
        for (o = 0; o < MINI_ARRAY_SIZE(operators); o++)
            if (at(x, i, operators[o].op))
                break;
        if (o == MINI_ARRAY_SIZE(operators)) {
            size_t cl;
            tpl_u8_decode(x->s + i, x->n - i, &cl);
            return tpl_fail(t, x->line, "unexpected char '%.*s' at %zu", (int)cl, x->s + i, i);
        }
        char c = operators[o].op[0];
        if (operators[o].op[1] == 0 && (c == '(' || c == '[' || c == '{')) {
            if (x->depth >= sizeof x->stack)
                return tpl_fail(t, x->line, "brackets nest too deeply");
            x->stack[x->depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (operators[o].op[1] == 0 && (c == ')' || c == ']' || c == '}')) {
            if (x->depth == 0)
                return tpl_fail(t, x->line, "unexpected '%c'", c);
            char want = x->stack[--x->depth];
            if (want != c)
                return tpl_fail(t, x->line, "unexpected '%c', expected '%c'", c, want);
        }
        if (emit(x, operators[o].tk, x->s + i, strlen(operators[o].op)) < 0)
            return -1;
        x->pos += strlen(operators[o].op);
    }
}

int tpl_lex(struct tpl *t, const char *s, size_t n)
{
    struct lexer x = { .t = t, .s = s, .n = n, .line = 1 };
    while (x.pos < n) {
        size_t i = x.pos;
        while (i + 1 < n && !(s[i] == '{' && (s[i + 1] == '{' || s[i + 1] == '%' || s[i + 1] == '#')))
            i++;
        if (i + 1 >= n) {
            if (emit(&x, TK_DATA, s + x.pos, n - x.pos) < 0)
                return -1;
            count_lines(&x, x.pos, n);
            break;
        }
        char kind = s[i + 1];
        size_t after = i + 2;
        char sign = 0;
        if (after < n && (s[after] == '-' || s[after] == '+'))
            sign = s[after++];
        size_t raw_end = kind == '%' ? match_raw_begin(&x, i) : 0;
        size_t dlen = i - x.pos;
        if (sign == '-')
            dlen = rstrip_len(s + x.pos, dlen);
        if (dlen && emit(&x, TK_DATA, s + x.pos, dlen) < 0)
            return -1;
        count_lines(&x, x.pos, i);
        if (raw_end) {
            count_lines(&x, i, raw_end);
            size_t j = raw_end, end = 0;
            bool strip = false;
            for (; j + 1 < n; j++)
                if (s[j] == '{' && s[j + 1] == '%' && (end = match_raw_end(&x, j, &strip)) != 0)
                    break;
            if (!end)
                return tpl_fail(t, x.line, "Missing end of raw directive");
            size_t rl = j - raw_end;
            if (strip)
                rl = rstrip_len(s + raw_end, rl);
            if (rl && emit(&x, TK_DATA, s + raw_end, rl) < 0)
                return -1;
            count_lines(&x, raw_end, end);
            x.pos = end;
            continue;
        }
        if (kind == '#') {
            size_t q = after;
            while (q + 1 < n && !(s[q] == '#' && s[q + 1] == '}'))
                q++;
            if (q + 1 >= n)
                return tpl_fail(t, x.line, "Missing end of comment tag");
            size_t end = q + 2;
            if (q > after && s[q - 1] == '-')
                end += ws_len(s, n, end);
            count_lines(&x, i, end);
            x.pos = end;
            continue;
        }
        if (emit(&x, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, NULL, 0) < 0)
            return -1;
        x.pos = after;
        if (lex_tag(&x, kind == '%') < 0)
            return -1;
    }
    return emit(&x, TK_EOF, NULL, 0);
}

/* How Jinja names a token type in messages. */
const char *tpl_token_desc(int type)
{
    switch (type) {
    case TK_EOF: return "end of template";
    case TK_DATA: return "template data / text";
    case TK_VAR_BEGIN: return "begin of print statement";
    case TK_VAR_END: return "end of print statement";
    case TK_BLOCK_BEGIN: return "begin of statement block";
    case TK_BLOCK_END: return "end of statement block";
    case TK_NAME: return "name";
    case TK_STRING: return "string";
    case TK_INT: return "integer";
    case TK_FLOAT: return "float";
    default:
        for (size_t i = 0; i < MINI_ARRAY_SIZE(operators); i++)
            if (operators[i].tk == type)
                return operators[i].op;
        return "token";
    }
}
