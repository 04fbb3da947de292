/* The HTML report (internal.h): one self-contained file, no script at
 * all, no external asset.  Everything from a trajectory is escaped as
 * text (& < > " '), and the page's Content-Security-Policy forbids
 * scripts, so that even a mistake here would not run one.  Long texts
 * fold (<details>), a step index and, for a folder, an overview table
 * link to the steps. */
#include "internal.h"

#include <string.h>

/* Above this, a text is folded. */
#define FOLD_LINES 25
#define FOLD_BYTES 4000

static void esc_n(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(s[i], out);
        }
    }
}

static void esc(FILE *out, const char *s) { esc_n(out, s ? s : "", s ? strlen(s) : 0); }

static const char STYLE[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3em 0;font:13px/1.35 ui-monospace,monospace}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
    "th{background:#f0f0f0}.num{text-align:right}.error{color:#b00}"
    ".traj{border-top:3px solid #555;margin-top:2em}.step{border-top:1px solid #bbb;margin-top:1em}"
    ".msg{margin:.6em 0 .6em .5em}.head{font-weight:bold;color:#060}.role-assistant .head{color:#a00}"
    ".cmd{background:#fff6d5;border-left:4px solid #d9a400;padding:2px 6px}"
    ".dim,.prompts pre{color:#666}.index a{margin-right:.4em}summary{cursor:pointer;color:#036}";

static void text_block(FILE *out, const char *s, const char *cls, const char *what)
{
    size_t lines = 1, n = strlen(s);
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    bool fold = lines > FOLD_LINES || n > FOLD_BYTES;
    if (fold)
        fprintf(out, "<details><summary>%s: %zu lines, %zu bytes (show)</summary>", what, lines, n);
    fprintf(out, "<pre class=\"%s\">", cls);
    esc(out, s);
    fputs("</pre>", out);
    if (fold)
        fputs("</details>", out);
    fputc('\n', out);
}

static void message(FILE *out, const struct insp_msg *m)
{
    /* The role goes into a class name: letters only. */
    fputs("<div class=\"msg role-", out);
    for (const char *r = m->role; *r; r++)
        if ((*r >= 'a' && *r <= 'z') || (*r >= 'A' && *r <= 'Z'))
            fputc(*r, out);
    fputs("\"><div class=\"head\">", out);
    esc(out, m->role);
    if (m->note) {
        fputs(" (", out);
        esc(out, m->note);
        fputc(')', out);
    }
    fputs("</div>\n", out);
    if (m->reasoning && *m->reasoning) {
        fputs("<details><summary>reasoning</summary>", out);
        text_block(out, m->reasoning, "dim", "reasoning");
        fputs("</details>\n", out);
    }
    if (*m->text)
        text_block(out, m->text, "text", strcmp(m->role, "assistant") == 0 ? "message" : "output");
    for (size_t i = 0; i < m->n_commands; i++) {
        fputs("<pre class=\"cmd\">$ ", out);
        esc(out, m->commands[i]);
        fputs("</pre>\n", out);
    }
    fputs("</div>\n", out);
}

static void step(FILE *out, const struct insp_traj *t, size_t k, size_t s)
{
    size_t from = 0, to = t->n_prompt;
    if (s > 0) {
        from = t->step_start[s - 1];
        to = s < t->n_steps ? t->step_start[s] : t->n_msgs;
    }
    char title[64];
    mini_insp_step_title(title, sizeof title, t, s);
    if (s == 0)
        fprintf(out, "<details class=\"prompts\" id=\"t%zu-s0\"><summary>System and instance prompts (%zu messages)</summary>\n",
                k, to - from);
    else
        fprintf(out, "<section class=\"step\" id=\"t%zu-s%zu\"><h3>%s</h3>\n", k, s, title);
    for (size_t i = from; i < to && i < t->n_msgs; i++)
        message(out, &t->msgs[i]);
    fputs(s == 0 ? "</details>\n" : "</section>\n", out);
}

static void meta_row(FILE *out, const char *name, const char *value)
{
    fprintf(out, "<tr><th>%s</th><td>", name);
    esc(out, value && *value ? value : "-");
    fputs("</td></tr>\n", out);
}

static void trajectory(FILE *out, struct insp_traj *t, size_t k, bool prompts)
{
    fprintf(out, "<section class=\"traj\" id=\"t%zu\"><h2>", k);
    esc(out, t->id);
    fputs("</h2>\n", out);
    if (mini_insp_open(t) < 0) {
        fputs("<p class=\"error\">", out);
        esc(out, t->path);
        fputs(": ", out);
        esc(out, t->error);
        fputs("</p></section>\n", out);
        return;
    }
    char cost[32], steps[32];
    mini_insp_cost_text(cost, sizeof cost, t);
    snprintf(steps, sizeof steps, "%zu", t->n_steps);
    fputs("<table class=\"meta\">\n", out);
    meta_row(out, "Task", t->task ? t->task : "");
    meta_row(out, "Exit status", t->exit_status);
    meta_row(out, "Steps", steps);
    meta_row(out, "Cost", cost);
    meta_row(out, "Resolved", mini_insp_resolved_text(t));
    meta_row(out, "Model", t->model);
    meta_row(out, "Format", t->format);
    meta_row(out, "File", t->path);
    fputs("</table>\n<nav class=\"index\">Steps: ", out);
    if (prompts)
        fprintf(out, "<a href=\"#t%zu-s0\">prompts</a>", k);
    for (size_t s = 1; s <= t->n_steps; s++)
        fprintf(out, "<a href=\"#t%zu-s%zu\">%zu</a>", k, s, s);
    fputs("</nav>\n", out);
    for (size_t s = prompts ? 0 : 1; s <= t->n_steps; s++)
        step(out, t, k, s);
    if (t->submission && *t->submission) {
        fputs("<h3>Submission</h3>\n", out);
        text_block(out, t->submission, "submission", "submission");
    }
    fputs("</section>\n", out);
    mini_insp_close(t);
}

static void overview(FILE *out, const struct insp_set *set)
{
    fputs("<table id=\"overview\"><tr><th>Trajectory</th><th>Exit status</th><th>Steps</th><th>Cost</th>"
          "<th>Resolved</th></tr>\n", out);
    for (size_t i = 0; i < set->n; i++) {
        const struct insp_traj *t = &set->t[i];
        fprintf(out, "<tr><td><a href=\"#t%zu\">", i + 1);
        esc(out, t->id);
        fputs("</a></td>", out);
        if (t->error) {
            fputs("<td colspan=\"4\" class=\"error\">", out);
            esc(out, t->error);
            fputs("</td></tr>\n", out);
            continue;
        }
        char cost[32];
        mini_insp_cost_text(cost, sizeof cost, t);
        fputs("<td>", out);
        esc(out, t->exit_status && *t->exit_status ? t->exit_status : "-");
        fprintf(out, "</td><td class=\"num\">%zu</td><td class=\"num\">%s</td><td>%s</td></tr>\n", t->n_steps, cost,
                mini_insp_resolved_text(t));
    }
    fputs("</table>\n", out);
}

int mini_insp_html_render(FILE *out, struct insp_set *set, bool prompts)
{
    const char *name = set->folder || !set->n ? NULL : set->t[0].id;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>mini inspect: ",
          out);
    if (name)
        esc(out, name);
    else
        fprintf(out, "%zu trajectories", set->n);
    fprintf(out, "</title>\n<style>%s</style></head>\n<body>\n<h1>mini inspect: ", STYLE);
    if (name)
        esc(out, name);
    else
        fprintf(out, "%zu trajectories", set->n);
    fputs("</h1>\n", out);
    if (set->folder)
        overview(out, set);
    for (size_t i = 0; i < set->n && !ferror(out); i++)
        trajectory(out, &set->t[i], i + 1, prompts);
    fputs("</body></html>\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
