/* What isolation this machine offers, found by trying it (caps_probe.c),
 * and what that means for a profile (caps_assess.c).
 *
 * mini_caps_detect() really probes: it clones children into each kind of
 * namespace (as spawn.c does: inside a new user namespace) and has them use
 * it, installs a trivial seccomp filter in a forked child, asks the kernel
 * for the Landlock ABI, finds the cgroup v1 and v2 hierarchies from
 * /proc/self/mountinfo and /proc/self/cgroup and tries to create and remove
 * a test cgroup in each (cgroup.c), mounts an overlay on tmpfs inside a user
 * namespace, and looks for signs of a container.  It takes a few
 * milliseconds; the daemon runs it once at start.
 *
 * mini_caps_assess() then decides, per profile, one of:
 *   FULL      every isolation layer the profile asks for is available;
 *   DEGRADED  it runs, but some layers are replaced by weaker ones (each
 *             listed as {missing feature, replacement});
 *   REFUSED   a feature its `require` names is missing, or nothing could
 *             confine it (no user namespaces and no Landlock, no seccomp):
 *             a one-line reason and the remedy.
 * When user namespaces are unavailable, a profile that does not require
 * them runs on the Landlock path (sandbox/isolation/landlock.h): Landlock, seccomp,
 * no_new_privs, rlimits, a process-group kill.  The built-in strict profile
 * requires every namespace, so it refuses there.
 *
 * Nothing here prints; every text is a bounded, NUL-terminated buffer. */
#ifndef MINI_SANDBOX_CAPS_H
#define MINI_SANDBOX_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "mini/err.h"
#include "mini/profile.h"

#define MINI_CAPS_PATH_MAX 512
#define MINI_CAPS_TEXT_MAX 512

/* Namespaces, in the order of their MINI_FEAT_*_NS bits (index i is bit i). */
enum mini_ns_index {
    MINI_NS_USER = 0,
    MINI_NS_PID,
    MINI_NS_NET,
    MINI_NS_MOUNT,
    MINI_NS_IPC,
    MINI_NS_UTS,
    MINI_NS_CGROUP,
    MINI_NS_COUNT
};
/* "user", "pid", ... */
const char *mini_ns_name(enum mini_ns_index i);

struct mini_caps_ns {
    bool ok;       /* clone3(CLONE_NEWUSER | flag) worked and the child could use it */
    int err;       /* errno when it did not (0 if ok) */
    bool ok_alone; /* probed only when user namespaces fail and we are root:
                         the flag works without a user namespace (report only;
                         the sandbox always creates a user namespace) */
};

/* seccomp return actions (SECCOMP_GET_ACTION_AVAIL), as bits. */
enum mini_seccomp_act {
    MINI_SECACT_KILL_PROCESS = 1u << 0,
    MINI_SECACT_KILL_THREAD = 1u << 1,
    MINI_SECACT_TRAP = 1u << 2,
    MINI_SECACT_ERRNO = 1u << 3,
    MINI_SECACT_USER_NOTIF = 1u << 4,
    MINI_SECACT_TRACE = 1u << 5,
    MINI_SECACT_LOG = 1u << 6,
    MINI_SECACT_ALLOW = 1u << 7,
};
#define MINI_SECACT_COUNT 8
/* "kill_process", "kill_thread", "trap", "errno", "user_notif", "trace", "log", "allow" */
const char *mini_seccomp_act_name(unsigned bit_index);

/* cgroup controllers the sandbox uses. */
enum mini_cg_ctrl {
    MINI_CGC_MEMORY = 0,
    MINI_CGC_PIDS,
    MINI_CGC_CPU,
    MINI_CGC_CPUACCT,
    MINI_CGC_FREEZER,
    MINI_CGC_COUNT
};
const char *mini_cg_ctrl_name(enum mini_cg_ctrl c); /* "memory", "pids", "cpu", "cpuacct", "freezer" */

/* One cgroup v1 controller. */
struct mini_caps_cg1 {
    bool mounted;
    int hierarchy;                /* hierarchy id (/proc/self/cgroup); co-mounted controllers share it */
    char dir[MINI_CAPS_PATH_MAX]; /* absolute path of the daemon's own cgroup in it */
    bool writable;                /* a test child cgroup could be created and removed there */
    int err;                      /* errno of that test when not writable */
};

enum mini_cg_mode { MINI_CG_NONE = 0, MINI_CG_V1, MINI_CG_V2 };
const char *mini_cg_mode_name(enum mini_cg_mode m); /* "none", "v1", "v2" */

struct mini_caps {
    /* who and where */
    uid_t euid;
    bool root;       /* euid 0 (in the daemon's user namespace) */
    char kernel[72]; /* uname release */
    bool in_container;
    char container[32];                       /* "docker", "podman", "lxc", "kubernetes", ... or "" */
    char container_hints[MINI_CAPS_TEXT_MAX]; /* "/.dockerenv; /proc/1/cgroup mentions docker" */

    /* namespaces */
    struct mini_caps_ns ns[MINI_NS_COUNT];
    bool ns_all; /* all seven in one clone3, as spawn.c does */
    int ns_all_err;
    long max_user_namespaces;                       /* /proc/sys/user/max_user_namespaces, -1 if unreadable */
    int unprivileged_userns_clone;                  /* kernel.unprivileged_userns_clone, -1 if absent */
    int apparmor_restrict_userns;                   /* kernel.apparmor_restrict_unprivileged_userns, -1 if absent */
    int apparmor_profile_loaded;                    /* MINI_APPARMOR_PROFILE is loaded: 1, 0, -1 cannot tell */
    char apparmor_profile_file[MINI_CAPS_PATH_MAX]; /* the profile this install ships */
    char userns_why[MINI_CAPS_TEXT_MAX];            /* when user namespaces fail: why, one line */
    char userns_remedy[MINI_CAPS_TEXT_MAX];         /* and what to change */

    /* seccomp */
    bool seccomp; /* a filter could be installed (forked child) */
    int seccomp_err;
    unsigned seccomp_actions; /* MINI_SECACT_* the kernel supports */
    int seccomp_mode_self;    /* 0 none, 1 strict, 2 filter: the daemon itself is filtered */
    bool no_new_privs_self;   /* the daemon already runs with no_new_privs */

    /* Landlock */
    int landlock_abi; /* 0: unavailable */
    int landlock_err; /* ENOSYS: not built in; EOPNOTSUPP: disabled at boot */

    /* cgroups */
    struct mini_caps_cg1 v1[MINI_CGC_COUNT];
    bool v2_mounted;
    char v2_mount[MINI_CAPS_PATH_MAX];
    char v2_dir[MINI_CAPS_PATH_MAX]; /* the daemon's own v2 cgroup (absolute path) */
    unsigned v2_controllers;         /* (1u << MINI_CGC_*) listed in its cgroup.controllers
                                       * (cpu stands for cpu+cpuacct; freezer is cgroup.freeze) */
    unsigned v2_subtree;             /* ... and already in its cgroup.subtree_control */
    char v2_controllers_text[128];   /* cgroup.controllers as read, e.g. "hugetlb" */
    bool v2_writable;                /* a test child could be created and removed */
    int v2_err;
    bool v2_kill;                    /* cgroup.kill exists (Linux 5.14) */
    bool v2_freeze;                  /* the test child had cgroup.freeze */
    bool v2_delegated;               /* writable, and memory and pids are available to it */
    enum mini_cg_mode cg_mode;       /* what mini_cgroups_init() will choose */
    char cg_why[MINI_CAPS_TEXT_MAX]; /* one line: what was chosen, or why none */

    /* overlayfs */
    bool overlay_userns; /* overlay on tmpfs mounted inside a user namespace */
    int overlay_err;
    char overlay_stage[32]; /* which step failed */
};

/* The AppArmor profile that grants user namespaces to mini-sandboxd and
 * mini-sandbox (packaging/apparmor/), by name, and the line of `check` and
 * of the remedies that names it. */
#define MINI_APPARMOR_PROFILE "mini-sandboxd"

/* AppArmor's restriction on unprivileged user namespaces (Ubuntu 24.04
 * and later): fills apparmor_restrict_userns from
 * PROC/sys/kernel/apparmor_restrict_unprivileged_userns,
 * apparmor_profile_loaded from SYS/kernel/security/apparmor/profiles, and
 * apparmor_profile_file (share/mini/apparmor/ relative to the program).
 * mini_caps_detect calls it with "/proc" and "/sys"; tests with fake
 * roots. */
void mini_caps_apparmor(struct mini_caps *c, const char *proc_root, const char *sys_root);

/* The remedy for a restriction that blocks the daemon: load the profile.
 * Empty when there is nothing to do (no restriction, root, or loaded). */
void mini_caps_apparmor_remedy(const struct mini_caps *c, char *buf, size_t size);

/* Probe everything.  Fails (MINI_E_IO / MINI_E_INTERNAL) only when the
 * probing itself is impossible (no /proc, fork fails); a missing feature
 * is a result, not an error.  The caller owns c (no allocations inside). */
int mini_caps_detect(struct mini_caps *c, struct mini_err *e);

/* mini_caps_detect in two parts.  _reads: what costs reads and system
 * calls only (who, kernel, sysctls, AppArmor, the daemon's own seccomp
 * and no_new_privs, container, seccomp actions, Landlock, cgroups).
 * _children: the probes that create processes (each namespace, all seven
 * at once, a seccomp filter, an overlay in a user namespace; several
 * milliseconds), after _reads. */
int mini_caps_detect_reads(struct mini_caps *c, struct mini_err *e);
void mini_caps_detect_children(struct mini_caps *c);
/* Every probe of _children succeeded; and setting that result (what a
 * cache hit stands for). */
bool mini_caps_children_all_ok(const struct mini_caps *c);
void mini_caps_set_children_all_ok(struct mini_caps *c);

/* The probe cache (caps_cache.c; docs/sandbox-lifecycle.md): the daemon's
 * start-up skips the process-creating probes when its file in dir (the
 * per-user runtime directory; mini_caps_cache_path) says that they all succeeded on this host:
 * the same kernel and boot, the same uid and gid, the same daemon binary,
 * the same namespaces, sysctls, AppArmor label and restriction,
 * capabilities, seccomp state and no_new_privs, the same cgroup
 * directories (owner, mode, read-only mount).  It also stands in for the
 * cgroup test groups (mkdir + rmdir per hierarchy) that succeeded, whose
 * answers follow the key in the file (refused ones are tested again, at
 * the cost of a failing mkdir).  Only a full success of the process probes is
 * ever stored, so a cache can never make a profile run degraded; a
 * mechanism it wrongly claims is found missing when a sandbox is made,
 * and that command fails (the daemon fails closed).  A file that is not
 * a regular file owned by the caller, is group- or world-writable, or
 * does not hold exactly this host's key and well-formed answers for
 * exactly its cgroup directories is ignored (and replaced once the
 * probes succeed).
 *
 * mini_caps_detect, through the cache: *hit says whether it was used.
 * dir NULL: no cache (mini_caps_detect). */
int mini_caps_detect_cached(struct mini_caps *c, const char *dir, bool *hit, struct mini_err *e);
/* The key of this host for c (after mini_caps_detect_reads) and the
 * program exe (the daemon: "/proc/self/exe"), in buf: one "name value"
 * line per input.  Its length, or -1 when buf is too small. */
int mini_caps_cache_key(const struct mini_caps *c, const char *exe, char *buf, size_t size);
/* What the cache holds for c after the cgroup tests (mini_caps_detect):
 * the key, then those tests' results.  Its length, or -1 when buf is too
 * small or a test's answer is not one to keep (a transient error). */
int mini_caps_cache_text(const struct mini_caps *c, const char *exe, char *buf, size_t size);
/* Remove dir's cache of this program: what it said did not hold (a
 * cgroup it called writable was not), so that the next start probes. */
void mini_caps_cache_forget(const char *dir);
/* The cache file in dir of the daemon binary exe: one per binary (its
 * device and inode: caps-DEV-INO.cache), so that builds and installs
 * sharing a runtime directory do not replace each other's, each start of
 * one making the next start of the other probe again.  A store keeps the
 * MINI_CAPS_CACHE_KEEP most recent.  false when exe cannot be stat'ed or
 * the path does not fit. */
bool mini_caps_cache_path(const char *dir, const char *exe, char path[static MINI_CAPS_PATH_MAX]);
#define MINI_CAPS_CACHE_PREFIX "caps-"
#define MINI_CAPS_CACHE_SUFFIX ".cache"
#define MINI_CAPS_CACHE_OLD "caps.cache" /* the one file of earlier releases: removed at a store */
#define MINI_CAPS_CACHE_KEEP 4
/* The most a cache holds: the key (less than MINI_CAPS_KEY_MAX) and the
 * cgroup tests' answers. */
#define MINI_CAPS_KEY_MAX 8192
#define MINI_CAPS_CACHE_MAX (MINI_CAPS_KEY_MAX + 1024)

/* MINI_FEAT_* bits this machine provides to a sandbox.  Namespace bits are
 * set only with user namespaces (the sandbox always creates one);
 * MINI_FEAT_CGROUPS when cg_mode is not NONE; MINI_FEAT_SECCOMP when a
 * filter can be installed and the errno and kill actions exist. */
unsigned mini_caps_features(const struct mini_caps *c);

/* The whole probe as JSON (for hello, open, `mini-sandbox check --json`).
 * NULL on out of memory. */
cJSON *mini_caps_to_json(const struct mini_caps *c);

/* ------------------------------------------------------------ assessment */

enum mini_assess_status { MINI_ASSESS_FULL = 0, MINI_ASSESS_DEGRADED, MINI_ASSESS_REFUSED };
const char *mini_assess_status_name(enum mini_assess_status s); /* "full", "degraded", "refused" */

/* How the daemon must run the profile's commands. */
enum mini_exec_path {
    MINI_PATH_NAMESPACES = 0, /* spawn.c: clone3 into `namespaces`, pivot_root, ... */
    MINI_PATH_LANDLOCK,       /* no namespaces: Landlock + seccomp + no_new_privs + rlimits
                                * + process-group kill (sandbox/isolation/landlock.h) */
};
const char *mini_exec_path_name(enum mini_exec_path p); /* "namespaces", "landlock" */

#define MINI_ASSESS_MAX_ITEMS 20

struct mini_degradation {
    char feature[24];      /* a MINI_FEAT name ("user_ns", "cgroups"), or "tmpfs", "hide", "signals" */
    char replacement[240]; /* what stands in for it, or "none: ..." */
};

struct mini_assessment {
    enum mini_assess_status status;
    enum mini_exec_path path;
    unsigned namespaces; /* MINI_FEAT_*_NS bits to create (PATH_NAMESPACES); 0 on PATH_LANDLOCK */
    unsigned features;   /* MINI_FEAT_* the commands actually get */
    unsigned missing;    /* MINI_FEAT_* the profile wants and does not get */
    bool cgroups;        /* limits through cgroups (else rlimits only) */
    int landlock_abi;    /* PATH_LANDLOCK: the ABI it will use */
    size_t n_items;
    struct mini_degradation items[MINI_ASSESS_MAX_ITEMS];
    char reason[MINI_CAPS_TEXT_MAX];  /* REFUSED: one line */
    char remedy[MINI_CAPS_TEXT_MAX];  /* REFUSED: what to change on the machine */
    char summary[MINI_CAPS_TEXT_MAX]; /* one line for the notes of `opened` and of every
                                        * `exit` ("full isolation: ..." / "degraded: ...") */
};

/* Decide how profile p can run on machine c.  Always fills *out and
 * returns its status (never fails).  Rules:
 *   - a feature in p->require that is missing: REFUSED;
 *   - no seccomp: REFUSED (spawn always installs a filter);
 *   - user, mount and pid namespaces (and net when p->network is none)
 *     available: PATH_NAMESPACES; other missing namespaces are left out of
 *     the clone and listed; cgroups and overlay degrade to rlimits and a
 *     read-only root;
 *   - otherwise PATH_LANDLOCK when Landlock and seccomp exist (DEGRADED,
 *     listing what replaces each namespace), else REFUSED with the user
 *     namespace remedy. */
enum mini_assess_status mini_caps_assess(const struct mini_caps *c, const struct mini_profile *p,
                                         struct mini_assessment *out);

/* {"status":..., "path":..., "namespaces":[...], "features":[...],
 *  "missing":[{"feature":..., "replacement":...}], "cgroups":bool,
 *  "landlock_abi":N, "reason":..., "remedy":..., "summary":...}; reason and
 * remedy are null unless refused.  NULL on out of memory. */
cJSON *mini_assessment_to_json(const struct mini_assessment *a);

/* For the daemon's `open` (and exec on a pool): -1 with e set to
 * isolation_unavailable "profile NAME: REASON; remedy: REMEDY" when
 * refused, else 0. */
int mini_assessment_check(const struct mini_assessment *a, const char *profile_name, struct mini_err *e);

#endif
