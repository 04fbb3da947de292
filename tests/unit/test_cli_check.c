/* `mini-sandbox check` (sandbox/cli/cli_check.c): the table, --json, exit
 * statuses, a profile file, and a refusal (a profile requiring cgroups,
 * assessed as an unprivileged user, when that user has none).
 * argv[1]: the source tree's profiles/ directory. */
#include "check.h"
#include "cli_check.h"
#include "mini/io.h"

#include <cjson/cJSON.h>
#include <grp.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out_path[] = "/tmp/mini-test-check-XXXXXX";
static struct mini_buf out = MINI_BUF_INIT;

/* Run mini_cli_check with stdout captured into `out`. */
static int run_check(int argc, char **argv)
{
    fflush(stdout);
    int saved = dup(1);
    int fd = open(out_path, O_RDWR | O_TRUNC);
    if (saved < 0 || fd < 0 || dup2(fd, 1) < 0) {
        perror("redirecting stdout");
        exit(1);
    }
    int rc = mini_cli_check(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    mini_buf_reset(&out);
    if (mini_read_to_end(fd, &out, 1 << 20) < 0) {
        perror("reading the output");
        exit(1);
    }
    close(fd);
    if (!out.data)
        mini_buf_puts(&out, "");
    return rc;
}

static bool any_refused(cJSON *profiles)
{
    cJSON *p;
    cJSON_ArrayForEach (p, profiles)
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "status")), "refused") == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    setenv("MINI_PROFILE_DIR", dir, 1);
    int tfd = mkstemp(out_path);
    if (tfd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(tfd);

    char *json_args[] = { "check", "--json", NULL };
    int rc = run_check(2, json_args);
    cJSON *j = cJSON_Parse(out.data);
    CHECK_MSG(j != NULL, "--json output is not JSON: %.200s", out.data);
    cJSON *machine = cJSON_GetObjectItemCaseSensitive(j, "machine");
    cJSON *profiles = cJSON_GetObjectItemCaseSensitive(j, "profiles");
    CHECK(cJSON_IsObject(machine) && cJSON_IsObject(profiles));
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(machine, "features")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(machine, "namespaces")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(machine, "cgroups")));
    const char *names[] = { "permissive", "standard", "strict" };
    for (int i = 0; i < 3; i++) {
        cJSON *p = cJSON_GetObjectItemCaseSensitive(profiles, names[i]);
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "status"));
        CHECK_MSG(st && (!strcmp(st, "full") || !strcmp(st, "degraded") || !strcmp(st, "refused")), "%s: %s", names[i],
                  st ? st : "(none)");
        CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(p, "missing")));
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "summary")));
    }
    CHECK(rc == (any_refused(profiles) ? 1 : 0));
    cJSON_Delete(j);

    char *table_args[] = { "check", NULL };
    int rc2 = run_check(1, table_args);
    CHECK(rc2 == rc);
    CHECK(strstr(out.data, "FEATURE") && strstr(out.data, "user namespace") && strstr(out.data, "landlock"));
    CHECK(strstr(out.data, "PROFILE") && strstr(out.data, "strict") && strstr(out.data, "standard"));
    fputs(out.data, stdout);

    char file[4096];
    snprintf(file, sizeof file, "%s/standard.json", dir);
    char *file_args[] = { "check", "--profile", file, "--json", NULL };
    rc = run_check(4, file_args);
    j = cJSON_Parse(out.data);
    profiles = cJSON_GetObjectItemCaseSensitive(j, "profiles");
    CHECK(cJSON_GetArraySize(profiles) == 1 && cJSON_GetObjectItemCaseSensitive(profiles, "standard"));
    CHECK(rc == (any_refused(profiles) ? 1 : 0));
    cJSON_Delete(j);

    char *bad_args[] = { "check", "--profile", "no-such-profile", NULL };
    CHECK(run_check(3, bad_args) == 2);
    char *opt_args[] = { "check", "--frobnicate", NULL };
    CHECK(run_check(2, opt_args) == 2);
    char *extra_args[] = { "check", "extra", NULL };
    CHECK(run_check(2, extra_args) == 2);
    char *help_args[] = { "check", "--help", NULL };
    CHECK(run_check(2, help_args) == 0 && strstr(out.data, "Usage: mini-sandbox check"));

    /* A refusal: require cgroups, assessed by an unprivileged user (who
     * has none here unless a v2 subtree is delegated to it). */
    char req[] = "/tmp/mini-test-req-XXXXXX.json";
    int rfd = mkstemps(req, 5);
    const char *text = "{\"name\": \"needs-cgroups\", \"require\": [\"cgroups\"]}";
    CHECK(rfd >= 0 && write(rfd, text, strlen(text)) == (ssize_t)strlen(text));
    if (rfd >= 0) {
        close(rfd);
        chmod(req, 0644);
        chmod(out_path, 0666);
    }
    if (geteuid() == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                _exit(10);
            char *req_args[] = { "check", "--profile", req, NULL };
            int r = run_check(3, req_args);
            cJSON *rj = NULL;
            char *json_req[] = { "check", "--profile", req, "--json", NULL };
            int r2 = run_check(4, json_req);
            rj = cJSON_Parse(out.data);
            cJSON *cg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "machine"), "cgroups");
            const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cg, "mode"));
            if (!mode)
                _exit(11);
            if (strcmp(mode, "none") != 0)
                _exit(77); /* cgroups delegated to nobody: no refusal to see */
            cJSON *p =
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "profiles"), "needs-cgroups");
            const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "status"));
            const char *remedy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "remedy"));
            _exit(r == 1 && r2 == 1 && st && !strcmp(st, "refused") && remedy && *remedy ? 0 : 12);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
            printf("note: nobody has delegated cgroups here; refusal not exercised\n");
        else
            CHECK_MSG(WEXITSTATUS(st) == 0, "refusal as nobody: child status %d", WEXITSTATUS(st));
    } else {
        char *req_args[] = { "check", "--profile", req, "--json", NULL };
        rc = run_check(4, req_args);
        j = cJSON_Parse(out.data);
        cJSON *cg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "machine"), "cgroups");
        const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cg, "mode"));
        CHECK(rc == (mode && strcmp(mode, "none") == 0 ? 1 : 0));
        cJSON_Delete(j);
    }
    unlink(req);
    unlink(out_path);
    mini_buf_free(&out);
    return check_summary();
}
