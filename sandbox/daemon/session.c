/* Sessions: a profile, a workspace and the ids its sandboxes run as,
 * opened by `open` and closed by `close` or the connection's end; and each
 * session's pool of prepared sandboxes (docs/sandbox-lifecycle.md). */
#include "daemon.h"
#include "rootfs.h"
#include "landlock.h"
#include "seccomp_prog.h"
#include "image.h"
#include "mini/cleanup.h"
#include "mini/hash.h"
#include "mini/io.h"
#include "mini/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- sessions */

static void bpf_entry_put(struct bpf_cache *c);

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
    bpf_entry_put(ss->bpf_entry);
    mini_profile_free(ss->profile);
    free(ss->workspace);
    mini_close(ss->ws_fd);
    mini_close(ss->idmap_userns);
    mini_close(ss->probe_mount);
    mini_close(ss->template_fd);
    if (ss->uids)
        mini_uid_range_put(ss->uids, ss->uid_slot);
    if (ss->uids && ss->root_slot >= 0)
        mini_uid_range_put(ss->uids, ss->root_slot);
    mini_env_free(&ss->env);
    free(ss->image_root);
    free(ss->image_workdir);
    mini_env_free(&ss->image_env);
    mini_close(ss->image_userns);
    mini_close(ss->image_hold);
    free(ss);
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
    if (!id || !mini_digest_valid(id) || (ss->image_hold = mini_image_hold(&st, id, e)) < 0) {
        mini_image_store_close(&st);
        return id ? -1 : mini_err_set(e, MINI_E_INTERNAL, "image %s: no id in its record", ref);
    }
    mini_image_store_close(&st);
    if (!root || !(ss->image_root = strdup(root)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "config"), "config");
    const char *wd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "WorkingDir"));
    if (wd && wd[0] == '/' && strlen(wd) < 4096 && !strstr(wd, "..") && !(ss->image_workdir = strdup(wd)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *v;
    cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(cfg, "Env")) {
        const char *kv = cJSON_GetStringValue(v), *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv)
            continue;
        char *name = strndup(kv, (size_t)(eq - kv));
        int r = name ? mini_env_add(&ss->image_env, name, eq + 1) : -1;
        free(name);
        if (r < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    /* The config's User (or open.user) is who the commands run as: the
     * sandbox's mapped ids become the image user's (docs/images.md). */
    struct mini_image_user u;
    if (mini_image_user_resolve(ss->image_root,
                                user ? user : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cfg, "User")), &u,
                                e) < 0)
        return mini_err_prefix(e, "image %s", ref);
    ss->inner_uid = u.uid;
    ss->inner_gid = u.gid;
    if (geteuid() != 0)
        return 0;
    /* A root daemon's store keeps the image's owners: through an idmapped
     * mount its user's files become the sandbox's, and, when that user is
     * not root, root's become those of a second uid of the session's own,
     * mapped as 0 inside (which nothing there runs as), so that they stay
     * root's and the overlay can copy them up. */
    unsigned long up[2][2] = { { u.uid, ss->host_uid } }, gp[2][2] = { { u.gid, ss->host_gid } };
    size_t nu = 1, ng = 1;
    if (u.uid != 0 || u.gid != 0) {
        if (!ss->uids)
            ss->uids = &s->uids;
        if ((ss->root_slot = mini_uid_range_take(&s->uids, e)) < 0)
            return -1;
        ss->root_host_uid = s->uids.uid_base + (uid_t)ss->root_slot;
        ss->root_host_gid = s->uids.gid_base + (gid_t)ss->root_slot;
        if (u.uid != 0)
            up[nu][0] = 0, up[nu++][1] = (unsigned long)ss->root_host_uid;
        if (u.gid != 0)
            gp[ng][0] = 0, gp[ng++][1] = (unsigned long)ss->root_host_gid;
    }
    ss->image_userns =
        mini_idmap_userns_pairs((const unsigned long(*)[2])up, nu, (const unsigned long(*)[2])gp, ng, NULL, e);
    return ss->image_userns < 0 ? -1 : 0;
}

struct session *session_find(struct client *c, const char *id)
{
    for (struct session *ss = c->sessions; ss; ss = ss->next)
        if (strcmp(ss->id, id) == 0)
            return ss;
    return NULL;
}

/* Seccomp programs, compiled once per distinct policy (a profile's
 * seccomp section as canonical JSON).  Each open session holds its
 * policy's entry; of the entries no session holds, the most recently used
 * BPF_CACHE_IDLE_MAX are kept, so that clients sending ever new policies
 * (profile_data) cannot grow the daemon without bound. */
struct bpf_cache {
    struct bpf_cache *next;
    struct server *server; /* whose list it is on */
    char *key;
    unsigned refs; /* the sessions holding it */
    struct mini_bpf bpf;
};

static void bpf_entry_free(struct bpf_cache *c)
{
    mini_bpf_free(&c->bpf);
    free(c->key);
    free(c);
}

/* Drop the idle entries past the first BPF_CACHE_IDLE_MAX (the list is
 * most recently used first). */
static void bpf_cache_trim(struct server *s)
{
    size_t idle = 0;
    for (struct bpf_cache **pc = &s->bpf_cache; *pc;) {
        struct bpf_cache *c = *pc;
        if (c->refs || ++idle <= BPF_CACHE_IDLE_MAX) {
            pc = &c->next;
            continue;
        }
        *pc = c->next;
        bpf_entry_free(c);
    }
}

/* The cache entry of the profile's policy, held for the caller (put it
 * back with bpf_entry_put), made when there is none (its program not
 * compiled yet: bpf.len 0); NULL when out of memory.  The key is computed
 * once per open. */
static struct bpf_cache *bpf_entry(struct server *s, const struct mini_profile *p)
{
    cJSON *pj = mini_profile_to_json(p);
    char *key = pj ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pj, "seccomp")) : NULL;
    cJSON_Delete(pj);
    if (!key)
        return NULL;
    struct bpf_cache *c = NULL;
    for (struct bpf_cache **pc = &s->bpf_cache; *pc; pc = &(*pc)->next)
        if (strcmp((*pc)->key, key) == 0) {
            c = *pc;
            *pc = c->next; /* to the front, below */
            free(key);
            break;
        }
    if (!c) {
        if (!(c = calloc(1, sizeof *c))) {
            free(key);
            return NULL;
        }
        c->key = key;
        c->server = s;
    }
    c->refs++;
    c->next = s->bpf_cache;
    s->bpf_cache = c;
    bpf_cache_trim(s);
    return c;
}

/* A session lets go of its entry (the cache keeps it, while few enough
 * are idle). */
static void bpf_entry_put(struct bpf_cache *c)
{
    if (c && --c->refs == 0)
        bpf_cache_trim(c->server);
}

size_t bpf_cache_count(const struct server *s)
{
    size_t n = 0;
    for (const struct bpf_cache *c = s->bpf_cache; c; c = c->next)
        n++;
    return n;
}

/* The entry's program, compiled on first use; NULL with e filled when it
 * does not compile (the entry stays, uncompiled). */
static const struct mini_bpf *bpf_compiled(struct bpf_cache *c, const struct mini_profile *p, struct mini_err *e)
{
    if (!c->bpf.len && mini_seccomp_compile(&p->seccomp, &c->bpf, e) < 0)
        return NULL;
    return &c->bpf;
}

void bpf_cache_free(struct server *s)
{
    while (s->bpf_cache) {
        struct bpf_cache *c = s->bpf_cache;
        s->bpf_cache = c->next;
        bpf_entry_free(c);
    }
}

/* The assessment (what the commands really get), plus this session's ids
 * and workspace. */
static cJSON *isolation_json(const struct server *s, const struct session *ss)
{
    cJSON *o = mini_assessment_to_json(&ss->assess);
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "network", ss->profile->network == MINI_NET_NONE ? "none" : "host");
    cJSON_AddStringToObject(o, "limits_by", ss->assess.cgroups ? mini_cg_mode_name(s->cgroups.mode) : "rlimits");
    char map[96];
    mini_format_id_map(map, sizeof map, ss->inner_uid, ss->host_uid, ss->root_host_uid, ", ");
    cJSON_AddStringToObject(o, "uid_map", map);
    mini_format_id_map(map, sizeof map, ss->inner_gid, ss->host_gid, ss->root_host_gid, ", ");
    cJSON_AddStringToObject(o, "gid_map", map);
    snprintf(map, sizeof map, "%u:%u", (unsigned)ss->owner_uid, (unsigned)ss->owner_gid);
    cJSON_AddStringToObject(o, "files_owned_by", map);
    cJSON_AddBoolToObject(o, "own_uid", ss->uid_slot >= 0);
    cJSON_AddBoolToObject(o, "idmapped_workspace", ss->idmap);
    cJSON_AddStringToObject(o, "workspace", ss->workspace);
    cJSON_AddBoolToObject(o, "workspace_writable", ss->profile->workspace_writable);
    cJSON_AddBoolToObject(o, "session_overlay", ss->overlay_dir != NULL);
    disk_json(ss, o);
    return o;
}

/* The directories of the session's writable overlay on the profile's
 * binds: <state>/sessions/<daemon pid>-<session>/{upper,work}, reached by
 * the sandbox through an fd (the session directory is 0711), owned by the
 * sandbox's host ids.  Removed with the session. */
static int session_overlay(struct server *s, struct session *ss, struct mini_err *e)
{
    char *dir = NULL, path[4096];
    sweep_sessions(s);
    if (state_dir_ensure(s, e) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/sessions", s->cfg->state_dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
    /* This daemon's owner lock (<state>/sessions-<pid>.lock) comes before
     * its first overlay, so that a daemon starting meanwhile never takes
     * those overlays for a dead daemon's (and is made again if the state
     * dir was removed). */
    char lock[4096 + 32];
    snprintf(lock, sizeof lock, "%s/sessions-%d.lock", s->cfg->state_dir, (int)getpid());
    if (s->sessions_lock < 0 || mini_owner_lock_lost(s->sessions_lock, lock)) {
        mini_close(s->sessions_lock);
        if ((s->sessions_lock = mini_owner_lock(lock, false, e)) < 0)
            return -1;
    }
    if (asprintf(&dir, "%s/%d-%s", path, (int)getpid(), ss->id) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    ss->overlay_dir = dir;
    if (mkdir(dir, 0711) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", dir);
    static const char *const sub[] = { "upper", "work" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
        if (mkdir(path, 0700) < 0 || (geteuid() == 0 && chown(path, ss->host_uid, ss->host_gid) < 0))
            return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
    }
    return 0;
}

/* Whether the daemon with this pid, which made entries in sessions/, is
 * gone: its owner lock <state>/sessions-<pid>.lock is free (or, from a
 * daemon before these locks, its pid runs no process here), or it is this
 * daemon's own pid, which was free when it started. */
static bool sessions_owner_dead(const char *state, long pid)
{
    if (pid == getpid())
        return true;
    char lock[4096 + 32];
    snprintf(lock, sizeof lock, "%s/sessions-%ld.lock", state, pid);
    int r = mini_owner_lock_free(lock, false, NULL);
    return r >= 0 ? r == 1 : !mini_pid_running((pid_t)pid);
}

/* The Landlock path's TMPDIRs of daemons that are gone:
 * /tmp/mini-sandboxd.XXXXXX directories of ours whose owner lock is free. */
static void sweep_tmp(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));) {
        if (strncmp(de->d_name, "mini-sandboxd.", 14) != 0)
            continue;
        char dir[300];
        struct stat st;
        int fd = -1;
        snprintf(dir, sizeof dir, "/tmp/%s", de->d_name);
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            mini_owner_lock_free(dir, true, &fd) != 1)
            continue;
        struct mini_err e;
        if (mini_rm_rf(dir, &e) < 0)
            log_warn("removing a dead daemon's TMPDIRs: %s", e.msg);
        else
            log_info("removed a dead daemon's TMPDIRs %s", dir);
        close(fd);
    }
    closedir(d);
}

void sweep_sessions(struct server *s)
{
    if (!s->sweep_pending)
        return;
    s->sweep_pending = false;
    sweep_tmp();
    const char *state = s->cfg->state_dir;
    char path[4096];
    snprintf(path, sizeof path, "%s/sessions", state);
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d));) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (end == de->d_name || pid <= 0 || *end != '-' || !sessions_owner_dead(state, pid))
            continue;
        char dir[4096 + 256];
        struct mini_err e;
        snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
        if (mini_rm_rf(dir, &e) < 0)
            log_warn("removing a dead daemon's overlay: %s", e.msg);
        else
            log_info("removed a dead daemon's overlay %s", dir);
    }
    if (d)
        closedir(d);
    /* Then the locks, once nothing they covered is left. */
    if (!(d = opendir(state)))
        return;
    for (struct dirent *de; (de = readdir(d));) {
        char *end;
        if (strncmp(de->d_name, "sessions-", 9) != 0)
            continue;
        long pid = strtol(de->d_name + 9, &end, 10);
        if (end == de->d_name + 9 || pid <= 0 || strcmp(end, ".lock") != 0 || !sessions_owner_dead(state, pid))
            continue;
        char lock[4096 + 256];
        snprintf(lock, sizeof lock, "%s/%s", state, de->d_name);
        unlink(lock);
    }
    closedir(d);
}

void sessions_fini(struct server *s)
{
    if (s->sessions_lock >= 0) {
        char lock[4096 + 32];
        snprintf(lock, sizeof lock, "%s/sessions-%d.lock", s->cfg->state_dir, (int)getpid());
        if (!mini_owner_lock_lost(s->sessions_lock, lock))
            unlink(lock);
        mini_close(s->sessions_lock);
        s->sessions_lock = -1;
    }
    if (s->tmp_parent) {
        struct mini_err e;
        if (mini_rm_rf(s->tmp_parent, &e) < 0)
            log_warn("%s", e.msg);
        free(s->tmp_parent);
        s->tmp_parent = NULL;
    }
    mini_close(s->tmp_lock);
    s->tmp_lock = -1;
    mini_close(s->idmap_next.fd);
    s->idmap_next.fd = -1;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(s->holders); i++)
        if (s->holders[i].h.pid > 0)
            idmap_holder_reaped(s, &s->holders[i]);
}

int state_dir_ensure(struct server *s, struct mini_err *e)
{
    struct stat st;
    if (stat(s->root_dir, &st) == 0)
        return 0;
    const char *dir = s->cfg->state_dir;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "the state directory %s is gone and cannot be made again", dir);
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return mini_err_set(e, MINI_E_IO,
                            "the state directory %s was replaced: it must be a directory owned by "
                            "uid %u with mode 0700",
                            dir, (unsigned)geteuid());
    if (mkdir(s->root_dir, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", s->root_dir);
    log_warn("the state directory %s was removed under the daemon: made it again", dir);
    return 0;
}

/* ------------------------------------------------------ prepared pool */

static void session_spawn_cfg(const struct server *s, const struct session *ss, struct mini_spawn_cfg *cfg)
{
    *cfg = (struct mini_spawn_cfg){
        .profile = ss->profile,
        .seccomp = ss->bpf,
        .workspace = ss->workspace,
        .workspace_fd = ss->ws_fd,
        .root_dir = s->root_dir,
        .host_uid = ss->host_uid,
        .host_gid = ss->host_gid,
        .inner_uid = ss->inner_uid,
        .inner_gid = ss->inner_gid,
        .root_host_uid = ss->root_host_uid,
        .root_host_gid = ss->root_host_gid,
        .idmap_workspace = ss->idmap,
        .idmap_userns = ss->idmap_userns,
        .init_fd = s->init_fd,
        .overlay_dir = ss->overlay_dir,
        .image_root = ss->image_root,
        .image_userns = ss->image_userns,
        .namespaces = ss->assess.namespaces,
        .cgroup_memory = ss->assess.cgroups && (s->cgroups.ctrls & (1u << MINI_CGC_MEMORY)),
        .cgroup_pids = ss->assess.cgroups && (s->cgroups.ctrls & (1u << MINI_CGC_PIDS)),
        .cgroup_fd = -1,
        .template_fd = -1,
    };
}

/* The degraded path's private TMPDIR: under /tmp (every uid can reach
 * it; the daemon's state directory is private), owned by the sandbox's
 * host ids.  Landlock lets the command write there and nowhere else but
 * the workspace. */
static char *sandbox_tmpdir(struct server *s, const struct session *ss, struct mini_err *e)
{
    /* They live in one directory of this daemon's, held by its owner lock
     * (0711: each sandbox reaches its own and cannot rename or remove
     * it), so that the next daemon removes them if this one is killed. */
    if (s->tmp_lock < 0 || mini_owner_lock_lost(s->tmp_lock, s->tmp_parent)) {
        mini_close(s->tmp_lock);
        s->tmp_lock = -1;
        free(s->tmp_parent);
        if (!(s->tmp_parent = strdup("/tmp/mini-sandboxd.XXXXXX"))) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            return NULL;
        }
        if (!mkdtemp(s->tmp_parent) || chmod(s->tmp_parent, 0711) < 0) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating a directory for private TMPDIRs in /tmp");
        } else if ((s->tmp_lock = mini_owner_lock(s->tmp_parent, true, e)) < 0) {
            rmdir(s->tmp_parent);
        }
        if (s->tmp_lock < 0) {
            free(s->tmp_parent);
            s->tmp_parent = NULL;
            return NULL;
        }
    }
    char *dir = NULL;
    if (asprintf(&dir, "%s/t.XXXXXX", s->tmp_parent) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (!mkdtemp(dir)) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating a private TMPDIR in %s", s->tmp_parent);
        free(dir);
        return NULL;
    }
    if (geteuid() == 0 && chown(dir, ss->host_uid, ss->host_gid) < 0) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "chown %s", dir);
        rmdir(dir);
        free(dir);
        return NULL;
    }
    return dir;
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
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", s->init_fd);
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
    if (!ss->assess.cgroups || s->cgroups.mode == MINI_CG_NONE) {
        MINI_SB_MARK(t, cgroup);
        return 0;
    }
    char name[32];
    snprintf(name, sizeof name, "x%llu", (unsigned long long)++s->next_cgroup);
    int n = -1;
    if (mini_cgroup_create(&s->cgroups, name, &ss->profile->limits, &slot->cg, e) < 0 ||
        (n = mini_cgroup_open_procs(&slot->cg, procs->fds, e)) < 0)
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
    if (!(slot->tmpdir = sandbox_tmpdir(s, ss, e)) ||
        mini_landlock_plan(plan, ss->profile, ss->workspace, slot->tmpdir, e) < 0 ||
        landlock_allow_init(s, plan, e) < 0)
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
static uint64_t binds_mounts(struct server *s, struct session *ss)
{
    uint64_t seen = mount_watch_events(&s->mounts);
    if (ss->mounts_known && seen == ss->mounts_seen)
        return ss->mounts_hash;
    size_t nb = ss->image_root ? 0 : ss->profile->n_binds, n = nb + 1; /* an image's binds are its own */
    _cleanup_free_ const char **paths = calloc(n, sizeof *paths);
    for (size_t i = 0; paths && i < nb; i++)
        paths[i] = ss->profile->binds[i].path;
    if (paths)
        paths[nb] = ss->workspace;
    uint64_t h;
    if (!paths || mount_watch_hash(&s->mounts, paths, n, &h, &seen) < 0) {
        ss->mounts_known = false;
        return (uint64_t)mini_mono_ns();
    }
    ss->mounts_hash = h;
    ss->mounts_seen = seen;
    ss->mounts_known = true;
    return h;
}

/* What the profile's hidden paths and binds are on the host now: for
 * each, whether it exists and which file it is (lstat's device and inode),
 * and the mounts under the binds and the workspace (binds_mounts), hashed
 * (FNV-1a).  A sandbox covers what exists and copies those mounts when it
 * is prepared, and a template (session_template) when it was made; one
 * that waited in the pool (or parked) while a hidden path appeared or was
 * replaced, or a mount was made or removed under a bind or the workspace,
 * would show what was, so pool_take discards it then, and the template is
 * made again.  For an image's root, whose paths are the image's, only the
 * workspace's mounts. */
static uint64_t hidden_sig(struct server *s, struct session *ss)
{
    uint64_t h = MINI_FNV1A_INIT;
    if (ss->image_root) {
        uint64_t m = binds_mounts(s, ss); /* the workspace's mounts only */
        return mini_fnv1a(h, &m, sizeof m);
    }
    for (size_t i = 0; i < ss->profile->n_hide; i++)
        h = sig_add(h, ss->profile->hide[i]);
    for (size_t i = 0; i < ss->profile->n_binds; i++)
        h = sig_add(h, ss->profile->binds[i].path);
    uint64_t m = binds_mounts(s, ss);
    return mini_fnv1a(h, &m, sizeof m);
}

/* hidden_sig(), or the one pool_take took a moment ago in the same exec
 * (exec.c clears it before it returns): a sandbox prepared under an older
 * note is only discarded sooner, never kept longer. */
static uint64_t hidden_now(struct server *s, struct session *ss)
{
    return ss->hidden_memo_set ? ss->hidden_memo : hidden_sig(s, ss);
}

/* The session's template of the root for its next sandbox (spawn.h,
 * mini_sandbox_template), or -1: the sandbox builds all of it.  Made when
 * the session prepares its TEMPLATE_AFTER-th sandbox, so that a one-shot
 * run (one or two) never pays for it, and made again when a hidden path or
 * a bind has changed on the host since (`hidden`, taken before the build).
 * Not for the degraded path, an image, an overlay root, or a profile
 * mini_rootfs_template_fits refuses; a build that fails turns it off for
 * the session (its sandboxes build their whole root, as before). */
#define TEMPLATE_AFTER 3
static int session_template(struct server *s, struct session *ss, uint64_t hidden, const struct mini_spawn_cfg *cfg)
{
    if (ss->template_off || ss->assess.path == MINI_PATH_LANDLOCK || ss->image_root || ss->overlay_dir ||
        !(ss->assess.namespaces & MINI_FEAT_MOUNT_NS))
        return -1;
    if (ss->n_prepared < TEMPLATE_AFTER && ++ss->n_prepared < TEMPLATE_AFTER)
        return -1;
    if (ss->template_fd >= 0 && ss->template_sig == hidden && !ss->template_moved)
        return ss->template_fd;
    mini_close(ss->template_fd);
    ss->template_fd = -1;
    if (!mini_rootfs_template_fits(ss->profile)) {
        log_debug("session %s: no template of its root: a hidden path is or holds a mount of each "
                  "sandbox's own, or the profile binds / or overlays it",
                  ss->id);
        ss->template_off = true;
        return -1;
    }
    struct mini_err e;
    int64_t t0 = mini_mono_ns();
    struct idmap_holder *x = holder_slot(s);
    struct mini_idmap_holder h = { .pid = 0, .pidfd = -1, .stack = NULL };
    uint64_t gen = mount_watch_events(&s->mounts);
    int fd = mini_sandbox_template(cfg, x ? &h : NULL, &e);
    if (x)
        holder_adopt(s, x, &h);
    if (fd < 0) {
        log_warn("session %s: %s; its sandboxes build their whole root", ss->id, e.msg);
        ss->template_off = true;
        return -1;
    }
    log_debug("session %s: its root's template made in %.3f ms", ss->id, span_ms(t0, mini_mono_ns()));
    ss->template_fd = fd;
    ss->template_sig = hidden;
    /* A mount made and removed under a bind while the builder copied the
     * table would leave no trace in `hidden`: used for this sandbox (whose
     * own check at READY discards it), made again for the next. */
    ss->template_moved = mount_watch_events(&s->mounts) != gen;
    return fd;
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
    slot->hidden = hidden_now(s, ss);
    slot->mount_gen = mount_watch_events(&s->mounts);
    if (state_dir_ensure(s, e) < 0)
        return -1;
    session_spawn_cfg(s, ss, &cfg);
    cfg.template_fd = session_template(s, ss, slot->hidden, &cfg);
    bool v1 = ss->assess.cgroups && s->cgroups.mode == MINI_CG_V1;
    cfg.cgroup_v1 = v1;
    if ((!v1 && slot_cgroup(s, ss, slot, &procs, &cfg, &t, e) < 0) ||
        slot_landlock(s, ss, slot, &plan, &cfg, e) < 0 || mini_sandbox_clone(&cfg, &slot->sb, e) < 0 ||
        (v1 && slot_cgroup(s, ss, slot, &procs, &cfg, &t, e) < 0) ||
        mini_sandbox_go(&cfg, &slot->sb, procs.fds, procs.n, e) < 0 || slot_attach(slot, e) < 0) {
        slot_release(slot);
        return -1;
    }
    slot->seccomp_pending = cfg.seccomp == NULL;
    slot->sb.t.start = t.start;
    slot->sb.t.cgroup = t.cgroup;
    MINI_SB_MARK(&slot->sb.t, attach);
    return 0;
}

static void pool_unlink(struct session *ss, struct pooled *p)
{
    for (struct pooled **pp = &ss->pool; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            ss->pool_n--;
            return;
        }
}

/* Bury an entry (it may still have events in this epoll batch). */
void pool_bury(struct server *s, struct pooled *p)
{
    s->pooled_total--;
    p->dead = true;
    p->next = s->dead_pooled;
    s->dead_pooled = p;
}

static void pool_discard(struct server *s, struct pooled *p)
{
    pool_unlink(p->ss, p);
    ep_del(s, p->slot.sb.ctl);
    ep_del(s, p->slot.sb.pidfd);
    slot_release(&p->slot);
    pool_bury(s, p);
}

/* Top the session's pool up: one prepared sandbox more than it has
 * commands running.  Preparing runs in the sandbox's own process; here it
 * costs the clone and the id maps. */
void pool_fill(struct server *s, struct session *ss)
{
    /* A session overlay is mounted by each sandbox on the same upper
     * directory; overlayfs does not allow two mounts of one upper at once
     * ("upperdir is in-use"), so such a session keeps none prepared. */
    if (ss->overlay_dir || s->stopping)
        return;
    int want = ss->running + 1 < POOL_SESSION_MAX ? ss->running + 1 : POOL_SESSION_MAX;
    while (!ss->closed && !ss->pool_failed && ss->pool_n < want && s->pooled_total < POOL_TOTAL_MAX) {
        struct pooled *p = calloc(1, sizeof *p);
        if (!p)
            return;
        struct mini_err e;
        if (slot_prepare(s, ss, &p->slot, &e) < 0) {
            /* Commands of this session now spawn on demand, which reports the error. */
            log_warn("session %s: preparing a sandbox: %s", ss->id, e.msg);
            ss->pool_failed = true;
            free(p);
            return;
        }
        p->ss = ss;
        p->born_ns = mini_mono_ns();
        p->ev_ctl = (struct ev){ EV_POOL_CTL, p };
        p->ev_pid = (struct ev){ EV_POOL_PID, p };
        if (ep_add(s, p->slot.sb.ctl, EPOLLIN, &p->ev_ctl) < 0 ||
            ep_add(s, p->slot.sb.pidfd, EPOLLIN, &p->ev_pid) < 0) {
            ep_del(s, p->slot.sb.ctl);
            slot_release(&p->slot);
            free(p);
            ss->pool_failed = true;
            return;
        }
        p->next = ss->pool;
        ss->pool = p;
        ss->pool_n++;
        s->pooled_total++;
    }
}

/* The session's program to the sandboxes that were prepared before it was
 * compiled (see open_finish); one that cannot take it is discarded. */
static void pool_send_seccomp(struct server *s, struct session *ss)
{
    for (struct pooled *p = ss->pool, *next; p; p = next) {
        next = p->next;
        struct mini_err e;
        if (!p->slot.seccomp_pending)
            continue;
        if (mini_sandbox_send_seccomp(&p->slot.sb, ss->bpf, &e) < 0) {
            log_warn("session %s: %s", ss->id, e.msg);
            pool_discard(s, p);
            continue;
        }
        p->slot.seccomp_pending = false;
    }
}

/* Whether a prepared sandbox has died (killed from outside) without its
 * events having been handled yet: its control socket hung up or its pidfd
 * is readable. */
static bool pool_dead(const struct pooled *p)
{
    struct pollfd f[2] = { { .fd = p->slot.sb.ctl, .events = POLLRDHUP },
                           { .fd = p->slot.sb.pidfd, .events = POLLIN } };
    if (poll(f, 2, 0) <= 0)
        return false;
    return (f[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) || (f[1].revents & POLLIN);
}

/* A live prepared sandbox for a command, ready ones first; NULL if none.
 * Dead ones found on the way are discarded, and so are those prepared
 * before a hidden path changed (hidden_sig). */
struct pooled *pool_take(struct server *s, struct session *ss)
{
    struct pooled *best = NULL;
    /* Kept for the sandboxes the same exec prepares next (hidden_now). */
    uint64_t reads = s->mounts.reads;
    uint64_t hidden = ss->hidden_memo = hidden_sig(s, ss);
    ss->hidden_memo_set = true;
    if (s->mounts.reads != reads)
        log_debug("session %s: the mount table was read for this command", ss->id);
    for (struct pooled *p = ss->pool, *next; p; p = next) {
        next = p->next;
        /* One not READY yet may be copying the mount table as it changes
         * (see pool_event): not taken if it has changed since it was
         * prepared. */
        if (pool_dead(p) || p->slot.hidden != hidden || p->slot.mounts_moved ||
            (!p->ready && p->slot.mount_gen != s->mounts.events))
            pool_discard(s, p);
        else if (!best || (p->ready && !best->ready))
            best = p;
    }
    if (best)
        pool_unlink(ss, best);
    return best;
}

/* A prepared sandbox of a session being closed: killed now, and reaped
 * (its cgroups and tmpdir removed) when its pidfd says it has died, so
 * that neither the close's reply nor the next client waits for it.  It
 * holds a reference to its session (and so its uid slot) until then. */
static void pool_retire(struct server *s, struct pooled *p)
{
    pool_unlink(p->ss, p);
    p->ss->refs++;
    p->closing = true;
    ep_del(s, p->slot.sb.ctl);
    mini_sandbox_kill(&p->slot.sb);
    p->next = s->closing_pooled;
    s->closing_pooled = p;
}

void pool_retire_all(struct server *s, struct session *ss)
{
    while (ss->pool)
        pool_retire(s, ss->pool);
}

static void pool_reaped(struct server *s, struct pooled *p)
{
    for (struct pooled **pp = &s->closing_pooled; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    ep_del(s, p->slot.sb.pidfd);
    slot_release(&p->slot);
    struct session *ss = p->ss;
    pool_bury(s, p);
    session_unref(ss);
}

void pool_reap_closing(struct server *s)
{
    while (s->closing_pooled)
        pool_reaped(s, s->closing_pooled);
}

void pool_event(struct server *s, struct pooled *p, bool exited)
{
    if (p->closing) {
        if (exited)
            pool_reaped(s, p);
        return;
    }
    bool failed = true;
    if (!exited) {
        struct mini_ctl_msg m;
        int r = mini_sandbox_read_ctl(&p->slot.sb, &m);
        if (r == -2)
            return;
        if (r == 1 && m.type == MINI_CTL_READY) {
            p->ready = true;
            /* Its root is built: it copied the mount table somewhere since
             * it was prepared.  A change in between (one undone before the
             * next look, say) may be in it with no trace in `hidden`. */
            p->slot.mounts_moved = mount_watch_events(&s->mounts) != p->slot.mount_gen;
            p->ss->prepare_ns = mini_mono_ns() - p->born_ns;
            MINI_SB_MARK(&p->slot.sb.t, ready);
            return;
        }
        if (r == 1 && m.type == MINI_CTL_ERROR)
            log_warn("session %s: a prepared sandbox failed: %s", p->ss->id, m.text);
        else
            failed = !p->ready;
    } else {
        failed = !p->ready;
    }
    /* Preparing failed: the session's commands spawn on demand from now
     * on, which reports why.  A ready sandbox that died was killed from
     * outside (a user, the OOM killer): replace it. */
    struct session *ss = p->ss;
    if (failed)
        ss->pool_failed = true;
    pool_discard(s, p);
    if (!failed)
        pool_fill(s, ss);
    if (ss == s->parked && !ss->pool)
        park_drop(s);
}

/* Off the commands' path: once the table has been still for
 * MOUNTS_QUIET_MS after a change (pool_mounts_changed, then
 * pool_mounts_timeout), a session that has prepared sandboxes hashes it
 * (binds_mounts, one read for all of them), so that its next command
 * finds the hash made unless the table changed again since; pool_take
 * still checks.  A burst of changes (a container started) is read once,
 * after it; a table that never stays still is left to the commands, as
 * without this: a hash made ahead would be stale before it was used. */
#define MOUNTS_QUIET_MS 25
void pool_mounts_changed(struct server *s)
{
    s->mounts_due_ns = mini_mono_ns() + MOUNTS_QUIET_MS * 1000000LL;
}

int pool_mounts_timeout(const struct server *s)
{
    if (!s->mounts_due_ns)
        return -1;
    int64_t left = s->mounts_due_ns - mini_mono_ns();
    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

void pool_mounts_hash(struct server *s)
{
    s->mounts_due_ns = 0;
    int n = 0;
    for (struct client *c = s->clients; c; c = c->next)
        for (struct session *ss = c->sessions; ss; ss = ss->next)
            if (ss->pool) {
                binds_mounts(s, ss);
                n++;
            }
    if (s->parked && s->parked->pool) {
        binds_mounts(s, s->parked);
        n++;
    }
    if (n)
        log_debug("the mount table changed: hashed for %d session%s ahead of their commands", n, n == 1 ? "" : "s");
}

/* ------------------------------------------------------ parked session */

/* A one-shot client (mini-sandbox run: one command, with exec.last, then
 * gone) pays for its sandbox's preparation on its path: nothing was
 * prepared before its open.  Its session is therefore kept when it
 * closes, with one sandbox prepared after the command (never one that
 * ran anything), for PARK_MS: an open of the same workspace and profile
 * then takes the session's ids and that sandbox (park_claim).  One at
 * most; a private daemon (one client) keeps none. */
#define PARK_MS 10000

static char *park_key(const struct session *ss)
{
    cJSON *pj = mini_profile_to_json(ss->profile);
    char *key = pj ? cJSON_PrintUnformatted(pj) : NULL;
    cJSON_Delete(pj);
    return key;
}

/* The parked session, no longer parked (its reference now the caller's). */
static struct session *park_take(struct server *s)
{
    struct session *pk = s->parked;
    s->parked = NULL;
    free(s->parked_key);
    s->parked_key = NULL;
    return pk;
}

void park_drop(struct server *s)
{
    struct session *pk = park_take(s);
    if (!pk)
        return;
    pool_retire_all(s, pk);
    session_unref(pk);
}

int park_timeout(struct server *s)
{
    if (!s->parked)
        return -1;
    int64_t left = s->parked_until - mini_mono_ns();
    if (left <= 0) {
        log_debug("session %s: no open came for its prepared sandbox", s->parked->id);
        park_drop(s);
        return -1;
    }
    return (int)(left / 1000000 + 1);
}

/* Keep a closing session (its client's reference becomes the park's)
 * with one prepared sandbox; false: it closes as any other. */
static bool park_close(struct server *s, struct session *ss)
{
    if (!ss->park || ss->running || ss->pool_failed || s->stopping || s->cfg->inherit_fd >= 0 || ss->overlay_dir ||
        ss->image_root || ss->profile->network == MINI_NET_ALLOW)
        return false;
    char *key = park_key(ss);
    if (!key)
        return false;
    while (ss->pool && ss->pool->next)
        pool_retire(s, ss->pool);
    pool_fill(s, ss);
    if (!ss->pool) {
        free(key);
        return false;
    }
    park_drop(s);
    ss->closed = true;
    s->parked = ss;
    s->parked_key = key;
    s->parked_until = mini_mono_ns() + (int64_t)PARK_MS * 1000000;
    return true;
}

/* fd b is the directory a is, on the same mount; *owner: b's owner. */
static bool same_dir_fd(int a, int b, uid_t *owner)
{
    struct statx x, y;
    unsigned want = STATX_INO | STATX_UID | STATX_MNT_ID;
    if (statx(a, "", AT_EMPTY_PATH, want, &x) < 0 || statx(b, "", AT_EMPTY_PATH, want, &y) < 0 ||
        (x.stx_mask & want) != want || (y.stx_mask & want) != want)
        return false;
    *owner = y.stx_uid;
    return x.stx_dev_major == y.stx_dev_major && x.stx_dev_minor == y.stx_dev_minor && x.stx_ino == y.stx_ino &&
        x.stx_mnt_id == y.stx_mnt_id;
}

/* An open like the parked session takes it over: the same workspace
 * (path, directory, mount and owner), the same profile after all that
 * open does to it (overrides, hidden secrets), no image.  The new session
 * gets its ids (uid slot, id mapping) and its prepared sandbox, which
 * was made for exactly these; false: nothing taken. */
static bool park_claim(struct server *s, struct session *ss, const struct mini_req_open *o)
{
    struct session *pk = s->parked;
    uid_t owner;
    /* refs 1: its commands are reaped, so that nothing of the earlier
     * session runs as the uid the new one takes. */
    if (!pk || pk->refs != 1 || o->image || ss->profile->image || strcmp(pk->workspace, ss->workspace) != 0 ||
        !same_dir_fd(pk->ws_fd, ss->ws_fd, &owner))
        return false;
    /* The ids session_ids would give now: the directory may have changed
     * hands since. */
    if (geteuid() == 0 && (owner != pk->owner_uid || mini_ws_owner_group(owner) != pk->owner_gid))
        return false;
    _cleanup_free_ char *key = park_key(ss);
    if (!key || strcmp(key, s->parked_key) != 0)
        return false;
    park_take(s);
    ss->owner_uid = pk->owner_uid;
    ss->owner_gid = pk->owner_gid;
    ss->host_uid = pk->host_uid;
    ss->host_gid = pk->host_gid;
    ss->uid_slot = pk->uid_slot;
    ss->uids = pk->uids;
    ss->idmap_userns = pk->idmap_userns;
    ss->idmap = pk->idmap;
    pk->uid_slot = -1;
    pk->uids = NULL;
    pk->idmap_userns = -1;
    for (struct pooled *p = pk->pool; p; p = p->next)
        p->ss = ss;
    ss->pool = pk->pool;
    ss->pool_n = pk->pool_n;
    pk->pool = NULL;
    pk->pool_n = 0;
    /* Its template too: made for the same workspace, profile and ids. */
    ss->template_fd = pk->template_fd;
    ss->template_sig = pk->template_sig;
    ss->template_off = pk->template_off;
    ss->template_moved = pk->template_moved;
    ss->n_prepared = pk->n_prepared;
    ss->mounts_hash = pk->mounts_hash;
    ss->mounts_seen = pk->mounts_seen;
    ss->mounts_known = pk->mounts_known;
    pk->template_fd = -1;
    log_debug("an open of %s takes session %s's prepared sandbox", ss->workspace, pk->id);
    session_unref(pk);
    return true;
}

static int64_t fds_held(const int *fds, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += fds[i] >= 0;
    return k;
}

int64_t held_ahead(const struct server *s)
{
    /* The id map made ahead, and the uid blocks claimed (their locks are
     * held for the daemon's life). */
    int64_t n = s->idmap_next.fd >= 0;
    for (unsigned b = 0; s->uids.lock && b < s->uids.n_blocks; b++)
        n += s->uids.lock[b] >= 0;
    const struct session *pk = s->parked;
    if (!pk)
        return n;
    int own[] = { pk->ws_fd, pk->idmap_userns, pk->disk.n > 0 ? pk->disk.fd[0] : -1,
                  pk->disk.n > 1 ? pk->disk.fd[1] : -1 };
    n += fds_held(own, MINI_ARRAY_SIZE(own));
    for (const struct pooled *p = pk->pool; p; p = p->next) {
        const struct mini_sandbox *sb = &p->slot.sb;
        int fds[] = { sb->pidfd, sb->ctl, sb->out, sb->in, sb->listen_fd, p->slot.cg.fd };
        n += fds_held(fds, MINI_ARRAY_SIZE(fds));
    }
    return n;
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

/* A free slot for a short-lived helper (an id-mapping namespace's
 * holder, a template's builder) that the loop reaps (EV_HOLDER) rather
 * than the caller waiting for it to be scheduled and exit; NULL: none
 * free, the caller waits. */
struct idmap_holder *holder_slot(struct server *s)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(s->holders); i++)
        if (s->holders[i].h.pid == 0)
            return &s->holders[i];
    return NULL;
}

/* Hand the helper h to the loop, in slot x (from holder_slot). */
void holder_adopt(struct server *s, struct idmap_holder *x, const struct mini_idmap_holder *h)
{
    if (h->pid <= 0)
        return;
    x->h = *h;
    x->ev = (struct ev){ EV_HOLDER, x };
    if (ep_add(s, h->pidfd, EPOLLIN, &x->ev) < 0)
        mini_idmap_holder_reap(&x->h);
}

static int idmap_make(struct server *s, uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_err *e)
{
    struct idmap_holder *x = holder_slot(s);
    struct mini_idmap_holder h = { .pid = 0, .pidfd = -1, .stack = NULL };
    int fd = mini_idmap_userns(from, to, gfrom, gto, x ? &h : NULL, e);
    if (fd >= 0 && x)
        holder_adopt(s, x, &h);
    return fd;
}

void idmap_holder_reaped(struct server *s, struct idmap_holder *x)
{
    ep_del(s, x->h.pidfd);
    mini_idmap_holder_reap(&x->h);
}

/* Whether the namespace made ahead is this mapping. */
static bool idmap_next_is(const struct server *s, uid_t from, uid_t to, gid_t gfrom, gid_t gto)
{
    return s->idmap_next.fd >= 0 && s->idmap_next.from == from && s->idmap_next.to == to &&
           s->idmap_next.gfrom == gfrom && s->idmap_next.gto == gto;
}

/* A user namespace mapping uid from to to and gid gfrom to gto, for an
 * idmapped workspace: the one made ahead (idmap_ahead) when it is that,
 * else a new one. */
static int idmap_userns(struct server *s, uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_err *e)
{
    if (idmap_next_is(s, from, to, gfrom, gto)) {
        int fd = s->idmap_next.fd;
        s->idmap_next.fd = -1;
        return fd;
    }
    return idmap_make(s, from, to, gfrom, gto, e);
}

/* After an open's reply, off its path: make the mapping the next session
 * of the same owner will need (the range hands its slots out in turn).
 * Such a namespace holds no process and nothing but the mapping; one that
 * is not taken is replaced by the next. */
static void idmap_ahead(struct server *s, const struct session *ss)
{
    /* A private daemon (--inherit-fd) serves one client, which has just
     * opened its session: the next open is unlikely, and the fork would
     * hold up that client's first command. */
    if (s->cfg->inherit_fd >= 0)
        return;
    int slot = ss->idmap && ss->uids ? mini_uid_range_peek(ss->uids) : -1;
    if (slot < 0)
        return;
    uid_t to = s->uids.uid_base + (uid_t)slot;
    gid_t gto = s->uids.gid_base + (gid_t)slot;
    if (idmap_next_is(s, ss->owner_uid, to, ss->owner_gid, gto))
        return;
    struct mini_err e;
    int fd = idmap_make(s, ss->owner_uid, to, ss->owner_gid, gto, &e);
    mini_close(s->idmap_next.fd);
    s->idmap_next.fd = fd;
    s->idmap_next.from = ss->owner_uid;
    s->idmap_next.to = to;
    s->idmap_next.gfrom = ss->owner_gid;
    s->idmap_next.gto = gto;
}

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
        ss->host_uid = ss->owner_uid = geteuid();
        ss->host_gid = ss->owner_gid = getegid();
        return 0;
    }
    if (st.st_uid == 0 && ss->assess.path == MINI_PATH_LANDLOCK)
        return refuse_root_owned(ss, "without user namespaces (the Landlock path)", e);
    ss->owner_uid = ss->host_uid = st.st_uid;
    ss->owner_gid = ss->host_gid = mini_ws_owner_group(st.st_uid);
    if (ss->assess.path == MINI_PATH_LANDLOCK)
        return 0;
    int slot = mini_uid_range_take(&s->uids, e);
    if (slot < 0)
        return -1;
    ss->uid_slot = slot;
    ss->uids = &s->uids;
    uid_t uid = s->uids.uid_base + (uid_t)slot;
    gid_t gid = s->uids.gid_base + (gid_t)slot;
    if ((ss->idmap_userns = idmap_userns(s, ss->owner_uid, uid, ss->owner_gid, gid, e)) < 0)
        return -1;
    bool known = false;
    for (size_t i = 0; i < s->n_idmap_ok; i++)
        known = known || s->idmap_ok[i] == st.st_dev;
    if (!known) {
        /* Whether this filesystem can be idmapped at all: try it here, once
         * per filesystem (a later failure is the sandbox's spawn error). */
        int probe = open_tree(ss->ws_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ss->idmap_userns };
        int r = probe < 0 ? -1 : mount_setattr(probe, "", AT_EMPTY_PATH, &attr, sizeof attr);
        int err = errno;
        ss->probe_mount = probe;
        if (r < 0 && (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS) && ss->owner_uid == 0)
            return refuse_root_owned(ss, "on a filesystem that cannot be idmapped", e);
        if (r < 0 && (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS)) {
            log_warn("workspace %s: its filesystem cannot be idmapped (%s): the sandbox runs as its owner, uid %u",
                     ss->workspace, strerror(err), (unsigned)ss->owner_uid);
            mini_close(ss->idmap_userns);
            ss->idmap_userns = -1;
            mini_uid_range_put(&s->uids, slot);
            ss->uid_slot = -1;
            ss->uids = NULL;
            return 0;
        }
        if (r < 0)
            return mini_err_sys(e, MINI_E_SPAWN_FAILED, err, "idmapping the workspace %s", ss->workspace);
        if (s->n_idmap_ok < sizeof s->idmap_ok / sizeof s->idmap_ok[0])
            s->idmap_ok[s->n_idmap_ok++] = st.st_dev;
    }
    ss->host_uid = uid;
    ss->host_gid = gid;
    ss->idmap = true;
    return 0;
}

void do_open(struct server *s, struct client *c, const struct mini_req *req)
{
    const struct mini_req_open *o = &req->u.open;
    struct mini_err e;
    mini_err_clear(&e);
    if (c->n_sessions >= MAX_SESSIONS_PER_CLIENT || s->n_sessions >= MAX_SESSIONS) {
        mini_err_set(
            &e, MINI_E_BUSY, "%s",
            c->n_sessions >= MAX_SESSIONS_PER_CLIENT
                ? "this connection has " MINI_STR(MAX_SESSIONS_PER_CLIENT) " sessions open, the most it may; close one"
                : "the daemon has " MINI_STR(MAX_SESSIONS) " sessions open, the most it serves; try again later");
        send_error(s, c, req->id, &e);
        return;
    }
    struct session *ss = calloc(1, sizeof *ss);
    if (!ss) {
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    ss->ws_fd = -1;
    ss->idmap_userns = -1;
    ss->probe_mount = -1;
    ss->template_fd = -1;
    ss->image_userns = -1;
    ss->image_hold = -1;
    ss->uid_slot = -1;
    ss->root_slot = -1;
    ss->root_host_uid = ss->root_host_gid = -1;
    ss->refs = 1;
    MINI_SB_MARK(&ss->t_open, start);
    if (o->profile_data)
        ss->profile = mini_profile_from_json(o->profile_data, "profile_data", &e);
    else
        ss->profile = mini_profile_load_builtin(s->cfg->profile_dir, o->profile ? o->profile : "standard", &e);
    if (!ss->profile)
        goto fail;
    if (o->overrides && mini_profile_apply_overrides(ss->profile, o->overrides, &e) < 0)
        goto fail;
    MINI_SB_MARK(&ss->t_open, profile);
    if (mini_profile_allow_hosts(ss->profile, o->allow_hosts, o->n_allow_hosts, &e) < 0 ||
        session_net_open(ss, &e) < 0)
        goto fail;
    /* What this machine can give the profile: full, degraded (said in
     * every reply) or refused with the reason and the remedy. */
    mini_caps_assess(&s->caps, ss->profile, &ss->assess);
    if (mini_assessment_check(&ss->assess, ss->profile->name, &e) < 0)
        goto fail;

    /* Not compiled yet: open_finish compiles it while the session's first
     * sandbox is being prepared. */
    if (!(ss->bpf_entry = bpf_entry(s, ss->profile))) {
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    ss->bpf = ss->bpf_entry->bpf.len ? &ss->bpf_entry->bpf : NULL;
    if (mini_ws_open(o->workspace, &ss->workspace, &ss->ws_fd, &e) < 0 || session_hide_secrets(s, ss, &e) < 0 ||
        mini_ws_check(&s->guard, ss->profile, ss->workspace, ss->ws_fd, &e) < 0 ||
        (!park_claim(s, ss, o) && session_ids(s, ss, &e) < 0) ||
        (o->user && !o->image && !ss->profile->image &&
         mini_err_set(&e, MINI_E_BAD_REQUEST, "open.user is for an image's root (open.image); there is none") < 0) ||
        ((o->image || ss->profile->image) &&
         session_image(s, ss, o->image ? o->image : ss->profile->image, o->user, &e) < 0))
        goto fail;
    MINI_SB_MARK(&ss->t_open, ids);
    snprintf(ss->id, sizeof ss->id, "s%llu", (unsigned long long)++s->next_session);
    if (ss->profile->overlay_root && (ss->assess.features & MINI_FEAT_OVERLAY) && session_overlay(s, ss, &e) < 0)
        goto fail;
    for (size_t i = 0; i < o->env.n; i++)
        if (mini_env_add(&ss->env, o->env.keys[i], o->env.values[i]) < 0) {
            mini_err_set(&e, MINI_E_NOMEM, "out of memory");
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
    pool_retire_all(s, ss);
    session_unref(ss);
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
        pool_fill(s, ss);
        MINI_SB_MARK(&ss->t_open, cloned);
        if (!(ss->bpf = bpf_compiled(ss->bpf_entry, ss->profile, &e))) {
            if (e.code == MINI_E_PROFILE_INVALID)
                mini_err_prefix(&e, "profile %s", ss->profile->name);
            else /* the daemon's failure, not the client's: the operator's to see */
                log_warn("session %s: %s", ss->id, e.msg);
            send_error(s, c, req_id, &e);
            session_close(s, c, ss, MINI_LIMIT_CANCELLED);
            return;
        }
        pool_send_seccomp(s, ss);
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
    pool_fill(s, ss);
    idmap_ahead(s, ss);
    mini_close(ss->probe_mount);
    ss->probe_mount = -1;
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
    if (park_close(s, ss))
        return;
    ss->closed = true;
    pool_retire_all(s, ss);
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
