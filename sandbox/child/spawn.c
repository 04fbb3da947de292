#include "spawn.h"
#include "rootfs.h"
#include "mini/cleanup.h"
#include "mini/path.h"
#include "mini/io.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <poll.h>
#include <unistd.h>

/* ------------------------------------------------------------ the child */

/* The namespaces the clone itself creates: the user namespace, which owns
 * everything after it, and the pid namespace, so that the child is its
 * pid 1.  The others the child unshares itself (unshare_flags). */
#define MINI_QUOTA_INOTIFY_INSTANCES "16"
#define MINI_QUOTA_INOTIFY_WATCHES "16384"

static const unsigned long SANDBOX_CLONE_FLAGS = CLONE_NEWUSER | CLONE_NEWPID;

static unsigned long unshare_flags(unsigned namespaces)
{
    static const struct { unsigned feat; unsigned long flag; } map[] = {
        { MINI_FEAT_NET_NS, CLONE_NEWNET }, { MINI_FEAT_IPC_NS, CLONE_NEWIPC },
        { MINI_FEAT_UTS_NS, CLONE_NEWUTS }, { MINI_FEAT_CGROUP_NS, CLONE_NEWCGROUP },
    };
    unsigned long f = 0;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(map); i++)
        if (namespaces & map[i].feat)
            f |= map[i].flag;
    /* The root filesystem is not optional. */
    return f | CLONE_NEWNS;
}

static __attribute__((noreturn)) void child_fail(const struct mini_err *e)
{
    struct mini_ctl_msg m = { .type = MINI_CTL_ERROR, .err = e->sys_errno };
    size_t n = strnlen(e->msg, sizeof m.text - 1);
    memcpy(m.text, e->msg, n);
    mini_write_all(MINI_FD_CTL, &m, sizeof m);
    _exit(125);
}

/* Put the fds the child needs at 3..7 and close every other one: the
 * daemon's client sockets and other sandboxes' pipes must never reach a
 * sandbox.  ctl, out and in survive the exec of init; the rest do not. */
static int child_fds(int ctl, int out, int in, int ws, int init)
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

/* Move this process into its command's cgroup (v1: one cgroup.procs per
 * hierarchy, opened by the daemon), first thing after the clone, so that
 * everything it does from here on is limited and accounted.  Done here
 * rather than by the daemon: a migration may wait for an RCU grace period,
 * which would stall the daemon's loop for every client.  0 or an errno. */
static int join_cgroup(const struct mini_spawn_cfg *cfg)
{
    for (size_t i = 0; i < cfg->n_cgroup_procs; i++)
        if (write(cfg->cgroup_procs[i], "0\n", 2) != 2)
            return errno ? errno : EIO;
    return 0;
}

/* After child_fds: report a failed join_cgroup. */
static void check_joined(int err)
{
    if (err) {
        struct mini_err e;
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, err, "joining the command's cgroup");
        child_fail(&e);
    }
}

static int recv_go(int *fd_out)
{
    struct mini_go_msg go;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &go, sizeof go };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
    ssize_t n;
    do
        n = recvmsg(MINI_FD_CTL, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n != sizeof go || go.type != MINI_MSG_GO)
        return -1;
    *fd_out = -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (go.has_fd && c && c->cmsg_type == SCM_RIGHTS)
        memcpy(fd_out, CMSG_DATA(c), sizeof(int));
    return 0;
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
                                SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
                return -1;
        }
    }
    if (cap_reset_ambient() < 0)
        return -1;
    cap_t none = cap_init();
    if (!none)
        return -1;
    int r = cap_set_proc(none);
    cap_free(none);
    return r;
}

/* Everything the command inherits, applied to init itself once its root
 * is built: the command's process then only needs its session, fds and
 * working directory.  Seccomp comes last; init's remaining system calls
 * (read, fork, wait, kill, write, exit) are all allowed by every profile.
 * The rlimits are set by mini-sandbox-init itself (see init_argv): this
 * process may be a sanitizer build that cannot live under RLIMIT_AS. */
static int confine(const struct mini_spawn_cfg *cfg, struct mini_err *e)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    if (drop_caps() < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "dropping capabilities");
    /* The degraded path: Landlock and its supplement, under the profile's filter. */
    if (cfg->landlock && mini_landlock_enforce(cfg->landlock, e) < 0)
        return -1;
    /* The host's network namespace: its abstract sockets too, unless scoped. */
    if (!cfg->landlock && !(cfg->namespaces & MINI_FEAT_NET_NS) && mini_landlock_scope_abstract(e) < 0)
        return -1;
    int r = mini_seccomp_load(cfg->seccomp);
    if (r < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, -r, "loading the seccomp filter");
    return 0;
}

/* Per-user kernel counters that the kernel also keeps per user namespace
 * (kernel/ucount.c: a charge must fit every level's limit): lowered in
 * the sandbox's own namespace, while it still holds CAP_SYS_RESOURCE
 * there, so that one sandbox cannot use up its host uid's share (with a
 * rootless daemon, the user's own).  /proc/sys/user resolves to the
 * opener's namespace.  Best effort: an old kernel may lack a file. */
static void cap_userns_quotas(void)
{
    static const char *const quota[][2] = {
        { "/proc/sys/user/max_inotify_instances", MINI_QUOTA_INOTIFY_INSTANCES },
        { "/proc/sys/user/max_inotify_watches", MINI_QUOTA_INOTIFY_WATCHES },
        { "/proc/sys/user/max_fanotify_groups", "0" },
        { "/proc/sys/user/max_fanotify_marks", "0" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(quota); i++) {
        int fd = open(quota[i][0], O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, quota[i][1], strlen(quota[i][1]));
            close(fd);
        }
    }
}

static __attribute__((noreturn)) void exec_init(const struct mini_spawn_cfg *cfg, struct mini_err *e);

static __attribute__((noreturn)) void init_main(const struct mini_spawn_cfg *cfg, const char *overlay_work, int ctl,
                                                int out, int in)
{
    struct mini_err e;
    mini_err_clear(&e);
    int cg_err = join_cgroup(cfg);
    if (child_fds(ctl, out, in, cfg->workspace_fd, cfg->init_fd) < 0) {
        /* fds are in an unknown state: the daemon sees ctl close and an
         * exit status of 125 without a message. */
        _exit(125);
    }
    check_joined(cg_err);
    /* The namespaces beyond user and pid are created here, in the
     * sandbox's own process and while the daemon writes the id maps, not
     * inside the daemon's clone, where they would hold up every other
     * client (the network namespace alone costs most of a millisecond of
     * CPU on a small machine).  They are owned by the sandbox's user
     * namespace either way, and the cgroup namespace is now rooted at the
     * command's own cgroup. */
    if (unshare((int)unshare_flags(cfg->namespaces)) < 0) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "creating the namespaces");
        child_fail(&e);
    }
    int ws_mount = -1;
    if (recv_go(&ws_mount) < 0)
        _exit(125);   /* the daemon went away */
    int root_fd = mini_rootfs_base(cfg->root_dir, cfg->profile, &e);
    if (root_fd < 0)
        child_fail(&e);
    /* The daemon's workspace fd belongs to its mount namespace, which cannot
     * be a bind source here: look the path up again in our copy of it, and
     * make sure it is still the same directory. */
    int ws_fd = MINI_FD_WS;
    if (ws_mount < 0) {
        struct stat a, b;
        ws_fd = open(cfg->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws_fd < 0 || fstat(ws_fd, &a) < 0 || fstat(MINI_FD_WS, &b) < 0) {
            mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "opening the workspace %s", cfg->workspace);
            child_fail(&e);
        }
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
            mini_err_set(&e, MINI_E_SPAWN_FAILED, "the workspace %s was replaced since the session opened",
                         cfg->workspace);
            child_fail(&e);
        }
    }
    int overlay_fd = -1;
    if (cfg->overlay_dir && (overlay_fd = open(cfg->overlay_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "opening %s", cfg->overlay_dir);
        child_fail(&e);
    }

    /* Become uid/gid 0 of the new namespace, which is the unprivileged host
     * id the daemon mapped (a root daemon's credentials are not mapped at
     * all until then).  A root daemon leaves setgroups allowed so that its
     * supplementary groups can be dropped here; a rootless one cannot drop
     * them (the kernel denies setgroups), as with any unprivileged sandbox. */
    if ((setgroups(0, NULL) < 0 && errno != EPERM) || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "switching to the sandbox's ids");
        child_fail(&e);
    }
    cap_userns_quotas();
    /* Die with the daemon.  Set only now: a change of credentials clears
     * it.  The daemon may have died before: then ctl has hung up. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct pollfd hup = { .fd = MINI_FD_CTL, .events = POLLRDHUP };
    if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        _exit(125);
    const struct mini_profile *p = cfg->profile;
    if ((cfg->namespaces & MINI_FEAT_UTS_NS) && p->hostname &&
        sethostname(p->hostname, strlen(p->hostname)) < 0) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "sethostname");
        child_fail(&e);
    }
    if ((cfg->namespaces & MINI_FEAT_NET_NS) && mini_net_loopback_up(&e) < 0)
        child_fail(&e);
    struct mini_rootfs_spec rs = {
        .profile = p,
        .root_fd = root_fd,
        .overlay_fd = overlay_fd,
        .overlay_work = overlay_work,
        .workspace = cfg->workspace,
        .workspace_fd = ws_mount >= 0 ? ws_mount : ws_fd,
        .workspace_detached = ws_mount >= 0,
    };
    if (mini_rootfs_enter(&rs, &e) < 0)
        child_fail(&e);
    mini_close(ws_mount);
    if (ws_fd != MINI_FD_WS)
        close(ws_fd);
    mini_close(overlay_fd);
    close(root_fd);
    close(MINI_FD_WS);
    if (confine(cfg, &e) < 0)
        child_fail(&e);
    /* Become mini-sandbox-init: a fresh, small image holding none of the
     * daemon's memory.  It says READY and waits for the command. */
    exec_init(cfg, &e);
}

/* Become mini-sandbox-init: a fresh, small image holding none of the
 * daemon's memory.  It sets the rlimits, says READY and waits for the
 * command.  Returns only on failure. */
static __attribute__((noreturn)) void exec_init(const struct mini_spawn_cfg *cfg, struct mini_err *e)
{
    const struct mini_limits *lim = &cfg->profile->limits;
    char limits[5][40];
    snprintf(limits[0], sizeof limits[0], "cpu=%llu", (unsigned long long)lim->cpu_s);
    snprintf(limits[1], sizeof limits[1], "fsize=%llu", (unsigned long long)lim->file_size_bytes);
    snprintf(limits[2], sizeof limits[2], "nofile=%llu", (unsigned long long)lim->open_files);
    /* A cgroup limit replaces the rlimit: RLIMIT_AS would fail allocations
     * long before the cgroup's OOM kill could be seen and reported. */
    snprintf(limits[3], sizeof limits[3], "nproc=%llu", cfg->cgroup_pids ? 0ULL : (unsigned long long)lim->pids);
    snprintf(limits[4], sizeof limits[4], "as=%llu",
             cfg->cgroup_memory ? 0ULL : (unsigned long long)lim->memory_bytes);
    char *const argv0[] = { "mini-sandbox-init", limits[0], limits[1], limits[2], limits[3], limits[4],
                            cfg->landlock ? "mode=group" : "mode=pidns", NULL };
    char *const envp0[] = { NULL };
    syscall(SYS_execveat, MINI_FD_INIT, "", argv0, envp0, AT_EMPTY_PATH);
    mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "executing mini-sandbox-init");
    child_fail(e);
}

/* The degraded path's child: no namespaces.  It leads a new session (the
 * command cannot leave its process group: setsid and setpgid are denied),
 * becomes the workspace owner when the daemon is root, drops every
 * capability, and is confined by Landlock, its supplement and the
 * profile's seccomp program before it becomes init. */
static __attribute__((noreturn)) void degraded_main(const struct mini_spawn_cfg *cfg, int ctl, int out, int in)
{
    struct mini_err e;
    mini_err_clear(&e);
    int cg_err = join_cgroup(cfg);
    if (child_fds(ctl, out, in, cfg->workspace_fd, cfg->init_fd) < 0)
        _exit(125);
    check_joined(cg_err);
    int unused = -1;
    if (recv_go(&unused) < 0)
        _exit(125);
    mini_close(unused);
    close(MINI_FD_WS);
    if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "setsid");
        child_fail(&e);
    }
    if (geteuid() == 0) {
        /* Bounding set first (that needs CAP_SETPCAP), then the ids: the
         * uid change clears every other capability. */
        for (int c = 0; c <= CAP_LAST_CAP; c++)
            prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        if (setgroups(0, NULL) < 0 || setresgid(cfg->host_gid, cfg->host_gid, cfg->host_gid) < 0 ||
            setresuid(cfg->host_uid, cfg->host_uid, cfg->host_uid) < 0) {
            mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "switching to uid %u", (unsigned)cfg->host_uid);
            child_fail(&e);
        }
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct pollfd hup = { .fd = MINI_FD_CTL, .events = POLLRDHUP };
    if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        _exit(125);
    if (confine(cfg, &e) < 0)
        child_fail(&e);
    exec_init(cfg, &e);
}

/* ----------------------------------------------------------- the daemon */

int mini_sandbox_open_init(struct mini_err *e)
{
    const char *env = getenv("MINI_SANDBOX_INIT");
    _cleanup_free_ char *path = env && *env ? strdup(env) : mini_exe_sibling("mini-sandbox-init");
    if (!path)
        return mini_err_sys(e, MINI_E_IO, errno, "finding mini-sandbox-init beside /proc/self/exe");
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s (the sandbox's init program)", path);
    return fd;
}

static int write_file(pid_t pid, const char *name, const char *data, struct mini_err *e)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || mini_write_all(fd, data, strlen(data)) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "writing %s", path);
    return 0;
}

/* An idmapped clone of the workspace in which its owner's files are the
 * sandbox's (its uid 0, host_uid on the host) and what the sandbox creates
 * is the owner's on disk (only a root daemon can make one). */
static int idmapped_workspace(const struct mini_spawn_cfg *cfg, struct mini_err *e)
{
    int fd = open_tree(cfg->workspace_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "cloning the workspace mount");
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)cfg->idmap_userns };
    if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
        int saved = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, saved, "idmapping the workspace");
    }
    return fd;
}

static int send_go(int ctl, int fd)
{
    struct mini_go_msg go = { .type = MINI_MSG_GO, .has_fd = fd >= 0 };
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = { &go, sizeof go };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd >= 0) {
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t n;
    do
        n = sendmsg(ctl, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == sizeof go ? 0 : -1;
}

int mini_sandbox_prepare(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, struct mini_err *e)
{
    int outp[2] = { -1, -1 }, inp[2] = { -1, -1 }, ctl[2] = { -1, -1 };
    *sb = (struct mini_sandbox){ .pid = -1, .pidfd = -1, .ctl = -1, .out = -1, .in = -1 };

    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(inp, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating pipes");
        goto fail;
    }
    /* Its own overlayfs work directory (see mini_rootfs_spec). */
    char work_rel[48] = "";
    if (cfg->overlay_dir) {
        static unsigned long serial;
        snprintf(work_rel, sizeof work_rel, "work/%lu", ++serial);
        if (asprintf(&sb->overlay_work, "%s/%s", cfg->overlay_dir, work_rel) < 0) {
            sb->overlay_work = NULL;
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto fail;
        }
        if (mkdir(sb->overlay_work, 0700) < 0 ||
            (geteuid() == 0 && chown(sb->overlay_work, cfg->host_uid, cfg->host_gid) < 0)) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating %s", sb->overlay_work);
            goto fail;
        }
    }
    /* A larger pipe means fewer wake-ups for a chatty command. */
    fcntl(outp[0], F_SETPIPE_SZ, 1 << 20);
    mini_set_nonblock(outp[0], 1);

    int pidfd = -1;
    unsigned long flags = (cfg->landlock ? 0 : SANDBOX_CLONE_FLAGS) | CLONE_PIDFD;
    struct clone_args ca = {
        .flags = flags,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = SIGCHLD,
    };
    /* A v2 cgroup is joined at birth, without a migration. */
    if (cfg->cgroup_fd >= 0) {
        ca.flags |= CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)cfg->cgroup_fd;
    }
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    sb->in_cgroup = cfg->cgroup_fd >= 0 || cfg->n_cgroup_procs > 0;
    if (pid < 0 && errno == ENOSYS) {
        /* Where clone3 is filtered (Docker's profile makes it ENOSYS so
         * that the flags stay visible to seccomp): clone, which stores the
         * pidfd at its parent_tid argument.  A v2 cgroup is then joined
         * by the daemon (sb->in_cgroup). */
        pid = syscall(SYS_clone, flags | SIGCHLD, NULL, &pidfd, NULL, NULL);
        sb->in_cgroup = cfg->n_cgroup_procs > 0;
    }
    if (pid < 0) {
        int err = errno;
        if (err == EPERM || err == EINVAL || err == ENOSPC || err == EUSERS)
            mini_err_sys(e, MINI_E_ISOLATION_UNAVAILABLE, err,
                         "the kernel refused new namespaces (unprivileged user namespaces may be disabled)");
        else
            mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "clone3");
        goto fail;
    }
    if (pid == 0) {
        if (cfg->landlock)
            degraded_main(cfg, ctl[1], outp[1], inp[0]);
        init_main(cfg, work_rel, ctl[1], outp[1], inp[0]);
    }

    sb->pid = (pid_t)pid;
    sb->pidfd = pidfd;
    close(outp[1]);
    close(inp[0]);
    close(ctl[1]);
    sb->out = outp[0];
    sb->in = inp[1];
    sb->ctl = ctl[0];
    outp[0] = outp[1] = inp[0] = inp[1] = ctl[0] = ctl[1] = -1;

    sb->group_kill = cfg->landlock != NULL;
    char map[64];
    if (cfg->landlock) {
        if (send_go(sb->ctl, -1) < 0) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "starting the sandbox");
            goto fail;
        }
        sb->state = MINI_SB_PREPARING;
        return 0;
    }
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)cfg->host_uid);
    if (write_file(sb->pid, "uid_map", map, e) < 0 ||
        (geteuid() != 0 && write_file(sb->pid, "setgroups", "deny", e) < 0))
        goto fail;
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)cfg->host_gid);
    if (write_file(sb->pid, "gid_map", map, e) < 0)
        goto fail;
    int wsfd = -1;
    if (cfg->idmap_workspace && (wsfd = idmapped_workspace(cfg, e)) < 0)
        goto fail;
    int r = send_go(sb->ctl, wsfd);
    mini_close(wsfd);
    if (r < 0) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "starting the sandbox");
        goto fail;
    }
    sb->state = MINI_SB_PREPARING;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        mini_close(outp[i]);
        mini_close(inp[i]);
        mini_close(ctl[i]);
    }
    mini_sandbox_destroy(sb);
    return -1;
}

static int put_str(struct mini_buf *b, const char *s)
{
    return mini_buf_append(b, s, strlen(s) + 1);
}

int mini_sandbox_launch(struct mini_sandbox *sb, const struct mini_launch *l, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct mini_launch_hdr h = { .type = MINI_MSG_LAUNCH, .flags = l->has_stdin ? MINI_LAUNCH_STDIN : 0 };
    size_t argc = 0, envc = 0;
    while (l->argv[argc])
        argc++;
    while (l->envp[envc])
        envc++;
    int r = mini_buf_append(&b, &h, sizeof h) | put_str(&b, l->cwd) | mini_buf_printf(&b, "%zu", argc) |
            mini_buf_putc(&b, '\0');
    for (size_t i = 0; i < argc; i++)
        r |= put_str(&b, l->argv[i]);
    r |= mini_buf_printf(&b, "%zu", envc) | mini_buf_putc(&b, '\0');
    for (size_t i = 0; i < envc; i++)
        r |= put_str(&b, l->envp[i]);
    if (r < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (b.len - sizeof h > MINI_LAUNCH_MAX)
        return mini_err_set(e, MINI_E_LIMIT, "command and environment exceed %u bytes", MINI_LAUNCH_MAX);
    h.len = (uint32_t)(b.len - sizeof h);
    memcpy(b.data, &h, sizeof h);
    /* ctl is blocking; init is waiting in read(), so this cannot stall long. */
    if (mini_write_all(sb->ctl, b.data, b.len) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "sending the command to the sandbox");
    sb->state = MINI_SB_RUNNING;
    return 0;
}

int mini_sandbox_read_ctl(struct mini_sandbox *sb, struct mini_ctl_msg *m)
{
    ssize_t n = recv(sb->ctl, m, sizeof *m, MSG_WAITALL | MSG_DONTWAIT);
    if (n == 0)
        return 0;
    if (n < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : -1;
    if (n != sizeof *m) {
        /* A short message can only come from a dying peer. */
        return 0;
    }
    m->text[sizeof m->text - 1] = '\0';
    return 1;
}

void mini_sandbox_kill(struct mini_sandbox *sb)
{
    if (sb->state == MINI_SB_DONE)
        return;
    /* Without a pid namespace the command's tree is init's process group
     * (it cannot leave it); kill that first, while init still holds it. */
    if (sb->group_kill && sb->pid > 0)
        kill(-sb->pid, SIGKILL);
    if (sb->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
}

int mini_sandbox_reap(struct mini_sandbox *sb, int *status, struct rusage *ru)
{
    if (sb->pid <= 0)
        return -1;
    pid_t w;
    do
        w = wait4(sb->pid, status, WNOHANG | __WALL, ru);
    while (w < 0 && errno == EINTR);
    if (w == 0)
        return 0;
    if (w < 0)
        return -1;
    sb->pid = -1;
    sb->state = MINI_SB_DONE;
    return 1;
}

void mini_sandbox_destroy(struct mini_sandbox *sb)
{
    if (sb->pid > 0) {
        if (sb->group_kill)
            kill(-sb->pid, SIGKILL);
        if (sb->pidfd >= 0)
            syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        else
            kill(sb->pid, SIGKILL);
        while (waitpid(sb->pid, NULL, __WALL) < 0 && errno == EINTR)
            ;
        sb->pid = -1;
    }
    mini_close(sb->pidfd);
    mini_close(sb->ctl);
    mini_close(sb->out);
    mini_close(sb->in);
    sb->pidfd = sb->ctl = sb->out = sb->in = -1;
    sb->state = MINI_SB_DONE;
    if (sb->overlay_work) {
        /* Its overlay went with its mount namespace. */
        struct mini_err e;
        mini_rm_rf(sb->overlay_work, &e);
        free(sb->overlay_work);
        sb->overlay_work = NULL;
    }
}
