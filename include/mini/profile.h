/* Sandbox profiles: what a command may see and do.  The JSON schema is
 * documented in docs/profiles.md; profiles/ holds the built-in ones. */
#ifndef MINI_PROFILE_H
#define MINI_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "mini/err.h"
#include "mini/proto.h" /* struct mini_env */

/* Isolation features a profile may `require` and the daemon may offer. */
enum mini_feature {
    MINI_FEAT_USER_NS = 1u << 0,
    MINI_FEAT_PID_NS = 1u << 1,
    MINI_FEAT_NET_NS = 1u << 2,
    MINI_FEAT_MOUNT_NS = 1u << 3,
    MINI_FEAT_IPC_NS = 1u << 4,
    MINI_FEAT_UTS_NS = 1u << 5,
    MINI_FEAT_CGROUP_NS = 1u << 6,
    MINI_FEAT_SECCOMP = 1u << 7,
    MINI_FEAT_LANDLOCK = 1u << 8,
    MINI_FEAT_CGROUPS = 1u << 9,  /* per-command cgroup limits (v1 or v2) */
    MINI_FEAT_OVERLAY = 1u << 10, /* overlayfs inside the sandbox */
};
#define MINI_FEAT_COUNT 11
/* "user_ns", "pid_ns", "net_ns", "mount_ns", "ipc_ns", "uts_ns", "cgroup_ns",
 * "seccomp", "landlock", "cgroups", "overlay" */
const char *mini_feature_name(unsigned bit_index);
/* The bit for a name; 0 if unknown. */
unsigned mini_feature_from_name(const char *name);

/* none: a network namespace with only loopback; host: the host's;
 * allow: loopback only too, plus the daemon's HTTP proxy on
 * 127.0.0.1:MINI_NET_PROXY_PORT, which lets through what `net_allow`
 * names and `net_deny` does not (docs/profiles.md, "network"). */
enum mini_network { MINI_NET_NONE = 0, MINI_NET_HOST, MINI_NET_ALLOW };
#define MINI_NET_PROXY_PORT 3128
#define MINI_NET_ENTRIES_MAX 256 /* allow and deny entries of a profile together (and its pins) */

/* A host path bound into the sandbox at the same path. */
struct mini_bind {
    char *path;    /* absolute, normalised (no "..", no "//", no trailing "/") */
    bool writable; /* false: read-only */
    bool optional; /* skip silently when missing on the host */
};

struct mini_tmpfs {
    char *path;
    uint64_t size_bytes; /* 0: kernel default (half of RAM) is never used; loader requires > 0 */
    unsigned mode;       /* e.g. 01777 */
};

struct mini_limits {
    double timeout_s;         /* wall clock per command */
    uint64_t memory_bytes;    /* address space / cgroup memory; 0: unlimited */
    uint64_t pids;            /* processes (RLIMIT_NPROC / pids cgroup); 0: unlimited */
    uint64_t cpu_s;           /* RLIMIT_CPU; 0: unlimited */
    uint64_t file_size_bytes; /* RLIMIT_FSIZE; 0: unlimited */
    uint64_t open_files;      /* RLIMIT_NOFILE; must be > 0 */
    uint64_t output_bytes;    /* output kept (head + tail); must be > 0 */
    uint64_t disk_bytes;      /* what a session may add to its workspace and overlay; 0: unlimited */
    /* network allow: per session, through the proxy; 0: unlimited */
    uint64_t net_connections; /* proxied connections open at once */
    uint64_t net_in_bytes;    /* bytes received from the network */
    uint64_t net_out_bytes;   /* bytes sent to the network */
};

enum mini_seccomp_default { MINI_SECCOMP_ALLOW = 0, MINI_SECCOMP_ERRNO, MINI_SECCOMP_KILL };

struct mini_seccomp_policy {
    enum mini_seccomp_default default_action;
    char **allow; /* default_action errno/kill only: the syscalls allowed
                              * (the argument rules below and `deny` still apply) */
    size_t n_allow;
    char **deny; /* syscall names; denied with `errno_value` */
    size_t n_deny;
    int errno_value;           /* e.g. EPERM */
    bool deny_tty_injection;   /* TIOCSTI and TIOCLINUX via ioctl, 32-bit masked compare */
    bool deny_namespace_clone; /* clone() with CLONE_NEW* flags; clone3 -> ENOSYS */
    int *socket_families;      /* allowed AF_* values; others get EAFNOSUPPORT */
    size_t n_socket_families;
};

struct mini_profile {
    char *name;
    char *description;
    unsigned namespaces; /* MINI_FEAT_*_NS bits to create */
    enum mini_network network;
    char **net_allow; /* network allow: the entries (netpolicy.h syntax), never empty */
    size_t n_net_allow;
    char **net_deny;
    size_t n_net_deny;
    char **net_resolve; /* network allow: "NAME:ADDR" pins for the proxy */
    size_t n_net_resolve;
    char *hostname; /* NULL exactly when namespaces lacks MINI_FEAT_UTS_NS */
    char *image;    /* an imported image as the root (docs/images.md), or NULL: the host's binds */

    /* filesystem */
    struct mini_bind *binds; /* host paths visible in the sandbox */
    size_t n_binds;
    char **hide; /* covered: a directory by an empty read-only tmpfs,
                                  * a file by /dev/null; missing paths are skipped */
    size_t n_hide;
    struct mini_tmpfs *tmpfs; /* fresh writable tmpfs mounts (e.g. /tmp) */
    size_t n_tmpfs;
    bool workspace_writable;
    bool overlay_root; /* binds get a per-session writable overlay */

    struct mini_limits limits;
    struct mini_seccomp_policy seccomp;

    /* environment: cleared, then `env_set`, then the variables named in
     * `env_pass` copied from the daemon's own environment, then the
     * request's (open.env, exec.env); nothing else */
    struct mini_env env_set;
    char **env_pass;
    size_t n_env_pass;

    unsigned require; /* MINI_FEAT_* bits */
};

/* Parse and validate a profile object.  Unknown keys and bad values fail
 * with MINI_E_PROFILE_INVALID and the key's path ("strict.json:
 * limits.memory_mb: must be a non-negative integer").  `origin` (may be
 * NULL) prefixes messages, and its base name without ".json" is the
 * default `name`.  Omitted keys take profiles/strict.json's values. */
struct mini_profile *mini_profile_from_json(const cJSON *obj, const char *origin, struct mini_err *e);
struct mini_profile *mini_profile_load_file(const char *path, struct mini_err *e);
/* A built-in profile by name from `dir`: dir/NAME.json, NAME matching
 * [a-z0-9_-]{1,64}.  A missing file is MINI_E_PROFILE_INVALID. */
struct mini_profile *mini_profile_load_builtin(const char *dir, const char *name, struct mini_err *e);
/* Apply request overrides, which may only tighten: lower limits, network
 * host -> none, more hidden paths, more denied syscalls, read-only
 * workspace.  Anything that would loosen fails with MINI_E_LIMIT naming the
 * key and both values; unknown keys, keys that cannot be overridden and bad
 * values fail with MINI_E_BAD_REQUEST.  On failure p is unchanged.
 * overrides may be NULL (nothing to do). */
int mini_profile_apply_overrides(struct mini_profile *p, const cJSON *overrides, struct mini_err *e);
/* open.allow_hosts (mini-sandbox run --allow-host): entries added to the
 * allowlist; a profile whose network is "none" gets an allowlist of just
 * these.  "host" fails (MINI_E_BAD_REQUEST): it has no allowlist to add
 * to.  A bad entry fails naming it.  On failure p is unchanged. */
int mini_profile_allow_hosts(struct mini_profile *p, char *const *hosts, size_t n, struct mini_err *e);
/* The profile as JSON in the same schema (round-trips through from_json). */
cJSON *mini_profile_to_json(const struct mini_profile *p);
struct mini_profile *mini_profile_dup(const struct mini_profile *p);
void mini_profile_free(struct mini_profile *p);
/* Hide one more absolute path (skipped when already hidden).  -1: no memory. */
int mini_profile_add_hide(struct mini_profile *p, const char *path);

/* The names of the profiles in dir (its *.json files, no hidden ones),
 * sorted, at most `max`.  Fills names (each malloc'd) and *n; 0, or -1
 * with errno set when dir cannot be read. */
int mini_profile_list(const char *dir, char **names, size_t max, size_t *n);

/* Directory of built-in profiles: $MINI_PROFILE_DIR if set (and not
 * empty); else share/mini/profiles found relative to the running program
 * (mini_exe_relative: <bin>/../share/mini/profiles installed and in the
 * build tree alike). */
const char *mini_profile_default_dir(void);

#endif
