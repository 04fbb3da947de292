/* OpenAI-compatible chat completions (POST {api_base}/chat/completions):
 * the request body and the reply's assistant message and usage, and the
 * "openai" provider (mini_provider_openai, at the end).  Works for
 * api.openai.com, vLLM, llama.cpp server, Ollama; OpenRouter's provider
 * (model_openrouter.c) builds on it. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/json.h"

static cJSON *bash_parameters(void)
{
    _cleanup_cjson_ cJSON *params = cJSON_CreateObject();
    if (!params || !cJSON_AddStringToObject(params, "type", "object"))
        return NULL;
    cJSON *props = cJSON_AddObjectToObject(params, "properties");
    cJSON *cmd = props ? cJSON_AddObjectToObject(props, "command") : NULL;
    if (!cmd || !cJSON_AddStringToObject(cmd, "type", "string") ||
        !cJSON_AddStringToObject(cmd, "description", "The bash command to execute"))
        return NULL;
    cJSON *req = cJSON_AddArrayToObject(params, "required");
    cJSON *name = cJSON_CreateString("command");
    if (!req || !name) {
        cJSON_Delete(name);
        return NULL;
    }
    cJSON_AddItemToArray(req, name);
    return TAKE_PTR(params);
}

/* The tool definition (OpenAI shape) and its Anthropic twin. */
static cJSON *mini_bash_tool_openai(void)
{
    cJSON *tool = cJSON_CreateObject();
    cJSON *fn = cJSON_CreateObject();
    cJSON *params = bash_parameters();
    if (!tool || !fn || !params || !cJSON_AddStringToObject(tool, "type", "function") ||
        !cJSON_AddStringToObject(fn, "name", "bash") ||
        !cJSON_AddStringToObject(fn, "description", "Execute a bash command")) {
        cJSON_Delete(tool);
        cJSON_Delete(fn);
        cJSON_Delete(params);
        return NULL;
    }
    cJSON_AddItemToObject(fn, "parameters", params);
    cJSON_AddItemToObject(tool, "function", fn);
    return tool;
}

cJSON *mini_bash_tool_anthropic(void)
{
    cJSON *tool = cJSON_CreateObject();
    cJSON *params = bash_parameters();
    if (!tool || !params || !cJSON_AddStringToObject(tool, "name", "bash") ||
        !cJSON_AddStringToObject(tool, "description", "Execute a bash command")) {
        cJSON_Delete(tool);
        cJSON_Delete(params);
        return NULL;
    }
    cJSON_AddItemToObject(tool, "input_schema", params);
    return tool;
}

static bool role_sent(const char *role)
{
    static const char *const roles[] = { "system", "developer", "user", "assistant", "tool" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(roles); i++)
        if (strcmp(role, roles[i]) == 0)
            return true;
    return false;
}

static int copy_key(cJSON *dst, const cJSON *src, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, key);
    if (!v)
        return 0;
    cJSON *d = cJSON_Duplicate(v, true);
    if (!d)
        return -1;
    cJSON_AddItemToObject(dst, key, d);
    return 0;
}

static cJSON *ephemeral(void)
{
    cJSON *c = cJSON_CreateObject();
    if (c && !cJSON_AddStringToObject(c, "type", "ephemeral")) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

/* mini-swe-agent's set_cache_control(mode="default_end") on one message. */
static int mark_cache(cJSON *msg, bool mark)
{
    cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsArray(content)) {
        cJSON *first = cJSON_GetArrayItem(content, 0);
        if (cJSON_IsObject(first))
            cJSON_DeleteItemFromObjectCaseSensitive(first, "cache_control");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(msg, "cache_control");
    if (!mark)
        return 0;
    if (cJSON_IsString(content)) {
        cJSON *blocks = cJSON_CreateArray(), *b = cJSON_CreateObject();
        if (!blocks || !b || !cJSON_AddStringToObject(b, "type", "text") ||
            !cJSON_AddStringToObject(b, "text", content->valuestring)) {
            cJSON_Delete(blocks);
            cJSON_Delete(b);
            return -1;
        }
        cJSON_AddItemToArray(blocks, b);
        cJSON_ReplaceItemInObjectCaseSensitive(msg, "content", blocks);
        content = blocks;
    }
    cJSON *first = cJSON_GetArrayItem(content, 0);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
    cJSON *target = cJSON_IsString(role) && strcmp(role->valuestring, "tool") == 0 ? msg : first;
    if (!cJSON_IsObject(target))
        return 0;
    cJSON *cc = ephemeral();
    if (!cc)
        return -1;
    cJSON_AddItemToObject(target, "cache_control", cc);
    return 0;
}

cJSON *mini_openai_messages(const cJSON *messages, bool cache_control)
{
    _cleanup_cjson_ cJSON *out = cJSON_CreateArray();
    if (!out)
        return NULL;
    const cJSON *msg;
    cJSON_ArrayForEach (msg, messages) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (!cJSON_IsString(role) || !role_sent(role->valuestring))
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            return NULL;
        cJSON_AddItemToArray(out, o);
        if (copy_key(o, msg, "role") < 0 || copy_key(o, msg, "content") < 0 || copy_key(o, msg, "name") < 0 ||
            copy_key(o, msg, "tool_calls") < 0 || copy_key(o, msg, "tool_call_id") < 0)
            return NULL;
        cJSON *content = cJSON_GetObjectItemCaseSensitive(o, "content");
        bool has_calls = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "tool_calls")) > 0;
        if (!content || (cJSON_IsNull(content) && !has_calls)) {
            cJSON *c = has_calls ? cJSON_CreateNull() : cJSON_CreateString("");
            if (!c)
                return NULL;
            if (content)
                cJSON_ReplaceItemInObjectCaseSensitive(o, "content", c);
            else
                cJSON_AddItemToObject(o, "content", c);
        }
    }
    if (cache_control) {
        int n = cJSON_GetArraySize(out), i = 0;
        cJSON *o;
        cJSON_ArrayForEach (o, out) {
            if (mark_cache(o, ++i == n) < 0)
                return NULL;
        }
    }
    return TAKE_PTR(out);
}

int mini_json_merge_into(cJSON *body, const cJSON *kw)
{
    const cJSON *item;
    cJSON_ArrayForEach (item, kw) {
        cJSON *copy = cJSON_Duplicate(item, true);
        if (!copy)
            return -1;
        if (cJSON_GetObjectItemCaseSensitive(body, item->string))
            cJSON_ReplaceItemInObjectCaseSensitive(body, item->string, copy);
        else
            cJSON_AddItemToObject(body, item->string, copy);
    }
    return 0;
}

cJSON *mini_openai_body(struct mini_model *m, const cJSON *messages, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *req = cJSON_CreateObject();
    cJSON *msgs = mini_openai_messages(messages, m->cache_control);
    if (!req || !msgs || !cJSON_AddStringToObject(req, "model", m->api_model)) {
        cJSON_Delete(msgs);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    cJSON_AddItemToObject(req, "messages", msgs);
    if (!m->text_mode) {
        cJSON *tools = cJSON_AddArrayToObject(req, "tools");
        cJSON *tool = mini_bash_tool_openai();
        if (!tools || !tool) {
            cJSON_Delete(tool);
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            return NULL;
        }
        cJSON_AddItemToArray(tools, tool);
    }
    return TAKE_PTR(req);
}

int mini_model_finish_body(struct mini_model *m, cJSON *req, struct mini_buf *body, struct mini_err *e)
{
    if (mini_json_merge_into(req, m->kwargs) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_json_print(body, req, e);
}

static int openai_request(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *req = mini_openai_body(m, messages, e);
    if (!req)
        return -1;
    return mini_model_finish_body(m, req, body, e);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

static atomic_ulong call_ids;

/* Tool calls as they will be sent back: every one with an id, a type and
 * string arguments (some servers leave the id out or send an object). */
static int normalise_tool_calls(cJSON *calls)
{
    cJSON *tc;
    cJSON_ArrayForEach (tc, calls) {
        if (!cJSON_IsObject(tc))
            continue;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(tc, "id");
        if (!cJSON_IsString(id) || !*id->valuestring) {
            char buf[64];
            snprintf(buf, sizeof(buf), "call_mini_%lx_%lu", (unsigned long)time(NULL),
                     atomic_fetch_add(&call_ids, 1) + 1);
            cJSON *nid = cJSON_CreateString(buf);
            if (!nid)
                return -1;
            if (id)
                cJSON_ReplaceItemInObjectCaseSensitive(tc, "id", nid);
            else
                cJSON_AddItemToObject(tc, "id", nid);
        }
        if (!cJSON_GetObjectItemCaseSensitive(tc, "type") && !cJSON_AddStringToObject(tc, "type", "function"))
            return -1;
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (cJSON_IsObject(args)) {
            struct mini_buf b = MINI_BUF_INIT;
            struct mini_err pe;
            if (mini_json_print(&b, args, &pe) < 0) {
                mini_buf_free(&b);
                return -1;
            }
            cJSON *s = cJSON_CreateString(b.data);
            mini_buf_free(&b);
            if (!s)
                return -1;
            cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", s);
        }
    }
    return 0;
}

int mini_openai_parse(const cJSON *resp, cJSON **msg, const char **finish_reason, struct mini_usage *u,
                      const char **why)
{
    *msg = NULL;
    *finish_reason = NULL;
    memset(u, 0, sizeof(*u));
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(resp, "error");
    if (cJSON_IsObject(err)) {
        const cJSON *em = cJSON_GetObjectItemCaseSensitive(err, "message");
        *why = cJSON_IsString(em) ? em->valuestring : "the response is an error object";
        return 1;
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(resp, "choices");
    if (!cJSON_IsArray(choices) || cJSON_GetArraySize(choices) == 0) {
        *why = "the response has no choices";
        return 1;
    }
    const cJSON *choice = cJSON_GetArrayItem(choices, 0);
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(choice, "message");
    if (!cJSON_IsObject(message)) {
        *why = "the response's first choice has no message";
        return 1;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(message, "content");
    if (content && !cJSON_IsString(content) && !cJSON_IsNull(content) && !cJSON_IsArray(content)) {
        *why = "the message content is neither text nor null";
        return 1;
    }
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(message, "tool_calls");
    if (calls && !cJSON_IsArray(calls) && !cJSON_IsNull(calls)) {
        *why = "tool_calls is not an array";
        return 1;
    }
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
    *finish_reason = cJSON_IsString(fr) ? fr->valuestring : NULL;

    _cleanup_cjson_ cJSON *out = cJSON_CreateObject();
    if (!out || !cJSON_AddStringToObject(out, "role", "assistant"))
        return -1;
    cJSON *c = content ? cJSON_Duplicate(content, true) : cJSON_CreateNull();
    if (!c)
        return -1;
    cJSON_AddItemToObject(out, "content", c);
    if (cJSON_GetArraySize(calls) > 0) {
        cJSON *cc = cJSON_Duplicate(calls, true);
        if (!cc)
            return -1;
        cJSON_AddItemToObject(out, "tool_calls", cc);
        if (normalise_tool_calls(cc) < 0)
            return -1;
    }
    const cJSON *reasoning = cJSON_GetObjectItemCaseSensitive(message, "reasoning_content");
    if (cJSON_IsString(reasoning) && !cJSON_AddStringToObject(out, "reasoning_content", reasoning->valuestring))
        return -1;

    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(resp, "usage");
    if (cJSON_IsObject(usage)) {
        u->present = true;
        double prompt = num(usage, "prompt_tokens");
        double cached = num(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"), "cached_tokens");
        if (cached > prompt)
            cached = prompt;
        u->input = prompt - cached;
        u->cache_read = cached;
        u->output = num(usage, "completion_tokens");
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(usage, "cost");
        if (cJSON_IsNumber(cost)) {
            u->has_cost = true;
            u->cost = cost->valuedouble;
        }
    }
    *msg = TAKE_PTR(out);
    return 0;
}

/* ---- the provider ---- */

const char *mini_openai_url_suffix(const char *base)
{
    size_t n = strlen(base), k = strlen("/chat/completions");
    return n >= k && strcmp(base + n - k, "/chat/completions") == 0 ? "" : "/chat/completions";
}

static const char *const openai_classes[] = { "openai", NULL };
static const char *const openai_text_classes[] = { "openai_textbased", NULL };
static const struct mini_model_prefix openai_prefixes[] = {
    { "openai/", NULL },
    { "hosted_vllm/", NULL },
    { "ollama/", "http://localhost:11434/v1" },
    { "ollama_chat/", "http://localhost:11434/v1" },
    { NULL, NULL },
};

const struct mini_model_provider_ops mini_provider_openai = {
    .name = "openai",
    .classes = openai_classes,
    .text_classes = openai_text_classes,
    .model_type = "mini.models.openai.OpenAIModel",
    .text_model_type = "mini.models.openai.OpenAITextbasedModel",
    .prefixes = openai_prefixes,
    .claims = NULL, /* the first provider: every name nobody claims */
    .default_base = "https://api.openai.com/v1",
    .base_env = "OPENAI_BASE_URL",
    .key_env = "OPENAI_API_KEY",
    .url_suffix = mini_openai_url_suffix,
    .auth_headers = mini_model_bearer_auth,
    .request = openai_request,
    .parse = mini_openai_parse,
};
