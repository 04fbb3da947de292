/* UTF-8 sanitising with the semantics of Python's
 * bytes.decode("utf-8", errors="replace"): every maximal ill-formed
 * subsequence (Unicode 3.9 / W3C "substitution of maximal subparts")
 * becomes one U+FFFD. */
#ifndef MINI_UTF8_H
#define MINI_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include "mini/buf.h"

/* Append the sanitised form of p[0..n) to out.  0 or -1 (ENOMEM). */
int mini_utf8_sanitize(struct mini_buf *out, const void *p, size_t n);
/* Modified UTF-8's NUL: the two bytes C0 80, which valid UTF-8 never
 * holds, stand for a NUL byte inside a C string (command output keeps its
 * NUL bytes this way; the JSON printers write it as \u0000). */
#define MINI_UTF8_NUL "\xC0\x80"
/* As mini_utf8_sanitize, but every C0 80 pair is kept as it is. */
int mini_utf8_sanitize_keep_nul(struct mini_buf *out, const void *p, size_t n);
/* True when p[0..n) is valid UTF-8 (no surrogates, no overlongs, <= U+10FFFF). */
bool mini_utf8_valid(const void *p, size_t n);
/* Number of bytes at the end of p[0..n) that form an incomplete but so far
 * valid UTF-8 sequence (0..3).  Used to split a stream at a character boundary. */
size_t mini_utf8_incomplete_tail(const void *p, size_t n);
/* Number of code points in valid UTF-8 text. */
size_t mini_utf8_codepoints(const char *s, size_t n);

#endif
