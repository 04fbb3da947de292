/* mini-sandbox check (see cli_check.h). */
#include "cli_check.h"
#include "cli_util.h"
#include "caps.h"
#include "workspace.h"
#include "mini/cleanup.h"
#include "mini/profile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_OK = 0, CHECK_REFUSED = 1, CHECK_ERROR = 2 };
#define MAX_PROFILES 64

/* The workspace quota, as `check` describes it. */
#define WS_WATCH_TEXT                                                                               \
    "a profile's limits.disk_mb is watched by the daemon: it polls the filesystem while a command " \
    "runs and kills it once the session has added more"

static void check_usage(FILE *f)
{
    fprintf(f,
            "Usage: mini-sandbox check [--profile NAME|FILE] [--json]\n"
            "Probe the isolation this machine offers (namespaces, seccomp, Landlock,\n"
            "cgroups, overlayfs) and say, per profile, whether it runs in full, degraded\n"
            "(what is missing and what replaces it) or is refused (reason and remedy).\n\n"
            "  --profile NAME|FILE  assess only this profile (default: every built-in one)\n"
            "  --json               machine-readable output\n\n"
            "Exit status: 0 every profile listed can run, 1 one is refused, 2 error.\n");
}

static void row(const char *feature, const char *avail, const char *detail)
{
    printf("  %-26s %-10s %s\n", feature, avail, detail ? detail : "");
}

static const char *yes(bool b) { return b ? "yes" : "no"; }

/* The AppArmor restriction on unprivileged user namespaces (Ubuntu 24.04
 * and later) and the profile that lifts it for mini-sandboxd. */
static void print_apparmor(const struct mini_caps *c)
{
    char d[MINI_CAPS_TEXT_MAX + 64];
    if (c->apparmor_restrict_userns != 1) {
        row("AppArmor userns restriction", "no",
            c->apparmor_restrict_userns < 0 ? "kernel.apparmor_restrict_unprivileged_userns: no such sysctl"
                                            : "kernel.apparmor_restrict_unprivileged_userns=0");
        return;
    }
    snprintf(d, sizeof d, "kernel.apparmor_restrict_unprivileged_userns=1; profile " MINI_APPARMOR_PROFILE ": %s",
             c->apparmor_profile_loaded == 1       ? "loaded"
                 : c->apparmor_profile_loaded == 0 ? "not loaded"
                                                   : "cannot tell (the loaded profiles are not readable)");
    row("AppArmor userns restriction", "yes", d);
    char rem[MINI_CAPS_TEXT_MAX];
    mini_caps_apparmor_remedy(c, rem, sizeof rem);
    if (rem[0]) {
        snprintf(d, sizeof d, "remedy: %s", rem);
        row("", "", d);
    }
}

static void print_machine(const struct mini_caps *c)
{
    char d[2048];
    printf("Machine: kernel %s, running as %s (uid %u)%s%s\n\n", c->kernel, c->root ? "root" : "an unprivileged user",
           (unsigned)c->euid, c->in_container ? ", inside a container: " : "",
           c->in_container ? (c->container[0] ? c->container : "yes") : "");
    printf("  %-26s %-10s %s\n", "FEATURE", "AVAILABLE", "DETAIL");
    for (int i = 0; i < MINI_NS_COUNT; i++) {
        char name[40];
        snprintf(name, sizeof name, "%s namespace", mini_ns_name((enum mini_ns_index)i));
        d[0] = '\0';
        if (!c->ns[i].ok) {
            if (i == MINI_NS_USER)
                snprintf(d, sizeof d, "%s", c->userns_why);
            else if (c->root && !c->ns[MINI_NS_USER].ok)
                snprintf(d, sizeof d, "needs a user namespace here (alone, as root: %s)", yes(c->ns[i].ok_alone));
            else
                snprintf(d, sizeof d, "%s", strerror(c->ns[i].err));
        }
        row(name, yes(c->ns[i].ok), d);
    }
    row("all namespaces at once", yes(c->ns_all), c->ns_all ? "" : strerror(c->ns_all_err));
    if (!c->ns[MINI_NS_USER].ok && c->userns_remedy[0]) {
        snprintf(d, sizeof d, "remedy: %s", c->userns_remedy);
        row("", "", d);
    }

    print_apparmor(c);

    d[0] = '\0';
    if (c->seccomp) {
        size_t n = 0;
        n += (size_t)snprintf(d, sizeof d, "actions:");
        for (unsigned i = 0; i < MINI_SECACT_COUNT && n < sizeof d; i++)
            if (c->seccomp_actions & (1u << i))
                n += (size_t)snprintf(d + n, sizeof d - n, " %s", mini_seccomp_act_name(i));
        if (c->seccomp_mode_self == 2 && n < sizeof d)
            snprintf(d + n, sizeof d - n, "; this process is already filtered");
    } else {
        snprintf(d, sizeof d, "%s", strerror(c->seccomp_err ? c->seccomp_err : ENOSYS));
    }
    row("seccomp filter", yes(c->seccomp), d);
    row("no_new_privs", "yes", c->no_new_privs_self ? "already set on this process" : "");

    if (c->landlock_abi > 0)
        snprintf(d, sizeof d, "ABI %d", c->landlock_abi);
    else
        snprintf(d, sizeof d, "%s%s", strerror(c->landlock_err ? c->landlock_err : ENOSYS),
                 c->landlock_err == EOPNOTSUPP ? " (built in but not enabled: add landlock to lsm=)" : "");
    row("landlock", yes(c->landlock_abi > 0), d);

    row("cgroups", mini_cg_mode_name(c->cg_mode), c->cg_why);
    for (int i = 0; i < MINI_CGC_COUNT; i++) {
        if (!c->v1[i].mounted)
            continue;
        char name[40];
        snprintf(name, sizeof name, "  v1 %s", mini_cg_ctrl_name((enum mini_cg_ctrl)i));
        snprintf(d, sizeof d, "%s%s%s", c->v1[i].dir, c->v1[i].writable ? "" : ": ",
                 c->v1[i].writable ? "" : strerror(c->v1[i].err));
        row(name, c->v1[i].writable ? "writable" : "read-only", d);
    }
    if (c->v2_mounted) {
        snprintf(d, sizeof d, "%s: controllers \"%s\"%s%s", c->v2_dir, c->v2_controllers_text,
                 c->v2_writable ? "" : ", not writable", c->v2_kill ? ", cgroup.kill" : "");
        row("  v2", c->v2_delegated ? "delegated" : "no", d);
    } else {
        row("  v2", "no", "not mounted");
    }

    if (c->overlay_userns)
        d[0] = '\0';
    else
        snprintf(d, sizeof d, "failed at %s: %s", c->overlay_stage, strerror(c->overlay_err ? c->overlay_err : EINVAL));
    row("overlayfs in user ns", yes(c->overlay_userns), d);
    row("inside a container", c->in_container ? (c->container[0] ? c->container : "yes") : "no", c->container_hints);
    char why[256], d2[512];
    _cleanup_close_ int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cwd >= 0) {
        mini_ws_quota_probe(cwd, why, sizeof why);
        snprintf(d2, sizeof d2, "%s; %s", WS_WATCH_TEXT, why);
        row("workspace quota (cwd)", "yes", d2);
    }
}

/* What the profile's network gives a command, in one line. */
static void network_text(const struct mini_profile *p, char *buf, size_t size)
{
    if (p->network == MINI_NET_HOST) {
        snprintf(buf, size, "host: the host's network, everything it reaches");
        return;
    }
    if (p->network == MINI_NET_NONE) {
        snprintf(buf, size, "none: loopback only; a connection elsewhere fails at once (ENETUNREACH), no DNS resolver");
        return;
    }
    int n = snprintf(buf, size, "allowlist: an HTTP proxy on 127.0.0.1:%d (CONNECT and http:// URLs) for ",
                     MINI_NET_PROXY_PORT);
    for (size_t i = 0; i < p->n_net_allow && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%s", i ? ", " : "", p->net_allow[i]);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n,
                 "%s; private, loopback, link-local and the host's addresses only by an entry naming them; "
                 "a connection around the proxy fails at once (ENETUNREACH); no DNS resolver inside",
                 p->n_net_deny ? " (minus network.deny)" : "");
}

static void print_assessment(const char *name, const struct mini_assessment *a, const struct mini_profile *p)
{
    char net[1024];
    network_text(p, net, sizeof net);
    const char *st = a->status == MINI_ASSESS_FULL ? "FULL"
        : a->status == MINI_ASSESS_DEGRADED        ? "DEGRADED"
                                                   : "REFUSED";
    if (a->status == MINI_ASSESS_REFUSED) {
        printf("  %-12s %-9s %s\n", name, st, a->reason);
        printf("  %-12s %-9s remedy: %s\n", "", "", a->remedy);
        return;
    }
    printf("  %-12s %-9s %s\n", name, st, a->summary);
    for (size_t i = 0; i < a->n_items; i++)
        printf("  %-12s %-9s - %s -> %s\n", "", "", a->items[i].feature, a->items[i].replacement);
    printf("  %-12s %-9s network %s\n", "", "", net);
}

static struct mini_profile *load_one(const char *arg, struct mini_err *e)
{
    size_t n = strlen(arg);
    if (strchr(arg, '/') || (n > 5 && strcmp(arg + n - 5, ".json") == 0))
        return mini_profile_load_file(arg, e);
    return mini_profile_load_builtin(mini_profile_default_dir(), arg, e);
}

int mini_cli_check(int argc, char **argv)
{
    static const struct option opts[] = {
        { "profile", required_argument, NULL, 'p' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *only = NULL;
    bool json = false;
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p': only = optarg; break;
        case 'j': json = true; break;
        case 'h': check_usage(stdout); return CHECK_OK;
        default: mini_cli_getopt_error("check", ch, optopt, argv, optind); return CHECK_ERROR;
        }
    }
    if (optind < argc) {
        mini_cli_usage_error("check", "unexpected argument \"%s\"", argv[optind]);
        return CHECK_ERROR;
    }

    struct mini_profile *profiles[MAX_PROFILES];
    size_t np = 0;
    struct mini_err e;
    int rc = CHECK_OK;
    if (only) {
        if (!(profiles[0] = load_one(only, &e))) {
            fprintf(stderr, "mini-sandbox: check: %s\n", e.msg);
            return CHECK_ERROR;
        }
        np = 1;
    } else {
        char *names[MAX_PROFILES];
        size_t nn = 0;
        const char *dir = mini_profile_default_dir();
        if (mini_profile_list(dir, names, MAX_PROFILES, &nn) < 0) {
            fprintf(stderr, "mini-sandbox: check: listing profiles in %s: %s\n", dir, strerror(errno));
            return CHECK_ERROR;
        }
        for (size_t i = 0; i < nn; i++) {
            struct mini_profile *p = mini_profile_load_builtin(dir, names[i], &e);
            if (p)
                profiles[np++] = p;
            else {
                fprintf(stderr, "mini-sandbox: check: %s\n", e.msg);
                rc = CHECK_ERROR;
            }
            free(names[i]);
        }
    }

    struct mini_caps caps;
    if (mini_caps_detect(&caps, &e) < 0) {
        fprintf(stderr, "mini-sandbox: check: %s\n", e.msg);
        rc = CHECK_ERROR;
        goto out;
    }
    bool refused = false;
    cJSON *root = NULL, *jprof = NULL;
    if (json) {
        root = cJSON_CreateObject();
        cJSON *m = mini_caps_to_json(&caps);
        char why[256];
        _cleanup_close_ int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        cJSON *q = m && cwd >= 0 ? cJSON_AddObjectToObject(m, "workspace_quota") : NULL;
        if (q) {
            cJSON_AddBoolToObject(q, "enforced", true);
            cJSON_AddStringToObject(q, "mechanism", "watch");
            cJSON_AddBoolToObject(q, "kernel_project_quota", mini_ws_quota_probe(cwd, why, sizeof why));
            cJSON_AddStringToObject(q, "reason", WS_WATCH_TEXT);
            cJSON_AddStringToObject(q, "kernel", why);
        }
        if (!root || !m || !cJSON_AddItemToObject(root, "machine", m) ||
            !(jprof = cJSON_AddObjectToObject(root, "profiles"))) {
            cJSON_Delete(m);
            cJSON_Delete(root);
            fprintf(stderr, "mini-sandbox: check: out of memory\n");
            rc = CHECK_ERROR;
            goto out;
        }
    } else {
        print_machine(&caps);
        printf("\n  %-12s %-9s %s\n", "PROFILE", "STATUS", "DETAIL");
    }
    for (size_t i = 0; i < np; i++) {
        struct mini_assessment a;
        if (mini_caps_assess(&caps, profiles[i], &a) == MINI_ASSESS_REFUSED)
            refused = true;
        if (json) {
            cJSON *aj = mini_assessment_to_json(&a);
            char net[1024];
            network_text(profiles[i], net, sizeof net);
            if (!aj || !cJSON_AddStringToObject(aj, "network", net) ||
                !cJSON_AddItemToObject(jprof, profiles[i]->name, aj)) {
                cJSON_Delete(aj);
                rc = CHECK_ERROR;
            }
        } else {
            print_assessment(profiles[i]->name, &a, profiles[i]);
        }
    }
    if (json) {
        char *s = cJSON_Print(root);
        if (s)
            printf("%s\n", s);
        else
            rc = CHECK_ERROR;
        free(s);
        cJSON_Delete(root);
    }
    fflush(stdout);
    if (rc == CHECK_OK && refused)
        rc = CHECK_REFUSED;
out:
    for (size_t i = 0; i < np; i++)
        mini_profile_free(profiles[i]);
    return rc;
}
