/* mini-sandbox-policy (libexec/mini): the verdict of `mini-sandbox run
 * --policy FILE` on one command.  A program of its own so that only
 * --policy loads PCRE2 and libyaml: `mini-sandbox run` starts without
 * them (docs/sandbox-lifecycle.md, "One-shot runs"; the figures in
 * docs/performance.md, "The client's libraries").
 *
 *   mini-sandbox-policy FILE CWD WORKSPACE COMMAND
 *
 * FILE is mini's `policy` object, alone or as the `policy` key of a
 * config (YAML or JSON); CWD goes into an approver's request; an approver
 * that lies in WORKSPACE is refused (mini_policy_check_approver).  An
 * approver, when the policy asks one, runs here with this program's
 * standard error.  Writes one JSON object on standard output and exits 0:
 *
 *   {"allow": B, "rule": S, "by": S, "reason": S|null, "profile": S|null,
 *    "audit_log": S|null}
 *
 * or {"error": S} when FILE cannot be read or is not a policy.  The
 * caller writes the audit lines.  Exit 2: called wrongly; 1: out of
 * memory or standard output lost. */
#include "cli_util.h"
#include "mini/buf.h"
#include "mini/cleanup.h"
#include "mini/io.h"
#include "mini/log.h"
#include "config/config_yaml.h"
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FILE's policy, or NULL with e. */
static struct mini_policy *policy_file(const char *path, struct mini_err *e)
{
    _cleanup_buf_ struct mini_buf b = MINI_BUF_INIT;
    if (mini_read_file(path, &b, 1 << 20, e) < 0)
        return NULL;
    _cleanup_cjson_ cJSON *doc = mini_yaml_parse(b.data ? b.data : "", b.len, path, e);
    if (!doc)
        return NULL;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(doc, "policy");
    struct mini_policy *p = mini_policy_new(cJSON_IsObject(obj) ? obj : doc, e);
    if (!p)
        mini_err_prefix(e, "%s", path);
    return p;
}

static cJSON *str_or_null(const char *s) { return s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

/* What the approver is told: no task, no run, no messages here. */
static cJSON *approver_request(const struct mini_policy_match *m, const char *cwd, const char *command)
{
    cJSON *req = cJSON_CreateObject();
    if (!req || !cJSON_AddStringToObject(req, "task", "") || !cJSON_AddNumberToObject(req, "step", 1) ||
        !cJSON_AddStringToObject(req, "command", command) || !cJSON_AddStringToObject(req, "rule", m->rule) ||
        !cJSON_AddItemToObject(req, "reason", str_or_null(m->reason)) || !cJSON_AddStringToObject(req, "cwd", cwd) ||
        !cJSON_AddArrayToObject(req, "messages")) {
        cJSON_Delete(req);
        return NULL;
    }
    return req;
}

/* The verdict on command, as the JSON object above (mini_policy_decide:
 * nobody at a terminal here, so an ask is the approver's or a deny).
 * NULL with e. */
static cJSON *verdict(const struct mini_policy *pol, const char *cwd, const char *command, struct mini_err *e)
{
    const struct mini_policy_context ctx = { .person_approved = false, .person_possible = false };
    struct mini_policy_decision d;
    if (mini_policy_decide(pol, command, &ctx, &d, e) < 0) {
        mini_policy_decision_free(&d);
        return NULL;
    }
    if (d.ask_approver) {
        _cleanup_cjson_ cJSON *req = approver_request(&d.match, cwd, command);
        if (mini_policy_decide_approver(pol, req, NULL, &d, e) < 0) {
            mini_policy_decision_free(&d);
            return NULL;
        }
    }
    cJSON *v = cJSON_CreateObject();
    if (!v || !cJSON_AddBoolToObject(v, "allow", d.allow) || !cJSON_AddStringToObject(v, "rule", d.match.rule) ||
        !cJSON_AddStringToObject(v, "by", d.by) || !cJSON_AddItemToObject(v, "reason", str_or_null(d.reason)) ||
        !cJSON_AddItemToObject(v, "profile", str_or_null(d.profile)) ||
        !cJSON_AddItemToObject(v, "audit_log", str_or_null(mini_policy_audit_log(pol)))) {
        cJSON_Delete(v);
        v = NULL;
        mini_err_set(e, MINI_E_NOMEM, "out of memory");
    }
    mini_policy_decision_free(&d);
    return v;
}

int main(int argc, char **argv)
{
    mini_log_init("mini-sandbox", MINI_LOG_WARN);
    if (argc != 5) {
        fprintf(stderr, "mini-sandbox-policy: internal to mini-sandbox; run: mini-sandbox run --help\n");
        return MINI_CLI_USAGE;
    }
    struct mini_err e;
    mini_err_clear(&e);
    struct mini_policy *pol = policy_file(argv[1], &e);
    if (pol && mini_policy_check_approver(pol, argv[3], &e) < 0) {
        mini_policy_free(pol);
        pol = NULL;
    }
    cJSON *out = pol ? verdict(pol, argv[2], argv[4], &e) : NULL;
    if (!out && (out = cJSON_CreateObject()) && !cJSON_AddStringToObject(out, "error", e.msg)) {
        cJSON_Delete(out);
        out = NULL;
    }
    _cleanup_free_ char *text = out ? cJSON_PrintUnformatted(out) : NULL;
    cJSON_Delete(out);
    mini_policy_free(pol);
    if (!text) {
        fprintf(stderr, "mini-sandbox-policy: out of memory\n");
        return 1;
    }
    /* A JSON string holds no raw newline: the verdict is one line. */
    return puts(text) < 0 || fflush(stdout) != 0 ? 1 : 0;
}
