/* The disk watch of a session's trees (disk.c; docs/profiles.md,
 * "disk_mb"): measured at open, polled while commands run. */
#ifndef MINI_SANDBOXD_DISK_H
#define MINI_SANDBOXD_DISK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "loop.h"

struct server;
struct client;
struct session;
struct exec;

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
    uid_t uid[3]; /* the host uids the session's files may have (held files of others are not its) */
    int n_uid;
    uint64_t base, total; /* the trees' bytes at open, and at the last measure */
    uint64_t mark;        /* filesystems' used bytes at which to measure again */
    char *note;           /* while over the limit: said in every exit */
    struct measure *busy; /* the measure in flight, or NULL */
    uint32_t started;     /* measures started so far (their gen) */
    int64_t t_open;       /* mono ns the measure at open started */
    char why[320];        /* how it is enforced, or why not */
};

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

#endif
