/* Small string helpers shared by the programs. */
#ifndef MINI_STR_H
#define MINI_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The n bytes at s as a decimal number: digits only (no sign, no space),
 * at least one, at most max.  false on anything else. */
bool mini_parse_decimal(const char *s, size_t n, uint64_t max, uint64_t *out);

/* The closest of names[0..n) to word, for a "did you mean" hint: at most 2
 * edits away and fewer edits than half the longer word; NULL if none is. */
const char *mini_closest(const char *word, const char *const *names, size_t n);

/* bytes as a person reads them: "512 B", "1.5 KiB", "3.2 GiB" (binary
 * units, one decimal past bytes), in buf of size n. */
void mini_human_bytes(char *buf, size_t n, double bytes);

#endif
