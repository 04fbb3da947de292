/* Untrusted text made safe to show (internal.h).  A trajectory holds what
 * a model and its commands printed: escape sequences that would retitle a
 * terminal, move its cursor or write its clipboard, bytes that are not
 * UTF-8, bidirectional overrides that make text read differently from
 * what it is.  All of it is turned into visible text here, once, when a
 * trajectory is read. */
#include "internal.h"
#include "mini/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint32_t mini_insp_utf8_decode(const char *p, size_t n, size_t *len)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned char c = s[0];
    size_t k = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
    if (k > n)
        k = n;
    uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (s[i] & 0x3f);
    *len = k;
    return cp;
}

/* Shown as \uXXXX: C1 controls (some terminals obey them), the
 * bidirectional embeddings, overrides and isolates, line and paragraph
 * separators. */
static bool shown_escaped(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

int mini_insp_clean_append(struct mini_buf *out, const char *p, size_t n)
{
    struct mini_buf valid = MINI_BUF_INIT;
    const unsigned char *s = (const unsigned char *)p;
    if (!mini_utf8_valid(p, n)) {
        if (mini_utf8_sanitize(&valid, p, n) < 0) {
            mini_buf_free(&valid);
            return -1;
        }
        s = (const unsigned char *)valid.data;
        n = valid.len;
    }
    int rc = mini_buf_reserve(out, n);
    for (size_t i = 0; rc == 0 && i < n;) {
        unsigned char c = s[i];
        if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
            rc = mini_buf_putc(out, (char)c);
            i++;
        } else if (c == '\r' && i + 1 < n && s[i + 1] == '\n') {
            i++; /* the \n follows */
        } else if (c < 0x20 || c == 0x7f) {
            char caret[2] = {'^', c == 0x7f ? '?' : (char)(c + 0x40)};
            rc = mini_buf_append(out, caret, 2);
            i++;
        } else {
            size_t len;
            uint32_t cp = mini_insp_utf8_decode((const char *)s + i, n - i, &len);
            if (shown_escaped(cp))
                rc = mini_buf_printf(out, "\\u%04x", (unsigned)cp) < 0 ? -1 : 0;
            else
                rc = mini_buf_append(out, s + i, len);
            i += len;
        }
    }
    mini_buf_free(&valid);
    return rc < 0 ? -1 : 0;
}

char *mini_insp_clean(const char *p, size_t n)
{
    struct mini_buf b = MINI_BUF_INIT;
    if (mini_insp_clean_append(&b, p, n) < 0 || mini_buf_putc(&b, 0) < 0) {
        mini_buf_free(&b);
        return NULL;
    }
    b.len--;
    return mini_buf_steal(&b, NULL);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The 16-bit value of the \uXXXX escape at p (p[0] == '\\'), or -1. */
static long u_escape(const char *p, size_t n)
{
    if (n < 6 || p[0] != '\\' || p[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

void mini_insp_json_fix_escapes(char *p, size_t n)
{
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        if (!in_string) {
            in_string = p[i] == '"';
            continue;
        }
        if (p[i] == '"') {
            in_string = false;
            continue;
        }
        if (p[i] != '\\')
            continue;
        long v = u_escape(p + i, n - i);
        if (v < 0) {
            i++; /* an escaped character, perhaps '"' or '\\' */
            continue;
        }
        if (v == 0) {
            memcpy(p + i, "\\u2400", 6);
        } else if (v >= 0xd800 && v <= 0xdbff) {
            long lo = u_escape(p + i + 6, n - i - 6);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                i += 11; /* a valid pair */
                continue;
            }
            memcpy(p + i, "\\ufffd", 6);
        } else if (v >= 0xdc00 && v <= 0xdfff) {
            memcpy(p + i, "\\ufffd", 6);
        }
        i += 5;
    }
}
