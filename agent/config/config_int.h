/* Internals shared by the files of the config library (config.c,
 * validate.c).  Not an API: that is config.h. */
#ifndef MINI_AGENT_CONFIG_INT_H
#define MINI_AGENT_CONFIG_INT_H

#include <stdbool.h>

/* A warning through the function given to mini_config_set_warn (none:
 * dropped). */
__attribute__((format(printf, 1, 2))) void mini_config_warnf(const char *fmt, ...);
/* Whether path is a directory (following links). */
bool mini_config_is_dir(const char *path);
/* a / b, or b when it is absolute (as pathlib joins); malloc'd, NULL when
 * out of memory. */
char *mini_config_path_join(const char *a, const char *b);

#endif
