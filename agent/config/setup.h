/* The config as the command lines build it (`mini` and `mini batch`): the
 * global .env file, then the config specs; and the check of a built-in
 * sandbox profile's name, said before anything else is looked at. */
#ifndef MINI_AGENT_CONFIG_SETUP_H
#define MINI_AGENT_CONFIG_SETUP_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

/* The global .env (variables already set win), then the specs merged
 * (mini_config_load).  NULL with e filled. */
cJSON *mini_config_setup(const char *const *specs, size_t n, struct mini_err *e);

/* When cfg runs commands in the sandbox with a built-in profile name that
 * does not exist: one line on stderr ("PROG: WHAT NAME: no such sandbox
 * profile; did you mean ...", with the list), and 2.  The names are those
 * of the directory a private daemon would read (MINI_PROFILE_DIR or the
 * one beside the program); when it cannot be read, the daemon decides.
 * what names where the name came from (--sandbox, environment.profile). */
int mini_config_check_profile(const cJSON *cfg, const char *prog, const char *what);

#endif
