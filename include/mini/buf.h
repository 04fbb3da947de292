/* A growable byte buffer.  Always keeps a NUL after `len` bytes so the data
 * can be used as a C string when it holds text. */
#ifndef MINI_BUF_H
#define MINI_BUF_H

#include <stddef.h>
#include <stdarg.h>

struct mini_buf {
    char *data; /* NULL until the first append */
    size_t len;
    size_t cap;
};

#define MINI_BUF_INIT \
    {                 \
        NULL, 0, 0    \
    }

/* Make room for `extra` more bytes (plus the NUL).  0, or -1 with errno=ENOMEM. */
int mini_buf_reserve(struct mini_buf *b, size_t extra);
int mini_buf_append(struct mini_buf *b, const void *p, size_t n);
int mini_buf_puts(struct mini_buf *b, const char *s);
int mini_buf_putc(struct mini_buf *b, char c);
int mini_buf_printf(struct mini_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mini_buf_vprintf(struct mini_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Remove the first n bytes (n <= len). */
void mini_buf_consume(struct mini_buf *b, size_t n);
void mini_buf_reset(struct mini_buf *b); /* len = 0, keeps memory */
void mini_buf_free(struct mini_buf *b);
/* Hand the data over to the caller (NUL-terminated, never NULL on success);
 * the buffer is left empty.  NULL with errno=ENOMEM. */
char *mini_buf_steal(struct mini_buf *b, size_t *len);

#endif
