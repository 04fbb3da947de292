/* The network allowlist's proxy (proxy.c and its parts; docs/profiles.md,
 * "network"), in the daemon's event loop. */
#ifndef MINI_SANDBOXD_PROXY_H
#define MINI_SANDBOXD_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loop.h"
#include "netpolicy.h"
#include "mini/err.h"

struct server;
struct session;
struct exec;
struct proxy;
struct proxy_listener;
struct mini_netrule;

/* The network allowlist's proxy (proxy.c, docs/profiles.md): the most
 * connections it holds for all sessions (two fds each), and name lookups
 * in flight in the resolver process. */
#define PROXY_MAX_CONNS 1024
#define MAX_LOOKUPS 64

/* A session's allowlist, compiled, and what its connections used. */
struct session_net {
    struct mini_netrule *allow, *deny;
    size_t n_allow, n_deny;
    struct mini_net_pins pins; /* the profile's network.resolve */
    int conns;                 /* open now */
    uint64_t in, out;          /* bytes, since the session opened */
};

/* The pins (--resolve) and the deadline timer; the resolver process is
 * started at the first lookup a pin does not answer. */
int proxy_init(struct server *s, struct mini_err *e);
void proxy_fini(struct server *s);
/* Compile the profile's allowlist into ss->net (open). */
int session_net_open(struct session *ss, struct mini_err *e);
void session_net_close(struct session *ss);
/* The command is launched: accept on its sandbox's listener, if it has one. */
void proxy_start(struct server *s, struct exec *x);
/* The command is over: its connections end, the listener closes. */
void proxy_stop(struct exec *x);
void proxy_event(struct server *s, struct ev *ev, uint32_t events);
bool proxy_ev_dead(const struct ev *ev);
/* Free what was closed in this epoll batch. */
void proxy_bury(struct server *s);

#endif
