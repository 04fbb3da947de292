/* The full-screen browser (internal.h), on ncurses (ncursesw: wide
 * characters).  Two views: the list of a folder's trajectories, and one
 * trajectory step by step.  Text is drawn from the cleaned strings
 * (clean.c), character by character through its display width, so what a
 * trajectory holds can neither move the cursor nor spill past a line; a
 * line wider than the screen wraps, a page longer than it scrolls, and
 * the footer says which rows are shown and whether more follow. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "internal.h"

#include <curses.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#define SEARCH_MAX 255
#define TAB_CELLS 4

enum { PAIR_HEAD = 1, PAIR_ASSISTANT, PAIR_CMD, PAIR_ERROR };

struct row {
    size_t line, off, len; /* bytes [off, off+len) of page line `line` */
    bool first;            /* the line's first row (its prefix is drawn) */
};

struct tui {
    struct insp_set *set;
    bool list; /* the list view (else one trajectory) */
    size_t cur, sel, list_top;
    size_t step;
    bool prompts;
    struct insp_page page;
    struct insp_line error_line;
    struct row *rows;
    size_t n_rows, top;
    int w, h;
    bool utf8, color;
    char query[SEARCH_MAX + 1];
    size_t match_line; /* the line of the last match, on this page */
    bool have_match;
    char msg[512];
};

static volatile sig_atomic_t stop_sig;
static void on_stop(int sig) { stop_sig = sig; }

/* ---- text cells ---------------------------------------------------- */

/* The character at s (valid UTF-8, n bytes left): its length, its code
 * point and the cells it takes. */
static size_t char_at(const char *s, size_t n, uint32_t *cp, int *cells, const struct tui *u)
{
    size_t k;
    uint32_t v = mini_insp_utf8_decode(s, n, &k);
    *cp = v;
    if (v == '\t')
        *cells = TAB_CELLS;
    else if (v < 0x80 || !u->utf8)
        *cells = 1;
    else {
        int wd = wcwidth((wchar_t)v);
        *cells = wd < 0 ? 1 : wd;
    }
    return k;
}

static void put_char(uint32_t cp, const struct tui *u)
{
    if (cp == '\t') {
        for (int i = 0; i < TAB_CELLS; i++)
            addch(' ');
    } else if (cp < 0x80) {
        addch((chtype)cp);
    } else if (!u->utf8) {
        addch('?');
    } else {
        wchar_t wc[2] = {(wchar_t)cp, 0};
        if (wcwidth(wc[0]) < 0)
            wc[0] = L'?';
        addnwstr(wc, 1);
    }
}

/* Draw s[0..n) from the cursor, at most `cells` cells; cut with a marker
 * (…) when it does not fit.  The cells used. */
static int put_clipped(const char *s, size_t n, int cells, const struct tui *u)
{
    int used = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int cw;
        size_t k = char_at(s + i, n - i, &cp, &cw, u);
        /* The last cell is kept for the marker unless this is the end. */
        if (used + cw > cells - (i + k < n ? 1 : 0)) {
            if (used < cells) {
                put_char(u->utf8 ? 0x2026 : '>', u);
                used++;
            }
            return used;
        }
        if (cp == '\n')
            cp = ' ';
        put_char(cp, u);
        used += cw;
        i += k;
    }
    return used;
}

static void fill_to_end(int used, int w)
{
    for (int i = used; i < w; i++)
        addch(' ');
}

/* A full-width bar (header, footer): text in reverse video. */
static void bar(int y, const char *text, const struct tui *u)
{
    move(y, 0);
    attron(A_REVERSE);
    fill_to_end(put_clipped(text, strlen(text), u->w, u), u->w);
    attroff(A_REVERSE);
}

/* ---- the page and its rows ----------------------------------------- */

static void free_page(struct tui *u)
{
    if (u->page.lines == &u->error_line)
        memset(&u->page, 0, sizeof u->page);
    else
        mini_insp_page_free(&u->page);
    free(u->rows);
    u->rows = NULL;
    u->n_rows = u->top = 0;
}

static int add_row(struct tui *u, size_t *cap, struct row r)
{
    if (u->n_rows == *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        struct row *n = realloc(u->rows, c * sizeof *n);
        if (!n)
            return -1;
        u->rows = n;
        *cap = c;
    }
    u->rows[u->n_rows++] = r;
    return 0;
}

/* The page's lines wrapped to the screen's width. */
static int wrap(struct tui *u)
{
    free(u->rows);
    u->rows = NULL;
    u->n_rows = 0;
    size_t cap = 0;
    for (size_t l = 0; l < u->page.n; l++) {
        const struct insp_line *ln = &u->page.lines[l];
        int avail = u->w - (int)strlen(ln->prefix);
        if (avail < 8)
            avail = 8;
        size_t off = 0;
        bool first = true;
        do {
            int used = 0;
            size_t end = off;
            while (end < ln->n) {
                uint32_t cp;
                int cw;
                size_t k = char_at(ln->s + end, ln->n - end, &cp, &cw, u);
                if (used + cw > avail && end > off)
                    break;
                used += cw;
                end += k;
            }
            if (add_row(u, &cap, (struct row){l, off, end - off, first}) < 0)
                return -1;
            first = false;
            off = end;
        } while (off < ln->n);
    }
    return 0;
}

static size_t body_rows(const struct tui *u) { return u->h > 3 ? (size_t)(u->h - 3) : 1; }

static size_t max_top(const struct tui *u) { return u->n_rows > body_rows(u) ? u->n_rows - body_rows(u) : 0; }

static size_t first_row_of(const struct tui *u, size_t line)
{
    for (size_t i = 0; i < u->n_rows; i++)
        if (u->rows[i].line == line)
            return i;
    return 0;
}

static size_t first_step(const struct tui *u)
{
    const struct insp_traj *t = &u->set->t[u->cur];
    return u->prompts || t->n_steps == 0 ? 0 : 1;
}

/* Build the current step's page (or the trajectory's error). */
static void load_page(struct tui *u)
{
    free_page(u);
    u->have_match = false;
    struct insp_traj *t = &u->set->t[u->cur];
    if (!t->loaded) {
        u->error_line = (struct insp_line){t->error ? t->error : "cannot be read", 0, INSP_HEAD, "error: "};
        u->error_line.n = strlen(u->error_line.s);
        u->page.lines = &u->error_line;
        u->page.n = 1;
    } else if (mini_insp_page_build(&u->page, t, u->step) < 0) {
        snprintf(u->msg, sizeof u->msg, "out of memory");
    }
    if (wrap(u) < 0)
        snprintf(u->msg, sizeof u->msg, "out of memory");
}

/* Open trajectory i (its messages read now; the previous one's dropped). */
static void open_traj(struct tui *u, size_t i)
{
    free_page(u);
    if (u->cur != i || !u->set->t[i].loaded)
        mini_insp_close(&u->set->t[u->cur]);
    u->cur = i;
    struct insp_traj *t = &u->set->t[i];
    if (!t->loaded && mini_insp_open(t) < 0)
        snprintf(u->msg, sizeof u->msg, "%s: %s", t->path, t->error);
    u->step = first_step(u);
    u->list = false;
    load_page(u);
}

static void go_step(struct tui *u, size_t s)
{
    const struct insp_traj *t = &u->set->t[u->cur];
    if (s < first_step(u))
        s = first_step(u);
    if (s > t->n_steps)
        s = t->n_steps;
    if (s != u->step) {
        u->step = s;
        load_page(u);
    }
}

/* ---- drawing ------------------------------------------------------- */

static bool in_match(const struct insp_line *ln, size_t b, const char *q, size_t ql)
{
    size_t from = b + 1 >= ql ? b + 1 - ql : 0;
    for (size_t s = from; s <= b; s++)
        if (s + ql <= ln->n && strncasecmp(ln->s + s, q, ql) == 0)
            return true;
    return false;
}

static attr_t style_attr(const struct tui *u, const struct insp_line *ln)
{
    switch (ln->style) {
    case INSP_HEAD: {
        bool assistant = ln->n >= 9 && strncmp(ln->s, "ASSISTANT", 9) == 0;
        return A_BOLD | (u->color ? COLOR_PAIR(assistant ? PAIR_ASSISTANT : PAIR_HEAD) : 0);
    }
    case INSP_CMD: return A_BOLD | (u->color ? COLOR_PAIR(PAIR_CMD) : 0);
    case INSP_DIM: return A_DIM;
    default: return A_NORMAL;
    }
}

static void draw_row(const struct tui *u, int y, const struct row *r)
{
    const struct insp_line *ln = &u->page.lines[r->line];
    size_t ql = strlen(u->query);
    attr_t a = style_attr(u, ln);
    move(y, 0);
    int used = 0;
    size_t pl = strlen(ln->prefix);
    attrset(a);
    for (size_t i = 0; i < pl && used < u->w; i++, used++)
        addch(r->first ? (chtype)(unsigned char)ln->prefix[i] : ' ');
    for (size_t b = r->off; b < r->off + r->len;) {
        uint32_t cp;
        int cw;
        size_t k = char_at(ln->s + b, r->off + r->len - b, &cp, &cw, u);
        if (used + cw > u->w)
            break;
        attrset(ql && in_match(ln, b, u->query, ql) ? (a | A_REVERSE) : a);
        put_char(cp, u);
        used += cw;
        b += k;
    }
    attrset(A_NORMAL);
    fill_to_end(used, u->w);
}

static void draw_traj(struct tui *u)
{
    const struct insp_traj *t = &u->set->t[u->cur];
    char cost[32], title[64], head[1024], task[1024];
    mini_insp_cost_text(cost, sizeof cost, t);
    mini_insp_step_title(title, sizeof title, t, u->step);
    snprintf(head, sizeof head, " [%zu/%zu] %s | %s | exit: %s | %zu steps | cost %s | resolved: %s", u->cur + 1,
             u->set->n, t->id, title, t->exit_status && *t->exit_status ? t->exit_status : "-", t->n_steps, cost,
             mini_insp_resolved_text(t));
    bar(0, head, u);
    size_t tl = mini_insp_first_line(t->task);
    snprintf(task, sizeof task, " Task: %.*s%s", (int)(tl < 900 ? tl : 900), t->task ? t->task : "-",
             t->task && (t->task[tl] || tl >= 900) ? " [...]" : "");
    move(1, 0);
    attrset(A_BOLD);
    fill_to_end(put_clipped(task, strlen(task), u->w, u), u->w);
    attrset(A_NORMAL);
    size_t n = body_rows(u);
    for (size_t i = 0; i < n; i++) {
        if (u->top + i < u->n_rows) {
            draw_row(u, (int)(2 + i), &u->rows[u->top + i]);
        } else {
            move((int)(2 + i), 0);
            clrtoeol();
        }
    }
    char foot[1024];
    size_t last = u->top + n < u->n_rows ? u->top + n : u->n_rows;
    if (u->msg[0])
        snprintf(foot, sizeof foot, " %s", u->msg);
    else
        snprintf(foot, sizeof foot, " rows %zu-%zu/%zu%s | h/l step 0/$ first/last H/L traj j/k/PgDn/PgUp scroll "
                 "/ n N search p prompts%s q quit", u->n_rows ? u->top + 1 : 0, last, u->n_rows,
                 last < u->n_rows ? " (more below)" : "", u->set->folder ? " Esc list" : "");
    bar(u->h - 1, foot, u);
}

static void draw_list(struct tui *u)
{
    char head[1024];
    int hn = snprintf(head, sizeof head, " mini inspect | %zu trajectories", u->set->n);
    if (u->set->n_errors && hn > 0 && (size_t)hn < sizeof head)
        snprintf(head + hn, sizeof head - (size_t)hn, ", %zu unreadable", u->set->n_errors);
    bar(0, head, u);
    int w = 12;
    for (size_t i = 0; i < u->set->n; i++) {
        int l = (int)strlen(u->set->t[i].id);
        if (l > w)
            w = l;
    }
    if (w > u->w / 2)
        w = u->w / 2 > 12 ? u->w / 2 : 12;
    char line[2048];
    snprintf(line, sizeof line, "  %-*s  %-18s %5s  %-10s %s", w, "TRAJECTORY", "EXIT STATUS", "STEPS", "COST",
             "RESOLVED");
    move(1, 0);
    attrset(A_BOLD);
    fill_to_end(put_clipped(line, strlen(line), u->w, u), u->w);
    attrset(A_NORMAL);
    size_t n = body_rows(u);
    if (u->sel < u->list_top)
        u->list_top = u->sel;
    if (u->sel >= u->list_top + n)
        u->list_top = u->sel - n + 1;
    for (size_t i = 0; i < n; i++) {
        size_t k = u->list_top + i;
        move((int)(2 + i), 0);
        if (k >= u->set->n) {
            clrtoeol();
            continue;
        }
        const struct insp_traj *t = &u->set->t[k];
        attrset(k == u->sel ? A_REVERSE : A_NORMAL);
        /* The id: clipped with a marker to its column. */
        int used = put_clipped("  ", 2, u->w, u);
        int idw = put_clipped(t->id, strlen(t->id), w, u);
        used += idw;
        for (; idw < w && used < u->w; idw++, used++)
            addch(' ');
        char cost[32];
        mini_insp_cost_text(cost, sizeof cost, t);
        if (t->error) {
            if (u->color && k != u->sel)
                attron(COLOR_PAIR(PAIR_ERROR));
            snprintf(line, sizeof line, "  error: %s", t->error);
        } else {
            snprintf(line, sizeof line, "  %-18s %5zu  %-10s %s", t->exit_status && *t->exit_status ? t->exit_status : "-",
                     t->n_steps, cost, mini_insp_resolved_text(t));
        }
        used += put_clipped(line, strlen(line), u->w - used, u);
        fill_to_end(used, u->w);
        attrset(A_NORMAL);
    }
    char foot[1024];
    const struct insp_traj *t = u->set->n ? &u->set->t[u->sel] : NULL;
    if (u->msg[0])
        snprintf(foot, sizeof foot, " %s", u->msg);
    else if (t && t->error)
        snprintf(foot, sizeof foot, " %s: %s", t->path, t->error);
    else
        snprintf(foot, sizeof foot, " row %zu/%zu | j/k/PgDn/PgUp move g/G first/last Enter open / n N search q quit",
                 u->sel + 1, u->set->n);
    bar(u->h - 1, foot, u);
}

static void draw(struct tui *u)
{
    getmaxyx(stdscr, u->h, u->w);
    if (u->h < 5 || u->w < 20) {
        erase();
        mvaddstr(0, 0, "terminal too small");
    } else if (u->list) {
        draw_list(u);
    } else {
        draw_traj(u);
    }
    refresh();
    u->msg[0] = 0;
}

/* ---- search -------------------------------------------------------- */

static bool line_has(const struct insp_line *ln, const char *q)
{
    size_t ql = strlen(q);
    for (size_t s = 0; s + ql <= ln->n; s++)
        if (strncasecmp(ln->s + s, q, ql) == 0)
            return true;
    return false;
}

/* Read the query on the footer line; false when cancelled (Esc). */
static bool read_query(struct tui *u)
{
    char q[SEARCH_MAX + 1] = "";
    size_t n = 0;
    curs_set(1);
    for (;;) {
        char prompt[SEARCH_MAX + 8];
        snprintf(prompt, sizeof prompt, "/%s", q);
        bar(u->h - 1, prompt, u);
        move(u->h - 1, (int)strlen(prompt) < u->w ? (int)strlen(prompt) : u->w - 1);
        refresh();
        wint_t ch;
        int r = get_wch(&ch);
        if (r == ERR) {
            if (stop_sig)
                break;
            continue;
        }
        if (r == KEY_CODE_YES && ch == KEY_RESIZE) {
            getmaxyx(stdscr, u->h, u->w);
            continue;
        }
        if (r == OK && ch == 27) {
            curs_set(0);
            return false;
        }
        if ((r == OK && (ch == '\n' || ch == '\r')) || (r == KEY_CODE_YES && ch == KEY_ENTER))
            break;
        if ((r == KEY_CODE_YES && ch == KEY_BACKSPACE) || (r == OK && (ch == 127 || ch == 8))) {
            while (n > 0 && ((unsigned char)q[n - 1] & 0xc0) == 0x80)
                n--;
            if (n > 0)
                n--;
            q[n] = 0;
            continue;
        }
        if (r == OK && ch >= 0x20 && ch != 0x7f) {
            char mb[MB_LEN_MAX];
            mbstate_t st = {0};
            size_t k = wcrtomb(mb, (wchar_t)ch, &st);
            if (k != (size_t)-1 && n + k <= SEARCH_MAX) {
                memcpy(q + n, mb, k);
                n += k;
                q[n] = 0;
            }
        }
    }
    curs_set(0);
    if (n)
        memcpy(u->query, q, n + 1);
    return u->query[0] != 0;
}

/* Move to the next (dir 1) or previous (-1) trajectory in the list whose
 * id or exit status has the query. */
static void search_list(struct tui *u, int dir)
{
    size_t n = u->set->n;
    for (size_t k = 1; k <= n; k++) {
        size_t i = (u->sel + n + (size_t)dir * k) % n;
        const struct insp_traj *t = &u->set->t[i];
        if (strcasestr(t->id, u->query) || (t->exit_status && strcasestr(t->exit_status, u->query))) {
            u->sel = i;
            return;
        }
    }
    snprintf(u->msg, sizeof u->msg, "not found: %s", u->query);
}

/* The next (dir 1) or previous (-1) line with the query, from the last
 * match (else the top of the screen), through this page and then the
 * others of the trajectory, round to where it started. */
static void search_traj(struct tui *u, int dir)
{
    const struct insp_traj *t = &u->set->t[u->cur];
    if (!t->loaded) {
        snprintf(u->msg, sizeof u->msg, "not found: %s", u->query);
        return;
    }
    size_t first = first_step(u), pages = t->n_steps + 1 - first;
    long line = u->have_match ? (long)u->match_line : u->n_rows ? (long)u->rows[u->top].line - dir : -dir;
    for (size_t k = 0; k <= pages; k++) {
        size_t s = first + (u->step - first + pages + (size_t)(dir * (long)k)) % pages;
        struct insp_page p;
        if (mini_insp_page_build(&p, t, s) < 0) {
            snprintf(u->msg, sizeof u->msg, "out of memory");
            return;
        }
        long from = k == 0 ? line + dir : dir > 0 ? 0 : (long)p.n - 1;
        for (long l = from; l >= 0 && l < (long)p.n; l += dir) {
            if (line_has(&p.lines[l], u->query)) {
                mini_insp_page_free(&p);
                if (s != u->step) {
                    u->step = s;
                    load_page(u);
                }
                u->have_match = true;
                u->match_line = (size_t)l;
                size_t r = first_row_of(u, (size_t)l);
                u->top = r > 2 ? r - 2 : 0;
                if (u->top > max_top(u))
                    u->top = max_top(u);
                return;
            }
        }
        mini_insp_page_free(&p);
    }
    snprintf(u->msg, sizeof u->msg, "not found: %s", u->query);
}

/* ---- keys ---------------------------------------------------------- */

static void scroll_by(struct tui *u, long d)
{
    long top = (long)u->top + d;
    if (top < 0)
        top = 0;
    if ((size_t)top > max_top(u))
        top = (long)max_top(u);
    u->top = (size_t)top;
}

/* One key in the trajectory view; false to quit. */
static bool key_traj(struct tui *u, int r, wint_t ch)
{
    const struct insp_traj *t = &u->set->t[u->cur];
    long page = (long)body_rows(u) - 1;
    if (r == KEY_CODE_YES) {
        switch (ch) {
        case KEY_RIGHT: go_step(u, u->step + 1); break;
        case KEY_LEFT: if (u->step > 0) go_step(u, u->step - 1); break;
        case KEY_DOWN: scroll_by(u, 1); break;
        case KEY_UP: scroll_by(u, -1); break;
        case KEY_NPAGE: scroll_by(u, page); break;
        case KEY_PPAGE: scroll_by(u, -page); break;
        case KEY_HOME: u->top = 0; break;
        case KEY_END: u->top = max_top(u); break;
        case KEY_BACKSPACE: if (u->set->folder) u->list = true; break;
        }
        return true;
    }
    switch (ch) {
    case 'q': case 3: return false;
    case 'l': go_step(u, u->step + 1); break;
    case 'h': if (u->step > 0) go_step(u, u->step - 1); break;
    case '0': go_step(u, 0); break;
    case '$': go_step(u, t->n_steps); break;
    case 'j': scroll_by(u, 1); break;
    case 'k': scroll_by(u, -1); break;
    case ' ': scroll_by(u, page); break;
    case 'g': u->top = 0; break;
    case 'G': u->top = max_top(u); break;
    case 'L': if (u->cur + 1 < u->set->n) { u->sel = u->cur + 1; open_traj(u, u->cur + 1); } break;
    case 'H': if (u->cur > 0) { u->sel = u->cur - 1; open_traj(u, u->cur - 1); } break;
    case 'p':
        u->prompts = !u->prompts;
        if (u->prompts) {
            u->step = 0;
            load_page(u);
        } else {
            go_step(u, u->step);
        }
        snprintf(u->msg, sizeof u->msg, "prompts %s", u->prompts ? "shown (step 0)" : "hidden");
        break;
    case '/': if (read_query(u)) { u->have_match = false; search_traj(u, 1); } break;
    case 'n': if (u->query[0]) search_traj(u, 1); break;
    case 'N': if (u->query[0]) search_traj(u, -1); break;
    case 27: case 127: case 8: if (u->set->folder) u->list = true; break;
    }
    return true;
}

static bool key_list(struct tui *u, int r, wint_t ch)
{
    size_t n = u->set->n, page = body_rows(u);
    if (r == KEY_CODE_YES) {
        switch (ch) {
        case KEY_DOWN: if (u->sel + 1 < n) u->sel++; break;
        case KEY_UP: if (u->sel > 0) u->sel--; break;
        case KEY_NPAGE: u->sel = u->sel + page < n ? u->sel + page : n - 1; break;
        case KEY_PPAGE: u->sel = u->sel > page ? u->sel - page : 0; break;
        case KEY_HOME: u->sel = 0; break;
        case KEY_END: u->sel = n - 1; break;
        case KEY_ENTER: case KEY_RIGHT: open_traj(u, u->sel); break;
        }
        return true;
    }
    switch (ch) {
    case 'q': case 3: return false;
    case 'j': if (u->sel + 1 < n) u->sel++; break;
    case 'k': if (u->sel > 0) u->sel--; break;
    case 'g': u->sel = 0; break;
    case 'G': u->sel = n - 1; break;
    case '\n': case '\r': case 'l': open_traj(u, u->sel); break;
    case '/': if (read_query(u)) search_list(u, 1); break;
    case 'n': if (u->query[0]) search_list(u, 1); break;
    case 'N': if (u->query[0]) search_list(u, -1); break;
    }
    return true;
}

int mini_insp_tui_run(struct insp_set *set, struct mini_err *e)
{
    const char *term = getenv("TERM");
    if (!term || !*term || strcmp(term, "dumb") == 0)
        return mini_err_set(e, MINI_E_IO, "TERM is %s", term && *term ? term : "not set");
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr)
        return mini_err_set(e, MINI_E_IO, "cannot use the terminal (TERM=%s)", term);
    struct sigaction sa = {0}, old_term, old_hup;
    sa.sa_handler = on_stop; /* no SA_RESTART: get_wch returns */
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    set_escdelay(25);
    raw();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    struct tui u = {.set = set, .list = set->folder, .utf8 = MB_CUR_MAX > 1};
    const char *nc = getenv("NO_COLOR");
    if (has_colors() && !(nc && *nc)) {
        start_color();
        use_default_colors();
        init_pair(PAIR_HEAD, COLOR_GREEN, -1);
        init_pair(PAIR_ASSISTANT, COLOR_RED, -1);
        init_pair(PAIR_CMD, COLOR_YELLOW, -1);
        init_pair(PAIR_ERROR, COLOR_RED, -1);
        u.color = true;
    }
    getmaxyx(stdscr, u.h, u.w);
    if (!u.list)
        open_traj(&u, 0);
    for (bool go = true; go && !stop_sig;) {
        draw(&u);
        wint_t ch;
        int r = get_wch(&ch);
        if (r == ERR)
            continue; /* a signal: stop_sig tells */
        if (r == KEY_CODE_YES && ch == KEY_RESIZE) {
            /* Keep the line at the top of the screen there. */
            getmaxyx(stdscr, u.h, u.w);
            if (!u.list && u.n_rows) {
                size_t line = u.rows[u.top].line;
                if (wrap(&u) < 0)
                    snprintf(u.msg, sizeof u.msg, "out of memory");
                u.top = first_row_of(&u, line);
                if (u.top > max_top(&u))
                    u.top = max_top(&u);
            }
            clear();
            continue;
        }
        go = u.list ? key_list(&u, r, ch) : key_traj(&u, r, ch);
    }
    free_page(&u);
    endwin();
    delscreen(scr);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return 0;
}
