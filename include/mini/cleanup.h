/* Scope-based cleanup (gcc and clang `cleanup` attribute).
 *
 *   _cleanup_free_ char *s = strdup(x);
 *   _cleanup_close_ int fd = open(...);
 *   _cleanup_cjson_ cJSON *root = cJSON_CreateObject();
 *   return TAKE_PTR(s);   // hand ownership out of the scope
 */
#ifndef MINI_CLEANUP_H
#define MINI_CLEANUP_H

#include <stdlib.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "mini/buf.h"
#include "mini/io.h"

static inline void mini_freep(void *p) { free(*(void **)p); }
static inline void mini_closep(int *fd)
{
    if (*fd >= 0)
        mini_close(*fd);
}
static inline void mini_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}
static inline void mini_buf_freep(struct mini_buf *b) { mini_buf_free(b); }
/* A cJSON tree's root (cJSON_Delete accepts NULL). */
static inline void mini_cjson_freep(cJSON **j) { cJSON_Delete(*j); }

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(mini_freep)
#define _cleanup_close_ _cleanup_(mini_closep)
#define _cleanup_fclose_ _cleanup_(mini_fclosep)
#define _cleanup_buf_ _cleanup_(mini_buf_freep)
#define _cleanup_cjson_ _cleanup_(mini_cjson_freep)

/* Return *pp and set it to its empty value, so a cleanup does not free it. */
#define TAKE_PTR(p)              \
    ({                           \
        __typeof__(p) _tp = (p); \
        (p) = NULL;              \
        _tp;                     \
    })
#define TAKE_FD(fd)     \
    ({                  \
        int _tf = (fd); \
        (fd) = -1;      \
        _tf;            \
    })

#define MINI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
