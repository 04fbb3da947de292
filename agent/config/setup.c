/* The config as the command lines build it (setup.h). */
#include "setup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "dotenv.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/profile.h"
#include "mini/str.h"

cJSON *mini_config_setup(const char *const *specs, size_t n, struct mini_err *e)
{
    _cleanup_free_ char *dotenv = NULL;
    const char *gdir = mini_config_global_dir();
    /* Only the global directory's .env, as mini-swe-agent: never ./.env.
     * (The directory is absolute and hidden from every sandboxed command:
     * environment.c.) */
    if (gdir && asprintf(&dotenv, "%s/.env", gdir) >= 0 && access(dotenv, F_OK) == 0 &&
        mini_config_load_dotenv(dotenv, e) < 0)
        return NULL;
    return mini_config_load(specs, n, e);
}

int mini_config_check_profile(const cJSON *cfg, const char *prog, const char *what)
{
    const cJSON *cls = mini_config_get(cfg, "environment.environment_class");
    const cJSON *prof = mini_config_get(cfg, "environment.profile");
    if (!cJSON_IsString(cls) || !mini_config_class_sandboxed(cls->valuestring))
        return 0;
    const char *name = cJSON_IsString(prof) ? prof->valuestring : "standard";
    if (strchr(name, '/'))
        return 0; /* a profile file: the daemon reads it */
    const char *dir = mini_profile_default_dir();
    char *names[64];
    size_t n = 0;
    if (mini_profile_list(dir, names, MINI_ARRAY_SIZE(names), &n) < 0 || n == 0)
        return 0;
    int rc = 0;
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(names[i], name) == 0;
    if (!found) {
        _cleanup_buf_ struct mini_buf list = MINI_BUF_INIT;
        for (size_t i = 0; i < n; i++)
            mini_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
        const char *near = mini_closest(name, (const char *const *)names, n);
        fprintf(stderr, "%s: %s %s: no such sandbox profile%s%s%s (built-in: %s; or a profile file, or off)\n", prog,
                what, name, near ? "; did you mean " : "", near ? near : "", near ? "?" : "",
                list.data ? list.data : "");
        rc = 2;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    return rc;
}
