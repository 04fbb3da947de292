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
enum mini_provider { MINI_PROV_NONE, MINI_PROV_OPENAI, MINI_PROV_ANTHROPIC, MINI_PROV_OPENROUTER };

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
    enum mini_provider provider;
    bool text_mode;         /* action_regex on the content, no tools */
    const char *class_name; /* static string */
    const char *model_type; /* static string, for serialize() */

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
    long max_tokens;         /* anthropic: max_tokens when model_kwargs has none */
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
/* Render a template with vars; *out is malloc'd text. */
int mini_model_render(const char *tpl, const cJSON *vars, char **out, struct mini_err *e);
/* The format-error message (role user) for a reply without a valid action.
 * error: the problem in words; actions: array of the commands found (may be
 * NULL: empty); finish_reason/content may be NULL; response is copied. */
cJSON *mini_model_format_error_msg(struct mini_model *m, const char *error, const cJSON *actions,
                                   const char *finish_reason, const char *content, const cJSON *response, double cost,
                                   struct mini_err *e);
double mini_model_now(void);
/* Count one call and its cost in the process-wide totals. */
void mini_model_global_add(double cost);
/* Replace every occurrence of the API key in e->msg with "***". */
void mini_model_scrub(const struct mini_model *m, struct mini_err *e);
/* Resolve a class name; false when unknown.  provider/text/kind out. */
bool mini_model_resolve_class(const char *name, const char *model_name, enum mini_model_kind *kind,
                              enum mini_provider *provider, bool *text_mode);
/* The provider a model name implies and the name without its prefix
 * (malloc'd).  NULL when out of memory. */
char *mini_model_strip_prefix(const char *model_name, enum mini_provider *provider, const char **default_base);
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
/* The tool definition (OpenAI shape) and its Anthropic twin. */
cJSON *mini_bash_tool_openai(void);
cJSON *mini_bash_tool_anthropic(void);
/* Request body for /chat/completions. */
int mini_openai_request(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e);
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
int mini_anthropic_request(struct mini_model *m, const cJSON *messages, struct mini_buf *body, struct mini_err *e);
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
