/* What this machine offers, found by trying it (see caps.h): namespaces,
 * seccomp, Landlock, overlayfs in a user namespace, signs of a container;
 * the cgroup hierarchies are found and tested by cgroup.c (mini_cgroups_find,
 * _test, _conclude). */
#include "caps.h"
#include "caps_util.h"
#include "cgroup.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
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

/* ------------------------------------------------------------- names */

static const char *const ns_names[MINI_NS_COUNT] = { "user", "pid", "net", "mount", "ipc", "uts", "cgroup" };
static const unsigned long ns_flags[MINI_NS_COUNT] = {
    CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP,
};

const char *mini_ns_name(enum mini_ns_index i) { return (unsigned)i < MINI_NS_COUNT ? ns_names[i] : "?"; }

static const char *const secact_names[MINI_SECACT_COUNT] = {
    "kill_process", "kill_thread", "trap", "errno", "user_notif", "trace", "log", "allow",
};
static const uint32_t secact_values[MINI_SECACT_COUNT] = {
    SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO,
    SECCOMP_RET_USER_NOTIF,   SECCOMP_RET_TRACE,       SECCOMP_RET_LOG,  SECCOMP_RET_ALLOW,
};

const char *mini_seccomp_act_name(unsigned bit_index)
{
    return bit_index < MINI_SECACT_COUNT ? secact_names[bit_index] : "?";
}

static const char *const cgc_names[MINI_CGC_COUNT] = { "memory", "pids", "cpu", "cpuacct", "freezer" };

const char *mini_cg_ctrl_name(enum mini_cg_ctrl c) { return (unsigned)c < MINI_CGC_COUNT ? cgc_names[c] : "?"; }

const char *mini_cg_mode_name(enum mini_cg_mode m)
{
    switch (m) {
    case MINI_CG_V1: return "v1";
    case MINI_CG_V2: return "v2";
    default: return "none";
    }
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

/* ------------------------------------------------------------ probes */

/* A probe runs in a child created by clone3 with the given namespace
 * flags (plain fork semantics otherwise) and reports where it stopped
 * and why through a pipe.  The child only makes system calls. */
enum probe_stage {
    ST_OK = 0,
    ST_CLONE,
    ST_UIDMAP,
    ST_SETGROUPS,
    ST_GIDMAP,
    ST_MOUNT,
    ST_TMPFS,
    ST_MKDIR,
    ST_OVERLAY,
    ST_NNP,
    ST_FILTER,
    ST_CHILD,
};
static const char *const stage_names[] = {
    "ok",    "clone3", "uid_map", "setgroups",    "gid_map",        "mount",
    "tmpfs", "mkdir",  "overlay", "no_new_privs", "seccomp filter", "child",
};

struct probe_res {
    int stage;
    int err;
};

struct probe_arg {
    uid_t uid;
    gid_t gid;
    bool map;           /* write the id maps (in a new user namespace) */
    bool mount_private; /* then make the mounts private (needs CAP_SYS_ADMIN in it) */
    bool overlay;       /* then mount an overlay on tmpfs */
    bool seccomp;       /* install an allow-all seccomp filter */
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

/* --------------------------------------------------------- AppArmor */

void mini_caps_apparmor(struct mini_caps *c, const char *proc_root, const char *sys_root)
{
    char path[MINI_CAPS_PATH_MAX];
    setf(path, sizeof path, "%s/sys/kernel/apparmor_restrict_unprivileged_userns", proc_root);
    long v = read_long(path);
    c->apparmor_restrict_userns = v == 0 || v == 1 ? (int)v : -1;
    /* One line per loaded profile: "NAME (MODE)".  Bounded: a machine
     * has hundreds, not millions. */
    c->apparmor_profile_loaded = -1;
    setf(path, sizeof path, "%s/kernel/security/apparmor/profiles", sys_root);
    FILE *f = fopen(path, "re");
    if (f) {
        char line[512];
        c->apparmor_profile_loaded = 0;
        for (int n = 0; n < 100000 && fgets(line, sizeof line, f); n++)
            if (strncmp(line, MINI_APPARMOR_PROFILE " (", strlen(MINI_APPARMOR_PROFILE) + 2) == 0) {
                c->apparmor_profile_loaded = 1;
                break;
            }
        if (ferror(f))
            c->apparmor_profile_loaded = -1;
        fclose(f);
    }
    _cleanup_free_ char *file = mini_exe_relative(MINI_BIN_TO_DATA "/apparmor/" MINI_APPARMOR_PROFILE);
    copy_str(c->apparmor_profile_file, sizeof c->apparmor_profile_file, file ? file : "");
}

void mini_caps_apparmor_remedy(const struct mini_caps *c, char *buf, size_t size)
{
    buf[0] = '\0';
    if (c->apparmor_restrict_userns != 1 || c->root || c->apparmor_profile_loaded == 1)
        return;
    setf(buf, size,
         "load the AppArmor profile " MINI_APPARMOR_PROFILE " that grants `userns` to mini-sandboxd "
         "(the Debian package installs it): sudo install -m 0644 %s /etc/apparmor.d/ && "
         "sudo apparmor_parser -r /etc/apparmor.d/" MINI_APPARMOR_PROFILE
         " (first edit the program paths in it if this install was moved), "
         "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
         c->apparmor_profile_file[0] ? c->apparmor_profile_file : "share/mini/apparmor/" MINI_APPARMOR_PROFILE);
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
        appendf(why, wn,
                ": AppArmor restricts unprivileged user namespaces "
                "(kernel.apparmor_restrict_unprivileged_userns=1)");
        mini_caps_apparmor_remedy(c, rem, rn);
    } else if (u->err == EUSERS) {
        appendf(why, wn, ": the nesting limit of user namespaces is reached");
        copy_str(rem, rn, "run the daemon in a less deeply nested user namespace");
    } else if (c->seccomp_mode_self == 2) {
        appendf(why, wn, ": a seccomp filter on the daemon refuses it%s%s%s", c->in_container ? " (container: " : "",
                c->in_container ? c->container : "", c->in_container ? ")" : "");
        copy_str(rem, rn,
                 "run the container with a seccomp profile that allows clone/unshare with CLONE_NEWUSER "
                 "(docker/podman run --security-opt seccomp=unconfined), or use a profile that may degrade");
    } else if (c->in_container) {
        appendf(why, wn, ": the container (%s) does not allow nested user namespaces", c->container);
        copy_str(rem, rn,
                 "allow user namespaces in the container (e.g. podman --userns=auto, "
                 "docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined)");
    } else {
        copy_str(rem, rn,
                 "enable unprivileged user namespaces (sysctl user.max_user_namespaces, "
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

static void detect_seccomp_actions(struct mini_caps *c)
{
    for (unsigned i = 0; i < MINI_SECACT_COUNT; i++) {
        uint32_t act = secact_values[i];
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0)
            c->seccomp_actions |= 1u << i;
    }
}

static void detect_seccomp_filter(struct mini_caps *c)
{
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
        static const struct {
            const char *needle, *kind;
        } pats[] = {
            { "/docker", "docker" }, { "kubepods", "kubernetes" },   { "/lxc", "lxc" },
            { "libpod", "podman" },  { "containerd", "containerd" }, { "/machine.slice/", "systemd-nspawn" },
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

int mini_caps_detect_reads(struct mini_caps *c, struct mini_err *e)
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
    mini_caps_apparmor(c, "/proc", "/sys");
    detect_self_status(c);
    detect_container(c);
    detect_seccomp_actions(c);
    detect_landlock(c);
    mini_cgroups_find(c);
    return 0;
}

void mini_caps_detect_children(struct mini_caps *c)
{
    detect_namespaces(c);
    detect_seccomp_filter(c);
    detect_overlay(c);
    detect_userns_why(c);
}

bool mini_caps_children_all_ok(const struct mini_caps *c)
{
    for (int i = 0; i < MINI_NS_COUNT; i++)
        if (!c->ns[i].ok)
            return false;
    return c->ns_all && c->seccomp && c->overlay_userns;
}

void mini_caps_set_children_all_ok(struct mini_caps *c)
{
    for (int i = 0; i < MINI_NS_COUNT; i++)
        c->ns[i] = (struct mini_caps_ns){ .ok = true };
    c->ns_all = true;
    c->ns_all_err = 0;
    c->seccomp = true;
    c->seccomp_err = 0;
    c->overlay_userns = true;
    c->overlay_err = 0;
    c->overlay_stage[0] = '\0';
    detect_userns_why(c);
}

int mini_caps_detect(struct mini_caps *c, struct mini_err *e)
{
    if (mini_caps_detect_reads(c, e) < 0)
        return -1;
    mini_cgroups_test(c, false);
    mini_cgroups_conclude(c);
    mini_caps_detect_children(c);
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
    cJSON *aa = jadd(&j, o, "apparmor", cJSON_CreateObject());
    jadd(&j, aa, "restrict_unprivileged_userns", jnum_or_null(c->apparmor_restrict_userns));
    jadd(&j, aa, "profile", cJSON_CreateString(MINI_APPARMOR_PROFILE));
    jadd(&j, aa, "profile_loaded",
         c->apparmor_profile_loaded < 0 ? cJSON_CreateNull() : cJSON_CreateBool(c->apparmor_profile_loaded));
    jadd(&j, aa, "profile_file", cJSON_CreateString(c->apparmor_profile_file));
    char aa_rem[MINI_CAPS_TEXT_MAX];
    mini_caps_apparmor_remedy(c, aa_rem, sizeof aa_rem);
    jadd(&j, aa, "remedy", aa_rem[0] ? cJSON_CreateString(aa_rem) : cJSON_CreateNull());

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
