/* mini's interactive front end: the person at the terminal watches the
 * model work and decides what runs.
 *
 * Modes (agent.mode, -y, or a slash command at any question):
 *   confirm  each step's commands are shown and run only when the person
 *            presses Enter; any text rejects them and goes to the model as
 *            the reason.  The agent's policy (the `policy` section, with
 *            agent.whitelist_actions as `allow` rules matched at the start,
 *            as Python's re.match) decides first: what a rule allows runs
 *            without asking, what it denies is blocked, and its `ask` is
 *            shown with the rule and its reason at the question.
 *   yolo     the model's commands run without asking.
 *   human    the person types the commands; they run and their output joins
 *            the trajectory, and the model is not asked.
 * Slash commands: /y yolo, /c confirm, /u human, /m multi-line input,
 * /h help.
 *
 * The front end also asks for the task when none was given, asks when the
 * model submits (agent.confirm_exit: Enter ends, text is a new task), when
 * a step or cost limit is reached (new limits), and after Ctrl-C (a
 * comment for the model; Ctrl-C again ends the run).  Lines are read with
 * libedit (emacs keys, history kept in the global config directory).
 *
 * Without a terminal on stdin nothing is ever asked: the front end only
 * shows the run (the caller refuses confirm and human mode up front, see
 * mini_ui_needs_terminal), limits end the run, a submission ends it, and
 * Ctrl-C stops it. */
#ifndef MINI_AGENT_INTERACTIVE_H
#define MINI_AGENT_INTERACTIVE_H

#include <stdbool.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "agent.h"
#include "mini/err.h"

struct mini_ui;

enum mini_mode {
    MINI_MODE_CONFIRM = 0,
    MINI_MODE_YOLO,
    MINI_MODE_HUMAN,
};

struct mini_ui_opts {
    /* The config's agent section: mode, whitelist_actions, confirm_exit,
     * agent_class ("default" never asks: commands run, submissions end the
     * run, limits end it, Ctrl-C stops it). */
    const cJSON *agent;
    /* The config's model section: model_kwargs.api_key is never shown
     * (nor the values of environment variables named *API_KEY, *_TOKEN,
     * *_SECRET, *_PASSWORD). */
    const cJSON *model;
    /* Whether the person can be asked (stdin is a terminal). */
    bool interactive;
    /* Where everything is shown (stdout), and whether with colours. */
    FILE *out;
    bool color;
    /* -q: show only the final result (the submission) and what a question
     * needs; the summary and errors are main's, on stderr. */
    bool quiet;
    /* Directory for the line-editing history (the global config
     * directory); NULL: none kept. */
    const char *history_dir;
};

/* Whether the agent section asks for a mode that needs someone at a
 * terminal (confirm or human, with the interactive agent class); the mode's
 * name in *mode when it does. */
bool mini_ui_needs_terminal(const cJSON *agent, const char **mode);

/* NULL with e: an unknown agent.mode (MINI_E_CONFIG), out of memory. */
struct mini_ui *mini_ui_new(const struct mini_ui_opts *opts, struct mini_err *e);
void mini_ui_free(struct mini_ui *ui);
/* "mini: LINE" on stderr, clear of the spinner (a model retry, details). */
void mini_ui_note(struct mini_ui *ui, const char *line);

/* Make the agent interactive: its ops become the front end's (the display,
 * and the stages that ask: mini-swe-agent's InteractiveAgent). */
void mini_ui_attach(struct mini_ui *ui, struct mini_agent *a);

/* Ask the person for the task.  0: *task is set (malloc'd); 1: no task
 * (Ctrl-D, or not interactive); 2: Ctrl-C (or SIGTERM). */
int mini_ui_ask_task(struct mini_ui *ui, char **task);

/* Tell the front end that a signal (SIGINT, SIGTERM, SIGHUP) arrived, from
 * the program's signal handler: a question being asked is then cut short.
 * Async-signal-safe. */
void mini_ui_signal(int sig);

#endif
