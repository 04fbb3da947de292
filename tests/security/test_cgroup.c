/* Per-command cgroups (sandbox/isolation/cgroup.c) on the real kernel.
 *
 * As root with cgroup v1 or a delegated v2 (this is the daemon's mode):
 *   - memory limit 64 MB, a child that touches 256 MB is OOM-killed and
 *     the result says oom_killed / limit memory, with a peak near 64 MB;
 *   - pids.max 16 and a fork loop: forks fail, the result says so;
 *   - CPU time is reported;
 *   - kill reaches a fork bomb; destroy of a group with live processes
 *     kills them and removes every directory;
 *   - 200 create/destroy cycles leave no directory behind, and fini
 *     removes the daemon's parents.
 * As root with cgroup v2 mounted and writable (even with no controllers
 * delegated, as on hybrid hosts): the v2 mechanics, forced: the process
 * moves into its leaf and back, attach, CLONE_INTO_CGROUP, kill, destroy.
 * As an unprivileged user (run again under setpriv as uid 65534): init
 * picks "none" gracefully when nothing is delegated.
 * Skips (77) when no cgroup mode can be tested at all. */
#include "check.h"
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB (1024ull * 1024ull)

/* Fork a child that waits until the parent attached it to c, then runs fn. */
static pid_t spawn_in(struct mini_cgroup *c, int (*fn)(void *), void *arg)
{
    int go[2];
    if (pipe(go) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(go[1]);
        char ch;
        if (read(go[0], &ch, 1) != 1)
            _exit(99);
        close(go[0]);
        _exit(fn(arg));
    }
    close(go[0]);
    struct mini_err e;
    int r = mini_cgroup_attach(c, pid, &e);
    CHECK_MSG(r == 0, "attach: %s", e.msg);
    if (write(go[1], "x", 1) != 1)
        perror("go");
    close(go[1]);
    return pid;
}

static int wait_status(pid_t pid)
{
    int st = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return st;
}

/* Reap every child (the test is a subreaper), waiting at most ms. */
static void reap_all(int ms)
{
    for (int i = 0; i < ms; i++) {
        pid_t w;
        while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
            ;
        if (w < 0 && errno == ECHILD)
            return;
        usleep(1000);
    }
}

static int count_dirs(const char *dir, const char *except)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
            (!except || strcmp(de->d_name, except)))
            n++;
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int procs_listed(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        n++;
    fclose(f);
    return n;
}

/* ------------------------------------------------------- child bodies */

static int eat_memory(void *arg)
{
    size_t n = *(size_t *)arg;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 2;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    return 0; /* survived: the limit did not work */
}

struct forker {
    int report;
};

static int fork_loop(void *arg)
{
    struct forker *f = arg;
    int n = 0, err = 0;
    for (int i = 0; i < 100; i++) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            err = errno;
            break;
        }
        n++;
    }
    int msg[2] = { n, err };
    if (write(f->report, msg, sizeof msg) != (ssize_t)sizeof msg)
        return 3;
    pause();
    return 0;
}

/* Keeps the busy loops from being optimised away. */
static volatile unsigned long sink;

static int fork_bomb(void *arg)
{
    (void)arg;
    for (int round = 0; round < 1000000; round++) {
        fork();
        for (unsigned i = 0; i < 100000; i++)
            sink += i;
    }
    return 0;
}

static int burn_cpu(void *arg)
{
    long ms = *(long *)arg;
    struct timespec ts;
    for (;;) {
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        if (ts.tv_sec * 1000 + ts.tv_nsec / 1000000 >= ms)
            return 0;
    }
}

static int tree(void *arg)
{
    struct forker *f = arg;
    pid_t kids[5];
    for (int i = 0; i < 5; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            setsid(); /* a new session does not take it out of the cgroup */
            pause();
            _exit(0);
        }
    }
    if (write(f->report, kids, sizeof kids) != (ssize_t)sizeof kids)
        return 3;
    pause();
    return 0;
}

static int quick(void *arg)
{
    (void)arg;
    return 7;
}

/* ------------------------------------------------------------ v1 / v2 */

static void test_limits(struct mini_cgroups *cg)
{
    struct mini_err e;
    struct mini_cgroup c = MINI_CGROUP_INIT;
    struct mini_cgroup_result r;

    /* Memory: 64 MB, the child touches 256 MB. */
    if (cg->ctrls & (1u << MINI_CGC_MEMORY)) {
        struct mini_limits lim = { .memory_bytes = 64 * MB };
        CHECK_MSG(mini_cgroup_create(cg, "oom", &lim, &c, &e) == 0, "create: %s", e.msg);
        CHECK(c.ctrls & (1u << MINI_CGC_MEMORY));
        CHECK(c.memory_limit == 64 * MB);
        size_t n = 256 * MB;
        pid_t pid = spawn_in(&c, eat_memory, &n);
        int st = wait_status(pid);
        CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the 256 MB child should be killed (status 0x%x)", st);
        CHECK(mini_cgroup_result(&c, &r) == 0);
        CHECK(r.oom_killed);
        CHECK(r.oom_kills >= 1);
        CHECK(r.limit == MINI_LIMIT_MEMORY);
        CHECK_MSG(r.peak_memory_kb > 32 * 1024 && r.peak_memory_kb <= 66 * 1024, "peak %lld KiB",
                  (long long)r.peak_memory_kb);
        printf("oom: killed, oom_kills %lld, peak %lld KiB, cpu %lld ms\n", (long long)r.oom_kills,
               (long long)r.peak_memory_kb, (long long)r.cpu_ms);
        char dir0[MINI_CG_PATH_MAX];
        snprintf(dir0, sizeof dir0, "%s", c.dirs[0]);
        mini_cgroup_destroy(&c);
        CHECK(!exists(dir0));
        CHECK(c.cg == NULL);
    } else {
        printf("note: no memory controller in this mode\n");
    }

    /* pids: 16, a loop of forks. */
    if (cg->ctrls & (1u << MINI_CGC_PIDS)) {
        struct mini_limits lim = { .pids = 16 };
        CHECK_MSG(mini_cgroup_create(cg, "pids", &lim, &c, &e) == 0, "create: %s", e.msg);
        CHECK(c.pids_limit == 16);
        int rep[2];
        CHECK(pipe(rep) == 0);
        struct forker f = { rep[1] };
        pid_t pid = spawn_in(&c, fork_loop, &f);
        close(rep[1]);
        int msg[2] = { -1, 0 };
        CHECK(read(rep[0], msg, sizeof msg) == (ssize_t)sizeof msg);
        close(rep[0]);
        CHECK_MSG(msg[0] >= 8 && msg[0] <= 15, "forks that worked: %d", msg[0]);
        CHECK_MSG(msg[1] == EAGAIN, "fork failed with %s", strerror(msg[1]));
        CHECK(mini_cgroup_result(&c, &r) == 0);
        CHECK(r.pids_limited && r.pids_events >= 1);
        CHECK(r.limit == MINI_LIMIT_PIDS);
        CHECK(!r.oom_killed);
        CHECK(mini_cgroup_kill(&c) == 0);
        int st = wait_status(pid);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        reap_all(2000);
        CHECK(procs_listed(c.dirs[0]) == 0);
        printf("pids: %d forks before EAGAIN, pids.events max %lld\n", msg[0], (long long)r.pids_events);
        mini_cgroup_destroy(&c);

        /* A fork bomb held by pids.max, then killed whole. */
        lim.pids = 64;
        CHECK(mini_cgroup_create(cg, "bomb", &lim, &c, &e) == 0);
        pid = spawn_in(&c, fork_bomb, NULL);
        usleep(300 * 1000);
        CHECK(procs_listed(c.dirs[0]) > 8);
        CHECK(mini_cgroup_kill(&c) == 0);
        CHECK(procs_listed(c.dirs[0]) == 0);
        wait_status(pid);
        reap_all(2000);
        mini_cgroup_destroy(&c);
    } else {
        printf("note: no pids controller in this mode\n");
    }

    /* CPU time. */
    if (cg->ctrls & (1u << MINI_CGC_CPUACCT)) {
        struct mini_limits lim = { .pids = 32 };
        CHECK(mini_cgroup_create(cg, "cpu", &lim, &c, &e) == 0);
        long ms = 300;
        pid_t pid = spawn_in(&c, burn_cpu, &ms);
        int st = wait_status(pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        CHECK(mini_cgroup_result(&c, &r) == 0);
        CHECK_MSG(r.cpu_ms >= 250 && r.cpu_ms < 5000, "cpu_ms %lld", (long long)r.cpu_ms);
        CHECK(r.limit == MINI_LIMIT_NONE);
        mini_cgroup_destroy(&c);
    }

    /* Destroy with live processes (one escaped into its own session). */
    {
        struct mini_limits lim = { .memory_bytes = 256 * MB, .pids = 64 };
        CHECK(mini_cgroup_create(cg, "live", &lim, &c, &e) == 0);
        int rep[2];
        CHECK(pipe(rep) == 0);
        struct forker f = { rep[1] };
        pid_t pid = spawn_in(&c, tree, &f);
        close(rep[1]);
        pid_t kids[5];
        CHECK(read(rep[0], kids, sizeof kids) == (ssize_t)sizeof kids);
        close(rep[0]);
        char dirs[MINI_CG_HIER_MAX][MINI_CG_PATH_MAX];
        size_t nd = c.n_dirs;
        for (size_t k = 0; k < nd; k++)
            snprintf(dirs[k], sizeof dirs[k], "%s", c.dirs[k]);
        mini_cgroup_destroy(&c);
        for (size_t k = 0; k < nd; k++)
            CHECK_MSG(!exists(dirs[k]), "%s still exists", dirs[k]);
        int st = wait_status(pid);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        reap_all(2000);
        for (int i = 0; i < 5; i++)
            CHECK_MSG(kill(kids[i], 0) < 0 && errno == ESRCH, "grandchild %d survived", (int)kids[i]);
        CHECK(cg->n_pending == 0);
    }

    /* Names and errors. */
    {
        struct mini_limits lim = { .pids = 8 };
        CHECK(mini_cgroup_create(cg, "../x", &lim, &c, &e) == -1);
        CHECK(mini_cgroup_create(cg, "", &lim, &c, &e) == -1);
        CHECK(mini_cgroup_create(cg, "dup", &lim, &c, &e) == 0);
        struct mini_cgroup d = MINI_CGROUP_INIT;
        CHECK(mini_cgroup_create(cg, "dup", &lim, &d, &e) == -1);
        CHECK(e.sys_errno == EEXIST);
        CHECK(d.cg == NULL);
        mini_cgroup_destroy(&d);
        mini_cgroup_destroy(&c);
        mini_cgroup_destroy(&c); /* twice is harmless */
    }

    /* 200 cycles; every 20th runs a process. */
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof name, "cycle-%d", i);
        struct mini_limits lim = { .memory_bytes = 32 * MB, .pids = 8 };
        if (mini_cgroup_create(cg, name, &lim, &c, &e) < 0) {
            CHECK_MSG(false, "cycle %d: %s", i, e.msg);
            break;
        }
        if (i % 20 == 0) {
            pid_t pid = spawn_in(&c, quick, NULL);
            int st = wait_status(pid);
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
        }
        mini_cgroup_destroy(&c);
    }
    for (size_t k = 0; k < cg->n_hier; k++)
        CHECK_MSG(count_dirs(cg->hier[k].parent, cg->mode == MINI_CG_V2 ? "daemon" : NULL) == 0,
                  "%s has leftover groups", cg->hier[k].parent);
    CHECK(cg->n_pending == 0);
    CHECK(cg->live == 0);
}

static void test_mode(const struct mini_caps *caps, enum mini_cg_mode mode)
{
    struct mini_cgroups cg;
    struct mini_err e;
    int r = mode == caps->cg_mode ? mini_cgroups_init(&cg, caps, &e) : mini_cgroups_init_mode(&cg, caps, mode, &e);
    CHECK_MSG(r == 0, "init %s: %s", mini_cg_mode_name(mode), e.msg);
    if (r < 0)
        return;
    printf("%s\n", cg.note);
    CHECK(cg.mode == mode);
    CHECK(cg.n_hier >= 1);
    struct mini_caps after = *caps;
    mini_cgroups_update_caps(&cg, &after);
    CHECK(after.cg_mode == mode && strcmp(after.cg_why, cg.note) == 0);
    CHECK(mini_caps_features(&after) & MINI_FEAT_CGROUPS);
    char parents[MINI_CG_HIER_MAX][MINI_CG_PATH_MAX];
    for (size_t k = 0; k < cg.n_hier; k++) {
        snprintf(parents[k], sizeof parents[k], "%s", cg.hier[k].parent);
        CHECK(exists(parents[k]));
    }
    size_t np = cg.n_hier;
    test_limits(&cg);
    /* A group left undestroyed is removed by fini, its process killed. */
    struct mini_cgroup c = MINI_CGROUP_INIT;
    struct mini_limits lim = { .pids = 8 };
    CHECK(mini_cgroup_create(&cg, "left", &lim, &c, &e) == 0);
    int rep[2];
    CHECK(pipe(rep) == 0);
    struct forker f = { rep[1] };
    pid_t pid = spawn_in(&c, fork_loop, &f);
    close(rep[1]);
    int msg[2];
    CHECK(read(rep[0], msg, sizeof msg) == (ssize_t)sizeof msg);
    close(rep[0]);
    mini_cgroups_fini(&cg);
    int st = wait_status(pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    reap_all(2000);
    for (size_t k = 0; k < np; k++)
        CHECK_MSG(!exists(parents[k]), "%s survived fini", parents[k]);
    CHECK(cg.mode == MINI_CG_NONE);
}

/* ------------------------------------------------- v2 mechanics (forced) */

static void own_v2(char *out, size_t size)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024];
    out[0] = '\0';
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, size, "%s", line + 3);
        }
    if (f)
        fclose(f);
}

static int sleeper(void *arg)
{
    (void)arg;
    pause();
    return 0;
}

static void test_v2_mechanics(const struct mini_caps *caps)
{
    struct mini_cgroups cg;
    struct mini_err e;
    char before[1024], now[1024];
    own_v2(before, sizeof before);
    if (mini_cgroups_init_mode(&cg, caps, MINI_CG_V2, &e) < 0) {
        CHECK_MSG(false, "forced v2: %s", e.msg);
        return;
    }
    printf("%s\n", cg.note);
    own_v2(now, sizeof now);
    char want[64];
    snprintf(want, sizeof want, "/mini-sandboxd-%d/daemon", (int)getpid());
    CHECK_MSG(strstr(now, want) != NULL, "the process should live in its leaf: %s", now);

    struct mini_cgroup c = MINI_CGROUP_INIT;
    struct mini_limits lim = { .memory_bytes = 64 * MB, .pids = 16 };
    CHECK_MSG(mini_cgroup_create(&cg, "v2", &lim, &c, &e) == 0, "create: %s", e.msg);
    CHECK(c.fd >= 0);
    pid_t pid = spawn_in(&c, sleeper, NULL);
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "r");
    bool in = false;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0 && strstr(line, "/c-v2"))
            in = true;
    if (f)
        fclose(f);
    CHECK(in);

    /* clone3 straight into the group. */
    struct clone_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)c.fd };
    long cp = syscall(SYS_clone3, &ca, sizeof ca);
    if (cp == 0) {
        char own[1024];
        own_v2(own, sizeof own);
        _exit(strstr(own, "/c-v2") ? 0 : 1);
    }
    CHECK(cp > 0);
    if (cp > 0) {
        int st = wait_status((pid_t)cp);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK(mini_cgroup_kill(&c) == 0);
    int st = wait_status(pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    struct mini_cgroup_result r;
    CHECK(mini_cgroup_result(&c, &r) == 0);
    CHECK(r.cpu_ms >= 0);
    char dir[MINI_CG_PATH_MAX], parent[MINI_CG_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c.dirs[0]);
    snprintf(parent, sizeof parent, "%s", cg.hier[0].parent);
    mini_cgroup_destroy(&c);
    CHECK(!exists(dir));
    mini_cgroups_fini(&cg);
    CHECK(!exists(parent));
    own_v2(now, sizeof now);
    CHECK_STR(now, before);
}

/* ------------------------------------------------------------ rootless */

static int as_nobody(void)
{
    struct mini_caps caps;
    struct mini_err e;
    if (mini_caps_detect(&caps, &e) < 0) {
        fprintf(stderr, "detect: %s\n", e.msg);
        return 1;
    }
    struct mini_cgroups cg;
    int r = mini_cgroups_init(&cg, &caps, &e);
    printf("as uid %u: mode %s: %s\n", (unsigned)geteuid(), mini_cg_mode_name(cg.mode), cg.note);
    if (caps.cg_mode != MINI_CG_NONE) {
        /* something is delegated to this user: init must use it */
        int ok = r == 0 && cg.mode == caps.cg_mode;
        mini_cgroups_fini(&cg);
        return ok ? 0 : 1;
    }
    if (r != 0 || cg.mode != MINI_CG_NONE || !strstr(cg.note, "no cgroups"))
        return 1;
    mini_cgroups_update_caps(&cg, &caps);
    if (caps.cg_mode != MINI_CG_NONE || (mini_caps_features(&caps) & MINI_FEAT_CGROUPS))
        return 1;
    struct mini_cgroup c = MINI_CGROUP_INIT;
    struct mini_limits lim = { .pids = 8 };
    if (mini_cgroup_create(&cg, "x", &lim, &c, &e) != -1 || e.code != MINI_E_ISOLATION_UNAVAILABLE)
        return 1;
    struct mini_cgroup_result res;
    mini_cgroup_result(&c, &res);
    if (res.oom_killed || res.cpu_ms != -1 || mini_cgroup_kill(&c) != 0)
        return 1;
    mini_cgroup_destroy(&c);
    mini_cgroups_fini(&cg);
    return 0;
}

static void test_nobody(void)
{
    if (access("/usr/bin/setpriv", X_OK) != 0) {
        printf("note: setpriv is not installed; rootless \"none\" mode not tested\n");
        return;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
              self, "--nobody", (char *)NULL);
        _exit(127);
    }
    int st = wait_status(pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as nobody: status 0x%x", st);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--nobody") == 0)
        return as_nobody();
    /* Orphans of the test's children come back here to be reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct mini_caps caps;
    struct mini_err e;
    if (mini_caps_detect(&caps, &e) < 0) {
        fprintf(stderr, "detect: %s\n", e.msg);
        return 1;
    }
    printf("cgroups: %s\n", caps.cg_why);
    bool tested = false;
    if (geteuid() != 0) {
        struct mini_cgroups cg;
        int r = mini_cgroups_init(&cg, &caps, &e);
        CHECK(r == 0);
        CHECK(cg.mode == caps.cg_mode);
        if (cg.mode != MINI_CG_NONE) {
            mini_cgroups_fini(&cg);
            test_mode(&caps, caps.cg_mode);
        } else {
            CHECK(strstr(cg.note, "no cgroups") != NULL);
            mini_cgroups_fini(&cg);
        }
        return check_summary();
    }
    if (caps.cg_mode != MINI_CG_NONE) {
        test_mode(&caps, caps.cg_mode);
        tested = true;
    }
    if (caps.cg_mode != MINI_CG_V2 && caps.v2_mounted && caps.v2_writable) {
        test_v2_mechanics(&caps);
        tested = true;
    }
    test_nobody();
    if (!tested) {
        printf("SKIP: no usable cgroup v1 or v2 here (%s)\n", caps.cg_why);
        return 77;
    }
    return check_summary();
}
