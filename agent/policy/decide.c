/* The decision about one command (policy.h, "the decision"): what a
 * verdict means once the person at the terminal and the approver are
 * counted.  Written once here; mini's agent loop (agent/approval.c), its
 * confirm-mode questions (agent/interactive.c) and mini-sandbox-policy
 * (sandbox/cli/policy_main.c) use it. */
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int decided(struct mini_policy_decision *d, bool allow, const char *by, const char *reason, struct mini_err *e)
{
    d->allow = allow;
    d->profile = allow ? d->match.profile : NULL;
    free(d->by);
    free(d->reason);
    d->by = strdup(by);
    d->reason = reason ? strdup(reason) : NULL;
    if (!d->by || (reason && !d->reason))
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    return 0;
}

/* The reason of an `ask` nobody answered. */
static char *unanswered(const struct mini_policy_match *m, bool person_possible)
{
    char *why = NULL;
    int n = person_possible
        ? asprintf(&why,
                   "%s says ask%s%s%s, and nobody was there to ask (no person at a terminal in confirm mode, "
                   "no policy.approver)",
                   m->rule, m->reason ? " (" : "", m->reason ? m->reason : "", m->reason ? ")" : "")
        : asprintf(&why, "%s says ask%s%s, and nobody was there to ask (no policy.approver)", m->rule,
                   m->reason ? ": " : "", m->reason ? m->reason : "");
    return n < 0 ? NULL : why;
}

int mini_policy_decide(const struct mini_policy *p, const char *command, const struct mini_policy_context *ctx,
                       struct mini_policy_decision *d, struct mini_err *e)
{
    *d = (struct mini_policy_decision){ 0 };
    if (!p) {
        d->ask_person = true;
        return decided(d, true, "policy", NULL, e);
    }
    mini_policy_match(p, command, &d->match);
    const struct mini_policy_match *m = &d->match;
    /* Confirm mode asks the person about what no rule decided. */
    d->ask_person = m->verdict == MINI_VERDICT_ASK ||
        (!m->matched && m->verdict == MINI_VERDICT_ALLOW && !mini_policy_default_given(p));
    bool person = ctx && ctx->person_approved && d->ask_person;
    if (m->verdict == MINI_VERDICT_ALLOW && !person)
        return decided(d, true, "policy", m->reason, e);
    if (m->verdict == MINI_VERDICT_DENY) {
        char *why = NULL;
        if (!m->reason && asprintf(&why, "denied by %s", m->rule) < 0)
            return mini_err_set(e, MINI_E_NOMEM, "out of memory");
        int r = decided(d, false, "policy", m->reason ? m->reason : why, e);
        free(why);
        return r;
    }
    if (person)
        return decided(d, true, "person", m->reason ? m->reason : "approved by the person at the terminal", e);
    if (mini_policy_approver(p)) {
        d->ask_approver = true;
        return decided(d, false, "policy", NULL, e);
    }
    char *why = unanswered(m, ctx && ctx->person_possible);
    if (!why)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    int r = decided(d, false, "policy", why, e);
    free(why);
    return r;
}

int mini_policy_decide_approver(const struct mini_policy *p, const cJSON *request, const volatile int *cancel,
                                struct mini_policy_decision *d, struct mini_err *e)
{
    struct mini_approval ap;
    if (!request ||
        mini_policy_ask_approver(mini_policy_approver(p), mini_policy_approver_timeout(p), request, cancel, &ap) < 0)
        return mini_err_set(e, MINI_E_NOMEM, "out of memory");
    d->ask_approver = false;
    int r = decided(d, ap.allow, ap.by, ap.reason, e);
    mini_approval_free(&ap);
    return r;
}

void mini_policy_decision_free(struct mini_policy_decision *d)
{
    free(d->by);
    free(d->reason);
    d->by = d->reason = NULL;
}
