/* Configuration loading for mini (see config.h and docs/config.md): where
 * configs are found, reading and merging them, the workspace-file checks,
 * get and set.  Checking a loaded config and filling in its defaults is
 * validate.c. */
#include "config.h"
#include "config_yaml.h"
#include "config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "mini/buf.h"
#include "mini/str.h"
#include "mini/path.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

static int nomem(struct mini_err *e) { return mini_err_set(e, MINI_E_NOMEM, "out of memory"); }

/* ---- paths ---- */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool mini_config_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* a / b, or b when it is absolute (as pathlib joins). */
char *mini_config_path_join(const char *a, const char *b)
{
    if (b[0] == '/' || !a[0])
        return strdup(b);
    struct mini_buf out = MINI_BUF_INIT;
    size_t al = strlen(a);
    if (mini_buf_append(&out, a, al) < 0 || (a[al - 1] != '/' && mini_buf_putc(&out, '/') < 0) ||
        mini_buf_puts(&out, b) < 0) {
        mini_buf_free(&out);
        return NULL;
    }
    return mini_buf_steal(&out, NULL);
}

char *mini_config_builtin_dir(void)
{
    const char *env = getenv("MINI_CONFIG_DIR");
    if (env && *env)
        return strdup(env);
    /* Never the relative MINI_BIN_TO_DATA on its own: that would be a
     * directory under the current one, which sandboxed commands write. */
    return mini_exe_relative(MINI_BIN_TO_DATA "/configs");
}

/* The global directory (it holds API keys: 0700), as a config error. */
static int mkdir_p_config(const char *path, struct mini_err *e)
{
    if (mini_mkdir_p(path, 0700, e) < 0) {
        e->code = MINI_E_CONFIG;
        return -1;
    }
    return 0;
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && (*s < '\t' || *s > '\r'))
            return false;
    return true;
}

char *mini_config_global_dir_new(bool create, struct mini_err *e)
{
    _cleanup_free_ char *dir = NULL;
    const char *env = getenv("MSWEA_GLOBAL_CONFIG_DIR");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (env && *env) {
        /* Absolute, so that it is hidden from the sandbox (environment.c)
         * and the same directory wherever the commands run. */
        _cleanup_free_ char *cwd = env[0] == '/' ? NULL : getcwd(NULL, 0);
        if (env[0] != '/' && !cwd)
            return mini_err_sys(e, MINI_E_CONFIG, errno, "MSWEA_GLOBAL_CONFIG_DIR %s", env), NULL;
        dir = cwd ? mini_config_path_join(cwd, env) : strdup(env);
    } else if (xdg && !blank(xdg) && xdg[0] == '/') {
        /* (A relative XDG_CONFIG_HOME is invalid, the XDG spec says, and
         * would name a directory under the current one: ignored.) */
        dir = mini_config_path_join(xdg, "mini-swe-agent");
    } else {
        /* os.path.expanduser("~/.config"): $HOME when set (even empty),
         * else the password database. */
        _cleanup_free_ char *home = NULL;
        const char *h = getenv("HOME");
        if (h) {
            home = strdup(h);
        } else {
            struct passwd *pw = getpwuid(getuid());
            if (!pw || !pw->pw_dir)
                return mini_err_set(e, MINI_E_CONFIG,
                                    "cannot find the home directory: set HOME or MSWEA_GLOBAL_CONFIG_DIR"),
                       NULL;
            home = strdup(pw->pw_dir);
        }
        if (!home)
            return nomem(e), NULL;
        size_t hl = strlen(home);
        while (hl > 1 && home[hl - 1] == '/')
            home[--hl] = '\0';
        struct mini_buf b = MINI_BUF_INIT;
        if (mini_buf_printf(&b, "%s/.config/mini-swe-agent", strcmp(home, "/") ? home : "") < 0) {
            mini_buf_free(&b);
            return nomem(e), NULL;
        }
        dir = mini_buf_steal(&b, NULL);
    }
    if (!dir)
        return nomem(e), NULL;
    if (create && mkdir_p_config(dir, e) < 0)
        return NULL;
    return TAKE_PTR(dir);
}

const char *mini_config_global_dir(void)
{
    static char *cached;
    char *dir = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (dir)
        return dir;
    struct mini_err e;
    dir = mini_config_global_dir_new(false, &e);
    if (!dir)
        return NULL;
    _cleanup_free_ char *copy = strdup(dir);
    if (copy)
        (void)mini_mkdir_p(copy, 0700, &e); /* best effort: see config.h */
    char *expected = NULL;
    if (!__atomic_compare_exchange_n(&cached, &expected, dir, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(dir);
        dir = expected;
    }
    return dir;
}

/* ---- warnings and floats ---- */

static mini_config_warn_fn *warn_fn;
static void *warn_ud;

void mini_config_set_warn(mini_config_warn_fn *fn, void *ud)
{
    warn_fn = fn;
    warn_ud = ud;
}

void mini_config_warnf(const char *fmt, ...)
{
    if (!warn_fn)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    warn_fn(msg, warn_ud);
}

/* ---- files a sandboxed command could have written ---- */

static char *watched[4];

void mini_config_watch_workspace(const char *dir)
{
    if (!dir) {
        for (size_t i = 0; i < MINI_ARRAY_SIZE(watched); i++) {
            free(watched[i]);
            watched[i] = NULL;
        }
        return;
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(watched); i++)
        if (!watched[i]) {
            watched[i] = strdup(*dir ? dir : ".");
            return;
        }
}

/* Whether the file at `path` lies in the directory `dir` or below it, or
 * is reached through a link there (mini_path_in_guard: by device and
 * inode, whatever the spelling); when that cannot be told, yes. */
static bool in_dir(const char *path, const char *dir)
{
    _cleanup_close_ int guard = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (guard < 0)
        return false; /* no such directory: nothing of it to read */
    struct mini_err e;
    int in = mini_path_in_guard(path, guard, &e);
    return in != 0 && !(in < 0 && e.sys_errno == ENOENT);
}

bool mini_config_in_workspace(const char *path)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(watched); i++)
        if (watched[i] && in_dir(path, watched[i]))
            return true;
    return false;
}

/* When it does, warn (through the hook below) "reading WHAT PATH from the
 * workspace, which sandboxed commands can write".  Every config file read
 * is checked (mini_config_read_spec). */
static void mini_config_check_place(const char *what, const char *path)
{
    if (mini_config_in_workspace(path))
        mini_config_warnf("reading %s %s from the workspace, which sandboxed commands can write", what, path);
}

/* Python's json.loads makes a float of every number written with a
 * fraction or an exponent.  cJSON forgets how a number was written, so
 * the numbers of the text are listed in order and matched with the
 * tree's numbers, which cJSON keeps in document order.  -1 when out of
 * memory. */
struct numflags {
    bool *is_float;
    size_t n, next;
};

static int mark_tree_floats(cJSON *j, struct numflags *f)
{
    if (cJSON_IsNumber(j)) {
        if (f->next < f->n && f->is_float[f->next++])
            return mini_json_mark_float(j);
        return 0;
    }
    for (cJSON *c = j->child; c; c = c->next)
        if (mark_tree_floats(c, f) < 0)
            return -1;
    return 0;
}

static int mark_json_floats(cJSON *root, const char *text)
{
    size_t len = strlen(text), cap = len / 2 + 1;
    struct numflags f = { .is_float = calloc(cap, sizeof(bool)) };
    if (!f.is_float)
        return -1;
    for (size_t i = 0; i < len;) {
        char ch = text[i];
        if (ch == '"') {
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
            i++;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            bool fl = false;
            for (; i < len && strchr("+-0123456789.eE", text[i]); i++)
                fl |= text[i] == '.' || text[i] == 'e' || text[i] == 'E';
            if (f.n < cap)
                f.is_float[f.n++] = fl;
        } else {
            i++;
        }
    }
    int r = mark_tree_floats(root, &f);
    free(f.is_float);
    return r;
}

/* ---- finding and reading config specs ---- */

/* pathlib's with_suffix(".yaml") unless the suffix already is ".yaml";
 * *had_suffix tells whether the name had another suffix, *any_suffix
 * whether it had one at all. */
static char *with_yaml_suffix(const char *spec, bool *had_suffix, bool *any_suffix, struct mini_err *e)
{
    size_t len = strlen(spec);
    while (len > 1 && spec[len - 1] == '/')
        len--;
    const char *base = spec + len;
    while (base > spec && base[-1] != '/')
        base--;
    size_t blen = (size_t)(spec + len - base);
    if (!blen || (blen == 1 && (base[0] == '.' || base[0] == '/')) || (blen == 2 && base[0] == '.' && base[1] == '.'))
        return mini_err_set(e, MINI_E_CONFIG, "config \"%.*s\": not a file name", MINI_JSON_SHOW(spec)), NULL;
    size_t dot = 0;
    for (size_t i = blen; i-- > 0;)
        if (base[i] == '.') {
            dot = i;
            break;
        }
    bool has_suffix = dot > 0 && dot < blen - 1;
    bool is_yaml = has_suffix && blen - dot == 5 && !memcmp(base + dot, ".yaml", 5);
    *had_suffix = has_suffix && !is_yaml;
    *any_suffix = has_suffix;
    size_t keep = has_suffix && !is_yaml ? (size_t)(base - spec) + dot : len;
    struct mini_buf b = MINI_BUF_INIT;
    if (mini_buf_append(&b, spec, keep) < 0 || (!is_yaml && mini_buf_puts(&b, ".yaml") < 0)) {
        mini_buf_free(&b);
        return nomem(e), NULL;
    }
    return mini_buf_steal(&b, NULL);
}

/* A path as a person would write it, for messages: no "." components,
 * no repeated slashes ("./a//b/./c" is "a/b/c"). */
static void tidy_path(char *p)
{
    char *w = p;
    const char *r = p;
    if (*r == '/')
        *w++ = *r++;
    while (*r) {
        if (*r == '/') {
            r++;
        } else if (r[0] == '.' && (r[1] == '/' || r[1] == '\0')) {
            r++;
        } else {
            if (w > p && w[-1] != '/')
                *w++ = '/';
            while (*r && *r != '/')
                *w++ = *r++;
        }
    }
    if (w == p)
        *w++ = '.';
    *w = '\0';
}

char *mini_config_find(const char *spec, struct mini_err *e)
{
    if (!spec || !*spec)
        return mini_err_set(e, MINI_E_CONFIG, "empty config name"), NULL;
    bool had_suffix, any_suffix;
    _cleanup_free_ char *name = with_yaml_suffix(spec, &had_suffix, &any_suffix, e);
    if (!name)
        return NULL;
    /* The current directory is the workspace, which sandboxed commands
     * write: a file there is read only when the spec names a file (a path,
     * or a name with a suffix), never for a bare name (`-c mini` is the
     * built-in mini.yaml even next to a ./mini.yaml). */
    bool as_file = strchr(spec, '/') || any_suffix;
    /* "my.yml" would become "my.yaml": an existing file of that name is
     * taken as it is first. */
    if (had_suffix && is_file(spec)) {
        char *p = strdup(spec);
        return p ? p : (nomem(e), NULL);
    }
    const char *cdir = getenv("MSWEA_CONFIG_DIR");
    _cleanup_free_ char *builtin = mini_config_builtin_dir();
    enum { N = 5 };
    char *cands[N] = { NULL };
    size_t n = 0;
    bool oom = false;
    if (as_file)
        oom |= !(cands[n++] = strdup(name));
    if (cdir && *cdir)
        oom |= !(cands[n++] = mini_config_path_join(cdir, name));
    if (builtin) {
        _cleanup_free_ char *extra = mini_config_path_join(builtin, "extra"),
                            *bench = mini_config_path_join(builtin, "benchmarks");
        oom |= !(cands[n++] = mini_config_path_join(builtin, name));
        oom |= !extra || !(cands[n++] = mini_config_path_join(extra, name));
        oom |= !bench || !(cands[n++] = mini_config_path_join(bench, name));
    }
    char *found = NULL;
    for (size_t i = 0; i < n; i++)
        if (!found && cands[i] && is_file(cands[i]))
            found = cands[i];
    if (found && !oom) {
        for (size_t i = 0; i < n; i++)
            if (cands[i] != found)
                free(cands[i]);
        return found;
    }
    if (oom) {
        nomem(e);
    } else if (!n) {
        mini_err_set(e, MINI_E_CONFIG,
                     "config \"%.*s\" not found: the built-in configs cannot be located (/proc/self/exe); "
                     "set MINI_CONFIG_DIR, or name a file (./%.*s)",
                     MINI_JSON_SHOW(spec), MINI_JSON_SHOW(name));
    } else {
        /* Each place once ("x.yaml" and "./x.yaml" are one; an absolute
         * name is the same path in every directory), and a directory where
         * a file was expected named as such. */
        struct mini_buf tried = MINI_BUF_INIT;
        const char *dir = mini_config_is_dir(spec) ? spec : NULL;
        for (size_t i = 0; i < n; i++) {
            tidy_path(cands[i]);
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                seen |= strcmp(cands[i], cands[j]) == 0;
            if (seen)
                continue;
            if (!dir && mini_config_is_dir(cands[i]))
                dir = cands[i];
            mini_buf_printf(&tried, "%s%s", tried.len ? ", " : "", cands[i]);
        }
        if (dir)
            mini_err_set(e, MINI_E_CONFIG,
                         "config \"%.*s\" not found: %s is a directory, not a config file (tried: %s)",
                         MINI_JSON_SHOW(spec), dir, tried.data ? tried.data : "");
        else
            mini_err_set(e, MINI_E_CONFIG, "config \"%.*s\" not found (tried: %s)", MINI_JSON_SHOW(spec),
                         tried.data ? tried.data : "");
        mini_buf_free(&tried);
    }
    for (size_t i = 0; i < n; i++)
        free(cands[i]);
    return NULL;
}

/* Python's json.loads keeps the last of repeated keys. */
static void json_dedupe(cJSON *item)
{
    if (cJSON_IsArray(item)) {
        cJSON *c;
        cJSON_ArrayForEach (c, item)
            json_dedupe(c);
        return;
    }
    if (!cJSON_IsObject(item))
        return;
    for (cJSON *c = item->child, *next; c; c = next) {
        next = c->next;
        bool later = false;
        for (cJSON *d = c->next; d && !later; d = d->next)
            later = !strcmp(c->string, d->string);
        if (later)
            cJSON_Delete(cJSON_DetachItemViaPointer(item, c));
        else
            json_dedupe(c);
    }
}

static cJSON *parse_override_value(const char *v)
{
    size_t a = 0, b = strlen(v);
    while (a < b && strchr(" \t\n\r", v[a]))
        a++;
    while (b > a && strchr(" \t\n\r", v[b - 1]))
        b--;
    if (b - a == 3 && !memcmp(v + a, "NaN", 3))
        return mini_json_create_float(NAN);
    if (b - a == 8 && !memcmp(v + a, "Infinity", 8))
        return mini_json_create_float(INFINITY);
    if (b - a == 9 && !memcmp(v + a, "-Infinity", 9))
        return mini_json_create_float(-INFINITY);
    struct mini_err ignored;
    cJSON *j = mini_json_parse(v, strlen(v), &ignored);
    if (j) {
        if (mark_json_floats(j, v) < 0) {
            cJSON_Delete(j);
            return NULL;
        }
        json_dedupe(j);
        return j;
    }
    return cJSON_CreateString(v);
}

/* Split a dotted path into its segments: a NULL-terminated array whose
 * strings live in one allocation after the pointers. */
static char **split_path(const char *path, const char *what, struct mini_err *e)
{
    size_t len = strlen(path), nseg = 1;
    for (size_t i = 0; i < len; i++)
        nseg += path[i] == '.';
    char **segs = malloc((nseg + 1) * sizeof *segs + len + 1);
    if (!segs)
        return nomem(e), NULL;
    char *copy = (char *)(segs + nseg + 1);
    memcpy(copy, path, len + 1);
    size_t k = 0;
    for (char *p = copy;;) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        if (!*p) {
            free(segs);
            return mini_err_set(e, MINI_E_CONFIG, "%s \"%.*s\": empty key in the path", what, MINI_JSON_SHOW(path)),
                   NULL;
        }
        segs[k++] = p;
        if (!dot)
            break;
        p = dot + 1;
    }
    segs[k] = NULL;
    return segs;
}

cJSON *mini_config_read_spec(const char *spec, struct mini_err *e)
{
    const char *eq = strchr(spec, '=');
    if (eq) {
        _cleanup_free_ char *key = strndup(spec, (size_t)(eq - spec));
        if (!key)
            return nomem(e), NULL;
        _cleanup_free_ char **segs = split_path(key, "-c", e);
        if (!segs)
            return NULL;
        cJSON *value = parse_override_value(eq + 1);
        if (!value)
            return nomem(e), NULL;
        _cleanup_cjson_ cJSON *root = cJSON_CreateObject();
        if (!root) {
            cJSON_Delete(value);
            return nomem(e), NULL;
        }
        if (mini_config_set(root, key, value, e) < 0)
            return NULL;
        return TAKE_PTR(root);
    }
    _cleanup_free_ char *path = mini_config_find(spec, e);
    if (!path)
        return NULL;
    mini_config_check_place("config", path);
    _cleanup_buf_ struct mini_buf text = MINI_BUF_INIT;
    if (mini_read_file(path, &text, MINI_CONFIG_MAX_BYTES, e) < 0) {
        if (e)
            e->code = MINI_E_CONFIG;
        return NULL;
    }
    return mini_yaml_parse(text.data ? text.data : "", text.len, path, e);
}

int mini_config_merge(cJSON *dst, const cJSON *src, struct mini_err *e)
{
    const cJSON *s;
    cJSON_ArrayForEach (s, src) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, s->string);
        if (d && cJSON_IsObject(d) && cJSON_IsObject(s)) {
            if (mini_config_merge(d, s, e) < 0)
                return -1;
            continue;
        }
        cJSON *copy = cJSON_Duplicate(s, true);
        if (!copy)
            return nomem(e);
        if (d) {
            cJSON_ReplaceItemInObjectCaseSensitive(dst, s->string, copy);
        } else if (!cJSON_AddItemToObject(dst, s->string, copy)) {
            cJSON_Delete(copy);
            return nomem(e);
        }
    }
    return 0;
}

cJSON *mini_config_load(const char *const *specs, size_t n, struct mini_err *e)
{
    /* The default is the built-in file by its absolute path, as
     * mini-swe-agent's DEFAULT_CONFIG_FILE: never a file of the current
     * directory, which sandboxed commands write. */
    const char *dflt[1];
    _cleanup_free_ char *builtin = NULL;
    if (n == 0) {
        const char *env = getenv("MSWEA_MINI_CONFIG_PATH");
        if (env && *env) {
            dflt[0] = env;
        } else {
            _cleanup_free_ char *dir = mini_config_builtin_dir();
            if (!dir)
                return mini_err_set(e, MINI_E_CONFIG,
                                    "the built-in configs cannot be located (/proc/self/exe): set MINI_CONFIG_DIR"),
                       NULL;
            _cleanup_free_ char *abs = NULL;
            if (dir[0] != '/') {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);
                if (!cwd)
                    return mini_err_sys(e, MINI_E_CONFIG, errno, "MINI_CONFIG_DIR %s", dir), NULL;
                abs = mini_config_path_join(cwd, dir);
            }
            builtin = mini_config_path_join(abs ? abs : dir, MINI_CONFIG_DEFAULT_NAME ".yaml");
            if (!builtin)
                return nomem(e), NULL;
            dflt[0] = builtin;
        }
        specs = dflt;
        n = 1;
    }
    _cleanup_cjson_ cJSON *cfg = cJSON_CreateObject();
    if (!cfg)
        return nomem(e), NULL;
    for (size_t i = 0; i < n; i++) {
        _cleanup_cjson_ cJSON *part = mini_config_read_spec(specs[i], e);
        if (!part)
            return NULL;
        if (cJSON_IsNull(part))
            continue; /* an empty file */
        if (!cJSON_IsObject(part))
            return mini_err_set(e, MINI_E_CONFIG, "config \"%.*s\": the top level must be a mapping",
                                MINI_JSON_SHOW(specs[i])),
                   NULL;
        if (mini_config_merge(cfg, part, e) < 0)
            return NULL;
    }
    return TAKE_PTR(cfg);
}

/* ---- get and set ---- */

cJSON *mini_config_get(const cJSON *cfg, const char *path)
{
    const cJSON *cur = cfg;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (!cJSON_IsObject(cur))
            return NULL;
        const cJSON *next = NULL, *c;
        cJSON_ArrayForEach (c, cur) {
            if (c->string && strlen(c->string) == l && !memcmp(c->string, p, l)) {
                next = c;
                break;
            }
        }
        cur = next;
        if (!dot)
            return (cJSON *)cur;
        p = dot + 1;
    }
    return NULL;
}

const char *mini_config_get_string(const cJSON *cfg, const char *path)
{
    const cJSON *v = mini_config_get(cfg, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double mini_config_get_number(const cJSON *cfg, const char *path, double dflt)
{
    const cJSON *v = mini_config_get(cfg, path);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

bool mini_config_get_bool(const cJSON *cfg, const char *path, bool dflt)
{
    const cJSON *v = mini_config_get(cfg, path);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

int mini_config_set(cJSON *cfg, const char *path, cJSON *value, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *val = value;
    if (!val)
        return nomem(e);
    if (!cJSON_IsObject(cfg))
        return mini_err_set(e, MINI_E_CONFIG, "setting %.*s: the configuration is not a mapping", MINI_JSON_SHOW(path));
    _cleanup_free_ char **segs = split_path(path, "setting", e);
    if (!segs)
        return -1;
    cJSON *cur = cfg;
    for (size_t i = 0; segs[i]; i++) {
        cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, segs[i]);
        if (!segs[i + 1]) {
            if (next)
                cJSON_ReplaceItemInObjectCaseSensitive(cur, segs[i], TAKE_PTR(val));
            else if (cJSON_AddItemToObject(cur, segs[i], val))
                val = NULL;
            else
                return nomem(e);
            return 0;
        }
        if (!cJSON_IsObject(next)) {
            cJSON *obj = cJSON_CreateObject();
            if (!obj)
                return nomem(e);
            if (next) {
                cJSON_ReplaceItemInObjectCaseSensitive(cur, segs[i], obj);
            } else if (!cJSON_AddItemToObject(cur, segs[i], obj)) {
                cJSON_Delete(obj);
                return nomem(e);
            }
            next = obj;
        }
        cur = next;
    }
    return 0;
}
