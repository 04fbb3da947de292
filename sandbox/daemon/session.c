/* Sessions: a profile, a workspace and the ids its sandboxes run as,
 * opened by `open` and closed by `close` or the connection's end
 * (docs/sandbox-lifecycle.md).
 *
 * A session is where the caches meet: opening one is a list of steps
 * (open_steps, below), some of which take what a cache holds (a parked
 * session's ids, an id mapping made ahead, a compiled seccomp program);
 * sandbox_acquire gives a command its sandbox from the pool or prepares
 * one; closing one may park it.  The caches never call back here, except
 * through the pool's ops (prepare, and a prepared sandbox's reference to
 * its session). */
#include "daemon.h"
#include "image.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- sessions */

void session_unref(struct session *ss)
{
    if (!ss || --ss->refs > 0)
        return;
    if (ss->overlay_dir) {
        struct mini_err e;
        if (mini_rm_rf(ss->overlay_dir, &e) < 0)
            log_warn("session %s: %s", ss->id, e.msg);
        free(ss->overlay_dir);
    }
    disk_close(ss);
    session_net_close(ss);
    seccache_put(ss->bpf_entry);
    mini_profile_free(ss->profile);
    free(ss->workspace);
    mini_close(ss->ws_fd);
    mini_close(ss->ids.idmap_userns);
    mini_close(ss->ids.probe_mount);
    roott_tree_free(&ss->tree);
    if (ss->ids.uids)
        mini_uid_range_put(ss->ids.uids, ss->ids.uid_slot);
    if (ss->ids.uids && ss->ids.root_slot >= 0)
        mini_uid_range_put(ss->ids.uids, ss->ids.root_slot);
    mini_env_free(&ss->env);
    free(ss->image.root);
    free(ss->image.workdir);
    mini_env_free(&ss->image.env);
    mini_close(ss->image.userns);
    mini_close(ss->image.hold);
    free(ss);
}

void session_drop(struct server *s, struct session *ss)
{
    if (ss)
        pool_retire(&s->pool, &ss->pool, 0);
    session_unref(ss);
}

static struct session *session_new(void)
{
    struct session *ss = calloc(1, sizeof *ss);
    if (!ss)
        return NULL;
    ss->ws_fd = -1;
    ss->ids = (struct session_ids){
        .root_slot = -1, .root_host_uid = -1, .root_host_gid = -1, .uid_slot = -1, .idmap_userns = -1, .probe_mount = -1
    };
    ss->image = (struct session_image){ .userns = -1, .hold = -1 };
    roott_tree_init(&ss->tree);
    pool_of_init(&ss->pool);
    ss->refs = 1;
    return ss;
}

/* open.image: the image's root in the daemon's store (the same rule as
 * mini-sandbox image's: MINI_IMAGE_STORE, /var/lib/mini/images for root,
 * else under XDG_DATA_HOME) and its config's Env. */
static int session_image(struct server *s, struct session *ss, const char *ref, const char *user, struct mini_err *e)
{
    if (ss->assess.path == MINI_PATH_LANDLOCK)
        return mini_err_set(e, MINI_E_ISOLATION_UNAVAILABLE,
                            "an image needs user and mount namespaces, which this machine does not give "
                            "(mini-sandbox check says why)");
    struct mini_image_store st;
    if (mini_image_store_open(&st, NULL, e) < 0)
        return mini_err_prefix(e, "image %s", ref);
    _cleanup_cjson_ cJSON *j = mini_image_inspect(&st, ref, e);
    if (!j) {
        mini_image_store_close(&st);
        return -1;
    }
    const char *root = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "rootfs"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id"));
    /* Held for the session's life, so that image rm cannot pull it away. */
    if (!id || !mini_digest_valid(id) || (ss->image.hold = mini_image_hold(&st, id, e)) < 0) {
        mini_image_store_close(&st);
        return id ? -1 : mini_err_set(e, MINI_E_INTERNAL, "image %s: no id in its record", ref);
    }
    mini_image_store_close(&st);
    if (!root || !(ss->image.root = strdup(root)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "config"), "config");
    const char *wd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "WorkingDir"));
    if (wd && wd[0] == '/' && strlen(wd) < 4096 && !strstr(wd, "..") && !(ss->image.workdir = strdup(wd)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *v;
    cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(cfg, "Env")) {
        const char *kv = cJSON_GetStringValue(v), *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv)
            continue;
        char *name = strndup(kv, (size_t)(eq - kv));
        int r = name ? mini_env_add(&ss->image.env, name, eq + 1) : -1;
        free(name);
        if (r < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    /* The config's User (or open.user) is who the commands run as: the
     * sandbox's mapped ids become the image user's (docs/images.md). */
    struct mini_image_user u;
    if (mini_image_user_resolve(ss->image.root,
                                user ? user : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "User")), &u,
                                e) < 0)
        return mini_err_prefix(e, "image %s", ref);
    ss->ids.inner_uid = u.uid;
    ss->ids.inner_gid = u.gid;
    if (geteuid() != 0)
        return 0;
    /* A root daemon's store keeps the image's owners: through an idmapped
     * mount its user's files become the sandbox's, and, when that user is
     * not root, root's become those of a second uid of the session's own,
     * mapped as 0 inside (which nothing there runs as), so that they stay
     * root's and the overlay can copy them up. */
    unsigned long up[2][2] = { { u.uid, ss->ids.host_uid } }, gp[2][2] = { { u.gid, ss->ids.host_gid } };
    size_t nu = 1, ng = 1;
    if (u.uid != 0 || u.gid != 0) {
        if (!ss->ids.uids)
            ss->ids.uids = &s->uids;
        if ((ss->ids.root_slot = mini_uid_range_take(&s->uids, e)) < 0)
            return -1;
        ss->ids.root_host_uid = s->uids.uid_base + (uid_t)ss->ids.root_slot;
        ss->ids.root_host_gid = s->uids.gid_base + (gid_t)ss->ids.root_slot;
        if (u.uid != 0)
            up[nu][0] = 0, up[nu++][1] = (unsigned long)ss->ids.root_host_uid;
        if (u.gid != 0)
            gp[ng][0] = 0, gp[ng++][1] = (unsigned long)ss->ids.root_host_gid;
    }
    ss->image.userns =
        mini_idmap_userns_pairs((const unsigned long(*)[2])up, nu, (const unsigned long(*)[2])gp, ng, NULL, e);
    return ss->image.userns < 0 ? -1 : 0;
}

struct session *session_find(struct client *c, const char *id)
{
    for (struct session *ss = c->sessions; ss; ss = ss->next)
        if (strcmp(ss->id, id) == 0)
            return ss;
    return NULL;
}

/* The assessment (what the commands really get), plus this session's ids
 * and workspace. */
static cJSON *isolation_json(const struct server *s, const struct session *ss)
{
    cJSON *o = mini_assessment_to_json(&ss->assess);
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "network", ss->profile->network == MINI_NET_NONE ? "none" : "host");
    cJSON_AddStringToObject(o, "limits_by", ss->assess.cgroups ? mini_cg_mode_name(s->host.cgroups.mode) : "rlimits");
    char map[96];
    mini_format_id_map(map, sizeof map, ss->ids.inner_uid, ss->ids.host_uid, ss->ids.root_host_uid, ", ");
    cJSON_AddStringToObject(o, "uid_map", map);
    mini_format_id_map(map, sizeof map, ss->ids.inner_gid, ss->ids.host_gid, ss->ids.root_host_gid, ", ");
    cJSON_AddStringToObject(o, "gid_map", map);
    snprintf(map, sizeof map, "%u:%u", (unsigned)ss->ids.owner_uid, (unsigned)ss->ids.owner_gid);
    cJSON_AddStringToObject(o, "files_owned_by", map);
    cJSON_AddBoolToObject(o, "own_uid", ss->ids.uid_slot >= 0);
    cJSON_AddBoolToObject(o, "idmapped_workspace", ss->ids.idmap);
    cJSON_AddStringToObject(o, "workspace", ss->workspace);
    cJSON_AddBoolToObject(o, "workspace_writable", ss->profile->workspace_writable);
    cJSON_AddBoolToObject(o, "session_overlay", ss->overlay_dir != NULL);
    disk_json(ss, o);
    return o;
}

/* mini's configuration directories (their .env holds the API keys) are
 * hidden in every profile: the daemon's own, and for a root daemon the
 * workspace owner's. */
static int session_hide_secrets(struct server *s, struct session *ss, struct mini_err *e)
{
    struct stat st;
    if (geteuid() == 0 && fstat(ss->ws_fd, &st) == 0) {
        struct passwd *pw = getpwuid(st.st_uid);
        if (pw && mini_ws_guard_add_home(&s->guard, pw->pw_dir) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->guard.n_secrets; i++)
        if (mini_profile_add_hide(ss->profile, s->guard.secrets[i]) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

/* ----------------------------------------------------------------- ids */

/* Whose ids the session's sandboxes run as, and whose its files get (see
 * docs/isolation.md, "Whose ids a sandbox runs as"):
 *   - rootless: the daemon's own, for both;
 *   - root, workspace owned by root (a CI job's checkout): as for any
 *     owner W below, with W = 0, so what the sandbox creates is root's
 *     on the host; that is safe because no profile's seccomp program
 *     lets a sandbox set a setuid or setgid bit and it holds no
 *     capability (no file capabilities either).  Where the sandbox would
 *     run as W itself (no idmapped mount, the Landlock path) that would be
 *     root: refused;
 *   - root, owned by uid W: the processes run as a uid of the session's
 *     own from the daemon's range, and see the workspace through an
 *     idmapped mount in which W's files are theirs and what they create
 *     is W's, with W's ordinary group (mini_ws_owner_group) -- never the
 *     directory's group.  Per-uid kernel quotas are then the session's
 *     own.  Where the workspace's filesystem cannot be idmapped, or on
 *     the Landlock path (no user namespaces), they run as W itself. */
/* A root-owned workspace where the sandbox would run as the owner itself. */
static int refuse_root_owned(struct session *ss, const char *where, struct mini_err *e)
{
    return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                        "workspace %s is owned by root, and %s a sandbox there would run as root on the host; "
                        "remedy: give the directory to an unprivileged user (chown -R USER: %s), or run "
                        "mini-sandboxd (and mini) as that user",
                        ss->workspace, where, ss->workspace);
}

static int session_ids(struct server *s, struct session *ss, struct mini_err *e)
{
    struct stat st;
    if (fstat(ss->ws_fd, &st) < 0)
        return mini_err_sys(e, MINI_E_WORKSPACE_INVALID, errno, "workspace %s", ss->workspace);
    if (geteuid() != 0) {
        ss->ids.host_uid = ss->ids.owner_uid = geteuid();
        ss->ids.host_gid = ss->ids.owner_gid = getegid();
        return 0;
    }
    if (st.st_uid == 0 && ss->assess.path == MINI_PATH_LANDLOCK)
        return refuse_root_owned(ss, "without user namespaces (the Landlock path)", e);
    ss->ids.owner_uid = ss->ids.host_uid = st.st_uid;
    ss->ids.owner_gid = ss->ids.host_gid = mini_ws_owner_group(st.st_uid);
    if (ss->assess.path == MINI_PATH_LANDLOCK)
        return 0;
    int slot = mini_uid_range_take(&s->uids, e);
    if (slot < 0)
        return -1;
    ss->ids.uid_slot = slot;
    ss->ids.uids = &s->uids;
    uid_t uid = s->uids.uid_base + (uid_t)slot;
    gid_t gid = s->uids.gid_base + (gid_t)slot;
    if ((ss->ids.idmap_userns = idmap_userns(&s->idmap, ss->ids.owner_uid, uid, ss->ids.owner_gid, gid, e)) < 0)
        return -1;
    if (!idmap_known(&s->idmap, st.st_dev)) {
        /* Whether this filesystem can be idmapped at all: try it here, once
         * per filesystem (a later failure is the sandbox's spawn error). */
        int probe = open_tree(ss->ws_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ss->ids.idmap_userns };
        int r = probe < 0 ? -1 : mount_setattr(probe, "", AT_EMPTY_PATH, &attr, sizeof attr);
        int err = errno;
        ss->ids.probe_mount = probe;
        if (r < 0 && (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS) && ss->ids.owner_uid == 0)
            return refuse_root_owned(ss, "on a filesystem that cannot be idmapped", e);
        if (r < 0 && (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS)) {
            log_warn("workspace %s: its filesystem cannot be idmapped (%s): the sandbox runs as its owner, uid %u",
                     ss->workspace, strerror(err), (unsigned)ss->ids.owner_uid);
            mini_close(ss->ids.idmap_userns);
            ss->ids.idmap_userns = -1;
            mini_uid_range_put(&s->uids, slot);
            ss->ids.uid_slot = -1;
            ss->ids.uids = NULL;
            return 0;
        }
        if (r < 0)
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "idmapping the workspace %s", ss->workspace);
        idmap_learn(&s->idmap, st.st_dev);
    }
    ss->ids.host_uid = uid;
    ss->ids.host_gid = gid;
    ss->ids.idmap = true;
    return 0;
}

/* --------------------------------------------------- the caches' wiring */

static int pool_prepare(void *ctx, struct session *ss, struct sandbox_slot *slot, struct mini_err *e)
{
    return slot_prepare(ctx, ss, slot, e);
}

static void session_ref(struct session *ss) { ss->refs++; }

static const struct pool_ops pool_ops = { .prepare = pool_prepare, .ref = session_ref, .unref = session_unref };

void sessions_init(struct server *s, bool caches)
{
    s->pool =
        (struct pool_cache){ .enabled = caches, .ep = s->ep, .mounts = &s->roott.mounts, .ops = &pool_ops, .ctx = s };
    s->park = (struct park){ .enabled = caches, .ws_fd = -1 };
    s->seccache = (struct seccache){ .enabled = caches };
    s->helpers.ep = s->ep;
    idmap_init(&s->idmap, caches, &s->helpers);
}

/* Top the session's pool up: one prepared sandbox more than it has
 * commands running.  A session overlay is mounted by each sandbox on the
 * same upper directory; overlayfs does not allow two mounts of one upper
 * at once ("upperdir is in-use"), so such a session keeps none prepared. */
static void session_fill(struct server *s, struct session *ss)
{
    if (ss->overlay_dir || s->stopping || ss->closed)
        return;
    pool_fill(&s->pool, &ss->pool, ss, ss->running + 1, ss->id);
}

int sandbox_acquire(struct server *s, struct session *ss, struct sandbox_slot *slot, bool *ready, struct mini_err *e)
{
    /* The signature is kept for the sandboxes the same exec prepares next
     * (slot_sig). */
    uint64_t reads = roott_reads(&s->roott);
    ss->memo.sig = roott_sig(&s->roott, &ss->tree, ss->profile, ss->workspace, ss->image.root != NULL);
    ss->memo.set = true;
    if (roott_reads(&s->roott) != reads)
        log_debug("session %s: the mount table was read for this command", ss->id);
    struct pooled *p = pool_take(&s->pool, &ss->pool, ss->memo.sig);
    if (p) {
        *slot = p->slot;
        *ready = p->ready;
        pool_bury(&s->pool, p);
        return 1;
    }
    *ready = false;
    return slot_prepare(s, ss, slot, e) < 0 ? -1 : 0;
}

/* Commands side by side, or back to back: replace what this one took now
 * that its launch is out, while it runs, so that the next one finds a
 * sandbox prepared, or one well on its way.  A command on its own, after a
 * pause (an agent's), leaves that to its exit (after the reply): a
 * replacement prepared meanwhile competes with it for the CPU and for the
 * kernel's locks (mount and cgroup creation), and would only have been
 * ready sooner than needed.  docs/sandbox-lifecycle.md has the figures. */
void session_launched(struct server *s, struct session *ss, bool last, int64_t start_ns)
{
    if (!last && (ss->running > 1 || pool_back_to_back(&ss->pool, start_ns)))
        session_fill(s, ss);
}

/* The replacement is prepared now that the reply is out, unless it was
 * while the command ran, or the client said it sends no more (exec.last). */
void session_finished(struct server *s, struct session *ss, bool last)
{
    ss->pool.last_exit_ns = mini_mono_ns();
    if (!last)
        session_fill(s, ss);
}

void session_pool_event(struct server *s, struct pooled *p, bool exited)
{
    struct session *ss = p->closing ? NULL : p->ss; /* a closing one's may be freed */
    bool replace = pool_event(&s->pool, p, exited);
    if (!ss)
        return;
    if (replace)
        session_fill(s, ss);
    if (ss == park_session(&s->park) && pool_empty(&ss->pool))
        session_unpark(s);
}

void sessions_hash_mounts(struct server *s)
{
    roott_settled(&s->roott);
    int n = 0;
    for (struct client *c = s->conns.clients; c; c = c->next)
        for (struct session *ss = c->sessions; ss; ss = ss->next)
            if (!pool_empty(&ss->pool)) {
                roott_hash_mounts(&s->roott, &ss->tree, ss->profile, ss->workspace, ss->image.root != NULL);
                n++;
            }
    struct session *pk = park_session(&s->park);
    if (pk && !pool_empty(&pk->pool)) {
        roott_hash_mounts(&s->roott, &pk->tree, pk->profile, pk->workspace, pk->image.root != NULL);
        n++;
    }
    if (n)
        log_debug("the mount table changed: hashed for %d session%s ahead of their commands", n, n == 1 ? "" : "s");
}

int64_t sessions_preparing(const struct server *s)
{
    int64_t n = 0;
    for (const struct client *k = s->conns.clients; k; k = k->next)
        for (const struct session *ss = k->sessions; ss; ss = ss->next)
            n += pool_preparing(&ss->pool);
    /* A parked session's sandbox too. */
    const struct session *pk = park_session(&s->park);
    return n + (pk ? pool_preparing(&pk->pool) : 0);
}

int64_t sessions_held_ahead(const struct server *s)
{
    /* The id map made ahead, and the uid blocks claimed (their locks are
     * held for the daemon's life). */
    int64_t n = idmap_held(&s->idmap);
    for (unsigned b = 0; s->uids.lock && b < s->uids.n_blocks; b++)
        n += s->uids.lock[b] >= 0;
    const struct session *pk = park_session(&s->park);
    if (!pk)
        return n;
    int own[] = { pk->ws_fd, pk->ids.idmap_userns, pk->disk.n > 0 ? pk->disk.fd[0] : -1,
                  pk->disk.n > 1 ? pk->disk.fd[1] : -1 };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(own); i++)
        n += own[i] >= 0;
    return n + pool_fds(&pk->pool);
}

/* ------------------------------------------------------ parked session */

void session_unpark(struct server *s)
{
    struct session *pk = park_take(&s->park);
    if (!pk)
        return;
    pool_retire(&s->pool, &pk->pool, 0);
    session_unref(pk);
}

int session_park_timeout(struct server *s)
{
    int t = park_timeout(&s->park);
    if (t != 0)
        return t;
    log_debug("session %s: no open came for its prepared sandbox", park_session(&s->park)->id);
    session_unpark(s);
    return -1;
}

/* Park a closing session (its client's reference becomes the park's) with
 * one prepared sandbox: only one whose last command said exec.last, with
 * no overlay, image or network allowlist, whose pool has not failed; not
 * in a private daemon (--inherit-fd, one client: it exits when its client
 * goes).  false: it closes as any other. */
static bool session_park(struct server *s, struct session *ss)
{
    if (!s->park.enabled || !ss->park || ss->running || ss->pool.failed || s->stopping || s->cfg->inherit_fd >= 0 ||
        ss->overlay_dir || ss->image.root || ss->profile->network == MINI_NET_ALLOW)
        return false;
    char *key = park_key(ss->profile);
    if (!key)
        return false;
    pool_retire(&s->pool, &ss->pool, 1);
    session_fill(s, ss);
    if (pool_empty(&ss->pool)) {
        free(key);
        return false;
    }
    session_unpark(s);
    ss->closed = true;
    park_put(&s->park, ss, key, ss->workspace, ss->ws_fd, ss->ids.owner_uid, ss->ids.owner_gid);
    return true;
}

/* An open like the parked session takes it over (park_matches; no image).
 * The new session gets its ids (uid slot, id mapping), its prepared
 * sandbox and its template, which were made for exactly these; false:
 * nothing taken. */
static bool session_claim(struct server *s, struct session *ss, const struct mini_req_open *o)
{
    struct session *pk = park_session(&s->park);
    /* refs 1: its commands are reaped, so that nothing of the earlier
     * session runs as the uid the new one takes. */
    if (!pk || pk->refs != 1 || o->image || ss->profile->image ||
        !park_matches(&s->park, ss->workspace, ss->ws_fd, ss->profile))
        return false;
    park_take(&s->park);
    ss->ids.owner_uid = pk->ids.owner_uid;
    ss->ids.owner_gid = pk->ids.owner_gid;
    ss->ids.host_uid = pk->ids.host_uid;
    ss->ids.host_gid = pk->ids.host_gid;
    ss->ids.uid_slot = pk->ids.uid_slot;
    ss->ids.uids = pk->ids.uids;
    ss->ids.idmap_userns = pk->ids.idmap_userns;
    ss->ids.idmap = pk->ids.idmap;
    pk->ids.uid_slot = -1;
    pk->ids.uids = NULL;
    pk->ids.idmap_userns = -1;
    pool_move(&ss->pool, ss, ss->id, &pk->pool);
    roott_tree_move(&ss->tree, &pk->tree);
    log_debug("an open of %s takes session %s's prepared sandbox", ss->workspace, pk->id);
    session_unref(pk);
    return true;
}

/* After an open's reply, off its path: make the mapping the next session
 * of the same owner will need (the range hands its slots out in turn).  A
 * private daemon (--inherit-fd) serves one client, which has just opened
 * its session: the next open is unlikely, and the fork would hold up that
 * client's first command. */
static void session_idmap_ahead(struct server *s, const struct session *ss)
{
    if (s->cfg->inherit_fd >= 0)
        return;
    int slot = ss->ids.idmap && ss->ids.uids ? mini_uid_range_peek(ss->ids.uids) : -1;
    if (slot < 0)
        return;
    idmap_ahead(&s->idmap, ss->ids.owner_uid, s->uids.uid_base + (uid_t)slot, ss->ids.owner_gid,
                s->uids.gid_base + (gid_t)slot);
}

/* ---------------------------------------------------------------- open */

/* What the steps of an open share. */
struct opening {
    struct server *s;
    struct session *ss;
    const struct mini_req_open *o;
};

static int open_profile(struct opening *op, struct mini_err *e)
{
    struct session *ss = op->ss;
    const struct mini_req_open *o = op->o;
    if (o->profile_data)
        ss->profile = mini_profile_from_json(o->profile_data, "profile_data", e);
    else
        ss->profile = mini_profile_load_builtin(op->s->cfg->profile_dir, o->profile ? o->profile : "standard", e);
    if (!ss->profile)
        return -1;
    if (o->overrides && mini_profile_apply_overrides(ss->profile, o->overrides, e) < 0)
        return -1;
    MINI_SB_MARK(&ss->t_open, profile);
    return 0;
}

static int open_network(struct opening *op, struct mini_err *e)
{
    if (mini_profile_allow_hosts(op->ss->profile, op->o->allow_hosts, op->o->n_allow_hosts, e) < 0)
        return -1;
    return session_net_open(op->ss, e);
}

/* What this machine can give the profile: full, degraded (said in every
 * reply) or refused with the reason and the remedy. */
static int open_assess(struct opening *op, struct mini_err *e)
{
    mini_caps_assess(&op->s->host.caps, op->ss->profile, &op->ss->assess);
    return mini_assessment_check(&op->ss->assess, op->ss->profile->name, e);
}

/* Not compiled yet when the policy is new: open_finish compiles it while
 * the session's first sandbox is being prepared. */
static int open_seccomp(struct opening *op, struct mini_err *e)
{
    struct session *ss = op->ss;
    if (!(ss->bpf_entry = seccache_get(&op->s->seccache, ss->profile)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    ss->bpf = seccache_program(ss->bpf_entry);
    return 0;
}

static int open_workspace(struct opening *op, struct mini_err *e)
{
    return mini_ws_open(op->o->workspace, &op->ss->workspace, &op->ss->ws_fd, e);
}

static int open_secrets(struct opening *op, struct mini_err *e) { return session_hide_secrets(op->s, op->ss, e); }

static int open_workspace_check(struct opening *op, struct mini_err *e)
{
    return mini_ws_check(&op->s->guard, op->ss->profile, op->ss->workspace, op->ss->ws_fd, e);
}

/* A parked session's, when this open is like it; else its own. */
static int open_ids(struct opening *op, struct mini_err *e)
{
    if (session_claim(op->s, op->ss, op->o))
        return 0;
    return session_ids(op->s, op->ss, e);
}

static int open_image(struct opening *op, struct mini_err *e)
{
    const struct mini_req_open *o = op->o;
    const char *image = o->image ? o->image : op->ss->profile->image;
    if (o->user && !image)
        return mini_err_set(e, MINI_E_BAD_REQUEST, "open.user is for an image's root (open.image); there is none");
    if (image && session_image(op->s, op->ss, image, o->user, e) < 0)
        return -1;
    MINI_SB_MARK(&op->ss->t_open, ids);
    return 0;
}

static int open_name(struct opening *op, struct mini_err *e)
{
    (void)e;
    snprintf(op->ss->id, sizeof op->ss->id, "s%llu", (unsigned long long)++op->s->next_session);
    return 0;
}

/* The directories of the session's writable overlay on the profile's
 * binds (statedir.h), owned by the sandbox's host ids.  Removed with the
 * session. */
static int open_overlay(struct opening *op, struct mini_err *e)
{
    struct session *ss = op->ss;
    if (!ss->profile->overlay_root || !(ss->assess.features & MINI_FEAT_OVERLAY))
        return 0;
    return statedir_overlay(&op->s->statedir, ss->id, ss->ids.host_uid, ss->ids.host_gid, &ss->overlay_dir, e);
}

static int open_env(struct opening *op, struct mini_err *e)
{
    const struct mini_req_open *o = op->o;
    for (size_t i = 0; i < o->env.n; i++)
        if (mini_env_add(&op->ss->env, o->env.keys[i], o->env.values[i]) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

/* An open, step by step, up to the disk watch's measure (disk_open) and
 * the reply (open_finish).  A step that fails ends the open with its error
 * (the daemon's debug log names the step). */
static const struct open_step {
    const char *name;
    int (*run)(struct opening *op, struct mini_err *e);
} open_steps[] = {
    { "the profile", open_profile },
    { "the network allowlist", open_network },
    { "what the machine gives the profile", open_assess },
    { "the seccomp program", open_seccomp },
    { "the workspace", open_workspace },
    { "the hidden secrets", open_secrets },
    { "the workspace's checks", open_workspace_check },
    { "the ids", open_ids },
    { "the image", open_image },
    { "the session's id", open_name },
    { "the overlay", open_overlay },
    { "the environment", open_env },
};

static int open_busy(const struct server *s, const struct client *c, struct mini_err *e)
{
    if (c->n_sessions < MAX_SESSIONS_PER_CLIENT && s->n_sessions < MAX_SESSIONS)
        return 0;
    return mini_err_set(
        e, MINI_E_BUSY, "%s",
        c->n_sessions >= MAX_SESSIONS_PER_CLIENT
            ? "this connection has " MINI_STR(MAX_SESSIONS_PER_CLIENT) " sessions open, the most it may; close one"
            : "the daemon has " MINI_STR(MAX_SESSIONS) " sessions open, the most it serves; try again later");
}

void do_open(struct server *s, struct client *c, const struct mini_req *req)
{
    const struct mini_req_open *o = &req->u.open;
    struct mini_err e;
    mini_err_clear(&e);
    if (open_busy(s, c, &e) < 0) {
        send_error(s, c, req->id, &e);
        return;
    }
    struct opening op = { .s = s, .ss = session_new(), .o = o };
    struct session *ss = op.ss;
    if (!ss) {
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    MINI_SB_MARK(&ss->t_open, start);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(open_steps); i++)
        if (open_steps[i].run(&op, &e) < 0) {
            log_debug("open of %s: %s failed: %s", o->workspace ? o->workspace : "(no workspace)", open_steps[i].name,
                      e.msg);
            goto fail;
        }
    /* It counts from here, also while the disk watch measures it. */
    c->n_sessions++;
    s->n_sessions++;
    int d = disk_open(s, c, ss, req->id, &e);
    if (d == 0)
        open_finish(s, c, ss, req->id);
    if (d >= 0)
        return;
    c->n_sessions--;
    s->n_sessions--;
fail:
    if (e.code == MINI_E_PROFILE_INVALID && o->profile && !o->profile_data)
        mini_err_prefix(&e, "profile %s", o->profile);
    send_error(s, c, req->id, &e);
    session_drop(s, ss);
}

void open_finish(struct server *s, struct client *c, struct session *ss, int64_t req_id)
{
    ss->next = c->sessions;
    c->sessions = ss;
    /* The first session of a seccomp policy: its first sandbox is cloned
     * before the program is compiled, which the daemon does while the
     * sandbox makes its namespaces and root (the child takes the program
     * last), so that the compile is off the first command's path.  The
     * reply still waits for it: a policy that does not compile fails the
     * open, as before. */
    if (!ss->bpf) {
        struct mini_err e;
        session_fill(s, ss);
        MINI_SB_MARK(&ss->t_open, cloned);
        if (!(ss->bpf = seccache_compile(ss->bpf_entry, ss->profile, &e))) {
            if (e.code == MINI_E_PROFILE_INVALID)
                mini_err_prefix(&e, "profile %s", ss->profile->name);
            else /* the daemon's failure, not the client's: the operator's to see */
                log_warn("session %s: %s", ss->id, e.msg);
            send_error(s, c, req_id, &e);
            session_close(s, c, ss, MINI_LIMIT_CANCELLED);
            return;
        }
        pool_send_seccomp(&s->pool, &ss->pool, ss->bpf, ss->id);
        MINI_SB_MARK(&ss->t_open, compiled);
    }

    struct mini_rep rep = { .op = MINI_OP_OPENED, .id = req_id };
    /* The summary, then what is missing and what stands in for it. */
    char *notes[MINI_ASSESS_MAX_ITEMS + 2] = { NULL };
    char items[MINI_ASSESS_MAX_ITEMS][300];
    size_t nn = 0;
    notes[nn++] = ss->assess.summary;
    for (size_t i = 0; i < ss->assess.n_items && nn < MINI_ASSESS_MAX_ITEMS; i++) {
        snprintf(items[i], sizeof items[i], "%s: %s", ss->assess.items[i].feature, ss->assess.items[i].replacement);
        notes[nn++] = items[i];
    }
    rep.u.opened.session = ss->id;
    rep.u.opened.profile = ss->profile->name;
    rep.u.opened.isolation = isolation_json(s, ss);
    rep.u.opened.notes = notes;
    rep.u.opened.n_notes = nn;
    send_rep(s, c, &rep);
    cJSON_Delete(rep.u.opened.isolation);
    log_info("session %s: profile %s, workspace %s", ss->id, ss->profile->name, ss->workspace);
    if (mini_sb_timing) {
        /* With the program cached, the first sandbox is cloned after the reply. */
        const struct open_times *t = &ss->t_open;
        int64_t sent = mini_mono_ns();
        char first[96] = "the seccomp program cached";
        if (t->compiled)
            snprintf(first, sizeof first, "the first sandbox cloned %.3f, the seccomp program compiled %.3f",
                     span_ms(t->ids, t->cloned), span_ms(t->cloned, t->compiled));
        log_info("timing: open %s: %.3f ms to the reply [profile %.3f, workspace and ids %.3f, %s, the rest %.3f]",
                 ss->id, span_ms(t->start, sent), span_ms(t->start, t->profile), span_ms(t->profile, t->ids), first,
                 span_ms(t->compiled ? t->compiled : t->ids, sent));
    }
    session_fill(s, ss);
    session_idmap_ahead(s, ss);
    mini_close(ss->ids.probe_mount);
    ss->ids.probe_mount = -1;
}

void session_close(struct server *s, struct client *c, struct session *ss, enum mini_limit why)
{
    for (struct session **pp = &c->sessions; *pp; pp = &(*pp)->next)
        if (*pp == ss) {
            *pp = ss->next;
            break;
        }
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->session == ss)
            exec_kill(x, why);
    c->n_sessions--;
    s->n_sessions--;
    if (session_park(s, ss))
        return;
    ss->closed = true;
    pool_retire(&s->pool, &ss->pool, 0);
    session_unref(ss);
}

void do_close(struct server *s, struct client *c, const struct mini_req *req)
{
    struct session *ss = session_find(c, req->u.close.session);
    if (!ss) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_NO_SUCH_SESSION, "no session \"%s\" on this connection", req->u.close.session);
        send_error(s, c, req->id, &e);
        return;
    }
    /* Its prepared sandboxes are killed, not waited for (pool_retire). */
    session_close(s, c, ss, MINI_LIMIT_CANCELLED);
    send_ok(s, c, req->id);
}
