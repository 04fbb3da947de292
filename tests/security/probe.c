/* mini-test-probe: attacks run *inside* a sandbox by tests/security/attacks.sh.
 *
 * The test copies this binary into the workspace and runs it there.  Each
 * mode tries one family of escapes and prints one line per attempt:
 *
 *   DENIED <what>: <why>     the attempt failed (good)
 *   BREACH <what>: <detail>  the attempt worked: isolation is broken
 *   INFO <what>: <text>      context for a human reading the log
 *   SETUP <what>: <text>     the probe could not even try
 *
 * and ends with "PROBE-DONE" when it ran to the end.  Exit status: 0 when
 * nothing was breached, 1 on any breach, 2 on a setup error.  Every risky
 * attempt runs in a forked child, so a seccomp kill (SIGSYS) or a successful
 * unshare never affects the next attempt; a child killed by a signal counts
 * as denied.
 *
 * The probe must stay harmless if it ever runs unsandboxed (as root, on the
 * host, because the sandbox is broken): it mounts only on the directory it
 * is given and unmounts again, writes no host files, and changes nothing
 * global.
 *
 * Modes:
 *   fds                      no descriptor other than 0, 1, 2 is open
 *   tiocsti                  TIOCSTI/TIOCLINUX (plain and with bits above 32
 *                            set) are stopped by the filter, on /dev/null and
 *                            on a pty that is our controlling terminal
 *   tiocsti-fds              the same on fds 0-2 (run under a pty)
 *   ptrace                   PTRACE_ATTACH/SEIZE a sibling and pid 1, TRACEME
 *   keyctl                   keyctl/add_key
 *   bpf                      BPF_PROG_LOAD, BPF_MAP_CREATE
 *   io_uring                 io_uring_setup
 *   userns                   unshare/clone/clone3 with CLONE_NEW* flags
 *   setns                    setns into the namespaces of pid 1
 *   mount DIR                mount(2), bind mount, fsopen, open_tree, chroot
 *   sockets                  socket families other than unix/inet/inet6
 *   sockets-allowed          unix and inet sockets can be created (control)
 *   x86-abi                  unshare through the i386 and x32 entry points
 *   misc                     perf_event_open, userfaultfd, open_by_handle_at
 *   connect-tcp ADDR PORT    a TCP connect (to a host listener) fails
 *   connect-unix PATH        a unix stream connect fails
 *   connect-abstract NAME    an abstract unix connect fails
 *   loopback                 listen+connect on 127.0.0.1 works (control)
 *   memscan PID NEEDLE       NEEDLE is not readable in /proc/PID/mem
 *   nproc N                  fork N children; BREACH if all succeed
 *   mem MIB                  allocate and touch MIB MiB; BREACH if it works
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>

#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#define P_KEYCTL_JOIN_SESSION_KEYRING 1
#define P_KEY_SPEC_PROCESS_KEYRING (-2)
#define HIGH_BITS (1UL << 32)

static int breaches, setup_errors;

static void out(const char *kind, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void out(const char *kind, const char *what, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%s %s: %s\n", kind, what, msg);
    fflush(stdout);
}

/* What a child reports through its exit status. */
enum { R_DENIED = 0, R_BREACH = 1, R_SETUP = 2 };

typedef int (*attempt_fn)(const char *what, const void *arg);

/* Run fn in a child that prints its own line; the parent counts.  A child
 * killed by a signal was stopped by the sandbox (seccomp kill). */
static void attempt(const char *what, attempt_fn fn, const void *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        out("SETUP", what, "fork: %s", strerror(errno));
        setup_errors++;
        return;
    }
    if (pid == 0) {
        alarm(20);
        _exit(fn(what, arg));
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            out("SETUP", what, "waitpid: %s", strerror(errno));
            setup_errors++;
            return;
        }
    }
    if (WIFSIGNALED(st)) {
        if (WTERMSIG(st) == SIGALRM) {
            out("SETUP", what, "attempt hung for 20 s");
            setup_errors++;
        } else {
            out("DENIED", what, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        }
    } else if (WEXITSTATUS(st) == R_BREACH) {
        breaches++;
    } else if (WEXITSTATUS(st) != R_DENIED) {
        setup_errors++;
    }
}

/* A raw syscall result: success is a breach. */
static int verdict(const char *what, long r, int err)
{
    if (r >= 0) {
        out("BREACH", what, "succeeded (returned %ld)", r);
        return R_BREACH;
    }
    out("DENIED", what, "%s (errno %d)", strerror(err), err);
    return R_DENIED;
}

#define SYSCALL_VERDICT(what, ...)      \
    ({                                  \
        errno = 0;                      \
        long r_ = syscall(__VA_ARGS__); \
        verdict((what), r_, errno);     \
    })

/* ---- fds -------------------------------------------------------------- */

static int mode_fds(void)
{
    struct rlimit rl;
    long max = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < max)
        max = (long)rl.rlim_cur;
    /* Name 0-2 first (no descriptor is opened for that). */
    for (int fd = 0; fd <= 2; fd++) {
        char p[64], target[PATH_MAX];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(p, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = 0;
        out("INFO", "fd", "%d -> %s%s", fd, n < 0 ? "(closed)" : target, isatty(fd) ? " (a tty)" : "");
    }
    int extra = 0;
    for (long fd = 3; fd < max; fd++) {
        if (fcntl((int)fd, F_GETFD) < 0)
            continue;
        char p[64], target[PATH_MAX];
        snprintf(p, sizeof p, "/proc/self/fd/%ld", fd);
        ssize_t n = readlink(p, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = 0;
        out("BREACH", "inherited fd", "%ld is open -> %s", fd, n < 0 ? "?" : target);
        extra++;
        breaches++;
    }
    if (!extra)
        out("DENIED", "inherited fds", "only 0, 1, 2 are open (checked up to %ld)", max);
    return 0;
}

/* ---- tiocsti ---------------------------------------------------------- */

struct ioctl_case {
    int fd; /* -1: open /dev/null; -2: a pty made our controlling tty */
    unsigned long req;
};

static int try_tty_ioctl(const char *what, const void *argp)
{
    const struct ioctl_case *c = argp;
    int fd = c->fd;
    if (fd == -1) {
        fd = open("/dev/null", O_RDWR);
        if (fd < 0) {
            out("SETUP", what, "open /dev/null: %s", strerror(errno));
            return R_SETUP;
        }
    } else if (fd == -2) {
        int m = posix_openpt(O_RDWR | O_NOCTTY);
        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
            out("INFO", what, "no pty inside (%s); the /dev/null check stands alone", strerror(errno));
            return R_DENIED;
        }
        const char *name = ptsname(m);
        if (!name || setsid() < 0) {
            out("SETUP", what, "ptsname/setsid: %s", strerror(errno));
            return R_SETUP;
        }
        fd = open(name, O_RDWR);
        if (fd < 0) {
            out("INFO", what, "cannot open %s (%s); the /dev/null check stands alone", name, strerror(errno));
            return R_DENIED;
        }
        (void)ioctl(fd, TIOCSCTTY, 0);
    }
    /* TIOCLINUX takes a subcode byte; 2 (set selection) needs privilege,
     * 11 (get shift state) is harmless on a real console: use 11. */
    char byte = (c->req & 0xffffffffUL) == TIOCLINUX ? 11 : '\n';
    errno = 0;
    long r = syscall(SYS_ioctl, fd, c->req, &byte);
    int err = errno;
    if (r == 0) {
        out("BREACH", what, "ioctl succeeded");
        return R_BREACH;
    }
    if (c->fd == -1 && err == ENOTTY) {
        /* /dev/null has no ioctls: ENOTTY means the request went past the
         * seccomp filter to the driver, i.e. it was not filtered. */
        out("BREACH", what, "reached the kernel (ENOTTY): the seccomp filter does not stop it");
        return R_BREACH;
    }
    out("DENIED", what, "%s (errno %d)", strerror(err), err);
    return R_DENIED;
}

static int mode_tiocsti(void)
{
    static const struct {
        const char *what;
        struct ioctl_case c;
    } cases[] = {
        { "TIOCSTI on /dev/null", { -1, TIOCSTI } },
        { "TIOCSTI|1<<32 on /dev/null", { -1, TIOCSTI | HIGH_BITS } },
        { "TIOCSTI|0xffffffff00000000 on /dev/null", { -1, TIOCSTI | 0xffffffff00000000UL } },
        { "TIOCLINUX on /dev/null", { -1, TIOCLINUX } },
        { "TIOCLINUX|1<<32 on /dev/null", { -1, TIOCLINUX | HIGH_BITS } },
        { "TIOCSTI on own controlling pty", { -2, TIOCSTI } },
        { "TIOCSTI|1<<32 on own controlling pty", { -2, TIOCSTI | HIGH_BITS } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attempt(cases[i].what, try_tty_ioctl, &cases[i].c);
    return 0;
}

static int mode_tiocsti_fds(void)
{
    static struct ioctl_case cases[6];
    static char names[6][64];
    for (int fd = 0; fd <= 2; fd++) {
        out("INFO", "fd", "%d %s a tty", fd, isatty(fd) ? "is" : "is not");
        for (int h = 0; h < 2; h++) {
            int i = fd * 2 + h;
            cases[i].fd = fd;
            cases[i].req = TIOCSTI | (h ? HIGH_BITS : 0);
            snprintf(names[i], sizeof names[i], "TIOCSTI%s on fd %d", h ? "|1<<32" : "", fd);
            attempt(names[i], try_tty_ioctl, &cases[i]);
        }
    }
    return 0;
}

/* ---- ptrace ----------------------------------------------------------- */

static pid_t spawn_sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        for (;;)
            pause();
    }
    return pid;
}

static int try_ptrace(const char *what, const void *argp)
{
    const long *a = argp; /* {request, pid (0: a fresh sibling)} */
    pid_t target = (pid_t)a[1];
    pid_t sib = 0;
    if (target == 0) {
        sib = spawn_sleeper();
        if (sib < 0) {
            out("SETUP", what, "fork: %s", strerror(errno));
            return R_SETUP;
        }
        target = sib;
    }
    errno = 0;
    long r = ptrace((enum __ptrace_request)a[0], target, NULL, NULL);
    int err = errno, res = verdict(what, r, err);
    if (r == 0)
        ptrace(PTRACE_DETACH, target, NULL, NULL);
    if (sib > 0) {
        kill(sib, SIGKILL);
        waitpid(sib, NULL, 0);
    }
    return res;
}

static int try_traceme(const char *what, const void *argp)
{
    (void)argp;
    errno = 0;
    long r = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    return verdict(what, r, errno);
}

static int mode_ptrace(void)
{
    static const long attach_sib[2] = { PTRACE_ATTACH, 0 };
    static const long seize_sib[2] = { PTRACE_SEIZE, 0 };
    static const long attach_init[2] = { PTRACE_ATTACH, 1 };
    attempt("PTRACE_ATTACH sibling", try_ptrace, attach_sib);
    attempt("PTRACE_SEIZE sibling", try_ptrace, seize_sib);
    if (getpid() != 1)
        attempt("PTRACE_ATTACH pid 1", try_ptrace, attach_init);
    attempt("PTRACE_TRACEME", try_traceme, NULL);
    return 0;
}

/* ---- keyctl, bpf, io_uring, misc --------------------------------------- */

static int try_keyctl_join(const char *what, const void *a)
{
    (void)a;
    return SYSCALL_VERDICT(what, SYS_keyctl, P_KEYCTL_JOIN_SESSION_KEYRING, 0L);
}

static int try_add_key(const char *what, const void *a)
{
    (void)a;
    return SYSCALL_VERDICT(what, SYS_add_key, "user", "mini-probe", "secret", 6L, (long)P_KEY_SPEC_PROCESS_KEYRING);
}

static int mode_keyctl(void)
{
    attempt("keyctl(JOIN_SESSION_KEYRING)", try_keyctl_join, NULL);
    attempt("add_key", try_add_key, NULL);
    return 0;
}

static int try_bpf_prog(const char *what, const void *a)
{
    (void)a;
    struct bpf_insn insns[2] = {
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 }, /* r0 = 0 */
        { .code = BPF_JMP | BPF_EXIT },
    };
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insn_cnt = 2;
    attr.insns = (uint64_t)(uintptr_t)insns;
    attr.license = (uint64_t)(uintptr_t) "GPL";
    return SYSCALL_VERDICT(what, SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
}

static int try_bpf_map(const char *what, const void *a)
{
    (void)a;
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    return SYSCALL_VERDICT(what, SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
}

static int mode_bpf(void)
{
    attempt("bpf(BPF_PROG_LOAD)", try_bpf_prog, NULL);
    attempt("bpf(BPF_MAP_CREATE)", try_bpf_map, NULL);
    return 0;
}

static int try_io_uring(const char *what, const void *a)
{
    (void)a;
    char params[512]; /* struct io_uring_params, zeroed, with room to grow */
    memset(params, 0, sizeof params);
    return SYSCALL_VERDICT(what, __NR_io_uring_setup, 4L, params);
}

static int mode_io_uring(void)
{
    attempt("io_uring_setup", try_io_uring, NULL);
    return 0;
}

static int try_perf(const char *what, const void *a)
{
    (void)a;
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_SW_TASK_CLOCK;
    pe.disabled = 1;
    pe.exclude_kernel = 1;
    pe.exclude_hv = 1;
    return SYSCALL_VERDICT(what, SYS_perf_event_open, &pe, 0L, -1L, -1L, 0L);
}

static int try_userfaultfd(const char *what, const void *a)
{
    (void)a;
    /* UFFD_USER_MODE_ONLY (1) is what an unprivileged caller may ask for. */
    return SYSCALL_VERDICT(what, SYS_userfaultfd, O_CLOEXEC | 1L);
}

static int try_open_by_handle(const char *what, const void *a)
{
    (void)a;
    struct {
        unsigned int bytes;
        int type;
        unsigned char h[128];
    } fh;
    memset(&fh, 0, sizeof fh);
    fh.bytes = 8;
    fh.type = 1; /* FILEID_INO32_GEN: inode 2 (a filesystem root), gen 0 */
    fh.h[0] = 2;
    return SYSCALL_VERDICT(what, SYS_open_by_handle_at, AT_FDCWD, &fh, (long)O_RDONLY);
}

static int mode_misc(void)
{
    attempt("perf_event_open", try_perf, NULL);
    attempt("userfaultfd", try_userfaultfd, NULL);
    attempt("open_by_handle_at", try_open_by_handle, NULL);
    return 0;
}

/* ---- namespaces -------------------------------------------------------- */

static int try_unshare(const char *what, const void *a) { return SYSCALL_VERDICT(what, SYS_unshare, *(const long *)a); }

static int try_clone(const char *what, const void *a)
{
    long flags = *(const long *)a;
    errno = 0;
    long r = syscall(SYS_clone, flags | SIGCHLD, 0L, 0L, 0L, 0L);
    if (r == 0)
        _exit(0);
    int err = errno;
    if (r > 0)
        waitpid((pid_t)r, NULL, 0);
    return verdict(what, r, err);
}

static int try_clone3(const char *what, const void *a)
{
    uint64_t args[11]; /* struct clone_args (v2 size: 88 bytes) */
    memset(args, 0, sizeof args);
    args[0] = (uint64_t) * (const long *)a; /* flags */
    args[4] = SIGCHLD;                      /* exit_signal */
    errno = 0;
    long r = syscall(__NR_clone3, args, sizeof args);
    if (r == 0)
        _exit(0);
    int err = errno;
    if (r > 0)
        waitpid((pid_t)r, NULL, 0);
    return verdict(what, r, err);
}

static int mode_userns(void)
{
    static const struct {
        const char *name;
        long flag;
    } ns[] = {
        { "CLONE_NEWUSER", CLONE_NEWUSER },     { "CLONE_NEWNS", CLONE_NEWNS },   { "CLONE_NEWNET", CLONE_NEWNET },
        { "CLONE_NEWPID", CLONE_NEWPID },       { "CLONE_NEWUTS", CLONE_NEWUTS }, { "CLONE_NEWIPC", CLONE_NEWIPC },
        { "CLONE_NEWCGROUP", CLONE_NEWCGROUP },
    };
    static const long user_mnt = CLONE_NEWUSER | CLONE_NEWNS;
    char what[96];
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        snprintf(what, sizeof what, "unshare(%s)", ns[i].name);
        attempt(what, try_unshare, &ns[i].flag);
    }
    attempt("unshare(CLONE_NEWUSER|CLONE_NEWNS)", try_unshare, &user_mnt);
    attempt("clone(CLONE_NEWUSER)", try_clone, &ns[0].flag);
    attempt("clone(CLONE_NEWUSER|CLONE_NEWNS)", try_clone, &user_mnt);
    attempt("clone3(CLONE_NEWUSER)", try_clone3, &ns[0].flag);
    return 0;
}

static int try_setns(const char *what, const void *a)
{
    const char *path = a;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        out("DENIED", what, "open %s: %s", path, strerror(errno));
        return R_DENIED;
    }
    return SYSCALL_VERDICT(what, SYS_setns, (long)fd, 0L);
}

static int mode_setns(void)
{
    static const char *const names[] = { "user", "mnt", "net", "pid", "uts", "ipc", "cgroup" };
    static const char *const owners[] = { "1", "self" };
    static char paths[14][64], whats[14][80];
    for (size_t o = 0; o < 2; o++) {
        if (o == 0 && getpid() == 1)
            continue;
        for (size_t i = 0; i < 7; i++) {
            size_t k = o * 7 + i;
            snprintf(paths[k], sizeof paths[k], "/proc/%s/ns/%s", owners[o], names[i]);
            snprintf(whats[k], sizeof whats[k], "setns(%s)", paths[k]);
            attempt(whats[k], try_setns, paths[k]);
        }
    }
    return 0;
}

/* ---- mount ------------------------------------------------------------- */

static int try_mount_tmpfs(const char *what, const void *a)
{
    const char *dir = a;
    errno = 0;
    int r = mount("mini-probe", dir, "tmpfs", 0, "size=1m");
    int err = errno;
    if (r == 0)
        umount2(dir, MNT_DETACH);
    return verdict(what, r, err);
}

static int try_mount_bind(const char *what, const void *a)
{
    const char *dir = a;
    errno = 0;
    int r = mount("/", dir, NULL, MS_BIND | MS_REC, NULL);
    int err = errno;
    if (r == 0)
        umount2(dir, MNT_DETACH);
    return verdict(what, r, err);
}

static int try_fsopen(const char *what, const void *a)
{
    (void)a;
    return SYSCALL_VERDICT(what, __NR_fsopen, "tmpfs", 0L);
}

static int try_open_tree(const char *what, const void *a)
{
    (void)a;
    return SYSCALL_VERDICT(what, __NR_open_tree, (long)AT_FDCWD, "/", (long)(OPEN_TREE_CLONE | O_CLOEXEC));
}

static int try_chroot(const char *what, const void *a) { return SYSCALL_VERDICT(what, SYS_chroot, (const char *)a); }

static int mode_mount(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        out("SETUP", "mount", "%s is not a directory", dir);
        return 2;
    }
    attempt("mount tmpfs", try_mount_tmpfs, dir);
    attempt("bind mount /", try_mount_bind, dir);
    attempt("fsopen(tmpfs)", try_fsopen, NULL);
    attempt("open_tree(/, OPEN_TREE_CLONE)", try_open_tree, NULL);
    attempt("chroot", try_chroot, dir);
    return 0;
}

/* ---- sockets ----------------------------------------------------------- */

struct sock_case {
    const char *name;
    int family, type, proto;
};

static int try_socket(const char *what, const void *a)
{
    const struct sock_case *c = a;
    errno = 0;
    int fd = socket(c->family, c->type, c->proto);
    return verdict(what, fd, errno);
}

static int mode_sockets(void)
{
    static const struct sock_case cases[] = {
        { "AF_NETLINK", 16, SOCK_RAW, 0 }, /* NETLINK_ROUTE */
        { "AF_NETLINK/dgram", 16, SOCK_DGRAM, 0 },
        { "AF_PACKET", 17, SOCK_DGRAM, 0 },
        { "AF_VSOCK", 40, SOCK_STREAM, 0 },
        { "AF_ALG", 38, SOCK_SEQPACKET, 0 },
        { "AF_KEY", 15, SOCK_RAW, 2 },
        { "AF_XDP", 44, SOCK_RAW, 0 },
        { "AF_TIPC", 30, SOCK_RDM, 0 },
        { "AF_RDS", 21, SOCK_SEQPACKET, 0 },
        { "AF_CAN", 29, SOCK_RAW, 1 },
        { "AF_BLUETOOTH", 31, SOCK_RAW, 0 },
        { "AF_APPLETALK", 5, SOCK_DGRAM, 0 },
        { "AF_X25", 9, SOCK_SEQPACKET, 0 },
        { "AF_NETROM", 6, SOCK_SEQPACKET, 0 },
        { "AF_PPPOX", 24, SOCK_STREAM, 0 },
        { "AF_LLC", 26, SOCK_DGRAM, 0 },
        { "AF_SMC", 43, SOCK_STREAM, 0 },
        { "AF_QIPCRTR", 42, SOCK_DGRAM, 0 },
    };
    char what[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(what, sizeof what, "socket(%s)", cases[i].name);
        attempt(what, try_socket, &cases[i]);
    }
    return 0;
}

static int mode_sockets_allowed(void)
{
    static const struct sock_case cases[] = {
        { "AF_UNIX/stream", AF_UNIX, SOCK_STREAM, 0 },
        { "AF_UNIX/dgram", AF_UNIX, SOCK_DGRAM, 0 },
        { "AF_INET/stream", AF_INET, SOCK_STREAM, 0 },
        { "AF_INET/dgram", AF_INET, SOCK_DGRAM, 0 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = socket(cases[i].family, cases[i].type, cases[i].proto);
        if (fd < 0) {
            out("FAIL", cases[i].name, "socket: %s", strerror(errno));
            bad++;
        } else {
            out("OK", cases[i].name, "created");
            close(fd);
        }
    }
    return bad ? 2 : 0;
}

/* ---- other syscall ABIs on x86-64 -------------------------------------- */

#if defined(__x86_64__)
static int try_int80_unshare(const char *what, const void *a)
{
    (void)a;
    long ret;
    long nr = 310; /* i386 __NR_unshare */
    long flags = CLONE_NEWUSER;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(flags) : "memory", "cc");
    return verdict(what, ret < 0 && ret > -4096 ? -1 : ret, ret < 0 ? (int)-ret : 0);
}

static int try_x32_unshare(const char *what, const void *a)
{
    (void)a;
    return SYSCALL_VERDICT(what, 0x40000000L | SYS_unshare, (long)CLONE_NEWUSER);
}
#endif

static int mode_x86_abi(void)
{
#if defined(__x86_64__)
    attempt("unshare(CLONE_NEWUSER) via int 0x80 (i386 ABI)", try_int80_unshare, NULL);
    attempt("unshare(CLONE_NEWUSER) via the x32 ABI", try_x32_unshare, NULL);
#else
    out("DENIED", "x86-abi", "not an x86-64 machine: nothing to try");
#endif
    return 0;
}

/* ---- network ----------------------------------------------------------- */

static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -1;
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int r = poll(&p, 1, 3000);
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
        errno = soerr;
        return -1;
    }
    return 0;
}

static int mode_connect_tcp(const char *addr, const char *port)
{
    char what[128];
    snprintf(what, sizeof what, "TCP connect to %s:%s", addr, port);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    int family;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        family = s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)atoi(port));
        len = sizeof *s4;
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        family = s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)atoi(port));
        len = sizeof *s6;
    } else {
        out("SETUP", what, "bad address");
        return 2;
    }
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) {
        out("DENIED", what, "socket: %s", strerror(errno));
        return 0;
    }
    if (connect_bounded(fd, (struct sockaddr *)&ss, len) == 0) {
        out("BREACH", what, "connected");
        breaches++;
    } else {
        out("DENIED", what, "%s", strerror(errno));
    }
    close(fd);
    return 0;
}

static int mode_connect_unix(const char *path, int abstract)
{
    char what[160];
    snprintf(what, sizeof what, "unix connect to %s%s", abstract ? "@" : "", path);
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n + 2 > sizeof sun.sun_path) {
        out("SETUP", what, "path too long");
        return 2;
    }
    memcpy(sun.sun_path + (abstract ? 1 : 0), path, n);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 1 : 1));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        out("DENIED", what, "socket: %s", strerror(errno));
        return 0;
    }
    if (connect_bounded(fd, (struct sockaddr *)&sun, len) == 0) {
        out("BREACH", what, "connected");
        breaches++;
    } else {
        out("DENIED", what, "%s", strerror(errno));
    }
    close(fd);
    return 0;
}

static int mode_loopback(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&sa, &len) < 0) {
        out("FAIL", "loopback", "listen on 127.0.0.1: %s", strerror(errno));
        return 2;
    }
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect_bounded(c, (struct sockaddr *)&sa, sizeof sa) < 0) {
        out("FAIL", "loopback", "connect to 127.0.0.1:%d: %s", ntohs(sa.sin_port), strerror(errno));
        return 2;
    }
    out("OK", "loopback", "127.0.0.1 is up");
    return 0;
}

/* ---- memory of another process ----------------------------------------- */

static int mode_memscan(const char *pid, const char *needle)
{
    char what[96], path[64];
    snprintf(what, sizeof what, "read /proc/%s/mem", pid);
    snprintf(path, sizeof path, "/proc/%s/maps", pid);
    FILE *maps = fopen(path, "re");
    if (!maps) {
        out("DENIED", what, "open maps: %s", strerror(errno));
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%s/mem", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        out("DENIED", what, "open: %s", strerror(errno));
        fclose(maps);
        return 0;
    }
    size_t nl = strlen(needle), total = 0;
    char line[512];
    static char buf[1 << 20];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r')
            continue;
        for (unsigned long at = lo; at < hi && !found;) {
            size_t want = hi - at < sizeof buf ? hi - at : sizeof buf;
            ssize_t n = pread(fd, buf, want, (off_t)at);
            if (n <= 0)
                break;
            total += (size_t)n;
            if (nl && memmem(buf, (size_t)n, needle, nl))
                found = 1;
            at += (unsigned long)n > nl ? (unsigned long)n - nl : (unsigned long)n;
        }
    }
    fclose(maps);
    close(fd);
    if (found) {
        out("BREACH", what, "the secret is readable in that process's memory");
        breaches++;
    } else if (total) {
        out("DENIED", what, "%zu bytes readable, but the secret is not among them", total);
    } else {
        out("DENIED", what, "nothing readable");
    }
    return 0;
}

/* ---- limits ------------------------------------------------------------ */

static int mode_nproc(long n)
{
    pid_t *kids = calloc((size_t)n, sizeof *kids);
    if (!kids) {
        out("SETUP", "nproc", "calloc");
        return 2;
    }
    long made = 0;
    int err = 0;
    for (; made < n; made++) {
        pid_t p = fork();
        if (p < 0) {
            err = errno;
            break;
        }
        if (p == 0) {
            alarm(60);
            for (;;)
                pause();
        }
        kids[made] = p;
    }
    for (long i = 0; i < made; i++)
        kill(kids[i], SIGKILL);
    for (long i = 0; i < made; i++)
        waitpid(kids[i], NULL, 0);
    free(kids);
    if (made == n) {
        out("BREACH", "process limit", "forked all %ld processes", n);
        breaches++;
    } else {
        out("DENIED", "process limit", "fork failed after %ld processes: %s", made, strerror(err));
    }
    return 0;
}

static int mode_mem(long mib)
{
    const size_t chunk = 16u << 20;
    long got = 0;
    for (; got < mib; got += 16) {
        char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            out("DENIED", "memory limit", "mmap failed after %ld MiB: %s", got, strerror(errno));
            return 0;
        }
        memset(p, 0x5a, chunk); /* touch it: a cgroup limit acts on use */
    }
    out("BREACH", "memory limit", "allocated and touched %ld MiB", got);
    breaches++;
    return 0;
}

/* ---- main -------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: mini-test-probe MODE [ARGS]  (see the comment at the top of probe.c)\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *m = argv[1];
    int rc;
#define ARGS(n)                \
    do {                       \
        if (argc != 2 + (n)) { \
            usage();           \
            return 2;          \
        }                      \
    } while (0)
    if (!strcmp(m, "fds")) {
        ARGS(0);
        rc = mode_fds();
    } else if (!strcmp(m, "tiocsti")) {
        ARGS(0);
        rc = mode_tiocsti();
    } else if (!strcmp(m, "tiocsti-fds")) {
        ARGS(0);
        rc = mode_tiocsti_fds();
    } else if (!strcmp(m, "ptrace")) {
        ARGS(0);
        rc = mode_ptrace();
    } else if (!strcmp(m, "keyctl")) {
        ARGS(0);
        rc = mode_keyctl();
    } else if (!strcmp(m, "bpf")) {
        ARGS(0);
        rc = mode_bpf();
    } else if (!strcmp(m, "io_uring")) {
        ARGS(0);
        rc = mode_io_uring();
    } else if (!strcmp(m, "misc")) {
        ARGS(0);
        rc = mode_misc();
    } else if (!strcmp(m, "userns")) {
        ARGS(0);
        rc = mode_userns();
    } else if (!strcmp(m, "setns")) {
        ARGS(0);
        rc = mode_setns();
    } else if (!strcmp(m, "mount")) {
        ARGS(1);
        rc = mode_mount(argv[2]);
    } else if (!strcmp(m, "sockets")) {
        ARGS(0);
        rc = mode_sockets();
    } else if (!strcmp(m, "sockets-allowed")) {
        ARGS(0);
        rc = mode_sockets_allowed();
    } else if (!strcmp(m, "x86-abi")) {
        ARGS(0);
        rc = mode_x86_abi();
    } else if (!strcmp(m, "connect-tcp")) {
        ARGS(2);
        rc = mode_connect_tcp(argv[2], argv[3]);
    } else if (!strcmp(m, "connect-unix")) {
        ARGS(1);
        rc = mode_connect_unix(argv[2], 0);
    } else if (!strcmp(m, "connect-abstract")) {
        ARGS(1);
        rc = mode_connect_unix(argv[2], 1);
    } else if (!strcmp(m, "loopback")) {
        ARGS(0);
        rc = mode_loopback();
    } else if (!strcmp(m, "memscan")) {
        ARGS(2);
        rc = mode_memscan(argv[2], argv[3]);
    } else if (!strcmp(m, "nproc")) {
        ARGS(1);
        rc = mode_nproc(atol(argv[2]) > 0 ? atol(argv[2]) : 1);
    } else if (!strcmp(m, "mem")) {
        ARGS(1);
        rc = mode_mem(atol(argv[2]) > 0 ? atol(argv[2]) : 1);
    } else {
        usage();
        return 2;
    }
#undef ARGS
    if (rc)
        return rc;
    if (breaches)
        return 1;
    if (setup_errors)
        return 2;
    printf("PROBE-DONE\n");
    return 0;
}
