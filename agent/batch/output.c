/* A batch's output directory (batch.h): preds.json, in the shape SWE-bench
 * tooling reads and mini-swe-agent writes, and summary.json; both loaded
 * from an earlier run and rewritten atomically (docs/batch.md, "Output"):
 * preds.json as tasks finish (all those that finished since the last
 * time, at once); summary.json, which grows with every task's result, at
 * most once a second (MINI_BATCH_SUMMARY_INTERVAL) and at the end.
 *
 * Durability is a group commit: no file is synced on its own; one
 * syncfs() of the output's filesystem at most once a second (in a thread,
 * beside the pool) and at the end makes everything written before it
 * durable (the tasks' trajectories,
 * result.json files and workspaces included).  A kill -9 loses nothing
 * (every file is renamed into place whole, and the page cache outlives
 * the process); a power loss may leave any file written since the last
 * commit empty or old, so mini_batch_out_open trusts no task of preds.json
 * whose result.json and trajectory do not parse and agree with it (it
 * runs again), and rebuilds a damaged preds.json from the tasks'
 * result.json files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
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

static int mini_batch_out_write(struct batch_out *o, struct mini_err *e);
static int mini_batch_out_commit(struct batch_out *o, struct mini_err *e);

static const char *const float_keys[] = { "cost", "wall_s", "duration_s", "total_cost", "resolve_rate", NULL };

/* Seconds between two rewrites of summary.json while the batch runs. */
#define SUMMARY_INTERVAL_S 1.0
/* Seconds between two group commits while the batch runs
 * (MINI_BATCH_COMMIT_INTERVAL). */
#define COMMIT_INTERVAL_S 1.0
/* The largest result.json and trajectory read back. */
#define RESULT_MAX (64u << 20)
#define TRAJ_MAX (1u << 30)

int mini_batch_write_json(const char *path, const cJSON *json, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_json_print_py(&b, json, float_keys, e) < 0 ||
        mini_write_file_replace(path, b.data ? b.data : "", b.len, 0644, false, e) < 0)
        return mini_err_prefix(e, "writing %s", path);
    return 0;
}

static char *out_path(const struct batch_out *o, const char *name)
{
    char *p = NULL;
    return asprintf(&p, "%s/%s", o->dir, name) < 0 ? NULL : p;
}

/* An object from path; a new empty one when there is no file, or when it
 * is empty or not a JSON object (what a power loss may leave: *damaged is
 * set, when damaged is not NULL, and the file is kept beside, as
 * PATH.damaged).  NULL with e when it cannot be read. */
static cJSON *load_object(const char *path, bool *damaged, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? cJSON_CreateObject() : (mini_err_sys(e, MINI_E_IO, errno, "%s", path), NULL);
    /* Never read through a link (a file elsewhere would be copied into
     * the output): anything but a regular file is put aside as damaged. */
    bool regular = S_ISREG(st.st_mode);
    if (regular && mini_read_file(path, &b, 1u << 30, e) < 0)
        return NULL;
    struct mini_err pe;
    cJSON *o = regular ? mini_json_parse(b.data ? b.data : "", b.len, &pe) : NULL;
    if (o && cJSON_IsObject(o))
        return o;
    cJSON_Delete(o);
    if (damaged)
        *damaged = true;
    _cleanup_free_ char *aside = NULL;
    if (asprintf(&aside, "%s.damaged", path) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory"), NULL;
    if (rename(path, aside) < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "moving the damaged %s away", path), NULL;
    fprintf(stderr, "mini batch: %s is %s: moved to %s\n", path,
            !regular         ? "not a regular file (a link?)"
                : b.len == 0 ? "empty (a power loss?)"
                             : "not a JSON object (a power loss?)",
            aside);
    return cJSON_CreateObject();
}

static cJSON *read_json_file(const char *path, size_t max)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    if (mini_read_file(path, &b, max, &e) < 0)
        return NULL;
    cJSON *j = mini_json_parse(b.data ? b.data : "", b.len, &e);
    if (j && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The result of task id as its files say it finished: its result.json
 * parses, is a finished task's (not an interrupted one's) and agrees with
 * pred (its preds.json entry; NULL: none to agree with), and so does its
 * trajectory, when it has one.  NULL otherwise, with *why saying what is
 * wrong (NULL: the task has no result.json at all). */
static cJSON *task_result(const struct batch_out *o, const char *id, const cJSON *pred, const char **why)
{
    _cleanup_free_ char *rp = NULL, *tp = NULL;
    *why = "out of memory";
    if (asprintf(&rp, "%s/%s/result.json", o->dir, id) < 0 || asprintf(&tp, "%s/%s/%s.traj.json", o->dir, id, id) < 0)
        return NULL;
    _cleanup_cjson_ cJSON *r = read_json_file(rp, RESULT_MAX);
    if (!r) {
        *why = access(rp, F_OK) < 0 && (errno == ENOENT || errno == ENOTDIR) ? NULL
                                                                             : "its result.json is empty or damaged";
        return NULL;
    }
    const char *rid = str_of(r, "instance_id"), *st = str_of(r, "exit_status"), *traj = str_of(r, "trajectory");
    const char *sub = str_of(r, "submission");
    *why = "its result.json is not a finished task's";
    if (!rid || strcmp(rid, id) != 0 || !st || strcmp(st, "KeyboardInterrupt") == 0)
        return NULL;
    *why = "its result.json disagrees with preds.json";
    const char *patch = str_of(pred, "model_patch");
    if (pred && (!patch || strcmp(patch, sub ? sub : "") != 0))
        return NULL;
    if (traj && *traj) {
        _cleanup_cjson_ cJSON *t = read_json_file(tp, TRAJ_MAX);
        const char *tid = str_of(t, "instance_id");
        const char *tst = str_of(cJSON_GetObjectItemCaseSensitive(t, "info"), "exit_status");
        *why = "its trajectory is empty, damaged or another run's";
        if (!tid || strcmp(tid, id) != 0 || !tst || strcmp(tst, st) != 0)
            return NULL;
    }
    *why = NULL;
    return TAKE_PTR(r);
}

static int write_preds(struct batch_out *o, struct mini_err *e);

/* A damaged preds.json: the finished tasks are those of the directory
 * whose files say so. */
static int rebuild_preds(struct batch_out *o, struct mini_err *e)
{
    DIR *d = opendir(o->dir);
    if (!d)
        return mini_err_sys(e, MINI_E_IO, errno, "reading %s", o->dir);
    struct dirent *de;
    int n = 0, rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        const char *why;
        cJSON *r = task_result(o, de->d_name, NULL, &why);
        if (r) {
            rc = mini_batch_out_record(o, r, e);
            n += rc == 0;
        } else if (why)
            fprintf(stderr, "mini batch: %s: %s: it runs again\n", de->d_name, why);
    }
    closedir(d);
    if (rc == 0)
        fprintf(stderr, "mini batch: preds.json rebuilt from the result.json of %d finished task%s\n", n,
                n == 1 ? "" : "s");
    return rc;
}

/* Only what the tasks' files confirm stays in preds.json; summary.json
 * gets what it lacks from them (a crash between the writes of the two). */
static void check_preds(struct batch_out *o)
{
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks");
    cJSON *p = o->preds ? o->preds->child : NULL;
    while (p) {
        cJSON *next = p->next;
        const char *why;
        cJSON *r = task_result(o, p->string, p, &why);
        if (!r) {
            fprintf(stderr, "mini batch: %s: %s (a power loss?): it runs again\n", p->string,
                    why ? why : "its result.json is missing");
            cJSON_DeleteItemFromObjectCaseSensitive(tasks, p->string);
            cJSON_Delete(cJSON_DetachItemViaPointer(o->preds, p));
            o->preds_dirty = o->summary_dirty = true;
        } else if (!cJSON_GetObjectItemCaseSensitive(tasks, p->string)) {
            cJSON_AddItemToObject(tasks, p->string, r);
            o->summary_dirty = true;
        } else
            cJSON_Delete(r);
        p = next;
    }
}

/* summary.json's tasks that preds.json does not have go. */
static void prune_summary(struct batch_out *o)
{
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks");
    for (cJSON *t = tasks->child, *next; t; t = next) {
        next = t->next;
        if (!cJSON_GetObjectItemCaseSensitive(o->preds, t->string)) {
            cJSON_Delete(cJSON_DetachItemViaPointer(tasks, t));
            o->summary_dirty = true;
        }
    }
}

/* Seconds from the environment variable name, else def. */
static double env_seconds(const char *name, double def)
{
    const char *ev = getenv(name);
    char *end;
    double v = ev ? strtod(ev, &end) : NAN;
    return ev && *ev && !*end && v >= 0 ? v : def;
}

int mini_batch_out_open(struct batch_out *o, const char *dir, struct mini_err *e)
{
    memset(o, 0, sizeof *o);
    if (mini_mkdir_p(dir, 0755, e) < 0)
        return mini_err_prefix(e, "output directory");
    if (!(o->dir = strdup(dir)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    o->summary_every = env_seconds("MINI_BATCH_SUMMARY_INTERVAL", SUMMARY_INTERVAL_S);
    o->commit_every = env_seconds("MINI_BATCH_COMMIT_INTERVAL", COMMIT_INTERVAL_S);
    o->commit_at = mini_mono_s();
    _cleanup_free_ char *pp = out_path(o, "preds.json"), *sp = out_path(o, "summary.json");
    if (!pp || !sp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    bool preds_damaged = false;
    if (!(o->preds = load_object(pp, &preds_damaged, e)) || !(o->summary = load_object(sp, NULL, e)))
        goto fail;
    cJSON *tasks = cJSON_GetObjectItemCaseSensitive(o->summary, "tasks");
    if (!cJSON_IsObject(tasks)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o->summary, "tasks");
        if (!cJSON_AddObjectToObject(o->summary, "tasks")) {
            mini_err_set(e, MINI_E_NOMEM, "out of memory");
            goto fail;
        }
    }
    /* A damaged summary.json is rebuilt from the tasks' files here. */
    if (!preds_damaged)
        check_preds(o);
    else if (rebuild_preds(o, e) < 0)
        goto fail;
    prune_summary(o);
    if ((o->preds_dirty && write_preds(o, e) < 0) || (o->summary_dirty && mini_batch_out_write(o, e) < 0))
        goto fail;
    return 0;
fail:
    mini_batch_out_free(o);
    return -1;
}

bool mini_batch_out_done(const struct batch_out *o, const char *id)
{
    return cJSON_GetObjectItemCaseSensitive(o->preds, id) != NULL;
}

static int write_preds(struct batch_out *o, struct mini_err *e)
{
    _cleanup_free_ char *pp = out_path(o, "preds.json");
    if (!pp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_batch_write_json(pp, o->preds, e) < 0)
        return -1;
    o->preds_dirty = false;
    return 0;
}

int mini_batch_out_forget(struct batch_out *o, const char *id, struct mini_err *e)
{
    if (!cJSON_GetObjectItemCaseSensitive(o->preds, id))
        return 0;
    cJSON_DeleteItemFromObjectCaseSensitive(o->preds, id);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o->summary, "tasks"), id);
    o->summary_dirty = o->uncommitted = true;
    /* Now: the task's directory is about to be made afresh. */
    return write_preds(o, e);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Recompute the totals and write summary.json. */
static int mini_batch_out_write(struct batch_out *o, struct mini_err *e)
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
    if (mini_batch_write_json(sp, o->summary, e) < 0)
        return -1;
    o->summary_at = mini_mono_s();
    o->summary_took = o->summary_at - t0;
    o->summary_dirty = false;
    return 0;
}

int mini_batch_out_record(struct batch_out *o, cJSON *result, struct mini_err *e)
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
    o->preds_dirty = o->summary_dirty = o->uncommitted = true;
    return 0;
}

int mini_batch_out_finish(struct batch_out *o, struct mini_err *e)
{
    _cleanup_free_ char *pp = out_path(o, "preds.json"), *sp = out_path(o, "summary.json");
    if (!pp || !sp)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if ((o->preds_dirty && write_preds(o, e) < 0) || mini_batch_out_write(o, e) < 0)
        return -1;
    mini_write_file_done(pp);
    mini_write_file_done(sp);
    return mini_batch_out_commit(o, e);
}

/* A group commit: one syncfs() of the filesystem of dir.  0, or -1 with
 * errno. */
static int sync_dir(const char *dir)
{
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 || syncfs(fd) < 0 ? -1 : 0;
}

static void *commit_thread(void *arg)
{
    struct batch_out *o = arg;
    int err = sync_dir(o->dir) < 0 ? errno : 0;
    o->bg_errno = err;
    o->bg_took = mini_mono_s() - o->bg_started;
    __atomic_store_n(&o->bg_done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* A commit's end: counted, or its failure said (-1 with e). */
static int commit_ended(struct batch_out *o, double started, double took, int err, struct mini_err *e)
{
    o->commit_at = started; /* it made durable what was written before it started */
    if (err) {
        o->commit_failures++;
        o->uncommitted = true; /* again, an interval later */
        return mini_err_sys(e, MINI_E_IO, err,
                            "syncing %s to disk: what finished since the last sync may not survive a power loss",
                            o->dir);
    }
    o->commits++;
    o->commit_s += took;
    return 0;
}

/* The background commit, if it has ended (or once it has, with wait). */
static int commit_reap(struct batch_out *o, bool wait, struct mini_err *e)
{
    if (!o->bg_running || (!wait && !__atomic_load_n(&o->bg_done, __ATOMIC_ACQUIRE)))
        return 0;
    pthread_join(o->bg_thread, NULL);
    o->bg_running = false;
    return commit_ended(o, o->bg_started, o->bg_took, o->bg_errno, e);
}

/* The group commit: everything written to the output's filesystem so far
 * (the tasks' files, preds.json, summary.json) to disk, by one syncfs(),
 * now (mini_batch_out_sync starts one in a thread when due). */
static int mini_batch_out_commit(struct batch_out *o, struct mini_err *e)
{
    struct mini_err re;
    (void)commit_reap(o, true, &re); /* what it did not make durable, this does */
    double t0 = mini_mono_s();
    o->uncommitted = false;
    int err = sync_dir(o->dir) < 0 ? errno : 0;
    return commit_ended(o, t0, mini_mono_s() - t0, err, e);
}

int mini_batch_out_sync(struct batch_out *o, struct mini_err *e)
{
    /* preds.json first: what a resume trusts. */
    if (o->preds_dirty && write_preds(o, e) < 0)
        return -1;
    /* summary.json when due: at most once an interval, and never for more
     * than a tenth of the time (it grows with every task). */
    double since = mini_mono_s() - o->summary_at;
    if (o->summary_dirty && since >= o->summary_every && since >= 10 * o->summary_took &&
        mini_batch_out_write(o, e) < 0)
        return -1;
    /* The group commit, at most once an interval, in a thread of its own
     * (a syncfs() waits for the disk: the workers must not wait for this
     * process meanwhile); a failure said once (mini_batch_out_finish, the
     * last commit, says its own). */
    if (commit_reap(o, false, e) < 0 && o->commit_failures == 1)
        return -1;
    double now = mini_mono_s();
    if (o->bg_running || !o->uncommitted || now - o->commit_at < o->commit_every)
        return 0;
    o->uncommitted = false;
    o->bg_started = now;
    o->bg_done = false;
    if (pthread_create(&o->bg_thread, NULL, commit_thread, o) == 0) {
        o->bg_running = true;
        return 0;
    }
    int err = sync_dir(o->dir) < 0 ? errno : 0;
    if (commit_ended(o, now, mini_mono_s() - now, err, e) < 0 && o->commit_failures == 1)
        return -1;
    return 0;
}

void mini_batch_out_free(struct batch_out *o)
{
    struct mini_err e;
    commit_reap(o, true, &e);
    free(o->dir);
    cJSON_Delete(o->preds);
    cJSON_Delete(o->summary);
    memset(o, 0, sizeof *o);
}
