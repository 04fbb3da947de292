/* The disk watch: what a session may add to the disk (the profile's
 * `limits.disk_mb`), enforced by the daemon where the kernel gives no
 * quota (docs/isolation.md, "Workspace disk use").
 *
 * A session's trees (its workspace and, for an overlay root, the
 * overlay's upper directory) are measured at open (mini_disk_usage: by
 * fd, each inode once); what they hold above that is the session's use.
 * Measuring a tree costs a walk, so while a command runs the daemon only
 * polls the filesystems' used blocks (statfs, every DISK_POLL_MS) and
 * walks once they have grown by what the session still has left: the
 * session cannot have added more than its filesystems grew.  Walks run in
 * a forked process (measure_start), off the daemon's loop.  Over the
 * limit, the session's running commands are killed (`limit: "disk"`) and
 * every exit says so in a note until the session is back under it, so a
 * later command may clean up.  A walk that fails (a directory the daemon
 * may not read, one moved during the walk twice) counts as over: the
 * watch fails closed, and only once the filesystems have grown.  A walk
 * while commands run also counts the files their processes hold with no
 * name (held_usage), found through /proc.  An open whose watch cannot be
 * set up fails (open_refused): a disk_mb is never silently off. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <limits.h>
#include <unistd.h>
#include "daemon.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/log.h"

#define MIB_ (1024.0 * 1024.0)

/* Used bytes of the filesystems of the session's trees, each counted once. */
static uint64_t fs_used(const struct disk_watch *w)
{
    uint64_t sum = 0;
    for (int i = 0; i < w->n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= w->dev[j] == w->dev[i];
        struct statvfs st;
        if (!seen && fstatvfs(w->fd[i], &st) == 0)
            sum += (uint64_t)(st.f_blocks - st.f_bfree) * st.f_frsize;
    }
    return sum;
}

/* Files the session's processes hold with no name: unlinked while open,
 * or made with O_TMPFILE.  Their blocks are on the trees' filesystems and
 * in no tree, until the last holder closes them; so a measure adds those
 * it finds through /proc: every fd (stat follows /proc/PID/fd/N to the
 * open file) and every mapping marked deleted in /proc/PID/maps (stat
 * through /proc/PID/map_files), each inode once.  Only regular files with
 * st_nlink 0 on the trees' filesystems count (for an overlay root, also
 * the overlay's own st_dev, which its files show). */
struct held_file {
    dev_t dev;
    ino_t ino;
    uint64_t bytes;
};
struct held {
    const struct disk_watch *w;
    dev_t *dev;
    size_t ndev, devcap;
    struct held_file *v;
    size_t n, cap;
    struct mini_err *e;
};

static int proc_stat(struct held *h, const char *path, struct stat *st);

static bool held_dev(const struct held *h, dev_t d)
{
    for (size_t i = 0; i < h->ndev; i++)
        if (h->dev[i] == d)
            return true;
    return false;
}

static int held_add_dev(struct held *h, dev_t d)
{
    if (held_dev(h, d))
        return 0;
    if (h->ndev == h->devcap) {
        size_t cap = h->devcap ? h->devcap * 2 : 8;
        dev_t *nd = realloc(h->dev, cap * sizeof *nd);
        if (!nd)
            return mini_err_set(h->e, MINI_E_NOMEM, "out of memory");
        h->dev = nd;
        h->devcap = cap;
    }
    h->dev[h->ndev++] = d;
    return 0;
}

/* An overlay root is several overlay mounts (/, or /usr, /etc, ...), and
 * their files show the overlay's st_dev, not the upper directory's: the
 * devices of the overlays mounted in the sandbox of init count too. */
static int held_overlays(struct held *h, pid_t init)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/mountinfo", (long)init);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT || errno == ESRCH ? 0 : proc_stat(h, path, &(struct stat){ 0 });
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        unsigned maj, min;
        const char *sep = strstr(line, " - ");
        if (sep && !strncmp(sep, " - overlay ", 11) && sscanf(line, "%*s %*s %u:%u", &maj, &min) == 2)
            rc = held_add_dev(h, makedev(maj, min));
    }
    free(line);
    fclose(f);
    return rc;
}

static bool held_known(const struct held *h, dev_t d, ino_t ino)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i].dev == d && h->v[i].ino == ino)
            return true;
    return false;
}

static int held_add(struct held *h, const struct stat *st)
{
    bool mine = false;
    for (int i = 0; i < h->w->n_uid; i++)
        mine |= st->st_uid == h->w->uid[i];
    if (!S_ISREG(st->st_mode) || st->st_nlink != 0 || !mine || !held_dev(h, st->st_dev))
        return 0;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct held_file *nv = realloc(h->v, cap * sizeof *nv);
        if (!nv)
            return mini_err_set(h->e, MINI_E_NOMEM, "out of memory");
        h->v = nv;
        h->cap = cap;
    }
    h->v[h->n++] = (struct held_file){ st->st_dev, st->st_ino, (uint64_t)st->st_blocks * 512u };
    return 0;
}

/* stat through one of /proc's links: 1, or 0 when it is gone (the
 * process or its fd), or -1 with e filled: the daemon may not look, and
 * the measure fails (closed). */
static int proc_stat(struct held *h, const char *path, struct stat *st)
{
    if (stat(path, st) == 0)
        return 1;
    if (errno == ENOENT || errno == ESRCH)
        return 0;
    return mini_err_sys(h->e, MINI_E_IO, errno, "looking at the session's processes: %s", path);
}

/* One process of the session: its fds and its mappings. */
static int held_proc(struct held *h, long pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT || errno == ESRCH ? 0 : proc_stat(h, path, &(struct stat){ 0 });
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        struct stat st;
        snprintf(path, sizeof path, "/proc/%ld/fd/%.20s", pid, de->d_name);
        int r = proc_stat(h, path, &st);
        rc = r < 0 ? -1 : r ? held_add(h, &st) : 0;
    }
    closedir(d);
    if (rc < 0)
        return -1;
    /* A mapping holds its file too, fd closed or not. */
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT || errno == ESRCH ? 0 : proc_stat(h, path, &(struct stat){ 0 });
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    static const char del[] = " (deleted)\n";
    while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
        unsigned long lo, hi, ino;
        unsigned maj, min;
        if ((size_t)len < sizeof del || strcmp(line + len - (sizeof del - 1), del) ||
            sscanf(line, "%lx-%lx %*s %*s %x:%x %lu", &lo, &hi, &maj, &min, &ino) != 5 ||
            !held_dev(h, makedev(maj, min)) || held_known(h, makedev(maj, min), (ino_t)ino))
            continue;
        struct stat st;
        snprintf(path, sizeof path, "/proc/%ld/map_files/%lx-%lx", pid, lo, hi);
        int r = proc_stat(h, path, &st);
        rc = r < 0 ? -1 : r ? held_add(h, &st) : 0;
    }
    free(line);
    fclose(f);
    return rc;
}

static int by_inode(const void *a, const void *b)
{
    const struct held_file *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The processes of a sandbox without a pid namespace of its own (the
 * Landlock fallback): init's descendants, through /proc's children lists. */
static int held_tree(struct held *h, pid_t init)
{
    size_t n = 1, cap = 64;
    long *q = malloc(cap * sizeof *q);
    if (!q)
        return mini_err_set(h->e, MINI_E_NOMEM, "out of memory");
    q[0] = init;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, "/proc/%ld/task", q[i]);
        DIR *d = opendir(path);
        for (struct dirent *de; d && rc == 0 && (de = readdir(d));) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "/proc/%ld/task/%.20s/children", q[i], de->d_name);
            FILE *f = fopen(path, "re");
            for (long c; f && rc == 0 && fscanf(f, "%ld", &c) == 1;) {
                long *nq = n == cap ? realloc(q, (cap *= 2) * sizeof *q) : q;
                if (!nq)
                    rc = mini_err_set(h->e, MINI_E_NOMEM, "out of memory");
                else
                    (q = nq)[n++] = c;
            }
            if (f)
                fclose(f);
        }
        if (d)
            closedir(d);
        if (rc == 0 && i > 0) /* not init itself (held_usage) */
            rc = held_proc(h, q[i]);
    }
    free(q);
    return rc;
}

/* The pid namespace of init's sandbox: 1, or 0 when it has gone.  A
 * rootless daemon may not look at init (it is not dumpable, and was made
 * in the daemon's user namespace), but at the command it started, which
 * was exec'd in the sandbox's: the namespace of a child of init then. */
static int init_ns(struct held *h, pid_t init, struct stat *st)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/ns/pid", (long)init);
    if (stat(path, st) == 0)
        return 1;
    if (errno != EACCES && errno != EPERM)
        return proc_stat(h, path, st);
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)init, (long)init);
    FILE *f = fopen(path, "re");
    if (!f)
        return proc_stat(h, path, st);
    int r = 0;
    for (long c; r == 0 && fscanf(f, "%ld", &c) == 1;) {
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", c);
        r = proc_stat(h, path, st);
    }
    fclose(f);
    return r;
}

/* What the processes of the sandboxes whose inits are inits[] hold with
 * no name on the trees' filesystems, in bytes; -1 with e filled when
 * they could not all be looked at. */
static int held_usage(const struct disk_watch *w, const pid_t *inits, int n, uint64_t *bytes, struct mini_err *e)
{
    struct held h = { .w = w, .e = e };
    struct stat ns[DISK_MAX_INITS], self;
    int nns = 0, rc = 0;
    *bytes = 0;
    if (n == 0)
        return 0;
    for (int i = 0; i < w->n && rc == 0; i++)
        rc = held_add_dev(&h, w->dev[i]);
    if (rc == 0 && stat("/proc/self/ns/pid", &self) < 0)
        rc = mini_err_sys(e, MINI_E_IO, errno, "looking at the session's processes: /proc/self/ns/pid");
    for (int i = 0; i < n && rc == 0; i++)
        if (w->overlay)
            rc = held_overlays(&h, inits[i]);
    for (int i = 0; i < n && rc == 0; i++) {
        struct stat st;
        int r = init_ns(&h, inits[i], &st);
        if (r < 0)
            rc = -1;
        else if (r > 0 && st.st_dev == self.st_dev && st.st_ino == self.st_ino)
            rc = held_tree(&h, inits[i]);
        else if (r > 0)
            ns[nns++] = st;
    }
    /* Every process in the sandboxes' pid namespaces: those that left
     * init's tree (a double fork) are still there. */
    DIR *d = nns && rc == 0 ? opendir("/proc") : NULL;
    if (nns && rc == 0 && !d)
        rc = mini_err_sys(e, MINI_E_IO, errno, "looking at the session's processes: /proc");
    for (struct dirent *de; d && rc == 0 && (de = readdir(d));) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
        if (stat(path, &st) < 0) {
            /* Gone, or someone else's: a process of the session's runs
             * as one of its uids (/proc/PID is owned by it).  Its init
             * (the daemon's uid) is not looked at. */
            int err = errno;
            snprintf(path, sizeof path, "/proc/%ld", pid);
            struct stat ps;
            bool theirs = false;
            for (int i = 0; i < w->n_uid; i++)
                theirs |= err != ENOENT && err != ESRCH && stat(path, &ps) == 0 && ps.st_uid == w->uid[i];
            for (int i = 0; i < n; i++)
                theirs &= inits[i] != pid;
            if (theirs)
                rc = mini_err_sys(e, MINI_E_IO, err, "looking at the session's processes: process %ld", pid);
            continue;
        }
        /* A sandbox's init is the daemon's clone: what it maps and holds
         * is the daemon's (its executable, replaced by an upgrade, say),
         * and nothing of the command's reaches it. */
        bool init = false;
        for (int i = 0; i < n; i++)
            init |= inits[i] == pid;
        for (int i = 0; i < nns && rc == 0 && !init; i++)
            if (st.st_dev == ns[i].st_dev && st.st_ino == ns[i].st_ino) {
                rc = held_proc(&h, pid);
                break;
            }
    }
    if (d)
        closedir(d);
    if (rc == 0 && h.n) {
        qsort(h.v, h.n, sizeof *h.v, by_inode);
        for (size_t i = 0; i < h.n; i++)
            if (i == 0 || by_inode(&h.v[i - 1], &h.v[i]))
                *bytes += h.v[i].bytes;
    }
    free(h.v);
    free(h.dev);
    return rc;
}

/* The trees' total now, with what the processes of inits[] hold unnamed,
 * or -1 with e filled; one retry for a walk that a rearranged tree cut
 * short.  Runs in a measuring process (below), or on the loop for a small
 * tree at open (max_entries DISK_INLINE_ENTRIES, no processes yet). */
static int measure(const struct disk_watch *w, uint64_t max_entries, const pid_t *inits, int n_inits, uint64_t *total,
                   struct mini_err *e)
{
    static const char *const what[] = { "the workspace", "the session overlay" };
    *total = 0;
    for (int i = 0; i < w->n; i++) {
        uint64_t b = 0;
        int r = mini_disk_usage(w->fd[i], what[i], max_entries, &b, e);
        if (r < 0 && e->sys_errno == EAGAIN)
            r = mini_disk_usage(w->fd[i], what[i], max_entries, &b, e);
        if (r < 0)
            return -1;
        *total += b;
    }
    uint64_t held;
    if (held_usage(w, inits, n_inits, &held, e) < 0)
        return -1;
    *total += held;
    return 0;
}

/* What a measuring process writes to its pipe: one write, under PIPE_BUF. */
struct measure_result {
    int rc;
    int code, sys_errno; /* rc < 0: the error's */
    uint64_t total;
    char msg[512];
};
_Static_assert(sizeof(struct measure_result) <= PIPE_BUF, "one atomic write");

/* Every fd of the process but 0-2 and keep[] (ascending) closed. */
static void close_all_but(const int *keep, int n)
{
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if ((unsigned)keep[i] > lo)
            close_range(lo, (unsigned)keep[i] - 1, 0);
        lo = (unsigned)keep[i] + 1;
    }
    close_range(lo, ~0U, 0);
}

/* A walk can take a second on a large tree, and the daemon's loop serves
 * every client: so a process forked for it walks and writes the result to
 * a pipe, which the loop reads when it comes (disk_measured).  A process,
 * not a thread: the daemon clones sandboxes with raw clone3, whose child
 * then calls into libc, and a second thread could hold a libc lock at that
 * moment.  The child keeps only the trees' fds and its pipe. */
static struct measure *measure_start(struct server *s, struct session *ss, enum measure_kind kind)
{
    struct disk_watch *w = &ss->disk;
    /* The sandboxes whose processes may hold files: the session's
     * commands' (a sandbox prepared for a command holds none of its own). */
    pid_t inits[DISK_MAX_INITS];
    int n_inits = 0;
    bool too_many = false;
    for (struct exec *x = s->execs; x && kind == MEASURE_CHECK; x = x->next)
        if (x->session == ss && !x->reaped && x->slot.sb.pid > 0) {
            if (n_inits < DISK_MAX_INITS)
                inits[n_inits++] = x->slot.sb.pid;
            else
                too_many = true;
        }
    struct measure *m = calloc(1, sizeof *m);
    int p[2];
    if (!m || pipe2(p, O_CLOEXEC) < 0) {
        free(m);
        return NULL;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        prctl(PR_SET_NAME, "sandboxd-du"); /* in ps, apart from sandboxes being cloned */
        if (getppid() != parent)
            _exit(1);
        int keep[3] = { p[1], w->fd[0], w->n > 1 ? w->fd[1] : -1 }, nk = w->n + 1;
        for (int i = 1; i < nk; i++) /* ascending, for close_all_but */
            for (int j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
                int t = keep[j];
                keep[j] = keep[j - 1];
                keep[j - 1] = t;
            }
        close_all_but(keep, nk);
        struct measure_result r = { 0 };
        struct mini_err e;
        r.rc = too_many ? mini_err_set(&e, MINI_E_LIMIT, "more than %d sandboxes to look at", DISK_MAX_INITS)
                        : measure(w, DISK_MAX_ENTRIES, inits, n_inits, &r.total, &e);
        if (r.rc < 0) {
            r.code = e.code;
            r.sys_errno = e.sys_errno;
            snprintf(r.msg, sizeof r.msg, "%.500s", e.msg);
        }
        _exit(write(p[1], &r, sizeof r) == sizeof r ? 0 : 1);
    }
    int err = errno;
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        free(m);
        errno = err;
        return NULL;
    }
    m->pid = pid;
    m->fd = p[0];
    m->kind = kind;
    m->ss = ss;
    ss->refs++;
    m->ev = (struct ev){ EV_MEASURE, m };
    if (ep_add(s, m->fd, EPOLLIN, &m->ev) < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(m->fd);
        session_unref(ss);
        free(m);
        return NULL;
    }
    m->next = s->measures;
    s->measures = m;
    w->busy = m;
    m->gen = ++w->started;
    return m;
}

/* Read the result (or learn that the process died without one), reap,
 * unlink; m is then the caller's to free. */
static bool measure_collect(struct server *s, struct measure *m, struct measure_result *r)
{
    ssize_t n = mini_read_full(m->fd, r, sizeof *r);
    ep_del(s, m->fd);
    mini_close(m->fd);
    m->fd = -1;
    while (waitpid(m->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    for (struct measure **pp = &s->measures; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    if (m->ss->disk.busy == m)
        m->ss->disk.busy = NULL;
    return n == (ssize_t)sizeof *r;
}

/* Stop a measure nobody waits for any more: its result is dropped. */
static void measure_abandon(struct measure *m)
{
    m->abandoned = true;
    kill(m->pid, SIGKILL);
}

static void watch_off(struct disk_watch *w, const char *why, const char *detail)
{
    w->on = false;
    snprintf(w->why, sizeof w->why, "%s%s%.200s%s", why, detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
}

static void watch_on(struct disk_watch *w)
{
    w->on = true;
    snprintf(w->why, sizeof w->why,
             "watched by the daemon: the filesystems' use polled every %d ms while a command runs, "
             "the session's trees measured when they grow; a command may overshoot by what it "
             "writes in that time",
             DISK_POLL_MS);
}

/* Why an open's watch could not be set up, as the open's error: the
 * daemon's resources (fds, memory, processes) are busy, to try again;
 * a workspace that cannot be measured (unreadable, too many entries) is
 * said as such.  Either way the open fails: a disk_mb is never dropped. */
static int open_refused(struct session *ss, int code, int err, const char *why, struct mini_err *e)
{
    bool resources =
        code == MINI_E_NOMEM || err == EMFILE || err == ENFILE || err == ENOMEM || err == EAGAIN || err == 0;
    mini_err_set(e, resources ? MINI_E_BUSY : MINI_E_WORKSPACE_INVALID,
                 "disk_mb (%" PRIu64 " MiB) cannot be enforced: %.600s", ss->disk.limit >> 20, why);
    e->sys_errno = err;
    log_warn("session %s: %s", ss->id, e->msg);
    return -1;
}

int disk_open(struct server *s, struct client *c, struct session *ss, int64_t req_id, struct mini_err *e)
{
    struct disk_watch *w = &ss->disk;
    w->fd[0] = w->fd[1] = -1;
    w->limit = ss->profile->limits.disk_bytes;
    if (!w->limit) {
        watch_off(w, "the profile sets no disk_mb", NULL);
        return 0;
    }
    if (ss->profile->workspace_writable)
        w->fd[w->n++] = fcntl(ss->ws_fd, F_DUPFD_CLOEXEC, 0);
    if (ss->overlay_dir) {
        char up[4096];
        snprintf(up, sizeof up, "%s/upper", ss->overlay_dir);
        w->fd[w->n++] = open(up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        w->overlay = true;
    }
    /* What the session's files are owned by on the host: its ids, and the
     * workspace owner's (an idmapped workspace).  No other uid is mapped
     * in its sandboxes, so it cannot make a file of anyone else's. */
    w->uid[w->n_uid++] = ss->ids.host_uid;
    w->uid[w->n_uid++] = ss->ids.owner_uid;
    if (ss->ids.root_host_uid >= 0)
        w->uid[w->n_uid++] = (uid_t)ss->ids.root_host_uid;
    for (int i = 0; i < w->n; i++) {
        struct stat st;
        if (w->fd[i] < 0 || fstat(w->fd[i], &st) < 0) {
            int err = errno;
            char why[160];
            snprintf(why, sizeof why, "the session's trees could not be opened: %s", strerror(err));
            return open_refused(ss, MINI_E_IO, err, why, e);
        }
        w->dev[i] = st.st_dev;
    }
    if (w->n == 0) {
        watch_off(w, "nothing the session writes stays on disk: a read-only workspace, no overlay", NULL);
        return 0;
    }
    /* Most trees at open are small (a fresh checkout of a task): walking
     * one here costs less than forking a process for it.  A larger one,
     * or one the walk failed on, goes to a measuring process, which
     * starts over and says why it failed. */
    uint64_t total;
    struct mini_err ie;
    if (measure(w, DISK_INLINE_ENTRIES, NULL, 0, &total, &ie) == 0) {
        w->base = w->total = total;
        watch_on(w);
        return 0;
    }
    struct measure *m = measure_start(s, ss, MEASURE_OPEN);
    if (!m) {
        int err = errno;
        char why[160];
        snprintf(why, sizeof why, "no process could be started to measure the workspace: %s", strerror(err));
        return open_refused(ss, MINI_E_IO, err, why, e);
    }
    m->client = c;
    m->req_id = req_id;
    w->t_open = mini_mono_ns();
    return 1;
}

void disk_close(struct session *ss)
{
    for (int i = 0; i < ss->disk.n; i++)
        mini_close(ss->disk.fd[i]);
    ss->disk.n = 0;
    free(ss->disk.note);
    ss->disk.note = NULL;
}

void disk_json(const struct session *ss, cJSON *o)
{
    const struct disk_watch *w = &ss->disk;
    cJSON *q = cJSON_AddObjectToObject(o, "workspace_quota");
    if (!q)
        return;
    cJSON_AddBoolToObject(q, "enforced", w->on);
    cJSON_AddNumberToObject(q, "limit_mb", (double)(w->limit >> 20));
    if (w->on)
        cJSON_AddStringToObject(q, "mechanism", "watch");
    cJSON_AddStringToObject(q, "reason", w->why);
}

/* What the session has added, from the last measure. */
static uint64_t added(const struct disk_watch *w) { return w->total > w->base ? w->total - w->base : 0; }

/* Measure again when the filesystems pass what the session has left. */
static void set_mark(struct disk_watch *w, uint64_t used)
{
    uint64_t a = added(w);
    w->mark = used + (a < w->limit ? w->limit - a : 0);
}

static void kill_session(struct server *s, struct session *ss)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->session == ss && !x->finished && !x->have_status)
            exec_kill(x, MINI_LIMIT_DISK);
}

/* A measure while commands ran came back: over the limit (or
 * unmeasurable), kill and note. */
static void checked(struct server *s, struct session *ss, const struct measure_result *r, bool got, uint64_t used)
{
    struct disk_watch *w = &ss->disk;
    char note[512];
    if (!got || r->rc < 0) {
        snprintf(note, sizeof note,
                 "disk: the session's trees grew past what disk_mb (%" PRIu64 " MiB) leaves, and could "
                 "not be measured (%.200s): commands are killed until they can be",
                 w->limit >> 20, got ? r->msg : "the measuring process died");
        w->total = w->base + w->limit + 1;
    } else {
        w->total = r->total;
        snprintf(note, sizeof note,
                 "disk: the session has added %.1f MiB to its workspace%s, over its disk_mb of %" PRIu64
                 " MiB; commands that write are killed until it is back under",
                 (double)added(w) / MIB_, ss->overlay_dir ? " and overlay" : "", w->limit >> 20);
    }
    free(w->note);
    w->note = NULL;
    if (added(w) > w->limit) {
        w->note = strdup(note);
        log_info("session %s: %s", ss->id, note);
        kill_session(s, ss);
    }
    set_mark(w, used);
}

static void start_check(struct server *s, struct session *ss, uint64_t used)
{
    struct measure *m = measure_start(s, ss, MEASURE_CHECK);
    if (m) {
        m->used = used;
        return;
    }
    /* No process to measure with: fail closed, as a failed walk does. */
    struct measure_result r = { .rc = -1 };
    snprintf(r.msg, sizeof r.msg, "no measuring process: %s", strerror(errno));
    checked(s, ss, &r, true, used);
}

void disk_measured(struct server *s, struct measure *m)
{
    struct measure_result r;
    bool got = measure_collect(s, m, &r);
    struct session *ss = m->ss;
    struct disk_watch *w = &ss->disk;
    if (m->kind == MEASURE_OPEN && m->abandoned) {
        session_drop(s, ss); /* the open's own reference: its client left */
    } else if (m->kind == MEASURE_OPEN) {
        if (!got || r.rc < 0) {
            /* The open fails, as do_open's own failures do: the session
             * was never the client's. */
            struct mini_err e;
            char why[600];
            snprintf(why, sizeof why, "the workspace could not be measured (%.500s)",
                     got ? r.msg : "the measuring process died");
            open_refused(ss, got ? r.code : MINI_E_IO, got ? r.sys_errno : 0, why, &e);
            send_error(s, m->client, m->req_id, &e);
            m->client->n_sessions--;
            s->n_sessions--;
            session_drop(s, ss); /* the open's own reference */
        } else {
            w->base = w->total = r.total;
            watch_on(w);
            log_debug("session %s: %" PRIu64 " bytes at open, measured in %lld ms", ss->id, w->base,
                      (long long)((mini_mono_ns() - w->t_open) / 1000000));
            open_finish(s, m->client, ss, m->req_id);
        }
    } else {
        bool live = !ss->closed && !m->abandoned;
        if (live)
            checked(s, ss, &r, got, fs_used(w));
        /* A command that ended while this measure walked waits for one
         * started after its end (its last writes may not be in this one). */
        bool later = false;
        for (struct exec *x = s->execs; x; x = x->next)
            later |= x->session == ss && x->disk_wait && x->disk_gen > m->gen;
        if (live && later && !s->stopping)
            start_check(s, ss, fs_used(w));
        /* The exits this measure covers go out now, with its note; all of
         * them when no other measure is coming. */
        for (struct exec *x = s->execs, *next; x; x = next) {
            next = x->next;
            if (x->session == ss && x->disk_wait && (x->disk_gen <= m->gen || !w->busy))
                exec_finish(s, x); /* may bury x */
        }
    }
    session_unref(ss);
    free(m);
}

void disk_client_gone(struct server *s, struct client *c)
{
    for (struct measure *m = s->measures; m; m = m->next)
        if (m->kind == MEASURE_OPEN && m->client == c && !m->abandoned) {
            measure_abandon(m);
            m->client = NULL;
            s->n_sessions--;
        }
}

/* After every client is closed (their opens abandoned): what is left are
 * checks, whose exits were sent at the kill. */
void disk_fini(struct server *s)
{
    while (s->measures) {
        struct measure *m = s->measures;
        measure_abandon(m);
        disk_measured(s, m);
    }
}

int disk_exec_start(struct exec *x)
{
    struct disk_watch *w = &x->session->disk;
    x->disk_timer = -1;
    if (!w->on)
        return 0;
    if (x->session->running == 0 && !w->busy)
        set_mark(w, fs_used(w));
    x->disk_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { .it_interval = { .tv_nsec = DISK_POLL_MS * 1000000L },
                              .it_value = { .tv_nsec = DISK_POLL_MS * 1000000L } };
    x->ev_disk = (struct ev){ EV_DISK, x };
    if (x->disk_timer < 0 || timerfd_settime(x->disk_timer, 0, &its, NULL) < 0)
        return -1;
    return 0;
}

void disk_tick(struct server *s, struct exec *x)
{
    uint64_t ticks;
    if (read(x->disk_timer, &ticks, sizeof ticks) != sizeof ticks || x->finished)
        return;
    struct disk_watch *w = &x->session->disk;
    if (w->busy)
        return;
    uint64_t used = fs_used(w);
    if (used >= w->mark)
        start_check(s, x->session, used);
}

int disk_exec_end(struct server *s, struct exec *x)
{
    if (x->disk_timer < 0)
        return 0;
    ep_del(s, x->disk_timer);
    mini_close(x->disk_timer);
    x->disk_timer = -1;
    /* The last writes since the last tick: measured before the exit goes
     * out, so that the command that went over hears it.  Over already:
     * has this one cleaned up? */
    struct disk_watch *w = &x->session->disk;
    if (s->stopping)
        return 0;
    if (w->busy) {
        /* The measure in flight may have walked the trees before this
         * command's last writes: the exit waits for the next one, started
         * when this one is back (disk_measured). */
        x->disk_gen = w->started + 1;
        return 1;
    }
    uint64_t used = fs_used(w);
    if (used < w->mark && !w->note)
        return 0;
    start_check(s, x->session, used);
    x->disk_gen = w->started;
    return w->busy ? 1 : 0;
}
