/* mini-sandbox: messages shared by the subcommands. */
#ifndef MINI_SANDBOX_CLI_UTIL_H
#define MINI_SANDBOX_CLI_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Exit status of a usage error (unknown option, missing or bad argument). */
#define MINI_CLI_USAGE 2

/* "mini-sandbox: [SUB: ]WHAT" and "Try 'mini-sandbox [SUB ]--help'." on
 * stderr; returns MINI_CLI_USAGE.  SUB may be NULL. */
static inline int mini_cli_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int mini_cli_usage_error(const char *sub, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "mini-sandbox: %s%s%s\nTry 'mini-sandbox %s%s--help'.\n", sub ? sub : "", sub ? ": " : "", what,
            sub ? sub : "", sub ? " " : "");
    return MINI_CLI_USAGE;
}

/* The usage error for what getopt_long (with opterr = 0 and an optstring
 * starting with ':' after any '+') returned: '?' or ':'. */
static inline int mini_cli_getopt_error(const char *sub, int c, int optopt_, char **argv, int optind_)
{
    const char *arg = argv[optind_ - 1];
    if (c == ':')
        return mini_cli_usage_error(sub, "option %s needs an argument", arg);
    if (optopt_)
        return mini_cli_usage_error(sub, "unknown option -%c", optopt_);
    return mini_cli_usage_error(sub, "unknown option %s", arg);
}

/* A program's exit status once its output is flushed: output that did not
 * reach standard output (a full disk, say) is a failure, not a silent
 * success.  err: a write error already seen (0: none).  Returns rc, or 125
 * with the error on stderr. */
static inline int mini_cli_stdout_status(int rc, int err)
{
    errno = 0;
    if (fflush(stdout) != 0 && !err)
        err = errno ? errno : EIO;
    if (ferror(stdout) && !err)
        err = EIO;
    if (!err)
        return rc;
    fprintf(stderr, "mini-sandbox: writing output: %s\n", strerror(err));
    return 125;
}

#endif
