/* One task of a batch, in a worker process of its own (batch.h): a fresh
 * workspace, the task's setup command, the agent, its verify command in a
 * fresh sandbox, and OUT/ID/result.json for the batch to record. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent.h"
#include "batch/batch.h"
#include "config/config.h"
#include "environment.h"
#include "mini/buf.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
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

/* Run argv (no shell) with stdout and stderr appended to log; 0 when it
 * exits 0, else -1 with e naming it and the log. */
static int host_run(char *const argv[], const char *log, struct mini_err *e)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return mini_err_sys(e, MINI_E_IO, r, "running %s", argv[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return mini_err_sys(e, MINI_E_IO, errno, "waiting for %s", argv[0]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return mini_err_set(e, MINI_E_IO, "%s failed (status %d); see %s", argv[0],
                            WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
    return 0;
}

/* chown of a tree this process has just made (nothing else writes there
 * yet): symlinks themselves, never what they name; one filesystem. */
static uid_t give_uid;
static gid_t give_gid;
static int give_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return lchown(path, give_uid, give_gid);
}

static int give_tree(const char *dir, uid_t uid, gid_t gid)
{
    give_uid = uid;
    give_gid = gid;
    return nftw(dir, give_one, 64, FTW_PHYS | FTW_MOUNT);
}

/* The task's workspace, made fresh: a copy of a directory, a clone at a
 * commit, or empty; given to the sandbox's user when root runs a sandbox. */
static int make_workspace(const struct batch_ctx *b, const struct mini_task *t, const char *ws, const char *log,
                          struct mini_err *e)
{
    if (mini_rm_rf(ws, e) < 0)
        return mini_err_prefix(e, "removing the last run's workspace");
    if (t->ws_git) {
        char *clone[] = {
            "git",      "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--no-hardlinks", "--", (char *)t->ws_git,
            (char *)ws, NULL
        };
        if (host_run(clone, log, e) < 0)
            return mini_err_prefix(e, "workspace: cloning %s", t->ws_git);
        if (t->ws_commit) {
            char *co[] = { "git",
                           "-C",
                           (char *)ws,
                           "-c",
                           "core.hooksPath=/dev/null",
                           "-c",
                           "advice.detachedHead=false",
                           "checkout",
                           "--quiet",
                           (char *)t->ws_commit,
                           "--",
                           NULL };
            if (host_run(co, log, e) < 0)
                return mini_err_prefix(e, "workspace: checking out %s", t->ws_commit);
        }
    } else {
        if (mkdir(ws, 0755) < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "creating %s", ws);
        if (t->ws_path) {
            _cleanup_free_ char *src = NULL;
            if (asprintf(&src, "%s/.", t->ws_path) < 0)
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            char *cp[] = { "cp", "-a", "--", src, (char *)ws, NULL };
            if (host_run(cp, log, e) < 0)
                return mini_err_prefix(e, "workspace: copying %s", t->ws_path);
        }
    }
    if (b->chown_ws && give_tree(ws, b->ws_uid, b->ws_gid) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "workspace: giving %s to %u:%u", ws, (unsigned)b->ws_uid,
                            (unsigned)b->ws_gid);
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

int batch_worker(const struct batch_ctx *b, const struct mini_task *t)
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
        mini_config_set(cfg, "environment.cwd", cJSON_CreateString(ws), &e) < 0 ||
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
                   ((audit_path = mini_policy_audit_log(policy)) && (audit_fd = mini_audit_open(audit_path, &e)) < 0) ||
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
    if (batch_write_json(result_path, result, &we) < 0) {
        fprintf(stderr, "mini batch: %s: %s\n", t->id, we.msg);
        return 1;
    }
    return 0;
}
