/* A render's arena, budget and first error (see arena.h). */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tpl_chunk {
    struct tpl_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

#define CHUNK_SIZE ((size_t)64 << 10)
#define ALIGN_UP(n) (((n) + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1))

int tpl_arena_vfail(struct tpl_arena *a, int line, const char *fmt, va_list ap)
{
    if (a->failed)
        return -1; /* keep the first error: it is the cause */
    a->failed = true;
    char msg[MINI_ERR_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (line > 0)
        return mini_err_set(a->e, MINI_E_TEMPLATE, "line %d: %s", line, msg);
    return mini_err_set(a->e, MINI_E_TEMPLATE, "%s", msg);
}

static int afail(struct tpl_arena *a, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int afail(struct tpl_arena *a, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tpl_arena_vfail(a, line, fmt, ap);
    va_end(ap);
    return rc;
}

int tpl_arena_oom(struct tpl_arena *a)
{
    if (a->failed)
        return -1;
    a->failed = true;
    return mini_err_set(a->e, MINI_E_NOMEM, "out of memory while rendering a template");
}

int tpl_arena_charge(struct tpl_arena *a, int line, size_t n)
{
    if (n > a->lim.mem || a->mem > a->lim.mem - n)
        return afail(a, line, "template needs more than %zu MiB of memory", a->lim.mem >> 20);
    a->mem += n;
    return 0;
}

int tpl_arena_step(struct tpl_arena *a, int line)
{
    if (++a->steps > a->lim.steps)
        return afail(a, line, "template takes too many steps (more than %llu)", (unsigned long long)a->lim.steps);
    return 0;
}

int tpl_arena_work(struct tpl_arena *a, int line, size_t n)
{
    a->steps += n >> 6;
    return tpl_arena_step(a, line);
}

void *tpl_arena_alloc(struct tpl_arena *a, size_t n)
{
    if (a->failed)
        return NULL;
    if (n > a->lim.mem) {
        tpl_arena_charge(a, 0, n);
        return NULL;
    }
    n = ALIGN_UP(n ? n : 1);
    struct tpl_chunk *c = a->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        if (tpl_arena_charge(a, 0, cap + sizeof *c) < 0)
            return NULL;
        struct tpl_chunk *nc = malloc(sizeof *nc + cap);
        if (!nc) {
            tpl_arena_oom(a);
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
            a->chunks = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *tpl_arena_memdup(struct tpl_arena *a, const void *p, size_t n)
{
    if (n == SIZE_MAX) {
        tpl_arena_oom(a);
        return NULL;
    }
    char *s = tpl_arena_alloc(a, n + 1);
    if (s && n)
        memcpy(s, p, n);
    return s;
}

int tpl_arena_grow(struct tpl_arena *a, void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / size)
            return tpl_arena_oom(a);
        ncap *= 2;
    }
    void *p = realloc(*arr, ncap * size);
    if (!p)
        return tpl_arena_oom(a);
    *arr = p;
    *cap = ncap;
    return 0;
}

void tpl_arena_init(struct tpl_arena *a, struct mini_err *e, const struct mini_tpl_limits *lim)
{
    static const struct mini_tpl_limits dflt = { MINI_TPL_MEM_LIMIT, MINI_TPL_MAX_STEPS };
    *a = (struct tpl_arena){ .e = e, .lim = lim ? *lim : dflt };
}

void tpl_arena_free(struct tpl_arena *a)
{
    while (a->chunks) {
        struct tpl_chunk *c = a->chunks;
        a->chunks = c->next;
        free(c);
    }
}
