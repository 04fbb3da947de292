/* mini: a minimal software-engineering agent whose commands run in a sandbox. */
#include "agent.h"
#include "config.h"
#include "environment.h"
#include "interactive.h"
#include "model.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
            "      --environment-class C  local or sandbox\n"
            "      --sandbox P|FILE|off   run commands in the sandbox with profile P (strict, standard,\n"
            "                             permissive) or a profile file; off: on the host, unconfined\n"
            "      --workspace DIR        the directory the commands work in (default: .)\n"
            "  -h, --help, --version\n\n"
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

static char *default_output(void)
{
    const char *dir = mini_config_global_dir();
    char *p = NULL;
    if (!dir || asprintf(&p, "%s/last_mini_run.traj.json", dir) < 0)
        return NULL;
    return p;
}

int main(int argc, char **argv)
{
    enum { OPT_EXIT = 256, OPT_MODEL_CLASS, OPT_ENV_CLASS, OPT_SANDBOX, OPT_WORKSPACE, OPT_VERSION };
    static const struct option opts[] = {
        { "task", required_argument, NULL, 't' },        { "model", required_argument, NULL, 'm' },
        { "config", required_argument, NULL, 'c' },      { "yolo", no_argument, NULL, 'y' },
        { "cost-limit", required_argument, NULL, 'l' },  { "output", required_argument, NULL, 'o' },
        { "exit-immediately", no_argument, NULL, OPT_EXIT },
        { "model-class", required_argument, NULL, OPT_MODEL_CLASS },
        { "environment-class", required_argument, NULL, OPT_ENV_CLASS },
        { "sandbox", required_argument, NULL, OPT_SANDBOX },
        { "workspace", required_argument, NULL, OPT_WORKSPACE },
        { "help", no_argument, NULL, 'h' },              { "version", no_argument, NULL, OPT_VERSION },
        { 0 },
    };
    mini_log_init(argv[0], MINI_LOG_WARN);
    /* Characters for line editing and the display; numbers stay in "C". */
    setlocale(LC_CTYPE, "");
    const char *task = NULL, *model_name = NULL, *cost_limit = NULL, *output = NULL;
    const char *model_class = NULL, *env_class = NULL, *sandbox = NULL, *workspace = NULL;
    bool yolo = false, exit_immediately = false;
    const char **specs = calloc((size_t)argc + 1, sizeof *specs);
    size_t n_specs = 0;
    int c;
    while ((c = getopt_long(argc, argv, "t:m:c:yl:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': task = optarg; break;
        case 'm': model_name = optarg; break;
        case 'c': specs[n_specs++] = optarg; break;
        case 'y': yolo = true; break;
        case 'l': cost_limit = optarg; break;
        case 'o': output = optarg; break;
        case OPT_EXIT: exit_immediately = true; break;
        case OPT_MODEL_CLASS: model_class = optarg; break;
        case OPT_ENV_CLASS: env_class = optarg; break;
        case OPT_SANDBOX: sandbox = optarg; break;
        case OPT_WORKSPACE: workspace = optarg; break;
        case 'h': usage(stdout); free(specs); return 0;
        case OPT_VERSION: printf("mini %s\n", MINI_VERSION); free(specs); return 0;
        default: usage(stderr); free(specs); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mini: unexpected argument: %s (the task goes after -t)\n", argv[optind]);
        free(specs);
        return 2;
    }

    struct mini_err e;
    mini_err_clear(&e);
    int rc = 1;
    cJSON *cfg = NULL;
    struct mini_model *model = NULL;
    struct mini_environment *env = NULL;
    struct mini_agent agent;
    bool agent_ready = false;
    struct mini_ui *ui = NULL;
    _cleanup_free_ char *asked_task = NULL;
    _cleanup_free_ char *out_default = NULL;
    _cleanup_free_ char *dotenv = NULL;

    /* The global .env: variables already set win. */
    const char *gdir = mini_config_global_dir();
    if (gdir && asprintf(&dotenv, "%s/.env", gdir) >= 0 && access(dotenv, F_OK) == 0 &&
        mini_config_load_dotenv(dotenv, &e) < 0)
        goto fail;

    if (!(cfg = mini_config_load(specs, n_specs, &e)))
        goto fail;
    /* Flags win over the config files. */
    if (model_name && set_path(cfg, "model.model_name", cJSON_CreateString(model_name), &e) < 0)
        goto fail;
    if (model_class && set_path(cfg, "model.model_class", cJSON_CreateString(model_class), &e) < 0)
        goto fail;
    if (cost_limit) {
        char *end;
        double v = strtod(cost_limit, &end);
        if (*end || v < 0) {
            fprintf(stderr, "mini: --cost-limit: not a non-negative number: %s\n", cost_limit);
            rc = 2;
            goto out;
        }
        if (set_path(cfg, "agent.cost_limit", cJSON_CreateNumber(v), &e) < 0)
            goto fail;
    }
    if (yolo && set_path(cfg, "agent.mode", cJSON_CreateString("yolo"), &e) < 0)
        goto fail;
    if (exit_immediately && set_path(cfg, "agent.confirm_exit", cJSON_CreateFalse(), &e) < 0)
        goto fail;
    if (sandbox) {
        bool off = strcmp(sandbox, "off") == 0;
        if (set_path(cfg, "environment.environment_class", cJSON_CreateString(off ? "local" : "sandbox"), &e) < 0 ||
            (!off && set_path(cfg, "environment.profile", cJSON_CreateString(sandbox), &e) < 0))
            goto fail;
    }
    if (env_class && set_path(cfg, "environment.environment_class", cJSON_CreateString(env_class), &e) < 0)
        goto fail;
    if (workspace && set_path(cfg, "environment.workspace", cJSON_CreateString(workspace), &e) < 0)
        goto fail;
    if (mini_config_validate(cfg, &e) < 0)
        goto fail;

    /* Nobody to ask: never run the model's commands unasked. */
    const cJSON *agent_cfg = mini_config_get(cfg, "agent");
    bool tty = isatty(STDIN_FILENO);
    const char *mode = NULL;
    if (!tty && mini_ui_needs_terminal(agent_cfg, &mode)) {
        if (strcmp(mode, "human") == 0)
            fprintf(stderr, "mini: agent.mode is human (you type the commands), but stdin is not a terminal; "
                            "pass -y to let the model work without asking\n");
        else
            fprintf(stderr, "mini: agent.mode is %s: mini asks before running the model's commands, but stdin "
                            "is not a terminal; pass -y to run them without asking\n", mode);
        rc = 2;
        goto out;
    }
    const cJSON *cfg_task = mini_config_get(cfg, "run.task");
    if (!task && cJSON_IsString(cfg_task))
        task = cfg_task->valuestring;
    if (!task && !tty) {
        fprintf(stderr, "mini: no task given (use -t TEXT; stdin is not a terminal to ask for one)\n");
        rc = 2;
        goto out;
    }

    const cJSON *ecls = mini_config_get(cfg, "environment.environment_class");
    if (!(model = mini_model_new(mini_config_get(cfg, "model"), NULL, &e)))
        goto fail;
    if (!(env = mini_environment_new(mini_config_get(cfg, "environment"),
                                     cJSON_IsString(ecls) ? ecls->valuestring : "local", &e)))
        goto fail;
    /* The front end: it shows the run, and asks when there is a terminal. */
    const char *no_color = getenv("NO_COLOR");
    struct mini_ui_opts uo = {
        .agent = agent_cfg,
        .model = mini_config_get(cfg, "model"),
        .interactive = tty,
        .out = stdout,
        .color = isatty(STDOUT_FILENO) && !(no_color && *no_color),
        .history_dir = mini_config_global_dir(),
    };
    if (!(ui = mini_ui_new(&uo, &e)))
        goto fail;
    current_env = env;
    /* libcurl runs with CURLOPT_NOSIGNAL: a peer closing a TLS connection
     * must not kill mini. */
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (!task) {
        int tr = mini_ui_ask_task(ui, &asked_task);
        if (tr != 0) {
            fprintf(stderr, tr == 2 ? "mini: interrupted\n" : "mini: no task given\n");
            rc = tr == 2 ? 130 : 1;
            goto out;
        }
        task = asked_task;
    }
    if (!output)
        output = out_default = default_output();
    if (mini_agent_init(&agent, cfg, model, env, output, &e) < 0)
        goto fail;
    agent_ready = true;

    mini_model_set_cancel(model, &agent.interrupt);
    mini_ui_attach(ui, &agent);
    current_agent = &agent;

    int r = mini_agent_run(&agent, task, &e);
    fflush(stdout);
    bool stopped = agent.exit_status && strcmp(agent.exit_status, "KeyboardInterrupt") == 0;
    fprintf(stderr, "mini: %s after %ld model calls, cost $%.4f; trajectory: %s\n",
            agent.exit_status ? agent.exit_status : "stopped", mini_model_calls(model), mini_model_cost(model),
            output ? output : "(not saved)");
    if (r < 0 && !stopped)
        fprintf(stderr, "mini: %s\n", e.msg);
    rc = stopped ? 130 : (agent.exit_status && strcmp(agent.exit_status, "Submitted") == 0) ? 0 : 1;
    goto out;
fail:
    fprintf(stderr, "mini: %s\n", e.msg);
    rc = e.code == MINI_E_CONFIG ? 2 : 1;
out:
    current_agent = NULL;
    current_env = NULL;
    if (agent_ready)
        mini_agent_fini(&agent);
    mini_ui_free(ui);
    mini_environment_free(env);
    mini_model_free(model);
    cJSON_Delete(cfg);
    free(specs);
    return rc;
}
