/* EINTR-safe I/O helpers. */
#ifndef MINI_IO_H
#define MINI_IO_H

#include <stddef.h>
#include <sys/types.h>
#include "mini/buf.h"
#include "mini/err.h"

/* read(2) retried on EINTR. */
ssize_t mini_read(int fd, void *p, size_t n);
/* write(2) retried on EINTR. */
ssize_t mini_write(int fd, const void *p, size_t n);
/* Write everything, retrying on EINTR and short writes (blocking fds).
 * 0, or -1 with errno set. */
int mini_write_all(int fd, const void *p, size_t n);
/* Read exactly n bytes.  Returns n, a smaller count at EOF, or -1. */
ssize_t mini_read_full(int fd, void *p, size_t n);
/* Read until EOF into b, at most `max` bytes in all (0: no limit).
 * -1 with errno=EFBIG when the limit is passed. */
int mini_read_to_end(int fd, struct mini_buf *b, size_t max);
/* Read a whole file (at most max bytes).  0 or -1 with e filled. */
int mini_read_file(const char *path, struct mini_buf *b, size_t max, struct mini_err *e);
/* Write a file atomically: an unnamed temporary file in the same
 * directory (O_TMPFILE), fsync, named "PATH.tmp", renamed over `path`.
 * A writer killed on the way leaves at most "PATH.tmp", which the next
 * write of `path` removes; one writer per path at a time.  0 or -1 with
 * e filled. */
int mini_write_file_atomic(const char *path, const void *p, size_t n, int mode, struct mini_err *e);
/* close(2) that preserves errno and ignores fd < 0. */
void mini_close(int fd);
/* Remove a directory tree (never following symlinks, staying on its
 * filesystem), making unreadable directories readable first.  0, or -1
 * with e filled on the first failure (the rest is still attempted). */
int mini_rm_rf(const char *path, struct mini_err *e);
int mini_set_nonblock(int fd, int on);
int mini_set_cloexec(int fd, int on);

#endif
