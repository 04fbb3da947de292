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

/* ------------------------------------------------------------ events */

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
        c->deadline_ns =
            c->start_ns + (s->conns.frame_timeout_ns < HEAD_TIMEOUT_NS ? s->conns.frame_timeout_ns : HEAD_TIMEOUT_NS);
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
            pconn_close(s, c);
            continue;
        }
        uint64_t cap = c->ss->profile->limits.net_connections;
        if (cap && (uint64_t)c->ss->net.conns > cap) {
            char why[160];
            snprintf(why, sizeof why,
                     "the session has %llu connections open, the most its limits.net_connections allows",
                     (unsigned long long)cap);
            pconn_refuse(s, c, 429, why);
        } else if (p->n_conns > PROXY_MAX_CONNS) {
            pconn_refuse(s, c, 503, "the daemon's proxy holds " MINI_STR(PROXY_MAX_CONNS) " connections; try again");
        } else {
            pconn_interest(s, c);
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
            pconn_refuse(s, c, 408, "no complete request head in time");
        else if (c->state == P_RESOLVING)
            pconn_refuse(s, c, 504, "the name lookup took longer than 15 s");
        else if (c->state == P_CONNECTING)
            pconn_refuse(s, c, 504, "connecting took longer than 15 s");
        else
            pconn_close(s, c);
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
    case EV_PROXY_CLIENT: pconn_client_event(s, ev->obj, events); break;
    case EV_PROXY_UP: pconn_upstream_event(s, ev->obj, events); break;
    case EV_PROXY_DNS: proxy_resolver_readable(s); break;
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
            pconn_end(s, c, "the command ended");
        else if (c->state == P_CLOSING) /* its refusal is logged */
            pconn_close(s, c);
        else {
            pconn_audit(s, c, "refused", 0, "the command ended before the connection was made");
            pconn_close(s, c);
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
        pconn_free_now(c);
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
        pconn_close(s, p->conns);
    proxy_resolver_stop(s);
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
