/* The pool of prepared sandboxes (pool.h). */
#include "pool.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/log.h"

#include <poll.h>
#include <stdlib.h>

void pool_of_init(struct pool_of *of) { *of = (struct pool_of){ .list = NULL }; }

static void unlink_entry(struct pool_of *of, struct pooled *p)
{
    for (struct pooled **pp = &of->list; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            of->n--;
            return;
        }
}

/* Bury an entry (it may still have events in this epoll batch). */
void pool_bury(struct pool_cache *pc, struct pooled *p)
{
    pc->total--;
    p->dead = true;
    p->next = pc->dead;
    pc->dead = p;
}

void pool_free_buried(struct pool_cache *pc)
{
    while (pc->dead) {
        struct pooled *p = pc->dead;
        pc->dead = p->next;
        free(p);
    }
}

static void discard(struct pool_cache *pc, struct pooled *p)
{
    unlink_entry(p->of, p);
    loop_del(pc->ep, p->slot.sb.ctl);
    loop_del(pc->ep, p->slot.sb.pidfd);
    slot_release(&p->slot);
    pool_bury(pc, p);
}

void pool_fill(struct pool_cache *pc, struct pool_of *of, struct session *ss, int want, const char *sid)
{
    if (!pc->enabled)
        return;
    if (want > POOL_SESSION_MAX)
        want = POOL_SESSION_MAX;
    while (!of->failed && of->n < want && pc->total < POOL_TOTAL_MAX) {
        struct pooled *p = calloc(1, sizeof *p);
        if (!p)
            return;
        struct mini_err e;
        if (pc->ops->prepare(pc->ctx, ss, &p->slot, &e) < 0) {
            /* Commands of this session now spawn on demand, which reports the error. */
            log_warn("session %s: preparing a sandbox: %s", sid, e.msg);
            of->failed = true;
            free(p);
            return;
        }
        p->ss = ss;
        p->sid = sid;
        p->of = of;
        p->born_ns = mini_mono_ns();
        p->ev_ctl = (struct ev){ EV_POOL_CTL, p };
        p->ev_pid = (struct ev){ EV_POOL_PID, p };
        if (loop_add(pc->ep, p->slot.sb.ctl, EPOLLIN, &p->ev_ctl) < 0 ||
            loop_add(pc->ep, p->slot.sb.pidfd, EPOLLIN, &p->ev_pid) < 0) {
            loop_del(pc->ep, p->slot.sb.ctl);
            slot_release(&p->slot);
            free(p);
            of->failed = true;
            return;
        }
        p->next = of->list;
        of->list = p;
        of->n++;
        pc->total++;
    }
}

void pool_send_seccomp(struct pool_cache *pc, struct pool_of *of, const struct mini_bpf *bpf, const char *sid)
{
    for (struct pooled *p = of->list, *next; p; p = next) {
        next = p->next;
        struct mini_err e;
        if (!p->slot.seccomp_pending)
            continue;
        if (mini_sandbox_send_seccomp(&p->slot.sb, bpf, &e) < 0) {
            log_warn("session %s: %s", sid, e.msg);
            discard(pc, p);
            continue;
        }
        p->slot.seccomp_pending = false;
    }
}

/* Whether a prepared sandbox has died (killed from outside) without its
 * events having been handled yet: its control socket hung up or its pidfd
 * is readable. */
static bool is_dead(const struct pooled *p)
{
    struct pollfd f[2] = { { .fd = p->slot.sb.ctl, .events = POLLRDHUP },
                           { .fd = p->slot.sb.pidfd, .events = POLLIN } };
    if (poll(f, 2, 0) <= 0)
        return false;
    return (f[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) || (f[1].revents & POLLIN);
}

struct pooled *pool_take(struct pool_cache *pc, struct pool_of *of, uint64_t sig)
{
    struct pooled *best = NULL;
    for (struct pooled *p = of->list, *next; p; p = next) {
        next = p->next;
        /* One not READY yet may be copying the mount table as it changes
         * (see pool_event): not taken if it has changed since it was
         * prepared. */
        if (is_dead(p) || p->slot.hidden != sig || p->slot.mounts_moved ||
            (!p->ready && p->slot.mount_gen != pc->mounts->events))
            discard(pc, p);
        else if (!best || (p->ready && !best->ready))
            best = p;
    }
    if (best)
        unlink_entry(of, best);
    return best;
}

/* A prepared sandbox of a session being closed: killed now, and reaped
 * (its cgroups and tmpdir removed) when its pidfd says it has died, so
 * that neither the close's reply nor the next client waits for it.  It
 * holds a reference to its session (and so its uid slot) until then. */
static void retire(struct pool_cache *pc, struct pooled *p)
{
    unlink_entry(p->of, p);
    pc->ops->ref(p->ss);
    p->closing = true;
    loop_del(pc->ep, p->slot.sb.ctl);
    mini_sandbox_kill(&p->slot.sb);
    p->next = pc->closing;
    pc->closing = p;
}

void pool_retire(struct pool_cache *pc, struct pool_of *of, int keep)
{
    while (of->list && of->n > keep)
        retire(pc, of->list);
}

static void reaped(struct pool_cache *pc, struct pooled *p)
{
    for (struct pooled **pp = &pc->closing; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    loop_del(pc->ep, p->slot.sb.pidfd);
    slot_release(&p->slot);
    struct session *ss = p->ss;
    pool_bury(pc, p);
    pc->ops->unref(ss);
}

void pool_reap_closing(struct pool_cache *pc)
{
    while (pc->closing)
        reaped(pc, pc->closing);
}

bool pool_event(struct pool_cache *pc, struct pooled *p, bool exited)
{
    if (p->closing) {
        if (exited)
            reaped(pc, p);
        return false;
    }
    bool failed = true;
    if (!exited) {
        struct mini_ctl_msg m;
        int r = mini_sandbox_read_ctl(&p->slot.sb, &m);
        if (r == -2)
            return false;
        if (r == 1 && m.type == MINI_CTL_READY) {
            p->ready = true;
            /* Its root is built: it copied the mount table somewhere since
             * it was prepared.  A change in between (one undone before the
             * next look, say) may be in it with no trace in the signature. */
            p->slot.mounts_moved = mount_watch_events(pc->mounts) != p->slot.mount_gen;
            p->of->prepare_ns = mini_mono_ns() - p->born_ns;
            MINI_SB_MARK(&p->slot.sb.t, ready);
            return false;
        }
        if (r == 1 && m.type == MINI_CTL_ERROR)
            log_warn("session %s: a prepared sandbox failed: %s", p->sid, m.text);
        else
            failed = !p->ready;
    } else {
        failed = !p->ready;
    }
    /* Preparing failed: the session's commands spawn on demand from now
     * on, which reports why.  A ready sandbox that died was killed from
     * outside (a user, the OOM killer): replaced. */
    if (failed)
        p->of->failed = true;
    discard(pc, p);
    return !failed;
}

void pool_move(struct pool_of *dst, struct session *ss, const char *sid, struct pool_of *src)
{
    for (struct pooled *p = src->list; p; p = p->next) {
        p->ss = ss;
        p->sid = sid;
        p->of = dst;
    }
    dst->list = src->list;
    dst->n = src->n;
    src->list = NULL;
    src->n = 0;
}

int64_t pool_preparing(const struct pool_of *of)
{
    int64_t n = 0;
    for (const struct pooled *p = of->list; p; p = p->next)
        n += !p->ready && !p->dead;
    return n;
}

int64_t pool_fds(const struct pool_of *of)
{
    int64_t n = 0;
    for (const struct pooled *p = of->list; p; p = p->next) {
        const struct mini_sandbox *sb = &p->slot.sb;
        int fds[] = { sb->pidfd, sb->ctl, sb->out, sb->in, sb->listen_fd, p->slot.cg.fd };
        for (size_t i = 0; i < MINI_ARRAY_SIZE(fds); i++)
            n += fds[i] >= 0;
    }
    return n;
}

bool pool_back_to_back(const struct pool_of *of, int64_t now)
{
    return of->last_exit_ns && now - of->last_exit_ns < of->prepare_ns;
}
