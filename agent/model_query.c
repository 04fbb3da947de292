/* The query (mini_model_query, model.h): the request through the model's
 * provider (model_int.h), the POST with retries as mini-swe-agent's
 * utils/retry.py makes them (up to MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT
 * attempts, exponential wait between 4 and 60 units, Retry-After obeyed),
 * the cost of each call (litellm_model.py _calculate_cost), the actions of
 * the reply or a format error, and GLOBAL_MODEL_STATS with
 * MSWEA_GLOBAL_COST_LIMIT / _CALL_LIMIT. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/utf8.h"

#define DEFAULT_CONNECT_TIMEOUT_MS (30L * 1000)
#define RETRY_AFTER_CAP_MS (600L * 1000)

/* ------------------------------------------------------------------ */
/* Global stats (GLOBAL_MODEL_STATS)                                  */

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static double global_cost;
static long global_calls;

double mini_model_global_cost(void)
{
    pthread_mutex_lock(&global_lock);
    double c = global_cost;
    pthread_mutex_unlock(&global_lock);
    return c;
}

static long mini_model_global_calls(void)
{
    pthread_mutex_lock(&global_lock);
    long n = global_calls;
    pthread_mutex_unlock(&global_lock);
    return n;
}

void mini_model_global_add(double cost)
{
    pthread_mutex_lock(&global_lock);
    global_cost += cost;
    global_calls++;
    pthread_mutex_unlock(&global_lock);
}

static double env_double(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    return *end == '\0' && isfinite(v) && v > 0 ? v : 0;
}

static int global_check(struct mini_err *e)
{
    double cost_limit = env_double("MSWEA_GLOBAL_COST_LIMIT");
    double call_limit = env_double("MSWEA_GLOBAL_CALL_LIMIT");
    double cost = mini_model_global_cost();
    long calls = mini_model_global_calls();
    if ((cost_limit > 0 && cost >= cost_limit) || (call_limit > 0 && (double)calls >= call_limit))
        return mini_err_set(e, MINI_E_MODEL,
                            "global cost/call limit exceeded: $%.4f / %ld calls "
                            "(MSWEA_GLOBAL_COST_LIMIT, MSWEA_GLOBAL_CALL_LIMIT)",
                            cost, calls);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The query                                                          */

/* The API's own error message, or the start of the body. */
static void api_error_text(const struct mini_http_response *r, char *out, size_t cap)
{
    struct mini_err pe;
    cJSON *j = r->body.len ? mini_json_parse(r->body.data, r->body.len, &pe) : NULL;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *msg = cJSON_IsObject(err) ? cJSON_GetObjectItemCaseSensitive(err, "message")
        : cJSON_IsString(err)              ? err
                                           : NULL;
    if (!cJSON_IsString(msg)) /* vLLM: {"object": "error", "message": ...}; FastAPI: {"detail": ...} */
        msg = cJSON_GetObjectItemCaseSensitive(j, "message");
    if (!cJSON_IsString(msg))
        msg = cJSON_GetObjectItemCaseSensitive(j, "detail");
    const cJSON *where = cJSON_IsObject(err) ? err : j;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(where, "type");
    if (!cJSON_IsString(type))
        type = cJSON_GetObjectItemCaseSensitive(where, "code");
    if (cJSON_IsString(msg) && cJSON_IsString(type)) {
        snprintf(out, cap, "%.*s (%.*s)", mini_json_clip(msg->valuestring, 400), msg->valuestring,
                 MINI_JSON_SHOW(type->valuestring));
    } else if (cJSON_IsString(msg)) {
        snprintf(out, cap, "%.*s", mini_json_clip(msg->valuestring, 400), msg->valuestring);
    } else if (r->body.len) {
        struct mini_buf clean = MINI_BUF_INIT;
        size_t n = r->body.len < 200 ? r->body.len : 200;
        if (mini_utf8_sanitize(&clean, r->body.data, n) == 0) {
            for (size_t i = 0; i < clean.len; i++)
                if ((unsigned char)clean.data[i] < 0x20)
                    clean.data[i] = ' ';
            snprintf(out, cap, "%.*s%s", mini_json_clip(clean.data, 200), clean.data, r->body.len > n ? "..." : "");
        } else {
            snprintf(out, cap, "(unreadable body)");
        }
        mini_buf_free(&clean);
    } else {
        snprintf(out, cap, "(empty body)");
    }
    cJSON_Delete(j);
}

static cJSON *parse_body(const struct mini_http_response *r, struct mini_err *e)
{
    cJSON *j = mini_json_parse(r->body.data ? r->body.data : "", r->body.len, e);
    if (j || mini_utf8_valid(r->body.data, r->body.len))
        return j;
    /* A server that cut a character in half: read it as Python would, with U+FFFD. */
    struct mini_buf clean = MINI_BUF_INIT;
    if (mini_utf8_sanitize(&clean, r->body.data, r->body.len) < 0) {
        mini_buf_free(&clean);
        return NULL;
    }
    j = mini_json_parse(clean.data, clean.len, e);
    mini_buf_free(&clean);
    return j;
}

static bool status_retryable(long status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

static const char *status_hint(const struct mini_model *m, long status)
{
    switch (status) {
    case 401: return m->api_key ? "; check the API key" : "; no API key was sent";
    case 403: return "; the API key may lack access to this model";
    case 404: return "; check the model name and api_base";
    default: return "";
    }
}

/* A note for the person watching (mini_model_set_notes), with the API key
 * taken out. */
__attribute__((format(printf, 3, 4))) static void note(const struct mini_model *m, enum mini_model_note kind,
                                                       const char *fmt, ...)
{
    if (!m->note)
        return;
    struct mini_err n;
    mini_err_clear(&n);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n.msg, sizeof(n.msg), fmt, ap);
    va_end(ap);
    mini_model_scrub(m, &n);
    m->note(m->note_arg, kind, n.msg);
}

/* A time for a message: "40 ms", "4 s", "16.5 s". */
static void time_text(char *out, size_t cap, double ms)
{
    if (ms < 1000)
        snprintf(out, cap, "%.0f ms", ms);
    else
        snprintf(out, cap, "%.3g s", ms / 1000);
}

/* POST with retries.  0 with *resp_json set (a parsed 2xx body with a usable
 * shape) and *msg, *finish_reason, *u filled; -1 with e filled. */
static int api_call(struct mini_model *m, const struct mini_buf *body, cJSON **resp_json, cJSON **msg,
                    const char **finish_reason, struct mini_usage *u, struct mini_err *e)
{
    struct mini_http_request req = {
        .url = m->url,
        .headers = (const char *const *)m->headers,
        .n_headers = m->n_headers,
        .body = body->data,
        .body_len = body->len,
        .timeout_ms = m->timeout_ms,
        .connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS,
        .cancel = m->cancel,
    };
    struct mini_http_response r;
    mini_http_response_init(&r);
    char last[MINI_ERR_MSG_MAX] = "";
    char shown[512]; /* the URL for notes: no query, which may carry a key */
    mini_http_url_origin(m->url, true, shown, sizeof(shown));
    long delay = 0;
    for (int attempt = 1; attempt <= m->retry_attempts; attempt++) {
        if (attempt > 1) {
            char wait[32];
            time_text(wait, sizeof(wait), (double)delay);
            note(m, MINI_MODEL_NOTE_RETRY, "model %s: %s (attempt %d of %d; next try in %s)", m->model_name, last,
                 attempt - 1, m->retry_attempts, wait);
            if (mini_http_sleep_ms(delay, m->cancel) < 0) {
                mini_http_response_free(&r);
                return mini_err_set(e, MINI_E_IO, "model %s: interrupted", m->model_name);
            }
        }
        delay = mini_model_backoff_ms(attempt + 1, m->retry_base_ms);
        struct mini_err he;
        mini_err_clear(&he);
        double t0 = mini_model_now();
        int prc = mini_http_post(m->http, &req, &r, &he);
        char took[32];
        time_text(took, sizeof(took), (mini_model_now() - t0) * 1000);
        if (prc < 0) {
            if (r.cancelled) {
                mini_http_response_free(&r);
                return mini_err_set(e, MINI_E_IO, "model %s: interrupted", m->model_name);
            }
            /* Nothing listens on this machine's loopback when the first
             * request of the run is refused: a server not started or a
             * wrong port, which no wait will mend (see docs/models.md). */
            if (r.refused && m->calls == 0 && attempt == 1 && mini_http_url_loopback(m->url)) {
                mini_http_response_free(&r);
                return mini_err_set(e, MINI_E_MODEL,
                                    "model %s: nothing listens at %s (connection refused); is the server running?",
                                    m->model_name, m->base_shown);
            }
            note(m, MINI_MODEL_NOTE_DETAIL, "model %s: POST %s: no answer after %s: %s", m->model_name, shown, took,
                 he.msg);
            if (!r.retryable) {
                mini_http_response_free(&r);
                *e = he;
                if (e->code != MINI_E_NOMEM)
                    e->code = MINI_E_MODEL;
                return mini_err_prefix(e, "model %s", m->model_name);
            }
            snprintf(last, sizeof(last), "%.900s", he.msg);
            continue;
        }
        note(m, MINI_MODEL_NOTE_DETAIL, "model %s: POST %s: HTTP %ld after %s (%zu bytes)", m->model_name, shown,
             r.status, took, r.body.len);
        if (r.status >= 200 && r.status < 300) {
            struct mini_err pe;
            cJSON *j = parse_body(&r, &pe);
            if (!j) {
                snprintf(last, sizeof(last), "HTTP %ld with a body that is not JSON: %.400s", r.status, pe.msg);
                continue;
            }
            const char *why = NULL;
            int rc = m->provider->parse(j, msg, finish_reason, u, &why);
            if (rc < 0) {
                cJSON_Delete(j);
                mini_http_response_free(&r);
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
            if (rc > 0) {
                snprintf(last, sizeof(last), "HTTP %ld with an unusable response: %.*s", r.status,
                         mini_json_clip(why, 300), why);
                cJSON_Delete(j);
                continue;
            }
            mini_http_response_free(&r);
            *resp_json = j;
            return 0;
        }
        char text[600];
        api_error_text(&r, text, sizeof(text));
        if (!status_retryable(r.status)) {
            mini_err_set(e, MINI_E_MODEL, "model %s: POST %s: HTTP %ld: %s%s%s%s", m->model_name, m->url, r.status,
                         text, status_hint(m, r.status), r.request_id[0] ? "; request id " : "", r.request_id);
            mini_http_response_free(&r);
            return -1;
        }
        snprintf(last, sizeof(last), "HTTP %ld: %s", r.status, text);
        long ra = mini_http_retry_after_ms(r.retry_after, r.retry_after_ms, time(NULL));
        if (ra >= 0)
            delay = ra < RETRY_AFTER_CAP_MS ? ra : RETRY_AFTER_CAP_MS;
    }
    mini_http_response_free(&r);
    return mini_err_set(e, MINI_E_MODEL, "model %s: POST %s failed %d time%s; last error: %s", m->model_name, m->url,
                        m->retry_attempts, m->retry_attempts == 1 ? "" : "s", last);
}

static int content_string(const cJSON *msg, struct mini_buf *out)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsString(c))
        return mini_buf_puts(out, c->valuestring);
    const cJSON *part;
    cJSON_ArrayForEach (part, c) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (cJSON_IsString(t) && mini_buf_puts(out, t->valuestring) < 0)
            return -1;
    }
    return mini_buf_reserve(out, 0);
}

static int api_query(struct mini_model *m, const cJSON *messages, cJSON **assistant, cJSON **format_error,
                     struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf body = MINI_BUF_INIT;
    if (m->provider->request(m, messages, &body, e) < 0)
        return mini_err_prefix(e, "model %s: building the request", m->model_name);
    _cleanup_cjson_ cJSON *resp = NULL;
    _cleanup_cjson_ cJSON *msg = NULL;
    const char *finish_reason = NULL;
    struct mini_usage u;
    if (api_call(m, &body, &resp, &msg, &finish_reason, &u, e) < 0)
        return -1;

    /* cost: litellm_model.py _calculate_cost */
    double cost = 0;
    const char *why = NULL;
    if (u.has_cost && u.cost > 0)
        cost = u.cost;
    else if (!u.present)
        why = "the response reports no token usage";
    else if (!m->have_price)
        why = "no price is known for it";
    else
        cost = mini_price_cost(&m->price, &u);
    if (!why && !(cost > 0))
        why = "the computed cost is not > 0";
    m->calls++;
    if (why) {
        cost = 0;
        if (!m->ignore_cost_errors) {
            mini_model_global_add(0);
            return mini_err_set(e, MINI_E_MODEL,
                                "error calculating the cost of model %s: %s. You can ignore this with "
                                "cost_tracking: ignore_errors in the model section of the config, or globally "
                                "with export MSWEA_COST_TRACKING=ignore_errors",
                                m->model_name, why);
        }
    }
    m->cost += cost;
    mini_model_global_add(cost);

    /* actions */
    _cleanup_cjson_ cJSON *actions = NULL;
    _cleanup_free_ char *error = NULL;
    _cleanup_buf_ struct mini_buf content = MINI_BUF_INIT;
    _cleanup_cjson_ cJSON *found = NULL;
    if (m->text_mode) {
        if (content_string(msg, &content) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        int n = mini_regex_findall(m->action_re, content.data, content.len, &found, e);
        if (n < 0)
            return -1;
        if (n != 1) {
            if (asprintf(&error, "Expected exactly 1 action, found %d.", n) < 0) {
                error = NULL;
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
        } else {
            cJSON *act = cJSON_CreateObject();
            if (!(actions = cJSON_CreateArray()) || !act ||
                !cJSON_AddStringToObject(act, "command", cJSON_GetArrayItem(found, 0)->valuestring)) {
                cJSON_Delete(act);
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
            cJSON_AddItemToArray(actions, act);
        }
    } else {
        int prc = mini_toolcall_actions(cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"), &actions, &error);
        if (prc < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    if (error)
        return mini_model_format_error(m, error, found, finish_reason,
                                       m->text_mode ? (content.data ? content.data : "") : NULL, resp, cost,
                                       format_error, e);
    cJSON *extra = cJSON_AddObjectToObject(msg, "extra");
    if (!extra)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON_AddItemToObject(extra, "actions", TAKE_PTR(actions));
    cJSON_AddItemToObject(extra, "response", TAKE_PTR(resp));
    if (!cJSON_AddNumberToObject(extra, "cost", cost) || !cJSON_AddNumberToObject(extra, "timestamp", mini_model_now()))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    m->format_errors = 0;
    *assistant = TAKE_PTR(msg);
    return 0;
}

int mini_model_query(struct mini_model *m, const cJSON *messages, cJSON **assistant, cJSON **format_error,
                     struct mini_err *e)
{
    *assistant = NULL;
    *format_error = NULL;
    if (!cJSON_IsArray(messages))
        return mini_err_set(e, MINI_E_INTERNAL, "model query: messages must be an array");
    if (global_check(e) < 0)
        return -1;
    int rc = m->kind == MINI_KIND_API ? api_query(m, messages, assistant, format_error, e)
                                      : mini_testmodel_query(m, messages, assistant, format_error, e);
    if (rc < 0)
        mini_model_scrub(m, e);
    return rc;
}
