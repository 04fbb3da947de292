/* Seccomp programs: compile the built-in and some hand-made policies, load
 * each in a forked child and check what the child's syscalls return there.
 * The child sends one record per check through a pipe; the parent CHECKs
 * them.  argv[1]: the source tree's profiles/ directory. */
#include "childcheck.h"
#include "mini/cleanup.h"
#include "mini/profile.h"
#include "seccomp_prog.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static const char *dir;

/* A clone-like call that succeeded returns 0 in the new process: end it. */
static long child_guard(long r)
{
    if (r == 0)
        _exit(0);
    if (r > 0)
        waitpid((pid_t)r, NULL, __WALL);
    return r;
}

static long clone3_newuser(void)
{
    uint64_t args[11] = { 0 };
    args[0] = CLONE_NEWUSER; /* flags */
    args[4] = SIGCHLD;       /* exit_signal */
    return child_guard(syscall(SYS_clone3, args, 88));
}

/* The program the next child loads before its body runs. */
static const struct mini_bpf *child_prog;
static void (*child_body)(void);

static void load_then_body(void)
{
    int r = mini_seccomp_load(child_prog);
    child_report("mini_seccomp_load", r == 0, r, -r);
    if (r == 0)
        child_body();
}

/* Fork, load prog in the child, run body there; collect the records.
 * Returns the child's wait status. */
static int run(const struct mini_bpf *prog, void (*body)(void), const char *label)
{
    child_prog = prog;
    child_body = body;
    return child_run(load_then_body, label, NULL);
}

/* The compiled program's decision for one call, by a classic BPF
 * interpreter: checks the program itself, exactly, where the kernel's own
 * answer could not tell a filtered call from an unsupported one (socket()
 * says EAFNOSUPPORT for families this kernel lacks, filter or not). */
static uint32_t decide(const struct mini_bpf *p, int nr, const uint64_t args[6])
{
    struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
    for (int i = 0; i < 6; i++)
        d.args[i] = args[i];
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
    for (unsigned pc = 0; pc < p->len; pc++) {
        const struct sock_filter *f = &p->insns[pc];
        uint32_t k = f->k;
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (k + 4 > sizeof d)
                abort();
            memcpy(&a, (const char *)&d + k, 4);
            break;
        case BPF_LD | BPF_MEM: a = mem[k % BPF_MEMWORDS]; break;
        case BPF_LDX | BPF_MEM: x = mem[k % BPF_MEMWORDS]; break;
        case BPF_ST: mem[k % BPF_MEMWORDS] = a; break;
        case BPF_STX: mem[k % BPF_MEMWORDS] = x; break;
        case BPF_ALU | BPF_AND | BPF_K: a &= k; break;
        case BPF_MISC | BPF_TAX: x = a; break;
        case BPF_MISC | BPF_TXA: a = x; break;
        case BPF_JMP | BPF_JA: pc += k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += a == k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += a > k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += a >= k ? f->jt : f->jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (a & k) ? f->jt : f->jf; break;
        case BPF_RET | BPF_K: return k;
        default: fprintf(stderr, "decide: opcode %#x not handled\n", f->code); abort();
        }
    }
    abort(); /* a valid program always returns */
}

/* Every family value, in the low word and with high bits set: allowed only
 * for exactly the policy's families. */
static void check_families(const struct mini_bpf *p, const char *label, int nr, const int *ok, size_t n_ok)
{
    static const uint64_t highs[] = { 0, 1ull << 32, 0xffffffff00000000ull };
    for (size_t h = 0; h < MINI_ARRAY_SIZE(highs); h++) {
        for (uint64_t af = 0; af < AF_MAX + 16; af++) {
            uint64_t args[6] = { highs[h] | af, SOCK_STREAM, 0, 0, 0, 0 };
            bool allow = false;
            for (size_t i = 0; i < n_ok; i++)
                allow |= highs[h] == 0 && af == (uint64_t)ok[i];
            uint32_t want = allow ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EAFNOSUPPORT;
            uint32_t got = decide(p, nr, args);
            CHECK_MSG(got == want, "%s: family %#llx: action %#x, want %#x", label, (unsigned long long)args[0], got,
                      want);
        }
    }
}

/* No setuid/setgid mode through any call that sets a mode (every
 * profile): the compiled program, decided by the interpreter above. */
static void check_setid(const struct mini_bpf *p, const char *label)
{
    static const struct {
        long nr;
        unsigned arg;
        const char *name;
    } calls[] = {
        { SYS_chmod, 1, "chmod" }, { SYS_fchmod, 1, "fchmod" },   { SYS_fchmodat, 2, "fchmodat" },
        { SYS_creat, 1, "creat" }, { SYS_open, 2, "open" },       { SYS_openat, 3, "openat" },
        { SYS_mknod, 1, "mknod" }, { SYS_mknodat, 2, "mknodat" },
    };
    static const struct {
        uint64_t mode;
        bool denied;
    } modes[] = {
        { 0755, false },
        { 0644, false },
        { 01777, false },
        { 04755, true },
        { 02755, true },
        { 06755, true },
        { 04000, true },
        { 0xffffffff00000000ull | 0755, false },
        { 0xffffffff00000000ull | 04755, true },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(calls); i++)
        for (size_t m = 0; m < MINI_ARRAY_SIZE(modes); m++) {
            uint64_t args[6] = { 0 };
            args[calls[i].arg] = modes[m].mode;
            uint32_t r = decide(p, (int)calls[i].nr, args);
            uint32_t want = modes[m].denied ? (SECCOMP_RET_ERRNO | EPERM) : SECCOMP_RET_ALLOW;
            CHECK_MSG(r == want, "%s: %s mode %#llo: got %#x", label, calls[i].name, (unsigned long long)modes[m].mode,
                      r);
        }
    uint64_t none[6] = { 0 };
    CHECK_MSG(decide(p, SYS_openat2, none) == (SECCOMP_RET_ERRNO | ENOSYS), "%s: openat2 not ENOSYS", label);
    CHECK_MSG(decide(p, 452, none) == (SECCOMP_RET_ERRNO | ENOSYS), "%s: fchmodat2 not ENOSYS", label);
}

static void compile_or_die(const struct mini_seccomp_policy *pol, struct mini_bpf *out)
{
    struct mini_err e;
    if (mini_seccomp_compile(pol, out, &e) < 0) {
        fprintf(stderr, "compile: %s\n", e.msg);
        abort();
    }
}

static struct mini_profile *profile(const char *json)
{
    struct mini_err e;
    cJSON *v = cJSON_Parse(json);
    struct mini_profile *p = v ? mini_profile_from_json(v, "test", &e) : NULL;
    cJSON_Delete(v);
    if (!p) {
        fprintf(stderr, "profile: %s\n", v ? e.msg : "bad JSON");
        abort();
    }
    return p;
}

/* ------------------------------------------------------------- strict */

static void strict_body(void)
{
    int pipefd[2];
    char ch = 'x';
    int avail;
    WORKS("getpid", getpid());
    WORKS("pipe", pipe(pipefd));

    /* Namespaces. */
    FAILS("unshare(CLONE_NEWUSER)", EPERM, unshare(CLONE_NEWUSER));
    FAILS("unshare(CLONE_NEWNET)", EPERM, unshare(CLONE_NEWNET));
    FAILS("clone(CLONE_NEWUSER)", EPERM, child_guard(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
    FAILS("clone(CLONE_NEWNS)", EPERM, child_guard(syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0)));
    FAILS("clone3", ENOSYS, clone3_newuser());
    FAILS("setns", EPERM, setns(0, CLONE_NEWNET));
    WORKS("fork", child_guard(fork()));

    /* Mounts and kernel interfaces. */
    FAILS("mount", EPERM, mount("none", "/tmp", "tmpfs", 0, NULL));
    FAILS("umount2", EPERM, umount2("/tmp", 0));
    FAILS("ptrace", EPERM, ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    FAILS("keyctl", EPERM, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
    FAILS("add_key", EPERM, syscall(SYS_add_key, "user", "k", "v", 1, KEY_SPEC_SESSION_KEYRING));
    char attr[128] = { 0 };
    FAILS("bpf", EPERM, syscall(SYS_bpf, 0, attr, sizeof attr));
    FAILS("perf_event_open", EPERM, syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
    FAILS("io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 4, attr));
    FAILS("userfaultfd", EPERM, syscall(SYS_userfaultfd, 0));

    /* Sockets. */
    WORKS_FD("socket(AF_UNIX)", socket(AF_UNIX, SOCK_STREAM, 0));
    WORKS_FD("socket(AF_INET)", socket(AF_INET, SOCK_DGRAM, 0));
    FAILS("socket(AF_VSOCK)", EAFNOSUPPORT, socket(AF_VSOCK, SOCK_STREAM, 0));
    FAILS("socket(AF_ALG)", EAFNOSUPPORT, socket(AF_ALG, SOCK_SEQPACKET, 0));
    FAILS("socket(AF_NETLINK)", EAFNOSUPPORT, socket(AF_NETLINK, SOCK_RAW, 0));
    FAILS("socket(AF_PACKET)", EAFNOSUPPORT, socket(AF_PACKET, SOCK_RAW, 0));
    FAILS("socket(AF_MAX)", EAFNOSUPPORT, socket(AF_MAX, SOCK_STREAM, 0));
    FAILS("socket(-1)", EAFNOSUPPORT, syscall(SYS_socket, -1L, SOCK_STREAM, 0));
    /* The kernel reads an int: high bits must not smuggle AF_UNIX/AF_VSOCK. */
    FAILS("socket(1<<32 | AF_UNIX)", EAFNOSUPPORT, syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0));
    FAILS("socket(1<<32 | AF_VSOCK)", EAFNOSUPPORT, syscall(SYS_socket, (1L << 32) | AF_VSOCK, SOCK_STREAM, 0));
    /* Every family outside unix, inet and inet6 is refused by the filter,
     * whichever rules cover it (the compiler groups them into ranges). */
    for (long af = 0; af < AF_MAX + 4; af++) {
        char name[64];
        if (af == AF_UNIX || af == AF_INET || af == AF_INET6)
            continue;
        snprintf(name, sizeof name, "socket(%ld)", af);
        FAILS(name, EAFNOSUPPORT, syscall(SYS_socket, af, SOCK_STREAM, 0));
        snprintf(name, sizeof name, "socket(1<<32 | %ld)", af);
        FAILS(name, EAFNOSUPPORT, syscall(SYS_socket, (1L << 32) | af, SOCK_STREAM, 0));
        snprintf(name, sizeof name, "socketpair(%ld)", af);
        FAILS(name, EAFNOSUPPORT, syscall(SYS_socketpair, af, SOCK_STREAM, 0, NULL));
    }
    FAILS("socket(1<<32 | AF_INET6)", EAFNOSUPPORT, syscall(SYS_socket, (1L << 32) | AF_INET6, SOCK_STREAM, 0));
    FAILS("socketpair(AF_INET6)", EAFNOSUPPORT, syscall(SYS_socketpair, (long)AF_INET6, SOCK_STREAM, 0, NULL));
    int sv[2];
    WORKS("socketpair(AF_UNIX)", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    FAILS("socketpair(AF_INET)", EAFNOSUPPORT, socketpair(AF_INET, SOCK_STREAM, 0, sv));

    /* Terminal injection: on a pipe the kernel would say ENOTTY. */
    FAILS("ioctl(TIOCSTI)", EPERM, ioctl(pipefd[0], TIOCSTI, &ch));
    FAILS("ioctl(TIOCSTI | 1<<32)", EPERM, syscall(SYS_ioctl, pipefd[0], (unsigned long)TIOCSTI | (1UL << 32), &ch));
    FAILS("ioctl(TIOCLINUX)", EPERM, ioctl(pipefd[0], TIOCLINUX, &ch));
    WORKS("ioctl(FIONREAD)", ioctl(pipefd[0], FIONREAD, &avail));
    FAILS("ioctl(TCGETS) on a pipe", ENOTTY, ioctl(pipefd[0], TCGETS, attr));
}

/* The same program with EACCES: the denials come from the filter, not
 * from the kernel's own permission checks. */
static void strict_eacces_body(void)
{
    char ch = 0, attr[128] = { 0 };
    FAILS("mount", EACCES, mount("none", "/tmp", "tmpfs", 0, NULL));
    FAILS("unshare", EACCES, unshare(CLONE_NEWUSER));
    FAILS("ptrace", EACCES, ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    FAILS("keyctl", EACCES, syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
    FAILS("bpf", EACCES, syscall(SYS_bpf, 0, attr, sizeof attr));
    FAILS("ioctl(TIOCSTI)", EACCES, ioctl(0, TIOCSTI, &ch));
    FAILS("chroot", EACCES, chroot("/"));
    WORKS("getppid", getppid());
}

static void permissive_body(void)
{
    WORKS_FD("socket(AF_NETLINK)", socket(AF_NETLINK, SOCK_RAW, 0));
    FAILS("socket(AF_VSOCK)", EAFNOSUPPORT, socket(AF_VSOCK, SOCK_STREAM, 0));
    FAILS("unshare(CLONE_NEWUSER)", EPERM, unshare(CLONE_NEWUSER));
    FAILS("clone3", ENOSYS, clone3_newuser());
    FAILS("io_uring_setup", EPERM, syscall(SYS_io_uring_setup, 4, NULL));
}

/* ---------------------------------------------------------- allow list */

static void allowlist_body(void)
{
    int pipefd[2], avail;
    char ch = 0;
    WORKS("getpid", getpid());
    WORKS("pipe2", pipe2(pipefd, 0));
    FAILS("getppid (not allowed)", ENOSYS, syscall(SYS_getppid));
    FAILS("mount (not allowed)", ENOSYS, mount("none", "/tmp", "tmpfs", 0, NULL));
    FAILS("chdir (allowed and denied)", ENOSYS, chdir("/"));
    WORKS("ioctl(FIONREAD)", ioctl(pipefd[0], FIONREAD, &avail));
    FAILS("ioctl(TCGETS) on a pipe", ENOTTY, ioctl(pipefd[0], TCGETS, &ch));
    FAILS("ioctl(TIOCSTI)", ENOSYS, ioctl(pipefd[0], TIOCSTI, &ch));
    FAILS("ioctl(TIOCSTI | 1<<32)", ENOSYS, syscall(SYS_ioctl, pipefd[0], (unsigned long)TIOCSTI | (1UL << 32), &ch));
    FAILS("ioctl(TIOCLINUX)", ENOSYS, ioctl(pipefd[0], TIOCLINUX, &ch));
    WORKS("ioctl(FIONREAD | 1<<32)", syscall(SYS_ioctl, pipefd[0], (unsigned long)FIONREAD | (1UL << 32), &avail));
    WORKS_FD("socket(AF_UNIX)", socket(AF_UNIX, SOCK_STREAM, 0));
    FAILS("socket(AF_INET)", EAFNOSUPPORT, socket(AF_INET, SOCK_STREAM, 0));
    FAILS("socket(1<<32 | AF_UNIX)", EAFNOSUPPORT, syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0));
    WORKS("unshare(0)", unshare(0));
    FAILS("unshare(CLONE_NEWUSER)", EPERM, unshare(CLONE_NEWUSER));
    FAILS("clone(CLONE_NEWUSER)", EPERM, child_guard(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
    FAILS("clone3", ENOSYS, clone3_newuser());
    /* A bare clone: a sanitizer's fork() interceptor would need more. */
    WORKS("clone(SIGCHLD)", child_guard(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)));
}

static void getppid_body(void)
{
    getppid();
    child_report("still alive after getppid", 0, 0, 0);
}

#if defined(__x86_64__)
static void x32_body(void)
{
    syscall(0x40000000L | SYS_getpid);
    child_report("still alive after an x32 syscall", 0, 0, 0);
}
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    struct mini_err e;
    struct mini_bpf prog;
    int status;

    struct mini_profile *strict = mini_profile_load_builtin(dir, "strict", &e);
    if (!strict) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    compile_or_die(&strict->seccomp, &prog);
    CHECK(prog.len > 10 && prog.insns != NULL);
    static const int inet[] = { AF_UNIX, AF_INET, AF_INET6 }, unix_only[] = { AF_UNIX };
    check_families(&prog, "strict socket", SYS_socket, inet, MINI_ARRAY_SIZE(inet));
    check_families(&prog, "strict socketpair", SYS_socketpair, unix_only, 1);
    check_setid(&prog, "strict");
    printf("strict: %u instructions\n", (unsigned)prog.len);
    {
        uint64_t none[6] = { 0 };
        CHECK(decide(&prog, SYS_getpid, none) == SECCOMP_RET_ALLOW);
        for (size_t i = 0; i < strict->seccomp.n_deny; i++) {
            int nr = seccomp_syscall_resolve_name(strict->seccomp.deny[i]);
            CHECK_MSG(nr >= 0 && decide(&prog, nr, none) == (SECCOMP_RET_ERRNO | EPERM), "strict: %s not denied",
                      strict->seccomp.deny[i]);
        }
    }
    status = run(&prog, strict_body, "strict");
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "strict child status %#x", status);
#if defined(__x86_64__)
    status = run(&prog, x32_body, "strict x32");
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS, "x32 child status %#x", status);
#endif
    mini_bpf_free(&prog);
    CHECK(prog.insns == NULL && prog.len == 0);

    strict->seccomp.errno_value = EACCES;
    compile_or_die(&strict->seccomp, &prog);
    status = run(&prog, strict_eacces_body, "strict/EACCES");
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    mini_bpf_free(&prog);

    /* A name the loader would have refused. */
    char *saved = strict->seccomp.deny[0];
    strict->seccomp.deny[0] = "fooo";
    CHECK(mini_seccomp_compile(&strict->seccomp, &prog, &e) == -1);
    CHECK(strstr(e.msg, "fooo") != NULL);
    strict->seccomp.deny[0] = saved;
    /* ERRNO(0) would turn every denial into a success. */
    strict->seccomp.errno_value = 0;
    CHECK(mini_seccomp_compile(&strict->seccomp, &prog, &e) == -1 && prog.insns == NULL);
    mini_profile_free(strict);

    struct mini_profile *perm = mini_profile_load_builtin(dir, "permissive", &e);
    if (!perm) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    compile_or_die(&perm->seccomp, &prog);
    check_setid(&prog, "permissive");
    status = run(&prog, permissive_body, "permissive");
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    mini_bpf_free(&prog);
    mini_profile_free(perm);

    /* Default errno with an allow list: unlisted syscalls get ENOSYS, the
     * argument rules still hold, and the other values of those syscalls
     * still work.  chdir is allowed and denied: the deny list wins.
     * (sigaltstack: AddressSanitizer calls it before _exit.) */
    struct mini_profile *al = profile(
        "{\"seccomp\": {\"default_action\": \"errno\", \"errno\": \"ENOSYS\", \"allow\": [\"getpid\", \"pipe2\","
        " \"write\", \"close\", \"exit_group\", \"exit\", \"ioctl\", \"socket\", \"unshare\", \"clone\", \"clone3\","
        " \"wait4\", \"chdir\", \"sigaltstack\"], \"deny\": [\"chdir\"], \"socket_families\": [\"unix\"]}}");
    compile_or_die(&al->seccomp, &prog);
    {
        /* chmod is not on the allow list: ENOSYS whatever the mode. */
        uint64_t a[6] = { 0, 04755 };
        CHECK(decide(&prog, SYS_chmod, a) == (SECCOMP_RET_ERRNO | ENOSYS));
    }
    status = run(&prog, allowlist_body, "allow list");
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
    mini_bpf_free(&prog);
    mini_profile_free(al);

    /* Default kill: an unlisted syscall ends the process with SIGSYS. */
    struct mini_profile *kill =
        profile("{\"seccomp\": {\"default_action\": \"kill\", \"allow\": [\"write\", \"exit_group\"]}}");
    compile_or_die(&kill->seccomp, &prog);
    status = run(&prog, getppid_body, "default kill");
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS, "status %#x", status);
    mini_bpf_free(&prog);
    mini_profile_free(kill);

    return check_summary();
}
