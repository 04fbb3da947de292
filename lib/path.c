#include "mini/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool mini_path_within(const char *path, const char *dir)
{
    if (path[0] != '/' || dir[0] != '/')
        return false;
    if (dir[1] == '\0')
        return true;
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void mini_mountinfo_unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

char *mini_self_exe(void)
{
    for (size_t cap = 256; cap <= (1u << 20); cap *= 2) {
        char *b = malloc(cap);
        if (!b)
            return NULL;
        ssize_t r = readlink("/proc/self/exe", b, cap);
        if (r < 0) {
            int err = errno;
            free(b);
            errno = err;
            return NULL;
        }
        if ((size_t)r < cap) {
            b[r] = '\0';
            return b;
        }
        free(b);
    }
    errno = ENAMETOOLONG;
    return NULL;
}

char *mini_exe_sibling(const char *name)
{
    char *self = mini_self_exe();
    if (!self)
        return NULL;
    char *slash = strrchr(self, '/');
    char *out = NULL;
    if (!slash)
        errno = ENOENT;
    else if (asprintf(&out, "%.*s/%s", (int)(slash - self), self, name) < 0)
        out = NULL;
    free(self);
    return out;
}

char *mini_exe_relative(const char *rel)
{
    char *joined = mini_exe_sibling(rel);
    if (!joined)
        return NULL;
    char *real = realpath(joined, NULL);
    if (!real)
        return joined;
    free(joined);
    return real;
}
