/* Environments: where the model's commands run.  `local` runs each command
 * in a fresh `/bin/sh -c` on the host (mini-swe-agent's LocalEnvironment);
 * `sandbox` runs it through mini-sandboxd, in a session opened once with the
 * chosen profile and workspace.  Both give the same result shape:
 *   {"output": str, "returncode": int, "exception_info": str[, "extra": {...}]}
 * with a timed-out command's partial output kept. */
#ifndef MINI_AGENT_ENVIRONMENT_H
#define MINI_AGENT_ENVIRONMENT_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

struct mini_environment;

/* Called with output as it arrives (may be NULL). */
typedef void (*mini_env_output_fn)(void *arg, const char *data, size_t len);

/* `cfg` is the config's "environment" section; `kind` is "local" or
 * "sandbox". */
struct mini_environment *mini_environment_new(const cJSON *cfg, const char *kind, struct mini_err *e);
/* Run one command.  Fills *result (a new object).  Fails (-1) only when
 * the environment itself broke (daemon gone, cannot fork); a command that
 * fails, times out or cannot start is a normal result. */
int mini_environment_execute(struct mini_environment *env, const char *command, const char *cwd, double timeout,
                             mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e);
/* As mini_environment_execute, in a sandbox session of `profile` (NULL:
 * the environment's own): a policy rule's override.  The environment opens
 * one more session per such profile when first needed (connecting to
 * mini-sandboxd, or starting a private one, also from the local
 * environment) and keeps it until it is freed. */
int mini_environment_execute_in(struct mini_environment *env, const char *profile, const char *command, const char *cwd,
                                double timeout, mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e);
/* What a command run with this profile override (NULL: none) gets, for the
 * audit log: {"environment": "local"|"sandbox", "profile": name|null,
 * "isolation": the level the daemon reported for the session ("full",
 * "degraded"), or "none" on the host; "isolation_missing": what a
 * degraded session lacks}. */
cJSON *mini_environment_isolation(const struct mini_environment *env, const char *profile);
/* Stop the command that is running now (from a signal handler's flag check
 * or another thread); the result reports it as interrupted. */
void mini_environment_interrupt(struct mini_environment *env);
/* Variables for templates: the environment's config plus the host's uname
 * (system, node, release, version, machine), as mini-swe-agent gives them. */
cJSON *mini_environment_template_vars(const struct mini_environment *env);
/* {"info": {"config": {"environment": ..., "environment_type": ...}}} */
cJSON *mini_environment_serialize(const struct mini_environment *env);
/* Close the sandbox sessions (waiting for the daemon to answer each), the
 * connection, and free env. */
void mini_environment_free(struct mini_environment *env);
/* The directory the commands may write on the host: the sandbox's
 * workspace (environment.workspace, else cwd, else mini's own working
 * directory); for local, that same directory. */
const char *mini_environment_workspace(const struct mini_environment *env);
/* The same without the close requests: the connection's end closes the
 * sessions, the daemon's side of it in its own time (the commands are over;
 * what it has left to kill never ran one). */
void mini_environment_drop(struct mini_environment *env);

/* Submission: after leading whitespace the output's first line is
 * COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT and returncode is 0.  Returns the
 * submission (the rest of the output, malloc'd) or NULL. */
char *mini_submission(const cJSON *result);

#endif
