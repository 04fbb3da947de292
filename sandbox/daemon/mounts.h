/* The daemon's mount table, as a session's prepared sandboxes and its
 * template of the root see it (roott.c, roott_sig): both copy the
 * mounts at and under the profile's binds and the workspace when they are
 * made, so a mount made, removed or changed there on the host since makes
 * them stale.
 *
 * mount_watch_events counts the changes of the daemon's mount namespace
 * (poll on /proc/self/mountinfo: one system call, no read).  The table is
 * read again only after a change, once for every session
 * (mount_watch_hash), and each session hashes its own paths from that
 * copy.  wake_fd, a second open of the file, is for the event loop: it
 * reports a change as EPOLLPRI, so that the sessions can hash the new
 * table before their next command needs it (roott.c, roott_changed). */
#ifndef MINI_SANDBOXD_MOUNTS_H
#define MINI_SANDBOXD_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest table kept (bytes of mountinfo): a larger one cannot be
 * read, and then no pooled sandbox or template is trusted (each command
 * gets a sandbox made for it). */
#define MOUNT_TABLE_MAX (64u << 20)

struct mount_entry {
    const char *point; /* unescaped, into mount_watch.text */
    uint64_t line;     /* FNV-1a of the whole mountinfo line */
};

struct mount_watch {
    int fd;      /* /proc/self/mountinfo, or -1: every call then counts as a change */
    int wake_fd; /* the same file, for the event loop's EPOLLPRI; -1 when not open */
    uint64_t events;
    uint64_t reads; /* of the whole table, for the tests and the debug log */
    /* The table as read when `events` was table_gen. */
    bool table_ok;
    uint64_t table_gen;
    struct mount_entry *entries;
    size_t n_entries;
    char *text; /* the table as read, each entry's point ended in place */
};

void mount_watch_init(struct mount_watch *w);
void mount_watch_fini(struct mount_watch *w);

/* How many changes of the mount namespace have been seen so far. */
uint64_t mount_watch_events(struct mount_watch *w);

/* A hash of the mountinfo lines of every mount at or under one of the n
 * paths (normalised absolute paths, as a profile's are; NULL entries
 * skipped), from the table as it is now (read again if it changed since
 * the last read); *gen is the change count it reflects.  0, or -1 when
 * the table cannot be read. */
int mount_watch_hash(struct mount_watch *w, const char *const *paths, size_t n, uint64_t *out, uint64_t *gen);

#endif
