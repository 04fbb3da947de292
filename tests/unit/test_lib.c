/* Errors, buffers and I/O helpers. */
#include "check.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/err.h"
#include "mini/io.h"
#include "mini/clock.h"
#include "mini/path.h"
#include "mini/str.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails_deep(struct mini_err *e) { return mini_err_sys(e, MINI_E_IO, ENOENT, "opening %s", "/nope"); }

static int fails_middle(struct mini_err *e)
{
    if (fails_deep(e) < 0)
        return mini_err_prefix(e, "loading profile %s", "strict");
    return 0;
}

/* ---- mini_rm_rf: by fd, any depth, never out of the tree ---- */

static int mkfile_at(int dir, const char *name)
{
    int fd = openat(dir, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static void test_rm_rf(void)
{
    char base[] = "/tmp/mini-rmrf.XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    char tree[256], victim[256], p[512];
    snprintf(tree, sizeof tree, "%s/tree", base);
    snprintf(victim, sizeof victim, "%s/victim", base);
    struct mini_err e;

    /* An ordinary tree, a symlink to an outside directory, a mode-000 dir. */
    CHECK(mkdir(victim, 0755) == 0);
    snprintf(p, sizeof p, "%s/keep", victim);
    CHECK(mkfile_at(AT_FDCWD, p) == 0);
    CHECK(mkdir(tree, 0755) == 0);
    snprintf(p, sizeof p, "%s/a", tree);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/a/f", tree);
    CHECK(mkfile_at(AT_FDCWD, p) == 0);
    snprintf(p, sizeof p, "%s/a/link", tree);
    CHECK(symlink(victim, p) == 0);
    snprintf(p, sizeof p, "%s/locked", tree);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/locked/inside", tree);
    CHECK(mkfile_at(AT_FDCWD, p) == 0);
    snprintf(p, sizeof p, "%s/locked", tree);
    CHECK(chmod(p, 0) == 0);
    CHECK(mini_rm_rf(tree, &e) == 0);
    CHECK(access(tree, F_OK) < 0 && errno == ENOENT);
    snprintf(p, sizeof p, "%s/keep", victim);
    CHECK(access(p, F_OK) == 0);

    /* Deeper than PATH_MAX: 3000 levels of "dd". */
    CHECK(mkdir(tree, 0755) == 0);
    int fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; fd >= 0 && i < 3000; i++) {
        CHECK(mkdirat(fd, "dd", 0755) == 0);
        int next = openat(fd, "dd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (i % 500 == 0)
            mkfile_at(next, "f");
        close(fd);
        fd = next;
    }
    if (fd >= 0)
        close(fd);
    CHECK(mini_rm_rf(tree, &e) == 0);
    CHECK(access(tree, F_OK) < 0 && errno == ENOENT);

    /* A race: a child keeps swapping a subdirectory for a symlink to the
     * victim while the tree is removed; the victim must survive. */
    for (int round = 0; round < 200; round++) {
        CHECK(mkdir(tree, 0755) == 0);
        char sub[300], moved[300];
        snprintf(sub, sizeof sub, "%s/sub", tree);
        snprintf(moved, sizeof moved, "%s/moved", base);
        CHECK(mkdir(sub, 0755) == 0);
        for (int i = 0; i < 20; i++) {
            snprintf(p, sizeof p, "%s/f%d", sub, i);
            mkfile_at(AT_FDCWD, p);
        }
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 200; i++) {
                if (rename(sub, moved) == 0) {
                    symlink(victim, sub);
                    unlink(sub);
                    rename(moved, sub);
                }
            }
            _exit(0);
        }
        mini_rm_rf(tree, &e); /* may stop with an error: never may it leave the tree */
        waitpid(pid, NULL, 0);
        snprintf(p, sizeof p, "%s/keep", victim);
        CHECK(access(p, F_OK) == 0);
        CHECK(mini_rm_rf(moved, &e) == 0);
        CHECK(mini_rm_rf(tree, &e) == 0);
    }
    CHECK(mini_rm_rf(base, &e) == 0);
    CHECK(access(base, F_OK) < 0);
    /* A symlink as the top: the link goes, its target stays. */
}

/* ---- atomic writes over a killed writer's PATH.tmp ---- */

static void test_atomic_stale_tmp(void)
{
    char dir[] = "/tmp/mini-stale.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128], tmp[140], other[140];
    snprintf(path, sizeof path, "%s/f.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(other, sizeof other, "%s/other", dir);
    struct mini_err e;
    for (int durable = 0; durable < 2; durable++) {
        /* A stale file, then a stale symlink to another file (not followed). */
        for (int sym = 0; sym < 2; sym++) {
            int fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            CHECK(fd >= 0 && mini_write_all(fd, "other", 5) == 0);
            close(fd);
            if (sym)
                CHECK(symlink(other, tmp) == 0);
            else
                CHECK(link(other, tmp) == 0);
            CHECK(mini_write_file_replace(path, "new", 3, 0644, durable, &e) == 0);
            struct mini_buf b = MINI_BUF_INIT;
            CHECK(mini_read_file(path, &b, 100, &e) == 0 && b.len == 3 && memcmp(b.data, "new", 3) == 0);
            mini_buf_free(&b);
            CHECK(mini_read_file(other, &b, 100, &e) == 0 && b.len == 5 && memcmp(b.data, "other", 5) == 0);
            mini_buf_free(&b);
            if (!durable)
                mini_write_file_done(path); /* the spare, where there was a file before */
            CHECK(access(tmp, F_OK) < 0 && errno == ENOENT);
            struct stat st;
            CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
            /* And again, with none in the way. */
            CHECK(mini_write_file_replace(path, "again", 5, 0644, durable, &e) == 0);
            if (!durable) {
                /* The version replaced is the spare, reused by the next
                 * write (no new file), until mini_write_file_done. */
                CHECK(mini_read_file(tmp, &b, 100, &e) == 0 && b.len == 3 && memcmp(b.data, "new", 3) == 0);
                mini_buf_free(&b);
                struct stat spare;
                CHECK(stat(tmp, &spare) == 0 && (spare.st_mode & 0777) == 0644);
                CHECK(mini_write_file_replace(path, "third", 5, 0644, durable, &e) == 0);
                CHECK(stat(path, &st) == 0 && st.st_ino == spare.st_ino && (st.st_mode & 0777) == 0644);
                CHECK(mini_read_file(path, &b, 100, &e) == 0 && b.len == 5 && memcmp(b.data, "third", 5) == 0);
                mini_buf_free(&b);
                /* A shorter version over a longer spare: cut to its size. */
                CHECK(mini_write_file_replace(path, "x", 1, 0644, durable, &e) == 0);
                CHECK(mini_read_file(path, &b, 100, &e) == 0 && b.len == 1 && b.data[0] == 'x');
                mini_buf_free(&b);
                mini_write_file_done(path);
            }
            CHECK(access(tmp, F_OK) < 0 && errno == ENOENT);
        }
    }
    /* A directory where the file goes is refused, never swapped away. */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/d", dir);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(mini_write_file_replace(sub, "x", 1, 0644, false, &e) == -1);
    struct stat dst;
    CHECK(stat(sub, &dst) == 0 && S_ISDIR(dst.st_mode));
    snprintf(sub, sizeof sub, "%s/d.tmp", dir);
    CHECK(access(sub, F_OK) < 0 && errno == ENOENT);
    CHECK(mini_rm_rf(dir, &e) == 0);
}

/* ---- writes where a sandbox writes too: never through what it planted ---- */

static bool file_is(const char *path, const char *want)
{
    struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    bool same =
        mini_read_file(path, &b, 1000, &e) == 0 && b.len == strlen(want) && memcmp(b.data ?: "", want, b.len) == 0;
    mini_buf_free(&b);
    return same;
}

/* Same directory as path (O_PATH fds compared by device and inode). */
static bool same_dir(int fd, const char *path)
{
    struct stat a, b;
    return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* mini_open_dir_guarded: links outside the guard followed, any link in it
 * or below it refused, whichever way the path reaches it. */
static void test_dir_guarded(void)
{
    char t[] = "/tmp/mini-guard.XXXXXX";
    CHECK(mkdtemp(t) != NULL);
    char ws[160], sub[160], out[160], elsewhere[160], mine[160], p[320];
    snprintf(ws, sizeof ws, "%s/ws", t);
    snprintf(sub, sizeof sub, "%s/ws/sub", t);
    snprintf(out, sizeof out, "%s/ws/out", t);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", t);
    snprintf(mine, sizeof mine, "%s/mine", t);
    CHECK(mkdir(ws, 0755) == 0 && mkdir(sub, 0755) == 0 && mkdir(elsewhere, 0755) == 0);
    int g = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(g >= 0);
    struct mini_err e;
    int fd;

    /* Plain directories, inside and outside, absolute and with "..". */
    CHECK(same_dir(fd = mini_open_dir_guarded(sub, g, &e), sub));
    close(fd);
    snprintf(p, sizeof p, "%s/sub/../sub", ws);
    CHECK(same_dir(fd = mini_open_dir_guarded(p, g, &e), sub));
    close(fd);
    CHECK(same_dir(fd = mini_open_dir_guarded(elsewhere, g, &e), elsewhere));
    close(fd);

    /* A link planted in the workspace: refused, also reached through
     * sub/..; with no guard it is followed. */
    CHECK(symlink(elsewhere, out) == 0);
    CHECK(mini_open_dir_guarded(out, g, &e) == -1 && strstr(e.msg, "out is a symbolic link in the workspace"));
    snprintf(p, sizeof p, "%s/sub/../out", ws);
    CHECK(mini_open_dir_guarded(p, g, &e) == -1 && strstr(e.msg, "symbolic link in the workspace"));
    CHECK(same_dir(fd = mini_open_dir_guarded(out, -1, &e), elsewhere));
    close(fd);
    /* One deeper: ws/sub/deep -> elsewhere. */
    snprintf(p, sizeof p, "%s/deep", sub);
    CHECK(symlink(elsewhere, p) == 0);
    CHECK(mini_open_dir_guarded(p, g, &e) == -1 && strstr(e.msg, "deep is a symbolic link in the workspace"));

    /* The user's own link outside, into the workspace: followed to the
     * workspace, and a planted link behind it still refused. */
    CHECK(symlink(ws, mine) == 0);
    snprintf(p, sizeof p, "%s/sub", mine);
    CHECK(same_dir(fd = mini_open_dir_guarded(p, g, &e), sub));
    close(fd);
    snprintf(p, sizeof p, "%s/out", mine);
    CHECK(mini_open_dir_guarded(p, g, &e) == -1 && strstr(e.msg, "symbolic link in the workspace"));

    /* The parent of a file path, and its name. */
    const char *name = NULL;
    snprintf(p, sizeof p, "%s/traj.json", sub);
    CHECK(same_dir(fd = mini_open_parent_guarded(p, g, &name, &e), sub) && strcmp(name, "traj.json") == 0);
    close(fd);
    snprintf(p, sizeof p, "%s/traj.json", out);
    CHECK(mini_open_parent_guarded(p, g, &name, &e) == -1);
    CHECK(mini_open_parent_guarded("dir/", g, &name, &e) == -1 && strstr(e.msg, "names a directory"));
    /* A loop of links outside the guard: ELOOP, no hang. */
    char l1[160], l2[160];
    snprintf(l1, sizeof l1, "%s/l1", t);
    snprintf(l2, sizeof l2, "%s/l2", t);
    CHECK(symlink(l2, l1) == 0 && symlink(l1, l2) == 0);
    CHECK(mini_open_dir_guarded(l1, g, &e) == -1 && e.sys_errno == ELOOP);
    close(g);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t);
    CHECK(system(cmd) == 0);
}

static void test_host_writes(void)
{
    char dir[] = "/tmp/mini-hostw.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char victim[128], log[128], tmp[128], sub[128], moved[128], other[128];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(log, sizeof log, "%s/audit.jsonl", dir);
    snprintf(tmp, sizeof tmp, "%s/report.tmp", dir);
    snprintf(sub, sizeof sub, "%s/out", dir);
    snprintf(moved, sizeof moved, "%s/out.real", dir);
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    struct mini_err e;
    int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0 && mini_write_all(fd, "victim", 6) == 0);
    close(fd);

    /* Missing: created (a regular file of ours), then appended to. */
    fd = mini_open_append_log(log, 0600, &e);
    CHECK(fd >= 0 && mini_write_all(fd, "a\n", 2) == 0);
    close(fd);
    fd = mini_open_append_log(log, 0600, &e);
    CHECK(fd >= 0 && mini_write_all(fd, "b\n", 2) == 0);
    CHECK((fcntl(fd, F_GETFL) & (O_APPEND | O_NONBLOCK)) == O_APPEND);
    close(fd);
    CHECK(file_is(log, "a\nb\n"));
    struct stat st;
    CHECK(lstat(log, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    CHECK(unlink(log) == 0);

    /* A symlink, to a file or dangling: refused, nothing written or made. */
    CHECK(symlink(victim, log) == 0);
    CHECK(mini_open_append_log(log, 0644, &e) == -1 && strstr(e.msg, "is a symbolic link"));
    CHECK(file_is(victim, "victim"));
    CHECK(unlink(log) == 0);
    CHECK(symlink(other, log) == 0);
    CHECK(mini_open_append_log(log, 0644, &e) == -1 && strstr(e.msg, "is a symbolic link"));
    CHECK(access(other, F_OK) < 0 && errno == ENOENT);
    CHECK(unlink(log) == 0);

    /* A hard link to a file of ours elsewhere. */
    CHECK(link(victim, log) == 0);
    CHECK(mini_open_append_log(log, 0644, &e) == -1 && strstr(e.msg, "has other hard links"));
    CHECK(file_is(victim, "victim"));
    CHECK(unlink(log) == 0);

    /* A FIFO nobody reads: refused at once, not waited on. */
    CHECK(mkfifo(log, 0644) == 0);
    double t0 = mini_mono_s();
    CHECK(mini_open_append_log(log, 0644, &e) == -1 && strstr(e.msg, "not a regular file"));
    CHECK(mini_mono_s() - t0 < 5);
    CHECK(unlink(log) == 0);
    /* A directory. */
    CHECK(mkdir(log, 0755) == 0);
    CHECK(mini_open_append_log(log, 0644, &e) == -1 && e.code == MINI_E_IO);
    CHECK(rmdir(log) == 0);

    /* Another user's file (as root only: nobody else can make one). */
    if (geteuid() == 0) {
        fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        CHECK(fd >= 0 && fchown(fd, 65534, 65534) == 0);
        close(fd);
        CHECK(mini_open_append_log(log, 0644, &e) == -1 && strstr(e.msg, "owned by uid 65534"));
        CHECK(lstat(log, &st) == 0 && st.st_size == 0);
        CHECK(unlink(log) == 0);
    }

    /* mini_open_new: a planted symlink or hard link is replaced, never
     * written through. */
    for (int hard = 0; hard < 2; hard++) {
        CHECK((hard ? link(victim, tmp) : symlink(victim, tmp)) == 0);
        fd = mini_open_new(tmp, 0644);
        CHECK(fd >= 0 && mini_write_all(fd, "new", 3) == 0);
        close(fd);
        CHECK(file_is(victim, "victim") && file_is(tmp, "new"));
        CHECK(lstat(tmp, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1);
        CHECK(unlink(tmp) == 0);
    }

    /* mini_write_file_replace_at: the directory held by an fd keeps the
     * writes when a symlink replaced it at its path, durable or not. */
    CHECK(mkdir(sub, 0755) == 0 && mkdir(other, 0755) == 0);
    int dfd = open(sub, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(dfd >= 0);
    CHECK(mini_write_file_replace_at(dfd, "t.json", "1", 1, 0644, false, &e) == 0);
    CHECK(rename(sub, moved) == 0 && symlink(other, sub) == 0);
    CHECK(mini_write_file_replace_at(dfd, "t.json", "22", 2, 0644, false, &e) == 0);
    CHECK(mini_write_file_replace_at(dfd, "t.json", "333", 3, 0644, true, &e) == 0);
    mini_write_file_done_at(dfd, "t.json");
    close(dfd);
    char path[160];
    snprintf(path, sizeof path, "%s/t.json", moved);
    CHECK(file_is(path, "333"));
    DIR *d = opendir(other);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (d)
        closedir(d);
    CHECK(n == 0);
    CHECK(mini_rm_rf(dir, &e) == 0);
}

/* ---- atomic writes killed at random moments ---- */

/* Entries of dir other than "." and "..", joined by spaces. */
static void list_dir(const char *dir, char *out, size_t size)
{
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            snprintf(out + strlen(out), size - strlen(out), "%s ", de->d_name);
    }
    closedir(d);
}

/* A child rewrites one file (1 MiB of one repeated letter, a new letter
 * each time) as fast as it can, synced or not (then by an exchange of
 * names); it is killed with SIGKILL after a random delay.  Then the file
 * is whole (one letter throughout), the version written before the child
 * started, or absent; and after one more write the directory holds the
 * file and nothing else. */
static void test_atomic_killed(bool durable)
{
    char dir[] = "/tmp/mini-atomic.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], seen[512];
    snprintf(path, sizeof path, "%s/t.json", dir);
    enum { SIZE = 1 << 20 };
    char *data = malloc(SIZE);
    CHECK(data != NULL);
    srand((unsigned)getpid());
    int whole = 0, rounds = 20;
    for (int round = 0; round < rounds && data; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct mini_err ce;
            for (char c = 'a';; c = c == 'z' ? 'a' : (char)(c + 1)) {
                memset(data, c, SIZE);
                mini_write_file_replace(path, data, SIZE, 0644, durable, &ce);
            }
        }
        usleep((useconds_t)(1000 + rand() % 20000));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        struct mini_buf b = MINI_BUF_INIT;
        struct mini_err e;
        if (mini_read_file(path, &b, 0, &e) == 0) {
            /* the writer's last whole version, or the one before it */
            bool prev = b.len == 2 && memcmp(b.data, "{}", 2) == 0;
            bool ok = b.len == SIZE;
            for (size_t i = 1; ok && i < b.len; i++)
                ok = b.data[i] == b.data[0];
            CHECK_MSG(ok || prev, "round %d: a torn file (%zu bytes)", round, b.len);
            whole += ok;
        }
        mini_buf_free(&b);
        CHECK(mini_write_file_atomic(path, "{}", 2, 0644, &e) == 0);
        list_dir(dir, seen, sizeof seen);
        CHECK_MSG(strcmp(seen, "t.json ") == 0, "round %d: left in the directory: %s", round, seen);
    }
    CHECK_MSG(whole > 0, "the writer never completed a file in %d rounds", rounds);
    free(data);
    unlink(path);
    rmdir(dir);
}

/* ---- path containment, the program's own path, the clock ---- */
static void test_path_clock(void)
{
    CHECK(mini_path_within("/a", "/"));
    CHECK(mini_path_within("/", "/"));
    CHECK(mini_path_within("/a/b", "/a"));
    CHECK(mini_path_within("/a", "/a"));
    CHECK(!mini_path_within("/ab", "/a"));
    CHECK(!mini_path_within("/a", "/a/b"));
    CHECK(!mini_path_within("a/b", "/"));
    CHECK(!mini_path_within("a/b", "a"));
    _cleanup_free_ char *self = mini_self_exe();
    CHECK(self && self[0] == '/' && strstr(self, "test_lib"));
    _cleanup_free_ char *sib = mini_exe_sibling("mini-sandboxd");
    CHECK(sib && strncmp(sib, self, (size_t)(strrchr(self, '/') - self + 1)) == 0 &&
          strcmp(strrchr(sib, '/'), "/mini-sandboxd") == 0);
    int64_t a = mini_mono_ns();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    usleep(2000);
    CHECK(mini_mono_ns() - a >= 2000000 && mini_mono_ms() >= a / 1000000);
    CHECK(mini_elapsed_s(&ts) >= 0.002 && mini_elapsed_s(&ts) < 60);
}

/* ---- mini_disk_usage: blocks, links once, no symlinks, any depth ---- */

static uint64_t du_of(const char *dir, uint64_t max, int *rc, struct mini_err *e)
{
    uint64_t b = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *rc = mini_disk_usage(fd, "the tree", max, &b, e);
    close(fd);
    return b;
}

static int write_mib(int dir, const char *name, int mib)
{
    int fd = openat(dir, name, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; fd >= 0 && i < mib; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return -1;
    if (fd >= 0)
        fsync(fd);
    return fd < 0 ? -1 : close(fd);
}

static void test_disk_usage(void)
{
    char base[] = "/tmp/mini-du.XXXXXX";
    CHECK(mkdtemp(base) != NULL);
    char tree[256], outside[256];
    snprintf(tree, sizeof tree, "%s/tree", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    struct mini_err e;
    int rc;
    CHECK(mkdir(tree, 0755) == 0 && mkdir(outside, 0755) == 0);
    int t = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC), o = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint64_t empty = du_of(tree, 1000, &rc, &e);
    CHECK(rc == 0);

    /* 4 MiB in a file, then 5 hard links to it: 4 MiB once. */
    CHECK(mkdirat(t, "a", 0755) == 0);
    int a = openat(t, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(write_mib(a, "four", 4) == 0);
    uint64_t one = du_of(tree, 1000, &rc, &e);
    CHECK(rc == 0 && one >= empty + (4u << 20) && one < empty + (5u << 20));
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof n, "l%d", i);
        CHECK(linkat(a, "four", t, n, 0) == 0);
    }
    uint64_t linked = du_of(tree, 1000, &rc, &e);
    CHECK_MSG(rc == 0 && linked < one + 65536, "%llu vs %llu", (unsigned long long)linked, (unsigned long long)one);

    /* A symlink to 8 MiB outside is not followed; a sparse 1 GiB file
     * counts what it holds. */
    CHECK(write_mib(o, "eight", 8) == 0);
    CHECK(symlinkat(outside, t, "out") == 0);
    int sp = openat(t, "sparse", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    CHECK(sp >= 0 && ftruncate(sp, 1ll << 30) == 0);
    close(sp);
    uint64_t more = du_of(tree, 1000, &rc, &e);
    CHECK_MSG(rc == 0 && more < linked + 65536, "%llu vs %llu", (unsigned long long)more, (unsigned long long)linked);

    /* A mode-000 directory: refused (EACCES) as non-root, counted as root. */
    CHECK(mkdirat(t, "locked", 0755) == 0);
    int l = openat(t, "locked", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(write_mib(l, "two", 2) == 0);
    close(l);
    CHECK(fchmodat(t, "locked", 0, 0) == 0);
    uint64_t locked = du_of(tree, 1000, &rc, &e);
    if (geteuid() == 0)
        CHECK(rc == 0 && locked >= more + (2u << 20));
    else
        CHECK(rc < 0 && e.sys_errno == EACCES);
    CHECK(fchmodat(t, "locked", 0755, 0) == 0);

    /* The entry cap. */
    du_of(tree, 3, &rc, &e);
    CHECK(rc < 0 && e.code == MINI_E_LIMIT);

    /* 3000 levels deep (past PATH_MAX): counted, with a few fds. */
    int fd = openat(t, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; fd >= 0 && i < 3000; i++) {
        CHECK(mkdirat(fd, "dd", 0755) == 0);
        int next = openat(fd, "dd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (i == 2999)
            CHECK(write_mib(next, "deep", 1) == 0);
        close(fd);
        fd = next;
    }
    close(fd);
    uint64_t deep = du_of(tree, 100000, &rc, &e);
    CHECK(rc == 0 && deep >= more + (3u << 20));

    /* A race: a child swaps a directory for a symlink to outside while the
     * tree is measured: the walk ends in EAGAIN or a count that never
     * includes outside's 8 MiB. */
    CHECK(mkdirat(t, "sub", 0755) == 0);
    for (int round = 0; round < 100; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 100; i++)
                if (renameat(t, "sub", t, "moved") == 0) {
                    symlinkat(outside, t, "sub");
                    unlinkat(t, "sub", 0);
                    renameat(t, "moved", t, "sub");
                }
            _exit(0);
        }
        uint64_t b = du_of(tree, 100000, &rc, &e);
        waitpid(pid, NULL, 0);
        CHECK_MSG(rc == 0 ? b < deep + (4u << 20) : e.sys_errno == EAGAIN, "rc %d, %s", rc, e.msg);
    }
    close(a);
    close(t);
    close(o);
    CHECK(mini_rm_rf(base, &e) == 0);
}

static bool dec(const char *s, uint64_t max, uint64_t *v) { return mini_parse_decimal(s, strlen(s), max, v); }

static void test_parse_decimal(void)
{
    uint64_t v = 7;
    CHECK(dec("0", 10, &v) && v == 0);
    CHECK(dec("65535", 65535, &v) && v == 65535);
    CHECK(!dec("65536", 65535, &v) && v == 65535);
    CHECK(dec("0004294967294", 4294967294u, &v) && v == 4294967294u);
    CHECK(!dec("4294967295", 4294967294u, &v));
    CHECK(dec("18446744073709551615", UINT64_MAX, &v) && v == UINT64_MAX);
    CHECK(!dec("18446744073709551616", UINT64_MAX, &v));
    CHECK(!dec("99999999999999999999999", UINT64_MAX, &v));
    CHECK(!dec("", 10, &v) && !dec("-1", 10, &v) && !dec("+1", 10, &v) && !dec(" 1", 10, &v) && !dec("1a", 99, &v));
    CHECK(mini_parse_decimal("12x", 2, 99, &v) && v == 12); /* only the n bytes given */
}

int main(void)
{
    test_parse_decimal();
    test_rm_rf();
    test_disk_usage();
    test_path_clock();
    test_atomic_stale_tmp();
    test_host_writes();
    test_dir_guarded();
    test_atomic_killed(true);
    test_atomic_killed(false);
    struct mini_err e;
    mini_err_clear(&e);
    CHECK(e.code == MINI_OK && e.msg[0] == '\0');
    CHECK(fails_middle(&e) == -1);
    CHECK(e.code == MINI_E_IO && e.sys_errno == ENOENT);
    CHECK_STR(e.msg, "loading profile strict: opening /nope: No such file or directory");
    CHECK_STR(mini_errc_name(MINI_E_ISOLATION_UNAVAILABLE), "isolation_unavailable");
    CHECK(mini_errc_from_name("workspace_invalid") == MINI_E_WORKSPACE_INVALID);
    CHECK(mini_errc_name(MINI_ERRC_COUNT) != NULL);
    CHECK(mini_err_set(NULL, MINI_E_IO, "dropped") == -1);

    /* A long message is cut, never overflows. */
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mini_err_set(&e, MINI_E_INTERNAL, "%s", big);
    CHECK(strlen(e.msg) == MINI_ERR_MSG_MAX - 1);
    mini_err_prefix(&e, "ctx");
    CHECK(strlen(e.msg) == MINI_ERR_MSG_MAX - 1 && strncmp(e.msg, "ctx: x", 6) == 0);

    /* Buffers. */
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    for (int i = 0; i < 10000; i++)
        CHECK(mini_buf_printf(&b, "%d,", i) == 0 || 0);
    CHECK(b.len > 10000 && b.data[b.len] == '\0');
    CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
    size_t before = b.len;
    mini_buf_consume(&b, 2);
    CHECK(b.len == before - 2 && strncmp(b.data, "1,2,", 4) == 0);
    mini_buf_consume(&b, b.len + 5);
    CHECK(b.len == 0 && b.data[0] == '\0');
    mini_buf_append(&b, "a\0b", 3);
    CHECK(b.len == 3 && b.data[1] == '\0' && b.data[2] == 'b');
    size_t len;
    char *s = mini_buf_steal(&b, &len);
    CHECK(s && len == 3 && b.data == NULL && b.len == 0);
    free(s);
    struct mini_buf empty = MINI_BUF_INIT;
    s = mini_buf_steal(&empty, &len);
    CHECK(s && len == 0 && s[0] == '\0');
    free(s);

    /* Atomic write and bounded read. */
    char dir[] = "/tmp/mini-test-libXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/f.json", dir);
    CHECK(mini_write_file_atomic(path, "{\"a\":1}", 7, 0600, &e) == 0);
    struct mini_buf rb = MINI_BUF_INIT;
    CHECK(mini_read_file(path, &rb, 0, &e) == 0);
    CHECK_STR(rb.data, "{\"a\":1}");
    mini_buf_reset(&rb);
    CHECK(mini_read_file(path, &rb, 3, &e) == -1);
    CHECK(strstr(e.msg, "larger than 3 bytes") != NULL);
    mini_buf_free(&rb);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK(mini_write_file_atomic("/nonexistent-dir/x", "a", 1, 0600, &e) == -1 && e.code == MINI_E_IO);
    unlink(path);
    rmdir(dir);

    /* Pipe round trip through the EINTR-safe helpers. */
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(mini_write_all(p[1], "hello", 5) == 0);
    close(p[1]);
    char got[8] = { 0 };
    CHECK(mini_read_full(p[0], got, sizeof got) == 5);
    CHECK_STR(got, "hello");
    close(p[0]);
    return check_summary();
}
