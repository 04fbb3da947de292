/* Disk usage of a directory tree, measured by fd (see mini_disk_usage in
 * include/mini/io.h).
 *
 * The trees measured are being written by sandboxed processes while the
 * daemon measures them, and those processes may swap a directory for a
 * symlink at any moment.  So the walk never resolves a path: it holds one
 * directory fd at a time, opens each subdirectory by name with O_NOFOLLOW
 * from its parent's fd, and goes back up through ".", checking the
 * parent's device and inode; a tree rearranged under it ends the walk
 * with EAGAIN rather than measuring somewhere else.  Depth costs memory
 * (the names still to visit), never fds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mini/cleanup.h"
#include "mini/io.h"

struct du_level {
    dev_t dev;
    ino_t ino;      /* the directory's identity, to check the way back up */
    char **names;   /* its subdirectories still to visit */
    size_t n, next; /* how many, and the next one's index */
};

/* Inodes with more than one link, counted once: an open-addressing set. */
struct ino_set {
    ino_t *slot; /* 0: empty (no inode is 0 on the filesystems measured) */
    size_t cap, n;
};

static int ino_set_add(struct ino_set *s, ino_t ino, bool *added)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        ino_t *ns = calloc(cap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                for (size_t j = (size_t)(s->slot[i] * 0x9E3779B97F4A7C15ull) & (cap - 1);; j = (j + 1) & (cap - 1))
                    if (!ns[j]) {
                        ns[j] = s->slot[i];
                        break;
                    }
        free(s->slot);
        s->slot = ns;
        s->cap = cap;
    }
    for (size_t j = (size_t)(ino * 0x9E3779B97F4A7C15ull) & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
        if (s->slot[j] == ino) {
            *added = false;
            return 0;
        }
        if (!s->slot[j]) {
            s->slot[j] = ino;
            s->n++;
            *added = true;
            return 0;
        }
    }
}

static void level_free(struct du_level *l)
{
    for (size_t i = l->next; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = l->next = 0;
}

struct du {
    dev_t dev; /* the top's filesystem: the walk stays on it */
    uint64_t bytes, entries, max_entries;
    struct ino_set links;
    const char *what;
    struct mini_err *e;
};

/* Account the entries of the directory dir; its subdirectories' names
 * go into *l.  0, or -1 with d->e filled. */
static int du_dir(struct du *d, int dir, struct du_level *l)
{
    int dfd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = dfd < 0 ? NULL : fdopendir(dfd);
    if (!dp) {
        mini_close(dfd);
        return mini_err_sys(d->e, MINI_E_IO, errno, "measuring %s: reading a directory", d->what);
    }
    size_t cap = 0;
    int rc = 0;
    for (struct dirent *de; (de = readdir(dp));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (++d->entries > d->max_entries) {
            rc = mini_err_sys(d->e, MINI_E_LIMIT, E2BIG, "measuring %s: more than %llu entries", d->what,
                              (unsigned long long)d->max_entries);
            break;
        }
        struct stat st;
        if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (st.st_dev != d->dev)
            continue; /* another filesystem (not the sandbox's to fill) */
        bool count = true;
        if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && ino_set_add(&d->links, st.st_ino, &count) < 0) {
            rc = mini_err_set(d->e, MINI_E_NOMEM, "out of memory");
            break;
        }
        if (count)
            d->bytes += (uint64_t)st.st_blocks * 512u;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (l->n == cap) {
            char **nn = realloc(l->names, (cap = cap ? cap * 2 : 16) * sizeof *nn);
            if (!nn) {
                rc = mini_err_set(d->e, MINI_E_NOMEM, "out of memory");
                break;
            }
            l->names = nn;
        }
        if (!(l->names[l->n] = strdup(de->d_name))) {
            rc = mini_err_set(d->e, MINI_E_NOMEM, "out of memory");
            break;
        }
        l->n++;
    }
    closedir(dp);
    return rc;
}

int mini_disk_usage(int dirfd, const char *what, uint64_t max_entries, uint64_t *bytes, struct mini_err *e)
{
    struct du d = { .max_entries = max_entries, .what = what, .e = e };
    struct stat top;
    int cur = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0 || fstat(cur, &top) < 0) {
        mini_close(cur);
        return mini_err_sys(e, MINI_E_IO, errno, "measuring %s", what);
    }
    d.dev = top.st_dev;
    d.bytes = (uint64_t)top.st_blocks * 512u;
    struct du_level *stk = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (n == cap) {
            struct du_level *ns = realloc(stk, (cap = cap ? cap * 2 : 32) * sizeof *ns);
            if (!ns) {
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                break;
            }
            stk = ns;
        }
        struct stat st;
        if (fstat(cur, &st) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "measuring %s", what);
            break;
        }
        stk[n] = (struct du_level){ .dev = st.st_dev, .ino = st.st_ino };
        n++;
        if ((rc = du_dir(&d, cur, &stk[n - 1])) < 0)
            break;
        /* The next directory to enter: the deepest level with names left,
         * going back up through ".." to it. */
        int child = -1;
        while (n > 0 && child < 0) {
            struct du_level *l = &stk[n - 1];
            while (l->next < l->n && child < 0) {
                _cleanup_free_ char *name = l->names[l->next++];
                child = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
                    continue; /* removed or replaced meanwhile: nothing to measure */
                if (child < 0) {
                    rc = mini_err_sys(e, MINI_E_IO, errno, "measuring %s: entering %s", what, name);
                    goto out;
                }
                struct stat cs;
                if (fstat(child, &cs) < 0 || cs.st_dev != d.dev) {
                    close(child);
                    child = -1;
                }
            }
            if (child >= 0)
                break;
            level_free(l);
            if (--n == 0)
                break;
            int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            struct stat ps;
            if (parent < 0 || fstat(parent, &ps) < 0 || ps.st_dev != stk[n - 1].dev || ps.st_ino != stk[n - 1].ino) {
                mini_close(parent);
                rc = mini_err_sys(e, MINI_E_IO, EAGAIN, "measuring %s: a directory was moved during the walk", what);
                goto out;
            }
            close(cur);
            cur = parent;
        }
        if (child < 0)
            break; /* back at the top with nothing left */
        close(cur);
        cur = child;
    }
out:
    mini_close(cur);
    for (size_t i = 0; i < n; i++)
        level_free(&stk[i]);
    free(stk);
    free(d.links.slot);
    if (rc == 0)
        *bytes = d.bytes;
    return rc;
}
