/* Rendering of a run for the person watching it (display.h). */
#include "display.h"
#include "mini/buf.h"
#include "mini/clock.h"

#include <langinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct mini_display {
    FILE *out;
    bool color;
    bool live;
    bool escapes; /* cursor control (the spinner, clearing a line): live and TERM is not dumb */
    bool utf8;
    /* Text shown through mini_display_text / _output. */
    bool bol;     /* at the start of a line */
    bool held_c2; /* a 0xC2 byte waits for the next one (C1 controls) */
    /* Secrets never shown (API keys): replaced by ***.  Streamed output
     * that may be the start of one waits in `hold`. */
    char **secrets;
    size_t n_secrets;
    struct mini_buf hold;
    /* The running command. */
    struct timespec cmd_start;
    /* The spinner. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    bool spinning;
    bool stop;
    char *label;
    struct timespec spin_start;
};

struct mini_display *mini_display_new(FILE *out, bool color, bool live)
{
    struct mini_display *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->out = out;
    d->color = color;
    d->live = live;
    const char *term = getenv("TERM");
    d->escapes = live && !(term && strcmp(term, "dumb") == 0);
    const char *cs = nl_langinfo(CODESET);
    d->utf8 = cs && strcmp(cs, "UTF-8") == 0;
    d->bol = true;
    pthread_mutex_init(&d->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cond, &ca);
    pthread_condattr_destroy(&ca);
    return d;
}

void mini_display_add_secret(struct mini_display *d, const char *value)
{
    if (!value || strlen(value) < 8)
        return;
    for (size_t i = 0; i < d->n_secrets; i++)
        if (strcmp(d->secrets[i], value) == 0)
            return;
    char **n = realloc(d->secrets, (d->n_secrets + 1) * sizeof *n);
    if (!n)
        return;
    d->secrets = n;
    if ((n[d->n_secrets] = strdup(value)))
        d->n_secrets++;
}

void mini_display_free(struct mini_display *d)
{
    if (!d)
        return;
    mini_display_spinner_stop(d);
    for (size_t i = 0; i < d->n_secrets; i++)
        free(d->secrets[i]);
    free(d->secrets);
    mini_buf_free(&d->hold);
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

bool mini_display_utf8(const struct mini_display *d) { return d->utf8; }

bool mini_display_live(const struct mini_display *d) { return d->live; }

void mini_display_note(struct mini_display *d, FILE *err, const char *line)
{
    /* The spinner's line on the same terminal is cleared first (it is drawn
     * again within 100 ms). */
    flockfile(d->out);
    if (d->spinning) {
        fputs("\r\033[K", d->out);
        fflush(d->out);
    }
    fprintf(err, "mini: %s\n", line);
    fflush(err);
    funlockfile(d->out);
}

const char *mini_display_sgr(const struct mini_display *d, enum mini_style s)
{
    if (!d->color)
        return "";
    switch (s) {
    case MINI_STYLE_PLAIN: return "";
    case MINI_STYLE_BOLD: return "\033[1m";
    case MINI_STYLE_DIM: return "\033[2m";
    case MINI_STYLE_ASSISTANT: return "\033[1;31m";
    case MINI_STYLE_ROLE: return "\033[1;32m";
    case MINI_STYLE_QUESTION: return "\033[1;33m";
    case MINI_STYLE_KEY: return "\033[1;36m";
    case MINI_STYLE_GOOD: return "\033[32m";
    case MINI_STYLE_BAD: return "\033[1;31m";
    case MINI_STYLE_BAR: return "\033[1;33m";
    }
    return "";
}

const char *mini_display_reset(const struct mini_display *d) { return d->color ? "\033[0m" : ""; }

static int columns(const struct mini_display *d)
{
    struct winsize ws;
    if (d->live && ioctl(fileno(d->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col > 200 ? 200 : ws.ws_col;
    return 80;
}

/* Bytes of outside text, with control characters made visible.  Called
 * with the stream locked. */
static void put_text(struct mini_display *d, const char *s, size_t n)
{
    FILE *f = d->out;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (d->held_c2) {
            d->held_c2 = false;
            if (c >= 0x80 && c <= 0x9f) {
                /* A C1 control (U+0080..U+009F): some terminals obey them. */
                fprintf(f, "\\u%04x", c);
                d->bol = false;
                continue;
            }
            putc_unlocked(0xc2, f);
        }
        if (c == 0xc2) {
            d->held_c2 = true;
            continue;
        }
        if (c == '\n' || c == '\t' || c == '\r') {
            putc_unlocked(c, f);
            d->bol = c == '\n';
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            putc_unlocked('^', f);
            putc_unlocked(c == 0x7f ? '?' : c + 0x40, f);
        } else {
            putc_unlocked(c, f);
        }
        d->bol = false;
    }
}

/* The length of the secret that starts at s, or 0. */
static size_t secret_at(const struct mini_display *d, const char *s, size_t n)
{
    for (size_t i = 0; i < d->n_secrets; i++) {
        size_t k = strlen(d->secrets[i]);
        if (k <= n && memcmp(s, d->secrets[i], k) == 0)
            return k;
    }
    return 0;
}

/* Outside text with the secrets replaced. */
static void put_redacted(struct mini_display *d, const char *s, size_t n)
{
    size_t start = 0, i = 0;
    while (i < n) {
        size_t k = d->n_secrets ? secret_at(d, s + i, n - i) : 0;
        if (!k) {
            i++;
            continue;
        }
        put_text(d, s + start, i - start);
        put_text(d, "***", 3);
        i += k;
        start = i;
    }
    put_text(d, s + start, n - start);
}

/* How many bytes at the end of s could be the start of a secret. */
static size_t partial_secret(const struct mini_display *d, const char *s, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < d->n_secrets; i++) {
        size_t k = strlen(d->secrets[i]) - 1;
        for (size_t l = k < n ? k : n; l > best; l--)
            if (memcmp(s + n - l, d->secrets[i], l) == 0) {
                best = l;
                break;
            }
    }
    return best;
}

static void release_hold(struct mini_display *d)
{
    if (d->hold.len) {
        put_redacted(d, d->hold.data, d->hold.len);
        mini_buf_reset(&d->hold);
    }
}

static void end_text(struct mini_display *d)
{
    release_hold(d);
    if (d->held_c2) {
        putc_unlocked(0xc2, d->out);
        d->held_c2 = false;
        d->bol = false;
    }
}

void mini_display_text(struct mini_display *d, enum mini_style s, const char *text, size_t len)
{
    flockfile(d->out);
    release_hold(d);
    fputs(mini_display_sgr(d, s), d->out);
    put_redacted(d, text, len);
    end_text(d);
    if (s != MINI_STYLE_PLAIN)
        fputs(mini_display_reset(d), d->out);
    funlockfile(d->out);
}

void mini_display_printf(struct mini_display *d, enum mini_style s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    flockfile(d->out);
    release_hold(d);
    fputs(mini_display_sgr(d, s), d->out);
    vfprintf(d->out, fmt, ap);
    if (s != MINI_STYLE_PLAIN)
        fputs(mini_display_reset(d), d->out);
    size_t n = strlen(fmt);
    if (n)
        d->bol = fmt[n - 1] == '\n';
    funlockfile(d->out);
    va_end(ap);
}

void mini_display_flush(struct mini_display *d)
{
    flockfile(d->out);
    end_text(d);
    if (!d->bol)
        putc_unlocked('\n', d->out);
    d->bol = true;
    fflush(d->out);
    funlockfile(d->out);
}

void mini_display_rule(struct mini_display *d, const char *label)
{
    mini_display_flush(d);
    int width = columns(d);
    int llen = label ? (int)strlen(label) + 2 : 0;
    int n = width - llen - 3 > 3 ? width - llen - 3 : 3;
    const char *h = d->utf8 ? "\u2500" : "-";
    flockfile(d->out);
    fputs(mini_display_sgr(d, MINI_STYLE_DIM), d->out);
    for (int i = 0; i < n; i++)
        fputs(h, d->out);
    if (label)
        fprintf(d->out, " %s %s%s%s", label, h, h, h);
    fputs(mini_display_reset(d), d->out);
    putc_unlocked('\n', d->out);
    d->bol = true;
    fflush(d->out);
    funlockfile(d->out);
}

/* The text of a message's content: a string, or the text parts of a list. */
static void show_content(struct mini_display *d, const cJSON *content, enum mini_style s)
{
    if (cJSON_IsString(content)) {
        mini_display_text(d, s, content->valuestring, strlen(content->valuestring));
    } else if (cJSON_IsArray(content)) {
        const cJSON *part;
        cJSON_ArrayForEach (part, content) {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
            if (cJSON_IsString(t))
                mini_display_text(d, s, t->valuestring, strlen(t->valuestring));
            else if (cJSON_IsString(type))
                mini_display_printf(d, MINI_STYLE_DIM, "[%s]", type->valuestring);
            mini_display_flush(d);
        }
    }
    mini_display_flush(d);
}

/* Commands as highlighted blocks (a list of actions {"command": ...}). */
static void mini_display_actions(struct mini_display *d, const cJSON *actions)
{
    const char *bar = d->utf8 ? "\u2503" : "|";
    const cJSON *act;
    cJSON_ArrayForEach (act, actions) {
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(act, "command");
        const char *s = cJSON_IsString(cmd) ? cmd->valuestring : "";
        mini_display_flush(d);
        if (!*s) {
            mini_display_printf(d, MINI_STYLE_BAR, "  %s ", bar);
            mini_display_printf(d, MINI_STYLE_DIM, "(empty command)\n");
            continue;
        }
        while (*s) {
            size_t line = strcspn(s, "\n");
            mini_display_printf(d, MINI_STYLE_BAR, "  %s ", bar);
            mini_display_text(d, MINI_STYLE_BOLD, s, line);
            mini_display_flush(d);
            s += line;
            if (*s == '\n')
                s++;
        }
    }
    mini_display_flush(d);
}

/* What a note from the person is, as mini-swe-agent marks it. */
static const char *note_name(const cJSON *msg)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "interrupt_type");
    if (!cJSON_IsString(t))
        return NULL;
    if (strcmp(t->valuestring, "FormatError") == 0)
        return "format error";
    if (strcmp(t->valuestring, "UserRejection") == 0)
        return "rejected";
    if (strcmp(t->valuestring, "UserInterruption") == 0)
        return "interruption";
    if (strcmp(t->valuestring, "UserNewTask") == 0)
        return "new task";
    return t->valuestring;
}

static void cost_text(char *buf, size_t cap, double cost) { snprintf(buf, cap, cost < 10 ? "$%.4f" : "$%.2f", cost); }

void mini_display_message(struct mini_display *d, const cJSON *msg, long step, double cost, bool output_shown)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
    const char *r = cJSON_IsString(role) ? role->valuestring : "unknown";
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(msg, "extra");
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(extra, "actions");
    char money[32];
    cost_text(money, sizeof money, cost);
    mini_display_flush(d);
    mini_display_printf(d, MINI_STYLE_PLAIN, "\n");
    if (strcmp(r, "assistant") == 0) {
        mini_display_printf(d, MINI_STYLE_ASSISTANT, "mini (step %ld, %s):\n", step, money);
        show_content(d, content, MINI_STYLE_PLAIN);
        mini_display_actions(d, actions);
    } else if (strcmp(r, "user") == 0 && cJSON_GetArraySize(actions) > 0) {
        /* Human mode: the person's own command. */
        mini_display_printf(d, MINI_STYLE_ROLE, "You:\n");
        mini_display_actions(d, actions);
    } else if (strcmp(r, "exit") == 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(extra, "exit_status");
        mini_display_printf(d, MINI_STYLE_ROLE, "Exit (%s):\n", cJSON_IsString(st) ? st->valuestring : "?");
        show_content(d, content, MINI_STYLE_PLAIN);
    } else if (strcmp(r, "tool") == 0 && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(extra, "exception_info")) &&
               strcmp(cJSON_GetObjectItemCaseSensitive(extra, "exception_info")->valuestring,
                      "action was not executed") == 0) {
        /* The answer to a tool call that did not run: the model needs it,
         * the person knows. */
        mini_display_printf(d, MINI_STYLE_ROLE, "Tool:");
        mini_display_printf(d, MINI_STYLE_DIM, " (not executed)\n");
    } else {
        const char *note = note_name(msg);
        /* A command's output given back as a user message (text-based
         * models, human mode). */
        if (!note && strcmp(r, "user") == 0 && cJSON_GetObjectItemCaseSensitive(extra, "raw_output"))
            note = "output";
        char name[32];
        snprintf(name, sizeof name, "%s", r);
        name[0] = (char)(name[0] >= 'a' && name[0] <= 'z' ? name[0] - 32 : name[0]);
        if (note)
            mini_display_printf(d, MINI_STYLE_ROLE, "%s (%s):", name, note);
        else
            mini_display_printf(d, MINI_STYLE_ROLE, "%s:", name);
        if (output_shown) {
            /* The command's output went by live: not twice on the screen. */
            mini_display_printf(d, MINI_STYLE_DIM, " (the output above)\n");
        } else {
            mini_display_printf(d, MINI_STYLE_PLAIN, "\n");
            show_content(d, content, strcmp(r, "system") == 0 ? MINI_STYLE_DIM : MINI_STYLE_PLAIN);
        }
    }
    fflush(d->out);
}

void mini_display_command_start(struct mini_display *d, const char *command, bool show_command)
{
    clock_gettime(CLOCK_MONOTONIC, &d->cmd_start);
    mini_display_flush(d);
    if (!d->live)
        return; /* a log: the command is in the message above, its output comes as the observation */
    const char *arrow = d->utf8 ? "\u25b6" : ">";
    if (show_command) {
        size_t line = strcspn(command, "\n");
        int max = columns(d) - 30;
        bool cut = line > (size_t)max || command[line];
        mini_display_printf(d, MINI_STYLE_DIM, "%s running ", arrow);
        mini_display_text(d, MINI_STYLE_DIM, command, line > (size_t)max ? (size_t)max : line);
        mini_display_printf(d, MINI_STYLE_DIM, "%s (Ctrl-C interrupts)\n", cut ? " ..." : "");
    } else {
        mini_display_printf(d, MINI_STYLE_DIM, "%s running (Ctrl-C interrupts)\n", arrow);
    }
    fflush(d->out);
}

void mini_display_output(struct mini_display *d, const char *data, size_t len)
{
    if (!d->live)
        return; /* shown once, as the observation */
    flockfile(d->out);
    if (!d->n_secrets) {
        put_text(d, data, len);
    } else if (mini_buf_append(&d->hold, data, len) == 0) {
        size_t keep = partial_secret(d, d->hold.data, d->hold.len);
        put_redacted(d, d->hold.data, d->hold.len - keep);
        mini_buf_consume(&d->hold, d->hold.len - keep);
    } else {
        release_hold(d);
        put_redacted(d, data, len);
    }
    fflush(d->out);
    funlockfile(d->out);
}

void mini_display_command_end(struct mini_display *d, const cJSON *result)
{
    mini_display_flush(d);
    double secs = mini_elapsed_s(&d->cmd_start);
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(result, "returncode");
    const cJSON *type =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result, "extra"), "exception_type");
    const char *t = cJSON_IsString(type) ? type->valuestring : NULL;
    int code = cJSON_IsNumber(rc) ? rc->valueint : -1;
    const char *ok = d->utf8 ? "\u2714" : "ok:";
    const char *bad = d->utf8 ? "\u2718" : "!!";
    if (t && strcmp(t, "Interrupted") == 0 && d->escapes)
        /* The terminal echoed ^C on a line of its own: clear it. */
        mini_display_printf(d, MINI_STYLE_PLAIN, "\r\033[K");
    if (t && strcmp(t, "Interrupted") == 0)
        mini_display_printf(d, MINI_STYLE_BAD, "%s interrupted after %.1f s\n", bad, secs);
    else if (t && strcmp(t, "TimeoutExpired") == 0)
        mini_display_printf(d, MINI_STYLE_BAD, "%s timed out after %.1f s\n", bad, secs);
    else if (t)
        mini_display_printf(d, MINI_STYLE_BAD, "%s could not run (%s)\n", bad, t);
    else if (code == 0)
        mini_display_printf(d, MINI_STYLE_GOOD, "%s exit 0 (%.1f s)\n", ok, secs);
    else
        mini_display_printf(d, MINI_STYLE_BAD, "%s exit %d (%.1f s)\n", bad, code, secs);
    fflush(d->out);
}

/* ---- the spinner ------------------------------------------------------- */

static void *spin(void *arg)
{
    struct mini_display *d = arg;
    static const char *const frames_utf8[] = { "\u280b", "\u2819", "\u2839", "\u2838", "\u283c",
                                               "\u2834", "\u2826", "\u2827", "\u2807", "\u280f" };
    static const char *const frames_ascii[] = { "|", "/", "-", "\\" };
    const char *const *frames = d->utf8 ? frames_utf8 : frames_ascii;
    unsigned nframes = d->utf8 ? 10 : 4;
    pthread_mutex_lock(&d->lock);
    for (unsigned i = 0; !d->stop; i++) {
        flockfile(d->out);
        fprintf(d->out, "\r%s%s %s %.0f s%s  %s(Ctrl-C interrupts)%s\033[K", mini_display_sgr(d, MINI_STYLE_KEY),
                frames[i % nframes], d->label, mini_elapsed_s(&d->spin_start), mini_display_reset(d),
                mini_display_sgr(d, MINI_STYLE_DIM), mini_display_reset(d));
        fflush(d->out);
        funlockfile(d->out);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 100 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!d->stop && pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

void mini_display_spinner_start(struct mini_display *d, const char *label)
{
    if (!d->escapes || d->spinning)
        return;
    mini_display_flush(d);
    free(d->label);
    d->label = strdup(label);
    if (!d->label)
        return;
    clock_gettime(CLOCK_MONOTONIC, &d->spin_start);
    d->stop = false;
    /* Signals stay with the main thread (SIGINT must interrupt its calls). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    d->spinning = pthread_create(&d->thread, NULL, spin, d) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void mini_display_spinner_stop(struct mini_display *d)
{
    if (d->spinning) {
        pthread_mutex_lock(&d->lock);
        d->stop = true;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        d->spinning = false;
        flockfile(d->out);
        fputs("\r\033[K", d->out);
        fflush(d->out);
        funlockfile(d->out);
    }
    free(d->label);
    d->label = NULL;
}
