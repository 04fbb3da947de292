#include "mini/err.h"

#include <stdio.h>
#include <string.h>

static const char *const names[MINI_ERRC_COUNT] = {
    [MINI_OK] = "ok",
    [MINI_E_BAD_REQUEST] = "bad_request",
    [MINI_E_NO_SUCH_SESSION] = "no_such_session",
    [MINI_E_NO_SUCH_EXEC] = "no_such_exec",
    [MINI_E_WORKSPACE_INVALID] = "workspace_invalid",
    [MINI_E_CWD_INVALID] = "cwd_invalid",
    [MINI_E_PROFILE_INVALID] = "profile_invalid",
    [MINI_E_ISOLATION_UNAVAILABLE] = "isolation_unavailable",
    [MINI_E_SPAWN_FAILED] = "spawn_failed",
    [MINI_E_BUSY] = "busy",
    [MINI_E_LIMIT] = "limit_exceeded",
    [MINI_E_IO] = "io_error",
    [MINI_E_NOMEM] = "out_of_memory",
    [MINI_E_CONFIG] = "config_invalid",
    [MINI_E_TEMPLATE] = "template_error",
    [MINI_E_MODEL] = "model_error",
    [MINI_E_FORMAT] = "format_error",
    [MINI_E_INTERNAL] = "internal",
};

const char *mini_errc_name(enum mini_errc code)
{
    if ((unsigned)code >= MINI_ERRC_COUNT)
        return "internal";
    return names[code];
}

enum mini_errc mini_errc_from_name(const char *name)
{
    for (unsigned i = 0; i < MINI_ERRC_WIRE_COUNT; i++)
        if (name && strcmp(names[i], name) == 0)
            return (enum mini_errc)i;
    return MINI_E_INTERNAL;
}

void mini_err_clear(struct mini_err *e)
{
    if (!e)
        return;
    e->code = MINI_OK;
    e->sys_errno = 0;
    e->msg[0] = '\0';
}

__attribute__((format(printf, 4, 0))) static void vset(struct mini_err *e, enum mini_errc code, int errnum,
                                                       const char *fmt, va_list ap)
{
    e->code = code;
    e->sys_errno = errnum;
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    if (n < 0)
        e->msg[0] = '\0';
    if (errnum) {
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len, ": %s", strerror(errnum));
    }
}

int mini_err_set(struct mini_err *e, enum mini_errc code, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, code, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int mini_err_sys(struct mini_err *e, enum mini_errc code, int errnum, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(e, code, errnum, fmt, ap);
    va_end(ap);
    return -1;
}

int mini_err_prefix(struct mini_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    char prefix[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    char old[MINI_ERR_MSG_MAX];
    memcpy(old, e->msg, sizeof old);
    size_t plen = strlen(prefix), olen = strlen(old), cap = sizeof e->msg - 1;
    if (plen > cap)
        plen = cap;
    memcpy(e->msg, prefix, plen);
    size_t at = plen;
    for (const char *sep = ": "; *sep && at < cap; sep++)
        e->msg[at++] = *sep;
    if (olen > cap - at)
        olen = cap - at;
    memcpy(e->msg + at, old, olen);
    e->msg[at + olen] = '\0';
    return -1;
}
