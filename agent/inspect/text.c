/* The plain-text rendering, for a pipe or a file (internal.h).  Every
 * string shown was cleaned when it was read: no escape sequence reaches
 * the reader's terminal through `less -R` or a cat. */
#include "internal.h"

#include <string.h>

static void overview(FILE *out, const struct insp_set *set)
{
    int w = 10;
    for (size_t i = 0; i < set->n; i++) {
        int l = (int)strlen(set->t[i].id);
        if (l > w)
            w = l > 60 ? 60 : l;
    }
    fprintf(out, "%-*s  %-20s %6s  %-10s %s\n", w, "TRAJECTORY", "EXIT STATUS", "STEPS", "COST", "RESOLVED");
    for (size_t i = 0; i < set->n; i++) {
        const struct insp_traj *t = &set->t[i];
        if (t->error) {
            fprintf(out, "%-*s  error: %s\n", w, t->id, t->error);
            continue;
        }
        char cost[32];
        mini_insp_cost_text(cost, sizeof cost, t);
        fprintf(out, "%-*s  %-20s %6zu  %-10s %s\n", w, t->id, t->exit_status && *t->exit_status ? t->exit_status : "-",
                t->n_steps, cost, mini_insp_resolved_text(t));
    }
}

static void page(FILE *out, const struct insp_traj *t, size_t step)
{
    char title[64];
    mini_insp_step_title(title, sizeof title, t, step);
    fprintf(out, "\n-------- %s --------\n", title);
    struct insp_page p;
    if (mini_insp_page_build(&p, t, step) < 0) {
        fprintf(out, "(out of memory)\n");
        return;
    }
    for (size_t i = 0; i < p.n; i++)
        fprintf(out, "%s%.*s\n", p.lines[i].prefix, (int)p.lines[i].n, p.lines[i].s);
    mini_insp_page_free(&p);
}

static void trajectory(FILE *out, struct insp_traj *t, size_t k, size_t n, bool prompts)
{
    fprintf(out, "======== [%zu/%zu] %s (%s)\n", k, n, t->id, t->path);
    if (mini_insp_open(t) < 0) {
        fprintf(out, "error: %s\n\n", t->error);
        return;
    }
    char cost[32];
    mini_insp_cost_text(cost, sizeof cost, t);
    fprintf(out, "Task: %.*s%s\n", (int)mini_insp_first_line(t->task), t->task ? t->task : "-",
            t->task && t->task[mini_insp_first_line(t->task)] ? " [...]" : "");
    fprintf(out, "Exit status: %s   Steps: %zu   Cost: %s   Resolved: %s\n",
            t->exit_status && *t->exit_status ? t->exit_status : "-", t->n_steps, cost, mini_insp_resolved_text(t));
    fprintf(out, "Model: %s   Format: %s\n", t->model ? t->model : "-", t->format ? t->format : "-");
    for (size_t s = prompts ? 0 : 1; s <= t->n_steps; s++)
        page(out, t, s);
    if (t->submission && *t->submission)
        fprintf(out, "\n-------- Submission --------\n%s\n", t->submission);
    fputc('\n', out);
    mini_insp_close(t);
}

int mini_insp_text_render(FILE *out, struct insp_set *set, bool list_only, bool prompts)
{
    if (set->folder || list_only) {
        overview(out, set);
        if (!list_only)
            fputc('\n', out);
    }
    for (size_t i = 0; !list_only && i < set->n && !ferror(out); i++)
        trajectory(out, &set->t[i], i + 1, set->n, prompts);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
