/* Error values that carry a stable code and a message with context.
 *
 * Functions that can fail take a `struct mini_err *` as their last argument,
 * fill it and return -1 (or NULL).  Callers add context with mini_err_prefix()
 * as the error travels up; only main() and the pre-exec child print it. */
#ifndef MINI_ERR_H
#define MINI_ERR_H

#include <stdarg.h>

/* Error codes.  The first block, up to MINI_E_INTERNAL, is the wire
 * protocol's (docs/protocol.md): the only codes an `error` reply may carry.
 * The second block is the agent's own categories, used inside `mini` to
 * choose an exit status; they never cross the wire. */
enum mini_errc {
    MINI_OK = 0,
    MINI_E_BAD_REQUEST, /* malformed frame or request */
    MINI_E_NO_SUCH_SESSION,
    MINI_E_NO_SUCH_EXEC,
    MINI_E_WORKSPACE_INVALID,
    MINI_E_CWD_INVALID,
    MINI_E_PROFILE_INVALID,
    MINI_E_ISOLATION_UNAVAILABLE,
    MINI_E_SPAWN_FAILED,
    MINI_E_BUSY,
    MINI_E_LIMIT, /* a request asked for more than its profile allows */
    MINI_E_IO,    /* a system call on a file or socket failed */
    MINI_E_NOMEM,
    MINI_E_INTERNAL,
    MINI_ERRC_WIRE_COUNT, /* codes below this one are the protocol's */

    /* the agent's categories */
    MINI_E_CONFIG = MINI_ERRC_WIRE_COUNT, /* agent configuration */
    MINI_E_TEMPLATE,
    MINI_E_MODEL,
    MINI_E_FORMAT, /* the model's reply has no valid action (recoverable) */
    MINI_ERRC_COUNT
};

#define MINI_ERR_MSG_MAX 1024

struct mini_err {
    enum mini_errc code;
    int sys_errno;              /* errno that caused it, 0 if none */
    char msg[MINI_ERR_MSG_MAX]; /* always NUL-terminated */
};

/* Stable lower-case name of a code ("bad_request", ...). */
const char *mini_errc_name(enum mini_errc code);
/* Inverse of mini_errc_name() for the wire's codes only; MINI_E_INTERNAL
 * for an unknown name or an agent category. */
enum mini_errc mini_errc_from_name(const char *name);
/* Whether a code may appear in an `error` reply. */
static inline int mini_errc_is_wire(enum mini_errc code) { return code > MINI_OK && code < MINI_ERRC_WIRE_COUNT; }

void mini_err_clear(struct mini_err *e);
/* Set code and message; returns -1 so that `return mini_err_set(...)` reads well.
 * `e` may be NULL (the error is then dropped). */
int mini_err_set(struct mini_err *e, enum mini_errc code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* As mini_err_set, appending ": strerror(errnum)" and recording errnum. */
int mini_err_sys(struct mini_err *e, enum mini_errc code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prepend "context: " to the message; keeps code and errno.  Returns -1. */
int mini_err_prefix(struct mini_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
