#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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

/* ------------------------------------------------------------ host ids */

gid_t mini_ws_owner_group(uid_t uid)
{
    if (uid == 0)
        return 0;
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

int mini_idmap_userns(uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_idmap_holder *later, struct mini_err *e)
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
