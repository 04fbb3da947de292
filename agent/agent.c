#include "agent.h"
#include "model.h"
#include "template/template.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRAJECTORY_FORMAT "mini-swe-agent-1.1"

static double num(const cJSON *obj, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
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

int mini_agent_init(struct mini_agent *a, cJSON *config, struct mini_model *model, struct mini_environment *env,
                    const char *output_path, struct mini_err *e)
{
    memset(a, 0, sizeof *a);
    a->config = config;
    a->model = model;
    a->env = env;
    a->output_path = output_path;
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
    cJSON *ev = mini_environment_template_vars(env);
    cJSON *mv = mini_model_template_vars(model);
    if (!a->messages || !a->template_vars || !ev || !mv) {
        cJSON_Delete(ev);
        cJSON_Delete(mv);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    merge_into(a->template_vars, ev);
    merge_into(a->template_vars, mv);
    cJSON_Delete(ev);
    cJSON_Delete(mv);
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

static void add_message(struct mini_agent *a, cJSON *msg)
{
    cJSON_AddItemToArray(a->messages, msg);
    if (a->hooks.on_message)
        a->hooks.on_message(a->hooks.arg, msg, mini_model_calls(a->model), mini_model_cost(a->model));
}

static cJSON *text_message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

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

/* End the run: the exit message carries the status and the submission. */
static void finish(struct mini_agent *a, const char *status, const char *submission, const char *content)
{
    free(a->exit_status);
    free(a->submission);
    a->exit_status = strdup(status);
    a->submission = strdup(submission ? submission : "");
    cJSON *m = text_message("exit", content ? content : (submission ? submission : ""));
    cJSON *extra = cJSON_AddObjectToObject(m, "extra");
    cJSON_AddStringToObject(extra, "exit_status", status);
    cJSON_AddStringToObject(extra, "submission", a->submission ? a->submission : "");
    add_message(a, m);
}

cJSON *mini_agent_serialize(struct mini_agent *a);
cJSON *mini_agent_serialize(struct mini_agent *a)
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
    cJSON *ms = mini_model_serialize(a->model);
    cJSON *es = mini_environment_serialize(a->env);
    if (ms)
        merge_into(root, ms);
    if (es)
        merge_into(root, es);
    cJSON_Delete(ms);
    cJSON_Delete(es);
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
    cJSON *root = mini_agent_serialize(a);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int r = mini_write_file_atomic(a->output_path, text, strlen(text), 0644, e);
    free(text);
    return r < 0 ? mini_err_prefix(e, "saving the trajectory") : 0;
}

/* Outcome of one step. */
enum step_result { STEP_GO_ON, STEP_DONE, STEP_ERROR };

static bool time_exceeded(struct mini_agent *a)
{
    if (a->wall_time_limit > 0 && mini_mono_s() - a->start >= a->wall_time_limit) {
        /* Always final: asking would only spend more of the time that is up. */
        finish(a, "TimeExceeded", "", "Wall time limit exceeded.");
        return true;
    }
    return false;
}

static enum step_result check_limits(struct mini_agent *a)
{
    for (;;) {
        long calls = mini_model_calls(a->model);
        double cost = mini_model_cost(a->model);
        bool over_steps = a->step_limit > 0 && a->step_limit <= calls;
        bool over_cost = a->cost_limit > 0 && a->cost_limit <= cost;
        if (!over_steps && !over_cost)
            return STEP_GO_ON;
        if (a->hooks.on_limit && a->hooks.on_limit(a->hooks.arg, &a->step_limit, &a->cost_limit))
            continue;
        finish(a, "LimitsExceeded", "", over_steps ? "Step limit exceeded." : "Cost limit exceeded.");
        return STEP_DONE;
    }
}

/* A user message from the person, marked with what it is
 * (extra.interrupt_type, as mini-swe-agent marks them). */
static cJSON *user_note(const char *content, const char *type)
{
    cJSON *m = text_message("user", content);
    cJSON *extra = cJSON_AddObjectToObject(m, "extra");
    cJSON_AddStringToObject(extra, "interrupt_type", type);
    return m;
}

/* Add the observations of the actions of `msg` for `outputs` (those that
 * ran, in order; may be NULL).  Tool calls without an output are answered
 * as not executed, so that every call the model made has its answer. */
static int add_observations(struct mini_agent *a, const cJSON *msg, const cJSON *outputs, struct mini_err *e)
{
    cJSON *obs = mini_model_observations(a->model, msg, outputs, a->template_vars, e);
    if (!obs)
        return -1;
    cJSON *m;
    while ((m = cJSON_DetachItemFromArray(obs, 0)))
        add_message(a, m);
    cJSON_Delete(obs);
    return 0;
}

/* Run the actions of `msg` (an assistant message, or the person's command
 * in human mode) and add their observations.  A Ctrl-C stops the rest of
 * the actions; a submission ends the run unless the front end goes on. */
static enum step_result run_actions(struct mini_agent *a, const cJSON *msg, struct mini_err *e)
{
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"),
                                                            "actions");
    cJSON *outputs = cJSON_CreateArray();
    if (!outputs) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return STEP_ERROR;
    }
    char *sub = NULL;
    const cJSON *act;
    cJSON_ArrayForEach(act, actions) {
        if (a->interrupt)
            break;
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(act, "command");
        cJSON *result = NULL;
        if (!cJSON_IsString(cmd)) {
            result = cJSON_CreateObject();
            cJSON_AddStringToObject(result, "output", "");
            cJSON_AddNumberToObject(result, "returncode", -1);
            cJSON_AddStringToObject(result, "exception_info", "The action has no command.");
        } else {
            if (a->hooks.on_command)
                a->hooks.on_command(a->hooks.arg, cmd->valuestring, NULL);
            if (mini_environment_execute(a->env, cmd->valuestring, NULL, 0, a->hooks.on_output, a->hooks.arg,
                                         &result, e) < 0) {
                cJSON_Delete(outputs);
                return STEP_ERROR;
            }
            if (a->hooks.on_command)
                a->hooks.on_command(a->hooks.arg, cmd->valuestring, result);
        }
        cJSON_AddItemToArray(outputs, result);
        if (!a->interrupt && (sub = mini_submission(result)))
            break;
    }
    if (sub) {
        char *more = a->hooks.on_submit ? a->hooks.on_submit(a->hooks.arg, sub) : NULL;
        if (!more) {
            finish(a, "Submitted", sub, NULL);
            free(sub);
            cJSON_Delete(outputs);
            return STEP_DONE;
        }
        free(sub);
        /* The person goes on: the submission is an ordinary observation. */
        int r = add_observations(a, msg, outputs, e);
        cJSON_Delete(outputs);
        if (r == 0 && *more) {
            _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
            mini_buf_printf(&text, "The user has a new task for you:\n\n%s", more);
            add_message(a, user_note(text.data ? text.data : more, "UserNewTask"));
        }
        free(more);
        return r < 0 ? STEP_ERROR : STEP_GO_ON;
    }
    int r = add_observations(a, msg, outputs, e);
    cJSON_Delete(outputs);
    return r < 0 ? STEP_ERROR : STEP_GO_ON;
}

/* Human mode: the person's command is the step's action, carried by a
 * user message (mini-swe-agent's shape); its output comes back as a user
 * observation. */
static enum step_result human_step(struct mini_agent *a, const char *command, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_buf_printf(&text, "The user ran this command:\n```bash\n%s\n```", command) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return STEP_ERROR;
    }
    cJSON *m = text_message("user", text.data);
    cJSON *act = cJSON_CreateObject();
    cJSON_AddStringToObject(act, "command", command);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(m, "extra"), "actions"), act);
    add_message(a, m);
    return run_actions(a, m, e);
}

static enum step_result step(struct mini_agent *a, struct mini_err *e)
{
    if (time_exceeded(a))
        return STEP_DONE;
    if (a->hooks.human_command) {
        char *command = NULL;
        switch (a->hooks.human_command(a->hooks.arg, &command)) {
        case MINI_HUMAN_COMMAND: {
            enum step_result r = human_step(a, command ? command : "", e);
            free(command);
            return r;
        }
        case MINI_HUMAN_INTERRUPT:
            free(command);
            a->interrupt = 1;
            return STEP_GO_ON;
        case MINI_HUMAN_NONE:
            free(command);
            break;
        }
    }
    enum step_result r = check_limits(a);
    if (r != STEP_GO_ON)
        return r;
    cJSON *assistant = NULL, *format_error = NULL;
    if (a->hooks.on_query)
        a->hooks.on_query(a->hooks.arg, true);
    int qr = mini_model_query(a->model, a->messages, &assistant, &format_error, e);
    if (a->hooks.on_query)
        a->hooks.on_query(a->hooks.arg, false);
    if (qr < 0) {
        if (e->code != MINI_E_FORMAT) {
            cJSON_Delete(format_error);
            return STEP_ERROR;
        }
        /* Not added as an assistant message: the model is told what was wrong. */
        cJSON *m;
        if (cJSON_IsArray(format_error)) {
            while ((m = cJSON_DetachItemFromArray(format_error, 0)))
                add_message(a, m);
            cJSON_Delete(format_error);
        } else {
            add_message(a, format_error ? format_error : text_message("user", e->msg));
        }
        a->format_errors++;
        if (a->max_format_errors > 0 && a->format_errors >= a->max_format_errors) {
            finish(a, "RepeatedFormatError", "", e->msg);
            return STEP_DONE;
        }
        return STEP_GO_ON;
    }
    a->format_errors = 0;
    add_message(a, assistant);

    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(assistant, "extra"),
                                                            "actions");
    /* Ctrl-C as the reply arrived: nothing runs. */
    if (a->interrupt)
        return add_observations(a, assistant, NULL, e) < 0 ? STEP_ERROR : STEP_GO_ON;
    if (a->hooks.confirm && cJSON_GetArraySize(actions) > 0) {
        char *comment = NULL;
        enum mini_confirm c = a->hooks.confirm(a->hooks.arg, actions, &comment);
        if (c != MINI_CONFIRM_RUN) {
            int rr = add_observations(a, assistant, NULL, e);
            if (rr == 0 && c == MINI_CONFIRM_REJECT) {
                _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
                mini_buf_printf(&text, "Command not executed. The user rejected your command.%s%s",
                                comment && *comment ? "\nThe user said: " : "", comment ? comment : "");
                add_message(a, user_note(text.data ? text.data : "", "UserRejection"));
            } else if (c == MINI_CONFIRM_INTERRUPT) {
                a->interrupt = 1;
            }
            free(comment);
            return rr < 0 ? STEP_ERROR : STEP_GO_ON;
        }
        free(comment);
    }
    return run_actions(a, assistant, e);
}

int mini_agent_run(struct mini_agent *a, const char *task, struct mini_err *e)
{
    cJSON_DeleteItemFromObjectCaseSensitive(a->template_vars, "task");
    cJSON_AddStringToObject(a->template_vars, "task", task);
    a->start = mini_mono_s();
    _cleanup_buf_ struct mini_buf sys = MINI_BUF_INIT, inst = MINI_BUF_INIT;
    int rc = 0;
    if (render(a, "system_template", &sys, e) < 0 || render(a, "instance_template", &inst, e) < 0) {
        finish(a, exit_name(e), "", e->msg);
        rc = -1;
        goto save;
    }
    add_message(a, text_message("system", sys.data));
    add_message(a, text_message("user", inst.data));
    for (;;) {
        struct mini_err save_err;
        enum step_result r = a->interrupt ? STEP_GO_ON : step(a, e);
        if (a->interrupt && r != STEP_DONE) {
            /* Ctrl-C: a front end may ask the person what to do. */
            char *comment = !a->terminate && a->hooks.on_interrupt ? a->hooks.on_interrupt(a->hooks.arg) : NULL;
            if (comment && !a->terminate) {
                a->interrupt = 0;
                if (*comment) {
                    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
                    mini_buf_printf(&text, "The user interrupted you and said: %s", comment);
                    add_message(a, user_note(text.data ? text.data : comment, "UserInterruption"));
                }
                r = STEP_GO_ON;
            } else {
                mini_err_set(e, MINI_E_INTERNAL, "interrupted");
                finish(a, "KeyboardInterrupt", "", "Interrupted by the user.");
                rc = -1;
                r = STEP_DONE;
            }
            free(comment);
        } else if (r == STEP_ERROR) {
            finish(a, exit_name(e), "", e->msg);
            rc = -1;
            r = STEP_DONE;
        }
        if (mini_agent_save(a, &save_err) < 0 && rc == 0) {
            *e = save_err;
            return -1;
        }
        if (r == STEP_DONE)
            return rc;
    }
save:
    {
        struct mini_err save_err;
        if (mini_agent_save(a, &save_err) < 0 && rc == 0) {
            *e = save_err;
            rc = -1;
        }
    }
    return rc;
}
