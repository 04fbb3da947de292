/* The sandbox's first process, from the clone that makes it (spawn.c) to
 * the exec of mini-sandbox-init (init.c).  Everything here runs in the
 * cloned child only, before any command exists.
 *
 * Each path is a table of contents: one line per step, each step a small
 * function that either succeeds or ends the child.  A failure after the
 * control socket is in place reaches the daemon as MINI_CTL_ERROR (a
 * struct mini_err's text and errno, no allocation); before that, or when
 * the daemon is gone, the child exits 125 without a message. */
#include "child.h"
#include "rootfs.h"
#include "mini/cleanup.h"
#include "mini/io.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <unistd.h>

/* Per-user inotify counters inside the sandbox's user namespace (see
 * lower_user_quotas). */
#define MINI_QUOTA_INOTIFY_INSTANCES "16"
#define MINI_QUOTA_INOTIFY_WATCHES "16384"

/* What the steps share.  The fds are the child's own, -1 when unused. */
struct child {
    const struct mini_spawn_cfg *cfg;
    const char *overlay_work;    /* this sandbox's overlayfs work dir, relative to cfg->overlay_dir */
    int ctl, out, in;            /* the daemon's channels, as cloned (moved to MINI_FD_* by take_fds) */
    int cg_fds[MINI_GO_FDS_MAX]; /* the command's v1 `tasks` files, from "go" */
    size_t n_cg;
    int ws_mount;        /* the idmapped workspace that came with "go" */
    int ws_fd;           /* the workspace looked up again in this mount namespace */
    int overlay_fd;      /* cfg->overlay_dir */
    int root_fd;         /* the new root, from mini_rootfs_base() */
    int image_fd;        /* cfg->image_root, or its idmapped clone that came with "go" */
    int template_fd;     /* the session's template of the root, from "go", or -1 */
    bool image_detached; /* image_fd is that clone (a detached mount) */
    /* MINI_SANDBOX_TIMING: the steps' times, sent before exec_init */
    struct mini_child_times t;
    struct mini_err e;
};

/* The step times to the daemon (its timing line), under MINI_SANDBOX_TIMING. */
static void send_times(struct child *c)
{
    if (!mini_sb_timing)
        return;
    struct mini_ctl_msg m = { .type = MINI_CTL_TIMES };
    memcpy(m.text, &c->t, sizeof c->t);
    if (mini_write_all(MINI_FD_CTL, &m, sizeof m) < 0)
        _exit(125); /* the daemon is gone */
}

/* ------------------------------------------------------------- failing */

static __attribute__((noreturn)) void fail(struct child *c)
{
    struct mini_ctl_msg m = { .type = MINI_CTL_ERROR, .err = c->e.sys_errno };
    size_t n = strnlen(c->e.msg, sizeof m.text - 1);
    memcpy(m.text, c->e.msg, n);
    mini_write_all(MINI_FD_CTL, &m, sizeof m);
    _exit(125);
}

static __attribute__((noreturn, format(printf, 3, 4))) void fail_sys(struct child *c, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char what[sizeof c->e.msg];
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    mini_err_sys(&c->e, MINI_E_SPAWN_FAILED, err, "%s", what);
    fail(c);
}

/* ----------------------------------------------------------- the steps */

/* Move this process into its command's v1 cgroup: one `tasks` file per
 * hierarchy, opened by the daemon and sent with "go"; "0" is the calling
 * thread, and this process has no other (see mini_cgroup_open_procs).
 * Done before the root is built, so that everything the sandbox does from
 * then on is limited and accounted; the namespaces made before it are
 * charged to the daemon's group.  (On v2 the clone was born in it.) */
static void join_cgroup(struct child *c)
{
    for (size_t i = 0; i < c->n_cg; i++) {
        if (write(c->cg_fds[i], "0\n", 2) != 2)
            fail_sys(c, errno ? errno : EIO, "joining the command's cgroup");
        close(c->cg_fds[i]);
    }
    c->n_cg = 0;
}

/* Put the fds the child needs at 3..7 and close every other one: the
 * daemon's client sockets and other sandboxes' pipes must never reach a
 * sandbox.  ctl, out and in survive the exec of init; the rest do not. */
static int place_fds(int ctl, int out, int in, int ws, int init)
{
    /* Copies at MINI_FD_COUNT or above first, so that placing them cannot
     * clobber one another; then everything from MINI_FD_COUNT up goes. */
    int want[5] = { ctl, out, in, ws, init };
    int high[5];
    for (int i = 0; i < 5; i++)
        if ((high[i] = fcntl(want[i], F_DUPFD_CLOEXEC, MINI_FD_COUNT)) < 0)
            return -1;
    for (int i = 0; i < 5; i++)
        if (dup3(high[i], MINI_FD_CTL + i, MINI_FD_CTL + i >= MINI_FD_WS ? O_CLOEXEC : 0) < 0)
            return -1;
    /* The daemon's stdio (a log file, a user's terminal) is none of the
     * sandbox's business; the command's own comes from launch. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
        return -1;
    return close_range(MINI_FD_COUNT, ~0u, 0);
}

static void take_fds(struct child *c)
{
    if (place_fds(c->ctl, c->out, c->in, c->cfg->workspace_fd, c->cfg->init_fd) < 0) {
        /* fds are in an unknown state: the daemon sees ctl close and an
         * exit status of 125 without a message. */
        _exit(125);
    }
}

static unsigned long unshare_flags(unsigned namespaces)
{
    static const struct {
        unsigned feat;
        unsigned long flag;
    } map[] = {
        { MINI_FEAT_NET_NS, CLONE_NEWNET },
        { MINI_FEAT_IPC_NS, CLONE_NEWIPC },
        { MINI_FEAT_UTS_NS, CLONE_NEWUTS },
    };
    unsigned long f = 0;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(map); i++)
        if (namespaces & map[i].feat)
            f |= map[i].flag;
    /* The root filesystem is not optional. */
    return f | CLONE_NEWNS;
}

/* The namespaces beyond user and pid are created here, in the sandbox's
 * own process and while the daemon writes the id maps and makes the
 * command's cgroup, not inside the daemon's clone, where they would hold
 * up every other client (the network namespace alone costs most of a
 * millisecond of CPU on a small machine).  They are owned by the
 * sandbox's user namespace either way. */
static void unshare_namespaces(struct child *c)
{
    if (unshare((int)unshare_flags(c->cfg->namespaces)) < 0)
        fail_sys(c, errno, "creating the namespaces");
}

/* The cgroup namespace, once the command's cgroup is joined, so that it is
 * rooted there: the sandbox sees its own group as "/". */
static void unshare_cgroup_namespace(struct child *c)
{
    if ((c->cfg->namespaces & MINI_FEAT_CGROUP_NS) && unshare(CLONE_NEWCGROUP) < 0)
        fail_sys(c, errno, "creating the cgroup namespace");
}

static int recv_go(struct child *ch)
{
    struct mini_go_msg go;
    char cbuf[CMSG_SPACE(MINI_GO_FDS_MAX * sizeof(int))];
    struct iovec iov = { &go, sizeof go };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
    ssize_t n;
    do
        n = recvmsg(MINI_FD_CTL, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n != sizeof go || go.type != MINI_MSG_GO || go.n_cgroup > MINI_GO_FDS_MAX - MINI_GO_FDS_OPTIONAL ||
        (mh.msg_flags & MSG_CTRUNC))
        return -1;
    int fds[MINI_GO_FDS_MAX];
    size_t nfd = 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (nfd > MINI_GO_FDS_MAX)
            return -1;
        memcpy(fds, CMSG_DATA(c), nfd * sizeof(int));
    }
    /* Exactly what the message announces: a cgroup left out would be a
     * hierarchy the command is not limited by. */
    if (nfd != (go.has_fd ? 1u : 0u) + (go.has_image ? 1u : 0u) + (go.has_template ? 1u : 0u) + go.n_cgroup)
        return -1;
    size_t k = 0;
    ch->ws_mount = go.has_fd ? fds[k++] : -1;
    ch->image_fd = go.has_image ? fds[k++] : -1;
    ch->template_fd = go.has_template ? fds[k++] : -1;
    for (size_t i = 0; i < go.n_cgroup; i++)
        ch->cg_fds[i] = fds[k++];
    ch->n_cg = go.n_cgroup;
    return 0;
}

/* The daemon's "go": the id maps are written (and an idmapped workspace
 * may come with it).  No go means the daemon went away. */
static void wait_for_go(struct child *c)
{
    if (recv_go(c) < 0)
        _exit(125);
}

/* The new root's tmpfs, and what will be mounted in it: the workspace and
 * the session's overlay directory.  The daemon's workspace fd belongs to
 * its mount namespace, which cannot be a bind source here: the path is
 * looked up again in our copy of it, and must still be the same
 * directory. */
static void build_root(struct child *c)
{
    const struct mini_spawn_cfg *cfg = c->cfg;
    if ((c->root_fd = mini_rootfs_base(cfg->root_dir, cfg->profile, cfg->image_root != NULL, cfg->inner_uid,
                                       cfg->inner_gid, c->template_fd, &c->e)) < 0)
        fail(c);
    if (c->ws_mount < 0) {
        struct stat a, b;
        c->ws_fd = open(cfg->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c->ws_fd < 0 || fstat(c->ws_fd, &a) < 0 || fstat(MINI_FD_WS, &b) < 0)
            fail_sys(c, errno, "opening the workspace %s", cfg->workspace);
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
            mini_err_set(&c->e, MINI_E_SPAWN_FAILED, "the workspace %s was replaced since the session opened",
                         cfg->workspace);
            fail(c);
        }
    }
    if (cfg->overlay_dir && (c->overlay_fd = open(cfg->overlay_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        fail_sys(c, errno, "opening %s", cfg->overlay_dir);
    /* The image's tree, opened with the daemon's credentials (a root
     * daemon's store is private to root). */
    c->image_detached = c->image_fd >= 0;
    if (cfg->image_root && c->image_fd < 0 &&
        (c->image_fd = open(cfg->image_root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        fail_sys(c, errno, "opening the image %s", cfg->image_root);
}

/* Become the new namespace's only ids (0, or an image's User), which are
 * the unprivileged host ids the daemon mapped (a root daemon's credentials
 * are not mapped at all until then).  The capabilities the clone gave in
 * the namespace stay for the setup: with uid 0 unmapped there is no "root"
 * whose loss would clear them; confine() drops them all.  A root daemon leaves setgroups allowed so that its
 * supplementary groups can be dropped here; a rootless one cannot drop
 * them (the kernel denies setgroups), as with any unprivileged sandbox. */
static void become_namespace_root(struct child *c)
{
    uid_t u = c->cfg->inner_uid;
    gid_t g = c->cfg->inner_gid;
    if ((setgroups(0, NULL) < 0 && errno != EPERM) || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
        fail_sys(c, errno, "switching to the sandbox's ids");
}

/* Per-user kernel counters that the kernel also keeps per user namespace
 * (kernel/ucount.c: a charge must fit every level's limit): lowered in
 * the sandbox's own namespace, while it still holds CAP_SYS_RESOURCE
 * there, so that one sandbox cannot use up its host uid's share (with a
 * rootless daemon, the user's own).  /proc/sys/user resolves to the
 * opener's namespace.  Best effort: an old kernel may lack a file. */
static void lower_user_quotas(struct child *c)
{
    static const char *const quota[][2] = {
        { "max_inotify_instances", MINI_QUOTA_INOTIFY_INSTANCES },
        { "max_inotify_watches", MINI_QUOTA_INOTIFY_WATCHES },
        { "max_fanotify_groups", "0" },
        { "max_fanotify_marks", "0" },
    };
    /* The directory once: each lookup in /proc/sys is a walk of its
     * per-namespace tables. */
    _cleanup_close_ int dir = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(quota); i++) {
        int fd = openat(dir, quota[i][0], O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, quota[i][1], strlen(quota[i][1]));
            close(fd);
        }
    }
}

/* Die with the daemon.  Set only now: a change of credentials clears it.
 * The daemon may have died before: then ctl has hung up. */
static void die_with_daemon(struct child *c)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct pollfd hup = { .fd = MINI_FD_CTL, .events = POLLRDHUP };
    if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        _exit(125);
}

static void set_hostname(struct child *c)
{
    const char *name = c->cfg->profile->hostname;
    if ((c->cfg->namespaces & MINI_FEAT_UTS_NS) && name && sethostname(name, strlen(name)) < 0)
        fail_sys(c, errno, "sethostname");
}

static void bring_up_loopback(struct child *c)
{
    if ((c->cfg->namespaces & MINI_FEAT_NET_NS) && mini_net_loopback_up(&c->e) < 0)
        fail(c);
}

/* Network allowlist: the proxy's endpoint, 127.0.0.1:MINI_NET_PROXY_PORT
 * in this network namespace.  Bound here, where the namespace's owner has
 * the right to; a rootless daemon could not setns() into it.  The daemon
 * gets the listening socket over the control socket and accepts on it;
 * nothing in the sandbox keeps a copy, so no command can accept on it or
 * bind the port itself. */
static void open_proxy_listener(struct child *c)
{
    if (c->cfg->profile->network != MINI_NET_ALLOW || !(c->cfg->namespaces & MINI_FEAT_NET_NS))
        return;
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons(MINI_NET_PROXY_PORT),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 256) < 0)
        fail_sys(c, errno, "opening the network proxy's socket on 127.0.0.1:%d", MINI_NET_PROXY_PORT);
    struct mini_ctl_msg m = { .type = MINI_CTL_LISTENER };
    if (mini_send_fds(MINI_FD_CTL, &m, sizeof m, &fd, 1) < 0)
        _exit(125); /* the daemon is gone */
    close(fd);
}

/* Mount everything in the new root, pivot_root into it, detach the old
 * one (container/rootfs.c). */
static void enter_root(struct child *c)
{
    struct mini_rootfs_spec rs = {
        .profile = c->cfg->profile,
        .root_fd = c->root_fd,
        .overlay_fd = c->overlay_fd,
        .overlay_work = c->overlay_work,
        .workspace = c->cfg->workspace,
        .workspace_fd = c->ws_mount >= 0 ? c->ws_mount : c->ws_fd,
        .workspace_detached = c->ws_mount >= 0,
        .image_fd = c->image_fd,
        .image_detached = c->image_detached,
        .templated = c->template_fd >= 0,
    };
    if (mini_rootfs_enter(&rs, &c->e) < 0)
        fail(c);
}

/* The fds only setup needed: nothing of them may reach init. */
static void close_setup_fds(struct child *c)
{
    mini_close(c->ws_mount);
    mini_close(c->ws_fd);
    mini_close(c->overlay_fd);
    mini_close(c->root_fd);
    mini_close(c->image_fd);
    mini_close(c->template_fd);
    close(MINI_FD_WS);
    c->ws_mount = c->ws_fd = c->overlay_fd = c->root_fd = c->image_fd = c->template_fd = -1;
}

/* The degraded path: lead a new session (the command cannot leave its
 * process group: setsid and setpgid are denied), as a subreaper. */
static void lead_session(struct child *c)
{
    if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        fail_sys(c, errno, "setsid");
}

/* The degraded path under a root daemon: become the host ids chosen for
 * the session.  Bounding set first (that needs CAP_SETPCAP), then the
 * ids: the uid change clears every other capability. */
static void become_session_ids(struct child *c)
{
    if (geteuid() != 0)
        return;
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    const struct mini_spawn_cfg *cfg = c->cfg;
    if (setgroups(0, NULL) < 0 || setresgid(cfg->host_gid, cfg->host_gid, cfg->host_gid) < 0 ||
        setresuid(cfg->host_uid, cfg->host_uid, cfg->host_uid) < 0)
        fail_sys(c, errno, "switching to uid %u", (unsigned)cfg->host_uid);
}

/* Empty every capability set.  The bounding set and the securebits need
 * CAP_SETPCAP; an unprivileged process (the degraded rootless path) has
 * no capabilities to begin with and no_new_privs keeps it so. */
static int drop_caps(void)
{
    if (prctl(PR_CAPBSET_READ, CAP_SETPCAP) == 1 && cap_get_bound(CAP_SETPCAP) >= 0) {
        cap_t cur = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;
        if (cur)
            cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &v);
        cap_free(cur);
        if (v == CAP_SET) {
            for (int c = 0; c <= CAP_LAST_CAP; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                    return -1;
            /* uid 0 must not regain capabilities through execve. */
            if (cap_set_secbits(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
                return -1;
        }
    }
    /* One call; libcap's cap_reset_ambient asks about each capability
     * first.  EINVAL: a kernel before ambient capabilities (4.3). */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -1;
    cap_t none = cap_init();
    if (!none)
        return -1;
    int r = cap_set_proc(none);
    cap_free(none);
    return r;
}

/* The signals the daemon ignores (mini_sandbox_note_signals).  An ignored
 * signal stays ignored across execve and a caught one does not, so these
 * are the only dispositions the command could inherit. */
static sigset_t daemon_ignored;
static bool daemon_ignored_noted;

void mini_sandbox_note_signals(void)
{
    if (daemon_ignored_noted)
        return;
    sigemptyset(&daemon_ignored);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        /* Unknown (EINVAL) or unqueryable: reset it anyway. */
        if (sigaction(sig, NULL, &sa) < 0 || sa.sa_handler == SIG_IGN)
            sigaddset(&daemon_ignored, sig);
    }
    daemon_ignored_noted = true;
}

/* The profile's seccomp program, which the daemon sends after GO (see
 * struct mini_seccomp_hdr), into this process's own buffer.  Anything else
 * there means a daemon that is gone or broken: no command may run without
 * its filter, so the child ends without one. */
static void recv_seccomp(struct mini_bpf *prog)
{
    static struct sock_filter insns[BPF_MAXINSNS];
    struct mini_seccomp_hdr h;
    if (mini_read_full(MINI_FD_CTL, &h, sizeof h) != (ssize_t)sizeof h || h.type != MINI_MSG_SECCOMP || h.n_insns < 1 ||
        h.n_insns > BPF_MAXINSNS ||
        mini_read_full(MINI_FD_CTL, insns, h.n_insns * sizeof insns[0]) != (ssize_t)(h.n_insns * sizeof insns[0]))
        _exit(125);
    prog->insns = insns;
    prog->len = (unsigned short)h.n_insns;
}

/* Everything the command inherits, applied to init itself once its root
 * is built: the command's process then only needs its session, fds and
 * working directory.  Seccomp comes last; init's remaining system calls
 * (read, fork, wait, kill, write, exit) are all allowed by every profile.
 * The rlimits are set by mini-sandbox-init itself (see exec_init): this
 * process may be a sanitizer build that cannot live under RLIMIT_AS. */
static void confine(struct child *c)
{
    const struct mini_spawn_cfg *cfg = c->cfg;
    struct mini_bpf prog;
    recv_seccomp(&prog);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Every signal back to its default: the daemon catches none (it reads
     * them from a signalfd) and a handler goes at execve anyway, so only
     * what it ignores needs undoing; without a note, all of them. */
    for (int s = 1; s < NSIG; s++)
        if (!daemon_ignored_noted || sigismember(&daemon_ignored, s) == 1)
            signal(s, SIG_DFL);
    if (drop_caps() < 0)
        fail_sys(c, errno, "dropping capabilities");
    /* The degraded path: Landlock and its supplement, under the profile's filter. */
    if (cfg->landlock && mini_landlock_enforce(cfg->landlock, &c->e) < 0)
        fail(c);
    /* The host's network namespace: its abstract sockets too, unless scoped. */
    if (!cfg->landlock && !(cfg->namespaces & MINI_FEAT_NET_NS) && mini_landlock_scope_abstract(&c->e) < 0)
        fail(c);
    int r = mini_seccomp_load(&prog);
    if (r < 0)
        fail_sys(c, -r, "loading the seccomp filter");
}

/* Become mini-sandbox-init: a fresh, small image holding none of the
 * daemon's memory.  It sets the rlimits, says READY and waits for the
 * command.  Returns only on failure. */
static __attribute__((noreturn)) void exec_init(struct child *c)
{
    const struct mini_spawn_cfg *cfg = c->cfg;
    const struct mini_limits *lim = &cfg->profile->limits;
    char limits[5][40];
    snprintf(limits[0], sizeof limits[0], "cpu=%llu", (unsigned long long)lim->cpu_s);
    snprintf(limits[1], sizeof limits[1], "fsize=%llu", (unsigned long long)lim->file_size_bytes);
    snprintf(limits[2], sizeof limits[2], "nofile=%llu", (unsigned long long)lim->open_files);
    /* A cgroup limit replaces the rlimit: RLIMIT_AS would fail allocations
     * long before the cgroup's OOM kill could be seen and reported. */
    snprintf(limits[3], sizeof limits[3], "nproc=%llu", cfg->cgroup_pids ? 0ULL : (unsigned long long)lim->pids);
    snprintf(limits[4], sizeof limits[4], "as=%llu", cfg->cgroup_memory ? 0ULL : (unsigned long long)lim->memory_bytes);
    char *const argv0[] = { "mini-sandbox-init",
                            limits[0],
                            limits[1],
                            limits[2],
                            limits[3],
                            limits[4],
                            cfg->landlock ? "mode=group" : "mode=pidns",
                            NULL };
    char *const envp0[] = { NULL };
    syscall(SYS_execveat, MINI_FD_INIT, "", argv0, envp0, AT_EMPTY_PATH);
    fail_sys(c, errno, "executing mini-sandbox-init");
}

/* ---------------------------------------------------------- the paths */

/* In fresh namespaces: the clone made the user and pid namespaces, the
 * child makes the rest and its root. */
static __attribute__((noreturn)) void namespace_child(struct child *c)
{
    take_fds(c);
    unshare_namespaces(c);
    MINI_SB_MARK(&c->t, unshared);
    wait_for_go(c);
    join_cgroup(c);
    unshare_cgroup_namespace(c);
    MINI_SB_MARK(&c->t, go);
    build_root(c);
    become_namespace_root(c);
    lower_user_quotas(c);
    die_with_daemon(c);
    set_hostname(c);
    bring_up_loopback(c);
    open_proxy_listener(c);
    enter_root(c);
    MINI_SB_MARK(&c->t, rooted);
    close_setup_fds(c);
    confine(c);
    MINI_SB_MARK(&c->t, confined);
    send_times(c);
    exec_init(c);
}

/* The degraded path (no user namespaces): no namespaces at all; the child
 * is confined by Landlock, its supplement and the profile's seccomp
 * program, and killed as a process group. */
static __attribute__((noreturn)) void landlock_child(struct child *c)
{
    take_fds(c);
    wait_for_go(c);
    join_cgroup(c);
    close_setup_fds(c);
    lead_session(c);
    become_session_ids(c);
    die_with_daemon(c);
    confine(c);
    exec_init(c);
}

/* ---------------------------------------------------------- the template */

void mini_template_child_main(const struct mini_spawn_cfg *cfg, int sock)
{
    struct mini_ctl_msg m = { .type = MINI_CTL_ERROR };
    struct mini_err e;
    mini_err_clear(&e);
    char go;
    ssize_t n;
    do
        n = read(sock, &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(125); /* no id maps: the daemon gave up on it */
    /* A copy of the daemon's memory and fds: nothing of it for the
     * sandboxes' uid to read through /proc or ptrace.  Only now: until its
     * maps are written, a rootless daemon must open its /proc files. */
    prctl(PR_SET_DUMPABLE, 0);
    int fd = -1;
    uid_t u = cfg->inner_uid;
    gid_t g = cfg->inner_gid;
    /* The sandboxes' ids, as their setup child has them when it builds
     * its root: what it may look up on the host, and what owns the tmpfs. */
    if ((setgroups(0, NULL) < 0 && errno != EPERM) || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "switching to the sandbox's ids");
    else if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) /* set after the ids: a change clears it */
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "PR_SET_PDEATHSIG");
    else
        fd = mini_rootfs_template(cfg->profile, cfg->workspace, &e);
    if (fd >= 0) {
        m.type = MINI_CTL_READY;
    } else {
        m.err = e.sys_errno;
        memcpy(m.text, e.msg, strnlen(e.msg, sizeof m.text - 1));
    }
    _exit(mini_send_fds(sock, &m, sizeof m, &fd, fd >= 0 ? 1 : 0) < 0 ? 125 : 0);
}

void mini_child_main(const struct mini_spawn_cfg *cfg, const char *overlay_work, int ctl, int out, int in)
{
    struct child c = {
        .cfg = cfg,
        .overlay_work = overlay_work,
        .ctl = ctl,
        .out = out,
        .in = in,
        .ws_mount = -1,
        .ws_fd = -1,
        .overlay_fd = -1,
        .root_fd = -1,
        .image_fd = -1,
        .template_fd = -1,
    };
    mini_err_clear(&c.e);
    if (cfg->landlock)
        landlock_child(&c);
    namespace_child(&c);
}
