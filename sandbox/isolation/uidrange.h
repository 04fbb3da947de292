/* The host uids and gids a root daemon gives its sessions (docs/isolation.md,
 * "Whose ids a sandbox runs as"): the line "mini-sandboxd:BASE:COUNT" of
 * /etc/subuid and /etc/subgid when present, else MINI_UID_RANGE_BASE and
 * _COUNT.  Every root daemon on the machine takes its ids from that range,
 * a private one (mini-sandbox run, mini) as much as the shared one, so a
 * daemon uses only blocks of it that it has claimed: a block is
 * MINI_UID_BLOCK uids on a grid of absolute uids, claimed by a lock file
 * named after its first uid in MINI_UID_LOCK_DIR, flock'ed for the daemon's
 * life.  The kernel lets go of the lock when the daemon dies however it
 * dies; a block whose file says it was not given back cleanly (a daemon
 * killed) is claimed again only once no process runs as one of its ids.
 * A daemon that can claim no block gives a session no uid (busy), never
 * one another daemon may use. */
#ifndef MINI_SANDBOX_UIDRANGE_H
#define MINI_SANDBOX_UIDRANGE_H

#include <sys/types.h>
#include "mini/err.h"

#define MINI_UID_RANGE_BASE 2146435072u /* 0x7ff00000 */
#define MINI_UID_RANGE_COUNT 65536u
#define MINI_UID_BLOCK 64u
/* Root's and root's alone (0700, no symlink on the way from /run). */
#define MINI_UID_LOCK_PARENT "/run/mini-sandboxd"
#define MINI_UID_LOCK_DIR MINI_UID_LOCK_PARENT "/uids"

struct mini_uid_range {
    uid_t uid_base;
    gid_t gid_base;
    unsigned count;
    unsigned next;       /* where the round robin goes on */
    unsigned char *used; /* one bit per slot */
    int dir;             /* MINI_UID_LOCK_DIR, -1: none yet */
    unsigned first_grid; /* the grid block of uid_base */
    unsigned n_blocks;
    int *lock; /* per block: its lock file, flock'ed; -1: not ours */
};

/* The range, and its lock directory made or checked (a directory owned
 * by root, writable by root alone, reached without a symlink): an error
 * when it is anything else.  No block is claimed yet. */
int mini_uid_range_init(struct mini_uid_range *r, struct mini_err *e);
/* Gives the blocks back: marked clean when none of their slots is taken
 * (the daemon has reaped its sandboxes), so that the next claimer need
 * not look for processes. */
void mini_uid_range_free(struct mini_uid_range *r);
/* A free slot (uid uid_base + slot, gid gid_base + slot), claiming a block
 * when the daemon's are full; -1 with e (busy) when none can be had. */
int mini_uid_range_take(struct mini_uid_range *r, struct mini_err *e);
/* The slot mini_uid_range_take would give now from the blocks already
 * claimed, without taking it; -1: none. */
int mini_uid_range_peek(const struct mini_uid_range *r);
void mini_uid_range_put(struct mini_uid_range *r, int slot);

#endif
