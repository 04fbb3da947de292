/* Spawning one sandbox, in two steps so that a pool can take the first off
 * the command's critical path:
 *
 *   prepare  clone() into fresh namespaces, write the id maps, build the
 *            root filesystem, pivot_root, hostname, loopback; the sandbox's
 *            init (pid 1 of its pid namespace) then waits for a command.
 *            Before saying it is ready, init confines itself the way the
 *            command must be: rlimits, default signal dispositions, no
 *            capabilities in any set, no_new_privs, the seccomp program.
 *   launch   send the command (argv, env, cwd) to that init, which forks it
 *            (a new session, fds 0-2 only, the working directory) and
 *            reaps every process in the namespace.  When the command ends,
 *            init kills and reaps whatever it left behind, then reports the
 *            command's wait status and resource usage and exits, which ends
 *            the namespaces.
 *
 * The daemon talks to init over a stream socket pair ("ctl"); init's
 * messages are fixed-size struct mini_ctl_msg.  All of the child's
 * failures before the command runs arrive as MINI_CTL_ERROR with a message
 * naming the step that failed and its errno, never as a bare exit code
 * (only a child that has lost the daemon exits 125 without one).
 *
 * This file's functions run in the daemon (spawn.c); what the clone runs
 * up to the exec of init is child.c, init itself init.c. */
#ifndef MINI_SANDBOX_SPAWN_H
#define MINI_SANDBOX_SPAWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include "mini/clock.h"
#include "mini/err.h"
#include "mini/profile.h"
#include "init_proto.h"
#include "landlock.h"
#include "seccomp_prog.h"

/* Everything prepare needs; owned by the caller (a session), read only. */
struct mini_spawn_cfg {
    const struct mini_profile *profile;
    /* Compiled from profile->seccomp, sent after GO; NULL: not compiled
     * yet, sent later with mini_sandbox_send_seccomp (the child waits for
     * it before it confines itself). */
    const struct mini_bpf *seccomp;
    const char *workspace;   /* canonical host path, mounted at the same path */
    int workspace_fd;        /* O_PATH fd of the workspace, opened at session open */
    const char *root_dir;    /* an empty directory (daemon state) used as mount point */
    const char *overlay_dir; /* per-session upper/work dirs when profile->overlay_root; else NULL */
    const char *image_root;  /* an image's tree as the root (docs/images.md), or NULL */
    int image_userns;        /* root daemon: its idmapping, image uid inner_uid -> host_uid; else -1 */
    uid_t host_uid;          /* host ids that inner_uid/inner_gid map to */
    gid_t host_gid;
    uid_t inner_uid; /* the ids mapped inside, which the sandbox runs as: 0, or an image's User */
    gid_t inner_gid;
    /* Root daemon, an image User not root: the host ids the image's root
     * is (mapped as uid/gid 0 inside, which nothing runs as), else -1. */
    long root_host_uid, root_host_gid;
    bool idmap_workspace; /* root daemon: the workspace through an idmapped mount */
    int idmap_userns;     /* its mapping: the owner's ids -> host_uid/host_gid */
    int init_fd;          /* mini-sandbox-init, from mini_sandbox_open_init() */
    /* The session's template of the root (mini_sandbox_template), sent with
     * GO for the child to clone, or -1: the child builds it all. */
    int template_fd;
    unsigned namespaces; /* MINI_FEAT_*_NS to create (from the assessment) */
    bool cgroup_memory;  /* memory is limited by a cgroup: no RLIMIT_AS */
    bool cgroup_pids;    /* pids are limited by a cgroup: no RLIMIT_NPROC */
    /* The command's cgroup: v2 joined at birth through clone3's
     * CLONE_INTO_CGROUP (the group's directory fd); v1 joined by the child
     * writing itself into each hierarchy's `tasks`, which come with GO
     * (mini_sandbox_go), before it builds its root. */
    int cgroup_fd;  /* v2 group directory, else -1 */
    bool cgroup_v1; /* v1 `tasks` fds will come with GO */
    /* The degraded path (no user namespaces): no namespaces at all; the
     * sandbox is confined by this Landlock plan, its seccomp supplement,
     * the profile's filter, no_new_privs and rlimits, and killed as a
     * process group.  NULL: the namespace path. */
    const struct mini_landlock_plan *landlock;
};

/* One uid_map or gid_map text: "INNER HOST 1", and "0 ROOT_HOST 1" after
 * sep when inner is not 0 and root_host is not -1. */
int mini_format_id_map(char *buf, size_t size, unsigned inner, unsigned long host, long root_host, const char *sep);

/* Open mini-sandbox-init ($MINI_SANDBOX_INIT, else libexec/mini/ relative
 * to this program: mini_exe_relative)
 * for the sandboxes to become.  An O_PATH fd, or -1 with e filled. */
int mini_sandbox_open_init(struct mini_err *e);

enum mini_sandbox_state {
    MINI_SB_PREPARING = 0, /* cloned, building its root */
    MINI_SB_RUNNING,       /* command launched */
    MINI_SB_DONE,          /* init reported the status or died */
};

/* Per-step timers of one sandbox's preparation (MINI_SANDBOX_TIMING=1 in
 * the daemon's environment; docs/performance.md, "Per-step timers"): CLOCK_MONOTONIC
 * stamps, 0 where not taken.  Off, each mark is one branch. */
extern bool mini_sb_timing;
struct mini_sb_times {
    int64_t start;  /* the daemon began preparing (before the cgroup) */
    int64_t cgroup; /* the command's cgroup made */
    int64_t clone;  /* clone3 returned in the daemon */
    int64_t idmap;  /* uid_map/gid_map written */
    int64_t go;     /* GO sent: the child builds the root, confines, execs init */
    int64_t attach; /* cgroup attached where the clone could not join it */
    /* The child's own steps (MINI_CTL_TIMES), between go and ready. */
    struct mini_child_times child;
    int64_t ready; /* init's READY read by the daemon */
};
#define MINI_SB_MARK(t, step) ((void)(mini_sb_timing && ((t)->step = mini_mono_ns()) != 0))

struct mini_sandbox {
    pid_t pid; /* host pid of the sandbox's init */
    int pidfd; /* readable when init has exited */
    int ctl;   /* daemon end of the control socket */
    int out;   /* read end of the merged stdout+stderr pipe (non-blocking) */
    int in;    /* write end of the command's stdin pipe, -1 once closed */
    enum mini_sandbox_state state;
    bool group_kill;    /* degraded path: init leads a process group that holds the command */
    bool in_cgroup;     /* joins cfg's cgroup itself (else the daemon must attach it) */
    char *overlay_work; /* this sandbox's overlayfs work directories (removed by destroy), or NULL */
    int listen_fd;      /* network allowlist: the proxy's listener in the sandbox's netns (MINI_CTL_LISTENER), or -1 */
    struct mini_sb_times t;
};
#define MINI_SANDBOX_INIT                                                       \
    {                                                                           \
        .pid = -1, .pidfd = -1, .ctl = -1, .out = -1, .in = -1, .listen_fd = -1 \
    }

/* What launch sends: all strings are copied into one message. */
struct mini_launch {
    char *const *argv; /* NULL-terminated, argv[0] is the program */
    char *const *envp; /* NULL-terminated */
    const char *cwd;
    bool has_stdin; /* else the command's stdin is /dev/null */
};

/* Build a session's template of the root (mini_rootfs_template) in a
 * builder of its own: clone3 into a user and mount namespace, the id maps
 * cfg's sandboxes get (its 0 is their host ids), and the tree's fd back
 * over a socket pair.  Blocks for as long as the build takes (about a
 * millisecond; at most MINI_TEMPLATE_TIMEOUT_MS).  The builder is killed
 * before this returns, and reaped too unless `later` is given: then *later
 * is it, for the caller to reap once its pidfd is readable (a builder stuck
 * in the kernel would hold up the caller's loop).  The fd, or -1 with e
 * filled. */
#define MINI_TEMPLATE_TIMEOUT_MS 2000
struct mini_idmap_holder;
int mini_sandbox_template(const struct mini_spawn_cfg *cfg, struct mini_idmap_holder *later, struct mini_err *e);

/* Note which signals this process ignores, once its dispositions are
 * final (the daemon: after it has set them up): its clones then reset
 * only those before they execute init.  Without a note they reset every
 * signal.  Later changes of disposition are not seen. */
void mini_sandbox_note_signals(void);

/* Start a sandbox, in two calls: mini_sandbox_clone makes the process
 * (clone3, its id maps), which goes on making its namespaces meanwhile;
 * mini_sandbox_go lets it build the rest, handing it the command's v1
 * cgroup `tasks` fds to join first (cfg->cgroup_v1; none otherwise).
 * Between the two the caller may make that cgroup, off the child's path.
 * On success sb is in state PREPARING; the caller waits for ctl to become
 * readable and calls mini_sandbox_read_ctl.  Either fails with
 * MINI_E_ISOLATION_UNAVAILABLE when the kernel refuses the namespaces,
 * MINI_E_SPAWN_FAILED otherwise, and sb destroyed. */
int mini_sandbox_clone(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, struct mini_err *e);
int mini_sandbox_go(const struct mini_spawn_cfg *cfg, struct mini_sandbox *sb, const int *cgroup_fds, size_t n,
                    struct mini_err *e);
/* The seccomp program of a sandbox whose GO went without one (its cfg's
 * was NULL).  MINI_E_SPAWN_FAILED when the sandbox is gone. */
int mini_sandbox_send_seccomp(struct mini_sandbox *sb, const struct mini_bpf *prog, struct mini_err *e);
/* Hand a command to a READY sandbox. */
int mini_sandbox_launch(struct mini_sandbox *sb, const struct mini_launch *l, struct mini_err *e);
/* Read one control message, without blocking.  MINI_CTL_LISTENER is
 * taken here (its socket into sb->listen_fd) and never returned.  1: got one; 0: peer
 * closed (or a short message from a dying peer); -2: none yet (EAGAIN);
 * -1: error. */
int mini_sandbox_read_ctl(struct mini_sandbox *sb, struct mini_ctl_msg *m);
/* SIGKILL the sandbox's init (and so its whole pid namespace). */
void mini_sandbox_kill(struct mini_sandbox *sb);
/* Reap init if it has exited: 1 reaped (status/rusage filled), 0 still
 * running, -1 error. */
int mini_sandbox_reap(struct mini_sandbox *sb, int *status, struct rusage *ru);
/* Close every fd; kills and reaps synchronously if still alive. */
void mini_sandbox_destroy(struct mini_sandbox *sb);

#endif
