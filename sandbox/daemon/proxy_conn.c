/* The network proxy: one connection, from its request head through the
 * decision and the connect to its tunnel (proxy_int.h). */
#include "proxy_int.h"
#include "netpolicy.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ utilities */

static bool is_own_address(struct server *s, const uint8_t a[16])
{
    struct proxy *p = s->proxy;
    int64_t now = mini_mono_ns();
    if (!p->own || now - p->own_at > NS_S) {
        struct ifaddrs *ifa = NULL;
        if (getifaddrs(&ifa) == 0) {
            size_t n = 0;
            for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
                n++;
            uint8_t(*own)[16] = calloc(n ? n : 1, 16);
            if (own) {
                size_t k = 0;
                for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
                    if (!i->ifa_addr)
                        continue;
                    if (i->ifa_addr->sa_family == AF_INET) {
                        own[k][10] = own[k][11] = 0xff;
                        memcpy(own[k] + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
                        k++;
                    } else if (i->ifa_addr->sa_family == AF_INET6) {
                        memcpy(own[k++], &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
                    }
                }
                free(p->own);
                p->own = own;
                p->n_own = k;
                p->own_at = now;
            }
            freeifaddrs(ifa);
        }
    }
    for (size_t i = 0; i < p->n_own; i++)
        if (memcmp(p->own[i], a, 16) == 0)
            return true;
    return false;
}

static size_t pbuf_room(const struct pbuf *b) { return b->p[0] >= 0 ? b->cap - b->n : 0; }

static void session_net_limits(const struct session *ss, uint64_t *in_left, uint64_t *out_left)
{
    const struct mini_limits *l = &ss->profile->limits;
    *in_left = l->net_in_bytes ? (ss->net.in < l->net_in_bytes ? l->net_in_bytes - ss->net.in : 0) : UINT64_MAX;
    *out_left = l->net_out_bytes ? (ss->net.out < l->net_out_bytes ? l->net_out_bytes - ss->net.out : 0) : UINT64_MAX;
}

void pconn_audit(struct server *s, struct pconn *c, const char *verdict, int status, const char *reason)
{
    char addr[INET6_ADDRSTRLEN + 2] = "";
    if (c->have_used)
        mini_net_addr_str(c->used, addr, sizeof addr);
    log_debug("proxy: session %s: %s %s:%u %s %d %s", c->ss->id, c->req.method, c->req.host, (unsigned)c->req.port,
              verdict, status, reason ? reason : "");
    if (!s->audit)
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "time", (double)time(NULL));
    cJSON_AddStringToObject(o, "event", "net");
    cJSON_AddStringToObject(o, "session", c->ss->id);
    cJSON_AddStringToObject(o, "profile", c->ss->profile->name);
    cJSON_AddStringToObject(o, "method", c->req.method[0] ? c->req.method : "");
    cJSON_AddStringToObject(o, "host", c->req.host);
    cJSON_AddNumberToObject(o, "port", c->req.port);
    cJSON_AddStringToObject(o, "address", addr);
    cJSON_AddStringToObject(o, "verdict", verdict);
    cJSON_AddNumberToObject(o, "status", status);
    cJSON_AddStringToObject(o, "reason", reason ? reason : "");
    cJSON_AddNumberToObject(o, "bytes_in", (double)c->bytes_in);
    cJSON_AddNumberToObject(o, "bytes_out", (double)c->bytes_out);
    cJSON_AddNumberToObject(o, "duration_ms", (double)((mini_mono_ns() - c->start_ns) / 1000000));
    struct mini_err e;
    if (mini_json_append_line(fileno(s->audit), o, &e) < 0)
        log_warn("audit log: %s", e.msg);
    cJSON_Delete(o);
}

/* ------------------------------------------------------------ lifecycle */

void pconn_free_now(struct pconn *c)
{
    free(c->head);
    mini_close(c->c2u.p[0]);
    mini_close(c->c2u.p[1]);
    mini_close(c->u2c.p[0]);
    mini_close(c->u2c.p[1]);
    free(c);
}

/* Close both ends; the object is freed after this epoll batch. */
void pconn_close(struct server *s, struct pconn *c)
{
    struct proxy *p = s->proxy;
    if (c->dead)
        return;
    c->dead = true;
    if (c->state == P_RESOLVING && p->lookups)
        p->lookups--;
    if (c->cfd >= 0) {
        ep_del(s, c->cfd);
        close(c->cfd);
    }
    if (c->ufd >= 0) {
        ep_del(s, c->ufd);
        close(c->ufd);
    }
    c->cfd = c->ufd = -1;
    if (c->prev)
        c->prev->next = c->next;
    else
        p->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    for (struct pconn **pp = &c->l->conns; *pp; pp = &(*pp)->lnext)
        if (*pp == c) {
            *pp = c->lnext;
            break;
        }
    c->ss->net.conns--;
    p->n_conns--;
    session_unref(c->ss);
    c->next = p->dead;
    p->dead = c;
}

/* A tunnel ends: its audit line, then the sockets. */
void pconn_end(struct server *s, struct pconn *c, const char *reason)
{
    pconn_audit(s, c, "allowed", 200, reason);
    pconn_close(s, c);
}

/* Refuse with an HTTP answer, then discard what the client still sends
 * until it closes (or LINGER_NS), so that it reads the answer rather
 * than a reset. */
void pconn_refuse(struct server *s, struct pconn *c, int status, const char *reason)
{
    static const struct {
        int code;
        const char *text;
    } texts[] = {
        { 400, "Bad Request" },     { 403, "Forbidden" },         { 405, "Method Not Allowed" },
        { 408, "Request Timeout" }, { 429, "Too Many Requests" }, { 431, "Request Header Fields Too Large" },
        { 501, "Not Implemented" }, { 502, "Bad Gateway" },       { 503, "Service Unavailable" },
        { 504, "Gateway Timeout" },
    };
    const char *text = "Error";
    for (size_t i = 0; i < MINI_ARRAY_SIZE(texts); i++)
        if (texts[i].code == status)
            text = texts[i].text;
    pconn_audit(s, c, "refused", status, reason);
    char body[512], msg[1024];
    int bl = snprintf(body, sizeof body, "mini-sandbox proxy: %s\n", reason);
    if (bl < 0 || (size_t)bl >= sizeof body)
        bl = (int)sizeof body - 1;
    int ml = snprintf(msg, sizeof msg,
                      "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
                      "Connection: close\r\n\r\n%.*s",
                      status, text, bl, bl, body);
    if (ml > 0)
        (void)!send(c->cfd, msg, (size_t)ml < sizeof msg ? (size_t)ml : sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c->cfd, SHUT_WR);
    if (c->ufd >= 0) {
        ep_del(s, c->ufd);
        close(c->ufd);
        c->ufd = -1;
    }
    if (c->state == P_RESOLVING && s->proxy->lookups)
        s->proxy->lookups--;
    c->state = P_CLOSING;
    c->deadline_ns = mini_mono_ns() + LINGER_NS;
    pconn_interest(s, c);
}

static void set_want(struct server *s, int fd, uint32_t *cur, uint32_t want, struct ev *ev)
{
    if (fd < 0 || *cur == want)
        return;
    ep_mod(s, fd, want, ev);
    *cur = want;
}

/* What each end waits for, from the state and the buffers. */
void pconn_interest(struct server *s, struct pconn *c)
{
    uint32_t wc = 0, wu = 0;
    switch (c->state) {
    case P_HEAD:
    case P_CLOSING: wc = EPOLLIN | EPOLLRDHUP; break;
    case P_RESOLVING: wc = EPOLLRDHUP; break;
    case P_CONNECTING:
        wc = EPOLLRDHUP;
        wu = EPOLLOUT;
        break;
    case P_TUNNEL:
        if (!c->c_eof && pbuf_room(&c->c2u))
            wc |= EPOLLIN | EPOLLRDHUP;
        if (c->u2c.n)
            wc |= EPOLLOUT;
        if (!c->u_eof && pbuf_room(&c->u2c))
            wu |= EPOLLIN | EPOLLRDHUP;
        if (c->c2u.n)
            wu |= EPOLLOUT;
        break;
    }
    set_want(s, c->cfd, &c->want_c, wc, &c->ev_c);
    set_want(s, c->ufd, &c->want_u, wu, &c->ev_u);
}

/* ------------------------------------------------------------ deciding */

static const struct mini_netrule *match_name(const struct mini_netrule *r, size_t n, const char *host, uint16_t port)
{
    for (size_t i = 0; i < n; i++)
        if (mini_netrule_match_name(&r[i], host, port))
            return &r[i];
    return NULL;
}

static const struct mini_netrule *match_addr(const struct mini_netrule *r, size_t n, const uint8_t a[16], uint16_t port)
{
    for (size_t i = 0; i < n; i++)
        if (mini_netrule_match_addr(&r[i], a, port))
            return &r[i];
    return NULL;
}

/* Whether the address may be connected to; else c->why says why not. */
static bool addr_allowed(struct server *s, struct pconn *c, const uint8_t a[16])
{
    const struct session_net *n = &c->ss->net;
    char as[INET6_ADDRSTRLEN + 2];
    mini_net_addr_str(a, as, sizeof as);
    const char *special = mini_net_addr_special(a);
    if (!special && is_own_address(s, a))
        special = "one of this host's own addresses";
    bool named = match_addr(n->allow, n->n_allow, a, c->req.port) != NULL;
    if (match_addr(n->deny, n->n_deny, a, c->req.port)) {
        snprintf(c->why_buf, sizeof c->why_buf, "%s:%u (%s) is denied by the profile's network.deny", c->req.host,
                 (unsigned)c->req.port, as);
    } else if (special && !named) {
        snprintf(c->why_buf, sizeof c->why_buf,
                 "%s resolves to %s, %s, which only an allow entry naming the address (or its CIDR) lets through",
                 c->req.host, as, special);
    } else if (c->req.host_is_ip && !named && !match_name(n->allow, n->n_allow, "*", c->req.port)) {
        snprintf(c->why_buf, sizeof c->why_buf, "%s:%u is not in the allowlist", as, (unsigned)c->req.port);
    } else {
        return true;
    }
    c->why = c->why_buf;
    return false;
}

static void conn_connect_next(struct server *s, struct pconn *c);

/* The addresses are known: keep those allowed, then connect. */
void pconn_addresses(struct server *s, struct pconn *c)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n_addrs; i++)
        if (addr_allowed(s, c, c->addrs[i]))
            memmove(c->addrs[k++], c->addrs[i], 16);
    c->n_addrs = k;
    c->addr_i = 0;
    if (!k) {
        pconn_refuse(s, c, 403, c->why ? c->why : "no address to connect to");
        return;
    }
    c->state = P_CONNECTING;
    conn_connect_next(s, c);
}

static void conn_decide(struct server *s, struct pconn *c)
{
    struct session_net *n = &c->ss->net;
    uint64_t in_left, out_left;
    session_net_limits(c->ss, &in_left, &out_left);
    if (!in_left || !out_left) {
        pconn_refuse(s, c, 403,
                     !in_left ? "the session has received all the bytes its limits.net_in_mb allows"
                              : "the session has sent all the bytes its limits.net_out_mb allows");
        return;
    }
    if (c->req.host_is_ip) {
        memcpy(c->addrs[0], c->req.addr, 16);
        c->n_addrs = 1;
        pconn_addresses(s, c);
        return;
    }
    char why[MINI_NET_HOST_MAX + 120];
    if (match_name(n->deny, n->n_deny, c->req.host, c->req.port)) {
        snprintf(why, sizeof why, "%s:%u is denied by the profile's network.deny", c->req.host, (unsigned)c->req.port);
        pconn_refuse(s, c, 403, why);
        return;
    }
    if (!match_name(n->allow, n->n_allow, c->req.host, c->req.port)) {
        snprintf(why, sizeof why, "%s:%u is not in the allowlist", c->req.host, (unsigned)c->req.port);
        pconn_refuse(s, c, 403, why);
        return;
    }
    struct proxy *p = s->proxy;
    /* The profile's pins, then the daemon's. */
    const struct mini_net_pin *pin = mini_net_pins_find(&n->pins, c->req.host);
    if (!pin)
        pin = mini_net_pins_find(&p->pins, c->req.host);
    if (pin) {
        memcpy(c->addrs, pin->addrs, sizeof c->addrs);
        c->n_addrs = pin->n;
        pconn_addresses(s, c);
        return;
    }
    if (p->lookups >= MAX_LOOKUPS) {
        pconn_refuse(s, c, 503, "too many name lookups in flight; try again");
        return;
    }
    struct resolve_req rq = { .id = ++p->next_lookup };
    snprintf(rq.name, sizeof rq.name, "%s", c->req.host);
    if (proxy_resolver_start(s) < 0 || send(p->res_fd, &rq, sizeof rq, MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof rq) {
        pconn_refuse(s, c, 503, "the resolver is not available; try again");
        return;
    }
    p->lookups++;
    c->lookup = rq.id;
    c->state = P_RESOLVING;
    c->deadline_ns = mini_mono_ns() + SETUP_TIMEOUT_NS;
    pconn_interest(s, c);
}

/* ------------------------------------------------------------ connecting */

static void conn_connect_next(struct server *s, struct pconn *c)
{
    if (c->ufd >= 0) {
        ep_del(s, c->ufd);
        close(c->ufd);
        c->ufd = -1;
        c->want_u = 0;
    }
    int last_err = 0;
    while (c->addr_i < c->n_addrs) {
        const uint8_t *a = c->addrs[c->addr_i++];
        struct sockaddr_storage ss;
        socklen_t len;
        memset(&ss, 0, sizeof ss);
        if (mini_net_addr_is_v4(a)) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            in->sin_family = AF_INET;
            in->sin_port = htons(c->req.port);
            memcpy(&in->sin_addr, a + 12, 4);
            len = sizeof *in;
        } else {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons(c->req.port);
            memcpy(&in6->sin6_addr, a, 16);
            len = sizeof *in6;
        }
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
            last_err = errno;
            close(fd);
            continue;
        }
        memcpy(c->used, a, 16);
        c->have_used = true;
        c->ufd = fd;
        c->want_u = 0;
        if (ep_add(s, fd, 0, &c->ev_u) < 0) {
            last_err = errno;
            close(fd);
            c->ufd = -1;
            continue;
        }
        c->deadline_ns = mini_mono_ns() + SETUP_TIMEOUT_NS;
        pconn_interest(s, c);
        return;
    }
    char why[MINI_NET_HOST_MAX + 120];
    snprintf(why, sizeof why, "connecting to %s:%u: %s", c->req.host, (unsigned)c->req.port,
             last_err ? strerror(last_err) : "no address left");
    /* The daemon's own shortage is not the destination's fault. */
    pconn_refuse(s, c, last_err == EMFILE || last_err == ENFILE ? 503 : 502, why);
}

static int pbuf_alloc(struct pbuf *b)
{
    if (pipe2(b->p, O_NONBLOCK | O_CLOEXEC) < 0) {
        b->p[0] = b->p[1] = -1;
        return -1;
    }
    /* Past the user's pipe quota the kernel keeps the default size. */
    fcntl(b->p[1], F_SETPIPE_SZ, PROXY_BUF);
    int sz = fcntl(b->p[1], F_GETPIPE_SZ);
    b->cap = sz > 0 ? (size_t)sz : 4096;
    return 0;
}

/* Bytes the proxy itself sends on (a reply, a rewritten head); they fit:
 * the pipe is empty and they are at most MINI_HTTP_HEAD_MAX + a little. */
static int pbuf_put(struct pbuf *b, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(b->p[1], p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
        b->n += (size_t)w;
    }
    return 0;
}

/* The upstream socket is writable: connected, or failed. */
static void conn_connected(struct server *s, struct pconn *c)
{
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
        err = errno;
    if (err) {
        char as[INET6_ADDRSTRLEN + 2];
        mini_net_addr_str(c->used, as, sizeof as);
        if (c->addr_i < c->n_addrs) {
            conn_connect_next(s, c);
            return;
        }
        char why[MINI_NET_HOST_MAX + 160];
        snprintf(why, sizeof why, "connecting to %s:%u (%s): %s", c->req.host, (unsigned)c->req.port, as,
                 strerror(err));
        pconn_refuse(s, c, 502, why);
        return;
    }
    if (pbuf_alloc(&c->c2u) < 0 || pbuf_alloc(&c->u2c) < 0) {
        pconn_refuse(s, c, 503, "the daemon is out of file descriptors for pipes; try again");
        return;
    }
    /* The head and what followed it must fit the pipe as it is. */
    if (c->head_len + 1024 > c->c2u.cap) {
        fcntl(c->c2u.p[1], F_SETPIPE_SZ, (int)(MINI_HTTP_HEAD_MAX * 2));
        int sz = fcntl(c->c2u.p[1], F_GETPIPE_SZ);
        c->c2u.cap = sz > 0 ? (size_t)sz : c->c2u.cap;
    }
    size_t extra = c->head_len - c->req.head_len;
    int r = 0;
    if (c->req.connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        r = pbuf_put(&c->u2c, ok, sizeof ok - 1);
    } else {
        struct mini_buf h = MINI_BUF_INIT;
        r = mini_http_req_rewrite(c->head, &c->req, &h) < 0 ? -1 : pbuf_put(&c->c2u, h.data, h.len);
        mini_buf_free(&h);
    }
    if (r == 0)
        r = pbuf_put(&c->c2u, c->head + c->req.head_len, extra);
    if (r < 0) {
        pconn_refuse(s, c, 503, "out of memory");
        return;
    }
    c->bytes_out += c->c2u.n;
    c->ss->net.out += c->c2u.n;
    free(c->head);
    c->head = NULL;
    c->state = P_TUNNEL;
    pconn_interest(s, c);
}

/* ------------------------------------------------------------ the tunnel */

/* Move bytes from fd into b's pipe, at most `left` (the session's
 * quota).  1: progress or nothing to do; 0: end of stream; -1: error. */
static int pump_in(int fd, struct pbuf *b, uint64_t left, uint64_t *counted, bool *quota_hit)
{
    size_t room = b->cap - b->n;
    if (!room)
        return 1;
    if (left < room)
        room = (size_t)left;
    if (!room) {
        *quota_hit = true;
        return 1;
    }
    ssize_t n = splice(fd, NULL, b->p[1], NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 1 : -1;
    if (n == 0)
        return 0;
    b->n += (size_t)n;
    *counted += (uint64_t)n;
    return 1;
}

static int pump_out(int fd, struct pbuf *b)
{
    if (!b->n)
        return 1;
    ssize_t n = splice(b->p[0], NULL, fd, NULL, b->n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 1 : -1;
    b->n -= (size_t)n;
    return 1;
}

/* Move what can be moved.  false when nothing moved. */
static bool tunnel(struct server *s, struct pconn *c)
{
    struct session_net *n = &c->ss->net;
    bool moved = false;
    for (int round = 0; round < 4; round++) {
        uint64_t in_left, out_left, got_in = 0, got_out = 0;
        bool quota = false;
        session_net_limits(c->ss, &in_left, &out_left);
        int r1 = c->c_eof ? 1 : pump_in(c->cfd, &c->c2u, out_left, &got_out, &quota);
        int r2 = c->u_eof ? 1 : pump_in(c->ufd, &c->u2c, in_left, &got_in, &quota);
        c->bytes_out += got_out;
        c->bytes_in += got_in;
        n->out += got_out;
        n->in += got_in;
        size_t pend = c->c2u.n + c->u2c.n;
        if (r1 < 0 || r2 < 0 || pump_out(c->ufd, &c->c2u) < 0 || pump_out(c->cfd, &c->u2c) < 0) {
            pconn_end(s, c, "reset");
            return true;
        }
        moved |= got_in || got_out || r1 == 0 || r2 == 0 || pend != c->c2u.n + c->u2c.n;
        if (quota) {
            pconn_end(s, c,
                      in_left == 0 ? "closed at the session's limits.net_in_mb"
                                   : "closed at the session's limits.net_out_mb");
            return true;
        }
        c->c_eof |= r1 == 0;
        c->u_eof |= r2 == 0;
        if (c->c_eof && !c->c2u.n && !c->u_shut) {
            shutdown(c->ufd, SHUT_WR);
            c->u_shut = true;
        }
        if (c->u_eof && !c->u2c.n && !c->c_shut) {
            shutdown(c->cfd, SHUT_WR);
            c->c_shut = true;
        }
        if (c->u_shut && c->c_shut) {
            pconn_end(s, c, NULL);
            return true;
        }
        if (!got_in && !got_out)
            break;
    }
    pconn_interest(s, c);
    return moved;
}

/* A tunnel's event: an end that hung up or failed with nothing left to
 * move ends it (epoll reports those whatever the interest). */
static void tunnel_event(struct server *s, struct pconn *c, uint32_t events)
{
    if (!tunnel(s, c) && !c->dead && (events & (EPOLLHUP | EPOLLERR)))
        pconn_end(s, c, (events & EPOLLERR) ? "reset" : NULL);
}

static void conn_head(struct server *s, struct pconn *c)
{
    if (!c->head && !(c->head = malloc(MINI_HTTP_HEAD_MAX + 1))) {
        pconn_close(s, c);
        return;
    }
    ssize_t n = recv(c->cfd, c->head + c->head_len, MINI_HTTP_HEAD_MAX - c->head_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        pconn_audit(s, c, "refused", 0, "the client closed before sending a whole request");
        pconn_close(s, c);
        return;
    }
    c->head_len += (size_t)n;
    int status;
    const char *why;
    int r = mini_http_req_parse(c->head, c->head_len, &c->req, &status, &why);
    if (r < 0)
        pconn_refuse(s, c, status, why);
    else if (r > 0)
        conn_decide(s, c);
}

void pconn_client_event(struct server *s, struct pconn *c, uint32_t events)
{
    switch (c->state) {
    case P_HEAD: conn_head(s, c); break;
    case P_CLOSING: {
        char buf[4096];
        ssize_t n = recv(c->cfd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            pconn_close(s, c);
        break;
    }
    case P_RESOLVING:
    case P_CONNECTING:
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            pconn_audit(s, c, "refused", 0, "the client closed before the connection was made");
            pconn_close(s, c);
        }
        break;
    case P_TUNNEL: tunnel_event(s, c, events); break;
    }
}

void pconn_upstream_event(struct server *s, struct pconn *c, uint32_t events)
{
    if (c->state == P_CONNECTING)
        conn_connected(s, c);
    else if (c->state == P_TUNNEL)
        tunnel_event(s, c, events);
}
