/* Per-command cgroups for mini-sandboxd: limits the kernel enforces on a
 * whole process tree (memory with an OOM kill the daemon can report,
 * processes, optionally CPU bandwidth), usage figures (peak memory, CPU
 * time), and a kill that reaches every process of the command.
 *
 * Layout.  The daemon owns one parent group per hierarchy,
 * `<its own cgroup>/mini-sandboxd-<pid>`, and creates `c-<name>` inside it
 * per command:
 *   v2 (a delegated subtree: the daemon's cgroup is writable and offers
 *      memory and pids): the daemon first moves itself into the leaf
 *      `mini-sandboxd-<pid>/daemon` (cgroup v2 forbids processes in a group
 *      that hands controllers to its children), then enables memory, pids
 *      and cpu for the subtree.  Kill with cgroup.kill.
 *   v1 (root on a v1 or hybrid host): the memory, pids, cpu, cpuacct and
 *      freezer hierarchies that are writable, each with its own parent
 *      (co-mounted controllers share one).  Kill by freezing, SIGKILLing
 *      everything listed, thawing, until empty.
 *   none (rootless without delegation): nothing; the caller falls back to
 *      rlimits and a process-group kill.
 *
 * Every command group is removed when its command ends, whatever the path
 * out: mini_cgroup_destroy() kills what is left and retries rmdir while the
 * kernel finishes; a directory it still cannot remove is remembered and
 * retried by later calls and by mini_cgroups_fini().  At init, groups left
 * by a daemon that died (mini-sandboxd-<pid> whose flock is free) are
 * removed, killing what still runs in them.
 *
 * Not thread-safe; the daemon is single-threaded.  Nothing here prints. */
#ifndef MINI_SANDBOX_CGROUP_H
#define MINI_SANDBOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "caps.h"
#include "mini/err.h"
#include "mini/profile.h"
#include "mini/proto.h"

#define MINI_CG_PATH_MAX 512
#define MINI_CG_HIER_MAX MINI_CGC_COUNT

struct mini_cg_hier {
    char parent[MINI_CG_PATH_MAX]; /* .../mini-sandboxd-<pid> */
    unsigned ctrls;                /* (1u << MINI_CGC_*) handled in this hierarchy */
    int lock_fd;                   /* parent held with flock(LOCK_EX) while the daemon lives; valid when locked;
                                    * the command groups' files are opened relative to it */
    bool locked;
    bool memsw; /* v1 memory: memory.memsw.* exist (swap accounting on) */
};

struct mini_cgroups {
    enum mini_cg_mode mode;
    unsigned ctrls; /* (1u << MINI_CGC_*) in use, all hierarchies */
    size_t n_hier;  /* v1: distinct hierarchies; v2: 1; none: 0 */
    struct mini_cg_hier hier[MINI_CG_HIER_MAX];
    bool has_kill; /* v2 cgroup.kill */
    /* v2 */
    char v2_base[MINI_CG_PATH_MAX]; /* the daemon's cgroup before init */
    char v2_leaf[MINI_CG_PATH_MAX]; /* where the daemon lives now */
    unsigned v2_enabled;            /* controllers init enabled in v2_base's subtree_control */
    /* CPU bandwidth per command, applied by later creates (cpu.max or
     * cpu.cfs_quota_us): quota 0 means none.  Set after init. */
    uint64_t cpu_quota_us;
    uint64_t cpu_period_us;        /* 0: 100000 */
    char note[MINI_CAPS_TEXT_MAX]; /* what was chosen and why, one line */
    /* directories whose removal has not succeeded yet; retried */
    char **pending;
    size_t n_pending;
    unsigned live; /* command groups created and not destroyed */
};

struct mini_cgroup {
    struct mini_cgroups *cg; /* NULL: inactive (never created, or destroyed) */
    char name[64];
    size_t n_dirs;
    char dirs[MINI_CG_HIER_MAX][MINI_CG_PATH_MAX];
    unsigned dir_ctrls[MINI_CG_HIER_MAX];
    unsigned ctrls;        /* limits actually set: (1u << MINI_CGC_MEMORY) etc. */
    int fd;                /* v2: the group's directory, for clone3 CLONE_INTO_CGROUP; else -1 */
    uint64_t memory_limit; /* bytes set, 0 none */
    uint64_t pids_limit;
};

#define MINI_CGROUP_INIT     \
    {                        \
        .cg = NULL, .fd = -1 \
    }

struct mini_cgroup_result {
    bool oom_killed;        /* the kernel's OOM killer killed a process of the command */
    int64_t oom_kills;      /* how many (v1 memory.oom_control / v2 memory.events oom_kill); -1 unknown */
    int64_t memory_events;  /* times the limit was hit (v1 memory.failcnt / v2 memory.events max); -1 unknown */
    bool pids_limited;      /* a fork failed at pids.max */
    int64_t pids_events;    /* pids.events max; -1 unknown */
    int64_t pids_peak;      /* pids.peak where the kernel has it; -1 unknown */
    int64_t peak_memory_kb; /* memory.max_usage_in_bytes / memory.peak, KiB; -1 unknown */
    int64_t cpu_ms;         /* cpuacct.usage / cpu.stat usage_usec, ms; -1 unknown */
    enum mini_limit limit;  /* MEMORY if oom_killed, else PIDS if pids_limited, else NONE */
};

/* Discovery, for mini_caps_detect(), in three steps that fill c's cgroup
 * fields (v1[], v2_*, cg_mode and cg_why: the mode mini_cgroups_init()
 * will pick):
 *   _find: the v1 and v2 hierarchies from /proc/self/mountinfo and
 *     /proc/self/cgroup, and the v2 controllers (reads only);
 *   _test: create and remove a test group in each (v1[].err, v2_err,
 *     v2_kill, v2_freeze), which the probe cache stands in for
 *     (caps_cache.c); refused_only: only those it says refused are tested
 *     again, so that a cache never takes a limit away;
 *   _conclude: what follows (writable, v2_delegated, cg_mode, cg_why). */
void mini_cgroups_find(struct mini_caps *c);
void mini_cgroups_test(struct mini_caps *c, bool refused_only);
void mini_cgroups_conclude(struct mini_caps *c);

/* Pick the mode from the probe (caps->cg_mode: v2 delegated, v1 writable,
 * or none) and create the daemon's parent groups.  "none" is not an
 * error: it returns 0 with cg->mode == MINI_CG_NONE and cg->note saying
 * why.  -1 with e filled only when a mode that the probe found usable
 * could not be set up (then cg is left in mode none, nothing created). */
int mini_cgroups_init(struct mini_cgroups *cg, const struct mini_caps *caps, struct mini_err *e);
/* The same, but on v1 only the hierarchies that enforce the profile's
 * limits (memory, pids): what the daemon uses, since each hierarchy costs a
 * mkdir, writes and an rmdir per command.  CPU time then comes from the
 * sandbox's own accounting, and killing relies on the pid namespace or the
 * process group. */
int mini_cgroups_init_limits(struct mini_cgroups *cg, const struct mini_caps *caps, struct mini_err *e);
/* The same with a forced mode (tests, and `--cgroups v1|v2|none`): v2 also
 * without memory and pids (the controllers present are used), v1 with
 * whatever hierarchies are writable.  -1 (isolation_unavailable) when the
 * mode cannot be used at all. */
int mini_cgroups_init_mode(struct mini_cgroups *cg, const struct mini_caps *caps, enum mini_cg_mode mode,
                           struct mini_err *e);
/* Make the probe tell the truth after init: caps->cg_mode and cg_why
 * become the mode actually set up (none when init failed, e.g. a v2
 * cgroup shared with other processes), so that mini_caps_assess() never
 * promises cgroup limits that will not be applied.  Call it after init
 * and before assessing any profile. */
void mini_cgroups_update_caps(const struct mini_cgroups *cg, struct mini_caps *caps);
/* Remove every command group still there (killing its processes), the
 * parents, and for v2 move the daemon back to where it was.  Safe on a
 * zeroed or "none" struct. */
void mini_cgroups_fini(struct mini_cgroups *cg);

/* Create <parent>/c-<name> in every hierarchy with the profile's limits:
 * memory (v1 memory.limit_in_bytes plus memory.memsw.limit_in_bytes, or
 * memory.swappiness 0 without swap accounting; v2 memory.max,
 * memory.swap.max 0, memory.oom.group 1), pids (pids.max), CPU bandwidth
 * (cg->cpu_quota_us).  name: [A-Za-z0-9._-]{1,60}.  out must be
 * MINI_CGROUP_INIT or destroyed.  In mode none: -1, isolation_unavailable. */
int mini_cgroup_create(struct mini_cgroups *cg, const char *name, const struct mini_limits *lim,
                       struct mini_cgroup *out, struct mini_err *e);
/* Move pid (a whole process) into the group in every hierarchy.  Call it
 * before the process runs anything of the command's (spawn: between
 * clone3 and the "go" message).  v2 alternative: clone3 with
 * CLONE_INTO_CGROUP and c->fd. */
int mini_cgroup_attach(struct mini_cgroup *c, pid_t pid, struct mini_err *e);
/* Open `tasks` of every v1 hierarchy of the group for writing, so that a
 * single-threaded child can move itself in by writing "0" (the permission
 * check uses the opener's credentials, so a child whose ids have changed
 * may still do it).  `tasks`, not `cgroup.procs`: the kernel moves the
 * writer's own thread without taking the global threadgroup lock for
 * writing, which waits for an RCU grace period (milliseconds on an idle
 * machine) while holding cgroup_mutex, and so stalls every other mkdir
 * and rmdir of a cgroup on the host.  For a process with one thread the
 * result is the same.  Returns how many fds were stored (0 on v2, which
 * uses CLONE_INTO_CGROUP and c->fd instead), or -1 with e filled. */
int mini_cgroup_open_procs(const struct mini_cgroup *c, int fds[MINI_CG_HIER_MAX], struct mini_err *e);
/* Read the counters.  Call after the command ended and before destroy;
 * may also be polled while it runs (cpu_ms for a CPU-time limit on the
 * whole tree).  Always returns 0; unknown values are -1. */
int mini_cgroup_result(const struct mini_cgroup *c, struct mini_cgroup_result *r);
/* Kill every process in the group: v2 cgroup.kill; otherwise freeze (v1
 * freezer / v2 cgroup.freeze when present), SIGKILL every listed process,
 * thaw, and repeat until the group lists none.  Returns the number of
 * processes still listed when it gave up (0: empty), or -1 when the group
 * cannot be read. */
int mini_cgroup_kill(struct mini_cgroup *c);
/* Kill and remove the group in every hierarchy, retrying briefly while
 * the kernel finishes; what still cannot be removed is retried later (see
 * above).  Leaves *c inactive (MINI_CGROUP_INIT); safe to call twice. */
void mini_cgroup_destroy(struct mini_cgroup *c);

#endif
