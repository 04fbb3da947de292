/* Checking a loaded config (mini_config_validate, config.h): every key of
 * every section against what mini-swe-agent's pydantic models accept, the
 * keys mini-swe-agent moved or dropped, the values converted as pydantic
 * converts them, and the defaults filled in per section. */
#include "config.h"
#include "config_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mini/cleanup.h"
#include "mini/json.h"
#include "mini/str.h"

static int nomem(struct mini_err *e) { return mini_err_set(e, MINI_E_NOMEM, "out of memory"); }

/* Forget the text: the number is an int (pydantic's int fields). */
static void set_int(cJSON *n)
{
    free(n->valuestring);
    n->valuestring = NULL;
}

enum vtype {
    V_STR,       /* str */
    V_STR_NULL,  /* str | None (paths) */
    V_INT,       /* int */
    V_NUM,       /* float */
    V_BOOL,      /* bool */
    V_ENUM,      /* Literal[...] */
    V_ENUM_NULL, /* Literal[...] | None */
    V_MAP,       /* dict[str, Any] */
    V_MAP_STR,   /* dict[str, str] */
    V_LIST,      /* list[Any] */
    V_LIST_STR,  /* list[str] */
};

struct keydef {
    const char *name;
    enum vtype type;
    const char *const *choices; /* V_ENUM, V_ENUM_NULL */
};

struct section {
    const char *name;
    const struct keydef *keys;
};

static const char *const modes[] = { "human", "confirm", "yolo", NULL };
static const char *const pulls[] = { "missing", "always", "never", NULL };
static const char *const cache_modes[] = { "default_end", NULL };
static const char *const cost_modes[] = { "default", "ignore_errors", NULL };

static const struct keydef agent_keys[] = {
    { "agent_class", V_STR, NULL },
    { "system_template", V_STR, NULL },
    { "instance_template", V_STR, NULL },
    { "step_limit", V_INT, NULL },
    { "cost_limit", V_NUM, NULL },
    { "wall_time_limit_seconds", V_INT, NULL },
    { "max_consecutive_format_errors", V_INT, NULL },
    { "output_path", V_STR_NULL, NULL },
    { "mode", V_ENUM, modes },
    { "whitelist_actions", V_LIST_STR, NULL },
    { "confirm_exit", V_BOOL, NULL },
    { NULL, 0, NULL },
};

static const struct keydef model_keys[] = {
    { "model_name", V_STR_NULL, NULL },
    { "model_class", V_STR, NULL },
    { "model_kwargs", V_MAP, NULL },
    { "litellm_model_registry", V_STR_NULL, NULL },
    { "set_cache_control", V_ENUM_NULL, cache_modes },
    { "cost_tracking", V_ENUM, cost_modes },
    { "format_error_template", V_STR, NULL },
    { "observation_template", V_STR, NULL },
    { "multimodal_regex", V_STR, NULL },
    { "action_regex", V_STR, NULL },
    { "outputs", V_LIST, NULL },      /* deterministic */
    { "cost_per_call", V_NUM, NULL }, /* deterministic */
    { "replay_path", V_STR, NULL },   /* replay */
    { NULL, 0, NULL },
};

static const struct keydef environment_keys[] = {
    { "environment_class", V_STR, NULL },
    { "cwd", V_STR, NULL },
    { "env", V_MAP_STR, NULL },
    { "timeout", V_INT, NULL },
    { "profile", V_STR, NULL },          /* sandbox */
    { "workspace", V_STR, NULL },        /* sandbox */
    { "socket", V_STR, NULL },           /* sandbox */
    { "forward_env", V_LIST_STR, NULL }, /* sandbox */
    { "image", V_STR, NULL },            /* sandbox, containers: an image as the root */
    { "pull", V_ENUM, pulls },           /* sandbox, containers: when to pull the image */
    { "allow_hosts", V_LIST_STR, NULL }, /* sandbox: network allowlist entries (docs/profiles.md) */
    { "interpreter", V_LIST_STR, NULL }, /* containers: argv before the command */
    { NULL, 0, NULL },
};

static const struct keydef run_keys[] = {
    { "task", V_STR, NULL },
    { NULL, 0, NULL },
};

/* mini's own (docs/config.md, agent/policy/policy.h): the rules are
 * checked in depth, regular expressions compiled, where the policy is
 * made. */
static const char *const verdicts[] = { "allow", "deny", "ask", NULL };
static const struct keydef policy_keys[] = {
    { "default", V_ENUM, verdicts },
    { "rules", V_LIST, NULL },
    { "approver", V_STR, NULL },
    { "approver_timeout", V_NUM, NULL },
    { "audit_log", V_STR, NULL },
    { "blocked_template", V_STR, NULL },
    { NULL, 0, NULL },
};

/* policy is optional: it is not added when absent. */
static const struct section sections[] = {
    { "agent", agent_keys }, { "environment", environment_keys }, { "model", model_keys },
    { "run", run_keys },     { "policy", policy_keys },
};

/* Keys that mini-swe-agent v1 (or early v2) had and v2 moved or dropped. */
static const struct {
    const char *section, *key, *hint;
} moved[] = {
    { "agent", "action_observation_template", "mini-swe-agent v2 moved it to model.observation_template" },
    { "agent", "format_error_template", "mini-swe-agent v2 moved it to model.format_error_template" },
    { "agent", "action_regex", "mini-swe-agent v2 moved it to model.action_regex" },
    { "agent", "timeout_template",
      "mini-swe-agent v2 removed it: a timeout reaches the model through the observation's output.exception_info" },
    { "environment", "action_observation_template", "mini-swe-agent v2 moved it to model.observation_template" },
    { "environment", "timeout_template",
      "mini-swe-agent v2 removed it: a timeout reaches the model through the observation's output.exception_info" },
    { "model", "action_observation_template", "mini-swe-agent v2 renamed it model.observation_template" },
};

/* Keys of mini-swe-agent's environments and models that mini does not
 * have: accepted with a warning and dropped (its configs set them). */
static const struct {
    const char *section, *key, *owner;
} ignored_keys[] = {
    { "environment", "container_timeout", "docker" },
    { "environment", "executable", "docker" },
    { "environment", "run_args", "docker" },
    { "environment", "pull_timeout", "docker" },
    { "environment", "global_args", "singularity" },
    { "environment", "exec_args", "singularity" },
    { "environment", "sandbox_build_retries", "singularity" },
    { "environment", "wrapper_args", "bubblewrap" },
    { "environment", "deployment_extra_kwargs", "swerex_docker" },
    { "environment", "startup_timeout", "swerex_modal" },
    { "environment", "runtime_timeout", "swerex_modal" },
    { "environment", "deployment_timeout", "swerex_modal" },
    { "environment", "install_pipx", "swerex_modal" },
    { "environment", "modal_sandbox_kwargs", "swerex_modal" },
    { "environment", "contree_config", "contree" },
    { "environment", "image_tag", "contree" },
    { "environment", "cwd_auto_create", "contree" },
    { "environment", "import_username", "contree" },
    { "environment", "import_password", "contree" },
    { "model", "provider", "portkey" },
    { "model", "litellm_model_name_override", "portkey" },
};

/* mini-swe-agent's environments that run commands in a container image,
 * by name and import path: mini runs their commands in its sandbox,
 * rooted in environment.image (pulled when missing). */
static const char *const container_classes[][2] = {
    { "docker", "minisweagent.environments.docker.DockerEnvironment" },
    { "singularity", "minisweagent.environments.singularity.SingularityEnvironment" },
    { "swerex_docker", "minisweagent.environments.extra.swerex_docker.SwerexDockerEnvironment" },
    { "swerex_modal", "minisweagent.environments.extra.swerex_modal.SwerexModalEnvironment" },
    { "contree", "minisweagent.environments.extra.contree.ContreeEnvironment" },
};
/* bubblewrap isolates commands on this machine: mini's sandbox class. */
static const char *const bubblewrap_class[2] = { "bubblewrap",
                                                 "minisweagent.environments.extra.bubblewrap.BubblewrapEnvironment" };

const char *mini_config_container_class(const char *cls)
{
    for (size_t i = 0; cls && i < MINI_ARRAY_SIZE(container_classes); i++)
        if (!strcmp(cls, container_classes[i][0]) || !strcmp(cls, container_classes[i][1]))
            return container_classes[i][0];
    return NULL;
}

bool mini_config_class_sandboxed(const char *cls)
{
    return cls && (!strcmp(cls, "sandbox") || mini_config_container_class(cls));
}

/* Warn about an accepted but unused key.  1 when it is one (the caller
 * drops it), 0 when not.  With a container class, the environment's keys
 * are named in *quiet (one note for all of them) instead. */
static int ignored_key(const char *section, const char *key, struct mini_buf *quiet)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(ignored_keys); i++)
        if (!strcmp(ignored_keys[i].section, section) && !strcmp(ignored_keys[i].key, key)) {
            if (quiet && !strcmp(section, "environment"))
                mini_buf_printf(quiet, "%s%s", quiet->len ? ", " : "", key);
            else
                mini_config_warnf("%s.%s: ignored (a setting of mini-swe-agent's %s %s, which mini does not have)",
                                  section, key, ignored_keys[i].owner, section);
            return 1;
        }
    return 0;
}

#define DEFAULT_ACTION_REGEX "```mswea_bash_command\\s*\\n(.*?)\\n```"
#define DEFAULT_OBSERVATION_TEMPLATE                                                                \
    "<returncode>{{ output.returncode }}</returncode>\n"                                            \
    "{% if output.exception_info %}<exception>{{ output.exception_info }}</exception>\n{% endif %}" \
    "<output>\n{{ output.output }}</output>"
#define DEFAULT_TEXT_FORMAT_ERROR                                                     \
    "Reply with exactly one ```mswea_bash_command block holding the command to run; " \
    "your reply had {{ actions | length }}."

/* A short description of a value for messages: "ten" (quoted), 1.5, true,
 * null, a list, a mapping. */
static const char *describe(char *buf, size_t size, const cJSON *v)
{
    if (!v)
        snprintf(buf, size, "nothing");
    else if (cJSON_IsNull(v))
        snprintf(buf, size, "null");
    else if (cJSON_IsBool(v))
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v))
        for (int prec = 1; prec <= 17; prec++) { /* the shortest form that reads back */
            snprintf(buf, size, "%.*g", prec, v->valuedouble);
            if (!isfinite(v->valuedouble) || strtod(buf, NULL) == v->valuedouble)
                break;
        }
    else if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.*s%s\"", MINI_JSON_SHOW(v->valuestring),
                 strlen(v->valuestring) > MINI_JSON_SHOW_MAX ? "..." : "");
    else if (cJSON_IsArray(v))
        snprintf(buf, size, "a list");
    else
        snprintf(buf, size, "a mapping");
    return buf;
}

static int type_error(struct mini_err *e, const char *path, const char *want, const cJSON *v, const char *hint)
{
    char what[160];
    return mini_err_set(e, MINI_E_CONFIG, "%s: must be %s, got %s%s", path, want, describe(what, sizeof what, v),
                        hint ? hint : "");
}

static const struct keydef *find_key(const struct section *s, const char *name)
{
    for (const struct keydef *k = s->keys; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}

static int unknown_key(struct mini_err *e, const struct section *s, const char *key)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(moved); i++)
        if (!strcmp(moved[i].section, s->name) && !strcmp(moved[i].key, key))
            return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (%s)", s->name, MINI_JSON_SHOW(key),
                                moved[i].hint);
    const char *names[32];
    size_t n = 0;
    for (const struct keydef *k = s->keys; k->name && n < MINI_ARRAY_SIZE(names); k++)
        names[n++] = k->name;
    const char *near = mini_closest(key, names, n);
    if (near)
        return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (did you mean %s.%s?)", s->name,
                            MINI_JSON_SHOW(key), s->name, near);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
        if (&sections[i] != s && find_key(&sections[i], key))
            return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (it belongs in the %s section: %s.%s)", s->name,
                                MINI_JSON_SHOW(key), sections[i].name, sections[i].name, key);
    struct mini_buf list = MINI_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        mini_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
    mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (%s keys: %s)", s->name, MINI_JSON_SHOW(key), s->name,
                 list.data ? list.data : "");
    mini_buf_free(&list);
    return -1;
}

/* Python-style numbers in strings, as pydantic's lax mode reads them. */
static bool str_to_int(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!(*p >= '0' && *p <= '9'))
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p)
        return false;
    *out = strtod(s, NULL);
    return fabs(*out) <= (double)MINI_JSON_INT_MAX;
}

static bool str_to_num(const char *s, double *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || strpbrk(s, "xXpP"))
        return false;
    char *end;
    *out = strtod(s, &end);
    while (*end == ' ' || *end == '\t')
        end++;
    return !*end;
}

static int str_to_bool(const char *s)
{
    static const char *const yes[] = { "1", "on", "t", "true", "y", "yes" };
    static const char *const no[] = { "0", "off", "f", "false", "n", "no" };
    for (size_t i = 0; i < MINI_ARRAY_SIZE(yes); i++) {
        if (!strcasecmp(s, yes[i]))
            return 1;
        if (!strcasecmp(s, no[i]))
            return 0;
    }
    return -1;
}

/* Replace item (a child of parent) with a new value. */
static int replace(cJSON *parent, cJSON *item, cJSON *with, struct mini_err *e)
{
    if (!with)
        return nomem(e);
    cJSON_ReplaceItemInObjectCaseSensitive(parent, item->string, with);
    return 0;
}

static int check_value(cJSON *parent, cJSON *v, const struct keydef *k, const char *path, struct mini_err *e)
{
    double d;
    switch (k->type) {
    case V_STR:
        if (!cJSON_IsString(v))
            return type_error(e, path, "a string", v,
                              cJSON_IsNumber(v) || cJSON_IsBool(v) ? " (quote it in YAML)" : NULL);
        return 0;
    case V_STR_NULL:
        if (!cJSON_IsString(v) && !cJSON_IsNull(v))
            return type_error(e, path, "a string or null", v, NULL);
        return 0;
    case V_INT:
        if (cJSON_IsNumber(v)) {
            d = v->valuedouble;
            if (!isfinite(d) || d != floor(d) || fabs(d) > (double)MINI_JSON_INT_MAX)
                return type_error(e, path, "an integer", v, NULL);
            set_int(v); /* pydantic makes an int of 10.0 */
            return 0;
        }
        if (cJSON_IsString(v) && str_to_int(v->valuestring, &d))
            return replace(parent, v, cJSON_CreateNumber(d), e);
        return type_error(e, path, "an integer", v, NULL);
    case V_NUM: /* pydantic makes a float of 3: it prints as 3.0 */
        if (cJSON_IsNumber(v))
            return mini_json_is_float(v) || mini_json_mark_float(v) == 0 ? 0 : nomem(e);
        if (cJSON_IsString(v) && str_to_num(v->valuestring, &d))
            return replace(parent, v, mini_json_create_float(d), e);
        return type_error(e, path, "a number", v, NULL);
    case V_BOOL: {
        if (cJSON_IsBool(v))
            return 0;
        int b = -1;
        if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
            b = v->valuedouble == 1;
        else if (cJSON_IsString(v))
            b = str_to_bool(v->valuestring);
        if (b < 0)
            return type_error(e, path, "true or false", v, NULL);
        return replace(parent, v, cJSON_CreateBool(b), e);
    }
    case V_ENUM:
    case V_ENUM_NULL: {
        if (k->type == V_ENUM_NULL && cJSON_IsNull(v))
            return 0;
        if (cJSON_IsString(v))
            for (const char *const *c = k->choices; *c; c++)
                if (!strcmp(v->valuestring, *c))
                    return 0;
        struct mini_buf want = MINI_BUF_INIT;
        mini_buf_puts(&want, "one of ");
        for (const char *const *c = k->choices; *c; c++)
            mini_buf_printf(&want, "%s\"%s\"", c == k->choices ? "" : ", ", *c);
        if (k->type == V_ENUM_NULL)
            mini_buf_puts(&want, ", null");
        type_error(e, path, want.data ? want.data : "one of the allowed values", v, NULL);
        mini_buf_free(&want);
        return -1;
    }
    case V_MAP:
        if (!cJSON_IsObject(v))
            return type_error(e, path, "a mapping", v, NULL);
        return 0;
    case V_MAP_STR: {
        if (!cJSON_IsObject(v))
            return type_error(e, path, "a mapping of names to strings", v, NULL);
        cJSON *c;
        cJSON_ArrayForEach (c, v) {
            if (!cJSON_IsString(c)) {
                char sub[600];
                snprintf(sub, sizeof sub, "%s.%.*s", path, MINI_JSON_SHOW(c->string));
                return type_error(e, sub, "a string", c, cJSON_IsNull(c) ? NULL : " (quote it in YAML)");
            }
        }
        return 0;
    }
    case V_LIST:
        if (!cJSON_IsArray(v))
            return type_error(e, path, "a list", v, NULL);
        return 0;
    case V_LIST_STR: {
        if (!cJSON_IsArray(v))
            return type_error(e, path, "a list of strings", v, NULL);
        int i = 0;
        cJSON *c;
        cJSON_ArrayForEach (c, v) {
            if (!cJSON_IsString(c)) {
                char sub[600];
                snprintf(sub, sizeof sub, "%s[%d]", path, i);
                return type_error(e, sub, "a string", c, NULL);
            }
            i++;
        }
        return 0;
    }
    }
    return 0;
}

/* Add key = value to obj unless it is there.  value is consumed. */
static int add_default(cJSON *obj, const char *key, cJSON *value, struct mini_err *e)
{
    if (!value)
        return nomem(e);
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
        cJSON_Delete(value);
        return 0;
    }
    if (!cJSON_AddItemToObject(obj, key, value)) {
        cJSON_Delete(value);
        return nomem(e);
    }
    return 0;
}

static bool contains_ci(const char *hay, const char *needle) { return hay && strcasestr(hay, needle); }

/* Shorten a mini-swe-agent import path to our name for it. */
static int normalize_class(cJSON *sec, const char *key, const char *const (*aliases)[2], size_t n,
                           const char *const *supported, const char *sec_name, const char *hint, struct mini_err *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(sec, key);
    if (!v)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v->valuestring, aliases[i][0]))
            return replace(sec, v, cJSON_CreateString(aliases[i][1]), e);
    for (const char *const *s = supported; *s; s++)
        if (!strcmp(v->valuestring, *s))
            return 0;
    struct mini_buf list = MINI_BUF_INIT;
    for (const char *const *s = supported; *s; s++)
        mini_buf_printf(&list, "%s%s", s == supported ? "" : ", ", *s);
    mini_err_set(e, MINI_E_CONFIG, "%s.%s: \"%.*s\" is not supported (supported: %s)%s", sec_name, key,
                 MINI_JSON_SHOW(v->valuestring), list.data ? list.data : "", hint ? hint : "");
    mini_buf_free(&list);
    return -1;
}

static int fill_agent(cJSON *a, struct mini_err *e)
{
    static const char *const aliases[][2] = {
        { "minisweagent.agents.default.DefaultAgent", "default" },
        { "minisweagent.agents.interactive.InteractiveAgent", "interactive" },
    };
    static const char *const supported[] = { "interactive", "default", NULL };
    if (normalize_class(a, "agent_class", aliases, MINI_ARRAY_SIZE(aliases), supported, "agent", NULL, e) < 0)
        return -1;
    for (const char *const *req = (const char *const[]){ "system_template", "instance_template", NULL }; *req; req++)
        if (!cJSON_GetObjectItemCaseSensitive(a, *req))
            return mini_err_set(e, MINI_E_CONFIG,
                                "agent.%s: missing (mini-swe-agent requires it; did the -c list leave out the "
                                "base config? write -c mini -c KEY=VALUE)",
                                *req);
    if (add_default(a, "agent_class", cJSON_CreateString("interactive"), e) < 0 ||
        add_default(a, "step_limit", cJSON_CreateNumber(0), e) < 0 ||
        add_default(a, "cost_limit", mini_json_create_float(3.0), e) < 0 ||
        add_default(a, "wall_time_limit_seconds", cJSON_CreateNumber(0), e) < 0 ||
        add_default(a, "max_consecutive_format_errors", cJSON_CreateNumber(3), e) < 0 ||
        add_default(a, "output_path", cJSON_CreateNull(), e) < 0 ||
        add_default(a, "mode", cJSON_CreateString("confirm"), e) < 0 ||
        add_default(a, "whitelist_actions", cJSON_CreateArray(), e) < 0 ||
        add_default(a, "confirm_exit", cJSON_CreateTrue(), e) < 0)
        return -1;
    return 0;
}

static int fill_model(cJSON *m, struct mini_err *e)
{
    const char *cls = mini_config_get_string(m, "model_class");
    bool textbased = contains_ci(cls, "textbased");
    bool deterministic = contains_ci(cls, "deterministic");
    bool replay = cls && (!strcmp(cls, "replay") || contains_ci(cls, "replaymodel"));

    /* model_name: the config's, else $MSWEA_MODEL_NAME (get_model_name). */
    const char *name = mini_config_get_string(m, "model_name");
    if (!name || !*name) {
        const char *env = getenv("MSWEA_MODEL_NAME");
        const char *use = env && *env ? env : deterministic ? "deterministic" : replay ? "replay" : NULL;
        if (!use)
            return mini_err_set(e, MINI_E_CONFIG,
                                "model.model_name: no model set: pass -m MODEL, set model.model_name in a config "
                                "(-c model.model_name=MODEL), or set MSWEA_MODEL_NAME (for example in the .env "
                                "file of the global config directory)");
        cJSON *old = cJSON_GetObjectItemCaseSensitive(m, "model_name");
        if (old ? replace(m, old, cJSON_CreateString(use), e) < 0
                : add_default(m, "model_name", cJSON_CreateString(use), e) < 0)
            return -1;
        name = use;
    }

    const char *ct = getenv("MSWEA_COST_TRACKING");
    if (ct && *ct && !cJSON_GetObjectItemCaseSensitive(m, "cost_tracking") && strcmp(ct, "default") &&
        strcmp(ct, "ignore_errors"))
        return mini_err_set(e, MINI_E_CONFIG,
                            "MSWEA_COST_TRACKING: must be \"default\" or \"ignore_errors\", got "
                            "\"%.*s\"",
                            MINI_JSON_SHOW(ct));
    const char *reg = getenv("LITELLM_MODEL_REGISTRY_PATH");
    /* get_model picks Anthropic's cache markers unless the config chose. */
    bool anthropic = contains_ci(name, "anthropic") || contains_ci(name, "sonnet") || contains_ci(name, "opus") ||
        contains_ci(name, "claude");
    if (add_default(m, "model_kwargs", cJSON_CreateObject(), e) < 0 ||
        add_default(m, "litellm_model_registry", reg && *reg ? cJSON_CreateString(reg) : cJSON_CreateNull(), e) < 0 ||
        add_default(m, "set_cache_control", anthropic ? cJSON_CreateString("default_end") : cJSON_CreateNull(), e) <
            0 ||
        add_default(m, "cost_tracking", cJSON_CreateString(ct && *ct ? ct : "default"), e) < 0 ||
        add_default(m, "format_error_template",
                    cJSON_CreateString(textbased || deterministic ? DEFAULT_TEXT_FORMAT_ERROR : "{{ error }}"),
                    e) < 0 ||
        add_default(m, "observation_template", cJSON_CreateString(DEFAULT_OBSERVATION_TEMPLATE), e) < 0 ||
        add_default(m, "multimodal_regex", cJSON_CreateString(""), e) < 0)
        return -1;
    if ((textbased || deterministic) && add_default(m, "action_regex", cJSON_CreateString(DEFAULT_ACTION_REGEX), e) < 0)
        return -1;
    if (deterministic && add_default(m, "cost_per_call", mini_json_create_float(1.0), e) < 0)
        return -1;
    return 0;
}

/* A container class's defaults (mini-swe-agent's for each): the image is
 * required by the time the environment opens (a batch's task may give
 * it), cwd is a directory of the image, no workspace unless given (the
 * environment makes a private empty one). */
static int fill_container(cJSON *env, const char *cls, struct mini_err *e)
{
    const cJSON *interp = cJSON_GetObjectItemCaseSensitive(env, "interpreter");
    if (interp && cJSON_GetArraySize(interp) == 0)
        return mini_err_set(e, MINI_E_CONFIG, "environment.interpreter: must not be empty (e.g. [bash, -c])");
    cJSON *img = cJSON_GetObjectItemCaseSensitive(env, "image");
    if (cJSON_IsString(img) && !strcmp(cls, "singularity")) {
        /* singularity names a Docker image docker://REF; its own kinds of
         * image (library://, a .sif file) are not OCI images. */
        const char *v = img->valuestring;
        if (!strncmp(v, "docker://", 9)) {
            if (replace(env, img, cJSON_CreateString(v + 9), e) < 0)
                return -1;
        } else if (strstr(v, "://") || strchr(v, '/') == v || strstr(v, ".sif")) {
            return mini_err_set(e, MINI_E_CONFIG,
                                "environment.image: \"%.*s\" is not a Docker or OCI image (mini runs singularity's "
                                "docker://REF images)",
                                MINI_JSON_SHOW(v));
        }
    }
    cJSON *argv = cJSON_CreateArray();
    if (argv) {
        cJSON_AddItemToArray(argv, cJSON_CreateString("bash"));
        cJSON_AddItemToArray(argv, cJSON_CreateString(strcmp(cls, "docker") ? "-c" : "-lc"));
    }
    if (add_default(env, "interpreter", argv, e) < 0 || add_default(env, "cwd", cJSON_CreateString("/"), e) < 0 ||
        add_default(env, "env", cJSON_CreateObject(), e) < 0 ||
        add_default(env, "timeout", cJSON_CreateNumber(strcmp(cls, "contree") ? 30 : 100), e) < 0 ||
        add_default(env, "profile", cJSON_CreateString("standard"), e) < 0 ||
        add_default(env, "forward_env", cJSON_CreateArray(), e) < 0)
        return -1;
    const char *profile = mini_config_get_string(env, "profile");
    if (profile && !*profile)
        return mini_err_set(e, MINI_E_CONFIG,
                            "environment.profile: must not be empty (strict, standard, "
                            "permissive, or a profile file)");
    return 0;
}

static int fill_environment(cJSON *env, bool container, struct mini_err *e)
{
    static const char *const aliases[][2] = {
        { "minisweagent.environments.local.LocalEnvironment", "local" },
    };
    static const char *const supported[] = { "local", "sandbox", NULL };
    cJSON *cls = cJSON_GetObjectItemCaseSensitive(env, "environment_class");
    /* bubblewrap isolates the commands on this machine: so does the
     * sandbox, which takes its place. */
    if (cls && (!strcmp(cls->valuestring, bubblewrap_class[0]) || !strcmp(cls->valuestring, bubblewrap_class[1]))) {
        mini_config_warnf("environment.environment_class: bubblewrap runs as mini's sandbox class (the commands run "
                          "on this machine, isolated by mini-sandboxd)");
        if (replace(env, cls, cJSON_CreateString("sandbox"), e) < 0)
            return -1;
        cls = cJSON_GetObjectItemCaseSensitive(env, "environment_class");
    }
    /* A container class: its commands run in mini's sandbox, rooted in
     * its image; never on this machine. */
    const char *ctr = cls ? mini_config_container_class(cls->valuestring) : NULL;
    if (ctr) {
        if (strcmp(cls->valuestring, ctr) && replace(env, cls, cJSON_CreateString(ctr), e) < 0)
            return -1;
        return fill_container(env, ctr, e);
    }
    /* An image is the sandbox's root (mini-sandbox image import).  With
     * any other class the commands would run on this machine instead of
     * in the image: refused, never taken to mean the host. */
    const char *img = mini_config_get_string(env, "image");
    const char *ecls = mini_config_get_string(env, "environment_class");
    if (img && *img && !(ecls && !strcmp(ecls, "sandbox")))
        return mini_err_set(e, MINI_E_CONFIG,
                            "environment.image: \"%.*s\" is a container image, but environment_class %.*s would run "
                            "the commands on this machine, not in it; use --sandbox PROFILE or environment_class "
                            "docker (docs/images.md), or drop the image",
                            MINI_JSON_SHOW(img), MINI_JSON_SHOW(ecls ? ecls : "local"));
    /* docker's interpreter means nothing to these classes. */
    if (cJSON_GetObjectItemCaseSensitive(env, "interpreter")) {
        mini_config_warnf("environment.interpreter: ignored (mini runs every command with /bin/sh -c)");
        cJSON_DeleteItemFromObjectCaseSensitive(env, "interpreter");
        container = true;
    }
    /* A container's working directory is a path inside its image; when
     * this machine has no such directory the commands start in the
     * current one (the workspace). */
    const char *ccwd = mini_config_get_string(env, "cwd");
    if (container && ccwd && *ccwd && !mini_config_is_dir(ccwd)) {
        mini_config_warnf(
            "environment.cwd: \"%.*s\" is a directory of the container and does not exist here; ignored: the "
            "commands start in the current directory",
            MINI_JSON_SHOW(ccwd));
        cJSON_DeleteItemFromObjectCaseSensitive(env, "cwd");
    }
    if (normalize_class(env, "environment_class", aliases, MINI_ARRAY_SIZE(aliases), supported, "environment",
                        " (mini runs commands on this machine, isolated with environment_class sandbox, or in a "
                        "container image with docker, singularity, swerex_docker, swerex_modal or contree)",
                        e) < 0)
        return -1;
    if (add_default(env, "environment_class", cJSON_CreateString("local"), e) < 0)
        return -1;
    bool sandbox = !strcmp(mini_config_get_string(env, "environment_class"), "sandbox");
    /* cwd is left out when not set: absent means the current directory
     * (mini-swe-agent's default is "", with the same meaning). */
    if (add_default(env, "env", cJSON_CreateObject(), e) < 0 ||
        add_default(env, "timeout", cJSON_CreateNumber(sandbox ? 0 : 30), e) < 0)
        return -1;
    if (!sandbox)
        return 0;
    const char *profile = mini_config_get_string(env, "profile");
    if (profile && !*profile)
        return mini_err_set(e, MINI_E_CONFIG,
                            "environment.profile: must not be empty (strict, standard, "
                            "permissive, or a profile file)");
    /* The workspace defaults to cwd when that is set (the sandbox mounts
     * the directory the commands start in), else the current directory;
     * made absolute. */
    const char *ws = mini_config_get_string(env, "workspace");
    if (!ws || !*ws)
        ws = mini_config_get_string(env, "cwd");
    if (!ws || !*ws || ws[0] != '/') {
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return mini_err_sys(e, MINI_E_CONFIG, errno, "environment.workspace: finding the current directory");
        _cleanup_free_ char *abs = ws && *ws ? mini_config_path_join(cwd, ws) : strdup(cwd);
        cJSON *old = cJSON_GetObjectItemCaseSensitive(env, "workspace");
        cJSON *nv = abs ? cJSON_CreateString(abs) : NULL;
        if (old ? replace(env, old, nv, e) < 0 : add_default(env, "workspace", nv, e) < 0)
            return -1;
    }
    /* socket is left out when not set: the default daemon socket. */
    if (add_default(env, "profile", cJSON_CreateString("standard"), e) < 0 ||
        add_default(env, "forward_env", cJSON_CreateArray(), e) < 0)
        return -1;
    return 0;
}

int mini_config_validate(cJSON *cfg, struct mini_err *e)
{
    if (!cJSON_IsObject(cfg))
        return mini_err_set(e, MINI_E_CONFIG, "the configuration must be a mapping");
    bool container = false; /* written for a container: its cwd is inside it */
    /* With a container class, the keys of the container programs (run_args,
     * pull_timeout, ...) get one note together. */
    const char *ecls = mini_config_get_string(cfg, "environment.environment_class");
    _cleanup_buf_ struct mini_buf quiet = MINI_BUF_INIT;
    bool to_quiet = mini_config_container_class(ecls) != NULL;
    for (cJSON *sec = cfg->child, *next_sec; sec; sec = next_sec) {
        next_sec = sec->next;
        const struct section *s = NULL;
        for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
            if (!strcmp(sections[i].name, sec->string))
                s = &sections[i];
        if (!s) {
            const char *names[MINI_ARRAY_SIZE(sections)];
            for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
                names[i] = sections[i].name;
            const char *near = mini_closest(sec->string, names, MINI_ARRAY_SIZE(names));
            if (near)
                return mini_err_set(e, MINI_E_CONFIG, "%.*s: unknown section (did you mean %s?)",
                                    MINI_JSON_SHOW(sec->string), near);
            if (!strcmp(sec->string, "env"))
                return mini_err_set(e, MINI_E_CONFIG,
                                    "env: unknown section (variables for the commands go in "
                                    "environment.env)");
            return mini_err_set(e, MINI_E_CONFIG,
                                "%.*s: unknown section (the sections are agent, environment, "
                                "model, run and policy)",
                                MINI_JSON_SHOW(sec->string));
        }
        if (cJSON_IsNull(sec)) { /* "agent:" with nothing under it */
            if (replace(cfg, sec, cJSON_CreateObject(), e) < 0)
                return -1;
            continue;
        }
        if (!cJSON_IsObject(sec))
            return type_error(e, s->name, "a mapping", sec, NULL);
        for (cJSON *item = sec->child, *next; item; item = next) {
            next = item->next; /* check_value may replace item */
            const struct keydef *k = find_key(s, item->string);
            if (!k && ignored_key(s->name, item->string, to_quiet ? &quiet : NULL)) {
                if (!strcmp(s->name, "environment"))
                    container = true;
                cJSON_Delete(cJSON_DetachItemViaPointer(sec, item));
                continue;
            }
            if (!k)
                return unknown_key(e, s, item->string);
            char path[256];
            snprintf(path, sizeof path, "%s.%s", s->name, k->name);
            if (check_value(sec, item, k, path, e) < 0)
                return -1;
        }
    }
    if (quiet.len)
        mini_config_warnf("environment: %s: ignored (settings of the container program; mini runs the commands in "
                          "its sandbox, rooted in the image)",
                          quiet.data);
    for (size_t i = 0; i < MINI_ARRAY_SIZE(sections); i++)
        if (strcmp(sections[i].name, "policy") != 0 && add_default(cfg, sections[i].name, cJSON_CreateObject(), e) < 0)
            return -1;
    if (fill_agent(cJSON_GetObjectItemCaseSensitive(cfg, "agent"), e) < 0 ||
        fill_model(cJSON_GetObjectItemCaseSensitive(cfg, "model"), e) < 0 ||
        fill_environment(cJSON_GetObjectItemCaseSensitive(cfg, "environment"), container, e) < 0)
        return -1;
    return 0;
}
