/* The agent loop (agent.h): run, step, query, execute_actions. */
#include "agent.h"
#include "approval.h"
#include "model.h"
#include "policy/policy.h"
#include "template/template.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static cJSON *mini_agent_template_vars(struct mini_agent *a);

static struct mini_flow mini_agent_execute_actions(struct mini_agent *a, const cJSON *msg, struct mini_err *e);

extern char **environ;

#define TRAJECTORY_FORMAT "mini-swe-agent-1.1"

/* Keys whose numbers mini-swe-agent holds as Python floats: an integral
 * value under them is written 1.0, not 1. */
static const char *const float_keys[] = { "cost",      "instance_cost", "cost_limit", "cost_per_call",
                                          "timestamp", "model_cost",    NULL };

static const struct mini_agent_ops default_ops = {
    .step = mini_agent_step,
    .query = mini_agent_query,
    .execute_actions = mini_agent_execute_actions,
};

static double num(const cJSON *obj, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* a | b for JSON objects, recursively (b wins), into a. */
static void merge_into(cJSON *a, const cJSON *b)
{
    const cJSON *it;
    cJSON_ArrayForEach (it, b) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(a, it->string);
        if (cJSON_IsObject(old) && cJSON_IsObject(it))
            merge_into(old, it);
        else if (old)
            cJSON_ReplaceItemInObjectCaseSensitive(a, it->string, cJSON_Duplicate(it, true));
        else
            cJSON_AddItemToObject(a, it->string, cJSON_Duplicate(it, true));
    }
}

/* The name an error gives the run's exit status, in the style of the
 * exception names mini-swe-agent records, and what str() of that exception
 * would be.  A deterministic or replay model that has run out of replies
 * is mini-swe-agent's IndexError from indexing past its list. */
static bool outputs_exhausted(const struct mini_err *e)
{
    return e->code == MINI_E_MODEL &&
        (strncmp(e->msg, "deterministic model: all ", 25) == 0 || strncmp(e->msg, "replay model: all ", 18) == 0);
}

static const char *exit_name(const struct mini_err *e)
{
    if (outputs_exhausted(e))
        return "IndexError";
    switch (e->code) {
    case MINI_E_MODEL: return "ModelError";
    case MINI_E_CONFIG: return "ConfigError";
    case MINI_E_TEMPLATE: return "TemplateError";
    case MINI_E_FORMAT: return "FormatError";
    case MINI_E_NOMEM: return "MemoryError";
    default: return "EnvironmentError";
    }
}

static struct mini_flow nomem(struct mini_err *e)
{
    mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return MINI_FLOW(MINI_FLOW_ERROR);
}

/* The environment's variables as mini-swe-agent's environments give them:
 * cwd is the configured one ("" when unset: commands then run in the
 * current directory), uname has a processor field (platform.uname();
 * "" where `uname -p` is unknown, as on most Linux systems), and the local
 * environment adds the whole process environment (os.environ) over them.
 * These are template variables only: nothing of them is saved. */
static int env_vars(const cJSON *config, cJSON *ev)
{
    const cJSON *ecfg = cJSON_GetObjectItemCaseSensitive(config, "environment");
    const char *cwd = str(ecfg, "cwd"), *cls = str(ecfg, "environment_class");
    cJSON_DeleteItemFromObjectCaseSensitive(ev, "cwd");
    if (!cJSON_AddStringToObject(ev, "cwd", cwd ? cwd : ""))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(ev, "machine") && !cJSON_GetObjectItemCaseSensitive(ev, "processor") &&
        !cJSON_AddStringToObject(ev, "processor", ""))
        return -1;
    if (cls && strcmp(cls, "local") != 0)
        return 0;
    for (char **ep = environ; ep && *ep; ep++) {
        const char *eq = strchr(*ep, '=');
        if (!eq || eq == *ep)
            continue;
        _cleanup_free_ char *name = strndup(*ep, (size_t)(eq - *ep));
        if (!name)
            return -1;
        cJSON_DeleteItemFromObjectCaseSensitive(ev, name);
        if (!cJSON_AddStringToObject(ev, name, eq + 1))
            return -1;
    }
    return 0;
}

/* The trajectory's directory, held by an fd: the saves go there by name
 * (mini_write_file_replace_at), whatever is at its path meanwhile; and
 * opened without following a link in the workspace (a command could have
 * planted one there in an earlier run). */
static int hold_output_dir(struct mini_agent *a, const char *path, struct mini_err *e)
{
    const char *ws = a->env ? mini_environment_workspace(a->env) : NULL;
    _cleanup_close_ int guard = ws ? open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (ws && guard < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "trajectory %s: the workspace %s", path, ws);
    const char *name;
    int fd = mini_open_parent_guarded(path, guard, &name, e);
    if (fd < 0)
        return mini_err_prefix(e, "trajectory");
    a->output_dirfd = fd;
    a->output_dir_held = true;
    a->output_name = name;
    return 0;
}

int mini_agent_init(struct mini_agent *a, cJSON *config, struct mini_model *model, struct mini_environment *env,
                    const char *output_path, struct mini_err *e)
{
    memset(a, 0, sizeof *a);
    a->config = config;
    a->model = model;
    a->env = env;
    a->output_path = output_path;
    a->output_name = output_path;
    a->output_dirfd = AT_FDCWD;
    if (output_path && hold_output_dir(a, output_path, e) < 0)
        return -1;
    a->ops = &default_ops;
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(config, "agent");
    const cJSON *mcfg = cJSON_GetObjectItemCaseSensitive(config, "model");
    a->step_limit = (long)num(agent, "step_limit", 0);
    a->cost_limit = num(agent, "cost_limit", 3.0);
    a->wall_time_limit = num(agent, "wall_time_limit_seconds", 0);
    a->max_format_errors =
        (long)num(agent, "max_consecutive_format_errors", num(mcfg, "max_consecutive_format_errors", 0));
    a->messages = cJSON_CreateArray();
    a->start = mini_mono_s();
    a->audit_fd = -1;
    /* The run's id in the audit log: when, and which process. */
    snprintf(a->run_id, sizeof a->run_id, "%lx-%x-%lx", (long)time(NULL), (unsigned)getpid(),
             (long)(mini_mono_ns() % 0x100000));
    /* environment | model, as get_template_vars merges them (the agent's
     * config goes first, the counters after: mini_agent_template_vars). */
    a->template_vars = cJSON_CreateObject();
    _cleanup_cjson_ cJSON *ev = mini_environment_template_vars(env);
    _cleanup_cjson_ cJSON *mv = mini_model_template_vars(model);
    if (!a->messages || !a->template_vars || !ev || !mv || env_vars(config, ev) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    merge_into(a->template_vars, ev);
    merge_into(a->template_vars, mv);
    return 0;
}

void mini_agent_fini(struct mini_agent *a)
{
    if (a->output_dir_held)
        close(a->output_dirfd);
    cJSON_Delete(a->messages);
    cJSON_Delete(a->template_vars);
    free(a->exit_status);
    free(a->submission);
    memset(a, 0, sizeof *a);
}

/* ---- messages ------------------------------------------------------------- */

static bool is_exit(const cJSON *msg)
{
    const char *role = str(msg, "role");
    return role && strcmp(role, "exit") == 0;
}

void mini_agent_add_message(struct mini_agent *a, cJSON *msg)
{
    cJSON_AddItemToArray(a->messages, msg);
    if (a->ops->on_message)
        a->ops->on_message(a->ops_arg, msg, mini_model_calls(a->model), mini_model_cost(a->model));
    if (a->on_progress)
        a->on_progress(a->progress_arg, mini_model_calls(a->model), mini_model_cost(a->model));
}

void mini_agent_add_messages(struct mini_agent *a, struct mini_flow *f)
{
    cJSON *m;
    while (f->messages && (m = cJSON_DetachItemFromArray(f->messages, 0))) {
        if (is_exit(m)) {
            const cJSON *extra = cJSON_GetObjectItemCaseSensitive(m, "extra");
            const char *status = str(extra, "exit_status"), *submission = str(extra, "submission");
            free(a->exit_status);
            free(a->submission);
            a->exit_status = strdup(status ? status : "");
            a->submission = strdup(submission ? submission : "");
        }
        mini_agent_add_message(a, m);
    }
    mini_flow_clear(f);
}

static cJSON *text_message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

/* The message that ends the run: it carries the exit status and the
 * submission; its content is `content`, else the submission. */
static cJSON *exit_message(const char *status, const char *submission, const char *content)
{
    cJSON *m = text_message("exit", content ? content : submission);
    cJSON *extra = cJSON_AddObjectToObject(m, "extra");
    cJSON_AddStringToObject(extra, "exit_status", status);
    cJSON_AddStringToObject(extra, "submission", submission);
    return m;
}

static bool flow_exits(const struct mini_flow *f)
{
    return is_exit(cJSON_GetArrayItem(f->messages, cJSON_GetArraySize(f->messages) - 1));
}

/* Whether a flow's exit message (always the last message added) ended the
 * run.  Only a flow's counts: a message the model made is never one. */
static bool run_ended(const struct mini_agent *a) { return a->exit_status != NULL; }

/* ---- the agent's config and the template variables ------------------------ */

static bool interactive(const struct mini_agent *a) { return a->ops != &default_ops; }

static cJSON *copy_or(const cJSON *cfg, const char *key, cJSON *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v) {
        return def;
    }
    cJSON_Delete(def);
    return cJSON_Duplicate(v, true);
}

/* An integer for a Python int field (cJSON would keep 3.0 as 3 anyway). */
static cJSON *int_num(double d) { return cJSON_CreateNumber(d); }

/* The agent's config as mini-swe-agent's AgentConfig (InteractiveAgentConfig
 * for the interactive agent) dumps it: its fields in their order, defaults
 * filled in, the limits as they are now (the person may have raised them),
 * cost_limit a float; keys that are not its fields are left out, as
 * pydantic ignores them. */
static cJSON *agent_dump(const struct mini_agent *a)
{
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(a->config, "agent");
    cJSON *d = cJSON_CreateObject();
    if (!d)
        return NULL;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(cfg, "system_template");
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, "instance_template");
    if (st)
        cJSON_AddItemToObject(d, "system_template", cJSON_Duplicate(st, true));
    if (it)
        cJSON_AddItemToObject(d, "instance_template", cJSON_Duplicate(it, true));
    cJSON_AddItemToObject(d, "step_limit", int_num((double)a->step_limit));
    cJSON_AddItemToObject(d, "cost_limit", mini_json_create_float(a->cost_limit));
    cJSON_AddItemToObject(d, "wall_time_limit_seconds", int_num(a->wall_time_limit));
    cJSON_AddItemToObject(d, "max_consecutive_format_errors", int_num((double)a->max_format_errors));
    cJSON_AddItemToObject(d, "output_path", a->output_path ? cJSON_CreateString(a->output_path) : cJSON_CreateNull());
    if (interactive(a)) {
        cJSON_AddItemToObject(d, "mode", copy_or(cfg, "mode", cJSON_CreateString("confirm")));
        cJSON_AddItemToObject(d, "whitelist_actions", copy_or(cfg, "whitelist_actions", cJSON_CreateArray()));
        cJSON_AddItemToObject(d, "confirm_exit", copy_or(cfg, "confirm_exit", cJSON_CreateTrue()));
    }
    /* A failed allocation above left a key out. */
    if (cJSON_GetArraySize(d) != 5 + (st != NULL) + (it != NULL) + (interactive(a) ? 3 : 0)) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

/* The variables of every template, as mini-swe-agent's get_template_vars
 * at this moment: the agent's config (its fields only, defaults filled in,
 * output_path the trajectory's), the environment's (its config, uname's
 * fields, for the local environment the process environment), the
 * model's, n_model_calls, model_cost, elapsed_seconds (whole seconds),
 * task.  NULL when out of memory. */
static cJSON *mini_agent_template_vars(struct mini_agent *a)
{
    cJSON *v = agent_dump(a);
    if (!v)
        return NULL;
    merge_into(v, a->template_vars);
    _cleanup_cjson_ cJSON *counters = cJSON_CreateObject();
    if (!counters || !cJSON_AddNumberToObject(counters, "n_model_calls", (double)a->n_calls) ||
        !cJSON_AddItemToObject(counters, "model_cost", mini_json_create_float(mini_model_cost(a->model))) ||
        !cJSON_AddNumberToObject(counters, "elapsed_seconds", (double)(long long)(mini_mono_s() - a->start))) {
        cJSON_Delete(v);
        return NULL;
    }
    merge_into(v, counters);
    /* The task last: get_template_vars's extra_template_vars (a batch
     * task's own fields, then the task). */
    if (a->extra_vars)
        merge_into(v, a->extra_vars);
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(a->template_vars, "task");
    if (task) {
        cJSON_DeleteItemFromObjectCaseSensitive(v, "task");
        cJSON_AddItemToObject(v, "task", cJSON_Duplicate(task, true));
    }
    return v;
}

/* ---- the trajectory ------------------------------------------------------- */

static cJSON *serialize(struct mini_agent *a)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(root, "info");
    cJSON *stats = cJSON_AddObjectToObject(info, "model_stats");
    cJSON_AddItemToObject(stats, "instance_cost", mini_json_create_float(mini_model_cost(a->model)));
    cJSON_AddNumberToObject(stats, "api_calls", (double)a->n_calls);
    cJSON *cfg = cJSON_AddObjectToObject(info, "config");
    cJSON *agent = agent_dump(a);
    cJSON_AddItemToObject(cfg, "agent", agent ? agent : cJSON_CreateObject());
    cJSON_AddStringToObject(cfg, "agent_type", interactive(a) ? "mini.InteractiveAgent" : "mini.DefaultAgent");
    _cleanup_cjson_ cJSON *ms = mini_model_serialize(a->model);
    _cleanup_cjson_ cJSON *es = mini_environment_serialize(a->env);
    /* The agent's own counts win over the model's (as recursive_merge
     * would not let them: mini-swe-agent's models add no stats). */
    if (ms)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(ms, "info"), "model_stats");
    if (ms)
        merge_into(root, ms);
    if (es)
        merge_into(root, es);
    cJSON_AddStringToObject(info, "mini_version", MINI_VERSION);
    cJSON_AddStringToObject(info, "exit_status", a->exit_status ? a->exit_status : "");
    cJSON_AddStringToObject(info, "submission", a->submission ? a->submission : "");
    cJSON_AddItemReferenceToObject(root, "messages", a->messages);
    cJSON_AddStringToObject(root, "trajectory_format", TRAJECTORY_FORMAT);
    if (a->traj_extra)
        merge_into(root, a->traj_extra);
    return root;
}

static int save(struct mini_agent *a, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *root = serialize(a);
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (!root)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_json_print_py(&text, root, float_keys, e) < 0)
        return mini_err_prefix(e, "saving the trajectory");
    /* Synced to disk once the run has ended: the saves before it only
     * need to survive the process (a kill at any moment leaves the last
     * whole one); a power loss costs at most the unfinished run's. */
    if (mini_write_file_replace_at(a->output_dirfd, a->output_name, text.data, text.len, 0644,
                                   run_ended(a) && !a->no_sync, e) < 0)
        return mini_err_prefix(e, "saving the trajectory %s", a->output_path);
    if (run_ended(a))
        mini_write_file_done_at(a->output_dirfd, a->output_name); /* the earlier saves' spare */
    return 0;
}

/* Write the trajectory now (atomically), as Python's json.dump(indent=2);
 * synced to disk (fsync) only once the run has ended (never with no_sync). */
static int mini_agent_save(struct mini_agent *a, struct mini_err *e)
{
    if (!a->output_path)
        return 0;
    double t0 = mini_mono_s();
    int r = save(a, e);
    a->save_s += mini_mono_s() - t0;
    return r;
}

/* ---- the run -------------------------------------------------------------- */

static int render(struct mini_agent *a, const char *key, struct mini_buf *out, struct mini_err *e)
{
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(a->config, "agent");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(agent, key);
    if (!cJSON_IsString(t))
        return mini_err_set(e, MINI_E_CONFIG, "agent.%s: missing (a template string is required)", key);
    _cleanup_cjson_ cJSON *vars = mini_agent_template_vars(a);
    if (!vars)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_tpl_render(t->valuestring, strlen(t->valuestring), vars, out, e) < 0)
        return mini_err_prefix(e, "agent.%s", key);
    return 0;
}

/* The system message and the task (agent.instance_template). */
static struct mini_flow first_messages(struct mini_agent *a, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf sys = MINI_BUF_INIT, inst = MINI_BUF_INIT;
    if (render(a, "system_template", &sys, e) < 0 || render(a, "instance_template", &inst, e) < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    struct mini_flow f = mini_flow_of(MINI_FLOW_NONE, text_message("system", sys.data));
    mini_flow_push(&f, text_message("user", inst.data));
    return f;
}

/* The exit message of a failure no stage caught, as mini-swe-agent's
 * handle_uncaught_exception writes it: the content is str() of the
 * exception, extra has exception_str (the same) and traceback.  Ours has
 * no Python frames: the traceback is the header line, our own message as
 * a frame-like line when it says more than the exception, and the
 * exception line. */
static cJSON *uncaught(const char *name, const char *str_e, const char *detail)
{
    cJSON *m = exit_message(name, "", str_e);
    cJSON *extra = cJSON_GetObjectItemCaseSensitive(m, "extra");
    _cleanup_buf_ struct mini_buf tb = MINI_BUF_INIT;
    mini_buf_puts(&tb, "Traceback (most recent call last):\n");
    if (detail && strcmp(detail, str_e) != 0)
        mini_buf_printf(&tb, "  mini: %s\n", detail);
    mini_buf_printf(&tb, *str_e ? "%s: %s\n" : "%s%s\n", name, str_e);
    cJSON_AddStringToObject(extra, "exception_str", str_e);
    cJSON_AddStringToObject(extra, "traceback", tb.data ? tb.data : "");
    return m;
}

/* Add what a stage ended with: its messages, then, when no stage caught a
 * failure or a Ctrl-C, the exit message naming it (as mini-swe-agent's
 * handle_uncaught_exception).  -1 when the run ended that way. */
static int add_flow(struct mini_agent *a, struct mini_flow *f, struct mini_err *e)
{
    int rc = -1;
    if (f->kind == MINI_FLOW_ERROR) {
        mini_flow_push(f, uncaught(exit_name(e), outputs_exhausted(e) ? "list index out of range" : e->msg, e->msg));
    } else if (f->kind == MINI_FLOW_INTERRUPTED) {
        mini_err_set(e, MINI_E_INTERNAL, "interrupted");
        mini_flow_push(f, uncaught("KeyboardInterrupt", "", NULL));
    } else {
        rc = 0;
    }
    mini_agent_add_messages(a, f);
    return rc;
}

/* Save after a step; failing to is the run's error unless it has one. */
static int save_step(struct mini_agent *a, int rc, struct mini_err *e)
{
    struct mini_err save_err;
    if (mini_agent_save(a, &save_err) < 0 && rc == 0) {
        *e = save_err;
        return -1;
    }
    return rc;
}

int mini_agent_run(struct mini_agent *a, const char *task, struct mini_err *e)
{
    cJSON_DeleteItemFromObjectCaseSensitive(a->template_vars, "task");
    cJSON_AddStringToObject(a->template_vars, "task", task);
    struct mini_flow f = first_messages(a, e);
    int rc = add_flow(a, &f, e);
    if (rc < 0)
        return save_step(a, rc, e);
    while (rc == 0 && !run_ended(a)) {
        f = a->ops->step(a, e);
        /* Only a step that nothing interrupted is a clean one. */
        if (f.kind == MINI_FLOW_NONE)
            a->format_errors = 0;
        rc = save_step(a, add_flow(a, &f, e), e);
    }
    return rc;
}

/* ---- the stages ----------------------------------------------------------- */

struct mini_flow mini_agent_step(struct mini_agent *a, struct mini_err *e)
{
    if (a->interrupt)
        return MINI_FLOW(MINI_FLOW_INTERRUPTED);
    const cJSON *msg = NULL;
    struct mini_flow f = a->ops->query(a, &msg, e);
    if (f.kind == MINI_FLOW_NONE)
        f = a->ops->execute_actions(a, msg, e);
    /* Ctrl-C on the way: the flow is an interruption unless it already ends
     * the run.  An error is moot then (the interruption caused it). */
    if (a->interrupt && !flow_exits(&f))
        f.kind = MINI_FLOW_INTERRUPTED;
    return f;
}

/* The reply had no valid action: the model is told what was wrong (the
 * reply is not added as an assistant message). */
static struct mini_flow format_error(struct mini_agent *a, cJSON *msgs, struct mini_err *e)
{
    struct mini_flow f = MINI_FLOW(MINI_FLOW_FORMAT_ERROR);
    if (cJSON_IsArray(msgs))
        f.messages = msgs;
    else
        mini_flow_push(&f, msgs ? msgs : text_message("user", e->msg));
    a->format_errors++;
    if (a->max_format_errors > 0 && a->format_errors >= a->max_format_errors)
        mini_flow_push(&f, exit_message("RepeatedFormatError", "", "RepeatedFormatError"));
    return f;
}

struct mini_flow mini_agent_query(struct mini_agent *a, const cJSON **msg, struct mini_err *e)
{
    *msg = NULL;
    double cost = mini_model_cost(a->model);
    if ((a->step_limit > 0 && a->step_limit <= a->n_calls) || (a->cost_limit > 0 && a->cost_limit <= cost))
        return mini_flow_of(MINI_FLOW_LIMITS_EXCEEDED, exit_message("LimitsExceeded", "", "LimitsExceeded"));
    /* Whole seconds, as mini-swe-agent compares them. */
    if (a->wall_time_limit > 0 && a->wall_time_limit <= (double)(long long)(mini_mono_s() - a->start))
        return mini_flow_of(MINI_FLOW_TIME_EXCEEDED, exit_message("TimeExceeded", "", "TimeExceeded"));
    a->n_calls++;
    cJSON *assistant = NULL, *errors = NULL;
    if (a->ops->on_query)
        a->ops->on_query(a->ops_arg, true);
    double t0 = mini_mono_s();
    int r = mini_model_query(a->model, a->messages, &assistant, &errors, e);
    a->model_s += mini_mono_s() - t0;
    if (a->ops->on_query)
        a->ops->on_query(a->ops_arg, false);
    if (r < 0 && e->code == MINI_E_FORMAT)
        return format_error(a, errors, e);
    cJSON_Delete(errors);
    if (r < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    mini_agent_add_message(a, assistant);
    *msg = assistant;
    return MINI_FLOW(MINI_FLOW_NONE);
}

/* Run one action; its result (the environment's, one saying that the
 * action has no command, or the policy's block) in *result. */
static int execute(struct mini_agent *a, const cJSON *action, cJSON **result, struct mini_err *e)
{
    const char *cmd = str(action, "command");
    if (!cmd) {
        *result = cJSON_CreateObject();
        cJSON_AddStringToObject(*result, "output", "");
        cJSON_AddNumberToObject(*result, "returncode", -1);
        cJSON_AddStringToObject(*result, "exception_info", "The action has no command.");
        return 0;
    }
    struct mini_policy_decision d;
    int r = mini_approval_decide(a, cmd, &d, e);
    if (r == 0 && !d.allow) {
        r = mini_approval_blocked(a, cmd, &d, result, e);
        if (r == 0)
            mini_approval_audit(a, cmd, &d, NULL, 0);
        if (r == 0 && a->ops->on_command) {
            a->ops->on_command(a->ops_arg, cmd, NULL);
            a->ops->on_command(a->ops_arg, cmd, *result);
        }
        mini_policy_decision_free(&d);
        return r;
    }
    if (r == 0 && a->ops->on_command)
        a->ops->on_command(a->ops_arg, cmd, NULL);
    double t0 = mini_mono_s();
    if (r == 0)
        r = mini_environment_execute_in(a->env, d.profile, cmd, NULL, 0, a->ops->on_output, a->ops_arg, result, e);
    double took = mini_mono_s() - t0;
    a->commands_s += took;
    if (r == 0)
        mini_approval_audit(a, cmd, &d, *result, (int64_t)(took * 1000));
    mini_policy_decision_free(&d);
    if (r < 0)
        return -1;
    if (a->ops->on_command)
        a->ops->on_command(a->ops_arg, cmd, *result);
    return 0;
}

int mini_agent_run_actions(struct mini_agent *a, const cJSON *msg, cJSON *outputs, char **submission,
                           struct mini_err *e)
{
    *submission = NULL;
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "actions");
    const cJSON *act;
    cJSON_ArrayForEach (act, actions) {
        if (a->interrupt) /* also one that came with the reply: nothing runs */
            break;
        cJSON *result = NULL;
        if (execute(a, act, &result, e) < 0)
            return -1;
        if (!a->interrupt && (*submission = mini_submission(result))) {
            cJSON_Delete(result);
            break;
        }
        cJSON_AddItemToArray(outputs, result);
    }
    return 0;
}

int mini_agent_observe(struct mini_agent *a, const cJSON *msg, const cJSON *outputs, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *vars = mini_agent_template_vars(a);
    if (!vars)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON *obs = mini_model_observations(a->model, msg, outputs, vars, e);
    if (!obs)
        return -1;
    struct mini_flow f = { .kind = MINI_FLOW_NONE, .messages = obs };
    mini_agent_add_messages(a, &f);
    return 0;
}

struct mini_flow mini_agent_submitted(const char *submission)
{
    return mini_flow_of(MINI_FLOW_SUBMITTED, exit_message("Submitted", submission, NULL));
}

/* mini_agent_run_actions, then the submission or the observations. */
static struct mini_flow mini_agent_execute_actions(struct mini_agent *a, const cJSON *msg, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *outputs = cJSON_CreateArray();
    _cleanup_free_ char *submission = NULL;
    if (!outputs)
        return nomem(e);
    if (mini_agent_run_actions(a, msg, outputs, &submission, e) < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    /* The run ends with the submission, without the observations. */
    if (submission)
        return mini_agent_submitted(submission);
    if (mini_agent_observe(a, msg, outputs, e) < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    return MINI_FLOW(MINI_FLOW_NONE);
}
