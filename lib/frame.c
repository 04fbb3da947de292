/* Length-prefixed frames: a 4-byte big-endian length, then the payload. */
#include "mini/proto.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

#define IDLE_KEEP (64u * 1024u)  /* buffer kept by an idle reader */
#define RECV_CHUNK (16u * 1024u) /* read size of mini_frame_recv_json */

void mini_frame_reader_init(struct mini_frame_reader *r)
{
    *r = (struct mini_frame_reader){ .in = MINI_BUF_INIT, .consumed = 0, .max = MINI_FRAME_MAX };
}

void mini_frame_reader_free(struct mini_frame_reader *r)
{
    mini_buf_free(&r->in);
    r->consumed = 0;
}

/* Drop the frames already handed out once they take at least as much room
 * as the bytes still to read, so that each byte is moved at most once per
 * handed-out byte and the buffer stays within twice what is pending. */
static void compact(struct mini_frame_reader *r)
{
    size_t live = r->in.len - r->consumed;
    if (r->consumed == 0 || r->consumed < live)
        return;
    memmove(r->in.data, r->in.data + r->consumed, live);
    r->in.len = live;
    r->in.data[live] = '\0';
    r->consumed = 0;
}

int mini_frame_reader_feed(struct mini_frame_reader *r, const void *p, size_t n, struct mini_err *e)
{
    if (n == 0)
        return 0;
    compact(r);
    if (mini_buf_append(&r->in, p, n) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

/* The frame at offset off: 1 if complete (*n: its payload length), 0 if
 * more bytes are needed, -1 if its header is bad. */
static int frame_at(const struct mini_frame_reader *r, size_t off, uint32_t *n, struct mini_err *e)
{
    size_t avail = r->in.len - off;
    if (avail < 4)
        return 0;
    const unsigned char *h = (const unsigned char *)r->in.data + off;
    *n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    size_t max = r->max ? r->max : MINI_FRAME_MAX;
    if (*n == 0)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "bad frame: zero length");
    if (*n > max)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "bad frame: length %" PRIu32 " is over the limit of %zu bytes", *n,
                            max);
    return avail - 4 >= *n;
}

int mini_frame_reader_next(struct mini_frame_reader *r, const char **payload, size_t *len, struct mini_err *e)
{
    if (r->consumed == r->in.len) {
        /* Everything handed out: start again at the front, and give back
         * the memory a large frame took. */
        r->consumed = 0;
        if (r->in.cap > IDLE_KEEP)
            mini_buf_free(&r->in);
        else
            mini_buf_reset(&r->in);
        return 0;
    }
    uint32_t n;
    int k = frame_at(r, r->consumed, &n, e);
    if (k <= 0)
        return k;
    *payload = r->in.data + r->consumed + 4;
    *len = n;
    r->consumed += 4 + (size_t)n;
    return 1;
}

int mini_frame_reader_eof(const struct mini_frame_reader *r, struct mini_err *e)
{
    for (size_t off = r->consumed; off < r->in.len;) {
        uint32_t n;
        int k = frame_at(r, off, &n, e);
        if (k < 0)
            return -1;
        size_t avail = r->in.len - off;
        if (k == 0 && avail < 4)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "truncated frame: the stream ended after %zu of 4 header bytes",
                                avail);
        if (k == 0)
            return mini_err_set(e, MINI_E_BAD_REQUEST,
                                "truncated frame: the stream ended after %zu of %" PRIu32 " payload bytes", avail - 4,
                                n);
        off += 4 + (size_t)n;
    }
    return 0;
}

int mini_frame_encode(struct mini_buf *out, const void *payload, size_t len, struct mini_err *e)
{
    if (len == 0)
        return mini_err_set(e, MINI_E_INTERNAL, "cannot send an empty frame");
    if (len > MINI_FRAME_MAX)
        return mini_err_set(e, MINI_E_LIMIT, "message of %zu bytes is over the frame limit of %u bytes", len,
                            MINI_FRAME_MAX);
    unsigned char h[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                           (unsigned char)len };
    if (mini_buf_reserve(out, 4 + len) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    mini_buf_append(out, h, 4);
    mini_buf_append(out, payload, len);
    return 0;
}

int mini_frame_encode_json(struct mini_buf *out, const cJSON *obj, struct mini_err *e)
{
    if (!obj) /* what a failed to_json hands on */
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_json_print(&text, obj, e) < 0)
        return -1;
    return mini_frame_encode(out, text.data, text.len, e);
}

/* Write everything; on a socket, a closed peer is EPIPE rather than SIGPIPE. */
static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == ENOTSOCK)
            return mini_write_all(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int mini_frame_send_json(int fd, const cJSON *obj, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_frame_encode_json(&b, obj, e) < 0)
        return -1;
    if (send_all(fd, b.data, b.len) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "sending a message");
    return 0;
}

int mini_frame_recv_json(int fd, struct mini_frame_reader *r, cJSON **obj, struct mini_err *e)
{
    *obj = NULL;
    for (;;) {
        const char *p;
        size_t n;
        int k = mini_frame_reader_next(r, &p, &n, e);
        if (k < 0)
            return -1;
        if (k > 0) {
            *obj = mini_json_parse_object(p, n, e);
            return *obj ? 1 : -1;
        }
        compact(r);
        if (mini_buf_reserve(&r->in, RECV_CHUNK) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        ssize_t got = mini_read(fd, r->in.data + r->in.len, r->in.cap - r->in.len - 1);
        if (got < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "receiving a message");
        if (got == 0)
            return mini_frame_reader_eof(r, e) < 0 ? -1 : 0;
        r->in.len += (size_t)got;
        r->in.data[r->in.len] = '\0';
    }
}
