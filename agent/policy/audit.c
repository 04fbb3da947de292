/* The audit log (policy.h): in a file of its own, so that a program that
 * only writes audit lines (mini-sandbox run) links no PCRE2. */
#include "policy/policy.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

int mini_audit_open(const char *path, const char *workspace, struct mini_err *e)
{
    /* It may lie where a sandboxed command writes (the workspace): never
     * through a link planted there, in its name or its directories, never
     * into a file not ours alone. */
    _cleanup_close_ int guard = workspace ? open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (workspace && guard < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "the audit log %s: the workspace %s", path, workspace);
    const char *name;
    _cleanup_close_ int dir = mini_open_parent_guarded(path, guard, &name, e);
    if (dir < 0)
        return mini_err_prefix(e, "the audit log");
    int fd = mini_open_append_log_at(dir, name, path, 0644, e);
    if (fd < 0)
        return mini_err_prefix(e, "the audit log");
    return fd;
}

int mini_audit_write(int fd, const cJSON *obj, struct mini_err *e)
{
    /* O_APPEND and one write() per line: mini_json_append_line. */
    if (mini_json_append_line(fd, obj, e) < 0)
        return mini_err_prefix(e, "writing the audit log");
    return 0;
}

void mini_audit_time(char *buf, size_t size)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char s[32];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03ldZ", s, (long)(tv.tv_usec / 1000));
}
