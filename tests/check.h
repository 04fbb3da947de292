/* A minimal assertion harness for C tests: CHECK() counts and reports,
 * and main() ends with `return check_summary();`, which prints the
 * "N passed, N failed" line and returns non-zero on any failure. */
#ifndef MINI_TESTS_CHECK_H
#define MINI_TESTS_CHECK_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond)                                                                    \
            check_passed++;                                                          \
        else {                                                                       \
            check_failed++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        if (cond)                                                                    \
            check_passed++;                                                          \
        else {                                                                       \
            check_failed++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

#define CHECK_STR(a, b)                                                                                          \
    do {                                                                                                         \
        const char *_a = (a), *_b = (b);                                                                         \
        if (_a && _b && strcmp(_a, _b) == 0)                                                                     \
            check_passed++;                                                                                      \
        else {                                                                                                   \
            check_failed++;                                                                                      \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s == %s: \"%s\" vs \"%s\"\n", __FILE__, __LINE__, #a, #b, \
                    _a ? _a : "(null)", _b ? _b : "(null)");                                                     \
        }                                                                                                        \
    } while (0)

#define CHECK_MEM(a, alen, b, blen)                                                                                \
    do {                                                                                                           \
        size_t _al = (alen), _bl = (blen);                                                                         \
        if (_al == _bl && memcmp((a), (b), _al) == 0)                                                              \
            check_passed++;                                                                                        \
        else {                                                                                                     \
            check_failed++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK_MEM failed: %s (%zu bytes) vs %s (%zu bytes)\n", __FILE__, __LINE__, #a, \
                    _al, #b, _bl);                                                                                 \
        }                                                                                                          \
    } while (0)

/* Write s to an existing file (a /proc file, say): 0, or -1 with errno. */
static inline int check_write_text(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    int err = errno;
    close(fd);
    errno = err;
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
