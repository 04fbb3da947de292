/* mini inspect: the command line (inspect.h). */
#include "inspect/inspect.h"
#include "internal.h"
#include "mini/cleanup.h"
#include "mini/io.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini inspect [OPTION]... [PATH]\n"
            "Browse trajectories: PATH is a .traj.json file or a folder searched for them\n"
            "(a mini batch output folder, say); default: the current directory.\n\n"
            "On a terminal: a full-screen browser (the keys are in its footer). Otherwise,\n"
            "or with --text: the same content as plain text.\n\n"
            "      --html OUT.html   write one self-contained HTML report instead ('-': stdout)\n"
            "      --text            plain text even on a terminal\n"
            "      --list            plain text: only the list of trajectories\n"
            "      --no-prompts      leave out the system and instance prompts (text, HTML)\n"
            "  -h, --help\n\n"
            "Exit status: 0, 1 when a trajectory could not be read (the others are still\n"
            "shown) or the output could not be written, 2 for bad usage.\n");
}

static void print_errors(const struct insp_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->t[i].error)
            fprintf(stderr, "mini inspect: %s: %s\n", set->t[i].path, set->t[i].error);
}

/* The HTML report into out ("-": stdout), through a temporary file
 * renamed over it: never half a report under its name. */
static int write_html(const char *out, struct insp_set *set, bool prompts)
{
    if (strcmp(out, "-") == 0) {
        if (mini_insp_html_render(stdout, set, prompts) < 0) {
            fprintf(stderr, "mini inspect: writing the report: %s\n", strerror(errno));
            return -1;
        }
        return 0;
    }
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", out) < 0) {
        fprintf(stderr, "mini inspect: out of memory\n");
        return -1;
    }
    /* Created afresh, never through a symlink: the report may be written
     * where a sandboxed command wrote (a workspace), which may have planted
     * a link at OUT.html.tmp. */
    int fd = mini_open_new(tmp, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int ferr = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        fprintf(stderr, "mini inspect: %s: %s\n", out, strerror(ferr));
        return -1;
    }
    int rc = mini_insp_html_render(f, set, prompts);
    int err = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, out) < 0) {
        rc = -1;
        err = errno;
    }
    if (rc < 0) {
        unlink(tmp);
        fprintf(stderr, "mini inspect: writing %s: %s\n", out, strerror(err));
    }
    return rc;
}

int mini_inspect_main(int argc, char **argv)
{
    enum { OPT_HTML = 256, OPT_TEXT, OPT_LIST, OPT_NO_PROMPTS };
    static const struct option opts[] = {
        {"html", required_argument, NULL, OPT_HTML},     {"text", no_argument, NULL, OPT_TEXT},
        {"list", no_argument, NULL, OPT_LIST},           {"no-prompts", no_argument, NULL, OPT_NO_PROMPTS},
        {"help", no_argument, NULL, 'h'},                {NULL, 0, NULL, 0},
    };
    const char *html = NULL;
    bool text = false, list = false, prompts = true;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HTML: html = optarg; break;
        case OPT_TEXT: text = true; break;
        case OPT_LIST: list = text = true; break;
        case OPT_NO_PROMPTS: prompts = false; break;
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "Try 'mini inspect --help'.\n"); return 2;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "mini inspect: one PATH at most\nTry 'mini inspect --help'.\n");
        return 2;
    }
    if (html && text) {
        fprintf(stderr, "mini inspect: --html and --text/--list do not go together\nTry 'mini inspect --help'.\n");
        return 2;
    }
    const char *path = optind < argc ? argv[optind] : ".";
    setlocale(LC_ALL, "");

    struct insp_set set;
    struct mini_err e;
    if (mini_insp_collect(path, &set, &e) < 0) {
        fprintf(stderr, "mini inspect: %s\n", e.msg);
        return 1;
    }
    bool tui = !html && !text && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    int rc = set.n_errors ? 1 : 0;
    if (!tui || !set.folder)
        print_errors(&set);
    if (set.n_errors == set.n && !set.folder) {
        /* The one file given cannot be read: said above. */
    } else if (html) {
        if (write_html(html, &set, prompts) < 0)
            rc = 1;
    } else if (tui && mini_insp_tui_run(&set, &e) == 0) {
        if (set.folder)
            print_errors(&set);
    } else {
        if (tui)
            fprintf(stderr, "mini inspect: %s; showing plain text\n", e.msg);
        if (tui && set.folder)
            print_errors(&set);
        if (mini_insp_text_render(stdout, &set, list, prompts) < 0) {
            fprintf(stderr, "mini inspect: writing output: %s\n", strerror(errno));
            rc = 1;
        }
    }
    mini_insp_set_free(&set);
    return rc;
}
