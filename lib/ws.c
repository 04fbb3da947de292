/* Which directory may be a workspace (mini/ws.h). */
#include "mini/io.h"
#include "mini/ws.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* Whether the workspace holds path: by name (it may be created later),
 * and by identity when it exists: its real path (every link resolved, so
 * a link elsewhere into the workspace counts) and each directory above
 * that, compared with the workspace by device and inode.  No search
 * permission on path itself is needed (a root-only directory the profile
 * hides, checked by a rootless daemon). */
static bool holds(const char *canon, int ws, const char *path)
{
    if (mini_path_within(path, canon))
        return true;
    struct stat w;
    if (fstat(ws, &w) < 0)
        return true; /* cannot tell: held */
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real)
        return false; /* not there: the name was checked */
    for (char *end = real + strlen(real); end > real;) {
        *end = '\0';
        struct stat st;
        if (lstat(real[0] ? real : "/", &st) == 0 && st.st_dev == w.st_dev && st.st_ino == w.st_ino)
            return true;
        end = strrchr(real, '/');
        if (!end)
            break;
    }
    return false;
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
    for (size_t i = 0; i < g->n_fds; i++) {
        int in = mini_dir_within(g->fds[i], fd);
        /* A walk that fails is no answer: busy when the daemon is out of
         * fds or memory, else refused (never taken as "not held"). */
        if (in < 0)
            return mini_err_sys(
                e, errno == EMFILE || errno == ENFILE || errno == ENOMEM ? MINI_E_BUSY : MINI_E_WORKSPACE_INVALID,
                errno, "workspace %s: telling whether it holds the daemon's %s", canon, g->what[i]);
        if (in > 0)
            return mini_err_set(e, MINI_E_WORKSPACE_INVALID, "workspace %s: not allowed: it holds the daemon's %s",
                                canon, g->what[i]);
    }
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
        (state_dir && guard_fd(g, state_dir, "state directory", e) < 0))
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
