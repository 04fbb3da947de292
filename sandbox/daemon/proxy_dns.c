/* The network proxy's resolver process (proxy_int.h). */
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

void proxy_resolver_stop(struct server *s)
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

int proxy_resolver_start(struct server *s)
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
        proxy_resolver_stop(s);
        return -1;
    }
    return 0;
}

void proxy_resolver_readable(struct server *s)
{
    struct proxy *p = s->proxy;
    for (;;) {
        struct resolve_rep rp;
        ssize_t n = recv(p->res_fd, &rp, sizeof rp, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n <= 0) {
            log_warn("proxy: the resolver process ended; it is started again at the next lookup");
            proxy_resolver_stop(s);
            for (struct pconn *c = p->conns, *next; c; c = next) {
                next = c->next;
                if (c->state == P_RESOLVING)
                    pconn_refuse(s, c, 502, "the resolver process ended during the lookup");
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
                snprintf(why, sizeof why, "%s: %s", c->req.host, rp.gai_err ? gai_strerror(rp.gai_err) : "no address");
                pconn_refuse(s, c, 502, why);
                break;
            }
            p->lookups--;
            c->state = P_CONNECTING;
            c->n_addrs = rp.n > RESOLVER_ADDRS ? RESOLVER_ADDRS : rp.n;
            memcpy(c->addrs, rp.addrs, c->n_addrs * 16);
            pconn_addresses(s, c);
            break;
        }
    }
}
