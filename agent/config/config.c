/* Configuration loading for mini (see config.h and docs/config.md). */
#include "config.h"
#include "config_yaml.h"

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

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* a / b, or b when it is absolute (as pathlib joins). */
static char *path_join(const char *a, const char *b)
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
        dir = cwd ? path_join(cwd, env) : strdup(env);
    } else if (xdg && !blank(xdg) && xdg[0] == '/') {
        /* (A relative XDG_CONFIG_HOME is invalid, the XDG spec says, and
         * would name a directory under the current one: ignored.) */
        dir = path_join(xdg, "mini-swe-agent");
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

__attribute__((format(printf, 1, 2))) static void cfg_warn(const char *fmt, ...)
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

void mini_config_check_place(const char *what, const char *path)
{
    if (mini_config_in_workspace(path))
        cfg_warn("reading %s %s from the workspace, which sandboxed commands can write", what, path);
}

/* Forget the text: the number is an int (pydantic's int fields). */
static void set_int(cJSON *n)
{
    free(n->valuestring);
    n->valuestring = NULL;
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
        oom |= !(cands[n++] = path_join(cdir, name));
    if (builtin) {
        _cleanup_free_ char *extra = path_join(builtin, "extra"), *bench = path_join(builtin, "benchmarks");
        oom |= !(cands[n++] = path_join(builtin, name));
        oom |= !extra || !(cands[n++] = path_join(extra, name));
        oom |= !bench || !(cands[n++] = path_join(bench, name));
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
        const char *dir = is_dir(spec) ? spec : NULL;
        for (size_t i = 0; i < n; i++) {
            tidy_path(cands[i]);
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                seen |= strcmp(cands[i], cands[j]) == 0;
            if (seen)
                continue;
            if (!dir && is_dir(cands[i]))
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
                abs = path_join(cwd, dir);
            }
            builtin = path_join(abs ? abs : dir, MINI_CONFIG_DEFAULT_NAME ".yaml");
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

/* ---- validation ---- */

enum vtype {
    V_STR,       /* str */
    V_STR_NULL,  /* str | None (paths) */
    V_INT,       /* int */
    V_NUM,       /* float */
    V_BOOL,      /* bool */
    V_ENUM,      /* Literal[...] */
    V_ENUM_NULL, /* Literal[...] | None */
    V_MAP,       /* dict[str, Any] */
    V_MAP_STR,   /* dict[str, str] */
    V_LIST,      /* list[Any] */
    V_LIST_STR,  /* list[str] */
};

struct keydef {
    const char *name;
    enum vtype type;
    const char *const *choices; /* V_ENUM, V_ENUM_NULL */
};

struct section {
    const char *name;
    const struct keydef *keys;
};

static const char *const modes[] = { "human", "confirm", "yolo", NULL };
static const char *const cache_modes[] = { "default_end", NULL };
static const char *const cost_modes[] = { "default", "ignore_errors", NULL };

static const struct keydef agent_keys[] = {
    { "agent_class", V_STR, NULL },
    { "system_template", V_STR, NULL },
    { "instance_template", V_STR, NULL },
    { "step_limit", V_INT, NULL },
    { "cost_limit", V_NUM, NULL },
    { "wall_time_limit_seconds", V_INT, NULL },
    { "max_consecutive_format_errors", V_INT, NULL },
    { "output_path", V_STR_NULL, NULL },
    { "mode", V_ENUM, modes },
    { "whitelist_actions", V_LIST_STR, NULL },
    { "confirm_exit", V_BOOL, NULL },
    { NULL, 0, NULL },
};

static const struct keydef model_keys[] = {
    { "model_name", V_STR_NULL, NULL },
    { "model_class", V_STR, NULL },
    { "model_kwargs", V_MAP, NULL },
    { "litellm_model_registry", V_STR_NULL, NULL },
    { "set_cache_control", V_ENUM_NULL, cache_modes },
    { "cost_tracking", V_ENUM, cost_modes },
    { "format_error_template", V_STR, NULL },
    { "observation_template", V_STR, NULL },
    { "multimodal_regex", V_STR, NULL },
    { "action_regex", V_STR, NULL },
    { "outputs", V_LIST, NULL },      /* deterministic */
    { "cost_per_call", V_NUM, NULL }, /* deterministic */
    { "replay_path", V_STR, NULL },   /* replay */
    { NULL, 0, NULL },
};

static const struct keydef environment_keys[] = {
    { "environment_class", V_STR, NULL },
    { "cwd", V_STR, NULL },
    { "env", V_MAP_STR, NULL },
    { "timeout", V_INT, NULL },
    { "profile", V_STR, NULL },          /* sandbox */
    { "workspace", V_STR, NULL },        /* sandbox */
    { "socket", V_STR, NULL },           /* sandbox */
    { "forward_env", V_LIST_STR, NULL }, /* sandbox */
    { "image", V_STR, NULL },            /* sandbox: an imported image as the root */
    { "allow_hosts", V_LIST_STR, NULL }, /* sandbox: network allowlist entries (docs/profiles.md) */
    { NULL, 0, NULL },
};

static const struct keydef run_keys[] = {
    { "task", V_STR, NULL },
    { NULL, 0, NULL },
};

/* mini's own (docs/config.md, agent/policy/policy.h): the rules are
 * checked in depth, regular expressions compiled, where the policy is
 * made. */
static const char *const verdicts[] = { "allow", "deny", "ask", NULL };
static const struct keydef policy_keys[] = {
    { "default", V_ENUM, verdicts },
    { "rules", V_LIST, NULL },
    { "approver", V_STR, NULL },
    { "approver_timeout", V_NUM, NULL },
    { "audit_log", V_STR, NULL },
    { "blocked_template", V_STR, NULL },
    { NULL, 0, NULL },
};

/* policy is optional: it is not added when absent. */
static const struct section sections[] = {
    { "agent", agent_keys }, { "environment", environment_keys }, { "model", model_keys },
    { "run", run_keys },     { "policy", policy_keys },
};

/* Keys that mini-swe-agent v1 (or early v2) had and v2 moved or dropped. */
static const struct {
    const char *section, *key, *hint;
} moved[] = {
    { "agent", "action_observation_template", "mini-swe-agent v2 moved it to model.observation_template" },
    { "agent", "format_error_template", "mini-swe-agent v2 moved it to model.format_error_template" },
    { "agent", "action_regex", "mini-swe-agent v2 moved it to model.action_regex" },
    { "agent", "timeout_template",
      "mini-swe-agent v2 removed it: a timeout reaches the model through the observation's output.exception_info" },
    { "environment", "action_observation_template", "mini-swe-agent v2 moved it to model.observation_template" },
    { "environment", "timeout_template",
      "mini-swe-agent v2 removed it: a timeout reaches the model through the observation's output.exception_info" },
    { "model", "action_observation_template", "mini-swe-agent v2 renamed it model.observation_template" },
};

/* Keys of mini-swe-agent's environments and models that mini does not
 * have: accepted with a warning and dropped (its configs set them). */
static const struct {
    const char *section, *key, *owner;
} ignored_keys[] = {
    { "environment", "container_timeout", "docker" },
    { "environment", "executable", "docker" },
    { "environment", "run_args", "docker" },
    { "environment", "pull_timeout", "docker" },
    { "environment", "global_args", "singularity" },
    { "environment", "exec_args", "singularity" },
    { "environment", "sandbox_build_retries", "singularity" },
    { "environment", "wrapper_args", "bubblewrap" },
    { "environment", "deployment_extra_kwargs", "swerex_docker" },
    { "environment", "startup_timeout", "swerex_modal" },
    { "environment", "runtime_timeout", "swerex_modal" },
    { "environment", "deployment_timeout", "swerex_modal" },
    { "environment", "install_pipx", "swerex_modal" },
    { "environment", "modal_sandbox_kwargs", "swerex_modal" },
    { "environment", "contree_config", "contree" },
    { "environment", "image_tag", "contree" },
    { "environment", "cwd_auto_create", "contree" },
    { "environment", "import_username", "contree" },
    { "environment", "import_password", "contree" },
    { "model", "provider", "portkey" },
    { "model", "litellm_model_name_override", "portkey" },
};

/* mini-swe-agent's environments that run commands elsewhere than on this
 * machine (containers, remote sandboxes), by name and import path. */
static const char *const container_classes[][2] = {
    { "docker", "minisweagent.environments.docker.DockerEnvironment" },
    { "singularity", "minisweagent.environments.singularity.SingularityEnvironment" },
    { "swerex_docker", "minisweagent.environments.extra.swerex_docker.SwerexDockerEnvironment" },
    { "swerex_modal", "minisweagent.environments.extra.swerex_modal.SwerexModalEnvironment" },
    { "bubblewrap", "minisweagent.environments.extra.bubblewrap.BubblewrapEnvironment" },
    { "contree", "minisweagent.environments.extra.contree.ContreeEnvironment" },
};

/* Warn about an accepted but unused key.  1 when it is one (the caller
 * drops it), 0 when not. */
static int ignored_key(const char *section, const char *key)
{
    if (!strcmp(section, "environment") && !strcmp(key, "interpreter")) {
        cfg_warn("environment.interpreter: ignored (mini runs every command with /bin/sh -c)");
        return 1;
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(ignored_keys); i++)
        if (!strcmp(ignored_keys[i].section, section) && !strcmp(ignored_keys[i].key, key)) {
            cfg_warn("%s.%s: ignored (a setting of mini-swe-agent's %s %s, which mini does not have)", section, key,
                     ignored_keys[i].owner, section);
            return 1;
        }
    return 0;
}

#define DEFAULT_ACTION_REGEX "```mswea_bash_command\\s*\\n(.*?)\\n```"
#define DEFAULT_OBSERVATION_TEMPLATE                                                                \
    "<returncode>{{ output.returncode }}</returncode>\n"                                            \
    "{% if output.exception_info %}<exception>{{ output.exception_info }}</exception>\n{% endif %}" \
    "<output>\n{{ output.output }}</output>"
#define DEFAULT_TEXT_FORMAT_ERROR                                                     \
    "Reply with exactly one ```mswea_bash_command block holding the command to run; " \
    "your reply had {{ actions | length }}."

/* A short description of a value for messages: "ten" (quoted), 1.5, true,
 * null, a list, a mapping. */
static const char *describe(char *buf, size_t size, const cJSON *v)
{
    if (!v)
        snprintf(buf, size, "nothing");
    else if (cJSON_IsNull(v))
        snprintf(buf, size, "null");
    else if (cJSON_IsBool(v))
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v))
        for (int prec = 1; prec <= 17; prec++) { /* the shortest form that reads back */
            snprintf(buf, size, "%.*g", prec, v->valuedouble);
            if (!isfinite(v->valuedouble) || strtod(buf, NULL) == v->valuedouble)
                break;
        }
    else if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.*s%s\"", MINI_JSON_SHOW(v->valuestring),
                 strlen(v->valuestring) > MINI_JSON_SHOW_MAX ? "..." : "");
    else if (cJSON_IsArray(v))
        snprintf(buf, size, "a list");
    else
        snprintf(buf, size, "a mapping");
    return buf;
}

static int type_error(struct mini_err *e, const char *path, const char *want, const cJSON *v, const char *hint)
{
    char what[160];
    return mini_err_set(e, MINI_E_CONFIG, "%s: must be %s, got %s%s", path, want, describe(what, sizeof what, v),
                        hint ? hint : "");
}

static const struct keydef *find_key(const struct section *s, const char *name)
{
    for (const struct keydef *k = s->keys; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}

static int unknown_key(struct mini_err *e, const struct section *s, const char *key)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(moved); i++)
        if (!strcmp(moved[i].section, s->name) && !strcmp(moved[i].key, key))
            return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (%s)", s->name, MINI_JSON_SHOW(key),
                                moved[i].hint);
    const char *names[32];
    size_t n = 0;
    for (const struct keydef *k = s->keys; k->name && n < MINI_ARRAY_SIZE(names); k++)
        names[n++] = k->name;
    const char *near = mini_closest(key, names, n);
    if (near)
        return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (did you mean %s.%s?)", s->name,
                            MINI_JSON_SHOW(key), s->name, near);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
        if (&sections[i] != s && find_key(&sections[i], key))
            return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (it belongs in the %s section: %s.%s)", s->name,
                                MINI_JSON_SHOW(key), sections[i].name, sections[i].name, key);
    struct mini_buf list = MINI_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        mini_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
    mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (%s keys: %s)", s->name, MINI_JSON_SHOW(key), s->name,
                 list.data ? list.data : "");
    mini_buf_free(&list);
    return -1;
}

/* Python-style numbers in strings, as pydantic's lax mode reads them. */
static bool str_to_int(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!(*p >= '0' && *p <= '9'))
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p)
        return false;
    *out = strtod(s, NULL);
    return fabs(*out) <= (double)MINI_JSON_INT_MAX;
}

static bool str_to_num(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || strpbrk(s, "xXpP"))
        return false;
    char *end;
    *out = strtod(s, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    return !*end;
}

static int str_to_bool(const char *s)
{
    static const char *const yes[] = { "1", "on", "t", "true", "y", "yes" };
    static const char *const no[] = { "0", "off", "f", "false", "n", "no" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(yes); i++) {
        if (!strcasecmp(s, yes[i]))
            return 1;
        if (!strcasecmp(s, no[i]))
            return 0;
    }
    return -1;
}

/* Replace item (a child of parent) with a new value. */
static int replace(cJSON *parent, cJSON *item, cJSON *with, struct mini_err *e)
{
    if (!with)
        return nomem(e);
    cJSON_ReplaceItemInObjectCaseSensitive(parent, item->string, with);
    return 0;
}

static int check_value(cJSON *parent, cJSON *v, const struct keydef *k, const char *path, struct mini_err *e)
{
    double d;
    switch (k->type) {
    case V_STR:
        if (!cJSON_IsString(v))
            return type_error(e, path, "a string", v,
                              cJSON_IsNumber(v) || cJSON_IsBool(v) ? " (quote it in YAML)" : NULL);
        return 0;
    case V_STR_NULL:
        if (!cJSON_IsString(v) && !cJSON_IsNull(v))
            return type_error(e, path, "a string or null", v, NULL);
        return 0;
    case V_INT:
        if (cJSON_IsNumber(v)) {
            d = v->valuedouble;
            if (!isfinite(d) || d != floor(d) || fabs(d) > (double)MINI_JSON_INT_MAX)
                return type_error(e, path, "an integer", v, NULL);
            set_int(v); /* pydantic makes an int of 10.0 */
            return 0;
        }
        if (cJSON_IsString(v) && str_to_int(v->valuestring, &d))
            return replace(parent, v, cJSON_CreateNumber(d), e);
        return type_error(e, path, "an integer", v, NULL);
    case V_NUM: /* pydantic makes a float of 3: it prints as 3.0 */
        if (cJSON_IsNumber(v))
            return mini_json_is_float(v) || mini_json_mark_float(v) == 0 ? 0 : nomem(e);
        if (cJSON_IsString(v) && str_to_num(v->valuestring, &d))
            return replace(parent, v, mini_json_create_float(d), e);
        return type_error(e, path, "a number", v, NULL);
    case V_BOOL: {
        if (cJSON_IsBool(v))
            return 0;
        int b = -1;
        if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
            b = v->valuedouble == 1;
        else if (cJSON_IsString(v))
            b = str_to_bool(v->valuestring);
        if (b < 0)
            return type_error(e, path, "true or false", v, NULL);
        return replace(parent, v, cJSON_CreateBool(b), e);
    }
    case V_ENUM:
    case V_ENUM_NULL: {
        if (k->type == V_ENUM_NULL && cJSON_IsNull(v))
            return 0;
        if (cJSON_IsString(v))
            for (const char *const *c = k->choices; *c; c++)
                if (!strcmp(v->valuestring, *c))
                    return 0;
        struct mini_buf want = MINI_BUF_INIT;
        mini_buf_puts(&want, "one of ");
        for (const char *const *c = k->choices; *c; c++)
            mini_buf_printf(&want, "%s\"%s\"", c == k->choices ? "" : ", ", *c);
        if (k->type == V_ENUM_NULL)
            mini_buf_puts(&want, ", null");
        type_error(e, path, want.data ? want.data : "one of the allowed values", v, NULL);
        mini_buf_free(&want);
        return -1;
    }
    case V_MAP:
        if (!cJSON_IsObject(v))
            return type_error(e, path, "a mapping", v, NULL);
        return 0;
    case V_MAP_STR: {
        if (!cJSON_IsObject(v))
            return type_error(e, path, "a mapping of names to strings", v, NULL);
        cJSON *c;
        cJSON_ArrayForEach (c, v) {
            if (!cJSON_IsString(c)) {
                char sub[600];
                snprintf(sub, sizeof sub, "%s.%.*s", path, MINI_JSON_SHOW(c->string));
                return type_error(e, sub, "a string", c, cJSON_IsNull(c) ? NULL : " (quote it in YAML)");
            }
        }
        return 0;
    }
    case V_LIST:
        if (!cJSON_IsArray(v))
            return type_error(e, path, "a list", v, NULL);
        return 0;
    case V_LIST_STR: {
        if (!cJSON_IsArray(v))
            return type_error(e, path, "a list of strings", v, NULL);
        int i = 0;
        cJSON *c;
        cJSON_ArrayForEach (c, v) {
            if (!cJSON_IsString(c)) {
                char sub[600];
                snprintf(sub, sizeof sub, "%s[%d]", path, i);
                return type_error(e, sub, "a string", c, NULL);
            }
            i++;
        }
        return 0;
    }
    }
    return 0;
}

/* Add key = value to obj unless it is there.  value is consumed. */
static int add_default(cJSON *obj, const char *key, cJSON *value, struct mini_err *e)
{
    if (!value)
        return nomem(e);
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
        cJSON_Delete(value);
        return 0;
    }
    if (!cJSON_AddItemToObject(obj, key, value)) {
        cJSON_Delete(value);
        return nomem(e);
    }
    return 0;
}

static bool contains_ci(const char *hay, const char *needle) { return hay && strcasestr(hay, needle); }

/* Shorten a mini-swe-agent import path to our name for it. */
static int normalize_class(cJSON *sec, const char *key, const char *const (*aliases)[2], size_t n,
                           const char *const *supported, const char *sec_name, const char *hint, struct mini_err *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(sec, key);
    if (!v)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v->valuestring, aliases[i][0]))
            return replace(sec, v, cJSON_CreateString(aliases[i][1]), e);
    for (const char *const *s = supported; *s; s++)
        if (!strcmp(v->valuestring, *s))
            return 0;
    struct mini_buf list = MINI_BUF_INIT;
    for (const char *const *s = supported; *s; s++)
        mini_buf_printf(&list, "%s%s", s == supported ? "" : ", ", *s);
    mini_err_set(e, MINI_E_CONFIG, "%s.%s: \"%.*s\" is not supported (supported: %s)%s", sec_name, key,
                 MINI_JSON_SHOW(v->valuestring), list.data ? list.data : "", hint ? hint : "");
    mini_buf_free(&list);
    return -1;
}

static int fill_agent(cJSON *a, struct mini_err *e)
{
    static const char *const aliases[][2] = {
        { "minisweagent.agents.default.DefaultAgent", "default" },
        { "minisweagent.agents.interactive.InteractiveAgent", "interactive" },
    };
    static const char *const supported[] = { "interactive", "default", NULL };
    if (normalize_class(a, "agent_class", aliases, MINI_ARRAY_SIZE(aliases), supported, "agent", NULL, e) < 0)
        return -1;
    for (const char *const *req = (const char *const[]){ "system_template", "instance_template", NULL }; *req; req++)
        if (!cJSON_GetObjectItemCaseSensitive(a, *req))
            return mini_err_set(e, MINI_E_CONFIG,
                                "agent.%s: missing (mini-swe-agent requires it; did the -c list leave out the "
                                "base config? write -c mini -c KEY=VALUE)",
                                *req);
    if (add_default(a, "agent_class", cJSON_CreateString("interactive"), e) < 0 ||
        add_default(a, "step_limit", cJSON_CreateNumber(0), e) < 0 ||
        add_default(a, "cost_limit", mini_json_create_float(3.0), e) < 0 ||
        add_default(a, "wall_time_limit_seconds", cJSON_CreateNumber(0), e) < 0 ||
        add_default(a, "max_consecutive_format_errors", cJSON_CreateNumber(3), e) < 0 ||
        add_default(a, "output_path", cJSON_CreateNull(), e) < 0 ||
        add_default(a, "mode", cJSON_CreateString("confirm"), e) < 0 ||
        add_default(a, "whitelist_actions", cJSON_CreateArray(), e) < 0 ||
        add_default(a, "confirm_exit", cJSON_CreateTrue(), e) < 0)
        return -1;
    return 0;
}

static int fill_model(cJSON *m, struct mini_err *e)
{
    const char *cls = mini_config_get_string(m, "model_class");
    bool textbased = contains_ci(cls, "textbased");
    bool deterministic = contains_ci(cls, "deterministic");
    bool replay = cls && (!strcmp(cls, "replay") || contains_ci(cls, "replaymodel"));

    /* model_name: the config's, else $MSWEA_MODEL_NAME (get_model_name). */
    const char *name = mini_config_get_string(m, "model_name");
    if (!name || !*name) {
        const char *env = getenv("MSWEA_MODEL_NAME");
        const char *use = env && *env ? env : deterministic ? "deterministic" : replay ? "replay" : NULL;
        if (!use)
            return mini_err_set(e, MINI_E_CONFIG,
                                "model.model_name: no model set: pass -m MODEL, set model.model_name in a config "
                                "(-c model.model_name=MODEL), or set MSWEA_MODEL_NAME (for example in the .env "
                                "file of the global config directory)");
        cJSON *old = cJSON_GetObjectItemCaseSensitive(m, "model_name");
        if (old ? replace(m, old, cJSON_CreateString(use), e) < 0
                : add_default(m, "model_name", cJSON_CreateString(use), e) < 0)
            return -1;
        name = use;
    }

    const char *ct = getenv("MSWEA_COST_TRACKING");
    if (ct && *ct && !cJSON_GetObjectItemCaseSensitive(m, "cost_tracking") && strcmp(ct, "default") &&
        strcmp(ct, "ignore_errors"))
        return mini_err_set(e, MINI_E_CONFIG,
                            "MSWEA_COST_TRACKING: must be \"default\" or \"ignore_errors\", got "
                            "\"%.*s\"",
                            MINI_JSON_SHOW(ct));
    const char *reg = getenv("LITELLM_MODEL_REGISTRY_PATH");
    /* get_model picks Anthropic's cache markers unless the config chose. */
    bool anthropic = contains_ci(name, "anthropic") || contains_ci(name, "sonnet") || contains_ci(name, "opus") ||
        contains_ci(name, "claude");
    if (add_default(m, "model_kwargs", cJSON_CreateObject(), e) < 0 ||
        add_default(m, "litellm_model_registry", reg && *reg ? cJSON_CreateString(reg) : cJSON_CreateNull(), e) < 0 ||
        add_default(m, "set_cache_control", anthropic ? cJSON_CreateString("default_end") : cJSON_CreateNull(), e) <
            0 ||
        add_default(m, "cost_tracking", cJSON_CreateString(ct && *ct ? ct : "default"), e) < 0 ||
        add_default(m, "format_error_template",
                    cJSON_CreateString(textbased || deterministic ? DEFAULT_TEXT_FORMAT_ERROR : "{{ error }}"),
                    e) < 0 ||
        add_default(m, "observation_template", cJSON_CreateString(DEFAULT_OBSERVATION_TEMPLATE), e) < 0 ||
        add_default(m, "multimodal_regex", cJSON_CreateString(""), e) < 0)
        return -1;
    if ((textbased || deterministic) && add_default(m, "action_regex", cJSON_CreateString(DEFAULT_ACTION_REGEX), e) < 0)
        return -1;
    if (deterministic && add_default(m, "cost_per_call", mini_json_create_float(1.0), e) < 0)
        return -1;
    return 0;
}

static int fill_environment(cJSON *env, bool container, struct mini_err *e)
{
    static const char *const aliases[][2] = {
        { "minisweagent.environments.local.LocalEnvironment", "local" },
    };
    static const char *const supported[] = { "local", "sandbox", NULL };
    /* An image is the sandbox's root (mini-sandbox image import).  With
     * any other class the commands would run on this machine instead of
     * in the image: refused, never taken to mean the host. */
    const char *img = mini_config_get_string(env, "image");
    const char *ecls = mini_config_get_string(env, "environment_class");
    if (img && *img && !(ecls && !strcmp(ecls, "sandbox"))) {
        const char *shown = ecls ? ecls : "local";
        for (size_t i = 0; i < MINI_ARRAY_SIZE(container_classes); i++)
            if (!strcmp(shown, container_classes[i][1]))
                shown = container_classes[i][0];
        return mini_err_set(e, MINI_E_CONFIG,
                            "environment.image: \"%.*s\" is a container image, but environment_class %.*s would run "
                            "the commands on this machine, not in it; use --sandbox PROFILE (images come from "
                            "mini-sandbox image import), or drop the image",
                            MINI_JSON_SHOW(img), MINI_JSON_SHOW(shown));
    }
    cJSON *cls = cJSON_GetObjectItemCaseSensitive(env, "environment_class");
    for (size_t i = 0; cls && i < MINI_ARRAY_SIZE(container_classes); i++)
        if (!strcmp(cls->valuestring, container_classes[i][0]) || !strcmp(cls->valuestring, container_classes[i][1])) {
            cfg_warn("environment.environment_class: %s is not available in mini (containers: issue P9); the "
                     "commands run on this machine, as with local (--sandbox PROFILE isolates them)",
                     container_classes[i][0]);
            if (replace(env, cls, cJSON_CreateString("local"), e) < 0)
                return -1;
            container = true;
            break;
        }
    /* A container's working directory is a path inside its image; when
     * this machine has no such directory the commands start in the
     * current one (the workspace). */
    const char *ccwd = mini_config_get_string(env, "cwd");
    if (container && ccwd && *ccwd && !is_dir(ccwd)) {
        cfg_warn("environment.cwd: \"%.*s\" is a directory of the container and does not exist here; ignored: the "
                 "commands start in the current directory",
                 MINI_JSON_SHOW(ccwd));
        cJSON_DeleteItemFromObjectCaseSensitive(env, "cwd");
    }
    if (normalize_class(env, "environment_class", aliases, MINI_ARRAY_SIZE(aliases), supported, "environment",
                        " (mini runs commands on this machine, or isolated with environment_class sandbox)", e) < 0)
        return -1;
    if (add_default(env, "environment_class", cJSON_CreateString("local"), e) < 0)
        return -1;
    bool sandbox = !strcmp(mini_config_get_string(env, "environment_class"), "sandbox");
    /* cwd is left out when not set: absent means the current directory
     * (mini-swe-agent's default is "", with the same meaning). */
    if (add_default(env, "env", cJSON_CreateObject(), e) < 0 ||
        add_default(env, "timeout", cJSON_CreateNumber(sandbox ? 0 : 30), e) < 0)
        return -1;
    if (!sandbox)
        return 0;
    const char *profile = mini_config_get_string(env, "profile");
    if (profile && !*profile)
        return mini_err_set(e, MINI_E_CONFIG,
                            "environment.profile: must not be empty (strict, standard, "
                            "permissive, or a profile file)");
    /* The workspace defaults to cwd when that is set (the sandbox mounts
     * the directory the commands start in), else the current directory;
     * made absolute. */
    const char *ws = mini_config_get_string(env, "workspace");
    if (!ws || !*ws)
        ws = mini_config_get_string(env, "cwd");
    if (!ws || !*ws || ws[0] != '/') {
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return mini_err_sys(e, MINI_E_CONFIG, errno, "environment.workspace: finding the current directory");
        _cleanup_free_ char *abs = ws && *ws ? path_join(cwd, ws) : strdup(cwd);
        cJSON *old = cJSON_GetObjectItemCaseSensitive(env, "workspace");
        cJSON *nv = abs ? cJSON_CreateString(abs) : NULL;
        if (old ? replace(env, old, nv, e) < 0 : add_default(env, "workspace", nv, e) < 0)
            return -1;
    }
    /* socket is left out when not set: the default daemon socket. */
    if (add_default(env, "profile", cJSON_CreateString("standard"), e) < 0 ||
        add_default(env, "forward_env", cJSON_CreateArray(), e) < 0)
        return -1;
    return 0;
}

int mini_config_validate(cJSON *cfg, struct mini_err *e)
{
    if (!cJSON_IsObject(cfg))
        return mini_err_set(e, MINI_E_CONFIG, "the configuration must be a mapping");
    bool container = false; /* written for a container: its cwd is inside it */
    for (cJSON *sec = cfg->child, *next_sec; sec; sec = next_sec) {
        next_sec = sec->next;
        const struct section *s = NULL;
        for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
            if (!strcmp(sections[i].name, sec->string))
                s = &sections[i];
        if (!s) {
            const char *names[MINI_ARRAY_SIZE(sections)];
            for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
                names[i] = sections[i].name;
            const char *near = mini_closest(sec->string, names, MINI_ARRAY_SIZE(names));
            if (near)
                return mini_err_set(e, MINI_E_CONFIG, "%.*s: unknown section (did you mean %s?)",
                                    MINI_JSON_SHOW(sec->string), near);
            if (!strcmp(sec->string, "env"))
                return mini_err_set(e, MINI_E_CONFIG,
                                    "env: unknown section (variables for the commands go in "
                                    "environment.env)");
            return mini_err_set(e, MINI_E_CONFIG,
                                "%.*s: unknown section (the sections are agent, environment, "
                                "model, run and policy)",
                                MINI_JSON_SHOW(sec->string));
        }
        if (cJSON_IsNull(sec)) { /* "agent:" with nothing under it */
            if (replace(cfg, sec, cJSON_CreateObject(), e) < 0)
                return -1;
            continue;
        }
        if (!cJSON_IsObject(sec))
            return type_error(e, s->name, "a mapping", sec, NULL);
        for (cJSON *item = sec->child, *next; item; item = next) {
            next = item->next; /* check_value may replace item */
            const struct keydef *k = find_key(s, item->string);
            if (!k && ignored_key(s->name, item->string)) {
                if (!strcmp(s->name, "environment"))
                    container = true;
                cJSON_Delete(cJSON_DetachItemViaPointer(sec, item));
                continue;
            }
            if (!k)
                return unknown_key(e, s, item->string);
            char path[256];
            snprintf(path, sizeof path, "%s.%s", s->name, k->name);
            if (check_value(sec, item, k, path, e) < 0)
                return -1;
        }
    }
    for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
        if (strcmp(sections[i].name, "policy") != 0 && add_default(cfg, sections[i].name, cJSON_CreateObject(), e) < 0)
            return -1;
    if (fill_agent(cJSON_GetObjectItemCaseSensitive(cfg, "agent"), e) < 0 ||
        fill_model(cJSON_GetObjectItemCaseSensitive(cfg, "model"), e) < 0 ||
        fill_environment(cJSON_GetObjectItemCaseSensitive(cfg, "environment"), container, e) < 0)
        return -1;
    return 0;
}
