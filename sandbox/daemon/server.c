/* mini-sandboxd's event loop (see server.h and daemon.h): one epoll set
 * for the listening socket, the signalfd, every client and every
 * sandbox's fds; clients and their requests; hello and stats. */
#include "daemon.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/log.h"
#include "mini/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void do_hello(struct server *s, struct client *c, const struct mini_req *req)
{
    if (req->u.hello.version != MINI_PROTO_VERSION) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_BAD_REQUEST, "hello.version: this daemon speaks version %d, not %lld",
                     MINI_PROTO_VERSION, (long long)req->u.hello.version);
        send_error(s, c, req->id, &e);
        return;
    }
    struct mini_rep rep = { .op = MINI_OP_HELLO, .id = req->id };
    rep.u.hello.version = MINI_PROTO_VERSION;
    rep.u.hello.server = "mini-sandboxd " MINI_VERSION;
    cJSON *f = cJSON_CreateObject();
    cJSON_AddBoolToObject(f, "rootless", geteuid() != 0);
    cJSON_AddNumberToObject(f, "uid", geteuid());
    cJSON_AddStringToObject(f, "limits_by",
                            s->host.cgroups.mode == MINI_CG_NONE ? "rlimits" : mini_cg_mode_name(s->host.cgroups.mode));
    cJSON_AddBoolToObject(f, "prepared_sandboxes", true);
    cJSON_AddBoolToObject(f, "exec_last", true); /* exec.last is understood */
    /* open.allow_hosts and allowlist profiles (docs/profiles.md). */
    cJSON *net = cJSON_AddObjectToObject(f, "network_allowlist");
    cJSON_AddNumberToObject(net, "proxy_port", MINI_NET_PROXY_PORT);
    cJSON_AddNumberToObject(net, "pins", (double)s->cfg->n_resolve);
    cJSON *lim = cJSON_AddObjectToObject(f, "limits");
    cJSON_AddNumberToObject(lim, "connections", (double)s->conns.max_clients);
    cJSON_AddNumberToObject(lim, "sessions", MAX_SESSIONS);
    cJSON_AddNumberToObject(lim, "sessions_per_connection", MAX_SESSIONS_PER_CLIENT);
    cJSON_AddNumberToObject(lim, "running", MAX_RUNNING);
    cJSON_AddNumberToObject(lim, "running_per_connection", MAX_RUNNING_PER_CLIENT);
    cJSON_AddNumberToObject(lim, "unread_reply_bytes", WQ_MAX);
    cJSON_AddNumberToObject(lim, "proxied_connections", PROXY_MAX_CONNS);
    cJSON *machine = mini_caps_to_json(&s->host.caps);
    if (machine)
        cJSON_AddItemToObject(f, "machine", machine);
    rep.u.hello.features = f;
    send_rep(s, c, &rep);
    cJSON_Delete(f);
}

static void do_stats(struct server *s, struct client *c, const struct mini_req *req)
{
    struct mini_rep rep = { .op = MINI_OP_STATS, .id = req->id };
    int64_t sessions = 0, running = 0;
    for (struct client *k = s->conns.clients; k; k = k->next)
        for (struct session *ss = k->sessions; ss; ss = ss->next)
            sessions++;
    for (struct exec *x = s->execs; x; x = x->next)
        running += !x->finished;
    rep.u.stats.sessions = sessions;
    rep.u.stats.running = running;
    rep.u.stats.execs_total = s->execs_total;
    rep.u.stats.clients = (int64_t)s->conns.n_clients;
    rep.u.stats.uptime_ms = (mini_mono_ns() - s->start_ns) / 1000000;
    rep.u.stats.preparing = sessions_preparing(s);
    rep.u.stats.held_ahead = sessions_held_ahead(s);
    rep.u.stats.seccomp_programs = (int64_t)seccache_count(&s->seccache);
    send_rep(s, c, &rep);
}

/* -------------------------------------------------------------- clients */

static void set_partial(struct server *s, struct client *c, int64_t since);

static void client_close(struct server *s, struct client *c)
{
    set_partial(s, c, 0);
    ep_del(s, c->fd);
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c) {
            exec_kill(x, MINI_LIMIT_DISCONNECT);
            x->client = NULL;
            if (x->out_paused && x->slot.sb.out >= 0) {
                x->out_paused = false;
                ep_mod(s, x->slot.sb.out, EPOLLIN, &x->ev_out);
            }
        }
    while (c->sessions)
        session_close(s, c, c->sessions, MINI_LIMIT_DISCONNECT);
    disk_client_gone(s, c);
    for (struct client **pp = &s->conns.clients; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    s->conns.n_clients--;
    if (s->conns.accept_paused && s->conns.lfd >= 0) {
        s->conns.accept_paused = false;
        ep_mod(s, s->conns.lfd, EPOLLIN, &s->conns.ev_listen);
    }
    mini_close(c->fd);
    c->fd = -1;
    c->dead = true;
    c->next = s->conns.dead_clients;
    s->conns.dead_clients = c;
    if (s->cfg->inherit_fd >= 0)
        s->stopping = true;
}

static void dispatch(struct server *s, struct client *c, const char *payload, size_t len)
{
    struct mini_req req;
    struct mini_err e;
    int64_t id = -1;
    if (mini_req_decode(payload, len, &req, &id, &e) < 0) {
        send_error(s, c, id, &e);
        return;
    }
    switch (req.op) {
    case MINI_OP_HELLO: do_hello(s, c, &req); break;
    case MINI_OP_OPEN: do_open(s, c, &req); break;
    case MINI_OP_EXEC: do_exec(s, c, &req); break;
    case MINI_OP_CANCEL: do_cancel(s, c, &req); break;
    case MINI_OP_CLOSE: do_close(s, c, &req); break;
    case MINI_OP_STATS: do_stats(s, c, &req); break;
    default: break;
    }
    mini_req_free(&req);
}

/* The partial-frame clock of c (0: it holds no partial frame); s counts
 * the clients whose clock runs, so that the loop looks only when some do. */
static void set_partial(struct server *s, struct client *c, int64_t since)
{
    if (since && !c->partial_since)
        s->conns.n_partial++;
    else if (!since && c->partial_since)
        s->conns.n_partial--;
    c->partial_since = since;
}

/* A broken stream cannot be resynchronised: say why, then close once
 * the error (and what was queued before it) is sent. */
static void client_abort(struct server *s, struct client *c, const struct mini_err *e)
{
    set_partial(s, c, 0);
    send_error(s, c, -1, e);
    c->closing = true;
    ep_mod(s, c->fd, EPOLLOUT | EPOLLRDHUP, &c->ev);
    c->want_out = true;
    if (wq_pending(c) == 0)
        client_close(s, c);
}

/* The sooner of two epoll timeouts in ms, -1 meaning none. */
static int sooner(int a, int b) { return a < 0 || (b >= 0 && b < a) ? b : a; }

/* Clients that have held part of a frame for frame_timeout get
 * bad_request and are closed (a half-sent frame is never kept forever);
 * the return is the epoll timeout until the next such deadline, or -1. */
static int expire_partial_frames(struct server *s)
{
    if (s->conns.n_partial == 0 || s->conns.frame_timeout_ns <= 0)
        return -1;
    int64_t now = mini_mono_ns(), next = -1;
    for (struct client *c = s->conns.clients, *nx; c; c = nx) {
        nx = c->next;
        if (!c->partial_since || c->closing || c->read_paused)
            continue;
        int64_t left = c->partial_since + s->conns.frame_timeout_ns - now;
        if (left <= 0) {
            struct mini_err e;
            mini_err_set(&e, MINI_E_BAD_REQUEST, "frame incomplete after %g s (%zu bytes of it received); closing",
                         (double)s->conns.frame_timeout_ns / 1e9, c->rd.in.len - c->rd.consumed);
            log_info("client pid %d: %s", (int)c->pid, e.msg);
            client_abort(s, c, &e);
        } else if (next < 0 || left < next) {
            next = left;
        }
    }
    if (next < 0)
        return -1;
    int64_t ms = next / 1000000 + 1;
    return ms > 60000 ? 60000 : (int)ms;
}

static void client_readable(struct server *s, struct client *c)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        struct mini_err e;
        if (n == 0 && c->rd.in.len > c->rd.consumed) {
            /* The peer shut its side mid-frame: say so, it may still read. */
            mini_err_set(&e, MINI_E_BAD_REQUEST, "the stream ended inside a frame (%zu bytes of it received)",
                         c->rd.in.len - c->rd.consumed);
            goto bad;
        }
        if (n <= 0) {
            client_close(s, c);
            return;
        }
        if (mini_frame_reader_feed(&c->rd, buf, (size_t)n, &e) < 0)
            goto bad;
        const char *payload;
        size_t len;
        int r;
        bool whole = false;
        while ((r = mini_frame_reader_next(&c->rd, &payload, &len, &e)) == 1) {
            whole = true;
            dispatch(s, c, payload, len);
        }
        if (r < 0)
            goto bad;
        /* The clock runs from the first byte of the frame being received. */
        if (c->closing || c->rd.in.len == c->rd.consumed)
            set_partial(s, c, 0);
        else if (whole || !c->partial_since)
            set_partial(s, c, mini_mono_ns());
        /* Not reading requests any more (replies unread): the rest waits
         * in the socket until the client catches up. */
        if (c->read_paused || c->closing)
            return;
        continue;
bad:
        client_abort(s, c, &e);
        return;
    }
}

static bool peer_allowed(struct server *s, int fd, pid_t *pid)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return false;
    *pid = cr.pid;
    if (cr.uid != geteuid() && cr.uid != 0) {
        log_warn("refusing a client with uid %u", (unsigned)cr.uid);
        return false;
    }
    /* Host root is served as well as the daemon's own user: it can reach
     * the socket and every process of the daemon's anyway.  A rootless
     * daemon may not look at root's /proc/PID/ns; and no sandbox appears
     * as uid 0 here, since sandboxes map to unprivileged host ids only. */
    if (cr.uid == 0 && geteuid() != 0)
        return true;
    /* A process in another user namespace (a sandbox, say) is refused
     * even when its uid maps to ours. */
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)cr.pid);
    if (cr.pid <= 0 || stat(path, &st) < 0 || st.st_ino != s->host.userns) {
        log_warn("refusing pid %d: not in the daemon's user namespace", (int)cr.pid);
        return false;
    }
    return true;
}

static int client_add(struct server *s, int fd)
{
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->ev = (struct ev){ EV_CLIENT, c };
    mini_frame_reader_init(&c->rd);
    mini_set_nonblock(fd, 1);
    if (ep_add(s, fd, EPOLLIN | EPOLLRDHUP, &c->ev) < 0) {
        close(fd);
        free(c);
        return -1;
    }
    c->next = s->conns.clients;
    s->conns.clients = c;
    s->conns.n_clients++;
    return 0;
}

/* Tell a connection the daemon will not serve it (busy, why), and close it. */
static void refuse(int fd, const struct mini_err *why)
{
    struct mini_err e;
    struct mini_buf b = MINI_BUF_INIT;
    cJSON *j = mini_error_json(-1, why);
    if (j && mini_frame_encode_json(&b, j, &e) == 0)
        (void)!send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    cJSON_Delete(j);
    mini_buf_free(&b);
    close(fd);
}

/* Out of fds, said once a minute at most: a client that keeps trying
 * must not fill the disk with the log. */
static void warn_fd_shortage(struct server *s, int err, const char *what)
{
    int64_t now = mini_mono_ns();
    s->conns.fd_refused++;
    if (s->conns.fd_warn_ns && now - s->conns.fd_warn_ns < 60 * (int64_t)1000000000)
        return;
    log_warn("accept: %s: %llu connection(s) %s since the last such warning (said at most once a minute)",
             strerror(err), (unsigned long long)s->conns.fd_refused, what);
    s->conns.fd_warn_ns = now;
    s->conns.fd_refused = 0;
}

static void accept_clients(struct server *s)
{
    for (;;) {
        int fd = accept4(s->conns.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        int err = errno;
        if (fd < 0 && (err == EMFILE || err == ENFILE) && s->conns.spare_fd >= 0) {
            /* Out of fds: the spare one makes room to accept the waiting
             * client and tell it busy, instead of leaving it hanging in the
             * backlog (or the loop spinning on a listener that stays
             * readable). */
            close(s->conns.spare_fd);
            fd = accept4(s->conns.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            int err2 = errno;
            if (fd >= 0) {
                struct mini_err e;
                mini_err_set(&e, MINI_E_BUSY, "the daemon is out of file descriptors (%s); try again later",
                             strerror(err));
                refuse(fd, &e);
                warn_fd_shortage(s, err, "refused with busy");
            }
            s->conns.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (fd >= 0)
                continue;
            err = err2;
        }
        if (fd < 0) {
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                /* No spare fd either: waiting clients stay in the backlog
                 * until one of ours goes (client_close resumes), instead of
                 * a busy loop. */
                warn_fd_shortage(s, err, "left waiting");
                ep_mod(s, s->conns.lfd, 0, &s->conns.ev_listen);
                s->conns.accept_paused = true;
            } else if (err != EAGAIN && err != EINTR) {
                log_warn("accept: %s", strerror(err));
            }
            return;
        }
        pid_t pid;
        if (!peer_allowed(s, fd, &pid)) {
            close(fd);
            continue;
        }
        if (s->conns.n_clients >= s->conns.max_clients) {
            struct mini_err e;
            mini_err_set(&e, MINI_E_BUSY, "the daemon serves %zu connections, the most it may", s->conns.max_clients);
            refuse(fd, &e);
            continue;
        }
        if (client_add(s, fd) == 0)
            s->conns.clients->pid = pid;
    }
}

/* The open-files soft limit goes up to the hard one: fds are what every
 * connection, session and command costs.  Returns the limit in force. */
static rlim_t raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur >= rl.rlim_max)
        return rl.rlim_cur;
    rlim_t want = rl.rlim_max;
    if (want == RLIM_INFINITY) {
        /* The kernel takes no more than fs.nr_open. */
        want = 1u << 20;
        FILE *f = fopen("/proc/sys/fs/nr_open", "re");
        unsigned long long n;
        if (f && fscanf(f, "%llu", &n) == 1 && n > 0)
            want = (rlim_t)n;
        if (f)
            fclose(f);
    }
    struct rlimit up = { .rlim_cur = want, .rlim_max = rl.rlim_max };
    if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
        log_warn("raising the open-files limit from %llu to %llu: %s", (unsigned long long)rl.rlim_cur,
                 (unsigned long long)want, strerror(errno));
        return rl.rlim_cur;
    }
    log_info("open-files limit raised from %llu to %llu", (unsigned long long)rl.rlim_cur, (unsigned long long)want);
    return want;
}

static size_t default_max_clients(rlim_t nofile)
{
    if (nofile <= FD_RESERVE + FDS_PER_CLIENT)
        return 1;
    rlim_t n = (nofile - FD_RESERVE) / FDS_PER_CLIENT;
    return n > MAX_CLIENTS ? MAX_CLIENTS : (size_t)n;
}

/* ------------------------------------------------------------ the loop */

static int listen_on(struct server *s, const char *path, struct mini_err *e)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return mini_err_set(e, MINI_E_IO, "socket path %s: too long", path);
    strcpy(sa.sun_path, path);
    s->conns.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->conns.lfd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "socket");
    /* A socket file left by a dead daemon is replaced; a live one is not. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(probe);
        return mini_err_set(e, MINI_E_BUSY, "%s: another daemon is listening there", path);
    }
    mini_close(probe);
    unlink(path);
    mode_t old = umask(0177);
    int r = bind(s->conns.lfd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "binding %s", path);
    if (listen(s->conns.lfd, 128) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "listening on %s", path);
    return 0;
}

static void bury(struct server *s)
{
    while (s->dead_execs) {
        struct exec *x = s->dead_execs;
        s->dead_execs = x->next;
        exec_free(x);
    }
    pool_free_buried(&s->pool);
    proxy_bury(s);
    while (s->conns.dead_clients) {
        struct client *c = s->conns.dead_clients;
        s->conns.dead_clients = c->next;
        mini_frame_reader_free(&c->rd);
        mini_buf_free(&c->wq);
        free(c);
    }
}

static bool ev_dead(const struct ev *ev)
{
    switch (ev->kind) {
    case EV_CLIENT: return ((const struct client *)ev->obj)->dead;
    case EV_CTL:
    case EV_OUT:
    case EV_PID:
    case EV_TIMER:
    case EV_DISK:
    case EV_STDIN: return ((const struct exec *)ev->obj)->dead;
    case EV_POOL_CTL:
    case EV_POOL_PID: return ((const struct pooled *)ev->obj)->dead;
    case EV_HOLDER: return ((const struct helper *)ev->obj)->h.pid == 0;
    case EV_PROXY_LISTEN:
    case EV_PROXY_CLIENT:
    case EV_PROXY_UP: return proxy_ev_dead(ev);
    default: return false;
    }
}

static void handle(struct server *s, struct ev *ev, uint32_t events)
{
    if (ev_dead(ev))
        return;
    switch (ev->kind) {
    case EV_LISTEN: accept_clients(s); break;
    case EV_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(s->sfd, &si, sizeof si) == sizeof si) {
            log_info("signal %u: stopping", si.ssi_signo);
            s->stopping = true;
        }
        break;
    }
    case EV_CLIENT: {
        struct client *c = ev->obj;
        if ((events & EPOLLOUT) || c->closing) {
            client_flush(s, c);
            if (c->closing && wq_pending(c) == 0) {
                client_close(s, c);
                break;
            }
        }
        if (!c->closing && !c->read_paused && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            client_readable(s, c);
        else if (!c->closing && (events & (EPOLLHUP | EPOLLERR)))
            client_close(s, c);
        break;
    }
    case EV_CTL: exec_drain_ctl(s, ev->obj); break;
    case EV_OUT: exec_read_out(s, ev->obj); break;
    case EV_PID: exec_reap(s, ev->obj); break;
    case EV_TIMER: exec_timer(s, ev->obj); break;
    case EV_DISK: disk_tick(s, ev->obj); break;
    case EV_MEASURE: disk_measured(s, ev->obj); break;
    case EV_MOUNTS: roott_changed(&s->roott); break;
    case EV_HOLDER: helper_reaped(ev->obj); break;
    case EV_STDIN: exec_write_stdin(s, ev->obj); break;
    case EV_POOL_CTL:
    case EV_POOL_PID: session_pool_event(s, ev->obj, ev->kind == EV_POOL_PID); break;
    case EV_PROXY_LISTEN:
    case EV_PROXY_CLIENT:
    case EV_PROXY_UP:
    case EV_PROXY_DNS:
    case EV_PROXY_TICK: proxy_event(s, ev, events); break;
    }
}

/* Shutdown: the replies owed (each running command's exit) reach their
 * clients before the connections close, within a bound. */
static void flush_clients(struct server *s)
{
    int64_t deadline = mini_mono_ns() + 2000000000LL;
    for (struct client *c = s->conns.clients; c; c = c->next)
        while (!c->closing && wq_pending(c) > 0 && mini_mono_ns() < deadline) {
            struct pollfd p = { .fd = c->fd, .events = POLLOUT };
            if (poll(&p, 1, 100) < 0 && errno != EINTR)
                break;
            client_flush(s, c);
        }
}

static void server_free(struct server *s)
{
    kill_all(s);
    flush_clients(s);
    while (s->conns.clients)
        client_close(s, s->conns.clients);
    session_unpark(s);
    pool_reap_closing(&s->pool);
    disk_fini(s);
    bury(s);
    proxy_fini(s);
    mini_cgroups_fini(&s->host.cgroups);
    statedir_fini(&s->statedir);
    idmap_fini(&s->idmap);
    helper_fini(&s->helpers);
    mini_ws_guard_free(&s->guard);
    mini_uid_range_free(&s->uids);
    seccache_fini(&s->seccache);
    /* A passed socket is its owner's (systemd listens on it again). */
    if (s->conns.lfd >= 0 && s->cfg->socket_path && s->cfg->listen_fd < 0)
        unlink(s->cfg->socket_path);
    mini_close(s->conns.lfd);
    mini_close(s->sfd);
    mini_close(s->ep);
    mini_close(s->host.init_fd);
    roott_fini(&s->roott);
    mini_close(s->conns.spare_fd);
    if (s->audit)
        fclose(s->audit);
}

int mini_server_run(const struct mini_server_cfg *cfg, struct mini_err *e)
{
    struct server s = { .cfg = cfg,
                        .ep = -1,
                        .sfd = -1,
                        .conns = { .lfd = -1, .spare_fd = -1, .ev_listen = { EV_LISTEN, NULL } },
                        .host = { .init_fd = -1 },
                        .start_ns = mini_mono_ns(),
                        .statedir = { .sessions_lock = -1, .tmp_lock = -1 } };
    /* The caches, each on unless --caches=off (docs/sandbox-lifecycle.md),
     * wired to the sessions and the loop. */
    bool caches = !cfg->caches_off;
    s.ep = epoll_create1(EPOLL_CLOEXEC);
    int ep_errno = errno;
    roott_init(&s.roott, caches, &s.helpers);
    sessions_init(&s, caches);
    struct ev ev_sig = { EV_SIGNAL, NULL };
    int rc = -1;
    struct stat st;
    rlim_t nofile = raise_nofile();
    s.conns.max_clients = cfg->max_clients > 0 ? (size_t)cfg->max_clients : default_max_clients(nofile);
    s.conns.frame_timeout_ns = (int64_t)((cfg->frame_timeout_s > 0 ? cfg->frame_timeout_s : FRAME_TIMEOUT_S) * 1e9);
    log_info("open-files limit %llu: at most %zu connections; a partial frame may wait %g s",
             (unsigned long long)nofile, s.conns.max_clients, (double)s.conns.frame_timeout_ns / 1e9);
    if (stat("/proc/self/ns/user", &st) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "/proc/self/ns/user");
        goto out;
    }
    s.host.userns = st.st_ino;
    /* MINI_SANDBOX_TIMING: the start-up's steps, logged once the loop runs. */
    struct {
        int64_t init, caps, cgroups, ids, loop;
    } ts = { 0 };
    if ((s.host.init_fd = mini_sandbox_open_init(e)) < 0)
        goto out;
    MINI_SB_MARK(&ts, init);
    /* What this machine can isolate, and per-command cgroups where the
     * daemon may create them; the probe is corrected to what was set up so
     * that no reply promises more than the commands get. */
    bool cached;
    if (mini_caps_detect_cached(&s.host.caps, cfg->caps_cache_dir, &cached, e) < 0)
        goto out;
    MINI_SB_MARK(&ts, caps);
    log_info("capabilities: %s%s", cached ? "the probes' results cached in " : "probed",
             cached ? cfg->caps_cache_dir : "");
    struct mini_err cge;
    if (mini_cgroups_init_limits(&s.host.cgroups, &s.host.caps, &cge) < 0) {
        log_warn("cgroups: %s; limits fall back to rlimits", cge.msg);
        /* The cache called them writable: the next start tests again. */
        if (cached)
            mini_caps_cache_forget(cfg->caps_cache_dir);
    }
    mini_cgroups_update_caps(&s.host.cgroups, &s.host.caps);
    MINI_SB_MARK(&ts, cgroups);
    log_info("cgroups: %s", s.host.cgroups.note);
    if (statedir_init(&s.statedir, cfg->state_dir, e) < 0)
        goto out;
    char *sockdir = cfg->socket_path ? strdup(cfg->socket_path) : NULL;
    char *slash = sockdir ? strrchr(sockdir, '/') : NULL;
    if (slash)
        slash[slash == sockdir] = '\0';
    int gr = mini_ws_guard_init(&s.guard, slash ? sockdir : NULL, cfg->state_dir, e);
    free(sockdir);
    if (gr < 0 || (geteuid() == 0 && mini_uid_range_init(&s.uids, e) < 0))
        goto out;
    MINI_SB_MARK(&ts, ids);
    /* A private daemon sweeps once it has handled what its client queued
     * before it started (hello and open: the open's sandbox is then being
     * prepared meanwhile); a listening one before it listens. */
    if (cfg->inherit_fd < 0)
        statedir_sweep(&s.statedir);
    if (cfg->audit_log) {
        /* Never through a link, nor into a file not ours alone: the path
         * may lie where sandboxed commands write. */
        int afd = mini_open_append_log(cfg->audit_log, 0644, e);
        if (afd < 0 || !(s.audit = fdopen(afd, "a"))) {
            if (afd >= 0)
                mini_err_sys(e, MINI_E_IO, errno, "%s", cfg->audit_log);
            mini_close(afd);
            mini_err_prefix(e, "the audit log");
            goto out;
        }
    }
    /* Kept for the moment the fds run out (accept_clients). */
    s.conns.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    mini_sandbox_note_signals();
    s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s.ep < 0) {
        mini_err_sys(e, MINI_E_IO, ep_errno, "setting up the event loop (epoll)");
        goto out;
    }
    if (s.sfd < 0 || ep_add(&s, s.sfd, EPOLLIN, &ev_sig) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "setting up the event loop (the signalfd)");
        goto out;
    }
    roott_watch(&s.roott, s.ep);
    if (proxy_init(&s, e) < 0)
        goto out;
    if (cfg->inherit_fd >= 0) {
        if (client_add(&s, cfg->inherit_fd) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "serving fd %d", cfg->inherit_fd);
            goto out;
        }
    } else {
        if (cfg->listen_fd >= 0)
            s.conns.lfd = cfg->listen_fd;
        else if (listen_on(&s, cfg->socket_path, e) < 0)
            goto out;
        if (ep_add(&s, s.conns.lfd, EPOLLIN, &s.conns.ev_listen) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "watching %s", cfg->socket_path);
            goto out;
        }
        log_info("%s %s", cfg->listen_fd >= 0 ? "serving the socket passed by LISTEN_FDS:" : "listening on",
                 cfg->socket_path);
        if (cfg->ready_fd > 0) {
            mini_write_all(cfg->ready_fd, "1", 1);
            close(cfg->ready_fd);
        }
    }
    MINI_SB_MARK(&ts, loop);
    if (mini_sb_timing)
        log_info("timing: start %.3f ms [main to the server %.3f, init's fd %.3f, capabilities (%s) %.3f, "
                 "cgroups %.3f, workspace guard and uids %.3f, the rest to the event loop %.3f]",
                 span_ms(cfg->main_ns, ts.loop), span_ms(cfg->main_ns, s.start_ns), span_ms(s.start_ns, ts.init),
                 cached ? "cached" : "probed", span_ms(ts.init, ts.caps), span_ms(ts.caps, ts.cgroups),
                 span_ms(ts.cgroups, ts.ids), span_ms(ts.ids, ts.loop));
    while (!s.stopping) {
        struct epoll_event evs[64];
        int t = expire_partial_frames(&s); /* first: it may close clients */
        t = sooner(sooner(t, session_park_timeout(&s)), roott_timeout(&s.roott));
        int n = epoll_wait(s.ep, evs, 64, s.statedir.sweep_pending ? 0 : t);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            mini_err_sys(e, MINI_E_IO, errno, "epoll_wait");
            goto out;
        }
        for (int i = 0; i < n; i++)
            handle(&s, evs[i].data.ptr, evs[i].events);
        if (roott_timeout(&s.roott) == 0)
            sessions_hash_mounts(&s);
        /* Objects finished in this batch may still have had events in it. */
        bury(&s);
        statedir_sweep(&s.statedir);
    }
    rc = 0;
out:
    server_free(&s);
    return rc;
}
