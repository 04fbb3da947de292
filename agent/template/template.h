/* A Jinja2 subset that renders mini-swe-agent's config templates exactly as
 * jinja2 3.x does with `Template(src, undefined=StrictUndefined)` and the
 * default Environment (trim_blocks, lstrip_blocks and keep_trailing_newline
 * off, no autoescaping).
 *
 * Supported:
 *   - {{ expr }}, {% if/elif/else/endif %}, {% for a[, b] in seq [if cond]
 *     [recursive] %}...{% else %}...{% endfor %} with the `loop` object,
 *     {% set x = expr %}, {% set a, b = ... %}, {% set ns.attr = ... %},
 *     {% set x [| filter] %}...{% endset %}, {% with %}, {% filter %},
 *     {% print %}, {% raw %}, comments, whitespace control with `-` (and `+`)
 *     on every tag; the source's newlines are normalised to "\n" and one
 *     trailing newline of the source is dropped, as in Jinja.
 *   - Expressions: literals (strings with Python escapes, ints in any base,
 *     floats, lists, tuples, dicts, true/false/none), names, a.b and a[b]
 *     (Jinja's getattr/getitem fallbacks), integer indexing and slicing of
 *     strings (by code point) and lists, + - * / // % ** ~, unary -/+,
 *     comparisons (chained), in / not in, and / or / not, `x if c else y`,
 *     filters, tests, calls of methods and of range / dict / namespace.
 *   - Filters: abs attr batch capitalize center count d default dictsort e
 *     escape first float forceescape format indent int items join last length
 *     list lower map max min reject rejectattr replace reverse round safe
 *     select selectattr slice sort string sum title tojson trim truncate
 *     unique upper wordcount (generator filters are lazy and single-use).
 *   - Tests: defined undefined none boolean true false integer float number
 *     string mapping sequence iterable callable sameas escaped in even odd
 *     divisibleby lower upper eq equalto ne lt lessthan le gt greaterthan ge,
 *     == != < <= > >=.
 *   - Methods: str (strip lstrip rstrip startswith endswith split rsplit
 *     splitlines lower upper title capitalize replace find rfind index count
 *     join center ljust rjust zfill removeprefix removesuffix partition
 *     isdigit isalpha ...), dict (items keys values get copy), list/tuple
 *     (count index), loop.cycle, loop.changed; globals range, dict,
 *     namespace.
 *
 * Values come from a cJSON object.  cJSON keeps every number as a double and
 * forgets how it was written, so a plain cJSON number that holds an integral
 * value of magnitude <= 2^53 is taken as a Python int (3.0 prints as "3",
 * where Python would print 3.0); every other number is a float.  Two ways
 * keep Python's distinction:
 *   - a cJSON number whose `valuestring` holds its source text ("3.",
 *     "3.0", "42"; cJSON ignores valuestring for numbers but duplicates and
 *     frees it): a float when the text has a '.', an exponent, inf or nan,
 *     else an int -- a config loader can keep the text it parsed (and must
 *     drop it if it changes the value later);
 *   - a cJSON raw item holding a JSON number (cJSON_CreateRaw("3.0")), read
 *     as Python's json module reads it (also exact for big ints).
 * Numbers computed in the template keep Python's int/float distinction.
 * Ints are 64-bit: arithmetic that overflows is an error (Python would grow).
 *
 * Python semantics throughout: str() and repr() of values, int/float
 * arithmetic, code point string indexing, Unicode case mapping.  Jinja's
 * compile-time checks and constant folding are reproduced.  See
 * docs/template.md for the differences from Jinja2 that remain. */
#ifndef MINI_AGENT_TEMPLATE_H
#define MINI_AGENT_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "mini/buf.h"
#include "mini/err.h"

/* Render src[0..len) (UTF-8) with `vars` (a cJSON object whose members are
 * the template's global names; NULL for none) and append the result to
 * `out`.  StrictUndefined: using an unknown name or attribute is an error.
 * On error returns -1 and fills `e` (MINI_E_TEMPLATE with "line N: ..." for
 * template problems, MINI_E_NOMEM when memory runs out); `out` is then left
 * as it was.  Rendering is bounded: nesting depth, loop steps and memory
 * (MINI_TPL_MEM_LIMIT bytes for values and output) have limits that no
 * real template comes near; exceeding one is an error, never a crash.
 * Reentrant: a render keeps all its state in its own arena; `vars` is only
 * read. */
int mini_tpl_render(const char *src, size_t len, const cJSON *vars, struct mini_buf *out, struct mini_err *e);

#define MINI_TPL_MEM_LIMIT ((size_t)256 << 20)
#define MINI_TPL_MAX_STEPS 20000000ULL

/* The budget of one render. */
struct mini_tpl_limits {
    size_t mem;     /* bytes of values and output (MINI_TPL_MEM_LIMIT) */
    uint64_t steps; /* loop iterations, calls, items walked (MINI_TPL_MAX_STEPS) */
};

/* mini_tpl_render with other limits (NULL: the defaults), for tests that
 * want a render to fail or finish sooner. */
int mini_tpl_render_limited(const char *src, size_t len, const cJSON *vars, const struct mini_tpl_limits *lim,
                            struct mini_buf *out, struct mini_err *e);

#endif
