/* The template of the root, measured before it was built
 * (docs/performance.md, "A template mount tree"): what a sandbox's static mounts cost when the
 * sandbox builds them, against cloning a tree built once.
 *
 * A helper in a user and mount namespace of its own (as a rootless daemon
 * would need one) builds the template as a detached tree: an fsmount'ed
 * tmpfs, read-only binds of /usr, /etc and /opt moved into it, the
 * merged-/usr links, a /dev tmpfs with six device binds, three files and
 * three directories of /etc covered (strict's shape).  It hands the tree's
 * fd over and exits.  A "sandbox" in a user and mount namespace of its own
 * (a sibling of the helper's, as each sandbox's is) then, N times each,
 *   build: makes the same mounts itself, as the setup child does today;
 *   clone: open_tree(OPEN_TREE_CLONE | AT_RECURSIVE) of the template and
 *          move_mount onto its root directory;
 * each followed by a lazy unmount.  It prints both and their ratio, and
 * whether the template stayed read-only inside the sandbox.  Figures only;
 * exits 77 where user namespaces or the new mount API are refused. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "template_tree.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int map_self(unsigned uid, unsigned gid)
{
    char m[64];
    int fd = open("/proc/self/setgroups", O_WRONLY);
    if (fd >= 0) {
        (void)!write(fd, "deny", 4);
        close(fd);
    }
    const char *files[2] = { "/proc/self/uid_map", "/proc/self/gid_map" };
    unsigned ids[2] = { uid, gid };
    for (int i = 0; i < 2; i++) {
        int n = snprintf(m, sizeof m, "0 %u 1", ids[i]);
        if ((fd = open(files[i], O_WRONLY)) < 0 || write(fd, m, (size_t)n) != n)
            return -1;
        close(fd);
    }
    return 0;
}

/* A user and mount namespace of the caller's own, where it is root. */
static int own_namespaces(void)
{
    unsigned uid = geteuid(), gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || map_self(uid, gid) < 0)
        return -1;
    return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

/* The static part, the way the setup child builds it: on the directory
 * `root` (a tmpfs mounted there first) in the caller's namespace. */
static int build_at(const char *root)
{
    char p[512], s[64];
    int rc = 0;
    rc |= mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m");
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", root, binds[i]);
        rc |= mkdir(p, 0755) | mount(binds[i], p, NULL, MS_BIND | MS_REC, NULL);
        rc |= setattr(AT_FDCWD, p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_RECURSIVE);
    }
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", root, links[i][0]);
        rc |= symlink(links[i][1], p);
    }
    snprintf(p, sizeof p, "%s/dev", root);
    rc |= mkdir(p, 0755) | mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k");
    for (size_t i = 0; i < 6; i++) {
        snprintf(s, sizeof s, "/dev/%s", devs[i]);
        snprintf(p, sizeof p, "%s/dev/%s", root, devs[i]);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        rc |= fd < 0 ? -1 : close(fd);
        rc |= mount(s, p, NULL, MS_BIND, NULL) | setattr(AT_FDCWD, p, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0);
    }
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", root, hide_files[i]);
        if (access(p, F_OK) == 0)
            rc |= mount("/dev/null", p, NULL, MS_BIND, NULL) |
                setattr(AT_FDCWD, p, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0);
        snprintf(p, sizeof p, "%s/%s", root, hide_dirs[i]);
        if (access(p, F_OK) == 0)
            rc |= mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "mode=0755,size=16k");
    }
    snprintf(p, sizeof p, "%s/dev", root);
    rc |= setattr(AT_FDCWD, p, MOUNT_ATTR_RDONLY, 0) | setattr(AT_FDCWD, root, MOUNT_ATTR_RDONLY, 0);
    return rc ? -1 : 0;
}

static int send_fd(int sock, int fd)
{
    char c = 0, buf[CMSG_SPACE(sizeof(int))] = { 0 };
    struct iovec iov = { &c, 1 };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char c, buf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &c, 1 };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf };
    if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    int fd = -1;
    if (cm && cm->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

/* The sandbox's root directory goes, whatever is mounted on it. */
static int leave(const char *root, int rc)
{
    while (umount2(root, MNT_DETACH) == 0)
        ;
    rmdir(root);
    return rc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300;
    int sv[2];
    if (n < 1 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 1;
    pid_t helper = fork();
    if (helper == 0) {
        int t = own_namespaces() < 0 ? -1 : build_template();
        if (t < 0)
            fprintf(stderr, "mount_template: building the template: %s\n", strerror(errno));
        _exit(t < 0 || send_fd(sv[1], t) < 0 ? 77 : 0);
    }
    int st = 0;
    waitpid(helper, &st, 0);
    int tmpl = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? recv_fd(sv[0]) : -1;
    if (tmpl < 0) {
        printf("mount_template: no template on this machine (helper status %#x)\n", st);
        return 77;
    }
    /* The "sandbox": a sibling user namespace, as each sandbox has. */
    const char *who = geteuid() == 0 ? "as root" : "rootless";
    if (own_namespaces() < 0) {
        printf("mount_template: no user namespace: %s\n", strerror(errno));
        return 77;
    }
    char root[] = "/tmp/mini-template-root.XXXXXX";
    if (!mkdtemp(root))
        return 1;
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        if (build_at(root) < 0 || umount2(root, MNT_DETACH) < 0) {
            printf("mount_template: building: %s\n", strerror(errno));
            return leave(root, 1);
        }
    double t1 = now_ms();
    for (int i = 0; i < n; i++) {
        int c = clone_tree(tmpl, "", AT_RECURSIVE | AT_EMPTY_PATH);
        if (c < 0 || move_into(c, AT_FDCWD, root) < 0) {
            printf("mount_template: cloning the template here: %s\n", strerror(errno));
            return leave(root, 77);
        }
        close(c);
        if (i < n - 1)
            umount2(root, MNT_DETACH);
    }
    double t2 = now_ms();
    char probe[600];
    snprintf(probe, sizeof probe, "%s/usr/mini-template-probe", root);
    int w = open(probe, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), uerr = errno;
    snprintf(probe, sizeof probe, "%s/dev/mini-template-probe", root);
    int wd = open(probe, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), werr = errno;
    printf("static part of a strict root, %d times each, in a sandbox's own namespaces (%s):\n", n, who);
    printf("  built by the sandbox:     %.3f ms\n", (t1 - t0) / n);
    printf("  cloned from a template:   %.3f ms\n", (t2 - t1) / n);
    printf("  clone / build:            %.2f\n", (t2 - t1) / (t1 - t0));
    printf("  writing into the clone: /usr: %s; /dev: %s\n", w < 0 ? strerror(uerr) : "WRITABLE",
           wd < 0 ? strerror(werr) : "WRITABLE");
    if (w >= 0) {
        close(w);
        snprintf(probe, sizeof probe, "%s/usr/mini-template-probe", root);
        unlink(probe);
    }
    if (wd >= 0)
        close(wd);
    return leave(root, 0);
}
