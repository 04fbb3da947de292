/* Finding and reading trajectories (internal.h). */
#include "internal.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- one trajectory ------------------------------------------------- */

/* What a message is turned into, with a flag for a failed allocation
 * anywhere on the way (checked once at the end). */
struct conv {
    struct mini_buf text;
    char **commands;
    size_t n_commands;
    bool oom;
};

static void conv_part(struct conv *c, const char *s)
{
    if (!s || !*s)
        return;
    if ((c->text.len && mini_buf_puts(&c->text, "\n\n") < 0) || mini_insp_clean_append(&c->text, s, strlen(s)) < 0)
        c->oom = true;
}

static void conv_command(struct conv *c, const char *s)
{
    char **n = realloc(c->commands, (c->n_commands + 1) * sizeof *n);
    if (!n) {
        c->oom = true;
        return;
    }
    c->commands = n;
    if (!(n[c->n_commands] = mini_insp_clean(s, strlen(s))))
        c->oom = true;
    else
        c->n_commands++;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static const char *get_str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A tool call's arguments, {"command": ...} as JSON text (OpenAI) or as
 * an object (Anthropic's input): the command, else the arguments as they
 * are. */
static void conv_arguments(struct conv *c, const cJSON *args)
{
    if (cJSON_IsObject(args)) {
        const char *cmd = get_str(args, "command");
        if (cmd) {
            conv_command(c, cmd);
            return;
        }
        char *s = cJSON_PrintUnformatted(args);
        if (s)
            conv_command(c, s);
        else
            c->oom = true;
        free(s);
        return;
    }
    if (!cJSON_IsString(args))
        return;
    struct mini_err e;
    _cleanup_cjson_ cJSON *j = mini_json_parse(args->valuestring, strlen(args->valuestring), &e);
    const char *cmd = cJSON_IsObject(j) ? get_str(j, "command") : NULL;
    conv_command(c, cmd ? cmd : args->valuestring);
}

/* An observation given as JSON ({"returncode": 0, "output": "..."}, as
 * some of mini-swe-agent's tool formats write it): one "<key>" line and
 * the value per member.  False when s is not one. */
static bool conv_observation(struct conv *c, const char *s)
{
    if (*s != '{')
        return false;
    struct mini_err e;
    _cleanup_cjson_ cJSON *j = mini_json_parse(s, strlen(s), &e);
    if (!cJSON_IsObject(j) || !get(j, "returncode"))
        return false;
    const cJSON *m;
    cJSON_ArrayForEach (m, j) {
        _cleanup_free_ char *v = cJSON_IsString(m) ? NULL : cJSON_PrintUnformatted(m);
        struct mini_buf kv = MINI_BUF_INIT;
        if (mini_buf_printf(&kv, "<%s>\n%s", m->string, v ? v : cJSON_IsString(m) ? m->valuestring : "") < 0)
            c->oom = true;
        conv_part(c, kv.data);
        mini_buf_free(&kv);
    }
    return true;
}

static void conv_content(struct conv *c, const cJSON *content)
{
    if (cJSON_IsString(content)) {
        if (!conv_observation(c, content->valuestring))
            conv_part(c, content->valuestring);
        return;
    }
    const cJSON *part;
    cJSON_ArrayForEach (part, (cJSON_IsArray(content) ? content : NULL)) {
        const char *type = get_str(part, "type");
        if (type && strcmp(type, "tool_use") == 0) {
            conv_arguments(c, get(part, "input"));
        } else if (type && strcmp(type, "tool_result") == 0) {
            conv_content(c, get(part, "content"));
        } else if (get_str(part, "text")) {
            conv_part(c, get_str(part, "text"));
        } else if (type) {
            struct mini_buf b = MINI_BUF_INIT;
            if (mini_buf_printf(&b, "[%s]", type) < 0)
                c->oom = true;
            conv_part(c, b.data);
            mini_buf_free(&b);
        }
    }
}

static char *dup_clean(const char *s) { return s ? mini_insp_clean(s, strlen(s)) : NULL; }

/* interrupt_type as mini-swe-agent names it, in words. */
static const char *interrupt_note(const char *t)
{
    static const char *const names[][2] = {
        {"FormatError", "format error"},        {"UserRejection", "rejected"},
        {"UserInterruption", "interruption"},   {"UserNewTask", "new task"},
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(names); i++)
        if (strcmp(t, names[i][0]) == 0)
            return names[i][1];
    return t;
}

static int msg_convert(struct insp_msg *out, const cJSON *m)
{
    struct conv c = {MINI_BUF_INIT, NULL, 0, false};
    const char *role = get_str(m, "role");
    if (!role)
        role = get_str(m, "type");
    const cJSON *extra = get(m, "extra");
    conv_content(&c, get(m, "content"));
    const cJSON *out_list = get(m, "output");
    if (cJSON_IsString(out_list)) {
        conv_part(&c, out_list->valuestring);
    } else {
        const cJSON *it;
        cJSON_ArrayForEach (it, (cJSON_IsArray(out_list) ? out_list : NULL)) {
            const char *type = get_str(it, "type");
            if (type && strcmp(type, "message") == 0)
                conv_content(&c, get(it, "content"));
            else if (type && strcmp(type, "function_call") == 0 && !get(extra, "actions"))
                conv_arguments(&c, get(it, "arguments"));
        }
    }
    /* The commands: mini and mini-swe-agent keep them in extra.actions,
     * which the tool calls repeat. */
    const cJSON *actions = get(extra, "actions"), *a;
    if (cJSON_IsArray(actions)) {
        cJSON_ArrayForEach (a, actions) {
            const char *cmd = get_str(a, "command");
            conv_command(&c, cmd ? cmd : "");
        }
    } else {
        const cJSON *tc;
        cJSON_ArrayForEach (tc, (cJSON_IsArray(get(m, "tool_calls")) ? get(m, "tool_calls") : NULL))
            conv_arguments(&c, get(get(tc, "function"), "arguments"));
    }
    struct mini_buf note = MINI_BUF_INIT;
    const cJSON *rc = get(extra, "returncode");
    const char *it = get_str(extra, "interrupt_type"), *exc = get_str(extra, "exception_info");
    const char *st = role && strcmp(role, "exit") == 0 ? get_str(extra, "exit_status") : NULL;
    if ((it && mini_buf_puts(&note, interrupt_note(it)) < 0) ||
        (cJSON_IsNumber(rc) && mini_buf_printf(&note, "%sreturncode %d", note.len ? ", " : "", rc->valueint) < 0) ||
        (exc && *exc && mini_buf_printf(&note, "%s%s", note.len ? ", " : "", exc) < 0) ||
        (st && *st && mini_buf_printf(&note, "%s%s", note.len ? ", " : "", st) < 0))
        c.oom = true;
    out->role = dup_clean(role ? role : "unknown");
    out->text = mini_buf_steal(&c.text, NULL);
    out->reasoning = dup_clean(get_str(m, "reasoning_content"));
    out->note = note.len ? mini_insp_clean(note.data, note.len) : NULL;
    out->commands = c.commands;
    out->n_commands = c.n_commands;
    bool oom = c.oom || !out->role || !out->text || (get_str(m, "reasoning_content") && !out->reasoning) ||
               (note.len && !out->note);
    mini_buf_free(&note);
    mini_buf_free(&c.text);
    return oom ? -1 : 0;
}

static void msg_free(struct insp_msg *m)
{
    free(m->role);
    free(m->text);
    free(m->reasoning);
    free(m->note);
    for (size_t i = 0; i < m->n_commands; i++)
        free(m->commands[i]);
    free(m->commands);
}

/* A step starts with each model turn, or with a command the person typed
 * (human mode: a user message with actions). */
static bool starts_step(const cJSON *m)
{
    const char *role = get_str(m, "role");
    if (!role)
        role = get_str(m, "type");
    return (role && strcmp(role, "assistant") == 0) || cJSON_GetArraySize(get(get(m, "extra"), "actions")) > 0;
}

/* The task in an instance prompt: inside <task>, <pr_description> or
 * <issue> when it has one of them, else the whole text. */
static char *task_of(const char *text)
{
    static const char *const tags[] = {"task", "pr_description", "issue", "problem_statement"};
    for (size_t i = 0; i < MINI_ARRAY_SIZE(tags); i++) {
        char open[40], close[40];
        snprintf(open, sizeof open, "<%s>", tags[i]);
        snprintf(close, sizeof close, "</%s>", tags[i]);
        const char *a = strstr(text, open), *b = a ? strstr(a, close) : NULL;
        if (a && b) {
            a += strlen(open);
            while (a < b && (*a == '\n' || *a == ' '))
                a++;
            while (b > a && (b[-1] == '\n' || b[-1] == ' '))
                b--;
            return strndup(a, (size_t)(b - a));
        }
    }
    return strdup(text);
}

static int set_error(struct insp_traj *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_error(struct insp_traj *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct mini_buf raw = MINI_BUF_INIT;
    int r = mini_buf_vprintf(&raw, fmt, ap);
    va_end(ap);
    free(t->error);
    /* One line, whatever the message quotes. */
    t->error = r < 0 ? NULL : mini_insp_clean(raw.data, raw.len);
    for (char *p = t->error; p && *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    mini_buf_free(&raw);
    if (!t->error)
        t->error = strdup("out of memory");
    return -1;
}

void mini_insp_traj_clear(struct insp_traj *t)
{
    mini_insp_close(t);
    free(t->path);
    free(t->id);
    free(t->error);
    free(t->exit_status);
    free(t->submission);
    free(t->model);
    free(t->task);
    free(t->format);
    memset(t, 0, sizeof *t);
    t->resolved = -1;
}

void mini_insp_close(struct insp_traj *t)
{
    for (size_t i = 0; i < t->n_msgs; i++)
        msg_free(&t->msgs[i]);
    free(t->msgs);
    free(t->step_start);
    t->msgs = NULL;
    t->step_start = NULL;
    t->n_msgs = 0;
    t->loaded = false;
}

/* Whether JSON text ends inside a string, an array or an object (a file
 * cut short), whatever else is wrong with it. */
static bool ends_open(const char *p, size_t n)
{
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return in_string || depth > 0;
}

/* Where offset `at` of text is, as "line L, column C" (columns count
 * characters). */
static void place_of(const char *text, size_t len, size_t at, size_t *line, size_t *col)
{
    if (at > len)
        at = len;
    const char *start = text;
    *line = 1;
    for (const char *p = text; p < text + at; p++)
        if (*p == '\n') {
            (*line)++;
            start = p + 1;
        }
    *col = 1 + mini_utf8_codepoints(start, (size_t)(text + at - start));
}

static void replace_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? mini_insp_clean(s, strlen(s)) : NULL;
}

int mini_insp_parse(struct insp_traj *t, const char *data, size_t len, bool full)
{
    free(t->error);
    t->error = NULL;
    mini_insp_close(t);
    /* A copy to repair: invalid UTF-8 read as Python reads it (U+FFFD),
     * the escapes strict parsing refuses made visible. */
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_utf8_sanitize(&text, data, len) < 0)
        return set_error(t, "out of memory");
    mini_insp_json_fix_escapes(text.data, text.len);
    struct mini_err e;
    size_t where = 0;
    _cleanup_cjson_ cJSON *root = mini_json_parse_where(text.data ? text.data : "", text.len, &where, &e);
    if (!root) {
        size_t line, col;
        if (e.code != MINI_E_NOMEM && ends_open(text.data, text.len)) {
            place_of(text.data, text.len, text.len, &line, &col);
            return set_error(t, "line %zu, column %zu: the file ends inside a value (truncated?)", line, col);
        }
        place_of(text.data ? text.data : "", text.len, where, &line, &col);
        return set_error(t, "line %zu, column %zu: %s", line, col, e.msg);
    }
    const cJSON *messages = cJSON_IsArray(root) ? root : get(root, "messages");
    if (!cJSON_IsArray(messages))
        return set_error(t, "not a trajectory: neither a list of messages nor an object with \"messages\"");
    const cJSON *info = get(root, "info"), *m;
    size_t n = (size_t)cJSON_GetArraySize(messages), i = 0;
    cJSON_ArrayForEach (m, messages)
        if (!cJSON_IsObject(m))
            return set_error(t, "message %zu is not an object", i);
        else
            i++;

    /* The summary. */
    const char *id = get_str(root, "instance_id");
    if (!id)
        id = get_str(info, "instance_id");
    if (id)
        replace_str(&t->id, id);
    replace_str(&t->format, get_str(root, "trajectory_format"));
    replace_str(&t->submission, get_str(info, "submission"));
    replace_str(&t->model, get_str(get(get(info, "config"), "model"), "model_name"));
    const char *status = get_str(info, "exit_status");
    const cJSON *last = cJSON_GetArrayItem(messages, (int)n - 1);
    if ((!status || !*status) && last && get_str(last, "role") && strcmp(get_str(last, "role"), "exit") == 0)
        status = get_str(get(last, "extra"), "exit_status");
    replace_str(&t->exit_status, status);
    const cJSON *stats = get(info, "model_stats");
    const cJSON *cost = get(stats, "instance_cost");
    t->has_cost = cJSON_IsNumber(cost);
    t->cost = t->has_cost ? cost->valuedouble : 0;
    t->n_steps = 0;
    const cJSON *first_user = NULL;
    i = 0;
    cJSON_ArrayForEach (m, messages) {
        if (starts_step(m))
            t->n_steps++;
        else if (!t->n_steps && !first_user && get_str(m, "role") && strcmp(get_str(m, "role"), "user") == 0)
            first_user = m;
    }
    free(t->task);
    t->task = NULL;
    if (first_user) {
        struct insp_msg fm = {0};
        if (msg_convert(&fm, first_user) == 0)
            t->task = task_of(fm.text);
        msg_free(&fm);
    }
    if ((id && !t->id) || (status && !t->exit_status) || (first_user && !t->task))
        return set_error(t, "out of memory");
    if (!full)
        return 0;

    /* The messages and the steps. */
    t->msgs = calloc(n ? n : 1, sizeof *t->msgs);
    t->step_start = calloc(t->n_steps ? t->n_steps : 1, sizeof *t->step_start);
    if (!t->msgs || !t->step_start) {
        mini_insp_close(t);
        return set_error(t, "out of memory");
    }
    size_t step = 0;
    t->n_prompt = n;
    cJSON_ArrayForEach (m, messages) {
        if (starts_step(m)) {
            if (!step)
                t->n_prompt = t->n_msgs;
            t->step_start[step++] = t->n_msgs;
        }
        if (msg_convert(&t->msgs[t->n_msgs++], m) < 0) {
            mini_insp_close(t);
            return set_error(t, "out of memory");
        }
    }
    t->loaded = true;
    return 0;
}

static int read_traj(struct insp_traj *t, bool full)
{
    struct mini_err e;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(t->path, &b, INSP_MAX_FILE_BYTES, &e) < 0) {
        if (errno == EFBIG)
            return set_error(t, "larger than %zu MiB", INSP_MAX_FILE_BYTES >> 20);
        return set_error(t, "%s", e.msg);
    }
    if (!b.len)
        return set_error(t, "line 1, column 1: the file is empty");
    return mini_insp_parse(t, b.data, b.len, full);
}

int mini_insp_open(struct insp_traj *t) { return read_traj(t, true); }

/* ---- a folder -------------------------------------------------------- */

struct found {
    char **traj, **summary;
    size_t n_traj, n_summary;
    bool too_many;
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int push(char ***list, size_t *n, char *s)
{
    char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l) {
        free(s);
        return -1;
    }
    *list = l;
    l[(*n)++] = s;
    return 0;
}

/* Walk dirfd (path names it), never following a symbolic link. */
static int walk(int dirfd, const char *path, int depth, struct found *f, struct mini_err *e)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        int err = errno;
        close(dirfd);
        return mini_err_sys(e, MINI_E_IO, err, "%s", path);
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char *child = NULL;
        if (asprintf(&child, "%s/%s", path, de->d_name) < 0) {
            rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            int fd = depth < INSP_MAX_DEPTH ? openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
            /* An unreadable folder inside is skipped, as find(1) would. */
            if (fd >= 0)
                rc = walk(fd, child, depth + 1, f, e);
            free(child);
        } else if (S_ISREG(st.st_mode) && ends_with(de->d_name, ".traj.json")) {
            if (f->n_traj >= INSP_MAX_FILES) {
                f->too_many = true;
                free(child);
            } else if (push(&f->traj, &f->n_traj, child) < 0) {
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
            }
        } else if (S_ISREG(st.st_mode) && strcmp(de->d_name, "summary.json") == 0) {
            if (f->n_summary < 1000 && push(&f->summary, &f->n_summary, child) < 0)
                rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
            else if (f->n_summary >= 1000)
                free(child);
        } else {
            free(child);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* mini batch's verdict on a task from the summaries: 1 resolved, 0 not, -1 none. */
static int resolved_of(cJSON *const *summaries, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        const cJSON *res = get(get(summaries[i], "tasks"), id);
        if (!res)
            continue;
        const char *st = get_str(get(res, "verify"), "status");
        return !st ? -1 : strcmp(st, "resolved") == 0 ? 1 : 0;
    }
    return -1;
}

static char *id_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (ends_with(base, ".traj.json"))
        n -= strlen(".traj.json");
    else if (ends_with(base, ".json"))
        n -= strlen(".json");
    return mini_insp_clean(base, n ? n : strlen(base));
}

int mini_insp_collect(const char *path, struct insp_set *set, struct mini_err *e)
{
    memset(set, 0, sizeof *set);
    struct stat st;
    if (stat(path, &st) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
    struct found f = {0};
    int rc = 0;
    if (S_ISDIR(st.st_mode)) {
        set->folder = true;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return mini_err_sys(e, MINI_E_IO, errno, "%s", path);
        size_t plen = strlen(path);
        while (plen > 1 && path[plen - 1] == '/')
            plen--;
        _cleanup_free_ char *base = strndup(path, plen);
        rc = base ? walk(fd, base, 0, &f, e) : mini_err_set(e, MINI_E_NOMEM, "out of memory");
        if (!base)
            close(fd);
        if (rc == 0 && !f.n_traj)
            rc = mini_err_set(e, MINI_E_IO, "%s: no trajectory (*.traj.json) in this folder", path);
        if (rc == 0 && f.too_many)
            fprintf(stderr, "mini inspect: %s: more than %d trajectories; showing the first %d found\n", path,
                    INSP_MAX_FILES, INSP_MAX_FILES);
        if (f.n_traj > 1)
            qsort(f.traj, f.n_traj, sizeof *f.traj, cmp_str);
    } else {
        char *p = strdup(path);
        rc = p && push(&f.traj, &f.n_traj, p) == 0 ? 0 : mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON **summaries = calloc(f.n_summary ? f.n_summary : 1, sizeof *summaries);
    size_t n_sum = 0;
    if (rc == 0 && !(set->t = calloc(f.n_traj, sizeof *set->t)))
        rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && summaries && i < f.n_summary; i++) {
        struct mini_buf b = MINI_BUF_INIT;
        struct mini_err se;
        if (mini_read_file(f.summary[i], &b, INSP_MAX_FILE_BYTES, &se) == 0)
            summaries[n_sum] = mini_json_parse(b.data ? b.data : "", b.len, &se);
        if (summaries[n_sum])
            n_sum++;
        else
            fprintf(stderr, "mini inspect: %s: %s (its verify results are not shown)\n", f.summary[i], se.msg);
        mini_buf_free(&b);
    }
    for (size_t i = 0; rc == 0 && i < f.n_traj; i++) {
        struct insp_traj *t = &set->t[set->n++];
        mini_insp_traj_clear(t);
        t->path = f.traj[i];
        f.traj[i] = NULL;
        if (read_traj(t, false) < 0)
            set->n_errors++;
        if (!t->id && !(t->id = id_from_path(t->path)))
            rc = mini_err_set(e, MINI_E_NOMEM, "out of memory");
        else
            t->resolved = resolved_of(summaries, n_sum, t->id);
    }
    for (size_t i = 0; i < n_sum; i++)
        cJSON_Delete(summaries[i]);
    free(summaries);
    for (size_t i = 0; i < f.n_traj; i++)
        free(f.traj[i]);
    for (size_t i = 0; i < f.n_summary; i++)
        free(f.summary[i]);
    free(f.traj);
    free(f.summary);
    if (rc < 0)
        mini_insp_set_free(set);
    return rc;
}

void mini_insp_set_free(struct insp_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        mini_insp_traj_clear(&set->t[i]);
    free(set->t);
    memset(set, 0, sizeof *set);
}
