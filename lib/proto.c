/* The wire protocol's messages: validation (JSON -> structs), encoding
 * (structs -> JSON) and freeing, all driven by one table of fields per
 * message (see include/mini/proto.h and docs/protocol.md). */
#include "mini/proto.h"
#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/utf8.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BAD MINI_E_BAD_REQUEST

static const char *const op_names[MINI_OP_COUNT] = {
    [MINI_OP_HELLO] = "hello", [MINI_OP_OPEN] = "open",   [MINI_OP_EXEC] = "exec",     [MINI_OP_CANCEL] = "cancel",
    [MINI_OP_CLOSE] = "close", [MINI_OP_STATS] = "stats", [MINI_OP_OPENED] = "opened", [MINI_OP_OUTPUT] = "output",
    [MINI_OP_EXIT] = "exit",   [MINI_OP_OK] = "ok",       [MINI_OP_ERROR] = "error",
};

static const char *const limit_names[MINI_LIMIT_COUNT] = {
    [MINI_LIMIT_NONE] = "none",           [MINI_LIMIT_TIMEOUT] = "timeout",
    [MINI_LIMIT_CANCELLED] = "cancelled", [MINI_LIMIT_MEMORY] = "memory",
    [MINI_LIMIT_PIDS] = "pids",           [MINI_LIMIT_CPU] = "cpu",
    [MINI_LIMIT_FILE_SIZE] = "file_size", [MINI_LIMIT_DISCONNECT] = "disconnect",
    [MINI_LIMIT_SHUTDOWN] = "shutdown",   [MINI_LIMIT_DISK] = "disk",
};

static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *mini_op_name(enum mini_op op) { return (unsigned)op < MINI_OP_COUNT ? op_names[op] : "unknown"; }

int mini_op_from_name(const char *name) { return lookup(op_names, MINI_OP_COUNT, name); }

const char *mini_limit_name(enum mini_limit l) { return (unsigned)l < MINI_LIMIT_COUNT ? limit_names[l] : "none"; }

int mini_limit_from_name(const char *name) { return lookup(limit_names, MINI_LIMIT_COUNT, name); }

/* ------------------------------------------------------------ the tables */

enum ftype {
    F_STR,     /* char * */
    F_TEXT,    /* char * and its length (size_t at off2) */
    F_INT,     /* int64_t in [min, max] */
    F_INT32,   /* int in [min, max] */
    F_BOOL,    /* bool */
    F_SECONDS, /* double > 0, finite, <= max; 0 when absent */
    F_OBJ,     /* cJSON * object, deep-copied */
    F_ENV,     /* struct mini_env */
    F_STRV,    /* char ** NULL-terminated, count (size_t at off2) >= min */
    F_LIMIT,   /* enum mini_limit: a name, or null for none */
    F_ERRC,    /* enum mini_errc: a name other than "ok" */
};

struct field {
    const char *name;
    enum ftype type;
    bool required;
    size_t off, off2; /* offsets in the message's struct */
    int64_t min, max;
};

struct spec {
    bool valid; /* the op is a message of this direction */
    const struct field *f;
    size_t n;
};

#define FLD(st, nm, ty, rq, m, ...)                                                 \
    {                                                                               \
        .name = nm, .type = ty, .required = rq, .off = offsetof(st, m), __VA_ARGS__ \
    }
#define COUNT(st, m) .off2 = offsetof(st, m)
#define RANGE(lo, hi) .min = (lo), .max = (hi)
#define SPEC(a)                     \
    {                               \
        true, a, MINI_ARRAY_SIZE(a) \
    }
#define NO_FIELDS     \
    {                 \
        true, NULL, 0 \
    }

#define TIMEOUT_MAX 1000000 /* seconds */

static const struct field req_hello[] = {
    FLD(struct mini_req_hello, "version", F_INT, true, version, RANGE(1, MINI_ID_MAX)),
    FLD(struct mini_req_hello, "client", F_STR, false, client),
};
static const struct field req_open[] = {
    FLD(struct mini_req_open, "workspace", F_STR, true, workspace),
    FLD(struct mini_req_open, "profile", F_STR, false, profile),
    FLD(struct mini_req_open, "profile_data", F_OBJ, false, profile_data),
    FLD(struct mini_req_open, "overrides", F_OBJ, false, overrides),
    FLD(struct mini_req_open, "env", F_ENV, false, env),
    FLD(struct mini_req_open, "image", F_STR, false, image),
    FLD(struct mini_req_open, "allow_hosts", F_STRV, false, allow_hosts, COUNT(struct mini_req_open, n_allow_hosts),
        .min = 1),
    FLD(struct mini_req_open, "user", F_STR, false, user),
};
static const struct field req_exec[] = {
    FLD(struct mini_req_exec, "session", F_STR, true, session),
    FLD(struct mini_req_exec, "command", F_STR, false, command),
    FLD(struct mini_req_exec, "argv", F_STRV, false, argv, COUNT(struct mini_req_exec, argc), .min = 1),
    FLD(struct mini_req_exec, "cwd", F_STR, false, cwd),
    FLD(struct mini_req_exec, "env", F_ENV, false, env),
    FLD(struct mini_req_exec, "timeout", F_SECONDS, false, timeout, .max = TIMEOUT_MAX),
    FLD(struct mini_req_exec, "stdin", F_TEXT, false, stdin_data, COUNT(struct mini_req_exec, stdin_len)),
    FLD(struct mini_req_exec, "stream", F_BOOL, false, stream),
    FLD(struct mini_req_exec, "last", F_BOOL, false, last),
};
static const struct field req_cancel[] = {
    FLD(struct mini_req_cancel, "target", F_INT, true, target, RANGE(0, MINI_ID_MAX)),
};
static const struct field req_close[] = {
    FLD(struct mini_req_close, "session", F_STR, true, session),
};

static const struct field rep_hello[] = {
    FLD(struct mini_rep_hello, "version", F_INT, true, version, RANGE(1, MINI_ID_MAX)),
    FLD(struct mini_rep_hello, "server", F_STR, true, server),
    FLD(struct mini_rep_hello, "features", F_OBJ, true, features),
};
static const struct field rep_opened[] = {
    FLD(struct mini_rep_opened, "session", F_STR, true, session),
    FLD(struct mini_rep_opened, "profile", F_STR, true, profile),
    FLD(struct mini_rep_opened, "isolation", F_OBJ, true, isolation),
    FLD(struct mini_rep_opened, "notes", F_STRV, true, notes, COUNT(struct mini_rep_opened, n_notes)),
};
static const struct field rep_output[] = {
    FLD(struct mini_rep_output, "data", F_TEXT, true, data, COUNT(struct mini_rep_output, len)),
};
#define EXIT_COUNTER(nm, m) FLD(struct mini_rep_exit, nm, F_INT, true, m, RANGE(0, MINI_ID_MAX))
static const struct field rep_exit[] = {
    FLD(struct mini_rep_exit, "returncode", F_INT32, true, returncode, RANGE(0, 255)),
    FLD(struct mini_rep_exit, "signal", F_INT32, true, signal, RANGE(0, 127)),
    FLD(struct mini_rep_exit, "timed_out", F_BOOL, true, timed_out),
    FLD(struct mini_rep_exit, "oom_killed", F_BOOL, true, oom_killed),
    FLD(struct mini_rep_exit, "output", F_TEXT, true, output, COUNT(struct mini_rep_exit, output_len)),
    FLD(struct mini_rep_exit, "truncated", F_BOOL, true, truncated),
    EXIT_COUNTER("output_bytes", output_bytes),
    EXIT_COUNTER("duration_ms", duration_ms),
    EXIT_COUNTER("cpu_ms", cpu_ms),
    EXIT_COUNTER("max_rss_kb", max_rss_kb),
    FLD(struct mini_rep_exit, "limit", F_LIMIT, true, limit),
    FLD(struct mini_rep_exit, "notes", F_STRV, true, notes, COUNT(struct mini_rep_exit, n_notes)),
};
#define STATS_COUNTER(nm, m) FLD(struct mini_rep_stats, nm, F_INT, true, m, RANGE(0, MINI_ID_MAX))
static const struct field rep_stats[] = {
    STATS_COUNTER("sessions", sessions),
    STATS_COUNTER("running", running),
    STATS_COUNTER("execs_total", execs_total),
    STATS_COUNTER("clients", clients),
    STATS_COUNTER("uptime_ms", uptime_ms),
    FLD(struct mini_rep_stats, "preparing", F_INT, false, preparing, RANGE(0, MINI_ID_MAX)),
    FLD(struct mini_rep_stats, "held_ahead", F_INT, false, held_ahead, RANGE(0, MINI_ID_MAX)),
    FLD(struct mini_rep_stats, "seccomp_programs", F_INT, false, seccomp_programs, RANGE(0, MINI_ID_MAX)),
};
static const struct field rep_error[] = {
    FLD(struct mini_rep_error, "code", F_ERRC, true, code),
    FLD(struct mini_rep_error, "message", F_STR, true, message),
};

static const struct spec req_specs[MINI_OP_COUNT] = {
    [MINI_OP_HELLO] = SPEC(req_hello),   [MINI_OP_OPEN] = SPEC(req_open),   [MINI_OP_EXEC] = SPEC(req_exec),
    [MINI_OP_CANCEL] = SPEC(req_cancel), [MINI_OP_CLOSE] = SPEC(req_close), [MINI_OP_STATS] = NO_FIELDS,
};
static const struct spec rep_specs[MINI_OP_COUNT] = {
    [MINI_OP_HELLO] = SPEC(rep_hello),
    [MINI_OP_OPENED] = SPEC(rep_opened),
    [MINI_OP_OUTPUT] = SPEC(rep_output),
    [MINI_OP_EXIT] = SPEC(rep_exit),
    [MINI_OP_OK] = NO_FIELDS,
    [MINI_OP_STATS] = SPEC(rep_stats),
    [MINI_OP_ERROR] = SPEC(rep_error),
};

static const struct spec *spec_of(const struct spec *table, enum mini_op op)
{
    return (unsigned)op < MINI_OP_COUNT && table[op].valid ? &table[op] : NULL;
}

/* ------------------------------------------------------------- freeing */

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

void mini_env_free(struct mini_env *env)
{
    for (size_t i = 0; i < env->n; i++) {
        free(env->keys[i]);
        free(env->values[i]);
    }
    free(env->keys);
    free(env->values);
    *env = (struct mini_env){ 0 };
}

int mini_env_add(struct mini_env *env, const char *key, const char *value)
{
    char *k = strdup(key), *v = strdup(value);
    char **keys = k && v ? realloc(env->keys, (env->n + 1) * sizeof *keys) : NULL;
    if (keys)
        env->keys = keys;
    char **values = keys ? realloc(env->values, (env->n + 1) * sizeof *values) : NULL;
    if (!values) {
        free(k);
        free(v);
        return -1;
    }
    env->values = values;
    env->keys[env->n] = k;
    env->values[env->n++] = v;
    return 0;
}

static void fields_free(const struct spec *sp, char *base, size_t size)
{
    for (size_t i = 0; sp && i < sp->n; i++) {
        void *p = base + sp->f[i].off;
        switch (sp->f[i].type) {
        case F_STR:
        case F_TEXT: free(*(char **)p); break;
        case F_OBJ: cJSON_Delete(*(cJSON **)p); break;
        case F_ENV: mini_env_free(p); break;
        case F_STRV: strv_free(*(char ***)p); break;
        default: break;
        }
    }
    memset(base, 0, size);
}

void mini_req_free(struct mini_req *req) { fields_free(spec_of(req_specs, req->op), (char *)&req->u, sizeof req->u); }

void mini_rep_free(struct mini_rep *rep) { fields_free(spec_of(rep_specs, rep->op), (char *)&rep->u, sizeof rep->u); }

/* ----------------------------------------------------------- JSON -> C */

static int nomem(struct mini_err *e) { return mini_err_set(e, MINI_E_NOMEM, "out of memory"); }

int mini_env_from_json(const cJSON *obj, struct mini_env *env, const char *what, struct mini_err *e)
{
    *env = (struct mini_env){ 0 };
    if (!cJSON_IsObject(obj))
        return mini_err_set(e, BAD, "%s: must be an object", what);
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    if (n == 0)
        return 0;
    env->keys = calloc(n, sizeof *env->keys);
    env->values = calloc(n, sizeof *env->values);
    if (!env->keys || !env->values) {
        mini_env_free(env);
        return nomem(e);
    }
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *k = c->string ? c->string : "";
        int r = 0;
        if (!*k) {
            r = mini_err_set(e, BAD, "%s: variable names must not be empty", what);
        } else if (strchr(k, '=')) {
            r = mini_err_set(e, BAD, "%s: variable name \"%.*s\" must not contain '='", what, MINI_JSON_SHOW(k));
        } else if (!cJSON_IsString(c)) {
            r = mini_err_set(e, BAD, "%s.%.*s: must be a string", what, MINI_JSON_SHOW(k));
        } else {
            size_t i = env->n++;
            env->keys[i] = strdup(k);
            env->values[i] = strdup(c->valuestring);
            if (!env->keys[i] || !env->values[i])
                r = nomem(e);
        }
        if (r < 0) {
            mini_env_free(env);
            return -1;
        }
    }
    return 0;
}

static int strv_from_json(const cJSON *v, const struct field *f, const char *op, char *base, struct mini_err *e)
{
    size_t n = 0;
    for (const cJSON *c = cJSON_IsArray(v) ? v->child : NULL; c; c = c->next)
        n++;
    if (!cJSON_IsArray(v) || n < (size_t)f->min)
        return mini_err_set(e, BAD, "%s.%s: must be %s array of strings", op, f->name, f->min ? "a non-empty" : "an");
    char **a = calloc(n + 1, sizeof *a);
    if (!a)
        return nomem(e);
    size_t i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        int r = 0;
        if (!cJSON_IsString(c))
            r = mini_err_set(e, BAD, "%s.%s[%zu]: must be a string", op, f->name, i);
        else if (!(a[i] = strdup(c->valuestring)))
            r = nomem(e);
        if (r < 0) {
            strv_free(a);
            return -1;
        }
    }
    *(char ***)(base + f->off) = a;
    *(size_t *)(base + f->off2) = n;
    return 0;
}

static int field_from_json(const cJSON *v, const struct field *f, const char *op, char *base, struct mini_err *e)
{
    void *p = base + f->off;
    int64_t x;
    int k;
    switch (f->type) {
    case F_STR:
    case F_TEXT:
        if (!cJSON_IsString(v))
            return mini_err_set(e, BAD, "%s.%s: must be a string", op, f->name);
        if (!(*(char **)p = strdup(v->valuestring)))
            return nomem(e);
        if (f->type == F_TEXT)
            *(size_t *)(base + f->off2) = strlen(v->valuestring);
        return 0;
    case F_INT:
    case F_INT32:
        if (!mini_json_get_int(v, f->min, f->max, &x))
            return mini_err_set(e, BAD, "%s.%s: must be an integer between %" PRId64 " and %" PRId64, op, f->name,
                                f->min, f->max);
        if (f->type == F_INT)
            *(int64_t *)p = x;
        else
            *(int *)p = (int)x;
        return 0;
    case F_BOOL:
        if (!cJSON_IsBool(v))
            return mini_err_set(e, BAD, "%s.%s: must be true or false", op, f->name);
        *(bool *)p = cJSON_IsTrue(v);
        return 0;
    case F_SECONDS:
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
            return mini_err_set(e, BAD, "%s.%s: must be a positive number", op, f->name);
        if (v->valuedouble > (double)f->max)
            return mini_err_set(e, BAD, "%s.%s: must be at most %" PRId64 " seconds", op, f->name, f->max);
        *(double *)p = v->valuedouble;
        return 0;
    case F_OBJ:
        if (!cJSON_IsObject(v))
            return mini_err_set(e, BAD, "%s.%s: must be an object", op, f->name);
        if (!(*(cJSON **)p = cJSON_Duplicate(v, 1)))
            return nomem(e);
        return 0;
    case F_ENV: {
        char what[64];
        snprintf(what, sizeof what, "%s.%s", op, f->name);
        return mini_env_from_json(v, p, what, e);
    }
    case F_STRV: return strv_from_json(v, f, op, base, e);
    case F_LIMIT:
        k = cJSON_IsString(v) ? mini_limit_from_name(v->valuestring) : -1;
        if (cJSON_IsNull(v))
            k = MINI_LIMIT_NONE;
        else if (k <= MINI_LIMIT_NONE)
            return mini_err_set(e, BAD, "%s.%s: must be null or a limit name (\"timeout\", \"memory\", ...)", op,
                                f->name);
        *(enum mini_limit *)p = (enum mini_limit)k;
        return 0;
    case F_ERRC:
        k = cJSON_IsString(v) ? (int)mini_errc_from_name(v->valuestring) : MINI_OK;
        if (k == MINI_OK || strcmp(mini_errc_name((enum mini_errc)k), v->valuestring) != 0)
            return mini_err_set(e, BAD, "%s.%s: must be an error code name", op, f->name);
        *(enum mini_errc *)p = (enum mini_errc)k;
        return 0;
    }
    __builtin_unreachable();
}

/* The id when it can be read: one "id" key holding a valid id; else -1. */
static int64_t peek_id(const cJSON *obj)
{
    const cJSON *found = NULL;
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (c->string && strcmp(c->string, "id") == 0) {
            if (found)
                return -1;
            found = c;
        }
    }
    int64_t id;
    return found && mini_json_get_int(found, 0, MINI_ID_MAX, &id) ? id : -1;
}

/* Everything but the op-specific checks: object, keys, op, id, fields.
 * Fills *op and *id (id -1 when unreadable) and the fields at base. */
static int msg_from_json(const cJSON *obj, const struct spec *table, bool reply, enum mini_op *op, int64_t *id,
                         char *base, size_t size, struct mini_err *e)
{
    const char *kind = reply ? "reply" : "request";
    *op = (enum mini_op)0;
    *id = -1;
    memset(base, 0, size);
    if (!cJSON_IsObject(obj))
        return mini_err_set(e, BAD, "%s: must be a JSON object", kind);
    *id = peek_id(obj);

    const cJSON *opv = cJSON_GetObjectItemCaseSensitive(obj, "op");
    const char *name = cJSON_IsString(opv) ? opv->valuestring : NULL;
    int o = mini_op_from_name(name);
    const struct spec *sp = o >= 0 ? spec_of(table, (enum mini_op)o) : NULL;
    if (mini_json_check_unique_keys(obj, sp ? name : NULL, e) < 0)
        return -1;
    if (!opv)
        return mini_err_set(e, BAD, "op: missing");
    if (!name)
        return mini_err_set(e, BAD, "op: must be a string");
    if (o < 0)
        return mini_err_set(e, BAD, "op: unknown op \"%.*s\"", MINI_JSON_SHOW(name));
    if (!sp)
        return mini_err_set(e, BAD, "op: \"%s\" is not a %s", name, kind);

    const cJSON *idv = cJSON_GetObjectItemCaseSensitive(obj, "id");
    if (!idv)
        return mini_err_set(e, BAD, "id: missing");
    if (*id < 0 && !(reply && o == MINI_OP_ERROR && cJSON_IsNull(idv)))
        return mini_err_set(e, BAD, "id: must be an integer between 0 and %lld%s", MINI_ID_MAX,
                            reply && o == MINI_OP_ERROR ? ", or null" : "");
    *op = (enum mini_op)o;

    uint32_t seen = 0;
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *k = c->string ? c->string : "";
        if (strcmp(k, "op") == 0 || strcmp(k, "id") == 0)
            continue;
        size_t i = 0;
        while (i < sp->n && strcmp(sp->f[i].name, k) != 0)
            i++;
        if (i == sp->n)
            return mini_err_set(e, BAD, "%s: unknown field \"%.*s\"", name, MINI_JSON_SHOW(k));
        if (field_from_json(c, &sp->f[i], name, base, e) < 0)
            return -1;
        seen |= 1u << i;
    }
    for (size_t i = 0; i < sp->n; i++)
        if (sp->f[i].required && !(seen & (1u << i)))
            return mini_err_set(e, BAD, "%s.%s: missing", name, sp->f[i].name);
    return 0;
}

int mini_req_from_json(const cJSON *obj, struct mini_req *req, int64_t *id_out, struct mini_err *e)
{
    int64_t id;
    int r = msg_from_json(obj, req_specs, false, &req->op, &id, (char *)&req->u, sizeof req->u, e);
    if (id_out)
        *id_out = id;
    req->id = id;
    if (r == 0 && req->op == MINI_OP_EXEC && !req->u.exec.command == !req->u.exec.argv)
        r = mini_err_set(e, BAD, "exec: exactly one of \"command\" and \"argv\" is required");
    if (r == 0 && req->op == MINI_OP_OPEN && req->u.open.profile && req->u.open.profile_data)
        r = mini_err_set(e, BAD, "open: at most one of \"profile\" and \"profile_data\" may be given");
    if (r < 0)
        mini_req_free(req);
    return r;
}

int mini_rep_from_json(const cJSON *obj, struct mini_rep *rep, struct mini_err *e)
{
    int r = msg_from_json(obj, rep_specs, true, &rep->op, &rep->id, (char *)&rep->u, sizeof rep->u, e);
    if (r < 0)
        mini_rep_free(rep);
    return r;
}

int mini_req_decode(const char *payload, size_t len, struct mini_req *req, int64_t *id_out, struct mini_err *e)
{
    memset(req, 0, sizeof *req);
    req->id = -1;
    if (id_out)
        *id_out = -1;
    cJSON *obj = mini_json_parse(payload, len, e);
    if (!obj)
        return -1;
    int r = mini_req_from_json(obj, req, id_out, e);
    cJSON_Delete(obj);
    return r;
}

int mini_rep_decode(const char *payload, size_t len, struct mini_rep *rep, struct mini_err *e)
{
    memset(rep, 0, sizeof *rep);
    rep->id = -1;
    cJSON *obj = mini_json_parse(payload, len, e);
    if (!obj)
        return -1;
    int r = mini_rep_from_json(obj, rep, e);
    cJSON_Delete(obj);
    return r;
}

/* ----------------------------------------------------------- C -> JSON */

/* A JSON string of p[0..n) made valid UTF-8: invalid sequences and NUL
 * bytes become U+FFFD (cJSON strings end at the first NUL). */
static cJSON *text_json(const char *p, size_t n)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_buf_reserve(&b, n) < 0)
        return NULL;
    b.data[0] = '\0';
    while (n > 0) {
        const char *z = memchr(p, '\0', n);
        size_t seg = z ? (size_t)(z - p) : n;
        if (mini_utf8_sanitize(&b, p, seg) < 0 || (z && mini_buf_puts(&b, "\xEF\xBF\xBD") < 0))
            return NULL;
        seg += z != NULL;
        p += seg;
        n -= seg;
    }
    return cJSON_CreateString(b.data);
}

static cJSON *str_json(const char *s) { return text_json(s ? s : "", s ? strlen(s) : 0); }

/* Add v (NULL: out of memory) under key k; consumes v.  0, or -1. */
static int add(cJSON *obj, const char *k, cJSON *v)
{
    if (!v || !cJSON_AddItemToObject(obj, k, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

cJSON *mini_env_to_json(const struct mini_env *env)
{
    cJSON *obj = cJSON_CreateObject();
    for (size_t i = 0; obj && i < env->n; i++) {
        _cleanup_buf_ struct mini_buf key = MINI_BUF_INIT;
        if (mini_utf8_sanitize(&key, env->keys[i], strlen(env->keys[i])) < 0 ||
            add(obj, key.data, str_json(env->values[i])) < 0) {
            cJSON_Delete(obj);
            return NULL;
        }
    }
    return obj;
}

static bool field_absent(const struct field *f, const char *base)
{
    const void *p = base + f->off;
    switch (f->type) {
    case F_STR:
    case F_TEXT:
    case F_OBJ:
    case F_STRV: return *(void *const *)p == NULL;
    case F_ENV: return ((const struct mini_env *)p)->n == 0;
    case F_SECONDS: return *(const double *)p == 0;
    /* exec.stream and exec.last: a false one is not sent, so that a daemon
     * from before exec.last is not sent a field it would refuse */
    case F_BOOL: return !*(const bool *)p;
    default: return false;
    }
}

static cJSON *field_to_json(const struct field *f, const char *base)
{
    const void *p = base + f->off;
    switch (f->type) {
    case F_STR: return str_json(*(char *const *)p);
    case F_TEXT: {
        const char *s = *(char *const *)p;
        return text_json(s ? s : "", s ? *(const size_t *)(base + f->off2) : 0);
    }
    case F_INT: return cJSON_CreateNumber((double)*(const int64_t *)p);
    case F_INT32: return cJSON_CreateNumber(*(const int *)p);
    case F_BOOL: return cJSON_CreateBool(*(const bool *)p);
    case F_SECONDS: return cJSON_CreateNumber(*(const double *)p);
    case F_OBJ: {
        const cJSON *o = *(cJSON *const *)p;
        return o ? cJSON_Duplicate(o, 1) : cJSON_CreateObject();
    }
    case F_ENV: return mini_env_to_json(p);
    case F_STRV: {
        char *const *v = *(char **const *)p;
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && v && v[i]; i++) {
            cJSON *s = str_json(v[i]);
            if (!s || !cJSON_AddItemToArray(a, s)) {
                cJSON_Delete(s);
                cJSON_Delete(a);
                return NULL;
            }
        }
        return a;
    }
    case F_LIMIT: {
        enum mini_limit l = *(const enum mini_limit *)p;
        return l > MINI_LIMIT_NONE && l < MINI_LIMIT_COUNT ? cJSON_CreateString(limit_names[l]) : cJSON_CreateNull();
    }
    case F_ERRC: {
        enum mini_errc c = *(const enum mini_errc *)p;
        return cJSON_CreateString(mini_errc_name(mini_errc_is_wire(c) ? c : MINI_E_INTERNAL));
    }
    }
    __builtin_unreachable();
}

static cJSON *msg_to_json(const struct spec *sp, enum mini_op op, int64_t id, const char *base)
{
    if (!sp)
        return NULL;
    cJSON *obj = cJSON_CreateObject();
    if (!obj || add(obj, "op", cJSON_CreateString(op_names[op])) < 0 ||
        add(obj, "id", id >= 0 && id <= MINI_ID_MAX ? cJSON_CreateNumber((double)id) : cJSON_CreateNull()) < 0)
        goto fail;
    for (size_t i = 0; i < sp->n; i++) {
        const struct field *f = &sp->f[i];
        if (!f->required && field_absent(f, base))
            continue;
        if (add(obj, f->name, field_to_json(f, base)) < 0)
            goto fail;
    }
    return obj;
fail:
    cJSON_Delete(obj);
    return NULL;
}

cJSON *mini_req_to_json(const struct mini_req *req)
{
    return msg_to_json(spec_of(req_specs, req->op), req->op, req->id, (const char *)&req->u);
}

cJSON *mini_rep_to_json(const struct mini_rep *rep)
{
    return msg_to_json(spec_of(rep_specs, rep->op), rep->op, rep->id, (const char *)&rep->u);
}

cJSON *mini_error_json(int64_t id, const struct mini_err *e)
{
    struct mini_rep rep = { .op = MINI_OP_ERROR, .id = id };
    rep.u.error.code = e ? e->code : MINI_E_INTERNAL;
    rep.u.error.message = (char *)(e && e->msg[0] ? e->msg : "unknown error");
    return mini_rep_to_json(&rep);
}
