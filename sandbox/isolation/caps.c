/* Capability detection and per-profile assessment (see caps.h). */
#include "caps.h"
#include "mini/cleanup.h"
#include "mini/path.h"
#include "mini/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif

#define ALL_NS (MINI_FEAT_USER_NS | MINI_FEAT_PID_NS | MINI_FEAT_NET_NS | MINI_FEAT_MOUNT_NS | \
                MINI_FEAT_IPC_NS | MINI_FEAT_UTS_NS | MINI_FEAT_CGROUP_NS)

/* ------------------------------------------------------------- names */

static const char *const ns_names[MINI_NS_COUNT] = { "user", "pid", "net", "mount", "ipc", "uts", "cgroup" };
static const unsigned long ns_flags[MINI_NS_COUNT] = {
    CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP,
};

const char *mini_ns_name(enum mini_ns_index i)
{
    return (unsigned)i < MINI_NS_COUNT ? ns_names[i] : "?";
}

static const char *const secact_names[MINI_SECACT_COUNT] = {
    "kill_process", "kill_thread", "trap", "errno", "user_notif", "trace", "log", "allow",
};
static const uint32_t secact_values[MINI_SECACT_COUNT] = {
    SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO,
    SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE, SECCOMP_RET_LOG, SECCOMP_RET_ALLOW,
};

const char *mini_seccomp_act_name(unsigned bit_index)
{
    return bit_index < MINI_SECACT_COUNT ? secact_names[bit_index] : "?";
}

static const char *const cgc_names[MINI_CGC_COUNT] = { "memory", "pids", "cpu", "cpuacct", "freezer" };

const char *mini_cg_ctrl_name(enum mini_cg_ctrl c)
{
    return (unsigned)c < MINI_CGC_COUNT ? cgc_names[c] : "?";
}

const char *mini_cg_mode_name(enum mini_cg_mode m)
{
    switch (m) {
    case MINI_CG_V1: return "v1";
    case MINI_CG_V2: return "v2";
    default: return "none";
    }
}

const char *mini_assess_status_name(enum mini_assess_status s)
{
    switch (s) {
    case MINI_ASSESS_FULL: return "full";
    case MINI_ASSESS_DEGRADED: return "degraded";
    default: return "refused";
    }
}

const char *mini_exec_path_name(enum mini_exec_path p)
{
    return p == MINI_PATH_LANDLOCK ? "landlock" : "namespaces";
}

/* ----------------------------------------------------------- helpers */

/* Bounded append to a NUL-terminated buffer; truncates silently. */
static void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strnlen(buf, size);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* Format into a buffer, truncating silently (always NUL-terminated). */
static void setf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* Copy with truncation; always NUL-terminates. */
static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
}

/* Read a small file into buf (NUL-terminated, trailing newline removed).
 * Returns the length, or -1 with errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    ssize_t n = mini_read_full(fd, buf, size - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return n;
}

static long read_long(const char *path)
{
    char buf[64];
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    return v;
}

static int write_str(const char *path, const char *s)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    return mini_write_all(fd, s, strlen(s));
}

static bool word_in(const char *list, const char *word, const char *seps)
{
    size_t wl = strlen(word);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, seps);
        if (n == wl && strncmp(p, word, wl) == 0)
            return true;
        p += n;
        if (*p)
            p++;
    }
    return false;
}

static bool path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* ------------------------------------------------------------ probes */

/* A probe runs in a child created by clone3 with the given namespace
 * flags (plain fork semantics otherwise) and reports where it stopped
 * and why through a pipe.  The child only makes system calls. */
enum probe_stage {
    ST_OK = 0, ST_CLONE, ST_UIDMAP, ST_SETGROUPS, ST_GIDMAP, ST_MOUNT, ST_TMPFS, ST_MKDIR, ST_OVERLAY,
    ST_NNP, ST_FILTER, ST_CHILD,
};
static const char *const stage_names[] = {
    "ok", "clone3", "uid_map", "setgroups", "gid_map", "mount", "tmpfs", "mkdir", "overlay",
    "no_new_privs", "seccomp filter", "child",
};

struct probe_res {
    int stage;
    int err;
};

struct probe_arg {
    uid_t uid;
    gid_t gid;
    bool map;            /* write the id maps (in a new user namespace) */
    bool mount_private;  /* then make the mounts private (needs CAP_SYS_ADMIN in it) */
    bool overlay;        /* then mount an overlay on tmpfs */
    bool seccomp;        /* install an allow-all seccomp filter */
};

/* "0 ID 1\n": map the namespace's root to one host id. */
static int write_map(const char *path, unsigned id)
{
    char buf[64];
    snprintf(buf, sizeof buf, "0 %u 1\n", id);
    return write_str(path, buf);
}

static int probe_overlay(int *stage)
{
    static const char *const bases[] = { "/tmp", "/mnt", "/run", "/var/tmp", "/dev/shm" };
    const char *base = NULL;
    *stage = ST_TMPFS;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(bases) && !base; i++)
        if (mount("mini-probe", bases[i], "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") == 0)
            base = bases[i];
    if (!base)
        return -1;
    char l[64], u[64], w[64], m[64], opts[256];
    snprintf(l, sizeof l, "%s/l", base);
    snprintf(u, sizeof u, "%s/u", base);
    snprintf(w, sizeof w, "%s/w", base);
    snprintf(m, sizeof m, "%s/m", base);
    *stage = ST_MKDIR;
    if (mkdir(l, 0755) < 0 || mkdir(u, 0755) < 0 || mkdir(w, 0755) < 0 || mkdir(m, 0755) < 0)
        return -1;
    *stage = ST_OVERLAY;
    /* userxattr (Linux 5.11) is what rootfs.c uses in a user namespace. */
    snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", l, u, w);
    if (mount("overlay", m, "overlay", MS_NOSUID | MS_NODEV, opts) == 0)
        return 0;
    snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", l, u, w);
    return mount("overlay", m, "overlay", MS_NOSUID | MS_NODEV, opts);
}

static int probe_seccomp(int *stage)
{
    struct sock_filter insn = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = { .len = 1, .filter = &insn };
    *stage = ST_NNP;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    *stage = ST_FILTER;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static int probe_child(const struct probe_arg *a, int *stage)
{
    if (a->map) {
        *stage = ST_UIDMAP;
        if (write_map("/proc/self/uid_map", (unsigned)a->uid) < 0)
            return -1;
        *stage = ST_SETGROUPS;
        if (write_str("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
            return -1;
        *stage = ST_GIDMAP;
        if (write_map("/proc/self/gid_map", (unsigned)a->gid) < 0)
            return -1;
    }
    if (a->mount_private) {
        *stage = ST_MOUNT;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            return -1;
    }
    if (a->overlay && probe_overlay(stage) < 0)
        return -1;
    if (a->seccomp && probe_seccomp(stage) < 0)
        return -1;
    *stage = ST_OK;
    return 0;
}

/* Run one probe.  0 with *r filled (r->stage ST_OK on success), or -1 with
 * errno when the probe could not be run at all (pipe). */
static int run_probe(unsigned long flags, const struct probe_arg *a, struct probe_res *r)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    long pid;
    if (flags) {
        struct clone_args ca = { .flags = flags, .exit_signal = SIGCHLD };
        pid = syscall(SYS_clone3, &ca, sizeof ca);
    } else {
        pid = fork();
    }
    if (pid < 0) {
        *r = (struct probe_res){ ST_CLONE, errno };
        close(p[0]);
        close(p[1]);
        return 0;
    }
    if (pid == 0) {
        close(p[0]);
        struct probe_res res = { ST_OK, 0 };
        errno = 0;
        if (probe_child(a, &res.stage) < 0)
            res.err = errno ? errno : EIO;
        if (write(p[1], &res, sizeof res) != (ssize_t)sizeof res)
            _exit(2);
        _exit(0);
    }
    close(p[1]);
    struct probe_res res;
    ssize_t n = mini_read_full(p[0], &res, sizeof res);
    close(p[0]);
    int st;
    while (waitpid((pid_t)pid, &st, __WALL) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof res)
        res = (struct probe_res){ ST_CHILD, ECHILD };
    *r = res;
    return 0;
}

/* ------------------------------------------------------- namespaces */

static void detect_userns_why(struct mini_caps *c)
{
    const struct mini_caps_ns *u = &c->ns[MINI_NS_USER];
    char *why = c->userns_why, *rem = c->userns_remedy;
    size_t wn = sizeof c->userns_why, rn = sizeof c->userns_remedy;
    why[0] = rem[0] = '\0';
    if (u->ok)
        return;
    if (!path_exists("/proc/self/ns/user")) {
        copy_str(why, wn, "the kernel has no user namespaces (CONFIG_USER_NS is off)");
        copy_str(rem, rn, "use a kernel built with CONFIG_USER_NS=y");
        return;
    }
    appendf(why, wn, "creating a user namespace failed (%s)", strerror(u->err));
    if (c->max_user_namespaces == 0) {
        appendf(why, wn, ": user.max_user_namespaces is 0");
        copy_str(rem, rn, "sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)");
    } else if (c->unprivileged_userns_clone == 0 && !c->root) {
        appendf(why, wn, ": kernel.unprivileged_userns_clone is 0");
        copy_str(rem, rn, "sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)");
    } else if (c->apparmor_restrict_userns == 1 && !c->root) {
        appendf(why, wn, ": AppArmor restricts unprivileged user namespaces "
                "(kernel.apparmor_restrict_unprivileged_userns=1)");
        copy_str(rem, rn, "install an AppArmor profile granting `userns,` to mini-sandboxd (docs/isolation.md), "
                 "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
    } else if (u->err == EUSERS) {
        appendf(why, wn, ": the nesting limit of user namespaces is reached");
        copy_str(rem, rn, "run the daemon in a less deeply nested user namespace");
    } else if (c->seccomp_mode_self == 2) {
        appendf(why, wn, ": a seccomp filter on the daemon refuses it%s%s%s",
                c->in_container ? " (container: " : "", c->in_container ? c->container : "",
                c->in_container ? ")" : "");
        copy_str(rem, rn, "run the container with a seccomp profile that allows clone/unshare with CLONE_NEWUSER "
                 "(docker/podman run --security-opt seccomp=unconfined), or use a profile that may degrade");
    } else if (c->in_container) {
        appendf(why, wn, ": the container (%s) does not allow nested user namespaces", c->container);
        copy_str(rem, rn, "allow user namespaces in the container (e.g. podman --userns=auto, "
                 "docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined)");
    } else {
        copy_str(rem, rn, "enable unprivileged user namespaces (sysctl user.max_user_namespaces, "
                 "kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)");
    }
}

static void detect_namespaces(struct mini_caps *c)
{
    struct probe_arg a = { .uid = geteuid(), .gid = getegid(), .map = true };
    struct probe_res r;
    /* The user namespace must be usable, not just creatable (AppArmor's
     * restriction lets the clone succeed and takes the capabilities):
     * write the maps and change mount propagation in it. */
    a.mount_private = true;
    if (run_probe(CLONE_NEWUSER | CLONE_NEWNS, &a, &r) == 0) {
        c->ns[MINI_NS_USER].ok = r.stage == ST_OK;
        c->ns[MINI_NS_USER].err = r.err;
        c->ns[MINI_NS_MOUNT] = c->ns[MINI_NS_USER];
    } else {
        c->ns[MINI_NS_USER].err = c->ns[MINI_NS_MOUNT].err = errno;
    }
    a.mount_private = false;
    for (int i = 0; i < MINI_NS_COUNT; i++) {
        if (i == MINI_NS_USER || i == MINI_NS_MOUNT)
            continue;
        if (!c->ns[MINI_NS_USER].ok) {
            c->ns[i].err = c->ns[MINI_NS_USER].err;
            continue;
        }
        if (run_probe(CLONE_NEWUSER | ns_flags[i], &a, &r) == 0) {
            c->ns[i].ok = r.stage == ST_OK;
            c->ns[i].err = r.err;
        } else {
            c->ns[i].err = errno;
        }
    }
    unsigned long all = 0;
    for (int i = 0; i < MINI_NS_COUNT; i++)
        all |= ns_flags[i];
    if (c->ns[MINI_NS_USER].ok && run_probe(all, &a, &r) == 0) {
        c->ns_all = r.stage == ST_OK;
        c->ns_all_err = r.err;
    } else {
        c->ns_all_err = c->ns[MINI_NS_USER].err;
    }
    /* Root without user namespaces: say which namespaces work alone. */
    if (!c->ns[MINI_NS_USER].ok && c->root) {
        struct probe_arg none = { 0 };
        for (int i = 1; i < MINI_NS_COUNT; i++)
            if (run_probe(ns_flags[i], &none, &r) == 0)
                c->ns[i].ok_alone = r.stage == ST_OK;
    }
}

/* ---------------------------------------------------------- seccomp */

static void detect_self_status(struct mini_caps *c)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Seccomp:", 8) == 0)
            c->seccomp_mode_self = atoi(line + 8);
        else if (strncmp(line, "NoNewPrivs:", 11) == 0)
            c->no_new_privs_self = atoi(line + 11) != 0;
    }
}

static void detect_seccomp(struct mini_caps *c)
{
    for (unsigned i = 0; i < MINI_SECACT_COUNT; i++) {
        uint32_t act = secact_values[i];
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
            c->seccomp_actions |= 1u << i;
    }
    struct probe_arg a = { .seccomp = true };
    struct probe_res r;
    if (run_probe(0, &a, &r) == 0) {
        c->seccomp = r.stage == ST_OK;
        c->seccomp_err = r.err;
    } else {
        c->seccomp_err = errno;
    }
}

/* ---------------------------------------------------------- Landlock */

static void detect_landlock(struct mini_caps *c)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi > 0) {
        c->landlock_abi = (int)abi;
    } else {
        c->landlock_abi = 0;
        c->landlock_err = errno;
    }
}

/* ----------------------------------------------------------- cgroups */

/* Decode mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

struct cg_mount {
    bool found;
    char point[MINI_CAPS_PATH_MAX];
    char root[MINI_CAPS_PATH_MAX];
};

static void parse_mountinfo(struct cg_mount v1[MINI_CGC_COUNT], struct cg_mount *v2)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *sep = strstr(line, " - ");
        if (!sep)
            continue;
        *sep = '\0';
        char *save = NULL, *fields[5] = { 0 };
        char *tok = strtok_r(line, " ", &save);
        for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " ", &save))
            fields[i] = tok;
        if (!fields[4])
            continue;
        char *save2 = NULL;
        char *fstype = strtok_r(sep + 3, " ", &save2);
        strtok_r(NULL, " ", &save2);   /* source */
        char *super = strtok_r(NULL, " ", &save2);
        if (!fstype || !super)
            continue;
        unescape(fields[3]);
        unescape(fields[4]);
        struct cg_mount m = { .found = true };
        if (strlen(fields[4]) >= sizeof m.point || strlen(fields[3]) >= sizeof m.root)
            continue;
        copy_str(m.point, sizeof m.point, fields[4]);
        copy_str(m.root, sizeof m.root, fields[3]);
        if (strcmp(fstype, "cgroup2") == 0) {
            if (!v2->found)
                *v2 = m;
        } else if (strcmp(fstype, "cgroup") == 0) {
            for (int i = 0; i < MINI_CGC_COUNT; i++)
                if (!v1[i].found && word_in(super, cgc_names[i], ","))
                    v1[i] = m;
        }
    }
    free(line);
}

/* mount point + (own path relative to the mount's root); false when the
 * own cgroup is not below the mount's root (another cgroup namespace). */
static bool join_cg(char *out, size_t size, const struct cg_mount *m, const char *own)
{
    const char *rel = own;
    if (strcmp(m->root, "/") != 0) {
        size_t rl = strlen(m->root);
        if (strncmp(own, m->root, rl) != 0 || (own[rl] != '\0' && own[rl] != '/'))
            return false;
        rel = own + rl;
    }
    if (strcmp(rel, "/") == 0)
        rel = "";
    int n = snprintf(out, size, "%s%s", m->point, rel);
    return n > 0 && (size_t)n < size;
}

/* mkdir + rmdir of a test child: 0 or errno. */
static int try_mkdir(const char *dir, bool *has_kill, bool *has_freeze)
{
    static unsigned seq;
    char path[MINI_CAPS_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/mini-probe-%d-%u", dir, (int)getpid(), ++seq);
    if (mkdir(path, 0755) < 0)
        return errno;
    char f[MINI_CAPS_PATH_MAX + 96];
    if (has_kill) {
        snprintf(f, sizeof f, "%s/cgroup.kill", path);
        *has_kill = path_exists(f);
    }
    if (has_freeze) {
        snprintf(f, sizeof f, "%s/cgroup.freeze", path);
        *has_freeze = path_exists(f);
    }
    for (int i = 0; i < 100 && rmdir(path) < 0 && errno == EBUSY; i++)
        usleep(1000);
    return 0;
}

static unsigned v2_bits(const char *words)
{
    unsigned b = 0;
    if (word_in(words, "memory", " "))
        b |= 1u << MINI_CGC_MEMORY;
    if (word_in(words, "pids", " "))
        b |= 1u << MINI_CGC_PIDS;
    if (word_in(words, "cpu", " "))
        b |= (1u << MINI_CGC_CPU) | (1u << MINI_CGC_CPUACCT);
    return b;
}

static void detect_cgroups(struct mini_caps *c)
{
    struct cg_mount m1[MINI_CGC_COUNT], m2;
    memset(m1, 0, sizeof m1);
    memset(&m2, 0, sizeof m2);
    parse_mountinfo(m1, &m2);

    _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        int hier = atoi(line);
        const char *ctrls = c1 + 1, *own = c2 + 1;
        if (hier == 0 && *ctrls == '\0') {
            if (m2.found && join_cg(c->v2_dir, sizeof c->v2_dir, &m2, own)) {
                c->v2_mounted = true;
                copy_str(c->v2_mount, sizeof c->v2_mount, m2.point);
            }
            continue;
        }
        for (int i = 0; i < MINI_CGC_COUNT; i++) {
            if (!m1[i].found || !word_in(ctrls, cgc_names[i], ","))
                continue;
            struct mini_caps_cg1 *v = &c->v1[i];
            v->hierarchy = hier;
            v->mounted = join_cg(v->dir, sizeof v->dir, &m1[i], own);
            if (!v->mounted)
                v->dir[0] = '\0';
        }
    }
    free(line);

    for (int i = 0; i < MINI_CGC_COUNT; i++) {
        struct mini_caps_cg1 *v = &c->v1[i];
        if (v->mounted) {
            v->err = try_mkdir(v->dir, NULL, NULL);
            v->writable = v->err == 0;
        }
    }

    if (c->v2_mounted) {
        char p[MINI_CAPS_PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/cgroup.controllers", c->v2_dir);
        if (read_small(p, c->v2_controllers_text, sizeof c->v2_controllers_text) < 0)
            c->v2_controllers_text[0] = '\0';
        c->v2_controllers = v2_bits(c->v2_controllers_text);
        char sub[128];
        snprintf(p, sizeof p, "%s/cgroup.subtree_control", c->v2_dir);
        if (read_small(p, sub, sizeof sub) >= 0)
            c->v2_subtree = v2_bits(sub);
        bool freeze = false;
        c->v2_err = try_mkdir(c->v2_dir, &c->v2_kill, &freeze);
        c->v2_writable = c->v2_err == 0;
        if (freeze)
            c->v2_controllers |= 1u << MINI_CGC_FREEZER;
        snprintf(p, sizeof p, "%s/cgroup.procs", c->v2_dir);
        bool procs_w = access(p, W_OK) == 0;
        snprintf(p, sizeof p, "%s/cgroup.subtree_control", c->v2_dir);
        bool sub_w = access(p, W_OK) == 0;
        unsigned need = (1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS);
        c->v2_delegated = c->v2_writable && procs_w && sub_w && (c->v2_controllers & need) == need;
    }

    bool v1_mem = c->v1[MINI_CGC_MEMORY].writable, v1_pids = c->v1[MINI_CGC_PIDS].writable;
    if (c->v2_delegated) {
        c->cg_mode = MINI_CG_V2;
        setf(c->cg_why, sizeof c->cg_why, "cgroup v2: %s is delegated (%s)", c->v2_dir, c->v2_controllers_text);
    } else if (v1_mem || v1_pids) {
        c->cg_mode = MINI_CG_V1;
        setf(c->cg_why, sizeof c->cg_why, "cgroup v1: memory %s, pids %s, cpuacct %s, freezer %s",
                 v1_mem ? "writable" : "unavailable", v1_pids ? "writable" : "unavailable",
                 c->v1[MINI_CGC_CPUACCT].writable ? "writable" : "unavailable",
                 c->v1[MINI_CGC_FREEZER].writable ? "writable" : "unavailable");
    } else {
        c->cg_mode = MINI_CG_NONE;
        if (!c->v2_mounted && !c->v1[MINI_CGC_MEMORY].mounted && !c->v1[MINI_CGC_PIDS].mounted) {
            copy_str(c->cg_why, sizeof c->cg_why, "no cgroup hierarchy is mounted");
        } else if (c->v2_mounted && !c->v2_writable) {
            setf(c->cg_why, sizeof c->cg_why,
                     "cgroup v2: the daemon's cgroup %s is not writable (%s): not delegated; run the daemon "
                     "with delegation, e.g. systemd-run --user --scope -p Delegate=yes mini-sandboxd",
                     c->v2_dir, strerror(c->v2_err));
        } else if (c->v2_mounted) {
            setf(c->cg_why, sizeof c->cg_why,
                     "cgroup v2: %s lacks the memory and pids controllers (it has \"%s\")%s", c->v2_dir,
                     c->v2_controllers_text,
                     c->v1[MINI_CGC_MEMORY].mounted ? "; they are bound to cgroup v1, which needs root" : "");
        } else {
            copy_str(c->cg_why, sizeof c->cg_why, "cgroup v1: the memory and pids hierarchies are not writable "
                     "(a v1 host needs a root daemon)");
        }
    }
}

/* ---------------------------------------------------------- overlay */

static void detect_overlay(struct mini_caps *c)
{
    c->overlay_stage[0] = '\0';
    if (!c->ns[MINI_NS_USER].ok) {
        c->overlay_err = c->ns[MINI_NS_USER].err;
        copy_str(c->overlay_stage, sizeof c->overlay_stage, "user namespace");
        return;
    }
    struct probe_arg a = { .uid = geteuid(), .gid = getegid(), .map = true, .mount_private = true, .overlay = true };
    struct probe_res r;
    if (run_probe(CLONE_NEWUSER | CLONE_NEWNS, &a, &r) < 0) {
        c->overlay_err = errno;
        copy_str(c->overlay_stage, sizeof c->overlay_stage, "pipe");
        return;
    }
    c->overlay_userns = r.stage == ST_OK;
    c->overlay_err = r.err;
    if (r.stage != ST_OK && (size_t)r.stage < MINI_ARRAY_SIZE(stage_names))
        copy_str(c->overlay_stage, sizeof c->overlay_stage, stage_names[r.stage]);
}

/* -------------------------------------------------------- container */

static void container_hint(struct mini_caps *c, const char *kind, const char *hint)
{
    c->in_container = true;
    if (!c->container[0] && kind)
        copy_str(c->container, sizeof c->container, kind);
    appendf(c->container_hints, sizeof c->container_hints, "%s%s", c->container_hints[0] ? "; " : "", hint);
}

static void detect_container(struct mini_caps *c)
{
    if (path_exists("/.dockerenv"))
        container_hint(c, "docker", "/.dockerenv exists");
    if (path_exists("/run/.containerenv"))
        container_hint(c, "podman", "/run/.containerenv exists");
    const char *env = getenv("container");
    char buf[4096];
    if (env && *env) {
        snprintf(buf, sizeof buf, "$container=%s", env);
        container_hint(c, env, buf);
    } else {
        /* pid 1's environment (readable by root, or the same user) */
        ssize_t n = read_small("/proc/1/environ", buf, sizeof buf);
        for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1)
            if (strncmp(buf + i, "container=", 10) == 0 && buf[i + 10]) {
                char kind[32], hint[64];
                snprintf(kind, sizeof kind, "%s", buf + i + 10);
                snprintf(hint, sizeof hint, "pid 1 has container=%s", kind);
                container_hint(c, kind, hint);
                break;
            }
    }
    if (getenv("KUBERNETES_SERVICE_HOST"))
        container_hint(c, "kubernetes", "$KUBERNETES_SERVICE_HOST is set");
    if (read_small("/proc/1/cgroup", buf, sizeof buf) > 0) {
        static const struct { const char *needle, *kind; } pats[] = {
            { "/docker", "docker" }, { "kubepods", "kubernetes" }, { "/lxc", "lxc" },
            { "libpod", "podman" }, { "containerd", "containerd" }, { "/machine.slice/", "systemd-nspawn" },
        };
        for (size_t i = 0; i < MINI_ARRAY_SIZE(pats); i++)
            if (strstr(buf, pats[i].needle)) {
                char hint[96];
                snprintf(hint, sizeof hint, "/proc/1/cgroup mentions %s", pats[i].needle);
                container_hint(c, pats[i].kind, hint);
                break;
            }
    }
}

/* ------------------------------------------------------------ detect */

int mini_caps_detect(struct mini_caps *c, struct mini_err *e)
{
    memset(c, 0, sizeof *c);
    if (access("/proc/self/status", R_OK) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "capability detection needs /proc");
    c->euid = geteuid();
    c->root = c->euid == 0;
    struct utsname u;
    if (uname(&u) == 0)
        copy_str(c->kernel, sizeof c->kernel, u.release);
    c->max_user_namespaces = read_long("/proc/sys/user/max_user_namespaces");
    c->unprivileged_userns_clone = (int)read_long("/proc/sys/kernel/unprivileged_userns_clone");
    c->apparmor_restrict_userns = (int)read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    detect_self_status(c);
    detect_container(c);
    detect_namespaces(c);
    detect_userns_why(c);
    detect_seccomp(c);
    detect_landlock(c);
    detect_cgroups(c);
    detect_overlay(c);
    return 0;
}

unsigned mini_caps_features(const struct mini_caps *c)
{
    unsigned f = 0;
    if (c->ns[MINI_NS_USER].ok)
        for (int i = 0; i < MINI_NS_COUNT; i++)
            if (c->ns[i].ok)
                f |= 1u << i;
    unsigned need = MINI_SECACT_ERRNO | MINI_SECACT_KILL_PROCESS | MINI_SECACT_ALLOW;
    if (c->seccomp && (c->seccomp_actions & need) == need)
        f |= MINI_FEAT_SECCOMP;
    if (c->landlock_abi >= 1)
        f |= MINI_FEAT_LANDLOCK;
    if (c->cg_mode != MINI_CG_NONE)
        f |= MINI_FEAT_CGROUPS;
    if (c->overlay_userns)
        f |= MINI_FEAT_OVERLAY;
    return f;
}

/* -------------------------------------------------------------- JSON */

struct jb {
    bool oom;
};

static cJSON *jadd(struct jb *j, cJSON *parent, const char *key, cJSON *item)
{
    if (!item) {
        j->oom = true;
        return NULL;
    }
    if (!parent) {
        cJSON_Delete(item);
        j->oom = true;
        return NULL;
    }
    if (key ? !cJSON_AddItemToObject(parent, key, item) : !cJSON_AddItemToArray(parent, item)) {
        cJSON_Delete(item);
        j->oom = true;
        return NULL;
    }
    return item;
}

static cJSON *jerr(int err)
{
    return err ? cJSON_CreateString(strerror(err)) : cJSON_CreateNull();
}

static cJSON *jstr_or_null(const char *s)
{
    return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *jnum_or_null(long v)
{
    return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

static cJSON *features_json(struct jb *j, unsigned bits)
{
    cJSON *a = cJSON_CreateArray();
    for (unsigned i = 0; a && i < MINI_FEAT_COUNT; i++)
        if (bits & (1u << i))
            jadd(j, a, NULL, cJSON_CreateString(mini_feature_name(i)));
    return a;
}

static cJSON *words_json(struct jb *j, const char *words)
{
    cJSON *a = cJSON_CreateArray();
    for (const char *p = words; a && *p;) {
        size_t n = strcspn(p, " ");
        if (n) {
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
            jadd(j, a, NULL, cJSON_CreateString(w));
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return a;
}

cJSON *mini_caps_to_json(const struct mini_caps *c)
{
    struct jb j = { false };
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    jadd(&j, o, "euid", cJSON_CreateNumber(c->euid));
    jadd(&j, o, "rootless", cJSON_CreateBool(!c->root));
    jadd(&j, o, "kernel", cJSON_CreateString(c->kernel));

    cJSON *ct = jadd(&j, o, "container", cJSON_CreateObject());
    jadd(&j, ct, "inside", cJSON_CreateBool(c->in_container));
    jadd(&j, ct, "kind", jstr_or_null(c->container));
    jadd(&j, ct, "hints", jstr_or_null(c->container_hints));

    cJSON *ns = jadd(&j, o, "namespaces", cJSON_CreateObject());
    for (int i = 0; i < MINI_NS_COUNT; i++) {
        cJSON *n = jadd(&j, ns, ns_names[i], cJSON_CreateObject());
        jadd(&j, n, "available", cJSON_CreateBool(c->ns[i].ok));
        jadd(&j, n, "error", jerr(c->ns[i].ok ? 0 : c->ns[i].err));
        if (!c->ns[MINI_NS_USER].ok && c->root && i != MINI_NS_USER)
            jadd(&j, n, "without_user_ns", cJSON_CreateBool(c->ns[i].ok_alone));
    }
    cJSON *all = jadd(&j, ns, "all", cJSON_CreateObject());
    jadd(&j, all, "available", cJSON_CreateBool(c->ns_all));
    jadd(&j, all, "error", jerr(c->ns_all ? 0 : c->ns_all_err));
    if (c->ns[MINI_NS_USER].ok) {
        jadd(&j, o, "user_ns_unavailable", cJSON_CreateNull());
    } else {
        cJSON *w = jadd(&j, o, "user_ns_unavailable", cJSON_CreateObject());
        jadd(&j, w, "reason", cJSON_CreateString(c->userns_why));
        jadd(&j, w, "remedy", cJSON_CreateString(c->userns_remedy));
    }
    cJSON *sy = jadd(&j, o, "sysctl", cJSON_CreateObject());
    jadd(&j, sy, "user.max_user_namespaces", jnum_or_null(c->max_user_namespaces));
    jadd(&j, sy, "kernel.unprivileged_userns_clone", jnum_or_null(c->unprivileged_userns_clone));
    jadd(&j, sy, "kernel.apparmor_restrict_unprivileged_userns", jnum_or_null(c->apparmor_restrict_userns));

    cJSON *sc = jadd(&j, o, "seccomp", cJSON_CreateObject());
    jadd(&j, sc, "available", cJSON_CreateBool(c->seccomp));
    jadd(&j, sc, "error", jerr(c->seccomp ? 0 : c->seccomp_err));
    cJSON *acts = jadd(&j, sc, "actions", cJSON_CreateArray());
    for (unsigned i = 0; i < MINI_SECACT_COUNT; i++)
        if (c->seccomp_actions & (1u << i))
            jadd(&j, acts, NULL, cJSON_CreateString(secact_names[i]));
    jadd(&j, sc, "daemon_filtered", cJSON_CreateBool(c->seccomp_mode_self == 2));
    jadd(&j, sc, "daemon_no_new_privs", cJSON_CreateBool(c->no_new_privs_self));

    cJSON *ll = jadd(&j, o, "landlock", cJSON_CreateObject());
    jadd(&j, ll, "available", cJSON_CreateBool(c->landlock_abi > 0));
    jadd(&j, ll, "abi", cJSON_CreateNumber(c->landlock_abi));
    jadd(&j, ll, "error", jerr(c->landlock_abi > 0 ? 0 : c->landlock_err));

    cJSON *cg = jadd(&j, o, "cgroups", cJSON_CreateObject());
    jadd(&j, cg, "mode", cJSON_CreateString(mini_cg_mode_name(c->cg_mode)));
    jadd(&j, cg, "detail", cJSON_CreateString(c->cg_why));
    cJSON *v1 = jadd(&j, cg, "v1", cJSON_CreateObject());
    for (int i = 0; i < MINI_CGC_COUNT; i++) {
        if (!c->v1[i].mounted)
            continue;
        cJSON *k = jadd(&j, v1, cgc_names[i], cJSON_CreateObject());
        jadd(&j, k, "path", cJSON_CreateString(c->v1[i].dir));
        jadd(&j, k, "writable", cJSON_CreateBool(c->v1[i].writable));
        jadd(&j, k, "error", jerr(c->v1[i].writable ? 0 : c->v1[i].err));
    }
    cJSON *v2 = jadd(&j, cg, "v2", cJSON_CreateObject());
    jadd(&j, v2, "mounted", cJSON_CreateBool(c->v2_mounted));
    if (c->v2_mounted) {
        jadd(&j, v2, "mount", cJSON_CreateString(c->v2_mount));
        jadd(&j, v2, "path", cJSON_CreateString(c->v2_dir));
        jadd(&j, v2, "controllers", words_json(&j, c->v2_controllers_text));
        jadd(&j, v2, "writable", cJSON_CreateBool(c->v2_writable));
        jadd(&j, v2, "error", jerr(c->v2_writable ? 0 : c->v2_err));
        jadd(&j, v2, "kill", cJSON_CreateBool(c->v2_kill));
        jadd(&j, v2, "delegated", cJSON_CreateBool(c->v2_delegated));
    }

    cJSON *ov = jadd(&j, o, "overlay_userns", cJSON_CreateObject());
    jadd(&j, ov, "available", cJSON_CreateBool(c->overlay_userns));
    jadd(&j, ov, "error", jerr(c->overlay_userns ? 0 : c->overlay_err));
    jadd(&j, ov, "stage", jstr_or_null(c->overlay_userns ? NULL : c->overlay_stage));

    jadd(&j, o, "features", features_json(&j, mini_caps_features(c)));
    if (j.oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* -------------------------------------------------------- assessment */

static unsigned bit_index(unsigned bit)
{
    return (unsigned)__builtin_ctz(bit);
}

static void add_item(struct mini_assessment *a, const char *feature, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_item(struct mini_assessment *a, const char *feature, const char *fmt, ...)
{
    if (a->n_items >= MINI_ASSESS_MAX_ITEMS)
        return;
    struct mini_degradation *d = &a->items[a->n_items++];
    copy_str(d->feature, sizeof d->feature, feature);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->replacement, sizeof d->replacement, fmt, ap);
    va_end(ap);
}


/* The remedy for a missing feature (for `require` refusals). */
static void feature_remedy(const struct mini_caps *c, unsigned bit, char *out, size_t size)
{
    switch (bit) {
    case MINI_FEAT_SECCOMP:
        copy_str(out, size, "use a kernel with CONFIG_SECCOMP_FILTER=y, and in a container allow seccomp(2)");
        return;
    case MINI_FEAT_LANDLOCK:
        if (c->landlock_err == EOPNOTSUPP)
            copy_str(out, size, "Landlock is built in but disabled: add landlock to the lsm= kernel parameter");
        else
            copy_str(out, size, "use a kernel with CONFIG_SECURITY_LANDLOCK=y (Linux 5.13 or later) and landlock in lsm=");
        return;
    case MINI_FEAT_CGROUPS:
        setf(out, size, "%s", c->root ? "mount the cgroup v1 memory and pids controllers, or cgroup v2 with them enabled"
                                           : "run the daemon in a delegated cgroup v2 subtree "
                                             "(systemd-run --user --scope -p Delegate=yes mini-sandboxd), or as root");
        return;
    case MINI_FEAT_OVERLAY:
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_remedy);
        else
            copy_str(out, size, "use Linux 5.11 or later (overlayfs in user namespaces) with overlayfs built in");
        return;
    default:
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_remedy);
        else
            copy_str(out, size, "use a kernel built with that namespace type");
        return;
    }
}

static void feature_detail(const struct mini_caps *c, unsigned bit, char *out, size_t size)
{
    unsigned i = bit_index(bit);
    if (bit & ALL_NS) {
        if (!c->ns[MINI_NS_USER].ok)
            setf(out, size, "%s", c->userns_why);
        else
            setf(out, size, "creating a %s namespace failed (%s)", ns_names[i], strerror(c->ns[i].err));
        return;
    }
    switch (bit) {
    case MINI_FEAT_SECCOMP:
        setf(out, size, "seccomp filters cannot be installed (%s)", strerror(c->seccomp_err ? c->seccomp_err : ENOSYS));
        return;
    case MINI_FEAT_LANDLOCK:
        setf(out, size, "Landlock is unavailable (%s)", strerror(c->landlock_err ? c->landlock_err : ENOSYS));
        return;
    case MINI_FEAT_CGROUPS:
        setf(out, size, "%s", c->cg_why);
        return;
    case MINI_FEAT_OVERLAY:
        setf(out, size, "overlayfs in a user namespace failed at %s (%s)", c->overlay_stage,
                 strerror(c->overlay_err ? c->overlay_err : EINVAL));
        return;
    default:
        setf(out, size, "%s is unavailable", mini_feature_name(i));
    }
}

static void refuse(struct mini_assessment *a, const char *reason, const char *remedy)
{
    a->status = MINI_ASSESS_REFUSED;
    copy_str(a->reason, sizeof a->reason, reason);
    copy_str(a->remedy, sizeof a->remedy, remedy);
    setf(a->summary, sizeof a->summary, "refused: %s", a->reason);
    a->features = 0;
    a->namespaces = 0;
}

static void list_bits(char *out, size_t size, unsigned bits)
{
    out[0] = '\0';
    for (unsigned i = 0; i < MINI_FEAT_COUNT; i++)
        if (bits & (1u << i))
            appendf(out, size, "%s%s", out[0] ? ", " : "", mini_feature_name(i));
}

static void landlock_items(const struct mini_caps *c, const struct mini_profile *p, struct mini_assessment *a,
                           unsigned want_ns)
{
    int abi = c->landlock_abi;
    bool cg = c->cg_mode != MINI_CG_NONE;
    if (want_ns & MINI_FEAT_USER_NS)
        add_item(a, "user_ns", "no capabilities, no_new_privs, an unprivileged host uid (%s); "
                 "Landlock ABI %d confines the filesystem", c->root ? "a root daemon runs commands as the "
                 "workspace owner or nobody" : "the daemon's own", abi);
    if (want_ns & MINI_FEAT_MOUNT_NS)
        add_item(a, "mount_ns", "Landlock: read and execute only beneath the profile's binds, /proc and the "
                 "/dev nodes; write only to the workspace%s and a fresh per-command TMPDIR",
                 p->workspace_writable ? "" : " (read-only here)");
    if (want_ns & MINI_FEAT_PID_NS)
        add_item(a, "pid_ns", "process-group kill%s (seccomp refuses setsid and setpgid); host processes are "
                 "visible in /proc but Landlock forbids tracing%s them", cg ? " and cgroup kill" : "",
                 abi >= 6 ? " or signalling" : "");
    if ((want_ns & MINI_FEAT_NET_NS) && p->network == MINI_NET_NONE)
        add_item(a, "net_ns", "seccomp refuses socket() for every family (socketpair still works)%s; "
                 "no loopback network", abi >= 4 ? "; Landlock denies TCP bind and connect" : "");
    if (want_ns & MINI_FEAT_IPC_NS)
        add_item(a, "ipc_ns", "none: System V IPC and POSIX message queues are shared with the host user%s",
                 abi >= 6 ? "; Landlock scopes abstract Unix sockets" : "");
    if (want_ns & MINI_FEAT_UTS_NS)
        add_item(a, "uts_ns", "none: the command sees the host's name (and cannot change it)");
    if (want_ns & MINI_FEAT_CGROUP_NS)
        add_item(a, "cgroup_ns", "none: /proc/self/cgroup shows host cgroup paths");
    if (p->n_tmpfs) {
        char paths[160] = "";
        for (size_t i = 0; i < p->n_tmpfs; i++)
            appendf(paths, sizeof paths, "%s%s", i ? ", " : "", p->tmpfs[i].path);
        add_item(a, "tmpfs", "a fresh per-command TMPDIR instead of fresh tmpfs on %s (which stay read-only "
                 "or unreadable); its size is bounded only by RLIMIT_FSIZE per file", paths);
    }
    char dirs[200] = "";
    for (size_t b = 0; b < p->n_binds; b++)
        for (size_t h = 0; h < p->n_hide + p->n_tmpfs; h++) {
            const char *hp = h < p->n_hide ? p->hide[h] : p->tmpfs[h - p->n_hide].path;
            if (strcmp(hp, p->binds[b].path) != 0 && mini_path_within(hp, p->binds[b].path)) {
                if (!word_in(dirs, p->binds[b].path, ","))
                    appendf(dirs, sizeof dirs, "%s%s", dirs[0] ? "," : "", p->binds[b].path);
                break;
            }
        }
    if (dirs[0])
        add_item(a, "hide", "Landlock rules carved around the hidden paths: they stay unreadable, but the "
                 "directories leading to them under %s cannot be listed", dirs);
    if (abi < 6)
        add_item(a, "signals", "none: Landlock ABI %d cannot scope signals, so the command can signal the "
                 "daemon user's other processes", abi);
    if (p->network == MINI_NET_HOST)
        add_item(a, "unix_sockets", "none: the command can connect to the host's pathname Unix sockets%s",
                 abi >= 6 ? "" : " and abstract Unix sockets");
}

enum mini_assess_status mini_caps_assess(const struct mini_caps *c, const struct mini_profile *p,
                                         struct mini_assessment *a)
{
    memset(a, 0, sizeof *a);
    unsigned avail = mini_caps_features(c);
    unsigned want_ns = (p->namespaces | MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS) & ALL_NS;
    unsigned want = want_ns | MINI_FEAT_SECCOMP | (p->overlay_root ? MINI_FEAT_OVERLAY : 0) |
                    ((p->limits.memory_bytes || p->limits.pids) ? MINI_FEAT_CGROUPS : 0);
    char detail[MINI_CAPS_TEXT_MAX], remedy[MINI_CAPS_TEXT_MAX], reason[MINI_CAPS_TEXT_MAX];

    unsigned req_missing = p->require & ~avail;
    if (req_missing) {
        char names[200];
        unsigned first = req_missing & -req_missing;
        list_bits(names, sizeof names, req_missing);
        feature_detail(c, first, detail, sizeof detail);
        feature_remedy(c, first, remedy, sizeof remedy);
        setf(reason, sizeof reason, "requires %s, which this machine lacks: %s", names, detail);
        refuse(a, reason, remedy);
        return a->status;
    }
    if (!(avail & MINI_FEAT_SECCOMP)) {
        feature_detail(c, MINI_FEAT_SECCOMP, detail, sizeof detail);
        feature_remedy(c, MINI_FEAT_SECCOMP, remedy, sizeof remedy);
        refuse(a, detail, remedy);
        return a->status;
    }

    unsigned core = MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS |
                    ((want_ns & MINI_FEAT_NET_NS) && p->network == MINI_NET_NONE ? MINI_FEAT_NET_NS : 0);
    if ((avail & core) == core) {
        a->path = MINI_PATH_NAMESPACES;
        a->namespaces = want_ns & avail;
        for (unsigned i = 0; i < MINI_NS_COUNT; i++) {
            unsigned bit = 1u << i;
            if ((want_ns & bit) && !(avail & bit))
                add_item(a, mini_feature_name(i), "none: left out of the clone (%s)", strerror(c->ns[i].err));
        }
        a->features = a->namespaces | MINI_FEAT_SECCOMP;
        if (p->require & MINI_FEAT_LANDLOCK)
            a->features |= MINI_FEAT_LANDLOCK;
        if ((want & MINI_FEAT_OVERLAY) && (avail & MINI_FEAT_OVERLAY))
            a->features |= MINI_FEAT_OVERLAY;
    } else {
        if (c->landlock_abi < 1) {
            feature_detail(c, MINI_FEAT_USER_NS, detail, sizeof detail);
            setf(reason, sizeof reason, "no user namespaces (%s) and no Landlock to confine commands without them",
                     detail);
            setf(remedy, sizeof remedy, "%s; or enable Landlock (Linux 5.13+, landlock in lsm=)",
                     c->userns_remedy[0] ? c->userns_remedy : "enable user namespaces");
            refuse(a, reason, remedy);
            return a->status;
        }
        a->path = MINI_PATH_LANDLOCK;
        a->landlock_abi = c->landlock_abi;
        a->features = MINI_FEAT_SECCOMP | MINI_FEAT_LANDLOCK;
        landlock_items(c, p, a, want_ns);
    }
    if ((want & MINI_FEAT_OVERLAY) && !(a->features & MINI_FEAT_OVERLAY))
        add_item(a, "overlay", "none: the system directories stay read-only, so installs outside the "
                 "workspace fail");
    if (avail & MINI_FEAT_CGROUPS) {
        a->cgroups = true;
        a->features |= MINI_FEAT_CGROUPS;
        if (c->cg_mode == MINI_CG_V1 && p->limits.memory_bytes && !c->v1[MINI_CGC_MEMORY].writable)
            add_item(a, "cgroups", "memory: RLIMIT_AS (address space, not resident memory; no OOM report)");
        if (c->cg_mode == MINI_CG_V1 && p->limits.pids && !c->v1[MINI_CGC_PIDS].writable)
            add_item(a, "cgroups", "pids: RLIMIT_NPROC (counted per user, not per command)");
    } else if (want & MINI_FEAT_CGROUPS) {
        add_item(a, "cgroups", "rlimits: RLIMIT_AS for memory (address space, not resident memory; no OOM "
                 "report), RLIMIT_NPROC for processes (counted per user), RLIMIT_CPU per process");
    }
    a->missing = want & ~a->features;
    a->status = a->n_items || a->missing ? MINI_ASSESS_DEGRADED : MINI_ASSESS_FULL;

    char ns[160] = "";
    for (unsigned i = 0; i < MINI_NS_COUNT; i++)
        if (a->namespaces & (1u << i))
            appendf(ns, sizeof ns, "%s%s", ns[0] ? "," : "", ns_names[i]);
    const char *limits = a->cgroups ? (c->cg_mode == MINI_CG_V2 ? "cgroup v2 limits" : "cgroup v1 limits")
                                    : "rlimits";
    if (a->status == MINI_ASSESS_FULL) {
        setf(a->summary, sizeof a->summary, "full isolation: %s namespaces, seccomp, no_new_privs, no capabilities, %s%s",
                 ns, limits, (a->features & MINI_FEAT_OVERLAY) ? ", session overlay" : "");
    } else if (a->path == MINI_PATH_NAMESPACES) {
        char miss[200] = "";
        for (size_t i = 0; i < a->n_items; i++)
            if (!word_in(miss, a->items[i].feature, ","))
                appendf(miss, sizeof miss, "%s%s", miss[0] ? "," : "", a->items[i].feature);
        setf(a->summary, sizeof a->summary, "degraded: %s namespaces, seccomp, no_new_privs, %s; missing %s",
                 ns, limits, miss);
    } else {
        setf(a->summary, sizeof a->summary,
                 "degraded: no user namespaces; confined by Landlock ABI %d, seccomp, no_new_privs, no capabilities, "
                 "%s, process-group kill%s", a->landlock_abi, limits, a->cgroups ? " and cgroup kill" : "");
    }
    return a->status;
}

cJSON *mini_assessment_to_json(const struct mini_assessment *a)
{
    struct jb j = { false };
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool refused = a->status == MINI_ASSESS_REFUSED;
    jadd(&j, o, "status", cJSON_CreateString(mini_assess_status_name(a->status)));
    jadd(&j, o, "path", refused ? cJSON_CreateNull() : cJSON_CreateString(mini_exec_path_name(a->path)));
    cJSON *ns = jadd(&j, o, "namespaces", cJSON_CreateArray());
    for (unsigned i = 0; i < MINI_NS_COUNT; i++)
        if (a->namespaces & (1u << i))
            jadd(&j, ns, NULL, cJSON_CreateString(ns_names[i]));
    jadd(&j, o, "features", features_json(&j, a->features));
    cJSON *m = jadd(&j, o, "missing", cJSON_CreateArray());
    for (size_t i = 0; i < a->n_items; i++) {
        cJSON *it = jadd(&j, m, NULL, cJSON_CreateObject());
        jadd(&j, it, "feature", cJSON_CreateString(a->items[i].feature));
        jadd(&j, it, "replacement", cJSON_CreateString(a->items[i].replacement));
    }
    jadd(&j, o, "cgroups", cJSON_CreateBool(a->cgroups));
    jadd(&j, o, "landlock_abi", cJSON_CreateNumber(a->path == MINI_PATH_LANDLOCK && !refused ? a->landlock_abi : 0));
    jadd(&j, o, "reason", refused ? cJSON_CreateString(a->reason) : cJSON_CreateNull());
    jadd(&j, o, "remedy", refused ? cJSON_CreateString(a->remedy) : cJSON_CreateNull());
    jadd(&j, o, "summary", cJSON_CreateString(a->summary));
    if (j.oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int mini_assessment_check(const struct mini_assessment *a, const char *profile_name, struct mini_err *e)
{
    if (a->status != MINI_ASSESS_REFUSED)
        return 0;
    return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "profile %s: %s; remedy: %s",
                        profile_name ? profile_name : "?", a->reason, a->remedy);
}
