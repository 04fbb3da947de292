/* mini: a minimal software-engineering agent whose commands run in a sandbox. */
#include "agent.h"
#include "batch/batch.h"
#include "inspect/inspect.h"
#include "mini/json.h"
#include "config/command.h"
#include "config/config.h"
#include "config/dotenv.h"
#include "config/setup.h"
#include "environment.h"
#include "interactive.h"
#include "model.h"
#include "policy/policy.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"
#include "mini/profile.h"
#include "mini/str.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini [OPTION]...\n"
            "Run a language model on a task; every command it asks for runs in a sandbox.\n\n"
            "  -t, --task TEXT            the task (asked for when not given and a terminal is there)\n"
            "  -m, --model NAME           model name (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5);\n"
            "                             default: model.model_name, else $MSWEA_MODEL_NAME\n"
            "  -c, --config SPEC          a config file, a built-in config name (mini, mini_textbased),\n"
            "                             or key.path=value (value parsed as JSON, else a string);\n"
            "                             repeatable, later wins\n"
            "  -y, --yolo                 run the model's commands without asking (needed when\n"
            "                             stdin is not a terminal)\n"
            "  -l, --cost-limit USD       stop when the model has cost this much (0: no limit)\n"
            "  -o, --output FILE          trajectory file (default: last_mini_run.traj.json in the\n"
            "                             global config directory)\n"
            "      --exit-immediately     do not ask for a new task when the model submits\n"
            "      --model-class NAME     openai, anthropic, openrouter, *_textbased, deterministic, replay\n"
            "      --agent-class NAME     interactive (asks before running commands, per agent.mode) or\n"
            "                             default (runs them)\n"
            "      --environment-class C  local or sandbox\n"
            "      --image NAME           run commands in the sandbox rooted in an imported image\n"
            "                             (mini-sandbox image import; config environment.image)\n"
            "      --pull WHEN            missing (default: pull the image when the store lacks it),\n"
            "                             always (before the run) or never (config environment.pull)\n"
            "      --sandbox P|FILE|off   run commands in the sandbox with profile P (strict, standard,\n"
            "                             permissive) or a profile file; off: on the host, unconfined\n"
            "      --workspace DIR        the directory the commands work in (default: .)\n"
            "  -v, --verbose              more detail on stderr: each model request's outcome and time\n"
            "  -q, --quiet                show only the result (the submission on stdout) and, on\n"
            "                             stderr, errors and the summary\n"
            "      --audit-log FILE       append one JSON line per action (its policy decision and how\n"
            "                             it ran) to FILE (default: policy.audit_log)\n"
            "  -h, --help, --version\n\n"
            "       mini inspect [PATH]        browse trajectories (a terminal browser, plain text,\n"
            "                             or --html OUT.html); mini inspect --help\n"
            "       mini config set KEY VALUE | unset KEY | edit\n"
            "                             change the global .env file (mini-extra config)\n\n"
            "Without -y, mini shows each step's commands and runs them when you press Enter\n"
            "(type a reason to reject them); /h at any question lists the commands (/y, /c,\n"
            "/u, /m), Ctrl-C stops the model or a command and asks for a comment.\n\n"
            "Exit status: 0 when the model submitted, 1 when the run ended otherwise\n"
            "(limits, errors), 2 for bad usage, 130 when interrupted.\n");
}

static struct mini_agent *current_agent;
static struct mini_environment *current_env;

/* SIGINT stops what runs now (the model's answer, a command); the front
 * end then asks the person, or the run stops when nobody can be asked.
 * SIGTERM and SIGHUP stop the run without asking. */
static void on_signal(int sig)
{
    mini_ui_signal(sig);
    if (current_agent) {
        if (sig != SIGINT)
            current_agent->terminate = 1;
        current_agent->interrupt = 1;
    }
    if (current_env)
        mini_environment_interrupt(current_env);
}

static int set_path(cJSON *cfg, const char *path, cJSON *v, struct mini_err *e)
{
    if (!v)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return mini_config_set(cfg, path, v, e);
}

/* The trajectory's default place; NULL with e filled when there is none
 * (no home directory). */
static char *default_output(struct mini_err *e)
{
    const char *dir = mini_config_global_dir();
    char *p = NULL;
    if (!dir) {
        _cleanup_free_ char *d = mini_config_global_dir_new(false, e);
        if (d)
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (asprintf(&p, "%s/last_mini_run.traj.json", dir) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    return p;
}

/* Make sure the trajectory can be written before any model call costs
 * money: create its directory (as mini-swe-agent does) and try a file in
 * it.  0, or -1 with e filled. */
static int prepare_output(const char *path, struct mini_err *e)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_mkdir_p(dir, 0755, e) < 0)
        return mini_err_prefix(e, "trajectory %s", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return mini_err_set(e, MINI_E_IO, "trajectory %s: is a directory", path);
    _cleanup_close_ int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) && access(dir, W_OK | X_OK) == 0)
        return 0;
    if (fd < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "trajectory %s: cannot write in %s", path, dir);
    return 0;
}

/* The command line. */
struct args {
    const char *task, *model_name, *cost_limit, *output;
    const char *model_class, *agent_class, *env_class, *sandbox, *workspace, *image, *pull, *audit_log;
    bool yolo, exit_immediately, verbose, quiet;
    const char **specs; /* argc + 1 slots */
    size_t n_specs;
};

/* -1: go on; otherwise the exit code. */
static int parse_args(int argc, char **argv, struct args *o)
{
    enum {
        OPT_EXIT = 256,
        OPT_MODEL_CLASS,
        OPT_AGENT_CLASS,
        OPT_ENV_CLASS,
        OPT_SANDBOX,
        OPT_WORKSPACE,
        OPT_VERSION,
        OPT_IMAGE,
        OPT_PULL,
        OPT_AUDIT_LOG
    };
    static const struct option opts[] = {
        { "task", required_argument, NULL, 't' },
        { "model", required_argument, NULL, 'm' },
        { "config", required_argument, NULL, 'c' },
        { "yolo", no_argument, NULL, 'y' },
        { "cost-limit", required_argument, NULL, 'l' },
        { "output", required_argument, NULL, 'o' },
        { "exit-immediately", no_argument, NULL, OPT_EXIT },
        { "model-class", required_argument, NULL, OPT_MODEL_CLASS },
        { "agent-class", required_argument, NULL, OPT_AGENT_CLASS },
        { "environment-class", required_argument, NULL, OPT_ENV_CLASS },
        { "sandbox", required_argument, NULL, OPT_SANDBOX },
        { "workspace", required_argument, NULL, OPT_WORKSPACE },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "image", required_argument, NULL, OPT_IMAGE },
        { "pull", required_argument, NULL, OPT_PULL },
        { "audit-log", required_argument, NULL, OPT_AUDIT_LOG },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION },
        { 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "t:m:c:yl:o:vqh", opts, NULL)) != -1) {
        switch (c) {
        case 't': o->task = optarg; break;
        case 'm': o->model_name = optarg; break;
        case 'c': o->specs[o->n_specs++] = optarg; break;
        case 'y': o->yolo = true; break;
        case 'l': o->cost_limit = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_EXIT: o->exit_immediately = true; break;
        case OPT_MODEL_CLASS: o->model_class = optarg; break;
        case OPT_AGENT_CLASS: o->agent_class = optarg; break;
        case OPT_ENV_CLASS: o->env_class = optarg; break;
        case OPT_SANDBOX: o->sandbox = optarg; break;
        case OPT_WORKSPACE: o->workspace = optarg; break;
        case 'v': o->verbose = true; break;
        case 'q': o->quiet = true; break;
        case OPT_IMAGE: o->image = optarg; break;
        case OPT_PULL: o->pull = optarg; break;
        case OPT_AUDIT_LOG: o->audit_log = optarg; break;
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf("mini %s\n", MINI_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mini: unexpected argument: %s (the task goes after -t)\n", argv[optind]);
        return 2;
    }
    if (o->verbose && o->quiet) {
        fprintf(stderr, "mini: -v/--verbose and -q/--quiet cannot be used together\n");
        return 2;
    }
    return -1;
}

static int fail(const struct mini_err *e)
{
    fprintf(stderr, "mini: %s\n", e->msg);
    return e->code == MINI_E_CONFIG ? 2 : 1;
}

/* The flags win over the config files.  0; -1 with e; 2 for bad usage
 * (said). */
static int apply_flags(cJSON *cfg, const struct args *o, struct mini_err *e)
{
    if (o->model_name && set_path(cfg, "model.model_name", cJSON_CreateString(o->model_name), e) < 0)
        return -1;
    if (o->model_class && set_path(cfg, "model.model_class", cJSON_CreateString(o->model_class), e) < 0)
        return -1;
    if (o->cost_limit) {
        char *end;
        double v = strtod(o->cost_limit, &end);
        if (*end || v < 0) {
            fprintf(stderr, "mini: --cost-limit: not a non-negative number: %s\n", o->cost_limit);
            return 2;
        }
        if (set_path(cfg, "agent.cost_limit", mini_json_create_float(v), e) < 0)
            return -1;
    }
    /* validation maps mini-swe-agent's class paths and refuses others */
    if (o->agent_class && set_path(cfg, "agent.agent_class", cJSON_CreateString(o->agent_class), e) < 0)
        return -1;
    if (o->yolo && set_path(cfg, "agent.mode", cJSON_CreateString("yolo"), e) < 0)
        return -1;
    if (o->exit_immediately && set_path(cfg, "agent.confirm_exit", cJSON_CreateFalse(), e) < 0)
        return -1;
    if (o->sandbox) {
        bool off = strcmp(o->sandbox, "off") == 0;
        if (set_path(cfg, "environment.environment_class", cJSON_CreateString(off ? "local" : "sandbox"), e) < 0 ||
            (!off && set_path(cfg, "environment.profile", cJSON_CreateString(o->sandbox), e) < 0))
            return -1;
    }
    if (o->env_class && set_path(cfg, "environment.environment_class", cJSON_CreateString(o->env_class), e) < 0)
        return -1;
    if (o->workspace && set_path(cfg, "environment.workspace", cJSON_CreateString(o->workspace), e) < 0)
        return -1;
    if (o->pull && set_path(cfg, "environment.pull", cJSON_CreateString(o->pull), e) < 0)
        return -1;
    /* --image: the sandbox, rooted in an imported image; a container
     * class (docker, ...) keeps its own meaning of the image. */
    const char *cls_now = mini_config_get_string(cfg, "environment.environment_class");
    if (o->image &&
        (set_path(cfg, "environment.image", cJSON_CreateString(o->image), e) < 0 ||
         (!o->env_class && (!o->sandbox || strcmp(o->sandbox, "off")) && !mini_config_container_class(cls_now) &&
          set_path(cfg, "environment.environment_class", cJSON_CreateString("sandbox"), e) < 0)))
        return -1;
    int rc = mini_config_check_profile(cfg, "mini", o->sandbox ? "--sandbox" : "environment.profile");
    if (rc != 0)
        return rc;
    return mini_config_validate(cfg, e) < 0 ? -1 : 0;
}

static void print_warning(const char *msg, void *ud)
{
    (void)ud;
    fprintf(stderr, "mini: warning: %s\n", msg);
}

/* The config: the global .env (variables already set win), the config
 * files, the flags.  NULL with *rc the exit code (said). */
static cJSON *load_config(const struct args *o, int *rc)
{
    struct mini_err e;
    mini_err_clear(&e);
    mini_config_set_warn(print_warning, NULL);
    /* Config files there may come from sandboxed commands: warned about. */
    mini_config_watch_workspace(".");
    if (o->workspace)
        mini_config_watch_workspace(o->workspace);
    _cleanup_cjson_ cJSON *cfg = mini_config_setup(o->specs, o->n_specs, &e);
    if (!cfg) {
        *rc = fail(&e);
        return NULL;
    }
    int r = apply_flags(cfg, o, &e);
    if (r != 0) {
        *rc = r < 0 ? fail(&e) : r;
        return NULL;
    }
    return TAKE_PTR(cfg);
}

/* Nobody to ask: never run the model's commands unasked, and the task must
 * be given.  0, or 2 (said). */
static int check_usage(const cJSON *cfg, bool tty, const char **task)
{
    const char *mode = NULL;
    if (!tty && mini_ui_needs_terminal(mini_config_get(cfg, "agent"), &mode)) {
        if (strcmp(mode, "human") == 0)
            fprintf(stderr,
                    "mini: agent.mode is human (you type the commands), but stdin is not a terminal; "
                    "pass -y to let the model work without asking\n");
        else
            fprintf(stderr,
                    "mini: agent.mode is %s: mini asks before running the model's commands, but stdin "
                    "is not a terminal; pass -y to run them without asking\n",
                    mode);
        return 2;
    }
    const cJSON *cfg_task = mini_config_get(cfg, "run.task");
    if (!*task && cJSON_IsString(cfg_task))
        *task = cfg_task->valuestring;
    if (!*task && !tty) {
        fprintf(stderr, "mini: no task given (use -t TEXT; stdin is not a terminal to ask for one)\n");
        return 2;
    }
    return 0;
}

/* The front end: it shows the run, and asks when there is a terminal. */
static struct mini_ui *new_ui(const cJSON *cfg, bool tty, bool quiet, struct mini_err *e)
{
    /* no-color.org; and a terminal that says it understands no escapes */
    const char *no_color = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    struct mini_ui_opts uo = {
        .agent = mini_config_get(cfg, "agent"),
        .model = mini_config_get(cfg, "model"),
        .interactive = tty,
        .out = stdout,
        .color = isatty(STDOUT_FILENO) && !(no_color && *no_color) && !(term && strcmp(term, "dumb") == 0),
        .quiet = quiet,
        .history_dir = mini_config_global_dir(),
    };
    return mini_ui_new(&uo, e);
}

static void catch_signals(void)
{
    /* libcurl runs with CURLOPT_NOSIGNAL: a peer closing a TLS connection
     * must not kill mini. */
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* The run's summary on stderr, and mini's exit code. */
/* What the trajectory file was before the run (st_ino 0: none), to tell
 * whether this run wrote it. */
static struct stat output_before(const char *output)
{
    struct stat st = { 0 };
    if (!output || stat(output, &st) < 0)
        memset(&st, 0, sizeof st);
    return st;
}

static int report(const struct mini_agent *agent, const struct mini_model *model, const char *output,
                  const struct stat *before, int r, const struct mini_err *e)
{
    fflush(stdout);
    bool stopped = agent->exit_status && strcmp(agent->exit_status, "KeyboardInterrupt") == 0;
    /* Never name a file that was not written (by this run: a file from an
     * earlier one is replaced, never written in place). */
    struct stat st;
    bool written = output && stat(output, &st) == 0 &&
        (st.st_ino != before->st_ino || st.st_dev != before->st_dev || st.st_mtim.tv_sec != before->st_mtim.tv_sec ||
         st.st_mtim.tv_nsec != before->st_mtim.tv_nsec);
    fprintf(stderr, "mini: %s after %ld model calls, cost $%.4f; trajectory: %s\n",
            agent->exit_status ? agent->exit_status : "stopped", mini_model_calls(model), mini_model_cost(model),
            written      ? output
                : output ? "(not written)"
                         : "(not saved)");
    if (r < 0 && !stopped)
        fprintf(stderr, "mini: %s\n", e->msg);
    return stopped ? 130 : (agent->exit_status && strcmp(agent->exit_status, "Submitted") == 0) ? 0 : 1;
}

/* The signal handler lets go of the agent and the environment before they
 * are freed. */
static void agent_finip(struct mini_agent *a)
{
    current_agent = NULL;
    mini_agent_fini(a);
}

static void env_freep(struct mini_environment **env)
{
    current_env = NULL;
    mini_environment_free(*env);
}

/* The model's notes (retries, with -v each request) on stderr. */
struct notes {
    struct mini_ui *ui;
    bool verbose, quiet;
};

static void on_note(void *arg, enum mini_model_note kind, const char *line)
{
    const struct notes *n = arg;
    if (n->quiet || (kind == MINI_MODEL_NOTE_DETAIL && !n->verbose))
        return;
    mini_ui_note(n->ui, line);
}

static void model_freep(struct mini_model **m) { mini_model_free(*m); }
static void policy_freep(struct mini_policy **p) { mini_policy_free(*p); }

static void ui_freep(struct mini_ui **ui) { mini_ui_free(*ui); }

static int run(struct args *o)
{
    int rc;
    _cleanup_cjson_ cJSON *cfg = load_config(o, &rc);
    if (!cfg)
        return rc;
    bool tty = isatty(STDIN_FILENO);
    if ((rc = check_usage(cfg, tty, &o->task)) != 0)
        return rc;
    struct mini_err e;
    mini_err_clear(&e);
    const cJSON *ecls = mini_config_get(cfg, "environment.environment_class");
    /* The policy first: its mistakes are the config's, found before any
     * model or sandbox is set up. */
    _cleanup_(policy_freep) struct mini_policy *policy = mini_policy_from_config(cfg, &e);
    if (!policy)
        return fail(&e);
    _cleanup_(model_freep) struct mini_model *model = mini_model_new(mini_config_get(cfg, "model"), NULL, &e);
    if (!model)
        return fail(&e);
    _cleanup_(env_freep) struct mini_environment *env = mini_environment_new(
        mini_config_get(cfg, "environment"), cJSON_IsString(ecls) ? ecls->valuestring : "local", &e);
    if (!env)
        return fail(&e);
    /* Opened before any command runs, guarded by the workspace that the
     * commands may write. */
    const char *audit_path = o->audit_log ? o->audit_log : mini_policy_audit_log(policy);
    _cleanup_close_ int audit_fd = audit_path ? mini_audit_open(audit_path, mini_environment_workspace(env), &e) : -1;
    if (audit_path && audit_fd < 0)
        return fail(&e);
    if (mini_policy_check_approver(policy, mini_environment_workspace(env), &e) < 0)
        return fail(&e);
    _cleanup_(ui_freep) struct mini_ui *ui = new_ui(cfg, tty, o->quiet, &e);
    if (!ui)
        return fail(&e);
    _cleanup_(agent_finip) struct mini_agent agent = { 0 };
    current_env = env;
    catch_signals();
    _cleanup_free_ char *asked_task = NULL, *out_default = NULL;
    if (!o->task) {
        int tr = mini_ui_ask_task(ui, &asked_task);
        if (tr != 0) {
            fprintf(stderr, tr == 2 ? "mini: interrupted\n" : "mini: no task given\n");
            return tr == 2 ? 130 : 1;
        }
        o->task = asked_task;
    }
    if (!o->output && !(o->output = out_default = default_output(&e))) {
        fprintf(stderr, "mini: no place for the trajectory: %s; give one with -o FILE\n", e.msg);
        return 1;
    }
    if (prepare_output(o->output, &e) < 0) {
        if (out_default)
            fprintf(stderr, "mini: %s; give another place with -o FILE (or MSWEA_GLOBAL_CONFIG_DIR)\n", e.msg);
        return out_default ? 1 : fail(&e);
    }
    struct stat before = output_before(o->output);
    if (mini_agent_init(&agent, cfg, model, env, o->output, &e) < 0 ||
        mini_agent_supervise(&agent, policy, audit_fd, &e) < 0)
        return fail(&e);
    mini_model_set_cancel(model, &agent.interrupt);
    struct notes notes = { ui, o->verbose, o->quiet };
    mini_model_set_notes(model, on_note, &notes);
    mini_ui_attach(ui, &agent);
    current_agent = &agent;
    return report(&agent, model, o->output, &before, mini_agent_run(&agent, o->task, &e), &e);
}

int main(int argc, char **argv)
{
    mini_log_init(argv[0], MINI_LOG_WARN);
    /* Characters for line editing and the display; numbers stay in "C". */
    setlocale(LC_CTYPE, "");
    _cleanup_free_ const char **specs = calloc((size_t)argc + 1, sizeof *specs);
    if (argc > 1 && !strcmp(argv[1], "config"))
        return mini_config_command(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "batch"))
        return mini_batch_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "inspect"))
        return mini_inspect_main(argc - 1, argv + 1);
    struct args o = { .specs = specs };
    int rc = parse_args(argc, argv, &o);
    return rc >= 0 ? rc : run(&o);
}
