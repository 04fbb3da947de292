#include "mini/io.h"
#include "mini/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t mini_read(int fd, void *p, size_t n)
{
    ssize_t r;
    do
        r = read(fd, p, n);
    while (r < 0 && errno == EINTR);
    return r;
}

ssize_t mini_write(int fd, const void *p, size_t n)
{
    ssize_t r;
    do
        r = write(fd, p, n);
    while (r < 0 && errno == EINTR);
    return r;
}

int mini_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t r = mini_write(fd, c, n);
        if (r < 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

ssize_t mini_read_full(int fd, void *p, size_t n)
{
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = mini_read(fd, c + got, n - got);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int mini_read_to_end(int fd, struct mini_buf *b, size_t max)
{
    for (;;) {
        if (mini_buf_reserve(b, 65536) < 0)
            return -1;
        size_t room = b->cap - b->len - 1;
        ssize_t r = mini_read(fd, b->data + b->len, room);
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        b->len += (size_t)r;
        b->data[b->len] = '\0';
        if (max && b->len > max) {
            errno = EFBIG;
            return -1;
        }
    }
}

int mini_read_file(const char *path, struct mini_buf *b, size_t max, struct mini_err *e)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
    if (mini_read_to_end(fd, b, max) < 0) {
        if (errno == EFBIG)
            return mini_err_set(e, MINI_E_IO, "%s: larger than %zu bytes", path, max);
        return mini_err_sys(e, MINI_E_IO, errno, "reading %s", path);
    }
    return 0;
}

/* The temporary name beside `path` is fixed ("PATH.tmp"), so that what a
 * killed writer left there is removed (or reused) by the next write of the
 * same path.  A durable write puts the data into an unnamed O_TMPFILE file
 * first, which gets that name only once it is complete and synced, just
 * before the rename: a writer killed mid-write leaves nothing behind.
 * Where O_TMPFILE or /proc is missing, the named file is written directly.
 * (A write that is not durable: replace_swapped.)
 *
 * Every name is looked up relative to dirfd (AT_FDCWD: the current
 * directory), and none is ever followed when it is a symlink: the file
 * written may lie where a sandboxed command writes too (a trajectory in
 * the workspace), which may have planted links at PATH or PATH.tmp. */
static int open_unnamed(int dirfd, const char *path, int mode)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return -1;
    return openat(dirfd, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, (mode_t)mode);
}

static int give_name(int fd, int dirfd, const char *tmp)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW);
}

static int unlink_stale(int dirfd, const char *tmp, struct mini_err *e)
{
    if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
        return mini_err_sys(e, MINI_E_IO, errno, "removing the stale %s", tmp);
    return 0;
}

static int mini_open_new_at(int dirfd, const char *path, int mode)
{
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
    int fd = openat(dirfd, path, flags, (mode_t)mode);
    for (int attempt = 0; fd < 0 && errno == EEXIST && attempt < 3; attempt++) {
        if (unlinkat(dirfd, path, 0) < 0 && errno != ENOENT)
            return -1;
        fd = openat(dirfd, path, flags, (mode_t)mode);
    }
    return fd;
}

int mini_open_new(const char *path, int mode) { return mini_open_new_at(AT_FDCWD, path, mode); }

int mini_open_append_log_at(int dirfd, const char *name, const char *path, int mode, struct mini_err *e)
{
    /* O_NONBLOCK: a FIFO's open never waits for a reader (it is refused
     * below); O_EXCL when missing, so that a link planted between the two
     * opens is not followed either. */
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 3; attempt++) {
        fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                        (mode_t)mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        if (errno == ELOOP)
            return mini_err_set(e, MINI_E_IO, "%s: is a symbolic link; refusing to write through it", path);
        if (errno == ENXIO)
            return mini_err_set(e, MINI_E_IO, "%s: not a regular file; refusing to write to it", path);
        return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
    }
    struct stat st;
    const char *why = NULL;
    char owner[80];
    if (fstat(fd, &st) < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_IO, err, "%s", path);
    }
    if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != geteuid()) {
        snprintf(owner, sizeof owner, "owned by uid %u, not by this user (uid %u)", (unsigned)st.st_uid,
                 (unsigned)geteuid());
        why = owner;
    } else if (st.st_nlink != 1)
        why = "has other hard links";
    if (why) {
        close(fd);
        return mini_err_set(e, MINI_E_IO, "%s: %s; refusing to write to it", path, why);
    }
    if (mini_set_nonblock(fd, 0) < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_IO, err, "%s", path);
    }
    return fd;
}

int mini_open_append_log(const char *path, int mode, struct mini_err *e)
{
    return mini_open_append_log_at(AT_FDCWD, path, path, mode, e);
}

/* Whether the directory dfd is `guard` (st_dev, st_ino) or lies below it:
 * up through ".." to the root.  -1 with errno when a step fails. */
static int dir_within(int dfd, const struct stat *guard)
{
    _cleanup_close_ int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return -1;
    for (int depth = 0; depth < 4096; depth++) {
        struct stat st, up;
        if (fstat(cur, &st) < 0)
            return -1;
        if (st.st_dev == guard->st_dev && st.st_ino == guard->st_ino)
            return 1;
        int parent = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0)
            return -1;
        if (fstat(parent, &up) < 0) {
            close(parent);
            return -1;
        }
        close(cur);
        cur = parent;
        if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
            return 0; /* the root */
    }
    errno = ELOOP;
    return -1;
}

int mini_open_dir_guarded(const char *dir, int guard, struct mini_err *e)
{
    struct stat gst;
    if (guard >= 0 && fstat(guard, &gst) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "the workspace");
    /* What is left to resolve, rebuilt when a link is followed. */
    size_t cap = strlen(dir) + 2;
    _cleanup_free_ char *rest = malloc(cap);
    if (!rest)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    memcpy(rest, dir, cap - 1);
    rest[cap - 1] = '\0';
    _cleanup_close_ int cur = open(dir[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", dir);
    int links = 0;
    size_t at = 0;
    for (;;) {
        while (rest[at] == '/')
            at++;
        if (!rest[at])
            return TAKE_FD(cur);
        size_t len = strcspn(rest + at, "/");
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX)
            return mini_err_sys(e, MINI_E_IO, ENAMETOOLONG, "%s", dir);
        memcpy(comp, rest + at, len);
        comp[len] = '\0';
        at += len;
        int next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (next < 0 || fstat(next, &st) < 0) {
            int err = errno;
            if (next >= 0)
                close(next);
            return mini_err_sys(e, MINI_E_IO, err, "%s", dir);
        }
        if (S_ISDIR(st.st_mode)) {
            close(cur);
            cur = next;
            continue;
        }
        _cleanup_close_ int link = next;
        if (!S_ISLNK(st.st_mode))
            return mini_err_sys(e, MINI_E_IO, ENOTDIR, "%s", dir);
        int in = guard >= 0 ? dir_within(cur, &gst) : 0;
        if (in != 0)
            return in < 0 ? mini_err_sys(e, MINI_E_IO, errno, "%s", dir)
                          : mini_err_set(e, MINI_E_IO,
                                         "%s: %s is a symbolic link in the workspace, which sandboxed commands can "
                                         "write; refusing to follow it (name the directory by its real path)",
                                         dir, comp);
        if (++links > 40)
            return mini_err_sys(e, MINI_E_IO, ELOOP, "%s", dir);
        char target[PATH_MAX];
        ssize_t n = readlinkat(link, "", target, sizeof target - 1);
        if (n <= 0)
            return mini_err_sys(e, MINI_E_IO, n < 0 ? errno : ENOENT, "%s", dir);
        target[n] = '\0';
        /* The target, then what was left after the link. */
        size_t tail = strlen(rest + at);
        char *nr = malloc((size_t)n + tail + 2);
        if (!nr)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        memcpy(nr, target, (size_t)n);
        nr[n] = '/';
        memcpy(nr + n + 1, rest + at, tail + 1);
        free(rest);
        rest = nr;
        at = 0;
        if (target[0] == '/') {
            close(cur);
            if ((cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
                return mini_err_sys(e, MINI_E_IO, errno, "%s", dir);
        }
    }
}

int mini_open_parent_guarded(const char *path, int guard, const char **name, struct mini_err *e)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!**name)
        return mini_err_set(e, MINI_E_IO, "%s: names a directory, not a file", path);
    if (!slash)
        return mini_open_dir_guarded(".", guard, e);
    _cleanup_free_ char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (!dir)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_open_dir_guarded(dir, guard, e);
}

int mini_dir_within(int dfd, int guard)
{
    struct stat gst;
    if (fstat(guard, &gst) < 0)
        return -1;
    return dir_within(dfd, &gst);
}

int mini_path_in_guard(const char *path, int guard, struct mini_err *e)
{
    struct stat gst;
    if (fstat(guard, &gst) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "the workspace");
    char cur[PATH_MAX + 64];
    if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
        return mini_err_sys(e, MINI_E_IO, ENAMETOOLONG, "%s", path);
    _cleanup_close_ int held = -1; /* the last link's directory, named by cur */
    for (int hops = 0; hops <= 40; hops++) {
        const char *name;
        _cleanup_close_ int dfd = mini_open_parent_guarded(cur, guard, &name, e);
        if (dfd < 0)
            return -1;
        int in = dir_within(dfd, &gst);
        if (in != 0)
            return in < 0 ? mini_err_sys(e, MINI_E_IO, errno, "%s", path) : 1;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
        if (!S_ISLNK(st.st_mode))
            return 0;
        /* A link outside: where it leads, from its own directory. */
        char target[PATH_MAX];
        ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
        if (n <= 0)
            return mini_err_sys(e, MINI_E_IO, n < 0 ? errno : ENOENT, "%s", path);
        target[n] = '\0';
        int r = target[0] == '/' ? snprintf(cur, sizeof cur, "%s", target)
                                 : snprintf(cur, sizeof cur, "/proc/self/fd/%d/%s", dfd, target);
        if (r >= (int)sizeof cur)
            return mini_err_sys(e, MINI_E_IO, ENAMETOOLONG, "%s", path);
        mini_close(held);
        held = TAKE_FD(dfd);
    }
    return mini_err_sys(e, MINI_E_IO, ELOOP, "%s", path);
}

int mini_write_file_atomic(const char *path, const void *p, size_t n, int mode, struct mini_err *e)
{
    return mini_write_file_replace(path, p, n, mode, true, e);
}

/* A non-durable write's spare, PATH.tmp, to be written over: only a
 * regular file of ours with no other link (never through a symlink, never
 * a FIFO's open that waits).  -1 otherwise (errno ENOENT: there is none);
 * *size is its size. */
static int open_spare(int dirfd, const char *tmp, off_t *size)
{
    int fd = openat(dirfd, tmp, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
        close(fd);
        errno = EEXIST;
        return -1;
    }
    *size = st.st_size;
    return fd;
}

/* The data, then the mode when the umask changed it (an fchmod costs a
 * metadata update on disk filesystems even when nothing changes). */
static int fill(int fd, const void *p, size_t n, int mode)
{
    struct stat st;
    if (mini_write_all(fd, p, n) < 0 || fstat(fd, &st) < 0)
        return -1;
    return (st.st_mode & 07777) == (mode_t)mode ? 0 : fchmod(fd, (mode_t)mode);
}

/* Not durable: PATH.tmp (the spare the last write left, else a new file)
 * is filled and swapped with PATH, so that it holds the version replaced,
 * the spare of the next write.  A file rewritten many times (a trajectory
 * after every step) so costs no new inode and frees none: on ext4 without
 * a journal each new inode is looked for past every inode freed in the
 * last minutes, and a rename over an old file or a truncation to 0
 * (auto_da_alloc) starts writing the new one out; each cost a writer
 * tenths of a millisecond.  Where PATH is not a regular file yet, or the
 * filesystem cannot swap, a rename.  (So a file replaced is written over
 * two writes later: a reader that keeps it open that long, rather than
 * reading it whole at once, may see that.) */
static int replace_swapped(int dirfd, const char *path, const char *tmp, const void *p, size_t n, int mode,
                           struct mini_err *e)
{
    off_t size = 0;
    _cleanup_close_ int fd = open_spare(dirfd, tmp, &size);
    if (fd < 0 && errno != ENOENT && unlink_stale(dirfd, tmp, e) < 0)
        return -1;
    if (fd < 0)
        fd = mini_open_new_at(dirfd, tmp, mode);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating a temporary file beside %s", path);
    /* Written over, then cut where it was longer: a truncation to 0 would
     * have ext4 (auto_da_alloc) write the file out at its close. */
    if (fill(fd, p, n, mode) < 0 || (size > (off_t)n && ftruncate(fd, (off_t)n) < 0) || close(TAKE_FD(fd)) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        return mini_err_sys(e, MINI_E_IO, saved, "writing %s", tmp);
    }
    /* Only a regular file is swapped out to be the next spare (a rename
     * fails over a directory, and replaces a symlink, as ever; a file
     * swapped out that is not ours alone is refused as a spare next
     * time). */
    struct stat old;
    if (fstatat(dirfd, path, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode) &&
        renameat2(dirfd, tmp, dirfd, path, RENAME_EXCHANGE) == 0)
        return 0;
    if (renameat(dirfd, tmp, dirfd, path) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        return mini_err_sys(e, MINI_E_IO, saved, "renaming %s to %s", tmp, path);
    }
    return 0;
}

void mini_write_file_done(const char *path) { mini_write_file_done_at(AT_FDCWD, path); }

void mini_write_file_done_at(int dirfd, const char *path)
{
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", path) >= 0)
        unlinkat(dirfd, tmp, 0);
}

int mini_write_file_replace(const char *path, const void *p, size_t n, int mode, bool durable, struct mini_err *e)
{
    return mini_write_file_replace_at(AT_FDCWD, path, p, n, mode, durable, e);
}

int mini_write_file_replace_at(int dirfd, const char *path, const void *p, size_t n, int mode, bool durable,
                               struct mini_err *e)
{
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", path) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (!durable)
        return replace_swapped(dirfd, path, tmp, p, n, mode, e);
    /* A stale PATH.tmp (a killed writer's, or a spare) is removed when it
     * is in the way, not looked for every time. */
    bool named = false;
    _cleanup_close_ int fd = open_unnamed(dirfd, path, mode);
    if (fd < 0) {
        named = true;
        fd = mini_open_new_at(dirfd, tmp, 0600);
    }
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating a temporary file beside %s", path);
    if (fill(fd, p, n, mode) < 0 || fsync(fd) < 0)
        goto fail;
    if (!named) {
        int r = give_name(fd, dirfd, tmp);
        if (r < 0 && errno == EEXIST) {
            if (unlink_stale(dirfd, tmp, e) < 0)
                return -1;
            r = give_name(fd, dirfd, tmp);
        }
        if (r < 0)
            goto fail;
        named = true;
    }
    if (close(TAKE_FD(fd)) < 0)
        goto fail;
    if (renameat(dirfd, tmp, dirfd, path) < 0) {
        int saved = errno;
        unlinkat(dirfd, tmp, 0);
        return mini_err_sys(e, MINI_E_IO, saved, "renaming %s to %s", tmp, path);
    }
    return 0;
fail : {
    int saved = errno;
    if (named)
        unlinkat(dirfd, tmp, 0);
    return mini_err_sys(e, MINI_E_IO, saved, "writing %s", tmp);
}
}

/* mini_rm_rf walks by fd, never by path: the trees it removes were
 * written by sandboxed processes, and another process of their uid may
 * still be swapping directories for symlinks while a root daemon removes
 * them.  It holds one directory fd at a time (any depth, bounded fds),
 * goes back up through ".." and checks that it is the directory it came
 * from (device and inode), and stops if not. */
struct rm_level {
    dev_t dev;
    ino_t ino;
    char *name; /* in its parent */
};

/* A directory of ours whose mode keeps us out: chmod it through its own
 * fd (never by path), when it is a directory owned by us. */
static int rm_unlock(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    char p[64];
    int r = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        r = chmod(p, 0700);
    }
    if (fd >= 0)
        close(fd);
    if (r < 0)
        errno = EACCES;
    return r;
}

static int rm_open_dir(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && rm_unlock(dirfd, name) == 0)
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd;
}

/* Unlink everything in dir but directories; *sub gets the first
 * directory's name (malloc), NULL when none is left.  0 or -1. */
static int rm_files(int dir, char **sub)
{
    *sub = NULL;
    int dfd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    int rc = 0;
    bool unlocked = false;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            if (!*sub && !(*sub = strdup(de->d_name)))
                rc = -1;
            continue;
        }
        if (unlinkat(dir, de->d_name, 0) < 0 && errno == EACCES && !unlocked) {
            /* Our own directory without write permission. */
            char p[64];
            snprintf(p, sizeof p, "/proc/self/fd/%d", dir);
            struct stat ds;
            unlocked = true;
            if (fstat(dir, &ds) == 0 && ds.st_uid == geteuid() && chmod(p, 0700) == 0)
                unlinkat(dir, de->d_name, 0);
        }
    }
    closedir(d);
    return rc;
}

int mini_rm_rf(const char *path, struct mini_err *e)
{
    int cur = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cur < 0 && errno == EACCES) {
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash && slash != dir) {
            *slash = '\0';
            int pfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0) {
                cur = rm_open_dir(pfd, slash + 1);
                close(pfd);
            }
        }
    }
    if (cur < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == ENOTDIR || errno == ELOOP) /* a file or a symlink: itself only */
            return unlink(path) == 0 || errno == ENOENT ? 0 : mini_err_sys(e, MINI_E_IO, errno, "removing %s", path);
        return mini_err_sys(e, MINI_E_IO, errno, "removing %s", path);
    }
    struct stat top;
    struct rm_level *stk = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (fstat(cur, &top) < 0) {
        rc = mini_err_sys(e, MINI_E_IO, errno, "removing %s", path);
        goto out;
    }
    for (;;) {
        char *sub;
        if (rm_files(cur, &sub) < 0) {
            rc = mini_err_sys(e, MINI_E_IO, errno, "removing %s: reading a directory", path);
            goto out;
        }
        if (sub) {
            int child = rm_open_dir(cur, sub);
            struct stat st;
            if (child < 0 && (errno == ENOTDIR || errno == ELOOP)) {
                unlinkat(cur, sub, 0); /* swapped for a non-directory meanwhile */
                free(sub);
                continue;
            }
            if (child < 0 || fstat(child, &st) < 0 || st.st_dev != top.st_dev) {
                int err = child < 0 ? errno : EXDEV; /* EXDEV: another filesystem is mounted there */
                rc = mini_err_sys(e, MINI_E_IO, err, "removing %s: entering %s", path, sub);
                if (child >= 0)
                    close(child);
                free(sub);
                goto out;
            }
            if (n == cap) {
                struct rm_level *ns = realloc(stk, (cap = cap ? cap * 2 : 64) * sizeof *ns);
                if (!ns) {
                    close(child);
                    free(sub);
                    rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
                    goto out;
                }
                stk = ns;
            }
            /* The parent's identity, to check the way back up. */
            struct stat ps;
            fstat(cur, &ps);
            stk[n++] = (struct rm_level){ .dev = ps.st_dev, .ino = ps.st_ino, .name = sub };
            close(cur);
            cur = child;
            continue;
        }
        if (n == 0)
            break; /* the top is empty */
        int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat ps;
        if (parent < 0 || fstat(parent, &ps) < 0 || ps.st_dev != stk[n - 1].dev || ps.st_ino != stk[n - 1].ino) {
            if (parent >= 0)
                close(parent);
            rc = mini_err_set(e, MINI_E_IO, "removing %s: a directory was moved during the removal; stopped", path);
            goto out;
        }
        close(cur);
        cur = parent;
        n--;
        int r = unlinkat(cur, stk[n].name, AT_REMOVEDIR);
        if (r < 0 && errno == EACCES) {
            char p[64];
            snprintf(p, sizeof p, "/proc/self/fd/%d", cur);
            if (ps.st_uid == geteuid() && chmod(p, 0700) == 0)
                r = unlinkat(cur, stk[n].name, AT_REMOVEDIR);
        }
        if (r < 0 && errno != ENOENT) {
            /* It would be found again: stop rather than loop. */
            rc = mini_err_sys(e, MINI_E_IO, errno, "removing %s: %s", path, stk[n].name);
            free(stk[n].name);
            goto out;
        }
        free(stk[n].name);
    }
    close(cur);
    cur = -1;
    if (rmdir(path) < 0 && errno != ENOENT)
        rc = mini_err_sys(e, MINI_E_IO, errno, "removing %s", path);
out:
    if (cur >= 0)
        close(cur);
    for (size_t i = 0; i < n; i++)
        free(stk[i].name);
    free(stk);
    return rc;
}

void mini_close(int fd)
{
    if (fd < 0)
        return;
    int saved = errno;
    close(fd);
    errno = saved;
}

int mini_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    return fcntl(fd, F_SETFL, fl);
}

int mini_set_cloexec(int fd, int on)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0)
        return -1;
    fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
    return fcntl(fd, F_SETFD, fl);
}

bool mini_pid_running(pid_t pid)
{
    if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno != ENOENT;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

bool mini_owner_lock_lost(int fd, const char *path)
{
    struct stat a, b;
    return fd < 0 || fstat(fd, &a) < 0 || a.st_nlink == 0 || lstat(path, &b) < 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino;
}

int mini_owner_lock(const char *path, bool dir, struct mini_err *e)
{
    int flags = O_CLOEXEC | O_NOFOLLOW | (dir ? O_RDONLY | O_DIRECTORY : O_RDWR | O_CREAT);
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = open(path, flags, 0600);
        if (fd < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "creating the lock %s", path);
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && !mini_owner_lock_lost(fd, path))
            return fd;
        /* A reclaiming daemon holds it (it took us for dead between the
         * open and the lock) and removes it: make a new one. */
        int err = errno;
        close(fd);
        if (dir)
            return mini_err_sys(e, MINI_E_IO, err == EWOULDBLOCK ? EBUSY : ENOENT, "locking %s", path);
        usleep(1000);
    }
    return mini_err_sys(e, MINI_E_IO, EBUSY, "locking %s", path);
}

int mini_owner_lock_free(const char *path, bool dir, int *fd_out)
{
    int fd = open(path, O_CLOEXEC | O_NOFOLLOW | O_RDONLY | (dir ? O_DIRECTORY : 0));
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return 0;
    }
    if (fd_out)
        *fd_out = fd;
    else
        close(fd);
    return 1;
}

int mini_mkdir_p(const char *path, int mode, struct mini_err *e)
{
    _cleanup_free_ char *p = strdup(path);
    if (!p)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    size_t len = strlen(p);
    for (size_t i = 1; i <= len; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, (mode_t)mode) < 0 && errno != EEXIST)
            return mini_err_sys(e, MINI_E_IO, errno, "creating %s", p);
        p[i] = saved;
    }
    struct stat st;
    if (stat(p, &st) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", p);
    if (!S_ISDIR(st.st_mode))
        return mini_err_set(e, MINI_E_IO, "%s: not a directory", p);
    return 0;
}

int mini_send_fds(int sock, const void *p, size_t n, const int *fds, size_t n_fds)
{
    char cbuf[CMSG_SPACE(MINI_SEND_FDS_MAX * sizeof(int))];
    if (n_fds > MINI_SEND_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = { (void *)p, n };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (n_fds) {
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }
    ssize_t w;
    do
        w = sendmsg(sock, &mh, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w >= 0 && (size_t)w != n) {
        errno = EIO;
        return -1;
    }
    return w < 0 ? -1 : 0;
}
