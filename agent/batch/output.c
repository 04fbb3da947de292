/* A batch's output directory (batch.h): preds.json, in the shape SWE-bench
 * tooling reads and mini-swe-agent writes, and summary.json; both loaded
 * from an earlier run and rewritten atomically (docs/batch.md, "Output"):
 * preds.json, synced to disk, as tasks finish (all those that finished
 * since the last time, at once); summary.json, which grows with every
 * task's result, at most once a second (MINI_BATCH_SUMMARY_INTERVAL) and
 * at the end.  A crash at any moment loses no finished task: one in
 * preds.json but not yet in summary.json is added to it from its
 * result.json (synced by its worker before the batch recorded it) when the
 * batch runs again. */
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "batch/batch.h"
#include "mini/buf.h"
#include "mini/clock.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/json.h"

static const char *const float_keys[] = { "cost", "wall_s", "duration_s", "total_cost", "resolve_rate", NULL };

/* Seconds between two rewrites of summary.json while the batch runs. */
#define SUMMARY_INTERVAL_S 1.0

int batch_write_json(const char *path, const cJSON *json, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_json_print_py(&b, json, float_keys, e) < 0 ||
        mini_write_file_atomic(path, b.data ? b.data : "", b.len, 0644, e) < 0)
        return mini_err_prefix(e, "writing %s", path);
    return 0;
}

/* An object from path, or a new empty one when there is no file. */
static cJSON *load_object(const char *path, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (access(path, F_OK) < 0 && errno == ENOENT)
        return cJSON_CreateObject();
    if (mini_read_file(path, &b, 1u << 30, e) < 0)
        return NULL;
    cJSON *o = mini_json_parse(b.data ? b.data : "", b.len, e);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        mini_err_set(e, MINI_E_CONFIG,
                     "%s is not a JSON object (a damaged earlier run?): move it away to start afresh; "
                     "it is left as it is",
                     path);
        return NULL;
    }
    return o;
}

static char *out_path(const struct batch_out *o, const char *name)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s", o->dir, name) < 0 ? NULL : p;
}

int batch_out_open(struct batch_out *o, const char *dir, struct mini_err *e)
{
    memset(o, 0, sizeof *o);
    if (mini_mkdir_p(dir, 0755, e) < 0)
        return mini_err_prefix(e, "output directory");
    if (!(o->dir = strdup(dir)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    o->summary_every = SUMMARY_INTERVAL_S;
    const char *ev = getenv("MINI_BATCH_SUMMARY_INTERVAL");
    char *end;
    double v = ev ? strtod(ev, &end) : NAN;
    if (ev && *ev && !*end && v >= 0)
        o->summary_every = v;
    _cleanup_free_ char *pp = out_path(o, "preds.json"), *sp = out_path(o, "summary.json");
    if (!pp || !sp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (!(o->preds = load_object(pp, e)) || !(o->summary = load_object(sp, e))) {
        batch_out_free(o);
        return -1;
    }
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks");
    if (!cJSON_IsObject(tasks)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o->summary, "tasks");
        cJSON_AddObjectToObject(o->summary, "tasks");
    }
    return 0;
}

bool batch_out_done(const struct batch_out *o, const char *id)
{
    return cJSON_GetObjectItemCaseSensitive(o->preds, id) != NULL;
}

static int write_preds(struct batch_out *o, struct mini_err *e)
{
    _cleanup_free_ char *pp = out_path(o, "preds.json");
    if (!pp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (batch_write_json(pp, o->preds, e) < 0)
        return -1;
    o->preds_dirty = false;
    return 0;
}

int batch_out_forget(struct batch_out *o, const char *id, struct mini_err *e)
{
    if (!cJSON_GetObjectItemCaseSensitive(o->preds, id))
        return 0;
    cJSON_DeleteItemFromObjectCaseSensitive(o->preds, id);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o->summary, "tasks"), id);
    o->summary_dirty = true;
    /* Now: the task's directory is about to be made afresh. */
    return write_preds(o, e);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int batch_out_write(struct batch_out *o, struct mini_err *e)
{
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks"), *t;
    double n = 0, submitted = 0, cost = 0, verified = 0, resolved = 0, wall = 0;
    cJSON_ArrayForEach (t, tasks) {
        n++;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(t, "exit_status");
        submitted += cJSON_IsString(st) && strcmp(st->valuestring, "Submitted") == 0;
        cost += num(t, "cost");
        wall += num(t, "wall_s");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "verify");
        const cJSON *vs = cJSON_GetObjectItemCaseSensitive(v, "status");
        if (cJSON_IsString(vs)) {
            verified++;
            resolved += strcmp(vs->valuestring, "resolved") == 0;
        }
    }
    cJSON *tot = cJSON_CreateObject();
    if (!tot)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    cJSON_AddNumberToObject(tot, "tasks", n);
    cJSON_AddNumberToObject(tot, "submitted", submitted);
    cJSON_AddNumberToObject(tot, "failed", n - submitted);
    cJSON_AddNumberToObject(tot, "verified", verified);
    cJSON_AddNumberToObject(tot, "resolved", resolved);
    if (verified > 0)
        cJSON_AddItemToObject(tot, "resolve_rate", mini_json_create_float(resolved / verified));
    else
        cJSON_AddNullToObject(tot, "resolve_rate");
    cJSON_AddItemToObject(tot, "total_cost", mini_json_create_float(cost));
    cJSON_AddItemToObject(tot, "wall_s", mini_json_create_float(wall));
    if (cJSON_GetObjectItemCaseSensitive(o->summary, "totals"))
        cJSON_ReplaceItemInObjectCaseSensitive(o->summary, "totals", tot);
    else
        cJSON_AddItemToObject(o->summary, "totals", tot);
    _cleanup_free_ char *sp = out_path(o, "summary.json");
    if (!sp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    double t0 = mini_mono_s();
    if (batch_write_json(sp, o->summary, e) < 0)
        return -1;
    o->summary_at = mini_mono_s();
    o->summary_took = o->summary_at - t0;
    o->summary_dirty = false;
    return 0;
}

int batch_out_record(struct batch_out *o, cJSON *result, struct mini_err *e)
{
    _cleanup_cjson_ cJSON *r = result;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "instance_id");
    if (!cJSON_IsString(id))
        return mini_err_set(e, MINI_E_IO, "a result without instance_id");
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(r, "submission");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model_name");
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddStringToObject(p, "model_name_or_path", cJSON_IsString(model) ? model->valuestring : "") ||
        !cJSON_AddStringToObject(p, "instance_id", id->valuestring) ||
        !cJSON_AddStringToObject(p, "model_patch", cJSON_IsString(sub) ? sub->valuestring : "")) {
        cJSON_Delete(p);
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(o->preds, id->valuestring);
    cJSON_AddItemToObject(o->preds, id->valuestring, p);
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks");
    cJSON_DeleteItemFromObjectCaseSensitive(tasks, id->valuestring);
    cJSON_AddItemToObject(tasks, id->valuestring, TAKE_PTR(r));
    o->preds_dirty = o->summary_dirty = true;
    return 0;
}

int batch_out_sync(struct batch_out *o, struct mini_err *e)
{
    /* preds.json first: what a resume trusts. */
    if (o->preds_dirty && write_preds(o, e) < 0)
        return -1;
    /* summary.json when due: at most once an interval, and never for more
     * than a tenth of the time (it grows with every task). */
    double since = mini_mono_s() - o->summary_at;
    if (o->summary_dirty && since >= o->summary_every && since >= 10 * o->summary_took)
        return batch_out_write(o, e);
    return 0;
}

void batch_out_free(struct batch_out *o)
{
    free(o->dir);
    cJSON_Delete(o->preds);
    cJSON_Delete(o->summary);
    memset(o, 0, sizeof *o);
}
