/* UTF-8 validation and repair following Unicode's "maximal subpart"
 * practice, which is what Python's bytes.decode("utf-8", "replace") does:
 * a lead byte followed by a valid prefix of a sequence that is then cut
 * short becomes a single U+FFFD; a byte that cannot start a sequence
 * becomes one U+FFFD on its own. */
#include "mini/utf8.h"

#include <stdint.h>
#include <string.h>

static const char replacement[3] = { (char)0xEF, (char)0xBF, (char)0xBD };

/* Index of the first byte at or after i that is not ASCII (or n): eight
 * bytes at a time, since command output is mostly ASCII. */
static size_t skip_ascii(const uint8_t *p, size_t i, size_t n)
{
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull)
            break;
        i += 8;
    }
    while (i < n && p[i] < 0x80)
        i++;
    return i;
}

/* Length of the sequence a lead byte starts (0: not a lead byte) and the
 * allowed range of its second byte (Unicode Table 3-7). */
static int lead_info(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        return 2;
    if (c < 0xF0) {
        if (c == 0xE0)
            *lo = 0xA0; /* no overlong 3-byte forms */
        else if (c == 0xED)
            *hi = 0x9F; /* no surrogates */
        return 3;
    }
    if (c < 0xF5) {
        if (c == 0xF0)
            *lo = 0x90; /* no overlong 4-byte forms */
        else if (c == 0xF4)
            *hi = 0x8F; /* nothing above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Length of the well-formed character at p (1..4), or 0 with *bad set to
 * the length of the maximal ill-formed subpart to replace (>= 1).  When the
 * input ends in the middle of a valid prefix, *bad covers it and *cut is 1. */
static size_t scan(const uint8_t *p, size_t n, size_t *bad, int *cut)
{
    uint8_t lo, hi;
    int len = lead_info(p[0], &lo, &hi);
    *cut = 0;
    if (len == 0) {
        *bad = 1;
        return 0;
    }
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) {
            *bad = (size_t)i;
            *cut = 1;
            return 0;
        }
        uint8_t b = p[i];
        uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *bad = (size_t)i;
            return 0;
        }
    }
    return (size_t)len;
}

int mini_utf8_sanitize(struct mini_buf *out, const void *data, size_t n)
{
    const uint8_t *p = data;
    size_t i = 0, run = 0; /* p[run..i) is valid and not yet copied */
    if (n == 0)
        return mini_buf_append(out, "", 0);
    while (i < n) {
        if (p[i] < 0x80) {
            i = skip_ascii(p, i, n);
            continue;
        }
        size_t bad;
        int cut;
        size_t len = scan(p + i, n - i, &bad, &cut);
        if (len) {
            i += len;
            continue;
        }
        if (mini_buf_append(out, p + run, i - run) < 0 || mini_buf_append(out, replacement, sizeof replacement) < 0)
            return -1;
        i += bad;
        run = i;
    }
    return mini_buf_append(out, p + run, n - run);
}

int mini_utf8_sanitize_keep_nul(struct mini_buf *out, const void *data, size_t n)
{
    const uint8_t *p = data;
    if (n == 0)
        return mini_buf_append(out, "", 0);
    while (n > 0) {
        const uint8_t *z = memchr(p, 0xC0, n);
        while (z && !((size_t)(z - p) + 1 < n && z[1] == 0x80))
            z = (size_t)(z - p) + 1 < n ? memchr(z + 1, 0xC0, n - (size_t)(z - p) - 1) : NULL;
        size_t seg = z ? (size_t)(z - p) : n;
        if ((seg && mini_utf8_sanitize(out, p, seg) < 0) || (z && mini_buf_append(out, MINI_UTF8_NUL, 2) < 0))
            return -1;
        seg += z ? 2 : 0;
        p += seg;
        n -= seg;
    }
    return 0;
}

bool mini_utf8_valid(const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            i = skip_ascii(p, i, n);
            continue;
        }
        size_t bad;
        int cut;
        size_t len = scan(p + i, n - i, &bad, &cut);
        if (!len)
            return false;
        i += len;
    }
    return true;
}

size_t mini_utf8_incomplete_tail(const void *data, size_t n)
{
    const uint8_t *p = data;
    /* A cut sequence starts at most 3 bytes before the end. */
    size_t start = n > 3 ? n - 3 : 0;
    for (size_t i = start; i < n; i++) {
        if (p[i] < 0x80 || p[i] >= 0xC0) {
            size_t bad;
            int cut;
            if (scan(p + i, n - i, &bad, &cut) == 0 && cut && i + bad == n)
                return n - i;
        }
    }
    return 0;
}

size_t mini_utf8_codepoints(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((uint8_t)s[i] & 0xC0) != 0x80)
            count++;
    return count;
}
