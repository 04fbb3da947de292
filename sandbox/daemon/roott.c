/* The template of the root and its mount watch (roott.h). */
#include "roott.h"
#include "rootfs.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/hash.h"
#include "mini/io.h"
#include "mini/log.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void roott_init(struct roott *rt, bool enabled, struct helpers *helpers)
{
    *rt = (struct roott){ .enabled = enabled, .mounts = { .fd = -1, .wake_fd = -1 }, .helpers = helpers };
    mount_watch_init(&rt->mounts);
}

void roott_watch(struct roott *rt, int ep)
{
    rt->ev_mounts = (struct ev){ EV_MOUNTS, NULL };
    if (rt->mounts.wake_fd >= 0 && loop_add(ep, rt->mounts.wake_fd, EPOLLPRI, &rt->ev_mounts) < 0) {
        close(rt->mounts.wake_fd);
        rt->mounts.wake_fd = -1;
    }
}

void roott_fini(struct roott *rt) { mount_watch_fini(&rt->mounts); }

void roott_tree_init(struct roott_tree *t) { *t = (struct roott_tree){ .fd = -1 }; }

void roott_tree_free(struct roott_tree *t)
{
    mini_close(t->fd);
    t->fd = -1;
}

void roott_tree_move(struct roott_tree *dst, struct roott_tree *src)
{
    *dst = *src;
    src->fd = -1;
}

uint64_t roott_events(struct roott *rt) { return mount_watch_events(&rt->mounts); }

uint64_t roott_reads(const struct roott *rt) { return rt->mounts.reads; }

static uint64_t sig_add(uint64_t h, const char *path)
{
    struct stat st;
    uint64_t v[3] = { 0, 0, 0 };
    if (lstat(path, &st) == 0) {
        v[0] = 1;
        v[1] = (uint64_t)st.st_dev;
        v[2] = (uint64_t)st.st_ino;
    } else if (errno != ENOENT && errno != ENOTDIR) {
        v[0] = 2; /* cannot tell: what was prepared may not be trusted */
        v[1] = (uint64_t)mini_mono_ns();
    }
    return mini_fnv1a(h, v, sizeof v);
}

/* The mounts at and under the profile's binds and the workspace
 * (mounts.h), hashed; read again only when the daemon's mount table has
 * changed since the last read.  Each sandbox clones both trees, submounts
 * and all, when it is prepared.  A table that cannot be read gives a value
 * no sandbox has. */
static uint64_t binds_mounts(struct roott *rt, struct roott_tree *t, const struct mini_profile *p, const char *ws,
                             bool image)
{
    uint64_t seen = mount_watch_events(&rt->mounts);
    if (t->mounts_known && seen == t->mounts_seen)
        return t->mounts_hash;
    size_t nb = image ? 0 : p->n_binds, n = nb + 1; /* an image's binds are its own */
    _cleanup_free_ const char **paths = calloc(n, sizeof *paths);
    for (size_t i = 0; paths && i < nb; i++)
        paths[i] = p->binds[i].path;
    if (paths)
        paths[nb] = ws;
    uint64_t h;
    if (!paths || mount_watch_hash(&rt->mounts, paths, n, &h, &seen) < 0) {
        t->mounts_known = false;
        return (uint64_t)mini_mono_ns();
    }
    t->mounts_hash = h;
    t->mounts_seen = seen;
    t->mounts_known = true;
    return h;
}

void roott_hash_mounts(struct roott *rt, struct roott_tree *t, const struct mini_profile *p, const char *ws, bool image)
{
    binds_mounts(rt, t, p, ws, image);
}

/* What the profile's hidden paths and binds are on the host now: for
 * each, whether it exists and which file it is (lstat's device and inode),
 * and the mounts under the binds and the workspace (binds_mounts), hashed
 * (FNV-1a).  A sandbox covers what exists and copies those mounts when it
 * is prepared, and a template when it was made; one that waited in the
 * pool (or parked) while a hidden path appeared or was replaced, or a
 * mount was made or removed under a bind or the workspace, would show
 * what was, so the pool discards it then, and the template is made again. */
uint64_t roott_sig(struct roott *rt, struct roott_tree *t, const struct mini_profile *p, const char *ws, bool image)
{
    uint64_t h = MINI_FNV1A_INIT;
    if (image) {
        uint64_t m = binds_mounts(rt, t, p, ws, image); /* the workspace's mounts only */
        return mini_fnv1a(h, &m, sizeof m);
    }
    for (size_t i = 0; i < p->n_hide; i++)
        h = sig_add(h, p->hide[i]);
    for (size_t i = 0; i < p->n_binds; i++)
        h = sig_add(h, p->binds[i].path);
    uint64_t m = binds_mounts(rt, t, p, ws, image);
    return mini_fnv1a(h, &m, sizeof m);
}

/* Made when the session prepares its TEMPLATE_AFTER-th sandbox, so that a
 * one-shot run (one or two) never pays for it, and made again when the
 * signature has changed since.  Not for a profile mini_rootfs_template_fits
 * refuses; a build that fails turns it off for the session (its sandboxes
 * build their whole root, as before). */
#define TEMPLATE_AFTER 3
int roott_get(struct roott *rt, struct roott_tree *t, uint64_t sig, bool fits, const struct mini_spawn_cfg *cfg,
              const char *sid)
{
    if (!rt->enabled || t->off || !fits)
        return -1;
    if (t->n_prepared < TEMPLATE_AFTER && ++t->n_prepared < TEMPLATE_AFTER)
        return -1;
    if (t->fd >= 0 && t->sig == sig && !t->moved)
        return t->fd;
    roott_tree_free(t);
    if (!mini_rootfs_template_fits(cfg->profile)) {
        log_debug("session %s: no template of its root: a hidden path is or holds a mount of each "
                  "sandbox's own, or the profile binds / or overlays it",
                  sid);
        t->off = true;
        return -1;
    }
    struct mini_err e;
    int64_t t0 = mini_mono_ns();
    struct helper *x = helper_slot(rt->helpers);
    struct mini_idmap_holder h = { .pid = 0, .pidfd = -1, .stack = NULL };
    uint64_t gen = mount_watch_events(&rt->mounts);
    int fd = mini_sandbox_template(cfg, x ? &h : NULL, &e);
    if (x)
        helper_adopt(rt->helpers, x, &h);
    if (fd < 0) {
        log_warn("session %s: %s; its sandboxes build their whole root", sid, e.msg);
        t->off = true;
        return -1;
    }
    log_debug("session %s: its root's template made in %.3f ms", sid, (double)(mini_mono_ns() - t0) / 1e6);
    t->fd = fd;
    t->sig = sig;
    /* A mount made and removed under a bind while the builder copied the
     * table would leave no trace in the signature: used for this sandbox
     * (whose own check at READY discards it), made again for the next. */
    t->moved = mount_watch_events(&rt->mounts) != gen;
    return fd;
}

/* Off the commands' path: once the table has been still for
 * MOUNTS_QUIET_MS after a change, a session that has prepared sandboxes
 * hashes it (binds_mounts, one read for all of them), so that its next
 * command finds the hash made unless the table changed again since; the
 * pool still checks.  A burst of changes (a container started) is read
 * once, after it; a table that never stays still is left to the
 * commands, as without this: a hash made ahead would be stale before it
 * was used. */
#define MOUNTS_QUIET_MS 25
void roott_changed(struct roott *rt) { rt->due_ns = mini_mono_ns() + MOUNTS_QUIET_MS * 1000000LL; }

int roott_timeout(const struct roott *rt)
{
    if (!rt->due_ns)
        return -1;
    int64_t left = rt->due_ns - mini_mono_ns();
    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

void roott_settled(struct roott *rt) { rt->due_ns = 0; }
