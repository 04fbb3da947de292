/* Seccomp programs from profile policies, compiled with libseccomp for the
 * native architecture and exported as classic BPF (see seccomp_prog.h).
 *
 * Rules, in the order they are added:
 *   - every syscall in `deny`: ERRNO(errno_value), unconditionally;
 *   - io_uring_*: ERRNO(errno_value) always, because an io_uring
 *     IORING_OP_SOCKET would create sockets behind the family rules;
 *   - ioctl TIOCSTI / TIOCLINUX (deny_tty_injection), compared on the low 32
 *     bits only, as the kernel reads the command as an unsigned int;
 *   - clone / unshare with a CLONE_NEW* flag: EPERM, and clone3: ENOSYS
 *     (deny_namespace_clone; its flags sit in memory the filter cannot see,
 *     and ENOSYS makes glibc fall back to clone);
 *   - chmod, fchmod, fchmodat, creat, open, openat, mknod, mknodat with
 *     S_ISUID or S_ISGID in the mode: EPERM, in every profile (a sandbox
 *     never leaves a setuid or setgid file on the host); openat2 and
 *     fchmodat2 (modes out of the filter's sight): ENOSYS;
 *   - socket / socketpair with a family outside `socket_families`:
 *     EAFNOSUPPORT, as ranges (see family_rules; any high bit set in the
 *     64-bit register counts as out of range).  AF_VSOCK and AF_ALG are
 *     never allowed; socketpair only ever for AF_UNIX.
 * The program's length matters: every sandbox loads it and the kernel
 * JIT-compiles it again each time, at a cost that grows with its length.
 * With default_action "allow" the rules above are the whole program.  With
 * "errno" or "kill" the syscalls in `allow` are allowed too; for the
 * syscalls that carry argument rules, the allowed argument values are
 * spelled out as further conditional rules, since an unconditional rule
 * would replace the conditional ones in libseccomp. */
#include "seccomp_prog.h"
#include "mini/cleanup.h"
#include "mini/io.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Namespace flags that clone(2) accepts; its low byte is the exit signal,
 * so CLONE_NEWTIME (0x80) only means a time namespace to unshare(2). */
#define CLONE_NS_FLAGS \
    (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
#define UNSHARE_NS_FLAGS (CLONE_NS_FLAGS | CLONE_NEWTIME)

/* clone(2)'s flags argument: the second one on s390, the first elsewhere. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

struct comp {
    scmp_filter_ctx ctx;
    uint32_t def;          /* the default action */
    uint32_t deny;         /* ERRNO(errno_value) */
    int *denied, *allowed; /* resolved `deny` and `allow` */
    size_t n_denied, n_allowed;
    int handled[32]; /* syscalls given argument rules (at most 19:
                                   * io_uring_*, ioctl, clone, clone3, unshare,
                                   * socket, socketpair, the setid group) */
    size_t n_handled;
    struct mini_err *e;
};

static bool has(const int *v, size_t n, int nr)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == nr)
            return true;
    return false;
}

/* Whether a syscall gets past the deny list and the default action. */
static bool allowed(const struct comp *c, int nr)
{
    if (has(c->denied, c->n_denied, nr))
        return false;
    return c->def == SCMP_ACT_ALLOW || has(c->allowed, c->n_allowed, nr);
}

static int rule(struct comp *c, uint32_t action, int nr, unsigned n, const struct scmp_arg_cmp *args)
{
    if (action == c->def)
        return 0; /* the default already does it (and libseccomp refuses such rules) */
    int r = seccomp_rule_add_array(c->ctx, action, nr, n, args);
    if (r < 0) {
        char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        mini_err_sys(c->e, MINI_E_INTERNAL, -r, "seccomp: adding a rule for %s", name ? name : "?");
        free(name);
        return -1;
    }
    return 0;
}

static int resolve(struct comp *c, const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr < 0)
        mini_err_set(c->e, MINI_E_PROFILE_INVALID, "seccomp: unknown syscall \"%s\"", name);
    return nr;
}

static int resolve_all(struct comp *c, char **names, size_t n, int **out, size_t *n_out)
{
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out)
        return mini_err_set(c->e, MINI_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int nr = resolve(c, names[i]);
        if (nr < 0)
            return -1;
        (*out)[(*n_out)++] = nr;
    }
    return 0;
}

/* Mark an allow-listed syscall as covered by argument rules. */
static void handled(struct comp *c, int nr)
{
    if (c->n_handled < MINI_ARRAY_SIZE(c->handled))
        c->handled[c->n_handled++] = nr;
}

/* ALLOW rules for every value of the argument's low 32 bits except those in
 * `except` (sorted or not), each a single masked comparison: walk the binary
 * trie of the excluded values from the top bit down and allow every subtree
 * that holds none of them. */
static int allow_all_but(struct comp *c, int nr, unsigned arg, const uint32_t *except, size_t n, uint32_t mask,
                         uint32_t value, int bit)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= (except[i] & mask) == value;
    if (!any) {
        struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, mask, value);
        return rule(c, SCMP_ACT_ALLOW, nr, 1, &cmp);
    }
    if (bit < 0)
        return 0; /* exactly one of the excluded values */
    uint32_t b = 1u << bit;
    if (allow_all_but(c, nr, arg, except, n, mask | b, value, bit - 1) < 0)
        return -1;
    return allow_all_but(c, nr, arg, except, n, mask | b, value | b, bit - 1);
}

static int deny_always(struct comp *c, const char *name)
{
    int nr = resolve(c, name);
    if (nr < 0)
        return -1;
    if (!allowed(c, nr))
        return 0;
    handled(c, nr);
    return rule(c, c->deny, nr, 0, NULL);
}

static int tty_rules(struct comp *c)
{
    static const uint32_t cmds[] = { TIOCSTI, TIOCLINUX };
    int nr = SCMP_SYS(ioctl);
    if (!allowed(c, nr))
        return 0;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(cmds); i++) {
        struct scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, cmds[i]);
        if (rule(c, c->deny, nr, 1, &cmp) < 0)
            return -1;
    }
    handled(c, nr);
    return allow_all_but(c, nr, 1, cmds, MINI_ARRAY_SIZE(cmds), 0, 0, 31);
}

/* EPERM for any of `flags` in argument `arg`; ALLOW when none is set. */
static int ns_flag_rules(struct comp *c, int nr, unsigned arg, uint64_t flags)
{
    if (!allowed(c, nr))
        return 0;
    for (int bit = 0; bit < 64; bit++) {
        uint64_t f = 1ull << bit;
        if (!(flags & f))
            continue;
        struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, f, f);
        if (rule(c, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp) < 0)
            return -1;
    }
    handled(c, nr);
    struct scmp_arg_cmp none = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, flags, 0);
    return rule(c, SCMP_ACT_ALLOW, nr, 1, &none);
}

static int ns_rules(struct comp *c)
{
    if (ns_flag_rules(c, SCMP_SYS(clone), CLONE_FLAGS_ARG, CLONE_NS_FLAGS) < 0 ||
        ns_flag_rules(c, SCMP_SYS(unshare), 0, UNSHARE_NS_FLAGS) < 0)
        return -1;
    int nr = SCMP_SYS(clone3);
    if (!allowed(c, nr))
        return 0;
    handled(c, nr);
    return rule(c, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL);
}

/* No setuid or setgid bit, ever: a sandbox's files are host files.  The
 * mode argument of each call that sets one: EPERM when it has S_ISUID or
 * S_ISGID (masked, so high garbage in the register does not matter),
 * ALLOW otherwise.  openat2 carries its mode in memory the filter cannot
 * read, and fchmodat2 may be unknown to this libseccomp: ENOSYS, on
 * which libc falls back to openat / fchmodat. */
static int setid_rules(struct comp *c)
{
    static const struct {
        const char *name;
        unsigned arg;
    } calls[] = {
        { "chmod", 1 }, { "fchmod", 1 }, { "fchmodat", 2 }, { "creat", 1 },
        { "open", 2 },  { "openat", 3 }, { "mknod", 1 },    { "mknodat", 2 },
    };
    static const uint64_t bits[] = { S_ISUID, S_ISGID, S_ISUID | S_ISGID };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(calls); i++) {
        int nr = seccomp_syscall_resolve_name(calls[i].name);
        if (nr < 0 || !allowed(c, nr))
            continue; /* not on this architecture (open, creat, chmod, mknod on arm64) */
        for (size_t b = 0; b < MINI_ARRAY_SIZE(bits); b++) {
            struct scmp_arg_cmp cmp = SCMP_CMP(calls[i].arg, SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, bits[b]);
            if (rule(c, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp) < 0)
                return -1;
        }
        handled(c, nr);
        struct scmp_arg_cmp none = SCMP_CMP(calls[i].arg, SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, 0);
        if (rule(c, SCMP_ACT_ALLOW, nr, 1, &none) < 0)
            return -1;
    }
    int nrs[2] = { seccomp_syscall_resolve_name("openat2"), seccomp_syscall_resolve_name("fchmodat2") };
#if defined(__x86_64__) || defined(__aarch64__)
    if (nrs[1] < 0)
        nrs[1] = 452; /* fchmodat2, Linux 6.6 */
#endif
    for (size_t i = 0; i < 2; i++) {
        if (nrs[i] < 0 || !allowed(c, nrs[i]))
            continue;
        handled(c, nrs[i]);
        if (rule(c, SCMP_ACT_ERRNO(ENOSYS), nrs[i], 0, NULL) < 0)
            return -1;
    }
    return 0;
}

static bool family_ok(const struct mini_seccomp_policy *pol, int af, bool pair)
{
    if (af == AF_VSOCK || af == AF_ALG || (pair && af != AF_UNIX))
        return false;
    for (size_t i = 0; i < pol->n_socket_families; i++)
        if (pol->socket_families[i] == af)
            return true;
    return false;
}

/* Deny every family that family_ok() refuses, in few rules: one for
 * everything above the largest allowed family (which also catches high bits
 * set in the 64-bit register), and for each gap below it the aligned blocks
 * that cover it, each one masked comparison.  A rule per family would cost
 * about a hundred instructions, and every instruction is paid for again
 * when each sandbox loads and JIT-compiles the program. */
static int family_rules(struct comp *c, const struct mini_seccomp_policy *pol, int nr, bool pair)
{
    if (!allowed(c, nr))
        return 0;
    const uint32_t refuse = SCMP_ACT_ERRNO(EAFNOSUPPORT);
    int top = -1;
    for (int af = 0; af < AF_MAX; af++) {
        if (!family_ok(pol, af, pair))
            continue;
        struct scmp_arg_cmp eq = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)af, 0);
        if (rule(c, SCMP_ACT_ALLOW, nr, 1, &eq) < 0)
            return -1;
        top = af;
    }
    for (int lo = 0; lo < top;) {
        if (family_ok(pol, lo, pair)) {
            lo++;
            continue;
        }
        int hi = lo;
        while (hi + 1 < top && !family_ok(pol, hi + 1, pair))
            hi++;
        /* [lo, hi] as aligned power-of-two blocks. */
        while (lo <= hi) {
            uint64_t size = 1;
            while ((lo & (int)(size * 2 - 1)) == 0 && lo + (int)(size * 2) - 1 <= hi)
                size *= 2;
            struct scmp_arg_cmp blk = SCMP_A0(SCMP_CMP_MASKED_EQ, ~(size - 1), (scmp_datum_t)lo);
            if (rule(c, refuse, nr, 1, &blk) < 0)
                return -1;
            lo += (int)size;
        }
    }
    handled(c, nr);
    if (top < 0)
        return rule(c, refuse, nr, 0, NULL);
    struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, (scmp_datum_t)top, 0);
    return rule(c, refuse, nr, 1, &above);
}

/* Classic BPF out of libseccomp, through a memfd (libseccomp 2.5 can only
 * export to a file descriptor). */
static int export(struct comp *c, struct mini_bpf *out)
{
    _cleanup_close_ int fd = memfd_create("mini-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(c->e, MINI_E_INTERNAL, errno, "seccomp: memfd_create");
    int r = seccomp_export_bpf(c->ctx, fd);
    if (r < 0)
        return mini_err_sys(c->e, MINI_E_INTERNAL, -r, "seccomp: exporting the program");
    if (lseek(fd, 0, SEEK_SET) < 0)
        return mini_err_sys(c->e, MINI_E_INTERNAL, errno, "seccomp: reading the program back");
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_to_end(fd, &b, BPF_MAXINSNS * sizeof(struct sock_filter)) < 0)
        return mini_err_sys(c->e, MINI_E_INTERNAL, errno, "seccomp: reading the program back");
    if (b.len == 0 || b.len % sizeof(struct sock_filter))
        return mini_err_set(c->e, MINI_E_INTERNAL, "seccomp: exported program has %zu bytes", b.len);
    size_t len;
    out->insns = (struct sock_filter *)(void *)mini_buf_steal(&b, &len);
    if (!out->insns)
        return mini_err_set(c->e, MINI_E_NOMEM, "out of memory");
    out->len = (unsigned short)(len / sizeof(struct sock_filter));
    return 0;
}

static int build(struct comp *c, const struct mini_seccomp_policy *pol)
{
    static const char *const io_uring[] = { "io_uring_setup", "io_uring_enter", "io_uring_register" };
    int r = seccomp_attr_set(c->ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r == 0)
        r = seccomp_attr_set(c->ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (r < 0)
        return mini_err_sys(c->e, MINI_E_INTERNAL, -r, "seccomp: setting filter attributes");
    if (resolve_all(c, pol->deny, pol->n_deny, &c->denied, &c->n_denied) < 0 ||
        resolve_all(c, pol->allow, pol->n_allow, &c->allowed, &c->n_allowed) < 0)
        return -1;
    for (size_t i = 0; i < c->n_denied; i++)
        if (rule(c, c->deny, c->denied[i], 0, NULL) < 0)
            return -1;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(io_uring); i++)
        if (deny_always(c, io_uring[i]) < 0)
            return -1;
    if (pol->deny_tty_injection && tty_rules(c) < 0)
        return -1;
    if (pol->deny_namespace_clone && ns_rules(c) < 0)
        return -1;
    if (setid_rules(c) < 0)
        return -1;
    if (family_rules(c, pol, SCMP_SYS(socket), false) < 0 || family_rules(c, pol, SCMP_SYS(socketpair), true) < 0)
        return -1;
    for (size_t i = 0; i < c->n_allowed; i++) {
        int nr = c->allowed[i];
        if (allowed(c, nr) && !has(c->handled, c->n_handled, nr) && rule(c, SCMP_ACT_ALLOW, nr, 0, NULL) < 0)
            return -1;
    }
    return 0;
}

int mini_seccomp_compile(const struct mini_seccomp_policy *pol, struct mini_bpf *out, struct mini_err *e)
{
    *out = (struct mini_bpf){ NULL, 0 };
    /* SCMP_ACT_ERRNO(0) would make every denied call "succeed". */
    if (pol->errno_value <= 0 || pol->errno_value > 4095)
        return mini_err_set(e, MINI_E_INTERNAL, "seccomp: bad errno value %d", pol->errno_value);
    struct comp c = { .deny = SCMP_ACT_ERRNO((uint32_t)pol->errno_value), .e = e };
    switch (pol->default_action) {
    case MINI_SECCOMP_ALLOW: c.def = SCMP_ACT_ALLOW; break;
    case MINI_SECCOMP_ERRNO: c.def = c.deny; break;
    case MINI_SECCOMP_KILL: c.def = SCMP_ACT_KILL_PROCESS; break;
    default: return mini_err_set(e, MINI_E_INTERNAL, "seccomp: bad default action %d", (int)pol->default_action);
    }
    c.ctx = seccomp_init(c.def);
    if (!c.ctx)
        return mini_err_set(e, MINI_E_INTERNAL, "seccomp: cannot initialise libseccomp");
    int r = build(&c, pol);
    if (r == 0)
        r = export(&c, out);
    seccomp_release(c.ctx);
    free(c.denied);
    free(c.allowed);
    return r;
}

int mini_seccomp_load(const struct mini_bpf *prog)
{
    struct sock_fprog fprog = { .len = prog->len, .filter = prog->insns };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
        return -errno;
    return 0;
}

void mini_bpf_free(struct mini_bpf *prog)
{
    free(prog->insns);
    prog->insns = NULL;
    prog->len = 0;
}
