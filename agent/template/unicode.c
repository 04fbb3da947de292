/* UTF-8 and Unicode as Python's str sees them: decoding that never fails,
 * code point counts and offsets, character classes and the full case
 * mappings (final sigma included), from the tables in unicode_tables.c. */
#include "unicode.h"

#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- UTF-8 */

uint32_t tpl_u8_decode(const char *p, size_t n, size_t *len)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned c = s[0];
    size_t need;
    uint32_t cp;

    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c == 0xC0 && n >= 2 && s[1] == 0x80) {
        *len = 2; /* MINI_UTF8_NUL: a NUL in command output */
        return 0;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07;
    } else {
        *len = 1; /* a stray byte counts as one character */
        return 0xFFFD;
    }
    if (need >= n) {
        *len = 1;
        return 0xFFFD;
    }
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = need + 1;
    return cp;
}

size_t tpl_u8_count(const char *p, size_t n)
{
    size_t count = 0, i = 0, l;
    while (i < n) {
        if ((unsigned char)p[i] < 0x80) {
            i++;
        } else {
            tpl_u8_decode(p + i, n - i, &l);
            i += l;
        }
        count++;
    }
    return count;
}

size_t tpl_u8_offset(const char *p, size_t n, size_t idx)
{
    size_t i = 0, l;
    while (idx > 0 && i < n) {
        if ((unsigned char)p[i] < 0x80) {
            i++;
        } else {
            tpl_u8_decode(p + i, n - i, &l);
            i += l;
        }
        idx--;
    }
    return i;
}

int tpl_u8_put(struct mini_buf *b, uint32_t cp)
{
    char s[4];
    size_t n;
    if (cp < 0x80 && cp != 0) { /* U+0000 as C0 80, MINI_UTF8_NUL */
        s[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        s[0] = (char)(0xC0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12);
        s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        s[0] = (char)(0xF0 | cp >> 18);
        s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return mini_buf_append(b, s, n);
}

/* Start of the code point before byte offset i (i > 0). */
size_t tpl_u8_prev(const char *p, size_t i)
{
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && ((unsigned char)p[j] & 0xC0) == 0x80)
        j--;
    return j;
}

/* -------------------------------------------------------------- Unicode */

bool tpl_uni_isspace(uint32_t c)
{
    if (c < 0x80)
        return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
        c == 0x202F || c == 0x205F || c == 0x3000;
}

bool tpl_uni_islinebreak(uint32_t c)
{
    return (c >= 0x0A && c <= 0x0D) || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 || c == 0x2029;
}

static bool in_ranges(const struct tpl_range *r, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c < r[mid].lo)
            hi = mid;
        else if (c > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool tpl_uni_printable(uint32_t c)
{
    if (c < 0x80)
        return c >= 0x20 && c < 0x7F;
    return !in_ranges(tpl_nonprintable, tpl_nonprintable_len, c);
}

static bool tpl_uni_cased(uint32_t c)
{
    if (c < 0x80)
        return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    return in_ranges(tpl_cased, tpl_cased_len, c);
}

bool tpl_uni_is(uint32_t c, int what)
{
    if (c < 0x80) {
        bool alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z', digit = c >= '0' && c <= '9';
        return what == UNI_ALPHA ? alpha : what == UNI_ALNUM ? alpha || digit : digit;
    }
    switch (what) {
    case UNI_ALPHA: return in_ranges(tpl_alpha, tpl_alpha_len, c);
    case UNI_NUMERIC: return in_ranges(tpl_numeric, tpl_numeric_len, c);
    case UNI_DIGIT: return in_ranges(tpl_digit, tpl_digit_len, c);
    case UNI_DECIMAL: return in_ranges(tpl_decimal, tpl_decimal_len, c);
    default: return in_ranges(tpl_alpha, tpl_alpha_len, c) || in_ranges(tpl_numeric, tpl_numeric_len, c);
    }
}

static bool tpl_uni_case_ignorable(uint32_t c) { return in_ranges(tpl_case_ignorable, tpl_case_ignorable_len, c); }

/* The single-code-point mapping of c in runs r, if any. */
static bool run_map(const struct tpl_case_run *r, size_t n, uint32_t c, uint32_t *out)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* last run with start <= c */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].start <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return false;
    const struct tpl_case_run *x = &r[lo - 1];
    uint32_t off = c - x->start;
    if (off % x->stride || off / x->stride >= x->count)
        return false;
    *out = (uint32_t)((int64_t)c + x->delta);
    return true;
}

static const struct tpl_case_multi *multi_map(const struct tpl_case_multi *m, size_t n, uint32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].cp == c)
            return &m[mid];
        if (m[mid].cp < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

#define MAP(kind, c, out)                                                                                           \
    ((m = multi_map(tpl_##kind##_multi, tpl_##kind##_multi_len, c)) != NULL ? (memcpy(out, m->to, sizeof m->to), 1) \
         : run_map(tpl_##kind##_runs, tpl_##kind##_runs_len, c, &out[0])    ? (out[1] = out[2] = 0, 1)              \
                                                                            : 0)

/* Full case mapping of c into out[0..3) (zero padded). */
static void map_upper(uint32_t c, uint32_t out[3])
{
    const struct tpl_case_multi *m;
    if (c < 0x80) {
        out[0] = (c >= 'a' && c <= 'z') ? c - 32 : c;
        out[1] = out[2] = 0;
        return;
    }
    if (!MAP(upper, c, out)) {
        out[0] = c;
        out[1] = out[2] = 0;
    }
}

static void map_title(uint32_t c, uint32_t out[3])
{
    const struct tpl_case_multi *m;
    if (c >= 0x80 && MAP(title, c, out))
        return;
    map_upper(c, out);
}

/* Lower mapping of the code point at byte offset i of p[0..n), with
 * Python's final-sigma rule. */
static void map_lower(const char *p, size_t n, size_t i, uint32_t c, size_t clen, uint32_t out[3])
{
    const struct tpl_case_multi *m;
    out[1] = out[2] = 0;
    if (c < 0x80) {
        out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        return;
    }
    if (c == 0x3A3) {
        size_t j = i, l;
        uint32_t d = 0;
        bool final = false;
        while (j > 0) {
            j = tpl_u8_prev(p, j);
            d = tpl_u8_decode(p + j, n - j, &l);
            if (!tpl_uni_case_ignorable(d)) {
                final = tpl_uni_cased(d);
                break;
            }
        }
        if (final) {
            for (j = i + clen; j < n; j += l) {
                d = tpl_u8_decode(p + j, n - j, &l);
                if (!tpl_uni_case_ignorable(d))
                    break;
            }
            final = j >= n || !tpl_uni_cased(d);
        }
        out[0] = final ? 0x3C2 : 0x3C3;
        return;
    }
    if (!MAP(lower, c, out))
        out[0] = c;
}

int tpl_uni_case(struct mini_buf *b, const char *p, size_t n, int how)
{
    bool prev_cased = false;
    uint32_t out[3];
    size_t l;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        switch (how) {
        case CASE_UPPER: map_upper(c, out); break;
        case CASE_LOWER: map_lower(p, n, i, c, l, out); break;
        case CASE_TITLE:
            if (prev_cased)
                map_lower(p, n, i, c, l, out);
            else
                map_title(c, out);
            prev_cased = tpl_uni_cased(c);
            break;
        default: /* CASE_CAPITALIZE */
            if (i == 0)
                map_title(c, out);
            else
                map_lower(p, n, i, c, l, out);
            break;
        }
        for (int k = 0; k < 3 && (k == 0 || out[k]); k++)
            if (tpl_u8_put(b, out[k]) < 0)
                return -1;
    }
    return 0;
}

/* Python's str.islower()/isupper() (the Lowercase/Uppercase properties are
 * approximated from the case mappings). */
static bool cp_isupper(uint32_t c)
{
    uint32_t out[3];
    if (!tpl_uni_cased(c))
        return false;
    map_lower("", 0, 0, c == 0x3A3 ? 0x3A3 : c, 1, out);
    return out[0] != c || out[1];
}

bool tpl_uni_islower_str(const char *p, size_t n)
{
    bool cased = false;
    size_t l;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        if (cp_isupper(c))
            return false;
        if (tpl_uni_cased(c))
            cased = true;
    }
    return cased;
}

bool tpl_uni_isupper_str(const char *p, size_t n)
{
    bool cased = false;
    size_t l;
    for (size_t i = 0; i < n; i += l) {
        uint32_t c = tpl_u8_decode(p + i, n - i, &l);
        if (tpl_uni_cased(c) && !cp_isupper(c))
            return false;
        if (tpl_uni_cased(c))
            cased = true;
    }
    return cased;
}
