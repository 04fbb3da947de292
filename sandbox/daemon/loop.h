/* The daemon's event loop as every part of it sees it: what an epoll
 * event stands for (struct ev: a kind and the object it belongs to), and
 * adding, changing and removing an fd's interest.  The loop itself is
 * server.c's; the parts that watch fds of their own (the pool, the helper
 * reaper, the template's mount watch) keep the loop's epoll fd. */
#ifndef MINI_SANDBOXD_LOOP_H
#define MINI_SANDBOXD_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

enum ev_kind {
    EV_LISTEN,
    EV_SIGNAL,
    EV_CLIENT,
    EV_CTL,
    EV_OUT,
    EV_PID,
    EV_TIMER,
    EV_STDIN,
    EV_POOL_CTL,
    EV_POOL_PID,
    EV_DISK,
    EV_MEASURE,
    EV_MOUNTS,       /* the mount table changed (mounts.h, wake_fd) */
    EV_HOLDER,       /* a helper (helpers.h) has exited */
    EV_PROXY_LISTEN, /* proxy.c: a sandbox's listener, a connection's ends, */
    EV_PROXY_CLIENT, /* the resolver process, the deadline timer */
    EV_PROXY_UP,
    EV_PROXY_DNS,
    EV_PROXY_TICK
};

struct ev {
    enum ev_kind kind;
    void *obj;
};

static inline int loop_add(int ep, int fd, uint32_t events, struct ev *ev)
{
    struct epoll_event ee = { .events = events, .data.ptr = ev };
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee);
}

static inline void loop_mod(int ep, int fd, uint32_t events, struct ev *ev)
{
    struct epoll_event ee = { .events = events, .data.ptr = ev };
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ee);
}

static inline void loop_del(int ep, int fd)
{
    if (fd >= 0)
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
}

#endif
