/* Supervision: the command policy, the decision about a command, the
 * external approver and the audit log (docs/config.md, "policy").  Linked
 * by mini and by mini-sandbox-policy.
 *
 *   policy:
 *     default: allow            # allow | deny | ask: when no rule matches
 *     rules:                    # first match wins (PCRE2, unanchored)
 *       - {match: '^rm -rf /', verdict: deny, reason: "never"}
 *       - {match: '^pip install', verdict: ask, profile: permissive}
 *     approver: ./approve.sh    # answers `ask` when no person does
 *     approver_timeout: 30      # seconds
 *     audit_log: audit.jsonl    # one JSON object a line, appended
 *     blocked_template: "Action blocked: {{reason}}"
 *
 * agent.whitelist_actions maps onto the same mechanism: each entry is an
 * `allow` rule matched at the start (Python's re.match), after the
 * policy's own rules. */
#ifndef MINI_AGENT_POLICY_H
#define MINI_AGENT_POLICY_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "mini/err.h"

enum mini_verdict {
    MINI_VERDICT_ALLOW,
    MINI_VERDICT_DENY,
    MINI_VERDICT_ASK,
};

struct mini_policy;

/* What the policy says about one command. */
struct mini_policy_match {
    enum mini_verdict verdict;
    bool matched;        /* a rule matched (false: the default verdict) */
    const char *rule;    /* "policy.rules[2]", "agent.whitelist_actions[0]", "policy.default" */
    const char *reason;  /* the rule's reason; NULL when it has none */
    const char *profile; /* the rule's sandbox profile override; NULL: none */
};

/* "allow", "deny", "ask". */
const char *mini_verdict_name(enum mini_verdict v);

/* Parse and check the policy object (NULL or null: allow everything).
 * NULL with e (MINI_E_CONFIG, naming the key, e.g.
 * `policy.rules[2].verdict: "maybe" is not allow, deny or ask`). */
struct mini_policy *mini_policy_new(const cJSON *obj, struct mini_err *e);
/* Append agent.whitelist_actions (NULL or null: none) as `allow` rules
 * matched at the start. */
int mini_policy_add_whitelist(struct mini_policy *p, const cJSON *list, struct mini_err *e);
/* The policy of a whole config: its `policy` object, then its
 * agent.whitelist_actions (as mini, mini batch and its workers make it). */
struct mini_policy *mini_policy_from_config(const cJSON *config, struct mini_err *e);
void mini_policy_free(struct mini_policy *p);

/* First match wins; else the default. */
void mini_policy_match(const struct mini_policy *p, const char *command, struct mini_policy_match *m);
/* Whether `default` was given (confirm mode asks the person otherwise). */
bool mini_policy_default_given(const struct mini_policy *p);
/* Each NULL when not set. */
const char *mini_policy_approver(const struct mini_policy *p);
double mini_policy_approver_timeout(const struct mini_policy *p);
const char *mini_policy_audit_log(const struct mini_policy *p);
/* Never NULL (the default's text when not set). */
const char *mini_policy_blocked_template(const struct mini_policy *p);

/* ---- the decision ---- */

/* Who stands behind an `ask`, as the caller knows it. */
struct mini_policy_context {
    /* A person at a terminal already said yes to running this command
     * (mini's confirm mode, or the person's own command in human mode):
     * that answers `ask`, and the no-rule case of confirm mode. */
    bool person_approved;
    /* A person at a terminal could have been asked (mini, not
     * `mini-sandbox run --policy`): for the reason of an unanswered ask. */
    bool person_possible;
};

/* What happens to one command, and who said so.  The one reading of a
 * verdict: mini's agent loop, its confirm-mode questions and
 * mini-sandbox-policy all go by it. */
struct mini_policy_decision {
    bool allow;                     /* final unless ask_approver */
    bool ask_person;                /* confirm mode asks the person before it runs: a rule
                          says ask, or none decided and no policy.default
                          was given (always, without a policy) */
    bool ask_approver;              /* the approver answers (mini_policy_decide_approver);
                          until then allow is false */
    struct mini_policy_match match; /* rule NULL: no policy */
    const char *profile;            /* the rule's sandbox profile when allowed; NULL: none */
    char *by;                       /* malloc'd: "policy", "person", or the approver's "by" */
    char *reason;                   /* malloc'd; NULL: none */
};

/* Decide about command under p (NULL: no policy, everything runs).
 * Without a policy: allowed, by "policy".  Else allow runs (by "person"
 * when ctx->person_approved answered what the person is asked about),
 * deny is blocked, ask is the person's when they approved, the
 * approver's when there is one (ask_approver), else blocked.  0, or -1
 * with e when out of memory; free d with mini_policy_decision_free. */
int mini_policy_decide(const struct mini_policy *p, const char *command, const struct mini_policy_context *ctx,
                       struct mini_policy_decision *d, struct mini_err *e);
/* Ask the approver of p about d (d->ask_approver set) with request (the
 * JSON object the approver reads) and take its answer.  0, or -1 with e
 * when out of memory. */
int mini_policy_decide_approver(const struct mini_policy *p, const cJSON *request, const volatile int *cancel,
                                struct mini_policy_decision *d, struct mini_err *e);
void mini_policy_decision_free(struct mini_policy_decision *d);

/* ---- the external approver ---- */

struct mini_approval {
    bool allow;
    char *reason; /* malloc'd, never NULL */
    char *by;     /* malloc'd, never NULL: the answer's "by", else "approver" */
};

/* Run `command` (/bin/sh -c, in its own process group), write request
 * (one JSON line) to its stdin, read one JSON object from its stdout
 * within timeout seconds: {"decision": "allow"|"deny", "reason": ...,
 * "by": ...}.  A crash, a non-zero exit, a hang (its process group is
 * killed), garbage or a late answer is a deny whose reason says so; so is
 * *cancel becoming non-zero while it waits (a Ctrl-C; cancel may be NULL).
 * -1 only when out of memory. */
int mini_policy_ask_approver(const char *command, double timeout, const cJSON *request, const volatile int *cancel,
                             struct mini_approval *out);
void mini_approval_free(struct mini_approval *a);
/* An approver's answer, text (len bytes, NUL or not at the end; the length
 * counts): exactly one JSON object with whitespace around it, "decision"
 * the string "allow" or "deny" and no name given twice, no NUL and no raw
 * control character anywhere.  Anything else is a deny whose reason says
 * what was wrong.  0, or -1 when out of memory. */
int mini_policy_parse_approval(const char *text, size_t len, struct mini_approval *out);

/* Refuse an approver mini would run from the workspace (NULL: none), as
 * the programs and scripts its command names (a program of $PATH: no
 * directory searched may be relative or in the workspace): a sandboxed
 * command could rewrite it and so run on the host.  Checked once, before
 * any command runs.  -1 with e (MINI_E_CONFIG). */
int mini_policy_check_approver(const struct mini_policy *p, const char *workspace, struct mini_err *e);

/* ---- the audit log ---- */

/* Open path for appending (O_APPEND|O_CLOEXEC, created 0644, never
 * truncated), as mini_open_append_log: refused when a symlink, not a
 * regular file, another user's or hard-linked; and when a directory on
 * its way is a symlink in the workspace (NULL: none), as
 * mini_open_parent_guarded.  The fd, or -1 with e. */
int mini_audit_open(const char *path, const char *workspace, struct mini_err *e);
/* Append obj as one line with a single write(), so that concurrent
 * writers never tear or interleave lines.  -1 with e. */
int mini_audit_write(int fd, const cJSON *obj, struct mini_err *e);
/* The current time as the audit log writes it: "2026-11-24T15:04:05.123Z"
 * (buf of at least 32 bytes). */
void mini_audit_time(char *buf, size_t size);

#endif
