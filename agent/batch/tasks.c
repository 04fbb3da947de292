/* The TASKS file of `mini batch`, and the selection of tasks (tasks.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "batch/tasks.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/config_yaml.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/utf8.h"

#define ID_MAX 200

bool mini_task_id_valid(const char *s, const char **why)
{
    size_t n = strlen(s);
    const char *w = NULL;
    if (n == 0)
        w = "is empty";
    else if (n > ID_MAX)
        w = "is longer than "
            "200"
            " bytes";
    else if (s[0] == '.' || s[0] == '-')
        w = "starts with '.' or '-'";
    else if (strchr(s, '/'))
        w = "holds a '/'";
    else if (!mini_utf8_valid(s, n))
        w = "is not UTF-8";
    for (const unsigned char *p = (const unsigned char *)s; !w && *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            w = "holds a control character";
    if (why)
        *why = w;
    return !w;
}

static const char *opt_str(const cJSON *rec, const char *key, const char *where, bool *bad, struct mini_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, key);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsString(v)) {
        *bad = true;
        mini_err_set(e, MINI_E_CONFIG, "%s: %s must be a string", where, key);
        return NULL;
    }
    return v->valuestring;
}

/* Check one record into *t (its fields borrowed from rec). */
static int check_record(cJSON *rec, const char *where, struct mini_task *t, struct mini_err *e)
{
    if (!cJSON_IsObject(rec))
        return mini_err_set(e, MINI_E_CONFIG, "%s: a task must be an object (a mapping)", where);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "instance_id");
    if (!cJSON_IsString(id))
        return mini_err_set(e, MINI_E_CONFIG, "%s: instance_id (a string) is required", where);
    const char *why;
    if (!mini_task_id_valid(id->valuestring, &why))
        return mini_err_set(e, MINI_E_CONFIG, "%s: instance_id \"%.*s\" %s (it names the task's directory)", where,
                            mini_json_clip(id->valuestring, 64), id->valuestring, why);
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(rec, "problem_statement");
    if (!cJSON_IsString(ps))
        return mini_err_set(e, MINI_E_CONFIG, "%s (%s): problem_statement (a string) is required", where,
                            id->valuestring);
    *t = (struct mini_task){ .id = id->valuestring, .problem = ps->valuestring, .record = rec };
    bool bad = false;
    char w[512];
    snprintf(w, sizeof w, "%s (%s)", where, id->valuestring);
    /* As mini-swe-agent's runners read an instance's image: image_name,
     * else docker_image; mini's own key image first. */
    t->image = opt_str(rec, "image", w, &bad, e);
    if (!bad && !t->image)
        t->image = opt_str(rec, "image_name", w, &bad, e);
    if (!bad && !t->image)
        t->image = opt_str(rec, "docker_image", w, &bad, e);
    t->setup = bad ? NULL : opt_str(rec, "setup", w, &bad, e);
    t->verify = bad ? NULL : opt_str(rec, "verify", w, &bad, e);
    if (bad)
        return -1;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(rec, "workspace");
    if (cJSON_IsString(ws)) {
        t->ws_path = ws->valuestring;
    } else if (cJSON_IsObject(ws)) {
        static const char *const keys[] = { "path", "git", "commit" };
        const cJSON *it;
        cJSON_ArrayForEach (it, ws) {
            size_t k = 0;
            while (k < 3 && strcmp(it->string, keys[k]) != 0)
                k++;
            if (k == 3)
                return mini_err_set(e, MINI_E_CONFIG, "%s: workspace.%.*s: unknown key (path, git, commit)", w,
                                    mini_json_clip(it->string, 64), it->string);
        }
        t->ws_path = opt_str(ws, "path", w, &bad, e);
        t->ws_git = bad ? NULL : opt_str(ws, "git", w, &bad, e);
        t->ws_commit = bad ? NULL : opt_str(ws, "commit", w, &bad, e);
        if (bad)
            return mini_err_prefix(e, "workspace");
        if (!!t->ws_path == !!t->ws_git)
            return mini_err_set(e, MINI_E_CONFIG, "%s: workspace: give either path or git (with commit)", w);
        if (t->ws_commit && !t->ws_git)
            return mini_err_set(e, MINI_E_CONFIG, "%s: workspace.commit goes with workspace.git", w);
        if (t->ws_commit && (t->ws_commit[0] == '-' || !t->ws_commit[0]))
            return mini_err_set(e, MINI_E_CONFIG, "%s: workspace.commit: not a revision", w);
        if (t->ws_git && t->ws_git[0] == '-')
            return mini_err_set(e, MINI_E_CONFIG, "%s: workspace.git: not a repository", w);
    } else if (ws && !cJSON_IsNull(ws)) {
        return mini_err_set(e, MINI_E_CONFIG, "%s: workspace must be a directory or {git, commit}", w);
    }
    if (t->ws_path && !t->ws_path[0])
        return mini_err_set(e, MINI_E_CONFIG, "%s: workspace: an empty path", w);
    return 0;
}

static int add_record(struct mini_tasks *t, cJSON *rec, const char *where, size_t *cap, struct mini_err *e)
{
    if (t->n >= MINI_TASKS_MAX)
        return mini_err_set(e, MINI_E_CONFIG, "%s: more than %d tasks", where, MINI_TASKS_MAX);
    if (t->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct mini_task *nv = realloc(t->v, nc * sizeof *nv);
        if (!nv)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        t->v = nv;
        *cap = nc;
    }
    if (check_record(rec, where, &t->v[t->n], e) < 0)
        return -1;
    t->n++;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp((*(const struct mini_task *const *)a)->id, (*(const struct mini_task *const *)b)->id);
}

/* Two tasks with one id would write one directory. */
static int check_unique(const struct mini_tasks *t, const char *name, struct mini_err *e)
{
    _cleanup_free_ const struct mini_task **s = malloc((t->n ? t->n : 1) * sizeof *s);
    if (!s)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++)
        s[i] = &t->v[i];
    qsort(s, t->n, sizeof *s, cmp_id);
    for (size_t i = 1; i < t->n; i++)
        if (strcmp(s[i]->id, s[i - 1]->id) == 0)
            return mini_err_set(e, MINI_E_CONFIG, "%s: instance_id \"%s\" is given twice", name, s[i]->id);
    return 0;
}

static bool yaml_name(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

int mini_tasks_parse(const char *text, size_t len, const char *name, struct mini_tasks *t, struct mini_err *e)
{
    memset(t, 0, sizeof *t);
    size_t cap = 0, skip = 0;
    char where[600];
    while (skip < len && strchr(" \t\r\n", text[skip]))
        skip++;
    int rc = 0;
    if (!yaml_name(name) && skip < len && text[skip] == '{') {
        /* JSON Lines: one object a line; blank lines are skipped. */
        if (!(t->root = cJSON_CreateArray()))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        size_t line = 0;
        for (size_t p = 0; p < len && rc == 0;) {
            const char *nl = memchr(text + p, '\n', len - p);
            size_t end = nl ? (size_t)(nl - text) : len;
            line++;
            size_t b = p;
            while (b < end && strchr(" \t\r", text[b]))
                b++;
            if (b < end) {
                snprintf(where, sizeof where, "%s:%zu", name, line);
                cJSON *rec = mini_json_parse(text + p, end - p, e);
                if (!rec || mini_json_check_unique_keys(rec, NULL, e) < 0) {
                    cJSON_Delete(rec);
                    rc = mini_err_prefix(e, "%s", where);
                    break;
                }
                cJSON_AddItemToArray(t->root, rec);
                rc = add_record(t, rec, where, &cap, e);
            }
            p = end + 1;
        }
    } else {
        if (!yaml_name(name) && skip < len && text[skip] == '[') {
            if ((t->root = mini_json_parse(text, len, e)) && mini_json_check_unique_keys(t->root, NULL, e) < 0) {
                cJSON_Delete(t->root);
                t->root = NULL;
            }
        } else {
            t->root = mini_yaml_parse(text, len, name, e);
        }
        if (!t->root)
            return mini_err_prefix(e, "%s", name);
        if (!cJSON_IsArray(t->root)) {
            mini_tasks_free(t);
            return mini_err_set(e, MINI_E_CONFIG, "%s: expected a list of tasks", name);
        }
        size_t i = 0;
        cJSON *rec;
        cJSON_ArrayForEach (rec, t->root) {
            snprintf(where, sizeof where, "%s: task %zu", name, ++i);
            if ((rc = add_record(t, rec, where, &cap, e)) < 0)
                break;
        }
    }
    if (rc == 0)
        rc = check_unique(t, name, e);
    if (rc < 0)
        mini_tasks_free(t);
    return rc;
}

int mini_tasks_load(const char *path, struct mini_tasks *t, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, MINI_TASKS_FILE_MAX, e) < 0)
        return mini_err_prefix(e, "tasks");
    return mini_tasks_parse(b.data ? b.data : "", b.len, path, t, e);
}

/* mini-swe-agent's image for a SWE-bench instance that names none
 * (get_swebench_docker_image_name): docker.io/swebench/sweb.eval.x86_64.ID:latest
 * with "__" in the id written "_1776_", lower-cased.  malloc'd, or NULL. */
static char *mini_task_swebench_image(const char *id)
{
    struct mini_buf b = MINI_BUF_INIT;
    int r = mini_buf_puts(&b, "docker.io/swebench/sweb.eval.x86_64.");
    for (const char *p = id; r == 0 && *p; p++) {
        if (p[0] == '_' && p[1] == '_') {
            r = mini_buf_puts(&b, "_1776_");
            p++;
        } else {
            r = mini_buf_putc(&b, (char)tolower((unsigned char)*p));
        }
    }
    if (r < 0 || mini_buf_puts(&b, ":latest") < 0) {
        mini_buf_free(&b);
        return NULL;
    }
    return b.data;
}

int mini_tasks_swebench_images(struct mini_tasks *t, struct mini_err *e)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].image)
            continue;
        if (!(t->v[i].own_image = mini_task_swebench_image(t->v[i].id)))
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        t->v[i].image = t->v[i].own_image;
    }
    return 0;
}

void mini_tasks_free(struct mini_tasks *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].own_image);
    cJSON_Delete(t->root);
    free(t->v);
    memset(t, 0, sizeof *t);
}

unsigned mini_task_shard(const char *id, unsigned n)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return n ? (unsigned)(h % n) : 0;
}

/* Python's slice indices for a sequence of n: one bound of START:STOP. */
static long slice_bound(const char *s, size_t len, long n, long step, bool start, bool *ok)
{
    if (len == 0)
        return step > 0 ? (start ? 0 : n) : (start ? n - 1 : -1);
    char buf[32];
    if (len >= sizeof buf) {
        *ok = false;
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (*end || errno) {
        *ok = false;
        return 0;
    }
    if (v < 0)
        v += n;
    long lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    return v < lo ? lo : v > hi ? hi : v;
}

static int parse_slice(const char *spec, long n, long *start, long *stop, long *step, struct mini_err *e)
{
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    bool ok = c1 != NULL;
    *step = 1;
    if (ok && c2 && c2[1]) {
        char *end;
        errno = 0;
        *step = strtol(c2 + 1, &end, 10);
        ok = !*end && !errno && *step != 0;
    }
    if (ok) {
        *start = slice_bound(spec, (size_t)(c1 - spec), n, *step, true, &ok);
        const char *s2 = c1 + 1;
        *stop = slice_bound(s2, c2 ? (size_t)(c2 - s2) : strlen(s2), n, *step, false, &ok);
    }
    if (!ok)
        return mini_err_set(e, MINI_E_CONFIG, "--slice %s: expected START:STOP[:STEP] (integers, may be empty)", spec);
    return 0;
}

int mini_tasks_select(struct mini_tasks *t, const char *regex, const char *slice, unsigned shard, unsigned nshards,
                      struct mini_err *e)
{
    size_t k = 0;
    if (regex && *regex) {
        int code;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
        if (!re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            return mini_err_set(e, MINI_E_CONFIG, "--filter %s: %s at offset %zu", regex, (char *)msg, (size_t)off);
        }
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        for (size_t i = 0; md && i < t->n; i++)
            if (pcre2_match(re, (PCRE2_SPTR)t->v[i].id, PCRE2_ZERO_TERMINATED, 0, PCRE2_ANCHORED, md, NULL) >= 0)
                t->v[k++] = t->v[i];
        pcre2_match_data_free(md);
        pcre2_code_free(re);
        if (!md)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        t->n = k;
    }
    if (slice && *slice) {
        long start = 0, stop = 0, step = 1;
        if (parse_slice(slice, (long)t->n, &start, &stop, &step, e) < 0)
            return -1;
        /* A new array: a negative step reads what a copy in place overwrites. */
        struct mini_task *nv = malloc((t->n ? t->n : 1) * sizeof *nv);
        if (!nv)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        k = 0;
        for (long i = start; step > 0 ? i < stop : i > stop; i += step)
            nv[k++] = t->v[i];
        free(t->v);
        t->v = nv;
        t->n = k;
    }
    if (nshards) {
        k = 0;
        for (size_t i = 0; i < t->n; i++)
            if (mini_task_shard(t->v[i].id, nshards) == shard)
                t->v[k++] = t->v[i];
        t->n = k;
    }
    return 0;
}
