/* Commands: `exec` takes a prepared sandbox (or makes one), launches the
 * command in it, streams and keeps its output, feeds its stdin, enforces
 * its timeout, and replies `exit` once init has reported and the output
 * has ended; `cancel` kills it. */
#include "daemon.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/json.h"
#include "mini/log.h"
#include "mini/path.h"
#include "mini/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- execs */

void exec_free(struct exec *x)
{
    proxy_stop(x);
    slot_release(&x->slot);
    mini_close(x->timer);
    mini_close(x->disk_timer);
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

void exec_kill(struct exec *x, enum mini_limit why)
{
    if (x->disk_wait) /* it is over: only its exit is still to go */
        return;
    if (x->limit == MINI_LIMIT_NONE)
        x->limit = why;
    mini_sandbox_kill(&x->slot.sb);
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
    /* One write() per line (not stdio, which splits a long one), so that
     * daemons and mini runs sharing the file never tear a line. */
    struct mini_err e;
    if (mini_json_append_line(fileno(s->audit), o, &e) < 0)
        mini_log(MINI_LOG_WARN, "audit log: %s", e.msg);
    cJSON_Delete(o);
}

static void emit_output(struct server *s, struct exec *x, const char *p, size_t n)
{
    if (!x->stream || !x->client)
        return;
    _cleanup_buf_ struct mini_buf raw = MINI_BUF_INIT;
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_buf_append(&raw, x->carry, x->carry_len) < 0 || mini_buf_append(&raw, p, n) < 0)
        return;
    size_t keep = raw.len - mini_utf8_incomplete_tail(raw.data, raw.len);
    x->carry_len = raw.len - keep;
    memcpy(x->carry, raw.data + keep, x->carry_len);
    if (keep == 0 || mini_utf8_sanitize(&text, raw.data, keep) < 0)
        return;
    struct mini_rep rep = { .op = MINI_OP_OUTPUT, .id = x->id };
    rep.u.output.data = text.data;
    rep.u.output.len = text.len;
    send_rep(s, x->client, &rep);
}

/* One line per command under MINI_SANDBOX_TIMING=1: its sandbox's
 * preparation step by step (in the daemon: cgroup, clone, id maps, GO,
 * cgroup attach; in the child: root, confinement, exec of init, until
 * READY), then the daemon's side of the command from its parsed request to
 * its exit sent (docs/sandbox-lifecycle.md). */
static void exec_log_timing(const struct exec *x)
{
    const struct mini_sb_times *t = &x->slot.sb.t;
    int64_t sent = mini_mono_ns();
    const struct mini_child_times *c = &t->child;
    /* v2 makes the cgroup before the clone, v1 after the id maps. */
    bool late = t->cgroup > t->idmap;
    double cg = late ? span_ms(t->idmap, t->cgroup) : span_ms(t->start, t->cgroup);
    double clone = late ? span_ms(t->start, t->clone) : span_ms(t->cgroup, t->clone);
    double go = late ? span_ms(t->cgroup, t->go) : span_ms(t->idmap, t->go);
    log_info("timing: exec %lld: prepare %.3f ms [cgroup %.3f, clone %.3f, id maps %.3f, go %.3f, attach %.3f; "
             "child to ready %.3f (unshare %.3f, wait for go %.3f, root %.3f, confine %.3f, init exec %.3f)], %s; "
             "request to launch %.3f, to accepted %.3f, to status %.3f, to exit sent %.3f ms",
             (long long)x->id, span_ms(t->start, t->ready), cg, clone, span_ms(t->clone, t->idmap), go,
             span_ms(t->go, t->attach), span_ms(t->attach, t->ready), span_ms(t->clone, c->unshared),
             span_ms(c->unshared, c->go), span_ms(c->go, c->rooted), span_ms(c->rooted, c->confined),
             span_ms(c->confined, t->ready),
             t->ready && t->ready < x->start_ns ? "ready before the request" : "ready after it",
             span_ms(x->start_ns, x->t.launch), span_ms(x->start_ns, x->t.accepted), span_ms(x->start_ns, x->t.status),
             span_ms(x->start_ns, sent));
}

void exec_finish(struct server *s, struct exec *x)
{
    int64_t ms = (mini_mono_ns() - x->start_ns) / 1000000;
    x->disk_wait = disk_exec_end(s, x) > 0;
    if (x->disk_wait)
        return; /* disk_measured calls again */
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
        /* The daemon's SIGTERM ended it: 143, as a command that got it. */
        ex->returncode = 128 + (x->limit == MINI_LIMIT_SHUTDOWN ? SIGTERM : SIGKILL);
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
    if (x->slot.cg.cg) {
        /* The cgroup saw the whole tree, also what was killed unreaped. */
        struct mini_cgroup_result r;
        mini_cgroup_result(&x->slot.cg, &r);
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
    char *notes[4] = { NULL, NULL, NULL, NULL };
    size_t nn = 0;
    if (x->note)
        notes[nn++] = x->note;
    if (x->session->disk.note)
        notes[nn++] = x->session->disk.note;
    if (x->session->assess.status == MINI_ASSESS_DEGRADED)
        notes[nn++] = x->session->assess.summary;
    ex->notes = notes;
    ex->n_notes = nn;
    send_rep(s, x->client, &rep);
    if (mini_sb_timing)
        exec_log_timing(x);
    audit(s, x, ex->returncode, ms);
    mini_buf_free(&out);
done:
    log_debug("exec %lld finished in %lld ms", (long long)x->id, (long long)ms);
    proxy_stop(x);
    x->session->running--;
    s->running--;
    if (x->client)
        x->client->running--;
    session_finished(s, x->session, x->last);
    x->finished = true;
    x->client = NULL;
    ep_del(s, x->timer);
    mini_close(x->timer);
    x->timer = -1;
    ep_del(s, x->slot.sb.ctl);
    mini_close(x->slot.sb.ctl);
    x->slot.sb.ctl = -1;
    if (x->reaped)
        exec_bury(s, x);
    /* else init is exiting (nothing of the command is left): it is reaped
     * when its pidfd says so, off the client's path. */
}

/* Watch one of the command's fds (what names it in the error). */
static int exec_watch(struct server *s, int fd, struct ev *ev, const char *what, struct mini_err *e)
{
    if (ep_add(s, fd, EPOLLIN, ev) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "watching the sandbox (%s)", what);
    return 0;
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
    ep_del(s, x->slot.sb.ctl);
    ep_del(s, x->slot.sb.out);
    ep_del(s, x->slot.sb.pidfd);
    ep_del(s, x->slot.sb.in);
    proxy_stop(x);
    slot_release(&x->slot);
    x->out_eof = x->reaped = x->out_paused = false;
    x->stdin_off = 0;
    if (slot_prepare(s, x->session, &x->slot, &x->err) < 0) {
        x->out_eof = x->reaped = true; /* nothing left to wait for */
        return false;
    }
    int r = exec_watch(s, x->slot.sb.ctl, &x->ev_ctl, "its control socket", &x->err);
    if (r == 0)
        r = exec_watch(s, x->slot.sb.out, &x->ev_out, "its output", &x->err);
    if (r == 0)
        r = exec_watch(s, x->slot.sb.pidfd, &x->ev_pid, "its pidfd", &x->err);
    if (r < 0) {
        ep_del(s, x->slot.sb.ctl);
        ep_del(s, x->slot.sb.out);
        slot_release(&x->slot);
        x->out_eof = x->reaped = true;
        return false;
    }
    return true;
}

/* Done when the output has ended and init has either reported the
 * command's status (having killed and reaped everything else) or died. */
static void exec_maybe_finish(struct server *s, struct exec *x)
{
    if (!x->finished && !x->disk_wait && x->out_eof && (x->reaped || x->have_status) && !exec_retry(s, x))
        exec_finish(s, x);
}

void exec_read_out(struct server *s, struct exec *x)
{
    static char buf[READ_CHUNK];
    for (int rounds = 0; rounds < 16; rounds++) {
        /* Back-pressure: streamed output whose client has not read what it
         * was sent stays in the pipe (the command blocks writing it) until
         * the client catches up (client_resume_outputs).  Checked before
         * reading: each of a non-reading client's commands would otherwise
         * add a chunk of its own past the bound. */
        if (x->stream && x->client && wq_pending(x->client) > WQ_PAUSE) {
            ep_mod(s, x->slot.sb.out, 0, &x->ev_out);
            x->out_paused = true;
            return;
        }
        ssize_t n = read(x->slot.sb.out, buf, sizeof buf);
        if (n > 0) {
            mini_outbuf_add(&x->out, buf, (size_t)n);
            emit_output(s, x, buf, (size_t)n);
            continue;
        }
        if (n == 0) {
            ep_del(s, x->slot.sb.out);
            mini_close(x->slot.sb.out);
            x->slot.sb.out = -1;
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

void exec_write_stdin(struct server *s, struct exec *x)
{
    while (x->stdin_off < x->stdin_len) {
        ssize_t n = write(x->slot.sb.in, x->stdin_data + x->stdin_off, x->stdin_len - x->stdin_off);
        if (n > 0) {
            x->stdin_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (ep_add(s, x->slot.sb.in, EPOLLOUT, &x->ev_stdin) < 0)
                ep_mod(s, x->slot.sb.in, EPOLLOUT, &x->ev_stdin);
            return;
        }
        break; /* EPIPE: the command closed its stdin */
    }
    ep_del(s, x->slot.sb.in);
    mini_close(x->slot.sb.in);
    x->slot.sb.in = -1;
}

static void exec_launch(struct server *s, struct exec *x)
{
    struct mini_launch l = { .argv = x->argv, .envp = x->envp, .cwd = x->cwd, .has_stdin = x->stdin_data != NULL };
    if (mini_sandbox_launch(&x->slot.sb, &l, &x->err) < 0) {
        /* EPIPE: init was gone before it could read the command, which so
         * never ran; exec_retry takes it from here once init is reaped. */
        if (x->err.sys_errno == EPIPE)
            mini_err_clear(&x->err);
        exec_kill(x, MINI_LIMIT_NONE);
        return;
    }
    MINI_SB_MARK(&x->t, launch);
    proxy_start(s, x);
    if (x->stdin_data) {
        mini_set_nonblock(x->slot.sb.in, 1);
        exec_write_stdin(s, x);
    } else {
        mini_close(x->slot.sb.in);
        x->slot.sb.in = -1;
    }
}

void exec_drain_ctl(struct server *s, struct exec *x)
{
    for (;;) {
        struct mini_ctl_msg m;
        int r = mini_sandbox_read_ctl(&x->slot.sb, &m);
        if (r == -2)
            return;
        if (r <= 0) {
            ep_del(s, x->slot.sb.ctl);
            mini_close(x->slot.sb.ctl);
            x->slot.sb.ctl = -1;
            return;
        }
        switch (m.type) {
        case MINI_CTL_READY:
            MINI_SB_MARK(&x->slot.sb.t, ready);
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
            MINI_SB_MARK(&x->t, accepted);
            break;
        case MINI_CTL_EXEC_FAILED:
            free(x->note);
            x->note = strdup(m.text);
            break;
        case MINI_CTL_STATUS:
            /* Degraded path: what the command left behind is in its
             * process group; nothing of it may run once the client has the
             * status. */
            if (x->slot.sb.group_kill)
                kill(-x->slot.sb.pid, SIGKILL);
            MINI_SB_MARK(&x->t, status);
            x->status = m.status;
            x->cpu_us = m.cpu_us;
            x->max_rss_kb = m.max_rss_kb;
            x->have_status = true;
            exec_maybe_finish(s, x);
            return;
        default: break;
        }
    }
}

void exec_reap(struct server *s, struct exec *x)
{
    int st;
    if (mini_sandbox_reap(&x->slot.sb, &st, &x->ru) <= 0)
        return;
    x->init_status = st;
    ep_del(s, x->slot.sb.pidfd);
    if (x->finished) {
        exec_bury(s, x);
        return;
    }
    if (x->slot.sb.ctl >= 0)
        exec_drain_ctl(s, x);
    x->reaped = true;
    /* Every writer of the output pipe lived in the sandbox's pid
     * namespace and is gone now: what is left can be read to the end. */
    if (x->slot.sb.out >= 0 && !x->out_paused)
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
    /* An image's own variables (its PATH is where its programs are). */
    for (size_t i = 0; i < ss->image.env.n; i++)
        rc |= env_put(&b, ss->image.env.keys[i], ss->image.env.values[i]);
    /* The allowlist's proxy, for every client that reads these; the
     * session's and the request's variables may still replace them. */
    if (p->network == MINI_NET_ALLOW) {
        static const char *const names[] = { "http_proxy",  "HTTP_PROXY", "https_proxy",
                                             "HTTPS_PROXY", "all_proxy",  "ALL_PROXY" };
        for (size_t i = 0; i < MINI_ARRAY_SIZE(names); i++)
            rc |= env_put(&b, names[i], "http://127.0.0.1:" MINI_STR(MINI_NET_PROXY_PORT));
        rc |= env_put(&b, "no_proxy", "localhost,127.0.0.1") | env_put(&b, "NO_PROXY", "localhost,127.0.0.1");
    }
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
static bool image_has_dir(const struct session *ss, const char *path)
{
    int root = open(ss->image.root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return false;
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    while (*path == '/')
        path++;
    int fd = (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof how);
    close(root);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

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
            /* Out of fds: the daemon's state, not the cwd's. */
            if (errno == EMFILE || errno == ENFILE)
                return mini_err_sys(e, MINI_E_BUSY, errno, "cwd %s: the daemon cannot check it now", cwd);
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
    /* An image's own directory (its WorkingDir, say): the sandbox's root
     * is the image, so the path is looked up in it, never on the host. */
    if (ss->image.root && image_has_dir(ss, cwd))
        return 0;
    return mini_err_set(e, MINI_E_CWD_INVALID, "cwd %s: must be inside the workspace %s%s", cwd, ss->workspace,
                        ss->image.root ? " or a directory of the image" : "");
}

/* Everything a command is watched by, step by step: its timeout, the
 * sandbox's fds (a prepared one's control socket and pidfd are watched
 * already), the disk watch's poll.  e names the step that failed. */
static int exec_watch_all(struct server *s, struct exec *x, bool pooled, const struct itimerspec *its,
                          struct mini_err *e)
{
    if (x->timer < 0 || timerfd_settime(x->timer, 0, its, NULL) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "watching the sandbox (the command's timeout)");
    if (exec_watch(s, x->timer, &x->ev_timer, "the command's timeout", e) < 0)
        return -1;
    if (!pooled && exec_watch(s, x->slot.sb.ctl, &x->ev_ctl, "its control socket", e) < 0)
        return -1;
    if (exec_watch(s, x->slot.sb.out, &x->ev_out, "its output", e) < 0)
        return -1;
    if (!pooled && exec_watch(s, x->slot.sb.pidfd, &x->ev_pid, "its pidfd", e) < 0)
        return -1;
    if (disk_exec_start(x) < 0)
        return mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "watching the sandbox (the disk watch's poll)");
    if (x->disk_timer >= 0 && exec_watch(s, x->disk_timer, &x->ev_disk, "the disk watch's poll", e) < 0)
        return -1;
    return 0;
}

static struct exec *exec_find(struct server *s, struct client *c, int64_t id)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->client == c && x->id == id && !x->finished)
            return x;
    return NULL;
}

void do_exec(struct server *s, struct client *c, const struct mini_req *req)
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
        mini_err_set(&e, MINI_E_BUSY, "%s",
                     c->running >= MAX_RUNNING_PER_CLIENT
                         ? "this connection has " MINI_STR(MAX_RUNNING_PER_CLIENT) " commands running, the most it may"
                         : "the daemon runs " MINI_STR(MAX_RUNNING) " commands, the most it may; try again later");
        send_error(s, c, req->id, &e);
        return;
    }
    if (ss->overlay_dir && ss->running > 0) {
        mini_err_set(&e, MINI_E_BUSY,
                     "session %s has a writable overlay (profile %s), which one command at a "
                     "time may mount; wait for the running one, or open another session",
                     ss->id, ss->profile->name);
        send_error(s, c, req->id, &e);
        return;
    }
    /* Default: the image's WorkingDir where it has one, else the workspace. */
    const char *cwd = r->cwd                                        ? r->cwd
        : ss->image.workdir && image_has_dir(ss, ss->image.workdir) ? ss->image.workdir
                                                                    : ss->workspace;
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
    x->timer = x->disk_timer = -1;
    x->slot = (struct sandbox_slot)SANDBOX_SLOT_INIT;
    x->client = c;
    x->session = ss;
    ss->refs++;
    x->id = req->id;
    x->stream = r->stream;
    x->last = r->last;
    ss->park = r->last; /* a one-shot client's: may be parked when it closes (session_close) */
    x->start_ns = mini_mono_ns();
    mini_err_clear(&x->err);
    mini_outbuf_init(&x->out, ss->profile->limits.output_bytes);
    bool ready;
    int pooled = sandbox_acquire(s, ss, &x->slot, &ready, &e);
    if (pooled < 0)
        goto fail;
    x->argv = build_argv(r);
    x->envp = build_env(ss, r, x->slot.tmpdir);
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
    if (pooled) {
        /* Already watched as a pool entry: point its events at the exec. */
        ep_mod(s, x->slot.sb.ctl, EPOLLIN, &x->ev_ctl);
        ep_mod(s, x->slot.sb.pidfd, EPOLLIN, &x->ev_pid);
    }
    if (exec_watch_all(s, x, pooled, &its, &e) < 0) {
        ep_del(s, x->timer);
        ep_del(s, x->disk_timer);
        ep_del(s, x->slot.sb.ctl);
        ep_del(s, x->slot.sb.out);
        ep_del(s, x->slot.sb.pidfd);
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
    session_launched(s, ss, x->last, x->start_ns);
    ss->memo.set = false;
    return;
fail:
    ss->memo.set = false;
    send_error(s, c, req->id, &e);
    exec_free(x);
}

void do_cancel(struct server *s, struct client *c, const struct mini_req *req)
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

void exec_timer(struct server *s, struct exec *x)
{
    uint64_t ticks;
    if (read(x->timer, &ticks, sizeof ticks) == sizeof ticks)
        exec_kill(x, MINI_LIMIT_TIMEOUT);
}

/* Shutdown: wait (bounded) for a killed sandbox's init to be gone, then
 * take what is left of its output. */
static void exec_wait_gone(struct exec *x)
{
    int64_t deadline = mini_mono_ns() + 5000000000LL;
    while (!x->reaped && x->slot.sb.pidfd >= 0 && mini_mono_ns() < deadline) {
        struct pollfd p = { .fd = x->slot.sb.pidfd, .events = POLLIN };
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            break;
        if (mini_sandbox_reap(&x->slot.sb, &x->init_status, &x->ru) > 0)
            x->reaped = true;
    }
    static char buf[READ_CHUNK];
    while (!x->out_eof && x->slot.sb.out >= 0 && mini_mono_ns() < deadline) {
        ssize_t n = read(x->slot.sb.out, buf, sizeof buf);
        if (n > 0) {
            mini_outbuf_add(&x->out, buf, (size_t)n);
            continue;
        }
        if (n == 0) {
            x->out_eof = true;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            break;
        /* Writers of the Landlock path's group may still be dying. */
        struct pollfd p = { .fd = x->slot.sb.out, .events = POLLIN };
        poll(&p, 1, 100);
    }
}

/* SIGTERM: every running command is killed and gets its `exit`, with
 * limit "shutdown", before its connection closes (server.c flushes the
 * replies); then everything is freed. */
void kill_all(struct server *s)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (!x->finished && !x->have_status)
            exec_kill(x, MINI_LIMIT_SHUTDOWN);
    for (struct exec *x = s->execs, *next; x; x = next) {
        next = x->next;
        if (x->finished)
            continue;
        exec_wait_gone(x);
        exec_finish(s, x); /* may bury x */
    }
    while (s->execs) {
        struct exec *x = s->execs;
        s->execs = x->next;
        exec_free(x); /* kills and reaps synchronously */
    }
}
