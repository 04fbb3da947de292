/* Strict JSON parsing and small helpers on top of cJSON.
 *
 * cJSON is lenient where JSON (RFC 8259) is strict: it accepts leading
 * zeros, raw control characters in strings, any byte <= 0x20 as whitespace,
 * invalid UTF-8 and repeated keys, and it truncates strings at an escaped
 * \u0000.  mini_json_parse() closes those gaps so that what a peer sends is
 * either understood exactly or rejected with a message that says why. */
#ifndef MINI_JSON_H
#define MINI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "mini/buf.h"
#include "mini/err.h"

/* Deepest nesting of arrays and objects (cJSON's own limit). */
#define MINI_JSON_MAX_DEPTH CJSON_NESTING_LIMIT
/* Most values (scalars, arrays, objects; keys count too) in one document:
 * bounds the memory a parse may take (cJSON spends ~80 bytes per value). */
#define MINI_JSON_MAX_VALUES 100000
/* Longest number literal (cJSON reads numbers through a 64-byte buffer). */
#define MINI_JSON_MAX_NUMBER 63
/* Bytes of a peer-supplied name (a key, an op) quoted in an error message. */
#define MINI_JSON_SHOW_MAX 64
/* Largest integer a JSON number (an IEEE double) holds exactly: 2^53 - 1. */
#define MINI_JSON_INT_MAX 9007199254740991LL

/* Parse p[0..len) (need not be NUL-terminated) as exactly one JSON value:
 * valid UTF-8 without NUL bytes; no raw control characters or \u0000 in
 * strings; numbers per the JSON grammar and finite as doubles; at most
 * MINI_JSON_MAX_DEPTH levels and MINI_JSON_MAX_VALUES values; nothing but
 * whitespace after the value.  Repeated keys are not checked here (see
 * mini_json_check_unique_keys).  NULL with e filled (bad_request). */
cJSON *mini_json_parse(const char *p, size_t len, struct mini_err *e);
/* As mini_json_parse; on failure *where is the byte offset the error was
 * found at (0 when it has no place: empty text, invalid UTF-8, a number
 * out of range), for a message with a line and column. */
cJSON *mini_json_parse_where(const char *p, size_t len, size_t *where, struct mini_err *e);

/* 0 when no object in the tree repeats a key; else -1 with e filled
 * (bad_request, `where.path: duplicate key "k"`, or out_of_memory).
 * `where` names item in the message; NULL or "" for none. */
int mini_json_check_unique_keys(const cJSON *item, const char *where, struct mini_err *e);

/* True when item is a number with an integer value in [min, max]; stores it
 * in *out.  min and max must lie within +-MINI_JSON_INT_MAX. */
bool mini_json_get_int(const cJSON *item, int64_t min, int64_t max, int64_t *out);

/* Append item as compact JSON text.  Unlike cJSON_Print, numbers are exact:
 * integers up to +-2^53 in full, other doubles in the shortest form that
 * reads back to the same value ('.' whatever the locale); NaN and
 * infinities as null.  A NUL kept as C0 80 (MINI_UTF8_NUL, mini/utf8.h)
 * is written as \u0000.  0, or -1 with e filled (out of memory, or an
 * invalid item). */
int mini_json_print(struct mini_buf *out, const cJSON *item, struct mini_err *e);

/* Append item as json.dump(item, indent=2) writes it in Python (the
 * defaults, ensure_ascii included): objects and arrays one member a line,
 * indented by two spaces, ", " / ": " separators; strings with every
 * character outside ' '..'~' escaped (\n and the like, else \uXXXX, with
 * surrogate pairs above U+FFFF; C0 80 (MINI_UTF8_NUL) as \u0000; other
 * invalid UTF-8 first becomes U+FFFD as bytes.decode(errors="replace")
 * would); numbers as Python's repr: integers
 * in full, other doubles in the shortest form that reads back (1e-05,
 * 1e+16 style exponents outside 1e-4..1e16), NaN and infinities as NaN,
 * Infinity, -Infinity.  cJSON keeps no difference between 1 and 1.0: an
 * integral number under a key in float_keys (a NULL-terminated list, may
 * be NULL) is written as a float ("1.0"), as Python writes a float field;
 * so is a number whose valuestring (its source text, as
 * mini_json_create_float keeps it) has a '.', an exponent, inf or nan.
 * 0, or -1 with e filled. */
int mini_json_print_py(struct mini_buf *out, const cJSON *item, const char *const *float_keys, struct mini_err *e);

/* Python keeps int and float apart (YAML `3.0` and JSON `3.0` are floats
 * and print as "3.0"); cJSON does not.  A float is a cJSON number whose
 * valuestring holds its text with a '.', an exponent, "inf" or "nan":
 * mini_json_print_py, the template engine (agent/template/template.h) and
 * the config loader read it.  mini_json_create_float makes one (NULL when
 * out of memory), mini_json_mark_float marks number n (0, or -1 when out
 * of memory), mini_json_is_float tells. */
cJSON *mini_json_create_float(double d);
int mini_json_mark_float(cJSON *n);
bool mini_json_is_float(const cJSON *n);

/* How many bytes of s to show when quoting it in a message: at most max,
 * cut on a character boundary.  For printf's "%.*s". */
int mini_json_clip(const char *s, size_t max);
/* The two arguments of "%.*s" for quoting a peer-supplied name. */
#define MINI_JSON_SHOW(s) mini_json_clip((s), MINI_JSON_SHOW_MAX), (s)

/* Append item to fd as one line (compact JSON and "\n") with a single
 * write(), for logs that several processes append to (opened O_APPEND):
 * no line is ever torn or interleaved with another writer's.  A short
 * write (disk full) is an error, never resumed.  0, or -1 with e. */
int mini_json_append_line(int fd, const cJSON *item, struct mini_err *e);

#endif
