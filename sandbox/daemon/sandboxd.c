/* mini-sandboxd: the sandbox executor.  See docs/protocol.md. */
#include "server.h"
#include "netpolicy.h"
#include "spawn.h"
#include "mini/client.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"
#include "mini/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The first fd systemd passes (sd_listen_fds(3): SD_LISTEN_FDS_START). */
#define LISTEN_FDS_START 3

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandboxd [OPTION]...\n"
            "Run commands for mini and mini-sandbox in fresh namespaces with seccomp,\n"
            "no capabilities, no_new_privs and resource limits.\n\n"
            "  --socket PATH      listen here (default $XDG_RUNTIME_DIR/mini/sandboxd.sock,\n"
            "                     else /tmp/mini-$UID/sandboxd.sock)\n"
            "  --profiles DIR     built-in profiles (default: %s)\n"
            "  --state-dir DIR    private state (default: the socket's directory)/state\n"
            "  --foreground       do not detach (a detached daemon writes its messages to\n"
            "                     STATE-DIR/sandboxd.log once it listens)\n"
            "  --log-level L      error, warn, info or debug (default warn)\n"
            "  --audit-log FILE   append one JSON line per command and per proxied connection\n"
            "  --resolve NAME:ADDR  the network proxy resolves NAME to ADDR (repeatable; a\n"
            "                     name given twice gets both addresses), not through DNS\n"
            "  --inherit-fd FD    serve the connected socket FD only, exit when it closes\n"
            "                     (how mini-sandbox starts a private daemon)\n"
            "  --max-clients N    serve at most N connections at once (default: 256, or\n"
            "                     fewer when the open-files limit is low)\n"
            "  --frame-timeout S  close a connection that holds part of a frame for S\n"
            "                     seconds (default 30)\n"
            "  --caches=on|off    off: no prepared sandboxes, parked session, template of\n"
            "                     the root, id mapping made ahead, seccomp program cache\n"
            "                     or probe cache; every command pays for its sandbox\n"
            "                     (default: $MINI_SANDBOXD_CACHES, else on)\n"
            "  -h, --help, --version\n\n"
            "Socket activation: with LISTEN_PID set to its pid and LISTEN_FDS=1 (as systemd\n"
            "starts it from mini-sandboxd.socket), it serves the listening socket on fd 3\n"
            "instead of binding one, stays in the foreground and leaves the socket in place\n"
            "when it stops.\n",
            mini_profile_default_dir());
}

/* --caches=on|off (or MINI_SANDBOXD_CACHES). */
static bool parse_caches(const char *v, bool *off)
{
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
        return false;
    *off = strcmp(v, "off") == 0;
    return true;
}

static int make_private_dir(const char *path, struct mini_err *e)
{
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return mini_err_sys(e, MINI_E_IO, errno, "creating %s", path);
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return mini_err_set(e, MINI_E_IO, "%s: must be a directory owned by uid %u with mode 0700", path,
                            (unsigned)geteuid());
    return 0;
}

static char *dirname_of(const char *path)
{
    char *d = strdup(path);
    char *slash = d ? strrchr(d, '/') : NULL;
    if (slash && slash != d)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return d;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Socket activation, systemd's protocol (sd_listen_fds(3)) by hand: when
 * LISTEN_PID is this process, LISTEN_FDS sockets start at fd 3.  The
 * daemon serves one: a listening Unix stream socket bound to a path, which
 * becomes the socket path (*path, malloc'ed).  0 with *fd = -1 when the
 * daemon was not started this way.  The variables are removed either way,
 * so that no child of the daemon takes them for its own. */
static int activation_socket(int *fd, char **path, struct mini_err *e)
{
    *fd = -1;
    *path = NULL;
    const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
    long pid, n;
    bool ours = pid_s && fds_s && parse_long(pid_s, 1, INT32_MAX, &pid) && pid == getpid();
    bool fds_ok = ours && parse_long(fds_s, 0, 1024, &n);
    if (ours && !fds_ok) {
        mini_err_set(e, MINI_E_IO, "LISTEN_FDS=%s: not a number of file descriptors", fds_s);
    } else if (ours && n != 1) {
        mini_err_set(e, MINI_E_IO, "LISTEN_FDS=%ld: mini-sandboxd serves exactly one socket (ListenStream=)", n);
        fds_ok = false;
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (!ours)
        return 0;
    if (!fds_ok)
        return -1;
    int s = LISTEN_FDS_START, domain = 0, type = 0, acc = 0;
    socklen_t l1 = sizeof domain, l2 = sizeof type, l3 = sizeof acc;
    struct sockaddr_un sa = { 0 };
    socklen_t sl = sizeof sa;
    if (getsockopt(s, SOL_SOCKET, SO_DOMAIN, &domain, &l1) < 0 || getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &l2) < 0 ||
        getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l3) < 0 || getsockname(s, (struct sockaddr *)&sa, &sl) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "LISTEN_FDS: fd %d is not a socket", s);
    if (domain != AF_UNIX || type != SOCK_STREAM || !acc)
        return mini_err_set(e, MINI_E_IO, "LISTEN_FDS: fd %d is not a listening Unix stream socket", s);
    if (sl <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] != '/')
        return mini_err_set(e, MINI_E_IO, "LISTEN_FDS: fd %d is not bound to an absolute path", s);
    int fl = fcntl(s, F_GETFL);
    if (fcntl(s, F_SETFD, FD_CLOEXEC) < 0 || fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "LISTEN_FDS: fd %d", s);
    size_t len = strnlen(sa.sun_path, sizeof sa.sun_path);
    if (len == sizeof sa.sun_path || !(*path = strndup(sa.sun_path, len)))
        return mini_err_set(e, MINI_E_IO, "LISTEN_FDS: fd %d: socket path unreadable", s);
    *fd = s;
    return 0;
}

/* Copy what the log got from offset `from` on to stderr. */
static void replay_log(int log, off_t from)
{
    char buf[4096];
    ssize_t n;
    while ((n = pread(log, buf, sizeof buf, from)) > 0) {
        if (mini_write_all(2, buf, (size_t)n) < 0)
            return;
        from += n;
    }
}

/* Detach: the parent returns once the child is listening (or failed).
 * The child keeps none of the caller's standard streams, or a caller that
 * reads them to their end (out=$(mini-sandboxd 2>&1)) would wait for the
 * daemon to exit: stdin and stdout are /dev/null, stderr is the log
 * STATE-DIR/sandboxd.log.  What the child wrote there until it listened
 * (a warning, or why it could not start) the parent copies to the
 * caller's stderr before it returns, as if the child had written it. */
static int daemonize(const char *state_dir, int *ready_fd, struct mini_err *e)
{
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/sandboxd.log", state_dir) < 0) {
        path = NULL;
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (log < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "opening the log %s", path);
    int rlog = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    off_t start = lseek(log, 0, SEEK_END);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int p[2] = { -1, -1 };
    if (rlog < 0 || start < 0 || null < 0 || pipe2(p, O_CLOEXEC) < 0) {
        int err = errno;
        close(log);
        mini_close(rlog);
        mini_close(null);
        return mini_err_sys(e, MINI_E_IO, err, "detaching");
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(log);
        close(rlog);
        close(null);
        close(p[0]);
        close(p[1]);
        return mini_err_sys(e, MINI_E_IO, err, "detaching: fork");
    }
    if (pid > 0) {
        close(p[1]);
        char c;
        ssize_t n;
        while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
            ;
        replay_log(rlog, start);
        _exit(n == 1 ? 0 : 1);
    }
    close(p[0]);
    close(rlog);
    setsid();
    if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(log, 2) < 0)
        _exit(1);
    close(null);
    close(log);
    *ready_fd = p[1];
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },
        { "profiles", required_argument, NULL, 'p' },
        { "state-dir", required_argument, NULL, 'd' },
        { "foreground", no_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' },
        { "audit-log", required_argument, NULL, 'a' },
        { "resolve", required_argument, NULL, 'R' },
        { "inherit-fd", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { "max-clients", required_argument, NULL, 'm' },
        { "frame-timeout", required_argument, NULL, 't' },
        { "caches", required_argument, NULL, 'C' },
        { 0 },
    };
    int64_t main_ns = mini_mono_ns();
    /* Per-step timers (docs/sandbox-lifecycle.md): MINI_SANDBOX_TIMING=1,
     * whose info-level lines it lets through unless --log-level says
     * otherwise, or --log-level debug. */
    const char *timing = getenv("MINI_SANDBOX_TIMING");
    mini_sb_timing = timing && strcmp(timing, "1") == 0;
    mini_log_init("mini-sandboxd", mini_sb_timing ? MINI_LOG_INFO : MINI_LOG_WARN);
    struct mini_server_cfg cfg = { .inherit_fd = -1, .listen_fd = -1, .main_ns = main_ns };
    bool caches_given = false;
    _cleanup_free_ char **resolve = NULL;
    _cleanup_free_ char *socket_path = NULL, *state_dir = NULL, *sockdir = NULL, *cache_dir = NULL;
    bool foreground = false;
    struct mini_err e;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            free(socket_path);
            socket_path = strdup(optarg);
            break;
        case 'p': cfg.profile_dir = optarg; break;
        case 'd':
            free(state_dir);
            state_dir = strdup(optarg);
            break;
        case 'f': foreground = true; break;
        case 'a': cfg.audit_log = optarg; break;
        case 'R': {
            /* Checked now, so that a typo is a usage error, not a daemon
             * that fails after detaching. */
            struct mini_net_pins check = { 0 };
            const char *why;
            int bad = mini_net_pins_add(&check, optarg, &why);
            mini_net_pins_free(&check);
            if (bad < 0) {
                fprintf(stderr, "mini-sandboxd: --resolve %s: %s\n", optarg, why);
                return 2;
            }
            char **v = realloc(resolve, (cfg.n_resolve + 1) * sizeof *v);
            if (!v) {
                fprintf(stderr, "mini-sandboxd: out of memory\n");
                return 1;
            }
            resolve = v;
            resolve[cfg.n_resolve++] = optarg;
            break;
        }
        case 'l': {
            int lvl = mini_log_level_parse(optarg);
            if (lvl < 0) {
                fprintf(stderr, "mini-sandboxd: --log-level: unknown level \"%s\"\n", optarg);
                return 2;
            }
            mini_log_init("mini-sandboxd", (enum mini_log_level)lvl);
            mini_sb_timing = mini_sb_timing || lvl == MINI_LOG_DEBUG;
            break;
        }
        case 'i': {
            char *end;
            long fd = strtol(optarg, &end, 10);
            if (*end || fd < 0 || fd > 65535) {
                fprintf(stderr, "mini-sandboxd: --inherit-fd: not a file descriptor: %s\n", optarg);
                return 2;
            }
            cfg.inherit_fd = (int)fd;
            break;
        }
        case 'm': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || end == optarg || n < 1 || n > 1000000) {
                fprintf(stderr, "mini-sandboxd: --max-clients: not a number from 1 to 1000000: %s\n", optarg);
                return 2;
            }
            cfg.max_clients = (int)n;
            break;
        }
        case 't': {
            char *end;
            double t = strtod(optarg, &end);
            if (*end || end == optarg || !(t > 0 && t <= 86400)) {
                fprintf(stderr, "mini-sandboxd: --frame-timeout: not a number of seconds (0 < S <= 86400): %s\n",
                        optarg);
                return 2;
            }
            cfg.frame_timeout_s = t;
            break;
        }
        case 'C':
            if (!parse_caches(optarg, &cfg.caches_off)) {
                fprintf(stderr, "mini-sandboxd: --caches: \"%s\" is neither on nor off\n", optarg);
                return 2;
            }
            caches_given = true;
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("mini-sandboxd %s (protocol %d)\n", MINI_VERSION, MINI_PROTO_VERSION); return 0;
        case ':':
            fprintf(stderr, "mini-sandboxd: option %s needs an argument\nTry 'mini-sandboxd --help'.\n",
                    argv[optind - 1]);
            return 2;
        default:
            if (optopt)
                fprintf(stderr, "mini-sandboxd: unknown option -%c\nTry 'mini-sandboxd --help'.\n", optopt);
            else
                fprintf(stderr, "mini-sandboxd: unknown option %s\nTry 'mini-sandboxd --help'.\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mini-sandboxd: unexpected argument: %s\nTry 'mini-sandboxd --help'.\n", argv[optind]);
        return 2;
    }
    /* --caches's default from the environment, so that a test run can turn
     * the caches off for every daemon it starts, also the private ones
     * mini-sandbox and mini start themselves (docs/sandbox-lifecycle.md). */
    const char *caches = caches_given ? NULL : getenv("MINI_SANDBOXD_CACHES");
    if (caches && *caches && !parse_caches(caches, &cfg.caches_off)) {
        fprintf(stderr, "mini-sandboxd: MINI_SANDBOXD_CACHES: \"%s\" is neither on nor off\n", caches);
        return 2;
    }
    if (!cfg.profile_dir)
        cfg.profile_dir = mini_profile_default_dir();
    _cleanup_free_ char *passed_path = NULL;
    if (activation_socket(&cfg.listen_fd, &passed_path, &e) < 0)
        goto fail;
    if (cfg.listen_fd >= 0) {
        if (socket_path || cfg.inherit_fd >= 0) {
            fprintf(stderr, "mini-sandboxd: %s: the socket is the one passed by LISTEN_FDS (%s)\n",
                    socket_path ? "--socket" : "--inherit-fd", passed_path);
            return 2;
        }
        socket_path = TAKE_PTR(passed_path);
        foreground = true; /* whoever passed the socket watches this process */
    }
    if (cfg.inherit_fd < 0 && !socket_path && !(socket_path = mini_default_socket(&e)))
        goto fail;
    if (socket_path) {
        sockdir = dirname_of(socket_path);
        if (sockdir && mkdir(sockdir, 0700) < 0 && errno != EEXIST) {
            mini_err_sys(&e, MINI_E_IO, errno, "creating %s", sockdir);
            goto fail;
        }
        /* From here on the socket is named by its real path, so that what
         * it is compared with (a workspace) is too; that directory must be
         * the daemon's own and private. */
        char *real = sockdir ? realpath(sockdir, NULL) : NULL, *canon = NULL, *base = strrchr(socket_path, '/');
        if (!real || asprintf(&canon, "%s/%s", strcmp(real, "/") ? real : "", base ? base + 1 : socket_path) < 0) {
            mini_err_sys(&e, MINI_E_IO, errno, "resolving %s", sockdir);
            free(real);
            goto fail;
        }
        free(sockdir);
        free(socket_path);
        sockdir = real;
        socket_path = canon;
        if (make_private_dir(sockdir, &e) < 0)
            goto fail;
    } else if (!(sockdir = mini_runtime_dir(&e))) {
        goto fail;
    }
    if (!state_dir && asprintf(&state_dir, "%s/state", sockdir) < 0) {
        state_dir = NULL;
        mini_err_set(&e, MINI_E_NOMEM, "out of memory");
        goto fail;
    }
    if (make_private_dir(state_dir, &e) < 0)
        goto fail;
    char *real_state = realpath(state_dir, NULL);
    if (!real_state) {
        mini_err_sys(&e, MINI_E_IO, errno, "resolving %s", state_dir);
        goto fail;
    }
    free(state_dir);
    state_dir = real_state;
    cfg.socket_path = socket_path;
    cfg.state_dir = state_dir;
    /* The probe cache is per user (caps.h): the runtime directory, not a
     * --socket's or --state-dir's, so that every daemon of the user,
     * private ones included, shares it.  Without it the daemon probes. */
    struct mini_err ignored;
    cfg.caps_cache_dir = cache_dir = cfg.caches_off ? NULL : mini_runtime_dir(&ignored);
    cfg.resolve = resolve;
    int ready = -1;
    if (!foreground && cfg.inherit_fd < 0 && daemonize(state_dir, &ready, &e) < 0)
        goto fail;
    if (ready >= 0) {
        /* Tell the waiting parent once the socket exists. */
        cfg.ready_fd = ready;
    }
    if (mini_server_run(&cfg, &e) < 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "mini-sandboxd: %s\n", e.msg);
    return 1;
}
