/* The command policy, the external approver, the audit log (policy.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "policy/policy.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/clock.h"
#include "mini/io.h"
#include "mini/json.h"
#include "mini/path.h"
#include "mini/str.h"

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BLOCKED "Action blocked: {{reason}}"
#define DEFAULT_APPROVER_TIMEOUT 30.0
#define APPROVER_ANSWER_MAX (64 * 1024)

struct rule {
    pcre2_code *re;
    bool anchored;
    enum mini_verdict verdict;
    char *name; /* "policy.rules[2]" */
    char *reason, *profile;
};

struct mini_policy {
    struct rule *rules;
    size_t n, cap;
    enum mini_verdict def;
    bool def_given;
    char *approver, *audit_log, *blocked;
    double approver_timeout;
    pcre2_match_data *md;
};

static const char *const verdicts[] = { "allow", "deny", "ask" };

const char *mini_verdict_name(enum mini_verdict v) { return (unsigned)v < 3 ? verdicts[v] : "?"; }

static int parse_verdict(const cJSON *v, const char *key, enum mini_verdict *out, struct mini_err *e)
{
    if (!cJSON_IsString(v))
        return mini_err_set(e, MINI_E_CONFIG, "%s: must be allow, deny or ask", key);
    for (int i = 0; i < 3; i++)
        if (strcmp(v->valuestring, verdicts[i]) == 0) {
            *out = (enum mini_verdict)i;
            return 0;
        }
    return mini_err_set(e, MINI_E_CONFIG, "%s: \"%.*s\" is not allow, deny or ask", key,
                        MINI_JSON_SHOW(v->valuestring));
}

static int unknown(const char *where, const char *key, const char *const *names, size_t n, struct mini_err *e)
{
    const char *near = mini_closest(key, names, n);
    _cleanup_buf_ struct mini_buf list = MINI_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        mini_buf_printf(&list, "%s%s", i ? ", " : "", names[i]);
    if (near)
        return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (did you mean %s.%s?)", where, MINI_JSON_SHOW(key),
                            where, near);
    return mini_err_set(e, MINI_E_CONFIG, "%s.%.*s: unknown key (the keys are %s)", where, MINI_JSON_SHOW(key),
                        list.data ? list.data : "");
}

/* name: the rule's, for the audit log; key: its pattern's, for errors. */
static int add_rule(struct mini_policy *p, const char *name, const char *key, const char *pattern, bool anchored,
                    enum mini_verdict v, const char *reason, const char *profile, struct mini_err *e)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        struct rule *r = realloc(p->rules, cap * sizeof *r);
        if (!r)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        p->rules = r;
        p->cap = cap;
    }
    int errcode;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &errcode, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof msg);
        return mini_err_set(e, MINI_E_CONFIG, "%s: not a valid regular expression at offset %zu: %s", key, (size_t)off,
                            (const char *)msg);
    }
    struct rule *r = &p->rules[p->n];
    *r = (struct rule){ .re = re, .anchored = anchored, .verdict = v };
    r->name = strdup(name);
    r->reason = reason ? strdup(reason) : NULL;
    r->profile = profile ? strdup(profile) : NULL;
    p->n++; /* freed with the policy from here on */
    if (!r->name || (reason && !r->reason) || (profile && !r->profile))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

static int opt_string(const cJSON *v, const char *key, char **out, struct mini_err *e)
{
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return mini_err_set(e, MINI_E_CONFIG, "%s: must be a string", key);
    if (!(*out = strdup(v->valuestring)))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

static int parse_rule(struct mini_policy *p, const cJSON *r, size_t i, struct mini_err *e)
{
    static const char *const keys[] = { "match", "verdict", "reason", "profile" };
    char where[64];
    snprintf(where, sizeof where, "policy.rules[%zu]", i);
    if (!cJSON_IsObject(r))
        return mini_err_set(e, MINI_E_CONFIG, "%s: must be a mapping with match and verdict", where);
    const cJSON *it;
    cJSON_ArrayForEach (it, r) {
        bool known = false;
        for (size_t k = 0; k < MINI_ARRAY_SIZE(keys); k++)
            known = known || strcmp(it->string, keys[k]) == 0;
        if (!known)
            return unknown(where, it->string, keys, MINI_ARRAY_SIZE(keys), e);
    }
    char key[96];
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "match");
    snprintf(key, sizeof key, "%s.match", where);
    if (!cJSON_IsString(m))
        return mini_err_set(e, MINI_E_CONFIG, "%s: %s (a regular expression on the command)", key,
                            m ? "must be a string" : "missing");
    enum mini_verdict v;
    const cJSON *vv = cJSON_GetObjectItemCaseSensitive(r, "verdict");
    snprintf(key, sizeof key, "%s.verdict", where);
    if (!vv)
        return mini_err_set(e, MINI_E_CONFIG, "%s: missing (allow, deny or ask)", key);
    if (parse_verdict(vv, key, &v, e) < 0)
        return -1;
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(r, "reason");
    const cJSON *profile = cJSON_GetObjectItemCaseSensitive(r, "profile");
    snprintf(key, sizeof key, "%s.reason", where);
    if (reason && !cJSON_IsNull(reason) && !cJSON_IsString(reason))
        return mini_err_set(e, MINI_E_CONFIG, "%s: must be a string", key);
    snprintf(key, sizeof key, "%s.profile", where);
    if (profile && !cJSON_IsNull(profile) && (!cJSON_IsString(profile) || !profile->valuestring[0]))
        return mini_err_set(e, MINI_E_CONFIG, "%s: must be a profile name or file", key);
    snprintf(key, sizeof key, "%s.match", where);
    return add_rule(p, where, key, m->valuestring, false, v, cJSON_IsString(reason) ? reason->valuestring : NULL,
                    cJSON_IsString(profile) ? profile->valuestring : NULL, e);
}

static void policy_freep(struct mini_policy **p) { mini_policy_free(*p); }

struct mini_policy *mini_policy_new(const cJSON *obj, struct mini_err *e)
{
    static const char *const keys[] = { "default",          "rules",     "approver",
                                        "approver_timeout", "audit_log", "blocked_template" };
    _cleanup_(policy_freep) struct mini_policy *p = calloc(1, sizeof *p);
    if (!p || !(p->md = pcre2_match_data_create(1, NULL))) {
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
        return NULL;
    }
    p->def = MINI_VERDICT_ALLOW;
    p->approver_timeout = DEFAULT_APPROVER_TIMEOUT;
    if (obj && !cJSON_IsNull(obj) && !cJSON_IsObject(obj)) {
        mini_err_set(e, MINI_E_CONFIG, "policy: must be a mapping (default, rules, approver, ...)");
        return NULL;
    }
    const cJSON *it;
    const cJSON *fields = cJSON_IsObject(obj) ? obj : NULL;
    cJSON_ArrayForEach (it, fields) {
        bool known = false;
        for (size_t k = 0; k < MINI_ARRAY_SIZE(keys); k++)
            known = known || strcmp(it->string, keys[k]) == 0;
        if (!known) {
            unknown("policy", it->string, keys, MINI_ARRAY_SIZE(keys), e);
            return NULL;
        }
    }
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(obj, "default");
    if (def && !cJSON_IsNull(def)) {
        if (parse_verdict(def, "policy.default", &p->def, e) < 0)
            return NULL;
        p->def_given = true;
    }
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(obj, "rules");
    if (rules && !cJSON_IsNull(rules) && !cJSON_IsArray(rules)) {
        mini_err_set(e, MINI_E_CONFIG, "policy.rules: must be a list of rules ({match, verdict, reason, profile})");
        return NULL;
    }
    size_t i = 0;
    cJSON_ArrayForEach (it, rules)
        if (parse_rule(p, it, i++, e) < 0)
            return NULL;
    if (opt_string(cJSON_GetObjectItemCaseSensitive(obj, "approver"), "policy.approver", &p->approver, e) < 0 ||
        opt_string(cJSON_GetObjectItemCaseSensitive(obj, "audit_log"), "policy.audit_log", &p->audit_log, e) < 0 ||
        opt_string(cJSON_GetObjectItemCaseSensitive(obj, "blocked_template"), "policy.blocked_template", &p->blocked,
                   e) < 0)
        return NULL;
    if (p->approver && !p->approver[0]) {
        mini_err_set(e, MINI_E_CONFIG, "policy.approver: must be a command (empty)");
        return NULL;
    }
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(obj, "approver_timeout");
    if (to && !cJSON_IsNull(to)) {
        if (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400) {
            mini_err_set(e, MINI_E_CONFIG, "policy.approver_timeout: must be a number of seconds in (0, 86400]");
            return NULL;
        }
        p->approver_timeout = to->valuedouble;
    }
    return TAKE_PTR(p);
}

int mini_policy_add_whitelist(struct mini_policy *p, const cJSON *list, struct mini_err *e)
{
    if (!list || cJSON_IsNull(list))
        return 0;
    if (!cJSON_IsArray(list))
        return mini_err_set(e, MINI_E_CONFIG, "agent.whitelist_actions: must be a list of regular expressions");
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach (it, list) {
        char name[64];
        snprintf(name, sizeof name, "agent.whitelist_actions[%zu]", i++);
        if (!cJSON_IsString(it))
            return mini_err_set(e, MINI_E_CONFIG, "%s: must be a string", name);
        if (add_rule(p, name, name, it->valuestring, true, MINI_VERDICT_ALLOW, "whitelisted (agent.whitelist_actions)",
                     NULL, e) < 0)
            return -1;
    }
    return 0;
}

struct mini_policy *mini_policy_from_config(const cJSON *config, struct mini_err *e)
{
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(config, "agent");
    struct mini_policy *p = mini_policy_new(cJSON_GetObjectItemCaseSensitive(config, "policy"), e);
    if (p && mini_policy_add_whitelist(p, cJSON_GetObjectItemCaseSensitive(agent, "whitelist_actions"), e) < 0) {
        mini_policy_free(p);
        return NULL;
    }
    return p;
}

void mini_policy_free(struct mini_policy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        pcre2_code_free(p->rules[i].re);
        free(p->rules[i].name);
        free(p->rules[i].reason);
        free(p->rules[i].profile);
    }
    free(p->rules);
    pcre2_match_data_free(p->md);
    free(p->approver);
    free(p->audit_log);
    free(p->blocked);
    free(p);
}

void mini_policy_match(const struct mini_policy *p, const char *command, struct mini_policy_match *m)
{
    *m = (struct mini_policy_match){ .verdict = p->def, .rule = "policy.default" };
    for (size_t i = 0; i < p->n; i++) {
        const struct rule *r = &p->rules[i];
        if (pcre2_match(r->re, (PCRE2_SPTR)command, strlen(command), 0, r->anchored ? PCRE2_ANCHORED : 0, p->md,
                        NULL) >= 0) {
            *m = (struct mini_policy_match){
                .verdict = r->verdict, .matched = true, .rule = r->name, .reason = r->reason, .profile = r->profile
            };
            return;
        }
    }
}

bool mini_policy_default_given(const struct mini_policy *p) { return p->def_given; }
const char *mini_policy_approver(const struct mini_policy *p) { return p->approver; }
double mini_policy_approver_timeout(const struct mini_policy *p) { return p->approver_timeout; }
const char *mini_policy_audit_log(const struct mini_policy *p) { return p->audit_log; }
const char *mini_policy_blocked_template(const struct mini_policy *p)
{
    return p->blocked ? p->blocked : DEFAULT_BLOCKED;
}

/* ---- the external approver ---- */

/* One program file the approver's command names, checked: -1 with e when
 * it lies in the workspace (or a link on its way does). */
static int approver_file_ok(const char *file, int guard, const char *ws, struct mini_err *e)
{
    struct mini_err why;
    int in = mini_path_in_guard(file, guard, &why);
    if (in == 0)
        return 0;
    if (in > 0 || strstr(why.msg, "symbolic link in the workspace"))
        return mini_err_set(e, MINI_E_CONFIG,
                            "policy.approver: %s lies in the workspace %s, which sandboxed commands can write, and the "
                            "approver runs on the host; move it out of the workspace",
                            file, ws);
    return mini_err_set(e, MINI_E_CONFIG, "policy.approver: %s", why.msg);
}

/* A bare program name, looked up as sh will: no directory of $PATH that
 * is searched before it is found may be relative or in the workspace (a
 * command could put a program of that name there). */
static int approver_path_ok(const char *name, int guard, const char *ws, struct mini_err *e)
{
    const char *path = getenv("PATH");
    _cleanup_free_ char *dirs = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
    if (!dirs)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    for (char *d = dirs, *next; d; d = next) {
        next = strchr(d, ':');
        if (next)
            *next++ = '\0';
        if (d[0] != '/')
            return mini_err_set(e, MINI_E_CONFIG,
                                "policy.approver: %s is looked up in $PATH, which has the relative directory \"%s\" "
                                "(the workspace, which sandboxed commands can write); name the approver by its "
                                "absolute path",
                                name, d);
        _cleanup_free_ char *cand = NULL;
        if (asprintf(&cand, "%s/%s", d, name) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        struct mini_err ignored;
        _cleanup_close_ int dfd = mini_open_dir_guarded(d, guard, &ignored);
        if (mini_path_within(d, ws) || (dfd < 0 && strstr(ignored.msg, "symbolic link in the workspace")))
            return mini_err_set(e, MINI_E_CONFIG,
                                "policy.approver: %s is looked up in $PATH, which has %s in the workspace (sandboxed "
                                "commands can write it); name the approver by its absolute path",
                                name, d);
        if (dfd >= 0 && mini_dir_within(dfd, guard) != 0)
            return mini_err_set(e, MINI_E_CONFIG,
                                "policy.approver: %s is looked up in $PATH, whose directory %s leads into the "
                                "workspace (sandboxed commands can write it); name the approver by its absolute path",
                                name, d);
        if (faccessat(AT_FDCWD, cand, X_OK, AT_EACCESS) == 0)
            return approver_file_ok(cand, guard, ws, e);
    }
    return 0; /* not found: sh says so when it is asked */
}

int mini_policy_check_approver(const struct mini_policy *p, const char *workspace, struct mini_err *e)
{
    if (!p->approver || !workspace)
        return 0;
    _cleanup_close_ int guard = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (guard < 0)
        return mini_err_sys(e, MINI_E_IO, errno, "policy.approver: the workspace %s", workspace);
    _cleanup_free_ char *ws = realpath(workspace, NULL);
    if (!ws)
        return mini_err_sys(e, MINI_E_IO, errno, "policy.approver: the workspace %s", workspace);
    /* The words of the command that name files: the program (by $PATH
     * when a bare name), and any other word that is a path or an existing
     * file (a script given to an interpreter: python3 approve.py). */
    _cleanup_free_ char *words = strdup(p->approver);
    if (!words)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    bool first = true;
    for (char *save = NULL, *w = strtok_r(words, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        /* Quotes around a word: what sh would see. */
        size_t n = strlen(w);
        if (n >= 2 && (w[0] == '\'' || w[0] == '"') && w[n - 1] == w[0]) {
            w[n - 1] = '\0';
            w++;
        }
        bool is_env = first && strchr(w, '=') && !strchr(w, '/');
        if (is_env)
            continue; /* VAR=value before the program */
        struct stat st;
        if (strchr(w, '/') || (!first && lstat(w, &st) == 0)) {
            if ((strchr(w, '/') && lstat(w, &st) < 0 && errno == ENOENT && !first))
                continue; /* an option's value, say, that names nothing */
            if (approver_file_ok(w, guard, ws, e) < 0)
                return -1;
        } else if (first && approver_path_ok(w, guard, ws, e) < 0) {
            return -1;
        }
        first = false;
    }
    return 0;
}

void mini_approval_free(struct mini_approval *a)
{
    free(a->reason);
    free(a->by);
    a->reason = a->by = NULL;
}

static __attribute__((format(printf, 3, 4))) int decide(struct mini_approval *out, bool allow, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&out->reason, fmt, ap);
    va_end(ap);
    if (n < 0)
        out->reason = NULL;
    out->allow = allow;
    if (!out->by)
        out->by = strdup("approver");
    if (!out->reason || !out->by) {
        mini_approval_free(out);
        return -1;
    }
    return 0;
}

/* What makes an answer unacceptable before cJSON reads it, or NULL.
 * cJSON would cut a string at a NUL (raw, or written \u0000: "allow\u0000x"
 * reads as "allow"), take raw control characters into strings, and skip
 * any byte up to a space as if it were whitespace; none of that is JSON. */
static const char *answer_flaw(const char *text, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\0')
            return "a NUL byte";
        if (in_string) {
            if (c < 0x20)
                return "a control character in a string";
            if (c == '"') {
                in_string = false;
            } else if (c == '\\' && i + 1 < len) {
                i++;
                if (text[i] == 'u' && i + 4 < len && memcmp(text + i + 1, "0000", 4) == 0)
                    return "a NUL character (\\u0000) in a string";
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            return "a control character";
        }
    }
    return NULL;
}

static bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The answer: exactly one JSON object, {"decision": "allow"|"deny", ...},
 * with whitespace around it and nothing else. */
int mini_policy_parse_approval(const char *text, size_t len, struct mini_approval *out)
{
    *out = (struct mini_approval){ 0 };
    const char *flaw = answer_flaw(text, len);
    if (flaw)
        return decide(out, false, "the approver's answer has %s", flaw);
    size_t shown = len; /* what a reason quotes: without the whitespace at the end */
    while (shown && json_space(text[shown - 1]))
        shown--;
    const char *end = NULL;
    _cleanup_cjson_ cJSON *a = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!cJSON_IsObject(a))
        return decide(out, false, "the approver's answer is not a JSON object: %.*s", (int)(shown > 80 ? 80 : shown),
                      text);
    size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    while (at < len && json_space(text[at]))
        at++;
    if (at < len)
        return decide(out, false, "the approver's answer is not one JSON object: more after the object: %.*s",
                      (int)(shown - at > 80 ? 80 : shown - at), text + at);
    /* A name given twice: which one counts would be up to the parser. */
    static const char *const names[] = { "decision", "reason", "by" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        unsigned n = 0;
        for (const cJSON *c = a->child; c; c = c->next)
            n += c->string && strcmp(c->string, names[i]) == 0;
        if (n > 1)
            return decide(out, false, "the approver's answer has \"%s\" more than once", names[i]);
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "decision");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(a, "reason");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(a, "by");
    if (cJSON_IsString(by) && by->valuestring[0] && !(out->by = strdup(by->valuestring)))
        return -1;
    bool allow = cJSON_IsString(d) && strcmp(d->valuestring, "allow") == 0;
    if (!allow && !(cJSON_IsString(d) && strcmp(d->valuestring, "deny") == 0))
        return decide(out, false, "the approver's answer has no decision allow or deny");
    if (cJSON_IsString(r) && r->valuestring[0])
        return decide(out, allow, "%s", r->valuestring);
    return decide(out, allow, allow ? "allowed by the approver" : "denied by the approver");
}

int mini_policy_ask_approver(const char *command, double timeout, const cJSON *request, const volatile int *cancel,
                             struct mini_approval *out)
{
    *out = (struct mini_approval){ 0 };
    _cleanup_free_ char *req = cJSON_PrintUnformatted(request);
    if (!req)
        return -1;
    size_t req_len = strlen(req);
    req[req_len] = '\n'; /* the NUL becomes the line's end; length + 1 */
    req_len++;
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return decide(out, false, "the approver could not be started: pipe: %s", strerror(errno));
    if (pipe2(outp, O_CLOEXEC) < 0) {
        int err = errno;
        close(in[0]);
        close(in[1]);
        return decide(out, false, "the approver could not be started: pipe: %s", strerror(err));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(in[0]);
        close(in[1]);
        close(outp[0]);
        close(outp[1]);
        return decide(out, false, "the approver could not be started: fork: %s", strerror(err));
    }
    if (pid == 0) {
        setpgid(0, 0); /* its own group, so that a hang is killed whole */
        if (dup2(in[0], 0) < 0 || dup2(outp[1], 1) < 0)
            _exit(126);
        signal(SIGPIPE, SIG_DFL);
        execl("/bin/sh", "/bin/sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid); /* as the child does, whichever runs first */
    close(in[0]);
    close(outp[1]);
    mini_set_nonblock(in[1], 1);
    mini_set_nonblock(outp[0], 1);
    int wfd = in[1], rfd = outp[0];
    size_t sent = 0;
    struct mini_buf ans = MINI_BUF_INIT;
    int64_t deadline = mini_mono_ms() + (int64_t)(timeout * 1000);
    bool late = false, too_long = false, cancelled = false;
    /* A closed stdin must not kill us: SIGPIPE is held off while writing. */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old);
    while (rfd >= 0) {
        int64_t left = deadline - mini_mono_ms();
        if (left <= 0) {
            late = true;
            break;
        }
        if (cancel && *cancel) {
            cancelled = true;
            break;
        }
        struct pollfd pf[2] = { { .fd = rfd, .events = POLLIN }, { .fd = wfd, .events = POLLOUT } };
        int r = poll(pf, wfd >= 0 ? 2 : 1, (int)(left > 100 ? 100 : left));
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (wfd >= 0 && pf[1].revents) {
            ssize_t n = write(wfd, req + sent, req_len - sent);
            if (n > 0)
                sent += (size_t)n;
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == req_len) {
                close(wfd);
                wfd = -1;
            }
        }
        if (pf[0].revents) {
            char buf[4096];
            ssize_t n = read(rfd, buf, sizeof buf);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n <= 0) {
                close(rfd);
                rfd = -1;
                break;
            }
            if (ans.len + (size_t)n > APPROVER_ANSWER_MAX) {
                too_long = true;
                break;
            }
            mini_buf_append(&ans, buf, (size_t)n);
        }
    }
    sigaction(SIGPIPE, &old, NULL);
    mini_close(wfd);
    mini_close(rfd);
    int st = 0;
    if (late || too_long || cancelled) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    /* Its stdout is closed: it has exited, or is about to (a little grace,
     * then the group is killed).  It is waited for without reaping it
     * (WNOWAIT), so that its pid, and with it the group id, cannot be
     * reused before what it left behind in its group is killed. */
    int64_t grace = mini_mono_ms() + 1000;
    for (;;) {
        siginfo_t si = { 0 };
        int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if ((r == 0 && si.si_pid == pid) || (r < 0 && errno != EINTR))
            break;
        if (mini_mono_ms() > grace) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            grace = INT64_MAX;
        }
        usleep(5000);
    }
    kill(-pid, SIGKILL); /* anything it left behind in its group */
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int rc;
    if (cancelled)
        rc = decide(out, false, "interrupted while the approver was being asked");
    else if (late)
        rc = decide(out, false, "the approver did not answer within %g seconds", timeout);
    else if (too_long)
        rc = decide(out, false, "the approver's answer is longer than %d bytes", APPROVER_ANSWER_MAX);
    else if (WIFSIGNALED(st))
        rc = decide(out, false, "the approver was killed by signal %d", WTERMSIG(st));
    else if (WIFEXITED(st) && WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + 65)
        /* the shell's report of a command it ran that a signal killed */
        rc = decide(out, false, "the approver was killed by signal %d (exit status %d)", WEXITSTATUS(st) - 128,
                    WEXITSTATUS(st));
    else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        rc = decide(out, false, "the approver failed with exit status %d", WEXITSTATUS(st));
    else if (!ans.data || !ans.len)
        rc = decide(out, false, "the approver gave no answer");
    else
        rc = mini_policy_parse_approval(ans.data, ans.len, out);
    mini_buf_free(&ans);
    return rc;
}
