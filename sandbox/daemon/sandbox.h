/* Preparing one sandbox for a session, and releasing it: the clone on the
 * namespace path (or the degraded path with its Landlock plan and
 * TMPDIR), the command's cgroup, GO.  What runs in the sandbox is
 * sandbox/child/; the pool (pool.h) and the session's sandbox_acquire
 * (session.h) are who call this. */
#ifndef MINI_SANDBOXD_SANDBOX_H
#define MINI_SANDBOXD_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include "cgroup.h"
#include "spawn.h"
#include "mini/err.h"

/* One sandbox and what the daemon made for it, released together
 * (slot_release): its process and channels, the command's cgroup, and on
 * the degraded path the command's private TMPDIR.  A prepared sandbox in
 * the pool holds one; a command takes it over. */
struct sandbox_slot {
    struct mini_sandbox sb;
    struct mini_cgroup cg; /* the command's cgroup, when cgroups are used */
    char *tmpdir;          /* degraded path: the command's private TMPDIR */
    uint64_t hidden;       /* the session's signature (roott.h) before it was prepared */
    uint64_t mount_gen;    /* the mount watch's change count then (mounts.h) */
    bool mounts_moved;     /* the mount table changed while it copied it: discard it unused */
    bool seccomp_pending;  /* GO went without the seccomp program (open_finish sends it) */
};
#define SANDBOX_SLOT_INIT                                                            \
    {                                                                                \
        .sb = MINI_SANDBOX_INIT, .cg = MINI_CGROUP_INIT, .tmpdir = NULL, .hidden = 0 \
    }

struct server;
struct session;

/* Prepare one sandbox for the session into slot (SANDBOX_SLOT_INIT on
 * failure, e naming the step that failed). */
int slot_prepare(struct server *s, struct session *ss, struct sandbox_slot *slot, struct mini_err *e);
/* Kill, reap and remove everything of the slot; leaves it SANDBOX_SLOT_INIT. */
void slot_release(struct sandbox_slot *slot);
/* The session's signature now (roott_sig), or the one taken a moment ago
 * in the same exec (session.memo): a sandbox prepared under an older one is
 * only discarded sooner, never kept longer. */
uint64_t slot_sig(struct server *s, struct session *ss);

#endif
