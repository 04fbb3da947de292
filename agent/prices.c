/* Prices of well-known models, and litellm-style registries for the rest.
 *
 * List prices in USD per million tokens, standard tier, prompts up to the
 * providers' base context size.  OpenAI bills cache writes as ordinary
 * input; Anthropic bills them at 1.25x and cache reads at 0.1x input.
 * A model missing here needs a registry entry (model.litellm_model_registry
 * or LITELLM_MODEL_REGISTRY_PATH), model_kwargs.input_cost_per_token /
 * output_cost_per_token, or cost_tracking: "ignore_errors". */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "model_int.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

struct price_row {
    const char *name;
    double input, output, cache_read, cache_write; /* per 1M tokens; cache_write 0: = input */
};

static const struct price_row prices[] = {
    /* OpenAI */
    { "gpt-4o", 2.50, 10.00, 1.25, 0 },
    { "gpt-4o-mini", 0.15, 0.60, 0.075, 0 },
    { "gpt-4.1", 2.00, 8.00, 0.50, 0 },
    { "gpt-4.1-mini", 0.40, 1.60, 0.10, 0 },
    { "gpt-4.1-nano", 0.10, 0.40, 0.025, 0 },
    { "gpt-5", 1.25, 10.00, 0.125, 0 },
    { "gpt-5-mini", 0.25, 2.00, 0.025, 0 },
    { "gpt-5-nano", 0.05, 0.40, 0.005, 0 },
    { "gpt-5.1", 1.25, 10.00, 0.125, 0 },
    { "gpt-4-turbo", 10.00, 30.00, 10.00, 0 },
    { "gpt-3.5-turbo", 0.50, 1.50, 0.50, 0 },
    { "o1", 15.00, 60.00, 7.50, 0 },
    { "o3", 2.00, 8.00, 0.50, 0 },
    { "o3-mini", 1.10, 4.40, 0.55, 0 },
    { "o4-mini", 1.10, 4.40, 0.275, 0 },
    /* Anthropic */
    { "claude-opus-4-5", 5.00, 25.00, 0.50, 6.25 },
    { "claude-opus-4-1", 15.00, 75.00, 1.50, 18.75 },
    { "claude-opus-4", 15.00, 75.00, 1.50, 18.75 },
    { "claude-opus-4-0", 15.00, 75.00, 1.50, 18.75 },
    { "claude-sonnet-4-5", 3.00, 15.00, 0.30, 3.75 },
    { "claude-sonnet-4", 3.00, 15.00, 0.30, 3.75 },
    { "claude-sonnet-4-0", 3.00, 15.00, 0.30, 3.75 },
    { "claude-3-7-sonnet", 3.00, 15.00, 0.30, 3.75 },
    { "claude-3-5-sonnet", 3.00, 15.00, 0.30, 3.75 },
    { "claude-haiku-4-5", 1.00, 5.00, 0.10, 1.25 },
    { "claude-3-5-haiku", 0.80, 4.00, 0.08, 1.00 },
    { "claude-3-haiku", 0.25, 1.25, 0.03, 0.30 },
    { "claude-3-opus", 15.00, 75.00, 1.50, 18.75 },
};

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A version suffix that names the same model: a date or "latest". */
static bool date_suffix(const char *s)
{
    if (*s != '-' && *s != '@')
        return false;
    s++;
    size_t n = strlen(s);
    if (strcasecmp(s, "latest") == 0)
        return true;
    if (n == 8 && all_digits(s, 8)) /* 20250929 */
        return true;
    if (n == 10 && all_digits(s, 4) && s[4] == '-' && all_digits(s + 5, 2) && s[7] == '-' &&
        all_digits(s + 8, 2)) /* 2024-08-06 */
        return true;
    return false;
}

static bool name_matches(const char *key, const char *name)
{
    size_t k = strlen(key);
    if (strncasecmp(key, name, k) != 0)
        return false;
    return name[k] == '\0' || date_suffix(name + k);
}

static bool lookup_exact(const char *name, struct mini_price *p)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(prices); i++) {
        if (!name_matches(prices[i].name, name))
            continue;
        const struct price_row *r = &prices[i];
        p->input = r->input / 1e6;
        p->output = r->output / 1e6;
        p->cache_read = r->cache_read / 1e6;
        p->cache_write = (r->cache_write > 0 ? r->cache_write : r->input) / 1e6;
        return true;
    }
    return false;
}

bool mini_price_lookup(const char *name, struct mini_price *p)
{
    if (!name || !*name)
        return false;
    if (lookup_exact(name, p))
        return true;
    /* "claude-sonnet-4.5" (OpenRouter's spelling) is "claude-sonnet-4-5". */
    size_t n = strlen(name);
    _cleanup_free_ char *alt = strdup(name);
    if (!alt)
        return false;
    bool changed = false;
    for (size_t i = 1; i + 1 < n; i++) {
        if (alt[i] == '.' && isdigit((unsigned char)alt[i - 1]) && isdigit((unsigned char)alt[i + 1]) &&
            strncasecmp(alt, "claude", 6) == 0) {
            alt[i] = '-';
            changed = true;
        }
    }
    return changed && lookup_exact(alt, p);
}

static bool registry_number(const cJSON *entry, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0)
        return false;
    *out = v->valuedouble;
    return true;
}

int mini_price_registry(const char *path, const char *const *names, size_t n, struct mini_price *p, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, 16 << 20, e) < 0)
        return mini_err_prefix(e, "model registry %s", path);
    cJSON *root = mini_json_parse(b.data ? b.data : "", b.len, e);
    if (!root)
        return mini_err_prefix(e, "model registry %s", path);
    int found = 0;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mini_err_set(e, MINI_E_CONFIG, "model registry %s: not a JSON object of model names", path);
    }
    for (size_t i = 0; i < n && !found; i++) {
        if (!names[i])
            continue;
        const cJSON *entry = cJSON_GetObjectItemCaseSensitive(root, names[i]);
        if (!cJSON_IsObject(entry))
            continue;
        struct mini_price q = { 0 };
        if (!registry_number(entry, "input_cost_per_token", &q.input) ||
            !registry_number(entry, "output_cost_per_token", &q.output)) {
            cJSON_Delete(root);
            return mini_err_set(e, MINI_E_CONFIG,
                                "model registry %s: entry \"%.*s\" needs numbers input_cost_per_token and "
                                "output_cost_per_token",
                                path, MINI_JSON_SHOW(names[i]));
        }
        if (!registry_number(entry, "cache_read_input_token_cost", &q.cache_read))
            q.cache_read = q.input;
        if (!registry_number(entry, "cache_creation_input_token_cost", &q.cache_write))
            q.cache_write = q.input;
        *p = q;
        found = 1;
    }
    cJSON_Delete(root);
    return found;
}

double mini_price_cost(const struct mini_price *p, const struct mini_usage *u)
{
    return u->input * p->input + u->output * p->output + u->cache_read * p->cache_read +
        u->cache_write * p->cache_write;
}
