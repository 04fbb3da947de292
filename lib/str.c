#include "mini/str.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>

bool mini_parse_decimal(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Levenshtein distance between a and b (insertions, deletions and
 * substitutions of one byte each); SIZE_MAX when either is longer than 64
 * bytes. */
static size_t mini_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *mini_closest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX, wl = strlen(word);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        size_t d = mini_edit_distance(word, names[i]);
        if (d < bd && d <= 2 && d * 2 < (wl > nl ? wl : nl)) {
            bd = d;
            best = names[i];
        }
    }
    return best;
}

void mini_human_bytes(char *buf, size_t n, double bytes)
{
    static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    size_t i = 0;
    while (bytes >= 1024 && i < 4) {
        bytes /= 1024;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}
