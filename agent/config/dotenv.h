/* .env files as python-dotenv (1.x) reads them: the global config
 * directory's .env holds API keys and settings for `mini` (see
 * config/config.h for the directory, docs/config.md for the variables). */
#ifndef MINI_AGENT_CONFIG_DOTENV_H
#define MINI_AGENT_CONFIG_DOTENV_H

#include <stdbool.h>
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

/* python-dotenv's set_key (quote_mode "always") and unset_key, as
 * `mini-extra config set|unset` use them, on the text of a .env file: *out
 * gets the new text.  Every binding is kept as it was written (line breaks
 * read as universal newlines become \n), except those of `key`: with a
 * value, each one becomes KEY='value' (a ' in the value
 * written \'), or the line is appended when there is none (after a \n
 * when the file does not end with one); with value NULL they are removed.
 * *found tells whether there was one.  0, or -1 with e (invalid UTF-8, a
 * NUL byte, out of memory). */
struct mini_buf;
int mini_config_dotenv_edit(const char *text, size_t len, const char *key, const char *value, struct mini_buf *out,
                            bool *found, struct mini_err *e);

#endif
