/* mini-sandbox bench: latency and throughput of sandboxed commands against
 * a bare fork+exec of the same command and, when installed, bwrap, measured
 * interleaved in one run so that the machine's state is shared. */
#include "bench.h"
#include "cli_util.h"
#include "mini/client.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/path.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* sandbox: agent-paced (the pool ready before each command); back to
 * back: the same session, each command sent as soon as the previous one's
 * exit arrives; one-shot: `mini-sandbox run` as a fresh process each time,
 * against the bench's daemon and with a private daemon of its own. */
enum { K_BARE, K_CLONE, K_SANDBOX, K_B2B, K_IMAGE, K_ONESHOT, K_ONESHOT_PRIV, K_BWRAP, K_BWRAP_SH, K_COUNT };
static const char *const kind_names[K_COUNT] = { "bare fork+exec", "clone, 7 new ns", "sandbox",
                                                 "back to back",   "sandbox, image",  "run, daemon",
                                                 "run, private",   "bwrap",           "bwrap, sh -c" };
static const char *const kind_keys[K_COUNT] = { "bare",          "clone_ns",    "sandbox",         "back_to_back",
                                                "sandbox_image", "oneshot_run", "oneshot_private", "bwrap",
                                                "bwrap_sh" };

/* The kernel's own floor for a command in fresh namespaces: clone() with
 * the seven namespaces every sandbox gets, then exec, nothing else (no ids
 * mapped, no root built, no seccomp, no limits).  What the sandbox costs
 * above this row is ours; what this row costs above bare is the kernel's. */
#define ALL_NS \
    (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

struct series {
    double *ms;
    size_t n;
    double throughput; /* runs per second at the given concurrency */
};

/* A scratch directory PREFIX.XXXXXX in $TMPDIR (an absolute one), else /tmp. */
static int bench_mkdtemp(char *buf, size_t size, const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    int n = snprintf(buf, size, "%s/%s.XXXXXX", tmp, prefix);
    return n < 0 || (size_t)n >= size || !mkdtemp(buf) ? -1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A ratio for --json: null when it could not be measured. */
static void json_ratio(char *buf, size_t size, double v)
{
    if (isnan(v))
        snprintf(buf, size, "null");
    else
        snprintf(buf, size, "%.3f", v);
}

static double pct(const struct series *s, double p)
{
    if (s->n == 0)
        return NAN;
    size_t i = (size_t)ceil(p / 100.0 * (double)s->n);
    if (i > 0)
        i--;
    return s->ms[i < s->n ? i : s->n - 1];
}

/* The command both baselines run: argv, NULL-terminated. */
struct cmd {
    char **argv;          /* the command itself */
    char **bwrap_argv;    /* bwrap ... -- command */
    char **bwrap_sh_argv; /* bwrap ... /bin/sh -c command: what `run` starts for one word */
};

/* fork+exec argv, or clone with `ns` (new namespaces) and exec. */
static pid_t spawn(char **argv, unsigned long ns)
{
    pid_t pid = ns ? (pid_t)syscall(SYS_clone, ns | SIGCHLD, NULL, NULL, NULL, NULL) : fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int run_local(char **argv, unsigned long ns, double *ms)
{
    double t0 = ((double)mini_mono_ns() / 1e6);
    pid_t pid = spawn(argv, ns);
    if (pid < 0)
        return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *ms = ((double)mini_mono_ns() / 1e6) - t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* C at a time until n have finished; returns runs per second. */
static double throughput_local(char **argv, unsigned long ns, size_t n, int conc)
{
    double t0 = ((double)mini_mono_ns() / 1e6);
    size_t started = 0, done = 0;
    int running = 0;
    while (done < n) {
        while (running < conc && started < n) {
            if (spawn(argv, ns) < 0)
                return NAN;
            started++;
            running++;
        }
        int st;
        if (wait(&st) > 0) {
            running--;
            done++;
        } else if (errno != EINTR) {
            return NAN;
        }
    }
    return (double)n / ((((double)mini_mono_ns() / 1e6) - t0) / 1e3);
}

/* --------------------------------------------------------- the sandbox */

struct conn {
    struct mini_client cl;
    char *session;
    struct cmd *cmd;
    int64_t next_id;
};

static int send_exec(struct conn *k, int64_t id, struct mini_err *e)
{
    struct mini_req req = { .op = MINI_OP_EXEC, .id = id };
    req.u.exec.session = k->session;
    req.u.exec.argv = k->cmd->argv;
    for (req.u.exec.argc = 0; k->cmd->argv[req.u.exec.argc]; req.u.exec.argc++)
        ;
    cJSON *obj = mini_req_to_json(&req);
    int r = obj ? mini_frame_send_json(k->cl.fd, obj, e) : mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON_Delete(obj);
    return r;
}

/* Wait for the exit of some exec; its id in *id. */
static int recv_exit(struct conn *k, int64_t *id, struct mini_err *e)
{
    for (;;) {
        cJSON *obj;
        int r = mini_frame_recv_json(k->cl.fd, &k->cl.rd, &obj, e);
        if (r <= 0)
            return r == 0 ? mini_err_set(e, MINI_E_IO, "the daemon closed the connection") : -1;
        struct mini_rep rep;
        r = mini_rep_from_json(obj, &rep, e);
        cJSON_Delete(obj);
        if (r < 0)
            return -1;
        if (rep.op == MINI_OP_ERROR) {
            mini_err_set(e, rep.u.error.code, "%s", rep.u.error.message);
            mini_rep_free(&rep);
            return -1;
        }
        bool is_exit = rep.op == MINI_OP_EXIT;
        bool ok = is_exit && rep.u.exit.returncode == 0;
        *id = rep.id;
        mini_rep_free(&rep);
        if (is_exit)
            return ok ? 0 : mini_err_set(e, MINI_E_SPAWN_FAILED, "the benchmark command failed in the sandbox");
    }
}

static int run_sandbox(struct conn *k, double *ms, struct mini_err *e)
{
    int64_t id = k->next_id++, got;
    double t0 = ((double)mini_mono_ns() / 1e6);
    if (send_exec(k, id, e) < 0 || recv_exit(k, &got, e) < 0)
        return -1;
    *ms = ((double)mini_mono_ns() / 1e6) - t0;
    return 0;
}

/* Wait (at most about 2 s) until no session's pool is being prepared
 * (stats.preparing): each measured row then starts with the daemon idle.
 * Otherwise a row that follows a sandbox row competes with that
 * session's refill (a prepare costs more than a command): it measured the
 * image-rooted row 1.9 to 2.5 times the host-rooted one, and the other way
 * round when their order was swapped (docs/performance.md, "Image-rooted
 * sandboxes: where the time went"). */
static void settle(struct conn *k)
{
    for (int i = 0; i < 2000; i++) {
        struct mini_req req = { .op = MINI_OP_STATS };
        struct mini_rep rep;
        struct mini_err e;
        if (mini_client_call(&k->cl, &req, &rep, &e) < 0)
            return;
        int64_t preparing = rep.u.stats.preparing;
        mini_rep_free(&rep);
        if (preparing == 0)
            return;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

static double throughput_sandbox(struct conn *k, size_t n, int conc, struct mini_err *e)
{
    double t0 = ((double)mini_mono_ns() / 1e6);
    size_t started = 0, done = 0;
    int running = 0;
    while (done < n) {
        while (running < conc && started < n) {
            if (send_exec(k, k->next_id++, e) < 0)
                return NAN;
            started++;
            running++;
        }
        int64_t id;
        if (recv_exit(k, &id, e) < 0)
            return NAN;
        running--;
        done++;
    }
    return (double)n / ((((double)mini_mono_ns() / 1e6) - t0) / 1e3);
}

/* One `mini-sandbox run` as a fresh process.  With `runtime_dir` set it
 * is the process's XDG_RUNTIME_DIR: an empty one, where no daemon listens,
 * so that the client starts a private daemon of its own. */
static int run_oneshot(char **argv, const char *runtime_dir, double *ms)
{
    if (!runtime_dir)
        return run_local(argv, 0, ms);
    const char *was = getenv("XDG_RUNTIME_DIR");
    _cleanup_free_ char *old = was ? strdup(was) : NULL;
    setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
    int r = run_local(argv, 0, ms);
    if (old)
        setenv("XDG_RUNTIME_DIR", old, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    return r;
}

/* --------------------------------------------------------------- main */

static char *find_in_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char *full = NULL;
        if (asprintf(&full, "%.*s/%s", (int)len, p, prog) >= 0) {
            if (access(full, X_OK) == 0)
                return full;
            free(full);
        }
        p += len + (p[len] == ':');
    }
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandbox bench [--profile P] [-n N] [--concurrency C] [--command CMD]\n"
            "                          [--image NAME] [--socket PATH] [--json]\n"
            "  --image NAME  also the same profile rooted in an imported image (mini-sandbox image)\n"
            "Rows: bare fork+exec, clone into 7 namespaces (the floor), the sandbox with its pool\n"
            "ready, back to back (no pause), `mini-sandbox run` against this daemon and with a\n"
            "private one, bwrap (docs/sandbox-lifecycle.md).\n");
}

int mini_cli_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        { "profile", required_argument, NULL, 'p' },
        { "n", required_argument, NULL, 'n' },
        { "concurrency", required_argument, NULL, 'C' },
        { "command", required_argument, NULL, 'c' },
        { "socket", required_argument, NULL, 's' },
        { "json", no_argument, NULL, 'j' },
        { "image", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *profile = "strict", *command = "true", *socket = NULL, *image = NULL;
    long n = 200, conc = 8;
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': profile = optarg; break;
        case 'n': n = strtol(optarg, NULL, 10); break;
        case 'C': conc = strtol(optarg, NULL, 10); break;
        case 'c': command = optarg; break;
        case 's': socket = optarg; break;
        case 'j': json = true; break;
        case 'i': image = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return mini_cli_getopt_error("bench", c, optopt, argv, optind);
        }
    }
    if (optind < argc)
        return mini_cli_usage_error("bench", "unexpected argument \"%s\"", argv[optind]);
    if (n < 1 || n > 1000000 || conc < 1 || conc > 256)
        return mini_cli_usage_error("bench", "-n must be 1..1000000 and --concurrency 1..256");

    /* One word runs directly; anything else through /bin/sh -c, for all three. */
    char *sh_argv[] = { "/bin/sh", "-c", (char *)command, NULL };
    char *one_argv[] = { (char *)command, NULL };
    bool direct = strpbrk(command, " \t\n;&|<>()$`'\"*?[]{}~") == NULL;
    struct cmd cmd = { .argv = direct ? one_argv : sh_argv };
    _cleanup_free_ char *bwrap = find_in_path("bwrap");
    char *bw_argv[32], *bw_sh_argv[32];
    if (bwrap) {
        size_t i = 0;
        const char *fixed[] = {
            bwrap,    "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc"
        };
        for (size_t j = 0; j < MINI_ARRAY_SIZE(fixed); j++, i++)
            bw_argv[i] = bw_sh_argv[i] = (char *)fixed[j];
        size_t k = i;
        for (char **a = cmd.argv; *a; a++)
            bw_argv[i++] = *a;
        bw_argv[i] = NULL;
        cmd.bwrap_argv = bw_argv;
        /* `run` hands one word to /bin/sh -c: the one-shot rows start a
         * shell that the rows above do not.  Their like-for-like baseline
         * is bwrap starting that shell too. */
        if (direct) {
            for (char **a = sh_argv; *a; a++)
                bw_sh_argv[k++] = *a;
            bw_sh_argv[k] = NULL;
            cmd.bwrap_sh_argv = bw_sh_argv;
        }
    }

    /* The one-shot rows: this binary's `run`, argv as the other rows.
     * (One word goes through /bin/sh -c there, as `run` documents.) */
    _cleanup_free_ char *self = mini_self_exe();
    char *run_argv[48], *priv_argv[48];
    size_t nrun = 0, npriv = 0;
    {
        const char *head[] = { self, "run", "--profile", profile, "--workspace", NULL /* ws */ };
        for (size_t j = 0; j < MINI_ARRAY_SIZE(head); j++)
            run_argv[nrun++] = priv_argv[npriv++] = (char *)head[j];
        if (socket) {
            run_argv[nrun++] = "--socket";
            run_argv[nrun++] = (char *)socket;
        }
        run_argv[nrun++] = priv_argv[npriv++] = "--";
        for (char **a = cmd.argv; *a; a++)
            run_argv[nrun++] = priv_argv[npriv++] = *a;
        run_argv[nrun] = priv_argv[npriv] = NULL;
    }

    struct mini_err e;
    struct conn k = { .cmd = &cmd, .next_id = 1000 };
    struct conn ki = { .cmd = &cmd, .next_id = 1000, .cl = { .fd = -1 } };
    char ws[PATH_MAX], rt[PATH_MAX];
    if (bench_mkdtemp(ws, sizeof ws, "mini-bench") < 0) {
        fprintf(stderr, "mini-sandbox: bench: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    /* As root, the scratch workspace is nobody's, as a user's project
     * would be theirs (the common case, with an idmapped mount). */
    if (geteuid() == 0 && chown(ws, 65534, 65534) < 0) {
        fprintf(stderr, "mini-sandbox: bench: chown %s: %s\n", ws, strerror(errno));
        rmdir(ws);
        return 1;
    }
    run_argv[5] = priv_argv[5] = ws;
    /* The private daemon's runtime directory: empty, so nothing listens
     * there.  Root's client would take the system-wide daemon's socket
     * first (MINI_SYSTEM_SOCKET): then that row is left out. */
    const char *no_private = !self                                ? "this binary's path is unknown"
        : geteuid() == 0 && access(MINI_SYSTEM_SOCKET, F_OK) == 0 ? "root's client would use the system-wide daemon"
        : bench_mkdtemp(rt, sizeof rt, "mini-bench-rt") < 0       ? "no runtime directory could be made"
                                                                  : NULL;
    bool private_row = no_private == NULL;
    int rc = 1;
    struct series s[K_COUNT] = { 0 };
    if (mini_client_connect(&k.cl, socket, socket == NULL, &e) < 0)
        goto fail;
    struct mini_req open = { .op = MINI_OP_OPEN };
    open.u.open.workspace = ws;
    open.u.open.profile = (char *)profile;
    struct mini_rep opened;
    if (mini_client_call(&k.cl, &open, &opened, &e) < 0)
        goto fail;
    /* A bench on a private daemon of its own has no daemon to point
     * `run` at: that row is left out. */
    bool run_row = self && k.cl.private_daemon <= 0;
    if (!run_row && !private_row)
        cmd.bwrap_sh_argv = NULL;
    k.session = strdup(opened.u.opened.session);
    mini_rep_free(&opened);
    /* The image-rooted sandbox: its own connection and session. */
    if (image) {
        if (mini_client_connect(&ki.cl, socket, socket == NULL, &e) < 0)
            goto fail;
        open.u.open.image = (char *)image;
        if (mini_client_call(&ki.cl, &open, &opened, &e) < 0)
            goto fail;
        ki.session = strdup(opened.u.opened.session);
        mini_rep_free(&opened);
    }
    for (int i = 0; i < K_COUNT; i++)
        s[i].ms = calloc((size_t)n, sizeof(double));

    /* Warm up each path once (page cache, the daemon's first prepare).
     * The namespace floor is left out where this user cannot clone them. */
    double ms;
    bool clone_ns = run_local(cmd.argv, ALL_NS, &ms) == 0;
    if (run_local(cmd.argv, 0, &ms) < 0 || run_sandbox(&k, &ms, &e) < 0 || (image && run_sandbox(&ki, &ms, &e) < 0) ||
        (cmd.bwrap_argv && run_local(cmd.bwrap_argv, 0, &ms) < 0) ||
        (cmd.bwrap_sh_argv && run_local(cmd.bwrap_sh_argv, 0, &ms) < 0) ||
        (run_row && run_oneshot(run_argv, NULL, &ms) < 0) || (private_row && run_oneshot(priv_argv, rt, &ms) < 0)) {
        if (e.code == MINI_OK)
            mini_err_set(&e, MINI_E_SPAWN_FAILED, "the benchmark command failed");
        goto fail;
    }
    /* Latency: interleaved, one at a time, each row with every pool
     * ready (settle). */
    for (long i = 0; i < n; i++) {
        if ((settle(&k), run_local(cmd.argv, 0, &s[K_BARE].ms[s[K_BARE].n++])) < 0 ||
            (clone_ns && (settle(&k), run_local(cmd.argv, ALL_NS, &s[K_CLONE].ms[s[K_CLONE].n++])) < 0) ||
            (settle(&k), run_sandbox(&k, &s[K_SANDBOX].ms[s[K_SANDBOX].n++], &e)) < 0 ||
            (image && (settle(&k), run_sandbox(&ki, &s[K_IMAGE].ms[s[K_IMAGE].n++], &e)) < 0))
            goto fail;
        settle(&k);
        if ((cmd.bwrap_argv && run_local(cmd.bwrap_argv, 0, &s[K_BWRAP].ms[s[K_BWRAP].n++]) < 0) ||
            (cmd.bwrap_sh_argv &&
             (settle(&k), run_local(cmd.bwrap_sh_argv, 0, &s[K_BWRAP_SH].ms[s[K_BWRAP_SH].n++])) < 0)) {
            mini_err_set(&e, MINI_E_SPAWN_FAILED, "bwrap failed (is it allowed to create namespaces here?)");
            goto fail;
        }
        if ((run_row && (settle(&k), run_oneshot(run_argv, NULL, &s[K_ONESHOT].ms[s[K_ONESHOT].n++])) < 0) ||
            (private_row &&
             (settle(&k), run_oneshot(priv_argv, rt, &s[K_ONESHOT_PRIV].ms[s[K_ONESHOT_PRIV].n++])) < 0)) {
            mini_err_set(&e, MINI_E_SPAWN_FAILED, "mini-sandbox run failed");
            goto fail;
        }
    }
    /* Back to back: one session, no pause, so that the pool has no idle
     * time to prepare in (the rows above each start with it ready). */
    settle(&k);
    for (long i = 0; i < n; i++)
        if (run_sandbox(&k, &s[K_B2B].ms[s[K_B2B].n++], &e) < 0)
            goto fail;
    /* Throughput at the given concurrency. */
    s[K_BARE].throughput = throughput_local(cmd.argv, 0, (size_t)n, (int)conc);
    if (clone_ns)
        s[K_CLONE].throughput = throughput_local(cmd.argv, ALL_NS, (size_t)n, (int)conc);
    s[K_SANDBOX].throughput = throughput_sandbox(&k, (size_t)n, (int)conc, &e);
    if (isnan(s[K_SANDBOX].throughput))
        goto fail;
    /* Throughput at C is back to back by nature: the one measurement. */
    s[K_B2B].throughput = s[K_SANDBOX].throughput;
    if (image && isnan(s[K_IMAGE].throughput = throughput_sandbox(&ki, (size_t)n, (int)conc, &e)))
        goto fail;
    if (cmd.bwrap_argv)
        s[K_BWRAP].throughput = throughput_local(cmd.bwrap_argv, 0, (size_t)n, (int)conc);
    for (int i = 0; i < K_COUNT; i++)
        qsort(s[i].ms, s[i].n, sizeof(double), cmp_double);

    double sb_bare = pct(&s[K_SANDBOX], 50) / pct(&s[K_BARE], 50);
    double bw_sb = cmd.bwrap_argv ? pct(&s[K_BWRAP], 50) / pct(&s[K_SANDBOX], 50) : NAN;
    double tp = s[K_SANDBOX].throughput / s[K_BARE].throughput;
    double floor_tp = clone_ns ? s[K_CLONE].throughput / s[K_BARE].throughput : NAN;
    double sb_floor = clone_ns ? s[K_SANDBOX].throughput / s[K_CLONE].throughput : NAN;
    double img_sb = image ? pct(&s[K_IMAGE], 50) / pct(&s[K_SANDBOX], 50) : NAN;
    double b2b_floor = clone_ns ? pct(&s[K_B2B], 50) / pct(&s[K_CLONE], 50) : NAN;
    double run_bw = run_row && cmd.bwrap_argv ? pct(&s[K_ONESHOT], 50) / pct(&s[K_BWRAP], 50) : NAN;
    double priv_bw = private_row && cmd.bwrap_argv ? pct(&s[K_ONESHOT_PRIV], 50) / pct(&s[K_BWRAP], 50) : NAN;
    /* Against bwrap running what `run` runs: its own row for one word,
     * the plain bwrap row when the command already went through sh. */
    const struct series *bw_same = cmd.bwrap_sh_argv ? &s[K_BWRAP_SH] : &s[K_BWRAP];
    double run_bws = run_row && cmd.bwrap_argv ? pct(&s[K_ONESHOT], 50) / pct(bw_same, 50) : NAN;
    double priv_bws = private_row && cmd.bwrap_argv ? pct(&s[K_ONESHOT_PRIV], 50) / pct(bw_same, 50) : NAN;
    if (json) {
        printf("{\"profile\": \"%s\", \"command\": \"%s\", \"n\": %ld, \"concurrency\": %ld, \"results\": {", profile,
               command, n, conc);
        bool first = true;
        for (int i = 0; i < K_COUNT; i++) {
            if (s[i].n == 0)
                continue;
            /* The one-shot rows have no throughput: null. */
            char tp_s[32] = "null";
            if (s[i].throughput > 0)
                snprintf(tp_s, sizeof tp_s, "%.1f", s[i].throughput);
            printf("%s\"%s\": {\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"throughput_per_s\": %s}",
                   first ? "" : ", ", kind_keys[i], pct(&s[i], 50), pct(&s[i], 90), pct(&s[i], 99), tp_s);
            first = false;
        }
        char bw[32], fl[32], sf[32], is[32], bf[32], rb[32], pb[32], rbs[32], pbs[32];
        json_ratio(rbs, sizeof rbs, run_bws);
        json_ratio(pbs, sizeof pbs, priv_bws);
        json_ratio(is, sizeof is, img_sb);
        json_ratio(bf, sizeof bf, b2b_floor);
        json_ratio(rb, sizeof rb, run_bw);
        json_ratio(pb, sizeof pb, priv_bw);
        json_ratio(bw, sizeof bw, bw_sb);
        json_ratio(fl, sizeof fl, floor_tp);
        json_ratio(sf, sizeof sf, sb_floor);
        printf("}, \"ratios\": {\"sandbox_over_bare_p50\": %.3f, \"bwrap_over_sandbox_p50\": %s, "
               "\"sandbox_over_bare_throughput\": %.3f, \"clone_ns_over_bare_throughput\": %s, "
               "\"sandbox_over_clone_ns_throughput\": %s, \"image_over_sandbox_p50\": %s, "
               "\"back_to_back_over_clone_ns_p50\": %s, \"oneshot_run_over_bwrap_p50\": %s, "
               "\"oneshot_private_over_bwrap_p50\": %s, \"oneshot_run_over_bwrap_sh_p50\": %s, "
               "\"oneshot_private_over_bwrap_sh_p50\": %s}}\n",
               sb_bare, bw, tp, fl, sf, is, bf, rb, pb, rbs, pbs);
    } else {
        printf("mini-sandbox bench: profile %s, command \"%s\", %ld runs each, concurrency %ld\n\n", profile, command,
               n, conc);
        char tput[32];
        snprintf(tput, sizeof tput, "runs/s (C=%ld)", conc);
        printf("%-16s %9s %9s %9s %14s\n", "", "p50 ms", "p90 ms", "p99 ms", tput);
        for (int i = 0; i < K_COUNT; i++) {
            if (s[i].n == 0)
                continue;
            if (s[i].throughput > 0)
                printf("%-16s %9.3f %9.3f %9.3f %14.1f\n", kind_names[i], pct(&s[i], 50), pct(&s[i], 90),
                       pct(&s[i], 99), s[i].throughput);
            else
                printf("%-16s %9.3f %9.3f %9.3f %14s\n", kind_names[i], pct(&s[i], 50), pct(&s[i], 90), pct(&s[i], 99),
                       "-");
        }
        printf("\nsandbox / bare p50:        %.2f\n", sb_bare);
        if (image)
            printf("image / sandbox p50:       %.2f (the same profile rooted in %s)\n", img_sb, image);
        if (!isnan(bw_sb))
            printf("bwrap / sandbox p50:       %.2f\n", bw_sb);
        else
            printf("bwrap / sandbox p50:       (bwrap not installed)\n");
        printf("sandbox / bare throughput: %.2f\n", tp);
        if (clone_ns)
            printf("  of which the namespaces alone (clone / bare): %.2f, the rest (sandbox / clone): %.2f\n", floor_tp,
                   sb_floor);
        if (clone_ns)
            printf("back to back / clone p50:  %.2f (throughput at C=%ld: the sandbox / clone above)\n", b2b_floor,
                   conc);
        /* The second figure: against bwrap starting the same /bin/sh -c
         * (a one-word command), or the same figure when bwrap already did. */
        const char *same = cmd.bwrap_sh_argv ? "bwrap, sh -c" : "bwrap";
        if (!isnan(run_bw))
            printf("run, daemon / bwrap p50:   %.2f (%.2f against %s)\n", run_bw, run_bws, same);
        if (!isnan(priv_bw))
            printf("run, private / bwrap p50:  %.2f (%.2f against %s)\n", priv_bw, priv_bws, same);
        if (!run_row)
            printf("run, daemon:               (not measured: the bench runs on a private daemon; give --socket)\n");
        if (!private_row)
            printf("run, private:              (not measured: %s)\n", no_private);
    }
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "mini-sandbox: bench: %s\n", e.msg);
out:
    for (int i = 0; i < K_COUNT; i++)
        free(s[i].ms);
    free(k.session);
    free(ki.session);
    if (k.cl.fd >= 0)
        mini_client_close(&k.cl);
    if (ki.cl.fd >= 0)
        mini_client_close(&ki.cl);
    rmdir(ws);
    /* What the private daemons made there: their runtime and state dirs. */
    struct mini_err ignored;
    if (private_row && mini_rm_rf(rt, &ignored) < 0)
        fprintf(stderr, "mini-sandbox: bench: removing %s: %s\n", rt, ignored.msg);
    return rc;
}
