/* The parked session (docs/sandbox-lifecycle.md, "The parked session"): a
 * one-shot client (mini-sandbox run: one command, with exec.last, then
 * gone) pays for its sandbox's preparation on its path, since nothing was
 * prepared before its open.  Its session is therefore kept when it closes,
 * with one sandbox prepared after the command (never one that ran
 * anything), for PARK_MS: an open of the same workspace and profile then
 * takes the session's ids and that sandbox.  One at most; a newer one
 * replaces it.
 *
 * The park holds the session (the client's reference becomes the park's)
 * and what an open must match to take it; the session decides which
 * sessions park and hands their ids and pool over.  Off (--caches=off):
 * nothing parks. */
#ifndef MINI_SANDBOXD_PARK_H
#define MINI_SANDBOXD_PARK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "mini/profile.h"

#define PARK_MS 10000

struct session;

struct park {
    bool enabled;
    struct session *ss; /* NULL: none */
    char *key;          /* its profile as canonical JSON */
    char *workspace;    /* its workspace's path */
    int ws_fd;          /* and directory (the session's, borrowed) */
    uid_t owner_uid;    /* the ids its files get (root daemon) */
    gid_t owner_gid;
    int64_t until; /* mono ns */
};

/* What an open's profile is compared by (canonical JSON); NULL: out of
 * memory. */
char *park_key(const struct mini_profile *p);
/* Park ss (which must not be parked already; a session parked before must
 * have been taken): the park takes key. */
void park_put(struct park *pk, struct session *ss, char *key, const char *workspace, int ws_fd, uid_t owner_uid,
              gid_t owner_gid);
/* The parked session, or NULL. */
static inline struct session *park_session(const struct park *pk) { return pk->ss; }
/* Whether an open of workspace (its path and directory ws_fd) with a
 * profile p matches the parked session: the same path, the same
 * directory (device, inode and mount), the same owner and group on a root
 * daemon (a directory that changed hands does not), the same profile. */
bool park_matches(const struct park *pk, const char *workspace, int ws_fd, const struct mini_profile *p);
/* The parked session, no longer parked (its reference now the caller's). */
struct session *park_take(struct park *pk);
/* The epoll timeout until the parked session expires, 0 when it has, -1
 * when there is none. */
int park_timeout(const struct park *pk);

#endif
