/* Preparing one sandbox for a session, step by step, and releasing it
 * (sandbox.h). */
#include "daemon.h"
#include "landlock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void session_spawn_cfg(const struct server *s, const struct session *ss, struct mini_spawn_cfg *cfg)
{
    *cfg = (struct mini_spawn_cfg){
        .profile = ss->profile,
        .seccomp = ss->bpf,
        .workspace = ss->workspace,
        .workspace_fd = ss->ws_fd,
        .root_dir = s->statedir.root_dir,
        .host_uid = ss->ids.host_uid,
        .host_gid = ss->ids.host_gid,
        .inner_uid = ss->ids.inner_uid,
        .inner_gid = ss->ids.inner_gid,
        .root_host_uid = ss->ids.root_host_uid,
        .root_host_gid = ss->ids.root_host_gid,
        .idmap_workspace = ss->ids.idmap,
        .idmap_userns = ss->ids.idmap_userns,
        .init_fd = s->host.init_fd,
        .overlay_dir = ss->overlay_dir,
        .image_root = ss->image.root,
        .image_userns = ss->image.userns,
        .namespaces = ss->assess.namespaces,
        .cgroup_memory = ss->assess.cgroups && (s->host.cgroups.ctrls & (1u << MINI_CGC_MEMORY)),
        .cgroup_pids = ss->assess.cgroups && (s->host.cgroups.ctrls & (1u << MINI_CGC_PIDS)),
        .cgroup_fd = -1,
        .template_fd = -1,
    };
}

void slot_release(struct sandbox_slot *slot)
{
    mini_sandbox_destroy(&slot->sb);
    mini_cgroup_destroy(&slot->cg);
    if (slot->tmpdir) {
        struct mini_err e;
        if (mini_rm_rf(slot->tmpdir, &e) < 0)
            log_warn("%s", e.msg);
        free(slot->tmpdir);
        slot->tmpdir = NULL;
    }
}

static int landlock_allow_init(const struct server *s, struct mini_landlock_plan *plan, struct mini_err *e)
{
    char fdpath[32], path[4096];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", s->host.init_fd);
    ssize_t n = readlink(fdpath, path, sizeof path - 1);
    if (n < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "locating mini-sandbox-init");
    path[n] = '\0';
    return mini_landlock_plan_add(plan, path, MINI_LL_FS_EXECUTE | MINI_LL_FS_READ_FILE, e);
}

/* The v1 `tasks` fds a child writes itself into, open only until they
 * are sent with its GO. */
struct cgroup_procs {
    int fds[MINI_CG_HIER_MAX];
    size_t n;
};

static void cgroup_procs_close(struct cgroup_procs *p)
{
    for (size_t i = 0; i < p->n; i++)
        close(p->fds[i]);
    p->n = 0;
}

_Static_assert(MINI_CG_HIER_MAX + 2 <= MINI_GO_FDS_MAX, "a GO carries a tasks fd per v1 hierarchy");

/* The command's cgroup (see mini_spawn_cfg), created with the profile's
 * limits: on v2 before the clone, which puts the sandbox in it; on v1
 * after it, while the child makes its namespaces, with `tasks` opened for
 * the child to join from its GO.  t->cgroup marks when it is done (or
 * found not needed). */
static int slot_cgroup(struct server *s, struct session *ss, struct sandbox_slot *slot, struct cgroup_procs *procs,
                       struct mini_spawn_cfg *cfg, struct mini_sb_times *t, struct mini_err *e)
{
    if (!ss->assess.cgroups || s->host.cgroups.mode == MINI_CG_NONE) {
        MINI_SB_MARK(t, cgroup);
        return 0;
    }
    char name[32];
    snprintf(name, sizeof name, "x%llu", (unsigned long long)++s->host.next_cgroup);
    int n = -1;
    if (mini_cgroup_create(&s->host.cgroups, name, &ss->profile->limits, &slot->cg, e) < 0)
        return mini_err_prefix(e, "the command's cgroup");
    if ((n = mini_cgroup_open_procs(&slot->cg, procs->fds, e)) < 0)
        return mini_err_prefix(e, "the command's cgroup");
    procs->n = (size_t)n;
    cfg->cgroup_fd = slot->cg.fd;
    MINI_SB_MARK(t, cgroup);
    return 0;
}

/* The degraded path: the command's TMPDIR and the Landlock plan that
 * confines it, which must also let the sandbox execute mini-sandbox-init
 * once Landlock is in force. */
static int slot_landlock(struct server *s, struct session *ss, struct sandbox_slot *slot,
                         struct mini_landlock_plan *plan, struct mini_spawn_cfg *cfg, struct mini_err *e)
{
    if (ss->assess.path != MINI_PATH_LANDLOCK)
        return 0;
    if (!(slot->tmpdir = statedir_tmpdir(&s->statedir, ss->ids.host_uid, ss->ids.host_gid, e)))
        return -1;
    if (mini_landlock_plan(plan, ss->profile, ss->workspace, slot->tmpdir, e) < 0)
        return -1;
    if (landlock_allow_init(s, plan, e) < 0)
        return -1;
    cfg->landlock = plan;
    return 0;
}

/* Where the clone could not join the cgroup itself (clone without
 * CLONE_INTO_CGROUP), the daemon moves it in. */
static int slot_attach(struct sandbox_slot *slot, struct mini_err *e)
{
    if (slot->cg.cg && !slot->sb.in_cgroup && mini_cgroup_attach(&slot->cg, slot->sb.pid, e) < 0)
        return mini_err_prefix(e, "the command's cgroup");
    return 0;
}

uint64_t slot_sig(struct server *s, struct session *ss)
{
    if (ss->memo.set)
        return ss->memo.sig;
    return roott_sig(&s->roott, &ss->tree, ss->profile, ss->workspace, ss->image.root != NULL);
}

/* Prepare one sandbox for the session: the clone, on the namespace path or
 * on the degraded path with its Landlock plan and TMPDIR, and its cgroup
 * (before the clone on v2, after it on v1: slot_cgroup), then GO. */
int slot_prepare(struct server *s, struct session *ss, struct sandbox_slot *slot, struct mini_err *e)
{
    _cleanup_(cgroup_procs_close) struct cgroup_procs procs = { .n = 0 };
    _cleanup_(mini_landlock_plan_free) struct mini_landlock_plan plan = { 0 }; /* the child has its copy */
    struct mini_spawn_cfg cfg;
    struct mini_sb_times t = { 0 }; /* prepare starts slot->sb afresh */
    *slot = (struct sandbox_slot)SANDBOX_SLOT_INIT;
    MINI_SB_MARK(&t, start);
    slot->hidden = slot_sig(s, ss);
    slot->mount_gen = roott_events(&s->roott);
    if (statedir_ensure(&s->statedir, e) < 0)
        return -1;
    session_spawn_cfg(s, ss, &cfg);
    bool fits = ss->assess.path != MINI_PATH_LANDLOCK && !ss->image.root && !ss->overlay_dir &&
        (ss->assess.namespaces & MINI_FEAT_MOUNT_NS);
    cfg.template_fd = roott_get(&s->roott, &ss->tree, slot->hidden, fits, &cfg, ss->id);
    bool v1 = ss->assess.cgroups && s->host.cgroups.mode == MINI_CG_V1;
    cfg.cgroup_v1 = v1;
    /* The steps; each one's error names what it was doing. */
    if (!v1 && slot_cgroup(s, ss, slot, &procs, &cfg, &t, e) < 0)
        goto fail;
    if (slot_landlock(s, ss, slot, &plan, &cfg, e) < 0)
        goto fail;
    if (mini_sandbox_clone(&cfg, &slot->sb, e) < 0)
        goto fail;
    if (v1 && slot_cgroup(s, ss, slot, &procs, &cfg, &t, e) < 0)
        goto fail;
    if (mini_sandbox_go(&cfg, &slot->sb, procs.fds, procs.n, e) < 0)
        goto fail;
    if (slot_attach(slot, e) < 0)
        goto fail;
    slot->seccomp_pending = cfg.seccomp == NULL;
    slot->sb.t.start = t.start;
    slot->sb.t.cgroup = t.cgroup;
    MINI_SB_MARK(&slot->sb.t, attach);
    return 0;
fail:
    slot_release(slot);
    return -1;
}
