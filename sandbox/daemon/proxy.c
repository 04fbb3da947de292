/* The network allowlist's proxy (docs/profiles.md, "network"), in the
 * daemon's event loop.
 *
 * Each command of an allowlist session has its own network namespace with
 * only loopback.  The sandbox's setup child binds 127.0.0.1:3128 there and
 * hands the listening socket over (child.c, MINI_CTL_LISTENER); once the
 * command is launched the daemon accepts on it.  A connection goes:
 *
 *   HEAD        the request head is read (bounded, with a deadline);
 *   RESOLVING   the name is allowed by a rule; its addresses come from a
 *               pin (the profile's network.resolve, --resolve) or the
 *               resolver process (never getaddrinfo in this loop);
 *   CONNECTING  every address is checked again (deny rules; special
 *               addresses only by an address rule naming them), then tried
 *               in turn, non-blocking;
 *   TUNNEL      bytes both ways, spliced through a pipe per direction,
 *               counted against the session's limits;
 *   CLOSING     a refusal was sent: what the client still sends is
 *               discarded until it closes (so that it reads the answer).
 *
 * Every connection, allowed or not, is one line of the audit log. */
#include "daemon.h"
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

#define PROXY_BUF (256u * 1024u)     /* each direction of a tunnel (a pipe's size, where granted) */
#define HEAD_TIMEOUT_NS (10 * NS_S)  /* the request head, from accept (or --frame-timeout, if shorter) */
#define SETUP_TIMEOUT_NS (15 * NS_S) /* resolving and connecting */
#define LINGER_NS (2 * NS_S)         /* CLOSING: discard what follows a refusal */
#define NS_S 1000000000LL
#define RESOLVER_THREADS 4
#define RESOLVER_ADDRS MINI_NET_PIN_ADDRS

enum pstate { P_HEAD, P_RESOLVING, P_CONNECTING, P_TUNNEL, P_CLOSING };

/* One direction of a tunnel: a pipe, so that bytes go from socket to
 * socket with splice() and never through the daemon's memory. */
struct pbuf {
    int p[2];   /* -1 until the tunnel opens */
    size_t n;   /* bytes in the pipe */
    size_t cap; /* the pipe's size */
};

struct pconn {
    struct pconn *next, *prev; /* in the proxy's list of live ones (or next: the graveyard) */
    struct pconn *lnext;       /* in its listener's list */
    struct proxy_listener *l;
    struct session *ss;
    bool dead;
    enum pstate state;
    int cfd, ufd;
    struct ev ev_c, ev_u;
    uint32_t want_c, want_u; /* epoll interest registered */
    char *head;              /* P_HEAD: what the client sent so far */
    size_t head_len;
    struct mini_http_req req;
    uint8_t addrs[RESOLVER_ADDRS][16];
    size_t n_addrs, addr_i;
    uint64_t lookup;  /* P_RESOLVING: the resolver's request id */
    const char *why;  /* the last address refused, and why */
    char why_buf[MINI_NET_HOST_MAX + 256];
    uint8_t used[16]; /* the address connected to */
    bool have_used;
    struct pbuf c2u, u2c;
    bool c_eof, u_eof, u_shut, c_shut;
    uint64_t bytes_in, bytes_out;
    int64_t start_ns, deadline_ns;
};

struct proxy_listener {
    struct proxy_listener *next; /* in the proxy's list of live ones, or the graveyard */
    struct server *s;
    bool dead;
    bool paused; /* out of fds: not accepting until the next tick */
    int fd;
    struct ev ev;
    struct session *ss;
    struct pconn *conns;
};

struct resolve_req {
    uint64_t id;
    char name[MINI_NET_HOST_MAX + 1];
};
struct resolve_rep {
    uint64_t id;
    int32_t gai_err;
    uint32_t n;
    uint8_t addrs[RESOLVER_ADDRS][16];
};

struct proxy {
    struct mini_net_pins pins; /* --resolve */
    uint8_t (*own)[16]; /* the host's own addresses */
    size_t n_own;
    int64_t own_at;
    int res_fd;
    pid_t res_pid;
    struct ev ev_res;
    uint64_t next_lookup;
    size_t lookups; /* in flight */
    int tick_fd;
    bool tick_armed; /* only while there are connections */
    struct ev ev_tick;
    size_t n_conns;
    struct pconn *conns, *dead;
    struct proxy_listener *listeners, *dead_l;
    size_t n_paused;
};

/* ------------------------------------------------------------- resolver */

/* The resolver: a process forked from the daemon (which is single-threaded,
 * so the fork is safe) before it needs one, holding only its socket.  A
 * few threads each take a request, run getaddrinfo (which may block for
 * seconds) and answer.  Never in the daemon itself: threads there would
 * make its clone() of sandboxes unsafe (a lock held by a thread at the
 * clone stays held in the child). */
static void *resolver_thread(void *arg)
{
    int fd = (int)(intptr_t)arg;
    for (;;) {
        struct resolve_req rq;
        ssize_t n = recv(fd, &rq, sizeof rq, 0);
        if (n <= 0)
            _exit(0);
        if (n != sizeof rq)
            continue;
        rq.name[sizeof rq.name - 1] = '\0';
        struct resolve_rep rp = { .id = rq.id };
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
        rp.gai_err = getaddrinfo(rq.name, NULL, &hints, &res);
        for (struct addrinfo *a = res; a && rp.n < RESOLVER_ADDRS; a = a->ai_next) {
            uint8_t *d = rp.addrs[rp.n];
            if (a->ai_family == AF_INET) {
                memset(d, 0, 10);
                d[10] = d[11] = 0xff;
                memcpy(d + 12, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
            } else if (a->ai_family == AF_INET6) {
                memcpy(d, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
            } else {
                continue;
            }
            bool dup = false;
            for (uint32_t k = 0; k < rp.n && !dup; k++)
                dup = memcmp(rp.addrs[k], d, 16) == 0;
            rp.n += !dup;
        }
        if (res)
            freeaddrinfo(res);
        if (send(fd, &rp, sizeof rp, MSG_NOSIGNAL) < 0)
            _exit(0);
    }
    return NULL;
}

static __attribute__((noreturn)) void resolver_main(int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NAME, "mini-resolver");
    if (dup2(fd, 3) < 0)
        _exit(1);
    close_range(4, ~0u, 0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
            close(null);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int i = 1; i < RESOLVER_THREADS; i++) {
        pthread_t t;
        pthread_create(&t, NULL, resolver_thread, (void *)(intptr_t)3);
    }
    resolver_thread((void *)(intptr_t)3);
    _exit(0);
}

static void resolver_stop(struct server *s)
{
    struct proxy *p = s->proxy;
    if (p->res_fd >= 0) {
        ep_del(s, p->res_fd);
        mini_close(p->res_fd);
        p->res_fd = -1;
    }
    if (p->res_pid > 0) {
        kill(p->res_pid, SIGKILL);
        while (waitpid(p->res_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        p->res_pid = -1;
    }
}

static int resolver_start(struct server *s)
{
    struct proxy *p = s->proxy;
    if (p->res_fd >= 0)
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0)
        resolver_main(sv[1]);
    close(sv[1]);
    mini_set_nonblock(sv[0], 1);
    p->res_fd = sv[0];
    p->res_pid = pid;
    if (ep_add(s, p->res_fd, EPOLLIN, &p->ev_res) < 0) {
        resolver_stop(s);
        return -1;
    }
    return 0;
}

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

static void audit_conn(struct server *s, struct pconn *c, const char *verdict, int status, const char *reason)
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

static void conn_interest(struct server *s, struct pconn *c);

static void conn_free_now(struct pconn *c)
{
    free(c->head);
    mini_close(c->c2u.p[0]);
    mini_close(c->c2u.p[1]);
    mini_close(c->u2c.p[0]);
    mini_close(c->u2c.p[1]);
    free(c);
}

/* Close both ends; the object is freed after this epoll batch. */
static void conn_close(struct server *s, struct pconn *c)
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
static void conn_end(struct server *s, struct pconn *c, const char *reason)
{
    audit_conn(s, c, "allowed", 200, reason);
    conn_close(s, c);
}

/* Refuse with an HTTP answer, then discard what the client still sends
 * until it closes (or LINGER_NS), so that it reads the answer rather
 * than a reset. */
static void conn_refuse(struct server *s, struct pconn *c, int status, const char *reason)
{
    static const struct {
        int code;
        const char *text;
    } texts[] = {
        { 400, "Bad Request" },          { 403, "Forbidden" },       { 405, "Method Not Allowed" },
        { 408, "Request Timeout" },
        { 429, "Too Many Requests" },    { 431, "Request Header Fields Too Large" },
        { 501, "Not Implemented" },      { 502, "Bad Gateway" },     { 503, "Service Unavailable" },
        { 504, "Gateway Timeout" },
    };
    const char *text = "Error";
    for (size_t i = 0; i < MINI_ARRAY_SIZE(texts); i++)
        if (texts[i].code == status)
            text = texts[i].text;
    audit_conn(s, c, "refused", status, reason);
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
    conn_interest(s, c);
}

static void set_want(struct server *s, int fd, uint32_t *cur, uint32_t want, struct ev *ev)
{
    if (fd < 0 || *cur == want)
        return;
    ep_mod(s, fd, want, ev);
    *cur = want;
}

/* What each end waits for, from the state and the buffers. */
static void conn_interest(struct server *s, struct pconn *c)
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

static const struct mini_netrule *match_addr(const struct mini_netrule *r, size_t n, const uint8_t a[16],
                                             uint16_t port)
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
static void conn_addresses(struct server *s, struct pconn *c)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n_addrs; i++)
        if (addr_allowed(s, c, c->addrs[i]))
            memmove(c->addrs[k++], c->addrs[i], 16);
    c->n_addrs = k;
    c->addr_i = 0;
    if (!k) {
        conn_refuse(s, c, 403, c->why ? c->why : "no address to connect to");
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
        conn_refuse(s, c, 403,
                    !in_left ? "the session has received all the bytes its limits.net_in_mb allows"
                             : "the session has sent all the bytes its limits.net_out_mb allows");
        return;
    }
    if (c->req.host_is_ip) {
        memcpy(c->addrs[0], c->req.addr, 16);
        c->n_addrs = 1;
        conn_addresses(s, c);
        return;
    }
    char why[MINI_NET_HOST_MAX + 120];
    if (match_name(n->deny, n->n_deny, c->req.host, c->req.port)) {
        snprintf(why, sizeof why, "%s:%u is denied by the profile's network.deny", c->req.host, (unsigned)c->req.port);
        conn_refuse(s, c, 403, why);
        return;
    }
    if (!match_name(n->allow, n->n_allow, c->req.host, c->req.port)) {
        snprintf(why, sizeof why, "%s:%u is not in the allowlist", c->req.host, (unsigned)c->req.port);
        conn_refuse(s, c, 403, why);
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
        conn_addresses(s, c);
        return;
    }
    if (p->lookups >= MAX_LOOKUPS) {
        conn_refuse(s, c, 503, "too many name lookups in flight; try again");
        return;
    }
    struct resolve_req rq = { .id = ++p->next_lookup };
    snprintf(rq.name, sizeof rq.name, "%s", c->req.host);
    if (resolver_start(s) < 0 || send(p->res_fd, &rq, sizeof rq, MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof rq) {
        conn_refuse(s, c, 503, "the resolver is not available; try again");
        return;
    }
    p->lookups++;
    c->lookup = rq.id;
    c->state = P_RESOLVING;
    c->deadline_ns = mini_mono_ns() + SETUP_TIMEOUT_NS;
    conn_interest(s, c);
}

static void resolver_readable(struct server *s)
{
    struct proxy *p = s->proxy;
    for (;;) {
        struct resolve_rep rp;
        ssize_t n = recv(p->res_fd, &rp, sizeof rp, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            log_warn("proxy: the resolver process ended; it is started again at the next lookup");
            resolver_stop(s);
            for (struct pconn *c = p->conns, *next; c; c = next) {
                next = c->next;
                if (c->state == P_RESOLVING)
                    conn_refuse(s, c, 502, "the resolver process ended during the lookup");
            }
            return;
        }
        if (n != sizeof rp)
            continue;
        for (struct pconn *c = p->conns; c; c = c->next) {
            if (c->state != P_RESOLVING || c->lookup != rp.id)
                continue;
            if (rp.gai_err || rp.n == 0) {
                char why[MINI_NET_HOST_MAX + 100];
                snprintf(why, sizeof why, "%s: %s", c->req.host,
                         rp.gai_err ? gai_strerror(rp.gai_err) : "no address");
                conn_refuse(s, c, 502, why);
                break;
            }
            p->lookups--;
            c->state = P_CONNECTING;
            c->n_addrs = rp.n > RESOLVER_ADDRS ? RESOLVER_ADDRS : rp.n;
            memcpy(c->addrs, rp.addrs, c->n_addrs * 16);
            conn_addresses(s, c);
            break;
        }
    }
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
        conn_interest(s, c);
        return;
    }
    char why[MINI_NET_HOST_MAX + 120];
    snprintf(why, sizeof why, "connecting to %s:%u: %s", c->req.host, (unsigned)c->req.port,
             last_err ? strerror(last_err) : "no address left");
    /* The daemon's own shortage is not the destination's fault. */
    conn_refuse(s, c, last_err == EMFILE || last_err == ENFILE ? 503 : 502, why);
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
        conn_refuse(s, c, 502, why);
        return;
    }
    if (pbuf_alloc(&c->c2u) < 0 || pbuf_alloc(&c->u2c) < 0) {
        conn_refuse(s, c, 503, "the daemon is out of file descriptors for pipes; try again");
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
        conn_refuse(s, c, 503, "out of memory");
        return;
    }
    c->bytes_out += c->c2u.n;
    c->ss->net.out += c->c2u.n;
    free(c->head);
    c->head = NULL;
    c->state = P_TUNNEL;
    conn_interest(s, c);
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
            conn_end(s, c, "reset");
            return true;
        }
        moved |= got_in || got_out || r1 == 0 || r2 == 0 || pend != c->c2u.n + c->u2c.n;
        if (quota) {
            conn_end(s, c, in_left == 0 ? "closed at the session's limits.net_in_mb"
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
            conn_end(s, c, NULL);
            return true;
        }
        if (!got_in && !got_out)
            break;
    }
    conn_interest(s, c);
    return moved;
}

/* A tunnel's event: an end that hung up or failed with nothing left to
 * move ends it (epoll reports those whatever the interest). */
static void tunnel_event(struct server *s, struct pconn *c, uint32_t events)
{
    if (!tunnel(s, c) && !c->dead && (events & (EPOLLHUP | EPOLLERR)))
        conn_end(s, c, (events & EPOLLERR) ? "reset" : NULL);
}

/* ------------------------------------------------------------ events */

static void conn_head(struct server *s, struct pconn *c)
{
    if (!c->head && !(c->head = malloc(MINI_HTTP_HEAD_MAX + 1))) {
        conn_close(s, c);
        return;
    }
    ssize_t n = recv(c->cfd, c->head + c->head_len, MINI_HTTP_HEAD_MAX - c->head_len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        audit_conn(s, c, "refused", 0, "the client closed before sending a whole request");
        conn_close(s, c);
        return;
    }
    c->head_len += (size_t)n;
    int status;
    const char *why;
    int r = mini_http_req_parse(c->head, c->head_len, &c->req, &status, &why);
    if (r < 0)
        conn_refuse(s, c, status, why);
    else if (r > 0)
        conn_decide(s, c);
}

static void client_event(struct server *s, struct pconn *c, uint32_t events)
{
    switch (c->state) {
    case P_HEAD: conn_head(s, c); break;
    case P_CLOSING: {
        char buf[4096];
        ssize_t n = recv(c->cfd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            conn_close(s, c);
        break;
    }
    case P_RESOLVING:
    case P_CONNECTING:
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            audit_conn(s, c, "refused", 0, "the client closed before the connection was made");
            conn_close(s, c);
        }
        break;
    case P_TUNNEL: tunnel_event(s, c, events); break;
    }
}

static void upstream_event(struct server *s, struct pconn *c, uint32_t events)
{
    if (c->state == P_CONNECTING)
        conn_connected(s, c);
    else if (c->state == P_TUNNEL)
        tunnel_event(s, c, events);
}

static void tick_arm(struct proxy *p, bool on)
{
    if (p->tick_armed == on)
        return;
    struct itimerspec it = { 0 };
    if (on)
        it.it_interval.tv_nsec = it.it_value.tv_nsec = 250000000;
    if (timerfd_settime(p->tick_fd, 0, &it, NULL) == 0)
        p->tick_armed = on;
}

static void accept_conns(struct server *s, struct proxy_listener *l)
{
    struct proxy *p = s->proxy;
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The client waits in the backlog; the listener rests until
                 * the next tick instead of waking the loop for nothing. */
                log_warn("proxy: session %s: accept: %s; paused", l->ss->id, strerror(errno));
                ep_mod(s, l->fd, 0, &l->ev);
                l->paused = true;
                p->n_paused++;
                tick_arm(p, true);
            }
            return;
        }
        struct pconn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        tick_arm(p, true);
        c->cfd = fd;
        c->ufd = -1;
        c->c2u.p[0] = c->c2u.p[1] = c->u2c.p[0] = c->u2c.p[1] = -1;
        c->l = l;
        c->ss = l->ss;
        c->ss->refs++;
        c->ss->net.conns++;
        p->n_conns++;
        c->start_ns = mini_mono_ns();
        c->deadline_ns = c->start_ns + (s->frame_timeout_ns < HEAD_TIMEOUT_NS ? s->frame_timeout_ns : HEAD_TIMEOUT_NS);
        c->ev_c = (struct ev){ EV_PROXY_CLIENT, c };
        c->ev_u = (struct ev){ EV_PROXY_UP, c };
        c->next = p->conns;
        if (p->conns)
            p->conns->prev = c;
        p->conns = c;
        c->lnext = l->conns;
        l->conns = c;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (ep_add(s, fd, 0, &c->ev_c) < 0) {
            conn_close(s, c);
            continue;
        }
        uint64_t cap = c->ss->profile->limits.net_connections;
        if (cap && (uint64_t)c->ss->net.conns > cap) {
            char why[160];
            snprintf(why, sizeof why, "the session has %llu connections open, the most its limits.net_connections allows",
                     (unsigned long long)cap);
            conn_refuse(s, c, 429, why);
        } else if (p->n_conns > PROXY_MAX_CONNS) {
            conn_refuse(s, c, 503, "the daemon's proxy holds " MINI_STR(PROXY_MAX_CONNS) " connections; try again");
        } else {
            conn_interest(s, c);
        }
    }
}

/* Deadlines: a head not in time (slowloris), a lookup or connect that
 * hangs, a refused client that does not close. */
static void tick(struct server *s)
{
    struct proxy *p = s->proxy;
    uint64_t x;
    (void)!read(p->tick_fd, &x, sizeof x);
    int64_t now = mini_mono_ns();
    for (struct pconn *c = p->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == P_TUNNEL || now < c->deadline_ns)
            continue;
        if (c->state == P_HEAD)
            conn_refuse(s, c, 408, "no complete request head in time");
        else if (c->state == P_RESOLVING)
            conn_refuse(s, c, 504, "the name lookup took longer than 15 s");
        else if (c->state == P_CONNECTING)
            conn_refuse(s, c, 504, "connecting took longer than 15 s");
        else
            conn_close(s, c);
    }
    for (struct proxy_listener *l = p->listeners; l && p->n_paused; l = l->next)
        if (l->paused) {
            ep_mod(s, l->fd, EPOLLIN, &l->ev);
            l->paused = false;
            p->n_paused--;
        }
    if (!p->n_conns)
        tick_arm(p, false);
}

void proxy_event(struct server *s, struct ev *ev, uint32_t events)
{
    switch (ev->kind) {
    case EV_PROXY_LISTEN: accept_conns(s, ev->obj); break;
    case EV_PROXY_CLIENT: client_event(s, ev->obj, events); break;
    case EV_PROXY_UP: upstream_event(s, ev->obj, events); break;
    case EV_PROXY_DNS: resolver_readable(s); break;
    case EV_PROXY_TICK: tick(s); break;
    default: break;
    }
}

bool proxy_ev_dead(const struct ev *ev)
{
    switch (ev->kind) {
    case EV_PROXY_LISTEN: return ((const struct proxy_listener *)ev->obj)->dead;
    case EV_PROXY_CLIENT:
    case EV_PROXY_UP: return ((const struct pconn *)ev->obj)->dead;
    default: return false;
    }
}

/* ------------------------------------------------------------ sessions */

int session_net_open(struct session *ss, struct mini_err *e)
{
    const struct mini_profile *p = ss->profile;
    struct session_net *n = &ss->net;
    if (p->network != MINI_NET_ALLOW)
        return 0;
    n->allow = calloc(p->n_net_allow ? p->n_net_allow : 1, sizeof *n->allow);
    n->deny = calloc(p->n_net_deny ? p->n_net_deny : 1, sizeof *n->deny);
    if (!n->allow || !n->deny)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const char *why;
    for (size_t i = 0; i < p->n_net_allow; i++)
        if (mini_netrule_parse(p->net_allow[i], &n->allow[n->n_allow++], &why) < 0)
            return mini_err_set(e, MINI_E_PROFILE_INVALID, "network.allow: \"%s\": %s", p->net_allow[i], why);
    for (size_t i = 0; i < p->n_net_deny; i++)
        if (mini_netrule_parse(p->net_deny[i], &n->deny[n->n_deny++], &why) < 0)
            return mini_err_set(e, MINI_E_PROFILE_INVALID, "network.deny: \"%s\": %s", p->net_deny[i], why);
    for (size_t i = 0; i < p->n_net_resolve; i++)
        if (mini_net_pins_add(&n->pins, p->net_resolve[i], &why) < 0)
            return mini_err_set(e, MINI_E_PROFILE_INVALID, "network.resolve: \"%s\": %s", p->net_resolve[i], why);
    return 0;
}

void session_net_close(struct session *ss)
{
    free(ss->net.allow);
    free(ss->net.deny);
    ss->net.allow = ss->net.deny = NULL;
    mini_net_pins_free(&ss->net.pins);
}

void proxy_start(struct server *s, struct exec *x)
{
    int fd = x->slot.sb.listen_fd;
    if (fd < 0 || !s->proxy || x->proxy)
        return;
    struct proxy_listener *l = calloc(1, sizeof *l);
    if (!l)
        return;
    l->fd = fd;
    l->s = s;
    l->ss = x->session;
    l->ev = (struct ev){ EV_PROXY_LISTEN, l };
    if (ep_add(s, fd, EPOLLIN, &l->ev) < 0) {
        free(l);
        return;
    }
    x->slot.sb.listen_fd = -1;
    x->proxy = l;
    l->next = s->proxy->listeners;
    s->proxy->listeners = l;
}

void proxy_stop(struct exec *x)
{
    struct proxy_listener *l = x->proxy;
    if (!l)
        return;
    struct server *s = l->s;
    x->proxy = NULL;
    while (l->conns) {
        struct pconn *c = l->conns;
        if (c->state == P_TUNNEL)
            conn_end(s, c, "the command ended");
        else if (c->state == P_CLOSING) /* its refusal is logged */
            conn_close(s, c);
        else {
            audit_conn(s, c, "refused", 0, "the command ended before the connection was made");
            conn_close(s, c);
        }
    }
    ep_del(s, l->fd);
    close(l->fd);
    l->dead = true;
    if (l->paused)
        s->proxy->n_paused--;
    for (struct proxy_listener **pp = &s->proxy->listeners; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    l->next = s->proxy->dead_l;
    s->proxy->dead_l = l;
}

void proxy_bury(struct server *s)
{
    struct proxy *p = s->proxy;
    if (!p)
        return;
    while (p->dead) {
        struct pconn *c = p->dead;
        p->dead = c->next;
        conn_free_now(c);
    }
    while (p->dead_l) {
        struct proxy_listener *l = p->dead_l;
        p->dead_l = l->next;
        free(l);
    }
}

/* ------------------------------------------------------------ the daemon */

int proxy_init(struct server *s, struct mini_err *e)
{
    struct proxy *p = calloc(1, sizeof *p);
    if (!p)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    s->proxy = p;
    p->res_fd = p->tick_fd = -1;
    p->res_pid = -1;
    p->ev_res = (struct ev){ EV_PROXY_DNS, NULL };
    p->ev_tick = (struct ev){ EV_PROXY_TICK, NULL };
    for (size_t i = 0; i < s->cfg->n_resolve; i++) {
        const char *why;
        if (mini_net_pins_add(&p->pins, s->cfg->resolve[i], &why) < 0)
            return mini_err_set(e, MINI_E_BAD_REQUEST, "--resolve %s: %s", s->cfg->resolve[i], why);
    }
    p->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (p->tick_fd < 0 || ep_add(s, p->tick_fd, EPOLLIN, &p->ev_tick) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "the proxy's timer");
    return 0;
}

void proxy_fini(struct server *s)
{
    struct proxy *p = s->proxy;
    if (!p)
        return;
    while (p->conns)
        conn_close(s, p->conns);
    resolver_stop(s);
    if (p->tick_fd >= 0) {
        ep_del(s, p->tick_fd);
        close(p->tick_fd);
    }
    proxy_bury(s);
    mini_net_pins_free(&p->pins);
    free(p->own);
    free(p);
    s->proxy = NULL;
}
