/* The task file of `mini batch` and the selection (agent/batch/tasks.c):
 * the three formats, the checks of a record, Python's slice semantics
 * (expected values from Python), the anchored filter, shards. */
#include "check.h"
#include "batch/tasks.h"

#include <stdio.h>
#include <string.h>

static int parse(const char *text, const char *name, struct mini_tasks *t, struct mini_err *e)
{
    return mini_tasks_parse(text, strlen(text), name, t, e);
}

/* The ids of t, space-separated. */
static const char *ids(const struct mini_tasks *t)
{
    static char buf[512];
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, t->v[i].id);
    }
    return buf;
}

static const char ten[] = "- {instance_id: a0, problem_statement: p}\n- {instance_id: a1, problem_statement: p}\n"
                          "- {instance_id: a2, problem_statement: p}\n- {instance_id: a3, problem_statement: p}\n"
                          "- {instance_id: a4, problem_statement: p}\n- {instance_id: a5, problem_statement: p}\n"
                          "- {instance_id: a6, problem_statement: p}\n- {instance_id: a7, problem_statement: p}\n"
                          "- {instance_id: a8, problem_statement: p}\n- {instance_id: b9, problem_statement: p}\n";

static void slice_is(const char *spec, const char *want)
{
    struct mini_tasks t;
    struct mini_err e;
    CHECK(parse(ten, "ten.yaml", &t, &e) == 0);
    int r = mini_tasks_select(&t, NULL, spec, 0, 0, &e);
    if (!want)
        CHECK_MSG(r < 0 && strstr(e.msg, "--slice"), "%s: %s", spec, e.msg);
    else
        CHECK_MSG(r == 0 && strcmp(ids(&t), want) == 0, "%s: got \"%s\", want \"%s\"", spec, ids(&t), want);
    mini_tasks_free(&t);
}

static void bad(const char *text, const char *name, const char *want)
{
    struct mini_tasks t;
    struct mini_err e;
    e.msg[0] = '\0';
    CHECK_MSG(parse(text, name, &t, &e) < 0 && strstr(e.msg, want), "%s: %s (want %s)", name, e.msg, want);
}

int main(void)
{
    struct mini_tasks t;
    struct mini_err e;

    /* JSON Lines (blank lines skipped), an array, YAML: the same tasks. */
    const char *jl = "{\"instance_id\": \"x\", \"problem_statement\": \"one\", \"repo\": \"r\", \"setup\": \"s\"}\n\n"
                     "{\"instance_id\": \"y\", \"problem_statement\": \"two\", \"workspace\": {\"git\": \"g\", "
                     "\"commit\": \"c\"}, \"verify\": \"v\", \"image\": \"i\"}\n";
    CHECK(parse(jl, "t.jsonl", &t, &e) == 0 && t.n == 2);
    CHECK(!strcmp(t.v[0].setup, "s") && !t.v[0].verify && !t.v[0].ws_path && !t.v[0].ws_git);
    CHECK(!strcmp(t.v[1].ws_git, "g") && !strcmp(t.v[1].ws_commit, "c") && !strcmp(t.v[1].image, "i"));
    CHECK(cJSON_GetObjectItemCaseSensitive(t.v[0].record, "repo") != NULL);
    mini_tasks_free(&t);

    /* SWE-bench instances: image_name, else docker_image (mini-swe-agent's
     * runner); none: the name it derives, with --swebench. */
    const char *sb = "{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"image_name\": \"n\", "
                     "\"docker_image\": \"d\"}\n"
                     "{\"instance_id\": \"b\", \"problem_statement\": \"p\", \"docker_image\": \"d\"}\n"
                     "{\"instance_id\": \"astropy__Astropy-12907\", \"problem_statement\": \"p\"}\n";
    CHECK(parse(sb, "sb.jsonl", &t, &e) == 0 && t.n == 3);
    CHECK(!strcmp(t.v[0].image, "n") && !strcmp(t.v[1].image, "d") && !t.v[2].image);
    CHECK(mini_tasks_swebench_images(&t, &e) == 0);
    CHECK(!strcmp(t.v[0].image, "n") && !strcmp(t.v[1].image, "d"));
    CHECK(t.v[2].image &&
          !strcmp(t.v[2].image, "docker.io/swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"));
    mini_tasks_free(&t);
    CHECK(parse("[{\"instance_id\": \"x\", \"problem_statement\": \"one\", \"workspace\": \"/src\"}]", "t.json", &t,
                &e) == 0 &&
          t.n == 1 && !strcmp(t.v[0].ws_path, "/src"));
    mini_tasks_free(&t);
    CHECK(parse("- instance_id: x\n  problem_statement: |\n    two\n    lines\n", "t.yml", &t, &e) == 0 && t.n == 1 &&
          !strcmp(t.v[0].problem, "two\nlines\n"));
    mini_tasks_free(&t);
    CHECK(parse("", "empty.jsonl", &t, &e) < 0 || t.n == 0);
    if (t.root)
        mini_tasks_free(&t);

    /* Records that are refused, each with where and why. */
    bad("{\"instance_id\": \"x\"}\n", "a.jsonl", "a.jsonl:1 (x): problem_statement");
    bad("{\"instance_id\": 3, \"problem_statement\": \"p\"}\n", "a.jsonl", "instance_id (a string) is required");
    bad("{\"instance_id\": \"a/b\", \"problem_statement\": \"p\"}\n", "a.jsonl", "holds a '/'");
    bad("{\"instance_id\": \"..\", \"problem_statement\": \"p\"}\n", "a.jsonl", "starts with '.'");
    bad("{\"instance_id\": \"-rf\", \"problem_statement\": \"p\"}\n", "a.jsonl", "starts with '.' or '-'");
    bad("{\"instance_id\": \"a\\nb\", \"problem_statement\": \"p\"}\n", "a.jsonl", "control character");
    bad("{\"instance_id\": \"\", \"problem_statement\": \"p\"}\n", "a.jsonl", "is empty");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"verify\": 1}\n", "a.jsonl",
        "verify must be a string");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"workspace\": {\"commit\": \"c\"}}\n", "a.jsonl",
        "either path or git");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"workspace\": {\"git\": \"r\", \"commit\": "
        "\"--x\"}}\n",
        "a.jsonl", "not a revision");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"workspace\": {\"git\": \"r\", \"branch\": \"b\"}}\n",
        "a.jsonl", "unknown key");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\", \"a\": 1, \"a\": 2}\n", "a.jsonl", "duplicate key");
    bad("{\"instance_id\": \"a\", \"problem_statement\": \"p\"}\n[1]\n", "a.jsonl", "a.jsonl:2");
    bad("- {instance_id: a, problem_statement: p}\n- {instance_id: a, problem_statement: q}\n", "a.yaml",
        "\"a\" is given twice");
    bad("instance_id: a\n", "a.yaml", "expected a list of tasks");
    bad("[1, 2]", "a.json", "a task must be an object");

    /* Python's slices of a0..a8 b9 (expected values from Python 3). */
    slice_is("2:5", "a2 a3 a4");
    slice_is("-3:", "a7 a8 b9");
    slice_is(":-8", "a0 a1");
    slice_is("::-3", "b9 a6 a3 a0");
    slice_is("8:2:-2", "a8 a6 a4");
    slice_is("20:", "");
    slice_is("-20:3", "a0 a1 a2");
    slice_is("5:1", "");
    slice_is("1:9:4", "a1 a5");
    slice_is(":", "a0 a1 a2 a3 a4 a5 a6 a7 a8 b9");
    slice_is("-1::-4", "b9 a5 a1");
    slice_is("::0", NULL);
    slice_is("x:1", NULL);
    slice_is("3", NULL);

    /* The filter matches at the start, as re.match: "a" keeps a0..a8, "0" nothing. */
    CHECK(parse(ten, "ten.yaml", &t, &e) == 0);
    CHECK(mini_tasks_select(&t, "a[2-4]", NULL, 0, 0, &e) == 0 && !strcmp(ids(&t), "a2 a3 a4"));
    mini_tasks_free(&t);
    CHECK(parse(ten, "ten.yaml", &t, &e) == 0);
    CHECK(mini_tasks_select(&t, "0", NULL, 0, 0, &e) == 0 && t.n == 0);
    mini_tasks_free(&t);
    CHECK(parse(ten, "ten.yaml", &t, &e) == 0);
    CHECK(mini_tasks_select(&t, "a(", NULL, 0, 0, &e) < 0 && strstr(e.msg, "--filter a("));
    mini_tasks_free(&t);

    /* Shards: each id in exactly one, whatever the order; the filter and
     * slice apply first. */
    size_t total = 0;
    for (unsigned s = 0; s < 4; s++) {
        CHECK(parse(ten, "ten.yaml", &t, &e) == 0);
        CHECK(mini_tasks_select(&t, NULL, NULL, s, 4, &e) == 0);
        for (size_t i = 0; i < t.n; i++)
            CHECK(mini_task_shard(t.v[i].id, 4) == s);
        total += t.n;
        mini_tasks_free(&t);
    }
    CHECK(total == 10);
    CHECK(mini_task_shard("anything", 1) == 0);
    return check_summary();
}
