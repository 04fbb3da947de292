#include "server.h"
#include "caps.h"
#include "cgroup.h"
#include "outbuf.h"
#include "seccomp_prog.h"
#include "spawn.h"
#include "workspace.h"
#include "mini/cleanup.h"
#include "mini/path.h"
#include "mini/clock.h"
#include "mini/log.h"
#include "mini/profile.h"
#include "mini/proto.h"
#include "mini/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A client whose unsent replies pass this is too slow: its streamed
 * commands stop being read (they block on their pipe) until it catches up. */
#define WQ_PAUSE (4u << 20)
#define WQ_RESUME (1u << 20)
/* Past WQ_PAUSE a client's requests are not read either (the kernel's
 * socket buffer then holds its writer back); past WQ_MAX it is dropped:
 * only replies already owed (one exit per running command) can get there. */
#define WQ_MAX (64u << 20)

/* Bounds on what clients may make the daemon hold (docs/protocol.md,
 * "Limits"): over one, `open` and `exec` get `busy` and the connection
 * stays usable; a connection over MAX_CLIENTS gets `busy` and is closed.
 * Sized for a batch user on a small machine: 128 commands at once is far
 * past what 2 cores run usefully, while each holds only pipes, a pidfd
 * and a timer in the daemon. */
#define MAX_CLIENTS 256
#define MAX_SESSIONS 256
#define MAX_SESSIONS_PER_CLIENT 16
#define MAX_RUNNING 128
#define MAX_RUNNING_PER_CLIENT 64
#define MINI_STR_(x) #x
#define MINI_STR(x) MINI_STR_(x)
#define READ_CHUNK (256u * 1024u)

enum ev_kind { EV_LISTEN, EV_SIGNAL, EV_CLIENT, EV_CTL, EV_OUT, EV_PID, EV_TIMER, EV_STDIN, EV_POOL_CTL, EV_POOL_PID };

/* Prepared sandboxes: each session keeps one more than it has commands
 * running (at most POOL_SESSION_MAX), and the daemon at most POOL_TOTAL_MAX
 * in all.  Each is used once. */
#define POOL_SESSION_MAX 8
#define POOL_TOTAL_MAX 64

struct ev {
    enum ev_kind kind;
    void *obj;
};

struct pooled;

struct session {
    struct session *next;           /* in its client's list */
    char id[24];
    int refs;                       /* the client's, plus one per exec */
    bool closed;
    struct pooled *pool;            /* prepared sandboxes, not yet used */
    int pool_n;
    int running;                    /* commands in flight */
    bool pool_failed;               /* preparing failed: spawn on demand, which reports why */
    struct mini_profile *profile;
    const struct mini_bpf *bpf;     /* from the server's cache */
    char *workspace;
    int ws_fd;
    uid_t host_uid;                 /* the host ids the sandbox's processes run as */
    gid_t host_gid;
    uid_t owner_uid;                /* the host ids its files in the workspace get */
    gid_t owner_gid;
    int uid_slot;                   /* root daemon: its slot in the server's uid range, else -1 */
    int idmap_userns;               /* a user namespace mapping owner -> host ids, or -1 */
    bool idmap;
    struct mini_uid_range *uids;    /* where uid_slot goes back to */
    struct mini_env env;
    struct mini_assessment assess;  /* what this machine gives the profile */
    char *overlay_dir;              /* upper/work of the session's writable root, or NULL */
};

struct pooled {
    struct pooled *next;            /* in its session's pool, or the graveyard */
    bool dead;
    bool ready;
    struct session *ss;
    struct mini_sandbox sb;
    struct mini_cgroup cg;
    char *tmpdir;                   /* degraded path: the command's private TMPDIR */
    struct ev ev_ctl, ev_pid;
};

struct client {
    struct client *next;            /* in the daemon's list, or the graveyard */
    bool dead;
    int fd;
    struct ev ev;
    struct mini_frame_reader rd;
    struct mini_buf wq;             /* encoded frames; wq_off bytes of it already sent */
    size_t wq_off;
    bool want_out;
    bool closing;                   /* stop reading; close once wq is flushed */
    bool read_paused;               /* too many unsent replies: requests wait */
    struct session *sessions;
    int n_sessions;
    int running;                    /* its commands in flight */
    pid_t pid;
};

struct exec {
    struct exec *next;              /* in the daemon's list, or the graveyard */
    bool dead;                      /* finished; freed after this epoll batch */
    struct client *client;          /* NULL once the client is gone */
    struct session *session;
    int64_t id;
    struct mini_sandbox sb;
    struct mini_cgroup cg;          /* the command's cgroup, when cgroups are used */
    char *tmpdir;                   /* degraded path: the command's private TMPDIR */
    int timer;
    struct ev ev_ctl, ev_out, ev_pid, ev_timer, ev_stdin;
    bool stream;
    bool out_paused;
    bool out_eof, reaped, have_status;
    bool accepted;                  /* init has read the launch (MINI_CTL_ACCEPTED) */
    bool retried;                   /* the first sandbox died before accepting: this is the second */
    bool finished;                  /* exit sent; kept only until init is reaped */
    int status;                     /* wait status of the command */
    int init_status;                /* wait status of init, once reaped */
    int64_t cpu_us, max_rss_kb;     /* from init's report, else from reaping init */
    struct rusage ru;
    enum mini_limit limit;
    struct mini_err err;            /* pre-exec failure, when code != OK */
    char *note;                     /* exec failure text */
    struct mini_outbuf out;
    char carry[4];                  /* incomplete UTF-8 at the end of the last chunk */
    size_t carry_len;
    char **argv, **envp;
    char *cwd;
    char *stdin_data;
    size_t stdin_len, stdin_off;
    int64_t start_ns;
};

struct server {
    const struct mini_server_cfg *cfg;
    int ep, lfd, sfd;
    struct client *clients, *dead_clients;
    struct exec *execs, *dead_execs;
    struct pooled *dead_pooled;
    size_t pooled_total;
    uint64_t next_session;
    int64_t execs_total, start_ns;
    size_t n_clients;
    int n_sessions, running;
    bool accept_paused;             /* out of fds: the listener waits for a client to go */
    struct ev ev_listen;
    bool stopping;
    char *root_dir;
    int init_fd;                    /* mini-sandbox-init */
    struct mini_caps caps;          /* what this machine can isolate */
    struct mini_cgroups cgroups;
    uint64_t next_cgroup;
    struct bpf_cache *bpf_cache;    /* one seccomp program per distinct policy */
    ino_t userns;
    FILE *audit;
    struct mini_ws_guard guard;     /* what a workspace must not be or hold */
    struct mini_uid_range uids;     /* root daemon: host ids for sessions */
};

static int ep_add(struct server *s, int fd, uint32_t events, struct ev *ev)
{
    struct epoll_event ee = { .events = events, .data.ptr = ev };
    return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ee);
}

static void ep_mod(struct server *s, int fd, uint32_t events, struct ev *ev)
{
    struct epoll_event ee = { .events = events, .data.ptr = ev };
    epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ee);
}

static void ep_del(struct server *s, int fd)
{
    if (fd >= 0)
        epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
}

/* ------------------------------------------------------------- replies */

static void client_flush(struct server *s, struct client *c);

static size_t wq_pending(const struct client *c)
{
    return c->wq.len - c->wq_off;
}

static void send_json(struct server *s, struct client *c, cJSON *obj)
{
    struct mini_err e;
    if (!c || !obj) {
        cJSON_Delete(obj);
        return;
    }
    if (mini_frame_encode_json(&c->wq, obj, &e) < 0)
        log_warn("dropping a reply: %s", e.msg);
    cJSON_Delete(obj);
    client_flush(s, c);
}

static void send_rep(struct server *s, struct client *c, const struct mini_rep *rep)
{
    if (c)
        send_json(s, c, mini_rep_to_json(rep));
}

static void send_error(struct server *s, struct client *c, int64_t id, const struct mini_err *e)
{
    if (c)
        send_json(s, c, mini_error_json(id, e));
}

static void send_ok(struct server *s, struct client *c, int64_t id)
{
    struct mini_rep rep = { .op = MINI_OP_OK, .id = id };
    send_rep(s, c, &rep);
}

/* ------------------------------------------------------------- sessions */

static void session_unref(struct session *ss)
{
    if (!ss || --ss->refs > 0)
        return;
    if (ss->overlay_dir) {
        struct mini_err e;
        if (mini_rm_rf(ss->overlay_dir, &e) < 0)
            log_warn("session %s: %s", ss->id, e.msg);
        free(ss->overlay_dir);
    }
    mini_profile_free(ss->profile);
    free(ss->workspace);
    mini_close(ss->ws_fd);
    mini_close(ss->idmap_userns);
    if (ss->uids)
        mini_uid_range_put(ss->uids, ss->uid_slot);
    mini_env_free(&ss->env);
    free(ss);
}

static struct session *session_find(struct client *c, const char *id)
{
    for (struct session *ss = c->sessions; ss; ss = ss->next)
        if (strcmp(ss->id, id) == 0)
            return ss;
    return NULL;
}

/* Seccomp programs, compiled once per distinct policy (a profile's
 * seccomp section as canonical JSON) and kept for the daemon's life. */
struct bpf_cache {
    struct bpf_cache *next;
    char *key;
    struct mini_bpf bpf;
};

static const struct mini_bpf *seccomp_for(struct server *s, const struct mini_profile *p, struct mini_err *e)
{
    cJSON *pj = mini_profile_to_json(p);
    char *key = pj ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(pj, "seccomp")) : NULL;
    cJSON_Delete(pj);
    if (!key) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    for (struct bpf_cache *c = s->bpf_cache; c; c = c->next)
        if (strcmp(c->key, key) == 0) {
            free(key);
            return &c->bpf;
        }
    struct bpf_cache *c = calloc(1, sizeof *c);
    if (!c || mini_seccomp_compile(&p->seccomp, &c->bpf, e) < 0) {
        if (!c)
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
        free(c);
        free(key);
        return NULL;
    }
    c->key = key;
    c->next = s->bpf_cache;
    s->bpf_cache = c;
    return &c->bpf;
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
    char map[64];
    snprintf(map, sizeof map, "0 %u 1", (unsigned)ss->host_uid);
    cJSON_AddStringToObject(o, "uid_map", map);
    snprintf(map, sizeof map, "0 %u 1", (unsigned)ss->host_gid);
    cJSON_AddStringToObject(o, "gid_map", map);
    snprintf(map, sizeof map, "%u:%u", (unsigned)ss->owner_uid, (unsigned)ss->owner_gid);
    cJSON_AddStringToObject(o, "files_owned_by", map);
    cJSON_AddBoolToObject(o, "own_uid", ss->uid_slot >= 0);
    cJSON_AddBoolToObject(o, "idmapped_workspace", ss->idmap);
    cJSON_AddStringToObject(o, "workspace", ss->workspace);
    cJSON_AddBoolToObject(o, "workspace_writable", ss->profile->workspace_writable);
    cJSON_AddBoolToObject(o, "session_overlay", ss->overlay_dir != NULL);
    return o;
}

/* The directories of the session's writable overlay on the profile's
 * binds: <state>/sessions/<daemon pid>-<session>/{upper,work}, reached by
 * the sandbox through an fd (the session directory is 0711), owned by the
 * sandbox's host ids.  Removed with the session. */
static int session_overlay(struct server *s, struct session *ss, struct mini_err *e)
{
    char *dir = NULL, path[4096];
    snprintf(path, sizeof path, "%s/sessions", s->cfg->state_dir);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
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

/* Overlays left in <state>/sessions by a daemon that is gone (killed,
 * crashed): its pid is no process now, or is this daemon's own, which was
 * free when it started.  Removed at start, so that a later daemon with the
 * same pid cannot trip over them and they do not stay on the disk. */
static void sweep_sessions(const struct server *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sessions", s->cfg->state_dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d));) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (end == de->d_name || *end != '-' || pid <= 0)
            continue;
        if (pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char dir[4096 + 256];
        struct mini_err e;
        snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
        if (mini_rm_rf(dir, &e) < 0)
            log_warn("removing a dead daemon's overlay: %s", e.msg);
        else
            log_info("removed a dead daemon's overlay %s", dir);
    }
    closedir(d);
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
        .idmap_workspace = ss->idmap,
        .idmap_userns = ss->idmap_userns,
        .init_fd = s->init_fd,
        .overlay_dir = ss->overlay_dir,
        .namespaces = ss->assess.namespaces,
        .cgroup_memory = ss->assess.cgroups && (s->cgroups.ctrls & (1u << MINI_CGC_MEMORY)),
        .cgroup_pids = ss->assess.cgroups && (s->cgroups.ctrls & (1u << MINI_CGC_PIDS)),
    };
}

/* The degraded path's private TMPDIR: under /tmp (every uid can reach
 * it; the daemon's state directory is private), owned by the sandbox's
 * host ids.  Landlock lets the command write there and nowhere else but
 * the workspace. */
static char *sandbox_tmpdir(const struct session *ss, struct mini_err *e)
{
    char *dir = strdup("/tmp/mini-tmp.XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "creating a private TMPDIR");
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

static void sandbox_release(struct mini_sandbox *sb, struct mini_cgroup *cg, char **tmpdir)
{
    mini_sandbox_destroy(sb);
    mini_cgroup_destroy(cg);
    if (*tmpdir) {
        struct mini_err e;
        if (mini_rm_rf(*tmpdir, &e) < 0)
            log_warn("%s", e.msg);
        free(*tmpdir);
        *tmpdir = NULL;
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

/* Prepare one sandbox for the session: its cgroup first, which the
 * sandbox joins from its first step (see mini_spawn_cfg); then the clone,
 * on the namespace path or on the degraded path with its Landlock plan and
 * TMPDIR. */
static int sandbox_new(struct server *s, struct session *ss, struct mini_sandbox *sb, struct mini_cgroup *cg,
                       char **tmpdir, struct mini_err *e)
{
    struct mini_spawn_cfg cfg;
    struct mini_landlock_plan plan;
    int procs[MINI_CG_HIER_MAX];
    *sb = (struct mini_sandbox){ .pid = -1, .pidfd = -1, .ctl = -1, .out = -1, .in = -1 };
    *cg = (struct mini_cgroup)MINI_CGROUP_INIT;
    *tmpdir = NULL;
    session_spawn_cfg(s, ss, &cfg);
    cfg.cgroup_fd = -1;
    if (ss->assess.cgroups && s->cgroups.mode != MINI_CG_NONE) {
        char name[32];
        snprintf(name, sizeof name, "x%llu", (unsigned long long)++s->next_cgroup);
        int n = -1;
        if (mini_cgroup_create(&s->cgroups, name, &ss->profile->limits, cg, e) < 0 ||
            (n = mini_cgroup_open_procs(cg, procs, e)) < 0) {
            mini_cgroup_destroy(cg);
            return mini_err_prefix(e, "the command's cgroup");
        }
        cfg.cgroup_fd = cg->fd;
        cfg.cgroup_procs = procs;
        cfg.n_cgroup_procs = (size_t)n;
    }
    if (ss->assess.path == MINI_PATH_LANDLOCK) {
        if (!(*tmpdir = sandbox_tmpdir(ss, e)) || mini_landlock_plan(&plan, ss->profile, ss->workspace, *tmpdir, e) < 0)
            goto fail;
        /* The sandbox becomes mini-sandbox-init after Landlock is in force:
         * that one file must be executable. */
        if (landlock_allow_init(s, &plan, e) < 0) {
            mini_landlock_plan_free(&plan);
            goto fail;
        }
        cfg.landlock = &plan;
    }
    int r = mini_sandbox_prepare(&cfg, sb, e);
    if (cfg.landlock)
        mini_landlock_plan_free(&plan);   /* the child has its copy */
    for (size_t i = 0; i < cfg.n_cgroup_procs; i++)
        close(procs[i]);
    cfg.n_cgroup_procs = 0;
    if (r < 0)
        goto fail;
    if (cg->cg && !sb->in_cgroup && mini_cgroup_attach(cg, sb->pid, e) < 0) {
        mini_err_prefix(e, "the command's cgroup");
        goto fail;
    }
    return 0;
fail:
    for (size_t i = 0; i < cfg.n_cgroup_procs; i++)
        close(procs[i]);
    sandbox_release(sb, cg, tmpdir);
    return -1;
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
static void pool_bury(struct server *s, struct pooled *p)
{
    s->pooled_total--;
    p->dead = true;
    p->next = s->dead_pooled;
    s->dead_pooled = p;
}

static void pool_discard(struct server *s, struct pooled *p)
{
    pool_unlink(p->ss, p);
    ep_del(s, p->sb.ctl);
    ep_del(s, p->sb.pidfd);
    sandbox_release(&p->sb, &p->cg, &p->tmpdir);
    pool_bury(s, p);
}

/* Top the session's pool up: one prepared sandbox more than it has
 * commands running.  Preparing runs in the sandbox's own process; here it
 * costs the clone and the id maps. */
static void pool_fill(struct server *s, struct session *ss)
{
    /* A session overlay is mounted by each sandbox on the same upper
     * directory; overlayfs does not allow two mounts of one upper at once
     * ("upperdir is in-use"), so such a session keeps none prepared. */
    if (ss->overlay_dir)
        return;
    int want = ss->running + 1 < POOL_SESSION_MAX ? ss->running + 1 : POOL_SESSION_MAX;
    while (!ss->closed && !ss->pool_failed && ss->pool_n < want && s->pooled_total < POOL_TOTAL_MAX) {
        struct pooled *p = calloc(1, sizeof *p);
        if (!p)
            return;
        struct mini_err e;
        if (sandbox_new(s, ss, &p->sb, &p->cg, &p->tmpdir, &e) < 0) {
            /* Commands of this session now spawn on demand, which reports the error. */
            log_warn("session %s: preparing a sandbox: %s", ss->id, e.msg);
            ss->pool_failed = true;
            free(p);
            return;
        }
        p->ss = ss;
        p->ev_ctl = (struct ev){ EV_POOL_CTL, p };
        p->ev_pid = (struct ev){ EV_POOL_PID, p };
        if (ep_add(s, p->sb.ctl, EPOLLIN, &p->ev_ctl) < 0 || ep_add(s, p->sb.pidfd, EPOLLIN, &p->ev_pid) < 0) {
            ep_del(s, p->sb.ctl);
            sandbox_release(&p->sb, &p->cg, &p->tmpdir);
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

/* Whether a prepared sandbox has died (killed from outside) without its
 * events having been handled yet: its control socket hung up or its pidfd
 * is readable. */
static bool pool_dead(const struct pooled *p)
{
    struct pollfd f[2] = { { .fd = p->sb.ctl, .events = POLLRDHUP }, { .fd = p->sb.pidfd, .events = POLLIN } };
    if (poll(f, 2, 0) <= 0)
        return false;
    return (f[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) || (f[1].revents & POLLIN);
}

/* A live prepared sandbox for a command, ready ones first; NULL if none.
 * Dead ones found on the way are discarded. */
static struct pooled *pool_take(struct server *s, struct session *ss)
{
    struct pooled *best = NULL;
    for (struct pooled *p = ss->pool, *next; p; p = next) {
        next = p->next;
        if (pool_dead(p))
            pool_discard(s, p);
        else if (!best || (p->ready && !best->ready))
            best = p;
    }
    if (best)
        pool_unlink(ss, best);
    return best;
}

static void pool_event(struct server *s, struct pooled *p, bool exited)
{
    bool failed = true;
    if (!exited) {
        struct mini_ctl_msg m;
        int r = mini_sandbox_read_ctl(&p->sb, &m);
        if (r == -2)
            return;
        if (r == 1 && m.type == MINI_CTL_READY) {
            p->ready = true;
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

/* Whose ids the session's sandboxes run as, and whose its files get (see
 * docs/isolation.md, "Whose ids a sandbox runs as"):
 *   - rootless: the daemon's own, for both;
 *   - root, workspace owned by root: refused (files the sandbox made
 *     would be root's on the host; there is no safe mapping);
 *   - root, owned by uid W: the processes run as a uid of the session's
 *     own from the daemon's range, and see the workspace through an
 *     idmapped mount in which W's files are theirs and what they create
 *     is W's, with W's ordinary group (mini_ws_owner_group) -- never the
 *     directory's group.  Per-uid kernel quotas are then the session's
 *     own.  Where the workspace's filesystem cannot be idmapped, or on
 *     the Landlock path (no user namespaces), they run as W itself. */
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
    if (st.st_uid == 0)
        return mini_err_set(e, MINI_E_WORKSPACE_INVALID,
                            "workspace %s is owned by root: files a sandbox writes there would be root's on the "
                            "host, and a root daemon never runs a sandbox as root; remedy: give the directory to an "
                            "unprivileged user (chown -R USER: %s; the sandbox then writes as that user), or run "
                            "mini-sandboxd (and mini) as that user",
                            ss->workspace, ss->workspace);
    ss->owner_uid = ss->host_uid = st.st_uid;
    ss->owner_gid = ss->host_gid = mini_ws_owner_group(st.st_uid);
    if (ss->assess.path == MINI_PATH_LANDLOCK)
        return 0;
    int slot = mini_uid_range_take(&s->uids);
    if (slot < 0)
        return mini_err_set(e, MINI_E_BUSY, "every uid of the daemon's range (%u) is in use", s->uids.count);
    ss->uid_slot = slot;
    ss->uids = &s->uids;
    uid_t uid = s->uids.uid_base + (uid_t)slot;
    gid_t gid = s->uids.gid_base + (gid_t)slot;
    if ((ss->idmap_userns = mini_idmap_userns(ss->owner_uid, uid, ss->owner_gid, gid, e)) < 0)
        return -1;
    /* Whether this filesystem can be idmapped at all: try it once here. */
    int probe = open_tree(ss->ws_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ss->idmap_userns };
    int r = probe < 0 ? -1 : mount_setattr(probe, "", AT_EMPTY_PATH, &attr, sizeof attr);
    int err = errno;
    mini_close(probe);
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
    ss->host_uid = uid;
    ss->host_gid = gid;
    ss->idmap = true;
    return 0;
}

static void do_open(struct server *s, struct client *c, const struct mini_req *req)
{
    const struct mini_req_open *o = &req->u.open;
    struct mini_err e;
    mini_err_clear(&e);
    if (c->n_sessions >= MAX_SESSIONS_PER_CLIENT || s->n_sessions >= MAX_SESSIONS) {
        mini_err_set(&e, MINI_E_BUSY, "%s", c->n_sessions >= MAX_SESSIONS_PER_CLIENT
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
    ss->uid_slot = -1;
    ss->refs = 1;
    if (o->profile_data)
        ss->profile = mini_profile_from_json(o->profile_data, "profile_data", &e);
    else
        ss->profile = mini_profile_load_builtin(s->cfg->profile_dir, o->profile ? o->profile : "standard", &e);
    if (!ss->profile)
        goto fail;
    if (o->overrides && mini_profile_apply_overrides(ss->profile, o->overrides, &e) < 0)
        goto fail;
    /* What this machine can give the profile: full, degraded (said in
     * every reply) or refused with the reason and the remedy. */
    mini_caps_assess(&s->caps, ss->profile, &ss->assess);
    if (mini_assessment_check(&ss->assess, ss->profile->name, &e) < 0)
        goto fail;

    if (!(ss->bpf = seccomp_for(s, ss->profile, &e)))
        goto fail;
    if (mini_ws_open(o->workspace, &ss->workspace, &ss->ws_fd, &e) < 0 || session_hide_secrets(s, ss, &e) < 0 ||
        mini_ws_check(&s->guard, ss->profile, ss->workspace, ss->ws_fd, &e) < 0 || session_ids(s, ss, &e) < 0)
        goto fail;
    snprintf(ss->id, sizeof ss->id, "s%llu", (unsigned long long)++s->next_session);
    if (ss->profile->overlay_root && (ss->assess.features & MINI_FEAT_OVERLAY) &&
        session_overlay(s, ss, &e) < 0)
        goto fail;
    for (size_t i = 0; i < o->env.n; i++)
        if (mini_env_add(&ss->env, o->env.keys[i], o->env.values[i]) < 0) {
            mini_err_set(&e, MINI_E_NOMEM, "out of memory");
            goto fail;
        }
    ss->next = c->sessions;
    c->sessions = ss;
    c->n_sessions++;
    s->n_sessions++;

    struct mini_rep rep = { .op = MINI_OP_OPENED, .id = req->id };
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
    pool_fill(s, ss);
    return;
fail:
    if (e.code == MINI_E_PROFILE_INVALID && o->profile && !o->profile_data)
        mini_err_prefix(&e, "profile %s", o->profile);
    send_error(s, c, req->id, &e);
    session_unref(ss);
}

/* ---------------------------------------------------------------- execs */

static void exec_free(struct exec *x)
{
    sandbox_release(&x->sb, &x->cg, &x->tmpdir);
    mini_close(x->timer);
    mini_outbuf_free(&x->out);
    free(x->argv);
    free(x->envp);
    free(x->cwd);
    free(x->stdin_data);
    free(x->note);
    session_unref(x->session);
    free(x);
}

static void exec_unlink(struct server *s, struct exec *x)
{
    for (struct exec **pp = &s->execs; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

static void exec_bury(struct server *s, struct exec *x)
{
    exec_unlink(s, x);
    x->dead = true;
    x->next = s->dead_execs;
    s->dead_execs = x;
}

static void exec_kill(struct exec *x, enum mini_limit why)
{
    if (x->limit == MINI_LIMIT_NONE)
        x->limit = why;
    mini_sandbox_kill(&x->sb);
}

static void audit(struct server *s, struct exec *x, int returncode, int64_t ms)
{
    if (!s->audit)
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "time", (double)time(NULL));
    cJSON_AddStringToObject(o, "session", x->session->id);
    cJSON_AddStringToObject(o, "workspace", x->session->workspace);
    cJSON_AddStringToObject(o, "profile", x->session->profile->name);
    cJSON *argv = cJSON_AddArrayToObject(o, "argv");
    for (char **a = x->argv; *a; a++)
        cJSON_AddItemToArray(argv, cJSON_CreateString(*a));
    cJSON_AddStringToObject(o, "cwd", x->cwd);
    cJSON_AddNumberToObject(o, "returncode", returncode);
    cJSON_AddNumberToObject(o, "duration_ms", (double)ms);
    char *line = cJSON_PrintUnformatted(o);
    if (line) {
        fprintf(s->audit, "%s\n", line);
        fflush(s->audit);
    }
    free(line);
    cJSON_Delete(o);
}

static void emit_output(struct server *s, struct exec *x, const char *p, size_t n)
{
    if (!x->stream || !x->client)
        return;
    struct mini_buf raw = MINI_BUF_INIT, text = MINI_BUF_INIT;
    if (mini_buf_append(&raw, x->carry, x->carry_len) < 0 || mini_buf_append(&raw, p, n) < 0)
        goto out;
    size_t keep = raw.len - mini_utf8_incomplete_tail(raw.data, raw.len);
    x->carry_len = raw.len - keep;
    memcpy(x->carry, raw.data + keep, x->carry_len);
    if (keep == 0 || mini_utf8_sanitize(&text, raw.data, keep) < 0)
        goto out;
    struct mini_rep rep = { .op = MINI_OP_OUTPUT, .id = x->id };
    rep.u.output.data = text.data;
    rep.u.output.len = text.len;
    send_rep(s, x->client, &rep);
out:
    mini_buf_free(&raw);
    mini_buf_free(&text);
}

static void exec_finish(struct server *s, struct exec *x)
{
    int64_t ms = (mini_mono_ns() - x->start_ns) / 1000000;
    if (x->err.code != MINI_OK) {
        send_error(s, x->client, x->id, &x->err);
        audit(s, x, 125, ms);
        goto done;
    }
    if (x->carry_len) {
        /* An incomplete character at the very end: flush it as U+FFFD. */
        char carry[4];
        size_t n = x->carry_len;
        memcpy(carry, x->carry, n);
        x->carry_len = 0;
        emit_output(s, x, carry, n);
    }
    struct mini_rep rep = { .op = MINI_OP_EXIT, .id = x->id };
    struct mini_rep_exit *ex = &rep.u.exit;
    if (x->limit == MINI_LIMIT_TIMEOUT) {
        ex->returncode = 124;
        ex->timed_out = true;
        ex->signal = SIGKILL;
    } else if (x->have_status && x->limit == MINI_LIMIT_NONE) {
        if (WIFEXITED(x->status)) {
            ex->returncode = WEXITSTATUS(x->status);
        } else if (WIFSIGNALED(x->status)) {
            ex->signal = WTERMSIG(x->status);
            ex->returncode = 128 + ex->signal;
        }
        /* Killed by the limit's signal, itself or (through a shell) what
         * it ran: 128+N is how a shell reports the latter. */
        if (ex->returncode == 128 + SIGXCPU)
            x->limit = MINI_LIMIT_CPU;
        else if (ex->returncode == 128 + SIGXFSZ)
            x->limit = MINI_LIMIT_FILE_SIZE;
    } else if (x->limit != MINI_LIMIT_NONE) {
        ex->signal = SIGKILL;
        ex->returncode = 128 + SIGKILL;
    } else {
        struct mini_err e;
        mini_err_set(&e, MINI_E_SPAWN_FAILED, "the sandbox ended before reporting the command's status");
        log_warn("exec %lld: init ended (wait status %#x) without a status", (long long)x->id, x->init_status);
        send_error(s, x->client, x->id, &e);
        audit(s, x, 125, ms);
        goto done;
    }
    struct mini_buf out = MINI_BUF_INIT;
    mini_outbuf_render(&x->out, &out);
    ex->output = out.data ? out.data : (char *)"";
    ex->output_len = out.len;
    ex->truncated = mini_outbuf_truncated(&x->out);
    ex->output_bytes = (int64_t)x->out.total;
    ex->duration_ms = ms;
    if (x->have_status) {
        ex->cpu_ms = x->cpu_us / 1000;
        ex->max_rss_kb = x->max_rss_kb;
    } else {
        ex->cpu_ms = (int64_t)x->ru.ru_utime.tv_sec * 1000 + x->ru.ru_utime.tv_usec / 1000 +
                     (int64_t)x->ru.ru_stime.tv_sec * 1000 + x->ru.ru_stime.tv_usec / 1000;
        ex->max_rss_kb = x->ru.ru_maxrss;
    }
    if (x->cg.cg) {
        /* The cgroup saw the whole tree, also what was killed unreaped. */
        struct mini_cgroup_result r;
        mini_cgroup_result(&x->cg, &r);
        ex->oom_killed = r.oom_killed;
        /* The limit ended the command when what it ran died of the kill. */
        if (x->limit == MINI_LIMIT_NONE && r.oom_killed && (ex->signal == SIGKILL || ex->returncode == 128 + SIGKILL))
            x->limit = MINI_LIMIT_MEMORY;
        else if (x->limit == MINI_LIMIT_NONE && r.pids_limited && ex->returncode != 0)
            x->limit = MINI_LIMIT_PIDS;
        if (r.cpu_ms >= 0)
            ex->cpu_ms = r.cpu_ms;
        if (r.peak_memory_kb >= 0)
            ex->max_rss_kb = r.peak_memory_kb;
    }
    ex->limit = x->limit;
    char *notes[3] = { NULL, NULL, NULL };
    size_t nn = 0;
    if (x->note)
        notes[nn++] = x->note;
    if (x->session->assess.status == MINI_ASSESS_DEGRADED)
        notes[nn++] = x->session->assess.summary;
    ex->notes = notes;
    ex->n_notes = nn;
    send_rep(s, x->client, &rep);
    audit(s, x, ex->returncode, ms);
    mini_buf_free(&out);
done:
    log_debug("exec %lld finished in %lld ms", (long long)x->id, (long long)ms);
    x->session->running--;
    s->running--;
    if (x->client)
        x->client->running--;
    /* The replacement is prepared now that the reply is out: on the next
     * command's path, not on this one's. */
    pool_fill(s, x->session);
    x->finished = true;
    x->client = NULL;
    ep_del(s, x->timer);
    mini_close(x->timer);
    x->timer = -1;
    ep_del(s, x->sb.ctl);
    mini_close(x->sb.ctl);
    x->sb.ctl = -1;
    if (x->reaped)
        exec_bury(s, x);
    /* else init is exiting (nothing of the command is left): it is reaped
     * when its pidfd says so, off the client's path. */
}

/* The sandbox died before it accepted the command (it was killed from
 * outside while prepared: a user's kill, the OOM killer): the command never
 * ran, so it gets one fresh sandbox, prepared now.  false when that does
 * not apply or the new sandbox cannot be had (x->err says why). */
static bool exec_retry(struct server *s, struct exec *x)
{
    if (x->accepted || x->retried || x->have_status || x->err.code != MINI_OK || x->limit != MINI_LIMIT_NONE ||
        !x->client)
        return false;
    x->retried = true;
    log_info("exec %lld: its sandbox died before starting the command; retrying in a new one", (long long)x->id);
    ep_del(s, x->sb.ctl);
    ep_del(s, x->sb.out);
    ep_del(s, x->sb.pidfd);
    ep_del(s, x->sb.in);
    sandbox_release(&x->sb, &x->cg, &x->tmpdir);
    x->out_eof = x->reaped = x->out_paused = false;
    x->stdin_off = 0;
    if (sandbox_new(s, x->session, &x->sb, &x->cg, &x->tmpdir, &x->err) < 0) {
        x->out_eof = x->reaped = true;   /* nothing left to wait for */
        return false;
    }
    if (ep_add(s, x->sb.ctl, EPOLLIN, &x->ev_ctl) < 0 || ep_add(s, x->sb.out, EPOLLIN, &x->ev_out) < 0 ||
        ep_add(s, x->sb.pidfd, EPOLLIN, &x->ev_pid) < 0) {
        mini_err_sys(&x->err, MINI_E_SPAWN_FAILED, errno, "watching the sandbox");
        ep_del(s, x->sb.ctl);
        ep_del(s, x->sb.out);
        sandbox_release(&x->sb, &x->cg, &x->tmpdir);
        x->out_eof = x->reaped = true;
        return false;
    }
    return true;
}

/* Done when the output has ended and init has either reported the
 * command's status (having killed and reaped everything else) or died. */
static void exec_maybe_finish(struct server *s, struct exec *x)
{
    if (!x->finished && x->out_eof && (x->reaped || x->have_status) && !exec_retry(s, x))
        exec_finish(s, x);
}

static void exec_drain_ctl(struct server *s, struct exec *x);

static void exec_read_out(struct server *s, struct exec *x)
{
    static char buf[READ_CHUNK];
    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n = read(x->sb.out, buf, sizeof buf);
        if (n > 0) {
            mini_outbuf_add(&x->out, buf, (size_t)n);
            emit_output(s, x, buf, (size_t)n);
            if (x->stream && x->client && wq_pending(x->client) > WQ_PAUSE) {
                ep_mod(s, x->sb.out, 0, &x->ev_out);
                x->out_paused = true;
                return;
            }
            continue;
        }
        if (n == 0) {
            ep_del(s, x->sb.out);
            mini_close(x->sb.out);
            x->sb.out = -1;
            x->out_eof = true;
            exec_maybe_finish(s, x);
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            log_warn("reading command output: %s", strerror(errno));
        return;
    }
}

static void exec_write_stdin(struct server *s, struct exec *x)
{
    while (x->stdin_off < x->stdin_len) {
        ssize_t n = write(x->sb.in, x->stdin_data + x->stdin_off, x->stdin_len - x->stdin_off);
        if (n > 0) {
            x->stdin_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (ep_add(s, x->sb.in, EPOLLOUT, &x->ev_stdin) < 0)
                ep_mod(s, x->sb.in, EPOLLOUT, &x->ev_stdin);
            return;
        }
        break;   /* EPIPE: the command closed its stdin */
    }
    ep_del(s, x->sb.in);
    mini_close(x->sb.in);
    x->sb.in = -1;
}

static void exec_launch(struct server *s, struct exec *x)
{
    struct mini_launch l = { .argv = x->argv, .envp = x->envp, .cwd = x->cwd, .has_stdin = x->stdin_data != NULL };
    if (mini_sandbox_launch(&x->sb, &l, &x->err) < 0) {
        /* EPIPE: init was gone before it could read the command, which so
         * never ran; exec_retry takes it from here once init is reaped. */
        if (x->err.sys_errno == EPIPE)
            mini_err_clear(&x->err);
        exec_kill(x, MINI_LIMIT_NONE);
        return;
    }
    if (x->stdin_data) {
        mini_set_nonblock(x->sb.in, 1);
        exec_write_stdin(s, x);
    } else {
        mini_close(x->sb.in);
        x->sb.in = -1;
    }
}

static void exec_drain_ctl(struct server *s, struct exec *x)
{
    for (;;) {
        struct mini_ctl_msg m;
        int r = mini_sandbox_read_ctl(&x->sb, &m);
        if (r == -2)
            return;
        if (r <= 0) {
            ep_del(s, x->sb.ctl);
            mini_close(x->sb.ctl);
            x->sb.ctl = -1;
            return;
        }
        switch (m.type) {
        case MINI_CTL_READY:
            exec_launch(s, x);
            break;
        case MINI_CTL_ERROR:
            if (x->err.code == MINI_OK) {
                mini_err_set(&x->err, MINI_E_SPAWN_FAILED, "sandbox setup failed: %s", m.text);
                x->err.sys_errno = m.err;
            }
            exec_kill(x, MINI_LIMIT_NONE);
            break;
        case MINI_CTL_ACCEPTED:
            x->accepted = true;
            break;
        case MINI_CTL_EXEC_FAILED:
            free(x->note);
            x->note = strdup(m.text);
            break;
        case MINI_CTL_STATUS:
            /* Degraded path: what the command left behind is in its
             * process group; nothing of it may run once the client has the
             * status. */
            if (x->sb.group_kill)
                kill(-x->sb.pid, SIGKILL);
            x->status = m.status;
            x->cpu_us = m.cpu_us;
            x->max_rss_kb = m.max_rss_kb;
            x->have_status = true;
            exec_maybe_finish(s, x);
            return;
        default:
            break;
        }
    }
}

static void exec_reap(struct server *s, struct exec *x)
{
    int st;
    if (mini_sandbox_reap(&x->sb, &st, &x->ru) <= 0)
        return;
    x->init_status = st;
    ep_del(s, x->sb.pidfd);
    if (x->finished) {
        exec_bury(s, x);
        return;
    }
    if (x->sb.ctl >= 0)
        exec_drain_ctl(s, x);
    x->reaped = true;
    /* Every writer of the output pipe lived in the sandbox's pid
     * namespace and is gone now: what is left can be read to the end. */
    if (x->sb.out >= 0 && !x->out_paused)
        exec_read_out(s, x);
    else
        exec_maybe_finish(s, x);
}

/* A NULL-terminated copy of n strings in one allocation. */
static char **strv_pack(const char *const *v, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(v[i]) + 1;
    char **out = malloc((n + 1) * sizeof *out + bytes);
    if (!out)
        return NULL;
    char *q = (char *)(out + n + 1);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(v[i]) + 1;
        out[i] = memcpy(q, v[i], len);
        q += len;
    }
    out[n] = NULL;
    return out;
}

static char **build_argv(const struct mini_req_exec *r)
{
    if (r->command) {
        const char *sh[] = { "/bin/sh", "-c", r->command };
        return strv_pack(sh, 3);
    }
    return strv_pack((const char *const *)r->argv, r->argc);
}

static int env_put(struct mini_buf *b, const char *k, const char *v)
{
    return mini_buf_printf(b, "%s=%s", k, v) | mini_buf_putc(b, '\0');
}

/* Environment: cleared, then the profile's fixed set, then the names the
 * profile passes from the daemon's own environment, then the session's and
 * the request's variables (later wins).  One allocation: the pointer
 * array followed by the strings. */
static char **build_env(const struct session *ss, const struct mini_req_exec *r, const char *tmpdir)
{
    struct mini_buf b = MINI_BUF_INIT;
    const struct mini_profile *p = ss->profile;
    int rc = 0;
    for (size_t i = 0; i < p->env_set.n; i++) {
        /* Degraded path: the profile's tmpfs paths are the host's, not
         * private; the command's private directory stands in for them. */
        bool on_tmpfs = false;
        for (size_t t = 0; tmpdir && t < p->n_tmpfs; t++)
            on_tmpfs |= strcmp(p->env_set.values[i], p->tmpfs[t].path) == 0;
        rc |= env_put(&b, p->env_set.keys[i], on_tmpfs ? tmpdir : p->env_set.values[i]);
    }
    if (tmpdir)
        rc |= env_put(&b, "TMPDIR", tmpdir);
    for (size_t i = 0; i < p->n_env_pass; i++) {
        const char *v = getenv(p->env_pass[i]);
        if (v)
            rc |= env_put(&b, p->env_pass[i], v);
    }
    const struct mini_env *extra[] = { &ss->env, &r->env };
    for (size_t si = 0; si < MINI_ARRAY_SIZE(extra); si++)
        for (size_t i = 0; i < extra[si]->n; i++)
            rc |= env_put(&b, extra[si]->keys[i], extra[si]->values[i]);
    size_t n = 0;
    for (size_t i = 0; i < b.len; i++)
        n += b.data[i] == '\0';
    char **envp = rc < 0 ? NULL : malloc((n + 1) * sizeof *envp + b.len);
    if (!envp) {
        mini_buf_free(&b);
        return NULL;
    }
    char *blk = (char *)(envp + n + 1), *end = blk + b.len;
    if (b.len)
        memcpy(blk, b.data, b.len);
    mini_buf_free(&b);
    size_t k = 0;
    for (char *q = blk; q < end; q += strlen(q) + 1) {
        size_t name = strcspn(q, "=") + 1;
        size_t j = 0;
        while (j < k && strncmp(envp[j], q, name) != 0)
            j++;
        envp[j] = q;
        if (j == k)
            k++;
    }
    envp[k] = NULL;
    return envp;
}

/* The working directory must be the workspace or below it (resolved
 * beneath the workspace, so no symlink or ".." leads out), or one of the
 * sandbox's own fresh tmpfs mounts. */
static int check_cwd(const struct session *ss, const char *cwd, struct mini_err *e)
{
    if (cwd[0] != '/')
        return mini_err_set(e, MINI_E_CWD_INVALID, "cwd %s: must be an absolute path", cwd);
    for (const char *p = cwd; (p = strstr(p, "..")); p += 2)
        if ((p == cwd || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
            return mini_err_set(e, MINI_E_CWD_INVALID, "cwd %s: must not contain \"..\"", cwd);
    if (mini_path_within(cwd, ss->workspace)) {
        const char *rel = cwd + strlen(ss->workspace);
        while (*rel == '/')
            rel++;
        struct open_how how = {
            .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int)syscall(SYS_openat2, ss->ws_fd, *rel ? rel : ".", &how, sizeof how);
        if (fd < 0) {
            if (errno == EXDEV || errno == ELOOP)
                return mini_err_set(e, MINI_E_CWD_INVALID, "cwd %s: leads outside the workspace", cwd);
            return mini_err_sys(e, MINI_E_CWD_INVALID, errno, "cwd %s", cwd);
        }
        close(fd);
        return 0;
    }
    for (size_t i = 0; i < ss->profile->n_tmpfs; i++)
        if (strcmp(cwd, ss->profile->tmpfs[i].path) == 0)
            return 0;
    return mini_err_set(e, MINI_E_CWD_INVALID, "cwd %s: must be inside the workspace %s", cwd, ss->workspace);
}

static struct exec *exec_find(struct server *s, struct client *c, int64_t id)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c && x->id == id && !x->finished)
            return x;
    return NULL;
}

static void do_exec(struct server *s, struct client *c, const struct mini_req *req)
{
    const struct mini_req_exec *r = &req->u.exec;
    struct mini_err e;
    mini_err_clear(&e);
    struct session *ss = session_find(c, r->session);
    if (!ss) {
        mini_err_set(&e, MINI_E_NO_SUCH_SESSION, "no session \"%s\" on this connection", r->session);
        send_error(s, c, req->id, &e);
        return;
    }
    if (exec_find(s, c, req->id)) {
        mini_err_set(&e, MINI_E_BAD_REQUEST, "id %lld: a command with this id is still running", (long long)req->id);
        send_error(s, c, req->id, &e);
        return;
    }
    if (c->running >= MAX_RUNNING_PER_CLIENT || s->running >= MAX_RUNNING) {
        mini_err_set(&e, MINI_E_BUSY, "%s", c->running >= MAX_RUNNING_PER_CLIENT
                     ? "this connection has " MINI_STR(MAX_RUNNING_PER_CLIENT) " commands running, the most it may"
                     : "the daemon runs " MINI_STR(MAX_RUNNING) " commands, the most it may; try again later");
        send_error(s, c, req->id, &e);
        return;
    }
    if (ss->overlay_dir && ss->running > 0) {
        mini_err_set(&e, MINI_E_BUSY, "session %s has a writable overlay (profile %s), which one command at a "
                     "time may mount; wait for the running one, or open another session", ss->id, ss->profile->name);
        send_error(s, c, req->id, &e);
        return;
    }
    const char *cwd = r->cwd ? r->cwd : ss->workspace;
    if (check_cwd(ss, cwd, &e) < 0) {
        send_error(s, c, req->id, &e);
        return;
    }
    double timeout = ss->profile->limits.timeout_s;
    if (r->timeout > 0) {
        if (r->timeout > timeout) {
            mini_err_set(&e, MINI_E_LIMIT, "exec.timeout: %g s is above the profile's %g s", r->timeout, timeout);
            send_error(s, c, req->id, &e);
            return;
        }
        timeout = r->timeout;
    }
    struct exec *x = calloc(1, sizeof *x);
    if (!x) {
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        send_error(s, c, req->id, &e);
        return;
    }
    x->timer = -1;
    x->sb = (struct mini_sandbox){ .pid = -1, .pidfd = -1, .ctl = -1, .out = -1, .in = -1 };
    x->cg = (struct mini_cgroup)MINI_CGROUP_INIT;
    x->client = c;
    x->session = ss;
    ss->refs++;
    x->id = req->id;
    x->stream = r->stream;
    x->start_ns = mini_mono_ns();
    mini_err_clear(&x->err);
    mini_outbuf_init(&x->out, ss->profile->limits.output_bytes);
    struct pooled *p = pool_take(s, ss);
    bool ready = false;
    if (p) {
        x->sb = p->sb;
        x->cg = p->cg;
        x->tmpdir = p->tmpdir;
        ready = p->ready;
        pool_bury(s, p);
    } else if (sandbox_new(s, ss, &x->sb, &x->cg, &x->tmpdir, &e) < 0) {
        goto fail;
    }
    x->argv = build_argv(r);
    x->envp = build_env(ss, r, x->tmpdir);
    x->cwd = strdup(cwd);
    if (r->stdin_data) {
        x->stdin_data = malloc(r->stdin_len + 1);
        if (x->stdin_data)
            memcpy(x->stdin_data, r->stdin_data, r->stdin_len);
        x->stdin_len = r->stdin_len;
    }
    if (!x->argv || !x->envp || !x->cwd || (r->stdin_data && !x->stdin_data)) {
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    x->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { .it_value = { .tv_sec = (time_t)timeout,
                                            .tv_nsec = (long)((timeout - floor(timeout)) * 1e9) } };
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
        its.it_value.tv_nsec = 1;
    x->ev_ctl = (struct ev){ EV_CTL, x };
    x->ev_out = (struct ev){ EV_OUT, x };
    x->ev_pid = (struct ev){ EV_PID, x };
    x->ev_timer = (struct ev){ EV_TIMER, x };
    x->ev_stdin = (struct ev){ EV_STDIN, x };
    if (p) {
        /* Already watched as a pool entry: point its events at the exec. */
        ep_mod(s, x->sb.ctl, EPOLLIN, &x->ev_ctl);
        ep_mod(s, x->sb.pidfd, EPOLLIN, &x->ev_pid);
    }
    if (x->timer < 0 || timerfd_settime(x->timer, 0, &its, NULL) < 0 ||
        ep_add(s, x->timer, EPOLLIN, &x->ev_timer) < 0 || (!p && ep_add(s, x->sb.ctl, EPOLLIN, &x->ev_ctl) < 0) ||
        ep_add(s, x->sb.out, EPOLLIN, &x->ev_out) < 0 || (!p && ep_add(s, x->sb.pidfd, EPOLLIN, &x->ev_pid) < 0)) {
        mini_err_sys(&e, MINI_E_SPAWN_FAILED, errno, "watching the sandbox");
        ep_del(s, x->timer);
        ep_del(s, x->sb.ctl);
        ep_del(s, x->sb.out);
        ep_del(s, x->sb.pidfd);
        goto fail;
    }
    x->next = s->execs;
    s->execs = x;
    s->execs_total++;
    ss->running++;
    c->running++;
    s->running++;
    if (ready)
        exec_launch(s, x);
    /* Commands side by side: replace what this one took now that its
     * launch is out, so that the next one finds a sandbox prepared.  A
     * command on its own leaves that to its exit (after the reply): a
     * replacement prepared meanwhile would compete with it for the CPU
     * and hold up the daemon's handling of its exit. */
    if (ss->running > 1)
        pool_fill(s, ss);
    return;
fail:
    send_error(s, c, req->id, &e);
    exec_free(x);
}

static void do_cancel(struct server *s, struct client *c, const struct mini_req *req)
{
    struct exec *x = exec_find(s, c, req->u.cancel.target);
    if (!x) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_NO_SUCH_EXEC, "no running command with id %lld", (long long)req->u.cancel.target);
        send_error(s, c, req->id, &e);
        return;
    }
    exec_kill(x, MINI_LIMIT_CANCELLED);
    send_ok(s, c, req->id);
}

static void session_close(struct server *s, struct client *c, struct session *ss, enum mini_limit why)
{
    for (struct session **pp = &c->sessions; *pp; pp = &(*pp)->next)
        if (*pp == ss) {
            *pp = ss->next;
            break;
        }
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->session == ss)
            exec_kill(x, why);
    ss->closed = true;
    c->n_sessions--;
    s->n_sessions--;
    while (ss->pool)
        pool_discard(s, ss->pool);
    session_unref(ss);
}

static void do_close(struct server *s, struct client *c, const struct mini_req *req)
{
    struct session *ss = session_find(c, req->u.close.session);
    if (!ss) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_NO_SUCH_SESSION, "no session \"%s\" on this connection", req->u.close.session);
        send_error(s, c, req->id, &e);
        return;
    }
    session_close(s, c, ss, MINI_LIMIT_CANCELLED);
    send_ok(s, c, req->id);
}

static void do_hello(struct server *s, struct client *c, const struct mini_req *req)
{
    if (req->u.hello.version != MINI_PROTO_VERSION) {
        struct mini_err e;
        mini_err_set(&e, MINI_E_BAD_REQUEST, "hello.version: this daemon speaks version %d, not %lld",
                     MINI_PROTO_VERSION, (long long)req->u.hello.version);
        send_error(s, c, req->id, &e);
        return;
    }
    struct mini_rep rep = { .op = MINI_OP_HELLO, .id = req->id };
    rep.u.hello.version = MINI_PROTO_VERSION;
    rep.u.hello.server = "mini-sandboxd " MINI_VERSION;
    cJSON *f = cJSON_CreateObject();
    cJSON_AddBoolToObject(f, "rootless", geteuid() != 0);
    cJSON_AddNumberToObject(f, "uid", geteuid());
    cJSON_AddStringToObject(f, "limits_by",
                            s->cgroups.mode == MINI_CG_NONE ? "rlimits" : mini_cg_mode_name(s->cgroups.mode));
    cJSON_AddBoolToObject(f, "prepared_sandboxes", true);
    cJSON *lim = cJSON_AddObjectToObject(f, "limits");
    cJSON_AddNumberToObject(lim, "connections", MAX_CLIENTS);
    cJSON_AddNumberToObject(lim, "sessions", MAX_SESSIONS);
    cJSON_AddNumberToObject(lim, "sessions_per_connection", MAX_SESSIONS_PER_CLIENT);
    cJSON_AddNumberToObject(lim, "running", MAX_RUNNING);
    cJSON_AddNumberToObject(lim, "running_per_connection", MAX_RUNNING_PER_CLIENT);
    cJSON_AddNumberToObject(lim, "unread_reply_bytes", WQ_MAX);
    cJSON *machine = mini_caps_to_json(&s->caps);
    if (machine)
        cJSON_AddItemToObject(f, "machine", machine);
    rep.u.hello.features = f;
    send_rep(s, c, &rep);
    cJSON_Delete(f);
}

static void do_stats(struct server *s, struct client *c, const struct mini_req *req)
{
    struct mini_rep rep = { .op = MINI_OP_STATS, .id = req->id };
    int64_t sessions = 0, running = 0;
    for (struct client *k = s->clients; k; k = k->next)
        for (struct session *ss = k->sessions; ss; ss = ss->next)
            sessions++;
    for (struct exec *x = s->execs; x; x = x->next)
        running += !x->finished;
    rep.u.stats.sessions = sessions;
    rep.u.stats.running = running;
    rep.u.stats.execs_total = s->execs_total;
    rep.u.stats.clients = (int64_t)s->n_clients;
    rep.u.stats.uptime_ms = (mini_mono_ns() - s->start_ns) / 1000000;
    send_rep(s, c, &rep);
}

/* -------------------------------------------------------------- clients */

static void client_close(struct server *s, struct client *c)
{
    ep_del(s, c->fd);
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c) {
            exec_kill(x, MINI_LIMIT_DISCONNECT);
            x->client = NULL;
            if (x->out_paused && x->sb.out >= 0) {
                x->out_paused = false;
                ep_mod(s, x->sb.out, EPOLLIN, &x->ev_out);
            }
        }
    while (c->sessions)
        session_close(s, c, c->sessions, MINI_LIMIT_DISCONNECT);
    for (struct client **pp = &s->clients; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    s->n_clients--;
    if (s->accept_paused && s->lfd >= 0) {
        s->accept_paused = false;
        ep_mod(s, s->lfd, EPOLLIN, &s->ev_listen);
    }
    mini_close(c->fd);
    c->fd = -1;
    c->dead = true;
    c->next = s->dead_clients;
    s->dead_clients = c;
    if (s->cfg->inherit_fd >= 0)
        s->stopping = true;
}

static void client_resume_outputs(struct server *s, struct client *c)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c && x->out_paused) {
            x->out_paused = false;
            if (x->sb.out >= 0)
                ep_mod(s, x->sb.out, EPOLLIN, &x->ev_out);
        }
}

static void client_flush(struct server *s, struct client *c)
{
    size_t off = c->wq_off;
    while (off < c->wq.len) {
        ssize_t n = send(c->fd, c->wq.data + off, c->wq.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* The client is gone: drop what it will never read. */
        off = c->wq.len;
        c->closing = true;
        break;
    }
    /* Sent bytes are dropped when all is sent, or compacted once they are
     * half of the buffer: each byte is moved at most once. */
    if (off == c->wq.len) {
        mini_buf_reset(&c->wq);
        off = 0;
    } else if (off > c->wq.len / 2) {
        mini_buf_consume(&c->wq, off);
        off = 0;
    }
    c->wq_off = off;
    if (wq_pending(c) > WQ_MAX && !c->closing) {
        /* Never read, and past anything one client may hold: dropped. */
        log_warn("client pid %d: %zu bytes of replies unread; closing the connection", (int)c->pid, wq_pending(c));
        c->closing = true;
        c->wq_off = c->wq.len;   /* what it will never read */
        ep_mod(s, c->fd, EPOLLOUT | EPOLLRDHUP, &c->ev);
        c->want_out = true;
        return;
    }
    bool want = wq_pending(c) > 0;
    /* Backpressure: a client that does not read its replies gets no
     * more requests read either. */
    bool pause = wq_pending(c) > WQ_PAUSE || (c->read_paused && wq_pending(c) > WQ_RESUME);
    if (want != c->want_out || pause != c->read_paused) {
        c->want_out = want;
        c->read_paused = pause;
        ep_mod(s, c->fd, (c->closing || pause ? 0 : EPOLLIN) | (want ? EPOLLOUT : 0) | EPOLLRDHUP, &c->ev);
    }
    if (wq_pending(c) < WQ_RESUME)
        client_resume_outputs(s, c);
}

static void dispatch(struct server *s, struct client *c, const char *payload, size_t len)
{
    struct mini_req req;
    struct mini_err e;
    int64_t id = -1;
    if (mini_req_decode(payload, len, &req, &id, &e) < 0) {
        send_error(s, c, id, &e);
        return;
    }
    switch (req.op) {
    case MINI_OP_HELLO: do_hello(s, c, &req); break;
    case MINI_OP_OPEN: do_open(s, c, &req); break;
    case MINI_OP_EXEC: do_exec(s, c, &req); break;
    case MINI_OP_CANCEL: do_cancel(s, c, &req); break;
    case MINI_OP_CLOSE: do_close(s, c, &req); break;
    case MINI_OP_STATS: do_stats(s, c, &req); break;
    default: break;
    }
    mini_req_free(&req);
}

static void client_readable(struct server *s, struct client *c)
{
    char buf[65536];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        struct mini_err e;
        if (n == 0 && c->rd.in.len > c->rd.consumed) {
            /* The peer shut its side mid-frame: say so, it may still read. */
            mini_err_set(&e, MINI_E_BAD_REQUEST, "the stream ended inside a frame (%zu bytes of it received)",
                         c->rd.in.len - c->rd.consumed);
            goto bad;
        }
        if (n <= 0) {
            client_close(s, c);
            return;
        }
        if (mini_frame_reader_feed(&c->rd, buf, (size_t)n, &e) < 0)
            goto bad;
        const char *payload;
        size_t len;
        int r;
        while ((r = mini_frame_reader_next(&c->rd, &payload, &len, &e)) == 1)
            dispatch(s, c, payload, len);
        if (r < 0)
            goto bad;
        continue;
    bad:
        /* A broken stream cannot be resynchronised: say why, then close. */
        send_error(s, c, -1, &e);
        c->closing = true;
        ep_mod(s, c->fd, EPOLLOUT | EPOLLRDHUP, &c->ev);
        c->want_out = true;
        if (wq_pending(c) == 0)
            client_close(s, c);
        return;
    }
}

static bool peer_allowed(struct server *s, int fd, pid_t *pid)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return false;
    *pid = cr.pid;
    if (cr.uid != geteuid() && cr.uid != 0) {
        log_warn("refusing a client with uid %u", (unsigned)cr.uid);
        return false;
    }
    /* Host root, as DESIGN.md promises.  A rootless daemon may not look at
     * root's /proc/PID/ns; and no sandbox appears as uid 0 here, since
     * sandboxes map to unprivileged host ids only. */
    if (cr.uid == 0 && geteuid() != 0)
        return true;
    /* A process in another user namespace (a sandbox, say) is refused
     * even when its uid maps to ours. */
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)cr.pid);
    if (cr.pid <= 0 || stat(path, &st) < 0 || st.st_ino != s->userns) {
        log_warn("refusing pid %d: not in the daemon's user namespace", (int)cr.pid);
        return false;
    }
    return true;
}

static int client_add(struct server *s, int fd)
{
    struct client *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->ev = (struct ev){ EV_CLIENT, c };
    mini_frame_reader_init(&c->rd);
    mini_set_nonblock(fd, 1);
    if (ep_add(s, fd, EPOLLIN | EPOLLRDHUP, &c->ev) < 0) {
        close(fd);
        free(c);
        return -1;
    }
    c->next = s->clients;
    s->clients = c;
    s->n_clients++;
    return 0;
}

static void accept_clients(struct server *s)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of fds: waiting clients stay in the backlog until one
                 * of ours goes (client_close resumes), instead of a busy loop. */
                log_warn("accept: %s: not accepting until a client closes", strerror(errno));
                ep_mod(s, s->lfd, 0, &s->ev_listen);
                s->accept_paused = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                log_warn("accept: %s", strerror(errno));
            }
            return;
        }
        pid_t pid;
        if (!peer_allowed(s, fd, &pid)) {
            close(fd);
            continue;
        }
        if (s->n_clients >= MAX_CLIENTS) {
            struct mini_err e;
            struct mini_buf b = MINI_BUF_INIT;
            mini_err_set(&e, MINI_E_BUSY, "the daemon serves " MINI_STR(MAX_CLIENTS) " connections, the most it may");
            cJSON *j = mini_error_json(-1, &e);
            if (j && mini_frame_encode_json(&b, j, &e) == 0)
                (void)!send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
            cJSON_Delete(j);
            mini_buf_free(&b);
            close(fd);
            continue;
        }
        if (client_add(s, fd) == 0)
            s->clients->pid = pid;
    }
}

/* ------------------------------------------------------------ the loop */

static int listen_on(struct server *s, const char *path, struct mini_err *e)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        return mini_err_set(e, MINI_E_IO, "socket path %s: too long", path);
    strcpy(sa.sun_path, path);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->lfd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "socket");
    /* A socket file left by a dead daemon is replaced; a live one is not. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(probe);
        return mini_err_set(e, MINI_E_BUSY, "%s: another daemon is listening there", path);
    }
    mini_close(probe);
    unlink(path);
    mode_t old = umask(0177);
    int r = bind(s->lfd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "binding %s", path);
    if (listen(s->lfd, 128) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "listening on %s", path);
    return 0;
}

static void kill_all(struct server *s)
{
    for (struct exec *x = s->execs; x; x = x->next)
        exec_kill(x, MINI_LIMIT_SHUTDOWN);
    while (s->execs) {
        struct exec *x = s->execs;
        s->execs = x->next;
        exec_free(x);   /* kills and reaps synchronously */
    }
}

static void bury(struct server *s)
{
    while (s->dead_execs) {
        struct exec *x = s->dead_execs;
        s->dead_execs = x->next;
        exec_free(x);
    }
    while (s->dead_pooled) {
        struct pooled *p = s->dead_pooled;
        s->dead_pooled = p->next;
        free(p);
    }
    while (s->dead_clients) {
        struct client *c = s->dead_clients;
        s->dead_clients = c->next;
        mini_frame_reader_free(&c->rd);
        mini_buf_free(&c->wq);
        free(c);
    }
}

static bool ev_dead(const struct ev *ev)
{
    switch (ev->kind) {
    case EV_CLIENT:
        return ((const struct client *)ev->obj)->dead;
    case EV_CTL: case EV_OUT: case EV_PID: case EV_TIMER: case EV_STDIN:
        return ((const struct exec *)ev->obj)->dead;
    case EV_POOL_CTL: case EV_POOL_PID:
        return ((const struct pooled *)ev->obj)->dead;
    default:
        return false;
    }
}

static void handle(struct server *s, struct ev *ev, uint32_t events)
{
    if (ev_dead(ev))
        return;
    switch (ev->kind) {
    case EV_LISTEN:
        accept_clients(s);
        break;
    case EV_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(s->sfd, &si, sizeof si) == sizeof si) {
            log_info("signal %u: stopping", si.ssi_signo);
            s->stopping = true;
        }
        break;
    }
    case EV_CLIENT: {
        struct client *c = ev->obj;
        if ((events & EPOLLOUT) || c->closing) {
            client_flush(s, c);
            if (c->closing && wq_pending(c) == 0) {
                client_close(s, c);
                break;
            }
        }
        if (!c->closing && !c->read_paused && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            client_readable(s, c);
        else if (!c->closing && (events & (EPOLLHUP | EPOLLERR)))
            client_close(s, c);
        break;
    }
    case EV_CTL:
        exec_drain_ctl(s, ev->obj);
        break;
    case EV_OUT:
        exec_read_out(s, ev->obj);
        break;
    case EV_PID:
        exec_reap(s, ev->obj);
        break;
    case EV_TIMER: {
        struct exec *x = ev->obj;
        uint64_t ticks;
        if (read(x->timer, &ticks, sizeof ticks) == sizeof ticks)
            exec_kill(x, MINI_LIMIT_TIMEOUT);
        break;
    }
    case EV_STDIN:
        exec_write_stdin(s, ev->obj);
        break;
    case EV_POOL_CTL:
    case EV_POOL_PID:
        pool_event(s, ev->obj, ev->kind == EV_POOL_PID);
        break;
    }
}

static void server_free(struct server *s)
{
    kill_all(s);
    while (s->clients)
        client_close(s, s->clients);
    bury(s);
    mini_cgroups_fini(&s->cgroups);
    mini_ws_guard_free(&s->guard);
    mini_uid_range_free(&s->uids);
    while (s->bpf_cache) {
        struct bpf_cache *c = s->bpf_cache;
        s->bpf_cache = c->next;
        mini_bpf_free(&c->bpf);
        free(c->key);
        free(c);
    }
    if (s->lfd >= 0 && s->cfg->socket_path)
        unlink(s->cfg->socket_path);
    mini_close(s->lfd);
    mini_close(s->sfd);
    mini_close(s->ep);
    mini_close(s->init_fd);
    free(s->root_dir);
    if (s->audit)
        fclose(s->audit);
}

int mini_server_run(const struct mini_server_cfg *cfg, struct mini_err *e)
{
    struct server s = { .cfg = cfg, .ep = -1, .lfd = -1, .sfd = -1, .init_fd = -1, .start_ns = mini_mono_ns(),
                        .ev_listen = { EV_LISTEN, NULL } };
    struct ev ev_sig = { EV_SIGNAL, NULL };
    int rc = -1;
    struct stat st;
    if (stat("/proc/self/ns/user", &st) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "/proc/self/ns/user");
        goto out;
    }
    s.userns = st.st_ino;
    if ((s.init_fd = mini_sandbox_open_init(e)) < 0)
        goto out;
    /* What this machine can isolate, and per-command cgroups where the
     * daemon may create them; the probe is corrected to what was set up so
     * that no reply promises more than the commands get. */
    if (mini_caps_detect(&s.caps, e) < 0)
        goto out;
    struct mini_err cge;
    if (mini_cgroups_init_limits(&s.cgroups, &s.caps, &cge) < 0)
        log_warn("cgroups: %s; limits fall back to rlimits", cge.msg);
    mini_cgroups_update_caps(&s.cgroups, &s.caps);
    log_info("cgroups: %s", s.cgroups.note);
    if (asprintf(&s.root_dir, "%s/root", cfg->state_dir) < 0) {
        s.root_dir = NULL;
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto out;
    }
    if (mkdir(s.root_dir, 0700) < 0 && errno != EEXIST) {
        mini_err_sys(e, MINI_E_IO, errno, "creating %s", s.root_dir);
        goto out;
    }
    char *sockdir = cfg->socket_path ? strdup(cfg->socket_path) : NULL;
    char *slash = sockdir ? strrchr(sockdir, '/') : NULL;
    if (slash)
        slash[slash == sockdir] = '\0';
    int gr = mini_ws_guard_init(&s.guard, slash ? sockdir : NULL, cfg->state_dir, e);
    free(sockdir);
    if (gr < 0 || (geteuid() == 0 && mini_uid_range_init(&s.uids, e) < 0))
        goto out;
    sweep_sessions(&s);
    if (cfg->audit_log && !(s.audit = fopen(cfg->audit_log, "ae"))) {
        mini_err_sys(e, MINI_E_IO, errno, "opening the audit log %s", cfg->audit_log);
        goto out;
    }
    s.ep = epoll_create1(EPOLL_CLOEXEC);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s.ep < 0 || s.sfd < 0 || ep_add(&s, s.sfd, EPOLLIN, &ev_sig) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "setting up the event loop");
        goto out;
    }
    if (cfg->inherit_fd >= 0) {
        if (client_add(&s, cfg->inherit_fd) < 0) {
            mini_err_sys(e, MINI_E_IO, errno, "serving fd %d", cfg->inherit_fd);
            goto out;
        }
    } else {
        if (listen_on(&s, cfg->socket_path, e) < 0 || ep_add(&s, s.lfd, EPOLLIN, &s.ev_listen) < 0)
            goto out;
        log_info("listening on %s", cfg->socket_path);
        if (cfg->ready_fd > 0) {
            mini_write_all(cfg->ready_fd, "1", 1);
            close(cfg->ready_fd);
        }
    }
    while (!s.stopping) {
        struct epoll_event evs[64];
        int n = epoll_wait(s.ep, evs, 64, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            mini_err_sys(e, MINI_E_IO, errno, "epoll_wait");
            goto out;
        }
        for (int i = 0; i < n; i++)
            handle(&s, evs[i].data.ptr, evs[i].events);
        /* Objects finished in this batch may still have had events in it. */
        bury(&s);
    }
    rc = 0;
out:
    server_free(&s);
    return rc;
}
