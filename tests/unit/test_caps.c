/* Capability detection (sandbox/isolation/caps_probe.c): the probe against independent
 * ground truth taken here with plain system calls, its JSON, and the
 * full / degraded / refused decision on real and on synthetic machines.
 * argv[1]: the source tree's profiles/ directory. */
#include "check.h"
#include "caps.h"
#include "mini/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

static const char *dir;

static struct mini_profile *load(const char *name)
{
    struct mini_err e;
    struct mini_profile *p = mini_profile_load_builtin(dir, name, &e);
    if (!p) {
        fprintf(stderr, "loading %s: %s\n", name, e.msg);
        exit(1);
    }
    return p;
}

static struct mini_profile *from_json(const char *text)
{
    struct mini_err e;
    cJSON *j = cJSON_Parse(text);
    struct mini_profile *p = j ? mini_profile_from_json(j, "test.json", &e) : NULL;
    cJSON_Delete(j);
    if (!p) {
        fprintf(stderr, "profile %s: %s\n", text, j ? e.msg : "bad JSON");
        exit(1);
    }
    return p;
}

/* Ground truth: can this process create a user namespace (and use it)? */
static bool truth_userns(void)
{
    uid_t uid = geteuid();
    pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
            _exit(1);
        char map[64];
        snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
        int fd = open("/proc/self/uid_map", O_WRONLY);
        _exit(fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map) ? 0 : 1);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Ground truth: a test cgroup under our own v1 cgroup of this controller. */
static int truth_v1_writable(const char *ctrl)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024], own[900] = "";
    bool found = false;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b)
            continue;
        *b = '\0';
        char *ctrls = a + 1;
        for (char *t = strtok(ctrls, ","); t; t = strtok(NULL, ","))
            if (strcmp(t, ctrl) == 0) {
                snprintf(own, sizeof own, "%s", b + 1);
                found = true;
            }
    }
    if (f)
        fclose(f);
    char path[1200];
    snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s", ctrl, strcmp(own, "/") == 0 ? "" : own);
    struct stat st;
    if (!found || stat(path, &st) < 0)
        return -1; /* unknown layout: no ground truth */
    snprintf(path + strlen(path), sizeof path - strlen(path), "/truth-%d", (int)getpid());
    if (mkdir(path, 0755) < 0)
        return 0;
    rmdir(path);
    return 1;
}

static bool has_item(const struct mini_assessment *a, const char *feature)
{
    for (size_t i = 0; i < a->n_items; i++)
        if (strcmp(a->items[i].feature, feature) == 0)
            return true;
    return false;
}

static void test_real(void)
{
    struct mini_caps c;
    struct mini_err e;
    CHECK(mini_caps_detect(&c, &e) == 0);
    CHECK(c.euid == geteuid());
    CHECK(c.root == (geteuid() == 0));
    CHECK(c.kernel[0] != '\0');

    bool userns = truth_userns();
    CHECK_MSG(c.ns[MINI_NS_USER].ok == userns, "user ns: detected %d, truth %d (%s)", c.ns[MINI_NS_USER].ok, userns,
              c.userns_why);
    if (userns) {
        CHECK(c.ns[MINI_NS_MOUNT].ok && c.ns[MINI_NS_PID].ok && c.ns[MINI_NS_NET].ok);
        CHECK(c.ns_all);
        CHECK(c.userns_why[0] == '\0');
    } else {
        CHECK(c.userns_why[0] != '\0' && c.userns_remedy[0] != '\0');
    }

    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U);
    CHECK_MSG(c.landlock_abi == (abi > 0 ? (int)abi : 0), "landlock: detected %d, syscall %ld", c.landlock_abi, abi);
    if (abi > 0)
        CHECK(c.landlock_abi >= 1);

    /* seccomp is needed by everything here; any Linux CI kernel has it. */
    CHECK(c.seccomp);
    CHECK((c.seccomp_actions & (MINI_SECACT_ERRNO | MINI_SECACT_KILL_PROCESS | MINI_SECACT_ALLOW)) ==
          (MINI_SECACT_ERRNO | MINI_SECACT_KILL_PROCESS | MINI_SECACT_ALLOW));

    static const struct {
        const char *name;
        enum mini_cg_ctrl c;
    } v1[] = {
        { "memory", MINI_CGC_MEMORY },
        { "pids", MINI_CGC_PIDS },
    };
    for (size_t i = 0; i < 2; i++) {
        int truth = truth_v1_writable(v1[i].name);
        if (truth < 0)
            continue;
        CHECK_MSG(c.v1[v1[i].c].mounted, "v1 %s should be found", v1[i].name);
        CHECK_MSG(c.v1[v1[i].c].writable == (truth == 1), "v1 %s writable: detected %d, truth %d", v1[i].name,
                  c.v1[v1[i].c].writable, truth);
        if (geteuid() == 0 && truth == 1)
            CHECK(c.cg_mode != MINI_CG_NONE);
    }
    if (c.cg_mode == MINI_CG_NONE)
        CHECK(c.cg_why[0] != '\0');
    if (c.cg_mode == MINI_CG_V2)
        CHECK(c.v2_delegated);

    unsigned f = mini_caps_features(&c);
    CHECK(!!(f & MINI_FEAT_USER_NS) == userns);
    CHECK(!!(f & MINI_FEAT_LANDLOCK) == (abi > 0));
    CHECK(!!(f & MINI_FEAT_CGROUPS) == (c.cg_mode != MINI_CG_NONE));
    CHECK(!!(f & MINI_FEAT_OVERLAY) == c.overlay_userns);
    if (!userns)
        CHECK(!c.overlay_userns);

    cJSON *j = mini_caps_to_json(&c);
    CHECK(j != NULL);
    cJSON *ns = cJSON_GetObjectItemCaseSensitive(j, "namespaces");
    cJSON *user = cJSON_GetObjectItemCaseSensitive(ns, "user");
    CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(user, "available")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(user, "available")) == userns);
    cJSON *ll = cJSON_GetObjectItemCaseSensitive(j, "landlock");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ll, "abi")) == c.landlock_abi);
    cJSON *cg = cJSON_GetObjectItemCaseSensitive(j, "cgroups");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cg, "mode")), mini_cg_mode_name(c.cg_mode));
    cJSON *feats = cJSON_GetObjectItemCaseSensitive(j, "features");
    int nf = 0;
    for (unsigned i = 0; i < MINI_FEAT_COUNT; i++)
        nf += !!(f & (1u << i));
    CHECK(cJSON_GetArraySize(feats) == nf);
    CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(j, "rootless")));
    cJSON_Delete(j);

    /* Every built-in profile gets a coherent verdict on this machine. */
    const char *names[] = { "strict", "standard", "permissive" };
    for (size_t i = 0; i < 3; i++) {
        struct mini_profile *p = load(names[i]);
        struct mini_assessment a;
        enum mini_assess_status s = mini_caps_assess(&c, p, &a);
        CHECK(s == a.status);
        CHECK(a.summary[0] != '\0');
        if (userns && c.ns_all)
            CHECK_MSG(s != MINI_ASSESS_REFUSED, "%s refused: %s", names[i], a.reason);
        if (s == MINI_ASSESS_FULL)
            CHECK(a.n_items == 0 && a.missing == 0);
        if (s != MINI_ASSESS_REFUSED && a.path == MINI_PATH_NAMESPACES)
            CHECK((a.namespaces & (MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS)) ==
                  (MINI_FEAT_USER_NS | MINI_FEAT_MOUNT_NS | MINI_FEAT_PID_NS));
        printf("%-10s %s\n", names[i], a.summary);
        mini_profile_free(p);
    }
}

/* A machine with everything, then with parts taken away. */
static void full_machine(struct mini_caps *c)
{
    memset(c, 0, sizeof *c);
    c->euid = 1000;
    snprintf(c->kernel, sizeof c->kernel, "6.8.0-test");
    for (int i = 0; i < MINI_NS_COUNT; i++)
        c->ns[i].ok = true;
    c->ns_all = true;
    c->max_user_namespaces = 15000;
    c->unprivileged_userns_clone = -1;
    c->apparmor_restrict_userns = -1;
    c->seccomp = true;
    c->seccomp_actions = 0xff;
    c->landlock_abi = 7;
    c->v2_mounted = true;
    snprintf(c->v2_dir, sizeof c->v2_dir, "/sys/fs/cgroup/user.slice/test.scope");
    c->v2_controllers = (1u << MINI_CGC_MEMORY) | (1u << MINI_CGC_PIDS) | (1u << MINI_CGC_CPU);
    c->v2_writable = c->v2_delegated = c->v2_kill = true;
    c->cg_mode = MINI_CG_V2;
    snprintf(c->cg_why, sizeof c->cg_why, "cgroup v2: delegated");
    c->overlay_userns = true;
}

static void no_userns(struct mini_caps *c)
{
    for (int i = 0; i < MINI_NS_COUNT; i++)
        c->ns[i] = (struct mini_caps_ns){ .ok = false, .err = ENOSPC };
    c->ns_all = false;
    c->ns_all_err = ENOSPC;
    c->max_user_namespaces = 0;
    c->overlay_userns = false;
    snprintf(c->userns_why, sizeof c->userns_why,
             "creating a user namespace failed (No space left on device): "
             "user.max_user_namespaces is 0");
    snprintf(c->userns_remedy, sizeof c->userns_remedy, "sysctl -w user.max_user_namespaces=15000");
}

static void test_synthetic(void)
{
    struct mini_profile *strict = load("strict"), *standard = load("standard"), *permissive = load("permissive");
    struct mini_caps c;
    struct mini_assessment a;
    struct mini_err e;

    full_machine(&c);
    CHECK(mini_caps_features(&c) == ((1u << MINI_FEAT_COUNT) - 1));
    CHECK(mini_caps_assess(&c, strict, &a) == MINI_ASSESS_FULL);
    CHECK(a.path == MINI_PATH_NAMESPACES && a.cgroups && a.n_items == 0);
    CHECK(strstr(a.summary, "full isolation") != NULL);
    CHECK(mini_assessment_check(&a, strict->name, &e) == 0);
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_FULL);
    CHECK(a.features & MINI_FEAT_OVERLAY);
    CHECK(mini_caps_assess(&c, permissive, &a) == MINI_ASSESS_FULL);
    CHECK(!(a.namespaces & MINI_FEAT_NET_NS)); /* host network: no netns asked for */

    /* No user namespaces: strict refuses with the remedy, the others run
     * on the Landlock path and list what replaces each layer. */
    no_userns(&c);
    CHECK(!(mini_caps_features(&c) & MINI_FEAT_USER_NS));
    CHECK(mini_caps_assess(&c, strict, &a) == MINI_ASSESS_REFUSED);
    CHECK(strstr(a.reason, "user_ns") != NULL);
    CHECK(strstr(a.reason, "max_user_namespaces") != NULL);
    CHECK_STR(a.remedy, "sysctl -w user.max_user_namespaces=15000");
    CHECK(mini_assessment_check(&a, strict->name, &e) == -1);
    CHECK(e.code == MINI_E_ISOLATION_UNAVAILABLE);
    CHECK(strstr(e.msg, "profile strict: requires") != NULL && strstr(e.msg, "remedy: sysctl") != NULL);
    cJSON *j = mini_assessment_to_json(&a);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "status")), "refused");
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "remedy")));
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "path")));
    cJSON_Delete(j);

    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_DEGRADED);
    CHECK(a.path == MINI_PATH_LANDLOCK && a.landlock_abi == 7 && a.namespaces == 0);
    CHECK(a.features & MINI_FEAT_LANDLOCK && a.features & MINI_FEAT_SECCOMP);
    CHECK(a.missing & MINI_FEAT_USER_NS && a.missing & MINI_FEAT_OVERLAY);
    CHECK(has_item(&a, "user_ns") && has_item(&a, "mount_ns") && has_item(&a, "pid_ns") && has_item(&a, "net_ns"));
    CHECK(has_item(&a, "ipc_ns") && has_item(&a, "uts_ns") && has_item(&a, "cgroup_ns"));
    CHECK(has_item(&a, "tmpfs") && has_item(&a, "hide") && has_item(&a, "overlay"));
    CHECK(!has_item(&a, "signals")); /* ABI 7 scopes signals */
    CHECK(strstr(a.summary, "Landlock ABI 7") != NULL && strstr(a.summary, "process-group kill") != NULL);
    j = mini_assessment_to_json(&a);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "status")), "degraded");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "path")), "landlock");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "missing")) == (int)a.n_items);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "reason")));
    cJSON_Delete(j);

    CHECK(mini_caps_assess(&c, permissive, &a) == MINI_ASSESS_DEGRADED);
    CHECK(a.path == MINI_PATH_LANDLOCK);
    CHECK(!has_item(&a, "net_ns")); /* it asked for the host network */
    CHECK(has_item(&a, "unix_sockets") && has_item(&a, "hide"));

    /* Older Landlock: signals are listed as unconfined. */
    c.landlock_abi = 3;
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_DEGRADED);
    CHECK(has_item(&a, "signals"));

    /* No Landlock either: nothing can confine it. */
    c.landlock_abi = 0;
    c.landlock_err = EOPNOTSUPP;
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_REFUSED);
    CHECK(strstr(a.reason, "no Landlock") != NULL);
    CHECK(strstr(a.remedy, "max_user_namespaces") != NULL && strstr(a.remedy, "Landlock") != NULL);

    /* No seccomp: refused (standard requires it; permissive cannot run
     * without the filter spawn always installs). */
    full_machine(&c);
    c.seccomp = false;
    c.seccomp_err = EINVAL;
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_REFUSED);
    CHECK(strstr(a.reason, "seccomp") != NULL && strstr(a.remedy, "CONFIG_SECCOMP_FILTER") != NULL);
    CHECK(mini_caps_assess(&c, permissive, &a) == MINI_ASSESS_REFUSED);

    /* No cgroups: limits fall back to rlimits, which is a degradation. */
    full_machine(&c);
    c.cg_mode = MINI_CG_NONE;
    c.v2_delegated = false;
    snprintf(c.cg_why, sizeof c.cg_why, "cgroup v2: not delegated");
    CHECK(mini_caps_assess(&c, strict, &a) == MINI_ASSESS_DEGRADED);
    CHECK(a.path == MINI_PATH_NAMESPACES && !a.cgroups && has_item(&a, "cgroups"));
    CHECK(a.missing == MINI_FEAT_CGROUPS);
    CHECK(strstr(a.summary, "rlimits") != NULL);
    struct mini_profile *req = from_json("{\"require\": [\"cgroups\"]}");
    CHECK(mini_caps_assess(&c, req, &a) == MINI_ASSESS_REFUSED);
    CHECK(strstr(a.reason, "cgroups") != NULL && strstr(a.remedy, "Delegate=yes") != NULL);
    mini_profile_free(req);

    /* Without overlayfs in a user namespace, standard keeps a read-only root. */
    full_machine(&c);
    c.overlay_userns = false;
    c.overlay_err = EINVAL;
    snprintf(c.overlay_stage, sizeof c.overlay_stage, "overlay");
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_DEGRADED);
    CHECK(has_item(&a, "overlay") && a.missing == MINI_FEAT_OVERLAY);
    CHECK(mini_caps_assess(&c, strict, &a) == MINI_ASSESS_FULL); /* strict has no overlay */
    req = from_json("{\"filesystem\": {\"overlay_root\": true}, \"require\": [\"overlay\"]}");
    CHECK(mini_caps_assess(&c, req, &a) == MINI_ASSESS_REFUSED);
    mini_profile_free(req);

    /* One optional namespace missing: left out of the clone, listed. */
    full_machine(&c);
    c.ns[MINI_NS_CGROUP] = (struct mini_caps_ns){ false, EINVAL, false };
    CHECK(mini_caps_assess(&c, standard, &a) == MINI_ASSESS_DEGRADED);
    CHECK(a.path == MINI_PATH_NAMESPACES && !(a.namespaces & MINI_FEAT_CGROUP_NS) && has_item(&a, "cgroup_ns"));
    CHECK(mini_caps_assess(&c, strict, &a) == MINI_ASSESS_DEGRADED); /* strict does not require cgroup_ns */

    /* A profile asking for Landlock gets it on the namespace path too. */
    full_machine(&c);
    req = from_json("{\"require\": [\"landlock\"]}");
    CHECK(mini_caps_assess(&c, req, &a) == MINI_ASSESS_FULL);
    CHECK(a.features & MINI_FEAT_LANDLOCK);
    c.landlock_abi = 0;
    c.landlock_err = ENOSYS;
    CHECK(mini_caps_assess(&c, req, &a) == MINI_ASSESS_REFUSED);
    CHECK(strstr(a.remedy, "CONFIG_SECURITY_LANDLOCK") != NULL);
    mini_profile_free(req);

    /* The machine as JSON says what was set. */
    full_machine(&c);
    no_userns(&c);
    j = mini_caps_to_json(&c);
    cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "user_ns_unavailable");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "remedy")), c.userns_remedy);
    cJSON *sy = cJSON_GetObjectItemCaseSensitive(j, "sysctl");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sy, "user.max_user_namespaces")) == 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(sy, "kernel.unprivileged_userns_clone")));
    cJSON_Delete(j);

    CHECK_STR(mini_assess_status_name(MINI_ASSESS_DEGRADED), "degraded");
    CHECK_STR(mini_exec_path_name(MINI_PATH_LANDLOCK), "landlock");
    CHECK_STR(mini_cg_mode_name(MINI_CG_V1), "v1");
    CHECK_STR(mini_ns_name(MINI_NS_CGROUP), "cgroup");
    CHECK_STR(mini_seccomp_act_name(4), "user_notif");
    mini_profile_free(strict);
    mini_profile_free(standard);
    mini_profile_free(permissive);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROFILE_DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    test_real();
    test_synthetic();
    return check_summary();
}
