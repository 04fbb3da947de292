/* mini-sandboxd: the sandbox executor.  See docs/protocol.md. */
#include "server.h"
#include "mini/client.h"
#include "mini/cleanup.h"
#include "mini/log.h"
#include "mini/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
            "  --foreground       do not detach\n"
            "  --log-level L      error, warn, info or debug (default warn)\n"
            "  --audit-log FILE   append one JSON line per command\n"
            "  --inherit-fd FD    serve the connected socket FD only, exit when it closes\n"
            "                     (how mini-sandbox starts a private daemon)\n"
            "  --max-clients N    serve at most N connections at once (default: 256, or\n"
            "                     fewer when the open-files limit is low)\n"
            "  --frame-timeout S  close a connection that holds part of a frame for S\n"
            "                     seconds (default 30)\n"
            "  --help, --version\n",
            mini_profile_default_dir());
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

/* Detach: the parent returns once the child is listening (or failed). */
static int daemonize(int *ready_fd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(p[1]);
        char c;
        ssize_t n = read(p[0], &c, 1);
        _exit(n == 1 ? 0 : 1);
    }
    close(p[0]);
    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        close(null);
    }
    *ready_fd = p[1];
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },   { "profiles", required_argument, NULL, 'p' },
        { "state-dir", required_argument, NULL, 'd' }, { "foreground", no_argument, NULL, 'f' },
        { "log-level", required_argument, NULL, 'l' }, { "audit-log", required_argument, NULL, 'a' },
        { "inherit-fd", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },         { "max-clients", required_argument, NULL, 'm' },
        { "frame-timeout", required_argument, NULL, 't' }, { 0 },
    };
    mini_log_init(argv[0], MINI_LOG_WARN);
    struct mini_server_cfg cfg = { .inherit_fd = -1 };
    _cleanup_free_ char *socket_path = NULL, *state_dir = NULL, *sockdir = NULL;
    bool foreground = false;
    struct mini_err e;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': free(socket_path); socket_path = strdup(optarg); break;
        case 'p': cfg.profile_dir = optarg; break;
        case 'd': free(state_dir); state_dir = strdup(optarg); break;
        case 'f': foreground = true; break;
        case 'a': cfg.audit_log = optarg; break;
        case 'l': {
            int lvl = mini_log_level_parse(optarg);
            if (lvl < 0) {
                fprintf(stderr, "mini-sandboxd: --log-level: unknown level \"%s\"\n", optarg);
                return 2;
            }
            mini_log_init(argv[0], (enum mini_log_level)lvl);
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
        case 'h': usage(stdout); return 0;
        case 'V': printf("mini-sandboxd %s (protocol %d)\n", MINI_VERSION, MINI_PROTO_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mini-sandboxd: unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    if (!cfg.profile_dir)
        cfg.profile_dir = mini_profile_default_dir();
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
    int ready = -1;
    if (!foreground && cfg.inherit_fd < 0 && daemonize(&ready) < 0) {
        mini_err_sys(&e, MINI_E_IO, errno, "detaching");
        goto fail;
    }
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
