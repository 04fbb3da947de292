/* What the daemon keeps on the host outside its sandboxes, and the sweep
 * of what dead daemons left: the state directory (its root mount point and
 * the sessions' writable overlays), and the Landlock path's TMPDIRs under
 * /tmp.  Each daemon marks its own with owner locks
 * (<state>/sessions-<pid>.lock, a lock on its TMPDIR parent), so that a
 * live daemon's are never taken for a dead one's. */
#ifndef MINI_SANDBOXD_STATEDIR_H
#define MINI_SANDBOXD_STATEDIR_H

#include <stdbool.h>
#include <sys/types.h>
#include "mini/err.h"

struct statedir {
    const char *dir;    /* the state directory (--state-dir) */
    char *root_dir;     /* <dir>/root: the sandboxes' root mount point */
    bool sweep_pending; /* statedir_sweep has not run yet */
    int sessions_lock;  /* owner lock <dir>/sessions-<pid>.lock, or -1 */
    char *tmp_parent;   /* /tmp/mini-sandboxd.XXXXXX: the Landlock path's TMPDIRs, or NULL */
    int tmp_lock;       /* owner lock on tmp_parent, or -1 */
};

/* <dir>/root made; the sweep pending. */
int statedir_init(struct statedir *sd, const char *dir, struct mini_err *e);
/* Reclaim what daemons that are gone left: their session overlays in the
 * state directory and their Landlock-path TMPDIRs.  A live daemon's, known
 * by its owner lock, are never touched.  Once, while sweep_pending: at
 * start before listening; in a private daemon after the requests its
 * client queued before it started (hello and open, whose first sandbox is
 * then already being prepared); and in any case before this daemon's first
 * overlay, whose name (its own pid) the sweep would take for a dead
 * daemon's (statedir_overlay). */
void statedir_sweep(struct statedir *sd);
/* The state directory and its root mount point, made again (0700, the
 * daemon's) when someone removed them under the running daemon; else an
 * error that names the state directory. */
int statedir_ensure(struct statedir *sd, struct mini_err *e);
/* The directories of session sid's writable overlay:
 * <dir>/sessions/<daemon pid>-<sid>/{upper,work}, owned by uid:gid (root
 * daemon).  *path is set as soon as the directory is named (the caller
 * removes it), also on failure. */
int statedir_overlay(struct statedir *sd, const char *sid, uid_t uid, gid_t gid, char **path, struct mini_err *e);
/* A private TMPDIR for one sandbox of the Landlock path, owned by
 * uid:gid (root daemon); NULL with e filled. */
char *statedir_tmpdir(struct statedir *sd, uid_t uid, gid_t gid, struct mini_err *e);
/* Release this daemon's owner locks and its TMPDIR parent (at stop). */
void statedir_fini(struct statedir *sd);

#endif
