#include "outbuf.h"
#include "mini/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mini_outbuf_init(struct mini_outbuf *o, size_t limit)
{
    memset(o, 0, sizeof *o);
    if (limit < 2)
        limit = 2;
    o->limit = limit;
    o->head_cap = limit / 2;
    o->tail_cap = limit - o->head_cap;
    /* Allocated lazily in add(): most commands print little. */
    return 0;
}

static int ensure(char **p, size_t cap)
{
    if (!*p)
        *p = malloc(cap);
    return *p ? 0 : -1;
}

void mini_outbuf_add(struct mini_outbuf *o, const char *p, size_t n)
{
    o->total += n;
    if (o->head_len < o->head_cap) {
        size_t take = o->head_cap - o->head_len;
        if (take > n)
            take = n;
        if (ensure(&o->head, o->head_cap) < 0)
            return;
        memcpy(o->head + o->head_len, p, take);
        o->head_len += take;
        p += take;
        n -= take;
    }
    if (n == 0 || ensure(&o->tail, o->tail_cap) < 0)
        return;
    if (n >= o->tail_cap) {
        /* Only the last tail_cap bytes of this chunk can survive. */
        memcpy(o->tail, p + n - o->tail_cap, o->tail_cap);
        o->tail_pos = 0;
        o->tail_len = o->tail_cap;
        return;
    }
    size_t first = o->tail_cap - o->tail_pos;
    if (first > n)
        first = n;
    memcpy(o->tail + o->tail_pos, p, first);
    memcpy(o->tail, p + first, n - first);
    o->tail_pos = (o->tail_pos + n) % o->tail_cap;
    o->tail_len = o->tail_len + n > o->tail_cap ? o->tail_cap : o->tail_len + n;
}

bool mini_outbuf_truncated(const struct mini_outbuf *o) { return o->total > o->head_len + o->tail_len; }

int mini_outbuf_render(const struct mini_outbuf *o, struct mini_buf *out)
{
    struct mini_buf raw = MINI_BUF_INIT;
    size_t start = o->tail_len < o->tail_cap ? 0 : o->tail_pos;
    int r = 0;
    if (o->head_len)
        r |= mini_buf_append(&raw, o->head, o->head_len);
    size_t head_end = raw.len;
    if (o->tail_len) {
        size_t first = o->tail_len < o->tail_cap ? o->tail_len : o->tail_cap - start;
        r |= mini_buf_append(&raw, o->tail + start, first);
        r |= mini_buf_append(&raw, o->tail, o->tail_len - first);
    }
    if (r == 0 && !mini_outbuf_truncated(o)) {
        r = mini_utf8_sanitize(out, raw.data, raw.len);
    } else if (r == 0) {
        /* Cut at character boundaries on both sides of the gap. */
        size_t keep = head_end - mini_utf8_incomplete_tail(raw.data, head_end);
        size_t t = head_end;
        while (t < raw.len && t < head_end + 3 && ((unsigned char)raw.data[t] & 0xC0) == 0x80)
            t++;
        r = mini_utf8_sanitize(out, raw.data, keep);
        r |= mini_buf_printf(out, "\n[... %llu bytes omitted ...]\n",
                             (unsigned long long)(o->total - keep - (raw.len - t)));
        r |= mini_utf8_sanitize(out, raw.data + t, raw.len - t);
    }
    mini_buf_free(&raw);
    return r < 0 ? -1 : 0;
}

void mini_outbuf_free(struct mini_outbuf *o)
{
    free(o->head);
    free(o->tail);
    o->head = o->tail = NULL;
}
