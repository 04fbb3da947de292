/* Internals shared by the builtins (builtin.c, format.c, methods.c,
 * filters.c, tests.c), private to agent/template/.  A filter or a test is
 * a tpl_filter_fn that binds its arguments with BIND or NOARGS. */
#ifndef MINI_TEMPLATE_BUILTIN_H
#define MINI_TEMPLATE_BUILTIN_H

#include <stdlib.h>
#include "internal.h"

#define FILTER(name) static int name(struct tpl *t, int line, struct tv *v, struct callargs *a, struct tv *out)
#define BIND(fname, ...)                                                          \
    static const char *const names_[] = { __VA_ARGS__ };                          \
    struct tv p[MINI_ARRAY_SIZE(names_)];                                         \
    bool has[MINI_ARRAY_SIZE(names_)];                                            \
    if (tpl_bind(t, line, fname, a, names_, MINI_ARRAY_SIZE(names_), p, has) < 0) \
    return -1
#define NOARGS(fname)                                         \
    if (tpl_bind(t, line, fname, a, NULL, 0, NULL, NULL) < 0) \
    return -1

/* Frees a scratch sequence's malloc'd items (_cleanup_(tpl_seq_freep)). */
static inline void tpl_seq_freep(struct tseq *s) { free(s->v); }

/* Bind positional and keyword arguments to the parameters `names`. */
int tpl_bind(struct tpl *t, int line, const char *fn, const struct callargs *a, const char *const *names, size_t nn,
             struct tv *vals, bool *have);
int tpl_no_kwargs(struct tpl *t, int line, const char *fn, const struct callargs *a);
int tpl_get_int(struct tpl *t, int line, const struct tv *v, int64_t *out);
int tpl_need_str(struct tpl *t, int line, const struct tv *v, const char *what);
/* str(v): a plain string, also for a Markup one. */
int tpl_str_of(struct tpl *t, int line, const struct tv *v, struct tv *out);
/* str(v) with its Markup flag kept (Jinja's soft_str). */
int tpl_soft_str(struct tpl *t, int line, const struct tv *v, struct tv *out);
/* markupsafe.escape(v): Markup. */
int tpl_escape_value(struct tpl *t, int line, const struct tv *v, struct tv *out);
void tpl_strip_span(const char *p, size_t n, const struct tv *chars, int how, size_t *b, size_t *e);
const char *tpl_rfind_bytes(const char *h, size_t hn, const char *nd, size_t nn);
/* Append n copies of c. */
int tpl_buf_fill(struct mini_buf *b, char c, size_t n);
int tpl_str_splitlines(struct tpl *t, int line, const struct tv *s, bool keepends, struct tv *out);
/* s.replace(old, new, count) into a new string. */
int tpl_str_replace(struct tpl *t, int line, const struct tv *s, const struct tv *old, const struct tv *new,
                    int64_t count, bool markup, struct tv *out);
int tpl_str_pad(struct tpl *t, int line, const struct tv *s, int64_t width, const struct tv *fill,
                int how /* 0 center, 1 ljust, 2 rjust */, struct tv *out);
int tpl_str_case(struct tpl *t, int line, const struct tv *s, int how, struct tv *out);
int tpl_dict_view(struct tpl *t, const struct tdict *d, int kind, struct tv *out);
int tpl_call_test_by_name(struct tpl *t, int line, const struct tv *name, const struct tv *v, struct callargs *a,
                          bool *out);
/* The builtin called `name` in the table b[0..n). */
const struct tpl_builtin *tpl_find_builtin(const struct tpl_builtin *b, size_t n, const char *name, size_t len);

#endif
