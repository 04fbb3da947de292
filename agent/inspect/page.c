/* A step as lines, for the plain text and the terminal browser (internal.h). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int add(struct insp_page *p, const char *s, size_t n, enum insp_style style, const char *prefix)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        struct insp_line *l = realloc(p->lines, cap * sizeof *l);
        if (!l)
            return -1;
        p->lines = l;
        p->cap = cap;
    }
    p->lines[p->n++] = (struct insp_line){s, n, (unsigned char)style, prefix};
    return 0;
}

/* Each line of s (a final newline ends the last line, it does not start
 * another); the first gets `first` as prefix, the others `rest`. */
static int add_text(struct insp_page *p, const char *s, enum insp_style style, const char *first, const char *rest)
{
    const char *prefix = first;
    do {
        size_t n = strcspn(s, "\n");
        if (add(p, s, n, style, prefix) < 0)
            return -1;
        prefix = rest;
        s += n;
        if (*s == '\n')
            s++;
    } while (*s);
    return 0;
}

static int add_own(struct insp_page *p, char *s, enum insp_style style)
{
    if (!s)
        return -1;
    char **o = realloc(p->own, (p->n_own + 1) * sizeof *o);
    if (!o) {
        free(s);
        return -1;
    }
    p->own = o;
    o[p->n_own++] = s;
    return add(p, s, strlen(s), style, "");
}

static int add_message(struct insp_page *p, const struct insp_msg *m, bool prompt)
{
    char *head = NULL;
    size_t rl = strlen(m->role);
    if (asprintf(&head, "%s%s%s%s", m->role, m->note ? " (" : "", m->note ? m->note : "", m->note ? ")" : "") < 0)
        return -1;
    for (size_t i = 0; i < rl; i++)
        if (head[i] >= 'a' && head[i] <= 'z')
            head[i] = (char)(head[i] - 32);
    if ((p->n && add(p, "", 0, INSP_TEXT, "") < 0) || add_own(p, head, INSP_HEAD) < 0)
        return -1;
    if (m->reasoning && *m->reasoning && add_text(p, m->reasoning, INSP_DIM, "~ ", "~ ") < 0)
        return -1;
    if ((*m->text || !m->n_commands) &&
        add_text(p, m->text, prompt || strcmp(m->role, "system") == 0 ? INSP_DIM : INSP_TEXT, "", "") < 0)
        return -1;
    for (size_t i = 0; i < m->n_commands; i++)
        if (add_text(p, m->commands[i], INSP_CMD, "$ ", "  ") < 0)
            return -1;
    return 0;
}

int mini_insp_page_build(struct insp_page *p, const struct insp_traj *t, size_t step)
{
    memset(p, 0, sizeof *p);
    size_t from = 0, to = t->n_prompt;
    if (step > 0 && step <= t->n_steps) {
        from = t->step_start[step - 1];
        to = step < t->n_steps ? t->step_start[step] : t->n_msgs;
    }
    for (size_t i = from; i < to && i < t->n_msgs; i++)
        if (add_message(p, &t->msgs[i], step == 0) < 0) {
            mini_insp_page_free(p);
            return -1;
        }
    if (!p->n && add(p, "(no messages)", 13, INSP_DIM, "") < 0) {
        mini_insp_page_free(p);
        return -1;
    }
    return 0;
}

void mini_insp_page_free(struct insp_page *p)
{
    for (size_t i = 0; i < p->n_own; i++)
        free(p->own[i]);
    free(p->own);
    free(p->lines);
    memset(p, 0, sizeof *p);
}

void mini_insp_step_title(char *buf, size_t cap, const struct insp_traj *t, size_t step)
{
    if (step == 0)
        snprintf(buf, cap, "Prompts");
    else
        snprintf(buf, cap, "Step %zu/%zu", step, t->n_steps);
}

void mini_insp_cost_text(char *buf, size_t cap, const struct insp_traj *t)
{
    if (!t->has_cost)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, t->cost < 10 ? "$%.4f" : "$%.2f", t->cost);
}

const char *mini_insp_resolved_text(const struct insp_traj *t)
{
    return t->resolved == 1 ? "yes" : t->resolved == 0 ? "no" : "-";
}

size_t mini_insp_first_line(const char *s) { return s ? strcspn(s, "\n") : 0; }
