/* Models: class selection, configuration, format errors and observation
 * messages (see model.h).  The query loop with retries and cost tracking
 * is model_query.c; the providers are model_openai.c, model_anthropic.c
 * and model_openrouter.c, reached through their ops (model_int.h).
 *
 * Semantics follow mini-swe-agent v2 (src/minisweagent/models/): the
 * message shapes of litellm_model.py / litellm_textbased_model.py, the
 * action parsing and observation formatting of utils/actions_toolcall.py
 * and utils/actions_text.py, the retry policy of utils/retry.py (up to
 * MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT attempts, exponential wait between
 * 4 and 60 units), cost tracking with cost_tracking / MSWEA_COST_TRACKING,
 * and GLOBAL_MODEL_STATS with MSWEA_GLOBAL_COST_LIMIT / _CALL_LIMIT. */
#include <math.h>
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

static cJSON *mini_model_format_error_msg(struct mini_model *m, const char *error, const cJSON *actions,
                                          const char *finish_reason, const char *content, const cJSON *response,
                                          double cost, struct mini_err *e);

#define DEFAULT_OBSERVATION_TEMPLATE                                                              \
    "{% if output.exception_info %}<exception>{{output.exception_info}}</exception>\n{% endif %}" \
    "<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
#define TOOLCALL_FORMAT_ERROR_TEMPLATE "{{ error }}"
#define TEXT_FORMAT_ERROR_TEMPLATE \
    "Please always provide EXACTLY ONE action in triple backticks, found {{actions|length}} actions."
#define TEXT_ACTION_REGEX "```mswea_bash_command\\s*\\n(.*?)\\n```"
#define DEFAULT_TIMEOUT_MS (600L * 1000)

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

/* Render a template with vars; *out is malloc'd text. */
static int mini_model_render(const char *tpl, const cJSON *vars, char **out, struct mini_err *e)
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

/* ------------------------------------------------------------------ */
/* Classes and providers                                              */

#define PROVIDER_ENTRY(name) &mini_provider_##name,
const struct mini_model_provider_ops *const mini_model_providers[] = { MINI_MODEL_PROVIDERS(PROVIDER_ENTRY) NULL };
#undef PROVIDER_ENTRY

/* The classes that are not one provider's: litellm's (the provider comes
 * from the model name) and the test models.  The providers' own are in
 * their ops. */
struct class_row {
    const char *name;
    enum mini_model_kind kind;
    bool text;
};

static const struct class_row generic_classes[] = {
    { "litellm", MINI_KIND_API, false },
    { "litellm_toolcall", MINI_KIND_API, false },
    { "minisweagent.models.litellm_model.LitellmModel", MINI_KIND_API, false },
    { "minisweagent.models.litellm_toolcall_model.LitellmToolcallModel", MINI_KIND_API, false },
    { "litellm_textbased", MINI_KIND_API, true },
    { "minisweagent.models.litellm_textbased_model.LitellmTextbasedModel", MINI_KIND_API, true },
};

static const struct class_row test_classes[] = {
    { "deterministic", MINI_KIND_DETERMINISTIC, true },
    { "minisweagent.models.test_models.DeterministicModel", MINI_KIND_DETERMINISTIC, true },
    { "deterministic_toolcall", MINI_KIND_DETERMINISTIC, false },
    { "minisweagent.models.test_models.DeterministicToolcallModel", MINI_KIND_DETERMINISTIC, false },
    { "replay", MINI_KIND_REPLAY, false },
};

static bool in_list(const char *const *names, const char *name)
{
    for (; names && *names; names++)
        if (strcmp(*names, name) == 0)
            return true;
    return false;
}

bool mini_model_resolve_class(const char *name, const char *model_name, enum mini_model_kind *kind,
                              const struct mini_model_provider_ops **provider, bool *text_mode)
{
    *provider = NULL;
    for (size_t i = 0; i < MINI_ARRAY_SIZE(generic_classes); i++) {
        if (strcmp(generic_classes[i].name, name) != 0)
            continue;
        *kind = MINI_KIND_API;
        *text_mode = generic_classes[i].text;
        if (model_name)
            free(mini_model_strip_prefix(model_name, provider, NULL));
        return true;
    }
    for (const struct mini_model_provider_ops *const *p = mini_model_providers; *p; p++) {
        bool tool = in_list((*p)->classes, name), text = in_list((*p)->text_classes, name);
        if (!tool && !text)
            continue;
        *kind = MINI_KIND_API;
        *provider = *p;
        *text_mode = text;
        return true;
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(test_classes); i++) {
        if (strcmp(test_classes[i].name, name) != 0)
            continue;
        *kind = test_classes[i].kind;
        *text_mode = test_classes[i].text;
        return true;
    }
    return false;
}

/* The classes a config may name, for a message: without the Python
 * import paths, in the order above. */
static int class_names(struct mini_buf *out)
{
    const char *sep = "";
    for (size_t i = 0; i < MINI_ARRAY_SIZE(generic_classes); i++, sep = ", ")
        if (!strchr(generic_classes[i].name, '.') && mini_buf_printf(out, "%s%s", sep, generic_classes[i].name) < 0)
            return -1;
    for (const struct mini_model_provider_ops *const *p = mini_model_providers; *p; p++) {
        for (const char *const *c = (*p)->classes; *c; c++)
            if (!strchr(*c, '.') && mini_buf_printf(out, ", %s", *c) < 0)
                return -1;
        for (const char *const *c = (*p)->text_classes; *c; c++)
            if (!strchr(*c, '.') && mini_buf_printf(out, ", %s", *c) < 0)
                return -1;
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(test_classes); i++)
        if (!strchr(test_classes[i].name, '.') && mini_buf_printf(out, ", %s", test_classes[i].name) < 0)
            return -1;
    return 0;
}

char *mini_model_strip_prefix(const char *model_name, const struct mini_model_provider_ops **provider,
                              const char **default_base)
{
    if (default_base)
        *default_base = NULL;
    for (const struct mini_model_provider_ops *const *p = mini_model_providers; *p; p++) {
        if (*provider && *provider != *p)
            continue; /* e.g. "anthropic/..." is an OpenRouter model name */
        for (const struct mini_model_prefix *x = (*p)->prefixes; x && x->prefix; x++) {
            size_t n = strlen(x->prefix);
            if (strncmp(model_name, x->prefix, n) != 0)
                continue;
            *provider = *p;
            if (default_base)
                *default_base = x->base;
            return strdup(model_name + n);
        }
    }
    if (!*provider) {
        *provider = mini_model_providers[0];
        for (const struct mini_model_provider_ops *const *p = mini_model_providers; *p; p++)
            if ((*p)->claims && (*p)->claims(model_name)) {
                *provider = *p;
                break;
            }
    }
    return strdup(model_name);
}

static const char *class_name_of(const struct mini_model *m)
{
    switch (m->kind) {
    case MINI_KIND_DETERMINISTIC: return m->text_mode ? "deterministic" : "deterministic_toolcall";
    case MINI_KIND_REPLAY: return "replay";
    case MINI_KIND_API: break;
    }
    return m->text_mode ? m->provider->text_classes[0] : m->provider->classes[0];
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
    return m->text_mode ? m->provider->text_model_type : m->provider->model_type;
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

int mini_model_add_header(struct mini_model *m, const char *name, const char *value, struct mini_err *e)
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

bool mini_model_has_header(const struct mini_model *m, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < m->n_headers; i++)
        if (strncasecmp(m->headers[i], name, n) == 0 && m->headers[i][n] == ':')
            return true;
    return false;
}

int mini_model_bearer_auth(struct mini_model *m, struct mini_err *e)
{
    if (!m->api_key || mini_model_has_header(m, "Authorization"))
        return 0;
    _cleanup_free_ char *bearer = NULL;
    if (asprintf(&bearer, "Bearer %s", m->api_key) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int rc = mini_model_add_header(m, "Authorization", bearer, e);
    explicit_bzero(bearer, strlen(bearer));
    return rc;
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
    if (asprintf(&m->url, "%s%s", b, m->provider->url_suffix(b)) < 0) {
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
    const char *name = m->provider->price_name ? m->provider->price_name(m->api_model) : m->api_model;
    if (mini_price_lookup(name, &m->price)) {
        m->have_price = true;
        return 0;
    }
    if (m->ignore_cost_errors || m->provider->reports_cost)
        return 0; /* each reply says what it cost */
    return mini_err_set(e, MINI_E_MODEL,
                        "no price is known for model %.*s, so its cost cannot be tracked%s%s%s. "
                        "Set model.cost_tracking: ignore_errors in the config (or export "
                        "MSWEA_COST_TRACKING=ignore_errors) to run without cost tracking, or give prices with "
                        "model.litellm_model_registry (a litellm model registry JSON file) or "
                        "model.model_kwargs.input_cost_per_token / output_cost_per_token",
                        MINI_JSON_SHOW(m->model_name), reg_missing ? " (the model registry " : "",
                        reg_missing ? reg : "", reg_missing ? " is not a file)" : "");
}

static int init_api(struct mini_model *m, const struct mini_model_provider_ops *provider, struct mini_err *e)
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
        base = m->provider->base_env ? getenv(m->provider->base_env) : NULL;
        custom_base = base && *base;
    }
    if (!custom_base)
        base = default_base ? default_base : m->provider->default_base;
    if (build_url(m, base, e) < 0)
        return -1;

    /* key */
    const char *key = cfg_str(kw_in, "api_key");
    m->key_name = "model.model_kwargs.api_key";
    if (!key || !*key) {
        m->key_name = m->provider->key_env;
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
                            MINI_JSON_SHOW(m->model_name), m->provider->key_env);
    }

    /* headers */
    const cJSON *xh = cJSON_GetObjectItemCaseSensitive(kw_in, "extra_headers");
    if (xh && !cJSON_IsObject(xh))
        return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_headers must be a mapping");
    cJSON_ArrayForEach (item, xh) {
        if (!cJSON_IsString(item))
            return mini_err_set(e, MINI_E_CONFIG, "model.model_kwargs.extra_headers.%.*s must be a string",
                                MINI_JSON_SHOW(item->string));
        if (mini_model_add_header(m, item->string, item->valuestring, e) < 0)
            return -1;
    }
    if (m->provider->auth_headers(m, e) < 0)
        return -1;

    /* timeout */
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
    const struct mini_model_provider_ops *provider = NULL;
    if (cls && *cls) {
        if (!mini_model_resolve_class(cls, NULL, &m->kind, &provider, &m->text_mode)) {
            _cleanup_buf_ struct mini_buf names = MINI_BUF_INIT;
            class_names(&names);
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

int mini_model_format_error(struct mini_model *m, const char *error, const cJSON *actions, const char *finish_reason,
                            const char *content, const cJSON *response, double cost, cJSON **out, struct mini_err *e)
{
    m->format_errors++;
    cJSON *fe = mini_model_format_error_msg(m, error, actions, finish_reason, content, response, cost, e);
    cJSON *arr = fe ? cJSON_CreateArray() : NULL;
    if (!arr) {
        cJSON_Delete(fe);
        return fe ? mini_err_set(e, MINI_E_NOMEM, "out of memory") : -1;
    }
    cJSON_AddItemToArray(arr, fe);
    *out = arr;
    return mini_err_set(e, MINI_E_FORMAT, "%s", error);
}

/* The format-error message (role user) for a reply without a valid action.
 * error: the problem in words; actions: array of the commands found (may be
 * NULL: empty); finish_reason/content may be NULL; response is copied. */
static cJSON *mini_model_format_error_msg(struct mini_model *m, const char *error, const cJSON *actions,
                                          const char *finish_reason, const char *content, const cJSON *response,
                                          double cost, struct mini_err *e)
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
