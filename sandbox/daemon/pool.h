/* The pool of prepared sandboxes (docs/sandbox-lifecycle.md, "The pool"):
 * each session keeps up to one more prepared sandbox than it has commands
 * running (the session says how many it wants), at most POOL_SESSION_MAX,
 * and the daemon at most POOL_TOTAL_MAX in all.  Each is used once.
 *
 * The pool does not know what a session is: it prepares through ops, and
 * each entry keeps its session as an opaque owner that it holds a
 * reference to (ops->ref, ops->unref) only while it is being killed after
 * its session closed.  Off (--caches=off): nothing is prepared ahead; every
 * command gets a sandbox made for it. */
#ifndef MINI_SANDBOXD_POOL_H
#define MINI_SANDBOXD_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include "loop.h"
#include "mounts.h"
#include "sandbox.h"
#include "seccomp_prog.h"

#define POOL_SESSION_MAX 8
#define POOL_TOTAL_MAX 64

struct session;

struct pooled {
    struct pooled *next; /* in its session's pool, the closing list, or the graveyard */
    bool dead;
    bool ready;
    bool closing;    /* its session closed: killed, reaped when its pidfd says so */
    int64_t born_ns; /* when its preparation began */
    struct session *ss;
    const char *sid;    /* its session's id, for the log */
    struct pool_of *of; /* its session's pool */
    struct sandbox_slot slot;
    struct ev ev_ctl, ev_pid;
};

/* One session's pool. */
struct pool_of {
    struct pooled *list; /* prepared sandboxes, not yet used */
    int n;
    bool failed; /* preparing failed: spawn on demand, which reports why */
    /* Back to back: when its last command's exit was sent, and how long its
     * last prepared sandbox took to be ready. */
    int64_t last_exit_ns, prepare_ns;
};

struct pool_ops {
    /* Prepare one sandbox of session ss into slot (sandbox.h). */
    int (*prepare)(void *ctx, struct session *ss, struct sandbox_slot *slot, struct mini_err *e);
    void (*ref)(struct session *ss);
    void (*unref)(struct session *ss);
};

struct pool_cache {
    bool enabled;
    int ep;                     /* the loop's epoll fd */
    struct mount_watch *mounts; /* the mount table's change count (roott.h) */
    const struct pool_ops *ops;
    void *ctx;
    size_t total;           /* entries in the sessions' pools */
    struct pooled *dead;    /* buried: freed after this epoll batch */
    struct pooled *closing; /* of closed sessions, killed, not yet reaped */
};

void pool_of_init(struct pool_of *of);

/* Top of's pool up to want (the caller's count, capped here).  Preparing
 * runs in the sandbox's own process; here it costs the clone and the id
 * maps.  A failure marks the pool failed (sid names it in the log). */
void pool_fill(struct pool_cache *pc, struct pool_of *of, struct session *ss, int want, const char *sid);
/* A live prepared sandbox, ready ones first, taken out of the pool; NULL
 * if none.  Dead ones found on the way are discarded, and so are those
 * prepared under another signature than sig (roott.h). */
struct pooled *pool_take(struct pool_cache *pc, struct pool_of *of, uint64_t sig);
/* Bury an entry taken from the pool (freed after this epoll batch). */
void pool_bury(struct pool_cache *pc, struct pooled *p);
/* Free the buried entries (after each epoll batch). */
void pool_free_buried(struct pool_cache *pc);
/* The session's program to the sandboxes prepared before it was compiled;
 * one that cannot take it is discarded. */
void pool_send_seccomp(struct pool_cache *pc, struct pool_of *of, const struct mini_bpf *bpf, const char *sid);
/* Keep at most keep prepared sandboxes; kill the session's others, each
 * holding a reference to the session until reaped. */
void pool_retire(struct pool_cache *pc, struct pool_of *of, int keep);
/* Reap and release the closed sessions' prepared sandboxes now (shutdown). */
void pool_reap_closing(struct pool_cache *pc);
/* A prepared sandbox's control socket or pidfd is readable.  True when
 * its session should prepare a replacement (a ready one died). */
bool pool_event(struct pool_cache *pc, struct pooled *p, bool exited);
/* Hand src's prepared sandboxes to dst, whose session is ss (id sid). */
void pool_move(struct pool_of *dst, struct session *ss, const char *sid, struct pool_of *src);
/* How many of of's are still being prepared; fds its sandboxes hold. */
int64_t pool_preparing(const struct pool_of *of);
int64_t pool_fds(const struct pool_of *of);
static inline bool pool_empty(const struct pool_of *of) { return !of->list; }
/* Whether a command at now came sooner after the session's previous exit
 * than a sandbox takes to prepare: one prepared after that exit could not
 * have been ready for it, nor will the next one's be. */
bool pool_back_to_back(const struct pool_of *of, int64_t now);

#endif
