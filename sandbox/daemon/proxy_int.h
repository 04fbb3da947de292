/* The network proxy's parts (proxy.c: listeners, deadlines, sessions and
 * the daemon's side; proxy_conn.c: one connection from its request head to
 * its tunnel; proxy_dns.c: the resolver process).  Private to them. */
#ifndef MINI_SANDBOXD_PROXY_INT_H
#define MINI_SANDBOXD_PROXY_INT_H

#include "daemon.h"
#include "netpolicy.h"

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
    uint64_t lookup; /* P_RESOLVING: the resolver's request id */
    const char *why; /* the last address refused, and why */
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
    uint8_t (*own)[16];        /* the host's own addresses */
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

/* ------------------------------------------------- proxy_conn.c: a connection */

/* Its epoll interest, from its state and buffers. */
void pconn_interest(struct server *s, struct pconn *c);
/* The audit log's line for it (and the debug log's). */
void pconn_audit(struct server *s, struct pconn *c, const char *verdict, int status, const char *reason);
/* Freed now / closed (freed after this epoll batch) / ended (audited, then
 * closed) / refused with an HTTP status (then CLOSING). */
void pconn_free_now(struct pconn *c);
void pconn_close(struct server *s, struct pconn *c);
void pconn_end(struct server *s, struct pconn *c, const char *reason);
void pconn_refuse(struct server *s, struct pconn *c, int status, const char *reason);
/* Its name's addresses are known (c->addrs): keep those allowed, connect. */
void pconn_addresses(struct server *s, struct pconn *c);
/* Its client's or its upstream's socket has events. */
void pconn_client_event(struct server *s, struct pconn *c, uint32_t events);
void pconn_upstream_event(struct server *s, struct pconn *c, uint32_t events);

/* --------------------------------------------------- proxy_dns.c: the resolver */

/* Start the resolver process (a no-op while it runs); -1 when it cannot be. */
int proxy_resolver_start(struct server *s);
void proxy_resolver_stop(struct server *s);
/* Its answers: each goes to the connection that waits for it. */
void proxy_resolver_readable(struct server *s);

#endif
