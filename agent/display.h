/* How mini shows a run to the person watching it: each message with its
 * role, step number and running cost, the model's commands as highlighted
 * blocks, a command's output live while it runs, a spinner while the model
 * thinks.
 *
 * Colours (ANSI) only when the output is a terminal and NO_COLOR is not
 * set (no-color.org: set and not empty); the spinner only on a terminal;
 * box-drawing characters only in a UTF-8 locale.  Whatever the model or a
 * command prints is shown with its control characters made visible
 * (ESC as ^[, ...), so that it cannot move the cursor, retitle the
 * window or reach the clipboard; tab, newline and carriage return pass.
 * Registered secrets (API keys) are shown as ***. */
#ifndef MINI_AGENT_DISPLAY_H
#define MINI_AGENT_DISPLAY_H

#include <stdbool.h>
#include <stdio.h>
#include <cjson/cJSON.h>

struct mini_display;

/* Styles of the things shown. */
enum mini_style {
    MINI_STYLE_PLAIN = 0,
    MINI_STYLE_BOLD,
    MINI_STYLE_DIM,
    MINI_STYLE_ASSISTANT, /* the model's header */
    MINI_STYLE_ROLE,      /* other messages' headers */
    MINI_STYLE_QUESTION,  /* what the person is asked */
    MINI_STYLE_KEY,       /* a key or a slash command in a hint */
    MINI_STYLE_GOOD,
    MINI_STYLE_BAD,
    MINI_STYLE_BAR, /* the bar beside a command */
};

/* `out` is where everything goes (borrowed).  `color`: use ANSI colours;
 * `live`: out is a terminal (spinner, rule width, a command's output as it
 * comes).  Not live (a pipe, a CI log): no "running" line and no streamed
 * output, each command's output is shown once, as its observation
 * message.  TERM=dumb: no cursor control (no spinner). */
struct mini_display *mini_display_new(FILE *out, bool color, bool live);
void mini_display_free(struct mini_display *d);
/* Never show this text (an API key): it is replaced by *** wherever it
 * appears, in messages and in streamed output.  Values shorter than 8
 * bytes are ignored. */
void mini_display_add_secret(struct mini_display *d, const char *value);

bool mini_display_utf8(const struct mini_display *d);
bool mini_display_live(const struct mini_display *d);
/* "mini: LINE" on err (stderr), the spinner's line cleared first. */
void mini_display_note(struct mini_display *d, FILE *err, const char *line);
/* The escape sequence starting a style ("" without colours), and the one
 * ending it. */
const char *mini_display_sgr(const struct mini_display *d, enum mini_style s);
const char *mini_display_reset(const struct mini_display *d);

/* printf in a style (the text is mini's own, not sanitised). */
void mini_display_printf(struct mini_display *d, enum mini_style s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Text from outside (the model, a command), control characters made visible. */
void mini_display_text(struct mini_display *d, enum mini_style s, const char *text, size_t len);

/* A horizontal rule across the terminal, with a label at its right end. */
void mini_display_rule(struct mini_display *d, const char *label);
/* One message of the trajectory; output_shown: it is the observation of a
 * command whose output was just shown live, so only its title is. */
void mini_display_message(struct mini_display *d, const cJSON *msg, long step, double cost, bool output_shown);

/* A command starts; its output, as it arrives; it has ended (result). */
void mini_display_command_start(struct mini_display *d, const char *command, bool show_command);
void mini_display_output(struct mini_display *d, const char *data, size_t len);
void mini_display_command_end(struct mini_display *d, const cJSON *result);

/* A spinner with a label and the seconds spent, redrawn by a thread until
 * stopped (on a terminal only; elsewhere nothing). */
void mini_display_spinner_start(struct mini_display *d, const char *label);
void mini_display_spinner_stop(struct mini_display *d);

/* End a line of streamed text if one is open, and flush. */
void mini_display_flush(struct mini_display *d);

#endif
