/* mini's interactive front end (interactive.h): modes, questions, line
 * editing, the display of a run, and the agent's stages that ask. */
#include "interactive.h"
#include "display.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "policy/policy.h"

#include <histedit.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <wchar.h>

#define HISTORY_SIZE 1000

/* Signals seen, counted by mini_ui_signal (from the program's handlers). */
static volatile sig_atomic_t sig_int_count, sig_term_count, sig_winch;

void mini_ui_signal(int sig)
{
    if (sig == SIGINT)
        sig_int_count++;
    else
        sig_term_count++;
}

static void on_winch(int sig)
{
    (void)sig;
    sig_winch = 1;
}

enum hist { HIST_INPUT, HIST_TASK, HIST_COUNT };
static const char *const hist_file[HIST_COUNT] = { "mini_input_history", "mini_task_history" };

struct mini_ui {
    struct mini_display *d;
    enum mini_mode mode;
    bool asks; /* the person can be asked */
    bool confirm_exit;
    long step; /* model calls and cost, as of the last message */
    double cost;
    int n_actions; /* commands of the last step */
    /* This step's commands in order: bit i set when command i ended normally
     * with its output shown live, so that its observation is only named. */
    uint64_t live_mask;
    int n_ended, n_observed;
    bool quiet;               /* only the final result (and what a question needs) */
    const cJSON *own_command; /* the message of the person's command (human mode) */
    /* Line editing. */
    EditLine *el;
    History *hist[HIST_COUNT];
    char *hist_path[HIST_COUNT];
    bool hist_warned;
    char prompt[64];
    mbstate_t mbs;
    sig_atomic_t int_mark, term_mark;
    bool cut; /* the line was cut short by a signal */
    bool winch_installed;
    struct sigaction old_winch;
};

static const char *const mode_names[] = { "confirm", "yolo", "human" };

/* "confirm", "yolo", "human" -> mode; -1 for anything else. */
static int mini_ui_parse_mode(const char *name)
{
    for (size_t i = 0; name && i < MINI_ARRAY_SIZE(mode_names); i++)
        if (strcmp(name, mode_names[i]) == 0)
            return (int)i;
    return -1;
}

static const char *mini_ui_mode_name(enum mini_mode mode)
{
    return (unsigned)mode < MINI_ARRAY_SIZE(mode_names) ? mode_names[mode] : "?";
}

static bool default_class(const cJSON *agent)
{
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(agent, "agent_class");
    return cJSON_IsString(cls) && strcmp(cls->valuestring, "default") == 0;
}

bool mini_ui_needs_terminal(const cJSON *agent, const char **mode)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(agent, "mode");
    const char *name = cJSON_IsString(m) ? m->valuestring : "confirm";
    if (default_class(agent) || strcmp(name, "yolo") == 0)
        return false;
    if (mode)
        *mode = name;
    return true;
}

/* ---- reading a line ------------------------------------------------------ */

static char *prompt_fn(EditLine *el)
{
    struct mini_ui *ui = NULL;
    el_get(el, EL_CLIENTDATA, &ui);
    return ui ? ui->prompt : "> ";
}

/* libedit's character reader: one character from stdin, cut short by
 * SIGINT, SIGTERM or SIGHUP (-1), 0 at the end of input.  Signals are
 * blocked between the check and the wait (ppoll), so none is missed. */
static int read_char(EditLine *el, wchar_t *wc)
{
    struct mini_ui *ui = NULL;
    el_get(el, EL_CLIENTDATA, &ui);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGWINCH);
    for (;;) {
        pthread_sigmask(SIG_BLOCK, &block, &old);
        if (sig_int_count != ui->int_mark || sig_term_count != ui->term_mark) {
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            ui->cut = true;
            return -1;
        }
        if (sig_winch) {
            sig_winch = 0;
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            el_resize(el);
            continue;
        }
        struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };
        int r = ppoll(&pf, 1, NULL, &old);
        int err = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
            if (err == EINTR)
                continue;
            return -1;
        }
        char c;
        ssize_t n = read(STDIN_FILENO, &c, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return n == 0 ? 0 : -1;
        size_t k = mbrtowc(wc, &c, 1, &ui->mbs);
        if (k == (size_t)-2)
            continue;
        if (k == (size_t)-1) {
            memset(&ui->mbs, 0, sizeof ui->mbs);
            *wc = L'?';
        }
        return 1;
    }
}

/* Write the history file: a private temporary file renamed over it (no
 * fsync: losing the last line in a crash is fine, stalling is not). */
static void history_save(struct mini_ui *ui, enum hist h)
{
    if (!ui->hist_path[h])
        return;
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.%ld.tmp", ui->hist_path[h], (long)getpid()) < 0)
        return;
    /* Created afresh (a name left there, a link or a hard link, is
     * removed, never written through). */
    int fd = mini_open_new(tmp, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    HistEvent ev;
    bool ok = f && history(ui->hist[h], &ev, H_SAVE_FP, f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (ok && rename(tmp, ui->hist_path[h]) == 0)
        return;
    int err = errno;
    if (fd >= 0)
        unlink(tmp);
    if (!ui->hist_warned) {
        ui->hist_warned = true;
        fprintf(stderr, "mini: not keeping the input history in %s: %s\n", ui->hist_path[h], strerror(err));
    }
}

static void history_add(struct mini_ui *ui, enum hist h, const char *line)
{
    if (!*line || !ui->hist[h])
        return;
    HistEvent ev;
    history(ui->hist[h], &ev, H_ENTER, line);
    history_save(ui, h);
}

enum line_result { LINE_OK, LINE_EOF, LINE_CUT };

/* One line from the person, without its newline (malloc'd). */
static enum line_result read_line(struct mini_ui *ui, const char *prompt, enum hist h, char **line)
{
    *line = NULL;
    if (!ui->el)
        return LINE_EOF;
    snprintf(ui->prompt, sizeof ui->prompt, "\1%s\1%s\1%s\1", mini_display_sgr(ui->d, MINI_STYLE_QUESTION), prompt,
             mini_display_reset(ui->d));
    el_set(ui->el, EL_HIST, history, ui->hist[h]);
    ui->int_mark = sig_int_count;
    ui->term_mark = sig_term_count;
    ui->cut = false;
    memset(&ui->mbs, 0, sizeof ui->mbs);
    mini_display_flush(ui->d);
    int n = 0;
    const char *s = el_gets(ui->el, &n);
    if (ui->cut || !s || n <= 0) {
        mini_display_printf(ui->d, MINI_STYLE_PLAIN, "\n");
        mini_display_flush(ui->d);
        return ui->cut ? LINE_CUT : LINE_EOF;
    }
    size_t len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    *line = strndup(s, len);
    return *line ? LINE_OK : LINE_EOF;
}

/* Several lines, until one holding only "." or Ctrl-D on an empty line. */
static enum line_result read_lines(struct mini_ui *ui, enum hist h, char **text)
{
    *text = NULL;
    mini_display_printf(ui->d, MINI_STYLE_DIM, "Several lines: end with a line holding only \".\", or Ctrl-D.\n");
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    for (;;) {
        _cleanup_free_ char *line = NULL;
        enum line_result r = read_line(ui, mini_display_utf8(ui->d) ? "\u2026 " : ". ", h, &line);
        if (r == LINE_CUT)
            return LINE_CUT;
        if (r == LINE_EOF || strcmp(line, ".") == 0)
            break;
        if (b.len)
            mini_buf_putc(&b, '\n');
        mini_buf_puts(&b, line);
    }
    *text = mini_buf_steal(&b, NULL);
    return *text ? LINE_OK : LINE_EOF;
}

/* ---- questions ------------------------------------------------------------ */

static void show_help(struct mini_ui *ui)
{
    struct mini_display *d = ui->d;
    mini_display_printf(d, MINI_STYLE_PLAIN, "Current mode: ");
    mini_display_printf(d, MINI_STYLE_BOLD, "%s\n", mini_ui_mode_name(ui->mode));
    static const char *const lines[][2] = {
        { "/y", "yolo mode: the model's commands run without asking" },
        { "/c", "confirm mode: you are asked before the model's commands run" },
        { "/u", "human mode: you type the commands; the model waits" },
        { "/m", "type several lines (end with a line holding only \".\", or Ctrl-D)" },
        { "/h", "this help" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(lines); i++) {
        mini_display_printf(d, MINI_STYLE_KEY, "  %s", lines[i][0]);
        mini_display_printf(d, MINI_STYLE_PLAIN, "  %s\n", lines[i][1]);
    }
    mini_display_printf(d, MINI_STYLE_DIM,
                        "Ctrl-C stops the model or a running command and asks for a comment;\n"
                        "Ctrl-C at that question ends the run (the trajectory is saved).\n");
}

enum answer { ANS_TEXT, ANS_MODE, ANS_CUT, ANS_EOF };

static char *trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    size_t k = strspn(s, " \t");
    memmove(s, s + k, n - k + 1);
    return s;
}

/* Ask a question; /h, /m and the mode commands are handled here.  ANS_TEXT:
 * *text is the answer (trimmed, malloc'd, may be empty); ANS_MODE: the mode
 * was switched (ui->mode); ANS_CUT: Ctrl-C (or SIGTERM); ANS_EOF: Ctrl-D or
 * the end of input. */
static enum answer ask(struct mini_ui *ui, enum hist h, const char *lead, const char *hint, char **text)
{
    *text = NULL;
    for (;;) {
        mini_display_flush(ui->d);
        mini_display_printf(ui->d, MINI_STYLE_QUESTION, "%s", lead);
        if (hint)
            mini_display_printf(ui->d, MINI_STYLE_DIM, " %s", hint);
        mini_display_printf(ui->d, MINI_STYLE_PLAIN, "\n");
        char *line = NULL;
        enum line_result r = read_line(ui, "> ", h, &line);
        if (r != LINE_OK)
            return r == LINE_CUT ? ANS_CUT : ANS_EOF;
        trim(line);
        if (strcmp(line, "/h") == 0) {
            free(line);
            show_help(ui);
            continue;
        }
        if (strcmp(line, "/m") == 0) {
            free(line);
            r = read_lines(ui, h, &line);
            if (r != LINE_OK)
                return r == LINE_CUT ? ANS_CUT : ANS_EOF;
            history_add(ui, h, line);
            *text = line;
            return ANS_TEXT;
        }
        int m = -1;
        if (strcmp(line, "/y") == 0)
            m = MINI_MODE_YOLO;
        else if (strcmp(line, "/c") == 0)
            m = MINI_MODE_CONFIRM;
        else if (strcmp(line, "/u") == 0)
            m = MINI_MODE_HUMAN;
        if (m >= 0) {
            free(line);
            if ((enum mini_mode)m == ui->mode) {
                mini_display_printf(ui->d, MINI_STYLE_BAD, "Already in %s mode.\n", mini_ui_mode_name(ui->mode));
                continue;
            }
            ui->mode = (enum mini_mode)m;
            mini_display_printf(ui->d, MINI_STYLE_PLAIN, "Switched to ");
            mini_display_printf(ui->d, MINI_STYLE_ROLE, "%s", mini_ui_mode_name(ui->mode));
            mini_display_printf(ui->d, MINI_STYLE_PLAIN, " mode.\n");
            return ANS_MODE;
        }
        history_add(ui, h, line);
        *text = line;
        return ANS_TEXT;
    }
}

/* A number for a limit: 0 with *value, 1 when kept (Enter), 2 to stop. */
static int ask_number(struct mini_ui *ui, const char *lead, const char *hint, bool integer, double *value)
{
    for (;;) {
        char *text = NULL;
        enum answer a = ask(ui, HIST_INPUT, lead, hint, &text);
        if (a == ANS_CUT || a == ANS_EOF)
            return 2;
        if (a == ANS_MODE)
            continue;
        const char *s = text[0] == '$' && !integer ? text + 1 : text;
        if (!*s) {
            free(text);
            return 1;
        }
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        bool ok =
            end != s && !*end && errno == 0 && isfinite(v) && v >= 0 && (!integer || (v == floor(v) && v <= 1e15));
        if (ok) {
            free(text);
            *value = v;
            return 0;
        }
        mini_display_printf(ui->d, MINI_STYLE_BAD, "Not %s: ", integer ? "a whole number >= 0" : "an amount >= 0");
        mini_display_text(ui->d, MINI_STYLE_BAD, text, strlen(text));
        mini_display_printf(ui->d, MINI_STYLE_PLAIN, "\n");
        free(text);
    }
}

int mini_ui_ask_task(struct mini_ui *ui, char **task)
{
    *task = NULL;
    if (!ui->el)
        return 1;
    for (;;) {
        char *text = NULL;
        enum answer a = ask(ui, HIST_TASK, "What do you want to do?",
                            "Type the task and press Enter (/m: several lines, /h: help, Ctrl-D: quit)", &text);
        if (a == ANS_CUT)
            return 2;
        if (a == ANS_EOF)
            return 1;
        if (a == ANS_TEXT && *text) {
            *task = text;
            return 0;
        }
        free(text);
    }
}

/* ---- the display of a run ------------------------------------------------- */

/* The message that gives a command's output to the model. */
static bool is_observation(const cJSON *msg)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "raw_output") != NULL;
}

static void show_message(void *arg, const cJSON *msg, long step, double cost)
{
    struct mini_ui *ui = arg;
    ui->step = step;
    ui->cost = cost;
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "actions");
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
    const char *r = cJSON_IsString(role) ? role->valuestring : "";
    if (cJSON_IsArray(actions))
        ui->n_actions = cJSON_GetArraySize(actions);
    if (strcmp(r, "assistant") == 0 || (strcmp(r, "user") == 0 && cJSON_GetArraySize(actions) > 0))
        ui->live_mask = 0, ui->n_ended = ui->n_observed = 0; /* a new step: the model's commands or the person's */
    if (ui->quiet) {
        /* The result; and the commands when the person is asked about them. */
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        if (strcmp(r, "exit") == 0 && cJSON_IsString(content) && *content->valuestring) {
            mini_display_text(ui->d, MINI_STYLE_PLAIN, content->valuestring, strlen(content->valuestring));
            mini_display_flush(ui->d);
        } else if (strcmp(r, "assistant") == 0 && ui->asks && ui->mode != MINI_MODE_YOLO) {
            mini_display_message(ui->d, msg, step, cost, false);
        }
        return;
    }
    bool shown = false;
    if (is_observation(msg)) {
        shown = ui->n_observed < 64 && (ui->live_mask >> ui->n_observed & 1);
        ui->n_observed++;
    }
    mini_display_message(ui->d, msg, step, cost, shown);
}

static void show_query(void *arg, bool start)
{
    struct mini_ui *ui = arg;
    if (ui->quiet)
        return;
    if (start) {
        char label[64];
        snprintf(label, sizeof label, "step %ld, %s mode", ui->step + 1, mini_ui_mode_name(ui->mode));
        mini_display_rule(ui->d, label);
        mini_display_spinner_start(ui->d, "Waiting for the model");
    } else {
        mini_display_spinner_stop(ui->d);
    }
}

static void show_command(void *arg, const char *command, const cJSON *result)
{
    struct mini_ui *ui = arg;
    if (ui->quiet)
        return;
    if (!result) {
        /* The command was just shown; name it again when the step has several. */
        mini_display_command_start(ui->d, command, ui->n_actions > 1);
    } else {
        mini_display_command_end(ui->d, result);
        /* A command that timed out, was interrupted, could not run or was
         * blocked by the policy keeps its observation: it says what
         * happened. */
        const cJSON *extra = cJSON_GetObjectItemCaseSensitive(result, "extra");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(extra, "exception_type");
        const cJSON *pol =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(extra, "policy"), "decision");
        bool blocked = cJSON_IsString(pol) && strcmp(pol->valuestring, "deny") == 0;
        if (mini_display_live(ui->d) && !cJSON_IsString(type) && !blocked && ui->n_ended < 64)
            ui->live_mask |= (uint64_t)1 << ui->n_ended;
        ui->n_ended++;
    }
}

static void show_output(void *arg, const char *data, size_t len)
{
    struct mini_ui *ui = arg;
    if (!ui->quiet)
        mini_display_output(ui->d, data, len);
}

void mini_ui_note(struct mini_ui *ui, const char *line) { mini_display_note(ui->d, stderr, line); }

/* ---- the questions of a step ---------------------------------------------- */

/* What the person decides about the model's commands. */
enum confirm {
    CONFIRM_RUN,       /* run them */
    CONFIRM_REJECT,    /* do not run; *comment (may be NULL) goes to the model */
    CONFIRM_INTERRUPT, /* do not run; Ctrl-C at the question (or nobody to ask) */
};

/* Whether the person is asked about cmd: what mini_policy_decide leaves
 * to the person (a rule's `ask`, or no rule and no policy.default given;
 * everything without a policy).  A denied command is not asked about: it
 * is blocked when its turn comes. */
static bool needs_person(struct mini_ui *ui, const struct mini_policy *p, const char *cmd, bool *denied)
{
    *denied = false;
    if (!cmd)
        return true;
    struct mini_policy_decision d;
    struct mini_err e;
    if (mini_policy_decide(p, cmd, NULL, &d, &e) < 0) {
        mini_policy_decision_free(&d);
        return true; /* out of memory: ask rather than run unasked */
    }
    const struct mini_policy_match *m = &d.match;
    *denied = !d.allow && !d.ask_person;
    if (*denied) {
        mini_display_printf(ui->d, MINI_STYLE_DIM, "(blocked by %s: %s)\n", m->rule, m->reason ? m->reason : "deny");
    } else if (m->verdict == MINI_VERDICT_ASK) {
        mini_display_printf(ui->d, MINI_STYLE_DIM, "(%s asks you%s%s)\n", m->rule, m->reason ? ": " : "",
                            m->reason ? m->reason : "");
    }
    bool ask = d.ask_person;
    mini_policy_decision_free(&d);
    return ask;
}

static enum confirm ask_confirm(struct mini_ui *ui, const struct mini_policy *policy, const cJSON *actions,
                                char **comment)
{
    *comment = NULL;
    if (ui->mode == MINI_MODE_YOLO)
        return CONFIRM_RUN;
    int n = 0, ask_n = 0, denied_n = 0;
    const cJSON *act;
    cJSON_ArrayForEach (act, actions) {
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(act, "command");
        bool denied;
        if (needs_person(ui, policy, cJSON_IsString(cmd) ? cmd->valuestring : NULL, &denied))
            ask_n++;
        denied_n += denied;
        n++;
    }
    if (ask_n == 0 && ui->mode == MINI_MODE_CONFIRM) {
        if (denied_n < n)
            mini_display_printf(ui->d, MINI_STYLE_DIM, "(whitelisted: runs without asking)\n");
        return CONFIRM_RUN;
    }
    /* Never run unasked: without anyone to ask, the run stops. */
    if (!ui->asks)
        return CONFIRM_INTERRUPT;
    char lead[64];
    snprintf(lead, sizeof lead, n == 1 ? "Run this command?" : "Run these %d commands?", n);
    for (;;) {
        char *text = NULL;
        switch (ask(ui, HIST_INPUT, lead, "Enter runs; or type why not (sent to the model); /h: help", &text)) {
        case ANS_TEXT:
            if (!*text) {
                free(text);
                return CONFIRM_RUN;
            }
            *comment = text;
            return CONFIRM_REJECT;
        case ANS_MODE:
            if (ui->mode == MINI_MODE_YOLO)
                return CONFIRM_RUN;
            if (ui->mode == MINI_MODE_HUMAN)
                return CONFIRM_REJECT;
            continue;
        case ANS_CUT:
        case ANS_EOF: return CONFIRM_INTERRUPT;
        }
    }
}

/* Whether the step's command comes from the person (human mode). */
enum human {
    HUMAN_NONE,      /* no: the model is asked */
    HUMAN_COMMAND,   /* yes: *command (malloc'd) is the step's action */
    HUMAN_INTERRUPT, /* Ctrl-C at the question (or nobody to ask) */
};

static enum human ask_command(struct mini_ui *ui, char **command)
{
    *command = NULL;
    if (ui->mode != MINI_MODE_HUMAN)
        return HUMAN_NONE;
    if (!ui->asks)
        return HUMAN_INTERRUPT;
    char label[64];
    snprintf(label, sizeof label, "your turn, %s mode", mini_ui_mode_name(ui->mode));
    mini_display_rule(ui->d, label);
    for (;;) {
        char *text = NULL;
        switch (ask(ui, HIST_INPUT, "Your command?",
                    "It runs like the model's; /c or /y hands back to the model, /h: help", &text)) {
        case ANS_TEXT:
            if (*text) {
                *command = text;
                return HUMAN_COMMAND;
            }
            free(text);
            continue;
        case ANS_MODE:
            if (ui->mode != MINI_MODE_HUMAN)
                return HUMAN_NONE;
            continue;
        case ANS_CUT:
        case ANS_EOF: return HUMAN_INTERRUPT;
        }
    }
}

static bool over(long steps, double cost, long step_limit, double cost_limit)
{
    return (step_limit > 0 && step_limit <= steps) || (cost_limit > 0 && cost_limit <= cost);
}

/* A step or cost limit was reached: true when the person raised the
 * limits enough to go on. */
static bool ask_limits(struct mini_ui *ui, long *step_limit, double *cost_limit)
{
    if (!ui->asks)
        return false;
    struct mini_display *d = ui->d;
    mini_display_flush(d);
    mini_display_printf(d, MINI_STYLE_QUESTION, "\nLimits reached. ");
    mini_display_printf(d, MINI_STYLE_PLAIN, "Limits: %ld steps, $%.2f. Spent: %ld steps, $%.4f.\n", *step_limit,
                        *cost_limit, ui->step, ui->cost);
    for (;;) {
        long steps = *step_limit;
        double cost = *cost_limit, v = 0;
        bool changed = false;
        char hint[96];
        snprintf(hint, sizeof hint, "(Enter keeps %ld; 0: no limit)", steps);
        int r = ask_number(ui, "New step limit?", hint, true, &v);
        if (r == 2)
            break;
        if (r == 0) {
            changed |= (long)v != steps;
            steps = (long)v;
        }
        snprintf(hint, sizeof hint, "(Enter keeps $%.2f; 0: no limit)", cost);
        r = ask_number(ui, "New cost limit in dollars?", hint, false, &v);
        if (r == 2)
            break;
        if (r == 0) {
            changed |= v != cost;
            cost = v;
        }
        if (!over(ui->step, ui->cost, steps, cost)) {
            *step_limit = steps;
            *cost_limit = cost;
            mini_display_printf(d, MINI_STYLE_PLAIN, "Going on with limits of %ld steps and $%.2f (0: none).\n", steps,
                                cost);
            return true;
        }
        if (!changed)
            break;
        mini_display_printf(d, MINI_STYLE_BAD, "Still over a limit (%ld steps, $%.2f); Enter twice stops.\n", steps,
                            cost);
    }
    mini_display_printf(d, MINI_STYLE_PLAIN, "Stopping at the limit.\n");
    return false;
}

/* The model submitted: NULL ends the run; otherwise it goes on, with the
 * text (malloc'd) as a new task unless it is empty. */
static char *ask_new_task(struct mini_ui *ui)
{
    if (!ui->asks || !ui->confirm_exit)
        return NULL;
    mini_display_flush(ui->d);
    for (;;) {
        char *text = NULL;
        switch (ask(ui, HIST_TASK, "\nThe model wants to finish.",
                    "Enter ends the run; or type a new task to go on (/h: help)", &text)) {
        case ANS_TEXT:
            if (*text)
                return text;
            free(text);
            return NULL;
        case ANS_MODE:
            if (ui->mode == MINI_MODE_HUMAN)
                return strdup("");
            continue;
        case ANS_CUT:
        case ANS_EOF: return NULL;
        }
    }
}

/* After Ctrl-C: NULL ends the run; otherwise it goes on, with the text
 * (malloc'd) sent to the model unless it is empty. */
static char *ask_comment(struct mini_ui *ui)
{
    if (!ui->asks)
        return NULL;
    mini_display_spinner_stop(ui->d);
    mini_display_flush(ui->d);
    char *text = NULL;
    switch (ask(ui, HIST_INPUT, "\nInterrupted.",
                "Type a comment for the model, or Enter to go on; Ctrl-C again ends the run (/h: help)", &text)) {
    case ANS_TEXT: return text;
    case ANS_MODE: return strdup("");
    case ANS_CUT:
    case ANS_EOF: break;
    }
    mini_display_printf(ui->d, MINI_STYLE_PLAIN, "Ending the run.\n");
    return NULL;
}

/* ---- the interactive agent (mini-swe-agent's InteractiveAgent) ------------ */

static cJSON *text_message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

/* A user message from the person, marked with what it is
 * (extra.interrupt_type, as mini-swe-agent marks them). */
static __attribute__((format(printf, 2, 3))) cJSON *user_note(const char *type, const char *fmt, ...)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    mini_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cJSON *m = text_message("user", b.data ? b.data : "");
    cJSON *extra = cJSON_AddObjectToObject(m, "extra");
    cJSON_AddStringToObject(extra, "interrupt_type", type);
    return m;
}

/* Ctrl-C: the person may comment and go on, unless the run was ended
 * (SIGTERM, SIGHUP). */
static struct mini_flow ui_step(struct mini_agent *a, struct mini_err *e)
{
    struct mini_flow f = mini_agent_step(a, e);
    if (f.kind != MINI_FLOW_INTERRUPTED || a->terminate)
        return f;
    /* What the step brought is shown before the question. */
    mini_agent_add_messages(a, &f);
    _cleanup_free_ char *comment = ask_comment(a->ops_arg);
    if (!comment || a->terminate)
        return f;
    a->interrupt = 0;
    if (!*comment)
        return MINI_FLOW(MINI_FLOW_USER);
    return mini_flow_of(MINI_FLOW_USER,
                        user_note("UserInterruption", "The user interrupted you and said: %s", comment));
}

/* Human mode: the person's command is the step's action, carried by a user
 * message (mini-swe-agent's shape); its output comes back as a user
 * observation.  Otherwise the model, and new limits when it reached one. */
static struct mini_flow ui_query(struct mini_agent *a, const cJSON **msg, struct mini_err *e)
{
    struct mini_ui *ui = a->ops_arg;
    _cleanup_free_ char *command = NULL;
    *msg = ui->own_command = NULL;
    switch (ask_command(ui, &command)) {
    case HUMAN_COMMAND: {
        _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
        if (mini_buf_printf(&text, "The user ran this command:\n```bash\n%s\n```", command) < 0) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            return MINI_FLOW(MINI_FLOW_ERROR);
        }
        cJSON *m = text_message("user", text.data);
        cJSON *act = cJSON_CreateObject();
        cJSON_AddStringToObject(act, "command", command);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(m, "extra"), "actions"), act);
        mini_agent_add_message(a, m);
        *msg = ui->own_command = m;
        return MINI_FLOW(MINI_FLOW_NONE);
    }
    case HUMAN_INTERRUPT: a->interrupt = 1; return MINI_FLOW(MINI_FLOW_INTERRUPTED);
    case HUMAN_NONE: break;
    }
    for (;;) {
        struct mini_flow f = mini_agent_query(a, msg, e);
        if (f.kind != MINI_FLOW_LIMITS_EXCEEDED || !ask_limits(ui, &a->step_limit, &a->cost_limit))
            return f;
        mini_flow_clear(&f);
    }
}

/* The model's commands, not run: every tool call is answered as not
 * executed, then the person's reason goes to the model, or the Ctrl-C at
 * the question is handled. */
static struct mini_flow not_run(struct mini_agent *a, const cJSON *msg, enum confirm c, const char *comment,
                                struct mini_err *e)
{
    if (c == CONFIRM_INTERRUPT)
        a->interrupt = 1;
    if (mini_agent_observe(a, msg, NULL, e) < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    if (c == CONFIRM_INTERRUPT)
        return MINI_FLOW(MINI_FLOW_NONE);
    return mini_flow_of(MINI_FLOW_USER,
                        user_note("UserRejection", "Command not executed. The user rejected your command.%s%s",
                                  comment && *comment ? "\nThe user said: " : "", comment ? comment : ""));
}

/* The model's commands run once the person agrees (the person's own in
 * human mode run at once); a submission ends the run unless the person
 * has a new task. */
static struct mini_flow ui_execute_actions(struct mini_agent *a, const cJSON *msg, struct mini_err *e)
{
    struct mini_ui *ui = a->ops_arg;
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "actions");
    /* Nothing to ask after a Ctrl-C (nothing runs then), nor for no commands. */
    if (msg != ui->own_command && !a->interrupt && cJSON_GetArraySize(actions) > 0) {
        _cleanup_free_ char *comment = NULL;
        enum confirm c = ask_confirm(ui, a->policy, actions, &comment);
        if (c != CONFIRM_RUN) {
            mini_agent_audit_rejected(a, msg, c == CONFIRM_INTERRUPT ? "interrupted at the question" : comment);
            return not_run(a, msg, c, comment, e);
        }
        /* The person said run: that answers the policy's `ask` too. */
        a->person_approved = ui->mode != MINI_MODE_YOLO;
    }
    /* The person's own command (human mode) is theirs: ask is answered. */
    if (msg == ui->own_command)
        a->person_approved = true;
    _cleanup_cjson_ cJSON *outputs = cJSON_CreateArray();
    _cleanup_free_ char *submission = NULL, *more = NULL;
    if (!outputs) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return MINI_FLOW(MINI_FLOW_ERROR);
    }
    int ran = mini_agent_run_actions(a, msg, outputs, &submission, e);
    a->person_approved = false;
    if (ran < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    if (submission)
        more = ask_new_task(ui);
    /* The outputs of the commands that ran before a submission are
     * observed (mini-swe-agent's finally: block); the submitting command
     * has none, so its tool call and those after it are answered as not
     * executed.  Then the run ends, or goes on with the new task. */
    if (mini_agent_observe(a, msg, outputs, e) < 0)
        return MINI_FLOW(MINI_FLOW_ERROR);
    if (submission && !more)
        return mini_agent_submitted(submission);
    if (more && *more)
        return mini_flow_of(MINI_FLOW_USER, user_note("UserNewTask", "The user has a new task for you:\n\n%s", more));
    return MINI_FLOW(MINI_FLOW_NONE);
}

static const struct mini_agent_ops ui_ops = {
    .step = ui_step,
    .query = ui_query,
    .execute_actions = ui_execute_actions,
    .on_message = show_message,
    .on_query = show_query,
    .on_command = show_command,
    .on_output = show_output,
};

void mini_ui_attach(struct mini_ui *ui, struct mini_agent *a)
{
    a->ops = &ui_ops;
    a->ops_arg = ui;
}

/* ---- setting up ----------------------------------------------------------- */

static int setup_editline(struct mini_ui *ui, FILE *out, const char *history_dir)
{
    /* The questions go to the terminal: stdout when it is one, else stderr. */
    FILE *eout = isatty(fileno(out)) ? out : isatty(STDERR_FILENO) ? stderr : out;
    ui->el = el_init("mini", stdin, eout, stderr);
    if (!ui->el)
        return -1;
    el_set(ui->el, EL_CLIENTDATA, ui);
    el_set(ui->el, EL_EDITOR, "emacs");
    el_set(ui->el, EL_PROMPT_ESC, prompt_fn, '\1');
    el_set(ui->el, EL_GETCFN, read_char);
    for (int h = 0; h < HIST_COUNT; h++) {
        HistEvent ev;
        if (!(ui->hist[h] = history_init()))
            return -1;
        history(ui->hist[h], &ev, H_SETSIZE, HISTORY_SIZE);
        history(ui->hist[h], &ev, H_SETUNIQUE, 1);
        if (history_dir && asprintf(&ui->hist_path[h], "%s/%s", history_dir, hist_file[h]) < 0)
            ui->hist_path[h] = NULL;
        if (ui->hist_path[h])
            history(ui->hist[h], &ev, H_LOAD, ui->hist_path[h]);
    }
    el_set(ui->el, EL_HIST, history, ui->hist[HIST_INPUT]);
    /* Ctrl-R searches the history, as in bash. */
    el_set(ui->el, EL_BIND, "^R", "em-inc-search-prev", NULL);
    /* The person's own ~/.editrc. */
    el_source(ui->el, NULL);
    struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    ui->winch_installed = sigaction(SIGWINCH, &sa, &ui->old_winch) == 0;
    return 0;
}

extern char **environ;

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && strncasecmp(s + n - k, suffix, k) == 0;
}

/* What is never shown: API keys and other credentials mini holds. */
static void add_secrets(struct mini_display *d, const cJSON *model)
{
    const cJSON *key =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(model, "model_kwargs"), "api_key");
    if (cJSON_IsString(key))
        mini_display_add_secret(d, key->valuestring);
    for (char **v = environ; v && *v; v++) {
        const char *eq = strchr(*v, '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - *v);
        if (ends_with(*v, n, "API_KEY") || ends_with(*v, n, "_TOKEN") || ends_with(*v, n, "_SECRET") ||
            ends_with(*v, n, "_PASSWORD"))
            mini_display_add_secret(d, eq + 1);
    }
}

static void ui_freep(struct mini_ui **ui) { mini_ui_free(*ui); }

struct mini_ui *mini_ui_new(const struct mini_ui_opts *o, struct mini_err *e)
{
    _cleanup_(ui_freep) struct mini_ui *ui = calloc(1, sizeof *ui);
    if (!ui) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(o->agent, "mode");
    int m = mini_ui_parse_mode(cJSON_IsString(mode) ? mode->valuestring : "confirm");
    if (m < 0) {
        mini_err_set(e, MINI_E_CONFIG, "agent.mode: must be human, confirm or yolo");
        return NULL;
    }
    /* The default agent class is mini-swe-agent's DefaultAgent: it never asks. */
    bool dflt = default_class(o->agent);
    ui->mode = dflt ? MINI_MODE_YOLO : (enum mini_mode)m;
    ui->asks = o->interactive && !dflt;
    ui->quiet = o->quiet;
    const cJSON *ce = cJSON_GetObjectItemCaseSensitive(o->agent, "confirm_exit");
    ui->confirm_exit = !cJSON_IsFalse(ce);
    if (!(ui->d = mini_display_new(o->out, o->color, isatty(fileno(o->out))))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    add_secrets(ui->d, o->model);
    if (o->interactive && setup_editline(ui, o->out, o->history_dir) < 0) {
        mini_err_set(e, MINI_E_IO, "setting up line editing (libedit) on the terminal failed");
        return NULL;
    }
    return TAKE_PTR(ui);
}

void mini_ui_free(struct mini_ui *ui)
{
    if (!ui)
        return;
    if (ui->winch_installed)
        sigaction(SIGWINCH, &ui->old_winch, NULL);
    if (ui->el)
        el_end(ui->el);
    for (int h = 0; h < HIST_COUNT; h++) {
        if (ui->hist[h])
            history_end(ui->hist[h]);
        free(ui->hist_path[h]);
    }
    mini_display_free(ui->d);
    free(ui);
}
