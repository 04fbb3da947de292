/* Unit tests of agent/config/ (config.c, dotenv.c, yaml_load.c).  The
 * differential tests against PyYAML, python-dotenv and Jinja2 are in
 * tests/config. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mini/json.h"
#include "config/config.h"
#include "config/dotenv.h"
#include "config/config_yaml.h"
#include "mini/buf.h"
#include "mini/cleanup.h"

static char tmpdir[] = "/tmp/mini-test-config-XXXXXX";

static char *tpath(const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
        abort();
    return p;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static cJSON *y(const char *text, struct mini_err *e)
{
    mini_err_clear(e);
    return mini_yaml_parse(text, strlen(text), "t.yaml", e);
}

static bool contains(const char *hay, const char *needle)
{
    bool ok = hay && strstr(hay, needle);
    if (!ok)
        fprintf(stderr, "  \"%s\" does not contain \"%s\"\n", hay ? hay : "(null)", needle);
    return ok;
}

static void clear_env(void)
{
    static const char *const vars[] = {
        "MSWEA_MODEL_NAME",        "MSWEA_MINI_CONFIG_PATH",      "MSWEA_CONFIG_DIR",       "MSWEA_COST_TRACKING",
        "MSWEA_GLOBAL_CONFIG_DIR", "LITELLM_MODEL_REGISTRY_PATH", "PYTHON_DOTENV_DISABLED",
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(vars); i++)
        unsetenv(vars[i]);
}

static void test_yaml_scalars(void)
{
    struct mini_err e;
    cJSON *v = y("n: ~\nb1: yes\nb2: Off\ni: 0x1F\no: 012\ns60: 1:30\nf: 1.5e+3\n"
                 "s1: 1e3\ns2: 08\ninf: -.inf\nnan: .nan\nq: '123'\nu: 1_000\nempty:\n",
                 &e);
    CHECK_MSG(v, "%s", e.msg);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(v, "n")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(v, "b1")));
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(v, "b2")));
    CHECK(cJSON_GetObjectItem(v, "i")->valuedouble == 31);
    CHECK(cJSON_GetObjectItem(v, "o")->valuedouble == 10);
    CHECK(cJSON_GetObjectItem(v, "s60")->valuedouble == 90);
    CHECK(cJSON_GetObjectItem(v, "f")->valuedouble == 1500);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "s1")), "1e3");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "s2")), "08");
    CHECK(isinf(cJSON_GetObjectItem(v, "inf")->valuedouble) && cJSON_GetObjectItem(v, "inf")->valuedouble < 0);
    CHECK(isnan(cJSON_GetObjectItem(v, "nan")->valuedouble));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "q")), "123");
    CHECK(cJSON_GetObjectItem(v, "u")->valuedouble == 1000);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(v, "empty")));
    cJSON_Delete(v);

    v = y("", &e);
    CHECK(v && cJSON_IsNull(v));
    cJSON_Delete(v);
    v = y("# nothing\n", &e);
    CHECK(v && cJSON_IsNull(v));
    cJSON_Delete(v);
}

static void test_yaml_blocks(void)
{
    struct mini_err e;
    cJSON *v = y("lit: |\n  one\n\n    two\n  three\n\n\nstrip: |-\n  x\n\n\nkeep: |+\n  x\n\n\n"
                 "fold: >\n  a\n  b\n\n  c\n   d\n  e\nfold_strip: >-\n  a\n  b\n",
                 &e);
    CHECK_MSG(v, "%s", e.msg);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "lit")), "one\n\n  two\nthree\n");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "strip")), "x");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "keep")), "x\n\n\n");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "fold")), "a b\nc\n d\ne\n");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "fold_strip")), "a b");
    cJSON_Delete(v);

    v = y("t: |\n  {%- if x -%}\n  <a>{{ y }}</a>\n  {%- endif %}\n", &e);
    CHECK_MSG(v, "%s", e.msg);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "t")), "{%- if x -%}\n<a>{{ y }}</a>\n{%- endif %}\n");
    cJSON_Delete(v);
}

static void test_yaml_anchors(void)
{
    struct mini_err e;
    cJSON *v = y("a: &a {x: 1, y: 2}\nb: &b {x: 9, z: 3}\n"
                 "c:\n  <<: [*a, *b]\n  y: 5\nd: *a\nl: &l [1, 2]\nm: *l\n",
                 &e);
    CHECK_MSG(v, "%s", e.msg);
    cJSON *c = cJSON_GetObjectItem(v, "c");
    CHECK(cJSON_GetObjectItem(c, "x")->valuedouble == 1); /* the first merged mapping wins */
    CHECK(cJSON_GetObjectItem(c, "y")->valuedouble == 5); /* explicit keys win */
    CHECK(cJSON_GetObjectItem(c, "z")->valuedouble == 3);
    CHECK(!cJSON_GetObjectItem(c, "<<"));
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "d"), "y")->valuedouble == 2);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(v, "m")) == 2);
    cJSON_Delete(v);

    CHECK(!y("a: &x 1\nb: &x 2\n", &e) && contains(e.msg, "duplicate anchor"));
    CHECK(!y("a: *nope\n", &e) && contains(e.msg, "undefined alias"));
    CHECK(!y("a: &a [*a]\n", &e) && contains(e.msg, "recursive"));
    CHECK(e.code == MINI_E_CONFIG);

    struct mini_buf bomb = MINI_BUF_INIT;
    mini_buf_puts(&bomb, "a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (char k = 'b'; k <= 'j'; k++) {
        mini_buf_printf(&bomb, "%c: &%c [", k, k);
        for (int i = 0; i < 10; i++)
            mini_buf_printf(&bomb, "%s*%c", i ? ", " : "", k - 1);
        mini_buf_puts(&bomb, "]\n");
    }
    CHECK(!y(bomb.data, &e) && contains(e.msg, "values"));
    mini_buf_free(&bomb);
}

static void test_yaml_errors(void)
{
    struct mini_err e;
    CHECK(!y("a: 1\nb: 2\na: 3\n", &e) && contains(e.msg, "t.yaml:3:1: duplicate key \"a\" (first at line 1)"));
    CHECK(!y("1: one\n", &e) && contains(e.msg, "mapping key must be a string, found integer 1"));
    CHECK(!y("yes: x\n", &e) && contains(e.msg, "found boolean yes"));
    CHECK(!y("[a]: b\n", &e) && contains(e.msg, "found a sequence"));
    CHECK(!y("a: [1, 2\n", &e) && contains(e.msg, "t.yaml:2:1:"));
    CHECK(!y("--- 1\n--- 2\n", &e) && contains(e.msg, "single document"));
    CHECK(!y("a: 2001-12-14\n", &e) && contains(e.msg, "timestamp"));
    CHECK(!y("a: \"x\\0y\"\n", &e) && contains(e.msg, "NUL"));
    CHECK(!y("a: !foo 1\n", &e) && contains(e.msg, "constructor"));
    CHECK(!y("a: !!int abc\n", &e) && contains(e.msg, "invalid integer"));
    CHECK(!y("a: =\n", &e) && contains(e.msg, "constructor"));
    CHECK(!y("a: \xff\n", &e));
    CHECK(!mini_yaml_parse("a: 1\0b", 6, NULL, &e) && contains(e.msg, "<string>"));

    struct mini_buf deep = MINI_BUF_INIT;
    for (int i = 0; i < MINI_YAML_MAX_DEPTH + 10; i++)
        mini_buf_putc(&deep, '[');
    for (int i = 0; i < MINI_YAML_MAX_DEPTH + 10; i++)
        mini_buf_putc(&deep, ']');
    CHECK(!y(deep.data, &e) && contains(e.msg, "deeper"));
    mini_buf_free(&deep);

    /* Keys that resolve to strings are fine, "=" included. */
    cJSON *v = y("'1': a\n!!str 2: b\n=: c\nnull_is_key: d\n", &e);
    CHECK_MSG(v && cJSON_GetObjectItem(v, "1") && cJSON_GetObjectItem(v, "2") && cJSON_GetObjectItem(v, "="), "%s",
              e.msg);
    cJSON_Delete(v);
}

static void test_specs(void)
{
    struct mini_err e;
    cJSON *v = mini_config_read_spec("agent.step_limit=10", &e);
    CHECK(v && mini_config_get_number(v, "agent.step_limit", -1) == 10);
    cJSON_Delete(v);
    v = mini_config_read_spec("model.model_name=anthropic/claude-sonnet-4-5", &e);
    CHECK_STR(mini_config_get_string(v, "model.model_name"), "anthropic/claude-sonnet-4-5");
    cJSON_Delete(v);
    v = mini_config_read_spec("model.model_kwargs={\"temperature\": 0.5, \"stop\": [\"x\"], \"temperature\": 1}", &e);
    CHECK(v && mini_config_get_number(v, "model.model_kwargs.temperature", -1) == 1);
    CHECK(cJSON_IsArray(mini_config_get(v, "model.model_kwargs.stop")));
    cJSON_Delete(v);
    v = mini_config_read_spec("agent.mode=yolo", &e);
    CHECK_STR(mini_config_get_string(v, "agent.mode"), "yolo");
    cJSON_Delete(v);
    v = mini_config_read_spec("agent.confirm_exit=false", &e);
    CHECK(v && cJSON_IsFalse(mini_config_get(v, "agent.confirm_exit")));
    cJSON_Delete(v);
    v = mini_config_read_spec("run.task=a=b", &e);
    CHECK_STR(mini_config_get_string(v, "run.task"), "a=b");
    cJSON_Delete(v);
    v = mini_config_read_spec("run.task=", &e);
    CHECK_STR(mini_config_get_string(v, "run.task"), "");
    cJSON_Delete(v);
    v = mini_config_read_spec("run.task=\"quoted\"", &e);
    CHECK_STR(mini_config_get_string(v, "run.task"), "quoted");
    cJSON_Delete(v);
    v = mini_config_read_spec("agent.cost_limit=NaN", &e);
    CHECK(v && isnan(mini_config_get_number(v, "agent.cost_limit", 0)));
    cJSON_Delete(v);
    CHECK(!mini_config_read_spec("agent..step_limit=1", &e) && contains(e.msg, "empty key"));
    CHECK(!mini_config_read_spec("=1", &e) && contains(e.msg, "empty key"));
}

static void test_find_and_load(void)
{
    struct mini_err e;
    const char *src = getenv("MINI_TEST_SOURCE_DIR");
    char *cfgdir = NULL;
    if (asprintf(&cfgdir, "%s/agent/configs", src ? src : ".") < 0)
        abort();
    setenv("MINI_CONFIG_DIR", cfgdir, 1);
    _cleanup_free_ char *bd = mini_config_builtin_dir();
    CHECK_STR(bd, cfgdir);

    _cleanup_free_ char *p1 = mini_config_find("mini", &e);
    _cleanup_free_ char *p2 = mini_config_find("mini.yaml", &e);
    CHECK(p1 && contains(p1, "/agent/configs/mini.yaml"));
    CHECK(p2 && contains(p2, "/agent/configs/mini.yaml"));
    /* A bare name is never looked for in the current directory (the
     * workspace); MSWEA_CONFIG_DIR unset is not ".". */
    CHECK(!mini_config_find("no_such_config", &e) && contains(e.msg, "not found (tried: ") &&
          contains(e.msg, "/agent/configs/no_such_config.yaml, ") && !strstr(e.msg, "tried: no_such_config.yaml") &&
          !strstr(e.msg, ", no_such_config.yaml") && !strstr(e.msg, "./"));
    /* A name with a suffix or a '/' is a file name: looked for as given
     * first.  Each place once: "x.yaml" and "./x.yaml" are one; an
     * absolute name is the same path in every directory; a directory is
     * named as such. */
    CHECK(!mini_config_find("no_such_config.yaml", &e) && contains(e.msg, "not found (tried: no_such_config.yaml, "));
    CHECK(!mini_config_find("./no_such_config", &e) && contains(e.msg, "not found (tried: no_such_config.yaml, "));
    CHECK(!mini_config_find("no_such_config.yaml", &e) && !contains(e.msg, "./no_such_config.yaml"));
    CHECK(!mini_config_find("/no-such-dir-mini/x", &e));
    CHECK_STR(e.msg, "config \"/no-such-dir-mini/x\" not found (tried: /no-such-dir-mini/x.yaml)");
    CHECK(!mini_config_find(cfgdir, &e) && contains(e.msg, " is a directory, not a config file (tried: "));
    CHECK(!mini_config_find("", &e));

    /* No specs: the built-in default alone. */
    cJSON *cfg = mini_config_load(NULL, 0, &e);
    CHECK_MSG(cfg, "%s", e.msg);
    CHECK(mini_config_get_string(cfg, "agent.system_template"));
    CHECK_STR(mini_config_get_string(cfg, "environment.environment_class"), "sandbox");
    CHECK(!mini_config_get(cfg, "model.model_class"));
    cJSON_Delete(cfg);

    /* MSWEA_MINI_CONFIG_PATH picks another default. */
    setenv("MSWEA_MINI_CONFIG_PATH", "mini_textbased", 1);
    cfg = mini_config_load(NULL, 0, &e);
    CHECK_STR(mini_config_get_string(cfg, "model.model_class"), "litellm_textbased");
    cJSON_Delete(cfg);
    unsetenv("MSWEA_MINI_CONFIG_PATH");

    /* With -c, the default is not loaded underneath. */
    const char *only[] = { "agent.step_limit=5" };
    cfg = mini_config_load(only, 1, &e);
    CHECK(cfg && !mini_config_get(cfg, "agent.system_template"));
    CHECK(cfg && mini_config_validate(cfg, &e) < 0 && contains(e.msg, "agent.system_template: missing"));
    cJSON_Delete(cfg);

    /* Later specs win; mappings merge; lists are replaced. */
    _cleanup_free_ char *f1 = tpath("one.yaml"), *f2 = tpath("two.yml");
    write_file(f1, "agent:\n  step_limit: 1\n  whitelist_actions: [a, b, c]\nmodel:\n  model_kwargs: {x: 1, y: 2}\n");
    write_file(f2, "agent:\n  whitelist_actions: [z]\nmodel:\n  model_kwargs: {y: 3}\n");
    const char *specs[] = { "mini", f1, f2, "agent.step_limit=7", "model.model_kwargs.w=\"s\"" };
    cfg = mini_config_load(specs, MINI_ARRAY_SIZE(specs), &e);
    CHECK_MSG(cfg, "%s", e.msg);
    CHECK(mini_config_get_number(cfg, "agent.step_limit", -1) == 7);
    CHECK(cJSON_GetArraySize(mini_config_get(cfg, "agent.whitelist_actions")) == 1);
    CHECK(mini_config_get_number(cfg, "model.model_kwargs.x", -1) == 1);
    CHECK(mini_config_get_number(cfg, "model.model_kwargs.y", -1) == 3);
    CHECK_STR(mini_config_get_string(cfg, "model.model_kwargs.w"), "s");
    CHECK(cJSON_IsTrue(mini_config_get(cfg, "model.model_kwargs.drop_params")));
    CHECK(mini_config_get_string(cfg, "agent.instance_template"));
    cJSON_Delete(cfg);

    /* MSWEA_CONFIG_DIR: names found there; "two.yml" exists as given. */
    setenv("MSWEA_CONFIG_DIR", tmpdir, 1);
    _cleanup_free_ char *p3 = mini_config_find("one", &e);
    CHECK(p3 && contains(p3, "one.yaml"));
    _cleanup_free_ char *p4 = mini_config_find(f2, &e);
    CHECK_STR(p4, f2);
    unsetenv("MSWEA_CONFIG_DIR");

    /* Files of the current directory: a planted ./mini.yaml is never the
     * default nor `-c mini`; `-c mini.yaml` and `-c ./mini.yaml` name it,
     * and reading it warns. */
    {
        _cleanup_free_ char *here = getcwd(NULL, 0), *ws = tpath("ws"), *sub = tpath("ws/sub");
        _cleanup_free_ char *planted = tpath("ws/mini.yaml"), *outside = tpath("outside.yaml");
        _cleanup_free_ char *link = tpath("ws/link.yaml"), *in_sub = tpath("ws/sub/x.yaml");
        mkdir(ws, 0700);
        mkdir(sub, 0700);
        write_file(planted, "agent:\n  mode: yolo\n  system_template: PLANTED\n");
        write_file(outside, "agent:\n  mode: yolo\n");
        write_file(in_sub, "agent:\n  mode: yolo\n");
        CHECK(symlink(outside, link) == 0);
        CHECK(chdir(ws) == 0);
        _cleanup_free_ char *q1 = mini_config_find("mini", &e);
        CHECK(q1 && contains(q1, "/agent/configs/mini.yaml"));
        _cleanup_free_ char *q2 = mini_config_find("mini.yaml", &e);
        CHECK_STR(q2, "mini.yaml");
        _cleanup_free_ char *q3 = mini_config_find("./mini", &e);
        CHECK_STR(q3, "./mini.yaml");
        cfg = mini_config_load(NULL, 0, &e);
        CHECK_MSG(cfg, "%s", e.msg);
        CHECK(cfg && !strstr(mini_config_get_string(cfg, "agent.system_template"), "PLANTED"));
        cJSON_Delete(cfg);
        /* MSWEA_CONFIG_DIR, when the user sets it, is used as set. */
        setenv("MSWEA_CONFIG_DIR", "sub", 1);
        _cleanup_free_ char *q4 = mini_config_find("x", &e);
        CHECK_STR(q4, "sub/x.yaml");
        unsetenv("MSWEA_CONFIG_DIR");
        /* In the workspace: as written or resolved; the current directory
         * and another one, when watched. */
        CHECK(!mini_config_in_workspace("mini.yaml"));
        mini_config_watch_workspace(".");
        CHECK(mini_config_in_workspace("mini.yaml") && mini_config_in_workspace(planted));
        CHECK(mini_config_in_workspace("link.yaml") && mini_config_in_workspace("sub/../mini.yaml"));
        CHECK(!mini_config_in_workspace(outside) && !mini_config_in_workspace("../outside.yaml"));
        CHECK(chdir(tmpdir) == 0);
        CHECK(mini_config_in_workspace(outside));
        _cleanup_free_ char *elsewhere = tpath("elsewhere");
        mkdir(elsewhere, 0700);
        CHECK(chdir(elsewhere) == 0);
        CHECK(!mini_config_in_workspace(in_sub));
        mini_config_watch_workspace(ws);
        CHECK(mini_config_in_workspace(in_sub) && !mini_config_in_workspace(outside));
        mini_config_watch_workspace(NULL);
        CHECK(!mini_config_in_workspace(in_sub) && !mini_config_in_workspace(outside));
        CHECK(chdir(here) == 0);
    }

    /* An empty file adds nothing; a list at the top is an error. */
    _cleanup_free_ char *f3 = tpath("empty.yaml"), *f4 = tpath("list.yaml");
    write_file(f3, "# nothing here\n");
    write_file(f4, "- a\n- b\n");
    const char *s3[] = { f3 };
    cfg = mini_config_load(s3, 1, &e);
    CHECK(cfg && cJSON_IsObject(cfg) && !cfg->child);
    cJSON_Delete(cfg);
    const char *s4[] = { f4 };
    CHECK(!mini_config_load(s4, 1, &e) && contains(e.msg, "top level must be a mapping"));
    /* A YAML error names the file and line. */
    write_file(f3, "agent:\n  a: 1\n  a: 2\n");
    CHECK(!mini_config_load(s3, 1, &e) && contains(e.msg, "empty.yaml:3:3: duplicate key"));
    free(cfgdir);
}

static cJSON *base_config(void)
{
    struct mini_err e;
    cJSON *cfg = mini_config_load(NULL, 0, &e);
    if (!cfg)
        fprintf(stderr, "load: %s\n", e.msg);
    return cfg;
}

static void expect_invalid(const char *spec, const char *msg)
{
    struct mini_err e;
    cJSON *cfg = base_config();
    cJSON *part = mini_config_read_spec(spec, &e);
    CHECK_MSG(part, "%s: %s", spec, e.msg);
    if (part)
        mini_config_merge(cfg, part, &e);
    cJSON_Delete(part);
    int rc = mini_config_validate(cfg, &e);
    CHECK_MSG(rc < 0 && e.code == MINI_E_CONFIG && strcmp(e.msg, msg) == 0, "%s: got \"%s\", want \"%s\"", spec,
              rc < 0 ? e.msg : "(valid)", msg);
    cJSON_Delete(cfg);
}

static void test_validate(void)
{
    struct mini_err e;
    setenv("MSWEA_MODEL_NAME", "openai/gpt-test", 1);
    expect_invalid("agent.step_limit=ten", "agent.step_limit: must be an integer, got \"ten\"");
    expect_invalid("agent.step_limit=1.5", "agent.step_limit: must be an integer, got 1.5");
    expect_invalid("model.model_kwarg={}", "model.model_kwarg: unknown key (did you mean model.model_kwargs?)");
    expect_invalid("agent.action_observation_template=x",
                   "agent.action_observation_template: unknown key (mini-swe-agent v2 moved it to "
                   "model.observation_template)");
    expect_invalid("agent.model_name=x",
                   "agent.model_name: unknown key (it belongs in the model section: "
                   "model.model_name)");
    expect_invalid("agnet.mode=yolo", "agnet: unknown section (did you mean agent?)");
    expect_invalid("agent.mode=fast", "agent.mode: must be one of \"human\", \"confirm\", \"yolo\", got \"fast\"");
    expect_invalid("agent.confirm_exit=maybe", "agent.confirm_exit: must be true or false, got \"maybe\"");
    expect_invalid("environment.env.TQDM_DISABLE=1",
                   "environment.env.TQDM_DISABLE: must be a string, got 1 (quote it in YAML)");
    /* mini-swe-agent's container classes run in the sandbox, rooted in
     * their image (test_compat); other names are still refused. */
    expect_invalid("environment.environment_class=kubernetes",
                   "environment.environment_class: \"kubernetes\" is not supported (supported: local, sandbox) (mini "
                   "runs commands on this machine, isolated with environment_class sandbox, or in a container image "
                   "with docker, singularity, swerex_docker, swerex_modal or contree)");
    expect_invalid("environment.timout=1", "environment.timout: unknown key (did you mean environment.timeout?)");
    expect_invalid("agent.whitelist_actions=[\"ls\", 3]", "agent.whitelist_actions[1]: must be a string, got 3");
    expect_invalid("model.set_cache_control=always",
                   "model.set_cache_control: must be one of \"default_end\", null, got \"always\"");
    expect_invalid("agent=5", "agent: must be a mapping, got 5");
    expect_invalid("model.model_name=7", "model.model_name: must be a string or null, got 7");
    expect_invalid("agent.foo=1",
                   "agent.foo: unknown key (agent keys: agent_class, system_template, "
                   "instance_template, step_limit, cost_limit, wall_time_limit_seconds, "
                   "max_consecutive_format_errors, output_path, mode, whitelist_actions, confirm_exit)");

    /* Defaults and conversions. */
    cJSON *cfg = base_config();
    const char *const sets[] = { "agent.step_limit=\"25\"", "agent.confirm_exit=\"no\"", "agent.cost_limit=\"1.5\"",
                                 "agent=null" };
    cJSON *part = mini_config_read_spec(sets[0], &e);
    mini_config_merge(cfg, part, &e);
    cJSON_Delete(part);
    part = mini_config_read_spec(sets[1], &e);
    mini_config_merge(cfg, part, &e);
    cJSON_Delete(part);
    part = mini_config_read_spec(sets[2], &e);
    mini_config_merge(cfg, part, &e);
    cJSON_Delete(part);
    CHECK_MSG(mini_config_validate(cfg, &e) == 0, "%s", e.msg);
    CHECK(mini_config_get_number(cfg, "agent.step_limit", -1) == 25);
    CHECK(cJSON_IsFalse(mini_config_get(cfg, "agent.confirm_exit")));
    CHECK(mini_config_get_number(cfg, "agent.cost_limit", -1) == 1.5);
    CHECK_STR(mini_config_get_string(cfg, "agent.mode"), "confirm");
    CHECK_STR(mini_config_get_string(cfg, "agent.agent_class"), "interactive");
    CHECK(mini_config_get_number(cfg, "agent.wall_time_limit_seconds", -1) == 0);
    CHECK(mini_config_get_number(cfg, "agent.max_consecutive_format_errors", -1) == 3);
    CHECK(cJSON_IsNull(mini_config_get(cfg, "agent.output_path")));
    CHECK(cJSON_IsArray(mini_config_get(cfg, "agent.whitelist_actions")));
    CHECK_STR(mini_config_get_string(cfg, "model.model_name"), "openai/gpt-test");
    CHECK_STR(mini_config_get_string(cfg, "model.cost_tracking"), "default");
    CHECK(cJSON_IsNull(mini_config_get(cfg, "model.set_cache_control")));
    CHECK(cJSON_IsNull(mini_config_get(cfg, "model.litellm_model_registry")));
    CHECK_STR(mini_config_get_string(cfg, "model.multimodal_regex"), "");
    CHECK(!mini_config_get(cfg, "model.action_regex"));
    CHECK_STR(mini_config_get_string(cfg, "environment.profile"), "standard");
    CHECK(mini_config_get_number(cfg, "environment.timeout", -1) == 0);
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) && !strcmp(mini_config_get_string(cfg, "environment.workspace"), cwd));
    CHECK(cJSON_IsObject(mini_config_get(cfg, "run")));
    /* Validating twice changes nothing. */
    char *once = cJSON_PrintUnformatted(cfg);
    CHECK(mini_config_validate(cfg, &e) == 0);
    char *twice = cJSON_PrintUnformatted(cfg);
    CHECK_STR(once, twice);
    free(once);
    free(twice);
    cJSON_Delete(cfg);

    /* model_name: the config's wins over MSWEA_MODEL_NAME; neither is an error. */
    cfg = base_config();
    mini_config_set(cfg, "model.model_name", cJSON_CreateString("anthropic/claude-x"), &e);
    CHECK(mini_config_validate(cfg, &e) == 0);
    CHECK_STR(mini_config_get_string(cfg, "model.model_name"), "anthropic/claude-x");
    CHECK_STR(mini_config_get_string(cfg, "model.set_cache_control"), "default_end");
    cJSON_Delete(cfg);
    unsetenv("MSWEA_MODEL_NAME");
    cfg = base_config();
    CHECK(mini_config_validate(cfg, &e) < 0 && contains(e.msg, "model.model_name: no model set"));
    cJSON_Delete(cfg);
    cfg = base_config();
    mini_config_set(cfg, "model.model_class", cJSON_CreateString("deterministic"), &e);
    mini_config_set(cfg, "model.outputs", cJSON_CreateArray(), &e);
    CHECK_MSG(mini_config_validate(cfg, &e) == 0, "%s", e.msg);
    CHECK_STR(mini_config_get_string(cfg, "model.model_name"), "deterministic");
    CHECK(mini_config_get_number(cfg, "model.cost_per_call", -1) == 1);
    CHECK(contains(mini_config_get_string(cfg, "model.action_regex"), "mswea_bash_command"));
    cJSON_Delete(cfg);
    setenv("MSWEA_MODEL_NAME", "openai/gpt-test", 1);

    /* Environment variables mini-swe-agent reads for model defaults. */
    setenv("MSWEA_COST_TRACKING", "ignore_errors", 1);
    setenv("LITELLM_MODEL_REGISTRY_PATH", "/tmp/registry.json", 1);
    cfg = base_config();
    CHECK(mini_config_validate(cfg, &e) == 0);
    CHECK_STR(mini_config_get_string(cfg, "model.cost_tracking"), "ignore_errors");
    CHECK_STR(mini_config_get_string(cfg, "model.litellm_model_registry"), "/tmp/registry.json");
    cJSON_Delete(cfg);
    setenv("MSWEA_COST_TRACKING", "sometimes", 1);
    cfg = base_config();
    CHECK(mini_config_validate(cfg, &e) < 0 && contains(e.msg, "MSWEA_COST_TRACKING"));
    cJSON_Delete(cfg);
    unsetenv("MSWEA_COST_TRACKING");
    unsetenv("LITELLM_MODEL_REGISTRY_PATH");

    /* The workspace follows cwd when only cwd is given. */
    cfg = base_config();
    mini_config_set(cfg, "environment.cwd", cJSON_CreateString("sub/dir"), &e);
    CHECK(mini_config_validate(cfg, &e) == 0);
    {
        char want[PATH_MAX + 16];
        snprintf(want, sizeof want, "%s/sub/dir", cwd);
        CHECK_STR(mini_config_get_string(cfg, "environment.workspace"), want);
        CHECK_STR(mini_config_get_string(cfg, "environment.cwd"), "sub/dir");
    }
    cJSON_Delete(cfg);

    /* Import paths become short names; local leaves sandbox keys unfilled. */
    cfg = base_config();
    mini_config_set(cfg, "environment.environment_class",
                    cJSON_CreateString("minisweagent.environments.local.LocalEnvironment"), &e);
    mini_config_set(cfg, "agent.agent_class", cJSON_CreateString("minisweagent.agents.default.DefaultAgent"), &e);
    cJSON_DeleteItemFromObject(mini_config_get(cfg, "environment"), "profile");
    CHECK_MSG(mini_config_validate(cfg, &e) == 0, "%s", e.msg);
    CHECK_STR(mini_config_get_string(cfg, "environment.environment_class"), "local");
    CHECK_STR(mini_config_get_string(cfg, "agent.agent_class"), "default");
    CHECK(mini_config_get_number(cfg, "environment.timeout", -1) == 30);
    CHECK(!mini_config_get(cfg, "environment.profile") && !mini_config_get(cfg, "environment.workspace"));
    cJSON_Delete(cfg);

    /* A null section is an empty one; the text-based config fills action_regex. */
    const char *tb[] = { "mini_textbased", "run=null" };
    cfg = mini_config_load(tb, 2, &e);
    CHECK_MSG(cfg && mini_config_validate(cfg, &e) == 0, "%s", e.msg);
    CHECK(cJSON_IsObject(mini_config_get(cfg, "run")));
    CHECK_STR(mini_config_get_string(cfg, "model.action_regex"), "```mswea_bash_command\\s*\\n(.*?)\\n```");
    cJSON_Delete(cfg);

    CHECK(mini_config_validate(NULL, &e) < 0);
    cJSON *arr = cJSON_CreateArray();
    CHECK(mini_config_validate(arr, &e) < 0 && contains(e.msg, "must be a mapping"));
    cJSON_Delete(arr);
}

static void test_builtin_templates(void)
{
    /* The observation template's long-output branch, as the agent tests
     * expect it (rendered by Jinja2 in tests/config/run_diff.py). */
    struct mini_err e;
    cJSON *cfg = base_config();
    CHECK(mini_config_validate(cfg, &e) == 0);
    const char *obs = mini_config_get_string(cfg, "model.observation_template");
    CHECK(contains(obs, "output.output | length < 10000"));
    CHECK(contains(obs, "{{ output.output[:5000] }}"));
    CHECK(contains(obs, "{{ output.output[-5000:] }}"));
    CHECK(contains(obs, "{{ output.output | length - 10000 }} characters elided"));
    CHECK(contains(obs, "output.exception_info"));
    const char *inst = mini_config_get_string(cfg, "agent.instance_template");
    CHECK(contains(inst, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"));
    CHECK(contains(inst, "{{ task }}"));
    CHECK(contains(inst, "/tmp"));
    CHECK(contains(inst, "no network"));
    CHECK(contains(inst, "{{ workspace }}"));
    cJSON_Delete(cfg);
}

static void test_dotenv(void)
{
    struct mini_err e;
    setenv("MINI_TEST_HOME", "/home/t", 1);
    unsetenv("MINI_TEST_NOPE");
    const char *text = "# comment\nA=1\nexport B='x y'  # trailing\nC=\"a\\nb\"\nD=${MINI_TEST_HOME}/${A}-"
                       "${MINI_TEST_NOPE:-z}\nE\n  F = spaced value   \nbad line here\nG=v # c\nA=2\r\nH='${A}'\n";
    size_t skipped = 0;
    cJSON *v = mini_config_parse_dotenv(text, strlen(text), &skipped, &e);
    CHECK_MSG(v, "%s", e.msg);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "A")), "2");
    CHECK(v && v->child && !strcmp(v->child->string, "A")); /* first place, last value */
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "B")), "x y");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "C")), "a\nb");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "D")), "/home/t/1-z");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(v, "E")));
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "F")), "spaced value");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "G")), "v");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(v, "H")), "2");
    CHECK(skipped == 1);
    cJSON_Delete(v);
    CHECK(!mini_config_parse_dotenv("A=\xff\n", 4, NULL, &e) && contains(e.msg, "UTF-8"));
    CHECK(!mini_config_parse_dotenv("A=1\0", 4, NULL, &e) && contains(e.msg, "NUL"));

    /* Loading: variables already set win. */
    _cleanup_free_ char *f = tpath(".env");
    write_file(f, "MINI_TEST_KEEP=new\nMINI_TEST_NEW=fresh\nMINI_TEST_BARE\n");
    setenv("MINI_TEST_KEEP", "orig", 1);
    unsetenv("MINI_TEST_NEW");
    CHECK(mini_config_load_dotenv(f, &e) == 1);
    CHECK_STR(getenv("MINI_TEST_KEEP"), "orig");
    CHECK_STR(getenv("MINI_TEST_NEW"), "fresh");
    CHECK(!getenv("MINI_TEST_BARE"));
    unsetenv("MINI_TEST_NEW");
    setenv("PYTHON_DOTENV_DISABLED", "true", 1);
    CHECK(mini_config_load_dotenv(f, &e) == 0 && !getenv("MINI_TEST_NEW"));
    unsetenv("PYTHON_DOTENV_DISABLED");
    _cleanup_free_ char *missing = tpath("missing.env");
    CHECK(mini_config_load_dotenv(missing, &e) == 0);
    CHECK(mini_config_load_dotenv(tmpdir, &e) == 0); /* a directory loads nothing */
    write_file(f, "'A=B'=1\n");
    CHECK(mini_config_load_dotenv(f, &e) < 0 && contains(e.msg, "not a valid variable name"));
}

static void test_global_dir(void)
{
    struct mini_err e;
    _cleanup_free_ char *want = tpath("global/sub");
    setenv("MSWEA_GLOBAL_CONFIG_DIR", want, 1);
    _cleanup_free_ char *d1 = mini_config_global_dir_new(true, &e);
    CHECK_STR(d1, want);
    struct stat st;
    CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    setenv("MSWEA_GLOBAL_CONFIG_DIR", "", 1);
    setenv("XDG_CONFIG_HOME", "/x/config", 1);
    _cleanup_free_ char *d2 = mini_config_global_dir_new(false, &e);
    CHECK_STR(d2, "/x/config/mini-swe-agent");
    setenv("XDG_CONFIG_HOME", "  ", 1);
    setenv("HOME", "/home/someone/", 1);
    _cleanup_free_ char *d3 = mini_config_global_dir_new(false, &e);
    CHECK_STR(d3, "/home/someone/.config/mini-swe-agent");
    /* A relative XDG_CONFIG_HOME is ignored (the XDG spec): it would be a
     * directory under the current one, the workspace. */
    setenv("XDG_CONFIG_HOME", ".", 1);
    _cleanup_free_ char *d3b = mini_config_global_dir_new(false, &e);
    CHECK_STR(d3b, "/home/someone/.config/mini-swe-agent");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/", 1);
    _cleanup_free_ char *d4 = mini_config_global_dir_new(false, &e);
    CHECK_STR(d4, "/.config/mini-swe-agent");
    /* A relative MSWEA_GLOBAL_CONFIG_DIR is made absolute (the sandbox
     * hides it by that path). */
    _cleanup_free_ char *here = getcwd(NULL, 0), *rel_want = NULL;
    if (asprintf(&rel_want, "%s/rel/g", here) < 0)
        abort();
    setenv("MSWEA_GLOBAL_CONFIG_DIR", "rel/g", 1);
    _cleanup_free_ char *d4b = mini_config_global_dir_new(false, &e);
    CHECK_STR(d4b, rel_want);
    /* The cached form creates the directory. */
    _cleanup_free_ char *want2 = tpath("global2/x");
    setenv("MSWEA_GLOBAL_CONFIG_DIR", want2, 1);
    const char *d5 = mini_config_global_dir();
    CHECK_STR(d5, want2);
    CHECK(stat(want2, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(mini_config_global_dir() == d5);
    unsetenv("MSWEA_GLOBAL_CONFIG_DIR");
}

static void test_get_set_merge(void)
{
    struct mini_err e;
    cJSON *cfg = cJSON_CreateObject();
    CHECK(mini_config_set(cfg, "model.model_kwargs.temperature", cJSON_CreateNumber(0.5), &e) == 0);
    CHECK(mini_config_get_number(cfg, "model.model_kwargs.temperature", -1) == 0.5);
    CHECK(mini_config_set(cfg, "agent", cJSON_CreateNumber(1), &e) == 0);
    CHECK(mini_config_set(cfg, "agent.mode", cJSON_CreateString("yolo"), &e) == 0); /* replaces the scalar */
    CHECK_STR(mini_config_get_string(cfg, "agent.mode"), "yolo");
    CHECK(mini_config_set(cfg, "agent.mode", cJSON_CreateString("human"), &e) == 0);
    CHECK_STR(mini_config_get_string(cfg, "agent.mode"), "human");
    CHECK(mini_config_set(cfg, "a..b", cJSON_CreateTrue(), &e) < 0);
    CHECK(mini_config_set(cfg, "x", NULL, &e) < 0);
    CHECK(!mini_config_get(cfg, "agent.mode.deeper"));
    CHECK(!mini_config_get(cfg, "nope"));
    CHECK(mini_config_get_bool(cfg, "nope", true));
    CHECK(mini_config_get_number(cfg, "agent.mode", 7) == 7);

    cJSON *src = cJSON_Parse("{\"model\": {\"model_kwargs\": {\"top_p\": 1}, \"model_name\": \"m\"},"
                             " \"agent\": {\"mode\": [1, 2]}}");
    CHECK(mini_config_merge(cfg, src, &e) == 0);
    CHECK(mini_config_get_number(cfg, "model.model_kwargs.temperature", -1) == 0.5);
    CHECK(mini_config_get_number(cfg, "model.model_kwargs.top_p", -1) == 1);
    CHECK(cJSON_IsArray(mini_config_get(cfg, "agent.mode")));
    cJSON_Delete(src);
    cJSON_Delete(cfg);
}

/* Warnings collected by the hook. */
static struct mini_buf warnings = MINI_BUF_INIT;

static void collect_warning(const char *msg, void *ud)
{
    (void)ud;
    mini_buf_printf(&warnings, "%s\n", msg);
}

static void reset_warnings(void)
{
    warnings.len = 0;
    if (warnings.data)
        warnings.data[0] = 0;
}

static cJSON *load_validated(const char *const *specs, size_t n, struct mini_err *e)
{
    cJSON *cfg = mini_config_load(specs, n, e);
    if (cfg && mini_config_validate(cfg, e) < 0) {
        cJSON_Delete(cfg);
        return NULL;
    }
    return cfg;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* mini-swe-agent 2.4's configs: the keys of its container environments and
 * of model classes mini does not have are accepted with one warning each;
 * names are also looked up under benchmarks/; floats stay floats. */
static void test_compat(void)
{
    struct mini_err e;
    mini_config_set_warn(collect_warning, NULL);
    _cleanup_free_ char *bdir = tpath("builtin"), *bench = tpath("builtin/benchmarks");
    mkdir(bdir, 0700);
    mkdir(bench, 0700);
    _cleanup_free_ char *old_dir = getenv("MINI_CONFIG_DIR") ? strdup(getenv("MINI_CONFIG_DIR")) : NULL;
    setenv("MINI_CONFIG_DIR", bdir, 1);
    _cleanup_free_ char *sweb = tpath("builtin/benchmarks/swebench.yaml");
    /* The shape of benchmarks/swebench.yaml (its keys, not its text). */
    write_file(sweb,
               "agent:\n  system_template: s\n  instance_template: '{{task}}'\n  step_limit: 250\n"
               "  cost_limit: 3.\nenvironment:\n  cwd: /no/such/testbed\n  timeout: 60\n"
               "  interpreter: [bash, -c]\n  env:\n    PAGER: cat\n  environment_class: docker\n"
               "  container_timeout: 2h\n  executable: docker\n"
               "  run_args: [--rm]\n  pull_timeout: 120\nmodel:\n  model_name: anthropic/x\n"
               "  model_class: portkey\n  provider: '@openai'\n  model_kwargs:\n    drop_params: true\n"
               "    temperature: 0.0\n");
    /* get_config_path: name, name.yaml, under benchmarks/. */
    for (const char *const *n = (const char *const[]){ "swebench", "swebench.yaml", NULL }; *n; n++) {
        _cleanup_free_ char *p = mini_config_find(*n, &e);
        CHECK_MSG(p && !strcmp(p, sweb), "%s: %s", *n, p ? p : e.msg);
    }
    CHECK(!mini_config_find("benchmark", &e) && contains(e.msg, "builtin/benchmarks/benchmark.yaml"));

    const char *specs[] = { "swebench" };
    reset_warnings();
    cJSON *cfg = load_validated(specs, 1, &e);
    CHECK_MSG(cfg, "%s", e.msg);
    const char *w = warnings.data ? warnings.data : "";
    /* docker's own keys: one note for all; interpreter and the image's
     * cwd are used; the class stays docker (the sandbox, in its image). */
    CHECK_MSG(count(w, "\n") == 2, "%s", w);
    CHECK_MSG(contains(w,
                       "environment: container_timeout, executable, run_args, pull_timeout: ignored (settings of "
                       "the container program; mini runs the commands in its sandbox, rooted in the image)"),
              "%s", w);
    CHECK(count(w, "model.provider:") == 1);
    CHECK(!strstr(w, "interpreter") && !strstr(w, "environment_class") && !strstr(w, "environment.cwd"));
    CHECK_STR(mini_config_get_string(cfg, "environment.environment_class"), "docker");
    CHECK_STR(mini_config_get_string(cfg, "environment.cwd"), "/no/such/testbed");
    CHECK_STR(mini_config_get_string(cfg, "environment.profile"), "standard");
    const cJSON *interp = mini_config_get(cfg, "environment.interpreter");
    CHECK(cJSON_GetArraySize(interp) == 2 && !strcmp(cJSON_GetArrayItem(interp, 0)->valuestring, "bash") &&
          !strcmp(cJSON_GetArrayItem(interp, 1)->valuestring, "-c"));
    CHECK(!mini_config_get(cfg, "environment.image") && !mini_config_get(cfg, "environment.workspace") &&
          !mini_config_get(cfg, "model.provider"));
    CHECK(mini_config_get_number(cfg, "environment.timeout", 0) == 60);
    /* Floats: YAML 3. and 0.0, pydantic's float cost_limit; ints stay ints. */
    CHECK(mini_json_is_float(mini_config_get(cfg, "agent.cost_limit")));
    CHECK(mini_json_is_float(mini_config_get(cfg, "model.model_kwargs.temperature")));
    CHECK(!mini_json_is_float(mini_config_get(cfg, "agent.step_limit")));
    cJSON_Delete(cfg);

    /* The same config with the sandbox chosen on the command line: the
     * class is not warned about, the container's cwd still is. */
    const char *specs2[] = { "swebench", "environment.environment_class=sandbox", "agent.cost_limit=0",
                             "agent.step_limit=5.0", "model.model_kwargs.top_p=[1, 0.5, 1e-05]" };
    reset_warnings();
    cfg = load_validated(specs2, MINI_ARRAY_SIZE(specs2), &e);
    CHECK_MSG(cfg, "%s", e.msg);
    w = warnings.data ? warnings.data : "";
    CHECK(!strstr(w, "environment_class") && count(w, "environment.cwd:") == 1);
    CHECK(mini_json_is_float(mini_config_get(cfg, "agent.cost_limit")));  /* pydantic: 0 -> 0.0 */
    CHECK(!mini_json_is_float(mini_config_get(cfg, "agent.step_limit"))); /* 5.0 -> 5 */
    const cJSON *tp = mini_config_get(cfg, "model.model_kwargs.top_p");
    CHECK(tp && !mini_json_is_float(cJSON_GetArrayItem(tp, 0)) && mini_json_is_float(cJSON_GetArrayItem(tp, 1)) &&
          mini_json_is_float(cJSON_GetArrayItem(tp, 2)));
    cJSON_Delete(cfg);

    /* A container cwd that exists here is kept. */
    const char *specs3[] = { "swebench", "environment.cwd=/" };
    cfg = load_validated(specs3, MINI_ARRAY_SIZE(specs3), &e);
    CHECK(cfg && !strcmp(mini_config_get_string(cfg, "environment.cwd"), "/"));
    cJSON_Delete(cfg);

    /* Import paths of container classes, and modal's keys. */
    const char *specs4[] = {
        "swebench", "environment.environment_class=minisweagent.environments.extra.swerex_modal.SwerexModalEnvironment",
        "environment.startup_timeout=600.0", "environment.install_pipx=true", "environment.modal_sandbox_kwargs=null"
    };
    reset_warnings();
    cfg = load_validated(specs4, MINI_ARRAY_SIZE(specs4), &e);
    CHECK_MSG(cfg, "%s", e.msg);
    w = warnings.data ? warnings.data : "";
    CHECK_STR(mini_config_get_string(cfg, "environment.environment_class"), "swerex_modal");
    CHECK_MSG(contains(w,
                       "environment: container_timeout, executable, run_args, pull_timeout, startup_timeout, "
                       "install_pipx, modal_sandbox_kwargs: ignored"),
              "%s", w);
    CHECK(count(w, "install_pipx") == 1 && !strstr(w, "environment_class"));
    cJSON_Delete(cfg);

    /* An image is the sandbox's root: with local (which runs the commands
     * on this machine) it is refused, never dropped. */
    static const char *const img_classes[][2] = {
        { "local", "local" },
        { "minisweagent.environments.local.LocalEnvironment", "minisweagent.environments.local.LocalEnvironment" },
        { NULL, "local" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(img_classes); i++) {
        _cleanup_free_ char *cls = NULL;
        if (img_classes[i][0] && asprintf(&cls, "environment.environment_class=%s", img_classes[i][0]) < 0)
            abort();
        const char *specs5[] = { "agent.system_template=s", "agent.instance_template=t", "model.model_name=m",
                                 "environment.image=python:3.11", cls ? cls : "agent.step_limit=1" };
        reset_warnings();
        cfg = load_validated(specs5, MINI_ARRAY_SIZE(specs5), &e);
        CHECK_MSG(!cfg && e.code == MINI_E_CONFIG &&
                      contains(e.msg, "environment.image: \"python:3.11\" is a container image"),
                  "%s", cfg ? "loaded" : e.msg);
        char want[128];
        snprintf(want, sizeof want, "environment_class %s would run the commands on this machine", img_classes[i][1]);
        CHECK(cfg || contains(e.msg, want));
        cJSON_Delete(cfg);
    }
    /* With a container class the image is its root; singularity's
     * docker://REF is REF, its other kinds of image are refused. */
    static const char *const img_ok[][3] = {
        { "docker", "docker", "python:3.11" },
        { "minisweagent.environments.docker.DockerEnvironment", "docker", "python:3.11" },
        { "singularity", "singularity", "docker://python:3.11" },
        { "contree", "contree", "python:3.11" },
    };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(img_ok); i++) {
        _cleanup_free_ char *cls = NULL, *img = NULL;
        if (asprintf(&cls, "environment.environment_class=%s", img_ok[i][0]) < 0 ||
            asprintf(&img, "environment.image=%s", img_ok[i][2]) < 0)
            abort();
        const char *specs5[] = { "agent.system_template=s", "agent.instance_template=t", "model.model_name=m", img,
                                 cls };
        cfg = load_validated(specs5, MINI_ARRAY_SIZE(specs5), &e);
        CHECK_MSG(cfg, "%s: %s", img_ok[i][0], e.msg);
        CHECK_STR(mini_config_get_string(cfg, "environment.environment_class"), img_ok[i][1]);
        CHECK_STR(mini_config_get_string(cfg, "environment.image"), "python:3.11");
        CHECK_STR(mini_config_get_string(cfg, "environment.cwd"), "/");
        CHECK(mini_config_get_number(cfg, "environment.timeout", 0) == (strcmp(img_ok[i][1], "contree") ? 30 : 100));
        const cJSON *in = mini_config_get(cfg, "environment.interpreter");
        CHECK(in && !strcmp(cJSON_GetArrayItem(in, 1)->valuestring, strcmp(img_ok[i][1], "docker") ? "-c" : "-lc"));
        cJSON_Delete(cfg);
    }
    const char *specs7[] = { "agent.system_template=s", "agent.instance_template=t", "model.model_name=m",
                             "environment.environment_class=singularity", "environment.image=library://x/y" };
    cfg = load_validated(specs7, MINI_ARRAY_SIZE(specs7), &e);
    CHECK_MSG(!cfg && contains(e.msg, "is not a Docker or OCI image"), "%s", cfg ? "loaded" : e.msg);
    cJSON_Delete(cfg);
    const char *specs9[] = { "agent.system_template=s", "agent.instance_template=t", "model.model_name=m",
                             "environment.environment_class=docker", "environment.interpreter=[]" };
    cfg = load_validated(specs9, MINI_ARRAY_SIZE(specs9), &e);
    CHECK_MSG(!cfg && !strcmp(e.msg, "environment.interpreter: must not be empty (e.g. [bash, -c])"), "%s",
              cfg ? "loaded" : e.msg);
    cJSON_Delete(cfg);
    /* bubblewrap isolates on this machine: the sandbox. */
    const char *specs8[] = { "agent.system_template=s", "agent.instance_template=t", "model.model_name=m",
                             "environment.environment_class=bubblewrap" };
    cfg = load_validated(specs8, MINI_ARRAY_SIZE(specs8), &e);
    CHECK(cfg && !strcmp(mini_config_get_string(cfg, "environment.environment_class"), "sandbox"));
    cJSON_Delete(cfg);
    const char *specs6[] = { "swebench", "environment.image=python:3.11", "environment.environment_class=sandbox" };
    cfg = load_validated(specs6, MINI_ARRAY_SIZE(specs6), &e);
    CHECK_MSG(cfg, "%s", e.msg);
    CHECK_STR(mini_config_get_string(cfg, "environment.image"), "python:3.11");
    cJSON_Delete(cfg);

    /* Without a handler, nothing is said and the config still loads. */
    mini_config_set_warn(NULL, NULL);
    cfg = load_validated(specs, 1, &e);
    CHECK(cfg);
    cJSON_Delete(cfg);
    mini_buf_free(&warnings);

    /* mini_json_create_float and the float mark of YAML scalars. */
    cJSON *f = mini_json_create_float(3);
    CHECK(mini_json_is_float(f) && f->valuedouble == 3);
    cJSON_Delete(f);
    cJSON *doc = y("a: 1.5\nb: 2\nc: .inf\nd: 1.0e+3\ne: '3.0'\n", &e);
    CHECK(doc && mini_json_is_float(mini_config_get(doc, "a")) && !mini_json_is_float(mini_config_get(doc, "b")) &&
          mini_json_is_float(mini_config_get(doc, "c")) && mini_json_is_float(mini_config_get(doc, "d")) &&
          cJSON_IsString(mini_config_get(doc, "e")));
    cJSON_Delete(doc);
    if (old_dir)
        setenv("MINI_CONFIG_DIR", old_dir, 1);
    else
        unsetenv("MINI_CONFIG_DIR");
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    clear_env();
    test_yaml_scalars();
    test_yaml_blocks();
    test_yaml_anchors();
    test_yaml_errors();
    test_specs();
    test_find_and_load();
    test_validate();
    test_builtin_templates();
    test_dotenv();
    test_global_dir();
    test_get_set_merge();
    test_compat();
    char *cmd = NULL;
    if (asprintf(&cmd, "rm -rf '%s'", tmpdir) >= 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    free(cmd);
    return check_summary();
}
