#include "mini/client.h"
#include "mini/path.h"
#include "mini/cleanup.h"
#include "mini/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

char *mini_runtime_dir(struct mini_err *e)
{
    char *dir = NULL;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int r = (xdg && *xdg) ? asprintf(&dir, "%s/mini", xdg) : asprintf(&dir, "/tmp/mini-%u", (unsigned)geteuid());
    if (r < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        mini_err_sys(e, MINI_E_IO, errno, "creating %s", dir);
        free(dir);
        return NULL;
    }
    /* Someone else's directory (a squatter in /tmp) is never used. */
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        mini_err_set(e, MINI_E_IO, "%s: must be a directory owned by uid %u with mode 0700", dir, (unsigned)geteuid());
        free(dir);
        return NULL;
    }
    return dir;
}

char *mini_default_socket(struct mini_err *e)
{
    _cleanup_free_ char *dir = mini_runtime_dir(e);
    char *path;
    if (!dir)
        return NULL;
    if (asprintf(&path, "%s/sandboxd.sock", dir) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    return path;
}

char *mini_client_abspath(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    char *out;
    if (!cwd || asprintf(&out, "%s/%s", strcmp(cwd, "/") ? cwd : "", path) < 0)
        return NULL;
    return out;
}

/* The mini-sandboxd program: $MINI_SANDBOXD, else beside this program,
 * else "mini-sandboxd" (PATH). */
static char *mini_sandboxd_path(void)
{
    const char *env = getenv("MINI_SANDBOXD");
    if (env && *env)
        return strdup(env);
    char *p = mini_exe_sibling("mini-sandboxd");
    if (p && access(p, X_OK) == 0)
        return p;
    free(p);
    return strdup("mini-sandboxd");
}

static int connect_path(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        mini_close(fd);
        return -1;
    }
    return fd;
}

/* The variables a private daemon keeps; everything else (API keys above
 * all) stays with the client.  The image store's (XDG_DATA_HOME,
 * MINI_IMAGE_STORE) so that it finds the images the client's user
 * imported (docs/images.md); MINI_SANDBOX_TIMING so that its per-step
 * timers print on the client's stderr (docs/performance.md, "Per-step
 * timers"), and MINI_SANDBOXD_CACHES so that a test run can turn its
 * caches off (docs/sandbox-lifecycle.md). */
static const char *const daemon_env[] = { "PATH",
                                          "HOME",
                                          "LANG",
                                          "XDG_RUNTIME_DIR",
                                          "MINI_PROFILE_DIR",
                                          "XDG_DATA_HOME",
                                          "MINI_IMAGE_STORE",
                                          "MINI_SANDBOX_TIMING",
                                          "MINI_SANDBOXD_CACHES",
                                          NULL };

/* The child's side of spawn_daemon, under vfork: it shares the client's
 * memory until it executes, so it only makes system calls (no allocation,
 * no stdio) and never returns.  Every signal is blocked since before the
 * vfork, so that none of the client's handlers runs here, in its memory;
 * those it catches go back to their defaults before the client's mask
 * (`mask`) does. */
static __attribute__((noreturn, noinline)) void exec_daemon(const char *prog, char **argv, char **envp, int keep_fd,
                                                            pid_t parent, const sigset_t *mask)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
            signal(sig, SIG_DFL);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    if (keep_fd >= 0)
        mini_set_cloexec(keep_fd, 0);
    /* Nothing to read, nothing to print but its errors (stderr). */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    execve(prog, argv, envp);
    if (!strchr(prog, '/'))
        execvpe(prog, argv, envp);
    const char *why = strerror(errno);
    struct iovec v[5] = { { "mini-sandbox: starting ", 23 },
                          { (void *)prog, strlen(prog) },
                          { ": ", 2 },
                          { (void *)why, strlen(why) },
                          { "\n", 1 } };
    (void)!writev(2, v, 5);
    _exit(127);
}

/* vfork in a frame of its own, which holds nothing the child could
 * clobber.  The child's pid, or -1 with errno. */
static __attribute__((noinline)) pid_t vfork_daemon(const char *prog, char **argv, char **envp, int keep_fd)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t parent = getpid();
    pid_t pid = vfork();
    if (pid == 0)
        exec_daemon(prog, argv, envp, keep_fd, parent, &old);
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return pid;
}

/* Start mini-sandboxd with argv[1..] (argv[0] is filled in here), in a
 * session of its own (a Ctrl-C typed at the client's terminal goes to the
 * terminal's foreground process group, which is the client's to handle),
 * dying with this process, with stdin and stdout on /dev/null and only
 * daemon_env.  keep_fd stays open in it (-1: none).  Its pid, or -1.
 * vfork, not fork: the client waits for this daemon anyway, and a fork
 * would copy its page tables (and then fault on every page it writes) for
 * a child that only executes. */
static pid_t spawn_daemon(char **argv, int keep_fd, struct mini_err *e)
{
    _cleanup_free_ char *prog = mini_sandboxd_path();
    char *envp[MINI_ARRAY_SIZE(daemon_env)];
    char *envbuf[MINI_ARRAY_SIZE(daemon_env)] = { 0 };
    size_t k = 0;
    for (size_t i = 0; daemon_env[i]; i++) {
        const char *v = getenv(daemon_env[i]);
        if (v && asprintf(&envbuf[k], "%s=%s", daemon_env[i], v) >= 0)
            envp[k] = envbuf[k], k++;
    }
    envp[k] = NULL;
    argv[0] = prog;
    pid_t pid = prog ? vfork_daemon(prog, argv, envp, keep_fd) : -1;
    int err = prog ? errno : ENOMEM;
    for (size_t i = 0; i < k; i++)
        free(envbuf[i]);
    if (pid < 0)
        mini_err_sys(e, MINI_E_IO, err, "starting mini-sandboxd");
    return pid;
}

static int start_private(struct mini_client *c, struct mini_err *e)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "socketpair");
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
    char *argv[] = { NULL, "--inherit-fd", fdarg, "--foreground", NULL };
    pid_t pid = spawn_daemon(argv, sv[1], e);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return -1;
    }
    c->fd = sv[0];
    c->private_daemon = pid;
    return 0;
}

pid_t mini_client_start_daemon(const char *socket_path, struct mini_err *e)
{
    char *argv[] = { NULL, "--socket", (char *)socket_path, "--foreground", NULL };
    pid_t pid = spawn_daemon(argv, -1, e);
    if (pid < 0)
        return -1;
    /* Listening once a connection is taken; at most 10 s. */
    for (int i = 0; i < 1000; i++) {
        int fd = connect_path(socket_path);
        if (fd >= 0) {
            close(fd);
            return pid;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            mini_err_set(e, MINI_E_IO, "mini-sandboxd on %s exited (status %d) before listening", socket_path,
                         WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            return -1;
        }
        usleep(10000);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    mini_err_set(e, MINI_E_IO, "mini-sandboxd on %s did not listen within 10 s", socket_path);
    return -1;
}

void mini_client_close(struct mini_client *c)
{
    mini_close(c->fd);
    c->fd = -1;
    if (c->private_daemon > 0) {
        while (waitpid(c->private_daemon, NULL, 0) < 0 && errno == EINTR)
            ;
        c->private_daemon = 0;
    }
    free(c->hello.server);
    cJSON_Delete(c->hello.features);
    c->hello.server = NULL;
    c->hello.features = NULL;
    mini_frame_reader_free(&c->rd);
}

static int recv_rep(struct mini_client *c, struct mini_rep *rep, struct mini_err *e)
{
    cJSON *obj = NULL;
    int r = mini_frame_recv_json(c->fd, &c->rd, &obj, e);
    if (r == 0)
        return mini_err_set(e, MINI_E_IO, "mini-sandboxd closed the connection");
    if (r < 0)
        return -1;
    r = mini_rep_from_json(obj, rep, e);
    cJSON_Delete(obj);
    return r;
}

static int send_req(struct mini_client *c, struct mini_req *req, struct mini_err *e)
{
    req->id = c->next_id++;
    cJSON *obj = mini_req_to_json(req);
    if (!obj)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int r = mini_frame_send_json(c->fd, obj, e);
    cJSON_Delete(obj);
    return r;
}

static int error_reply(struct mini_rep *rep, struct mini_err *e)
{
    mini_err_set(e, rep->u.error.code, "%s", rep->u.error.message ? rep->u.error.message : "");
    mini_rep_free(rep);
    return -1;
}

int mini_client_call(struct mini_client *c, struct mini_req *req, struct mini_rep *rep, struct mini_err *e)
{
    if (send_req(c, req, e) < 0 || recv_rep(c, rep, e) < 0)
        return -1;
    if (rep->id != req->id) {
        mini_rep_free(rep);
        return mini_err_set(e, MINI_E_BAD_REQUEST, "reply for id %lld while waiting for %lld", (long long)rep->id,
                            (long long)req->id);
    }
    return rep->op == MINI_OP_ERROR ? error_reply(rep, e) : 0;
}

int mini_client_connect(struct mini_client *c, const char *socket_path, bool allow_private, struct mini_err *e)
{
    return mini_client_connect_with(c, socket_path, allow_private, NULL, NULL, e);
}

int mini_client_connect_with(struct mini_client *c, const char *socket_path, bool allow_private, struct mini_req *first,
                             struct mini_rep *first_rep, struct mini_err *e)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->next_id = 1;
    mini_frame_reader_init(&c->rd);
    _cleanup_free_ char *def = NULL;
    if (!socket_path) {
        struct mini_err ignored;
        def = mini_default_socket(&ignored);
        socket_path = def;
    }
    if (socket_path)
        c->fd = connect_path(socket_path);
    /* Root's shared daemon may be the system-wide one (socket activation,
     * packaging/systemd/system/mini-sandboxd.socket). */
    if (c->fd < 0 && def && geteuid() == 0)
        c->fd = connect_path(MINI_SYSTEM_SOCKET);
    if (c->fd < 0) {
        int err = errno;
        if (!allow_private)
            return mini_err_sys(e, MINI_E_IO, err, "connecting to %s", socket_path ? socket_path : "(no socket)");
        if (start_private(c, e) < 0)
            return -1;
    }
    struct mini_req req = { .op = MINI_OP_HELLO };
    req.u.hello.version = MINI_PROTO_VERSION;
    req.u.hello.client = "mini " MINI_VERSION;
    /* hello, and `first` behind it without waiting; their replies may
     * come in either order (docs/protocol.md, "Pipelining"). */
    struct mini_rep reps[2];
    unsigned have = 0; /* bit k: reps[k] holds a reply (0: hello's, 1: first's) */
    int n = first ? 2 : 1;
    int rc = send_req(c, &req, e) < 0 || (first && send_req(c, first, e) < 0) ? -1 : 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        struct mini_rep r;
        if (recv_rep(c, &r, e) < 0) {
            rc = -1;
            break;
        }
        int k = r.id == req.id ? 0 : first && r.id == first->id ? 1 : -1;
        if (k < 0 || (have & (1u << k))) {
            rc = mini_err_set(e, MINI_E_BAD_REQUEST, "unexpected reply id %lld", (long long)r.id);
            mini_rep_free(&r);
            break;
        }
        reps[k] = r;
        have |= 1u << k;
    }
    /* An `error` reply, the hello's first: it would explain the other's. */
    for (int k = 0; rc == 0 && k < n; k++)
        if (reps[k].op == MINI_OP_ERROR) {
            rc = error_reply(&reps[k], e);
            have &= ~(1u << k);
        }
    if (rc < 0) {
        if (!(have & 1u)) /* the hello failed, or got no reply */
            mini_err_prefix(e, "greeting mini-sandboxd");
        for (int k = 0; k < 2; k++)
            if (have & (1u << k))
                mini_rep_free(&reps[k]);
        mini_client_close(c);
        return -1;
    }
    c->hello = reps[0].u.hello; /* keeps the reply's allocations */
    if (first)
        *first_rep = reps[1];
    return 0;
}

/* Wait until a frame is buffered or the socket is readable, sending a
 * cancel for `target` once *c->cancel is set. */
static int wait_readable(struct mini_client *c, int64_t target, bool *cancelled, struct mini_err *e)
{
    if (!c->cancel)
        return 0;
    for (;;) {
        if (*c->cancel && !*cancelled) {
            struct mini_req req = { .op = MINI_OP_CANCEL };
            req.u.cancel.target = target;
            if (send_req(c, &req, e) < 0)
                return -1;
            *cancelled = true;
        }
        /* A whole frame may already be buffered from an earlier read. */
        if (c->rd.in.len > c->rd.consumed)
            return 0;
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        int r = poll(&p, 1, 100);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return mini_err_sys(e, MINI_E_IO, errno, "poll");
    }
}

int mini_client_exec(struct mini_client *c, struct mini_req_exec *x, mini_output_fn fn, void *arg,
                     struct mini_rep *exit, struct mini_err *e)
{
    struct mini_req req = { .op = MINI_OP_EXEC };
    x->stream = fn != NULL;
    req.u.exec = *x;
    bool cancelled = false;
    if (send_req(c, &req, e) < 0)
        return -1;
    for (;;) {
        struct mini_rep rep;
        if (wait_readable(c, req.id, &cancelled, e) < 0 || recv_rep(c, &rep, e) < 0)
            return -1;
        if (rep.id != req.id) {
            /* The reply to our own cancel. */
            bool ours = cancelled && (rep.op == MINI_OP_OK || rep.op == MINI_OP_ERROR);
            mini_rep_free(&rep);
            if (ours)
                continue;
            return mini_err_set(e, MINI_E_BAD_REQUEST, "unexpected reply id %lld", (long long)rep.id);
        }
        switch (rep.op) {
        case MINI_OP_OUTPUT:
            if (fn)
                fn(arg, rep.u.output.data, rep.u.output.len);
            mini_rep_free(&rep);
            break;
        case MINI_OP_EXIT: *exit = rep; return 0;
        case MINI_OP_ERROR: return error_reply(&rep, e);
        default:
            mini_rep_free(&rep);
            return mini_err_set(e, MINI_E_BAD_REQUEST, "unexpected \"%s\" reply to exec", mini_op_name(rep.op));
        }
    }
}
