/* Language models, as mini-swe-agent (v2) has them.
 *
 * A model takes the trajectory's message list and returns the next
 * assistant message, with the actions (shell commands) it asks for in
 * extra.actions; it turns the actions' outputs into observation messages.
 * Messages keep mini-swe-agent's shapes, whatever the provider:
 *
 *   assistant  {"role": "assistant", "content": "...",
 *               "tool_calls": [{"id": "call_1", "type": "function",
 *                               "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}],
 *               "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"}],
 *                         "response": {raw API response}, "cost": 0.0012,
 *                         "timestamp": 1700000000.5}}
 *   tool       {"role": "tool", "tool_call_id": "call_1", "content": "<rendered observation_template>",
 *               "extra": {"raw_output": "...", "returncode": 0, "timestamp": ...}}
 *   user       (text mode and format errors) {"role": "user", "content": "...", "extra": {...}}
 *
 * Classes (model.model_class, or --model-class; else chosen by the provider
 * prefix of model.model_name): openai / litellm (tool calling over OpenAI
 * chat completions), *_textbased (action_regex on the reply text),
 * anthropic (messages API with tool use), openrouter, deterministic, replay.
 * docs/models.md lists them with every config key.
 *
 * A model is used by one thread at a time.  Library code: nothing is
 * printed; API keys never appear in errors, messages or serialisations.
 * libcurl runs with CURLOPT_NOSIGNAL, so the program must ignore SIGPIPE
 * (signal(SIGPIPE, SIG_IGN)) or a peer closing a TLS connection kills it. */
#ifndef MINI_AGENT_MODEL_H
#define MINI_AGENT_MODEL_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

struct mini_model;

/* Build a model from the config's "model" section (borrowed; copied as
 * needed).  model_class overrides model.model_class when non-NULL and
 * non-empty.  Checks what can be checked before any call: the class, the
 * model name, the API key's presence, the price (unknown price with
 * cost_tracking "default" is an error), action_regex.  NULL with e filled
 * (MINI_E_CONFIG, MINI_E_MODEL, MINI_E_NOMEM). */
struct mini_model *mini_model_new(const cJSON *model_cfg, const char *model_class, struct mini_err *e);
void mini_model_free(struct mini_model *m);

/* One query.  `messages` is the trajectory's message list (an array of
 * message objects; "extra" and other mini-only keys are not sent).
 *
 * 0: *assistant is the message to append (owned by the caller).
 * -1 with e->code == MINI_E_FORMAT: the reply had no valid action;
 *    *format_error is an array of the message(s) to append (a user
 *    message with the rendered format_error_template, extra.interrupt_type
 *    "FormatError", extra.response); the call and its cost are counted.
 * -1 otherwise: e filled (MINI_E_MODEL for API errors after the retry
 *    budget or a non-retryable status, MINI_E_IO when interrupted,
 *    MINI_E_TEMPLATE for a broken template, ...).
 * *assistant and *format_error are NULL unless set as above. */
int mini_model_query(struct mini_model *m, const cJSON *messages, cJSON **assistant, cJSON **format_error,
                     struct mini_err *e);

/* Observation messages for the outputs of the actions of `assistant`
 * (outputs: array of {"output", "returncode", "exception_info"[, "extra"]},
 * in the order of extra.actions).  Each is rendered with
 * model.observation_template and the variables template_vars (may be NULL)
 * plus `output`.  An action with a tool_call_id gets a "tool" message
 * answering it (actions without an output get the "action was not
 * executed" placeholder, so every tool call is answered); others get
 * "user" messages.  NULL with e filled. */
cJSON *mini_model_observations(struct mini_model *m, const cJSON *assistant, const cJSON *outputs,
                               const cJSON *template_vars, struct mini_err *e);

/* Cost (USD) and number of calls of this model so far, format errors included. */
double mini_model_cost(const struct mini_model *m);
long mini_model_calls(const struct mini_model *m);
/* Format errors since the last valid reply. */
long mini_model_format_errors(const struct mini_model *m);

/* The model's config with defaults filled in (model_name, model_kwargs,
 * cost_tracking, templates, ...), secrets redacted: the variables the
 * agent's templates see.  NULL when out of memory. */
cJSON *mini_model_template_vars(const struct mini_model *m);
/* {"info": {"config": {"model": <as template_vars>, "model_type": "..."},
 *           "model_stats": {"instance_cost": ..., "api_calls": ...}}},
 * to merge into the trajectory.  NULL when out of memory. */
cJSON *mini_model_serialize(const struct mini_model *m);

const char *mini_model_name(const struct mini_model *m);
/* The resolved class: "openai", "openai_textbased", "anthropic",
 * "anthropic_textbased", "openrouter", "openrouter_textbased",
 * "deterministic", "replay". */
const char *mini_model_class(const struct mini_model *m);

/* A flag (e.g. set from a SIGINT handler) that, when non-zero, aborts a
 * request in flight or a retry wait: the query fails with MINI_E_IO. */
void mini_model_set_cancel(struct mini_model *m, const volatile int *flag);

/* What a query is doing, for the person watching: MINI_MODEL_NOTE_RETRY
 * when an attempt failed and another follows (what failed, attempt N of
 * M, the wait), MINI_MODEL_NOTE_DETAIL for each request's outcome and
 * timing.  One line each, without a trailing newline; API keys are never
 * in it. */
enum mini_model_note { MINI_MODEL_NOTE_RETRY, MINI_MODEL_NOTE_DETAIL };
typedef void (*mini_model_note_fn)(void *arg, enum mini_model_note kind, const char *line);
void mini_model_set_notes(struct mini_model *m, mini_model_note_fn fn, void *arg);

/* Process-wide totals over every model (mini-swe-agent's
 * GLOBAL_MODEL_STATS).  MSWEA_GLOBAL_COST_LIMIT and MSWEA_GLOBAL_CALL_LIMIT
 * (0: none) make a query fail once they are reached. */
double mini_model_global_cost(void);

#endif
