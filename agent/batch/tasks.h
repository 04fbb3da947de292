/* A batch's task list: the TASKS file of `mini batch` (JSON Lines, a JSON
 * array, or YAML: a list of mappings), checked, and the selection of
 * --filter, --slice and --shard.  docs/batch.md has the format. */
#ifndef MINI_AGENT_BATCH_TASKS_H
#define MINI_AGENT_BATCH_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

/* At most this many tasks in one file, and this many bytes of it. */
#define MINI_TASKS_MAX 1000000
#define MINI_TASKS_FILE_MAX (512u << 20)

struct mini_task {
    const char *id;        /* instance_id: a file name (checked) */
    const char *problem;   /* problem_statement */
    const char *image;     /* image, else image_name, else docker_image; or NULL */
    char *own_image;       /* the image when the batch derived it (--swebench), owned */
    const char *ws_path;   /* workspace: a directory to copy, or NULL */
    const char *ws_git;    /* workspace.git: a repository to clone, or NULL */
    const char *ws_commit; /* workspace.commit (with git), or NULL */
    const char *setup;     /* or NULL */
    const char *verify;    /* or NULL */
    cJSON *record;         /* the whole record (the template variables) */
};

struct mini_tasks {
    cJSON *root; /* owns every record */
    struct mini_task *v;
    size_t n;
};

/* Read and check the file: every record an object with a unique, valid
 * instance_id and a problem_statement string; workspace, setup, verify and
 * image of the right types.  0, or -1 with e naming the file and record. */
int mini_tasks_load(const char *path, struct mini_tasks *t, struct mini_err *e);
/* Parse text (the file's) as mini_tasks_load does; name is for messages. */
int mini_tasks_parse(const char *text, size_t len, const char *name, struct mini_tasks *t, struct mini_err *e);
void mini_tasks_free(struct mini_tasks *t);

/* Give every task without an image that one (--swebench).  0, or -1 with e. */
int mini_tasks_swebench_images(struct mini_tasks *t, struct mini_err *e);

/* Whether s is a usable instance_id (a directory name of the output). */
bool mini_task_id_valid(const char *s, const char **why);

/* Keep, in order: ids matching regex at their start (NULL: all; Python's
 * re.match), then the Python slice "START:STOP[:STEP]" (NULL: all), then
 * shard I of N (N 0: all) by a hash of the id, so that every task is in
 * exactly one shard whatever the order.  0, or -1 with e (bad regex or
 * slice). */
int mini_tasks_select(struct mini_tasks *t, const char *regex, const char *slice, unsigned shard, unsigned nshards,
                      struct mini_err *e);
/* The shard of an id among n. */
unsigned mini_task_shard(const char *id, unsigned n);

#endif
