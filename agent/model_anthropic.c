/* Anthropic messages API (POST {api_base}/v1/messages).
 *
 * The trajectory keeps OpenAI's message shapes (as mini-swe-agent's
 * litellm-based models do), so a trajectory reads the same whatever the
 * provider, and a run can switch models.  Here they are converted:
 * system messages become the top-level `system`; an assistant message's
 * tool_calls become tool_use blocks (after its thinking blocks and text);
 * `tool` messages become tool_result blocks, merged with the user messages
 * that follow into one user turn, tool results first.  The "anthropic"
 * provider (mini_provider_anthropic) is at the end. */
#include <string.h>
#include <strings.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/json.h"

#define ANTHROPIC_VERSION "2023-06-01"
/* max_tokens, which the API requires, when model_kwargs has none. */
#define DEFAULT_MAX_TOKENS 8192

static cJSON *text_block(const char *text)
{
    cJSON *b = cJSON_CreateObject();
    if (b && (!cJSON_AddStringToObject(b, "type", "text") || !cJSON_AddStringToObject(b, "text", text))) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

/* The text of an OpenAI content value (string, or array of text parts). */
static int content_text(const cJSON *content, struct mini_buf *out)
{
    if (cJSON_IsString(content))
        return mini_buf_puts(out, content->valuestring);
    const cJSON *part;
    cJSON_ArrayForEach (part, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (cJSON_IsString(t) && mini_buf_puts(out, t->valuestring) < 0)
            return -1;
    }
    return 0;
}

/* Append the user-side blocks of msg (role user) to blocks. */
static int user_blocks(const cJSON *msg, cJSON *blocks)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsString(content)) {
        if (!*content->valuestring)
            return 0; /* Anthropic refuses empty text blocks */
        cJSON *b = text_block(content->valuestring);
        if (!b)
            return -1;
        cJSON_AddItemToArray(blocks, b);
        return 0;
    }
    const cJSON *part;
    cJSON_ArrayForEach (part, content) {
        cJSON *copy = cJSON_Duplicate(part, true);
        if (!copy)
            return -1;
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "cache_control");
        cJSON_AddItemToArray(blocks, copy);
    }
    return 0;
}

static int tool_result_block(const cJSON *msg, cJSON *blocks, struct mini_err *e)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
    if (!cJSON_IsString(id))
        return mini_err_set(e, MINI_E_MODEL, "a tool message has no tool_call_id");
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    cJSON *b = cJSON_CreateObject();
    if (!b || content_text(cJSON_GetObjectItemCaseSensitive(msg, "content"), &text) < 0 ||
        !cJSON_AddStringToObject(b, "type", "tool_result") ||
        !cJSON_AddStringToObject(b, "tool_use_id", id->valuestring) ||
        !cJSON_AddStringToObject(b, "content", text.data ? text.data : "")) {
        cJSON_Delete(b);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON_AddItemToArray(blocks, b);
    return 0;
}

static int assistant_blocks(const cJSON *msg, cJSON *blocks, struct mini_err *e)
{
    const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(msg, "thinking_blocks");
    const cJSON *t;
    cJSON_ArrayForEach (t, thinking) {
        cJSON *copy = cJSON_Duplicate(t, true);
        if (!copy)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        cJSON_AddItemToArray(blocks, copy);
    }
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (content_text(cJSON_GetObjectItemCaseSensitive(msg, "content"), &text) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (text.len) {
        cJSON *b = text_block(text.data);
        if (!b)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        cJSON_AddItemToArray(blocks, b);
    }
    const cJSON *tc;
    cJSON_ArrayForEach (tc, cJSON_GetObjectItemCaseSensitive(msg, "tool_calls")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(tc, "id");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        if (!cJSON_IsString(id) || !cJSON_IsString(name))
            return mini_err_set(e, MINI_E_MODEL, "an assistant tool call has no id or name");
        cJSON *input = NULL;
        if (cJSON_IsString(args)) {
            struct mini_err pe;
            input = mini_json_parse(args->valuestring, strlen(args->valuestring), &pe);
            if (input && !cJSON_IsObject(input)) {
                cJSON_Delete(input);
                input = NULL;
            }
        } else if (cJSON_IsObject(args)) {
            input = cJSON_Duplicate(args, true);
        }
        if (!input && !(input = cJSON_CreateObject()))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        cJSON *b = cJSON_CreateObject();
        if (!b || !cJSON_AddStringToObject(b, "type", "tool_use") ||
            !cJSON_AddStringToObject(b, "id", id->valuestring) ||
            !cJSON_AddStringToObject(b, "name", name->valuestring)) {
            cJSON_Delete(b);
            cJSON_Delete(input);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        cJSON_AddItemToObject(b, "input", input);
        cJSON_AddItemToArray(blocks, b);
    }
    return 0;
}

/* Close the turn being built: append {"role", "content"} to out. */
static int flush_turn(cJSON *out, const char *role, cJSON **first, cJSON **rest)
{
    cJSON *blocks = *first;
    *first = NULL;
    cJSON *r = *rest;
    *rest = NULL;
    if (!blocks)
        blocks = cJSON_CreateArray();
    if (!blocks) {
        cJSON_Delete(r);
        return -1;
    }
    /* tool results first, then the rest, in order */
    while (r && cJSON_GetArraySize(r) > 0)
        cJSON_AddItemToArray(blocks, cJSON_DetachItemFromArray(r, 0));
    cJSON_Delete(r);
    if (cJSON_GetArraySize(blocks) == 0) {
        cJSON_Delete(blocks);
        return 0;
    }
    cJSON *turn = cJSON_CreateObject();
    if (!turn || !cJSON_AddStringToObject(turn, "role", role)) {
        cJSON_Delete(turn);
        cJSON_Delete(blocks);
        return -1;
    }
    cJSON_AddItemToObject(turn, "content", blocks);
    cJSON_AddItemToArray(out, turn);
    return 0;
}

int mini_anthropic_convert(const cJSON *messages, bool cache_control, cJSON **system, cJSON **out, struct mini_err *e)
{
    *system = NULL;
    *out = NULL;
    _cleanup_buf_ struct mini_buf sys = MINI_BUF_INIT;
    bool have_sys = false;
    _cleanup_cjson_ cJSON *res = cJSON_CreateArray();
    _cleanup_cjson_ cJSON *first = NULL; /* blocks of the turn being built */
    _cleanup_cjson_ cJSON *rest = NULL;
    const char *turn_role = NULL; /* "user" or "assistant" */
    if (!res)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *msg;
    cJSON_ArrayForEach (msg, messages) {
        const cJSON *rj = cJSON_GetObjectItemCaseSensitive(msg, "role");
        const char *role = cJSON_IsString(rj) ? rj->valuestring : "";
        if (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0) {
            if ((have_sys && mini_buf_puts(&sys, "\n\n") < 0) ||
                content_text(cJSON_GetObjectItemCaseSensitive(msg, "content"), &sys) < 0)
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            have_sys = true;
            continue;
        }
        const char *side = strcmp(role, "assistant") == 0              ? "assistant"
            : (strcmp(role, "user") == 0 || strcmp(role, "tool") == 0) ? "user"
                                                                       : NULL;
        if (!side)
            continue; /* "exit" and other mini-only roles */
        if (turn_role && strcmp(turn_role, side) != 0 && flush_turn(res, turn_role, &first, &rest) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        turn_role = side;
        if (!first && !(first = cJSON_CreateArray()))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        if (!rest && !(rest = cJSON_CreateArray()))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        if (strcmp(role, "tool") == 0) {
            if (tool_result_block(msg, first, e) < 0)
                return -1;
        } else if (strcmp(role, "user") == 0) {
            if (user_blocks(msg, rest) < 0)
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        } else if (assistant_blocks(msg, rest, e) < 0) {
            return -1;
        }
    }
    if (turn_role && flush_turn(res, turn_role, &first, &rest) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (cache_control) {
        cJSON *last = cJSON_GetArrayItem(res, cJSON_GetArraySize(res) - 1);
        cJSON *blocks = cJSON_GetObjectItemCaseSensitive(last, "content");
        cJSON *b = cJSON_GetArrayItem(blocks, cJSON_GetArraySize(blocks) - 1);
        if (cJSON_IsObject(b)) {
            cJSON *cc = cJSON_CreateObject();
            if (!cc || !cJSON_AddStringToObject(cc, "type", "ephemeral")) {
                cJSON_Delete(cc);
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
            cJSON_AddItemToObject(b, "cache_control", cc);
        }
    }
    if (have_sys && !(*system = cJSON_CreateString(sys.data ? sys.data : "")))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    *out = TAKE_PTR(res);
    return 0;
}

static int anthropic_request(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *system = NULL;
    _cleanup_cjson_ cJSON *msgs = NULL;
    if (mini_anthropic_convert(messages, m->cache_control, &system, &msgs, e) < 0)
        return -1;
    _cleanup_cjson_ cJSON *req = cJSON_CreateObject();
    if (!req || !cJSON_AddStringToObject(req, "model", m->api_model) ||
        !cJSON_AddNumberToObject(req, "max_tokens", (double)DEFAULT_MAX_TOKENS))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (system)
        cJSON_AddItemToObject(req, "system", TAKE_PTR(system));
    cJSON_AddItemToObject(req, "messages", TAKE_PTR(msgs));
    if (!m->text_mode) {
        cJSON *tools = cJSON_AddArrayToObject(req, "tools");
        cJSON *tool = mini_bash_tool_anthropic();
        if (!tools || !tool) {
            cJSON_Delete(tool);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        cJSON_AddItemToArray(tools, tool);
    }
    return mini_model_finish_body(m, req, body, e);
}

static const char *finish_reason_of(const char *stop_reason)
{
    if (!stop_reason)
        return NULL;
    if (strcmp(stop_reason, "end_turn") == 0 || strcmp(stop_reason, "stop_sequence") == 0)
        return "stop";
    if (strcmp(stop_reason, "max_tokens") == 0)
        return "length";
    if (strcmp(stop_reason, "tool_use") == 0)
        return "tool_calls";
    if (strcmp(stop_reason, "refusal") == 0)
        return "content_filter";
    return stop_reason;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

int mini_anthropic_parse(const cJSON *resp, cJSON **msg, const char **finish_reason, struct mini_usage *u,
                         const char **why)
{
    *msg = NULL;
    *finish_reason = NULL;
    memset(u, 0, sizeof(*u));
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(resp, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "error") == 0) {
        const cJSON *em = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(resp, "error"), "message");
        *why = cJSON_IsString(em) ? em->valuestring : "the response is an error object";
        return 1;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(resp, "content");
    if (!cJSON_IsArray(content)) {
        *why = "the response has no content array";
        return 1;
    }
    const cJSON *sr = cJSON_GetObjectItemCaseSensitive(resp, "stop_reason");
    *finish_reason = finish_reason_of(cJSON_IsString(sr) ? sr->valuestring : NULL);

    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    bool have_text = false;
    _cleanup_cjson_ cJSON *out = cJSON_CreateObject();
    _cleanup_cjson_ cJSON *calls = cJSON_CreateArray();
    _cleanup_cjson_ cJSON *thinking = cJSON_CreateArray();
    if (!out || !calls || !thinking || !cJSON_AddStringToObject(out, "role", "assistant"))
        return -1;
    const cJSON *b;
    cJSON_ArrayForEach (b, content) {
        const cJSON *bt = cJSON_GetObjectItemCaseSensitive(b, "type");
        const char *t = cJSON_IsString(bt) ? bt->valuestring : "";
        if (strcmp(t, "text") == 0) {
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(b, "text");
            if (cJSON_IsString(tx)) {
                if (mini_buf_puts(&text, tx->valuestring) < 0)
                    return -1;
                have_text = true;
            }
        } else if (strcmp(t, "tool_use") == 0) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(b, "name");
            const cJSON *input = cJSON_GetObjectItemCaseSensitive(b, "input");
            if (!cJSON_IsString(id) || !cJSON_IsString(name)) {
                *why = "a tool_use block has no id or name";
                return 1;
            }
            struct mini_buf args = MINI_BUF_INIT;
            struct mini_err pe;
            int prc = input ? mini_json_print(&args, input, &pe) : mini_buf_puts(&args, "{}");
            cJSON *tc = cJSON_CreateObject(), *fn = cJSON_CreateObject();
            if (prc < 0 || !tc || !fn || !cJSON_AddStringToObject(tc, "id", id->valuestring) ||
                !cJSON_AddStringToObject(tc, "type", "function") ||
                !cJSON_AddStringToObject(fn, "name", name->valuestring) ||
                !cJSON_AddStringToObject(fn, "arguments", args.data ? args.data : "{}")) {
                mini_buf_free(&args);
                cJSON_Delete(tc);
                cJSON_Delete(fn);
                return -1;
            }
            mini_buf_free(&args);
            cJSON_AddItemToObject(tc, "function", fn);
            cJSON_AddItemToArray(calls, tc);
        } else if (strcmp(t, "thinking") == 0 || strcmp(t, "redacted_thinking") == 0) {
            cJSON *copy = cJSON_Duplicate(b, true);
            if (!copy)
                return -1;
            cJSON_AddItemToArray(thinking, copy);
        }
    }
    cJSON *c = have_text ? cJSON_CreateString(text.data) : cJSON_CreateNull();
    if (!c)
        return -1;
    cJSON_AddItemToObject(out, "content", c);
    /* empty ones are left to the cleanup */
    if (cJSON_GetArraySize(calls) > 0)
        cJSON_AddItemToObject(out, "tool_calls", TAKE_PTR(calls));
    if (cJSON_GetArraySize(thinking) > 0)
        cJSON_AddItemToObject(out, "thinking_blocks", TAKE_PTR(thinking));

    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(resp, "usage");
    if (cJSON_IsObject(usage)) {
        u->present = true;
        u->input = num(usage, "input_tokens");
        u->output = num(usage, "output_tokens");
        u->cache_write = num(usage, "cache_creation_input_tokens");
        u->cache_read = num(usage, "cache_read_input_tokens");
    }
    *msg = TAKE_PTR(out);
    return 0;
}

/* ---- the provider ---- */

static const char *anthropic_url_suffix(const char *base)
{
    size_t n = strlen(base);
    if (n >= 12 && strcmp(base + n - 12, "/v1/messages") == 0)
        return "";
    return n >= 3 && strcmp(base + n - 3, "/v1") == 0 ? "/messages" : "/v1/messages";
}

static int anthropic_auth(struct mini_model *m, struct mini_err *e)
{
    if (m->api_key && !mini_model_has_header(m, "x-api-key") &&
        mini_model_add_header(m, "x-api-key", m->api_key, e) < 0)
        return -1;
    if (!mini_model_has_header(m, "anthropic-version") &&
        mini_model_add_header(m, "anthropic-version", ANTHROPIC_VERSION, e) < 0)
        return -1;
    return 0;
}

static bool anthropic_claims(const char *model_name) { return strncasecmp(model_name, "claude", 6) == 0; }

static const char *const anthropic_classes[] = { "anthropic", "minisweagent.models.anthropic.AnthropicModel", NULL };
static const char *const anthropic_text_classes[] = { "anthropic_textbased", NULL };
static const struct mini_model_prefix anthropic_prefixes[] = {
    { "anthropic/", NULL },
    { NULL, NULL },
};

const struct mini_model_provider_ops mini_provider_anthropic = {
    .name = "anthropic",
    .classes = anthropic_classes,
    .text_classes = anthropic_text_classes,
    .model_type = "mini.models.anthropic.AnthropicModel",
    .text_model_type = "mini.models.anthropic.AnthropicTextbasedModel",
    .prefixes = anthropic_prefixes,
    .claims = anthropic_claims,
    .default_base = "https://api.anthropic.com",
    .base_env = "ANTHROPIC_BASE_URL",
    .key_env = "ANTHROPIC_API_KEY",
    .url_suffix = anthropic_url_suffix,
    .auth_headers = anthropic_auth,
    .request = anthropic_request,
    .parse = mini_anthropic_parse,
};
