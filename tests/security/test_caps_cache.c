/* The probe cache (sandbox/isolation/caps_cache.c): a miss probes and
 * stores only a full success; a hit gives the probe's features; a corrupt,
 * stale, truncated, symlinked, group/world-writable or foreign-owned file,
 * or a directory that is not private, is never trusted and is replaced;
 * two daemon binaries keep a cache each, and a store keeps the newest
 * few.  As the invoking user and, when that is root, again as uid 65534
 * in a directory of its own (with a root-owned file planted in it).
 *
 *   test_caps_cache                 the checks
 *   test_caps_cache path DIR EXE    print the cache file of program EXE in DIR
 *   test_caps_cache forge DIR EXE   write that file claiming that every
 *                                   probe succeeded for program EXE run as
 *                                   this process is (tests/security/caps_cache.sh:
 *                                   the daemon must still fail closed) */
#include "caps.h"
#include "cgroup.h"
#include "check.h"
#include "mini/io.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[MINI_CAPS_PATH_MAX];
#define MINI_CAPS_KEEP_TEST 6 /* stale caches planted: more than are kept */

static bool cached(const char *dir, struct mini_caps *c)
{
    struct mini_err e;
    bool hit = true;
    CHECK(mini_caps_detect_cached(c, dir, &hit, &e) == 0);
    return hit;
}

static size_t file_read(char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? mini_read_full(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

static void file_write(const char *buf, size_t n, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    CHECK(fd >= 0 && mini_write_all(fd, buf, n) == 0);
    if (fd >= 0) {
        fchmod(fd, mode);
        close(fd);
    }
}

/* The file now in place is a fresh one of ours (0600, our uid) that hits. */
static void replaced_and_hits(const char *dir, const char *what)
{
    struct stat st;
    struct mini_caps c;
    CHECK_MSG(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 07777) == 0600,
              "%s: not replaced by a private file of ours", what);
    CHECK_MSG(cached(dir, &c), "%s: the replacement is not used", what);
    char spare[sizeof path + 8];
    snprintf(spare, sizeof spare, "%s.tmp", path);
    CHECK_MSG(lstat(spare, &st) < 0 && errno == ENOENT, "%s: the replaced cache's spare %s was left", what, spare);
}

static bool exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Two builds (daemon binaries) sharing the directory keep a file each,
 * and a store keeps the MINI_CAPS_CACHE_KEEP newest caches, removes the
 * old single file, and leaves alone what is not a regular file. */
static void builds(const char *dir, const struct mini_caps *live)
{
    struct mini_caps c;
    char other[MINI_CAPS_PATH_MAX], text[MINI_CAPS_CACHE_MAX];
    CHECK(mini_caps_cache_path(dir, "/bin/sh", other) && strcmp(other, path) != 0);
    int n = mini_caps_cache_text(live, "/bin/sh", text, sizeof text);
    struct mini_err e;
    CHECK(n > 0 && mini_write_file_replace(other, text, (size_t)n, 0600, false, &e) == 0);
    unlink(path);
    CHECK(!cached(dir, &c));
    CHECK_MSG(exists(other), "a store removed another build's cache");
    CHECK_MSG(cached(dir, &c), "another build's cache is taken for this one's");

    char fake[MINI_CAPS_KEEP_TEST][MINI_CAPS_PATH_MAX], old[MINI_CAPS_PATH_MAX], link[MINI_CAPS_PATH_MAX];
    for (int i = 0; i < MINI_CAPS_KEEP_TEST; i++) {
        snprintf(fake[i], sizeof fake[i], "%s/" MINI_CAPS_CACHE_PREFIX "0-%d" MINI_CAPS_CACHE_SUFFIX, dir, i);
        int fd = open(fake[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        if (fd >= 0) {
            /* Long ago, and older the lower i. */
            struct timespec t[2] = { { 1000000 + i, 0 }, { 1000000 + i, 0 } };
            CHECK(futimens(fd, t) == 0);
            close(fd);
        }
    }
    snprintf(old, sizeof old, "%s/" MINI_CAPS_CACHE_OLD, dir);
    snprintf(link, sizeof link, "%s/" MINI_CAPS_CACHE_PREFIX "link" MINI_CAPS_CACHE_SUFFIX, dir);
    int fd = open(old, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(symlink(fake[0], link) == 0);
    unlink(path);
    CHECK(!cached(dir, &c)); /* a store, and its prune */
    CHECK_MSG(exists(path) && exists(other), "the two newest caches were not kept");
    for (int i = 0; i < MINI_CAPS_KEEP_TEST; i++) {
        bool keep = i >= MINI_CAPS_KEEP_TEST - (MINI_CAPS_CACHE_KEEP - 2);
        CHECK_MSG(exists(fake[i]) == keep, "cache %d of %d (oldest first): %s", i, MINI_CAPS_KEEP_TEST,
                  keep ? "removed, though among the newest" : "kept, though older than the newest");
    }
    CHECK_MSG(!exists(old), "the old single cache file was left");
    CHECK_MSG(exists(link), "a symlink named like a cache was removed (only regular files are)");
    CHECK(cached(dir, &c));
    unlink(link);
    unlink(other);
    for (int i = 0; i < MINI_CAPS_KEEP_TEST; i++)
        unlink(fake[i]);
}

/* plant(dir): called with a valid cache in place, makes it foreign-owned
 * (rootless: the root parent does it). */
static void checks(const char *dir, void (*plant)(void))
{
    CHECK(mini_caps_cache_path(dir, "/proc/self/exe", path));
    unlink(path);
    struct mini_caps live, c;
    struct mini_err e;
    CHECK(mini_caps_detect(&live, &e) == 0);
    bool all = mini_caps_children_all_ok(&live);

    CHECK_MSG(!cached(dir, &c), "an empty directory hits");
    CHECK(mini_caps_features(&c) == mini_caps_features(&live));
    if (!all) {
        printf("# uid %u: not every probe succeeds here (features 0x%x): nothing may be stored\n", (unsigned)geteuid(),
               mini_caps_features(&live));
        CHECK_MSG(access(path, F_OK) < 0, "a partial result was stored");
        CHECK(!cached(dir, &c));
        return;
    }
    replaced_and_hits(dir, "first probe");
    CHECK(mini_caps_features(&c) == mini_caps_features(&live));
    CHECK(mini_caps_children_all_ok(&c) && c.userns_why[0] == '\0');
    char key[MINI_CAPS_KEY_MAX], buf[MINI_CAPS_CACHE_MAX], good[MINI_CAPS_CACHE_MAX];
    int klen = mini_caps_cache_key(&live, "/proc/self/exe", key, sizeof key);
    int glen = mini_caps_cache_text(&live, "/proc/self/exe", good, sizeof good);
    size_t n = file_read(buf, sizeof buf);
    CHECK_MSG(klen > 0 && glen > klen && (size_t)glen == n && memcmp(good, buf, n) == 0 &&
                  memcmp(key, buf, (size_t)klen) == 0,
              "the file is not the key and the cgroup tests' answers");
    /* The hit stood in for the cgroup tests, with their answers. */
    CHECK(c.cg_mode == live.cg_mode && c.v2_writable == live.v2_writable && c.v2_kill == live.v2_kill);
    for (int i = 0; i < MINI_CGC_COUNT; i++)
        CHECK(c.v1[i].writable == live.v1[i].writable && c.v1[i].err == live.v1[i].err);

    /* Each input is in the key. */
    struct mini_caps other = live;
    other.in_container = !other.in_container;
    char okey[MINI_CAPS_KEY_MAX];
    CHECK(mini_caps_cache_key(&other, "/proc/self/exe", okey, sizeof okey) > 0 && strcmp(okey, key) != 0);
    CHECK(mini_caps_cache_key(&live, "/bin/sh", okey, sizeof okey) > 0 && strcmp(okey, key) != 0);
    CHECK(mini_caps_cache_key(&live, "/proc/self/exe", okey, 64) == -1);

    /* Corrupt: one byte changed (a stale boot id, say), truncated, longer,
     * empty, garbage. */
    buf[n / 2] ^= 1;
    file_write(buf, n, 0600);
    CHECK_MSG(!cached(dir, &c), "a changed byte hits");
    replaced_and_hits(dir, "changed byte");
    file_write(good, n - 1, 0600);
    CHECK_MSG(!cached(dir, &c), "a truncated file hits");
    replaced_and_hits(dir, "truncated");
    file_write(key, (size_t)klen, 0600);
    CHECK_MSG(!cached(dir, &c), "the key without the cgroup tests' answers hits");
    replaced_and_hits(dir, "no answers");
    memcpy(buf, good, n);
    memcpy(buf + n, "x\n", 2);
    file_write(buf, n + 2, 0600);
    CHECK_MSG(!cached(dir, &c), "a longer file hits");
    replaced_and_hits(dir, "longer");
    /* A forged answer: writable where the test said otherwise, or a
     * transient error, or an answer twice. */
    memcpy(buf, key, (size_t)klen);
    snprintf(buf + klen, sizeof buf - (size_t)klen, "%stest 0 11\n", good + klen);
    file_write(buf, strlen(buf), 0600);
    CHECK_MSG(!cached(dir, &c), "an answer given twice, or EAGAIN, hits");
    replaced_and_hits(dir, "forged answer");
    /* Refusals it says are tested again: a forged one takes nothing away. */
    memcpy(buf, key, (size_t)klen);
    buf[klen] = '\0';
    for (int i = 0; i <= MINI_CGC_COUNT; i++) {
        size_t at = strlen(buf);
        if (i < MINI_CGC_COUNT && live.v1[i].mounted)
            snprintf(buf + at, sizeof buf - at, "test %d %d\n", i, EACCES);
        else if (i == MINI_CGC_COUNT && live.v2_mounted)
            snprintf(buf + at, sizeof buf - at, "test %d %d %d %d\n", i, EACCES, live.v2_kill, live.v2_freeze);
    }
    file_write(buf, strlen(buf), 0600);
    CHECK_MSG(cached(dir, &c), "answers of refusals do not hit");
    CHECK_MSG(c.cg_mode == live.cg_mode && c.v2_writable == live.v2_writable,
              "a cache that says every cgroup refused changed what the daemon uses");
    for (int i = 0; i < MINI_CGC_COUNT; i++)
        CHECK_MSG(c.v1[i].writable == live.v1[i].writable, "v1 %s: a forged refusal was taken", mini_cg_ctrl_name(i));
    unlink(path);
    CHECK(!cached(dir, &c) && cached(dir, &c));
    file_write("", 0, 0600);
    CHECK_MSG(!cached(dir, &c), "an empty file hits");
    replaced_and_hits(dir, "empty");
    static char junk[100000];
    memset(junk, 'A', sizeof junk);
    file_write(junk, sizeof junk, 0600);
    CHECK_MSG(!cached(dir, &c), "a large junk file hits");
    replaced_and_hits(dir, "junk");

    /* Writable by others: the right content is not enough. */
    file_write(good, n, 0620);
    CHECK_MSG(!cached(dir, &c), "a group-writable file hits");
    replaced_and_hits(dir, "group-writable");
    file_write(good, n, 0602);
    CHECK_MSG(!cached(dir, &c), "a world-writable file hits");
    replaced_and_hits(dir, "world-writable");

    /* A symlink to a valid file. */
    char target[600];
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    CHECK(rename(path, target) == 0 && symlink(target, path) == 0);
    CHECK_MSG(!cached(dir, &c), "a symlink hits");
    replaced_and_hits(dir, "symlink");
    unlink(target);

    /* A directory in its place: no hit, no crash, nothing stored. */
    unlink(path);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(!cached(dir, &c) && !cached(dir, &c));
    CHECK(mini_caps_features(&c) == mini_caps_features(&live));
    rmdir(path);

    /* A directory others may write to is not used at all. */
    CHECK(cached(dir, &c) == false);
    CHECK(chmod(dir, 0777) == 0);
    CHECK_MSG(!cached(dir, &c), "a cache in a world-writable directory hits");
    unlink(path);
    CHECK(!cached(dir, &c));
    CHECK_MSG(access(path, F_OK) < 0, "a cache was written to a world-writable directory");
    CHECK(chmod(dir, 0700) == 0);
    CHECK(!cached(dir, &c));
    CHECK(cached(dir, &c));
    CHECK(!cached(NULL, &c) && mini_caps_features(&c) == mini_caps_features(&live));

    /* Owned by someone else, with the right content. */
    plant();
    struct stat st;
    CHECK(lstat(path, &st) == 0 && st.st_uid != geteuid());
    CHECK_MSG(!cached(dir, &c), "a foreign-owned file hits");
    replaced_and_hits(dir, "foreign-owned");

    builds(dir, &live);
}

static void plant_root(void) { CHECK(chown(path, 65534, 65534) == 0); }

static int to_parent[2], from_parent[2];

static void plant_by_parent(void)
{
    char x = 'p';
    CHECK(write(to_parent[1], &x, 1) == 1 && read(from_parent[0], &x, 1) == 1);
}

/* writable: every cgroup hierarchy is said to be, whatever its test
 * found (the daemon must then fall back and forget the cache). */
static int forge(const char *dir, const char *exe, bool writable)
{
    struct mini_caps c;
    struct mini_err e;
    char key[MINI_CAPS_CACHE_MAX];
    if (!mini_caps_cache_path(dir, exe, path)) {
        fprintf(stderr, "test_caps_cache: no cache path for %s in %s\n", exe, dir);
        return 1;
    }
    int n = -1;
    if (mini_caps_detect_reads(&c, &e) == 0) {
        mini_cgroups_test(&c, false);
        for (int i = 0; writable && i < MINI_CGC_COUNT; i++)
            c.v1[i].err = 0;
        if (writable)
            c.v2_err = 0;
        n = mini_caps_cache_text(&c, exe, key, sizeof key);
    }
    if (n <= 0 || mini_write_file_replace(path, key, (size_t)n, 0600, false, &e) < 0) {
        fprintf(stderr, "test_caps_cache: forging %s failed\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "path") == 0) {
        /* The cache file of the daemon binary argv[3] in argv[2]. */
        if (!mini_caps_cache_path(argv[2], argv[3], path))
            return 1;
        printf("%s\n", path);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "forge") == 0)
        return forge(argv[2], argv[3], false);
    if (argc == 4 && strcmp(argv[1], "forge-cgroups") == 0)
        return forge(argv[2], argv[3], true);
    char dir[] = "/tmp/mini-caps-cache.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    printf("# as uid %u in %s\n", (unsigned)geteuid(), dir);
    checks(dir, plant_root);
    if (geteuid() == 0) {
        /* Rootless: uid 65534 in a directory of its own; the root parent
         * plants a root-owned copy of its valid cache. */
        char sub[600];
        snprintf(sub, sizeof sub, "%s/rootless", dir);
        CHECK(mkdir(sub, 0700) == 0 && chown(sub, 65534, 65534) == 0 && chmod(dir, 0711) == 0);
        CHECK(pipe(to_parent) == 0 && pipe(from_parent) == 0);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            check_passed = check_failed = 0;
            close(to_parent[0]);
            close(from_parent[1]);
            if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                _exit(3);
            /* As an exec'd program would be: /proc/self/uid_map must be
             * the process's own for the user namespace probes. */
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
            printf("# as uid %u in %s\n", (unsigned)geteuid(), sub);
            checks(sub, plant_by_parent);
            int rc = check_summary();
            fflush(stdout);
            _exit(rc ? 1 : 0);
        }
        close(to_parent[1]);
        close(from_parent[0]);
        char x;
        char p[700];
        CHECK(mini_caps_cache_path(sub, "/proc/self/exe", p));
        if (read(to_parent[0], &x, 1) == 1) {
            CHECK(chown(p, 0, 0) == 0 && chmod(p, 0644) == 0);
            CHECK(write(from_parent[1], &x, 1) == 1);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the rootless checks failed (status 0x%x)", st);
    }
    struct mini_err e;
    mini_rm_rf(dir, &e);
    return check_summary();
}
