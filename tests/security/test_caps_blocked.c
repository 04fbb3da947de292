/* Capability detection where user namespaces are blocked, re-run in a
 * child process that is blocked the way real runners are:
 *   (a) a seccomp filter refusing clone/unshare with CLONE_NEWUSER (EPERM)
 *       and clone3 (ENOSYS), as Docker's default profile does;
 *   (b) inside a user namespace whose user.max_user_namespaces is 0.
 * Each child reports what mini_caps_detect() and mini_caps_assess() said;
 * the parent checks: user namespaces unavailable with the right reason and
 * remedy, strict REFUSED with a remedy, standard DEGRADED on the Landlock
 * path listing what replaces the namespaces (or, without Landlock,
 * REFUSED naming it).  argv[1]: the source tree's profiles/ directory.
 * Skips (77) when user namespaces are unavailable to begin with. */
#include "check.h"
#include "caps.h"
#include "mini/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct report {
    int ran; /* 1: detection ran; 0: setup failed (skip) */
    char setup_error[1200];
    int user_ok;
    int user_err;
    int seccomp_mode_self;
    long max_user_namespaces;
    int landlock_abi;
    int seccomp_ok;
    unsigned features;
    char why[MINI_CAPS_TEXT_MAX];
    char remedy[MINI_CAPS_TEXT_MAX];
    int strict_status;
    char strict_reason[MINI_CAPS_TEXT_MAX];
    char strict_remedy[MINI_CAPS_TEXT_MAX];
    int standard_status;
    int standard_path;
    char standard_items[600]; /* "user_ns,mount_ns,..." */
    char standard_summary[MINI_CAPS_TEXT_MAX];
    char standard_remedy[MINI_CAPS_TEXT_MAX];
    int permissive_status;
};

static const char *dir;

static void detect_and_report(int fd, struct report *r)
{
    struct mini_caps c;
    struct mini_err e;
    if (mini_caps_detect(&c, &e) < 0) {
        snprintf(r->setup_error, sizeof r->setup_error, "detect: %s", e.msg);
        goto out;
    }
    r->ran = 1;
    r->user_ok = c.ns[MINI_NS_USER].ok;
    r->user_err = c.ns[MINI_NS_USER].err;
    r->seccomp_mode_self = c.seccomp_mode_self;
    r->max_user_namespaces = c.max_user_namespaces;
    r->landlock_abi = c.landlock_abi;
    r->seccomp_ok = c.seccomp;
    r->features = mini_caps_features(&c);
    snprintf(r->why, sizeof r->why, "%s", c.userns_why);
    snprintf(r->remedy, sizeof r->remedy, "%s", c.userns_remedy);
    const char *names[] = { "strict", "standard", "permissive" };
    for (int i = 0; i < 3; i++) {
        struct mini_profile *p = mini_profile_load_builtin(dir, names[i], &e);
        if (!p) {
            snprintf(r->setup_error, sizeof r->setup_error, "profile %s: %s", names[i], e.msg);
            r->ran = 0;
            goto out;
        }
        struct mini_assessment a;
        int s = (int)mini_caps_assess(&c, p, &a);
        if (i == 0) {
            r->strict_status = s;
            snprintf(r->strict_reason, sizeof r->strict_reason, "%s", a.reason);
            snprintf(r->strict_remedy, sizeof r->strict_remedy, "%s", a.remedy);
        } else if (i == 1) {
            r->standard_status = s;
            r->standard_path = (int)a.path;
            snprintf(r->standard_summary, sizeof r->standard_summary, "%s", a.summary);
            snprintf(r->standard_remedy, sizeof r->standard_remedy, "%s", a.remedy);
            for (size_t k = 0; k < a.n_items; k++) {
                size_t l = strlen(r->standard_items);
                snprintf(r->standard_items + l, sizeof r->standard_items - l, "%s,", a.items[k].feature);
            }
        } else {
            r->permissive_status = s;
        }
        mini_profile_free(p);
    }
out:
    if (write(fd, r, sizeof *r) != (ssize_t)sizeof *r)
        _exit(3);
}

/* (a) Docker-style: clone/unshare with CLONE_NEWUSER -> EPERM, clone3 -> ENOSYS. */
static void child_seccomp(int fd)
{
    struct report r = { 0 };
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = ctx ? 0 : -ENOMEM;
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
#if defined(__s390__) || defined(__s390x__)
                              SCMP_A1(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#else
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
#endif
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (rc == 0)
        rc = seccomp_load(ctx);
    if (ctx)
        seccomp_release(ctx);
    if (rc < 0) {
        snprintf(r.setup_error, sizeof r.setup_error, "seccomp: %s", strerror(-rc));
        if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
            _exit(3);
        _exit(0);
    }
    /* The filter really blocks it. */
    if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM) {
        snprintf(r.setup_error, sizeof r.setup_error, "the filter did not block unshare: %s", strerror(errno));
        if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
            _exit(3);
        _exit(0);
    }
    detect_and_report(fd, &r);
    _exit(0);
}

/* (b) a user namespace in which no further user namespace may be made. */
static void child_maxns(int fd)
{
    struct report r = { 0 };
    char map[64];
    uid_t uid = geteuid();
    gid_t gid = getegid();
    const char *stage = "unshare";
    if (unshare(CLONE_NEWUSER) < 0)
        goto fail;
    stage = "uid_map";
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (check_write_text("/proc/self/uid_map", map) < 0)
        goto fail;
    stage = "setgroups";
    if (check_write_text("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
        goto fail;
    stage = "gid_map";
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    if (check_write_text("/proc/self/gid_map", map) < 0)
        goto fail;
    stage = "max_user_namespaces";
    if (check_write_text("/proc/sys/user/max_user_namespaces", "0\n") < 0)
        goto fail;
    detect_and_report(fd, &r);
    _exit(0);
fail:
    snprintf(r.setup_error, sizeof r.setup_error, "%s: %s", stage, strerror(errno));
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(3);
    _exit(0);
}

static int run(void (*fn)(int), struct report *r)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        fn(p[1]);
        _exit(0);
    }
    close(p[1]);
    ssize_t n = read(p[0], r, sizeof *r);
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return n == (ssize_t)sizeof *r ? 0 : -1;
}

static void check_blocked(const char *what, const struct report *r, const char *why_needle, const char *remedy_needle)
{
    printf("%s: user ns %s (%s)\n  why: %s\n  remedy: %s\n  strict: %s; standard: %s\n", what,
           r->user_ok ? "available" : "unavailable", strerror(r->user_err), r->why, r->remedy,
           mini_assess_status_name((enum mini_assess_status)r->strict_status), r->standard_summary);
    CHECK_MSG(!r->user_ok, "%s: user namespaces should be unavailable", what);
    CHECK(!(r->features & MINI_FEAT_USER_NS));
    CHECK(!(r->features & (MINI_FEAT_PID_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_OVERLAY)));
    CHECK_MSG(strstr(r->why, why_needle) != NULL, "%s: reason \"%s\" lacks \"%s\"", what, r->why, why_needle);
    CHECK_MSG(strstr(r->remedy, remedy_needle) != NULL, "%s: remedy \"%s\" lacks \"%s\"", what, r->remedy,
              remedy_needle);
    CHECK(r->seccomp_ok);

    CHECK(r->strict_status == MINI_ASSESS_REFUSED);
    CHECK(strstr(r->strict_reason, "user_ns") != NULL);
    CHECK_MSG(strstr(r->strict_remedy, remedy_needle) != NULL, "%s: strict's remedy \"%s\"", what, r->strict_remedy);
    if (r->landlock_abi > 0) {
        CHECK(r->standard_status == MINI_ASSESS_DEGRADED);
        CHECK(r->standard_path == MINI_PATH_LANDLOCK);
        CHECK(strstr(r->standard_items, "user_ns,") && strstr(r->standard_items, "mount_ns,") &&
              strstr(r->standard_items, "pid_ns,") && strstr(r->standard_items, "net_ns,"));
        CHECK(strstr(r->standard_summary, "Landlock") != NULL);
        CHECK(r->permissive_status == MINI_ASSESS_DEGRADED);
    } else {
        CHECK(r->standard_status == MINI_ASSESS_REFUSED);
        CHECK(strstr(r->standard_remedy, "Landlock") != NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    struct mini_caps c;
    struct mini_err e;
    if (mini_caps_detect(&c, &e) < 0) {
        fprintf(stderr, "detect: %s\n", e.msg);
        return 1;
    }
    if (!c.ns[MINI_NS_USER].ok) {
        printf("SKIP: user namespaces are unavailable here already (%s)\n", c.userns_why);
        return 77;
    }

    struct report r;
    int ran = 0;
    memset(&r, 0, sizeof r);
    CHECK(run(child_seccomp, &r) == 0);
    if (r.ran) {
        ran++;
        CHECK(r.seccomp_mode_self == 2);
        CHECK(r.user_err == ENOSYS || r.user_err == EPERM);
        check_blocked("seccomp filter", &r, "seccomp filter", "seccomp");
    } else {
        printf("seccomp case not run: %s\n", r.setup_error);
    }

    memset(&r, 0, sizeof r);
    CHECK(run(child_maxns, &r) == 0);
    if (r.ran) {
        ran++;
        CHECK(r.max_user_namespaces == 0);
        CHECK(r.user_err == ENOSPC);
        check_blocked("max_user_namespaces=0", &r, "user.max_user_namespaces is 0",
                      "sysctl -w user.max_user_namespaces");
    } else {
        printf("max_user_namespaces case not run: %s\n", r.setup_error);
    }
    if (!ran) {
        printf("SKIP: neither way of blocking user namespaces could be set up\n");
        return 77;
    }
    return check_summary();
}
