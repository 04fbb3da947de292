/* Approval of the agent's actions (approval.c): the policy's decision with
 * the person and the approver counted, the blocked action's result, the
 * audit log.  Internal to the agent loop (miniagent_loop); the public side
 * is mini_agent_supervise and mini_agent_audit_rejected in agent.h. */
#ifndef MINI_AGENT_APPROVAL_H
#define MINI_AGENT_APPROVAL_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "agent.h"
#include "policy/policy.h"

/* The decision about cmd under a->policy (mini_policy_decide), asking the
 * approver when it says so: the person counts as having answered when
 * a->person_approved.  0, or -1 with e (out of memory); free d with
 * mini_policy_decision_free either way. */
int mini_approval_decide(struct mini_agent *a, const char *cmd, struct mini_policy_decision *d, struct mini_err *e);
/* A blocked action's result: the rendered policy.blocked_template is its
 * output, for the model's observation; extra.policy says who blocked it. */
int mini_approval_blocked(struct mini_agent *a, const char *cmd, const struct mini_policy_decision *d, cJSON **result,
                          struct mini_err *e);
/* One line of the audit log for an action (result NULL: it did not run).
 * A failing write is said on stderr and the run goes on. */
void mini_approval_audit(struct mini_agent *a, const char *cmd, const struct mini_policy_decision *d,
                         const cJSON *result, int64_t duration_ms);

#endif
