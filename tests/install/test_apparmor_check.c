/* mini-sandbox check and the AppArmor restriction on unprivileged user
 * namespaces (sandbox/isolation/caps_probe.c: mini_caps_apparmor and its
 * remedy), with fake /proc and /sys roots: the sysctl absent, 0, 1, junk;
 * the profile loaded, not loaded, not readable; the remedy names the
 * profile file this install ships, and is empty where nothing is to do. */
#include "caps.h"
#include "check.h"
#include "mini/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static void probe(struct mini_caps *c, bool as_root)
{
    char proc[300], sys[300];
    snprintf(proc, sizeof proc, "%s/proc", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    memset(c, 0, sizeof *c);
    c->root = as_root;
    mini_caps_apparmor(c, proc, sys);
}

int main(void)
{
    snprintf(root, sizeof root, "%s/mini-aa.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root))
        return 2;
    struct mini_caps c;
    char rem[MINI_CAPS_TEXT_MAX];

    /* No such sysctl (a kernel without the restriction): nothing to do. */
    probe(&c, false);
    CHECK(c.apparmor_restrict_userns == -1);
    CHECK(c.apparmor_profile_loaded == -1);
    mini_caps_apparmor_remedy(&c, rem, sizeof rem);
    CHECK_STR(rem, "");

    /* The restriction on, the profile not loaded: the remedy names it. */
    put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n");
    put("sys/kernel/security/apparmor/profiles",
        "bwrap (unconfined)\nunprivileged_userns (enforce)\nmini-sandboxd-other (unconfined)\n");
    probe(&c, false);
    CHECK(c.apparmor_restrict_userns == 1);
    CHECK(c.apparmor_profile_loaded == 0);
    CHECK_MSG(strstr(c.apparmor_profile_file, "share/mini/apparmor/mini-sandboxd") != NULL, "%s",
              c.apparmor_profile_file);
    mini_caps_apparmor_remedy(&c, rem, sizeof rem);
    CHECK_MSG(strstr(rem, "AppArmor profile mini-sandboxd") && strstr(rem, c.apparmor_profile_file) &&
                  strstr(rem, "apparmor_parser -r /etc/apparmor.d/mini-sandboxd") &&
                  strstr(rem, "apparmor_restrict_unprivileged_userns=0"),
              "%s", rem);
    /* The remedy is whole (not cut by the buffer). */
    CHECK_MSG(strlen(rem) + 1 < sizeof rem, "%zu", strlen(rem));

    /* As root the restriction does not apply. */
    probe(&c, true);
    mini_caps_apparmor_remedy(&c, rem, sizeof rem);
    CHECK_STR(rem, "");

    /* Loaded: nothing to do. */
    put("sys/kernel/security/apparmor/profiles", "bwrap (unconfined)\nmini-sandboxd (unconfined)\n");
    probe(&c, false);
    CHECK(c.apparmor_profile_loaded == 1);
    mini_caps_apparmor_remedy(&c, rem, sizeof rem);
    CHECK_STR(rem, "");

    /* Not readable (no securityfs): cannot tell, the remedy still says how. */
    char p[512];
    snprintf(p, sizeof p, "%s/sys/kernel/security/apparmor/profiles", root);
    unlink(p);
    probe(&c, false);
    CHECK(c.apparmor_profile_loaded == -1);
    mini_caps_apparmor_remedy(&c, rem, sizeof rem);
    CHECK(strstr(rem, "AppArmor profile mini-sandboxd") != NULL);

    /* The sysctl off, or junk. */
    put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "0\n");
    probe(&c, false);
    CHECK(c.apparmor_restrict_userns == 0);
    put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "yes\n");
    probe(&c, false);
    CHECK(c.apparmor_restrict_userns == -1);
    put("proc/sys/kernel/apparmor_restrict_unprivileged_userns", "7\n");
    probe(&c, false);
    CHECK(c.apparmor_restrict_userns == -1);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return check_summary();
}
