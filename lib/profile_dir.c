/* Where the built-in profiles are, and their names (include/mini/profile.h):
 * in libminicore, so that mini can check a --sandbox name before it starts
 * anything, with the same directory the private daemon would use. */
#include "mini/profile.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* --------------------------------------------------------- default dir */

static char exe_profile_dir[PATH_MAX];
static pthread_once_t exe_profile_once = PTHREAD_ONCE_INIT;

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* <prefix>/share/mini/profiles for an executable in <prefix>/<dir>/. */
static void find_exe_profile_dir(void)
{
    _cleanup_free_ char *exe = mini_self_exe();
    if (!exe)
        return;
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            return;
        *slash = '\0';
    }
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/share/mini/profiles", exe) < (int)sizeof dir && is_dir(dir))
        memcpy(exe_profile_dir, dir, sizeof dir);
}

const char *mini_profile_default_dir(void)
{
    const char *env = getenv("MINI_PROFILE_DIR");
    if (env && env[0])
        return env;
    pthread_once(&exe_profile_once, find_exe_profile_dir);
    if (exe_profile_dir[0])
        return exe_profile_dir;
    if (is_dir(MINI_SOURCE_PROFILE_DIR))
        return MINI_SOURCE_PROFILE_DIR;
    return MINI_INSTALL_PROFILE_DIR;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int mini_profile_list(const char *dir, char **names, size_t max, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)) && *n < max) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0 && de->d_name[0] != '.')
            if ((names[*n] = strndup(de->d_name, len - 5)))
                (*n)++;
    }
    closedir(d);
    qsort(names, *n, sizeof *names, cmp_names);
    return 0;
}
