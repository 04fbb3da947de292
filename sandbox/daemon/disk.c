/* The disk watch: what a session may add to the disk (the profile's
 * `limits.disk_mb`), enforced by the daemon where the kernel gives no
 * quota (docs/isolation.md, "Workspace disk use").
 *
 * A session's trees (its workspace and, for an overlay root, the
 * overlay's upper directory) are measured at open (mini_disk_usage: by
 * fd, each inode once); what they hold above that is the session's use.
 * Measuring a tree costs a walk, so while a command runs the daemon only
 * polls the filesystems' used blocks (statfs, every DISK_POLL_MS) and
 * walks once they have grown by what the session still has left: the
 * session cannot have added more than its filesystems grew.  Over the
 * limit, the session's running commands are killed (`limit: "disk"`) and
 * every exit says so in a note until the session is back under it, so a
 * later command may clean up.  A walk that fails (a directory the daemon
 * may not read, one moved during the walk twice) counts as over: the
 * watch fails closed, and only once the filesystems have grown. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "daemon.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/log.h"

#define MIB_ (1024.0 * 1024.0)

/* Used bytes of the filesystems of the session's trees, each counted once. */
static uint64_t fs_used(const struct disk_watch *w)
{
    uint64_t sum = 0;
    for (int i = 0; i < w->n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= w->dev[j] == w->dev[i];
        struct statvfs st;
        if (!seen && fstatvfs(w->fd[i], &st) == 0)
            sum += (uint64_t)(st.f_blocks - st.f_bfree) * st.f_frsize;
    }
    return sum;
}

/* The trees' total now, or -1 with e filled; one retry for a walk that a
 * rearranged tree cut short. */
static int measure(const struct session *ss, uint64_t *total, struct mini_err *e)
{
    static const char *const what[] = { "the workspace", "the session overlay" };
    const struct disk_watch *w = &ss->disk;
    *total = 0;
    for (int i = 0; i < w->n; i++) {
        uint64_t b = 0;
        int r = mini_disk_usage(w->fd[i], what[i], DISK_MAX_ENTRIES, &b, e);
        if (r < 0 && e->sys_errno == EAGAIN)
            r = mini_disk_usage(w->fd[i], what[i], DISK_MAX_ENTRIES, &b, e);
        if (r < 0)
            return -1;
        *total += b;
    }
    return 0;
}

static void watch_off(struct disk_watch *w, const char *why, const char *detail)
{
    w->on = false;
    snprintf(w->why, sizeof w->why, "%s%s%.200s%s", why, detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
}

void disk_open(struct session *ss)
{
    struct disk_watch *w = &ss->disk;
    w->fd[0] = w->fd[1] = -1;
    w->limit = ss->profile->limits.disk_bytes;
    if (!w->limit) {
        watch_off(w, "the profile sets no disk_mb", NULL);
        return;
    }
    if (ss->profile->workspace_writable)
        w->fd[w->n++] = fcntl(ss->ws_fd, F_DUPFD_CLOEXEC, 0);
    if (ss->overlay_dir) {
        char up[4096];
        snprintf(up, sizeof up, "%s/upper", ss->overlay_dir);
        w->fd[w->n++] = open(up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    for (int i = 0; i < w->n; i++) {
        struct stat st;
        if (w->fd[i] < 0 || fstat(w->fd[i], &st) < 0) {
            watch_off(w, "the session's trees could not be opened", strerror(errno));
            return;
        }
        w->dev[i] = st.st_dev;
    }
    if (w->n == 0) {
        watch_off(w, "nothing the session writes stays on disk: a read-only workspace, no overlay", NULL);
        return;
    }
    struct mini_err e;
    int64_t t0 = mini_mono_ns();
    if (measure(ss, &w->base, &e) < 0) {
        watch_off(w, "disk_mb is not enforced: the workspace could not be measured at open", e.msg);
        log_warn("session %s: %s", ss->id, w->why);
        return;
    }
    w->total = w->base;
    w->on = true;
    snprintf(w->why, sizeof w->why,
             "watched by the daemon: the filesystems' use polled every %d ms while a command runs, "
             "the session's trees measured when they grow; a command may overshoot by what it "
             "writes in that time",
             DISK_POLL_MS);
    log_debug("session %s: %" PRIu64 " bytes at open, measured in %lld ms", ss->id, w->base,
              (long long)((mini_mono_ns() - t0) / 1000000));
}

void disk_close(struct session *ss)
{
    for (int i = 0; i < ss->disk.n; i++)
        mini_close(ss->disk.fd[i]);
    ss->disk.n = 0;
    free(ss->disk.note);
    ss->disk.note = NULL;
}

void disk_json(const struct session *ss, cJSON *o)
{
    const struct disk_watch *w = &ss->disk;
    cJSON *q = cJSON_AddObjectToObject(o, "workspace_quota");
    if (!q)
        return;
    cJSON_AddBoolToObject(q, "enforced", w->on);
    cJSON_AddNumberToObject(q, "limit_mb", (double)(w->limit >> 20));
    if (w->on)
        cJSON_AddStringToObject(q, "mechanism", "watch");
    cJSON_AddStringToObject(q, "reason", w->why);
}

/* What the session has added, from the last measure. */
static uint64_t added(const struct disk_watch *w) { return w->total > w->base ? w->total - w->base : 0; }

/* Measure again when the filesystems pass what the session has left. */
static void set_mark(struct disk_watch *w, uint64_t used)
{
    uint64_t a = added(w);
    w->mark = used + (a < w->limit ? w->limit - a : 0);
}

static void kill_session(struct server *s, struct session *ss)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->session == ss && !x->finished && !x->have_status)
            exec_kill(x, MINI_LIMIT_DISK);
}

/* Measure now; over the limit (or unmeasurable), kill and note. */
static void check(struct server *s, struct session *ss, uint64_t used)
{
    struct disk_watch *w = &ss->disk;
    struct mini_err e;
    uint64_t total;
    char note[512];
    if (measure(ss, &total, &e) < 0) {
        snprintf(note, sizeof note,
                 "disk: the session's trees grew past what disk_mb (%" PRIu64 " MiB) leaves, and could "
                 "not be measured (%.200s): commands are killed until they can be",
                 w->limit >> 20, e.msg);
        w->total = w->base + w->limit + 1;
    } else {
        w->total = total;
        snprintf(note, sizeof note,
                 "disk: the session has added %.1f MiB to its workspace%s, over its disk_mb of %" PRIu64
                 " MiB; commands that write are killed until it is back under",
                 (double)added(w) / MIB_, ss->overlay_dir ? " and overlay" : "", w->limit >> 20);
    }
    free(w->note);
    w->note = NULL;
    if (added(w) > w->limit) {
        w->note = strdup(note);
        log_info("session %s: %s", ss->id, note);
        kill_session(s, ss);
    }
    set_mark(w, used);
}

int disk_exec_start(struct exec *x)
{
    struct disk_watch *w = &x->session->disk;
    x->disk_timer = -1;
    if (!w->on)
        return 0;
    if (x->session->running == 0)
        set_mark(w, fs_used(w));
    x->disk_timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = { .it_interval = { .tv_nsec = DISK_POLL_MS * 1000000L },
                              .it_value = { .tv_nsec = DISK_POLL_MS * 1000000L } };
    x->ev_disk = (struct ev){ EV_DISK, x };
    if (x->disk_timer < 0 || timerfd_settime(x->disk_timer, 0, &its, NULL) < 0)
        return -1;
    return 0;
}

void disk_tick(struct server *s, struct exec *x)
{
    uint64_t ticks;
    if (read(x->disk_timer, &ticks, sizeof ticks) != sizeof ticks || x->finished)
        return;
    struct disk_watch *w = &x->session->disk;
    uint64_t used = fs_used(w);
    if (used >= w->mark)
        check(s, x->session, used);
}

void disk_exec_end(struct server *s, struct exec *x)
{
    if (x->disk_timer < 0)
        return;
    ep_del(s, x->disk_timer);
    mini_close(x->disk_timer);
    x->disk_timer = -1;
    /* The last writes since the last tick: the next command's mark. */
    struct disk_watch *w = &x->session->disk;
    uint64_t used = fs_used(w);
    if (used >= w->mark || w->note) /* over: has this one cleaned up? */
        check(s, x->session, used);
}
