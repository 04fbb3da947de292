/* libFuzzer target: arbitrary bytes as a `mini batch` task file, read as
 * JSON Lines (or a JSON array) and as YAML, then selected with a filter, a
 * slice and a shard taken from the input's first bytes.  Nothing may
 * crash or leak; an error must say why; every task kept must have a valid
 * instance_id and a problem statement, each id once, and the shards of a
 * list must cover it exactly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/tasks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct mini_tasks *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (!mini_task_id_valid(t->v[i].id, NULL) || !t->v[i].problem)
            abort();
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->v[i].id, t->v[j].id) == 0)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = { "fuzz.jsonl", "fuzz.yaml" };
    for (int k = 0; k < 2; k++) {
        struct mini_tasks t;
        struct mini_err e;
        e.msg[0] = '\0';
        if (mini_tasks_parse((const char *)data, size, names[k], &t, &e) < 0) {
            if (e.msg[0] == '\0')
                abort();
            continue;
        }
        check(&t);
        size_t n = t.n;
        /* The shards of 3 cover the list exactly. */
        size_t per[3] = { 0 };
        for (size_t i = 0; i < n; i++)
            per[mini_task_shard(t.v[i].id, 3)]++;
        if (per[0] + per[1] + per[2] != n)
            abort();
        char slice[32];
        int a = size > 0 ? (int)(int8_t)data[0] % 8 : 0, b = size > 1 ? (int)(int8_t)data[1] % 8 : 0;
        int s = size > 2 ? (int)(int8_t)data[2] % 4 : 1;
        snprintf(slice, sizeof slice, "%d:%d:%d", a, b, s ? s : 1);
        if (mini_tasks_select(&t, size > 3 && data[3] & 1 ? "t" : NULL, slice, 1, 3, &e) == 0) {
            check(&t);
            if (t.n > n)
                abort();
        } else if (e.msg[0] == '\0') {
            abort();
        }
        mini_tasks_free(&t);
    }
    return 0;
}
