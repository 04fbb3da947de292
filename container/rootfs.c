#include "rootfs.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_RO_LATER 64

struct build {
    const struct mini_rootfs_spec *s;
    int rootfd; /* the new root's tmpfs */
    /* Building a template (mini_rootfs_template): a detached tree, in
     * which mount(2) on a path is refused; every mount is made detached
     * and moved onto its mount point. */
    bool detached;
    int ro_later[MAX_RO_LATER]; /* mounts to make read-only once populated */
    size_t n_ro_later;
    struct mini_err *e;
};

static int fail(struct build *b, int err, const char *what, const char *path)
{
    return mini_err_sys(b->e, MINI_E_SPAWN_FAILED, err, "%s %s", what, path ? path : "");
}

/* Open `path` (absolute, as seen in the new root) inside the new root,
 * following symlinks only within it.  O_PATH fd or -1 with errno. */
static int open_in_root(struct build *b, const char *path, int extra_flags)
{
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC | (uint64_t)extra_flags,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    while (*path == '/')
        path++;
    if (!*path)
        path = ".";
    return (int)syscall(SYS_openat2, b->rootfd, path, &how, sizeof how);
}

/* mkdir -p inside the new root; returns an O_PATH fd of the directory. */
static int mkdirs_in_root(struct build *b, const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        int fd = open_in_root(b, buf, O_DIRECTORY);
        if (fd < 0 && errno == ENOENT) {
            /* Create the last component in its (already resolved) parent. */
            char *slash = strrchr(buf, '/');
            *slash = '\0';
            _cleanup_close_ int parent = open_in_root(b, *buf ? buf : "/", O_DIRECTORY);
            *slash = '/';
            /* An O_PATH directory fd serves as the dirfd of the *at calls
             * (the permission check is on the directory itself). */
            if (parent < 0 || (mkdirat(parent, slash + 1, 0755) < 0 && errno != EEXIST))
                return -1;
            fd = open_in_root(b, buf, O_DIRECTORY);
        }
        if (fd < 0)
            return -1;
        *p = saved;
        if (saved == '\0')
            return fd;
        close(fd);
    }
}

/* Create an empty regular file inside the new root to mount a file on. */
static int mkfile_in_root(struct build *b, const char *path)
{
    int fd = open_in_root(b, path, 0);
    if (fd >= 0 || errno != ENOENT)
        return fd;
    char dir[4096];
    size_t len = strlen(path);
    if (len >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    _cleanup_close_ int parent = mkdirs_in_root(b, *dir ? dir : "/");
    if (parent < 0)
        return -1;
    int f = openat(parent, slash + 1, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f < 0 && errno != EEXIST)
        return -1;
    mini_close(f);
    return open_in_root(b, path, 0);
}

static const char *fdpath(char buf[static 32], int fd)
{
    snprintf(buf, 32, "/proc/self/fd/%d", fd);
    return buf;
}

static int setattr(int fd, uint64_t set, unsigned flags)
{
    struct mount_attr attr = { .attr_set = set };
    return mount_setattr(fd, "", AT_EMPTY_PATH | flags, &attr, sizeof attr);
}

/* Remember a mount to turn read-only at the end (it must stay writable
 * while mount points are created in it). */
static int ro_later(struct build *b, int fd)
{
    if (b->n_ro_later == MAX_RO_LATER) {
        close(fd);
        errno = E2BIG;
        return -1;
    }
    b->ro_later[b->n_ro_later++] = fd;
    return 0;
}

/* A fresh tmpfs, detached: its fd (an O_PATH fd of its root), or -1.  A
 * read-only superblock (ro_sb) can never be written through any mount of
 * it, whatever that mount's flags become. */
static int detached_tmpfs(unsigned mode, unsigned long long size, uint64_t attrs, bool ro_sb)
{
    char m[16], sz[24];
    snprintf(m, sizeof m, "%o", mode);
    snprintf(sz, sizeof sz, "%llu", size);
    _cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "source", "tmpfs", 0) < 0 ||
        fsconfig(fs, FSCONFIG_SET_STRING, "mode", m, 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", sz, 0) < 0 ||
        (ro_sb && fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0) ||
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return -1;
    return fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attrs);
}

/* Move the detached mount `m` onto the O_PATH fd `target` (closes m). */
static int move_onto(int m, int target)
{
    int r = move_mount(m, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
    int err = errno;
    close(m);
    errno = err;
    return r;
}

/* A clone of the host's `src` (with its submounts when rec), restricted by
 * `attrs` before anything can see it, moved onto the O_PATH fd `target`. */
static int bind_onto(const char *src, int target, uint64_t attrs, bool rec)
{
    unsigned r = rec ? AT_RECURSIVE : 0;
    int m = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | r);
    if (m < 0)
        return -1;
    if (setattr(m, attrs, r) < 0) {
        int err = errno;
        close(m);
        errno = err;
        return -1;
    }
    return move_onto(m, target);
}

/* A tmpfs on `path`: mode, size in bytes, MOUNT_ATTR_* flags.  `ro`: made
 * read-only once populated (in a template: at once, superblock too). */
static int mount_tmpfs(struct build *b, const char *path, unsigned mode, unsigned long long size, uint64_t attrs,
                       bool ro)
{
    _cleanup_close_ int fd = mkdirs_in_root(b, path);
    char p[32];
    if (fd < 0)
        return fail(b, errno, "creating mount point", path);
    if (b->detached) {
        /* ro: read-only from the start, superblock too (a template's
         * hidden directory, which nothing populates). */
        int m = detached_tmpfs(mode, size, attrs | (ro ? MOUNT_ATTR_RDONLY : 0), ro);
        if (m < 0 || move_onto(m, fd) < 0)
            return fail(b, errno, "mounting tmpfs on", path);
        return 0;
    }
    char opts[64];
    unsigned long flags = ((attrs & MOUNT_ATTR_NOSUID) ? MS_NOSUID : 0) | ((attrs & MOUNT_ATTR_NODEV) ? MS_NODEV : 0) |
        ((attrs & MOUNT_ATTR_NOEXEC) ? MS_NOEXEC : 0);
    snprintf(opts, sizeof opts, "mode=%o,size=%llu", mode, size);
    if (mount("tmpfs", fdpath(p, fd), "tmpfs", flags, opts) < 0)
        return fail(b, errno, "mounting tmpfs on", path);
    if (!ro)
        return 0;
    int top = open_in_root(b, path, O_DIRECTORY);
    if (top < 0 || ro_later(b, top) < 0)
        return fail(b, errno, "opening", path);
    return 0;
}

/* Copy a host symlink (merged-/usr systems have /bin -> usr/bin). */
static int copy_symlink(struct build *b, const char *path)
{
    char target[4096];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
        return fail(b, errno, "reading link", path);
    target[n] = '\0';
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    _cleanup_close_ int parent = mkdirs_in_root(b, *dir ? dir : "/");
    if (parent < 0)
        return fail(b, errno, "creating", dir);
    if (symlinkat(target, parent, slash + 1) < 0 && errno != EEXIST)
        return fail(b, errno, "creating link", path);
    return 0;
}

static int overlay_bind(struct build *b, const struct mini_bind *m, int target)
{
    /* upper and work directories are named after the path, '/' -> '_',
     * inside the session's overlay directory (reached through its fd: the
     * sandbox's ids may not be able to walk the daemon's state path); the
     * upper ones are the session's, the work ones this sandbox's. */
    char name[1024], upper[4096], work[4096], opts[12288], p[32];
    snprintf(name, sizeof name, "%s", m->path);
    for (char *c = name; *c; c++)
        if (*c == '/')
            *c = '_';
    int od = b->s->overlay_fd;
    snprintf(upper, sizeof upper, "/proc/self/fd/%d/upper/%s", od, name);
    snprintf(work, sizeof work, "/proc/self/fd/%d/%s/%s", od, b->s->overlay_work, name);
    if ((mkdir(upper, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST))
        return fail(b, errno, "creating overlay directories for", m->path);
    if (snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", m->path, upper, work) >=
        (int)sizeof opts)
        return fail(b, ENAMETOOLONG, "overlay options for", m->path);
    if (mount("overlay", fdpath(p, target), "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        return fail(b, errno, "mounting overlay on", m->path);
    return 0;
}

static int add_bind(struct build *b, const struct mini_bind *m)
{
    if (strcmp(m->path, "/") == 0)
        return 0; /* the base of the root already (mini_rootfs_base) */
    struct stat st;
    if (lstat(m->path, &st) < 0) {
        if (errno == ENOENT && m->optional)
            return 0;
        return fail(b, errno, "bind source", m->path);
    }
    if (S_ISLNK(st.st_mode))
        return copy_symlink(b, m->path);
    bool dir = S_ISDIR(st.st_mode);
    _cleanup_close_ int target = dir ? mkdirs_in_root(b, m->path) : mkfile_in_root(b, m->path);
    if (target < 0)
        return fail(b, errno, "creating mount point", m->path);
    if (dir && !m->writable && !b->detached && b->s->overlay_fd >= 0 && b->s->profile->overlay_root)
        return overlay_bind(b, m, target);
    uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m->writable ? 0 : MOUNT_ATTR_RDONLY);
    if (bind_onto(m->path, target, attrs, true) < 0)
        return fail(b, errno, "binding", m->path);
    return 0;
}

/* Cover one file with /dev/null.  The host may replace the file by
 * rename while we do (passwd rewrites /etc/shadow so): the cover then
 * lands on the unlinked file (ENOENT), or the path afterwards names the
 * new, uncovered file.  Either way, try again on what the path names now.
 * The cover is nosuid, nodev (so the device node cannot even be opened:
 * reads and writes fail), noexec and read-only before it is moved there. */
static int cover_file(struct build *b, int fd, const char *path)
{
    if (bind_onto("/dev/null", fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_RDONLY,
                  false) < 0)
        return errno == ENOENT ? 1 : fail(b, errno, "hiding", path);
    _cleanup_close_ int top = open_in_root(b, path, 0);
    struct stat st;
    if (top < 0 || fstat(top, &st) < 0)
        return errno == ENOENT ? 1 : fail(b, errno, "checking the cover of", path);
    return S_ISCHR(st.st_mode) ? 0 : 1;
}

static int add_hide(struct build *b, const char *path)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        _cleanup_close_ int fd = open_in_root(b, path, 0);
        if (fd < 0)
            /* Absent, or out of the sandbox's reach already (beneath a
             * directory it may not search): nothing to cover. */
            return errno == ENOENT || errno == EACCES ? 0 : fail(b, errno, "looking up hidden path", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
            return fail(b, errno, "stat", path);
        if (S_ISDIR(st.st_mode))
            return mount_tmpfs(b, path, 0755, 16 << 10, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true);
        int r = cover_file(b, fd, path);
        if (r <= 0)
            return r;
    }
    return fail(b, EAGAIN, "hiding (the host keeps replacing it)", path);
}

/* /dev's nodes and links in the tmpfs b->rootfd + `at` ("/dev" in the
 * new root, "" in a detached /dev of its own). */
static int dev_populate(struct build *b, const char *at)
{
    static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
    static const char *const links[][2] = {
        { "ptmx", "pts/ptmx" },          { "fd", "/proc/self/fd" },       { "stdin", "/proc/self/fd/0" },
        { "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
    };
    char src[64], dst[80];
    for (size_t i = 0; i < MINI_ARRAY_SIZE(nodes); i++) {
        snprintf(src, sizeof src, "/dev/%s", nodes[i]);
        snprintf(dst, sizeof dst, "%s/%s", at, nodes[i]);
        _cleanup_close_ int fd = mkfile_in_root(b, dst);
        if (fd < 0)
            return fail(b, errno, "creating", src);
        if (bind_onto(src, fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
            return fail(b, errno, "binding", src);
    }
    _cleanup_close_ int devdir = open_in_root(b, *at ? at : "/", O_DIRECTORY);
    if (devdir < 0)
        return fail(b, errno, "opening", "/dev");
    if (mkdirat(devdir, "pts", 0755) < 0 || mkdirat(devdir, "shm", 0755) < 0)
        return fail(b, errno, "creating", "/dev/pts and /dev/shm");
    for (size_t i = 0; i < MINI_ARRAY_SIZE(links); i++)
        if (symlinkat(links[i][1], devdir, links[i][0]) < 0)
            return fail(b, errno, "creating link /dev/", links[i][0]);
    return 0;
}

static int seal(int mnt);

/* /dev, the part every sandbox of a profile shares (a template holds
 * it): a tmpfs, read-only once populated, with six device binds and the
 * usual links, and the mount points of /dev/pts and /dev/shm.  A
 * template's is populated and sealed before it is moved into the tree
 * (the kernel changes no flags of a mount inside a detached tree). */
static int add_dev_nodes(struct build *b)
{
    if (!b->detached)
        return mount_tmpfs(b, "/dev", 0755, 64 << 10, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, true) < 0
            ? -1
            : dev_populate(b, "/dev");
    struct build d = { .detached = true, .e = b->e };
    _cleanup_close_ int target = mkdirs_in_root(b, "/dev");
    if (target < 0)
        return fail(b, errno, "creating mount point", "/dev");
    if ((d.rootfd = detached_tmpfs(0755, 64 << 10, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false)) < 0)
        return fail(b, errno, "mounting tmpfs on", "/dev");
    if (dev_populate(&d, "") < 0) {
        close(d.rootfd);
        return -1;
    }
    if (seal(d.rootfd) < 0) {
        int err = errno;
        close(d.rootfd);
        return fail(b, err, "making read-only", "/dev");
    }
    if (move_onto(d.rootfd, target) < 0)
        return fail(b, errno, "mounting tmpfs on", "/dev");
    return 0;
}

/* /dev, each sandbox's own part: its devpts instance and /dev/shm. */
static int add_dev_own(struct build *b)
{
    char p[32];
    _cleanup_close_ int pts = open_in_root(b, "/dev/pts", O_DIRECTORY);
    if (pts < 0)
        return fail(b, errno, "opening", "/dev/pts");
    if (mount("devpts", fdpath(p, pts), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
        return fail(b, errno, "mounting devpts on", "/dev/pts");
    return mount_tmpfs(b, "/dev/shm", 01777, 64ULL << 20, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false);
}

static int add_proc(struct build *b)
{
    _cleanup_close_ int fd = mkdirs_in_root(b, "/proc");
    char p[32];
    if (fd < 0)
        return fail(b, errno, "creating", "/proc");
    if (mount("proc", fdpath(p, fd), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return fail(b, errno, "mounting", "/proc");
    return 0;
}

static int add_workspace(struct build *b)
{
    const struct mini_rootfs_spec *s = b->s;
    _cleanup_close_ int target = mkdirs_in_root(b, s->workspace);
    char p[32];
    if (target < 0)
        return fail(b, errno, "creating workspace mount point", s->workspace);
    if (s->workspace_detached) {
        if (move_mount(s->workspace_fd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
            return fail(b, errno, "attaching workspace", s->workspace);
    } else {
        char src[32];
        if (mount(fdpath(src, s->workspace_fd), fdpath(p, target), NULL, MS_BIND | MS_REC, NULL) < 0)
            return fail(b, errno, "binding workspace", s->workspace);
    }
    _cleanup_close_ int top = open_in_root(b, s->workspace, O_DIRECTORY);
    uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (s->profile->workspace_writable ? 0 : MOUNT_ATTR_RDONLY);
    if (top < 0 || setattr(top, attrs, AT_RECURSIVE) < 0)
        return fail(b, errno, "restricting workspace", s->workspace);
    return 0;
}

static const struct mini_bind *host_root_bind(const struct mini_profile *p)
{
    for (size_t i = 0; i < p->n_binds; i++)
        if (strcmp(p->binds[i].path, "/") == 0)
            return &p->binds[i];
    return NULL;
}

int mini_rootfs_base(const char *root, const struct mini_profile *p, bool image, unsigned uid, unsigned gid,
                     int template_fd, struct mini_err *e)
{
    /* Nothing we mount may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "making mounts private");
    const struct mini_bind *hr = image ? NULL : host_root_bind(p);
    if (template_fd >= 0) {
        /* This sandbox's own copy of the template's mounts (their
         * superblocks stay the template's, read-only). */
        int t = open_tree(template_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        if (t < 0 || move_mount(t, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
            int err = errno;
            mini_close(t);
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "cloning the root's template onto %s", root);
        }
        close(t);
    } else if (hr) {
        if (mount("/", root, NULL, MS_BIND | MS_REC, NULL) < 0)
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "binding / on %s", root);
    } else {
        char opts[64];
        snprintf(opts, sizeof opts, "mode=0755,size=1m,uid=%u,gid=%u", uid, gid);
        if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "mounting the new root on %s", root);
    }
    int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "opening %s", root);
    if (hr &&
        setattr(fd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (hr->writable ? 0 : MOUNT_ATTR_RDONLY), AT_RECURSIVE) < 0) {
        int err = errno;
        close(fd);
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "restricting the bind of /");
    }
    return fd;
}

/* An image as the root: an overlay whose lower layer is the image's tree
 * (never written: the store is shared), whose upper is the session's
 * writable overlay (profile overlay_root) or a directory of the base tmpfs
 * (the root is made read-only at the end; the upper then only holds the
 * mount points made in it).  On return b->rootfd is the overlay. */
static int image_root(struct build *b, bool *writable)
{
    const struct mini_rootfs_spec *s = b->s;
    char p[32], upper[4096], work[4096], opts[8400], target[64];
    _cleanup_close_ int base = open(fdpath(p, b->rootfd), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (base < 0)
        return fail(b, errno, "opening the base of the root", NULL);
    *writable = s->overlay_fd >= 0 && s->profile->overlay_root;
    if (*writable) {
        snprintf(upper, sizeof upper, "/proc/self/fd/%d/upper/_image", s->overlay_fd);
        snprintf(work, sizeof work, "/proc/self/fd/%d/%s/_image", s->overlay_fd, s->overlay_work);
        if ((mkdir(upper, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST))
            return fail(b, errno, "creating the image's overlay directories", NULL);
    } else {
        if (mkdirat(base, "upper", 0755) < 0 || mkdirat(base, "work", 0700) < 0)
            return fail(b, errno, "creating the image's overlay directories", NULL);
        snprintf(upper, sizeof upper, "/proc/self/fd/%d/upper", base);
        snprintf(work, sizeof work, "/proc/self/fd/%d/work", base);
    }
    if (mkdirat(base, "root", 0755) < 0)
        return fail(b, errno, "creating the image's mount point", NULL);
    char lower[64];
    snprintf(lower, sizeof lower, "/proc/self/fd/%d", s->image_fd);
    if (s->image_detached) {
        if (mkdirat(base, "lower", 0755) < 0 || move_mount(s->image_fd, "", base, "lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return fail(b, errno, "attaching the image", NULL);
        snprintf(lower, sizeof lower, "/proc/self/fd/%d/lower", base);
    }
    snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", lower, upper, work);
    snprintf(target, sizeof target, "/proc/self/fd/%d/root", base);
    if (mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        return fail(b, errno, "mounting the image's overlay", NULL);
    int fd = openat(base, "root", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(b, errno, "opening the image's root", NULL);
    b->rootfd = fd;
    return 0;
}

int mini_rootfs_enter(const struct mini_rootfs_spec *s, struct mini_err *e)
{
    struct build b = { .s = s, .rootfd = s->root_fd, .e = e };
    const struct mini_profile *pr = s->profile;
    int rc = -1, newroot = -1;
    bool image = s->image_fd >= 0, writable_root = false;
    /* From a template, the binds, /dev's nodes and the hidden paths are
     * there already (mini_rootfs_template); the rest is this sandbox's. */
    bool shared = !s->templated;

    if (image && image_root(&b, &writable_root) < 0)
        goto out;
    for (size_t i = 0; shared && !image && i < pr->n_binds; i++)
        if (add_bind(&b, &pr->binds[i]) < 0)
            goto out;
    for (size_t i = 0; i < pr->n_tmpfs; i++)
        if (mount_tmpfs(&b, pr->tmpfs[i].path, pr->tmpfs[i].mode, (unsigned long long)pr->tmpfs[i].size_bytes,
                        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false) < 0)
            goto out;
    if (add_proc(&b) < 0 || (shared && add_dev_nodes(&b) < 0) || add_dev_own(&b) < 0)
        goto out;
    for (size_t i = 0; shared && !image && i < pr->n_hide; i++)
        if (add_hide(&b, pr->hide[i]) < 0)
            goto out;
    if (add_workspace(&b) < 0)
        goto out;

    /* Enter it: pivot_root(".", ".") stacks the old root under the new
     * one; detaching it leaves no path back to the host's tree. */
    if (fchdir(b.rootfd) < 0 || syscall(SYS_pivot_root, ".", ".") < 0) {
        fail(&b, errno, "pivot_root into the new root", NULL);
        goto out;
    }
    if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
        fail(&b, errno, "detaching the old root", NULL);
        goto out;
    }
    for (size_t i = 0; i < b.n_ro_later; i++)
        if (setattr(b.ro_later[i], MOUNT_ATTR_RDONLY, 0) < 0) {
            fail(&b, errno, "making a mount read-only", NULL);
            goto out;
        }
    newroot = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (newroot < 0 || (!writable_root && setattr(newroot, MOUNT_ATTR_RDONLY, 0) < 0)) {
        fail(&b, errno, "making the root read-only", NULL);
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < b.n_ro_later; i++)
        close(b.ro_later[i]);
    mini_close(newroot);
    if (b.rootfd != s->root_fd)
        mini_close(b.rootfd);
    return rc;
}

/* ------------------------------------------------------------ template */

/* Whether a hidden path would be covered differently from a template: a
 * sandbox building its own root covers hidden paths after its tmpfs,
 * /proc and /dev are mounted, a template before.  So a hidden path in
 * /proc, /dev/pts or /dev/shm, or one that is (or holds) a tmpfs, /proc,
 * /dev/pts or /dev/shm, is refused.  One in a tmpfs is not: both find
 * nothing there (a fresh tmpfs, or its empty mount point); nor one in or
 * above the workspace, which both mount after the hidden paths.  Checked
 * as written and as the host resolves it. */
static bool hide_differs(const struct mini_profile *p, const char *path)
{
    static const char *const own[] = { "/proc", "/dev/pts", "/dev/shm" };
    char real[PATH_MAX];
    const char *as[2] = { path, realpath(path, real) ? real : NULL };
    for (size_t k = 0; k < 2; k++) {
        if (!as[k])
            continue;
        for (size_t i = 0; i < MINI_ARRAY_SIZE(own); i++)
            if (mini_path_within(as[k], own[i]) || mini_path_within(own[i], as[k]))
                return true;
        for (size_t i = 0; i < p->n_tmpfs; i++)
            if (mini_path_within(p->tmpfs[i].path, as[k]))
                return true;
    }
    return false;
}

bool mini_rootfs_template_fits(const struct mini_profile *p)
{
    if (p->overlay_root || host_root_bind(p))
        return false;
    for (size_t i = 0; i < p->n_hide; i++)
        if (hide_differs(p, p->hide[i]))
            return false;
    return true;
}

/* Make a template's mount read-only, and its superblock with it: a
 * sandbox that could clear the flag on its clone (it never holds the
 * capability, but if it did) still could not write into what every other
 * sandbox of the session shares.  Changing a superblock back takes
 * CAP_SYS_ADMIN in the user namespace that made it, the builder's, in
 * which no command ever runs. */
static int seal(int mnt)
{
    _cleanup_close_ int fs = fspick(mnt, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
    if (fs < 0 || fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0 ||
        fsconfig(fs, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
        return -1;
    return setattr(mnt, MOUNT_ATTR_RDONLY, 0);
}

/* Everything in the template but its base, which b->rootfd is. */
static int template_tree(struct build *b, const struct mini_profile *p, const char *workspace)
{
    for (size_t i = 0; i < p->n_binds; i++)
        if (add_bind(b, &p->binds[i]) < 0)
            return -1;
    /* The mount points of what each sandbox mounts for itself. */
    bool ws_in_tmpfs = false;
    for (size_t i = 0; i < p->n_tmpfs; i++) {
        _cleanup_close_ int fd = mkdirs_in_root(b, p->tmpfs[i].path);
        if (fd < 0)
            return fail(b, errno, "creating mount point", p->tmpfs[i].path);
        ws_in_tmpfs |= mini_path_within(workspace, p->tmpfs[i].path);
    }
    _cleanup_close_ int proc = mkdirs_in_root(b, "/proc");
    if (proc < 0)
        return fail(b, errno, "creating", "/proc");
    if (add_dev_nodes(b) < 0)
        return -1;
    for (size_t i = 0; i < p->n_hide; i++)
        if (add_hide(b, p->hide[i]) < 0)
            return -1;
    /* The workspace's, unless it is in a tmpfs of the sandbox's own (made
     * there per sandbox); through a bind, the path is there already. */
    if (!ws_in_tmpfs) {
        _cleanup_close_ int ws = mkdirs_in_root(b, workspace);
        if (ws < 0)
            return fail(b, errno, "creating workspace mount point", workspace);
    }
    /* The base last, once every mount point in it is made. */
    if (seal(b->rootfd) < 0)
        return fail(b, errno, "making the template read-only", NULL);
    return 0;
}

int mini_rootfs_template(const struct mini_profile *p, const char *workspace, struct mini_err *e)
{
    struct build b = { .detached = true, .e = e };
    if ((b.rootfd = detached_tmpfs(0755, 1 << 20, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false)) < 0)
        return fail(&b, errno, "making the template's base", NULL);
    int rc = template_tree(&b, p, workspace);
    if (rc < 0) {
        close(b.rootfd);
        return -1;
    }
    return b.rootfd;
}
