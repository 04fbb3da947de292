/* Landlock confinement for the degraded path: where user namespaces are
 * unavailable, a profile that does not require them runs its commands
 * without namespaces, confined by Landlock (filesystem, TCP, scopes), a
 * seccomp supplement, no_new_privs, rlimits and a process-group kill.
 *
 * What a command may do under the plan built from a profile:
 *   read + execute  beneath the profile's binds (missing optional ones are
 *                   skipped; writable binds are read-write), /proc (read),
 *                   /dev (list) and /dev/{null,zero,full,random,urandom,tty}
 *                   (read, write, truncate, device ioctls);
 *   read + write    beneath the workspace (read-only when the profile says
 *                   so) and `tmpdir`, a fresh per-command directory the caller
 *                   creates and passes to the command as TMPDIR;
 *   nothing else:   the user's home, other users' files, the profile's
 *                   hidden paths and its tmpfs paths (the host's /tmp) are
 *                   not readable unless inside an allowed tree.
 * Landlock only allows; it cannot carve a hole in an allowed tree.  So a
 * bind that contains hidden paths (permissive's "/", standard's /etc) is
 * not granted whole: its entries are granted one by one, recursing only
 * into the directories that lead to a hidden path, which are themselves
 * not listable (a note says so).  /dev and /proc inside a bind are
 * replaced by the rules above.  Entries created later in such a directory
 * are not accessible (fail closed).
 *
 * Handled rights follow the kernel's ABI (best effort, 1..7):
 *   ABI 1 the filesystem rights, 2 + refer, 3 + truncate, 5 + ioctl_dev;
 *   ABI 4 TCP bind and connect, all denied when the profile's network is
 *         none (no rule allows any port);
 *   ABI 6 scopes: signals always (no signals to processes outside the
 *         sandbox, the daemon included); abstract Unix sockets when the
 *         network is none (a host-network profile keeps them, as it does
 *         with namespaces).
 * Landlock also forbids ptrace-style access (/proc/PID/environ, mem, fd)
 * to processes outside the domain, at every ABI.
 *
 * The seccomp supplement, stacked on the profile's own filter:
 *   setsid, setpgid -> EPERM: the command stays in the process group the
 *         caller kills (without a pid namespace, nothing else finds it);
 *   socket(AF_UNIX) -> EACCES: Landlock does not mediate connect(2) on
 *         pathname sockets, so without this the command could reach the
 *         daemon's socket, an ssh-agent or D-Bus by path (socketpair works);
 *   socket(any other family) -> EAFNOSUPPORT when the network is none
 *         (UDP, raw, netlink; TCP is also denied by Landlock at ABI >= 4);
 *   another architecture or the x32 ABI -> kill.
 *
 * Split so that the daemon prepares and the child only applies:
 *   mini_landlock_plan()     daemon: resolves paths, lists the carved
 *                            directories, allocates, collects notes;
 *   mini_landlock_enforce()  child, just before the profile's seccomp
 *                            filter and exec: opens each path O_PATH,
 *                            adds the rules, restricts itself, installs
 *                            the supplement.  Allocates nothing.
 * mini_landlock_apply() does both, for callers that do not care. */
#ifndef MINI_SANDBOX_LANDLOCK_H
#define MINI_SANDBOX_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/err.h"
#include "mini/profile.h"

/* The newest ABI this code knows; a newer kernel is used at this level. */
#define MINI_LANDLOCK_ABI_MAX 7
#define MINI_LANDLOCK_MAX_RULES 8192
#define MINI_LANDLOCK_MAX_NOTES 10

/* Landlock access rights (<linux/landlock.h>, defined here so that old
 * kernel headers still build). */
#define MINI_LL_FS_EXECUTE (1ULL << 0)
#define MINI_LL_FS_WRITE_FILE (1ULL << 1)
#define MINI_LL_FS_READ_FILE (1ULL << 2)
#define MINI_LL_FS_READ_DIR (1ULL << 3)
#define MINI_LL_FS_REMOVE_DIR (1ULL << 4)
#define MINI_LL_FS_REMOVE_FILE (1ULL << 5)
#define MINI_LL_FS_MAKE_CHAR (1ULL << 6)
#define MINI_LL_FS_MAKE_DIR (1ULL << 7)
#define MINI_LL_FS_MAKE_REG (1ULL << 8)
#define MINI_LL_FS_MAKE_SOCK (1ULL << 9)
#define MINI_LL_FS_MAKE_FIFO (1ULL << 10)
#define MINI_LL_FS_MAKE_BLOCK (1ULL << 11)
#define MINI_LL_FS_MAKE_SYM (1ULL << 12)
#define MINI_LL_FS_REFER (1ULL << 13)     /* ABI 2 */
#define MINI_LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define MINI_LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define MINI_LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define MINI_LL_NET_CONNECT_TCP (1ULL << 1)
#define MINI_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define MINI_LL_SCOPE_SIGNAL (1ULL << 1)

struct mini_landlock_rule {
    char *path;      /* absolute, symlinks resolved */
    uint64_t access; /* masked to file rights for a non-directory at enforce time */
};

struct mini_landlock_plan {
    int abi; /* the ABI used: min(kernel, MINI_LANDLOCK_ABI_MAX) */
    uint64_t handled_fs;
    uint64_t handled_net;
    uint64_t scoped;
    struct mini_landlock_rule *rules;
    size_t n_rules;
    size_t cap_rules;
    bool deny_unix_sockets; /* supplement: socket(AF_UNIX) -> EACCES (default true) */
    bool deny_inet_sockets; /* supplement: other families -> EAFNOSUPPORT (network none) */
    bool deny_setsid;       /* supplement: setsid/setpgid -> EPERM (default true) */
    size_t n_notes;
    char notes[MINI_LANDLOCK_MAX_NOTES][240]; /* for the exit event's notes */
};

/* The kernel's Landlock ABI version, 0 when unavailable (errno set). */
int mini_landlock_abi(void);

/* The namespace path with the host's network: abstract Unix sockets live
 * in the network namespace, so without a namespace of its own the command
 * could reach the host's (an X11 display, a D-Bus bus, a service's
 * control socket).  Landlock ABI 6+ scopes them: only sockets created
 * inside the sandbox can be reached.  Sets no_new_privs.  0 when applied,
 * 1 when Landlock is too old or absent (nothing applied), -1 on error. */
int mini_landlock_scope_abstract(struct mini_err *e);

/* Build the plan for profile p (see above).  workspace: the session's
 * canonical workspace; tmpdir: the command's fresh directory (may be
 * NULL).  -1 with e: isolation_unavailable without Landlock, spawn_failed
 * when a path cannot be resolved (a non-optional bind, the workspace) or
 * there would be more than MINI_LANDLOCK_MAX_RULES rules.  The caller may
 * clear deny_unix_sockets / deny_setsid before enforcing (and must then
 * say so in its notes).  Free with mini_landlock_plan_free(). */
int mini_landlock_plan(struct mini_landlock_plan *plan, const struct mini_profile *p, const char *workspace,
                       const char *tmpdir, struct mini_err *e);
/* In the process to confine (single-threaded; after rlimits, cwd and
 * dropping capabilities, before the profile's seccomp filter): set
 * no_new_privs, apply the Landlock ruleset, install the supplement.  A
 * rule whose path vanished since planning is skipped (less access).
 * Allocation-free.  -1 with e filled. */
int mini_landlock_enforce(const struct mini_landlock_plan *plan, struct mini_err *e);
void mini_landlock_plan_free(struct mini_landlock_plan *plan);
/* Allow `access` (MINI_LL_FS_*, masked to what the plan handles) beneath
 * an absolute, resolved path; merged with an existing rule for it. */
int mini_landlock_plan_add(struct mini_landlock_plan *plan, const char *path, uint64_t access, struct mini_err *e);

/* plan + enforce + free, in the calling process. */
int mini_landlock_apply(const struct mini_profile *p, const char *workspace, const char *tmpdir, struct mini_err *e);

#endif
