#include "mini/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *prog = "mini";
static enum mini_log_level cur = MINI_LOG_WARN;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

void mini_log_init(const char *program, enum mini_log_level level)
{
    if (program) {
        const char *slash = strrchr(program, '/');
        prog = slash ? slash + 1 : program;
    }
    cur = level;
}

int mini_log_level_parse(const char *s)
{
    for (int i = 0; i <= MINI_LOG_DEBUG; i++)
        if (s && strcmp(s, level_names[i]) == 0)
            return i;
    if (s && strcmp(s, "warning") == 0)
        return MINI_LOG_WARN;
    return -1;
}

void mini_log(enum mini_log_level level, const char *fmt, ...)
{
    if (level > cur)
        return;
    /* One write per line so that lines of concurrent processes do not mix. */
    char line[4096];
    int n = snprintf(line, sizeof line, "%s: %s: ", prog, level_names[level]);
    if (n < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = strlen(line);
    if (len + 1 < sizeof line)
        line[len++] = '\n';
    else
        line[sizeof line - 2] = '\n', len = sizeof line - 1;
    fwrite(line, 1, len, stderr);
}
