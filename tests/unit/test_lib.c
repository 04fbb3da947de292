/* Errors, buffers and I/O helpers. */
#include "check.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/err.h"
#include "mini/io.h"
#include "mini/clock.h"
#include "mini/path.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
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
 * each time) as fast as it can; it is killed with SIGKILL after a random
 * delay.  Then the file is whole (one letter throughout), the version
 * written before the child started, or absent; and
 * after one more write the directory holds the file and nothing else. */
static void test_atomic_killed(void)
{
    char dir[] = "/tmp/mini-atomic.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], seen[512];
    snprintf(path, sizeof path, "%s/t.json", dir);
    enum { SIZE = 1 << 20 };
    char *data = malloc(SIZE);
    CHECK(data != NULL);
    srand((unsigned)getpid());
    int whole = 0, rounds = 40;
    for (int round = 0; round < rounds && data; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct mini_err ce;
            for (char c = 'a';; c = c == 'z' ? 'a' : (char)(c + 1)) {
                memset(data, c, SIZE);
                mini_write_file_atomic(path, data, SIZE, 0644, &ce);
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

int main(void)
{
    test_rm_rf();
    test_path_clock();
    test_atomic_killed();
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
