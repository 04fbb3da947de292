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
#include "mini/profile.h"

/* Directories a workspace must not contain: the daemon's socket directory
 * and state directory, opened once at start (O_PATH).  And what the daemon
 * knows of mini's secrets: its own and its users' home directories, and
 * mini's global configuration directories (its .env holds API keys). */
struct mini_ws_guard {
    int fds[4];
    const char *what[4];
    size_t n_fds;
    char **homes;
    size_t n_homes;
    char **secrets;
    size_t n_secrets;
};

/* Fill g for this daemon: socket_dir may be NULL (a private daemon). */
int mini_ws_guard_init(struct mini_ws_guard *g, const char *socket_dir, const char *state_dir, struct mini_err *e);
void mini_ws_guard_free(struct mini_ws_guard *g);

/* Add a home directory and the mini configuration directory beneath it
 * (a workspace owner's, for a root daemon).  Duplicates are skipped. */
int mini_ws_guard_add_home(struct mini_ws_guard *g, const char *home);

/* Resolve a requested workspace: absolute, without ".." and without any
 * symlink on the way.  On success *canon is the normalised path (malloc)
 * and *fd an O_PATH directory fd of it. */
int mini_ws_open(const char *req, char **canon, int *fd, struct mini_err *e);

/* Whether the opened workspace may be used with this profile (whose hidden
 * paths it must not contain).  MINI_E_WORKSPACE_INVALID with the reason. */
int mini_ws_check(const struct mini_ws_guard *g, const struct mini_profile *p, const char *canon, int fd,
                  struct mini_err *e);

/* Whether dir (an fd) is at or above the directory `inner` (an fd):
 * walks up from inner through "..", comparing device and inode. */
bool mini_dir_contains(int dir, int inner);

/* The on-disk group a root daemon's sandbox creates files with in a
 * workspace owned by uid: that user's primary group when it is an
 * ordinary one ("users", 100, or 1000 and above), else nogroup (65534):
 * never root's, never a system group, never the directory's own. */
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
