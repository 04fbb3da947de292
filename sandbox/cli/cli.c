/* mini-sandbox: command-line client of mini-sandboxd. */
#include "bench.h"
#include "cli_check.h"
#include "cli_util.h"
#include "mini/client.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"
#include "mini/path.h"
#include "mini/profile.h"
#include "mini/json.h"
#include "policy/policy.h"
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Exit statuses of `run` (as `timeout`, `env` and shells use them). */
enum { EXIT_TIMEOUT = 124, EXIT_SANDBOX = 125 };

/* run's own usage errors exit 125, not 2: its status is otherwise the
 * command's, and a command may exit 2 itself. */
static int run_usage(int rc)
{
    (void)rc;
    return 125;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandbox COMMAND [OPTION]...\n"
            "Client of mini-sandboxd, the sandbox executor of mini.\n\n"
            "Commands:\n"
            "  run [OPTION]... -- COMMAND...   run one command in a sandbox\n"
            "      --profile NAME|FILE   strict, standard (default), permissive, or a JSON file\n"
            "      --workspace DIR       writable directory, mounted at its own path (default: .)\n"
            "      --cwd DIR             working directory (default: the workspace)\n"
            "      --timeout S           wall-clock limit, at most the profile's\n"
            "      --network none|host   host only where the profile allows it\n"
            "      --allow-host ENTRY    let the sandbox reach ENTRY through its proxy (repeatable:\n"
            "                            pypi.org, *.example.com, host:443, 10.1.2.3, 10.0.0.0/8;\n"
            "                            docs/profiles.md); turns network none into an allowlist\n"
            "      --env K=V             set a variable (repeatable); nothing else is inherited\n"
            "      --image NAME          an imported image as the root (mini-sandbox image)\n"
            "      --pull missing|always|never  with --image: pull NAME from its registry when it\n"
            "                            is not stored (missing, the default), before each run\n"
            "                            (always), or never\n"
            "      --user USER[:GROUP]   with --image: run as this user of the image instead of\n"
            "                            its config's User (a name or a number)\n"
            "      --policy FILE         check the command against a policy first (YAML or JSON:\n"
            "                            mini's `policy` object, docs/config.md); denied: exit\n"
            "                            126, nothing run; a rule's profile replaces --profile\n"
            "      --socket PATH         daemon socket (default: the per-user one; without a\n"
            "                            listening daemon a private one is started)\n"
            "  -v, --verbose             also say how the sandbox is degraded, when it is\n"
            "                            (mini-sandbox check shows it in full)\n"
            "    One word is run by /bin/sh -c; several words are run as argv.\n"
            "    Standard input is passed to the command when it is a pipe or a file.\n"
            "    Exit status: the command's; 128+N if killed by signal N; 124 on timeout;\n"
            "    143 if the daemon shut down (SIGTERM) while it ran; 125 if the sandbox\n"
            "    or the client failed (standard output not writable, for one); 126/127\n"
            "    as a shell; a usage error of run itself is 125 too (as env(1) does), so\n"
            "    that it cannot be taken for the command's own status 2.\n"
            "  ping [--socket PATH]            check that a daemon answers\n"
            "  stats [--socket PATH]           the daemon's counters as JSON\n"
            "  profiles                        list the built-in profiles\n"
            "  check [--profile NAME] [--json] what isolation this machine offers, and per profile\n"
            "                                  whether it runs in full, degraded or not at all\n"
            "  bench [--profile P] [-n N] [--concurrency C] [--command CMD] [--json]\n"
            "                                  latency and throughput against bare fork+exec and bwrap,\n"
            "                                  back to back and one-shot run included\n"
            "  image import|pull|ls|inspect|tag|rm|prune  the image store (mini-sandbox image --help)\n"
            "  --help, --version\n\n"
            "Exit status (other commands): 0 on success, 2 for a usage error, 125 when\n"
            "the daemon cannot be reached or standard output cannot be written.\n");
}

static int fail(const struct mini_err *e)
{
    fprintf(stderr, "mini-sandbox: %s: %s\n", mini_errc_name(e->code), e->msg);
    return EXIT_SANDBOX;
}

/* The first error writing standard output (0: none): main reports it. */
static int out_errno;

static void write_out(void *arg, const char *data, size_t len)
{
    (void)arg;
    if (out_errno)
        return; /* the rest is lost as well; the command still runs to its end */
    errno = 0;
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
        out_errno = errno ? errno : EIO;
}

/* Connecting failed: where nothing listens, say so and how to start one. */
static int fail_connect(const struct mini_err *e, const char *socket)
{
    if (e->code == MINI_E_IO && (e->sys_errno == ENOENT || e->sys_errno == ECONNREFUSED)) {
        struct mini_err ignored;
        _cleanup_free_ char *def = socket ? NULL : mini_default_socket(&ignored);
        const char *path = socket ? socket : def;
        if (path) {
            fprintf(stderr, "mini-sandbox: no daemon at %s (start one with: mini-sandboxd%s%s)\n", path,
                    socket ? " --socket " : "", socket ? socket : "");
            return EXIT_SANDBOX;
        }
    }
    return fail(e);
}

/* A --profile that names a file (has a '/' or ends in .json) is read here
 * and sent whole, so the daemon never opens a path a client chose. */
static cJSON *profile_file(const char *arg, struct mini_err *e)
{
    size_t n = strlen(arg);
    if (!strchr(arg, '/') && !(n > 5 && strcmp(arg + n - 5, ".json") == 0))
        return NULL;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(arg, &b, 1 << 20, e) < 0)
        return NULL;
    cJSON *obj = mini_json_parse_object(b.data, b.len, e);
    if (!obj) {
        mini_err_prefix(e, "profile %s", arg);
        return NULL;
    }
    /* Checked here too, so that a mistake is reported against the file
     * (the daemon only sees "profile_data"). */
    struct mini_profile *p = mini_profile_from_json(obj, arg, e);
    if (!p) {
        cJSON_Delete(obj);
        return NULL;
    }
    mini_profile_free(p);
    return obj;
}

/* run --policy FILE: what libexec/mini/mini-sandbox-policy (policy_main.c)
 * says about command, its verdict object; NULL with e when it could not
 * say.  A program of its own, so that run loads PCRE2 and libyaml only
 * with --policy. */
static cJSON *policy_verdict(const char *path, const char *cwd, const char *ws, const char *command, struct mini_err *e)
{
    _cleanup_free_ char *prog = mini_exe_relative(MINI_BIN_TO_LIBEXEC "/mini-sandbox-policy");
    int p[2];
    if (!prog) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (pipe2(p, O_CLOEXEC) < 0) {
        mini_err_sys(e, MINI_E_IO, errno, "policy: pipe");
        return NULL;
    }
    posix_spawn_file_actions_t fa;
    char *args[] = { prog, (char *)path, (char *)cwd, (char *)ws, (char *)command, NULL };
    pid_t pid;
    int r = posix_spawn_file_actions_init(&fa);
    if (r == 0) {
        r = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        if (r == 0)
            r = posix_spawn(&pid, prog, &fa, NULL, args, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    if (r != 0) {
        close(p[0]);
        mini_err_sys(e, MINI_E_SPAWN_FAILED, r, "policy: cannot run %s", prog);
        return NULL;
    }
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    /* A rule's reason comes from a policy file of up to 1 MiB, and JSON
     * may write a byte as six ("\u0001"). */
    int rd = mini_read_to_end(p[0], &b, 8u << 20);
    int rd_errno = errno;
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            mini_err_sys(e, MINI_E_SPAWN_FAILED, errno, "policy: waiting for %s", prog);
            return NULL;
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        mini_err_set(e, MINI_E_SPAWN_FAILED, "policy: %s %s %d", prog,
                     WIFEXITED(st) ? "exited with status" : "was killed by signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        return NULL;
    }
    if (rd < 0) {
        mini_err_sys(e, MINI_E_IO, rd_errno, "policy: reading the verdict of %s", prog);
        return NULL;
    }
    cJSON *v = mini_json_parse(b.data ? b.data : "", b.len, e);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(v, "error");
    if (v && !cJSON_IsString(err) &&
        (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(v, "allow")) ||
         !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "rule")) ||
         !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "by")))) {
        cJSON_Delete(v);
        v = NULL;
        mini_err_set(e, MINI_E_SPAWN_FAILED, "policy: %s gave no verdict", prog);
    }
    return v;
}

/* A string member of the verdict, or NULL. */
static const char *verdict_str(const cJSON *v, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, key);
    return cJSON_IsString(m) ? m->valuestring : NULL;
}

/* The command as one string, for the policy's patterns: the words joined
 * by spaces. */
static char *command_text(char **argv, size_t n)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        mini_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
    return b.data ? strdup(b.data) : strdup("");
}

/* One line for the policy's audit log, when it has one. */
static void policy_audit(int fd, const char *command, const char *rule, bool allow, const char *by, const char *reason,
                         const char *profile, const struct mini_rep_exit *x)
{
    if (fd < 0)
        return;
    char when[40];
    mini_audit_time(when, sizeof when);
    _cleanup_cjson_ cJSON *l = cJSON_CreateObject();
    char run[40];
    snprintf(run, sizeof run, "mini-sandbox-%d", (int)getpid());
    cJSON_AddStringToObject(l, "time", when);
    cJSON_AddStringToObject(l, "run", run);
    cJSON_AddNumberToObject(l, "step", 1);
    cJSON_AddStringToObject(l, "command", command);
    cJSON_AddStringToObject(l, "rule", rule);
    cJSON_AddStringToObject(l, "decision", allow ? "allow" : "deny");
    cJSON_AddStringToObject(l, "by", by);
    cJSON_AddItemToObject(l, "reason", reason ? cJSON_CreateString(reason) : cJSON_CreateNull());
    if (x) {
        cJSON_AddNumberToObject(l, "returncode", x->timed_out ? EXIT_TIMEOUT : x->returncode);
        cJSON_AddNumberToObject(l, "duration_ms", (double)x->duration_ms);
        cJSON_AddNumberToObject(l, "output_bytes", (double)x->output_bytes);
        cJSON_AddStringToObject(l, "environment", "sandbox");
        cJSON_AddStringToObject(l, "profile", profile ? profile : "standard");
    }
    struct mini_err e;
    if (mini_audit_write(fd, l, &e) < 0)
        fprintf(stderr, "mini-sandbox: %s\n", e.msg);
}

/* --env NAME=VALUE */
static int env_add(struct mini_env *env, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return -1;
    char *name = strndup(kv, (size_t)(eq - kv));
    int r = name ? mini_env_add(env, name, eq + 1) : -1;
    free(name);
    return r;
}

/* `mini-sandbox image pull REF` as a child: the same program as `image`
 * (libexec/mini/mini-sandbox-image, which links libcurl; run does not),
 * its stdout on our stderr (run's stdout is the command's), its stdin
 * /dev/null (run's is the command's).  0 when it pulled. */
static int pull_image(const char *ref)
{
    _cleanup_free_ char *prog = mini_exe_relative(MINI_BIN_TO_LIBEXEC "/mini-sandbox-image");
    if (!prog) {
        fprintf(stderr, "mini-sandbox: run: --image %s: cannot find mini-sandbox-image\n", ref);
        return -1;
    }
    char *args[] = { prog, (char *)"image", (char *)"pull", (char *)ref, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    extern char **environ;
    int r = posix_spawn(&pid, prog, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0) {
        fprintf(stderr, "mini-sandbox: run: --image %s: cannot run %s: %s\n", ref, prog, strerror(r));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* --pull: whether the image is stored is asked of the store here (as the
 * daemon of the same user will find it); a missing one (or any, with
 * always) is pulled as `image pull` does.  -1 with the reason said. */
static int ensure_image(const char *image, const char *pull)
{
    bool stored = false;
    if (strcmp(pull, "always") != 0) {
        struct mini_image_store s;
        struct mini_err e;
        char id[MINI_DIGEST_LEN + 1];
        if (mini_image_store_open(&s, NULL, &e) == 0) {
            stored = mini_image_resolve(&s, image, id, &e) == 0;
            mini_image_store_close(&s);
        }
    }
    if (stored)
        return 0;
    if (strcmp(pull, "never") == 0) {
        fprintf(stderr,
                "mini-sandbox: run: --image %s: no such image in the store, and --pull=never (mini-sandbox image "
                "pull or image import stores it)\n",
                image);
        return -1;
    }
    if (pull_image(image) < 0) {
        fprintf(stderr, "mini-sandbox: run: --image %s: %s, and pulling it failed\n", image,
                strcmp(pull, "always") == 0 ? "--pull=always" : "not in the store");
        return -1;
    }
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        { "profile", required_argument, NULL, 'p' },
        { "workspace", required_argument, NULL, 'w' },
        { "cwd", required_argument, NULL, 'c' },
        { "timeout", required_argument, NULL, 't' },
        { "network", required_argument, NULL, 'n' },
        { "env", required_argument, NULL, 'e' },
        { "socket", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { "verbose", no_argument, NULL, 'v' },
        { "image", required_argument, NULL, 'i' },
        { "policy", required_argument, NULL, 'P' },
        { "allow-host", required_argument, NULL, 'A' },
        { "user", required_argument, NULL, 'u' },
        { "pull", required_argument, NULL, 'U' },
        { 0 },
    };
    /* At most as many as a profile may hold; the daemon checks each. */
    char *allow_hosts[MINI_NET_ENTRIES_MAX + 1];
    size_t n_allow = 0;
    const char *profile = NULL, *workspace = ".", *cwd = NULL, *network = NULL, *socket = NULL, *image = NULL;
    const char *policy_path = NULL, *user = NULL, *pull = "missing";
    bool verbose = false;
    double timeout = 0;
    struct mini_env env = { 0 };
    struct mini_err e;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:hv", opts, NULL)) != -1) {
        switch (c) {
        case 'p': profile = optarg; break;
        case 'i': image = optarg; break;
        case 'u': user = optarg; break;
        case 'U':
            if (strcmp(optarg, "missing") && strcmp(optarg, "always") && strcmp(optarg, "never")) {
                mini_env_free(&env);
                return run_usage(mini_cli_usage_error("run", "--pull: missing, always or never, not %s", optarg));
            }
            pull = optarg;
            break;
        case 'P': policy_path = optarg; break;
        case 'A':
            if (n_allow >= MINI_NET_ENTRIES_MAX) {
                mini_env_free(&env);
                return run_usage(mini_cli_usage_error("run", "--allow-host: at most %d entries", MINI_NET_ENTRIES_MAX));
            }
            allow_hosts[n_allow++] = optarg;
            break;
        case 'v': verbose = true; break;
        case 'w': workspace = optarg; break;
        case 'c': cwd = optarg; break;
        case 's': socket = optarg; break;
        case 't': {
            char *end;
            timeout = strtod(optarg, &end);
            if (*end || end == optarg || !(timeout > 0)) {
                mini_env_free(&env);
                return run_usage(
                    mini_cli_usage_error("run", "--timeout: not a positive number of seconds: %s", optarg));
            }
            break;
        }
        case 'n':
            if (strcmp(optarg, "none") && strcmp(optarg, "host")) {
                mini_env_free(&env);
                return run_usage(mini_cli_usage_error("run", "--network: must be none or host, not %s", optarg));
            }
            network = optarg;
            break;
        case 'e':
            if (env_add(&env, optarg) < 0) {
                mini_env_free(&env);
                return run_usage(mini_cli_usage_error("run", "--env: expected NAME=VALUE, got %s", optarg));
            }
            break;
        case 'h':
            mini_env_free(&env);
            usage(stdout);
            return 0;
        default: mini_env_free(&env); return run_usage(mini_cli_getopt_error("run", c, optopt, argv, optind));
        }
    }
    if (optind >= argc) {
        mini_env_free(&env);
        return run_usage(mini_cli_usage_error("run", "no command given (mini-sandbox run [OPTION]... -- COMMAND...)"));
    }
    _cleanup_free_ char *ws = mini_client_abspath(workspace);
    if (!ws) {
        fprintf(stderr, "mini-sandbox: workspace %s: %s\n", workspace, strerror(errno));
        return EXIT_SANDBOX;
    }
    mini_err_clear(&e);
    /* The policy first: a denied command is never sent anywhere. */
    _cleanup_close_ int audit_fd = -1;
    _cleanup_free_ char *command = NULL;
    cJSON *verdict = NULL; /* policy_verdict's; by, reason and rule are its */
    const char *by = NULL, *reason = NULL, *rule = NULL;
    if (policy_path) {
        char here[PATH_MAX];
        /* Named, so read; but said once when a command could have written it. */
        _cleanup_close_ int guard = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct mini_err pe;
        int in = guard < 0 ? 0 : mini_path_in_guard(policy_path, guard, &pe);
        if (in > 0 || (in < 0 && pe.sys_errno != ENOENT))
            fprintf(stderr,
                    "mini-sandbox: warning: reading the policy %s from the workspace, which sandboxed commands "
                    "can write\n",
                    policy_path);
        command = command_text(argv + optind, (size_t)(argc - optind));
        if (!command ||
            !(verdict = policy_verdict(policy_path,
                                       cwd                             ? cwd
                                           : getcwd(here, sizeof here) ? here
                                                                       : ws,
                                       ws, command, &e))) {
            mini_env_free(&env);
            return command ? fail(&e) : EXIT_SANDBOX;
        }
        if (verdict_str(verdict, "error")) {
            int rc = run_usage(mini_cli_usage_error("run", "--policy %s", verdict_str(verdict, "error")));
            cJSON_Delete(verdict);
            mini_env_free(&env);
            return rc;
        }
        const char *alog = verdict_str(verdict, "audit_log");
        if (alog && (audit_fd = mini_audit_open(alog, ws, &e)) < 0) {
            cJSON_Delete(verdict);
            mini_env_free(&env);
            return fail(&e);
        }
        bool allow = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(verdict, "allow"));
        rule = verdict_str(verdict, "rule");
        by = verdict_str(verdict, "by");
        reason = verdict_str(verdict, "reason");
        if (!allow) {
            policy_audit(audit_fd, command, rule, false, by, reason, NULL, NULL);
            fprintf(stderr, "mini-sandbox: blocked by policy (%s): %s\n", rule, reason ? reason : "denied");
            cJSON_Delete(verdict);
            mini_env_free(&env);
            return 126;
        }
        if (verdict_str(verdict, "profile"))
            profile = verdict_str(verdict, "profile");
    }
    cJSON *pdata = profile ? profile_file(profile, &e) : NULL;
    if (e.code != MINI_OK) {
        cJSON_Delete(verdict);
        mini_env_free(&env);
        return fail(&e);
    }

    /* The image, pulled when it is missing (or always). */
    if (image && ensure_image(image, pull) < 0) {
        cJSON_Delete(verdict);
        cJSON_Delete(pdata);
        mini_env_free(&env);
        return EXIT_SANDBOX;
    }

    /* Standard input, when it is data rather than a terminal. */
    struct mini_buf in = MINI_BUF_INIT;
    struct stat st;
    bool has_in = fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
    if (has_in && mini_read_to_end(0, &in, 8u << 20) < 0) {
        fprintf(stderr, "mini-sandbox: reading standard input: %s\n",
                errno == EFBIG ? "more than 8 MiB" : strerror(errno));
        return EXIT_SANDBOX;
    }

    struct mini_client cl;
    cJSON *ov = NULL;
    int rc = EXIT_SANDBOX;
    struct mini_req open = { .op = MINI_OP_OPEN };
    open.u.open.workspace = ws;
    open.u.open.profile = pdata ? NULL : (char *)profile;
    open.u.open.profile_data = pdata;
    open.u.open.image = (char *)image;
    allow_hosts[n_allow] = NULL;
    open.u.open.allow_hosts = n_allow ? allow_hosts : NULL;
    open.u.open.n_allow_hosts = n_allow;
    open.u.open.user = (char *)user;
    if (network) {
        ov = cJSON_CreateObject();
        cJSON_AddStringToObject(ov, "network", network);
    }
    open.u.open.overrides = ov;
    /* open goes with the hello, in one round trip. */
    struct mini_rep opened;
    if (mini_client_connect_with(&cl, socket, socket == NULL, &open, &opened, &e) < 0) {
        rc = fail_connect(&e, socket);
        goto out_noconn;
    }
    /* One command: a daemon that can be told so prepares no sandbox after
     * it (a private one would wait for that sandbox's teardown to exit). */
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(cl.hello.features, "exec_last");
    struct mini_req_exec x = { .session = opened.u.opened.session,
                               .cwd = (char *)cwd,
                               .env = env,
                               .timeout = timeout,
                               .last = cJSON_IsTrue(last) };
    size_t nargs = (size_t)(argc - optind);
    if (nargs == 1) {
        x.command = argv[optind];
    } else {
        x.argv = argv + optind;
        x.argc = nargs;
    }
    if (has_in) {
        x.stdin_data = in.data ? in.data : (char *)"";
        x.stdin_len = in.len;
    }
    struct mini_rep ex;
    if (mini_client_exec(&cl, &x, write_out, NULL, &ex, &e) < 0) {
        rc = fail(&e);
    } else {
        rc = ex.u.exit.timed_out ? EXIT_TIMEOUT : ex.u.exit.returncode;
        if (verdict)
            policy_audit(audit_fd, command, rule, true, by, reason, profile, &ex.u.exit);
        /* Notes say why the command could not start, or what the daemon
         * could not give (a degraded sandbox: the session's summary, the
         * first note of `opened`), which is the same on every run: that
         * one only with --verbose; `check` explains it in full. */
        const char *summary = opened.u.opened.n_notes ? opened.u.opened.notes[0] : NULL;
        for (size_t i = 0; i < ex.u.exit.n_notes; i++)
            if (verbose || !summary || strcmp(ex.u.exit.notes[i], summary) != 0)
                fprintf(stderr, "mini-sandbox: note: %s\n", ex.u.exit.notes[i]);
        if (ex.u.exit.timed_out)
            fprintf(stderr, "mini-sandbox: timed out after %lld ms\n", (long long)ex.u.exit.duration_ms);
        else if (ex.u.exit.limit != MINI_LIMIT_NONE)
            fprintf(stderr, "mini-sandbox: stopped: %s\n", mini_limit_name(ex.u.exit.limit));
        mini_rep_free(&ex);
    }
    mini_rep_free(&opened);
    mini_client_close(&cl);
out_noconn:
    cJSON_Delete(ov);
    cJSON_Delete(verdict); /* by, reason, rule and maybe profile were its */
    cJSON_Delete(pdata);
    mini_env_free(&env);
    mini_buf_free(&in);
    return rc;
}

/* The options of ping, stats and profiles: [--socket PATH] [--help].
 * -1 with *rc set when the command is done (help, or a usage error). */
static int socket_opts(int argc, char **argv, const char **socket, int *rc)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    int c;
    *socket = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case 's': *socket = optarg; break;
        case 'h':
            usage(stdout);
            *rc = 0;
            return -1;
        default: *rc = mini_cli_getopt_error(argv[0], c, optopt, argv, optind); return -1;
        }
    }
    if (optind < argc) {
        *rc = mini_cli_usage_error(argv[0], "unexpected argument \"%s\"", argv[optind]);
        return -1;
    }
    return 0;
}

static int cmd_ping(int argc, char **argv)
{
    struct mini_client cl;
    struct mini_err e;
    struct timespec a, b;
    const char *socket;
    int rc;
    if (socket_opts(argc, argv, &socket, &rc) < 0)
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (mini_client_connect(&cl, socket, false, &e) < 0)
        return fail_connect(&e, socket);
    clock_gettime(CLOCK_MONOTONIC, &b);
    cJSON *rootless = cJSON_GetObjectItemCaseSensitive(cl.hello.features, "rootless");
    printf("ok: %s, protocol %lld, %s, %.2f ms\n", cl.hello.server, (long long)cl.hello.version,
           cJSON_IsTrue(rootless) ? "rootless" : "root",
           (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
    mini_client_close(&cl);
    return 0;
}

static int cmd_stats(int argc, char **argv)
{
    struct mini_client cl;
    struct mini_err e;
    const char *socket;
    int rc;
    if (socket_opts(argc, argv, &socket, &rc) < 0)
        return rc;
    if (mini_client_connect(&cl, socket, false, &e) < 0)
        return fail_connect(&e, socket);
    struct mini_req req = { .op = MINI_OP_STATS };
    struct mini_rep rep;
    rc = 0;
    if (mini_client_call(&cl, &req, &rep, &e) < 0) {
        rc = fail(&e);
    } else {
        cJSON *j = mini_rep_to_json(&rep);
        cJSON_DeleteItemFromObject(j, "op");
        cJSON_DeleteItemFromObject(j, "id");
        char *s = cJSON_Print(j);
        printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
        mini_rep_free(&rep);
    }
    mini_client_close(&cl);
    return rc;
}

static int cmd_profiles(int argc, char **argv)
{
    const char *socket; /* accepted for symmetry with ping and stats; unused */
    int rc;
    if (socket_opts(argc, argv, &socket, &rc) < 0)
        return rc;
    const char *dir = mini_profile_default_dir();
    char *names[256];
    size_t n = 0;
    if (mini_profile_list(dir, names, MINI_ARRAY_SIZE(names), &n) < 0) {
        fprintf(stderr, "mini-sandbox: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct mini_err e;
        struct mini_profile *p = mini_profile_load_builtin(dir, names[i], &e);
        if (p)
            printf("%-12s %s\n", p->name, p->description ? p->description : "");
        else
            fprintf(stderr, "mini-sandbox: %s\n", e.msg), rc = 1;
        mini_profile_free(p);
        free(names[i]);
    }
    return rc;
}

/* `image` runs in its own program, libexec/mini/mini-sandbox-image
 * (image_main.c), with argv from "image" on: the import's libraries
 * (libarchive, libcrypto and what they pull in) are then loaded only by
 * it, not by every `run`.  Returns only when the exec failed. */
static int cmd_image(int argc, char **argv)
{
    _cleanup_free_ char *prog = mini_exe_relative(MINI_BIN_TO_LIBEXEC "/mini-sandbox-image");
    _cleanup_free_ char **args = calloc((size_t)argc + 2, sizeof *args);
    if (prog && args) {
        args[0] = prog;
        memcpy(args + 1, argv, (size_t)argc * sizeof *args);
        fflush(stdout);
        execv(prog, args);
    }
    fprintf(stderr, "mini-sandbox: image: cannot run %s: %s\n", prog ? prog : "mini-sandbox-image", strerror(errno));
    return 1;
}

/* The subcommand named in argv[1]. */
static int dispatch(int argc, char **argv)
{
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("mini-sandbox %s (protocol %d)\n", MINI_VERSION, MINI_PROTO_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "ping") == 0)
        return cmd_ping(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(argc - 1, argv + 1);
    if (strcmp(cmd, "profiles") == 0)
        return cmd_profiles(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return mini_cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return mini_cli_check(argc - 1, argv + 1);
    if (strcmp(cmd, "image") == 0)
        return cmd_image(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return mini_cli_usage_error(NULL,
                                    "unknown option %s (a command comes first: run, ping, stats, profiles, "
                                    "check, bench, image)",
                                    cmd);
    return mini_cli_usage_error(NULL, "unknown command \"%s\" (run, ping, stats, profiles, check, bench or image)",
                                cmd);
}

int main(int argc, char **argv)
{
    mini_log_init("mini-sandbox", MINI_LOG_WARN);
    if (argc < 2)
        return mini_cli_usage_error(NULL, "no command given (run, ping, stats, profiles, check, bench or image)");
    int rc = dispatch(argc, argv);
    return mini_cli_stdout_status(rc, out_errno);
}
