/* .env files as python-dotenv (1.x) reads them: the global config
 * directory's .env holds API keys and settings for `mini` (see
 * config/config.h for the directory, docs/config.md for the variables). */
#ifndef MINI_AGENT_CONFIG_DOTENV_H
#define MINI_AGENT_CONFIG_DOTENV_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

/* Parse .env text the way python-dotenv (1.x) does and return the result
 * as a cJSON object of name -> string (or null for a bare NAME line), in
 * file order, a repeated name keeping its first place and its last value.
 * Values are interpolated (${NAME}, ${NAME:-default}) with the process
 * environment taking precedence over earlier lines.  Lines that do not
 * parse are skipped, as python-dotenv skips them (with a warning);
 * *skipped (when not NULL) counts them.  NULL with e on invalid UTF-8, a
 * NUL byte, or out of memory. */
cJSON *mini_config_parse_dotenv(const char *text, size_t len, size_t *skipped, struct mini_err *e);

/* Load a .env file into the environment without overriding variables that
 * are already set (python-dotenv's load_dotenv(override=False)).  A missing
 * file, or one that is neither a regular file nor a FIFO, loads nothing.
 * Honours PYTHON_DOTENV_DISABLED.  Returns the number of variables set, or
 * -1 with e. */
int mini_config_load_dotenv(const char *path, struct mini_err *e);

#endif
