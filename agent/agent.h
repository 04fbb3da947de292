/* The agent loop of mini-swe-agent (its DefaultAgent):
 *
 *   run              the system and task messages, then steps until the
 *                    last message is an exit message; the trajectory is
 *                    saved after every step.
 *   step             query, then execute_actions.
 *   query            the model's next message (limits reached and format
 *                    errors are flows instead).
 *   execute_actions  run the message's commands and add their
 *                    observations (a submission is a flow instead).
 *
 * Each stage returns a flow (flow.h): what to add to the trajectory, and
 * whether the run goes on.  The stages sit in an ops table; the default
 * one is the plain agent, which never asks anyone.  The interactive front
 * end (interactive.h, mini-swe-agent's InteractiveAgent) puts in its own
 * stages, which ask the person and call the mini_agent_* defaults below. */
#ifndef MINI_AGENT_AGENT_H
#define MINI_AGENT_AGENT_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "environment.h"
#include "flow.h"
#include "mini/err.h"

struct mini_model;
struct mini_agent;
struct mini_policy;

struct mini_agent_ops {
    /* The stages; never NULL. */
    struct mini_flow (*step)(struct mini_agent *a, struct mini_err *e);
    /* A flow of kind MINI_FLOW_NONE sets *msg to the message (already in
     * the trajectory) whose actions the step executes. */
    struct mini_flow (*query)(struct mini_agent *a, const cJSON **msg, struct mini_err *e);
    struct mini_flow (*execute_actions)(struct mini_agent *a, const cJSON *msg, struct mini_err *e);

    /* For a display; each may be NULL; arg is the agent's ops_arg. */
    /* A message was added (role, content, step number, cost so far). */
    void (*on_message)(void *arg, const cJSON *msg, long step, double cost);
    /* The model is being asked (start) / has answered or failed (!start). */
    void (*on_query)(void *arg, bool start);
    /* A command starts (result NULL) or has ended (its result). */
    void (*on_command)(void *arg, const char *command, const cJSON *result);
    /* Output of a running command, as it arrives. */
    mini_env_output_fn on_output;
};

struct mini_agent {
    cJSON *config;                /* the whole merged config (borrowed) */
    struct mini_model *model;     /* borrowed */
    struct mini_environment *env; /* borrowed */
    const char *output_path;      /* trajectory file; NULL: not saved */
    /* Its directory, held from mini_agent_init on (before any command of
     * the run), and its name in it: a sandboxed command that replaces the
     * directory with a symlink between two saves (it may lie in the
     * workspace) does not redirect them. */
    int output_dirfd;
    bool output_dir_held;
    const char *output_name;
    const struct mini_agent_ops *ops; /* the plain agent's unless a front end sets its own */
    void *ops_arg;                    /* the front end's, for its ops */
    /* A batch run's (each may be NULL, all borrowed): told after each
     * message (calls and cost so far); more template variables (a task's
     * own fields, given before `task`, as mini-swe-agent's run(task,
     * **kwargs)); more trajectory fields (instance_id), merged in last. */
    void (*on_progress)(void *arg, long calls, double cost);
    void *progress_arg;
    const cJSON *extra_vars;
    const cJSON *traj_extra;

    /* Supervision (agent/policy/policy.h), set by mini_agent_supervise:
     * every action goes through the policy (NULL: all run) before it runs,
     * and one line per action goes to the audit log (fd; -1: none). */
    struct mini_policy *policy; /* borrowed */
    int audit_fd;
    char run_id[40];
    /* Set by a front end that asked the person about this step's commands
     * and was told to run them: `ask` is answered, by the person. */
    bool person_approved;

    /* limits, from config.agent */
    long step_limit;
    double cost_limit;
    double wall_time_limit; /* seconds, 0: none */
    long max_format_errors;

    /* state */
    cJSON *messages;
    cJSON *template_vars; /* environment + model + task (mini_agent_template_vars
                                      adds the agent's config and the counters) */
    long n_calls;         /* queries made (format errors and a failing one included) */
    long format_errors;   /* consecutive */
    double start;         /* monotonic seconds, from mini_agent_init */
    char *exit_status;    /* from the exit message, once added; NULL: the run goes on */
    char *submission;
    /* Where the run's time went (monotonic seconds; `mini batch`'s timing,
     * docs/batch.md): the model's queries, the environment's commands,
     * saving the trajectory. */
    double model_s, commands_s, save_s;
    /* Never fsync the trajectory, not even the last save: the caller makes
     * it durable itself (`mini batch`'s group commit). */
    bool no_sync;
    volatile int interrupt; /* set from a SIGINT handler */
    volatile int terminate; /* set from a SIGTERM/SIGHUP handler (with
                                      interrupt): stop without asking */
};

/* Read the limits from cfg.agent, gather the template variables; 0, or -1
 * with e filled.  The clock of elapsed_seconds and the wall-time limit
 * starts here (mini-swe-agent's starts when the agent is made). */
int mini_agent_init(struct mini_agent *a, cJSON *config, struct mini_model *model, struct mini_environment *env,
                    const char *output_path, struct mini_err *e);
/* Put every action under policy (borrowed; NULL: none) and write one line
 * per action to the audit log at audit_fd (-1: none; the agent does not
 * close it).  Checks policy.blocked_template; 0, or -1 with e. */
int mini_agent_supervise(struct mini_agent *a, struct mini_policy *policy, int audit_fd, struct mini_err *e);
/* Write the audit lines of actions that did not run because the person
 * at the terminal said no (comment: what they said, may be NULL). */
void mini_agent_audit_rejected(struct mini_agent *a, const cJSON *msg, const char *comment);
/* Run the task to its end.  The exit status is in a->exit_status (also
 * when -1 is returned for an error, which is then the exit status's
 * cause); the trajectory has been saved either way. */
int mini_agent_run(struct mini_agent *a, const char *task, struct mini_err *e);
void mini_agent_fini(struct mini_agent *a);

/* ---- the plain agent's stages, and their parts, for a front end's own ---- */

/* Ctrl-C (a->interrupt) first; then query and execute_actions.  A Ctrl-C seen on the way makes the flow
 * MINI_FLOW_INTERRUPTED unless it already ends the run. */
struct mini_flow mini_agent_step(struct mini_agent *a, struct mini_err *e);
/* The step and cost limits (MINI_FLOW_LIMITS_EXCEEDED), the wall-time
 * limit (MINI_FLOW_TIME_EXCEEDED), in this order, then the model. */
struct mini_flow mini_agent_query(struct mini_agent *a, const cJSON **msg, struct mini_err *e);

/* Add msg (taken) to the trajectory. */
void mini_agent_add_message(struct mini_agent *a, cJSON *msg);
/* Add the messages of f now (f keeps its kind, without messages).  An exit
 * message among them ends the run: it sets the exit status and the
 * submission. */
void mini_agent_add_messages(struct mini_agent *a, struct mini_flow *f);
/* Run the actions of msg (extra.actions) in order, their results into
 * outputs; a Ctrl-C stops the rest, and so does a submission
 * (*submission, malloc'd; NULL when none), whose own result is not in
 * outputs (mini-swe-agent's environment raises instead of returning it).
 * -1 when the environment broke. */
int mini_agent_run_actions(struct mini_agent *a, const cJSON *msg, cJSON *outputs, char **submission,
                           struct mini_err *e);
/* Add the observations of the actions of msg for outputs (those that ran,
 * in order; may be NULL).  Tool calls without an output are answered as
 * not executed, so that every call the model made has its answer. */
int mini_agent_observe(struct mini_agent *a, const cJSON *msg, const cJSON *outputs, struct mini_err *e);
/* The flow ending the run with the submission. */
struct mini_flow mini_agent_submitted(const char *submission);

#endif
