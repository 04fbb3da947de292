/* mini-sandboxd wire protocol, version 1.  docs/protocol.md is the prose
 * version of this header; keep the two in step.
 *
 * Transport: a stream Unix socket.  Each message is a frame: a 4-byte
 * big-endian length N (1 <= N <= MINI_FRAME_MAX) followed by N bytes holding
 * one UTF-8 JSON object.  Every object has a string "op" and an integer "id"
 * (0 <= id <= 2^53-1, chosen by the client; replies and events echo it).
 * Objects must not repeat a key.  Unknown keys are rejected (bad_request), so
 * that a typo never silently weakens a request.  JSON is taken strictly
 * (include/mini/json.h): no NUL bytes, no \u0000, no invalid UTF-8.
 *
 * Requests (client -> daemon):
 *   hello   {version:int, client?:string}
 *   open    {workspace:string, profile?:string | profile_data?:object,
 *            overrides?:object, env?:{string:string}, image?:string,
 *            allow_hosts?:[string,...], user?:string}
 *   exec    {session:string, command?:string | argv?:[string,...],
 *            cwd?:string, env?:{string:string}, timeout?:number (s, 0 < t <= 1e6),
 *            stdin?:string, stream?:bool, last?:bool}
 *   cancel  {target:int}            the id of a running exec on this connection
 *   close   {session:string}
 *   stats   {}
 *
 * Replies and events (daemon -> client); every field is always present:
 *   hello   {version:int, server:string, features:object}
 *   opened  {session:string, profile:string, isolation:object, notes:[string]}
 *   output  {data:string}           zero or more per streamed exec
 *   exit    {returncode:int, signal:int, timed_out:bool, oom_killed:bool,
 *            output:string, truncated:bool, output_bytes:int, duration_ms:int,
 *            cpu_ms:int, max_rss_kb:int, limit:string|null, notes:[string]}
 *   ok      {}                      cancel and close succeeded
 *   stats   {sessions:int, running:int, execs_total:int, clients:int, uptime_ms:int,
 *            preparing?:int, held_ahead?:int, seccomp_programs?:int}
 *   error   {code:string, message:string}   id is null when unreadable
 *
 * hello: the client sends the highest version it speaks, the daemon answers
 * with the version it will use (any change to the messages needs a new
 * version).  exec: zero or more output events (stream only), then exactly
 * one exit event, or one error.  cancel and close reply ok; the commands
 * they stop end with an exit whose limit is "cancelled".  A bad frame (zero
 * length, over MINI_FRAME_MAX, truncated) gets an error with id null and
 * the connection is closed; a payload that fails to decode gets an error
 * echoing its id (null if unreadable) and the connection stays open.
 * Limit names: timeout cancelled memory pids cpu file_size disconnect
 * shutdown.  Error codes: mini_errc_name() (bad_request, no_such_session,
 * no_such_exec, workspace_invalid, cwd_invalid, profile_invalid,
 * isolation_unavailable, spawn_failed, busy, limit_exceeded, io_error,
 * out_of_memory, internal).
 */
#ifndef MINI_PROTO_H
#define MINI_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "mini/buf.h"
#include "mini/err.h"

#define MINI_PROTO_VERSION 1
#define MINI_FRAME_MAX (16u * 1024u * 1024u)
#define MINI_ID_MAX 9007199254740991LL /* 2^53 - 1: exact in a JSON double */

/* ---------------------------------------------------------------- framing */

struct mini_frame_reader {
    struct mini_buf in; /* bytes received and not yet consumed */
    size_t consumed;    /* bytes at the front of `in` already handed out by
                               next(); dropped lazily, compacted on feed */
    size_t max;         /* payload limit (MINI_FRAME_MAX by default) */
};

void mini_frame_reader_init(struct mini_frame_reader *r);
void mini_frame_reader_free(struct mini_frame_reader *r);
/* Append n received bytes.  0, or -1 with e filled (out of memory). */
int mini_frame_reader_feed(struct mini_frame_reader *r, const void *p, size_t n, struct mini_err *e);
/* 1: a whole frame is ready, *payload and *len point into the reader and stay
 * valid until the next call; 0: more bytes needed; -1: the stream is broken
 * (zero length, length over the limit), e says why.  A length over the limit
 * is reported as soon as the 4 header bytes are in. */
int mini_frame_reader_next(struct mini_frame_reader *r, const char **payload, size_t *len, struct mini_err *e);
/* Call at end of stream: 0 if the stream ended between frames, -1 (bad_request,
 * "truncated frame") if part of a frame is buffered. */
int mini_frame_reader_eof(const struct mini_frame_reader *r, struct mini_err *e);

/* Append one frame (header + payload) to out.  -1 if len is 0 or too large. */
int mini_frame_encode(struct mini_buf *out, const void *payload, size_t len, struct mini_err *e);
/* Serialise obj compactly and append it as one frame. */
int mini_frame_encode_json(struct mini_buf *out, const cJSON *obj, struct mini_err *e);
/* Blocking helpers for simple clients: send one JSON object; receive one
 * (reads from fd into r until a frame is complete, then parses it).
 * recv returns 1 with *obj set, 0 on clean EOF, -1 on error. */
int mini_frame_send_json(int fd, const cJSON *obj, struct mini_err *e);
int mini_frame_recv_json(int fd, struct mini_frame_reader *r, cJSON **obj, struct mini_err *e);

/* Parse a payload as JSON (strictly: mini_json_parse in mini/json.h).
 * Rejects invalid JSON, anything but an object, and objects (at any depth)
 * that repeat a key.  NULL with e filled (bad_request). */
cJSON *mini_json_parse_object(const char *payload, size_t len, struct mini_err *e);

/* --------------------------------------------------------------- requests */

enum mini_op {
    MINI_OP_HELLO = 0,
    MINI_OP_OPEN,
    MINI_OP_EXEC,
    MINI_OP_CANCEL,
    MINI_OP_CLOSE,
    MINI_OP_STATS,
    /* replies and events */
    MINI_OP_OPENED,
    MINI_OP_OUTPUT,
    MINI_OP_EXIT,
    MINI_OP_OK,
    MINI_OP_ERROR,
    MINI_OP_COUNT
};

const char *mini_op_name(enum mini_op op);
/* -1 for an unknown name. */
int mini_op_from_name(const char *name);

/* An environment given as a JSON object of strings: parallel arrays. */
struct mini_env {
    size_t n;
    char **keys;
    char **values;
};

struct mini_req_hello {
    int64_t version;
    char *client; /* NULL if absent */
};

struct mini_req_open {
    char *workspace;     /* absolute path, required */
    char *profile;       /* built-in name; NULL: daemon default */
    cJSON *profile_data; /* a whole profile sent by the client; NULL if absent */
    cJSON *overrides;    /* may only tighten the profile; NULL if absent */
    struct mini_env env; /* session-wide extra variables */
    char *image;         /* an image of the daemon's store as the root (docs/images.md); NULL: the profile's */
    char **allow_hosts;  /* entries added to the profile's network allowlist (NULL-terminated); NULL if absent */
    size_t n_allow_hosts;
    char *user; /* with an image: who the commands run as, instead of its config's User */
};

struct mini_req_exec {
    char *session;
    char *command; /* exactly one of command and argv */
    char **argv;   /* NULL-terminated; NULL if absent.  to_json
                                     follows the NULL, argc is set by decoding */
    size_t argc;
    char *cwd; /* NULL: the workspace */
    struct mini_env env;
    double timeout;   /* seconds; 0: the profile's */
    char *stdin_data; /* NULL: /dev/null */
    size_t stdin_len;
    bool stream;
    bool last; /* the client sends no command after this one: prepare no replacement */
};

struct mini_req_cancel {
    int64_t target;
};

struct mini_req_close {
    char *session;
};

struct mini_req {
    enum mini_op op;
    int64_t id;
    union {
        struct mini_req_hello hello;
        struct mini_req_open open;
        struct mini_req_exec exec;
        struct mini_req_cancel cancel;
        struct mini_req_close close;
    } u;
};

/* Validate a parsed JSON object as a request.  On failure e->code is
 * bad_request and the message names the field ("exec.timeout: must be a
 * positive number").  *id_out receives the request id whenever it could be
 * read (else -1) so that the error reply can echo it.  Repeated keys are
 * rejected here too.  On failure *req holds nothing to free. */
int mini_req_from_json(const cJSON *obj, struct mini_req *req, int64_t *id_out, struct mini_err *e);
/* Frame payload -> request: mini_json_parse + mini_req_from_json. */
int mini_req_decode(const char *payload, size_t len, struct mini_req *req, int64_t *id_out, struct mini_err *e);
/* Request -> JSON object (for clients).  NULL on out of memory or an op
 * that is not a request.  Optional fields that are absent (NULL, 0 timeout,
 * empty env, false) are left out.  Strings are sent as valid UTF-8: invalid
 * sequences and NUL bytes (in stdin) become U+FFFD. */
cJSON *mini_req_to_json(const struct mini_req *req);
void mini_req_free(struct mini_req *req);

/* ------------------------------------------------------- replies, events */

struct mini_rep_hello {
    int64_t version;
    char *server;
    cJSON *features; /* object */
};

struct mini_rep_opened {
    char *session;
    char *profile;
    cJSON *isolation; /* object */
    char **notes;     /* NULL-terminated */
    size_t n_notes;
};

struct mini_rep_output {
    char *data; /* valid UTF-8 */
    size_t len;
};

/* Why a command ended early, when it did. */
enum mini_limit {
    MINI_LIMIT_NONE = 0,
    MINI_LIMIT_TIMEOUT,
    MINI_LIMIT_CANCELLED,
    MINI_LIMIT_MEMORY,
    MINI_LIMIT_PIDS,
    MINI_LIMIT_CPU,
    MINI_LIMIT_FILE_SIZE,
    MINI_LIMIT_DISCONNECT,
    MINI_LIMIT_SHUTDOWN,
    MINI_LIMIT_DISK,
    MINI_LIMIT_COUNT
};
const char *mini_limit_name(enum mini_limit l); /* "none" -> JSON null */
int mini_limit_from_name(const char *name);     /* -1 if unknown */

struct mini_rep_exit {
    int returncode; /* 0..255, 128+N for signal N, 124 timeout */
    int signal;     /* 0 if it exited */
    bool timed_out;
    bool oom_killed;
    char *output; /* merged stdout+stderr, valid UTF-8 */
    size_t output_len;
    bool truncated;       /* output holds head + tail only */
    int64_t output_bytes; /* everything the command wrote */
    int64_t duration_ms;
    int64_t cpu_ms;
    int64_t max_rss_kb;
    enum mini_limit limit;
    char **notes; /* NULL-terminated */
    size_t n_notes;
};

struct mini_rep_stats {
    int64_t sessions;
    int64_t running;
    int64_t execs_total;
    int64_t clients;
    int64_t uptime_ms;
    int64_t preparing;        /* sandboxes of the sessions' pools being prepared now (0 when absent) */
    int64_t held_ahead;       /* fds the daemon holds for sessions not yet opened (0 when absent) */
    int64_t seccomp_programs; /* compiled programs the daemon keeps (0 when absent) */
};

struct mini_rep_error {
    enum mini_errc code;
    char *message;
};

struct mini_rep {
    enum mini_op op; /* HELLO, OPENED, OUTPUT, EXIT, OK, STATS, ERROR */
    int64_t id;
    union {
        struct mini_rep_hello hello;
        struct mini_rep_opened opened;
        struct mini_rep_output output;
        struct mini_rep_exit exit;
        struct mini_rep_stats stats;
        struct mini_rep_error error;
    } u;
};

/* As for requests: on failure e is bad_request naming the field and *rep
 * holds nothing to free.  An error reply's null id reads as -1. */
int mini_rep_from_json(const cJSON *obj, struct mini_rep *rep, struct mini_err *e);
int mini_rep_decode(const char *payload, size_t len, struct mini_rep *rep, struct mini_err *e);
/* NULL strings are sent as "", NULL objects as {}, NULL lists as [];
 * output text as valid UTF-8 (invalid sequences and NUL bytes -> U+FFFD);
 * an id < 0 as null.  NULL on out of memory or an op that is not a reply. */
cJSON *mini_rep_to_json(const struct mini_rep *rep);
void mini_rep_free(struct mini_rep *rep);

/* The error reply {"op":"error","id":id,"code":...,"message":...}; id < 0 is
 * sent as null (the request's id could not be read). */
cJSON *mini_error_json(int64_t id, const struct mini_err *e);

void mini_env_free(struct mini_env *env);
/* Append a copy of key=value.  0, or -1 (out of memory; env unchanged). */
int mini_env_add(struct mini_env *env, const char *key, const char *value);

/* ------------------------------------------ environments as JSON objects */

/* Read a JSON object of strings into env (names non-empty, without '=').
 * `what` names the object in messages ("exec.env: must be an object",
 * "exec.env.FOO: must be a string").  0, or -1 with e filled and env empty. */
int mini_env_from_json(const cJSON *obj, struct mini_env *env, const char *what, struct mini_err *e);
/* env -> JSON object of strings.  NULL on out of memory. */
cJSON *mini_env_to_json(const struct mini_env *env);

#endif
