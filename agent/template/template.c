/* Template rendering entry point, the per-render arena and error helpers.
 * See template.h for what is supported; template_parse.c (lexer, parser),
 * template_eval.c (statements, expressions, filters, tests, methods) and
 * template_value.c (values with Python semantics) do the work. */
#include "template.h"
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini/utf8.h"

struct tpl_chunk {
    struct tpl_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

#define CHUNK_SIZE ((size_t)64 << 10)
#define ALIGN_UP(n) (((n) + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1))

int tpl_fail(struct tpl *t, int line, const char *fmt, ...)
{
    if (t->failed)
        return -1;                      /* keep the first error: it is the cause */
    t->failed = true;
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        return mini_err_set(t->e, MINI_E_TEMPLATE, "line %d: %s", line, msg);
    return mini_err_set(t->e, MINI_E_TEMPLATE, "%s", msg);
}

int tpl_oom(struct tpl *t)
{
    if (t->failed)
        return -1;
    t->failed = true;
    return mini_err_set(t->e, MINI_E_NOMEM, "out of memory while rendering a template");
}

size_t tpl_mem_limit = MINI_TPL_MEM_LIMIT;
uint64_t tpl_max_steps = TPL_MAX_STEPS;

int tpl_charge(struct tpl *t, int line, size_t n)
{
    if (n > tpl_mem_limit || t->mem > tpl_mem_limit - n)
        return tpl_fail(t, line, "template needs more than %zu MiB of memory", tpl_mem_limit >> 20);
    t->mem += n;
    return 0;
}

int tpl_step(struct tpl *t, int line)
{
    if (++t->steps > tpl_max_steps)
        return tpl_fail(t, line, "template takes too many steps (more than %llu)",
                        (unsigned long long)tpl_max_steps);
    return 0;
}

int tpl_work(struct tpl *t, int line, size_t n)
{
    t->steps += n >> 6;
    return tpl_step(t, line);
}

void *tpl_alloc(struct tpl *t, size_t n)
{
    if (t->failed)
        return NULL;
    if (n > tpl_mem_limit) {
        tpl_charge(t, 0, n);
        return NULL;
    }
    n = ALIGN_UP(n ? n : 1);
    struct tpl_chunk *c = t->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        if (tpl_charge(t, 0, cap + sizeof *c) < 0)
            return NULL;
        struct tpl_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc) {
            tpl_oom(t);
            return NULL;
        }
        nc->cap = cap;
        nc->used = 0;
        if (c && cap != CHUNK_SIZE) {
            /* A big block gets its own chunk behind the current one, so the
             * room left in the current one is not wasted. */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            t->chunks = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *tpl_memdup(struct tpl *t, const void *p, size_t n)
{
    if (n == SIZE_MAX) {
        tpl_oom(t);
        return NULL;
    }
    char *s = tpl_alloc(t, n + 1);
    if (s && n)
        memcpy(s, p, n);
    return s;
}

int tpl_grow(struct tpl *t, void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / size)
            return tpl_oom(t);
        ncap *= 2;
    }
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return tpl_oom(t);
    *arr = p;
    *cap = ncap;
    return 0;
}

static void tpl_free(struct tpl *t)
{
    while (t->chunks) {
        struct tpl_chunk *c = t->chunks;
        t->chunks = c->next;
        free(c);
    }
    free(t->toks);
    t->toks = NULL;
}

/* Jinja's source preparation: every "\r\n", "\r" and "\n" becomes "\n", and
 * one trailing newline is dropped (keep_trailing_newline=False). */
static char *normalize(struct tpl *t, const char *src, size_t len, size_t *out_len)
{
    char *s = tpl_alloc(t, len + 1);
    if (!s)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n')
        n--;
    s[n] = 0;
    *out_len = n;
    return s;
}

int mini_tpl_render(const char *src, size_t len, const cJSON *vars,
                    struct mini_buf *out, struct mini_err *e)
{
    struct tpl t = { .e = e };
    struct mini_buf result = MINI_BUF_INIT;
    struct body body;
    int rc = -1;

    if (e)
        mini_err_clear(e);
    if (!src && len) {
        mini_err_set(e, MINI_E_TEMPLATE, "no template text");
        goto out;
    }
    if (vars && !cJSON_IsObject(vars)) {
        mini_err_set(e, MINI_E_TEMPLATE, "template variables must be a JSON object");
        goto out;
    }
    if (!mini_utf8_valid(src ? src : "", len)) {
        /* A newline never sits inside a character: check line by line. */
        int line = 1;
        for (size_t i = 0; i < len; line++) {
            const char *nl = memchr(src + i, '\n', len - i);
            size_t end = nl ? (size_t)(nl - src) : len;
            if (!mini_utf8_valid(src + i, end - i))
                break;
            i = end + 1;
        }
        mini_err_set(e, MINI_E_TEMPLATE, "line %d: template is not valid UTF-8", line);
        goto out;
    }
    size_t n;
    const char *s = normalize(&t, src ? src : "", len, &n);
    if (!s || tpl_lex(&t, s, n) < 0 || tpl_parse(&t, &body) < 0 || tpl_fold(&t, &body) < 0)
        goto out;
    t.vars = vars;
    t.out = &result;
    if (tpl_exec(&t, &body) < 0 || t.failed)
        goto out;
    if (mini_buf_append(out, result.data ? result.data : "", result.len) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory while rendering a template");
        goto out;
    }
    rc = 0;
out:
    if (rc < 0 && e && e->code == MINI_OK)
        mini_err_set(e, MINI_E_TEMPLATE, "template rendering failed");
    mini_buf_free(&result);
    tpl_free(&t);
    return rc;
}
