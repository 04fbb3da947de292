/* The degraded path's confinement (sandbox/isolation/landlock.c) on the real kernel.
 * A forked child applies a profile with a temporary workspace and tmpdir,
 * then tries things and reports each result through a pipe; the parent
 * checks them:
 *   standard profile (binds /usr, /etc, ..., hides /etc/shadow, network none):
 *     writes to the workspace and tmpdir work, anywhere else EACCES; a file
 *     in a directory outside the allow list is unreadable; /usr/bin/env is
 *     readable and executables run; /etc/passwd is readable but
 *     /etc/shadow is not, and /etc cannot be listed; the home directory is
 *     unreadable; /proc/self works, /proc/<parent>/environ does not;
 *     /dev/null works; socket() fails, socketpair works; TCP connect to a
 *     listener on 127.0.0.1 fails (ABI >= 4); kill(parent, 0) fails
 *     (ABI >= 6); setsid/setpgid fail.
 *   a "/"-bind profile with a hidden directory and the host network:
 *     the hidden directory is unreadable, its siblings readable, nothing
 *     writable but the workspace, TCP works, AF_UNIX sockets do not.
 * Also the plan itself (rules, carving, notes).  argv[1]: profiles/.
 * Skips (77) without Landlock. */
#include "childcheck.h"
#include "landlock.h"
#include "mini/profile.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *pdir;
static char base[64];
static int abi;
static int listen_port;

static char *path(const char *rel)
{
    static char buf[8][512];
    static int i;
    char *p = buf[i++ % 8];
    snprintf(p, 512, "%s/%s", base, rel);
    return p;
}

static int write_file(const char *p, const char *text)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static long run_true(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/usr/bin/true", "true", (char *)NULL);
        _exit(errno == EACCES ? 126 : 127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int tcp_connect(int fd)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

static struct mini_profile *load(const char *name)
{
    struct mini_err e;
    struct mini_profile *p = mini_profile_load_builtin(pdir, name, &e);
    if (!p) {
        fprintf(stderr, "%s: %s\n", name, e.msg);
        exit(1);
    }
    return p;
}

/* ------------------------------------------------------ standard child */

static void child_standard(void)
{
    struct mini_profile *p = load("standard");
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* made before: only Landlock can stop connect */
    struct mini_err e;
    if (mini_landlock_apply(p, path("ws"), path("tmp"), &e) < 0) {
        child_report("apply", 0, -1, e.sys_errno);
        fprintf(stderr, "apply: %s\n", e.msg);
        _exit(0);
    }
    child_report("apply", 1, 0, 0);
    WORKS("write workspace", write_file(path("ws/new.txt"), "hi"));
    WORKS("mkdir workspace", mkdir(path("ws/sub"), 0755));
    WORKS("rename in workspace", rename(path("ws/new.txt"), path("ws/sub/moved.txt")));
    WORKS("write tmpdir", write_file(path("tmp/t.txt"), "x"));
    WORKS("rename workspace->tmpdir", rename(path("ws/sub/moved.txt"), path("tmp/moved.txt")));
    FAILS("write beside workspace", EACCES, write_file(path("beside.txt"), "x"));
    FAILS("write outside dir", EACCES, write_file(path("outside/new.txt"), "x"));
    FAILS("truncate outside file", EACCES, truncate(path("outside/secret.txt"), 0));
    FAILS("write /etc", EACCES, write_file("/etc/mini-landlock-test", "x"));
    FAILS("read outside file", EACCES, open(path("outside/secret.txt"), O_RDONLY | O_CLOEXEC));
    FAILS("list outside dir", EACCES, open(path("outside"), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    WORKS_FD("fd:read /usr/bin/env", open("/usr/bin/env", O_RDONLY | O_CLOEXEC));
    child_report("exec /usr/bin/true", run_true() == 0, 0, 0);
    WORKS_FD("fd:read /etc/passwd", open("/etc/passwd", O_RDONLY | O_CLOEXEC));
    if (access("/etc/shadow", F_OK) == 0)
        FAILS("read /etc/shadow (hidden)", EACCES, open("/etc/shadow", O_RDONLY | O_CLOEXEC));
    FAILS("list /etc (carved)", EACCES, open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    const char *home = getenv("HOME");
    if (home && strcmp(home, "/") != 0 && access(home, F_OK) == 0 && strncmp(home, "/usr", 4) != 0)
        FAILS("list $HOME", EACCES, open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    FAILS("list /", EACCES, open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    WORKS_FD("fd:read /proc/self/status", open("/proc/self/status", O_RDONLY | O_CLOEXEC));
    char env[64];
    snprintf(env, sizeof env, "/proc/%d/environ", (int)getppid());
    FAILS("read parent's environ", EACCES, open(env, O_RDONLY | O_CLOEXEC));
    WORKS_FD("fd:write /dev/null O_TRUNC", open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC));
    WORKS_FD("fd:read /dev/urandom", open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    FAILS("socket AF_INET", EAFNOSUPPORT, socket(AF_INET, SOCK_DGRAM, 0));
    FAILS("socket AF_INET6", EAFNOSUPPORT, socket(AF_INET6, SOCK_STREAM, 0));
    FAILS("socket AF_UNIX", EACCES, socket(AF_UNIX, SOCK_STREAM, 0));
    int sv[2];
    WORKS("socketpair AF_UNIX", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    if (abi >= 4)
        FAILS("connect 127.0.0.1 (net none)", EACCES, tcp_connect(tcp));
    if (abi >= 6)
        FAILS("kill(parent, 0)", EPERM, kill(getppid(), 0));
    WORKS("kill(self, 0)", kill(getpid(), 0));
    FAILS("setsid", EPERM, setsid());
    FAILS("setpgid", EPERM, setpgid(0, 0));
    _exit(0);
}

/* ----------------------------------------------------- "/" bind child */

static void child_root_bind(void)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"rootbind\", \"namespaces\": {\"net\": false}, \"network\": \"host\","
             " \"filesystem\": {\"binds\": [\"/\"], \"hide\": [\"%s\", \"/etc/shadow\"],"
             " \"tmpfs\": [{\"path\": \"/var/tmp\", \"size_mb\": 16, \"mode\": \"1777\"}],"
             " \"workspace_writable\": true}}",
             path("hidden"));
    struct mini_err e;
    cJSON *j = cJSON_Parse(json);
    struct mini_profile *p = j ? mini_profile_from_json(j, "rootbind.json", &e) : NULL;
    cJSON_Delete(j);
    if (!p) {
        child_report("profile", 0, -1, 0);
        fprintf(stderr, "profile: %s\n", e.msg);
        _exit(0);
    }
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (mini_landlock_apply(p, path("ws"), path("tmp"), &e) < 0) {
        child_report("apply", 0, -1, e.sys_errno);
        fprintf(stderr, "apply: %s\n", e.msg);
        _exit(0);
    }
    child_report("apply", 1, 0, 0);
    FAILS("read hidden file", EACCES, open(path("hidden/secret.txt"), O_RDONLY | O_CLOEXEC));
    FAILS("list hidden dir", EACCES, open(path("hidden"), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    WORKS_FD("fd:read sibling file", open(path("outside/secret.txt"), O_RDONLY | O_CLOEXEC));
    WORKS_FD("fd:list sibling dir", open(path("outside"), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    FAILS("list the parent of hidden", EACCES, open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    FAILS("write sibling file", EACCES, open(path("outside/secret.txt"), O_WRONLY | O_CLOEXEC));
    WORKS("write workspace", write_file(path("ws/root.txt"), "x"));
    WORKS_FD("fd:read /usr/bin/env", open("/usr/bin/env", O_RDONLY | O_CLOEXEC));
    child_report("exec /usr/bin/true", run_true() == 0, 0, 0);
    if (access("/etc/shadow", F_OK) == 0)
        FAILS("read /etc/shadow (hidden)", EACCES, open("/etc/shadow", O_RDONLY | O_CLOEXEC));
    WORKS_FD("fd:read /etc/passwd", open("/etc/passwd", O_RDONLY | O_CLOEXEC));
    FAILS("list /var/tmp (tmpfs path)", EACCES, open("/var/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    WORKS("connect 127.0.0.1 (net host)", tcp_connect(tcp));
    FAILS("socket AF_UNIX", EACCES, socket(AF_UNIX, SOCK_STREAM, 0));
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    child_report("socket AF_INET (net host)", s >= 0, s, errno);
    _exit(0);
}

/* As the daemon's degraded path does before Landlock: no capabilities
 * (a root test keeps uid 0 but loses CAP_DAC_OVERRIDE, CAP_SYS_PTRACE...). */
static void drop_caps(void)
{
    cap_t none = cap_init();
    if (!none || cap_set_proc(none) < 0) {
        child_report("dropping capabilities", 0, -1, errno);
        _exit(0);
    }
    cap_free(none);
}

static void (*child_fn)(void);

static void drop_caps_then_fn(void)
{
    drop_caps();
    child_fn();
}

static void run_child(void (*fn)(void), const char *label)
{
    int n = 0;
    child_fn = fn;
    int st = child_run(drop_caps_then_fn, label, &n);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child status 0x%x", label, st);
    CHECK_MSG(n >= 10, "%s: only %d results", label, n);
    printf("%s: %d checks in the child\n", label, n);
}

/* ------------------------------------------------------------ the plan */

static const struct mini_landlock_rule *find_rule(const struct mini_landlock_plan *pl, const char *p)
{
    for (size_t i = 0; i < pl->n_rules; i++)
        if (strcmp(pl->rules[i].path, p) == 0)
            return &pl->rules[i];
    return NULL;
}

static void test_plan(void)
{
    struct mini_profile *p = load("standard");
    struct mini_landlock_plan pl;
    struct mini_err e;
    char ws[512], tmp[512];
    CHECK(realpath(path("ws"), ws) && realpath(path("tmp"), tmp));
    CHECK_MSG(mini_landlock_plan(&pl, p, path("ws"), path("tmp"), &e) == 0, "plan: %s", e.msg);
    CHECK(pl.abi == (abi > MINI_LANDLOCK_ABI_MAX ? MINI_LANDLOCK_ABI_MAX : abi));
    CHECK(pl.deny_unix_sockets && pl.deny_inet_sockets && pl.deny_setsid);
    CHECK((pl.handled_net != 0) == (abi >= 4));
    CHECK((pl.scoped != 0) == (abi >= 6));
    const struct mini_landlock_rule *r = find_rule(&pl, ws);
    CHECK(r && (r->access & MINI_LL_FS_WRITE_FILE) && (r->access & MINI_LL_FS_MAKE_REG));
    r = find_rule(&pl, tmp);
    CHECK(r && (r->access & MINI_LL_FS_REMOVE_FILE));
    r = find_rule(&pl, "/usr");
    CHECK(r && r->access == (MINI_LL_FS_EXECUTE | MINI_LL_FS_READ_FILE | MINI_LL_FS_READ_DIR));
    CHECK(find_rule(&pl, "/proc") != NULL);
    CHECK(find_rule(&pl, "/dev/null") != NULL);
    CHECK(find_rule(&pl, "/etc") == NULL); /* carved, not granted whole */
    CHECK(find_rule(&pl, "/etc/passwd") != NULL);
    CHECK(find_rule(&pl, "/etc/shadow") == NULL);
    CHECK(find_rule(&pl, "/") == NULL);
    for (size_t i = 0; i < pl.n_rules; i++)
        CHECK_MSG(!(pl.rules[i].access & ~pl.handled_fs), "%s has rights the ABI does not handle", pl.rules[i].path);
    bool carved_note = false;
    for (size_t i = 0; i < pl.n_notes; i++)
        if (strstr(pl.notes[i], "cannot be listed") && strstr(pl.notes[i], "/etc"))
            carved_note = true;
    CHECK(carved_note);
    CHECK(pl.n_notes >= 3);
    mini_landlock_plan_free(&pl);
    CHECK(pl.rules == NULL && pl.n_rules == 0);

    /* A missing workspace is an error, not a silently smaller sandbox. */
    CHECK(mini_landlock_plan(&pl, p, path("no-such-dir"), NULL, &e) == -1);
    CHECK(e.code == MINI_E_SPAWN_FAILED && e.sys_errno == ENOENT);
    mini_profile_free(p);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    pdir = argv[1];
    abi = mini_landlock_abi();
    if (abi < 1) {
        printf("SKIP: Landlock is unavailable (%s)\n", strerror(errno));
        return 77;
    }
    printf("Landlock ABI %d\n", abi);
    snprintf(base, sizeof base, "/tmp/mini-landlock-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    int ok = mkdir(path("ws"), 0755) | mkdir(path("tmp"), 0755) | mkdir(path("outside"), 0755) |
        mkdir(path("hidden"), 0755) | write_file(path("outside/secret.txt"), "secret") |
        write_file(path("hidden/secret.txt"), "hidden");
    if (ok != 0) {
        perror("setting up");
        return 1;
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 8) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
        perror("listener");
        return 1;
    }
    listen_port = ntohs(sa.sin_port);

    test_plan();
    run_child(child_standard, "standard");
    run_child(child_root_bind, "root bind");

    close(lfd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", base);
    return check_summary();
}
