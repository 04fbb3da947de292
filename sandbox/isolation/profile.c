/* Sandbox profiles: JSON <-> struct mini_profile, defaults, copies,
 * request overrides.  docs/profiles.md describes the schema; the keys and
 * what each takes are the table in profile_schema.c, which everything here
 * walks.  Every omitted key takes the value it has in profiles/strict.json
 * (the table's defaults), so a partial profile is never looser than strict
 * by accident. */
#include "profile_schema.h"
#include "mini/path.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/str.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_FILE_MAX (1024u * 1024u)

/* ----------------------------------------------------------------- features */

static const char *const feature_names[MINI_FEAT_COUNT] = {
    "user_ns",   "pid_ns",  "net_ns",   "mount_ns", "ipc_ns",  "uts_ns",
    "cgroup_ns", "seccomp", "landlock", "cgroups",  "overlay",
};

const char *mini_feature_name(unsigned bit_index)
{
    return bit_index < MINI_FEAT_COUNT ? feature_names[bit_index] : NULL;
}

unsigned mini_feature_from_name(const char *name)
{
    for (unsigned i = 0; name && i < MINI_FEAT_COUNT; i++)
        if (strcmp(feature_names[i], name) == 0)
            return 1u << i;
    return 0;
}

/* ------------------------------------------------------------ helpers */

int mini_prof_pfail(const struct pctx *c, const char *path, const char *fmt, ...)
{
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->origin)
        return mini_err_set(c->e, c->code, "%s: %s: %s", c->origin, path, msg);
    return mini_err_set(c->e, c->code, "%s: %s", path, msg);
}

int mini_prof_pnomem(const struct pctx *c) { return mini_err_set(c->e, MINI_E_NOMEM, "out of memory"); }

/* A key path cut to KP_MAX bytes ends in "...". */
static const char *kp_end(char *buf, int n)
{
    if (n >= KP_MAX)
        memcpy(buf + KP_MAX - 4, "...", 4);
    return buf;
}

/* "parent.key", or "key" at the top level. */
const char *mini_prof_kp(char *buf, const char *parent, const char *key)
{
    if (parent[0])
        return kp_end(buf, snprintf(buf, KP_MAX, "%s.%s", parent, key));
    return kp_end(buf, snprintf(buf, KP_MAX, "%s", key));
}

const char *mini_prof_kpi(char *buf, const char *parent, size_t i)
{
    return kp_end(buf, snprintf(buf, KP_MAX, "%s[%zu]", parent, i));
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* "PATH: unknown key", with the closest of the keys allowed there as a
 * suggestion when one is near (a typo). */
static int unknown_key(const struct pctx *c, const char *path, const char *key, const char *const *allowed,
                       size_t n_allowed)
{
    const char *near = mini_closest(key, allowed, n_allowed);
    if (near)
        return mini_prof_pfail(c, path, "unknown key (did you mean %s?)", near);
    return mini_prof_pfail(c, path, "unknown key");
}

int mini_prof_get_bool(const struct pctx *c, const cJSON *obj, const char *path, const char *key, bool *out)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return mini_prof_pfail(c, mini_prof_kp(buf, path, key), "must be true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The string at obj.key, NULL if absent; *bad on a wrong type. */
const char *mini_prof_get_str(const struct pctx *c, const cJSON *obj, const char *path, const char *key, bool *bad)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *bad = false;
    if (!v)
        return NULL;
    if (!cJSON_IsString(v)) {
        *bad = true;
        mini_prof_pfail(c, mini_prof_kp(buf, path, key), "must be a string");
        return NULL;
    }
    return v->valuestring;
}

/* The integer v (at `path`) in [min, max]. */
static int uint_value(const struct pctx *c, const cJSON *v, const char *path, uint64_t min, uint64_t max, uint64_t *out)
{
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (d >= (double)min && d > (double)max)
        return mini_prof_pfail(c, path, "must be at most %llu", (unsigned long long)max);
    if (!(d >= (double)min) || d != (double)(uint64_t)d)
        return mini_prof_pfail(c, path, min ? "must be a positive integer" : "must be a non-negative integer");
    *out = (uint64_t)d;
    return 0;
}

/* An integer in [min, max].  Not present: *out untouched. */
int mini_prof_get_uint(const struct pctx *c, const cJSON *obj, const char *path, const char *key, uint64_t min,
                       uint64_t max, uint64_t *out)
{
    char buf[KP_MAX];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v ? uint_value(c, v, mini_prof_kp(buf, path, key), min, max, out) : 0;
}

int mini_prof_push_str(char ***v, size_t *n, const char *s)
{
    char *copy = strdup(s);
    char **grown = copy ? realloc(*v, (*n + 1) * sizeof **v) : NULL;
    if (!grown) {
        free(copy);
        return -1;
    }
    *v = grown;
    (*v)[(*n)++] = copy;
    return 0;
}

void mini_prof_free_strv(char ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*v)[i]);
    free(*v);
    *v = NULL;
    *n = 0;
}

/* Normalise an absolute path: no empty or "." components, no trailing "/".
 * NULL with *why set when it is not absolute, holds "..", or is too long. */
static char *norm_path(const char *in, const char **why)
{
    if (in[0] != '/') {
        *why = "must be an absolute path";
        return NULL;
    }
    size_t len = strlen(in);
    if (len >= PATH_MAX) {
        *why = "is too long";
        return NULL;
    }
    char *out = malloc(len + 2);
    if (!out) {
        *why = NULL;
        return NULL;
    }
    size_t o = 0;
    for (const char *s = in; *s;) {
        while (*s == '/')
            s++;
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            free(out);
            *why = "must not contain \"..\"";
            return NULL;
        }
        if (n > 0 && !(n == 1 && s[0] == '.')) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

/* The normalised path of a JSON value at `path`; NULL with e filled. */
char *mini_prof_get_path(const struct pctx *c, const cJSON *v, const char *path, bool allow_root)
{
    if (!cJSON_IsString(v)) {
        mini_prof_pfail(c, path, "must be an absolute path");
        return NULL;
    }
    const char *why;
    char *n = norm_path(v->valuestring, &why);
    if (!n) {
        if (why)
            mini_prof_pfail(c, path, "%s", why);
        else
            mini_prof_pnomem(c);
        return NULL;
    }
    if (!allow_root && strcmp(n, "/") == 0) {
        free(n);
        mini_prof_pfail(c, path, "must not be \"/\"");
        return NULL;
    }
    return n;
}

bool mini_prof_strv_has(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* ----------------------------------------------------------- the table */

const char *mini_prof_pkey_name(const struct pkey *k)
{
    const char *dot = strrchr(k->path, '.');
    return dot ? dot + 1 : k->path;
}

bool mini_prof_pkey_in(const struct pkey *k, const char *parent)
{
    size_t n = strlen(parent);
    if (!n)
        return !strchr(k->path, '.');
    return strncmp(k->path, parent, n) == 0 && k->path[n] == '.' && !strchr(k->path + n + 1, '.');
}

#define FOR_KEYS(k) for (const struct pkey *k = mini_profile_keys; k < mini_profile_keys + mini_profile_n_keys; k++)

static const struct pkey *find_key(const char *parent, const char *name)
{
    FOR_KEYS(k)
    if (mini_prof_pkey_in(k, parent) && strcmp(mini_prof_pkey_name(k), name) == 0)
        return k;
    return NULL;
}

#define MAX_SECTION_KEYS 32

/* The names of the keys of `parent`: all, or those overrides may change. */
static size_t section_keys(const char *parent, bool overridable, const char **names)
{
    size_t n = 0;
    FOR_KEYS(k)
    if (mini_prof_pkey_in(k, parent) && (!overridable || k->ov != OV_NO) && n < MAX_SECTION_KEYS)
        names[n++] = mini_prof_pkey_name(k);
    return n;
}

/* An object whose keys are all keys of `parent` in the table. */
int mini_prof_check_keys(const struct pctx *c, const cJSON *v, const char *path, const char *parent)
{
    char buf[KP_MAX];
    const char *names[MAX_SECTION_KEYS];
    size_t n = section_keys(parent, false, names);
    if (!cJSON_IsObject(v))
        return mini_prof_pfail(c, path, "must be an object");
    for (const cJSON *it = v->child; it; it = it->next)
        if (!in_list(it->string, names, n))
            return unknown_key(c, mini_prof_kp(buf, path, it->string), it->string, names, n);
    return 0;
}

#define AT(p, k, type) ((type *)((char *)(p) + (k)->off))
#define AT_N(p, k) ((size_t *)((char *)(p) + (k)->off_n))

/* A PK_STRV's items at `path` appended to its list; those already there
 * fail, or are skipped with skip_dups (overrides). */
static int parse_strv(const struct pctx *c, const struct pkey *k, const cJSON *arr, const char *path,
                      struct mini_profile *p, bool skip_dups)
{
    char buf[KP_MAX];
    char ***v = AT(p, k, char **);
    size_t *n = AT_N(p, k);
    if (!cJSON_IsArray(arr))
        return mini_prof_pfail(c, path, "must be an array of %s", k->items);
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        _cleanup_free_ char *s = k->item(c, it, mini_prof_kpi(buf, path, i));
        if (!s)
            return -1;
        if (mini_prof_strv_has(*v, *n, s)) {
            if (skip_dups)
                continue;
            return mini_prof_pfail(c, buf, "\"%s\" is listed twice", s);
        }
        if (mini_prof_push_str(v, n, s) < 0)
            return mini_prof_pnomem(c);
    }
    return 0;
}

static int parse_section(const struct pctx *c, const cJSON *obj, const char *parent, const char *path,
                         struct mini_profile *p);

/* One key's value v (NULL: absent, for PKF_ABSENT) at `path`. */
static int parse_key(const struct pctx *c, const struct pkey *k, const cJSON *v, const char *path,
                     struct mini_profile *p)
{
    if (k->parse)
        return k->parse(c, v, path, p);
    switch (k->type) {
    case PK_SECTION: return parse_section(c, v, k->path, path, p);
    case PK_BOOL:
    case PK_FLAG: {
        if (!cJSON_IsBool(v))
            return mini_prof_pfail(c, path, "must be true or false");
        if (k->type == PK_BOOL)
            *AT(p, k, bool) = cJSON_IsTrue(v);
        else if (cJSON_IsTrue(v))
            *AT(p, k, unsigned) |= k->bit;
        else
            *AT(p, k, unsigned) &= ~k->bit;
        return 0;
    }
    case PK_UINT: {
        uint64_t val = 0;
        if (uint_value(c, v, path, k->min, k->max, &val) < 0)
            return -1;
        *AT(p, k, uint64_t) = val * k->unit;
        return 0;
    }
    case PK_NUMBER:
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
            return mini_prof_pfail(c, path, "must be a positive number");
        if (v->valuedouble > k->dmax)
            return mini_prof_pfail(c, path, "must be at most %.0f", k->dmax);
        *AT(p, k, double) = v->valuedouble;
        return 0;
    case PK_STRING: {
        if (!cJSON_IsString(v))
            return mini_prof_pfail(c, path, "must be a string");
        char *s = strdup(v->valuestring);
        if (!s)
            return mini_prof_pnomem(c);
        free(*AT(p, k, char *));
        *AT(p, k, char *) = s;
        return 0;
    }
    case PK_ENUM: {
        if (!cJSON_IsString(v))
            return mini_prof_pfail(c, path, "must be a string");
        for (size_t i = 0; i < k->n_names; i++)
            if (strcmp(k->names[i].name, v->valuestring) == 0) {
                *AT(p, k, int) = k->names[i].value;
                return 0;
            }
        char list[256];
        size_t at = 0;
        for (size_t i = 0; i < k->n_names && at < sizeof list; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s\"%s\"",
                                   !i                       ? ""
                                       : i + 1 < k->n_names ? ", "
                                                            : " or ",
                                   k->names[i].name);
        return mini_prof_pfail(c, path, "must be %s", list);
    }
    case PK_STRV:
        if (!cJSON_IsArray(v))
            return mini_prof_pfail(c, path, "must be an array of %s", k->items);
        mini_prof_free_strv(AT(p, k, char **), AT_N(p, k));
        return parse_strv(c, k, v, path, p, false);
    case PK_CUSTOM:
    case PK_ITEMKEY: break;
    }
    return 0;
}

/* The keys of section `parent` from obj, in the table's order; `path` is
 * the section's in messages. */
static int parse_section(const struct pctx *c, const cJSON *obj, const char *parent, const char *path,
                         struct mini_profile *p)
{
    char buf[KP_MAX];
    if (mini_prof_check_keys(c, obj, path, parent) < 0)
        return -1;
    FOR_KEYS(k)
    {
        if (!mini_prof_pkey_in(k, parent) || k->type == PK_ITEMKEY)
            continue;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, mini_prof_pkey_name(k));
        if (!v && !(k->flags & PKF_ABSENT))
            continue;
        mini_prof_kp(buf, path, mini_prof_pkey_name(k));
        if ((v || k->parse) && parse_key(c, k, v, buf, p) < 0)
            return -1;
        if (k->check && k->check(c, p) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ profile */

int mini_profile_add_hide(struct mini_profile *p, const char *path)
{
    if (mini_prof_strv_has(p->hide, p->n_hide, path))
        return 0;
    return mini_prof_push_str(&p->hide, &p->n_hide, path);
}

void mini_profile_free(struct mini_profile *p)
{
    if (!p)
        return;
    FOR_KEYS(k)
    {
        if (k->type == PK_STRING)
            free(*AT(p, k, char *));
        else if (k->type == PK_STRV)
            mini_prof_free_strv(AT(p, k, char **), AT_N(p, k));
        if (k->release)
            k->release(p);
    }
    free(p);
}

static void profile_freep(struct mini_profile **p) { mini_profile_free(*p); }
#define _cleanup_profile_ _cleanup_(profile_freep)

/* The built-in defaults: profiles/strict.json without its name, description
 * and require (tests/unit/test_profile.c checks that the two agree). */
static struct mini_profile *profile_defaults(void)
{
    _cleanup_profile_ struct mini_profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    FOR_KEYS(k)
    {
        switch (k->type) {
        case PK_BOOL: *AT(p, k, bool) = k->dflt_bool; break;
        case PK_FLAG:
            if (k->dflt_bool)
                *AT(p, k, unsigned) |= k->bit;
            break;
        case PK_UINT: *AT(p, k, uint64_t) = k->dflt_uint * k->unit; break;
        case PK_NUMBER: *AT(p, k, double) = k->dflt_number; break;
        case PK_ENUM: *AT(p, k, int) = k->dflt_int; break;
        case PK_STRING:
            if (k->dflt_str && !(*AT(p, k, char *) = strdup(k->dflt_str)))
                return NULL;
            break;
        case PK_STRV:
            for (size_t i = 0; k->dflt_strv && k->dflt_strv[i]; i++)
                if (mini_prof_push_str(AT(p, k, char **), AT_N(p, k), k->dflt_strv[i]) < 0)
                    return NULL;
            break;
        case PK_SECTION:
        case PK_CUSTOM:
        case PK_ITEMKEY: break;
        }
        if (k->fill && k->fill(p) < 0)
            return NULL;
    }
    return TAKE_PTR(p);
}

static int parse_profile(const struct pctx *c, const cJSON *obj, struct mini_profile *p)
{
    if (!cJSON_IsObject(obj))
        return c->origin ? mini_err_set(c->e, c->code, "%s: a profile must be a JSON object", c->origin)
                         : mini_err_set(c->e, c->code, "a profile must be a JSON object");
    return parse_section(c, obj, "", "", p);
}

struct mini_profile *mini_profile_from_json(const cJSON *obj, const char *origin, struct mini_err *e)
{
    struct pctx c = { origin, MINI_E_PROFILE_INVALID, e, obj };
    _cleanup_profile_ struct mini_profile *p = profile_defaults();
    if (!p) {
        mini_prof_pnomem(&c);
        return NULL;
    }
    if (parse_profile(&c, obj, p) < 0)
        return NULL;
    return TAKE_PTR(p);
}

struct mini_profile *mini_profile_load_file(const char *path, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, PROFILE_FILE_MAX, e) < 0)
        return NULL;
    cJSON *obj = mini_json_parse_object(b.data, b.len, e);
    if (!obj) {
        if (e && e->code == MINI_E_BAD_REQUEST)
            e->code = MINI_E_PROFILE_INVALID;
        mini_err_prefix(e, "%s", path);
        return NULL;
    }
    struct mini_profile *p = mini_profile_from_json(obj, path, e);
    cJSON_Delete(obj);
    return p;
}

struct mini_profile *mini_profile_load_builtin(const char *dir, const char *name, struct mini_err *e)
{
    size_t len = strlen(name);
    if (len == 0 || len > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != len) {
        mini_err_set(e, MINI_E_PROFILE_INVALID,
                     "invalid profile name \"%.64s\" (expected [a-z0-9_-], 1 to 64 characters)", name);
        return NULL;
    }
    char *built;
    if (asprintf(&built, "%s/%s.json", dir, name) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    _cleanup_free_ char *path = built;
    struct mini_err err;
    mini_err_clear(&err);
    struct mini_profile *p = mini_profile_load_file(path, &err);
    if (!p && err.code == MINI_E_IO && err.sys_errno == ENOENT)
        mini_err_set(e, MINI_E_PROFILE_INVALID, "no built-in profile \"%s\" (looked for %s)", name, path);
    else if (!p && e)
        *e = err;
    return p;
}

/* ------------------------------------------------------------- to_json */

/* cJSON_AddItemToArray() that owns `item` even on failure (arr may be NULL). */
bool mini_prof_json_push(cJSON *arr, cJSON *item)
{
    if (item && cJSON_AddItemToArray(arr, item))
        return true;
    cJSON_Delete(item);
    return false;
}

bool mini_prof_add_strv(cJSON *obj, const char *key, char **v, size_t n)
{
    cJSON *a = cJSON_AddArrayToObject(obj, key);
    bool ok = a != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = mini_prof_json_push(a, cJSON_CreateString(v[i]));
    return ok;
}

static bool emit_section(cJSON *o, const char *parent, const struct mini_profile *p)
{
    FOR_KEYS(k)
    {
        if (!mini_prof_pkey_in(k, parent) || k->type == PK_ITEMKEY || (k->shown && !k->shown(p)))
            continue;
        const char *key = mini_prof_pkey_name(k);
        const void *cp = p;
        bool ok = true;
        if (k->emit) {
            ok = k->emit(o, key, p);
        } else {
            switch (k->type) {
            case PK_SECTION: {
                cJSON *sub = cJSON_AddObjectToObject(o, key);
                ok = sub && emit_section(sub, k->path, p);
                break;
            }
            case PK_BOOL: ok = cJSON_AddBoolToObject(o, key, *AT(cp, k, const bool)); break;
            case PK_FLAG: ok = cJSON_AddBoolToObject(o, key, (*AT(cp, k, const unsigned) & k->bit) != 0); break;
            case PK_UINT: ok = cJSON_AddNumberToObject(o, key, (double)(*AT(cp, k, const uint64_t) / k->unit)); break;
            case PK_NUMBER: ok = cJSON_AddNumberToObject(o, key, *AT(cp, k, const double)); break;
            case PK_STRING: {
                const char *s = *AT(cp, k, char *const);
                if (s || (k->flags & PKF_OUT_EMPTY))
                    ok = cJSON_AddStringToObject(o, key, s ? s : "");
                break;
            }
            case PK_ENUM: {
                int v = *AT(cp, k, const int);
                const char *name = NULL;
                for (size_t i = 0; i < k->n_names; i++)
                    if (k->names[i].value == v)
                        name = k->names[i].name;
                ok = name ? cJSON_AddStringToObject(o, key, name) != NULL : cJSON_AddNumberToObject(o, key, v) != NULL;
                break;
            }
            case PK_STRV: ok = mini_prof_add_strv(o, key, *AT(cp, k, char **const), *AT_N(cp, k)); break;
            case PK_CUSTOM:
            case PK_ITEMKEY: break;
            }
        }
        if (!ok)
            return false;
    }
    return true;
}

cJSON *mini_profile_to_json(const struct mini_profile *p)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !emit_section(o, "", p)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ----------------------------------------------------------------- dup */

struct mini_profile *mini_profile_dup(const struct mini_profile *p)
{
    _cleanup_profile_ struct mini_profile *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    FOR_KEYS(k)
    {
        switch (k->type) {
        case PK_BOOL: *AT(d, k, bool) = *AT(p, k, const bool); break;
        case PK_FLAG: *AT(d, k, unsigned) |= *AT(p, k, const unsigned) & k->bit; break;
        case PK_UINT: *AT(d, k, uint64_t) = *AT(p, k, const uint64_t); break;
        case PK_NUMBER: *AT(d, k, double) = *AT(p, k, const double); break;
        case PK_ENUM: *AT(d, k, int) = *AT(p, k, const int); break;
        case PK_STRING: {
            const char *s = *AT(p, k, char *const);
            if (s && !(*AT(d, k, char *) = strdup(s)))
                return NULL;
            break;
        }
        case PK_STRV: {
            char **v = *AT(p, k, char **const);
            for (size_t i = 0; i < *AT_N(p, k); i++)
                if (mini_prof_push_str(AT(d, k, char **), AT_N(d, k), v[i]) < 0)
                    return NULL;
            break;
        }
        case PK_CUSTOM: memcpy((char *)d + k->off, (const char *)p + k->off, k->size); break;
        case PK_SECTION:
        case PK_ITEMKEY: break;
        }
        if (k->dup && k->dup(d, p) < 0)
            return NULL;
    }
    return TAKE_PTR(d);
}

/* ----------------------------------------------------------- overrides */

int mini_prof_ploosens(const struct pctx *c, const char *path, const char *fmt, ...)
{
    char msg[MINI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mini_err_set(c->e, MINI_E_LIMIT, "%s: %s", path, msg);
}

/* A section whose keys only tighten (OV_LOWER): read as a whole, then each
 * key compared with what the profile had, in the table's order. */
static int override_parsed(const struct pctx *c, const cJSON *v, const char *parent, const char *path,
                           struct mini_profile *n)
{
    char buf[KP_MAX];
    const struct mini_profile before = *n; /* its scalars only */
    if (parse_section(c, v, parent, path, n) < 0)
        return -1;
    FOR_KEYS(k)
    {
        if (!mini_prof_pkey_in(k, parent) || k->ov != OV_LOWER)
            continue;
        mini_prof_kp(buf, path, mini_prof_pkey_name(k));
        if (k->type == PK_NUMBER) {
            double old = *AT(&before, k, const double), want = *AT(n, k, double);
            if (want > old)
                return mini_prof_ploosens(c, buf, "%g would loosen the profile's %g", want, old);
        } else if (k->type == PK_UINT) {
            uint64_t old = *AT(&before, k, const uint64_t), want = *AT(n, k, uint64_t);
            /* 0 means unlimited: anything tightens it, and it loosens anything. */
            if (old != 0 && (want == 0 || want > old))
                return mini_prof_ploosens(c, buf, "%llu%s would loosen the profile's %llu",
                                          (unsigned long long)(want / k->unit), want ? "" : " (unlimited)",
                                          (unsigned long long)(old / k->unit));
        }
    }
    return 0;
}

/* Overrides of the keys of `parent` (the top: ""), key by key, each by its
 * entry's rule. */
static int override_keys(const struct pctx *c, const cJSON *v, const struct pkey *sec, const char *path,
                         struct mini_profile *n)
{
    const char *parent = sec ? sec->path : "";
    char buf[KP_MAX];
    if (!cJSON_IsObject(v))
        return mini_prof_pfail(c, path, "must be an object");
    for (const cJSON *it = v->child; it; it = it->next) {
        mini_prof_kp(buf, path, it->string);
        const struct pkey *k = find_key(parent, it->string);
        if (!k || k->type == PK_ITEMKEY) {
            const char *names[MAX_SECTION_KEYS];
            size_t nn = section_keys(parent, !(sec && (sec->flags & PKF_OV_SUGGEST)), names);
            return unknown_key(c, buf, it->string, names, nn);
        }
        int r = 0;
        switch (k->ov) {
        case OV_NO:
        case OV_LOWER: return mini_prof_pfail(c, buf, "cannot be overridden");
        case OV_SECTION_PARSE: r = override_parsed(c, it, k->path, buf, n); break;
        case OV_SECTION_KEYS: r = override_keys(c, it, k, buf, n); break;
        case OV_APPEND: r = parse_strv(c, k, it, buf, n, true); break;
        case OV_CUSTOM: r = k->override(c, it, buf, n); break;
        case OV_TRUE_TO_FALSE:
            if (!cJSON_IsBool(it))
                return mini_prof_pfail(c, buf, "must be true or false");
            if (cJSON_IsTrue(it) && !*AT(n, k, bool))
                return mini_prof_ploosens(c, buf, "true would loosen the profile's false");
            *AT(n, k, bool) = cJSON_IsTrue(it);
            break;
        }
        if (r < 0)
            return -1;
    }
    return 0;
}

int mini_profile_apply_overrides(struct mini_profile *p, const cJSON *ov, struct mini_err *e)
{
    struct pctx c = { NULL, MINI_E_BAD_REQUEST, e, NULL };
    if (!ov)
        return 0;
    if (!cJSON_IsObject(ov))
        return mini_prof_pfail(&c, "overrides", "must be an object");
    /* Work on a copy so that a failure leaves the profile as it was. */
    _cleanup_profile_ struct mini_profile *n = mini_profile_dup(p);
    if (!n)
        return mini_prof_pnomem(&c);
    if (override_keys(&c, ov, NULL, "overrides", n) < 0)
        return -1;
    struct mini_profile old = *p;
    *p = *n;
    *n = old;
    return 0;
}
