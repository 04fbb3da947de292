/* Replies: a client's queue of encoded frames, sent as far as its socket
 * takes them, with the backpressure on its commands' output and its own
 * requests (WQ_PAUSE, WQ_RESUME, WQ_MAX).  Everything that answers a client
 * (server.c, session.c, exec.c, disk.c) comes here; this file calls none
 * of them. */
#include "daemon.h"
#include "mini/clock.h"
#include "mini/log.h"

#include <errno.h>
#include <sys/socket.h>

static void client_resume_outputs(struct server *s, struct client *c)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c && x->out_paused) {
            x->out_paused = false;
            if (x->slot.sb.out >= 0)
                ep_mod(s, x->slot.sb.out, EPOLLIN, &x->ev_out);
        }
}

void client_flush(struct server *s, struct client *c)
{
    size_t off = c->wq_off;
    while (off < c->wq.len) {
        ssize_t n = send(c->fd, c->wq.data + off, c->wq.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* The client is gone: drop what it will never read. */
        off = c->wq.len;
        c->closing = true;
        break;
    }
    /* Sent bytes are dropped when all is sent, or compacted once they are
     * half of the buffer: each byte is moved at most once. */
    if (off == c->wq.len) {
        mini_buf_reset(&c->wq);
        off = 0;
    } else if (off > c->wq.len / 2) {
        mini_buf_consume(&c->wq, off);
        off = 0;
    }
    c->wq_off = off;
    if (wq_pending(c) > WQ_MAX && !c->closing) {
        /* Never read, and past anything one client may hold: dropped. */
        log_warn("client pid %d: %zu bytes of replies unread; closing the connection", (int)c->pid, wq_pending(c));
        c->closing = true;
        c->wq_off = c->wq.len; /* what it will never read */
        ep_mod(s, c->fd, EPOLLOUT | EPOLLRDHUP, &c->ev);
        c->want_out = true;
        return;
    }
    bool want = wq_pending(c) > 0;
    /* Backpressure: a client that does not read its replies gets no
     * more requests read either. */
    bool pause = wq_pending(c) > WQ_PAUSE || (c->read_paused && wq_pending(c) > WQ_RESUME);
    if (want != c->want_out || pause != c->read_paused) {
        /* A frame the client was sending while its requests were not
         * read gets its time anew: the wait was the daemon's doing. */
        if (c->read_paused && !pause && c->partial_since)
            c->partial_since = mini_mono_ns();
        c->want_out = want;
        c->read_paused = pause;
        ep_mod(s, c->fd, (c->closing || pause ? 0 : EPOLLIN) | (want ? EPOLLOUT : 0) | EPOLLRDHUP, &c->ev);
    }
    if (wq_pending(c) < WQ_RESUME)
        client_resume_outputs(s, c);
}

/* ------------------------------------------------------------- replies */

size_t wq_pending(const struct client *c) { return c->wq.len - c->wq_off; }

static void send_json(struct server *s, struct client *c, cJSON *obj)
{
    struct mini_err e;
    if (!c || !obj) {
        cJSON_Delete(obj);
        return;
    }
    if (mini_frame_encode_json(&c->wq, obj, &e) < 0)
        log_warn("dropping a reply: %s", e.msg);
    cJSON_Delete(obj);
    client_flush(s, c);
}

void send_rep(struct server *s, struct client *c, const struct mini_rep *rep)
{
    if (c)
        send_json(s, c, mini_rep_to_json(rep));
}

void send_error(struct server *s, struct client *c, int64_t id, const struct mini_err *e)
{
    if (!c)
        return;
    /* Out of file descriptors is the daemon's state, not something wrong
     * with the request (a cwd, a profile, a workspace): whichever step ran
     * into it, the client is told busy, to try again later.  The message
     * keeps the step and says "Too many open files". */
    struct mini_err busy;
    if ((e->sys_errno == EMFILE || e->sys_errno == ENFILE) && e->code != MINI_E_BUSY) {
        busy = *e;
        busy.code = MINI_E_BUSY;
        e = &busy;
    }
    send_json(s, c, mini_error_json(id, e));
}

void send_ok(struct server *s, struct client *c, int64_t id)
{
    struct mini_rep rep = { .op = MINI_OP_OK, .id = id };
    send_rep(s, c, &rep);
}
