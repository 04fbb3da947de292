#include "environment.h"
#include "config/config.h"
#include "mini/client.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/path.h"
#include "mini/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SUBMIT_LINE "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

struct mini_environment {
    bool sandbox;
    /* A container class (docker, ...): the sandbox rooted in its image,
     * each command run as interpreter + [command]. */
    const char *container;
    char **interpreter; /* NULL-terminated, with a slot for the command */
    size_t n_interpreter;
    char *private_ws; /* the empty workspace made for it, removed at the end */
    cJSON *cfg;       /* a copy of the environment section */
    char *cwd;        /* default working directory */
    char *workspace;  /* sandbox: the directory mounted writable */
    double timeout;
    volatile int interrupted;
    /* sandbox */
    struct mini_client client;
    bool connected;
    char *session;
    char *profile;
    cJSON *isolation; /* what the daemon applied to the session (open's reply) */
    /* Sessions of other profiles (a policy rule's override), opened when
     * first needed, in either environment class, kept until the end. */
    struct extra_session {
        char *profile, *session;
        cJSON *isolation;
    } * extra;
    size_t n_extra;
};

static const char *cfg_str(const cJSON *cfg, const char *key, const char *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : def;
}

static double cfg_num(const cJSON *cfg, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : def;
}

/* Connect, and send `req` (may be NULL) right behind the hello, without
 * waiting for its reply (docs/protocol.md, "Pipelining"); else just call. */
static int sandbox_call(struct mini_environment *env, struct mini_req *req, struct mini_rep *rep, struct mini_err *e)
{
    if (env->connected)
        return mini_client_call(&env->client, req, rep, e);
    const char *socket = cfg_str(env->cfg, "socket", NULL);
    if (mini_client_connect_with(&env->client, socket, true, req, rep, e) < 0)
        return -1;
    env->connected = true;
    env->client.cancel = &env->interrupted;
    return 0;
}

/* Open a session of this profile (a name, or a file when it holds a
 * slash): *session and *isolation (may stay NULL) are the caller's. */
static int open_session(struct mini_environment *env, const char *profile, char **session, cJSON **isolation,
                        struct mini_err *e)
{
    _cleanup_free_ char *ws = mini_client_abspath(env->workspace);
    if (!ws)
        return mini_err_sys(e, MINI_E_WORKSPACE_INVALID, errno, "workspace %s", env->workspace);
    struct mini_req req = { .op = MINI_OP_OPEN };
    req.u.open.workspace = ws;
    /* environment.allow_hosts: entries for the profile's network
     * allowlist (the daemon checks each and bounds their number). */
    const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(env->cfg, "allow_hosts");
    int nh = cJSON_IsArray(hosts) ? cJSON_GetArraySize(hosts) : 0;
    _cleanup_free_ char **allow = nh > 0 ? calloc((size_t)nh + 1, sizeof *allow) : NULL;
    if (nh > 0 && !allow)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    for (int i = 0; i < nh; i++) {
        const cJSON *h = cJSON_GetArrayItem(hosts, i);
        allow[req.u.open.n_allow_hosts++] = cJSON_IsString(h) ? h->valuestring : (char *)"";
    }
    req.u.open.allow_hosts = allow;
    _cleanup_buf_ struct mini_buf file = MINI_BUF_INIT;
    cJSON *pdata = NULL;
    if (strchr(profile, '/')) {
        /* A profile file is read here and sent whole. */
        if (mini_read_file(profile, &file, 1 << 20, e) < 0 || !(pdata = mini_json_parse_object(file.data, file.len, e)))
            return mini_err_prefix(e, "sandbox profile %s", profile);
        req.u.open.profile_data = pdata;
    } else {
        req.u.open.profile = (char *)profile;
    }
    /* mini's own configuration directory (its .env holds the API keys) is
     * hidden from every command, wherever this mini's environment put it;
     * the daemon adds the ones it knows of itself. */
    struct mini_err ge;
    _cleanup_free_ char *gdir = mini_config_global_dir_new(false, &ge);
    cJSON *ov = gdir && gdir[0] == '/' ? cJSON_CreateObject() : NULL;
    cJSON *hide = ov ? cJSON_AddArrayToObject(cJSON_AddObjectToObject(ov, "filesystem"), "hide") : NULL;
    if (hide)
        cJSON_AddItemToArray(hide, cJSON_CreateString(gdir));
    req.u.open.overrides = ov;
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(env->cfg, "image");
    if (cJSON_IsString(img) && *img->valuestring)
        req.u.open.image = img->valuestring;
    /* environment.env, then forward_env: names whose values mini passes
     * from its own environment. */
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(env->cfg, "env");
    int r = vars ? mini_env_from_json(vars, &req.u.open.env, "environment.env", e) : 0;
    const cJSON *fwd = cJSON_GetObjectItemCaseSensitive(env->cfg, "forward_env"), *it;
    cJSON_ArrayForEach (it, fwd) {
        const char *v = cJSON_IsString(it) ? getenv(it->valuestring) : NULL;
        /* A container class: env wins over forward_env (docker's order). */
        if (v && env->container && cJSON_GetObjectItemCaseSensitive(vars, it->valuestring))
            continue;
        if (r == 0 && v && mini_env_add(&req.u.open.env, it->valuestring, v) < 0)
            r = mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    struct mini_rep rep;
    if (r == 0)
        r = sandbox_call(env, &req, &rep, e);
    cJSON_Delete(pdata);
    cJSON_Delete(ov);
    mini_env_free(&req.u.open.env);
    if (r < 0)
        return mini_err_prefix(e, "opening a sandbox session (profile %s)", profile);
    *session = strdup(rep.u.opened.session);
    if (rep.u.opened.isolation)
        *isolation = cJSON_Duplicate(rep.u.opened.isolation, true);
    mini_rep_free(&rep);
    return *session ? 0 : mini_err_set(e, MINI_E_NOMEM, "out of memory");
}

/* `mini-sandbox image pull REF` (libexec/mini/mini-sandbox-image, the
 * program `mini-sandbox image` runs): into the image store of this user
 * ($MINI_IMAGE_STORE), which the daemon mini starts uses too.  A program
 * of its own: mini does not link the import's libraries.  0, or -1 with
 * e holding what the pull said last. */
static int pull_image(const char *ref, bool missing, struct mini_err *e)
{
    _cleanup_free_ char *prog = mini_exe_relative(MINI_BIN_TO_LIBEXEC "/mini-sandbox-image");
    if (!prog)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "pipe");
    fprintf(stderr, "mini: image %s%s: pulling it (mini-sandbox image pull)\n", ref,
            missing ? " is not in the image store" : "");
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(p[0]);
        close(p[1]);
        return mini_err_sys(e, MINI_E_IO, err, "fork");
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(p[1], 2) < 0)
            _exit(126);
        signal(SIGPIPE, SIG_DFL);
        execl(prog, prog, "image", "pull", "-q", ref, (char *)NULL);
        dprintf(2, "cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    /* What it says: only the end is kept (its last line is the reason). */
    char said[4096];
    size_t n = 0;
    for (;;) {
        char buf[4096];
        ssize_t k = mini_read(p[0], buf, sizeof buf);
        if (k <= 0)
            break;
        if ((size_t)k >= sizeof said - 1) {
            memcpy(said, buf + k - (sizeof said - 1), sizeof said - 1);
            n = sizeof said - 1;
        } else {
            if (n + (size_t)k > sizeof said - 1) {
                size_t drop = n + (size_t)k - (sizeof said - 1);
                memmove(said, said + drop, n - drop);
                n -= drop;
            }
            memcpy(said + n, buf, (size_t)k);
            n += (size_t)k;
        }
    }
    close(p[0]);
    said[n] = '\0';
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    while (n > 0 && (said[n - 1] == '\n' || said[n - 1] == ' '))
        said[--n] = '\0';
    const char *last = strrchr(said, '\n');
    last = last ? last + 1 : said;
    if (!*last)
        last = WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "it failed";
    return mini_err_set(e, MINI_E_IO, "image %s: %spulling it failed: %s", ref,
                        missing ? "not in the image store, and " : "", last);
}

static int sandbox_open(struct mini_environment *env, struct mini_err *e)
{
    /* environment.pull (--pull), as podman's: an image the store lacks is
     * pulled, once (missing); pulled before the run (always); or not
     * (never).  The commands never run anywhere else. */
    const char *img = cfg_str(env->cfg, "image", NULL);
    const char *when = cfg_str(env->cfg, "pull", "missing");
    if (img && strcmp(when, "always") == 0 && pull_image(img, false, e) < 0)
        return -1;
    int r = open_session(env, env->profile, &env->session, &env->isolation, e);
    if (r < 0 && img && strcmp(when, "missing") == 0 && e->code == MINI_E_BAD_REQUEST &&
        strstr(e->msg, "no such image")) {
        if (pull_image(img, true, e) < 0)
            return -1;
        r = open_session(env, env->profile, &env->session, &env->isolation, e);
    }
    return r;
}

/* An empty directory of mini's own as a container's workspace: nothing of
 * this machine's is in the container. */
static char *private_workspace(struct mini_err *e)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = NULL;
    if (asprintf(&dir, "%s/mini-ws-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (!mkdtemp(dir)) {
        mini_err_sys(e, MINI_E_WORKSPACE_INVALID, errno, "making a workspace %s", dir);
        free(dir);
        return NULL;
    }
    return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* The interpreter (environment.interpreter, default bash -c) with a slot
 * for the command and the NULL. */
static int set_interpreter(struct mini_environment *env, struct mini_err *e)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(env->cfg, "interpreter"), *it;
    int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : 0;
    static const char *const dflt[] = { "bash", "-c" };
    size_t count = n > 0 ? (size_t)n : MINI_ARRAY_SIZE(dflt);
    env->interpreter = calloc(count + 2, sizeof *env->interpreter);
    if (!env->interpreter)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    /* n_interpreter counts what is allocated (env_free frees those). */
    if (n > 0) {
        cJSON_ArrayForEach (it, in)
            if (cJSON_IsString(it) && !(env->interpreter[env->n_interpreter++] = strdup(it->valuestring)))
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < count; i++)
            if (!(env->interpreter[env->n_interpreter++] = strdup(dflt[i])))
                return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    if (env->n_interpreter == 0)
        return mini_err_set(e, MINI_E_CONFIG, "environment.interpreter: must not be empty");
    return 0;
}

/* The session for a rule's profile override: the environment's own when
 * it is that profile, else one more, opened once. */
static struct extra_session *profile_session(struct mini_environment *env, const char *profile, struct mini_err *e)
{
    for (size_t i = 0; i < env->n_extra; i++)
        if (strcmp(env->extra[i].profile, profile) == 0)
            return &env->extra[i];
    struct extra_session *x = realloc(env->extra, (env->n_extra + 1) * sizeof *x);
    if (!x) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    env->extra = x;
    x = &env->extra[env->n_extra];
    *x = (struct extra_session){ .profile = strdup(profile) };
    if (!x->profile) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (open_session(env, profile, &x->session, &x->isolation, e) < 0) {
        free(x->profile);
        cJSON_Delete(x->isolation);
        return NULL;
    }
    env->n_extra++;
    return x;
}

struct mini_environment *mini_environment_new(const cJSON *cfg, const char *kind, struct mini_err *e)
{
    struct mini_environment *env = calloc(1, sizeof *env);
    if (!env) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    env->client.fd = -1;
    env->cfg = cfg ? cJSON_Duplicate(cfg, true) : cJSON_CreateObject();
    env->container = mini_config_container_class(kind);
    env->sandbox = strcmp(kind, "sandbox") == 0 || env->container;
    if (!env->sandbox && strcmp(kind, "local") != 0) {
        mini_err_set(e, MINI_E_CONFIG, "environment class \"%s\": expected local, sandbox or a container class", kind);
        goto fail;
    }
    if (env->container) {
        /* Its image, its cwd ("/" unless set), and a workspace of its own
         * unless one is given: the commands never see this machine's. */
        if (!cfg_str(env->cfg, "image", NULL)) {
            mini_err_set(e, MINI_E_CONFIG,
                         "environment_class %s needs an image: environment.image, --image NAME, or a batch task's "
                         "image; mini never runs a container class's commands on this machine",
                         env->container);
            goto fail;
        }
        if (set_interpreter(env, e) < 0)
            goto fail;
        if (!cfg_str(env->cfg, "workspace", NULL)) {
            if (!(env->private_ws = private_workspace(e)))
                goto fail;
            cJSON_DeleteItemFromObjectCaseSensitive(env->cfg, "workspace");
            cJSON_AddStringToObject(env->cfg, "workspace", env->private_ws);
        }
        if (!cfg_str(env->cfg, "cwd", NULL)) {
            cJSON_DeleteItemFromObjectCaseSensitive(env->cfg, "cwd");
            cJSON_AddStringToObject(env->cfg, "cwd", "/");
        }
    }
    /* Commands start in environment.cwd, else in the workspace, else in
     * mini's own working directory; the sandbox's workspace is
     * environment.workspace, else cwd, else that directory. */
    char here[PATH_MAX];
    const char *ws = cfg_str(env->cfg, "workspace", NULL);
    const char *cwd = cfg_str(env->cfg, "cwd", NULL);
    const char *dir = getcwd(here, sizeof here);
    env->cwd = strdup(cwd ? cwd : ws ? ws : dir ? dir : "/");
    env->workspace = strdup(ws ? ws : cwd ? cwd : dir ? dir : "/");
    /* local and containers: mini-swe-agent's 30 s default; sandbox: 0
     * means the profile's own limit, which the daemon applies. */
    env->timeout = cfg_num(env->cfg, "timeout", env->sandbox && !env->container ? 0 : 30);
    env->profile = strdup(cfg_str(env->cfg, "profile", "standard"));
    if (!env->cfg || !env->cwd || !env->workspace || !env->profile) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    if (env->sandbox && sandbox_open(env, e) < 0)
        goto fail;
    return env;
fail:
    mini_environment_free(env);
    return NULL;
}

void mini_environment_interrupt(struct mini_environment *env) { env->interrupted = 1; }

/* The output as mini-swe-agent's text-mode subprocess gives it: invalid
 * UTF-8 replaced (errors="replace"), then universal newlines: "\r\n" and
 * a lone "\r" both become "\n".  A NUL byte stays in the text as C0 80
 * (MINI_UTF8_NUL), which the JSON printers write as \u0000; a C0 80 in
 * the output itself is invalid UTF-8 and became two U+FFFD first. */
static void text_output(struct mini_buf *out, const char *output, size_t len)
{
    _cleanup_buf_ struct mini_buf clean = MINI_BUF_INIT;
    mini_utf8_sanitize(&clean, output ? output : "", len);
    if (!clean.data)
        return;
    mini_buf_append(out, "", 0);
    for (const char *p = clean.data, *end = p + clean.len; p < end;) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        size_t seg = z ? (size_t)(z - p) : (size_t)(end - p);
        if (mini_buf_append(out, p, seg) < 0 || (z && mini_buf_append(out, MINI_UTF8_NUL, 2) < 0))
            break;
        p += seg + (z != NULL);
    }
    if (!out->data)
        return;
    size_t w = 0;
    for (size_t i = 0; i < out->len; i++) {
        if (out->data[i] == '\r') {
            out->data[w++] = '\n';
            if (i + 1 < out->len && out->data[i + 1] == '\n')
                i++;
        } else {
            out->data[w++] = out->data[i];
        }
    }
    out->len = w;
    out->data[w] = '\0';
}

/* mini-swe-agent's result when a command could not finish. */
static cJSON *exception_result(const char *output, size_t len, const char *type, const char *what)
{
    cJSON *r = cJSON_CreateObject();
    struct mini_buf out = MINI_BUF_INIT;
    text_output(&out, output, len);
    cJSON_AddStringToObject(r, "output", out.data ? out.data : "");
    mini_buf_free(&out);
    cJSON_AddNumberToObject(r, "returncode", -1);
    char *info = NULL;
    if (asprintf(&info, "An error occurred while executing the command: %s", what) < 0)
        info = NULL;
    cJSON_AddStringToObject(r, "exception_info", info ? info : what);
    free(info);
    cJSON *extra = cJSON_AddObjectToObject(r, "extra");
    cJSON_AddStringToObject(extra, "exception_type", type);
    cJSON_AddStringToObject(extra, "exception", what);
    return r;
}

static cJSON *plain_result(const char *output, size_t len, int returncode)
{
    cJSON *r = cJSON_CreateObject();
    struct mini_buf out = MINI_BUF_INIT;
    text_output(&out, output, len);
    cJSON_AddStringToObject(r, "output", out.data ? out.data : "");
    mini_buf_free(&out);
    cJSON_AddNumberToObject(r, "returncode", returncode);
    cJSON_AddStringToObject(r, "exception_info", "");
    return r;
}

/* subprocess.TimeoutExpired's text, the whole command quoted as it is
 * ("Command '%s' timed out after %s seconds"); mini's own for an interrupt. */
static char *stopped_message(const char *command, bool timed_out, double timeout)
{
    char *what = NULL;
    char secs[64];
    if (timeout == floor(timeout) && timeout < 1e15)
        snprintf(secs, sizeof secs, "%.0f", timeout); /* an int, as the config's timeout is */
    else
        snprintf(secs, sizeof secs, "%g", timeout);
    int n = timed_out ? asprintf(&what, "Command '%s' timed out after %s seconds", command, secs)
                      : asprintf(&what, "Command '%s' was interrupted", command);
    return n < 0 ? NULL : what;
}

/* Popen's OSError for a working directory it cannot enter: "[Errno 2] No
 * such file or directory: '/x'", its type named after the errno. */
static cJSON *start_error(int err, const char *cwd)
{
    const char *type = err == ENOENT    ? "FileNotFoundError"
        : err == ENOTDIR                ? "NotADirectoryError"
        : err == EACCES || err == EPERM ? "PermissionError"
                                        : "OSError";
    /* repr() of the path: single quotes unless it holds one and no double */
    bool dq = strchr(cwd, '\'') && !strchr(cwd, '"');
    struct mini_buf q = MINI_BUF_INIT;
    mini_buf_putc(&q, dq ? '"' : '\'');
    for (const char *c = cwd; *c; c++) {
        if (*c == '\\' || (!dq && *c == '\''))
            mini_buf_putc(&q, '\\');
        mini_buf_putc(&q, *c);
    }
    mini_buf_putc(&q, dq ? '"' : '\'');
    char *what = NULL;
    if (asprintf(&what, "[Errno %d] %s: %s", err, strerror(err), q.data ? q.data : "''") < 0)
        what = NULL;
    mini_buf_free(&q);
    cJSON *r = what ? exception_result("", 0, type, what) : NULL;
    free(what);
    return r;
}

static int local_execute(struct mini_environment *env, const char *command, const char *cwd, double timeout,
                         mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e)
{
    int p[2], ep[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "pipe");
    /* The child's errno when it cannot start (a bad cwd), as Popen learns it. */
    if (pipe2(ep, O_CLOEXEC) < 0) {
        int err = errno;
        close(p[0]);
        close(p[1]);
        return mini_err_sys(e, MINI_E_IO, err, "pipe");
    }
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(env->cfg, "env");
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(p[0]);
        close(p[1]);
        close(ep[0]);
        close(ep[1]);
        return mini_err_sys(e, MINI_E_IO, err, "fork");
    }
    if (pid == 0) {
        /* Its own process group, so that a timeout kills the whole tree. */
        setsid();
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
            _exit(126);
        const cJSON *it;
        cJSON_ArrayForEach (it, extra)
            if (cJSON_IsString(it))
                setenv(it->string, it->valuestring, 1);
        if (chdir(cwd) < 0) {
            int err = errno;
            if (write(ep[1], &err, sizeof err) < 0)
                dprintf(2, "mini: cd %s: %s\n", cwd, strerror(err));
            _exit(126);
        }
        signal(SIGPIPE, SIG_DFL);
        /* As subprocess's shell=True: argv[0] is "/bin/sh", which the shell's
         * own messages quote ("/bin/sh: 1: x: not found"). */
        execl("/bin/sh", "/bin/sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    close(ep[1]);
    int child_err = 0;
    ssize_t en;
    while ((en = read(ep[0], &child_err, sizeof child_err)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    if (en == (ssize_t)sizeof child_err) {
        close(p[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        *result = start_error(child_err, cwd);
        return *result ? 0 : mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    struct mini_buf out = MINI_BUF_INIT;
    int64_t deadline = mini_mono_ms() + (int64_t)(timeout * 1000);
    bool timed_out = false, interrupted = false;
    int64_t drain_until = 0;
    char buf[65536];
    for (;;) {
        int64_t now = mini_mono_ms();
        if (!timed_out && !interrupted && (now >= deadline || env->interrupted)) {
            interrupted = env->interrupted;
            timed_out = !interrupted;
            kill(-pid, SIGKILL);
            /* What escaped the group may keep the pipe open: read on a little. */
            drain_until = now + 1000;
        }
        int wait_ms = drain_until ? (int)(drain_until - now) : (int)(deadline - now);
        if (drain_until && wait_ms <= 0)
            break;
        if (wait_ms > 100)
            wait_ms = 100;
        struct pollfd pf = { .fd = p[0], .events = POLLIN };
        int r = poll(&pf, 1, wait_ms < 0 ? 0 : wait_ms);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        ssize_t n = mini_read(p[0], buf, sizeof buf);
        if (n <= 0)
            break;
        mini_buf_append(&out, buf, (size_t)n);
        if (fn)
            fn(arg, buf, (size_t)n);
    }
    close(p[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (timed_out || interrupted) {
        _cleanup_free_ char *what = stopped_message(command, timed_out, timeout);
        if (!what) {
            mini_buf_free(&out);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        *result = exception_result(out.data, out.len, timed_out ? "TimeoutExpired" : "Interrupted", what);
    } else {
        /* As Python's subprocess: -N when killed by signal N. */
        int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
        *result = plain_result(out.data, out.len, rc);
    }
    mini_buf_free(&out);
    return 0;
}

struct stream_ctx {
    mini_env_output_fn fn;
    void *arg;
};

static void stream_out(void *arg, const char *data, size_t len)
{
    struct stream_ctx *s = arg;
    s->fn(s->arg, data, len);
}

static int sandbox_execute(struct mini_environment *env, const char *session, const char *command, const char *cwd,
                           double timeout, mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e)
{
    struct mini_req_exec x = {
        .session = (char *)session, .command = (char *)command, .cwd = (char *)cwd, .timeout = timeout
    };
    /* A container class: interpreter + [command] (bash -c COMMAND), as
     * docker exec runs it, instead of /bin/sh -c. */
    if (env->container) {
        env->interpreter[env->n_interpreter] = (char *)command;
        env->interpreter[env->n_interpreter + 1] = NULL;
        x.command = NULL;
        x.argv = env->interpreter;
    }
    struct stream_ctx sc = { fn, arg };
    struct mini_rep rep;
    if (mini_client_exec(&env->client, &x, fn ? stream_out : NULL, &sc, &rep, e) < 0) {
        if (e->code == MINI_E_CWD_INVALID || e->code == MINI_E_SPAWN_FAILED || e->code == MINI_E_LIMIT) {
            /* The command could not start: that is the model's to know. */
            *result = exception_result("", 0, mini_errc_name(e->code), e->msg);
            return 0;
        }
        return mini_err_prefix(e, "running a command in the sandbox");
    }
    const struct mini_rep_exit *x2 = &rep.u.exit;
    if (x2->timed_out || x2->limit == MINI_LIMIT_CANCELLED) {
        /* timeout 0: the profile's limit, which the run's length tells. */
        double secs = timeout > 0 ? timeout : (double)((x2->duration_ms + 500) / 1000);
        _cleanup_free_ char *what = stopped_message(command, x2->timed_out, secs);
        if (!what) {
            mini_rep_free(&rep);
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        *result = exception_result(x2->output, x2->output_len, x2->timed_out ? "TimeoutExpired" : "Interrupted", what);
    } else {
        /* The shell itself killed by signal N: -N, as local (and Python's
         * subprocess) gives; the daemon's 128+N is what a shell reports for
         * a child.  A limit's kill keeps the daemon's code (see extra.limit). */
        int rc = x2->signal > 0 && x2->limit == MINI_LIMIT_NONE ? -x2->signal : x2->returncode;
        *result = plain_result(x2->output, x2->output_len, rc);
    }
    if (x2->truncated || x2->limit != MINI_LIMIT_NONE || x2->n_notes) {
        cJSON *extra = cJSON_GetObjectItemCaseSensitive(*result, "extra");
        if (!extra)
            extra = cJSON_AddObjectToObject(*result, "extra");
        if (x2->truncated)
            cJSON_AddNumberToObject(extra, "output_bytes", (double)x2->output_bytes);
        if (x2->limit != MINI_LIMIT_NONE)
            cJSON_AddStringToObject(extra, "limit", mini_limit_name(x2->limit));
        for (size_t i = 0; i < x2->n_notes; i++)
            cJSON_AddStringToObject(extra, "sandbox_note", x2->notes[i]);
    }
    mini_rep_free(&rep);
    return 0;
}

int mini_environment_execute(struct mini_environment *env, const char *command, const char *cwd, double timeout,
                             mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e)
{
    return mini_environment_execute_in(env, NULL, command, cwd, timeout, fn, arg, result, e);
}

int mini_environment_execute_in(struct mini_environment *env, const char *profile, const char *command, const char *cwd,
                                double timeout, mini_env_output_fn fn, void *arg, cJSON **result, struct mini_err *e)
{
    *result = NULL;
    env->interrupted = 0;
    if (!cwd || !*cwd)
        cwd = env->cwd;
    const char *session = env->session;
    if (profile && !(env->sandbox && strcmp(profile, env->profile) == 0)) {
        struct extra_session *x = profile_session(env, profile, e);
        if (!x && e->code == MINI_E_NOMEM)
            return -1;
        if (!x) {
            /* The rule's profile is unavailable here: the model is told,
             * and the run goes on (nothing ran). */
            *result = exception_result("", 0, mini_errc_name(e->code), e->msg);
            return *result ? 0 : mini_err_set(e, MINI_E_NOMEM, "out of memory");
        }
        session = x->session;
    }
    /* local: its timeout; in the sandbox 0 may stay: the profile's limit */
    if (timeout <= 0 && (env->sandbox || !profile))
        timeout = env->timeout;
    int r = session ? sandbox_execute(env, session, command, cwd, timeout, fn, arg, result, e)
                    : local_execute(env, command, cwd, timeout, fn, arg, result, e);
    if (r == 0 && !*result)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return r;
}

cJSON *mini_environment_template_vars(const struct mini_environment *env)
{
    cJSON *v = cJSON_Duplicate(env->cfg, true);
    struct utsname u;
    if (v && uname(&u) == 0) {
        cJSON_AddStringToObject(v, "system", u.sysname);
        cJSON_AddStringToObject(v, "node", u.nodename);
        cJSON_AddStringToObject(v, "release", u.release);
        cJSON_AddStringToObject(v, "version", u.version);
        cJSON_AddStringToObject(v, "machine", u.machine);
    }
    if (v && !cJSON_GetObjectItemCaseSensitive(v, "cwd"))
        cJSON_AddStringToObject(v, "cwd", env->cwd);
    return v;
}

cJSON *mini_environment_serialize(const struct mini_environment *env)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *cfg = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "info"), "config");
    cJSON_AddItemToObject(cfg, "environment", cJSON_Duplicate(env->cfg, true));
    cJSON_AddStringToObject(cfg, "environment_type",
                            env->sandbox ? "mini.SandboxEnvironment" : "mini.LocalEnvironment");
    return root;
}

cJSON *mini_environment_isolation(const struct mini_environment *env, const char *profile)
{
    cJSON *o = cJSON_CreateObject();
    const cJSON *iso = NULL;
    if (profile && !(env->sandbox && strcmp(profile, env->profile) == 0)) {
        for (size_t i = 0; i < env->n_extra; i++)
            if (strcmp(env->extra[i].profile, profile) == 0)
                iso = env->extra[i].isolation;
    } else if (env->sandbox) {
        profile = env->profile;
        iso = env->isolation;
    }
    cJSON_AddStringToObject(o, "environment", env->sandbox ? "sandbox" : "local");
    cJSON_AddItemToObject(o, "profile", profile ? cJSON_CreateString(profile) : cJSON_CreateNull());
    /* The level (full, degraded), and what is missing when anything is:
     * the whole report is the daemon's `open` reply (mini-sandbox check). */
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(iso, "status");
    const cJSON *missing = cJSON_GetObjectItemCaseSensitive(iso, "missing");
    cJSON_AddStringToObject(o, "isolation", cJSON_IsString(status) ? status->valuestring : iso ? "unknown" : "none");
    if (cJSON_GetArraySize(missing) > 0)
        cJSON_AddItemToObject(o, "isolation_missing", cJSON_Duplicate(missing, true));
    return o;
}

static void close_session(struct mini_environment *env, const char *session)
{
    struct mini_req req = { .op = MINI_OP_CLOSE };
    req.u.close.session = (char *)session;
    struct mini_rep rep;
    struct mini_err ignored;
    if (mini_client_call(&env->client, &req, &rep, &ignored) == 0)
        mini_rep_free(&rep);
}

static void env_free(struct mini_environment *env, bool close_sessions)
{
    if (!env)
        return;
    if (env->connected) {
        if (env->session && close_sessions)
            close_session(env, env->session);
        for (size_t i = 0; i < env->n_extra && close_sessions; i++)
            close_session(env, env->extra[i].session);
        mini_client_close(&env->client);
    }
    for (size_t i = 0; i < env->n_extra; i++) {
        free(env->extra[i].profile);
        free(env->extra[i].session);
        cJSON_Delete(env->extra[i].isolation);
    }
    free(env->extra);
    cJSON_Delete(env->isolation);
    if (env->interpreter) {
        for (size_t i = 0; i < env->n_interpreter; i++)
            free(env->interpreter[i]);
        free(env->interpreter);
    }
    if (env->private_ws) {
        /* What the commands left there (the sessions are closed: with
         * mini_environment_drop the daemon may still be closing them). */
        nftw(env->private_ws, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        free(env->private_ws);
    }
    free(env->session);
    free(env->profile);
    free(env->cwd);
    free(env->workspace);
    cJSON_Delete(env->cfg);
    free(env);
}

void mini_environment_free(struct mini_environment *env) { env_free(env, true); }

const char *mini_environment_workspace(const struct mini_environment *env) { return env->workspace; }
void mini_environment_drop(struct mini_environment *env) { env_free(env, false); }

char *mini_submission(const cJSON *result)
{
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(result, "returncode");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(result, "output");
    if (!cJSON_IsNumber(rc) || rc->valuedouble != 0 || !cJSON_IsString(out))
        return NULL;
    const char *s = out->valuestring;
    /* Python's str.lstrip() then splitlines(keepends=True). */
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
        s++;
    size_t line = strcspn(s, "\n");
    const char *rest = s[line] ? s + line + 1 : s + line;
    /* lines[0].strip() == marker */
    const char *a = s, *b = s + line;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
        b--;
    size_t ml = strlen(SUBMIT_LINE);
    if ((size_t)(b - a) != ml || strncmp(a, SUBMIT_LINE, ml) != 0)
        return NULL;
    return strdup(rest);
}
