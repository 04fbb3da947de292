/* libFuzzer target: arbitrary bytes as a trajectory for `mini inspect`
 * (agent/inspect/): the escape repair, the strict parse, every message
 * format, then each step's page and the plain-text and HTML renderings.
 * Nothing may crash or leak; a file that is refused has a one-line
 * error; what is accepted has its steps in order; no page line and no
 * rendering holds a control character (but newline and tab), a C1
 * control or invalid UTF-8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/internal.h"
#include "mini/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Clean text: valid UTF-8, no C0 control but \n and \t, no DEL, no C1. */
static void check_clean(const char *s, size_t n)
{
    if (!mini_utf8_valid(s, n))
        abort();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            abort();
        if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f)
            abort();
    }
}

static void render(struct insp_set *set, int html)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    if (html)
        mini_insp_html_render(f, set, 1);
    else
        mini_insp_text_render(f, set, 0, 1);
    fclose(f);
    check_clean(buf, len);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The renderers open the file themselves: give them one. */
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/fuzz_inspect.%d.traj.json", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);

    struct insp_traj t;
    memset(&t, 0, sizeof t);
    mini_insp_traj_clear(&t);
    if (mini_insp_parse(&t, (const char *)data, size, 1) < 0) {
        if (!t.error || strchr(t.error, '\n'))
            abort();
        check_clean(t.error, strlen(t.error));
    } else {
        for (size_t s = 1; s < t.n_steps; s++)
            if (t.step_start[s] <= t.step_start[s - 1] || t.step_start[s] >= t.n_msgs)
                abort();
        for (size_t s = 0; s <= t.n_steps; s++) {
            struct insp_page p;
            if (mini_insp_page_build(&p, &t, s) == 0) {
                for (size_t i = 0; i < p.n; i++)
                    check_clean(p.lines[i].s, p.lines[i].n);
                mini_insp_page_free(&p);
            }
        }
    }
    mini_insp_traj_clear(&t);

    struct insp_set set;
    struct mini_err e;
    if (mini_insp_collect(path, &set, &e) == 0) {
        render(&set, 0);
        render(&set, 1);
        mini_insp_set_free(&set);
    }
    unlink(path);
    return 0;
}
