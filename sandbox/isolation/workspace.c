#include "workspace.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ resolving */

/* "/a//b/./c/" -> "/a/b/c"; NULL (errno EINVAL) on "..". */
static char *normalise(const char *req)
{
    char *out = malloc(strlen(req) + 2), *q = out;
    if (!out)
        return NULL;
    for (const char *p = req; *p;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.')) {
            p += n;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            free(out);
            errno = EINVAL;
            return NULL;
        }
        *q++ = '/';
        memcpy(q, p, n);
        q += n;
        p += n;
    }
    if (q == out)
        *q++ = '/';
    *q = '\0';
    return out;
}

/* The first symlink on the way to path, for the error message. */
static void first_symlink(const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            struct stat st;
            if (lstat(buf, &st) == 0 && S_ISLNK(st.st_mode))
                return;
            *p = c;
            if (!c)
                return;
        }
    }
}

/* Kernels without openat2 (before 5.6): one component at a time. */
static int open_nofollow_walk(const char *canon)
{
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (const char *p = canon + 1; fd >= 0 && *p;) {
        size_t n = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            close(fd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        struct stat st;
        if (next < 0 && saved == ENOTDIR && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            saved = ELOOP;
        close(fd);
        fd = next;
        errno = saved;
        p += n;
        while (*p == '/')
            p++;
    }
    return fd;
}

/* System directories: never a workspace themselves, and nothing beneath
 * the second list either (what the host runs from, its configuration,
 * kernel interfaces, service sockets, other containers' data). */
static const char *const system_exact[] = {
    "/",        "/home", "/tmp", "/var", "/var/tmp", "/var/lib", "/usr",  "/usr/local",
    "/usr/src", "/opt",  "/srv", "/mnt", "/media",   "/root",    "/snap",
};
static const char *const system_trees[] = {
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var/run",
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/libexec",
    "/usr/include",
    "/usr/share",
    "/var/log",
    "/var/spool",
    "/var/mail",
    "/var/cache",
    "/var/backups",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/containers",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/systemd",
};

static bool system_dir(const char *canon)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(system_exact); i++)
        if (strcmp(canon, system_exact[i]) == 0)
            return true;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(system_trees); i++)
        if (mini_path_within(canon, system_trees[i]))
            return true;
    return false;
}

static int system_err(const char *canon, struct mini_err *e)
{
    return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                        "workspace %s: not allowed: a system directory (the root, /home, /tmp, /etc, /usr, /run, "
                        "/proc, /sys, /dev, ... or inside one of them)",
                        canon);
}

int mini_ws_open(const char *req, char **canon, int *fd, struct mini_err *e)
{
    if (req[0] != '/')
        return mini_err_set(e, MINI_E_WORKSPACE_INVALID, "workspace %s: must be an absolute path", req);
    char *c = normalise(req);
    if (!c) {
        if (errno == EINVAL)
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID, "workspace %s: must not contain \"..\"", req);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int f = (int)syscall(SYS_openat2, AT_FDCWD, c, &how, sizeof how);
    if (f < 0 && errno == ENOSYS)
        f = open_nofollow_walk(c);
    if (f < 0) {
        int err = errno;
        if (err == ELOOP && system_dir(c)) {
            system_err(c, e); /* /proc/self: refused as /proc, not as a link */
        } else if (err == ELOOP) {
            char link[4096];
            first_symlink(c, link, sizeof link);
            _cleanup_free_ char *real = realpath(c, NULL);
            mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                         "workspace %s: %s is a symbolic link; a workspace is never reached through one (a link "
                         "planted by an earlier command could redirect it): pass the directory's real path%s%s",
                         c, link, real ? ", " : "", real ? real : "");
        } else {
            mini_err_sys(e, MINI_E_WORKSPACE_INVALID, err, "workspace %s", c);
        }
        free(c);
        return -1;
    }
    *canon = c;
    *fd = f;
    return 0;
}

/* -------------------------------------------------------------- checks */

bool mini_dir_contains(int dir, int inner)
{
    struct stat d, st, up_st;
    if (fstat(dir, &d) < 0)
        return false;
    int cur = fcntl(inner, F_DUPFD_CLOEXEC, 0);
    for (int depth = 0; cur >= 0 && depth < 4096; depth++) {
        if (fstat(cur, &st) < 0)
            break;
        if (st.st_dev == d.st_dev && st.st_ino == d.st_ino) {
            close(cur);
            return true;
        }
        int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (up < 0 || fstat(up, &up_st) < 0) {
            if (up >= 0)
                close(up);
            break;
        }
        close(cur);
        cur = up;
        if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)
            break; /* the root */
    }
    if (cur >= 0)
        close(cur);
    return false;
}

/* Whether the workspace holds path: by identity when it exists, by name
 * as well (it may be created later). */
static bool holds(const char *canon, int ws, const char *path)
{
    if (mini_path_within(path, canon))
        return true;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool r = mini_dir_contains(ws, fd);
    close(fd);
    return r;
}

static bool same_dir(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int mini_ws_check(const struct mini_ws_guard *g, const struct mini_profile *p, const char *canon, int fd,
                  struct mini_err *e)
{
    for (size_t i = 0; i < g->n_homes; i++)
        if (strcmp(canon, g->homes[i]) == 0 || same_dir(fd, g->homes[i]))
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                                "workspace %s: not allowed: it is a home directory, which holds credentials "
                                "(~/.ssh, mini's .env with API keys); use a project directory",
                                canon);
    if (system_dir(canon))
        goto system;
    /* A sandbox that can reach the daemon's socket could replace it, and
     * its state directory holds every session's overlay. */
    for (size_t i = 0; i < g->n_fds; i++)
        if (mini_dir_contains(fd, g->fds[i]))
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID, "workspace %s: not allowed: it holds the daemon's %s",
                                canon, g->what[i]);
    for (size_t i = 0; i < g->n_secrets; i++)
        if (holds(canon, fd, g->secrets[i]))
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                                "workspace %s: not allowed: it holds mini's configuration directory %s, whose "
                                ".env has API keys",
                                canon, g->secrets[i]);
    /* What the profile hides would be visible through the workspace. */
    for (size_t i = 0; p && i < p->n_hide; i++)
        if (holds(canon, fd, p->hide[i]))
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                                "workspace %s: not allowed: it holds %s, which the profile hides", canon, p->hide[i]);
    return 0;
system:
    return system_err(canon, e);
}

/* --------------------------------------------------------------- guard */

static int push(char ***v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], s) == 0)
            return 0;
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    *v = nv;
    if (!(nv[*n] = strdup(s)))
        return -1;
    (*n)++;
    return 0;
}

int mini_ws_guard_add_home(struct mini_ws_guard *g, const char *home)
{
    if (!home || home[0] != '/' || strcmp(home, "/") == 0)
        return 0;
    _cleanup_free_ char *h = normalise(home);
    _cleanup_free_ char *cfg = NULL;
    if (!h || asprintf(&cfg, "%s/.config/mini-swe-agent", h) < 0) {
        cfg = NULL;
        return -1;
    }
    return push(&g->homes, &g->n_homes, h) | push(&g->secrets, &g->n_secrets, cfg);
}

static int guard_fd(struct mini_ws_guard *g, const char *dir, const char *what, struct mini_err *e)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", dir);
    g->what[g->n_fds] = what;
    g->fds[g->n_fds++] = fd;
    return 0;
}

int mini_ws_guard_init(struct mini_ws_guard *g, const char *socket_dir, const char *state_dir, struct mini_err *e)
{
    *g = (struct mini_ws_guard){ 0 };
    if ((socket_dir && guard_fd(g, socket_dir, "socket directory", e) < 0) ||
        guard_fd(g, state_dir, "state directory", e) < 0)
        return -1;
    /* mini's global configuration directory, as mini itself finds it
     * (agent/config/config.c), for the environment the daemon was started in. */
    int r = 0;
    const char *v = getenv("MSWEA_GLOBAL_CONFIG_DIR");
    if (v && v[0] == '/')
        r |= push(&g->secrets, &g->n_secrets, v);
    v = getenv("XDG_CONFIG_HOME");
    _cleanup_free_ char *xdg = NULL;
    if (v && v[0] == '/' && asprintf(&xdg, "%s/mini-swe-agent", v) >= 0)
        r |= push(&g->secrets, &g->n_secrets, xdg);
    r |= mini_ws_guard_add_home(g, getenv("HOME"));
    struct passwd *pw = getpwuid(geteuid());
    if (pw)
        r |= mini_ws_guard_add_home(g, pw->pw_dir);
    if (r < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

void mini_ws_guard_free(struct mini_ws_guard *g)
{
    for (size_t i = 0; i < g->n_fds; i++)
        close(g->fds[i]);
    for (size_t i = 0; i < g->n_homes; i++)
        free(g->homes[i]);
    for (size_t i = 0; i < g->n_secrets; i++)
        free(g->secrets[i]);
    free(g->homes);
    free(g->secrets);
    *g = (struct mini_ws_guard){ 0 };
}

/* ------------------------------------------------------------ host ids */

gid_t mini_ws_owner_group(uid_t uid)
{
    struct passwd *pw = getpwuid(uid);
    if (pw && (pw->pw_gid == 100 || (pw->pw_gid >= 1000 && pw->pw_gid < 65534)))
        return pw->pw_gid;
    return 65534;
}

/* The id map of an idmapped workspace: `from` (the owner) is `to` (the
 * sandbox's host id); every other id is itself, except `to`, which is
 * left unmapped (nothing on disk should have it), so that the map stays
 * one to one.  Ids that are themselves keep their meaning: root's files
 * stay root's, other groups stay groups the sandbox is not in.  (An
 * unmapped owner or group would make a file read-only through the mount.) */
static int format_map(char *buf, size_t size, const unsigned long (*pairs)[2], size_t n_pairs)
{
    const unsigned long end = 4294967295ul; /* (uid_t)-1 is not an id */
    unsigned long pt[2 * MINI_IDMAP_MAX_PAIRS];
    size_t np = 0;
    int n = 0;
    for (size_t i = 0; i < n_pairs; i++) {
        n += snprintf(buf + n, size - (size_t)n, "%lu %lu 1\n", pairs[i][0], pairs[i][1]);
        pt[np++] = pairs[i][0];
        if (pairs[i][1] != pairs[i][0])
            pt[np++] = pairs[i][1];
    }
    /* identity on what lies between the ids mapped above, sorted */
    for (size_t i = 1; i < np; i++)
        for (size_t j = i; j > 0 && pt[j - 1] > pt[j]; j--) {
            unsigned long t = pt[j];
            pt[j] = pt[j - 1];
            pt[j - 1] = t;
        }
    unsigned long lo = 0;
    for (size_t i = 0; i <= np; i++) {
        unsigned long hi = i < np ? pt[i] : end;
        if (hi > lo)
            n += snprintf(buf + n, size - (size_t)n, "%lu %lu %lu\n", lo, lo, hi - lo);
        if (i < np && pt[i] + 1 > lo)
            lo = pt[i] + 1;
    }
    return n;
}

static int write_map(pid_t pid, const char *name, const unsigned long (*pairs)[2], size_t n_pairs, struct mini_err *e)
{
    char path[64], map[512];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int n = format_map(map, sizeof map, pairs, n_pairs);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, map, (size_t)n) != n) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "writing %s", path);
    }
    close(fd);
    return 0;
}

/* The holder of a user namespace being mapped.  It shares the caller's
 * memory (CLONE_VM: no page tables to copy, which made this the most costly
 * step of a root session's open), so it makes system calls only, with every
 * signal blocked, and touches nothing but its own stack until it exits: on
 * end of file on its pipe, which comes once the caller has the namespace.
 * (Neither call can fail here, so the errno it would share with the
 * caller is never written.) */
__attribute__((no_sanitize("address", "undefined"))) static int hold_userns(void *arg)
{
    const int *p = arg;
    char c;
    syscall(SYS_close, p[1]);
    syscall(SYS_read, p[0], &c, 1); /* no EINTR: every signal is blocked */
    syscall(SYS_exit, 0);
    return 0;
}

#define HOLDER_STACK (16 * 1024)

void mini_idmap_holder_reap(struct mini_idmap_holder *h)
{
    if (h->pid > 0)
        while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR)
            ;
    /* Only now is the stack no longer the holder's. */
    if (h->stack)
        munmap(h->stack, HOLDER_STACK);
    if (h->pidfd >= 0)
        close(h->pidfd);
    *h = (struct mini_idmap_holder){ .pid = 0, .pidfd = -1, .stack = NULL };
}

int mini_idmap_userns_pairs(const unsigned long (*uids)[2], size_t n_uids, const unsigned long (*gids)[2],
                            size_t n_gids, struct mini_idmap_holder *later, struct mini_err *e)
{
    if (n_uids > MINI_IDMAP_MAX_PAIRS || n_gids > MINI_IDMAP_MAX_PAIRS)
        return mini_err_set(e, MINI_E_INTERNAL, "too many id pairs");
    struct mini_idmap_holder h = { .pid = 0, .pidfd = -1, .stack = NULL };
    h.stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (h.stack == MAP_FAILED)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "a stack for an id mapping's holder");
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        int err = errno;
        munmap(h.stack, HOLDER_STACK);
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "pipe");
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int flags = CLONE_VM | CLONE_NEWUSER | SIGCHLD | (later ? CLONE_PIDFD : 0);
    h.pid = clone(hold_userns, (char *)h.stack + HOLDER_STACK, flags, p, &h.pidfd);
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(p[0]);
    int fd = -1;
    if (h.pid < 0) {
        h.pid = 0;
        h.pidfd = -1;
        mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "creating a user namespace for an id mapping");
    } else if (write_map(h.pid, "uid_map", uids, n_uids, e) == 0 && write_map(h.pid, "gid_map", gids, n_gids, e) == 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/user", (int)h.pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "opening %s", path);
    }
    close(p[1]); /* the holder may go */
    /* Waiting for it here costs its being scheduled (half a millisecond
     * when the other cores are busy): a caller that can reaps it later. */
    if (later && h.pid > 0 && fd >= 0)
        *later = h;
    else
        mini_idmap_holder_reap(&h);
    return fd;
}

int mini_idmap_userns(uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_idmap_holder *later,
                      struct mini_err *e)
{
    const unsigned long u[1][2] = { { from, to } }, g[1][2] = { { gfrom, gto } };
    return mini_idmap_userns_pairs(u, 1, g, 1, later, e);
}

bool mini_ws_quota_probe(int dir, char *why, size_t size)
{
#ifdef SYS_quotactl_fd
    struct if_dqinfo info;
    /* QCMD() shifts an int past its range (UB): build the command unsigned. */
    unsigned cmd = ((unsigned)Q_GETINFO << SUBCMDSHIFT) | (PRJQUOTA & SUBCMDMASK);
    long r = syscall(SYS_quotactl_fd, dir, cmd, 0, &info);
    int err = r < 0 ? errno : 0;
#else
    int err = ENOSYS;
#endif
    switch (err) {
    case 0: snprintf(why, size, "kernel project quotas: on for this filesystem (mini does not set them)"); break;
    case ENOSYS: snprintf(why, size, "kernel project quotas: no quotactl_fd (Linux 5.14+ with CONFIG_QUOTA)"); break;
    case ESRCH:
        snprintf(why, size,
                 "kernel project quotas: off on this filesystem (ext4: mkfs -O quota,project and mount "
                 "-o prjquota; XFS: mount -o prjquota)");
        break;
    default: snprintf(why, size, "kernel project quotas: none on this filesystem (%s)", strerror(err)); break;
    }
    return err == 0;
}
