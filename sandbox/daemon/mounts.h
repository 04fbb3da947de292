/* The daemon's mount table, as a session's prepared sandboxes and its
 * template of the root see it (session.c, hidden_sig): both copy the
 * mounts at and under the profile's binds when they are made, so a mount
 * made, removed or changed there on the host since makes them stale.
 *
 * mount_watch_events counts the changes of the daemon's mount namespace
 * (poll on /proc/self/mountinfo: one system call, no read); only when it
 * moves does a session read the table again (mounts_under_hash). */
#ifndef MINI_SANDBOXD_MOUNTS_H
#define MINI_SANDBOXD_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mount_watch {
    int fd; /* /proc/self/mountinfo, or -1: every call then counts as a change */
    uint64_t events;
};

void mount_watch_init(struct mount_watch *w);
void mount_watch_fini(struct mount_watch *w);

/* How many changes of the mount namespace have been seen so far. */
uint64_t mount_watch_events(struct mount_watch *w);

/* A hash of the mountinfo lines of every mount at or under one of the n
 * paths (normalised absolute paths, as a profile's are; NULL entries
 * skipped).  0, or -1 when the table cannot be read. */
int mounts_under_hash(const char *const *paths, size_t n, uint64_t *out);

#endif
