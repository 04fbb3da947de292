/* Landlock confinement for the degraded path (see landlock.h). */
#include "landlock.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define FS_ABI1 ((1ULL << 13) - 1)
#define FILE_RIGHTS \
    (MINI_LL_FS_EXECUTE | MINI_LL_FS_WRITE_FILE | MINI_LL_FS_READ_FILE | MINI_LL_FS_TRUNCATE | MINI_LL_FS_IOCTL_DEV)
#define RO_RIGHTS (MINI_LL_FS_EXECUTE | MINI_LL_FS_READ_FILE | MINI_LL_FS_READ_DIR)
#define DEV_RIGHTS (MINI_LL_FS_READ_FILE | MINI_LL_FS_WRITE_FILE | MINI_LL_FS_TRUNCATE | MINI_LL_FS_IOCTL_DEV)
#define PROC_RIGHTS (MINI_LL_FS_READ_FILE | MINI_LL_FS_READ_DIR)

int mini_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

static uint64_t handled_fs_for(int abi)
{
    uint64_t fs = FS_ABI1;
    if (abi >= 2)
        fs |= MINI_LL_FS_REFER;
    if (abi >= 3)
        fs |= MINI_LL_FS_TRUNCATE;
    if (abi >= 5)
        fs |= MINI_LL_FS_IOCTL_DEV;
    return fs;
}

/* ---------------------------------------------------------------- plan */

static void note(struct mini_landlock_plan *pl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct mini_landlock_plan *pl, const char *fmt, ...)
{
    if (pl->n_notes >= MINI_LANDLOCK_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pl->notes[pl->n_notes++], sizeof pl->notes[0], fmt, ap);
    va_end(ap);
}

int mini_landlock_plan_add(struct mini_landlock_plan *pl, const char *path, uint64_t access, struct mini_err *e)
{
    access &= pl->handled_fs;
    if (!access)
        return 0;
    for (size_t i = 0; i < pl->n_rules; i++)
        if (strcmp(pl->rules[i].path, path) == 0) {
            pl->rules[i].access |= access;
            return 0;
        }
    if (pl->n_rules >= MINI_LANDLOCK_MAX_RULES)
        return mini_err_set(e, MINI_E_SPAWN_FAILED,
                            "Landlock: more than %d rules (too many entries beside "
                            "hidden paths)",
                            MINI_LANDLOCK_MAX_RULES);
    if (pl->n_rules == pl->cap_rules) {
        size_t cap = pl->cap_rules ? pl->cap_rules * 2 : 64;
        struct mini_landlock_rule *r = realloc(pl->rules, cap * sizeof *r);
        if (!r)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        pl->rules = r;
        pl->cap_rules = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    pl->rules[pl->n_rules++] = (struct mini_landlock_rule){ copy, access };
    return 0;
}

struct excl {
    char **v;
    size_t n;
};

static void excl_free(struct excl *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->v[i]);
    free(x->v);
    x->v = NULL;
    x->n = 0;
}

static int excl_add(struct excl *x, const char *path)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->v[i], path) == 0)
            return 0;
    char **v = realloc(x->v, (x->n + 1) * sizeof *v);
    if (!v)
        return -1;
    x->v = v;
    if (!(v[x->n] = strdup(path)))
        return -1;
    x->n++;
    return 0;
}

/* The path as given and, when it exists, with symlinks resolved: a hidden
 * /var/run/x must also hide /run/x. */
static int excl_add_both(struct excl *x, const char *path)
{
    if (excl_add(x, path) < 0)
        return -1;
    char *rp = realpath(path, NULL);
    int r = rp ? excl_add(x, rp) : 0;
    free(rp);
    return r;
}

static bool excluded(const struct excl *x, const char *path)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->v[i], path) == 0)
            return true;
    return false;
}

/* Some exclusion lies strictly below dir. */
static bool excl_below(const struct excl *x, const char *dir)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->v[i], dir) != 0 && mini_path_within(x->v[i], dir))
            return true;
    return false;
}

/* Grant access to every entry of dir except the excluded ones, recursing
 * into the entries that lead to an exclusion. */
static int carve(struct mini_landlock_plan *pl, const char *dir, uint64_t access, const struct excl *x, int depth,
                 char *listed, size_t listed_size, struct mini_err *e)
{
    if (depth > 32)
        return mini_err_set(e, MINI_E_SPAWN_FAILED, "Landlock: %s: hidden paths nested too deeply", dir);
    size_t ll = strlen(listed);
    if (ll + strlen(dir) + 3 < listed_size)
        snprintf(listed + ll, listed_size - ll, "%s%s", ll ? ", " : "", dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == EACCES || errno == ENOENT || errno == ENOTDIR)
            return 0; /* nothing below it is granted */
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: listing %s", dir);
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof path || excluded(x, path))
            continue;
        struct stat st;
        if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
            continue; /* a symlink is followed to its target, which has its own rule or none */
        if (S_ISDIR(st.st_mode) && excl_below(x, path))
            rc = carve(pl, path, access, x, depth + 1, listed, listed_size, e);
        else
            rc = mini_landlock_plan_add(pl, path, S_ISDIR(st.st_mode) ? access : access & FILE_RIGHTS, e);
    }
    closedir(d);
    return rc;
}

static int add_tree(struct mini_landlock_plan *pl, const char *path, uint64_t access, const struct excl *x,
                    char *listed, size_t listed_size, struct mini_err *e)
{
    if (excluded(x, path))
        return 0;
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    if (S_ISDIR(st.st_mode) && excl_below(x, path))
        return carve(pl, path, access, x, 0, listed, listed_size, e);
    return mini_landlock_plan_add(pl, path, S_ISDIR(st.st_mode) ? access : access & FILE_RIGHTS, e);
}

static int resolve(const char *what, const char *path, char **out, struct mini_err *e)
{
    *out = realpath(path, NULL);
    if (!*out)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: %s %s", what, path);
    return 0;
}

int mini_landlock_plan(struct mini_landlock_plan *pl, const struct mini_profile *p, const char *workspace,
                       const char *tmpdir, struct mini_err *e)
{
    memset(pl, 0, sizeof *pl);
    int abi = mini_landlock_abi();
    if (abi < 1)
        return mini_err_sys(e, MINI_E_ISOLATION_UNAVAILABLE, errno ? errno : ENOSYS, "Landlock is unavailable");
    if (abi > MINI_LANDLOCK_ABI_MAX)
        abi = MINI_LANDLOCK_ABI_MAX;
    pl->abi = abi;
    pl->handled_fs = handled_fs_for(abi);
    bool net_none = p->network == MINI_NET_NONE;
    if (abi >= 4 && net_none)
        pl->handled_net = MINI_LL_NET_BIND_TCP | MINI_LL_NET_CONNECT_TCP;
    if (abi >= 6)
        pl->scoped = MINI_LL_SCOPE_SIGNAL | (net_none ? MINI_LL_SCOPE_ABSTRACT_UNIX_SOCKET : 0);
    pl->deny_unix_sockets = true;
    pl->deny_inet_sockets = net_none;
    pl->deny_setsid = true;

    struct excl x = { 0 };
    char listed[512] = "";
    char *ws = NULL, *tmp = NULL;
    int rc = -1;
    bool oom = false;
    for (size_t i = 0; i < p->n_hide; i++)
        oom |= excl_add_both(&x, p->hide[i]) < 0;
    for (size_t i = 0; i < p->n_tmpfs; i++)
        oom |= excl_add_both(&x, p->tmpfs[i].path) < 0;
    /* replaced by their own rules below */
    oom |= excl_add(&x, "/dev") < 0 || excl_add(&x, "/proc") < 0;
    if (oom) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }

    for (size_t i = 0; i < p->n_binds; i++) {
        const struct mini_bind *b = &p->binds[i];
        char *rp = realpath(b->path, NULL);
        if (!rp) {
            if (errno == ENOENT && b->optional)
                continue;
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: bind source %s", b->path);
            goto out;
        }
        uint64_t access = b->writable ? pl->handled_fs : RO_RIGHTS;
        int r = excluded(&x, b->path) ? 0 : add_tree(pl, rp, access, &x, listed, sizeof listed, e);
        free(rp);
        if (r < 0)
            goto out;
    }
    if (mini_landlock_plan_add(pl, "/proc", PROC_RIGHTS, e) < 0 ||
        mini_landlock_plan_add(pl, "/dev", MINI_LL_FS_READ_DIR, e) < 0)
        goto out;
    static const char *const devs[] = {
        "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(devs); i++)
        if (access(devs[i], F_OK) == 0 && mini_landlock_plan_add(pl, devs[i], DEV_RIGHTS, e) < 0)
            goto out;
    if (resolve("workspace", workspace, &ws, e) < 0 ||
        mini_landlock_plan_add(pl, ws, p->workspace_writable ? pl->handled_fs : RO_RIGHTS, e) < 0)
        goto out;
    if (tmpdir &&
        (resolve("temporary directory", tmpdir, &tmp, e) < 0 || mini_landlock_plan_add(pl, tmp, pl->handled_fs, e) < 0))
        goto out;

    note(pl,
         "Landlock ABI %d: reads only beneath the profile's binds, /proc and /dev nodes; writes only to "
         "the workspace%s%s",
         abi, p->workspace_writable ? "" : " (read-only)", tmpdir ? " and $TMPDIR" : "");
    if (listed[0])
        note(pl, "hidden paths are carved out of the allowed trees; these directories cannot be listed: %s", listed);
    if (p->n_tmpfs)
        note(pl, "no fresh tmpfs on %s%s: the host's directory is not writable there; use $TMPDIR", p->tmpfs[0].path,
             p->n_tmpfs > 1 ? " and the profile's other tmpfs paths" : "");
    if (net_none)
        note(pl, "network none: socket() refused for every family (socketpair works)%s",
             abi >= 4 ? "; Landlock denies TCP bind and connect" : "");
    else
        note(pl, "Unix sockets: socket(AF_UNIX) refused (socketpair works)%s",
             abi >= 6 ? "" : "; abstract sockets are not scoped (Landlock ABI < 6)");
    note(pl, "setsid and setpgid are refused: the command stays in its process group");
    if (abi < 6)
        note(pl, "signals are not scoped (Landlock ABI %d < 6): the command can signal the user's processes", abi);
    rc = 0;
out:
    free(ws);
    free(tmp);
    excl_free(&x);
    if (rc < 0)
        mini_landlock_plan_free(pl);
    return rc;
}

void mini_landlock_plan_free(struct mini_landlock_plan *pl)
{
    for (size_t i = 0; i < pl->n_rules; i++)
        free(pl->rules[i].path);
    free(pl->rules);
    pl->rules = NULL;
    pl->n_rules = pl->cap_rules = 0;
}

/* ------------------------------------------------------------- enforce */

#define ARG0_LO (offsetof(struct seccomp_data, args[0]) + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0))

static int load_supplement(const struct mini_landlock_plan *pl)
{
    uint32_t arch = seccomp_arch_native();
    uint32_t unix_act = pl->deny_unix_sockets ? (SECCOMP_RET_ERRNO | EACCES) : SECCOMP_RET_ALLOW;
    uint32_t net_act = pl->deny_inet_sockets ? (SECCOMP_RET_ERRNO | EAFNOSUPPORT) : SECCOMP_RET_ALLOW;
    uint32_t sid = pl->deny_setsid ? (uint32_t)SYS_setsid : 0xffffffffu;
    uint32_t pgid = pl->deny_setsid ? (uint32_t)SYS_setpgid : 0xffffffffu;
#ifdef __x86_64__
    uint32_t x32 = 0x40000000u; /* __X32_SYSCALL_BIT */
#else
    uint32_t x32 = 0xffffffffu; /* never reached: syscall numbers are small */
#endif
    struct sock_filter f[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 8), /* -> 10 kill */
        /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, x32, 6, 0),                  /* -> 10 kill */
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, sid, 6, 0),                  /* -> 11 EPERM */
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pgid, 5, 0),                 /* -> 11 EPERM */
        /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)SYS_socket, 0, 2), /* else -> 9 allow */
        /* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
        /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 3, 4), /* -> 12 unix, 13 other */
        /* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        /* 12 */ BPF_STMT(BPF_RET | BPF_K, unix_act),
        /* 13 */ BPF_STMT(BPF_RET | BPF_K, net_act),
    };
    struct sock_fprog prog = { .len = (unsigned short)MINI_ARRAY_SIZE(f), .filter = f };
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int mini_landlock_scope_abstract(struct mini_err *e)
{
    if (mini_landlock_abi() < 6)
        return 1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "setting no_new_privs");
    struct ll_ruleset_attr attr = { .scoped = MINI_LL_SCOPE_ABSTRACT_UNIX_SOCKET };
    int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rfd < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: creating the abstract socket scope");
    long ret = syscall(SYS_landlock_restrict_self, rfd, 0);
    int err = errno;
    close(rfd);
    if (ret < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "Landlock: scoping abstract sockets");
    return 0;
}

int mini_landlock_enforce(const struct mini_landlock_plan *pl, struct mini_err *e)
{
    if (pl->abi < 1)
        return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "Landlock: empty plan");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "setting no_new_privs");
    struct ll_ruleset_attr attr = {
        .handled_access_fs = pl->handled_fs,
        .handled_access_net = pl->handled_net,
        .scoped = pl->scoped,
    };
    size_t size = pl->abi >= 6 ? sizeof attr
        : pl->abi >= 4         ? offsetof(struct ll_ruleset_attr, scoped)
                               : offsetof(struct ll_ruleset_attr, handled_access_net);
    int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rfd < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: creating the ruleset (ABI %d)", pl->abi);
    for (size_t i = 0; i < pl->n_rules; i++) {
        const struct mini_landlock_rule *r = &pl->rules[i];
        int fd = open(r->path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            if (errno == ENOENT || errno == ELOOP || errno == EACCES)
                continue;
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "Landlock: opening %s", r->path);
            close(rfd);
            return -1;
        }
        struct stat st;
        struct ll_path_beneath_attr pb = { .allowed_access = r->access & pl->handled_fs, .parent_fd = fd };
        if (fstat(fd, &st) < 0)
            st.st_mode = 0; /* unknown: granted nothing */
        if (!S_ISDIR(st.st_mode))
            pb.allowed_access &= FILE_RIGHTS;
        long ret = 0;
        if (pb.allowed_access && st.st_mode && !S_ISLNK(st.st_mode))
            ret = syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH_BENEATH, &pb, 0);
        int err = errno;
        close(fd);
        if (ret < 0) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "Landlock: rule for %s", r->path);
            close(rfd);
            return -1;
        }
    }
    long ret = syscall(SYS_landlock_restrict_self, rfd, 0);
    int err = errno;
    close(rfd);
    if (ret < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "Landlock: restricting the process");
    if (load_supplement(pl) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "installing the degraded-mode seccomp filter");
    return 0;
}

int mini_landlock_apply(const struct mini_profile *p, const char *workspace, const char *tmpdir, struct mini_err *e)
{
    struct mini_landlock_plan pl;
    if (mini_landlock_plan(&pl, p, workspace, tmpdir, e) < 0)
        return -1;
    int r = mini_landlock_enforce(&pl, e);
    mini_landlock_plan_free(&pl);
    return r;
}
