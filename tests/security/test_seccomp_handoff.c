/* The seccomp program's hand-off to a sandbox (child/spawn.c,
 * child/child.c): the daemon sends it over the control socket after GO,
 * possibly later than GO (a session's first program is compiled while its
 * first sandbox is being prepared).  No command may ever run without it:
 *
 *   - a sandbox whose program never comes never says READY, and ends by
 *     itself (status 125) when the daemon's end closes;
 *   - a malformed hand-off (no instructions, too many, another message's
 *     type, a program cut short) ends it the same way, with no READY;
 *   - a program sent 300 ms after GO is loaded: the command runs with
 *     "Seccomp: 2", and a system call the profile denies fails with the
 *     profile's errno.
 *
 * Drives mini_sandbox_clone/go directly, as the daemon does, with the
 * strict profile.  As root the sandbox runs as uid 65534 (a root daemon
 * never runs one as root), and the whole test runs again as uid 65534
 * under setpriv (a rootless daemon).  Skips (77) where user namespaces are
 * refused. */
#include "check.h"
#include "seccomp_prog.h"
#include "spawn.h"
#include "mini/io.h"
#include "mini/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct mini_profile *profile;
static char root_dir[] = "/tmp/mini-handoff-root.XXXXXX";
static char ws[] = "/tmp/mini-handoff-ws.XXXXXX";
static int ws_fd = -1, init_fd = -1;

static void cfg_for(struct mini_spawn_cfg *cfg, const struct mini_bpf *prog)
{
    uid_t uid = geteuid() == 0 ? 65534 : geteuid();
    gid_t gid = geteuid() == 0 ? 65534 : getegid();
    *cfg = (struct mini_spawn_cfg){
        .profile = profile,
        .seccomp = prog,
        .workspace = ws,
        .workspace_fd = ws_fd,
        .root_dir = root_dir,
        .image_userns = -1,
        .host_uid = uid,
        .host_gid = gid,
        .root_host_uid = -1,
        .root_host_gid = -1,
        .idmap_userns = -1,
        .init_fd = init_fd,
        .namespaces = MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_NET_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_IPC_NS |
            MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS,
        .cgroup_fd = -1,
        .template_fd = -1,
    };
}

/* The next control message within ms: 1 got one, 0 the peer closed, -2 none. */
static int next_msg(struct mini_sandbox *sb, struct mini_ctl_msg *m, int ms)
{
    struct pollfd p = { .fd = sb->ctl, .events = POLLIN };
    if (poll(&p, 1, ms) <= 0)
        return -2;
    return mini_sandbox_read_ctl(sb, m);
}

/* The sandbox's init ends by itself within 5 s; its exit status. */
static int own_exit(struct mini_sandbox *sb)
{
    struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
    if (poll(&p, 1, 5000) != 1)
        return -1;
    siginfo_t si = { 0 };
    if (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED) < 0)
        return -1;
    sb->pid = -1; /* reaped: destroy must not wait for it */
    return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

/* Clone a sandbox whose GO carries no program, then hand it `bytes`
 * (may be NULL) and close the daemon's end: it must not say READY, and
 * must exit 125 by itself. */
static void refused(const char *what, const void *bytes, size_t len)
{
    struct mini_spawn_cfg cfg;
    struct mini_sandbox sb;
    struct mini_err e;
    cfg_for(&cfg, NULL);
    if (mini_sandbox_clone(&cfg, &sb, &e) < 0) {
        CHECK_MSG(0, "%s: clone: %s", what, e.msg);
        return;
    }
    if (mini_sandbox_go(&cfg, &sb, NULL, 0, &e) < 0) {
        CHECK_MSG(0, "%s: go: %s", what, e.msg);
        return;
    }
    struct mini_ctl_msg m;
    /* Long enough for a root to be built and init executed (a few ms). */
    int r = next_msg(&sb, &m, 500);
    CHECK_MSG(r == -2 || (r == 1 && m.type != MINI_CTL_READY), "%s: before the hand-off: %d (type %u)", what, r,
              r == 1 ? m.type : 0);
    if (bytes)
        CHECK_MSG(mini_write_all(sb.ctl, bytes, len) == 0, "%s: writing the hand-off", what);
    r = next_msg(&sb, &m, 500);
    CHECK_MSG(r != 1 || m.type != MINI_CTL_READY, "%s: READY after a bad hand-off", what);
    close(sb.ctl);
    sb.ctl = -1;
    int st = own_exit(&sb);
    CHECK_MSG(st == 125, "%s: the sandbox's first process ended with %d, not 125", what, st);
    mini_sandbox_destroy(&sb);
}

/* A valid program, sent late: READY only after it, and the command runs
 * under it. */
static void loaded_late(const struct mini_bpf *prog)
{
    struct mini_spawn_cfg cfg;
    struct mini_sandbox sb;
    struct mini_err e;
    cfg_for(&cfg, NULL);
    if (mini_sandbox_clone(&cfg, &sb, &e) < 0 || mini_sandbox_go(&cfg, &sb, NULL, 0, &e) < 0) {
        CHECK_MSG(0, "late: %s", e.msg);
        return;
    }
    struct mini_ctl_msg m;
    int r = next_msg(&sb, &m, 300);
    CHECK_MSG(r == -2, "late: a message before the program: %d (type %u)", r, r == 1 ? m.type : 0);
    CHECK_MSG(mini_sandbox_send_seccomp(&sb, prog, &e) == 0, "late: %s", e.msg);
    r = next_msg(&sb, &m, 10000);
    CHECK_MSG(r == 1 && m.type == MINI_CTL_READY, "late: no READY (%d, type %u: %s)", r, r == 1 ? m.type : 0,
              r == 1 ? m.text : "");
    if (r != 1 || m.type != MINI_CTL_READY) {
        mini_sandbox_destroy(&sb);
        return;
    }
    /* unshare is in strict's deny list (EPERM); Seccomp: 2 is a filter. */
    char *argv[] = { "/bin/sh", "-c",
                     "grep '^Seccomp:' /proc/self/status; "
                     "if unshare -U true 2>/dev/null; then echo unshare-ran; else echo unshare-refused; fi",
                     NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    struct mini_launch l = { .argv = argv, .envp = envp, .cwd = ws };
    CHECK_MSG(mini_sandbox_launch(&sb, &l, &e) == 0, "late: launch: %s", e.msg);
    char out[4096];
    size_t n = 0;
    int status = -1;
    bool out_open = true;
    /* Until the status, at most 10 s; the output pipe is polled until its end. */
    for (int i = 0; i < 200 && status < 0; i++) {
        struct pollfd p[2] = { { .fd = sb.ctl, .events = POLLIN }, { .fd = out_open ? sb.out : -1, .events = POLLIN } };
        poll(p, 2, 50);
        ssize_t k = 1;
        while (out_open && n < sizeof out - 1 && (k = read(sb.out, out + n, sizeof out - 1 - n)) > 0)
            n += (size_t)k;
        if (k == 0 || n == sizeof out - 1)
            out_open = false;
        while ((r = mini_sandbox_read_ctl(&sb, &m)) == 1)
            if (m.type == MINI_CTL_STATUS)
                status = m.status;
        if (r == 0)
            break;
    }
    /* The tree is gone with the status: what it wrote is all in the pipe. */
    for (ssize_t k; out_open && n < sizeof out - 1 && (k = read(sb.out, out + n, sizeof out - 1 - n)) > 0;)
        n += (size_t)k;
    out[n] = '\0';
    CHECK_MSG(status == 0, "late: the command's status %d, output: %s", status, out);
    CHECK_MSG(strstr(out, "Seccomp:\t2") != NULL, "late: no filter: %s", out);
    CHECK_MSG(strstr(out, "unshare-refused") != NULL, "late: unshare was not refused: %s", out);
    mini_sandbox_destroy(&sb);
}

/* Everything above, as the invoking user.  0, 77 (no user namespaces) or 1. */
static int run_all(const char *dir)
{
    struct mini_err e;
    if (!(profile = mini_profile_load_builtin(dir, "strict", &e))) {
        fprintf(stderr, "strict: %s\n", e.msg);
        return 1;
    }
    struct mini_bpf prog;
    if (mini_seccomp_compile(&profile->seccomp, &prog, &e) < 0) {
        fprintf(stderr, "compile: %s\n", e.msg);
        return 1;
    }
    if (!mkdtemp(root_dir) || !mkdtemp(ws) || chmod(ws, 0777) < 0 ||
        (ws_fd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        perror("temporary directories");
        return 1;
    }
    if ((init_fd = mini_sandbox_open_init(&e)) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    /* Where user namespaces are refused there is nothing to hand off to. */
    struct mini_spawn_cfg cfg;
    struct mini_sandbox sb;
    cfg_for(&cfg, &prog);
    int rc = 0;
    if (mini_sandbox_clone(&cfg, &sb, &e) < 0) {
        fprintf(stderr, "skip: %s\n", e.msg);
        rc = e.code == MINI_E_ISOLATION_UNAVAILABLE ? 77 : 1;
    } else {
        mini_sandbox_destroy(&sb);
        refused("no program at all", NULL, 0);
        struct mini_seccomp_hdr h0 = { .type = MINI_MSG_SECCOMP, .n_insns = 0 };
        refused("zero instructions", &h0, sizeof h0);
        struct mini_seccomp_hdr hbig = { .type = MINI_MSG_SECCOMP, .n_insns = BPF_MAXINSNS + 1 };
        refused("more than BPF_MAXINSNS", &hbig, sizeof hbig);
        struct mini_seccomp_hdr hlaunch = { .type = MINI_MSG_LAUNCH, .n_insns = prog.len };
        refused("a LAUNCH in its place", &hlaunch, sizeof hlaunch);
        /* The header announces the whole program; a third of it comes. */
        char cut[sizeof(struct mini_seccomp_hdr) + BPF_MAXINSNS * sizeof(struct sock_filter)];
        struct mini_seccomp_hdr hcut = { .type = MINI_MSG_SECCOMP, .n_insns = prog.len };
        size_t part = prog.len / 3 * sizeof prog.insns[0];
        memcpy(cut, &hcut, sizeof hcut);
        memcpy(cut + sizeof hcut, prog.insns, part);
        refused("a program cut short", cut, sizeof hcut + part);
        loaded_late(&prog);
    }
    mini_bpf_free(&prog);
    mini_profile_free(profile);
    close(ws_fd);
    close(init_fd);
    rmdir(ws);
    rmdir(root_dir);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : NULL;
    bool nobody = argc > 2 && strcmp(argv[2], "--nobody") == 0;
    signal(SIGPIPE, SIG_IGN);
    int rc = run_all(dir);
    if (rc == 1)
        return 1;
    if (rc == 0 && !nobody && geteuid() == 0) {
        /* Again as a rootless daemon would run it. */
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (access("/usr/bin/setpriv", X_OK) != 0 || n <= 0) {
            printf("note: no setpriv; the rootless pass is not run\n");
        } else {
            self[n] = '\0';
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                      "--inh-caps=-all", self, dir ? dir : "", "--nobody", (char *)NULL);
                _exit(127);
            }
            int st = -1;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            CHECK_MSG(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77),
                      "the rootless pass: status 0x%x", st);
            if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
                printf("note: the rootless pass skipped (no unprivileged user namespaces)\n");
        }
    }
    if (rc == 77)
        return 77;
    return check_summary();
}
