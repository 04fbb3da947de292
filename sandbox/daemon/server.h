/* The daemon's event loop: one process, one epoll set, many clients and
 * many running sandboxes.  Nothing in the loop blocks on a client or on a
 * command: sockets and pipes are non-blocking, child exits arrive through
 * pidfds, timeouts through timerfds, signals through a signalfd. */
#ifndef MINI_SANDBOX_SERVER_H
#define MINI_SANDBOX_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mini/err.h"

struct mini_server_cfg {
    const char *socket_path;    /* listen here (NULL with inherit_fd) */
    int inherit_fd;             /* >= 0: serve this one connection, exit when it closes */
    int listen_fd;              /* >= 0: a listening socket bound to socket_path, passed by
                              * systemd (socket activation): served, never unlinked */
    const char *state_dir;      /* 0700 directory for mount points and overlays */
    const char *caps_cache_dir; /* the probe cache's directory (caps.h); NULL: probe */
    const char *profile_dir;    /* built-in profiles */
    const char *audit_log;      /* JSON lines, one per command; NULL: none */
    int ready_fd;               /* > 0: write one byte here once listening, then close */
    int max_clients;            /* > 0: the connections cap; 0: from the open-files limit */
    double frame_timeout_s;     /* > 0: a partial frame's time limit; 0: FRAME_TIMEOUT_S */
    char **resolve;             /* --resolve NAME:ADDR pins for the network proxy */
    size_t n_resolve;
    int64_t main_ns; /* when main began (MINI_SANDBOX_TIMING's start-up line) */
    bool caches_off; /* --caches=off: no pool, parked session, template of the root,
                              * id mapping ahead, seccomp program or probe cache */
};

/* Serve until SIGTERM/SIGINT (or, with inherit_fd, until the client
 * leaves).  0 on a clean stop. */
int mini_server_run(const struct mini_server_cfg *cfg, struct mini_err *e);

#endif
