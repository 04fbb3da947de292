/* Client side of the mini-sandboxd protocol: used by mini-sandbox and by
 * the agent's sandbox environment.  Blocking; one request in flight. */
#ifndef MINI_CLIENT_H
#define MINI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "mini/err.h"
#include "mini/proto.h"

struct mini_client {
    int fd;
    /* When set and *cancel becomes non-zero during mini_client_exec, the
     * running command is cancelled (checked every 100 ms). */
    const volatile int *cancel;
    pid_t private_daemon; /* > 0 when this client started its own daemon */
    struct mini_frame_reader rd;
    int64_t next_id;
    struct mini_rep_hello hello;
};

/* The per-user runtime directory ($XDG_RUNTIME_DIR/mini, else
 * /tmp/mini-$UID), created 0700 and checked to be ours and private.
 * Returns a malloc'd path. */
char *mini_runtime_dir(struct mini_err *e);
/* <runtime dir>/sandboxd.sock */
char *mini_default_socket(struct mini_err *e);
/* The socket of the system-wide daemon (root's; socket activation by
 * packaging/systemd/system/mini-sandboxd.socket): root's clients try it
 * after the default socket, before starting a private daemon. */
#define MINI_SYSTEM_SOCKET "/run/mini/sandboxd.sock"
/* path made absolute against the working directory, with "." and ".."
 * left for the daemon to judge and no symlink resolved: the daemon refuses
 * workspaces reached through symlinks, so a client must not resolve them
 * on its behalf.  malloc'd, or NULL. */
char *mini_client_abspath(const char *path);

/* Connect to `socket_path` (NULL: the default, then for root
 * MINI_SYSTEM_SOCKET).  When nothing listens
 * there and `allow_private` is set, start a private daemon serving only
 * this connection (it exits when the connection closes).  Says hello. */
int mini_client_connect(struct mini_client *c, const char *socket_path, bool allow_private, struct mini_err *e);
/* The same, with `first` (an `open`, say) sent right behind the hello,
 * without waiting for the hello's reply: one round trip for both.  Its
 * reply is *first_rep.  -1 with e set when connecting, the hello or
 * `first` failed (an `error` reply: the daemon's code and message), and
 * then the connection is closed. */
int mini_client_connect_with(struct mini_client *c, const char *socket_path, bool allow_private, struct mini_req *first,
                             struct mini_rep *first_rep, struct mini_err *e);
void mini_client_close(struct mini_client *c);
/* Start a mini-sandboxd listening on socket_path, for several clients (a
 * batch's workers): in its own session, stopped by SIGTERM when this
 * process dies, waited for until it listens (at most 10 s).  Its pid, for
 * the caller to stop with SIGTERM and reap; or -1 with e filled. */
pid_t mini_client_start_daemon(const char *socket_path, struct mini_err *e);

/* Send a request (id assigned here, req->id is overwritten) and wait for
 * its reply, skipping nothing: events for other ids are an error in this
 * one-request-at-a-time client.  An `error` reply becomes -1 with e set to
 * the daemon's code and message. */
int mini_client_call(struct mini_client *c, struct mini_req *req, struct mini_rep *rep, struct mini_err *e);

typedef void (*mini_output_fn)(void *arg, const char *data, size_t len);
/* Run a command: streams `output` events to fn (when non-NULL, the request
 * is sent with stream=true) and fills *exit with the `exit` event. */
int mini_client_exec(struct mini_client *c, struct mini_req_exec *x, mini_output_fn fn, void *arg,
                     struct mini_rep *exit, struct mini_err *e);

#endif
