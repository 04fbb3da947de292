/* A render's arena (arena.c), internal to agent/template/: the memory
 * that every token, node and value of one render lives in (freed in one
 * go at the end), the budget of bytes and steps that bounds the render,
 * and the first error.  It knows nothing of templates: the rest of the
 * engine reaches it through the tpl_alloc()... wrappers of internal.h. */
#ifndef MINI_TEMPLATE_ARENA_H
#define MINI_TEMPLATE_ARENA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/err.h"
#include "template.h"

struct tpl_chunk;

struct tpl_arena {
    struct mini_err *e; /* where the first error goes (may be NULL) */
    bool failed;        /* an error is recorded in e */
    struct tpl_chunk *chunks;
    size_t mem; /* arena bytes plus output bytes */
    uint64_t steps;
    struct mini_tpl_limits lim;
};

/* An empty arena with these limits (NULL: the defaults). */
void tpl_arena_init(struct tpl_arena *a, struct mini_err *e, const struct mini_tpl_limits *lim);
void tpl_arena_free(struct tpl_arena *a);

void *tpl_arena_alloc(struct tpl_arena *a, size_t n);                 /* zeroed; NULL with error set */
char *tpl_arena_memdup(struct tpl_arena *a, const void *p, size_t n); /* NUL-terminated copy */
/* Grow a malloc'd (not arena) array of `size`-byte items to hold `need`. */
int tpl_arena_grow(struct tpl_arena *a, void **arr, size_t *cap, size_t need, size_t size);

/* Record an error ("line N: ..." when line > 0) unless one is recorded
 * already (the first is the cause); return -1. */
int tpl_arena_vfail(struct tpl_arena *a, int line, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
int tpl_arena_oom(struct tpl_arena *a);
/* Count n bytes against the memory limit. */
int tpl_arena_charge(struct tpl_arena *a, int line, size_t n);
/* Count one step (a loop iteration, a call, an item walked), or a scan
 * of n bytes as one step per 64 bytes, against the step limit. */
int tpl_arena_step(struct tpl_arena *a, int line);
int tpl_arena_work(struct tpl_arena *a, int line, size_t n);

#endif
