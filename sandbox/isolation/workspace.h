/* Which directory a session may use as its workspace, and as which host
 * ids a sandbox writes there.  The rules are in docs/isolation.md
 * ("Workspaces" and "Whose ids a sandbox runs as"); in short:
 *
 *   - A workspace path is resolved without following any symlink
 *     (openat2 RESOLVE_NO_SYMLINKS): a link that an earlier command planted
 *     in a workspace can never redirect a later session.  The directory is
 *     then held by an fd for the session's life.
 *   - It may not be a system directory, nor contain (compared by device and
 *     inode, so no alias or relative spelling gets past) the daemon's
 *     socket directory, its state directory, a path the profile hides, or
 *     mini's own configuration directory; nor be a home directory.
 *   - A root daemon never lets a sandbox create files owned by root or by
 *     a group it did not choose: root-owned workspaces are refused, and the
 *     sandbox runs as a host uid of its own (see uidrange.h). */
#ifndef MINI_SANDBOX_WORKSPACE_H
#define MINI_SANDBOX_WORKSPACE_H

#include <stdbool.h>
#include <sys/types.h>
#include "mini/err.h"
#include "mini/ws.h" /* which directory may be a workspace */

/* The on-disk group a root daemon's sandbox creates files with in a
 * workspace owned by uid: root's (0) in root's workspace, as root itself
 * would create them there; for any other owner that user's primary group
 * when it is an ordinary one ("users", 100, or 1000 and above), else
 * nogroup (65534): never root's, never a system group, never the
 * directory's own. */
gid_t mini_ws_owner_group(uid_t uid);

/* Whether the filesystem holding the directory `dir` has project quotas
 * on (quotactl_fd, Q_GETINFO, PRJQUOTA).  mini does not use them: a
 * profile's disk_mb is enforced by the daemon's watch (sandbox/daemon/
 * disk.c, docs/isolation.md "Workspace disk use"); this is reported by
 * `check` beside it.  `why` gets a short description either way. */
bool mini_ws_quota_probe(int dir, char *why, size_t size);

/* The process that held an id-mapping namespace while its maps were
 * written, possibly still exiting: once its pidfd is readable (or at any
 * time, waiting for it), mini_idmap_holder_reap reaps it and frees its
 * stack.  pidfd -1: none. */
struct mini_idmap_holder {
    pid_t pid;
    int pidfd;
    void *stack;
};
void mini_idmap_holder_reap(struct mini_idmap_holder *h);

/* A user namespace mapping uid `from` to `to` and gid `gfrom` to `gto`
 * (every other id to itself, `to` and `gto` unmapped), for an idmapped
 * mount (root only).  An fd, or -1 with e.  later NULL: the holder is
 * reaped before the call returns; else, when an fd is returned, *later
 * is the holder, for the caller to reap. */
int mini_idmap_userns(uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_idmap_holder *later,
                      struct mini_err *e);
/* The same with up to MINI_IDMAP_MAX_PAIRS {from, to} pairs each (an
 * image's user and its root): every other id is itself, except the
 * targets, which are left unmapped. */
#define MINI_IDMAP_MAX_PAIRS 2
int mini_idmap_userns_pairs(const unsigned long (*uids)[2], size_t n_uids, const unsigned long (*gids)[2],
                            size_t n_gids, struct mini_idmap_holder *later, struct mini_err *e);

#endif
