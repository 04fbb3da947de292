/* EINTR-safe I/O helpers. */
#ifndef MINI_IO_H
#define MINI_IO_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
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
/* The same, without the fsync unless `durable`: the file is still replaced
 * whole (a writer killed at any moment leaves the old or the new one), but
 * after a power loss or an OS crash it may be the old one, or empty.  A
 * write that is not durable swaps the new file with the old (where the
 * filesystem can) and leaves the old one as "PATH.tmp", a spare that the
 * next write of path reuses (no new inode per write: see io.c), until a
 * durable write or mini_write_file_done removes it: a reader that holds
 * the file open across two later writes may see the second written over
 * it (read it whole when opened). */
int mini_write_file_replace(const char *path, const void *p, size_t n, int mode, bool durable, struct mini_err *e);
/* The last write of path is done: its spare goes. */
void mini_write_file_done(const char *path);
/* The same, with path relative to dirfd (AT_FDCWD: the current directory):
 * a writer that opened the file's directory before anyone else could
 * write there (a trajectory's, before the first sandboxed command) keeps
 * writing into that directory even when a symlink has since replaced it
 * at its path. */
int mini_write_file_replace_at(int dirfd, const char *path, const void *p, size_t n, int mode, bool durable,
                               struct mini_err *e);
void mini_write_file_done_at(int dirfd, const char *path);

/* Files written where others may write too (a sandboxed command's
 * workspace): never through a symlink that may have been planted there.
 *
 * mini_open_new: create path for writing, exclusively and never through
 * a symlink; whatever is in the way (a stale temporary file, a planted
 * link or hard link) is unlinked first -- the name, never what it points
 * to.  The fd, or -1 with errno set.  For a temporary file renamed over
 * the real one once written.
 *
 * mini_open_append_log: open the log at path for appending (O_APPEND),
 * creating it with `mode` (O_EXCL) when missing.  Refused, with a clear
 * message and nothing written: a symlink (never followed), anything but a
 * regular file (a FIFO's open never waits), a file owned by another user
 * than the euid, a file with more than one link (a hard link to a file
 * elsewhere).  The fd, or -1 with e filled (MINI_E_IO). */
int mini_open_new(const char *path, int mode);
int mini_open_append_log(const char *path, int mode, struct mini_err *e);
/* The same for name in dirfd; path is how messages name it. */
int mini_open_append_log_at(int dirfd, const char *name, const char *path, int mode, struct mini_err *e);

/* Open the directory dir (O_PATH) as the kernel would resolve it, except
 * that a symbolic link met in the directory `guard` (an fd; -1: none) or
 * below it is refused, never followed: a file the host side writes in a
 * sandbox's workspace can be held by its directory's fd without a link
 * that a sandboxed command planted in the path sending it elsewhere.
 * Links outside the workspace (the user's own) are followed.  The fd, or
 * -1 with e filled (MINI_E_IO).
 *
 * mini_open_parent_guarded: the same for the directory of the file path,
 * with *name set to its last component (in path). */
int mini_open_dir_guarded(const char *dir, int guard, struct mini_err *e);
int mini_open_parent_guarded(const char *path, int guard, const char **name, struct mini_err *e);
/* Whether the file at path, or a link on the way to it, lies in the
 * directory guard or below it (1), not (0), or -1 with e (it does not
 * exist; a link in guard on the way, as mini_open_dir_guarded says).  For
 * a program the host side runs: one in a workspace is the sandbox's to
 * rewrite. */
int mini_path_in_guard(const char *path, int guard, struct mini_err *e);
/* Whether the directory dfd is guard or lies below it (by device and
 * inode, up through ".."): 1, 0, or -1 with errno. */
int mini_dir_within(int dfd, int guard);
/* close(2) that preserves errno and ignores fd < 0. */
void mini_close(int fd);
/* Remove a directory tree (never following symlinks, staying on its
 * filesystem), making unreadable directories readable first.  0, or -1
 * with e filled on the first failure (the rest is still attempted). */
int mini_rm_rf(const char *path, struct mini_err *e);
/* The disk space used by the directory tree at dirfd (its own blocks and
 * everything under it, st_blocks * 512, so sparse files count what they
 * hold), on its filesystem only, symlinks never followed, a file with
 * several links counted once.  Walks by fd (safe against a tree changed
 * under it).  what names the tree in messages.  0 with *bytes set, or -1
 * with e filled: MINI_E_LIMIT (errno E2BIG) past max_entries entries,
 * MINI_E_IO with errno EAGAIN when a directory was moved during the walk,
 * EACCES for one it may not read. */
int mini_disk_usage(int dirfd, const char *what, uint64_t max_entries, uint64_t *bytes, struct mini_err *e);
/* Create directory `path` and its missing parents with `mode` (existing
 * ones are left as they are).  0, or -1 with e filled (MINI_E_IO), also
 * when path exists but is not a directory. */
int mini_mkdir_p(const char *path, int mode, struct mini_err *e);
int mini_set_nonblock(int fd, int on);
int mini_set_cloexec(int fd, int on);
/* Send one message of n bytes on a Unix socket with up to
 * MINI_SEND_FDS_MAX fds riding along (SCM_RIGHTS; none when n_fds is 0),
 * retrying on EINTR, no SIGPIPE.  0 when all of it went, or -1 with errno
 * set. */
#define MINI_SEND_FDS_MAX 10
int mini_send_fds(int sock, const void *p, size_t n, const int *fds, size_t n_fds);

/* Whether pid is a process that runs here: not gone, and not a zombie (a
 * process killed with SIGKILL that its parent has not reaped is dead; its
 * fds and locks went with it). */
bool mini_pid_running(pid_t pid);

/* Owner locks: a daemon marks what it owns (its state, its temp
 * directories) with an exclusive flock held for its whole life, so that
 * another daemon -- in whatever pid namespace -- can tell a live owner
 * from a dead one and reclaims only the dead's.
 *
 * mini_owner_lock: open (creating it 0600, or with dir an existing
 * directory) path, never through a symlink, and lock it; retried when
 * the file was removed meanwhile by a reclaiming daemon.  The fd, held
 * for as long as the lock must hold, or -1 with e filled.
 * mini_owner_lock_lost: whether a held lock's file is no longer at its
 * path (removed, e.g. with the directory it was in). */
int mini_owner_lock(const char *path, bool dir, struct mini_err *e);
bool mini_owner_lock_lost(int fd, const char *path);
/* Whether the owner lock at path is free: 1 free (its owner is dead:
 * *fd_out, when given, then holds the lock, so that the caller can
 * reclaim in peace and close it after), 0 held by a live owner, -1 no
 * such lock file (errno says why). */
int mini_owner_lock_free(const char *path, bool dir, int *fd_out);

#endif
