/* A fault for tests/reliability/mount_race.sh, loaded into mini-sandboxd
 * with LD_PRELOAD: the first sandbox setup child that makes its mount
 * namespace (unshare with CLONE_NEWNS, which copies the daemon's mount
 * table) while the file DIR/on exists, DIR being MINI_TEST_SLOW_UNSHARE,
 * takes that file and then stops twice, so that the test can change the
 * host's mounts around the copy:
 *
 *   creates DIR/before, waits for DIR/go1, unshares (the copy),
 *   creates DIR/after, waits for DIR/go2 (at most 20 s each).
 *
 * Every other call goes straight to the real unshare. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int unshare(int flags);

static void touch(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

static void wait_for(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct timespec ms10 = { 0, 10 * 1000 * 1000 };
    for (int i = 0; i < 2000 && access(p, F_OK) < 0; i++)
        nanosleep(&ms10, NULL);
}

int unshare(int flags)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "unshare");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    const char *dir = getenv("MINI_TEST_SLOW_UNSHARE");
    char on[4096];
    if (!dir || !(flags & CLONE_NEWNS) || snprintf(on, sizeof on, "%s/on", dir) >= (int)sizeof on || unlink(on) < 0)
        return real(flags);
    touch(dir, "before");
    wait_for(dir, "go1");
    int r = real(flags);
    int err = errno;
    touch(dir, "after");
    wait_for(dir, "go2");
    errno = err;
    return r;
}
