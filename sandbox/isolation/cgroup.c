/* Per-command cgroups (see cgroup.h). */
#include "cgroup.h"
#include "caps_util.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/path.h"

#include <dirent.h>
#include <errno.h>
#include <sys/file.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PARENT_PREFIX "mini-sandboxd-"
#define CHILD_PREFIX "c-"
#define V2_LEAF "daemon"
#define DESTROY_BUDGET_MS 2000
#define KILL_BUDGET_MS 2000
#define FINI_BUDGET_MS 3000

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* dir + "/" + name, bounded.  0, or -1 with errno ENAMETOOLONG. */
static int path_join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* The file helpers below take dir relative to the directory fd `at`
 * (AT_FDCWD: dir is a full path).  A command group's files are reached
 * from its hierarchy's parent, which the daemon holds open, so that each
 * open walks two names rather than the whole mount path (grp_at). */

/* Write a string to dir/file.  0, or -1 with errno. */
static int cg_write(int at, const char *dir, const char *file, const char *s)
{
    char p[MINI_CG_PATH_MAX + 64];
    if (path_join(p, sizeof p, dir, file) < 0)
        return -1;
    _cleanup_close_ int fd = openat(at, p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = mini_write(fd, s, strlen(s));
    if (n < 0)
        return -1;
    return 0;
}

static int cg_write_u64(int at, const char *dir, const char *file, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
    return cg_write(at, dir, file, buf);
}

/* Read dir/file (at most size-1 bytes).  Length, or -1 with errno. */
static ssize_t cg_read(int at, const char *dir, const char *file, char *buf, size_t size)
{
    char p[MINI_CG_PATH_MAX + 64];
    if (path_join(p, sizeof p, dir, file) < 0)
        return -1;
    _cleanup_close_ int fd = openat(at, p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = mini_read_full(fd, buf, size - 1);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* A number file ("123\n"); -1 if absent or not a number ("max"). */
static int64_t cg_read_i64(int at, const char *dir, const char *file)
{
    char buf[64];
    if (cg_read(at, dir, file, buf, sizeof buf) <= 0)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || v < 0)
        return -1;
    return (int64_t)v;
}

/* The value of "key N" in a flat-keyed file; -1 if absent. */
static int64_t cg_read_key(int at, const char *dir, const char *file, const char *key)
{
    char buf[4096];
    if (cg_read(at, dir, file, buf, sizeof buf) <= 0)
        return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
            char *end;
            long long v = strtoll(line + kl + 1, &end, 10);
            return end == line + kl + 1 || v < 0 ? -1 : (int64_t)v;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* Send SIGKILL to every process listed in dir/cgroup.procs.  Returns the
 * number listed, or -1 if the file cannot be read. */
static int kill_listed(int at, const char *dir)
{
    char p[MINI_CG_PATH_MAX + 64];
    if (path_join(p, sizeof p, dir, "cgroup.procs") < 0)
        return -1;
    int fd = openat(at, p, O_RDONLY | O_CLOEXEC);
    _cleanup_fclose_ FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return err == ENOENT ? 0 : -1;
    }
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1) {
        if (pid > 0 && pid != getpid())
            kill((pid_t)pid, SIGKILL);
        n++;
    }
    return n;
}

static bool valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 60 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* ------------------------------------------------------- pending list */

static void pending_add(struct mini_cgroups *cg, const char *dir)
{
    char **v = realloc(cg->pending, (cg->n_pending + 1) * sizeof *v);
    if (!v)
        return;
    cg->pending = v;
    if ((v[cg->n_pending] = strdup(dir)))
        cg->n_pending++;
}

/* rmdir, killing what is inside once if it is busy.  true when gone. */
static bool remove_dir(const char *dir)
{
    if (rmdir(dir) == 0 || errno == ENOENT)
        return true;
    if (errno == EBUSY) {
        kill_listed(AT_FDCWD, dir);
        if (rmdir(dir) == 0 || errno == ENOENT)
            return true;
    }
    return false;
}

/* Retry removing directories left over by earlier destroys; returns how
 * many are still pending. */
static size_t mini_cgroups_retry_pending(struct mini_cgroups *cg)
{
    size_t k = 0;
    for (size_t i = 0; i < cg->n_pending; i++) {
        if (remove_dir(cg->pending[i]))
            free(cg->pending[i]);
        else
            cg->pending[k++] = cg->pending[i];
    }
    cg->n_pending = k;
    if (k == 0) {
        free(cg->pending);
        cg->pending = NULL;
    }
    return k;
}

/* Remove dir and its sub-groups, bottom up (depth-limited).  With kill,
 * processes inside are killed first; without, only empty groups go.
 * true when dir is gone. */
static bool remove_tree(const char *dir, bool do_kill, int depth)
{
    if (depth > 8)
        return false;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char sub[MINI_CG_PATH_MAX];
            if (path_join(sub, sizeof sub, dir, de->d_name) == 0)
                remove_tree(sub, do_kill, depth + 1);
        }
        closedir(d);
    }
    if (do_kill) {
        int64_t deadline = mini_mono_ms() + 500;
        while (!remove_dir(dir)) {
            if (errno != EBUSY || mini_mono_ms() > deadline)
                return false;
            sleep_ms(2);
        }
        return true;
    }
    return rmdir(dir) == 0 || errno == ENOENT;
}

/* Whether the daemon that made a parent group is alive: it holds an
 * exclusive flock on the directory for its whole life, so the lock is
 * free exactly when it is gone (killed, crashed) -- whatever pid
 * namespace either daemon is in, and whether or not the group is empty
 * (a live daemon's group is empty between commands).  A daemon before
 * these locks counts as alive while its pid runs here. */
static bool parent_owned(const char *dir, int pid)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno != ENOENT;
    bool owned = flock(fd, LOCK_EX | LOCK_NB) < 0;
    close(fd);
    return owned || mini_pid_running(pid);
}

/* Groups of daemons that are gone: mini-sandboxd-<pid> whose lock is
 * free.  Whatever still runs in them was a sandbox of that daemon (one on
 * the Landlock path that outlived it, say): killed, and the groups
 * removed, retrying while the kernel finishes with the dying. */
static void sweep_stale(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid, end = 0;
        if (de->d_type != DT_DIR || sscanf(de->d_name, PARENT_PREFIX "%d%n", &pid, &end) != 1 ||
            de->d_name[end] != '\0' || pid <= 0 || pid == getpid())
            continue;
        char p[MINI_CG_PATH_MAX];
        if (path_join(p, sizeof p, base, de->d_name) == 0 && !parent_owned(p, pid))
            remove_tree(p, true, 0);
    }
    closedir(d);
}

/* ---------------------------------------------------------------- init */

static int make_parent(const char *base, struct mini_cg_hier *h, struct mini_err *e)
{
    char name[64];
    snprintf(name, sizeof name, PARENT_PREFIX "%d", (int)getpid());
    if (path_join(h->parent, sizeof h->parent, base, name) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "cgroup path under %s", base);
    sweep_stale(base);
    if (mkdir(h->parent, 0755) < 0) {
        /* Left by an earlier daemon with our pid (pid reuse after a crash);
         * never one that lives, in another pid namespace. */
        if (errno != EEXIST || parent_owned(h->parent, 0) || !remove_tree(h->parent, false, 0) ||
            mkdir(h->parent, 0755) < 0)
            return mini_err_sys(e, MINI_E_IO, errno ? errno : EEXIST, "creating cgroup %s", h->parent);
    }
    h->lock_fd = open(h->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->lock_fd < 0 || flock(h->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        int err = errno;
        if (h->lock_fd >= 0)
            close(h->lock_fd);
        return mini_err_sys(e, MINI_E_IO, err, "locking cgroup %s", h->parent);
    }
    h->locked = true;
    return 0;
}

static const char *const v2_names[] = { "memory", "pids", "cpu" };
static const unsigned v2_bits_of[] = { 1u << MINI_CGC_MEMORY, 1u << MINI_CGC_PIDS,
                                       (1u << MINI_CGC_CPU) | (1u << MINI_CGC_CPUACCT) };

static void v2_undo(struct mini_cgroups *cg)
{
    char buf[32];
    /* Back to where the daemon was: that group must hand no controllers
     * down, unless it is the root; and a controller can only be disabled
     * once no child enables it further down. */
    for (size_t i = 0; i < MINI_ARRAY_SIZE(v2_names); i++) {
        snprintf(buf, sizeof buf, "-%s", v2_names[i]);
        if (cg->n_hier && (cg->hier[0].ctrls & v2_bits_of[i] & ~(1u << MINI_CGC_CPUACCT)))
            cg_write(AT_FDCWD, cg->hier[0].parent, "cgroup.subtree_control", buf);
        if (cg->v2_enabled & v2_bits_of[i])
            cg_write(AT_FDCWD, cg->v2_base, "cgroup.subtree_control", buf);
    }
    cg->v2_enabled = 0;
    snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    if (cg->v2_leaf[0] && cg_write(AT_FDCWD, cg->v2_base, "cgroup.procs", buf) == 0) {
        rmdir(cg->v2_leaf);
        cg->v2_leaf[0] = '\0';
    }
}

static int init_v2(struct mini_cgroups *cg, const struct mini_caps *caps, bool need_mem_pids, struct mini_err *e)
{
    if (!caps->v2_mounted || !caps->v2_writable)
        return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "cgroup v2: %s",
                            caps->v2_mounted ? "the daemon's cgroup is not writable" : "not mounted");
    setf(cg->v2_base, sizeof cg->v2_base, "%s", caps->v2_dir);
    struct mini_cg_hier *h = &cg->hier[0];
    if (make_parent(cg->v2_base, h, e) < 0)
        return -1;
    cg->n_hier = 1;
    char buf[64];
    if (path_join(cg->v2_leaf, sizeof cg->v2_leaf, h->parent, V2_LEAF) < 0 || mkdir(cg->v2_leaf, 0755) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "creating cgroup %s/" V2_LEAF, h->parent);
        cg->v2_leaf[0] = '\0';
        return -1;
    }
    snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    if (cg_write(AT_FDCWD, cg->v2_leaf, "cgroup.procs", buf) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "moving the daemon into %s", cg->v2_leaf);
        rmdir(cg->v2_leaf);
        cg->v2_leaf[0] = '\0';
        return -1;
    }
    unsigned want = caps->v2_controllers & ((1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS) | (1u << MINI_CGC_CPU));
    unsigned got = 0;
    int busy = 0;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(v2_names); i++) {
        if (!(want & v2_bits_of[i]))
            continue;
        snprintf(buf, sizeof buf, "+%s", v2_names[i]);
        if (!(caps->v2_subtree & v2_bits_of[i])) {
            if (cg_write(AT_FDCWD, cg->v2_base, "cgroup.subtree_control", buf) < 0) {
                busy = errno;
                continue;
            }
            cg->v2_enabled |= v2_bits_of[i];
        }
        if (cg_write(AT_FDCWD, h->parent, "cgroup.subtree_control", buf) == 0)
            got |= v2_bits_of[i];
        else
            busy = errno;
    }
    h->ctrls = got; /* what teardown must disable again */
    unsigned mp = (1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS);
    if (need_mem_pids && (got & mp) != mp) {
        mini_err_sys(e, MINI_E_ISOLATION_UNAVAILABLE, busy ? busy : ENOTSUP,
                     "cgroup v2: cannot enable memory and pids below %s%s", cg->v2_base,
                     busy == EBUSY ? " (other processes share the daemon's cgroup: start it in its own, "
                                     "e.g. systemd-run --user --scope -p Delegate=yes mini-sandboxd)"
                                   : "");
        return -1;
    }
    h->ctrls = got | (1u << MINI_CGC_CPUACCT); /* cpu.stat usage_usec exists in every group */
    if (caps->v2_controllers & (1u << MINI_CGC_FREEZER))
        h->ctrls |= 1u << MINI_CGC_FREEZER;
    cg->ctrls = h->ctrls;
    cg->has_kill = caps->v2_kill;
    setf(cg->note, sizeof cg->note, "cgroup v2 under %s (memory %s, pids %s, cpu %s, kill %s)", h->parent,
         (got & (1u << MINI_CGC_MEMORY)) ? "yes" : "no", (got & (1u << MINI_CGC_PIDS)) ? "yes" : "no",
         (got & (1u << MINI_CGC_CPU)) ? "yes" : "no", cg->has_kill ? "cgroup.kill" : "freeze+SIGKILL");
    return 0;
}

static int init_v1(struct mini_cgroups *cg, const struct mini_caps *caps, unsigned v1_mask, struct mini_err *e)
{
    int hier_of[MINI_CGC_COUNT];
    for (int i = 0; i < MINI_CGC_COUNT; i++) {
        const struct mini_caps_cg1 *v = &caps->v1[i];
        hier_of[i] = -1;
        if (!v->mounted || !v->writable || !(v1_mask & (1u << i)))
            continue;
        /* co-mounted controllers (cpu,cpuacct) share one directory */
        for (int j = 0; j < i; j++)
            if (hier_of[j] >= 0 && strcmp(caps->v1[j].dir, v->dir) == 0)
                hier_of[i] = hier_of[j];
        if (hier_of[i] < 0) {
            size_t k = cg->n_hier;
            if (make_parent(v->dir, &cg->hier[k], e) < 0)
                return -1;
            cg->n_hier++;
            hier_of[i] = (int)k;
        }
        struct mini_cg_hier *h = &cg->hier[hier_of[i]];
        h->ctrls |= 1u << i;
        cg->ctrls |= 1u << i;
        if (i == MINI_CGC_MEMORY) {
            cg_write(AT_FDCWD, h->parent, "memory.use_hierarchy", "1"); /* always 1 on modern kernels */
            /* A group has the files its hierarchy's parent has. */
            h->memsw = faccessat(h->lock_fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
        }
    }
    if (!(cg->ctrls & ((1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS))))
        return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "cgroup v1: neither memory nor pids is writable");
    setf(cg->note, sizeof cg->note, "cgroup v1: memory %s, pids %s, cpu %s, cpuacct %s, freezer %s",
         (cg->ctrls & (1u << MINI_CGC_MEMORY)) ? "yes" : "no", (cg->ctrls & (1u << MINI_CGC_PIDS)) ? "yes" : "no",
         (cg->ctrls & (1u << MINI_CGC_CPU)) ? "yes" : "no", (cg->ctrls & (1u << MINI_CGC_CPUACCT)) ? "yes" : "no",
         (cg->ctrls & (1u << MINI_CGC_FREEZER)) ? "yes" : "no");
    return 0;
}

static void teardown(struct mini_cgroups *cg);

static int init_common(struct mini_cgroups *cg, const struct mini_caps *caps, enum mini_cg_mode mode, bool strict,
                       unsigned v1_mask, struct mini_err *e)
{
    memset(cg, 0, sizeof *cg);
    cg->cpu_period_us = 100000;
    if (mode == MINI_CG_NONE) {
        setf(cg->note, sizeof cg->note, "no cgroups: %s", caps->cg_why);
        return 0;
    }
    cg->mode = mode;
    int r = mode == MINI_CG_V2 ? init_v2(cg, caps, strict, e) : init_v1(cg, caps, v1_mask, e);
    if (r < 0) {
        teardown(cg);
        char msg[MINI_ERR_MSG_MAX];
        setf(msg, sizeof msg, "%s", e ? e->msg : "cgroup setup failed");
        memset(cg, 0, sizeof *cg);
        setf(cg->note, sizeof cg->note, "no cgroups: %s", msg);
        return -1;
    }
    return 0;
}

int mini_cgroups_init(struct mini_cgroups *cg, const struct mini_caps *caps, struct mini_err *e)
{
    return init_common(cg, caps, caps->cg_mode, true, ~0u, e);
}

int mini_cgroups_init_limits(struct mini_cgroups *cg, const struct mini_caps *caps, struct mini_err *e)
{
    return init_common(cg, caps, caps->cg_mode, true, (1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS), e);
}

int mini_cgroups_init_mode(struct mini_cgroups *cg, const struct mini_caps *caps, enum mini_cg_mode mode,
                           struct mini_err *e)
{
    return init_common(cg, caps, mode, false, ~0u, e);
}

void mini_cgroups_update_caps(const struct mini_cgroups *cg, struct mini_caps *caps)
{
    caps->cg_mode = cg->mode;
    setf(caps->cg_why, sizeof caps->cg_why, "%s", cg->note);
    if (cg->mode == MINI_CG_V1)
        for (int i = 0; i < MINI_CGC_COUNT; i++)
            caps->v1[i].writable = caps->v1[i].writable && (cg->ctrls & (1u << i));
}

/* Remove the command groups left in each parent, the parents, and (v2)
 * return the daemon to its own cgroup. */
static void teardown(struct mini_cgroups *cg)
{
    int64_t deadline = mini_mono_ms() + FINI_BUDGET_MS;
    while (mini_cgroups_retry_pending(cg) && mini_mono_ms() < deadline)
        sleep_ms(5);
    for (size_t k = 0; k < cg->n_hier; k++) {
        const char *parent = cg->hier[k].parent;
        if (!parent[0])
            continue;
        DIR *d = opendir(parent);
        if (d) {
            struct dirent *de;
            while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || strncmp(de->d_name, CHILD_PREFIX, strlen(CHILD_PREFIX)) != 0)
                    continue;
                char sub[MINI_CG_PATH_MAX];
                if (path_join(sub, sizeof sub, parent, de->d_name) == 0)
                    remove_tree(sub, true, 0);
            }
            closedir(d);
        }
    }
    if (cg->mode == MINI_CG_V2)
        v2_undo(cg);
    for (size_t k = 0; k < cg->n_hier; k++) {
        const char *parent = cg->hier[k].parent;
        if (!parent[0])
            continue;
        /* v2: the daemon's leaf is still inside when it could not move back */
        while (rmdir(parent) < 0 && errno == EBUSY && !cg->v2_leaf[0] && mini_mono_ms() < deadline)
            sleep_ms(5);
    }
    for (size_t k = 0; k < cg->n_hier; k++)
        if (cg->hier[k].locked) {
            close(cg->hier[k].lock_fd);
            cg->hier[k].locked = false;
        }
    for (size_t i = 0; i < cg->n_pending; i++)
        free(cg->pending[i]);
    free(cg->pending);
    cg->pending = NULL;
    cg->n_pending = 0;
}

void mini_cgroups_fini(struct mini_cgroups *cg)
{
    if (!cg)
        return;
    if (cg->mode != MINI_CG_NONE)
        teardown(cg);
    for (size_t i = 0; i < cg->n_pending; i++)
        free(cg->pending[i]);
    free(cg->pending);
    memset(cg, 0, sizeof *cg);
}

/* --------------------------------------------------------- per command */

/* Where group c's directory in hierarchy k is reached from: the parent's
 * fd the daemon holds, with *dir the group's name under it; or, with no
 * such fd, AT_FDCWD and the full path. */
static int grp_at(const struct mini_cgroup *c, size_t k, const char **dir)
{
    const struct mini_cg_hier *h = &c->cg->hier[k];
    size_t pl = strlen(h->parent);
    if (h->locked && pl && strncmp(c->dirs[k], h->parent, pl) == 0 && c->dirs[k][pl] == '/') {
        *dir = c->dirs[k] + pl + 1;
        return h->lock_fd;
    }
    *dir = c->dirs[k];
    return AT_FDCWD;
}

static int set_limits_v1(struct mini_cgroups *cg, struct mini_cgroup *c, size_t k, const struct mini_limits *lim,
                         struct mini_err *e)
{
    const char *full = c->dirs[k], *dir;
    int at = grp_at(c, k, &dir);
    unsigned ctrls = c->dir_ctrls[k];
    if ((ctrls & (1u << MINI_CGC_MEMORY)) && lim->memory_bytes) {
        if (cg_write_u64(at, dir, "memory.limit_in_bytes", lim->memory_bytes) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/memory.limit_in_bytes", full);
        /* No swap beyond the limit: memory+swap capped at the same value,
         * or, without swap accounting, no swapping at all. */
        if (cg->hier[k].memsw) {
            if (cg_write_u64(at, dir, "memory.memsw.limit_in_bytes", lim->memory_bytes) < 0)
                return mini_err_sys(e, MINI_E_IO, errno, "setting %s/memory.memsw.limit_in_bytes", full);
        } else {
            cg_write(at, dir, "memory.swappiness", "0");
        }
        c->ctrls |= 1u << MINI_CGC_MEMORY;
        c->memory_limit = lim->memory_bytes;
    }
    if ((ctrls & (1u << MINI_CGC_PIDS)) && lim->pids) {
        if (cg_write_u64(at, dir, "pids.max", lim->pids) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/pids.max", full);
        c->ctrls |= 1u << MINI_CGC_PIDS;
        c->pids_limit = lim->pids;
    }
    if ((ctrls & (1u << MINI_CGC_CPU)) && cg->cpu_quota_us) {
        if (cg_write_u64(at, dir, "cpu.cfs_period_us", cg->cpu_period_us ? cg->cpu_period_us : 100000) < 0 ||
            cg_write_u64(at, dir, "cpu.cfs_quota_us", cg->cpu_quota_us) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting the CPU quota in %s", full);
        c->ctrls |= 1u << MINI_CGC_CPU;
    }
    c->ctrls |= ctrls & ((1u << MINI_CGC_CPUACCT) | (1u << MINI_CGC_FREEZER));
    return 0;
}

static int set_limits_v2(struct mini_cgroups *cg, struct mini_cgroup *c, const struct mini_limits *lim,
                         struct mini_err *e)
{
    const char *full = c->dirs[0], *dir;
    int at = grp_at(c, 0, &dir);
    unsigned ctrls = c->dir_ctrls[0];
    if ((ctrls & (1u << MINI_CGC_MEMORY)) && lim->memory_bytes) {
        if (cg_write_u64(at, dir, "memory.max", lim->memory_bytes) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/memory.max", full);
        if (cg_write(at, dir, "memory.swap.max", "0") < 0 && errno != ENOENT)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/memory.swap.max", full);
        /* An OOM kill takes the whole command, not one random process of it. */
        cg_write(at, dir, "memory.oom.group", "1");
        c->ctrls |= 1u << MINI_CGC_MEMORY;
        c->memory_limit = lim->memory_bytes;
    }
    if ((ctrls & (1u << MINI_CGC_PIDS)) && lim->pids) {
        if (cg_write_u64(at, dir, "pids.max", lim->pids) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/pids.max", full);
        c->ctrls |= 1u << MINI_CGC_PIDS;
        c->pids_limit = lim->pids;
    }
    if ((ctrls & (1u << MINI_CGC_CPU)) && cg->cpu_quota_us) {
        char buf[64];
        snprintf(buf, sizeof buf, "%" PRIu64 " %" PRIu64 "\n", cg->cpu_quota_us,
                 cg->cpu_period_us ? cg->cpu_period_us : 100000);
        if (cg_write(at, dir, "cpu.max", buf) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "setting %s/cpu.max", full);
        c->ctrls |= 1u << MINI_CGC_CPU;
    }
    c->ctrls |= ctrls & ((1u << MINI_CGC_CPUACCT) | (1u << MINI_CGC_FREEZER));
    return 0;
}

int mini_cgroup_create(struct mini_cgroups *cg, const char *name, const struct mini_limits *lim,
                       struct mini_cgroup *out, struct mini_err *e)
{
    *out = (struct mini_cgroup)MINI_CGROUP_INIT;
    if (cg->mode == MINI_CG_NONE)
        return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE, "%s", cg->note[0] ? cg->note : "no cgroups");
    if (!valid_name(name))
        return mini_err_set(e, MINI_E_INTERNAL, "cgroup name \"%s\": must be 1-60 of [A-Za-z0-9._-]", name);
    if (cg->n_pending)
        mini_cgroups_retry_pending(cg);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->cg = cg;
    cg->live++;
    char leaf[80];
    snprintf(leaf, sizeof leaf, CHILD_PREFIX "%s", name);
    for (size_t k = 0; k < cg->n_hier; k++) {
        if (path_join(out->dirs[k], sizeof out->dirs[k], cg->hier[k].parent, leaf) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "cgroup path under %s", cg->hier[k].parent);
            goto fail;
        }
        /* From the parent's fd where the daemon holds it (grp_at). */
        if ((cg->hier[k].locked ? mkdirat(cg->hier[k].lock_fd, leaf, 0755) : mkdir(out->dirs[k], 0755)) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "creating cgroup %s", out->dirs[k]);
            out->dirs[k][0] = '\0';
            goto fail;
        }
        out->dir_ctrls[k] = cg->hier[k].ctrls;
        out->n_dirs = k + 1;
    }
    if (cg->mode == MINI_CG_V1) {
        for (size_t k = 0; k < out->n_dirs; k++)
            if (set_limits_v1(cg, out, k, lim, e) < 0)
                goto fail;
    } else {
        if (set_limits_v2(cg, out, lim, e) < 0)
            goto fail;
        out->fd = open(out->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (out->fd < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "opening %s", out->dirs[0]);
            goto fail;
        }
    }
    return 0;
fail:
    mini_cgroup_destroy(out);
    return -1;
}

int mini_cgroup_attach(struct mini_cgroup *c, pid_t pid, struct mini_err *e)
{
    if (!c->cg)
        return mini_err_set(e, MINI_E_INTERNAL, "attaching to an inactive cgroup");
    char buf[32];
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    for (size_t k = 0; k < c->n_dirs; k++) {
        const char *dir;
        int at = grp_at(c, k, &dir);
        if (cg_write(at, dir, "cgroup.procs", buf) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "moving pid %d into %s", (int)pid, c->dirs[k]);
    }
    return 0;
}

int mini_cgroup_open_procs(const struct mini_cgroup *c, int fds[MINI_CG_HIER_MAX], struct mini_err *e)
{
    if (!c->cg)
        return mini_err_set(e, MINI_E_INTERNAL, "opening an inactive cgroup");
    if (c->cg->mode != MINI_CG_V1)
        return 0;
    for (size_t k = 0; k < c->n_dirs; k++) {
        char p[MINI_CG_PATH_MAX + 16];
        const char *dir;
        int at = grp_at(c, k, &dir);
        if (path_join(p, sizeof p, dir, "tasks") < 0 || (fds[k] = openat(at, p, O_WRONLY | O_CLOEXEC)) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "opening %s/tasks", c->dirs[k]);
            for (size_t j = 0; j < k; j++)
                close(fds[j]);
            return -1;
        }
    }
    return (int)c->n_dirs;
}

/* The directory of c's group that has ctrl, as grp_at gives it: the fd
 * to reach it from, and *dir; -1 (and *dir NULL) when none has. */
static int dir_with(const struct mini_cgroup *c, enum mini_cg_ctrl ctrl, const char **dir)
{
    for (size_t k = 0; k < c->n_dirs; k++)
        if (c->dir_ctrls[k] & (1u << ctrl))
            return grp_at(c, k, dir);
    *dir = NULL;
    return -1;
}

int mini_cgroup_result(const struct mini_cgroup *c, struct mini_cgroup_result *r)
{
    *r = (struct mini_cgroup_result){ .oom_kills = -1,
                                      .memory_events = -1,
                                      .pids_events = -1,
                                      .pids_peak = -1,
                                      .peak_memory_kb = -1,
                                      .cpu_ms = -1,
                                      .limit = MINI_LIMIT_NONE };
    if (!c->cg)
        return 0;
    bool v2 = c->cg->mode == MINI_CG_V2;
    const char *mem;
    int mat = dir_with(c, MINI_CGC_MEMORY, &mem);
    if (mem && v2) {
        r->oom_kills = cg_read_key(mat, mem, "memory.events", "oom_kill");
        r->memory_events = cg_read_key(mat, mem, "memory.events", "max");
        int64_t peak = cg_read_i64(mat, mem, "memory.peak");
        r->peak_memory_kb = peak >= 0 ? peak / 1024 : -1;
        r->oom_killed = r->oom_kills > 0;
    } else if (mem) {
        r->oom_kills = cg_read_key(mat, mem, "memory.oom_control", "oom_kill");
        r->memory_events = cg_read_i64(mat, mem, "memory.failcnt");
        int64_t peak = cg_read_i64(mat, mem, "memory.max_usage_in_bytes");
        r->peak_memory_kb = peak >= 0 ? peak / 1024 : -1;
        if (r->oom_kills >= 0)
            r->oom_killed = r->oom_kills > 0;
        else /* kernels before 4.13 have no oom_kill count */
            r->oom_killed = cg_read_key(mat, mem, "memory.oom_control", "under_oom") > 0 ||
                (c->memory_limit && r->memory_events > 0);
    }
    const char *pids;
    int pat = dir_with(c, MINI_CGC_PIDS, &pids);
    if (pids) {
        r->pids_events = cg_read_key(pat, pids, "pids.events", "max");
        r->pids_peak = cg_read_i64(pat, pids, "pids.peak");
        r->pids_limited = r->pids_events > 0;
    }
    if (v2) {
        const char *dir;
        int at = grp_at(c, 0, &dir);
        int64_t us = cg_read_key(at, dir, "cpu.stat", "usage_usec");
        r->cpu_ms = us >= 0 ? us / 1000 : -1;
    } else {
        const char *acct;
        int aat = dir_with(c, MINI_CGC_CPUACCT, &acct);
        int64_t ns = acct ? cg_read_i64(aat, acct, "cpuacct.usage") : -1;
        r->cpu_ms = ns >= 0 ? ns / 1000000 : -1;
    }
    if (r->oom_killed)
        r->limit = MINI_LIMIT_MEMORY;
    else if (r->pids_limited)
        r->limit = MINI_LIMIT_PIDS;
    return 0;
}

/* Freeze (true) or thaw the group; waits up to ~100 ms for the freeze to
 * settle.  false when the group has no freezer. */
static bool set_frozen(const struct mini_cgroup *c, bool frozen)
{
    bool v2 = c->cg->mode == MINI_CG_V2;
    const char *dir;
    int at = dir_with(c, MINI_CGC_FREEZER, &dir);
    if (!dir)
        return false;
    if (v2) {
        if (cg_write(at, dir, "cgroup.freeze", frozen ? "1" : "0") < 0)
            return false;
        for (int i = 0; frozen && i < 100 && cg_read_key(at, dir, "cgroup.events", "frozen") != 1; i++)
            sleep_ms(1);
        return true;
    }
    if (cg_write(at, dir, "freezer.state", frozen ? "FROZEN" : "THAWED") < 0)
        return false;
    char st[32];
    for (int i = 0; frozen && i < 100; i++) {
        if (cg_read(at, dir, "freezer.state", st, sizeof st) > 0 && strncmp(st, "FROZEN", 6) == 0)
            break;
        sleep_ms(1);
    }
    return true;
}

int mini_cgroup_kill(struct mini_cgroup *c)
{
    if (!c->cg || c->n_dirs == 0)
        return 0;
    int64_t deadline = mini_mono_ms() + KILL_BUDGET_MS;
    const char *d0;
    int at0 = grp_at(c, 0, &d0);
    if (c->cg->mode == MINI_CG_V2 && c->cg->has_kill && cg_write(at0, d0, "cgroup.kill", "1") == 0) {
        /* cgroup.kill is synchronous in sending; the processes still need
         * to exit. */
        for (;;) {
            int64_t pop = cg_read_key(at0, d0, "cgroup.events", "populated");
            if (pop <= 0)
                return 0;
            if (mini_mono_ms() > deadline)
                return (int)pop;
            sleep_ms(1);
        }
    }
    int left = 0;
    for (unsigned round = 0;; round++) {
        bool frozen = set_frozen(c, true);
        left = 0;
        for (size_t k = 0; k < c->n_dirs; k++) {
            const char *dir;
            int at = grp_at(c, k, &dir);
            int n = kill_listed(at, dir);
            if (n < 0 && k == 0) {
                if (frozen)
                    set_frozen(c, false);
                return -1;
            }
            if (n > left)
                left = n;
        }
        if (frozen)
            set_frozen(c, false);
        if (left == 0 || mini_mono_ms() > deadline)
            return left;
        sleep_ms(round < 10 ? 1 : 5);
    }
}

void mini_cgroup_destroy(struct mini_cgroup *c)
{
    struct mini_cgroups *cg = c->cg;
    mini_close(c->fd);
    c->fd = -1;
    if (!cg) {
        *c = (struct mini_cgroup)MINI_CGROUP_INIT;
        return;
    }
    /* Usually empty by now (the sandbox's pid 1 has been reaped, and with
     * it its pid namespace): try rmdir first, kill only what resists. */
    bool gone[MINI_CG_HIER_MAX] = { false };
    int64_t deadline = mini_mono_ms() + DESTROY_BUDGET_MS;
    for (unsigned round = 0;; round++) {
        size_t left = 0;
        for (size_t k = 0; k < c->n_dirs; k++) {
            if (gone[k] || !c->dirs[k][0]) {
                gone[k] = true;
                continue;
            }
            const char *dir;
            int at = grp_at(c, k, &dir);
            if (unlinkat(at, dir, AT_REMOVEDIR) == 0 || errno == ENOENT)
                gone[k] = true;
            else
                left++;
        }
        if (left == 0 || mini_mono_ms() > deadline)
            break;
        mini_cgroup_kill(c);
        sleep_ms(round < 10 ? 1 : 10);
    }
    for (size_t k = 0; k < c->n_dirs; k++)
        if (!gone[k])
            pending_add(cg, c->dirs[k]);
    if (cg->live)
        cg->live--;
    *c = (struct mini_cgroup)MINI_CGROUP_INIT;
}

/* ------------------------------------------------- discovery (probe) */

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
        strtok_r(NULL, " ", &save2); /* source */
        char *super = strtok_r(NULL, " ", &save2);
        if (!fstype || !super)
            continue;
        mini_mountinfo_unescape(fields[3]);
        mini_mountinfo_unescape(fields[4]);
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
                if (!v1[i].found && word_in(super, mini_cg_ctrl_name(i), ","))
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

void mini_cgroups_find(struct mini_caps *c)
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
            if (!m1[i].found || !word_in(ctrls, mini_cg_ctrl_name(i), ","))
                continue;
            struct mini_caps_cg1 *v = &c->v1[i];
            v->hierarchy = hier;
            v->mounted = join_cg(v->dir, sizeof v->dir, &m1[i], own);
            if (!v->mounted)
                v->dir[0] = '\0';
        }
    }
    free(line);

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
    }
}

void mini_cgroups_test(struct mini_caps *c, bool refused_only)
{
    for (int i = 0; i < MINI_CGC_COUNT; i++) {
        struct mini_caps_cg1 *v = &c->v1[i];
        if (v->mounted && (!refused_only || v->err != 0))
            v->err = try_mkdir(v->dir, NULL, NULL);
    }
    if (c->v2_mounted && (!refused_only || c->v2_err != 0)) {
        c->v2_kill = c->v2_freeze = false;
        c->v2_err = try_mkdir(c->v2_dir, &c->v2_kill, &c->v2_freeze);
    }
}

void mini_cgroups_conclude(struct mini_caps *c)
{
    for (int i = 0; i < MINI_CGC_COUNT; i++)
        c->v1[i].writable = c->v1[i].mounted && c->v1[i].err == 0;
    if (c->v2_mounted) {
        char p[MINI_CAPS_PATH_MAX + 64];
        c->v2_writable = c->v2_err == 0;
        if (c->v2_freeze)
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
            setf(c->cg_why, sizeof c->cg_why, "cgroup v2: %s lacks the memory and pids controllers (it has \"%s\")%s",
                 c->v2_dir, c->v2_controllers_text,
                 c->v1[MINI_CGC_MEMORY].mounted ? "; they are bound to cgroup v1, which needs root" : "");
        } else {
            copy_str(c->cg_why, sizeof c->cg_why,
                     "cgroup v1: the memory and pids hierarchies are not writable "
                     "(a v1 host needs a root daemon)");
        }
    }
}
