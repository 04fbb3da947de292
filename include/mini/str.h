/* Small string helpers shared by the programs. */
#ifndef MINI_STR_H
#define MINI_STR_H

#include <stddef.h>

/* Levenshtein distance between a and b (insertions, deletions and
 * substitutions of one byte each); SIZE_MAX when either is longer than 64
 * bytes. */
size_t mini_edit_distance(const char *a, const char *b);

/* The closest of names[0..n) to word, for a "did you mean" hint: at most 2
 * edits away and fewer edits than half the longer word; NULL if none is. */
const char *mini_closest(const char *word, const char *const *names, size_t n);

#endif
