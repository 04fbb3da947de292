/* Internals of the model layer, shared by model*.c, prices.c and the unit
 * tests.  Not an API for the rest of the agent (that is model.h). */
#ifndef MINI_AGENT_MODEL_INT_H
#define MINI_AGENT_MODEL_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "model.h"
#include "http.h"
#include "mini/buf.h"
#include "mini/err.h"

enum mini_model_kind { MINI_KIND_API, MINI_KIND_DETERMINISTIC, MINI_KIND_REPLAY };

struct mini_model;
struct mini_usage;

/* A model-name prefix that names a provider ("ollama/"), and the api_base
 * it implies (NULL: the provider's default_base). */
struct mini_model_prefix {
    const char *prefix;
    const char *base;
};

/* A provider of API models: everything model.c asks of one.  Each lives in
 * its own file (model_openai.c, model_anthropic.c, model_openrouter.c) and
 * is listed once in MINI_MODEL_PROVIDERS below; docs/models.md says how to
 * add one. */
struct mini_model_provider_ops {
    const char *name; /* "openai": for messages */

    /* ---- how a config names it ---- */
    /* model_class values that choose it, NULL-terminated; the first is
     * mini_model_class() of its models.  `classes` call tools,
     * `text_classes` parse the reply text with action_regex. */
    const char *const *classes;
    const char *const *text_classes;
    /* info.config.model_type of a trajectory. */
    const char *model_type, *text_model_type;
    /* Model-name prefixes that choose it when the class does not
     * (litellm's "anthropic/..."), stripped from the name sent; ends with
     * { NULL }. */
    const struct mini_model_prefix *prefixes;
    /* Whether a model name without a known prefix is its ("claude-...");
     * NULL: never.  A name no provider claims goes to the first provider
     * of MINI_MODEL_PROVIDERS. */
    bool (*claims)(const char *model_name);

    /* ---- where and how it is called ---- */
    const char *default_base; /* api_base when none is configured */
    const char *base_env;     /* the variable that sets api_base; NULL: none */
    const char *key_env;      /* the variable that holds the API key */
    /* What follows api_base (without trailing slashes) in the URL posted
     * to ("/chat/completions"; "" when base already ends with it). */
    const char *(*url_suffix)(const char *base);
    /* Add the headers that carry m->api_key (may be NULL: no key) and any
     * version the API wants, unless model_kwargs.extra_headers set them
     * (mini_model_has_header, mini_model_add_header).  -1 with e. */
    int (*auth_headers)(struct mini_model *m, struct mini_err *e);
    /* The request body for the trajectory's messages.  -1 with e. */
    int (*request)(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e);
    /* From a 2xx response: an OpenAI-shaped assistant message (without
     * extra), the finish reason in OpenAI's words (borrowed from resp) and
     * the usage.  0; 1 when the response is malformed (retryable; *why
     * says what); -1 out of memory. */
    int (*parse)(const cJSON *resp, cJSON **msg, const char **finish_reason, struct mini_usage *u, const char **why);

    /* ---- cost ---- */
    /* The name to look the price up by (the api_model, i.e. without the
     * prefix); NULL: the api_model itself. */
    const char *(*price_name)(const char *api_model);
    /* Each reply carries its own cost (mini_usage.has_cost): a model
     * without a known price is no error. */
    bool reports_cost;
};

/* The providers, one line each.  Order matters twice: a model name's
 * prefix is looked for provider by provider, and a name that no provider
 * claims goes to the first. */
#define MINI_MODEL_PROVIDERS(X) \
    X(openai)                   \
    X(anthropic)                \
    X(openrouter)

#define MINI_MODEL_PROVIDER_DECLARE(name) extern const struct mini_model_provider_ops mini_provider_##name;
MINI_MODEL_PROVIDERS(MINI_MODEL_PROVIDER_DECLARE)
#undef MINI_MODEL_PROVIDER_DECLARE

/* USD per token. */
struct mini_price {
    double input, output, cache_read, cache_write;
};

/* Token counts of one reply.  `input` excludes the cached tokens counted in
 * cache_read / cache_write. */
struct mini_usage {
    bool present;
    double input, output, cache_read, cache_write;
    bool has_cost; /* the provider reported the cost itself (OpenRouter) */
    double cost;
};

struct mini_model {
    enum mini_model_kind kind;
    const struct mini_model_provider_ops *provider; /* API models */
    bool text_mode;                                 /* action_regex on the content, no tools */
    const char *class_name;                         /* static string */
    const char *model_type;                         /* static string, for serialize() */

    cJSON *cfg;                        /* effective config: the user's keys plus defaults */
    const char *model_name;            /* in cfg */
    char *api_model;                   /* the name sent to the API (provider prefix stripped) */
    const char *format_error_template; /* in cfg */
    const char *observation_template;  /* in cfg */
    pcre2_code *action_re;             /* text mode and test models */

    /* API models */
    char *url;
    char *base_shown;     /* api_base for messages: scheme://host:port/path */
    char *api_key;        /* NULL: no key (local server) */
    const char *key_name; /* where the key came from, for messages */
    cJSON *kwargs;        /* model_kwargs that go into the request body */
    char **headers;       /* extra "Name: value" headers */
    size_t n_headers;
    long timeout_ms;
    bool cache_control;      /* set_cache_control: "default_end" */
    bool ignore_cost_errors; /* cost_tracking: "ignore_errors" */
    bool have_price;
    struct mini_price price;
    int retry_attempts;
    long retry_base_ms;
    struct mini_http *http;

    /* test models */
    cJSON *outputs; /* deterministic: model.outputs; replay: assistant messages */
    int next_output;
    double cost_per_call;
    char *replay_path;

    /* stats */
    double cost;
    long calls;
    long format_errors;
    const volatile int *cancel;
    mini_model_note_fn note;
    void *note_arg;
};

/* ---- model.c ---- */
/* A reply without a valid action: counted, its format-error message (as
 * above) as a one-element array in *out, and MINI_E_FORMAT with error in e
 * (what the agent turns into the next observation).  Always -1. */
int mini_model_format_error(struct mini_model *m, const char *error, const cJSON *actions, const char *finish_reason,
                            const char *content, const cJSON *response, double cost, cJSON **out, struct mini_err *e);
double mini_model_now(void);
/* Count one call and its cost in the process-wide totals. */
void mini_model_global_add(double cost);
/* Replace every occurrence of the API key in e->msg with "***". */
void mini_model_scrub(const struct mini_model *m, struct mini_err *e);
/* The providers of MINI_MODEL_PROVIDERS, NULL-terminated. */
extern const struct mini_model_provider_ops *const mini_model_providers[];
/* Resolve a class name; false when unknown.  provider/text/kind out
 * (*provider NULL for a litellm class without model_name, and for test
 * models). */
bool mini_model_resolve_class(const char *name, const char *model_name, enum mini_model_kind *kind,
                              const struct mini_model_provider_ops **provider, bool *text_mode);
/* The provider a model name implies (unless *provider is set already: an
 * explicit class) and the name without its prefix (malloc'd).  NULL when
 * out of memory. */
char *mini_model_strip_prefix(const char *model_name, const struct mini_model_provider_ops **provider,
                              const char **default_base);
/* Extra request headers ("Name: value"): add one (checked: no line
 * break, a token name), and whether one of that name is there. */
int mini_model_add_header(struct mini_model *m, const char *name, const char *value, struct mini_err *e);
bool mini_model_has_header(const struct mini_model *m, const char *name);
/* auth_headers of OpenAI-style APIs: "Authorization: Bearer KEY". */
int mini_model_bearer_auth(struct mini_model *m, struct mini_err *e);
/* Backoff before attempt `attempt` (2, 3, ...): base * 2^(attempt-2) ms,
 * clamped to [4 * base, 60 * base]: tenacity's wait_exponential(min=4, max=60). */
long mini_model_backoff_ms(int attempt, long base_ms);

/* ---- model_text.c ---- */
/* Compile action_regex (PCRE2, UTF, DOTALL like Python's re.DOTALL). */
pcre2_code *mini_action_regex_compile(const char *pattern, struct mini_err *e);
/* All non-overlapping matches of re in content (group 1 when the pattern
 * has groups, else the whole match), each stripped of whitespace as
 * Python's str.strip() does; appended to *found (created as an array of
 * strings).  Returns the count, -1 with e filled. */
int mini_regex_findall(const pcre2_code *re, const char *content, size_t len, cJSON **found, struct mini_err *e);
/* Python's str.strip(): the [start, end) of s without leading and trailing
 * Unicode whitespace. */
void mini_py_strip(const char *s, size_t len, size_t *start, size_t *end);
/* Actions from OpenAI-style tool calls (an array; NULL or empty is an
 * error).  0 with *actions set; 1 with *error set (malloc'd) for a format
 * error; -1 when out of memory. */
/* The message of Python's json.loads for text[0..len) ("Expecting value:
 * line 1 column 1 (char 0)"), or NULL when Python would accept it (or out
 * of memory).  Malloc'd. */
char *mini_py_json_error(const char *text, size_t len);
int mini_toolcall_actions(const cJSON *tool_calls, cJSON **actions, char **error);
/* Actions of a message, parsed as the model would: extra.actions when
 * present, else its tool_calls, else action_regex on its content.
 * 0 ok, 1 format error (*error set), -1 with e filled. */
int mini_message_actions(struct mini_model *m, const cJSON *msg, cJSON **actions, char **error, struct mini_err *e);

/* ---- model_openai.c ---- */
cJSON *mini_bash_tool_anthropic(void);
/* Request body for /chat/completions: model, messages and tools, before
 * model_kwargs (mini_model_finish_body).  NULL with e. */
cJSON *mini_openai_body(struct mini_model *m, const cJSON *messages, struct mini_err *e);
/* model_kwargs merged into req, printed into body.  -1 with e. */
int mini_model_finish_body(struct mini_model *m, cJSON *req, struct mini_buf *body, struct mini_err *e);
/* The OpenAI provider's url_suffix, for the APIs that share it. */
const char *mini_openai_url_suffix(const char *base);
/* From a 2xx response: the assistant message (without extra), the finish
 * reason (borrowed from resp) and the usage.  0, or 1 when the response is
 * malformed (retryable; *why says what), -1 out of memory. */
int mini_openai_parse(const cJSON *resp, cJSON **msg, const char **finish_reason, struct mini_usage *u,
                      const char **why);
/* Copy every member of src into dst, replacing members of the same name. */
int mini_json_merge_into(cJSON *dst, const cJSON *src);
/* The messages as sent: only role, content, name, tool_calls and
 * tool_call_id; "exit" messages dropped; cache control marks when asked. */
cJSON *mini_openai_messages(const cJSON *messages, bool cache_control);

/* ---- model_anthropic.c ---- */
/* Convert mini messages (OpenAI shapes) to Anthropic's: *system (string or
 * NULL) and the messages array with tool_use / tool_result blocks. */
int mini_anthropic_convert(const cJSON *messages, bool cache_control, cJSON **system, cJSON **out, struct mini_err *e);
/* From a 2xx response: an OpenAI-shaped assistant message (content text,
 * tool_calls from tool_use blocks, thinking_blocks kept), the finish reason
 * mapped to OpenAI's words, and the usage. */
int mini_anthropic_parse(const cJSON *resp, cJSON **msg, const char **finish_reason, struct mini_usage *u,
                         const char **why);

/* ---- model_test.c ---- */
int mini_testmodel_init(struct mini_model *m, struct mini_err *e);
int mini_testmodel_query(struct mini_model *m, const cJSON *messages, cJSON **assistant, cJSON **format_error,
                         struct mini_err *e);

/* ---- prices.c ---- */
/* Built-in prices of well-known models; name without provider prefix, a
 * date or "-latest" suffix allowed.  False when unknown. */
bool mini_price_lookup(const char *name, struct mini_price *p);
/* A litellm-style registry (JSON object: name -> {input_cost_per_token,
 * output_cost_per_token, cache_read_input_token_cost,
 * cache_creation_input_token_cost}): the entry for the first of names
 * found.  1 found, 0 not, -1 with e filled (unreadable or bad file). */
int mini_price_registry(const char *path, const char *const *names, size_t n, struct mini_price *p, struct mini_err *e);
/* Cost of a reply. */
double mini_price_cost(const struct mini_price *p, const struct mini_usage *u);

#endif
