/* Models: class selection, configuration, the query loop with retries and
 * cost tracking, format errors and observation messages (see model.h).
 *
 * Semantics follow mini-swe-agent v2 (src/minisweagent/models/): the
 * message shapes of litellm_model.py / litellm_textbased_model.py, the
 * action parsing and observation formatting of utils/actions_toolcall.py
 * and utils/actions_text.py, the retry policy of utils/retry.py (up to
 * MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT attempts, exponential wait between
 * 4 and 60 units), cost tracking with cost_tracking / MSWEA_COST_TRACKING,
 * and GLOBAL_MODEL_STATS with MSWEA_GLOBAL_COST_LIMIT / _CALL_LIMIT. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "model_int.h"
#include "template/template.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/utf8.h"

#define DEFAULT_OBSERVATION_TEMPLATE                                                              \
    "{% if output.exception_info %}<exception>{{output.exception_info}}</exception>\n{% endif %}" \
    "<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
#define TOOLCALL_FORMAT_ERROR_TEMPLATE "{{ error }}"
#define TEXT_FORMAT_ERROR_TEMPLATE \
    "Please always provide EXACTLY ONE action in triple backticks, found {{actions|length}} actions."
#define TEXT_ACTION_REGEX "```mswea_bash_command\\s*\\n(.*?)\\n```"
#define ANTHROPIC_VERSION "2023-06-01"
#define DEFAULT_TIMEOUT_MS (600L * 1000)
#define DEFAULT_CONNECT_TIMEOUT_MS (30L * 1000)
#define DEFAULT_ANTHROPIC_MAX_TOKENS 8192
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

long mini_model_global_calls(void)
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
/* Small helpers                                                      */

double mini_model_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long mini_model_backoff_ms(int attempt, long base_ms)
{
    double w = (double)base_ms;
    for (int i = 2; i < attempt && w < 60.0 * base_ms; i++)
        w *= 2;
    if (w < 4.0 * base_ms)
        w = 4.0 * base_ms;
    if (w > 60.0 * base_ms)
        w = 60.0 * base_ms;
    return (long)w;
}

void mini_model_scrub(const struct mini_model *m, struct mini_err *e)
{
    if (!e || !m || !m->api_key || strlen(m->api_key) < 4)
        return;
    size_t k = strlen(m->api_key);
    char *p;
    while ((p = strstr(e->msg, m->api_key))) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + k, strlen(p + k) + 1);
    }
}

int mini_model_render(const char *tpl, const cJSON *vars, char **out, struct mini_err *e)
{
    struct mini_buf b = MINI_BUF_INIT;
    if (mini_tpl_render(tpl, strlen(tpl), vars, &b, e) < 0) {
        mini_buf_free(&b);
        return -1;
    }
    size_t n;
    if (!(*out = mini_buf_steal(&b, &n))) {
        mini_buf_free(&b);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    return 0;
}

static const char *cfg_str(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Set cfg[key] = string unless it holds one; error if it holds something else. */
static int cfg_default_str(cJSON *cfg, const char *key, const char *def, struct mini_err *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsString(v))
        return 0;
    if (v && !cJSON_IsNull(v))
        return mini_err_set(e, MINI_E_CONFIG, "model.%s must be a string", key);
    cJSON *s = cJSON_CreateString(def);
    if (!s)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (v)
        cJSON_ReplaceItemInObjectCaseSensitive(cfg, key, s);
    else
        cJSON_AddItemToObject(cfg, key, s);
    return 0;
}

static int cfg_set(cJSON *cfg, const char *key, cJSON *value, struct mini_err *e)
{
    if (!value)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (cJSON_GetObjectItemCaseSensitive(cfg, key))
        cJSON_ReplaceItemInObjectCaseSensitive(cfg, key, value);
    else
        cJSON_AddItemToObject(cfg, key, value);
    return 0;
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ------------------------------------------------------------------ */
/* Classes and providers                                              */

struct class_row {
    const char *name;
    enum mini_model_kind kind;
    enum mini_provider provider; /* NONE: from the model name */
    bool text;
};

static const struct class_row classes[] = {
    { "litellm", MINI_KIND_API, MINI_PROV_NONE, false },
    { "litellm_toolcall", MINI_KIND_API, MINI_PROV_NONE, false },
    { "minisweagent.models.litellm_model.LitellmModel", MINI_KIND_API, MINI_PROV_NONE, false },
    { "minisweagent.models.litellm_toolcall_model.LitellmToolcallModel", MINI_KIND_API, MINI_PROV_NONE, false },
    { "litellm_textbased", MINI_KIND_API, MINI_PROV_NONE, true },
    { "minisweagent.models.litellm_textbased_model.LitellmTextbasedModel", MINI_KIND_API, MINI_PROV_NONE, true },
    { "openai", MINI_KIND_API, MINI_PROV_OPENAI, false },
    { "openai_textbased", MINI_KIND_API, MINI_PROV_OPENAI, true },
    { "anthropic", MINI_KIND_API, MINI_PROV_ANTHROPIC, false },
    { "minisweagent.models.anthropic.AnthropicModel", MINI_KIND_API, MINI_PROV_ANTHROPIC, false },
    { "anthropic_textbased", MINI_KIND_API, MINI_PROV_ANTHROPIC, true },
    { "openrouter", MINI_KIND_API, MINI_PROV_OPENROUTER, false },
    { "openrouter_toolcall", MINI_KIND_API, MINI_PROV_OPENROUTER, false },
    { "minisweagent.models.openrouter_model.OpenRouterModel", MINI_KIND_API, MINI_PROV_OPENROUTER, false },
    { "openrouter_textbased", MINI_KIND_API, MINI_PROV_OPENROUTER, true },
    { "minisweagent.models.openrouter_textbased_model.OpenRouterTextbasedModel", MINI_KIND_API, MINI_PROV_OPENROUTER,
      true },
    { "deterministic", MINI_KIND_DETERMINISTIC, MINI_PROV_NONE, true },
    { "minisweagent.models.test_models.DeterministicModel", MINI_KIND_DETERMINISTIC, MINI_PROV_NONE, true },
    { "deterministic_toolcall", MINI_KIND_DETERMINISTIC, MINI_PROV_NONE, false },
    { "minisweagent.models.test_models.DeterministicToolcallModel", MINI_KIND_DETERMINISTIC, MINI_PROV_NONE, false },
    { "replay", MINI_KIND_REPLAY, MINI_PROV_NONE, false },
};

struct prefix_row {
    const char *prefix;
    enum mini_provider provider;
    const char *base; /* default api_base, NULL: the provider's */
};

static const struct prefix_row prefixes[] = {
    { "openai/", MINI_PROV_OPENAI, NULL },
    { "anthropic/", MINI_PROV_ANTHROPIC, NULL },
    { "openrouter/", MINI_PROV_OPENROUTER, NULL },
    { "hosted_vllm/", MINI_PROV_OPENAI, NULL },
    { "ollama/", MINI_PROV_OPENAI, "http://localhost:11434/v1" },
    { "ollama_chat/", MINI_PROV_OPENAI, "http://localhost:11434/v1" },
};

bool mini_model_resolve_class(const char *name, const char *model_name, enum mini_model_kind *kind,
                              enum mini_provider *provider, bool *text_mode)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(classes); i++) {
        if (strcmp(classes[i].name, name) != 0)
            continue;
        *kind = classes[i].kind;
        *provider = classes[i].provider;
        *text_mode = classes[i].text;
        if (*kind == MINI_KIND_API && *provider == MINI_PROV_NONE && model_name)
            free(mini_model_strip_prefix(model_name, provider, NULL));
        return true;
    }
    return false;
}

char *mini_model_strip_prefix(const char *model_name, enum mini_provider *provider, const char **default_base)
{
    if (default_base)
        *default_base = NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(prefixes); i++) {
        size_t n = strlen(prefixes[i].prefix);
        if (strncmp(model_name, prefixes[i].prefix, n) != 0)
            continue;
        if (*provider != MINI_PROV_NONE && *provider != prefixes[i].provider)
            continue; /* e.g. "anthropic/..." is an OpenRouter model name */
        *provider = prefixes[i].provider;
        if (default_base)
            *default_base = prefixes[i].base;
        return strdup(model_name + n);
    }
    if (*provider == MINI_PROV_NONE)
        *provider = strncasecmp(model_name, "claude", 6) == 0 ? MINI_PROV_ANTHROPIC : MINI_PROV_OPENAI;
    return strdup(model_name);
}

static const char *class_name_of(const struct mini_model *m)
{
    switch (m->kind) {
    case MINI_KIND_DETERMINISTIC: return m->text_mode ? "deterministic" : "deterministic_toolcall";
    case MINI_KIND_REPLAY: return "replay";
    case MINI_KIND_API: break;
    }
    switch (m->provider) {
    case MINI_PROV_ANTHROPIC: return m->text_mode ? "anthropic_textbased" : "anthropic";
    case MINI_PROV_OPENROUTER: return m->text_mode ? "openrouter_textbased" : "openrouter";
    default: return m->text_mode ? "openai_textbased" : "openai";
    }
}

static const char *model_type_of(const struct mini_model *m)
{
    switch (m->kind) {
    case MINI_KIND_DETERMINISTIC:
        return m->text_mode ? "mini.models.test_models.DeterministicModel"
                            : "mini.models.test_models.DeterministicToolcallModel";
    case MINI_KIND_REPLAY: return "mini.models.test_models.ReplayModel";
    case MINI_KIND_API: break;
    }
    switch (m->provider) {
    case MINI_PROV_ANTHROPIC:
        return m->text_mode ? "mini.models.anthropic.AnthropicTextbasedModel" : "mini.models.anthropic.AnthropicModel";
    case MINI_PROV_OPENROUTER:
        return m->text_mode ? "mini.models.openrouter.OpenRouterTextbasedModel"
                            : "mini.models.openrouter.OpenRouterModel";
    default: return m->text_mode ? "mini.models.openai.OpenAITextbasedModel" : "mini.models.openai.OpenAIModel";
    }
}

static const char *key_env_of(enum mini_provider p)
{
    return p == MINI_PROV_ANTHROPIC ? "ANTHROPIC_API_KEY"
        : p == MINI_PROV_OPENROUTER ? "OPENROUTER_API_KEY"
                                    : "OPENAI_API_KEY";
}

/* ------------------------------------------------------------------ */
/* Construction                                                       */

void mini_model_free(struct mini_model *m)
{
    if (!m)
        return;
    cJSON_Delete(m->cfg);
    free(m->api_model);
    pcre2_code_free(m->action_re);
    free(m->url);
    free(m->base_shown);
    if (m->api_key) {
        explicit_bzero(m->api_key, strlen(m->api_key));
        free(m->api_key);
    }
    cJSON_Delete(m->kwargs);
    for (size_t i = 0; i < m->n_headers; i++) {
        explicit_bzero(m->headers[i], strlen(m->headers[i]));
        free(m->headers[i]);
    }
    free(m->headers);
    mini_http_free(m->http);
    cJSON_Delete(m->outputs);
    free(m->replay_path);
    free(m);
}

static int add_header(struct mini_model *m, const char *name, const char *value, struct mini_err *e)
{
    for (const char *p = name; *p; p++)
        if (*p == ':' || *p == '\r' || *p == '\n' || (unsigned char)*p <= ' ')
            return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_headers: bad header name \"%.*s\"",
                                MINI_JSON_SHOW(name));
    for (const char *p = value; *p; p++)
        if (*p == '\r' || *p == '\n')
            return mini_err_set(e, MINI_E_CONFIG,
                                "model.model_kwargs.extra_headers: the value of %.*s "
                                "contains a line break",
                                MINI_JSON_SHOW(name));
    char **h = realloc(m->headers, (m->n_headers + 1) * sizeof(*h));
    if (!h)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    m->headers = h;
    if (asprintf(&m->headers[m->n_headers], "%s: %s", name, value) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    m->n_headers++;
    return 0;
}

static bool has_header(const struct mini_model *m, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < m->n_headers; i++)
        if (strncasecmp(m->headers[i], name, n) == 0 && m->headers[i][n] == ':')
            return true;
    return false;
}

/* model_kwargs that configure the client instead of going into the body
 * (litellm's own parameters). */
static const char *const client_kwargs[] = {
    "api_base",
    "base_url",
    "api_key",
    "timeout",
    "request_timeout",
    "drop_params",
    "custom_llm_provider",
    "num_retries",
    "max_retries",
    "input_cost_per_token",
    "output_cost_per_token",
    "extra_headers",
    "extra_body",
    "api_version",
};

static bool is_client_kwarg(const char *k)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(client_kwargs); i++)
        if (strcmp(k, client_kwargs[i]) == 0)
            return true;
    return false;
}

static int build_url(struct mini_model *m, const char *base, struct mini_err *e)
{
    _cleanup_free_ char *b = strdup(base);
    if (!b)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    size_t n = strlen(b);
    while (n && b[n - 1] == '/')
        b[--n] = '\0';
    if (strncasecmp(b, "http://", 7) != 0 && strncasecmp(b, "https://", 8) != 0)
        return mini_err_set(e, MINI_E_CONFIG, "api_base \"%.*s\" is not an http:// or https:// URL", MINI_JSON_SHOW(b));
    char shown[512];
    mini_http_url_origin(b, true, shown, sizeof(shown));
    if (!(m->base_shown = strdup(shown)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const char *suffix;
    if (m->provider == MINI_PROV_ANTHROPIC)
        suffix = ends_with(b, "/v1/messages") ? "" : ends_with(b, "/v1") ? "/messages" : "/v1/messages";
    else
        suffix = ends_with(b, "/chat/completions") ? "" : "/chat/completions";
    if (asprintf(&m->url, "%s%s", b, suffix) < 0) {
        m->url = NULL;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    return 0;
}

static int init_price(struct mini_model *m, const cJSON *kw_in, struct mini_err *e)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(kw_in, "input_cost_per_token");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(kw_in, "output_cost_per_token");
    if (in || out) {
        if (!cJSON_IsNumber(in) || !cJSON_IsNumber(out) || in->valuedouble < 0 || out->valuedouble < 0)
            return mini_err_set(e, MINI_E_CONFIG,
                                "model.model_kwargs.input_cost_per_token and "
                                "output_cost_per_token must both be given, as numbers >= 0");
        m->price = (struct mini_price){ in->valuedouble, out->valuedouble, in->valuedouble, in->valuedouble };
        m->have_price = true;
        return 0;
    }
    const char *reg = cfg_str(m->cfg, "litellm_model_registry");
    if (!reg || !*reg)
        reg = getenv("LITELLM_MODEL_REGISTRY_PATH");
    bool reg_missing = false;
    if (reg && *reg) {
        struct stat st;
        if (stat(reg, &st) == 0 && S_ISREG(st.st_mode)) {
            const char *names[] = { m->model_name, m->api_model };
            int rc = mini_price_registry(reg, names, MINI_ARRAY_SIZE(names), &m->price, e);
            if (rc < 0)
                return -1;
            if (rc > 0) {
                m->have_price = true;
                return 0;
            }
        } else {
            reg_missing = true;
        }
    }
    const char *name = m->api_model;
    if (m->provider == MINI_PROV_OPENROUTER && strchr(name, '/'))
        name = strchr(name, '/') + 1; /* "anthropic/claude-sonnet-4.5" */
    if (mini_price_lookup(name, &m->price)) {
        m->have_price = true;
        return 0;
    }
    if (m->ignore_cost_errors || m->provider == MINI_PROV_OPENROUTER)
        return 0; /* OpenRouter reports the cost of each call */
    return mini_err_set(e, MINI_E_MODEL,
                        "no price is known for model %.*s, so its cost cannot be tracked%s%s%s. "
                        "Set model.cost_tracking: ignore_errors in the config (or export "
                        "MSWEA_COST_TRACKING=ignore_errors) to run without cost tracking, or give prices with "
                        "model.litellm_model_registry (a litellm model registry JSON file) or "
                        "model.model_kwargs.input_cost_per_token / output_cost_per_token",
                        MINI_JSON_SHOW(m->model_name), reg_missing ? " (the model registry " : "",
                        reg_missing ? reg : "", reg_missing ? " is not a file)" : "");
}

static int init_api(struct mini_model *m, enum mini_provider provider, struct mini_err *e)
{
    const char *name = cfg_str(m->cfg, "model_name");
    if (!name || !*name)
        name = getenv("MSWEA_MODEL_NAME");
    if (!name || !*name)
        return mini_err_set(e, MINI_E_CONFIG,
                            "no model name: give one with -m/--model, model.model_name in the "
                            "config, or MSWEA_MODEL_NAME");
    if (cfg_set(m->cfg, "model_name", cJSON_CreateString(name), e) < 0)
        return -1;
    m->model_name = cfg_str(m->cfg, "model_name");
    const char *default_base = NULL;
    m->provider = provider;
    if (!(m->api_model = mini_model_strip_prefix(m->model_name, &m->provider, &default_base)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (!*m->api_model)
        return mini_err_set(e, MINI_E_CONFIG, "model name \"%.*s\" has a provider prefix but no model",
                            MINI_JSON_SHOW(m->model_name));

    /* model_kwargs: the client's own keys out, the rest into the body */
    const cJSON *kw_in = cJSON_GetObjectItemCaseSensitive(m->cfg, "model_kwargs");
    if (kw_in && !cJSON_IsObject(kw_in) && !cJSON_IsNull(kw_in))
        return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs must be a mapping");
    if (!(m->kwargs = cJSON_CreateObject()))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    const cJSON *item;
    cJSON_ArrayForEach (item, kw_in) {
        if (is_client_kwarg(item->string))
            continue;
        cJSON *copy = cJSON_Duplicate(item, true);
        if (!copy)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        cJSON_AddItemToObject(m->kwargs, item->string, copy);
    }
    const cJSON *extra_body = cJSON_GetObjectItemCaseSensitive(kw_in, "extra_body");
    if (extra_body && !cJSON_IsObject(extra_body))
        return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_body must be a mapping");
    if (extra_body && mini_json_merge_into(m->kwargs, extra_body) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");

    /* endpoint */
    const char *base = cfg_str(kw_in, "api_base");
    if (!base)
        base = cfg_str(kw_in, "base_url");
    bool custom_base = base && *base;
    if (!custom_base) {
        const char *env = m->provider == MINI_PROV_ANTHROPIC ? "ANTHROPIC_BASE_URL"
            : m->provider == MINI_PROV_OPENAI                ? "OPENAI_BASE_URL"
                                                             : NULL;
        base = env ? getenv(env) : NULL;
        custom_base = base && *base;
    }
    if (!custom_base) {
        base = default_base                       ? default_base
            : m->provider == MINI_PROV_ANTHROPIC  ? "https://api.anthropic.com"
            : m->provider == MINI_PROV_OPENROUTER ? "https://openrouter.ai/api/v1"
                                                  : "https://api.openai.com/v1";
    }
    if (build_url(m, base, e) < 0)
        return -1;

    /* key */
    const char *key = cfg_str(kw_in, "api_key");
    m->key_name = "model.model_kwargs.api_key";
    if (!key || !*key) {
        m->key_name = key_env_of(m->provider);
        key = getenv(m->key_name);
    }
    if (key && *key) {
        if (strpbrk(key, "\r\n"))
            return mini_err_set(e, MINI_E_CONFIG, "the API key in %s contains a line break", m->key_name);
        if (!(m->api_key = strdup(key)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    } else if (!custom_base && !default_base) {
        return mini_err_set(e, MINI_E_CONFIG,
                            "no API key for model %.*s: set %s (in the environment or the "
                            "global .env file) or model.model_kwargs.api_key",
                            MINI_JSON_SHOW(m->model_name), key_env_of(m->provider));
    }

    /* headers */
    const cJSON *xh = cJSON_GetObjectItemCaseSensitive(kw_in, "extra_headers");
    if (xh && !cJSON_IsObject(xh))
        return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_headers must be a mapping");
    cJSON_ArrayForEach (item, xh) {
        if (!cJSON_IsString(item))
            return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_headers.%.*s must be a string",
                                MINI_JSON_SHOW(item->string));
        if (add_header(m, item->string, item->valuestring, e) < 0)
            return -1;
    }
    if (m->provider == MINI_PROV_ANTHROPIC) {
        if (m->api_key && !has_header(m, "x-api-key") && add_header(m, "x-api-key", m->api_key, e) < 0)
            return -1;
        if (!has_header(m, "anthropic-version") && add_header(m, "anthropic-version", ANTHROPIC_VERSION, e) < 0)
            return -1;
    } else if (m->api_key && !has_header(m, "Authorization")) {
        _cleanup_free_ char *bearer = NULL;
        if (asprintf(&bearer, "Bearer %s", m->api_key) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        int rc = add_header(m, "Authorization", bearer, e);
        explicit_bzero(bearer, strlen(bearer));
        if (rc < 0)
            return -1;
    }

    /* timeout, max_tokens */
    m->timeout_ms = DEFAULT_TIMEOUT_MS;
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(kw_in, "timeout");
    if (!to)
        to = cJSON_GetObjectItemCaseSensitive(kw_in, "request_timeout");
    if (to) {
        if (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400)
            return mini_err_set(e, MINI_E_CONFIG,
                                "model.model_kwargs.timeout must be a number of seconds "
                                "(0 < timeout <= 86400)");
        m->timeout_ms = (long)ceil(to->valuedouble * 1000);
    }
    m->max_tokens = DEFAULT_ANTHROPIC_MAX_TOKENS;

    /* cost tracking */
    const char *ct = cfg_str(m->cfg, "cost_tracking");
    if (!ct || !*ct)
        ct = getenv("MSWEA_COST_TRACKING");
    if (!ct || !*ct)
        ct = "default";
    if (strcmp(ct, "ignore_errors") == 0 || strcmp(ct, "disabled") == 0)
        m->ignore_cost_errors = true;
    else if (strcmp(ct, "default") != 0)
        return mini_err_set(e, MINI_E_CONFIG,
                            "model.cost_tracking must be \"default\" or \"ignore_errors\", "
                            "not \"%.*s\"",
                            MINI_JSON_SHOW(ct));
    if (cfg_set(m->cfg, "cost_tracking", cJSON_CreateString(m->ignore_cost_errors ? "ignore_errors" : "default"), e) <
        0)
        return -1;

    /* cache control: mini-swe-agent's get_model turns it on for Claude models */
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(m->cfg, "set_cache_control");
    if (!sc) {
        static const char *const claude[] = { "anthropic", "sonnet", "opus", "claude" };
        bool on = false;
        for (size_t i = 0; i < MINI_ARRAY_SIZE(claude); i++)
            on |= contains_ci(m->model_name, claude[i]);
        if (cfg_set(m->cfg, "set_cache_control", on ? cJSON_CreateString("default_end") : cJSON_CreateNull(), e) < 0)
            return -1;
        sc = cJSON_GetObjectItemCaseSensitive(m->cfg, "set_cache_control");
    }
    if (cJSON_IsString(sc) && strcmp(sc->valuestring, "default_end") == 0)
        m->cache_control = true;
    else if (!cJSON_IsNull(sc))
        return mini_err_set(e, MINI_E_CONFIG, "model.set_cache_control must be \"default_end\" or null");

    if (cfg_default_str(m->cfg, "format_error_template",
                        m->text_mode ? TEXT_FORMAT_ERROR_TEMPLATE : TOOLCALL_FORMAT_ERROR_TEMPLATE, e) < 0 ||
        cfg_default_str(m->cfg, "observation_template", DEFAULT_OBSERVATION_TEMPLATE, e) < 0)
        return -1;
    if (m->text_mode) {
        if (cfg_default_str(m->cfg, "action_regex", TEXT_ACTION_REGEX, e) < 0)
            return -1;
        if (!(m->action_re = mini_action_regex_compile(cfg_str(m->cfg, "action_regex"), e)))
            return mini_err_prefix(e, "model");
    }
    if (init_price(m, kw_in, e) < 0)
        return -1;

    /* retries: utils/retry.py */
    m->retry_attempts = 10;
    const char *s = getenv("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v < 1 || v > 1000)
            return mini_err_set(e, MINI_E_CONFIG,
                                "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT must be an integer "
                                "from 1 to 1000");
        m->retry_attempts = (int)v;
    }
    m->retry_base_ms = 1000;
    if ((s = getenv("MINI_RETRY_BASE_MS")) && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end || v < 0 || v > 60000)
            return mini_err_set(e, MINI_E_CONFIG, "MINI_RETRY_BASE_MS must be an integer from 0 to 60000");
        m->retry_base_ms = v;
    }
    if (!(m->http = mini_http_new(e)))
        return -1;
    return 0;
}

struct mini_model *mini_model_new(const cJSON *model_cfg, const char *model_class, struct mini_err *e)
{
    if (model_cfg && !cJSON_IsObject(model_cfg) && !cJSON_IsNull(model_cfg)) {
        mini_err_set(e, MINI_E_CONFIG, "the model section of the config must be a mapping");
        return NULL;
    }
    struct mini_model *m = calloc(1, sizeof(*m));
    if (!m) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    m->cfg = cJSON_IsObject(model_cfg) ? cJSON_Duplicate(model_cfg, true) : cJSON_CreateObject();
    if (!m->cfg) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    const char *cls = model_class && *model_class ? model_class : cfg_str(m->cfg, "model_class");
    const cJSON *cls_item = cJSON_GetObjectItemCaseSensitive(m->cfg, "model_class");
    if (cls_item && !cJSON_IsString(cls_item) && !cJSON_IsNull(cls_item)) {
        mini_err_set(e, MINI_E_CONFIG, "model.model_class must be a string");
        goto fail;
    }
    enum mini_provider provider = MINI_PROV_NONE;
    if (cls && *cls) {
        if (!mini_model_resolve_class(cls, NULL, &m->kind, &provider, &m->text_mode)) {
            _cleanup_buf_ struct mini_buf names = MINI_BUF_INIT;
            for (size_t i = 0; i < MINI_ARRAY_SIZE(classes); i++)
                if (!strchr(classes[i].name, '.'))
                    mini_buf_printf(&names, "%s%s", names.len ? ", " : "", classes[i].name);
            mini_err_set(e, MINI_E_CONFIG, "unknown model class \"%.*s\" (available: %s)", MINI_JSON_SHOW(cls),
                         names.data ? names.data : "");
            goto fail;
        }
    } else {
        m->kind = MINI_KIND_API;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(m->cfg, "model_class");
    const char *mm = cfg_str(m->cfg, "multimodal_regex");
    if (mm && *mm) {
        mini_err_set(e, MINI_E_CONFIG,
                     "model.multimodal_regex is not supported (images in observations); "
                     "leave it empty");
        goto fail;
    }

    if (m->kind == MINI_KIND_API) {
        if (init_api(m, provider, e) < 0)
            goto fail;
    } else if (mini_testmodel_init(m, e) < 0) {
        goto fail;
    }
    m->format_error_template = cfg_str(m->cfg, "format_error_template");
    m->observation_template = cfg_str(m->cfg, "observation_template");
    m->class_name = class_name_of(m);
    m->model_type = model_type_of(m);
    return m;
fail:
    mini_model_scrub(m, e);
    mini_model_free(m);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Accessors                                                          */

double mini_model_cost(const struct mini_model *m) { return m->cost; }
long mini_model_calls(const struct mini_model *m) { return m->calls; }
long mini_model_format_errors(const struct mini_model *m) { return m->format_errors; }
const char *mini_model_name(const struct mini_model *m) { return m->model_name; }
const char *mini_model_class(const struct mini_model *m) { return m->class_name; }
void mini_model_set_cancel(struct mini_model *m, const volatile int *flag) { m->cancel = flag; }

void mini_model_set_notes(struct mini_model *m, mini_model_note_fn fn, void *arg)
{
    m->note = fn;
    m->note_arg = arg;
}

static bool secret_header(const char *name)
{
    static const char *const secret[] = { "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(secret); i++)
        if (strcasecmp(name, secret[i]) == 0)
            return true;
    return false;
}

cJSON *mini_model_template_vars(const struct mini_model *m)
{
    cJSON *vars = cJSON_Duplicate(m->cfg, true);
    if (!vars)
        return NULL;
    cJSON *kw = cJSON_GetObjectItemCaseSensitive(vars, "model_kwargs");
    if (cJSON_GetObjectItemCaseSensitive(kw, "api_key")) {
        cJSON *r = cJSON_CreateString("***");
        if (!r) {
            cJSON_Delete(vars);
            return NULL;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(kw, "api_key", r);
    }
    cJSON *h;
    cJSON_ArrayForEach (h, cJSON_GetObjectItemCaseSensitive(kw, "extra_headers")) {
        if (cJSON_IsString(h) && secret_header(h->string) && !cJSON_SetValuestring(h, "***")) {
            cJSON_Delete(vars);
            return NULL;
        }
    }
    return vars;
}

cJSON *mini_model_serialize(const struct mini_model *m)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(root, "info");
    cJSON *config = cJSON_AddObjectToObject(info, "config");
    cJSON *stats = cJSON_AddObjectToObject(info, "model_stats");
    cJSON *vars = mini_model_template_vars(m);
    if (!root || !info || !config || !stats || !vars || !cJSON_AddNumberToObject(stats, "instance_cost", m->cost) ||
        !cJSON_AddNumberToObject(stats, "api_calls", (double)m->calls)) {
        cJSON_Delete(vars);
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_AddItemToObject(config, "model", vars);
    if (!cJSON_AddStringToObject(config, "model_type", m->model_type)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ------------------------------------------------------------------ */
/* Format errors and observations                                     */

cJSON *mini_model_format_error_msg(struct mini_model *m, const char *error, const cJSON *actions,
                                   const char *finish_reason, const char *content, const cJSON *response, double cost,
                                   struct mini_err *e)
{
    cJSON *vars = cJSON_CreateObject();
    cJSON *acts = actions ? cJSON_Duplicate(actions, true) : cJSON_CreateArray();
    if (!vars || !acts || !cJSON_AddStringToObject(vars, "error", error) ||
        !(finish_reason ? cJSON_AddStringToObject(vars, "finish_reason", finish_reason)
                        : cJSON_AddNullToObject(vars, "finish_reason"))) {
        cJSON_Delete(vars);
        cJSON_Delete(acts);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    cJSON_AddItemToObject(vars, "actions", acts);
    /* parse_toolcall_actions also tells whether the reply had tool calls */
    if (!m->text_mode && m->kind != MINI_KIND_REPLAY &&
        !cJSON_AddBoolToObject(vars, "has_tool_calls", strncmp(error, "No tool calls found", 19) != 0)) {
        cJSON_Delete(vars);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    char *text = NULL;
    int rc = mini_model_render(m->format_error_template, vars, &text, e);
    cJSON_Delete(vars);
    if (rc < 0) {
        mini_err_prefix(e, "model.format_error_template");
        return NULL;
    }
    cJSON *msg = cJSON_CreateObject();
    cJSON *extra = NULL;
    if (!msg || !cJSON_AddStringToObject(msg, "role", "user") || !cJSON_AddStringToObject(msg, "content", text) ||
        !(extra = cJSON_AddObjectToObject(msg, "extra")) ||
        !cJSON_AddStringToObject(extra, "interrupt_type", "FormatError"))
        goto oom;
    free(text);
    text = NULL;
    if (content &&
        (!cJSON_AddNumberToObject(extra, "n_actions", (double)cJSON_GetArraySize(actions)) ||
         !cJSON_AddStringToObject(extra, "model_response", content)))
        goto oom;
    if (response) {
        cJSON *r = cJSON_Duplicate(response, true);
        if (!r)
            goto oom;
        cJSON_AddItemToObject(extra, "response", r);
    }
    if (!cJSON_AddNumberToObject(extra, "cost", cost) || !cJSON_AddNumberToObject(extra, "timestamp", mini_model_now()))
        goto oom;
    return msg;
oom:
    free(text);
    cJSON_Delete(msg);
    mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return NULL;
}

static cJSON *observation(struct mini_model *m, const cJSON *action, const cJSON *output, const cJSON *template_vars,
                          struct mini_err *e)
{
    cJSON *vars = cJSON_CreateObject();
    if (!vars) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    const cJSON *v;
    cJSON_ArrayForEach (v, template_vars) {
        if (strcmp(v->string, "output") != 0 && !cJSON_AddItemReferenceToObject(vars, v->string, (cJSON *)v)) {
            cJSON_Delete(vars);
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            return NULL;
        }
    }
    if (!cJSON_AddItemReferenceToObject(vars, "output", (cJSON *)output)) {
        cJSON_Delete(vars);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    char *text = NULL;
    int rc = mini_model_render(m->observation_template, vars, &text, e);
    cJSON_Delete(vars);
    if (rc < 0) {
        mini_err_prefix(e, "model.observation_template");
        return NULL;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(action, "tool_call_id");
    bool tool = action && cJSON_IsString(id);
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(output, "output");
    const cJSON *rcj = cJSON_GetObjectItemCaseSensitive(output, "returncode");
    const cJSON *exc = cJSON_GetObjectItemCaseSensitive(output, "exception_info");
    /* Key order as mini-swe-agent writes them: role, content, extra for a
     * text-mode observation; content, extra, tool_call_id, role for a tool
     * answer (format_toolcall_observation_messages adds the last two). */
    cJSON *msg = cJSON_CreateObject(), *extra = NULL, *x;
    if (!msg || (!tool && !cJSON_AddStringToObject(msg, "role", "user")) ||
        !cJSON_AddStringToObject(msg, "content", text) || !(extra = cJSON_AddObjectToObject(msg, "extra")))
        goto oom;
    free(text);
    text = NULL;
    if (!(x = out ? cJSON_Duplicate(out, true) : cJSON_CreateString("")))
        goto oom;
    cJSON_AddItemToObject(extra, "raw_output", x);
    if (!(x = rcj ? cJSON_Duplicate(rcj, true) : cJSON_CreateNull()))
        goto oom;
    cJSON_AddItemToObject(extra, "returncode", x);
    if (!cJSON_AddNumberToObject(extra, "timestamp", mini_model_now()))
        goto oom;
    /* As format_observation_messages: exception_info always (None when the
     * output has none), then the output's own extra over it all. */
    if (!(x = exc ? cJSON_Duplicate(exc, true) : cJSON_CreateNull()))
        goto oom;
    cJSON_AddItemToObject(extra, "exception_info", x);
    const cJSON *oextra = cJSON_GetObjectItemCaseSensitive(output, "extra");
    if (cJSON_IsObject(oextra) && mini_json_merge_into(extra, oextra) < 0)
        goto oom;
    if (tool &&
        (!cJSON_AddStringToObject(msg, "tool_call_id", id->valuestring) ||
         !cJSON_AddStringToObject(msg, "role", "tool")))
        goto oom;
    return msg;
oom:
    free(text);
    cJSON_Delete(msg);
    mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return NULL;
}

cJSON *mini_model_observations(struct mini_model *m, const cJSON *assistant, const cJSON *outputs,
                               const cJSON *template_vars, struct mini_err *e)
{
    if (outputs && !cJSON_IsArray(outputs)) {
        mini_err_set(e, MINI_E_INTERNAL, "observations: outputs must be an array");
        return NULL;
    }
    if (template_vars && !cJSON_IsObject(template_vars)) {
        mini_err_set(e, MINI_E_INTERNAL, "observations: template_vars must be an object");
        return NULL;
    }
    const cJSON *actions =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(assistant, "extra"), "actions");
    bool toolcall = false;
    const cJSON *a;
    cJSON_ArrayForEach (a, actions) {
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "tool_call_id")))
            toolcall = true;
    }
    int n_out = cJSON_GetArraySize(outputs);
    int n = toolcall ? cJSON_GetArraySize(actions) : n_out;
    cJSON *res = cJSON_CreateArray();
    cJSON *not_executed = cJSON_CreateObject();
    if (!res || !not_executed || !cJSON_AddStringToObject(not_executed, "output", "") ||
        !cJSON_AddNumberToObject(not_executed, "returncode", -1) ||
        !cJSON_AddStringToObject(not_executed, "exception_info", "action was not executed")) {
        cJSON_Delete(res);
        cJSON_Delete(not_executed);
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *output = i < n_out ? cJSON_GetArrayItem(outputs, i) : not_executed;
        const cJSON *action = cJSON_GetArrayItem(actions, i);
        cJSON *msg = observation(m, action, output, template_vars, e);
        if (!msg) {
            cJSON_Delete(res);
            cJSON_Delete(not_executed);
            return NULL;
        }
        cJSON_AddItemToArray(res, msg);
    }
    cJSON_Delete(not_executed);
    return res;
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
            int rc = m->provider == MINI_PROV_ANTHROPIC ? mini_anthropic_parse(j, msg, finish_reason, u, &why)
                                                        : mini_openai_parse(j, msg, finish_reason, u, &why);
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
    int rc = m->provider == MINI_PROV_ANTHROPIC ? mini_anthropic_request(m, messages, &body, e)
                                                : mini_openai_request(m, messages, &body, e);
    if (rc < 0)
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
    if (error) {
        m->format_errors++;
        cJSON *fe = mini_model_format_error_msg(
            m, error, found, finish_reason, m->text_mode ? (content.data ? content.data : "") : NULL, resp, cost, e);
        cJSON *arr = fe ? cJSON_CreateArray() : NULL;
        if (!arr) {
            cJSON_Delete(fe);
            return fe ? mini_err_set(e, MINI_E_NOMEM, "out of memory") : -1;
        }
        cJSON_AddItemToArray(arr, fe);
        *format_error = arr;
        return mini_err_set(e, MINI_E_FORMAT, "%s", error);
    }
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
