/* mini_rootfs_template_fits (container/rootfs.c): which profiles' sandboxes
 * may clone a template of their root.  A template covers hidden paths
 * before the mounts each sandbox makes for itself, a sandbox building its
 * own root after them; every case where that would differ must be
 * refused, and the built-in strict profile (and mini's usual secrets)
 * must fit. */
#include "check.h"
#include "mini/profile.h"
#include "rootfs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A profile with tmpfs /tmp, the given extra JSON in "filesystem". */
static struct mini_profile *profile(const char *fs_extra)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"filesystem\": {\"binds\": [\"/usr\", \"/etc\"], "
             "\"tmpfs\": [{\"path\": \"/tmp\", \"size_mb\": 8, \"mode\": \"1777\"}]%s%s}}",
             *fs_extra ? ", " : "", fs_extra);
    cJSON *v = cJSON_Parse(json);
    if (!v) {
        fprintf(stderr, "test JSON does not parse: %s\n", json);
        abort();
    }
    struct mini_err e;
    mini_err_clear(&e);
    struct mini_profile *p = mini_profile_from_json(v, "t.json", &e);
    cJSON_Delete(v);
    if (!p) {
        fprintf(stderr, "profile refused: %s (%s)\n", e.msg, json);
        abort();
    }
    return p;
}

static bool fits(const char *fs_extra)
{
    struct mini_profile *p = profile(fs_extra);
    bool r = mini_rootfs_template_fits(p);
    mini_profile_free(p);
    return r;
}

int main(int argc, char **argv)
{
    /* The built-in strict profile fits. */
    if (argc > 1) {
        char path[4096];
        snprintf(path, sizeof path, "%s/strict.json", argv[1]);
        struct mini_err e;
        mini_err_clear(&e);
        struct mini_profile *p = mini_profile_load_file(path, &e);
        CHECK_MSG(p != NULL, "%s", e.msg);
        if (p) {
            CHECK(mini_rootfs_template_fits(p));
            mini_profile_free(p);
        }
    }
    CHECK(fits(""));
    CHECK(fits("\"hide\": [\"/etc/shadow\", \"/etc/ssh\", \"/home/u/.config/mini\"]"));
    /* In a tmpfs of the sandbox's own: both find nothing there. */
    CHECK(fits("\"hide\": [\"/tmp/u/.config/mini/.env\"]"));
    /* /dev's nodes are in the template, covered after them in both. */
    CHECK(fits("\"hide\": [\"/dev/tty\"]"));
    /* Refused: in or above a mount each sandbox makes. */
    CHECK(!fits("\"hide\": [\"/proc/kcore\"]"));
    CHECK(!fits("\"hide\": [\"/proc\"]"));
    CHECK(!fits("\"hide\": [\"/dev/pts\"]"));
    CHECK(!fits("\"hide\": [\"/dev/shm/x\"]"));
    CHECK(!fits("\"hide\": [\"/dev\"]"));
    CHECK(!fits("\"hide\": [\"/tmp\"]"));
    CHECK(!fits("\"hide\": [\"/etc/ok\", \"/proc/self\"]"));
    /* Not a prefix that only looks like one. */
    CHECK(fits("\"hide\": [\"/procfoo\", \"/dev/ptsx\", \"/tmpx\"]"));
    /* As the host resolves it: a symlink into /proc. */
    char dir[] = "/tmp/mini-fits.XXXXXX", link[64], json[256];
    bool made = mkdtemp(dir) != NULL;
    CHECK_MSG(made, "mkdtemp: %s", strerror(errno));
    if (made) {
        snprintf(link, sizeof link, "%s/l", dir);
        bool linked = symlink("/proc/self", link) == 0;
        CHECK_MSG(linked, "symlink: %s", strerror(errno));
        if (linked) {
            snprintf(json, sizeof json, "\"hide\": [\"%s\"]", link);
            CHECK(!fits(json));
            unlink(link);
        }
        rmdir(dir);
    }
    /* A bind of / or a writable overlay root: never. */
    CHECK(!fits("\"hide\": [], \"overlay_root\": true"));
    {
        cJSON *v = cJSON_Parse("{\"filesystem\": {\"binds\": [\"/\"]}}");
        struct mini_err e;
        mini_err_clear(&e);
        struct mini_profile *q = mini_profile_from_json(v, "root.json", &e);
        cJSON_Delete(v);
        CHECK_MSG(q != NULL, "%s", e.msg);
        if (q) {
            CHECK(!mini_rootfs_template_fits(q));
            mini_profile_free(q);
        }
    }
    return check_summary();
}
