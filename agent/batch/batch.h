/* `mini batch`: many tasks, run by worker processes (forks of the batch,
 * each taking task after task), sharing one sandbox daemon; resumable output in the
 * layout of mini-swe-agent's batch runs.  docs/batch.md.
 *
 *   batch.c    the command line, the pool of workers, progress, Ctrl-C
 *   worker.c   one task: workspace, setup, the agent, verify, result.json
 *   output.c   preds.json and summary.json: loaded, updated atomically
 *   slurm.c    `mini batch slurm` (an sbatch array) and `mini batch merge`
 *   tasks.c    the TASKS file and the selection (tasks.h) */
#ifndef MINI_AGENT_BATCH_BATCH_H
#define MINI_AGENT_BATCH_BATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "batch/tasks.h"
#include "mini/err.h"
#include "mini/ws.h"

/* `mini batch ...`: argv[0] is "batch".  The exit code. */
int mini_batch_main(int argc, char **argv);

/* What every worker gets. */
struct batch_ctx {
    cJSON *cfg;          /* the merged config; each task gets a copy */
    const char *out_dir; /* absolute */
    bool sandbox;        /* environment_class sandbox, or a container class */
    bool container;      /* a container class (docker, ...): cwd is the image's */
    bool chown_ws;       /* root with a sandbox: workspaces are made as, and go to, ws_uid:ws_gid */
    uid_t ws_uid;
    gid_t ws_gid;
    int progress_fd;            /* the worker writes "P calls cost\n" here, or -1 */
    struct mini_ws_guard guard; /* what a task's workspace may not be copied from */
};

/* Run one task in this (worker) process: its directory OUT/ID is made
 * fresh, the result goes to OUT/ID/result.json.  0 when result.json was
 * written, else 1. */
int mini_batch_worker(const struct batch_ctx *b, const struct mini_task *t);

/* ---- output.c ---- */

struct batch_out {
    char *dir;
    cJSON *preds;                    /* preds.json: {id: {model_name_or_path, instance_id, model_patch}} */
    cJSON *summary;                  /* summary.json: {"tasks": {id: result}, "totals": {...}} */
    bool preds_dirty, summary_dirty; /* changed since written */
    double summary_at;               /* when summary.json was last written (monotonic s) */
    double summary_took;             /* and how long that took */
    double summary_every;            /* seconds between two writes of it (MINI_BATCH_SUMMARY_INTERVAL) */
    double commit_every;             /* seconds between two group commits (MINI_BATCH_COMMIT_INTERVAL) */
    bool uncommitted;                /* a task's files written since the last group commit */
    double commit_at;                /* when that started (monotonic s) */
    unsigned commits;                /* how many, */
    double commit_s;                 /* and the time they took */
    unsigned commit_failures;
    /* The group commit running in a thread of its own (mini_batch_out_sync). */
    bool bg_running, bg_done;
    pthread_t bg_thread;
    double bg_started, bg_took;
    int bg_errno;
};

/* Load what an earlier run left in dir (created if missing), trusting
 * only what the tasks' files confirm: a task of preds.json whose
 * result.json or trajectory is missing, damaged or disagrees with it is
 * dropped (said on stderr: it runs again); a damaged preds.json is moved
 * aside and rebuilt from the tasks' result.json files, a damaged
 * summary.json from preds.json's.  -1 with e when a file cannot be read. */
int mini_batch_out_open(struct batch_out *o, const char *dir, struct mini_err *e);
/* Whether the task finished in an earlier run (it is in preds.json). */
bool mini_batch_out_done(const struct batch_out *o, const char *id);
/* Forget a task (--redo-existing, or a worker about to run it again). */
int mini_batch_out_forget(struct batch_out *o, const char *id, struct mini_err *e);
/* Record a finished task's result (taken), in memory: mini_batch_out_sync
 * writes it. */
int mini_batch_out_record(struct batch_out *o, cJSON *result, struct mini_err *e);
/* Write what was recorded: preds.json now, summary.json when due (at most
 * once a second: mini_batch_out_write at the end), and a group commit when due
 * (at most once a second: mini_batch_out_commit at the end). */
int mini_batch_out_sync(struct batch_out *o, struct mini_err *e);
/* At the end: preds.json and summary.json written, their spares removed
 * (mini_write_file_replace), the group commit. */
int mini_batch_out_finish(struct batch_out *o, struct mini_err *e);
void mini_batch_out_free(struct batch_out *o);
/* Write json to path atomically (a crash leaves the old file or the new
 * one), as Python's json.dump(indent=2); not synced: mini_batch_out_commit. */
int mini_batch_write_json(const char *path, const cJSON *json, struct mini_err *e);

/* ---- slurm.c ---- */

int mini_batch_slurm_main(int argc, char **argv);
int mini_batch_merge_main(int argc, char **argv);

#endif
