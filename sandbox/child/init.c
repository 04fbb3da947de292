/* mini-sandbox-init: pid 1 of a sandbox.
 *
 * The daemon's child builds the sandbox (namespaces, root, confinement)
 * and then executes this small static program in its place, so that pid 1
 * holds none of the daemon's memory (its environment, other clients' data)
 * and is not dumpable.  It waits for one command on MINI_FD_CTL, runs it
 * (new session, fds 0-2 only, its working directory), reaps every process
 * of the namespace, kills what the command left behind once it ends, and
 * reports the command's wait status and resource usage.  Its exit ends the
 * pid namespace.  Only libc, no allocation before the command is known. */
#include "init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t r = write(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* close_range(2) by number: musl has no wrapper for it. */
static int close_fds(unsigned lo, unsigned hi) { return (int)syscall(SYS_close_range, lo, hi, 0); }

static void report(int fd, uint32_t type, int err, int status, const char *text)
{
    struct mini_ctl_msg m = { .type = type, .err = err, .status = status };
    snprintf(m.text, sizeof m.text, "%s", text);
    write_all(fd, &m, sizeof m);
}

/* cwd NUL argc NUL argv... envc NUL env... -> pointers into p. */
static int parse(char *p, size_t len, char ***argv, char ***envp, const char **cwd)
{
    char *end = p + len;
    *cwd = p;
    p += strnlen(p, (size_t)(end - p)) + 1;
    char **lists[2];
    for (int l = 0; l < 2; l++) {
        if (p >= end)
            return -1;
        unsigned long n = strtoul(p, NULL, 10);
        p += strnlen(p, (size_t)(end - p)) + 1;
        if (n > len || (l == 0 && n == 0))
            return -1;
        lists[l] = calloc(n + 1, sizeof(char *));
        if (!lists[l])
            return -1;
        for (unsigned long i = 0; i < n; i++) {
            if (p >= end)
                return -1;
            lists[l][i] = p;
            p += strnlen(p, (size_t)(end - p)) + 1;
        }
    }
    if (p > end)
        return -1;
    *argv = lists[0];
    *envp = lists[1];
    return 0;
}

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (; *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* execve with a PATH search in the command's environment. */
static void exec_path(char **argv, char **envp)
{
    if (strchr(argv[0], '/')) {
        execve(argv[0], argv, envp);
        return;
    }
    const char *path = env_get(envp, "PATH");
    if (!path)
        path = "/usr/bin:/bin";
    int saved = ENOENT;
    char buf[4096];
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        if (snprintf(buf, sizeof buf, "%.*s/%s", (int)dl, dl ? p : ".", argv[0]) < (int)sizeof buf) {
            execve(buf, argv, envp);
            if (errno == EACCES)
                saved = EACCES;
            else if (errno != ENOENT && errno != ENOTDIR)
                saved = errno;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    errno = saved;
}

/* mode=pidns: pid 1 of a pid namespace (the namespace path); mode=group:
 * the leader of a process group the command cannot leave (the degraded
 * path, where setsid and setpgid are denied and the daemon kills the
 * group). */
static bool group_mode;

/* Group mode: the daemon died.  Nothing of the command may outlive it, and
 * without a pid namespace no kernel does this for us: take the whole
 * process group down (the command cannot leave it), this process too. */
static void on_daemon_death(int sig)
{
    (void)sig;
    kill(0, SIGKILL);
    _exit(125);
}

/* Group mode: the child set PR_SET_PDEATHSIG to SIGKILL, which would kill
 * this process alone and leave the command's group running.  Instead the
 * daemon's death now delivers SIGHUP, whose handler kills the group.  The
 * daemon may have died before: then the control socket has hung up. */
static void group_die_with_daemon(void)
{
    struct sigaction sa = { .sa_handler = on_daemon_death };
    sigfillset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGHUP);
    struct pollfd hup = { .fd = MINI_FD_CTL, .events = POLLRDHUP };
    if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        on_daemon_death(SIGHUP);
}

static __attribute__((noreturn)) void command(char **argv, char **envp, const char *cwd, bool has_stdin, int errfd)
{
    const char *stage;
    int err;
    if (!group_mode && setsid() < 0) {
        stage = "setsid";
        goto fail;
    }
    int in = has_stdin ? MINI_FD_IN : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || dup2(in, 0) < 0 || dup2(MINI_FD_OUT, 1) < 0 || dup2(MINI_FD_OUT, 2) < 0) {
        stage = "setting up stdio";
        goto fail;
    }
    /* errfd (close-on-exec) is the only descriptor above 2 left. */
    int ep = fcntl(errfd, F_DUPFD_CLOEXEC, 3);
    if (ep < 0 || (ep > 3 && close_fds(3, (unsigned)ep - 1) < 0) || close_fds((unsigned)ep + 1, ~0u) < 0) {
        stage = "closing file descriptors";
        goto fail;
    }
    errfd = ep;
    if (chdir(cwd) < 0) {
        stage = "changing to the working directory";
        goto fail;
    }
    exec_path(argv, envp);
    /* As a shell would: 127 not found, 126 found but not executable. */
    err = errno;
    int code = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
    dprintf(2, "mini-sandbox: %s: %s\n", argv[0], code == 127 ? "command not found" : strerror(err));
    char text[232];
    snprintf(text, sizeof text, "%s: %s", argv[0], strerror(err));
    report(errfd, MINI_CTL_EXEC_FAILED, err, code, text);
    _exit(code);
fail:;
    char msg[232];
    err = errno;
    snprintf(msg, sizeof msg, "%s: %s", stage, strerror(err));
    report(errfd, MINI_CTL_ERROR, err, 0, msg);
    _exit(125);
}

/* Soft and hard limit to v (0: leave as is); where the current hard limit
 * is lower, that one: a limit can always be tightened. */
static int set_limit(int res, unsigned long long v)
{
    if (v == 0)
        return 0;
    struct rlimit cur, rl = { (rlim_t)v, (rlim_t)v };
    /* CPU: SIGXCPU at the limit (reported as such), SIGKILL a second later
     * for a command that catches it. */
    if (res == RLIMIT_CPU)
        rl.rlim_max = (rlim_t)v + 1;
    if (getrlimit(res, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < rl.rlim_max)
        rl.rlim_cur = rl.rlim_max = cur.rlim_max;
    return setrlimit(res, &rl);
}

/* Arguments: name=value for each rlimit of the profile. */
static int apply_limits(int argc, char **argv)
{
    static const struct {
        const char *name;
        int res;
    } names[] = {
        { "cpu", RLIMIT_CPU },     { "fsize", RLIMIT_FSIZE }, { "nofile", RLIMIT_NOFILE },
        { "nproc", RLIMIT_NPROC }, { "as", RLIMIT_AS },
    };
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "mode=group") == 0 || strcmp(argv[i], "mode=pidns") == 0) {
            group_mode = argv[i][5] == 'g';
            continue;
        }
        char *eq = strchr(argv[i], '=');
        size_t k;
        for (k = 0; eq && k < sizeof names / sizeof names[0]; k++)
            if (strlen(names[k].name) == (size_t)(eq - argv[i]) &&
                !strncmp(argv[i], names[k].name, (size_t)(eq - argv[i])))
                break;
        if (!eq || k == sizeof names / sizeof names[0]) {
            errno = EINVAL;
            return -1;
        }
        if (set_limit(names[k].res, strtoull(eq + 1, NULL, 10)) < 0)
            return -1;
    }
    struct rlimit nocore = { 0, 0 };
    return setrlimit(RLIMIT_CORE, &nocore);
}

int main(int argc, char **argv)
{
    /* Not dumpable: the command cannot read or write this process's memory
     * through /proc, nor its environment. */
    prctl(PR_SET_DUMPABLE, 0);
    if (apply_limits(argc, argv) < 0) {
        char msg[128];
        snprintf(msg, sizeof msg, "setting resource limits: %s", strerror(errno));
        report(MINI_FD_CTL, MINI_CTL_ERROR, errno, 0, msg);
        return 125;
    }
    if (group_mode)
        group_die_with_daemon();
    report(MINI_FD_CTL, MINI_CTL_READY, 0, 0, "ready");

    struct mini_launch_hdr h;
    if (read_full(MINI_FD_CTL, &h, sizeof h) < 0 || h.type != MINI_MSG_LAUNCH || h.len == 0 || h.len > MINI_LAUNCH_MAX)
        return 0; /* the daemon closed an unused sandbox */
    char *payload = malloc((size_t)h.len + 1);
    if (!payload || read_full(MINI_FD_CTL, payload, h.len) < 0)
        return 125;
    payload[h.len] = '\0';
    char **cmd_argv, **envp;
    const char *cwd;
    if (parse(payload, h.len, &cmd_argv, &envp, &cwd) < 0) {
        report(MINI_FD_CTL, MINI_CTL_ERROR, EINVAL, 0, "malformed launch message");
        return 125;
    }
    /* From here on the command may run: a daemon that loses this sandbox
     * after this message must not run the command again elsewhere. */
    report(MINI_FD_CTL, MINI_CTL_ACCEPTED, 0, 0, "accepted");
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) < 0) {
        report(MINI_FD_CTL, MINI_CTL_ERROR, errno, 0, "pipe");
        return 125;
    }
    pid_t cmd = fork();
    if (cmd < 0) {
        report(MINI_FD_CTL, MINI_CTL_ERROR, errno, 0, "fork");
        return 125;
    }
    if (cmd == 0) {
        close(ep[0]);
        command(cmd_argv, envp, cwd, h.flags & MINI_LAUNCH_STDIN, ep[1]);
    }
    /* Only the command's tree may hold the output pipe's write end, so
     * that its end of file means the tree is done writing. */
    close(ep[1]);
    close(MINI_FD_OUT);
    close(MINI_FD_IN);
    struct mini_ctl_msg m;
    if (read_full(ep[0], &m, sizeof m) == 0 && (m.type == MINI_CTL_ERROR || m.type == MINI_CTL_EXEC_FAILED)) {
        m.text[sizeof m.text - 1] = '\0';
        write_all(MINI_FD_CTL, &m, sizeof m);
    }
    close(ep[0]);

    int status = 0;
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, __WALL);
        if (w == cmd) {
            status = st;
            break;
        }
        if (w < 0 && errno != EINTR)
            return 125;
    }
    /* Kill and reap what it left behind before saying it ended, so that
     * nothing of it runs once the client has its status.  In a pid
     * namespace that is everyone else; in group mode the daemon kills the
     * group when it has the status (kill(-1) would reach the user's
     * whole session there). */
    if (!group_mode) {
        kill(-1, SIGKILL);
        while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
            ;
    }
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    struct mini_ctl_msg done = {
        .type = MINI_CTL_STATUS,
        .status = status,
        .cpu_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec + (int64_t)ru.ru_stime.tv_sec * 1000000 +
            ru.ru_stime.tv_usec,
        .max_rss_kb = ru.ru_maxrss,
    };
    write_all(MINI_FD_CTL, &done, sizeof done);
    if (group_mode) {
        /* Until the daemon closes the control socket (or dies): then take
         * the group down, this process included. */
        char c;
        for (;;) {
            ssize_t n = read(MINI_FD_CTL, &c, 1);
            if (n > 0 || (n < 0 && errno == EINTR))
                continue;
            break;
        }
        kill(0, SIGKILL);
    }
    return 0;
}
