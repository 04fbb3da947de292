/* Which directory may be a workspace: the rules of docs/isolation.md
 * ("Workspaces"), shared by the sandbox daemon (sandbox/isolation/
 * workspace.h: a session's workspace) and `mini batch` (agent/batch/
 * worker.c: the directory a task's workspace is copied from).  Plain
 * file-system calls only, so that mini links it without the sandbox's
 * libraries. */
#ifndef MINI_WS_H
#define MINI_WS_H

#include <stdbool.h>
#include <stddef.h>
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

/* Fill g for this daemon: socket_dir may be NULL (a private daemon);
 * both NULL for a program that is not the daemon (`mini batch`), which
 * gets the homes and mini's configuration directories only. */
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
 * paths it must not contain; p may be NULL).  MINI_E_WORKSPACE_INVALID
 * with the reason. */
int mini_ws_check(const struct mini_ws_guard *g, const struct mini_profile *p, const char *canon, int fd,
                  struct mini_err *e);

#endif
