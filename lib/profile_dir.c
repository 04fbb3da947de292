/* Where the built-in profiles are, and their names (include/mini/profile.h):
 * in libminicore, so that mini can check a --sandbox name before it starts
 * anything, with the same directory the private daemon would use. */
#include "mini/profile.h"
#include "mini/cleanup.h"
#include "mini/path.h"

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- default dir */

static char *exe_profile_dir;
static pthread_once_t exe_profile_once = PTHREAD_ONCE_INIT;

static void find_exe_profile_dir(void) { exe_profile_dir = mini_exe_relative(MINI_BIN_TO_DATA "/profiles"); }

const char *mini_profile_default_dir(void)
{
    const char *env = getenv("MINI_PROFILE_DIR");
    if (env && env[0])
        return env;
    pthread_once(&exe_profile_once, find_exe_profile_dir);
    /* Only when /proc/self/exe cannot be read (no /proc): loading a
     * profile then fails naming this directory. */
    return exe_profile_dir ? exe_profile_dir : MINI_BIN_TO_DATA "/profiles";
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
