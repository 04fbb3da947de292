/* mini inspect: what its parts share (inspect.h is the entry point).
 *
 *   load.c   finding trajectory files, summary.json, reading one file into
 *            a struct insp_traj (every format below), the one-line errors
 *   clean.c  untrusted text made safe to show: valid UTF-8, control
 *            characters visible (^[ ...), done once at load time so that
 *            the three outputs below only ever see clean text
 *   page.c   a step as lines (role headers, text, commands, notes), shared
 *            by the plain text and the terminal browser
 *   text.c   the plain-text rendering (not a terminal; --list)
 *   html.c   the self-contained HTML report (--html)
 *   tui.c    the full-screen browser (ncurses)
 *   inspect.c the command line
 *
 * Formats read: mini's trajectories (mini-swe-agent-1.1: {"info",
 * "messages", "trajectory_format"}, "instance_id" at the top in batch
 * outputs), mini-swe-agent's own (the same, and older bare lists of
 * messages), with message contents as strings, lists of parts (text,
 * tool_use, tool_result), OpenAI tool_calls and Responses API outputs. */
#ifndef MINI_INSPECT_INTERNAL_H
#define MINI_INSPECT_INTERNAL_H

#include "mini/buf.h"
#include "mini/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bounds: a trajectory file's size, the files of a folder, how deep a
 * folder is searched. */
#define INSP_MAX_FILE_BYTES ((size_t)256 << 20)
#define INSP_MAX_FILES 100000
#define INSP_MAX_DEPTH 32

/* One message, its strings clean (clean.c). */
struct insp_msg {
    char *role;      /* "assistant", "user", "tool", "system", "exit", ... */
    char *text;      /* the content as text ("" when none) */
    char *reasoning; /* the model's reasoning_content, or NULL */
    char *note;      /* "returncode 1", "format error", "Submitted", ... or NULL */
    char **commands; /* the actions */
    size_t n_commands;
};

/* One trajectory: its summary (always) and, once opened, its messages. */
struct insp_traj {
    char *path;  /* the file, as found */
    char *id;    /* instance_id, else the file's name without .traj.json */
    char *error; /* the one-line reason it could not be read, or NULL */
    char *exit_status, *submission, *model, *task, *format;
    double cost;
    bool has_cost;
    int resolved;   /* from summary.json: 1 resolved, 0 not, -1 not verified / unknown */
    size_t n_steps; /* step pages (a model turn and what followed it) */
    bool loaded;    /* msgs below are there */
    struct insp_msg *msgs;
    size_t n_msgs;
    size_t n_prompt; /* messages before the first step: the system and instance prompts */
    size_t *step_start; /* n_steps indexes into msgs */
};

struct insp_set {
    struct insp_traj *t;
    size_t n;
    bool folder; /* PATH was a folder */
    size_t n_errors;
};

/* Find the trajectories at path (a file, or a folder searched
 * recursively for *.traj.json) and read each one's summary; with
 * summary.json files of mini batch in the folder, their verify results.
 * A file that cannot be read gets its error (one line) and stays in the
 * set.  0, or -1 with e filled when path itself is wrong or nothing is
 * found. */
int mini_insp_collect(const char *path, struct insp_set *set, struct mini_err *e);
void mini_insp_set_free(struct insp_set *set);
/* Read t's messages (again), or fill t->error.  0 or -1. */
int mini_insp_open(struct insp_traj *t);
/* Drop t's messages (its summary stays). */
void mini_insp_close(struct insp_traj *t);
/* Read one trajectory from text (the fuzz target's entry too); the
 * summary fields, and with full the messages.  0, or -1 with t->error. */
int mini_insp_parse(struct insp_traj *t, const char *data, size_t len, bool full);
void mini_insp_traj_clear(struct insp_traj *t);

/* clean.c: append the displayable form of untrusted p[0..n) to out:
 * valid UTF-8 (invalid bytes become U+FFFD), "\r\n" as "\n", every other
 * C0 control but tab and newline in caret notation (ESC as ^[, DEL as
 * ^?), C1 controls, bidirectional overrides and line separators as
 * \u0085-style text.  0, or -1 (out of memory). */
int mini_insp_clean_append(struct mini_buf *out, const char *p, size_t n);
/* The same into a new string (NULL when out of memory). */
char *mini_insp_clean(const char *p, size_t n);
/* The code point of the UTF-8 sequence at p (valid, n > 0 bytes left);
 * its length in *len. */
uint32_t mini_insp_utf8_decode(const char *p, size_t n, size_t *len);
/* Replace, in JSON text, the escapes that strict parsing refuses or that
 * decode to something not UTF-8: \u0000 becomes \u2400 (the visible ␀)
 * and an unpaired surrogate \ud800..\udfff becomes \ufffd; same length,
 * so byte offsets in errors still hold. */
void mini_insp_json_fix_escapes(char *p, size_t n);

/* page.c: a step's lines. */
enum insp_style {
    INSP_TEXT = 0,
    INSP_HEAD,   /* a message's header: "ASSISTANT", "TOOL (returncode 0)" */
    INSP_CMD,    /* a command the model asked for */
    INSP_DIM,    /* the prompts, reasoning */
};
struct insp_line {
    const char *s; /* not NUL-terminated: n bytes */
    size_t n;
    unsigned char style;
    const char *prefix; /* drawn before the line and as indentation of its wrapped rows */
};
struct insp_page {
    struct insp_line *lines;
    size_t n, cap;
    char **own; /* header texts made for this page */
    size_t n_own;
};
/* Build page `step` of t (0: the prompts, 1..n_steps: the steps). 0 or -1. */
int mini_insp_page_build(struct insp_page *p, const struct insp_traj *t, size_t step);
void mini_insp_page_free(struct insp_page *p);
/* The title of step `step` ("Prompts", "Step 3/12"). */
void mini_insp_step_title(char *buf, size_t cap, const struct insp_traj *t, size_t step);

/* Formatting shared by the outputs. */
void mini_insp_cost_text(char *buf, size_t cap, const struct insp_traj *t);
const char *mini_insp_resolved_text(const struct insp_traj *t);
/* The first line of the task, for headers. */
size_t mini_insp_first_line(const char *s);

/* text.c */
int mini_insp_text_render(FILE *out, struct insp_set *set, bool list_only, bool prompts);
/* html.c */
int mini_insp_html_render(FILE *out, struct insp_set *set, bool prompts);
/* tui.c: 0, or -1 with e filled when the terminal cannot be used. */
int mini_insp_tui_run(struct insp_set *set, struct mini_err *e);

#endif
