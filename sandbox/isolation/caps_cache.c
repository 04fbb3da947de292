/* The probe cache (caps.h, docs/sandbox-lifecycle.md): the process-creating
 * probes of mini_caps_detect and the cgroup test groups are skipped when a
 * file in the per-user runtime directory holds exactly this host's key,
 * which is written only after the process-creating probes all succeeded,
 * followed by what the cgroup tests found. */
#include "caps.h"
#include "caps_util.h"
#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

/* What the probes' results depend on, each read fresh. */
static const char *const key_files[] = {
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_pid_namespaces",
    "/proc/sys/user/max_net_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/user/max_ipc_namespaces",
    "/proc/sys/user/max_uts_namespaces",
    "/proc/sys/user/max_cgroup_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_unconfined",
    "/proc/self/attr/current", /* the LSM label the daemon runs under */
};
static const char *const key_ns[] = { "user", "mnt", "pid", "net", "ipc", "uts", "cgroup" };
/* Lines of /proc/self/status: capabilities, no_new_privs, seccomp. */
static const char *const key_status[] = { "CapInh:", "CapPrm:",     "CapEff:",  "CapBnd:",
                                          "CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:" };

int mini_caps_cache_key(const struct mini_caps *c, const char *exe, char *buf, size_t size)
{
    buf[0] = '\0';
    struct utsname u;
    struct stat st;
    if (uname(&u) < 0 || stat(exe, &st) < 0)
        return -1;
    appendf(buf, size, "mini caps cache 2\nkernel %s %s %s\nids %u %u %u %u\n", u.release, u.version, u.machine,
            (unsigned)getuid(), (unsigned)geteuid(), (unsigned)getgid(), (unsigned)getegid());
    /* The daemon binary: a new build or install probes again. */
    appendf(buf, size, "exe %llu %llu %lld %lld.%09ld\n", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
            (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(key_ns); i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", key_ns[i]);
        if (stat(path, &st) == 0)
            appendf(buf, size, "ns %s %llu %llu\n", key_ns[i], (unsigned long long)st.st_dev,
                    (unsigned long long)st.st_ino);
        else
            appendf(buf, size, "ns %s -\n", key_ns[i]);
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(key_files); i++) {
        char v[256];
        if (read_small(key_files[i], v, sizeof v) < 0)
            copy_str(v, sizeof v, "-");
        for (char *p = v; *p; p++)
            if (*p == '\n')
                *p = ' ';
        appendf(buf, size, "%s %s\n", key_files[i], v);
    }
    _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        for (size_t i = 0; i < MINI_ARRAY_SIZE(key_status); i++)
            if (strncmp(line, key_status[i], strlen(key_status[i])) == 0)
                appendf(buf, size, "%s", line);
    appendf(buf, size, "apparmor profile loaded %d\ncontainer %d %s\n", c->apparmor_profile_loaded, c->in_container,
            c->container);
    /* What a cgroup test group's mkdir depends on besides the above: the
     * directory, its owner and mode, and whether its mount is read-only. */
    for (int i = 0; i <= MINI_CGC_COUNT; i++) {
        bool v2 = i == MINI_CGC_COUNT;
        const char *dir = v2 ? c->v2_dir : c->v1[i].dir;
        if (!(v2 ? c->v2_mounted : c->v1[i].mounted))
            continue;
        struct statvfs vf;
        if (stat(dir, &st) < 0 || statvfs(dir, &vf) < 0)
            return -1;
        appendf(buf, size, "cgroup %d %s %llu %llu %o %u %u %lld.%09ld %d\n", i, dir, (unsigned long long)st.st_dev,
                (unsigned long long)st.st_ino, (unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
                (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, (vf.f_flag & ST_RDONLY) != 0);
    }
    size_t len = strlen(buf);
    return len + 1 < size ? (int)len : -1;
}

/* dir is the caller's own and not writable by others. */
static bool dir_ok(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022);
}

/* What the cgroup tests found, after the key: a line per tested
 * hierarchy, "test I ERR" (I: v1 controller, MINI_CGC_COUNT: v2) and for
 * v2 also "KILL FREEZE".  Only plain answers are kept (done, or refused
 * for good); -1 when one is not (a test that ran out of something). */
static int tests_text(const struct mini_caps *c, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i <= MINI_CGC_COUNT; i++) {
        bool v2 = i == MINI_CGC_COUNT;
        if (!(v2 ? c->v2_mounted : c->v1[i].mounted))
            continue;
        int err = v2 ? c->v2_err : c->v1[i].err;
        if (err != 0 && err != EACCES && err != EPERM && err != EROFS)
            return -1;
        if (v2)
            appendf(buf, size, "test %d %d %d %d\n", i, err, c->v2_kill, c->v2_freeze);
        else
            appendf(buf, size, "test %d %d\n", i, err);
    }
    size_t len = strlen(buf);
    return len + 1 < size ? (int)len : -1;
}

/* Set c's test results from text (tests_text's form, every tested
 * hierarchy once, nothing else); false when it is not that. */
static bool tests_parse(struct mini_caps *c, const char *text)
{
    bool seen[MINI_CGC_COUNT + 1] = { false };
    for (const char *p = text; *p;) {
        int i, err, kill = 0, freeze = 0, n = 0;
        if (sscanf(p, "test %d %d%n", &i, &err, &n) != 2 || i < 0 || i > MINI_CGC_COUNT || seen[i])
            return false;
        bool v2 = i == MINI_CGC_COUNT;
        if (!(v2 ? c->v2_mounted : c->v1[i].mounted) || (err != 0 && err != EACCES && err != EPERM && err != EROFS))
            return false;
        p += n;
        if (v2) {
            if (sscanf(p, " %d %d%n", &kill, &freeze, &n) != 2 || (kill & ~1) || (freeze & ~1))
                return false;
            p += n;
            c->v2_err = err;
            c->v2_kill = kill;
            c->v2_freeze = freeze;
        } else {
            c->v1[i].err = err;
        }
        if (*p++ != '\n')
            return false;
        seen[i] = true;
    }
    for (int i = 0; i <= MINI_CGC_COUNT; i++)
        if (!seen[i] && (i == MINI_CGC_COUNT ? c->v2_mounted : c->v1[i].mounted))
            return false;
    return true;
}

/* The file is a regular file of the caller's that nobody else may write,
 * and holds exactly key followed by the cgroup tests' results, which are
 * set in c. */
static bool cache_matches(const char *path, const char *key, size_t len, struct mini_caps *c)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    char buf[MINI_CAPS_CACHE_MAX];
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
        st.st_size < (off_t)len || st.st_size >= (off_t)sizeof buf)
        return false;
    ssize_t n = mini_read_full(fd, buf, sizeof buf - 1);
    if (n != st.st_size || memcmp(buf, key, len) != 0)
        return false;
    buf[n] = '\0';
    return strlen(buf) == (size_t)n && tests_parse(c, buf + len);
}

bool mini_caps_cache_path(const char *dir, const char *exe, char path[static MINI_CAPS_PATH_MAX])
{
    struct stat st;
    if (stat(exe, &st) < 0)
        return false;
    return (size_t)snprintf(path, MINI_CAPS_PATH_MAX, "%s/" MINI_CAPS_CACHE_PREFIX "%llx-%llx" MINI_CAPS_CACHE_SUFFIX,
                            dir, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino) < MINI_CAPS_PATH_MAX;
}

/* A cache file's name: this scheme's, or the single file of the releases
 * before it (MINI_CAPS_CACHE_OLD), which is only ever removed. */
static bool cache_name(const char *name, bool *old)
{
    size_t n = strlen(name), p = strlen(MINI_CAPS_CACHE_PREFIX), x = strlen(MINI_CAPS_CACHE_SUFFIX);
    *old = strcmp(name, MINI_CAPS_CACHE_OLD) == 0;
    return *old ||
        (n > p + x && strncmp(name, MINI_CAPS_CACHE_PREFIX, p) == 0 &&
         strcmp(name + n - x, MINI_CAPS_CACHE_SUFFIX) == 0);
}

struct aged {
    char name[256];
    struct timespec mtime;
};

static int newest_first(const void *a, const void *b)
{
    const struct aged *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Keep the MINI_CAPS_CACHE_KEEP most recently written caches in dir
 * (builds come and go; each leaves one) and remove the old scheme's.
 * Only regular files of the caller's are counted or removed. */
static void prune(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct aged *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        bool old;
        struct stat st;
        if (!cache_name(de->d_name, &old) || strlen(de->d_name) >= sizeof v->name ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (old) {
            unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        if (n == cap) {
            /* Bounded: a directory of ours with more than this many is
             * someone's experiment; the rest wait for the next prune. */
            if (cap >= 4096)
                break;
            struct aged *w = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
            if (!w)
                break;
            v = w;
        }
        copy_str(v[n].name, sizeof v[n].name, de->d_name);
        v[n++].mtime = st.st_mtim;
    }
    if (n > MINI_CAPS_CACHE_KEEP) {
        qsort(v, n, sizeof *v, newest_first);
        for (size_t i = MINI_CAPS_CACHE_KEEP; i < n; i++)
            unlinkat(dirfd(d), v[i].name, 0);
    }
    free(v);
    closedir(d);
}

int mini_caps_detect_cached(struct mini_caps *c, const char *dir, bool *hit, struct mini_err *e)
{
    *hit = false;
    if (mini_caps_detect_reads(c, e) < 0)
        return -1;
    char key[MINI_CAPS_CACHE_MAX], path[MINI_CAPS_PATH_MAX];
    int len = dir && dir_ok(dir) ? mini_caps_cache_key(c, "/proc/self/exe", key, MINI_CAPS_KEY_MAX) : -1;
    if (len > 0 && !mini_caps_cache_path(dir, "/proc/self/exe", path))
        len = -1;
    if (len > 0 && cache_matches(path, key, (size_t)len, c)) {
        /* Only its "done" answers stand in for a test: a refusal costs a
         * failing mkdir to check, and a forged one would take limits away. */
        mini_cgroups_test(c, true);
        mini_cgroups_conclude(c);
        mini_caps_set_children_all_ok(c);
        *hit = true;
        return 0;
    }
    mini_cgroups_test(c, false);
    mini_cgroups_conclude(c);
    mini_caps_detect_children(c);
    /* Only a full success of the process-creating probes is stored.
     * Failing to store it costs the next start the probes, nothing else. */
    struct mini_err ignored;
    int tlen = len > 0 ? tests_text(c, key + len, sizeof key - (size_t)len) : -1;
    if (tlen >= 0 && mini_caps_children_all_ok(c) &&
        mini_write_file_atomic(path, key, (size_t)(len + tlen), 0600, &ignored) == 0)
        prune(dir);
    return 0;
}

void mini_caps_cache_forget(const char *dir)
{
    char path[MINI_CAPS_PATH_MAX];
    if (dir && mini_caps_cache_path(dir, "/proc/self/exe", path))
        unlink(path);
}

int mini_caps_cache_text(const struct mini_caps *c, const char *exe, char *buf, size_t size)
{
    int len = mini_caps_cache_key(c, exe, buf, size);
    int tlen = len > 0 ? tests_text(c, buf + len, size - (size_t)len) : -1;
    return tlen < 0 ? -1 : len + tlen;
}
