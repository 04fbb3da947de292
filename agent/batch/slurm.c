/* `mini batch slurm` and `mini batch merge` (batch.h, docs/batch.md).
 *
 * Slurm stays the scheduler: `slurm` writes an sbatch script whose array
 * task I runs `mini batch ... --shard I/N` into DIR/shard-I, and submits it
 * (or prints it, --dry-run); `merge` joins the shards' preds.json and
 * summary.json into one, refusing a task found twice or (with --tasks) one
 * found nowhere. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "batch/batch.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/client.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/path.h"

#define SHARDS_MAX 10000

/* s as one shell word (single-quoted). */
static int quote(struct mini_buf *b, const char *s)
{
    if (mini_buf_append(b, "'", 1) < 0)
        return -1;
    for (; *s; s++)
        if ((*s == '\'' ? mini_buf_append(b, "'\\''", 4) : mini_buf_append(b, s, 1)) < 0)
            return -1;
    return mini_buf_append(b, "'", 1);
}

static int put(struct mini_buf *b, const char *s) { return mini_buf_append(b, s, strlen(s)); }

/* Options of `mini batch` that take a value (for copying them along). */
static bool takes_value(const char *a)
{
    static const char *const v[] = { "-c",
                                     "--config",
                                     "-m",
                                     "--model",
                                     "--model-class",
                                     "-w",
                                     "--workers",
                                     "--filter",
                                     "--slice",
                                     "--cost-limit-total",
                                     "--sandbox",
                                     "--environment-class",
                                     "--workspace-owner",
                                     NULL };
    for (size_t i = 0; v[i]; i++)
        if (!strcmp(a, v[i]))
            return true;
    return false;
}

/* A -c value that names a file relative to here must still name it from
 * the job's working directory: made absolute when it exists here. */
static char *abs_if_file(const char *s)
{
    return access(s, F_OK) == 0 && s[0] != '/' ? mini_client_abspath(s) : strdup(s);
}

int mini_batch_slurm_main(int argc, char **argv)
{
    const char *out = NULL, *tasks = NULL;
    long shards = 0;
    bool dry = false;
    _cleanup_buf_ struct mini_buf fwd = MINI_BUF_INIT, sb = MINI_BUF_INIT;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--shards")) && i + 1 < argc) {
            if (a[2] == 's') {
                char *end;
                shards = strtol(argv[++i], &end, 10);
                if (*end || shards < 1 || shards > SHARDS_MAX) {
                    fprintf(stderr, "mini batch slurm: --shards: expected 1 to %d, got %s\n", SHARDS_MAX, argv[i]);
                    return 2;
                }
            } else {
                out = argv[++i];
            }
        } else if (!strcmp(a, "--dry-run")) {
            dry = true;
        } else if (!strcmp(a, "--shard")) {
            fprintf(stderr, "mini batch slurm: --shard is set per array task; give --shards N\n");
            return 2;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("Usage: mini batch slurm TASKS -o DIR --shards N [--dry-run] [BATCH OPTION]... [-- SBATCH "
                   "OPTION...]\n"
                   "Write DIR/slurm/batch.sbatch, an array of N jobs each running one shard of\n"
                   "`mini batch TASKS` into DIR/shard-I, and submit it with sbatch (--dry-run: print\n"
                   "it).  Then `mini batch merge DIR/shard-* -o DIR --tasks TASKS` joins them.\n");
            return 0;
        } else if (a[0] == '-' && takes_value(a) && i + 1 < argc) {
            _cleanup_free_ char *v =
                !strcmp(a, "-c") || !strcmp(a, "--config") ? abs_if_file(argv[i + 1]) : strdup(argv[i + 1]);
            if (!v || put(&fwd, " ") < 0 || quote(&fwd, a) < 0 || put(&fwd, " ") < 0 || quote(&fwd, v) < 0)
                return 1;
            i++;
        } else if (a[0] == '-') {
            if (put(&fwd, " ") < 0 || quote(&fwd, a) < 0)
                return 1;
        } else if (!tasks) {
            tasks = a;
        } else {
            fprintf(stderr, "mini batch slurm: unexpected argument %s (see --help)\n", a);
            return 2;
        }
    }
    if (!tasks || !out || !shards) {
        fprintf(stderr, "mini batch slurm: need TASKS, -o DIR and --shards N (see --help)\n");
        return 2;
    }
    struct mini_err e;
    _cleanup_free_ char *dir = mini_client_abspath(out), *tasks_abs = mini_client_abspath(tasks);
    _cleanup_free_ char *self = mini_exe_sibling("mini"), *sdir = NULL, *script = NULL;
    struct mini_tasks t;
    if (mini_tasks_load(tasks, &t, &e) < 0) {
        fprintf(stderr, "mini batch slurm: %s\n", e.msg);
        return 2;
    }
    mini_tasks_free(&t);
    if (!dir || !tasks_abs || !self || asprintf(&sdir, "%s/slurm", dir) < 0 ||
        asprintf(&script, "%s/batch.sbatch", sdir) < 0)
        return 1;
    char line[512];
    snprintf(line, sizeof line,
             "#!/bin/bash\n# Written by mini batch slurm: one shard of the batch per array task.\n"
             "#SBATCH --job-name=mini-batch\n#SBATCH --array=0-%ld\n",
             shards - 1);
    if (put(&sb, line) < 0 || put(&sb, "#SBATCH --output=") < 0 || put(&sb, sdir) < 0 || put(&sb, "/%A_%a.log\n") < 0)
        return 1;
    for (int k = i + 1; k < argc; k++) {
        if (strchr(argv[k], '\n')) {
            fprintf(stderr, "mini batch slurm: an sbatch option holds a newline\n");
            return 2;
        }
        if (put(&sb, "#SBATCH ") < 0 || put(&sb, argv[k]) < 0 || put(&sb, "\n") < 0)
            return 1;
    }
    snprintf(line, sizeof line, "set -eu\nshard=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}\nexec ");
    if (put(&sb, line) < 0 || quote(&sb, self) < 0 || put(&sb, " batch ") < 0 || quote(&sb, tasks_abs) < 0 ||
        put(&sb, " -o ") < 0 || quote(&sb, dir) < 0 || put(&sb, "/shard-\"$shard\"") < 0)
        return 1;
    snprintf(line, sizeof line, " --shard \"$shard\"/%ld", shards);
    if (put(&sb, line) < 0 || mini_buf_append(&sb, fwd.data ? fwd.data : "", fwd.len) < 0 || put(&sb, "\n") < 0)
        return 1;
    if (dry) {
        fwrite(sb.data, 1, sb.len, stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (mini_mkdir_p(sdir, 0755, &e) < 0 || mini_write_file_atomic(script, sb.data, sb.len, 0755, &e) < 0) {
        fprintf(stderr, "mini batch slurm: %s\n", e.msg);
        return 1;
    }
    fprintf(stderr, "mini batch slurm: wrote %s\n", script);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("sbatch", "sbatch", "--parsable", script, (char *)NULL);
        fprintf(stderr, "mini batch slurm: running sbatch: %s\n", strerror(errno));
        _exit(127);
    }
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "mini batch slurm: sbatch failed; the script is %s\n", script);
        return 1;
    }
    fprintf(stderr, "mini batch slurm: submitted; when the job is done: mini batch merge %s/shard-* -o %s --tasks %s\n",
            dir, dir, tasks_abs);
    return 0;
}

/* ---- merge ---- */

static cJSON *read_json(const char *dir, const char *name, struct mini_err *e)
{
    _cleanup_free_ char *p = NULL;
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (asprintf(&p, "%s/%s", dir, name) < 0) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    if (mini_read_file(p, &b, 1u << 30, e) < 0)
        return NULL;
    cJSON *o = mini_json_parse(b.data ? b.data : "", b.len, e);
    if (o && !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        o = NULL;
        mini_err_set(e, MINI_E_CONFIG, "%s: not a JSON object", p);
    }
    if (!o)
        mini_err_prefix(e, "%s", p);
    return o;
}

int mini_batch_merge_main(int argc, char **argv)
{
    static const struct option lo[] = { { "output", required_argument, NULL, 'o' },
                                        { "tasks", required_argument, NULL, 't' },
                                        { "help", no_argument, NULL, 'h' },
                                        { 0 } };
    const char *out = NULL, *tasks = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:t:h", lo, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 't')
            tasks = optarg;
        else if (c == 'h') {
            printf("Usage: mini batch merge DIR... -o OUT [--tasks TASKS]\n"
                   "Join the preds.json and summary.json of batch outputs (Slurm shards) into OUT.\n"
                   "A task in two of them is refused; with --tasks, so is one in none.\n");
            return 0;
        } else {
            fprintf(stderr, "mini batch merge: bad option %s (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (!out || optind >= argc) {
        fprintf(stderr, "mini batch merge: need DIR... and -o OUT (see --help)\n");
        return 2;
    }
    struct mini_err e;
    _cleanup_cjson_ cJSON *preds = cJSON_CreateObject(), *summary = cJSON_CreateObject(), *from = cJSON_CreateObject();
    cJSON *all = cJSON_AddObjectToObject(summary, "tasks");
    if (!preds || !summary || !from || !all)
        return 1;
    int dups = 0;
    for (int i = optind; i < argc; i++) {
        _cleanup_cjson_ cJSON *p = read_json(argv[i], "preds.json", &e);
        _cleanup_cjson_ cJSON *s = p ? read_json(argv[i], "summary.json", &e) : NULL;
        if (!p || !s) {
            fprintf(stderr, "mini batch merge: %s\n", e.msg);
            return 1;
        }
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "tasks");
        cJSON *it;
        cJSON_ArrayForEach (it, p) {
            const cJSON *was = cJSON_GetObjectItemCaseSensitive(from, it->string);
            if (was) {
                if (dups++ < 20)
                    fprintf(stderr, "mini batch merge: %s is in both %s and %s\n", it->string, was->valuestring,
                            argv[i]);
                continue;
            }
            cJSON_AddStringToObject(from, it->string, argv[i]);
            cJSON_AddItemToObject(preds, it->string, cJSON_Duplicate(it, true));
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(st, it->string);
            if (r)
                cJSON_AddItemToObject(all, it->string, cJSON_Duplicate(r, true));
        }
    }
    int missing = 0;
    if (tasks) {
        struct mini_tasks t;
        if (mini_tasks_load(tasks, &t, &e) < 0) {
            fprintf(stderr, "mini batch merge: %s\n", e.msg);
            return 2;
        }
        for (size_t k = 0; k < t.n; k++)
            if (!cJSON_GetObjectItemCaseSensitive(preds, t.v[k].id) && missing++ < 20)
                fprintf(stderr, "mini batch merge: %s is in none of them\n", t.v[k].id);
        mini_tasks_free(&t);
    }
    if (dups || missing) {
        fprintf(stderr, "mini batch merge: refused: %d task(s) found twice, %d missing; nothing written\n", dups,
                missing);
        return 1;
    }
    struct batch_out o = { 0 };
    _cleanup_free_ char *out_abs = mini_client_abspath(out);
    if (!out_abs || mini_mkdir_p(out_abs, 0755, &e) < 0) {
        fprintf(stderr, "mini batch merge: %s\n", out_abs ? e.msg : "out of memory");
        return 1;
    }
    o.dir = out_abs;
    o.preds = preds;
    o.summary = summary;
    _cleanup_free_ char *pp = NULL;
    int rc = asprintf(&pp, "%s/preds.json", out_abs) < 0 || mini_batch_write_json(pp, preds, &e) < 0 ||
        mini_batch_out_finish(&o, &e) < 0;
    if (rc) {
        fprintf(stderr, "mini batch merge: %s\n", e.msg);
        return 1;
    }
    fprintf(stderr, "mini batch merge: %d tasks from %d director%s into %s\n", cJSON_GetArraySize(preds), argc - optind,
            argc - optind == 1 ? "y" : "ies", out_abs);
    return 0;
}
