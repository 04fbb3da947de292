/* Test models.
 *
 * deterministic (mini-swe-agent's test_models.DeterministicModel):
 * model.outputs is a list of replies given in order, one per query.  A
 * string is the assistant's text, parsed with action_regex (exactly one
 * match, else a format error); an object is a whole assistant message
 * (v2 style: {"role": "assistant", "content": ..., "extra": {"actions":
 * [...]}}, or with OpenAI tool_calls), returned as it is.  A string reply
 * costs cost_per_call (default 1.0), format errors included; an object
 * costs the run its own extra.cost (0 without one) while the process-wide
 * total is charged cost_per_call, as DeterministicModel does.  A reply "/sleep N"
 * (or an action "/sleep N") waits N seconds and moves on to the next
 * without counting.
 *
 * replay: model.replay_path names a saved trajectory (.traj.json, or a
 * bare list of messages); its assistant messages are returned in order,
 * with their actions and costs (cost_per_call, default 1.0, where a message
 * has none), so a run can be repeated without a model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#define TEST_ACTION_REGEX "```(?:mswea_bash_command|bash)\\s*\\n(.*?)\\n```"
#define TEST_FORMAT_ERROR_TEMPLATE \
    "Please always provide EXACTLY ONE action in triple backticks, found {{actions|length}} actions."
#define TEST_OBSERVATION_TEMPLATE                                                                 \
    "{% if output.exception_info %}<exception>{{output.exception_info}}</exception>\n{% endif %}" \
    "<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
#define MAX_TRAJECTORY_BYTES ((size_t)1 << 30)

static int set_default(cJSON *cfg, const char *key, cJSON *value, struct mini_err *e)
{
    if (!value)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON *old = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (old && !cJSON_IsNull(old)) {
        cJSON_Delete(value);
        return 0;
    }
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(cfg, key, value);
    else
        cJSON_AddItemToObject(cfg, key, value);
    return 0;
}

static int need_string(const cJSON *cfg, const char *key, struct mini_err *e)
{
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cfg, key)))
        return mini_err_set(e, MINI_E_CONFIG, "model.%s must be a string", key);
    return 0;
}

static int load_trajectory(struct mini_model *m, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(m->replay_path, &b, MAX_TRAJECTORY_BYTES, e) < 0)
        return mini_err_prefix(e, "replay model");
    cJSON *root = cJSON_ParseWithLength(b.data ? b.data : "", b.len);
    if (!root)
        return mini_err_set(e, MINI_E_CONFIG, "replay model: %s is not valid JSON", m->replay_path);
    const cJSON *messages = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(messages)) {
        cJSON_Delete(root);
        return mini_err_set(e, MINI_E_CONFIG, "replay model: %s has no \"messages\" list", m->replay_path);
    }
    if (!(m->outputs = cJSON_CreateArray())) {
        cJSON_Delete(root);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    const cJSON *msg;
    cJSON_ArrayForEach (msg, messages) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") != 0)
            continue;
        cJSON *copy = cJSON_Duplicate(msg, true);
        if (!copy) {
            cJSON_Delete(root);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        cJSON_AddItemToArray(m->outputs, copy);
    }
    cJSON_Delete(root);
    if (cJSON_GetArraySize(m->outputs) == 0)
        return mini_err_set(e, MINI_E_CONFIG, "replay model: %s has no assistant messages", m->replay_path);
    return 0;
}

int mini_testmodel_init(struct mini_model *m, struct mini_err *e)
{
    cJSON *cfg = m->cfg;
    /* deterministic: text mode, deterministic_toolcall: tool calls (the
     * class row says which); replay takes what each message has. */
    bool det = m->kind == MINI_KIND_DETERMINISTIC;
    if (!det)
        m->text_mode = false;
    const char *name = !det ? "replay" : m->text_mode ? "deterministic" : "deterministic_toolcall";
    if (set_default(cfg, "model_name", cJSON_CreateString(name), e) < 0 ||
        set_default(cfg, "action_regex", cJSON_CreateString(TEST_ACTION_REGEX), e) < 0 ||
        set_default(cfg, "format_error_template", cJSON_CreateString(TEST_FORMAT_ERROR_TEMPLATE), e) < 0 ||
        set_default(cfg, "observation_template", cJSON_CreateString(TEST_OBSERVATION_TEMPLATE), e) < 0)
        return -1;
    if (need_string(cfg, "model_name", e) < 0 || need_string(cfg, "action_regex", e) < 0 ||
        need_string(cfg, "format_error_template", e) < 0 || need_string(cfg, "observation_template", e) < 0)
        return -1;
    m->model_name = cJSON_GetObjectItemCaseSensitive(cfg, "model_name")->valuestring;
    if (!(m->action_re =
              mini_action_regex_compile(cJSON_GetObjectItemCaseSensitive(cfg, "action_regex")->valuestring, e)))
        return mini_err_prefix(e, "model");
    if (set_default(cfg, "cost_per_call", cJSON_CreateNumber(1.0), e) < 0)
        return -1;
    const cJSON *cpc = cJSON_GetObjectItemCaseSensitive(cfg, "cost_per_call");
    if (!cJSON_IsNumber(cpc) || !(cpc->valuedouble >= 0) || !isfinite(cpc->valuedouble))
        return mini_err_set(e, MINI_E_CONFIG, "model.cost_per_call must be a number >= 0");
    m->cost_per_call = cpc->valuedouble;
    if (!det) {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(cfg, "replay_path");
        if (!cJSON_IsString(path) || !*path->valuestring)
            return mini_err_set(e, MINI_E_CONFIG, "the replay model needs model.replay_path, the trajectory to replay");
        if (!(m->replay_path = strdup(path->valuestring)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return load_trajectory(m, e);
    }
    const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(cfg, "outputs");
    if (!cJSON_IsArray(outputs) || cJSON_GetArraySize(outputs) == 0)
        return mini_err_set(e, MINI_E_CONFIG, "the deterministic model needs model.outputs, a list of replies");
    const cJSON *o;
    int i = 0;
    cJSON_ArrayForEach (o, outputs) {
        if (!cJSON_IsString(o) && !cJSON_IsObject(o))
            return mini_err_set(e, MINI_E_CONFIG, "model.outputs[%d] must be a string or a message mapping", i);
        i++;
    }
    if (!(m->outputs = cJSON_Duplicate(outputs, true)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

/* "/sleep N": seconds to wait, or -1. */
static double sleep_request(const char *s)
{
    if (strncmp(s, "/sleep", 6) != 0)
        return -1;
    char *end;
    double v = strtod(s + 6, &end);
    while (*end == ' ' || *end == '\n' || *end == '\t')
        end++;
    return *end == '\0' && isfinite(v) && v >= 0 ? v : -1;
}

static double message_sleep(const cJSON *msg)
{
    const cJSON *a;
    cJSON_ArrayForEach (a,
                        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "actions")) {
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(a, "command");
        double s = cJSON_IsString(cmd) ? sleep_request(cmd->valuestring) : -1;
        if (s >= 0)
            return s;
    }
    return -1;
}

static int set_extra(cJSON *msg, const char *key, cJSON *value, bool replace, struct mini_err *e)
{
    if (!value)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON *extra = cJSON_GetObjectItemCaseSensitive(msg, "extra");
    if (!cJSON_IsObject(extra)) {
        if (extra)
            cJSON_DeleteItemFromObjectCaseSensitive(msg, "extra");
        if (!(extra = cJSON_AddObjectToObject(msg, "extra"))) {
            cJSON_Delete(value);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
    }
    if (cJSON_GetObjectItemCaseSensitive(extra, key)) {
        if (!replace) {
            cJSON_Delete(value);
            return 0;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(extra, key, value);
    } else {
        cJSON_AddItemToObject(extra, key, value);
    }
    return 0;
}

/* A call: `cost` for this run (the agent's instance cost, what the reply's
 * extra.cost says), `billed` for the process-wide total (mini-swe-agent's
 * GLOBAL_MODEL_STATS, which test models charge cost_per_call). */
static void count(struct mini_model *m, double cost, double billed)
{
    m->calls++;
    m->cost += cost;
    mini_model_global_add(billed);
}

static int format_error(struct mini_model *m, const char *error, const cJSON *found, const char *content, double cost,
                        cJSON **format_error_out, struct mini_err *e)
{
    return mini_model_format_error(m, error, found, "stop", content, NULL, cost, format_error_out, e);
}

static int query_text(struct mini_model *m, const char *text, cJSON **assistant, cJSON **format_error_out,
                      struct mini_err *e)
{
    double cost = m->cost_per_call;
    count(m, cost, cost);
    cJSON *found = NULL;
    int n = mini_regex_findall(m->action_re, text, strlen(text), &found, e);
    if (n < 0) {
        cJSON_Delete(found);
        return -1;
    }
    if (n != 1) {
        char error[64];
        snprintf(error, sizeof(error), "Expected exactly 1 action, found %d.", n);
        int rc = format_error(m, error, found, text, cost, format_error_out, e);
        cJSON_Delete(found);
        return rc;
    }
    cJSON *msg = cJSON_CreateObject(), *extra = NULL, *actions = NULL, *act = NULL;
    if (!msg || !cJSON_AddStringToObject(msg, "role", "assistant") || !cJSON_AddStringToObject(msg, "content", text) ||
        !(extra = cJSON_AddObjectToObject(msg, "extra")) || !(actions = cJSON_AddArrayToObject(extra, "actions")) ||
        !(act = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(act, "command", cJSON_GetArrayItem(found, 0)->valuestring)) {
        cJSON_Delete(act);
        cJSON_Delete(msg);
        cJSON_Delete(found);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON_AddItemToArray(actions, act);
    cJSON_Delete(found);
    if (!cJSON_AddNumberToObject(extra, "cost", cost) ||
        !cJSON_AddNumberToObject(extra, "timestamp", mini_model_now())) {
        cJSON_Delete(msg);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    m->format_errors = 0;
    *assistant = msg;
    return 0;
}

/* A whole assistant message (deterministic object output or replayed). */
static int query_message(struct mini_model *m, const cJSON *src, double cost, double billed, bool add_cost,
                         bool replace_ts, cJSON **assistant, cJSON **format_error_out, struct mini_err *e)
{
    count(m, cost, billed);
    cJSON *msg = cJSON_Duplicate(src, true);
    if (!msg)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (!cJSON_GetObjectItemCaseSensitive(msg, "role") && !cJSON_AddStringToObject(msg, "role", "assistant")) {
        cJSON_Delete(msg);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON *actions = NULL;
    char *error = NULL;
    int rc = mini_message_actions(m, msg, &actions, &error, e);
    if (rc < 0) {
        cJSON_Delete(msg);
        return mini_err_prefix(e, "%s model: reply %d", m->class_name ? m->class_name : "test", m->next_output);
    }
    if (rc > 0) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
        rc = format_error(m, error, NULL, cJSON_IsString(c) ? c->valuestring : "", cost, format_error_out, e);
        free(error);
        cJSON_Delete(msg);
        return rc;
    }
    if (set_extra(msg, "actions", actions, false, e) < 0 ||
        (add_cost && set_extra(msg, "cost", cJSON_CreateNumber(cost), false, e) < 0) ||
        set_extra(msg, "timestamp", cJSON_CreateNumber(mini_model_now()), replace_ts, e) < 0) {
        cJSON_Delete(msg);
        return -1;
    }
    m->format_errors = 0;
    *assistant = msg;
    return 0;
}

int mini_testmodel_query(struct mini_model *m, const cJSON *messages, cJSON **assistant, cJSON **format_error_out,
                         struct mini_err *e)
{
    int n = cJSON_GetArraySize(m->outputs);
    for (;;) {
        if (m->next_output >= n) {
            if (m->kind == MINI_KIND_REPLAY)
                return mini_err_set(e, MINI_E_MODEL,
                                    "replay model: all %d assistant messages of %s have been "
                                    "replayed; the trajectory has no more",
                                    n, m->replay_path);
            return mini_err_set(e, MINI_E_MODEL,
                                "deterministic model: all %d replies of model.outputs have been "
                                "used",
                                n);
        }
        const cJSON *out = cJSON_GetArrayItem(m->outputs, m->next_output++);
        if (m->kind == MINI_KIND_REPLAY) {
            /* the file's cost, else cost_per_call (mini-swe-agent's own tests
             * replay saved replies with make_output's cost, 1.0) */
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "extra"), "cost");
            double cost = !cJSON_IsNumber(c) ? m->cost_per_call : c->valuedouble > 0 ? c->valuedouble : 0;
            return query_message(m, out, cost, cost, true, true, assistant, format_error_out, e);
        }
        double s = cJSON_IsString(out) ? sleep_request(out->valuestring) : message_sleep(out);
        if (s >= 0) {
            if (mini_http_sleep_ms((long)(s * 1000), m->cancel) < 0)
                return mini_err_set(e, MINI_E_IO, "deterministic model: interrupted");
            continue;
        }
        if (cJSON_IsString(out) && !m->text_mode) {
            /* text alone, where tool calls are expected: what a tool-calling
             * model's reply without one gets */
            count(m, m->cost_per_call, m->cost_per_call);
            return format_error(m,
                                "No tool calls found in the response. Every response MUST include at least "
                                "one tool call.",
                                NULL, out->valuestring, m->cost_per_call, format_error_out, e);
        }
        if (cJSON_IsString(out))
            return query_text(m, out->valuestring, assistant, format_error_out, e);
        /* a whole message, as DeterministicModel returns it: the run is
         * charged its own extra.cost (none: 0, and none is added), the
         * process-wide total cost_per_call */
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "extra"), "cost");
        double cost = cJSON_IsNumber(c) && c->valuedouble >= 0 ? c->valuedouble : 0;
        return query_message(m, out, cost, m->cost_per_call, false, false, assistant, format_error_out, e);
    }
}
