/* model_probe: drive a model as the agent loop would, for the model tests.
 *
 *   model_probe [--class CLASS] [--steps N] [--fail-actions] MODEL.json MESSAGES.json
 *
 * MODEL.json is the config's "model" section, MESSAGES.json the starting
 * message list.  Each step queries the model and prints one JSON line:
 *   {"event": "assistant", "message": {...}}, then, when it has actions,
 *   {"event": "observations", "messages": [...]} for fake outputs
 *   ("ran: COMMAND", returncode 0; with --fail-actions returncode 1 and an
 *   exception_info);
 *   {"event": "format_error", "error": "...", "messages": [...]};
 *   {"event": "error", "code": "...", "message": "..."} (and the run stops).
 * Messages are appended as the agent does.  At the end:
 *   {"event": "stats", "cost": ..., "calls": ..., "class": ..., "serialize": {...},
 *    "template_vars": {...}, "messages": [...]}.
 * Exit status: 0, 1 when a step failed with an error, 2 for bad usage or a
 * model that could not be built. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

static void emit(cJSON *obj)
{
    struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    if (mini_json_print(&b, obj, &e) == 0)
        printf("%s\n", b.data);
    else
        printf("{\"event\": \"error\", \"code\": \"internal\", \"message\": \"cannot print\"}\n");
    fflush(stdout);
    mini_buf_free(&b);
    cJSON_Delete(obj);
}

static void emit_error(const struct mini_err *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "error");
    cJSON_AddStringToObject(o, "code", mini_errc_name(e->code));
    cJSON_AddStringToObject(o, "message", e->msg);
    emit(o);
}

static cJSON *load(const char *path, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, 64 << 20, e) < 0)
        return NULL;
    return mini_json_parse(b.data ? b.data : "", b.len, e);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* libcurl runs with CURLOPT_NOSIGNAL */
    const char *cls = NULL;
    long steps = 1;
    bool fail_actions = false;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--class") == 0 && i + 1 < argc)
            cls = argv[++i];
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--fail-actions") == 0)
            fail_actions = true;
        else
            break;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: model_probe [--class CLASS] [--steps N] [--fail-actions] MODEL.json MESSAGES.json\n");
        return 2;
    }
    struct mini_err e;
    mini_err_clear(&e);
    cJSON *cfg = load(argv[i], &e);
    cJSON *messages = cfg ? load(argv[i + 1], &e) : NULL;
    if (!cfg || !messages) {
        emit_error(&e);
        cJSON_Delete(cfg);
        return 2;
    }
    struct mini_model *m = mini_model_new(cfg, cls, &e);
    if (!m) {
        emit_error(&e);
        cJSON_Delete(cfg);
        cJSON_Delete(messages);
        return 2;
    }
    int status = 0;
    for (long s = 0; s < steps; s++) {
        cJSON *assistant = NULL, *format_error = NULL;
        mini_err_clear(&e);
        if (mini_model_query(m, messages, &assistant, &format_error, &e) < 0) {
            if (e.code != MINI_E_FORMAT) {
                emit_error(&e);
                status = 1;
                break;
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "event", "format_error");
            cJSON_AddStringToObject(o, "error", e.msg);
            cJSON_AddItemToObject(o, "messages", cJSON_Duplicate(format_error, true));
            emit(o);
            cJSON *msg;
            while ((msg = cJSON_DetachItemFromArray(format_error, 0)))
                cJSON_AddItemToArray(messages, msg);
            cJSON_Delete(format_error);
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "event", "assistant");
        cJSON_AddItemToObject(o, "message", cJSON_Duplicate(assistant, true));
        emit(o);
        cJSON_AddItemToArray(messages, assistant);
        const cJSON *actions =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(assistant, "extra"), "actions");
        if (cJSON_GetArraySize(actions) == 0)
            continue;
        cJSON *outputs = cJSON_CreateArray();
        const cJSON *a;
        cJSON_ArrayForEach (a, actions) {
            const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(a, "command");
            _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
            mini_buf_printf(&text, "ran: %s\n", cJSON_IsString(cmd) ? cmd->valuestring : "?");
            cJSON *out = cJSON_CreateObject();
            cJSON_AddStringToObject(out, "output", text.data);
            cJSON_AddNumberToObject(out, "returncode", fail_actions ? 1 : 0);
            cJSON_AddStringToObject(out, "exception_info", fail_actions ? "it failed" : "");
            if (fail_actions) {
                cJSON *x = cJSON_AddObjectToObject(out, "extra");
                cJSON_AddStringToObject(x, "exception_type", "ProbeError");
            }
            cJSON_AddItemToArray(outputs, out);
        }
        cJSON *vars = mini_model_template_vars(m);
        cJSON_AddStringToObject(vars, "task", "probe task");
        cJSON *obs = mini_model_observations(m, assistant, outputs, vars, &e);
        cJSON_Delete(vars);
        cJSON_Delete(outputs);
        if (!obs) {
            emit_error(&e);
            status = 1;
            break;
        }
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "event", "observations");
        cJSON_AddItemToObject(o, "messages", cJSON_Duplicate(obs, true));
        emit(o);
        cJSON *msg;
        while ((msg = cJSON_DetachItemFromArray(obs, 0)))
            cJSON_AddItemToArray(messages, msg);
        cJSON_Delete(obs);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "stats");
    cJSON_AddNumberToObject(o, "cost", mini_model_cost(m));
    cJSON_AddNumberToObject(o, "calls", (double)mini_model_calls(m));
    cJSON_AddNumberToObject(o, "format_errors", (double)mini_model_format_errors(m));
    cJSON_AddStringToObject(o, "class", mini_model_class(m));
    cJSON_AddStringToObject(o, "model_name", mini_model_name(m));
    cJSON_AddItemToObject(o, "serialize", mini_model_serialize(m));
    cJSON_AddItemToObject(o, "template_vars", mini_model_template_vars(m));
    cJSON_AddItemToObject(o, "messages", messages);
    emit(o);
    mini_model_free(m);
    cJSON_Delete(cfg);
    return status;
}
