/* The template of the root and the mount watch that keeps it (and every
 * prepared sandbox) honest (docs/sandbox-lifecycle.md, "The template of
 * the root").
 *
 * A session's template is a detached mount tree of the shared part of its
 * sandboxes' root, built by a helper of its own from the session's
 * TEMPLATE_AFTER-th prepared sandbox on; each later sandbox clones it
 * instead of building its whole root.  What a template or a prepared
 * sandbox copied may go stale: a hidden path or a bind that names another
 * file on the host since, or a mount made, removed or changed at or under
 * a bind or the workspace.  roott_sig() is that state as one number (the
 * "signature"); a template or a sandbox made under another one is not
 * used.  The mounts part is read from the mount table only after it has
 * changed (mounts.h), and hashed ahead of the next command once the table
 * has been still for a moment (roott_changed, roott_timeout).
 * Off (--caches=off): no template; every sandbox builds its whole root. */
#ifndef MINI_SANDBOXD_ROOTT_H
#define MINI_SANDBOXD_ROOTT_H

#include <stdbool.h>
#include <stdint.h>
#include "helpers.h"
#include "loop.h"
#include "mounts.h"
#include "spawn.h"
#include "mini/profile.h"

/* One session's template and the mounts it last hashed. */
struct roott_tree {
    int fd;              /* the template, -1 until made */
    uint64_t sig;        /* the signature it was made at */
    bool off;            /* not for this session (cannot be, or a build failed) */
    bool moved;          /* the mount table changed while it was built: made again */
    unsigned n_prepared; /* sandboxes prepared, counted up to TEMPLATE_AFTER */
    /* The host's mounts under its binds and workspace, as of the watch's
     * change count mounts_seen; known: read at least once. */
    uint64_t mounts_hash, mounts_seen;
    bool mounts_known;
};

struct roott {
    bool enabled;
    struct mount_watch mounts; /* the daemon's mount table */
    struct ev ev_mounts;       /* its wake_fd in the loop (EV_MOUNTS) */
    int64_t due_ns;            /* when to hash the sessions' mounts ahead (0: not due) */
    struct helpers *helpers;   /* who reaps the builders */
};

void roott_init(struct roott *rt, bool enabled, struct helpers *helpers);
/* The mount table's changes into the loop (without it, each session reads
 * a changed table when its next command comes). */
void roott_watch(struct roott *rt, int ep);
void roott_fini(struct roott *rt);

void roott_tree_init(struct roott_tree *t);
void roott_tree_free(struct roott_tree *t);
/* Hand src's template and hash to dst (a parked session's to its taker). */
void roott_tree_move(struct roott_tree *dst, struct roott_tree *src);

/* The mount watch's change count and whole-table reads (mounts.h). */
uint64_t roott_events(struct roott *rt);
uint64_t roott_reads(const struct roott *rt);

/* The signature for a session of profile p on workspace ws (image: the
 * root is an image's, whose paths are its own: the workspace's mounts
 * only). */
uint64_t roott_sig(struct roott *rt, struct roott_tree *t, const struct mini_profile *p, const char *ws, bool image);
/* Hash the session's mounts now (ahead of its next command). */
void roott_hash_mounts(struct roott *rt, struct roott_tree *t, const struct mini_profile *p, const char *ws,
                       bool image);

/* The template for the session's next sandbox (cfg: what it is prepared
 * with; sig: roott_sig() taken before), or -1: the sandbox builds all of
 * its root.  fits: the session's root can have one at all (not the
 * degraded path, an image, an overlay root, and with a mount namespace). */
int roott_get(struct roott *rt, struct roott_tree *t, uint64_t sig, bool fits, const struct mini_spawn_cfg *cfg,
              const char *sid);

/* The mount table changed (EV_MOUNTS): once it has been still for a
 * moment (roott_timeout says when: 0 now, -1 nothing due), the server has
 * the sessions with prepared sandboxes hash their mounts and calls
 * roott_settled. */
void roott_changed(struct roott *rt);
int roott_timeout(const struct roott *rt);
void roott_settled(struct roott *rt);

#endif
