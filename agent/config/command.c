/* `mini config set|unset|edit` (see command.h).  The file is rewritten the
 * way python-dotenv's set_key and unset_key rewrite it (dotenv.h), into a
 * new file of mode 0600 renamed over the old one, as their temporary-file
 * rewrite leaves it. */
#include "command.h"
#include "config.h"
#include "dotenv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"

static void help(FILE *f, const char *file)
{
    fprintf(f,
            "Usage: mini config set KEY VALUE | unset KEY | edit\n"
            "Manage the global config file (mini-swe-agent's `mini-extra config`):\n"
            "  set KEY VALUE   set KEY in it (written KEY='VALUE')\n"
            "  unset KEY       remove KEY from it\n"
            "  edit            open it in $EDITOR (default nano)\n\n"
            "The file is %s\n"
            "($MSWEA_GLOBAL_CONFIG_DIR/.env, else $XDG_CONFIG_HOME/mini-swe-agent/.env, else\n"
            "~/.config/mini-swe-agent/.env); you can also edit it directly.\n",
            file ? file : "(no home directory)");
}

static int fail(const char *what, const struct mini_err *e)
{
    fprintf(stderr, "mini config: %s%s%s\n", what, *what ? ": " : "", e->msg);
    return 1;
}

/* set (value != NULL) or unset key in file. */
static int edit_key(const char *file, const char *key, const char *value)
{
    struct mini_err e;
    mini_err_clear(&e);
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT, out = MINI_BUF_INIT;
    if (access(file, F_OK) < 0) {
        if (!value) { /* unset_key: nothing to remove from, nothing created */
            fprintf(stderr, "mini config: warning: can't delete from %s - it doesn't exist.\n", file);
            return 0;
        }
    } else if (mini_read_file(file, &text, MINI_CONFIG_MAX_BYTES, &e) < 0) {
        return fail(file, &e);
    }
    bool found;
    if (mini_config_dotenv_edit(text.data ? text.data : "", text.len, key, value, &out, &found, &e) < 0)
        return fail(file, &e);
    if (mini_write_file_atomic(file, out.data ? out.data : "", out.len, 0600, &e) < 0)
        return fail(file, &e);
    if (!value && !found)
        fprintf(stderr, "mini config: warning: key %s not removed from %s - key doesn't exist.\n", key, file);
    return 0;
}

/* subprocess.run([editor, file]): the editor is one program name, not a
 * shell command. */
static int run_editor(const char *file)
{
    const char *editor = getenv("EDITOR");
    if (!editor)
        editor = "nano";
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mini config: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execlp(editor, editor, file, (char *)NULL);
        fprintf(stderr, "mini config: %s: %s\n", editor, strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 1;
    /* mini-extra ignores the editor's status; only a missing editor fails. */
    return WIFEXITED(st) && WEXITSTATUS(st) == 127 ? 1 : 0;
}

static bool valid_key(const char *key) { return *key && !strchr(key, '=') && !strpbrk(key, "\n\r"); }

int mini_config_command(int argc, char **argv)
{
    struct mini_err e;
    mini_err_clear(&e);
    /* Created like mini-swe-agent creates it when it starts. */
    _cleanup_free_ char *dir = mini_config_global_dir_new(true, &e);
    _cleanup_free_ char *file = NULL;
    if (dir && asprintf(&file, "%s/.env", dir) < 0)
        file = NULL;
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        help(cmd ? stdout : stderr, file);
        return cmd ? 0 : 2;
    }
    int want = !strcmp(cmd, "set") ? 2 : !strcmp(cmd, "unset") ? 1 : !strcmp(cmd, "edit") ? 0 : -1;
    if (want < 0) {
        fprintf(stderr, "mini config: unknown command \"%s\" (set, unset, edit)\n", cmd);
        return 2;
    }
    if (argc - 2 != want) {
        fprintf(stderr, "mini config %s: expected %s\n", cmd,
                want == 2       ? "KEY VALUE"
                    : want == 1 ? "KEY"
                                : "no arguments");
        return 2;
    }
    if (want > 0 && !valid_key(argv[2])) {
        fprintf(stderr, "mini config %s: not a variable name: \"%s\"\n", cmd, argv[2]);
        return 2;
    }
    if (!dir || !file)
        return fail("the global config directory", &e);
    if (want == 0)
        return run_editor(file);
    return edit_key(file, argv[2], want == 2 ? argv[3] : NULL);
}
