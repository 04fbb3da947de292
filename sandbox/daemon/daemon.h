/* The daemon's internals, shared by its three parts:
 *   server.c   the event loop, clients, dispatch of requests, hello, stats;
 *   session.c  sessions (open, close) and their pool of prepared sandboxes;
 *   exec.c     commands: exec, cancel, output, stdin, exit.
 * Private to sandbox/daemon/; the daemon's public face is server.h. */
#ifndef MINI_SANDBOX_DAEMON_H
#define MINI_SANDBOX_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "caps.h"
#include "cgroup.h"
#include "mounts.h"
#include "outbuf.h"
#include "server.h"
#include "spawn.h"
#include "workspace.h"
#include "uidrange.h"
#include "netpolicy.h"
#include "mini/buf.h"
#include "mini/profile.h"
#include "mini/proto.h"

/* Milliseconds from stamp a to stamp b (mini_mono_ns); -1 when either was
 * not taken (the per-step timers, MINI_SANDBOX_TIMING). */
static inline double span_ms(int64_t a, int64_t b) { return a && b ? (double)(b - a) / 1e6 : -1; }

/* MINI_SANDBOX_TIMING: an open's steps (do_open, open_finish), 0 where not
 * taken. */
struct open_times {
    int64_t start, profile, ids, cloned, compiled;
};

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
 * stays usable; a connection over the connections cap (--max-clients, by
 * default MAX_CLIENTS or less where the open-files limit is low, see
 * FDS_PER_CLIENT) gets `busy` and is closed.
 * Sized for a batch user on a small machine: 128 commands at once is far
 * past what 2 cores run usefully, while each holds only pipes, a pidfd
 * and a timer in the daemon. */
#define MAX_CLIENTS 256
/* The default connections cap is what the open-files limit gives once
 * FD_RESERVE fds are set aside for the daemon's own (listener, epoll,
 * signalfd, log, audit, the spare): FDS_PER_CLIENT each, its socket and
 * about one session's workspace and one prepared sandbox.  Past the limit
 * anyway (sessions and commands hold more), requests get `busy`. */
#define FD_RESERVE 32
#define FDS_PER_CLIENT 4
/* A connection holding part of a frame for this long gets bad_request
 * and is closed (--frame-timeout). */
#define FRAME_TIMEOUT_S 30
#define MAX_SESSIONS 256
#define MAX_SESSIONS_PER_CLIENT 16
#define MAX_RUNNING 128
#define MAX_RUNNING_PER_CLIENT 64
#define MINI_STR_(x) #x
#define MINI_STR(x) MINI_STR_(x)
#define READ_CHUNK (256u * 1024u)

enum ev_kind {
    EV_LISTEN,
    EV_SIGNAL,
    EV_CLIENT,
    EV_CTL,
    EV_OUT,
    EV_PID,
    EV_TIMER,
    EV_STDIN,
    EV_POOL_CTL,
    EV_POOL_PID,
    EV_DISK,
    EV_MEASURE,
    EV_MOUNTS, /* the mount table changed (mounts.h, wake_fd) */
    EV_HOLDER, /* an id-mapping namespace's holder has exited */
    EV_PROXY_LISTEN, /* proxy.c: a sandbox's listener, a connection's ends, */
    EV_PROXY_CLIENT, /* the resolver process, the deadline timer */
    EV_PROXY_UP,
    EV_PROXY_DNS,
    EV_PROXY_TICK
};

/* The network allowlist's proxy (proxy.c, docs/profiles.md): the most
 * connections it holds for all sessions (two fds each), and name lookups
 * in flight in the resolver process. */
#define PROXY_MAX_CONNS 1024
#define MAX_LOOKUPS 64

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
struct bpf_cache;
/* Seccomp programs kept compiled that no open session uses (session.c):
 * the sessions' own are kept too, so the cache holds at most this plus
 * the number of open sessions. */
#define BPF_CACHE_IDLE_MAX 16
struct proxy;
struct proxy_listener;
struct mini_netrule;

/* A session's allowlist, compiled, and what its connections used. */
struct session_net {
    struct mini_netrule *allow, *deny;
    size_t n_allow, n_deny;
    struct mini_net_pins pins; /* the profile's network.resolve */
    int conns;        /* open now */
    uint64_t in, out; /* bytes, since the session opened */
};

/* The disk watch (disk.c): how often the filesystems' use is polled while
 * a command runs, and the most entries a session's trees may hold to be
 * measured (past it, an open with disk_mb is refused, and a measure while
 * commands run counts as over the limit). */
#define DISK_POLL_MS 50
#define DISK_MAX_ENTRIES 2000000u
/* A tree of at most this many entries is measured at open on the loop
 * itself (well under a millisecond), not in a forked process. */
#define DISK_INLINE_ENTRIES 256u
/* A measure looks at the processes of at most this many of a session's
 * sandboxes (more counts as a measure that failed). */
#define DISK_MAX_INITS MAX_RUNNING

/* A process measuring a session's trees (disk.c): at open, the session's
 * `opened` waits for it; while commands run, it checks the limit. */
enum measure_kind { MEASURE_OPEN, MEASURE_CHECK };
struct measure {
    struct measure *next; /* in the server's list */
    enum measure_kind kind;
    bool abandoned; /* nobody waits for the result: killed, dropped */
    pid_t pid;
    int fd; /* the result comes on this pipe */
    struct ev ev;
    struct session *ss;    /* holds a reference */
    struct client *client; /* MEASURE_OPEN: who gets `opened` (NULL: gone) */
    int64_t req_id;
    uint64_t used; /* MEASURE_CHECK: the filesystems' use when it started */
    uint32_t gen;  /* its number in its session's disk watch (started) */
};

struct disk_watch {
    bool on;        /* enforced for this session */
    uint64_t limit; /* the profile's disk_bytes; 0: none */
    int fd[2], n;   /* the trees: the workspace, the overlay's upper */
    dev_t dev[2];
    bool overlay; /* the session has an overlay root: its files have the overlay's st_dev */
    uid_t uid[3];  /* the host uids the session's files may have (held files of others are not its) */
    int n_uid;
    uint64_t base, total; /* the trees' bytes at open, and at the last measure */
    uint64_t mark;        /* filesystems' used bytes at which to measure again */
    char *note;           /* while over the limit: said in every exit */
    struct measure *busy; /* the measure in flight, or NULL */
    uint32_t started;     /* measures started so far (their gen) */
    int64_t t_open;       /* mono ns the measure at open started */
    char why[320];        /* how it is enforced, or why not */
};

/* One sandbox and what the daemon made for it, released together
 * (slot_release): its process and channels, the command's cgroup, and on
 * the degraded path the command's private TMPDIR.  A prepared sandbox in
 * the pool holds one; a command takes it over. */
struct sandbox_slot {
    struct mini_sandbox sb;
    struct mini_cgroup cg; /* the command's cgroup, when cgroups are used */
    char *tmpdir;          /* degraded path: the command's private TMPDIR */
    uint64_t hidden;       /* hidden_sig() before it was prepared */
    uint64_t mount_gen;    /* the server's mount change count then (mounts.h) */
    bool mounts_moved;     /* the mount table changed while it copied it: discard it unused */
    bool seccomp_pending;  /* GO went without the seccomp program (open_finish sends it) */
};
#define SANDBOX_SLOT_INIT                                                            \
    {                                                                                \
        .sb = MINI_SANDBOX_INIT, .cg = MINI_CGROUP_INIT, .tmpdir = NULL, .hidden = 0 \
    }

struct session {
    struct session *next; /* in its client's list */
    char id[24];
    int refs; /* the client's, plus one per exec */
    bool closed;
    struct pooled *pool; /* prepared sandboxes, not yet used */
    int pool_n;
    int running;      /* commands in flight */
    bool park;        /* a command said exec.last: kept on close (park_close) */
    bool pool_failed; /* preparing failed: spawn on demand, which reports why */
    /* Back to back (exec.c, do_exec): when its last command's exit was
     * sent, and how long its last prepared sandbox took to be ready. */
    int64_t last_exit_ns, prepare_ns;
    struct mini_profile *profile;
    struct bpf_cache *bpf_entry; /* its policy's entry in the server's cache */
    const struct mini_bpf *bpf;  /* that entry's program; NULL until compiled (open_finish) */
    struct open_times t_open;
    char *workspace;
    int ws_fd;
    uid_t host_uid; /* the host ids the sandbox's processes run as */
    gid_t host_gid;
    uid_t inner_uid; /* what they are inside (the only ids mapped): 0, or an image's User */
    gid_t inner_gid;
    int root_slot;   /* root daemon, image User not root: a second slot, whose ids are the image's root */
    long root_host_uid, root_host_gid; /* those ids, else -1 */
    uid_t owner_uid; /* the host ids its files in the workspace get */
    gid_t owner_gid;
    int uid_slot;     /* root daemon: its slot in the server's uid range, else -1 */
    int idmap_userns; /* a user namespace mapping owner -> host ids, or -1 */
    /* The idmap probe's detached mount (session_ids), or -1: closed after
     * the open's reply, since closing a detached mount waits for an RCU
     * grace period (0.16 ms here). */
    int probe_mount;
    /* Its template of the root (session_template), -1 until made; the
     * hidden_sig() it was made at; off: not for this session. */
    int template_fd;
    uint64_t template_sig;
    bool template_off;
    bool template_moved; /* the mount table changed while it was built: made again */
    /* The host's mounts under its binds (mounts.h), as of the server's
     * mount change count mounts_seen; known: read at least once. */
    uint64_t mounts_hash, mounts_seen;
    bool mounts_known;
    unsigned n_prepared; /* sandboxes prepared, counted up to TEMPLATE_AFTER */
    /* hidden_sig() as pool_take found it, for what the same exec prepares
     * next; set only within do_exec. */
    uint64_t hidden_memo;
    bool hidden_memo_set;
    bool idmap;
    struct mini_uid_range *uids; /* where uid_slot goes back to */
    struct mini_env env;
    struct mini_assessment assess; /* what this machine gives the profile */
    char *overlay_dir;             /* upper/work of the session's writable root, or NULL */
    char *image_root;              /* the root of the session's image (open.image), or NULL */
    struct mini_env image_env;     /* its config's Env */
    char *image_workdir;           /* its config's WorkingDir (the default cwd), or NULL */
    int image_userns;              /* root daemon: image uid inner_uid -> host_uid (an idmapping), else -1 */
    int image_hold;                /* mini_image_hold() on it, else -1 */
    struct disk_watch disk;
    struct session_net net;
};

struct pooled {
    struct pooled *next; /* in its session's pool, the closing list, or the graveyard */
    bool dead;
    bool ready;
    bool closing; /* its session closed: killed, reaped when its pidfd says so */
    int64_t born_ns; /* when its preparation began */
    struct session *ss;
    struct sandbox_slot slot;
    struct ev ev_ctl, ev_pid;
};

struct client {
    struct client *next; /* in the daemon's list, or the graveyard */
    bool dead;
    int fd;
    struct ev ev;
    struct mini_frame_reader rd;
    struct mini_buf wq; /* encoded frames; wq_off bytes of it already sent */
    size_t wq_off;
    bool want_out;
    bool closing;          /* stop reading; close once wq is flushed */
    bool read_paused;      /* too many unsent replies: requests wait */
    int64_t partial_since; /* mono ns: part of a frame held since; 0: none */
    struct session *sessions;
    int n_sessions;
    int running; /* its commands in flight */
    pid_t pid;
};

struct exec {
    struct exec *next;     /* in the daemon's list, or the graveyard */
    bool dead;             /* finished; freed after this epoll batch */
    struct client *client; /* NULL once the client is gone */
    struct session *session;
    int64_t id;
    struct sandbox_slot slot;
    int timer;
    int disk_timer; /* the disk watch's poll, or -1 */
    struct ev ev_ctl, ev_out, ev_pid, ev_timer, ev_stdin, ev_disk;
    bool stream;
    bool last; /* exec.last: no replacement is prepared for it */
    bool out_paused;
    bool out_eof, reaped, have_status;
    bool accepted;              /* init has read the launch (MINI_CTL_ACCEPTED) */
    /* MINI_SANDBOX_TIMING: after start_ns (request parsed), the launch
     * sent, ACCEPTED read, the status read; 0 where not taken. */
    struct {
        int64_t launch, accepted, status;
    } t;
    bool retried;               /* the first sandbox died before accepting: this is the second */
    bool finished;              /* exit sent; kept only until init is reaped */
    bool disk_wait;             /* done: its exit waits for the disk watch's measure */
    uint32_t disk_gen;          /* ... number disk_gen (one started after its end) */
    int status;                 /* wait status of the command */
    int init_status;            /* wait status of init, once reaped */
    int64_t cpu_us, max_rss_kb; /* from init's report, else from reaping init */
    struct rusage ru;
    enum mini_limit limit;
    struct mini_err err; /* pre-exec failure, when code != OK */
    char *note;          /* exec failure text */
    struct mini_outbuf out;
    char carry[4]; /* incomplete UTF-8 at the end of the last chunk */
    size_t carry_len;
    char **argv, **envp;
    char *cwd;
    char *stdin_data;
    size_t stdin_len, stdin_off;
    int64_t start_ns;
    struct proxy_listener *proxy; /* network allowlist: accepting on the sandbox's listener */
};

struct server {
    const struct mini_server_cfg *cfg;
    int ep, lfd, sfd;
    struct client *clients, *dead_clients;
    struct exec *execs, *dead_execs;
    struct pooled *dead_pooled;
    struct pooled *closing_pooled; /* of closed sessions, killed, not yet reaped */
    struct measure *measures;      /* the disk watch's, in flight */
    size_t pooled_total;
    uint64_t next_session;
    int64_t execs_total, start_ns;
    size_t n_clients;
    size_t max_clients;       /* the connections cap */
    int64_t frame_timeout_ns; /* for a partial frame (0: none) */
    int spare_fd;             /* given up at EMFILE to accept and refuse */
    int64_t fd_warn_ns;       /* when "out of fds" was last logged */
    uint64_t fd_refused;      /* connections refused for want of fds since */
    size_t n_partial;         /* clients holding part of a frame */
    int n_sessions, running;
    bool accept_paused; /* out of fds: the listener waits for a client to go */
    struct ev ev_listen;
    struct ev ev_mounts;
    bool stopping;
    bool sweep_pending; /* sweep_sessions has not run yet */
    char *root_dir;
    int sessions_lock;     /* owner lock <state>/sessions/<pid>.lock, or -1 */
    char *tmp_parent;      /* /tmp/mini-sandboxd.XXXXXX: the Landlock path's TMPDIRs, or NULL */
    int tmp_lock;          /* owner lock on tmp_parent, or -1 */
    int init_fd;           /* mini-sandbox-init */
    struct mini_caps caps; /* what this machine can isolate */
    struct mini_cgroups cgroups;
    struct mount_watch mounts; /* changes of the daemon's mount table (hidden_sig) */
    int64_t mounts_due_ns;     /* when to hash the sessions' mounts ahead (0: not due) */
    uint64_t next_cgroup;
    struct bpf_cache *bpf_cache; /* one seccomp program per distinct policy */
    ino_t userns;
    FILE *audit;
    struct mini_ws_guard guard; /* what a workspace must not be or hold */
    struct mini_uid_range uids; /* root daemon: host ids for sessions */
    struct proxy *proxy;        /* proxy.c */
    /* Filesystems (st_dev) whose workspaces have been idmapped: the probe
     * of session_ids is not repeated for them (it costs a mount's teardown). */
    dev_t idmap_ok[16];
    size_t n_idmap_ok;
    /* The workspace id mapping the next root session most likely needs
     * (the last one's owner to the next uid slot), made after an open's
     * reply instead of on the next open's path: it costs a fork.  fd -1:
     * none. */
    struct {
        uid_t from, to;
        gid_t gfrom, gto;
        int fd;
    } idmap_next;
    /* The processes that held id-mapping namespaces while their maps were
     * written (mini_idmap_holder), and the builders of templates of the
     * root (mini_sandbox_template), reaped when their pidfds say they have
     * exited instead of waited for on the loop; pid 0: a free entry (when
     * none is, the next one is waited for). */
    struct idmap_holder {
        struct mini_idmap_holder h;
        struct ev ev;
    } holders[8];
    /* A one-shot client's session, closed and kept with one prepared
     * sandbox for the next open of the same workspace and profile
     * (park_close, park_claim), until parked_until; NULL: none. */
    struct session *parked;
    char *parked_key; /* its profile as canonical JSON */
    int64_t parked_until;
};

/* ------------------------------------------------------------ server.c */

int ep_add(struct server *s, int fd, uint32_t events, struct ev *ev);
void ep_mod(struct server *s, int fd, uint32_t events, struct ev *ev);
void ep_del(struct server *s, int fd);
/* Unsent reply bytes of a client. */
size_t wq_pending(const struct client *c);
/* Queue a reply and send what the socket takes; c may be NULL (gone). */
void send_rep(struct server *s, struct client *c, const struct mini_rep *rep);
void send_error(struct server *s, struct client *c, int64_t id, const struct mini_err *e);
void send_ok(struct server *s, struct client *c, int64_t id);

/* ----------------------------------------------------------- session.c */

void do_open(struct server *s, struct client *c, const struct mini_req *req);
/* The rest of an open, once the disk watch has measured the workspace:
 * the session joins c (NULL: gone, the session is dropped) and `opened`
 * goes out. */
void open_finish(struct server *s, struct client *c, struct session *ss, int64_t req_id);
void do_close(struct server *s, struct client *c, const struct mini_req *req);
struct session *session_find(struct client *c, const char *id);
/* Close a session of c: its commands are killed (why), its pool emptied. */
void session_close(struct server *s, struct client *c, struct session *ss, enum mini_limit why);
/* Drop a reference (the client's, or a command's); the last frees it. */
void session_unref(struct session *ss);
/* Prepare one sandbox for the session into slot (SANDBOX_SLOT_INIT on
 * failure). */
int slot_prepare(struct server *s, struct session *ss, struct sandbox_slot *slot, struct mini_err *e);
/* Kill, reap and remove everything of the slot; leaves it SANDBOX_SLOT_INIT. */
void slot_release(struct sandbox_slot *slot);
/* Top the session's pool up (see session.c). */
void pool_fill(struct server *s, struct session *ss);
/* A one-shot session kept, closed, with a prepared sandbox for the next
 * open like it: drop it (its sandbox killed), and the epoll timeout until
 * it expires (dropped then), or -1. */
void park_drop(struct server *s);
int park_timeout(struct server *s);
/* fds held for sessions not yet opened, and the uid blocks' locks
 * (stats.held_ahead). */
int64_t held_ahead(const struct server *s);
/* A live prepared sandbox for a command, ready ones first; NULL if none. */
struct pooled *pool_take(struct server *s, struct session *ss);
/* Bury an entry taken from the pool (freed after this epoll batch). */
void pool_bury(struct server *s, struct pooled *p);
/* Kill the session's prepared sandboxes; each holds a reference to it
 * until reaped (a session that never opened may have one: park_claim). */
void pool_retire_all(struct server *s, struct session *ss);
/* Reap and release the closed sessions' prepared sandboxes now (shutdown). */
void pool_reap_closing(struct server *s);
/* A prepared sandbox's control socket or pidfd is readable. */
void pool_event(struct server *s, struct pooled *p, bool exited);
/* The mount table changed (EV_MOUNTS): once it has been still for a
 * moment (pool_mounts_timeout says when: 0 now, -1 nothing due), the
 * sessions with prepared sandboxes hash their mounts (pool_mounts_hash),
 * so that their next command need not read the table. */
void pool_mounts_changed(struct server *s);
int pool_mounts_timeout(const struct server *s);
void pool_mounts_hash(struct server *s);
/* Reclaim what daemons that are gone left: their session overlays in the
 * state directory and their Landlock-path TMPDIRs.  A live daemon's, known
 * by its owner lock, are never touched.  Once, while s->sweep_pending: at
 * start before listening; in a private daemon after the requests its
 * client queued before it started (hello and open, whose first sandbox is
 * then already being prepared); and in any case before this daemon's first
 * overlay, whose name (its own pid) the sweep would take for a dead
 * daemon's (session_overlay). */
void sweep_sessions(struct server *s);
/* Release this daemon's owner locks and its TMPDIR parent (at stop). */
void sessions_fini(struct server *s);
/* The state directory and its root mount point, made again (0700, the
 * daemon's) when someone removed them under the running daemon; else an
 * error that names the state directory. */
int state_dir_ensure(struct server *s, struct mini_err *e);
/* A free entry of s->holders, or NULL; hand a helper to it (its pidfd in
 * the loop's epoll). */
struct idmap_holder *holder_slot(struct server *s);
void holder_adopt(struct server *s, struct idmap_holder *x, const struct mini_idmap_holder *h);
/* A holder or builder has exited (EV_HOLDER): reap it. */
void idmap_holder_reaped(struct server *s, struct idmap_holder *x);
/* Free the seccomp programs (at stop). */
void bpf_cache_free(struct server *s);
/* How many programs the cache holds (stats.seccomp_programs). */
size_t bpf_cache_count(const struct server *s);

/* -------------------------------------------------------------- exec.c */

void do_exec(struct server *s, struct client *c, const struct mini_req *req);
void do_cancel(struct server *s, struct client *c, const struct mini_req *req);
/* Kill the command's sandbox; why becomes its limit unless it has one. */
void exec_kill(struct exec *x, enum mini_limit why);
void exec_free(struct exec *x);
/* The command is done: its exit (or error) goes out. */
void exec_finish(struct server *s, struct exec *x);
/* The sandbox's events: control socket, output, exit, timeout, stdin. */
void exec_drain_ctl(struct server *s, struct exec *x);
void exec_read_out(struct server *s, struct exec *x);
void exec_reap(struct server *s, struct exec *x);
void exec_timer(struct server *s, struct exec *x);
void exec_write_stdin(struct server *s, struct exec *x);
/* At stop: kill every command and reap it synchronously. */
void kill_all(struct server *s);

/* -------------------------------------------------------------- disk.c */

/* Set up the session's disk watch (after its overlay).  1: its trees are
 * being measured, and open_finish(c, req_id) follows when they are (or
 * the open's error, the session dropped); 0: no measure (measured here,
 * or not watched: said in disk_json); -1: the watch could not be set up
 * (e: busy for the daemon's resources, else why the workspace cannot be
 * watched), and the open must fail: a disk_mb is never silently off. */
int disk_open(struct server *s, struct client *c, struct session *ss, int64_t req_id, struct mini_err *e);
void disk_close(struct session *ss);
/* isolation.workspace_quota of `opened`. */
void disk_json(const struct session *ss, cJSON *o);
/* A command starts (before it counts in ss->running): its poll timer,
 * x->disk_timer (-1 when not watched; the caller adds it to epoll).  -1
 * when the timer cannot be had. */
int disk_exec_start(struct exec *x);
void disk_tick(struct server *s, struct exec *x);
/* A command ended (before its exit is sent): the last check, timer gone.
 * 1: the exit waits for a measure (x->disk_wait), sent by disk_measured. */
int disk_exec_end(struct server *s, struct exec *x);
/* A measuring process's pipe is readable: its result applied. */
void disk_measured(struct server *s, struct measure *m);
/* c is closing: the opens it waits for are dropped. */
void disk_client_gone(struct server *s, struct client *c);
/* At stop: every measure stopped and dropped. */
void disk_fini(struct server *s);

/* ------------------------------------------------------------- proxy.c */

/* The pins (--resolve) and the deadline timer; the resolver process is
 * started at the first lookup a pin does not answer. */
int proxy_init(struct server *s, struct mini_err *e);
void proxy_fini(struct server *s);
/* Compile the profile's allowlist into ss->net (open). */
int session_net_open(struct session *ss, struct mini_err *e);
void session_net_close(struct session *ss);
/* The command is launched: accept on its sandbox's listener, if it has one. */
void proxy_start(struct server *s, struct exec *x);
/* The command is over: its connections end, the listener closes. */
void proxy_stop(struct exec *x);
void proxy_event(struct server *s, struct ev *ev, uint32_t events);
bool proxy_ev_dead(const struct ev *ev);
/* Free what was closed in this epoll batch. */
void proxy_bury(struct server *s);

#endif
