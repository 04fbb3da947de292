/* The daemon's mount table, as the pool and the template see it (see
 * mounts.h). */
#include "mounts.h"
#include "mini/cleanup.h"
#include "mini/buf.h"
#include "mini/err.h"
#include "mini/hash.h"
#include "mini/io.h"
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
    *w = (struct mount_watch){ .fd = open(MOUNTINFO, O_RDONLY | O_CLOEXEC),
                               .wake_fd = open(MOUNTINFO, O_RDONLY | O_CLOEXEC) };
}

static void table_drop(struct mount_watch *w)
{
    free(w->entries);
    free(w->text);
    w->entries = NULL;
    w->text = NULL;
    w->n_entries = 0;
    w->table_ok = false;
}

void mount_watch_fini(struct mount_watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->wake_fd >= 0)
        close(w->wake_fd);
    w->fd = w->wake_fd = -1;
    table_drop(w);
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

/* Read the table into w: each line's mount point (the fifth field,
 * unescaped and ended in place in the text read) and its hash. */
static int table_read(struct mount_watch *w)
{
    table_drop(w);
    _cleanup_(mini_buf_freep) struct mini_buf b = MINI_BUF_INIT;
    struct mini_err ignored;
    if (mini_read_file(MOUNTINFO, &b, MOUNT_TABLE_MAX, &ignored) < 0)
        return -1;
    size_t len;
    if (!(w->text = mini_buf_steal(&b, &len)))
        return -1;
    w->reads++;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += w->text[i] == '\n';
    if (!(w->entries = calloc(lines ? lines : 1, sizeof *w->entries))) {
        table_drop(w);
        return -1;
    }
    for (char *line = w->text, *end; (end = strchr(line, '\n')); line = end + 1) {
        *end = '\0'; /* the kernel ends every line; a last one cut short is not a mount */
        uint64_t hash = mini_fnv1a(MINI_FNV1A_INIT, line, (size_t)(end - line));
        /* ID PARENT MAJ:MIN ROOT POINT ... */
        char *f = line;
        for (int i = 0; i < 4 && f; i++) {
            f = strchr(f, ' ');
            if (f)
                f++;
        }
        if (!f)
            continue;
        f[strcspn(f, " ")] = '\0';
        mini_mountinfo_unescape(f);
        w->entries[w->n_entries++] = (struct mount_entry){ .point = f, .line = hash };
    }
    w->table_ok = true;
    return 0;
}

int mount_watch_hash(struct mount_watch *w, const char *const *paths, size_t n, uint64_t *out, uint64_t *gen)
{
    /* The count before the read: a change during it is seen next time. */
    uint64_t now = mount_watch_events(w);
    if (!w->table_ok || w->table_gen != now) {
        if (table_read(w) < 0)
            return -1;
        w->table_gen = now;
    }
    uint64_t h = MINI_FNV1A_INIT;
    for (size_t k = 0; k < w->n_entries; k++)
        for (size_t i = 0; i < n; i++)
            if (paths[i] && mini_path_within(w->entries[k].point, paths[i])) {
                /* The whole line: a mount made, removed, or remounted
                 * with other options changes it. */
                h = mini_fnv1a(h, &w->entries[k].line, sizeof w->entries[k].line);
                break;
            }
    *out = h;
    *gen = now;
    return 0;
}
