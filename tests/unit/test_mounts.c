/* The daemon's watch on its mount table (sandbox/daemon/mounts.c): a
 * change is counted once, and the hash of the mounts under a set of paths
 * moves with a mount made, remounted or removed at or under one of them,
 * and only then (not for a sibling whose name merely starts alike); the
 * table is read once per change, whatever the paths, and the event loop's
 * wake-up fd reports each change on its own.  Runs
 * in a mount namespace of its own (and a user namespace when not root),
 * so that it sees its own mounts alone change. */
#include "check.h"
#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int own_mount_ns(void)
{
    if (geteuid() == 0)
        return unshare(CLONE_NEWNS);
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        return -1;
    char map[64];
    snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
    if (check_write_text("/proc/self/uid_map", map) < 0 || check_write_text("/proc/self/setgroups", "deny") < 0)
        return -1;
    snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
    return check_write_text("/proc/self/gid_map", map);
}

static struct mount_watch w;

static uint64_t hash_of(const char *const *paths, size_t n)
{
    uint64_t h = 0, gen = 0;
    CHECK(mount_watch_hash(&w, paths, n, &h, &gen) == 0);
    CHECK_MSG(gen == w.events, "the hash reflects the latest change seen");
    return h;
}

/* The event loop's wake-up fd reports a change too, apart from fd. */
static bool woken(void)
{
    struct pollfd p = { .fd = w.wake_fd, .events = POLLPRI };
    return poll(&p, 1, 0) > 0 && (p.revents & POLLPRI);
}

int main(void)
{
    if (own_mount_ns() < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        printf("# skip: no mount namespace of our own (%s)\n", strerror(errno));
        return 77;
    }
    char base[] = "/tmp/mini-mounts.XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    /* Our own tmpfs holds the test's directories, so that nothing of the
     * host's /tmp is touched. */
    CHECK(mount("tmpfs", base, "tmpfs", 0, "size=1m") == 0);
    char bound[256], sibling[256], inner[256], spaced[256];
    snprintf(bound, sizeof bound, "%s/bound", base);
    snprintf(sibling, sizeof sibling, "%s/bound-not", base);
    snprintf(inner, sizeof inner, "%s/bound/inner", base);
    snprintf(spaced, sizeof spaced, "%s/bound/with space", base);
    CHECK(mkdir(bound, 0755) == 0 && mkdir(sibling, 0755) == 0 && mkdir(inner, 0755) == 0 && mkdir(spaced, 0755) == 0);

    mount_watch_init(&w);
    CHECK(w.fd >= 0 && w.wake_fd >= 0);
    const char *paths[] = { NULL, bound }; /* a NULL entry is skipped */
    uint64_t ev0 = mount_watch_events(&w);
    uint64_t h0 = hash_of(paths, 2);
    CHECK_MSG(mount_watch_events(&w) == ev0, "no change, no event");
    CHECK_MSG(!woken(), "no change, no wake-up");

    /* One read of the table serves every set of paths until it changes. */
    uint64_t reads = w.reads;
    const char *others[] = { sibling };
    hash_of(others, 1);
    hash_of(paths, 2);
    CHECK_MSG(w.reads == reads, "no change, no second read (%llu -> %llu)", (unsigned long long)reads,
              (unsigned long long)w.reads);

    /* A sibling whose name starts like the path: an event, the same hash. */
    CHECK(mount("tmpfs", sibling, "tmpfs", 0, "size=1m") == 0);
    uint64_t ev1 = mount_watch_events(&w);
    CHECK_MSG(ev1 == ev0 + 1, "a mount is one event (%llu -> %llu)", (unsigned long long)ev0, (unsigned long long)ev1);
    CHECK_MSG(mount_watch_events(&w) == ev1, "an event is counted once");
    CHECK_MSG(woken() && !woken(), "the wake-up fd reports it, once");
    CHECK_MSG(hash_of(paths, 2) == h0, "a mount beside the path does not count");
    CHECK_MSG(w.reads == reads + 1, "a change, one more read (%llu -> %llu)", (unsigned long long)reads,
              (unsigned long long)w.reads);

    /* Under the path: the hash moves; remounted read-only: again; gone:
     * back to what it was. */
    CHECK(mount("tmpfs", inner, "tmpfs", 0, "size=1m") == 0);
    uint64_t h1 = hash_of(paths, 2);
    CHECK_MSG(h1 != h0, "a mount under the path counts");
    CHECK(mount(NULL, inner, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) == 0);
    uint64_t h2 = hash_of(paths, 2);
    CHECK_MSG(h2 != h1, "a remount under the path counts");
    CHECK(umount(inner) == 0);
    CHECK_MSG(hash_of(paths, 2) == h0, "unmounted: as before");
    CHECK_MSG(mount_watch_events(&w) > ev1, "the changes were seen");

    /* A mount point with a space (escaped in mountinfo as \040). */
    const char *only_spaced[] = { spaced };
    uint64_t s0 = hash_of(only_spaced, 1);
    CHECK(mount("tmpfs", spaced, "tmpfs", 0, "size=1m") == 0);
    CHECK_MSG(hash_of(only_spaced, 1) != s0, "an escaped mount point is matched");
    CHECK(umount(spaced) == 0);

    /* The path itself, and "/": everything. */
    const char *itself[] = { bound };
    uint64_t t0 = hash_of(itself, 1);
    CHECK(mount("tmpfs", bound, "tmpfs", 0, "size=1m") == 0);
    CHECK_MSG(hash_of(itself, 1) != t0, "a mount on the path itself counts");
    const char *root[] = { "/" };
    uint64_t r0 = hash_of(root, 1);
    CHECK(umount(bound) == 0);
    CHECK_MSG(hash_of(root, 1) != r0, "under / every mount counts");

    mount_watch_fini(&w);
    CHECK(w.fd == -1 && w.wake_fd == -1 && w.entries == NULL);
    umount2(sibling, MNT_DETACH);
    umount2(base, MNT_DETACH);
    rmdir(base);
    return check_summary();
}
