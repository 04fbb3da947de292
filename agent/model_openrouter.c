/* OpenRouter (https://openrouter.ai): OpenAI's chat completions with two
 * differences.  The request asks for the cost in the usage ("usage":
 * {"include": true}), so each reply carries what it cost and a model
 * without a known price is no error; and the model names carry the
 * vendor ("anthropic/claude-sonnet-4.5"), which a price lookup leaves
 * out. */
#include <string.h>

#include "model_int.h"
#include "mini/cleanup.h"

static int openrouter_request(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *req = mini_openai_body(m, messages, e);
    if (!req)
        return -1;
    cJSON *usage = cJSON_AddObjectToObject(req, "usage");
    if (!usage || !cJSON_AddTrueToObject(usage, "include"))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_model_finish_body(m, req, body, e);
}

static const char *openrouter_price_name(const char *api_model)
{
    const char *slash = strchr(api_model, '/');
    return slash ? slash + 1 : api_model;
}

static const char *const openrouter_classes[] = {
    "openrouter",
    "openrouter_toolcall",
    "minisweagent.models.openrouter_model.OpenRouterModel",
    NULL,
};
static const char *const openrouter_text_classes[] = {
    "openrouter_textbased",
    "minisweagent.models.openrouter_textbased_model.OpenRouterTextbasedModel",
    NULL,
};
static const struct mini_model_prefix openrouter_prefixes[] = {
    { "openrouter/", NULL },
    { NULL, NULL },
};

const struct mini_model_provider_ops mini_provider_openrouter = {
    .name = "openrouter",
    .classes = openrouter_classes,
    .text_classes = openrouter_text_classes,
    .model_type = "mini.models.openrouter.OpenRouterModel",
    .text_model_type = "mini.models.openrouter.OpenRouterTextbasedModel",
    .prefixes = openrouter_prefixes,
    .claims = NULL,
    .default_base = "https://openrouter.ai/api/v1",
    .base_env = NULL,
    .key_env = "OPENROUTER_API_KEY",
    .url_suffix = mini_openai_url_suffix,
    .auth_headers = mini_model_bearer_auth,
    .request = openrouter_request,
    .parse = mini_openai_parse,
    .price_name = openrouter_price_name,
    .reports_cost = true,
};
