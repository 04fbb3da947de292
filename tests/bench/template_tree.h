/* The detached template tree of a strict root, for the benchmarks that
 * need one (mount_template.c, floor_parts.c): an fsmount'ed tmpfs with
 * read-only binds of /usr, /etc and /opt, the merged-/usr links, the
 * mount points of /tmp and /proc, a /dev
 * tmpfs with six device binds, and strict's hidden files and directories
 * covered.  Built detached from the start, so that any mount namespace may
 * clone it (docs/performance.md, "A template mount tree").  Static
 * functions: each benchmark is one program. */
#ifndef MINI_BENCH_TEMPLATE_TREE_H
#define MINI_BENCH_TEMPLATE_TREE_H
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const binds[] = { "/usr", "/etc", "/opt" };
static const char *const links[][2] = {
    { "bin", "usr/bin" }, { "sbin", "usr/sbin" }, { "lib", "usr/lib" }, { "lib64", "usr/lib64" }
};
static const char *const devs[] = { "null", "zero", "full", "random", "urandom", "tty" };
static const char *const hide_files[] = { "etc/shadow", "etc/gshadow", "etc/sudoers" };
static const char *const hide_dirs[] = { "etc/ssh", "etc/sudoers.d", "etc/ssl/private" };

static int setattr(int fd, const char *path, unsigned long long set, unsigned flags)
{
    struct mount_attr a = { .attr_set = set };
    return (int)syscall(SYS_mount_setattr, fd, path, flags, &a, sizeof a);
}

static int move_into(int from, int dirfd, const char *path)
{
    return (int)syscall(SYS_move_mount, from, "", dirfd, path, MOVE_MOUNT_F_EMPTY_PATH);
}

static int clone_tree(int dirfd, const char *path, unsigned flags)
{
    return (int)syscall(SYS_open_tree, dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags);
}

static int fs_tmpfs(const char *opts_mode, unsigned attrs)
{
    int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0 || syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", opts_mode, 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return -1;
    int t = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
    close(fs);
    return t;
}

/* A detached clone of the host's `path`, restricted by `attrs`, moved onto
 * `at` in the detached tree `into`. */
static int bind_into(int into, const char *at, const char *path, unsigned long long attrs, unsigned rec)
{
    int m = clone_tree(AT_FDCWD, path, rec);
    int rc = m < 0 || setattr(m, "", attrs, AT_EMPTY_PATH | rec) < 0 || move_into(m, into, at) < 0 ? -1 : 0;
    if (m >= 0)
        close(m);
    return rc;
}

/* The tree, built detached from the start (an fsmount'ed tmpfs has no
 * origin, so any mount namespace may clone it; a tree cloned from an
 * attached one could only be cloned in its own namespace); its fd, or -1. */
static int build_template(void)
{
    int t = fs_tmpfs("0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV), rc = t < 0 ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < 3; i++)
        rc = mkdirat(t, binds[i] + 1, 0755) |
            bind_into(t, binds[i] + 1, binds[i], MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                      AT_RECURSIVE);
    for (size_t i = 0; rc == 0 && i < 4; i++)
        rc = symlinkat(links[i][1], t, links[i][0]);
    /* The mount points of what each sandbox mounts for itself. */
    if (rc == 0)
        rc = mkdirat(t, "tmp", 0755) | mkdirat(t, "proc", 0755);
    int dev = rc == 0 ? fs_tmpfs("0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) : -1;
    rc |= dev < 0 ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < 6; i++) {
        char s[64];
        snprintf(s, sizeof s, "/dev/%s", devs[i]);
        int fd = openat(dev, devs[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        rc = fd < 0 ? -1 : close(fd) | bind_into(dev, devs[i], s, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0);
    }
    if (rc == 0)
        rc = setattr(dev, "", MOUNT_ATTR_RDONLY, AT_EMPTY_PATH) | mkdirat(t, "dev", 0755) | move_into(dev, t, "dev");
    for (size_t i = 0; rc == 0 && i < 3; i++) {
        if (faccessat(t, hide_files[i], F_OK, 0) == 0)
            rc = bind_into(t, hide_files[i], "/dev/null",
                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0);
        int h = rc == 0 && faccessat(t, hide_dirs[i], F_OK, 0) == 0
            ? fs_tmpfs("0755", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)
            : -2;
        if (h >= 0) {
            rc = move_into(h, t, hide_dirs[i]);
            close(h);
        } else if (h == -1) {
            rc = -1;
        }
    }
    if (rc == 0)
        rc = setattr(t, "", MOUNT_ATTR_RDONLY, AT_EMPTY_PATH);
    if (dev >= 0)
        close(dev);
    if (rc < 0 && t >= 0) {
        close(t);
        return -1;
    }
    return t;
}

#endif
