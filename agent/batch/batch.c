/* `mini batch TASKS`: the command line, the pool of worker processes, the
 * progress display and Ctrl-C (batch.h, docs/batch.md).
 *
 * Tasks run in worker processes, forks of this one that take task after
 * task (struct running; worker.c runs one), so that a task that crashes or
 * is killed takes nothing else with it; this process alone writes
 * preds.json and summary.json, from each worker's result.json.
 * Workers die with the batch (PR_SET_PDEATHSIG): a batch killed with -9
 * leaves only tasks that never reached preds.json, which the next run of
 * the same command runs again. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "batch/batch.h"
#include "config/config.h"
#include "config/setup.h"
#include "policy/policy.h"
#include "mini/buf.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/client.h"
#include "mini/io.h"
#include "mini/json.h"

#define WORKERS_MAX 256

struct opts {
    const char *tasks, *out, *model, *model_class, *filter, *slice, *env_class, *sandbox, *ws_owner;
    unsigned workers, shard, nshards;
    double cost_total;
    bool redo, swebench;
    const char **specs;
    size_t n_specs;
};

/* A worker process: it takes tasks one at a time, each a line with the
 * task's index in the queue on its task pipe, and answers on its progress
 * pipe with "P calls cost" lines while it runs one and "D status" when it
 * has written the task's result.json.  It exits at the end of its task
 * pipe. */
struct running {
    pid_t pid;
    const struct mini_task *task; /* the one it runs; NULL: idle */
    int task_fd;                  /* its task pipe (write end); -1 once closed */
    int fd;                       /* its progress pipe */
    bool eof;                     /* the worker has closed it: it is exiting */
    bool done;                    /* it said "D": its task is finished */
    int rc;                       /* and this */
    unsigned n_tasks;             /* given to it so far */
    char buf[128];
    size_t len;
    long calls;
    double cost;
    double start;
};

/* A worker retires after this many tasks (a fresh process then takes the
 * next): whatever a task leaves in a process stays bounded. */
#define WORKER_TASKS_MAX 64

static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
    (void)sig;
    interrupted++;
}
/* Only so that SIGCHLD interrupts the ppoll of pool() (its default is to
 * be ignored); the exit itself is found by waitpid. */
static void on_chld(int sig) { (void)sig; }

static void usage(FILE *f)
{
    fputs("Usage: mini batch TASKS [OPTION]...\n"
          "       mini batch slurm TASKS -o DIR --shards N [OPTION]... [-- SBATCH OPTION...]\n"
          "       mini batch merge DIR... -o OUT\n"
          "Run the agent on every task of TASKS (JSON Lines, a JSON array or YAML; see\n"
          "docs/batch.md), each in a fresh workspace and sandbox session, several at once.\n"
          "\n"
          "  -c, --config SPEC          as mini takes it (repeatable; default: mini's)\n"
          "  -m, --model NAME           model name\n"
          "      --model-class NAME     model class (deterministic, replay, openai, ...)\n"
          "  -w, --workers N            tasks at once (default 1)\n"
          "  -o, --output DIR           output directory (default: .)\n"
          "      --filter REGEX         only instance ids that REGEX matches at their start\n"
          "      --slice START:STOP     only these of them (a Python slice)\n"
          "      --shard I/N            only shard I of N (0 <= I < N; every task is in one)\n"
          "      --redo-existing        run tasks that finished in an earlier run again\n"
          "      --cost-limit-total USD start no task once the batch has spent this\n"
          "      --sandbox P|FILE|off   sandbox profile, or off (run on the host)\n"
          "      --environment-class C  local, sandbox, docker (a task's image as the root)...\n"
          "      --swebench             TASKS is SWE-bench instances: a task without an image\n"
          "                             gets mini-swe-agent's (docker.io/swebench/sweb.eval...)\n"
          "      --workspace-owner U    root with a sandbox: give workspaces to user U\n"
          "                             (default nobody, 65534:65534)\n"
          "  -h, --help\n"
          "\n"
          "Output: DIR/ID/ID.traj.json, DIR/preds.json, DIR/summary.json.  Running the\n"
          "same command again skips the tasks in preds.json.  Ctrl-C stops starting\n"
          "tasks and ends the running ones (run again to resume); a second Ctrl-C\n"
          "kills them.  Exit status: 0 when every selected task ran, 1 on an error of\n"
          "the batch itself, 2 for bad usage, 130 when interrupted.\n",
          f);
}

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "mini batch: %s%s (see mini batch --help)\n", what, arg);
    return 2;
}

/* -1: go on; else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    enum { O_MODEL_CLASS = 256, O_FILTER, O_SLICE, O_SHARD, O_REDO, O_COST, O_SANDBOX, O_ENV, O_OWNER, O_SWEBENCH };
    static const struct option lo[] = {
        { "config", required_argument, NULL, 'c' },
        { "model", required_argument, NULL, 'm' },
        { "model-class", required_argument, NULL, O_MODEL_CLASS },
        { "workers", required_argument, NULL, 'w' },
        { "output", required_argument, NULL, 'o' },
        { "filter", required_argument, NULL, O_FILTER },
        { "slice", required_argument, NULL, O_SLICE },
        { "shard", required_argument, NULL, O_SHARD },
        { "redo-existing", no_argument, NULL, O_REDO },
        { "cost-limit-total", required_argument, NULL, O_COST },
        { "sandbox", required_argument, NULL, O_SANDBOX },
        { "environment-class", required_argument, NULL, O_ENV },
        { "workspace-owner", required_argument, NULL, O_OWNER },
        { "swebench", no_argument, NULL, O_SWEBENCH },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    o->workers = 1;
    o->out = ".";
    optind = 1;
    opterr = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, ":c:m:w:o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'c': o->specs[o->n_specs++] = optarg; break;
        case 'm': o->model = optarg; break;
        case O_MODEL_CLASS: o->model_class = optarg; break;
        case 'w': {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > WORKERS_MAX)
                return bad_usage("--workers: expected 1 to 256, got ", optarg);
            o->workers = (unsigned)v;
            break;
        }
        case 'o': o->out = optarg; break;
        case O_FILTER: o->filter = optarg; break;
        case O_SLICE: o->slice = optarg; break;
        case O_SHARD: {
            unsigned i, n;
            char tail;
            if (sscanf(optarg, "%u/%u%c", &i, &n, &tail) != 2 || n == 0 || i >= n)
                return bad_usage("--shard: expected I/N with 0 <= I < N, got ", optarg);
            o->shard = i;
            o->nshards = n;
            break;
        }
        case O_REDO: o->redo = true; break;
        case O_COST: {
            o->cost_total = strtod(optarg, &end);
            if (*end || !(o->cost_total > 0))
                return bad_usage("--cost-limit-total: expected a positive number, got ", optarg);
            break;
        }
        case O_SANDBOX: o->sandbox = optarg; break;
        case O_ENV: o->env_class = optarg; break;
        case O_OWNER: o->ws_owner = optarg; break;
        case O_SWEBENCH: o->swebench = true; break;
        case 'h': usage(stdout); return 0;
        case ':': return bad_usage("a value is needed after ", argv[optind - 1]);
        default: return bad_usage("unknown option ", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return bad_usage("no TASKS file given", "");
    o->tasks = argv[optind++];
    if (optind < argc)
        return bad_usage("unexpected argument ", argv[optind]);
    return -1;
}

static void warn(const char *msg, void *ud)
{
    (void)ud;
    fprintf(stderr, "mini batch: warning: %s\n", msg);
}

/* The config, as mini builds it (the global .env, the files, the flags),
 * with what a batch needs: the plain agent, nobody to ask. */
static cJSON *load_config(const struct opts *o, int *bad, struct mini_err *e)
{
    mini_config_set_warn(warn, NULL);
    _cleanup_cjson_ cJSON *cfg = mini_config_setup(o->specs, o->n_specs, e);
    if (!cfg)
        return NULL;
    bool off = o->sandbox && strcmp(o->sandbox, "off") == 0;
    if ((o->model && mini_config_set(cfg, "model.model_name", cJSON_CreateString(o->model), e) < 0) ||
        (o->model_class && mini_config_set(cfg, "model.model_class", cJSON_CreateString(o->model_class), e) < 0) ||
        (o->sandbox &&
         mini_config_set(cfg, "environment.environment_class", cJSON_CreateString(off ? "local" : "sandbox"), e) < 0) ||
        (o->sandbox && !off && mini_config_set(cfg, "environment.profile", cJSON_CreateString(o->sandbox), e) < 0) ||
        (o->env_class &&
         mini_config_set(cfg, "environment.environment_class", cJSON_CreateString(o->env_class), e) < 0) ||
        mini_config_set(cfg, "agent.agent_class", cJSON_CreateString("default"), e) < 0)
        return NULL;
    if ((*bad = mini_config_check_profile(cfg, "mini batch", o->sandbox ? "--sandbox" : "environment.profile")))
        return NULL;
    if (mini_config_validate(cfg, e) < 0)
        return NULL;
    /* A bad policy fails the batch now, not each task. */
    struct mini_policy *policy = mini_policy_from_config(cfg, e);
    if (!policy)
        return NULL;
    mini_policy_free(policy);
    return TAKE_PTR(cfg);
}

/* ---- progress ---- */

struct progress {
    bool tty;
    int lines; /* drawn last time */
    size_t total, done, failed, skipped, interrupted;
    double cost, start;
};

static void fmt_secs(char *b, size_t n, double s)
{
    if (s < 60)
        snprintf(b, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(b, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(b, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

static void draw(struct progress *p, const struct running *r, size_t nr, bool final)
{
    if (!p->tty)
        return;
    double now = mini_mono_s(), el = now - p->start;
    double run_cost = 0;
    size_t busy = 0;
    for (size_t i = 0; i < nr; i++)
        if (r[i].task) {
            run_cost += r[i].cost;
            busy++;
        }
    char els[16], eta[16] = "?";
    size_t finished = p->done;
    if (finished > 0 && p->total > finished + p->skipped)
        fmt_secs(eta, sizeof eta, el / (double)finished * (double)(p->total - p->skipped - finished));
    else if (p->total <= finished + p->skipped)
        snprintf(eta, sizeof eta, "-");
    fmt_secs(els, sizeof els, el);
    if (p->lines > 0)
        fprintf(stderr, "\033[%dA", p->lines);
    fprintf(stderr, "\r\033[Jmini batch: %zu/%zu done, %zu failed, %zu running, $%.4f, %s elapsed, ETA %s\n",
            p->done + p->skipped, p->total, p->failed, busy, p->cost + run_cost, els, eta);
    p->lines = 1;
    for (size_t i = 0; i < nr && !final; i++) {
        if (!r[i].task)
            continue;
        char t[16];
        fmt_secs(t, sizeof t, now - r[i].start);
        fprintf(stderr, "  %-40.40s step %3ld  $%.4f  %s\n", r[i].task->id, r[i].calls, r[i].cost, t);
        p->lines++;
    }
    fflush(stderr);
}

/* A finished task, in one line (every time without a terminal). */
static void say_done(struct progress *p, const cJSON *res, const char *id, const char *why)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "exit_status");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "verify"), "status");
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(res, "steps");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(res, "cost");
    const cJSON *wall = cJSON_GetObjectItemCaseSensitive(res, "wall_s");
    if (p->tty && p->lines > 0) {
        fprintf(stderr, "\033[%dA\r\033[J", p->lines);
        p->lines = 0;
    }
    fprintf(stderr, "mini batch: [%zu/%zu] %s: %s", p->done + p->skipped, p->total, id,
            why                      ? why
                : cJSON_IsString(st) ? st->valuestring
                                     : "?");
    if (cJSON_IsString(v))
        fprintf(stderr, ", verify %s", v->valuestring);
    if (cJSON_IsNumber(steps))
        fprintf(stderr, ", %d steps, $%.4f, %.1f s", steps->valueint, cJSON_IsNumber(cost) ? cost->valuedouble : 0,
                cJSON_IsNumber(wall) ? wall->valuedouble : 0);
    fputc('\n', stderr);
}

/* ---- the pool ---- */

struct batch {
    struct opts *o;
    struct batch_ctx ctx;
    struct batch_out out;
    struct mini_tasks tasks;
    const struct mini_task **queue; /* the selected tasks not finished before */
    size_t n_queue, next;
    struct running run[WORKERS_MAX];
    size_t nr;
    struct progress pg;
    bool cost_stop;
    int errors;     /* of the batch itself */
    cJSON *pending; /* results read, not yet written */
    /* MINI_BATCH_TIMING: seconds this process spent starting workers,
     * reading their results, writing the outputs. */
    double t_start, t_finish, t_record;
};

/* The worker's side: take tasks until the end of the task pipe. */
static _Noreturn void worker_loop(struct batch *b, int task_fd, int progress_fd)
{
    b->ctx.progress_fd = progress_fd;
    FILE *in = fdopen(task_fd, "r");
    char line[32];
    while (in && fgets(line, sizeof line, in)) {
        char *end;
        unsigned long i = strtoul(line, &end, 10);
        if (*end != '\n' || i >= b->n_queue)
            break;
        int rc = mini_batch_worker(&b->ctx, b->queue[i]);
        char done[32];
        int n = snprintf(done, sizeof done, "D %d\n", rc);
        if (write(progress_fd, done, (size_t)n) != n)
            break;
    }
    exit(0); /* not _exit: a sanitizer's leak check runs at exit */
}

/* A new worker process, idle. */
static struct running *spawn_worker(struct batch *b)
{
    int pfd[2], tfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return NULL;
    if (pipe2(tfd, O_CLOEXEC) < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return NULL;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        close(tfd[0]);
        close(tfd[1]);
        return NULL;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(pfd[0]);
        close(tfd[1]);
        for (size_t i = 0; i < b->nr; i++) { /* the other workers' pipes */
            mini_close(b->run[i].task_fd);
            mini_close(b->run[i].fd);
        }
        signal(SIGCHLD, SIG_DFL);
        sigset_t none; /* pool() blocks these until its ppoll */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        worker_loop(b, tfd[0], pfd[1]);
    }
    close(pfd[1]);
    close(tfd[0]);
    mini_set_nonblock(pfd[0], 1);
    struct running *r = &b->run[b->nr++];
    *r = (struct running){ .pid = pid, .task_fd = tfd[1], .fd = pfd[0] };
    return r;
}

/* Tell a worker to end (at the end of its current task, if any). */
static void retire(struct running *r)
{
    mini_close(r->task_fd);
    r->task_fd = -1;
}

/* Give the next task to an idle worker, or a new one. */
static int start_task(struct batch *b, const struct mini_task *t)
{
    struct mini_err e;
    if (mini_batch_out_forget(&b->out, t->id, &e) < 0) {
        fprintf(stderr, "mini batch: %s\n", e.msg);
        return -1;
    }
    char line[32];
    int n = snprintf(line, sizeof line, "%zu\n", b->next);
    struct running *r = NULL;
    for (int tries = 0; !r; tries++) {
        for (size_t i = 0; i < b->nr && !r; i++)
            if (!b->run[i].task && b->run[i].task_fd >= 0)
                r = &b->run[i];
        if (!r && (tries > 2 || !(r = spawn_worker(b))))
            return -1;
        /* A pipe's short write is whole.  A worker gone meanwhile (EPIPE:
         * SIGPIPE is ignored) is reaped later; the task goes to another. */
        if (write(r->task_fd, line, (size_t)n) != n) {
            retire(r);
            r = NULL;
        }
    }
    r->task = t;
    r->done = false;
    r->calls = 0;
    r->cost = 0;
    r->len = 0;
    r->start = mini_mono_s();
    if (++r->n_tasks >= WORKER_TASKS_MAX)
        retire(r);
    return 0;
}

static void read_progress(struct running *r)
{
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->len, sizeof r->buf - 1 - r->len);
        if (n == 0)
            r->eof = true;
        if (n <= 0)
            return;
        r->len += (size_t)n;
        r->buf[r->len] = '\0';
        char *nl;
        while ((nl = strchr(r->buf, '\n'))) {
            *nl = '\0';
            long calls;
            double cost;
            if (r->task && sscanf(r->buf, "D %d", &r->rc) == 1)
                r->done = true;
            else if (sscanf(r->buf, "P %ld %lf", &calls, &cost) == 2) {
                r->calls = calls;
                r->cost = cost;
            }
            size_t rest = r->len - (size_t)(nl + 1 - r->buf);
            memmove(r->buf, nl + 1, rest + 1);
            r->len = rest;
        }
        if (r->len == sizeof r->buf - 1)
            r->len = 0; /* a line too long: not ours */
    }
}

/* A worker's task has ended (it said so, or the worker died: status is
 * its wait status then): record its result (never an interrupted one: the
 * next run does that task again).  The worker is idle afterwards. */
static void finish_task(struct batch *b, struct running *w, int status)
{
    struct running r = *w;
    w->task = NULL;
    w->done = false;
    _cleanup_free_ char *path = NULL;
    struct mini_err e;
    mini_err_clear(&e);
    if (asprintf(&path, "%s/%s/result.json", b->ctx.out_dir, r.task->id) < 0)
        return;
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    cJSON *res = NULL;
    if (mini_read_file(path, &text, 64u << 20, &e) == 0)
        res = mini_json_parse(text.data ? text.data : "", text.len, &e);
    if (!res) {
        /* It died before writing one (a crash, a kill): recorded as such. */
        char why[64];
        snprintf(why, sizeof why, "WorkerDied (%s %d)", WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        if (interrupted) {
            b->pg.interrupted++;
            b->pg.cost += r.cost;
            say_done(&b->pg, NULL, r.task->id, "interrupted; it runs again next time");
            return;
        }
        res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "instance_id", r.task->id);
        cJSON_AddStringToObject(res, "exit_status", "WorkerDied");
        cJSON_AddStringToObject(res, "submission", "");
        cJSON_AddStringToObject(res, "model_name", mini_config_get_string(b->ctx.cfg, "model.model_name") ?: "");
        cJSON_AddNumberToObject(res, "steps", (double)r.calls);
        cJSON_AddItemToObject(res, "cost", mini_json_create_float(r.cost));
        cJSON_AddNullToObject(res, "verify");
        cJSON_AddItemToObject(res, "wall_s", mini_json_create_float(mini_mono_s() - r.start));
        cJSON_AddStringToObject(res, "error", why);
        /* What a resume checks the task against, as a worker's. */
        if (mini_batch_write_json(path, res, &e) < 0)
            fprintf(stderr, "mini batch: %s\n", e.msg);
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "exit_status");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(res, "cost");
    if (cJSON_IsString(st) && strcmp(st->valuestring, "KeyboardInterrupt") == 0) {
        b->pg.interrupted++;
        b->pg.cost += cJSON_IsNumber(cost) ? cost->valuedouble : 0;
        say_done(&b->pg, res, r.task->id, "interrupted; it runs again next time");
        cJSON_Delete(res);
        return;
    }
    b->pg.done++;
    if (!cJSON_IsString(st) || strcmp(st->valuestring, "Submitted") != 0)
        b->pg.failed++;
    b->pg.cost += cJSON_IsNumber(cost) ? cost->valuedouble : 0;
    say_done(&b->pg, res, r.task->id, NULL);
    /* Written once the next task has been started (record_pending). */
    cJSON_AddItemToArray(b->pending, res);
}

static void record_pending(struct batch *b)
{
    cJSON *res;
    struct mini_err e;
    while ((res = cJSON_DetachItemFromArray(b->pending, 0)))
        if (mini_batch_out_record(&b->out, res, &e) < 0) {
            fprintf(stderr, "mini batch: %s\n", e.msg);
            b->errors++;
        }
    if (mini_batch_out_sync(&b->out, &e) < 0) {
        fprintf(stderr, "mini batch: %s\n", e.msg);
        b->errors++;
    }
}

static size_t busy(const struct batch *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nr; i++)
        n += b->run[i].task != NULL;
    return n;
}

static double spent(const struct batch *b)
{
    double c = b->pg.cost;
    for (size_t i = 0; i < b->nr; i++)
        if (b->run[i].task)
            c += b->run[i].cost;
    return c;
}

/* Workers that have exited: a task one was running when it died is
 * recorded as such. */
static void reap(struct batch *b)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
        for (size_t i = 0; i < b->nr; i++) {
            struct running *r = &b->run[i];
            if (r->pid != pid)
                continue;
            read_progress(r);
            if (r->task)
                finish_task(b, r, r->done ? (r->rc & 0xff) << 8 : st);
            retire(r);
            close(r->fd);
            *r = b->run[--b->nr];
            break;
        }
}

/* Ctrl-C: said once; the second kills the running tasks. */
static void on_interrupts(struct batch *b, int *seen)
{
    if (interrupted == *seen)
        return;
    if (*seen == 0) {
        if (b->pg.tty && b->pg.lines > 0) {
            fprintf(stderr, "\033[%dA\r\033[J", b->pg.lines);
            b->pg.lines = 0;
        }
        fprintf(stderr,
                "mini batch: interrupted: starting no more tasks; the %zu running end now (Ctrl-C again "
                "kills them); the same command resumes\n",
                busy(b));
    }
    /* The running tasks end as mini does at a SIGTERM (a terminal's Ctrl-C
     * has reached them already; a SIGTERM of the batch has not). */
    for (size_t i = 0; i < b->nr; i++)
        if (b->run[i].task)
            kill(b->run[i].pid, interrupted >= 2 ? SIGKILL : SIGTERM);
    *seen = interrupted;
}

/* Start tasks while workers are free; write what finished (after the
 * start, so that a worker runs meanwhile); wait for progress, an exit or a
 * signal (only then delivered: ppoll), and again.  At the end the idle
 * workers are told to go, and waited for. */
static void pool(struct batch *b)
{
    int seen_int = 0;
    sigset_t block, waiting;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &waiting);
    for (;;) {
        while (busy(b) < b->o->workers && b->next < b->n_queue && !interrupted && !b->cost_stop) {
            if (b->o->cost_total > 0 && spent(b) >= b->o->cost_total) {
                b->cost_stop = true;
                break;
            }
            double t0 = mini_mono_s();
            int r = start_task(b, b->queue[b->next]);
            b->t_start += mini_mono_s() - t0;
            if (r < 0) {
                fprintf(stderr, "mini batch: starting a worker: %s\n", strerror(errno));
                b->errors++;
                b->cost_stop = true; /* stop starting; finish the others */
                break;
            }
            b->next++;
        }
        double t0 = mini_mono_s();
        record_pending(b);
        b->t_record += mini_mono_s() - t0;
        if (busy(b) == 0)
            break;
        struct pollfd pf[WORKERS_MAX];
        for (size_t i = 0; i < b->nr; i++)
            pf[i] = (struct pollfd){ .fd = b->run[i].eof ? -1 : b->run[i].fd, .events = POLLIN };
        struct timespec ts = { .tv_sec = b->pg.tty ? 0 : 1, .tv_nsec = b->pg.tty ? 250000000 : 0 };
        ppoll(pf, b->nr, &ts, &waiting);
        t0 = mini_mono_s();
        for (size_t i = 0; i < b->nr; i++) {
            if (pf[i].revents)
                read_progress(&b->run[i]);
            if (b->run[i].task && b->run[i].done)
                finish_task(b, &b->run[i], (b->run[i].rc & 0xff) << 8);
        }
        on_interrupts(b, &seen_int);
        reap(b);
        b->t_finish += mini_mono_s() - t0;
        draw(&b->pg, b->run, b->nr, false);
    }
    on_interrupts(b, &seen_int);
    for (size_t i = 0; i < b->nr; i++)
        retire(&b->run[i]);
    for (size_t i = 0; i < b->nr; i++) {
        while (waitpid(b->run[i].pid, NULL, 0) < 0 && errno == EINTR)
            ;
        close(b->run[i].fd);
    }
    b->nr = 0;
    sigprocmask(SIG_SETMASK, &waiting, NULL);
}

static int owner_ids(const char *spec, uid_t *uid, gid_t *gid)
{
    if (!spec) {
        *uid = *gid = 65534;
        return 0;
    }
    unsigned u, g;
    char tail;
    if (sscanf(spec, "%u:%u%c", &u, &g, &tail) == 2) {
        *uid = u;
        *gid = g;
        return 0;
    }
    const struct passwd *pw = getpwnam(spec);
    if (!pw)
        return -1;
    *uid = pw->pw_uid;
    *gid = pw->pw_gid;
    return 0;
}

/* The daemon the workers share: the configured or default one when it
 * answers, else one started for the batch (stopped at the end).  0, or -1
 * with e. */
static int shared_daemon(struct batch *b, pid_t *pid, char **sock, struct mini_err *e)
{
    *pid = -1;
    const char *want = mini_config_get_string(b->ctx.cfg, "environment.socket");
    struct mini_client c;
    if (mini_client_connect(&c, want && *want ? want : NULL, false, e) == 0) {
        mini_client_close(&c);
        return 0;
    }
    if (want && *want)
        return mini_err_prefix(e, "environment.socket");
    _cleanup_free_ char *rt = mini_runtime_dir(e);
    if (!rt || asprintf(sock, "%s/batch-%d.sock", rt, (int)getpid()) < 0)
        return -1;
    unlink(*sock);
    if ((*pid = mini_client_start_daemon(*sock, e)) < 0)
        return -1;
    return mini_config_set(b->ctx.cfg, "environment.socket", cJSON_CreateString(*sock), e);
}

static double tot_num(const cJSON *tot, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tot, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int run_batch(struct opts *o)
{
    struct mini_err e;
    mini_err_clear(&e);
    struct batch b = { .o = o };
    int bad = 0;
    _cleanup_cjson_ cJSON *cfg = load_config(o, &bad, &e);
    if (!cfg) {
        if (!bad) /* else said */
            fprintf(stderr, "mini batch: %s\n", e.msg);
        return 2;
    }
    if (mini_tasks_load(o->tasks, &b.tasks, &e) < 0 ||
        mini_tasks_select(&b.tasks, o->filter, o->slice, o->shard, o->nshards, &e) < 0 ||
        (o->swebench && mini_tasks_swebench_images(&b.tasks, &e) < 0)) {
        fprintf(stderr, "mini batch: %s\n", e.msg);
        mini_tasks_free(&b.tasks);
        return 2;
    }
    _cleanup_free_ char *out_abs = mini_client_abspath(o->out);
    int rc = 1;
    int lock = -1;
    pid_t daemon = -1;
    _cleanup_free_ char *sock = NULL, *lockp = NULL;
    if (!out_abs || mini_batch_out_open(&b.out, out_abs, &e) < 0) {
        fprintf(stderr, "mini batch: %s\n", out_abs ? e.msg : "out of memory");
        goto out;
    }
    /* One batch per output directory at a time. */
    if (asprintf(&lockp, "%s/.mini-batch.lock", out_abs) < 0 ||
        (lock = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644)) < 0 ||
        flock(lock, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "mini batch: %s: %s\n", lockp ? lockp : out_abs,
                errno == EWOULDBLOCK ? "another mini batch writes to this directory" : strerror(errno));
        goto out;
    }
    b.ctx.cfg = cfg;
    b.ctx.out_dir = out_abs;
    b.ctx.progress_fd = -1;
    const char *cls = mini_config_get_string(cfg, "environment.environment_class");
    b.ctx.sandbox = mini_config_class_sandboxed(cls);
    b.ctx.container = mini_config_container_class(cls) != NULL;
    if (b.ctx.sandbox && geteuid() == 0) {
        if (owner_ids(o->ws_owner, &b.ctx.ws_uid, &b.ctx.ws_gid) < 0) {
            fprintf(stderr, "mini batch: --workspace-owner %s: no such user\n", o->ws_owner);
            rc = 2;
            goto out;
        }
        b.ctx.chown_ws = b.ctx.ws_uid != 0;
    }
    /* What a task's workspace is never copied from: the sandbox daemon's
     * list (mini/ws.h), with the workspace owner's home as the daemon adds it. */
    const struct passwd *owner = b.ctx.chown_ws ? getpwuid(b.ctx.ws_uid) : NULL;
    if (mini_ws_guard_init(&b.ctx.guard, NULL, NULL, &e) < 0 ||
        (owner && mini_ws_guard_add_home(&b.ctx.guard, owner->pw_dir) < 0)) {
        fprintf(stderr, "mini batch: %s\n", e.msg[0] ? e.msg : "out of memory");
        goto out;
    }
    b.queue = calloc(b.tasks.n ? b.tasks.n : 1, sizeof *b.queue);
    b.pending = cJSON_CreateArray();
    if (!b.queue || !b.pending)
        goto out;
    for (size_t i = 0; i < b.tasks.n; i++) {
        if (!o->redo && mini_batch_out_done(&b.out, b.tasks.v[i].id))
            b.pg.skipped++;
        else
            b.queue[b.n_queue++] = &b.tasks.v[i];
    }
    size_t with_image = 0;
    for (size_t i = 0; i < b.n_queue; i++)
        with_image += b.queue[i]->image != NULL;
    if (with_image && !b.ctx.sandbox) {
        fprintf(stderr,
                "mini batch: %zu task%s name an image, which is a sandbox's root: run with --sandbox PROFILE, "
                "or environment_class docker (mini-swe-agent's swebench config; docs/batch.md)\n",
                with_image, with_image == 1 ? "" : "s");
        rc = 2;
        goto out;
    }
    b.pg.total = b.tasks.n;
    b.pg.tty = isatty(STDERR_FILENO);
    b.pg.start = mini_mono_s();
    fprintf(stderr,
            "mini batch: %zu tasks selected, %zu done in an earlier run, %zu to run with %u worker%s; output %s\n",
            b.tasks.n, b.pg.skipped, b.n_queue, o->workers, o->workers == 1 ? "" : "s", out_abs);
    if (b.ctx.chown_ws)
        fprintf(stderr, "mini batch: as root, the sandbox refuses root-owned workspaces: they go to %u:%u\n",
                (unsigned)b.ctx.ws_uid, (unsigned)b.ctx.ws_gid);
    if (b.n_queue && b.ctx.sandbox && shared_daemon(&b, &daemon, &sock, &e) < 0) {
        fprintf(stderr, "mini batch: the sandbox daemon: %s\n", e.msg);
        goto out;
    }
    struct sigaction sa = { .sa_handler = on_int };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction sc = { .sa_handler = on_chld, .sa_flags = SA_NOCLDSTOP };
    sigemptyset(&sc.sa_mask);
    sigaction(SIGCHLD, &sc, NULL);
    signal(SIGPIPE, SIG_IGN);
    pool(&b);
    draw(&b.pg, b.run, 0, true);
    if (mini_batch_out_finish(&b.out, &e) < 0) {
        fprintf(stderr, "mini batch: %s\n", e.msg);
        b.errors++;
    }
    const cJSON *tot = cJSON_GetObjectItemCaseSensitive(b.out.summary, "totals");
    fprintf(stderr,
            "mini batch: this run: %zu finished, %zu failed, %zu interrupted, $%.4f; in %s: %d tasks, %d submitted",
            b.pg.done, b.pg.failed, b.pg.interrupted, b.pg.cost, out_abs, (int)tot_num(tot, "tasks"),
            (int)tot_num(tot, "submitted"));
    if (tot_num(tot, "verified") > 0)
        fprintf(stderr, ", resolved %d of %d verified (%.1f%%)", (int)tot_num(tot, "resolved"),
                (int)tot_num(tot, "verified"), tot_num(tot, "resolve_rate") * 100);
    fputc('\n', stderr);
    if (b.cost_stop && !b.errors)
        fprintf(stderr, "mini batch: stopped starting tasks at the total cost limit ($%.4f); %zu not run\n",
                o->cost_total, b.n_queue - b.next);
    if (getenv("MINI_BATCH_TIMING") && b.next > 0)
        fprintf(stderr,
                "mini batch: timing: per task, %.3f ms handing it to a worker, %.3f ms reading its result, "
                "%.3f ms writing the outputs; %u group commits, %.3f ms each\n",
                b.t_start * 1000 / (double)b.next, b.t_finish * 1000 / (double)b.next,
                b.t_record * 1000 / (double)b.next, b.out.commits,
                b.out.commits ? b.out.commit_s * 1000 / b.out.commits : 0.0);
    rc = interrupted ? 130 : b.errors ? 1 : 0;
out:
    if (daemon > 0) {
        kill(daemon, SIGTERM);
        while (waitpid(daemon, NULL, 0) < 0 && errno == EINTR)
            ;
        if (sock)
            unlink(sock);
    }
    mini_close(lock);
    mini_ws_guard_free(&b.ctx.guard);
    free(b.queue);
    cJSON_Delete(b.pending);
    mini_batch_out_free(&b.out);
    mini_tasks_free(&b.tasks);
    return rc;
}

int mini_batch_main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "slurm") == 0)
        return mini_batch_slurm_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "merge") == 0)
        return mini_batch_merge_main(argc - 1, argv + 1);
    _cleanup_free_ const char **specs = calloc((size_t)argc + 1, sizeof *specs);
    if (!specs)
        return 1;
    struct opts o = { .specs = specs };
    int rc = parse(argc, argv, &o);
    return rc >= 0 ? rc : run_batch(&o);
}
