/* The agent loop (agent.h): run, step, query, execute_actions. */
#include "agent.h"
#include "model.h"
#include "template/template.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"

#include <stdlib.h>
#include <string.h>

#define TRAJECTORY_FORMAT "mini-swe-agent-1.1"

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
    cJSON_ArrayForEach(it, b) {
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
 * exception names mini-swe-agent records. */
static const char *exit_name(const struct mini_err *e)
{
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

int mini_agent_init(struct mini_agent *a, cJSON *config, struct mini_model *model, struct mini_environment *env,
                    const char *output_path, struct mini_err *e)
{
    memset(a, 0, sizeof *a);
    a->config = config;
    a->model = model;
    a->env = env;
    a->output_path = output_path;
    a->ops = &default_ops;
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(config, "agent");
    const cJSON *mcfg = cJSON_GetObjectItemCaseSensitive(config, "model");
    a->step_limit = (long)num(agent, "step_limit", 0);
    a->cost_limit = num(agent, "cost_limit", 3.0);
    a->wall_time_limit = num(agent, "wall_time_limit_seconds", 0);
    a->max_format_errors = (long)num(agent, "max_consecutive_format_errors",
                                     num(mcfg, "max_consecutive_format_errors", 0));
    a->messages = cJSON_CreateArray();
    /* agent config | environment | model, as render_template merges them. */
    a->template_vars = agent ? cJSON_Duplicate(agent, true) : cJSON_CreateObject();
    _cleanup_cjson_ cJSON *ev = mini_environment_template_vars(env);
    _cleanup_cjson_ cJSON *mv = mini_model_template_vars(model);
    if (!a->messages || !a->template_vars || !ev || !mv)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    merge_into(a->template_vars, ev);
    merge_into(a->template_vars, mv);
    return 0;
}

void mini_agent_fini(struct mini_agent *a)
{
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
static bool run_ended(const struct mini_agent *a)
{
    return a->exit_status != NULL;
}

/* ---- the trajectory ------------------------------------------------------- */

static cJSON *serialize(struct mini_agent *a)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(root, "info");
    cJSON *stats = cJSON_AddObjectToObject(info, "model_stats");
    cJSON_AddNumberToObject(stats, "instance_cost", mini_model_cost(a->model));
    cJSON_AddNumberToObject(stats, "api_calls", (double)mini_model_calls(a->model));
    cJSON *cfg = cJSON_AddObjectToObject(info, "config");
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(a->config, "agent");
    cJSON_AddItemToObject(cfg, "agent", agent ? cJSON_Duplicate(agent, true) : cJSON_CreateObject());
    cJSON_AddStringToObject(cfg, "agent_type", "mini.DefaultAgent");
    _cleanup_cjson_ cJSON *ms = mini_model_serialize(a->model);
    _cleanup_cjson_ cJSON *es = mini_environment_serialize(a->env);
    if (ms)
        merge_into(root, ms);
    if (es)
        merge_into(root, es);
    cJSON_AddStringToObject(info, "mini_version", MINI_VERSION);
    cJSON_AddStringToObject(info, "exit_status", a->exit_status ? a->exit_status : "");
    cJSON_AddStringToObject(info, "submission", a->submission ? a->submission : "");
    cJSON_AddItemReferenceToObject(root, "messages", a->messages);
    cJSON_AddStringToObject(root, "trajectory_format", TRAJECTORY_FORMAT);
    return root;
}

int mini_agent_save(struct mini_agent *a, struct mini_err *e)
{
    if (!a->output_path)
        return 0;
    _cleanup_cjson_ cJSON *root = serialize(a);
    _cleanup_free_ char *text = root ? cJSON_Print(root) : NULL;
    if (!text)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_write_file_atomic(a->output_path, text, strlen(text), 0644, e) < 0)
        return mini_err_prefix(e, "saving the trajectory");
    return 0;
}

/* ---- the run -------------------------------------------------------------- */

static int render(struct mini_agent *a, const char *key, struct mini_buf *out, struct mini_err *e)
{
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(a->config, "agent");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(agent, key);
    if (!cJSON_IsString(t))
        return mini_err_set(e, MINI_E_CONFIG, "agent.%s: missing (a template string is required)", key);
    if (mini_tpl_render(t->valuestring, strlen(t->valuestring), a->template_vars, out, e) < 0)
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

/* Add what a stage ended with: its messages, then, when no stage caught a
 * failure or a Ctrl-C, the exit message naming it (as mini-swe-agent's
 * handle_uncaught_exception).  -1 when the run ended that way. */
static int add_flow(struct mini_agent *a, struct mini_flow *f, struct mini_err *e)
{
    int rc = -1;
    if (f->kind == MINI_FLOW_ERROR) {
        mini_flow_push(f, exit_message(exit_name(e), "", e->msg));
    } else if (f->kind == MINI_FLOW_INTERRUPTED) {
        mini_err_set(e, MINI_E_INTERNAL, "interrupted");
        mini_flow_push(f, exit_message("KeyboardInterrupt", "", "Interrupted by the user."));
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
    a->start = mini_mono_s();
    struct mini_flow f = first_messages(a, e);
    int rc = add_flow(a, &f, e);
    if (rc < 0)
        return save_step(a, rc, e);
    while (rc == 0 && !run_ended(a)) {
        f = a->ops->step(a, e);
        rc = save_step(a, add_flow(a, &f, e), e);
    }
    return rc;
}

/* ---- the stages ----------------------------------------------------------- */

struct mini_flow mini_agent_step(struct mini_agent *a, struct mini_err *e)
{
    if (a->interrupt)
        return MINI_FLOW(MINI_FLOW_INTERRUPTED);
    /* Always final: asking would only spend more of the time that is up. */
    if (a->wall_time_limit > 0 && mini_mono_s() - a->start >= a->wall_time_limit)
        return mini_flow_of(MINI_FLOW_LIMITS_EXCEEDED, exit_message("TimeExceeded", "", "Wall time limit exceeded."));
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
        mini_flow_push(&f, exit_message("RepeatedFormatError", "", e->msg));
    return f;
}

struct mini_flow mini_agent_query(struct mini_agent *a, const cJSON **msg, struct mini_err *e)
{
    *msg = NULL;
    long calls = mini_model_calls(a->model);
    double cost = mini_model_cost(a->model);
    bool over_steps = a->step_limit > 0 && a->step_limit <= calls;
    if (over_steps || (a->cost_limit > 0 && a->cost_limit <= cost))
        return mini_flow_of(MINI_FLOW_LIMITS_EXCEEDED,
                            exit_message("LimitsExceeded", "", over_steps ? "Step limit exceeded."
                                                                          : "Cost limit exceeded."));
    cJSON *assistant = NULL, *errors = NULL;
    if (a->ops->on_query)
        a->ops->on_query(a->ops_arg, true);
    int r = mini_model_query(a->model, a->messages, &assistant, &errors, e);
    if (a->ops->on_query)
        a->ops->on_query(a->ops_arg, false);
    if (r < 0 && e->code == MINI_E_FORMAT)
        return format_error(a, errors, e);
    cJSON_Delete(errors);
    if (r < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    a->format_errors = 0;
    mini_agent_add_message(a, assistant);
    *msg = assistant;
    return MINI_FLOW(MINI_FLOW_NONE);
}

/* Run one action; its result (the environment's, or one saying that the
 * action has no command) in *result. */
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
    if (a->ops->on_command)
        a->ops->on_command(a->ops_arg, cmd, NULL);
    if (mini_environment_execute(a->env, cmd, NULL, 0, a->ops->on_output, a->ops_arg, result, e) < 0)
        return -1;
    if (a->ops->on_command)
        a->ops->on_command(a->ops_arg, cmd, *result);
    return 0;
}

int mini_agent_run_actions(struct mini_agent *a, const cJSON *msg, cJSON *outputs, char **submission,
                           struct mini_err *e)
{
    *submission = NULL;
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"),
                                                            "actions");
    const cJSON *act;
    cJSON_ArrayForEach(act, actions) {
        if (a->interrupt)       /* also one that came with the reply: nothing runs */
            break;
        cJSON *result = NULL;
        if (execute(a, act, &result, e) < 0)
            return -1;
        cJSON_AddItemToArray(outputs, result);
        if (!a->interrupt && (*submission = mini_submission(result)))
            break;
    }
    return 0;
}

int mini_agent_observe(struct mini_agent *a, const cJSON *msg, const cJSON *outputs, struct mini_err *e)
{
    cJSON *obs = mini_model_observations(a->model, msg, outputs, a->template_vars, e);
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

struct mini_flow mini_agent_execute_actions(struct mini_agent *a, const cJSON *msg, struct mini_err *e)
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
