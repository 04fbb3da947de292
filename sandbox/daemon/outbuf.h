/* Bounded capture of a command's output: the first `limit/2` bytes and the
 * last `limit - limit/2` bytes are kept, everything is counted.  Memory is
 * bounded by the limit whatever the command prints. */
#ifndef MINI_SANDBOX_OUTBUF_H
#define MINI_SANDBOX_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/buf.h"

struct mini_outbuf {
    size_t limit;
    size_t head_cap, tail_cap;
    char *head; /* head_cap bytes */
    size_t head_len;
    char *tail;      /* ring of tail_cap bytes */
    size_t tail_pos; /* next write position in the ring */
    size_t tail_len; /* bytes held in the ring (<= tail_cap) */
    uint64_t total;
};

int mini_outbuf_init(struct mini_outbuf *o, size_t limit);
void mini_outbuf_add(struct mini_outbuf *o, const char *p, size_t n);
bool mini_outbuf_truncated(const struct mini_outbuf *o);
/* The kept output as valid UTF-8; when bytes were dropped, a line
 * "[... N bytes omitted ...]" stands between head and tail. */
int mini_outbuf_render(const struct mini_outbuf *o, struct mini_buf *out);
void mini_outbuf_free(struct mini_outbuf *o);

#endif
