/* Approval of the agent's actions (approval.h): the policy's decision with
 * the person at the terminal and the external approver counted
 * (mini_policy_decide), the approver's request, the blocked action's
 * result, and the audit log. */
#include "approval.h"
#include "environment.h"
#include "template/template.h"
#include "mini/buf.h"
#include "mini/cleanup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int mini_agent_supervise(struct mini_agent *a, struct mini_policy *policy, int audit_fd, struct mini_err *e)
{
    a->policy = policy;
    a->audit_fd = audit_fd;
    if (!policy)
        return 0;
    /* A template that cannot render fails now, not at the first block. */
    const char *t = mini_policy_blocked_template(policy);
    _cleanup_cjson_ cJSON *vars = cJSON_CreateObject();
    _cleanup_buf_ struct mini_buf out = MINI_BUF_INIT;
    if (!vars || !cJSON_AddStringToObject(vars, "command", "true") || !cJSON_AddStringToObject(vars, "reason", "r") ||
        !cJSON_AddStringToObject(vars, "rule", "policy.default") || !cJSON_AddStringToObject(vars, "by", "policy"))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    if (mini_tpl_render(t, strlen(t), vars, &out, e) < 0)
        return mini_err_prefix(e, "policy.blocked_template");
    return 0;
}

/* What the external approver is told: the task, the step, the command,
 * the rule and its reason, the working directory, the last messages. */
static cJSON *approver_request(struct mini_agent *a, const char *cmd, const struct mini_policy_match *m)
{
    cJSON *r = cJSON_CreateObject();
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(a->template_vars, "task");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(a->template_vars, "cwd");
    cJSON_AddStringToObject(r, "run", a->run_id);
    cJSON_AddStringToObject(r, "task", cJSON_IsString(task) ? task->valuestring : "");
    cJSON_AddNumberToObject(r, "step", (double)a->n_calls);
    cJSON_AddStringToObject(r, "command", cmd);
    cJSON_AddStringToObject(r, "rule", m->rule);
    cJSON_AddItemToObject(r, "reason", m->reason ? cJSON_CreateString(m->reason) : cJSON_CreateNull());
    cJSON_AddItemToObject(r, "profile", m->profile ? cJSON_CreateString(m->profile) : cJSON_CreateNull());
    char here[4096];
    cJSON_AddStringToObject(r, "cwd",
                            cJSON_IsString(cwd) && cwd->valuestring[0] ? cwd->valuestring
                                : getcwd(here, sizeof here)            ? here
                                                                       : "");
    cJSON *recent = cJSON_AddArrayToObject(r, "messages");
    int n = cJSON_GetArraySize(a->messages);
    for (int i = n > 6 ? n - 6 : 0; i < n; i++) {
        const cJSON *msg = cJSON_GetArrayItem(a->messages, i);
        cJSON *one = cJSON_CreateObject();
        const char *role = str(msg, "role"), *content = str(msg, "content");
        cJSON_AddStringToObject(one, "role", role ? role : "");
        cJSON_AddStringToObject(one, "content", content ? content : "");
        cJSON_AddItemToArray(recent, one);
    }
    return r;
}

int mini_approval_decide(struct mini_agent *a, const char *cmd, struct mini_policy_decision *d, struct mini_err *e)
{
    const struct mini_policy_context ctx = { .person_approved = a->person_approved, .person_possible = true };
    if (mini_policy_decide(a->policy, cmd, &ctx, d, e) < 0)
        return -1;
    if (!d->ask_approver)
        return 0;
    _cleanup_cjson_ cJSON *req = approver_request(a, cmd, &d->match);
    return mini_policy_decide_approver(a->policy, req, &a->interrupt, d, e);
}

int mini_approval_blocked(struct mini_agent *a, const char *cmd, const struct mini_policy_decision *d, cJSON **result,
                          struct mini_err *e)
{
    const char *t = mini_policy_blocked_template(a->policy);
    _cleanup_cjson_ cJSON *vars = cJSON_CreateObject();
    _cleanup_buf_ struct mini_buf out = MINI_BUF_INIT;
    cJSON_AddStringToObject(vars, "command", cmd);
    cJSON_AddStringToObject(vars, "reason", d->reason ? d->reason : "");
    cJSON_AddStringToObject(vars, "rule", d->match.rule ? d->match.rule : "");
    cJSON_AddStringToObject(vars, "by", d->by);
    if (mini_tpl_render(t, strlen(t), vars, &out, e) < 0)
        return mini_err_prefix(e, "policy.blocked_template");
    cJSON *r = *result = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "output", out.data ? out.data : "");
    cJSON_AddNumberToObject(r, "returncode", -1);
    cJSON_AddStringToObject(r, "exception_info", "");
    cJSON *pol = cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "extra"), "policy");
    cJSON_AddStringToObject(pol, "decision", "deny");
    cJSON_AddStringToObject(pol, "rule", d->match.rule ? d->match.rule : "");
    cJSON_AddStringToObject(pol, "by", d->by);
    cJSON_AddStringToObject(pol, "reason", d->reason ? d->reason : "");
    return 0;
}

void mini_approval_audit(struct mini_agent *a, const char *cmd, const struct mini_policy_decision *d,
                         const cJSON *result, int64_t duration_ms)
{
    if (a->audit_fd < 0)
        return;
    char when[40];
    mini_audit_time(when, sizeof when);
    _cleanup_cjson_ cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "time", when);
    cJSON_AddStringToObject(l, "run", a->run_id);
    /* a batch task's id, when the run is one */
    const char *instance = str(a->traj_extra, "instance_id");
    if (instance)
        cJSON_AddStringToObject(l, "instance_id", instance);
    cJSON_AddNumberToObject(l, "step", (double)a->n_calls);
    cJSON_AddStringToObject(l, "command", cmd);
    cJSON_AddItemToObject(l, "rule", d->match.rule ? cJSON_CreateString(d->match.rule) : cJSON_CreateNull());
    cJSON_AddStringToObject(l, "decision", d->allow ? "allow" : "deny");
    cJSON_AddStringToObject(l, "by", d->by ? d->by : "policy");
    cJSON_AddItemToObject(l, "reason", d->reason ? cJSON_CreateString(d->reason) : cJSON_CreateNull());
    if (result) {
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(result, "returncode");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(result, "output");
        const cJSON *ob =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result, "extra"), "output_bytes");
        cJSON_AddNumberToObject(l, "returncode", cJSON_IsNumber(rc) ? rc->valuedouble : -1);
        cJSON_AddNumberToObject(l, "duration_ms", (double)duration_ms);
        cJSON_AddNumberToObject(l, "output_bytes",
                                cJSON_IsNumber(ob)        ? ob->valuedouble
                                    : cJSON_IsString(out) ? (double)strlen(out->valuestring)
                                                          : 0);
        _cleanup_cjson_ cJSON *iso = mini_environment_isolation(a->env, d->profile);
        const cJSON *it;
        cJSON_ArrayForEach (it, iso)
            cJSON_AddItemToObject(l, it->string, cJSON_Duplicate(it, true));
    }
    struct mini_err e;
    if (mini_audit_write(a->audit_fd, l, &e) < 0)
        fprintf(stderr, "mini: %s\n", e.msg);
}

void mini_agent_audit_rejected(struct mini_agent *a, const cJSON *msg, const char *comment)
{
    if (a->audit_fd < 0)
        return;
    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "extra"), "actions");
    const cJSON *act;
    cJSON_ArrayForEach (act, actions) {
        const char *cmd = str(act, "command");
        struct mini_policy_match m = { .rule = NULL };
        if (cmd && a->policy)
            mini_policy_match(a->policy, cmd, &m);
        /* Borrowed strings: d is not freed. */
        struct mini_policy_decision d = {
            .match = m,
            .by = (char *)"person",
            .reason = (char *)(comment && *comment ? comment : "rejected by the person at the terminal"),
        };
        if (cmd)
            mini_approval_audit(a, cmd, &d, NULL, 0);
    }
}
