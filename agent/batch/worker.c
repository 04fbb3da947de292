/* One task of a batch, in a worker process of its own (batch.h): a fresh
 * workspace, the task's setup command, the agent, its verify command in a
 * fresh sandbox, and OUT/ID/result.json for the batch to record. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent.h"
#include "batch/batch.h"
#include "config/config.h"
#include "environment.h"
#include "mini/buf.h"
#include "mini/client.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/ws.h"
#include "model.h"
#include "policy/policy.h"

extern char **environ;

/* Bytes of the verify command's output kept in the summary (its tail). */
#define VERIFY_TAIL 4000

static struct mini_agent *volatile w_agent;
static struct mini_environment *volatile w_env;

static void on_signal(int sig)
{
    struct mini_agent *a = w_agent;
    if (a) {
        a->interrupt = 1;
        if (sig != SIGINT)
            a->terminate = 1;
    }
    if (w_env)
        mini_environment_interrupt(w_env);
}

/* How a command that makes a workspace runs (host_run). */
struct host_as {
    bool drop; /* as uid:gid, with no supplementary groups (root making a workspace for them) */
    uid_t uid;
    gid_t gid;
    int cwd_fd;        /* its working directory, or -1 */
    int keep_fd;       /* an fd it inherits (named /proc/self/fd/N in argv), or -1 */
    const char *src;   /* or this directory, opened as that user: the one checked, */
    dev_t src_dev;     /* by identity, so that a path changed since the check is */
    ino_t src_ino;     /* refused */
    mode_t umask;      /* or (mode_t)-1: unchanged */
    char *const *envp; /* or NULL: this process's */
};

/* "mini batch: WHAT: WHY" on stderr (the log), then _exit. */
static _Noreturn void child_fail(const char *what, const char *why)
{
    (void)!write(2, "mini batch: ", 12);
    (void)!write(2, what, strlen(what));
    (void)!write(2, ": ", 2);
    (void)!write(2, why, strlen(why));
    (void)!write(2, "\n", 1);
    _exit(127);
}

/* The child's side of host_run, between fork and exec: system calls only
 * (and strerror), then exec or _exit. */
static _Noreturn void host_child(char *const argv[], int log, const struct host_as *as)
{
    const char *what = "/dev/null";
    if (dup2(log, 1) < 0 || dup2(log, 2) < 0)
        _exit(126);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0)
        goto fail;
    what = "dropping to the workspace's owner";
    if (as->drop &&
        (setgroups(0, NULL) < 0 || setresgid(as->gid, as->gid, as->gid) < 0 ||
         setresuid(as->uid, as->uid, as->uid) < 0))
        goto fail;
    if (as->keep_fd >= 0 && fcntl(as->keep_fd, F_SETFD, 0) < 0)
        goto fail;
    what = "entering the workspace";
    if (as->cwd_fd >= 0 && fchdir(as->cwd_fd) < 0)
        goto fail;
    if (as->src) {
        what = as->src;
        int d = open(as->src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (d < 0 || fstat(d, &st) < 0)
            goto fail;
        if (st.st_dev != as->src_dev || st.st_ino != as->src_ino)
            child_fail(as->src, "not the directory that was checked (it changed since)");
        what = "entering the source directory";
        if (fchdir(d) < 0)
            goto fail;
    }
    if (as->umask != (mode_t)-1)
        umask(as->umask);
    what = argv[0];
    execvpe(argv[0], argv, as->envp ? as->envp : environ);
fail:
    child_fail(what, strerror(errno));
}

/* The last line of the log, for the task's error. */
static void log_tail(const char *log, char *buf, size_t size)
{
    buf[0] = '\0';
    _cleanup_close_ int fd = open(log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || size < 2)
        return;
    off_t from = st.st_size > (off_t)size - 1 ? st.st_size - ((off_t)size - 1) : 0;
    ssize_t n = pread(fd, buf, size - 1, from);
    if (n <= 0)
        return;
    while (n > 0 && buf[n - 1] == '\n')
        n--;
    buf[n] = '\0';
    char *nl = strrchr(buf, '\n');
    if (nl)
        memmove(buf, nl + 1, strlen(nl + 1) + 1);
}

/* Run argv (no shell) as `as` says, with stdout and stderr appended to
 * log; 0 when it exits 0, else -1 with e naming it, its last line and the
 * log. */
static int host_run(char *const argv[], const char *log, const struct host_as *as, struct mini_err *e)
{
    /* Opened here, never through a link or into a file not ours. */
    _cleanup_close_ int lfd = mini_open_append_log(log, 0644, e);
    if (lfd < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "running %s", argv[0]);
    if (pid == 0)
        host_child(argv, lfd, as);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return mini_err_sys(e, MINI_E_IO, errno, "waiting for %s", argv[0]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char last[512], who[64] = "";
        log_tail(log, last, sizeof last);
        if (as->drop)
            snprintf(who, sizeof who, " (as %u:%u, the workspace's owner)", (unsigned)as->uid, (unsigned)as->gid);
        return mini_err_set(e, MINI_E_IO, "%s%s failed (status %d)%s%s; see %s", argv[0], who,
                            WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), last[0] ? ": " : "", last, log);
    }
    return 0;
}

/* The directory a task's workspace is copied from: resolved without
 * following any symlink and checked as the sandbox daemon checks a
 * workspace (mini/ws.h: no system directory, no home directory, nothing
 * that holds mini's configuration directory).  *canon and *st of it, or
 * -1 with e. */
static int open_source(const struct batch_ctx *b, const char *path, char **canon, struct stat *st, struct mini_err *e)
{
    _cleanup_free_ char *abs = mini_client_abspath(path);
    if (!abs)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    _cleanup_close_ int fd = -1;
    if (mini_ws_open(abs, canon, &fd, e) < 0 || mini_ws_check(&b->guard, NULL, *canon, fd, e) < 0)
        return -1;
    if (fstat(fd, st) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", *canon);
    return 0;
}

/* Git's global config for a clone as the workspace's owner (an fd of a
 * memfd): safe.directory for a local repository at url owned by this
 * process's user, else nothing.  -1 with e. */
static int git_config_as_owner(const char *url, struct mini_err *e)
{
    int fd = memfd_create("mini-batch-gitconfig", MFD_CLOEXEC);
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "memfd_create");
    _cleanup_free_ char *real = url[0] == '/' ? realpath(url, NULL) : NULL;
    struct stat st;
    if (real && !strpbrk(real, "\"\\\n") && stat(real, &st) == 0 && st.st_uid == geteuid())
        dprintf(fd, "[safe]\n\tdirectory = \"%s\"\n\tdirectory = \"%s/.git\"\n", real, real);
    return fd;
}

/* The task's workspace, made fresh: a copy of a directory, a clone at a
 * commit, or empty.  When root runs a sandbox, the workspace belongs to
 * the sandbox's user (ws_uid), and what fills it runs as that user: it
 * reads the source with that user's rights, never root's. */
static int make_workspace(const struct batch_ctx *b, const struct mini_task *t, const char *ws, const char *log,
                          struct mini_err *e)
{
    if (mini_rm_rf(ws, e) < 0)
        return mini_err_prefix(e, "removing the last run's workspace");
    _cleanup_free_ char *src = NULL;
    struct stat sst;
    if (t->ws_path && open_source(b, t->ws_path, &src, &sst, e) < 0)
        return -1;
    /* The directory itself: made by this process in OUT/ID, which nobody
     * else writes, then given to the owner before anything goes in. */
    if (mkdir(ws, 0755) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", ws);
    _cleanup_close_ int wfd = open(ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wfd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "opening %s", ws);
    if (b->chown_ws && fchownat(wfd, "", b->ws_uid, b->ws_gid, AT_EMPTY_PATH) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "workspace: giving %s to %u:%u", ws, (unsigned)b->ws_uid,
                            (unsigned)b->ws_gid);
    struct host_as as = {
        .drop = b->chown_ws, .uid = b->ws_uid, .gid = b->ws_gid, .cwd_fd = wfd, .keep_fd = -1, .umask = (mode_t)-1
    };
    if (t->ws_git) {
        _cleanup_free_ char *url = NULL;
        /* A relative local path is relative to where mini batch runs, not to the workspace. */
        if (t->ws_git[0] != '/' && !strchr(t->ws_git, ':'))
            url = mini_client_abspath(t->ws_git);
        else
            url = strdup(t->ws_git);
        if (!url)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        /* As the workspace's owner: that user's home, and a global config
         * of the batch's.  Git refuses a local repository its user does not
         * own (its config could run commands); the owner may clone one of
         * the batch's user's own, as that user could before. */
        _cleanup_close_ int gcfg = -1;
        _cleanup_free_ char **envp = NULL;
        _cleanup_free_ char *home = NULL, *global = NULL;
        if (as.drop) {
            if ((gcfg = git_config_as_owner(url, e)) < 0)
                return -1;
            const struct passwd *pw = getpwuid(as.uid);
            size_t n = 0;
            while (environ[n])
                n++;
            if (asprintf(&home, "HOME=%s", pw && pw->pw_dir[0] == '/' ? pw->pw_dir : "/nonexistent") < 0 ||
                asprintf(&global, "GIT_CONFIG_GLOBAL=/proc/self/fd/%d", gcfg) < 0 ||
                !(envp = calloc(n + 3, sizeof *envp))) {
                home = global = NULL;
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "HOME=", 5) != 0 && strncmp(environ[i], "GIT_CONFIG_GLOBAL=", 18) != 0)
                    envp[k++] = environ[i];
            envp[k++] = home;
            envp[k++] = global;
            as.envp = envp;
            as.keep_fd = gcfg;
        }
        char *clone[] = { "git", "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--no-hardlinks", "--", url,
                          ".",   NULL };
        if (host_run(clone, log, &as, e) < 0)
            return mini_err_prefix(e, "workspace: cloning %s", t->ws_git);
        if (t->ws_commit) {
            char *co[] = { "git",      "-c",      "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
                           "checkout", "--quiet", (char *)t->ws_commit,       "--", NULL };
            if (host_run(co, log, &as, e) < 0)
                return mini_err_prefix(e, "workspace: checking out %s", t->ws_commit);
        }
    } else if (src) {
        /* The copy: recursive, symlinks copied as symlinks, hard links and
         * timestamps kept.  Not the owner (the copy is the copier's) nor
         * --preserve=mode: with umask 0, GNU cp gives a new file the
         * source's permission bits without setuid and setgid. */
        _cleanup_free_ char *dest = NULL;
        if (asprintf(&dest, "/proc/self/fd/%d", wfd) < 0) {
            dest = NULL;
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        char *cp[] = { "cp", "-R", "--no-dereference", "--preserve=timestamps,links", "--", ".", dest, NULL };
        as.cwd_fd = -1;
        as.keep_fd = wfd;
        as.src = src;
        as.src_dev = sst.st_dev;
        as.src_ino = sst.st_ino;
        as.umask = 0;
        if (host_run(cp, log, &as, e) < 0)
            return mini_err_prefix(e, "workspace: copying %s", src);
    }
    return 0;
}

struct progress {
    int fd;
};

static void on_progress(void *arg, long calls, double cost)
{
    const struct progress *p = arg;
    char line[64];
    int n = snprintf(line, sizeof line, "P %ld %.6f\n", calls, cost);
    if (p->fd >= 0 && n > 0)
        (void)!write(p->fd, line, (size_t)n); /* a pipe: short lines are atomic */
}

/* A task's sessions end with their connection: the worker goes on with
 * the task (its result, the next task) while the daemon closes them. */
static void env_freep(struct mini_environment **env)
{
    w_env = NULL;
    mini_environment_drop(*env);
}

static struct mini_environment *new_env(const cJSON *cfg, struct mini_err *e)
{
    const cJSON *cls = mini_config_get(cfg, "environment.environment_class");
    return mini_environment_new(mini_config_get(cfg, "environment"), cJSON_IsString(cls) ? cls->valuestring : "local",
                                e);
}

/* new_env, adding the seconds it took (the session's open) to *secs. */
static struct mini_environment *new_env_timed(const cJSON *cfg, double *secs, struct mini_err *e)
{
    double t0 = mini_mono_s();
    struct mini_environment *env = new_env(cfg, e);
    *secs += mini_mono_s() - t0;
    return env;
}

/* A command of the task's (setup, verify) in an environment of its own.
 * The result object, or NULL with e. */
static cJSON *run_command(const cJSON *cfg, const char *command, double *secs, struct mini_err *e)
{
    _cleanup_(env_freep) struct mini_environment *env = new_env(cfg, e);
    if (!env)
        return NULL;
    w_env = env;
    cJSON *res = NULL;
    double t0 = mini_mono_s();
    int r = mini_environment_execute(env, command, NULL, 0, NULL, NULL, &res, e);
    *secs = mini_mono_s() - t0;
    if (r < 0) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

static const char *res_str(const cJSON *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* {"status": resolved|unresolved|error, "returncode", "output_tail",
 * "duration_s"[, "error"]} */
static cJSON *verify(const cJSON *cfg, const char *command)
{
    struct mini_err e;
    mini_err_clear(&e);
    double secs = 0;
    _cleanup_cjson_ cJSON *res = run_command(cfg, command, &secs, &e);
    cJSON *v = cJSON_CreateObject();
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(res, "returncode");
    const char *exc = res_str(res, "exception_info");
    const char *status = !res || !cJSON_IsNumber(rc) || *exc ? "error" : rc->valueint == 0 ? "resolved" : "unresolved";
    cJSON_AddStringToObject(v, "status", status);
    if (cJSON_IsNumber(rc))
        cJSON_AddNumberToObject(v, "returncode", rc->valuedouble);
    else
        cJSON_AddNullToObject(v, "returncode");
    const char *out = res_str(res, "output");
    size_t n = strlen(out);
    size_t from = n > VERIFY_TAIL ? n - VERIFY_TAIL : 0;
    while (from < n && ((unsigned char)out[from] & 0xC0) == 0x80)
        from++; /* not inside a character */
    cJSON_AddStringToObject(v, "output_tail", out + from);
    cJSON_AddItemToObject(v, "duration_s", mini_json_create_float(secs));
    if (!res)
        cJSON_AddStringToObject(v, "error", e.msg);
    else if (*exc)
        cJSON_AddStringToObject(v, "error", exc);
    return v;
}

/* Where a task's time went, in result.json's "timing" when
 * MINI_BATCH_TIMING is set (docs/batch.md): what the batch adds around the
 * model and the commands, phase by phase. */
struct timing {
    double t, prep, workspace, setup, open, session, model, commands, save, agent, close, verify;
};

/* The seconds since the last lap. */
static double lap(struct timing *tm)
{
    double now = mini_mono_s(), d = now - tm->t;
    tm->t = now;
    return d;
}

static cJSON *timing_json(const struct timing *tm)
{
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *k;
        double v;
    } f[] = { { "prep_s", tm->prep },         { "workspace_s", tm->workspace }, { "setup_s", tm->setup },
              { "open_s", tm->open },         { "session_s", tm->session },     { "model_s", tm->model },
              { "commands_s", tm->commands }, { "save_s", tm->save },           { "agent_s", tm->agent },
              { "close_s", tm->close },       { "verify_s", tm->verify } };
    for (size_t i = 0; o && i < sizeof f / sizeof f[0]; i++)
        cJSON_AddItemToObject(o, f[i].k, mini_json_create_float(f[i].v));
    return o;
}

static void policy_freep(struct mini_policy **p) { mini_policy_free(*p); }
static void model_freep(struct mini_model **m) { mini_model_free(*m); }
static void agent_finip(struct mini_agent *a)
{
    w_agent = NULL;
    mini_agent_fini(a);
}

int mini_batch_worker(const struct batch_ctx *b, const struct mini_task *t)
{
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    double t0 = mini_mono_s();
    struct timing tm = { .t = t0 };
    struct mini_err e;
    mini_err_clear(&e);
    _cleanup_free_ char *dir = NULL, *ws = NULL, *traj = NULL, *result_path = NULL, *log = NULL;
    if (asprintf(&dir, "%s/%s", b->out_dir, t->id) < 0 || asprintf(&ws, "%s/workspace", dir) < 0 ||
        asprintf(&traj, "%s/%s.traj.json", dir, t->id) < 0 || asprintf(&result_path, "%s/result.json", dir) < 0 ||
        asprintf(&log, "%s/workspace.log", dir) < 0)
        return 1;
    if (mini_mkdir_p(dir, 0755, &e) < 0) {
        fprintf(stderr, "mini batch: %s: %s\n", t->id, e.msg);
        return 1;
    }
    /* The last run's files of this task go first: none is taken for this run's. */
    unlink(result_path);
    unlink(traj);
    unlink(log);

    _cleanup_cjson_ cJSON *cfg = cJSON_Duplicate(b->cfg, true);
    _cleanup_cjson_ cJSON *result = cJSON_CreateObject();
    _cleanup_cjson_ cJSON *extra = cJSON_CreateObject();
    if (!cfg || !result || !extra)
        return 1;
    cJSON_AddStringToObject(extra, "instance_id", t->id);
    const char *exit_status = NULL;
    _cleanup_free_ char *submission = NULL;
    long calls = 0;
    double cost = 0;
    bool ran = false;
    _cleanup_free_ char *status_copy = NULL, *model_name = NULL;
    const char *cfg_name = mini_config_get_string(cfg, "model.model_name");
    if (cfg_name && !(model_name = strdup(cfg_name)))
        return 1;

    tm.prep = lap(&tm);
    if (make_workspace(b, t, ws, log, &e) < 0 ||
        mini_config_set(cfg, "environment.workspace", cJSON_CreateString(ws), &e) < 0 ||
        (!b->container && mini_config_set(cfg, "environment.cwd", cJSON_CreateString(ws), &e) < 0) ||
        (t->image && mini_config_set(cfg, "environment.image", cJSON_CreateString(t->image), &e) < 0)) {
        exit_status = "WorkspaceError";
    }
    struct stat lst;
    if (!exit_status && stat(log, &lst) == 0 && lst.st_size == 0)
        unlink(log); /* nothing went wrong: no log */
    tm.workspace = lap(&tm);
    if (!exit_status && t->setup) {
        double secs;
        _cleanup_cjson_ cJSON *r = run_command(cfg, t->setup, &secs, &e);
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(r, "returncode");
        if (!r || !cJSON_IsNumber(rc) || rc->valueint != 0) {
            exit_status = "SetupError";
            if (r)
                mini_err_set(&e, MINI_E_IO, "setup exited %d: %.*s", cJSON_IsNumber(rc) ? rc->valueint : -1, 2000,
                             res_str(r, "output"));
        }
    }
    tm.setup = lap(&tm);
    if (!exit_status) {
        _cleanup_(model_freep) struct mini_model *model = mini_model_new(mini_config_get(cfg, "model"), NULL, &e);
        _cleanup_(env_freep) struct mini_environment *env = model ? new_env_timed(cfg, &tm.session, &e) : NULL;
        _cleanup_(agent_finip) struct mini_agent agent = { 0 };
        /* The policy, as mini's: every worker appends to the same audit
         * log, a whole line per write. */
        _cleanup_(policy_freep) struct mini_policy *policy = NULL;
        _cleanup_close_ int audit_fd = -1;
        const char *audit_path = NULL;
        if (!model || !env) {
            exit_status = model ? "EnvironmentError" : "ModelError";
        } else if (mini_agent_init(&agent, cfg, model, env, traj, &e) < 0 ||
                   !(policy = mini_policy_from_config(cfg, &e)) ||
                   ((audit_path = mini_policy_audit_log(policy)) &&
                    (audit_fd = mini_audit_open(audit_path, mini_environment_workspace(env), &e)) < 0) ||
                   mini_policy_check_approver(policy, mini_environment_workspace(env), &e) < 0 ||
                   mini_agent_supervise(&agent, policy, audit_fd, &e) < 0) {
            exit_status = "ConfigError";
        } else {
            struct progress pg = { b->progress_fd };
            agent.on_progress = on_progress;
            agent.progress_arg = &pg;
            agent.extra_vars = t->record;
            agent.traj_extra = extra;
            agent.no_sync = true; /* the batch's group commit syncs it */
            mini_model_set_cancel(model, &agent.interrupt);
            w_env = env;
            w_agent = &agent;
            tm.open = lap(&tm);
            mini_agent_run(&agent, t->problem, &e); /* the exit status says how it ended */
            ran = true;
            w_agent = NULL;
            tm.agent = lap(&tm);
            tm.model = agent.model_s;
            tm.commands = agent.commands_s;
            tm.save = agent.save_s;
            if (!(status_copy = strdup(agent.exit_status ? agent.exit_status : "Unknown")) ||
                (agent.submission && !(submission = strdup(agent.submission))))
                return 1;
            exit_status = status_copy;
            calls = mini_model_calls(model);
            cost = mini_model_cost(model);
            if (!model_name && mini_model_name(model) && !(model_name = strdup(mini_model_name(model))))
                return 1;
        }
        lap(&tm);
        env_freep(&env); /* the session's end */
        env = NULL;
        tm.close = lap(&tm);
    }
    cJSON_AddStringToObject(result, "instance_id", t->id);
    cJSON_AddStringToObject(result, "exit_status", exit_status);
    cJSON_AddStringToObject(result, "submission", submission ? submission : "");
    cJSON_AddStringToObject(result, "model_name", model_name ? model_name : "");
    cJSON_AddNumberToObject(result, "steps", (double)calls);
    cJSON_AddItemToObject(result, "cost", mini_json_create_float(cost));
    bool interrupted = strcmp(exit_status, "KeyboardInterrupt") == 0;
    lap(&tm);
    if (ran && !interrupted && t->verify)
        cJSON_AddItemToObject(result, "verify", verify(cfg, t->verify));
    else
        cJSON_AddNullToObject(result, "verify");
    tm.verify = lap(&tm);
    cJSON_AddItemToObject(result, "wall_s", mini_json_create_float(mini_mono_s() - t0));
    if (!ran || (e.code != MINI_OK && e.msg[0]))
        cJSON_AddStringToObject(result, "error", e.msg[0] ? e.msg : exit_status);
    else
        cJSON_AddNullToObject(result, "error");
    cJSON_AddStringToObject(result, "trajectory", ran ? traj : "");
    if (getenv("MINI_BATCH_TIMING"))
        cJSON_AddItemToObject(result, "timing", timing_json(&tm));
    struct mini_err we;
    if (mini_batch_write_json(result_path, result, &we) < 0) {
        fprintf(stderr, "mini batch: %s: %s\n", t->id, we.msg);
        return 1;
    }
    return 0;
}
