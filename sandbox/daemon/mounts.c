/* The daemon's mount table, as the pool and the template see it (see
 * mounts.h). */
#include "mounts.h"
#include "mini/cleanup.h"
#include "mini/hash.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOUNTINFO "/proc/self/mountinfo"

void mount_watch_init(struct mount_watch *w)
{
    w->fd = open(MOUNTINFO, O_RDONLY | O_CLOEXEC);
    w->events = 0;
}

void mount_watch_fini(struct mount_watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

uint64_t mount_watch_events(struct mount_watch *w)
{
    /* The kernel reports a change of the namespace's mounts once per open
     * file, as POLLPRI (with POLLERR), and forgets it on that report. */
    struct pollfd p = { .fd = w->fd, .events = POLLPRI };
    if (w->fd < 0)
        return ++w->events; /* cannot tell: every call is a change */
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
        w->events++;
    return w->events;
}

int mounts_under_hash(const char *const *paths, size_t n, uint64_t *out)
{
    _cleanup_fclose_ FILE *f = fopen(MOUNTINFO, "re");
    if (!f)
        return -1;
    uint64_t h = MINI_FNV1A_INIT;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        /* ID PARENT MAJ:MIN ROOT POINT ...: the fifth field. */
        char point[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
            continue;
        mini_mountinfo_unescape(point);
        for (size_t i = 0; i < n; i++)
            if (paths[i] && mini_path_within(point, paths[i])) {
                /* The whole line: a mount made, removed, or remounted
                 * with other options changes it. */
                h = mini_fnv1a(h, line, (size_t)len);
                break;
            }
    }
    if (ferror(f))
        return -1;
    *out = h;
    return 0;
}
