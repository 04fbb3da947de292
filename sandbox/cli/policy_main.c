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

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* The verdict on command, as the JSON object above. */
static cJSON *verdict(const struct mini_policy *pol, const char *cwd, const char *command)
{
    struct mini_policy_match pm = { 0 };
    mini_policy_match(pol, command, &pm);
    bool allow = pm.verdict == MINI_VERDICT_ALLOW;
    _cleanup_free_ char *by = strdup("policy"), *reason = NULL;
    if (pm.verdict == MINI_VERDICT_ASK && mini_policy_approver(pol)) {
        _cleanup_cjson_ cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "task", "");
        cJSON_AddNumberToObject(req, "step", 1);
        cJSON_AddStringToObject(req, "command", command);
        cJSON_AddStringToObject(req, "rule", pm.rule);
        cJSON_AddItemToObject(req, "reason", str_or_null(pm.reason));
        cJSON_AddStringToObject(req, "cwd", cwd);
        cJSON_AddArrayToObject(req, "messages");
        struct mini_approval ap;
        if (mini_policy_ask_approver(mini_policy_approver(pol), mini_policy_approver_timeout(pol), req, NULL, &ap) ==
            0) {
            allow = ap.allow;
            free(by);
            by = TAKE_PTR(ap.by);
            reason = TAKE_PTR(ap.reason);
        }
    } else if (pm.verdict == MINI_VERDICT_ASK) {
        if (asprintf(&reason, "%s says ask%s%s, and nobody was there to ask (no policy.approver)", pm.rule,
                     pm.reason ? ": " : "", pm.reason ? pm.reason : "") < 0)
            reason = NULL;
    } else if (pm.reason) {
        reason = strdup(pm.reason);
    } else if (!allow && asprintf(&reason, "denied by %s", pm.rule) < 0) {
        reason = NULL;
    }
    cJSON *v = cJSON_CreateObject();
    cJSON_AddBoolToObject(v, "allow", allow);
    cJSON_AddStringToObject(v, "rule", pm.rule);
    cJSON_AddStringToObject(v, "by", by ? by : "policy");
    cJSON_AddItemToObject(v, "reason", str_or_null(reason));
    cJSON_AddItemToObject(v, "profile", str_or_null(allow ? pm.profile : NULL));
    cJSON_AddItemToObject(v, "audit_log", str_or_null(mini_policy_audit_log(pol)));
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
    cJSON *out;
    if (pol) {
        out = verdict(pol, argv[2], argv[4]);
    } else {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "error", e.msg);
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
