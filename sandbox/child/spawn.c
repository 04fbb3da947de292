/* The daemon's side of one sandbox (see spawn.h): clone the child that
 * child.c runs, give it its id maps and "go", hand it a command, read
 * what it says, kill and reap it. */
#include "spawn.h"
#include "child.h"
#include "workspace.h"
#include "mini/cleanup.h"
#include "mini/path.h"
#include "mini/io.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The namespaces the clone itself creates: the user namespace, which owns
 * everything created after it, and the pid namespace, so that the child is
 * its pid 1.  The child unshares the others itself (child.c). */
static const unsigned long SANDBOX_CLONE_FLAGS = CLONE_NEWUSER | CLONE_NEWPID;

int mini_sandbox_open_init(struct mini_err *e)
{
    /* Opened, not shown: the sibling path as it is (open resolves it), with
     * no realpath, which would read every component's link on each start. */
    const char *env = getenv("MINI_SANDBOX_INIT");
    _cleanup_free_ char *path = env && *env ? strdup(env) : mini_exe_sibling(MINI_BIN_TO_LIBEXEC "/mini-sandbox-init");
    if (!path)
        return mini_err_sys(e, MINI_E_IO, errno, "finding mini-sandbox-init relative to /proc/self/exe");
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

/* A root daemon's image: an idmapped clone of its tree in which the files
 * of the image's user (root, or its config's User) are the sandbox's
 * (host_uid on the host), as the workspace's owner's are.  Other owners
 * stay unmapped. */
static int idmapped_image(const struct mini_spawn_cfg *cfg, struct mini_err *e)
{
    int fd = open_tree(AT_FDCWD, cfg->image_root, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "cloning the image %s", cfg->image_root);
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                               .userns_fd = (uint64_t)cfg->image_userns };
    if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
        int saved = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, saved, "idmapping the image %s", cfg->image_root);
    }
    return fd;
}

_Static_assert(MINI_GO_FDS_MAX <= MINI_SEND_FDS_MAX, "a GO's fds fit one message");

static int send_go(int ctl, int fd, int image, int template, const int *cgroup_fds, size_t n_cgroup)
{
    struct mini_go_msg go = { .type = MINI_MSG_GO,
                              .has_fd = fd >= 0,
                              .has_image = image >= 0,
                              .has_template = template >= 0,
                              .n_cgroup = (uint32_t)n_cgroup };
    int fds[MINI_GO_FDS_MAX];
    size_t n_fds = 0;
    if (n_cgroup > MINI_GO_FDS_MAX - MINI_GO_FDS_OPTIONAL) {
        errno = E2BIG;
        return -1;
    }
    if (fd >= 0)
        fds[n_fds++] = fd;
    if (image >= 0)
        fds[n_fds++] = image;
    if (template >= 0)
        fds[n_fds++] = template;
    for (size_t i = 0; i < n_cgroup; i++)
        fds[n_fds++] = cgroup_fds[i];
    return mini_send_fds(ctl, &go, sizeof go, fds, n_fds);
}

/* The daemon's ends and the child's ends of the three channels. */
struct channels {
    int out[2]; /* merged stdout+stderr: [0] daemon, [1] child */
    int in[2];  /* the command's stdin: [0] child, [1] daemon */
    int ctl[2]; /* control socket: [0] daemon, [1] child */
};
#define CHANNELS_INIT                      \
    {                                      \
        { -1, -1 }, { -1, -1 }, { -1, -1 } \
    }

static void channels_close(struct channels *ch)
{
    for (int i = 0; i < 2; i++) {
        mini_close(ch->out[i]);
        mini_close(ch->in[i]);
        mini_close(ch->ctl[i]);
    }
}

static int open_channels(struct channels *ch, struct mini_err *e)
{
    if (pipe2(ch->out, O_CLOEXEC) < 0 || pipe2(ch->in, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch->ctl) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating pipes");
    /* A larger pipe means fewer wake-ups for a chatty command. */
    fcntl(ch->out[0], F_SETPIPE_SZ, 1 << 20);
    mini_set_nonblock(ch->out[0], 1);
    return 0;
}

/* The sandbox's own overlayfs work directory (see mini_rootfs_spec), when
 * the session has an overlay: sb->overlay_work, and `rel` relative to
 * cfg->overlay_dir for the child. */
static int make_overlay_work(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, char *rel, size_t size,
                             struct mini_err *e)
{
    static unsigned long serial;
    rel[0] = '\0';
    if (!cfg->overlay_dir)
        return 0;
    snprintf(rel, size, "work/%lu", ++serial);
    if (asprintf(&sb->overlay_work, "%s/%s", cfg->overlay_dir, rel) < 0) {
        sb->overlay_work = NULL;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    if (mkdir(sb->overlay_work, 0700) < 0 ||
        (geteuid() == 0 && chown(sb->overlay_work, cfg->host_uid, cfg->host_gid) < 0))
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating %s", sb->overlay_work);
    return 0;
}

/* clone3 into the user and pid namespaces (none on the degraded path),
 * with a pidfd, straight into the command's v2 cgroup when there is one.
 * The child runs mini_child_main(); the parent keeps its ends of the
 * channels in sb. */
static int clone_child(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, struct channels *ch,
                       const char *overlay_rel, struct mini_err *e)
{
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
    sb->in_cgroup = cfg->cgroup_fd >= 0 || cfg->cgroup_v1;
    if (pid < 0 && errno == ENOSYS) {
        /* Where clone3 is filtered (Docker's profile makes it ENOSYS so
         * that the flags stay visible to seccomp): clone, which stores the
         * pidfd at its parent_tid argument.  A v2 cgroup is then joined
         * by the daemon (sb->in_cgroup). */
        pid = syscall(SYS_clone, flags | SIGCHLD, NULL, &pidfd, NULL, NULL);
        sb->in_cgroup = cfg->cgroup_v1;
    }
    if (pid < 0) {
        int err = errno;
        if (err == EPERM || err == EINVAL || err == ENOSPC || err == EUSERS)
            return mini_err_sys(e, MINI_E_ISOLATION_UNAVAILABLE, err,
                                "the kernel refused new namespaces (unprivileged user namespaces may be disabled)");
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "clone3");
    }
    if (pid == 0)
        mini_child_main(cfg, overlay_rel, ch->ctl[1], ch->out[1], ch->in[0]);
    sb->pid = (pid_t)pid;
    sb->pidfd = pidfd;
    sb->out = TAKE_FD(ch->out[0]);
    sb->in = TAKE_FD(ch->in[1]);
    sb->ctl = TAKE_FD(ch->ctl[0]);
    channels_close(ch); /* the child's ends are the child's now */
    sb->group_kill = cfg->landlock != NULL;
    return 0;
}

int mini_format_id_map(char *buf, size_t size, unsigned inner, unsigned long host, long root_host, const char *sep)
{
    int n = snprintf(buf, size, "%u %lu 1", inner, host);
    if (inner != 0 && root_host >= 0)
        n += snprintf(buf + n, size - (size_t)n, "%s0 %ld 1", sep, root_host);
    return n;
}

/* The inner ids (uid and gid 0, or an image's User) are the session's host
 * ids; with a root daemon's image user, 0 is its image's root (see
 * mini_spawn_cfg); nothing else is mapped. */
static int write_id_maps(const struct mini_spawn_cfg *cfg, pid_t pid, struct mini_err *e)
{
    char map[96];
    mini_format_id_map(map, sizeof map, cfg->inner_uid, cfg->host_uid, cfg->root_host_uid, "\n");
    if (write_file(pid, "uid_map", map, e) < 0 || (geteuid() != 0 && write_file(pid, "setgroups", "deny", e) < 0))
        return -1;
    mini_format_id_map(map, sizeof map, cfg->inner_gid, cfg->host_gid, cfg->root_host_gid, "\n");
    return write_file(pid, "gid_map", map, e);
}

/* Let the child go on, with the idmapped workspace when it gets one and
 * the cgroup to join. */
static int start_child(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, const int *cgroup_fds,
                       size_t n_cgroup, struct mini_err *e)
{
    _cleanup_close_ int wsfd = -1;
    _cleanup_close_ int imgfd = -1;
    if (cfg->idmap_workspace && !cfg->landlock && (wsfd = idmapped_workspace(cfg, e)) < 0)
        return -1;
    /* Where the store's filesystem cannot be idmapped, the child opens the
     * image itself: its root-owned files then show as the overflow uid. */
    if (cfg->image_root && cfg->image_userns >= 0 && !cfg->landlock && (imgfd = idmapped_image(cfg, e)) < 0) {
        if (e->sys_errno != EINVAL && e->sys_errno != EOPNOTSUPP && e->sys_errno != ENOSYS)
            return -1;
        mini_err_clear(e);
    }
    int template = cfg->landlock || cfg->image_root ? -1 : cfg->template_fd;
    if (send_go(sb->ctl, wsfd, imgfd, template, cgroup_fds, n_cgroup) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "starting the sandbox");
    return 0;
}

bool mini_sb_timing;

int mini_sandbox_clone(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, struct mini_err *e)
{
    _cleanup_(channels_close) struct channels ch = CHANNELS_INIT;
    char overlay_rel[48];
    *sb = (struct mini_sandbox)MINI_SANDBOX_INIT;
    if (open_channels(&ch, e) < 0 || make_overlay_work(cfg, sb, overlay_rel, sizeof overlay_rel, e) < 0 ||
        clone_child(cfg, sb, &ch, overlay_rel, e) < 0 || (MINI_SB_MARK(&sb->t, clone), false) ||
        (!cfg->landlock && write_id_maps(cfg, sb->pid, e) < 0) || (MINI_SB_MARK(&sb->t, idmap), false)) {
        mini_sandbox_destroy(sb);
        return -1;
    }
    sb->state = MINI_SB_PREPARING;
    return 0;
}

/* The builder's answer: READY with the template's fd, or ERROR. */
static int recv_template(int sock, int *fd, struct mini_err *e)
{
    struct mini_ctl_msg m;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &m, sizeof m };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
    struct pollfd p = { .fd = sock, .events = POLLIN };
    int r;
    do
        r = poll(&p, 1, MINI_TEMPLATE_TIMEOUT_MS);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return mini_err_set(e, MINI_E_SPAWN_FAILED, "the root's template took over %d ms to build",
                            MINI_TEMPLATE_TIMEOUT_MS);
    ssize_t n = r < 0 ? -1 : recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "reading the template's builder");
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    int got = c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))
        ? *(int *)CMSG_DATA(c)
        : -1;
    if (n != sizeof m || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || m.type != MINI_CTL_READY || got < 0) {
        mini_close(got);
        if (n == sizeof m && m.type == MINI_CTL_ERROR) {
            m.text[sizeof m.text - 1] = '\0';
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, m.err, "building the root's template: %s", m.text);
        }
        return mini_err_set(e, MINI_E_SPAWN_FAILED, "the template's builder ended without a template");
    }
    *fd = got;
    return 0;
}

int mini_sandbox_template(const struct mini_spawn_cfg *cfg, struct mini_idmap_holder *later, struct mini_err *e)
{
    int sv[2];
    mini_err_clear(e);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "socketpair");
    _cleanup_close_ int mine = sv[0];
    int pidfd = -1;
    struct clone_args ca = {
        .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = SIGCHLD,
    };
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid < 0 && errno == ENOSYS)
        pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_PIDFD | SIGCHLD, NULL, &pidfd, NULL, NULL);
    if (pid == 0) {
        close(sv[0]);
        mini_template_child_main(cfg, sv[1]);
    }
    close(sv[1]);
    if (pid < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "cloning the template's builder");
    int fd = -1;
    int r = write_id_maps(cfg, (pid_t)pid, e) < 0 || write(mine, "g", 1) != 1 ? -1 : recv_template(mine, &fd, e);
    if (r < 0 && e->code == MINI_OK)
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "starting the template's builder");
    /* It has nothing left to do: killed now, and reaped here or by the
     * caller once its pidfd is readable (it may be stuck in the kernel). */
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    struct mini_idmap_holder h = { .pid = (pid_t)pid, .pidfd = pidfd, .stack = NULL };
    if (later && pidfd >= 0)
        *later = h;
    else
        mini_idmap_holder_reap(&h);
    return r < 0 ? -1 : fd;
}

int mini_sandbox_go(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, const int *cgroup_fds, size_t n,
                    struct mini_err *e)
{
    if (start_child(cfg, sb, cgroup_fds, n, e) < 0 ||
        (cfg->seccomp && mini_sandbox_send_seccomp(sb, cfg->seccomp, e) < 0)) {
        mini_sandbox_destroy(sb);
        return -1;
    }
    MINI_SB_MARK(&sb->t, go);
    return 0;
}

int mini_sandbox_send_seccomp(struct mini_sandbox *sb, const struct mini_bpf *prog, struct mini_err *e)
{
    /* One write, the header and the program, on every sandbox's spawn. */
    struct {
        struct mini_seccomp_hdr h;
        struct sock_filter insns[BPF_MAXINSNS];
    } m;
    if (prog->len < 1 || prog->len > BPF_MAXINSNS)
        return mini_err_set(e, MINI_E_SPAWN_FAILED, "a seccomp program of %u instructions", (unsigned)prog->len);
    m.h = (struct mini_seccomp_hdr){ .type = MINI_MSG_SECCOMP, .n_insns = prog->len };
    memcpy(m.insns, prog->insns, prog->len * sizeof m.insns[0]);
    /* ctl is blocking, and the program (at most 32 KiB) fits in a fresh
     * socket's buffer: the child reads it only once its root is built. */
    if (mini_write_all(sb->ctl, &m, sizeof m.h + prog->len * sizeof m.insns[0]) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "sending the seccomp program to the sandbox");
    return 0;
}

static int put_str(struct mini_buf *b, const char *s) { return mini_buf_append(b, s, strlen(s) + 1); }

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
    for (;;) {
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { m, sizeof *m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        ssize_t n = recvmsg(sb->ctl, &mh, MSG_WAITALL | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n == 0)
            return 0;
        if (n < 0)
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : -1;
        int fd = -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
        if (n != sizeof *m) {
            /* A short message can only come from a dying peer. */
            mini_close(fd);
            return 0;
        }
        m->text[sizeof m->text - 1] = '\0';
        if (m->type == MINI_CTL_TIMES) {
            /* Figures for the timing line only, and only from setup. */
            mini_close(fd);
            if (sb->state == MINI_SB_PREPARING)
                memcpy(&sb->t.child, m->text, sizeof sb->t.child);
            continue;
        }
        if (m->type != MINI_CTL_LISTENER) {
            mini_close(fd);
            return 1;
        }
        mini_close(sb->listen_fd);
        sb->listen_fd = fd;
    }
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
    mini_close(sb->listen_fd);
    sb->pidfd = sb->ctl = sb->out = sb->in = sb->listen_fd = -1;
    sb->state = MINI_SB_DONE;
    if (sb->overlay_work) {
        /* Its overlay went with its mount namespace. */
        struct mini_err e;
        mini_rm_rf(sb->overlay_work, &e);
        free(sb->overlay_work);
        sb->overlay_work = NULL;
    }
}
