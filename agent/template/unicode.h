/* UTF-8 and Unicode for the template engine (unicode.c), internal to
 * agent/template/.  Strings are (pointer, length) UTF-8 slices; a stray
 * byte decodes as U+FFFD and counts as one character; C0 80 is U+0000 (a
 * NUL kept in command output, MINI_UTF8_NUL), which tpl_u8_put writes. */
#ifndef MINI_TEMPLATE_UNICODE_H
#define MINI_TEMPLATE_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/buf.h"

uint32_t tpl_u8_decode(const char *p, size_t n, size_t *len);
size_t tpl_u8_count(const char *p, size_t n);
size_t tpl_u8_offset(const char *p, size_t n, size_t idx); /* byte offset of code point idx */
size_t tpl_u8_prev(const char *p, size_t i);               /* start of the code point before offset i > 0 */
int tpl_u8_put(struct mini_buf *b, uint32_t cp);

bool tpl_uni_isspace(uint32_t cp);
bool tpl_uni_islinebreak(uint32_t cp);
bool tpl_uni_printable(uint32_t cp); /* str.isprintable(): repr() escapes the rest */
/* Python's str.isalpha/isnumeric/isdigit/isdecimal/isalnum of one character. */
enum { UNI_ALPHA = 1, UNI_NUMERIC = 2, UNI_DIGIT = 4, UNI_DECIMAL = 8, UNI_ALNUM = 16 };
bool tpl_uni_is(uint32_t cp, int what);
/* Python's str.lower/upper/title/capitalize of p[0..n), appended to b. */
enum { CASE_LOWER, CASE_UPPER, CASE_TITLE, CASE_CAPITALIZE };
int tpl_uni_case(struct mini_buf *b, const char *p, size_t n, int how);
bool tpl_uni_islower_str(const char *p, size_t n);
bool tpl_uni_isupper_str(const char *p, size_t n);

/* The tables, generated from Python's own str methods by
 * tests/template/gen_unicode.py into unicode_tables.c; used by unicode.c
 * only.  Case mappings of one code point are runs: `count` code points
 * from `start`, `stride` apart, each mapped to itself + `delta`. */
struct tpl_case_run {
    uint32_t start;
    uint16_t count;
    uint8_t stride;
    int32_t delta;
};
struct tpl_case_multi {
    uint32_t cp;
    uint32_t to[3];
}; /* one to several */
struct tpl_range {
    uint32_t lo, hi;
}; /* sorted, inclusive */
#define TPL_TABLE(type, name) \
    extern const type name[]; \
    extern const size_t name##_len
TPL_TABLE(struct tpl_case_run, tpl_lower_runs);
TPL_TABLE(struct tpl_case_multi, tpl_lower_multi);
TPL_TABLE(struct tpl_case_run, tpl_upper_runs);
TPL_TABLE(struct tpl_case_multi, tpl_upper_multi);
TPL_TABLE(struct tpl_case_run, tpl_title_runs);
TPL_TABLE(struct tpl_case_multi, tpl_title_multi);
TPL_TABLE(struct tpl_range, tpl_nonprintable);
TPL_TABLE(struct tpl_range, tpl_cased);
TPL_TABLE(struct tpl_range, tpl_case_ignorable);
TPL_TABLE(struct tpl_range, tpl_alpha);
TPL_TABLE(struct tpl_range, tpl_numeric);
TPL_TABLE(struct tpl_range, tpl_digit);
TPL_TABLE(struct tpl_range, tpl_decimal);
#undef TPL_TABLE

#endif
