/* mini's configuration: mini-swe-agent's YAML schema (sections agent,
 * environment, model, run), loaded, merged and checked.
 *
 * The usual sequence in `mini`:
 *
 *   char *dir = mini_config_global_dir(&e);          // where .env lives
 *   mini_config_load_dotenv(<dir>/.env, &e);          // config/dotenv.h
 *   cJSON *cfg = mini_config_load(specs, nspecs, &e); // the -c specs, in order
 *   mini_config_set(cfg, "model.model_name", ...);    // -m, -y, -l, --sandbox, ...
 *   mini_config_validate(cfg, &e);                    // types, unknown keys, defaults
 *
 * Every function reports failure through `struct mini_err` (MINI_E_CONFIG,
 * or MINI_E_NOMEM) with the file, the line or the key path in the message;
 * none prints.  docs/config.md describes the schema, the defaults, the
 * environment variables and the differences from mini-swe-agent. */
#ifndef MINI_AGENT_CONFIG_H
#define MINI_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

/* The built-in config used when no -c is given (unless
 * MSWEA_MINI_CONFIG_PATH names another). */
#define MINI_CONFIG_DEFAULT_NAME "mini"
/* Largest config or .env file read. */
#define MINI_CONFIG_MAX_BYTES (16u << 20)

/* Directory of the built-in configs: $MINI_CONFIG_DIR when set, else
 * share/mini/configs relative to the running program (mini_exe_relative;
 * in the build tree a link to agent/configs).  Newly allocated; NULL when
 * out of memory or when the program's own path cannot be read (never a
 * path relative to the current directory). */
char *mini_config_builtin_dir(void);

/* Add a directory sandboxed commands may write (`mini`: the current
 * directory, which is the default workspace, and --workspace DIR) for the
 * check below; a relative one is taken relative to the current directory
 * when checking.  Up to four; NULL forgets them all.  Process-wide. */
void mini_config_watch_workspace(const char *dir);

/* Whether `path` lies in one of those directories, as written (made
 * absolute, "." and ".." taken as text) or resolved (symbolic links
 * followed, either side): a file there may have been written by a
 * sandboxed command.  None watched: false. */
bool mini_config_in_workspace(const char *path);

/* mini-swe-agent's global config directory: $MSWEA_GLOBAL_CONFIG_DIR
 * (made absolute) when set and not empty, else
 * $XDG_CONFIG_HOME/mini-swe-agent (when absolute), else ~/.config/mini-swe-agent (~ from $HOME, else the password database),
 * as platformdirs computes it on Linux.  With `create`, the directory (and
 * missing parents) is created, mode 0700.  Newly allocated; NULL with e. */
char *mini_config_global_dir_new(bool create, struct mini_err *e);

/* The same, computed once per process (the first call decides; make it
 * before starting threads) and created when missing, as mini-swe-agent does
 * when it starts.  A directory that cannot be created is still returned:
 * using it reports the error.  NULL only when there is no home directory
 * to put it in, or out of memory. */
const char *mini_config_global_dir(void);

/* The file a -c spec that is not KEY=VALUE names: the spec itself when it
 * is an existing file with a suffix other than .yaml; else, with its
 * suffix replaced by (or given) .yaml as mini-swe-agent does, the first
 * existing one of: that path (only when the spec names a file: it holds a
 * '/' or has a suffix; a bare name such as "mini" is never looked for in
 * the current directory, which sandboxed commands write),
 * $MSWEA_CONFIG_DIR / it (when set; mini-swe-agent's default "." is not
 * used), <builtin dir> / it, <builtin dir>/extra / it,
 * <builtin dir>/benchmarks / it.  Newly allocated; NULL with e listing the
 * places tried. */
char *mini_config_find(const char *spec, struct mini_err *e);

/* One -c spec as a tree: "key.path=value" (split at the first '='; the
 * value parsed as JSON, else taken as a string) becomes nested mappings;
 * anything else is a file found with mini_config_find and parsed as YAML.
 * An empty file gives a cJSON null.  NULL with e. */
cJSON *mini_config_read_spec(const char *spec, struct mini_err *e);

/* mini-swe-agent's `mini -c` rule: with no specs (n == 0) the default
 * config alone is loaded ($MSWEA_MINI_CONFIG_PATH, else the built-in
 * mini.yaml by its absolute path); with specs, only they are, in order - the default is NOT loaded
 * underneath (write `-c mini -c key=value` to change one key of it).  Each
 * is merged into the result: mappings recursively, anything else (lists
 * included) replaced, the later spec winning.  A file whose top level is
 * not a mapping is an error.  Returns a new object, not yet validated;
 * NULL with e. */
cJSON *mini_config_load(const char *const *specs, size_t n, struct mini_err *e);

/* Merge src into dst (both objects) recursively: later wins, mappings
 * merge, lists and scalars are replaced by copies.  0, or -1 with e. */
int mini_config_merge(cJSON *dst, const cJSON *src, struct mini_err *e);

/* Check cfg against the schema and fill the defaults, in place:
 *   - unknown sections and keys are errors naming the key path, with a
 *     suggestion ("model.model_kwarg: unknown key (did you mean
 *     model.model_kwargs?)") or, for keys mini-swe-agent v2 moved, where
 *     they went;
 *   - values of the wrong type are errors ("agent.step_limit: must be an
 *     integer, got \"ten\""); strings holding numbers or booleans are
 *     converted where pydantic would convert them;
 *   - defaults are those of mini-swe-agent's pydantic models (see
 *     docs/config.md); model.model_name falls back to $MSWEA_MODEL_NAME and
 *     is an error when neither is set;
 *   - environment_class and agent_class given as mini-swe-agent import
 *     paths are shortened to "local", "default", "interactive";
 *   - mini-swe-agent's container environments (docker, singularity,
 *     swerex_docker, swerex_modal, contree) keep their short name: their
 *     commands run in the sandbox rooted in environment.image, with their
 *     interpreter, cwd, timeout defaults; the container programs' own keys
 *     (run_args, pull_timeout, ...) are dropped with one note for all;
 *     bubblewrap becomes "sandbox";
 *   - with local or sandbox, those keys and interpreter are dropped, each
 *     reported through the warning hook below, as is a container cwd that
 *     does not exist here;
 *   - environment.image with local is an error: the commands would run on
 *     this machine instead of in the image;
 *   - pydantic's float fields get the float mark, its int fields lose it.
 * 0, or -1 with e (cfg may then be partly converted). */
int mini_config_validate(cJSON *cfg, struct mini_err *e);

/* The short name of a container class (docker, singularity,
 * swerex_docker, swerex_modal, contree; cls may be mini-swe-agent's class
 * path), or NULL: its commands run in the sandbox, rooted in its image. */
const char *mini_config_container_class(const char *cls);
/* Whether commands of this class run through mini-sandboxd: sandbox or a
 * container class. */
bool mini_config_class_sandboxed(const char *cls);

/* Warnings: keys and values mini accepts without using them (the keys of
 * mini-swe-agent's container environments, its container classes, model
 * keys of classes mini does not have) are reported through fn, one line
 * each without a trailing newline, and not refused.  Without a handler
 * they are dropped silently.  Process-wide; set it before validating. */
typedef void mini_config_warn_fn(const char *msg, void *ud);
void mini_config_set_warn(mini_config_warn_fn *fn, void *ud);

/* Floats (mini/json.h: mini_json_create_float, mini_json_is_float): the
 * YAML loader, `-c` values and validation (pydantic's float fields:
 * cost_limit, cost_per_call) mark them. */

/* The item at a dotted path ("model.model_kwargs.temperature"), or NULL. */
cJSON *mini_config_get(const cJSON *cfg, const char *path);
/* Typed shortcuts: the value when the item exists and has that type, else
 * NULL / dflt. */
const char *mini_config_get_string(const cJSON *cfg, const char *path);
double mini_config_get_number(const cJSON *cfg, const char *path, double dflt);
bool mini_config_get_bool(const cJSON *cfg, const char *path, bool dflt);

/* Set the item at a dotted path, creating (or replacing non-mapping)
 * intermediate levels.  `value` is consumed, also on failure.  0, or -1
 * with e (an empty path segment, out of memory). */
int mini_config_set(cJSON *cfg, const char *path, cJSON *value, struct mini_err *e);

#endif
