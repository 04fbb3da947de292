/* The daemon's core, shared by its parts: the server (server.c: the
 * event loop, clients, dispatch of requests, hello, stats), the sessions
 * (session.c: what a session is, open and close, and the one call that
 * gets a command its sandbox), and the commands (exec.c).  Each cache and
 * each other part has its own header:
 *   loop.h      epoll events;             sandbox.h  preparing a sandbox;
 *   pool.h      prepared sandboxes;       park.h     the parked session;
 *   roott.h     the root's template and the mount watch;
 *   idmap.h     id mappings kept ahead;   seccache.h compiled seccomp programs;
 *   statedir.h  the state directory and the sweep;  helpers.h  helpers reaped;
 *   disk.h      the disk watch;           proxy.h    the network proxy.
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
#include "disk.h"
#include "helpers.h"
#include "idmap.h"
#include "loop.h"
#include "outbuf.h"
#include "park.h"
#include "pool.h"
#include "proxy.h"
#include "roott.h"
#include "sandbox.h"
#include "seccache.h"
#include "server.h"
#include "spawn.h"
#include "statedir.h"
#include "workspace.h"
#include "uidrange.h"
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

/* Whose ids a session's sandboxes run as and its files get (session.c,
 * session_ids; docs/isolation.md, "Whose ids a sandbox runs as"). */
struct session_ids {
    uid_t host_uid; /* the host ids the sandbox's processes run as */
    gid_t host_gid;
    uid_t inner_uid; /* what they are inside (the only ids mapped): 0, or an image's User */
    gid_t inner_gid;
    int root_slot; /* root daemon, image User not root: a second slot, whose ids are the image's root */
    long root_host_uid, root_host_gid; /* those ids, else -1 */
    uid_t owner_uid;                   /* the host ids its files in the workspace get */
    gid_t owner_gid;
    int uid_slot;                /* root daemon: its slot in the server's uid range, else -1 */
    struct mini_uid_range *uids; /* where uid_slot goes back to */
    bool idmap;                  /* the workspace is idmapped */
    int idmap_userns;            /* a user namespace mapping owner -> host ids, or -1 */
    /* The idmap probe's detached mount, or -1: closed after the open's
     * reply, since closing a detached mount waits for an RCU grace period
     * (0.16 ms here). */
    int probe_mount;
};

/* The session's image (open.image), when it has one. */
struct session_image {
    char *root;          /* its root in the daemon's store, or NULL */
    struct mini_env env; /* its config's Env */
    char *workdir;       /* its config's WorkingDir (the default cwd), or NULL */
    int userns;          /* root daemon: image uid inner_uid -> host_uid (an idmapping), else -1 */
    int hold;            /* mini_image_hold() on it, else -1 */
};

struct session {
    struct session *next; /* in its client's list */
    char id[24];
    int refs; /* the client's, plus one per exec, plus one per retired prepared sandbox */
    bool closed;
    int running; /* commands in flight */
    bool park;   /* a command said exec.last: kept on close (session_close) */
    struct mini_profile *profile;
    struct open_times t_open;
    char *workspace;
    int ws_fd;
    struct session_ids ids;
    struct session_image image;
    struct mini_env env;
    struct mini_assessment assess; /* what this machine gives the profile */
    char *overlay_dir;             /* upper/work of the session's writable root, or NULL */
    struct disk_watch disk;
    struct session_net net;
    struct pool_of pool;              /* its prepared sandboxes */
    struct roott_tree tree;           /* its template of the root */
    struct seccache_entry *bpf_entry; /* its policy's entry in the seccomp cache */
    const struct mini_bpf *bpf;       /* that entry's program; NULL until compiled (open_finish) */
    /* The signature as sandbox_acquire took it (roott.h), for what the same
     * exec prepares next; set only within do_exec. */
    struct {
        uint64_t sig;
        bool set;
    } memo;
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
    bool accepted; /* init has read the launch (MINI_CTL_ACCEPTED) */
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

/* What this machine gives the sandboxes, found at start. */
struct host {
    struct mini_caps caps; /* what this machine can isolate */
    struct mini_cgroups cgroups;
    uint64_t next_cgroup;
    int init_fd;  /* mini-sandbox-init */
    ino_t userns; /* the daemon's user namespace */
};

/* The connections: the listener and the clients. */
struct conns {
    struct client *clients, *dead_clients;
    size_t n_clients;
    size_t max_clients;       /* the connections cap */
    int64_t frame_timeout_ns; /* for a partial frame (0: none) */
    size_t n_partial;         /* clients holding part of a frame */
    int lfd;
    struct ev ev_listen;
    bool accept_paused;  /* out of fds: the listener waits for a client to go */
    int spare_fd;        /* given up at EMFILE to accept and refuse */
    int64_t fd_warn_ns;  /* when "out of fds" was last logged */
    uint64_t fd_refused; /* connections refused for want of fds since */
};

struct server {
    const struct mini_server_cfg *cfg;
    int ep, sfd;
    struct conns conns;
    struct exec *execs, *dead_execs;
    int64_t execs_total, start_ns;
    int n_sessions, running;
    uint64_t next_session;
    bool stopping;
    struct measure *measures; /* the disk watch's, in flight */
    FILE *audit;
    struct mini_ws_guard guard; /* what a workspace must not be or hold */
    struct mini_uid_range uids; /* root daemon: host ids for sessions */
    struct proxy *proxy;        /* proxy.c */
    struct host host;
    struct statedir statedir;
    struct helpers helpers;
    /* The caches (--caches=off turns each off). */
    struct pool_cache pool;
    struct park park;
    struct roott roott;
    struct idmap idmap;
    struct seccache seccache;
};

static inline int ep_add(struct server *s, int fd, uint32_t events, struct ev *ev)
{
    return loop_add(s->ep, fd, events, ev);
}
static inline void ep_mod(struct server *s, int fd, uint32_t events, struct ev *ev) { loop_mod(s->ep, fd, events, ev); }
static inline void ep_del(struct server *s, int fd) { loop_del(s->ep, fd); }

/* ------------------------------------------------------------- reply.c */

/* Unsent reply bytes of a client. */
size_t wq_pending(const struct client *c);
/* Queue a reply and send what the socket takes; c may be NULL (gone). */
void send_rep(struct server *s, struct client *c, const struct mini_rep *rep);
void send_error(struct server *s, struct client *c, int64_t id, const struct mini_err *e);
void send_ok(struct server *s, struct client *c, int64_t id);
/* Send what c's socket takes of its queue, and apply the backpressure. */
void client_flush(struct server *s, struct client *c);

/* ----------------------------------------------------------- session.c */

void do_open(struct server *s, struct client *c, const struct mini_req *req);
/* The rest of an open, once the disk watch has measured the workspace:
 * the session joins c (NULL: gone, the session is dropped) and `opened`
 * goes out. */
void open_finish(struct server *s, struct client *c, struct session *ss, int64_t req_id);
void do_close(struct server *s, struct client *c, const struct mini_req *req);
struct session *session_find(struct client *c, const char *id);
/* Close a session of c: its commands are killed (why), its pool emptied,
 * or it is parked. */
void session_close(struct server *s, struct client *c, struct session *ss, enum mini_limit why);
/* Drop a reference (the client's, or a command's); the last frees it. */
void session_unref(struct session *ss);
/* Drop a session whose open failed or was abandoned: the sandboxes it may
 * have taken from a parked session are killed, the open's reference
 * dropped. */
void session_drop(struct server *s, struct session *ss);
/* The caches' wiring to the sessions, set up at start (caches: false for
 * --caches=off). */
void sessions_init(struct server *s, bool caches);
/* A sandbox for a command of ss: a prepared one from its pool (which holds
 * a parked session's when the session took one at open), else one prepared
 * now.  *ready: it has said READY.  -1 with e filled. */
int sandbox_acquire(struct server *s, struct session *ss, struct sandbox_slot *slot, bool *ready, struct mini_err *e);
/* A command of ss was launched (last: exec.last), or has finished. */
void session_launched(struct server *s, struct session *ss, bool last, int64_t start_ns);
void session_finished(struct server *s, struct session *ss, bool last);
/* A prepared sandbox's control socket or pidfd is readable. */
void session_pool_event(struct server *s, struct pooled *p, bool exited);
/* The parked session's epoll timeout (it is dropped when it expires), or
 * -1; drop it now (at stop). */
int session_park_timeout(struct server *s);
void session_unpark(struct server *s);
/* The mount table has settled: sessions with prepared sandboxes hash
 * their mounts ahead of their next command. */
void sessions_hash_mounts(struct server *s);
/* stats: sandboxes being prepared, and fds held for sessions not yet
 * opened and the uid blocks' locks (held_ahead). */
int64_t sessions_preparing(const struct server *s);
int64_t sessions_held_ahead(const struct server *s);

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

#endif
