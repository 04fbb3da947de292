/* Checks made inside a forked child (under a seccomp filter, Landlock, or
 * whatever else it applied to itself), each reported to the parent through
 * a pipe and counted there with check.h:
 *
 *   static void body(void) { FAILS("mount", EPERM, mount(...)); ... }
 *   int st = child_run(body, "strict", &n);   // every record CHECKed
 *
 * In the child, child_report() records one result by hand; FAILS, WORKS
 * and WORKS_FD record the outcome of a call. */
#ifndef MINI_TESTS_CHILDCHECK_H
#define MINI_TESTS_CHILDCHECK_H

#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct child_record {
    char name[64];
    int ok;
    long ret;
    int err;
};

static int child_report_fd = -1;

static inline void child_report(const char *name, int ok, long ret, int err)
{
    struct child_record r = { .ok = ok, .ret = ret, .err = err };
    snprintf(r.name, sizeof r.name, "%s", name);
    if (write(child_report_fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(99);
}

/* `call` must fail with `want`. */
#define FAILS(name, want, call)                               \
    do {                                                      \
        errno = 0;                                            \
        long _r = (long)(call);                               \
        int _e = errno;                                       \
        child_report(name, _r == -1 && _e == (want), _r, _e); \
    } while (0)

/* `call` must succeed. */
#define WORKS(name, call)                    \
    do {                                     \
        errno = 0;                           \
        long _r = (long)(call);              \
        int _e = errno;                      \
        child_report(name, _r >= 0, _r, _e); \
    } while (0)

/* `call` must return a descriptor, which is closed again. */
#define WORKS_FD(name, call)                 \
    do {                                     \
        errno = 0;                           \
        long _r = (long)(call);              \
        int _e = errno;                      \
        child_report(name, _r >= 0, _r, _e); \
        if (_r >= 0)                         \
            close((int)_r);                  \
    } while (0)

/* Fork, run body in the child (which exits 0 after it), CHECK every record
 * it sends.  Returns the child's wait status; *count gets the number of
 * records (there must be at least one). */
static inline int child_run(void (*body)(void), const char *label, int *count)
{
    int p[2];
    if (pipe(p) < 0)
        abort();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(p[0]);
        child_report_fd = p[1];
        body();
        _exit(0);
    }
    close(p[1]);
    struct child_record rec;
    int n = 0;
    while (read(p[0], &rec, sizeof rec) == (ssize_t)sizeof rec) {
        n++;
        rec.name[sizeof rec.name - 1] = '\0';
        CHECK_MSG(rec.ok, "%s: %s: returned %ld, errno %d (%s)", label, rec.name, rec.ret, rec.err, strerror(rec.err));
    }
    close(p[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        abort();
    CHECK_MSG(n > 0, "%s: no results from the child", label);
    if (count)
        *count = n;
    return status;
}

#endif
