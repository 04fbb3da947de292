/* Unit tests of agent/policy: rule matching (first match wins, the
 * default, the whitelist), config errors naming the key, the external
 * approver (allow, deny, crash, hang, garbage, answers that are nearly an
 * allow: a NUL, text after the object, "decision" twice) and concurrent
 * writers to one audit log (8 processes x 200 lines: none torn, none
 * lost), and the decision the agent, its confirm mode and
 * mini-sandbox-policy share (mini_policy_decide). */
#include "check.h"
#include "policy/policy.h"
#include "mini/buf.h"
#include "mini/clock.h"
#include "mini/io.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct mini_policy *from(const char *json, struct mini_err *e)
{
    cJSON *o = cJSON_Parse(json);
    CHECK_MSG(o, "bad test JSON: %s", json);
    struct mini_policy *p = mini_policy_new(o, e);
    cJSON_Delete(o);
    return p;
}

static void expect_error(const char *json, const char *msg)
{
    struct mini_err e;
    struct mini_policy *p = from(json, &e);
    CHECK_MSG(!p && e.code == MINI_E_CONFIG && strstr(e.msg, msg), "%s: got \"%s\", want \"%s\"", json,
              p ? "(valid)" : e.msg, msg);
    mini_policy_free(p);
}

static void test_matching(void)
{
    struct mini_err e;
    struct mini_policy *p =
        from("{\"default\": \"ask\", \"rules\": ["
             "{\"match\": \"^\\\\s*rm\\\\s+-rf\\\\s+/\", \"verdict\": \"deny\", \"reason\": \"never\"},"
             "{\"match\": \"^pip install\", \"verdict\": \"ask\", \"profile\": \"permissive\"},"
             "{\"match\": \"^(ls|cat)\\\\b\", \"verdict\": \"allow\"},"
             "{\"match\": \"rm\", \"verdict\": \"allow\"}]}",
             &e);
    CHECK_MSG(p, "%s", e.msg);
    if (!p)
        return;
    struct mini_policy_match m;
    mini_policy_match(p, "  rm -rf /home", &m);
    CHECK(m.matched && m.verdict == MINI_VERDICT_DENY);
    CHECK_STR(m.rule, "policy.rules[0]");
    CHECK_STR(m.reason, "never");
    mini_policy_match(p, "pip install requests", &m);
    CHECK(m.verdict == MINI_VERDICT_ASK);
    CHECK_STR(m.profile, "permissive");
    CHECK_STR(m.rule, "policy.rules[1]");
    mini_policy_match(p, "ls -la", &m);
    CHECK(m.verdict == MINI_VERDICT_ALLOW && m.reason == NULL && m.profile == NULL);
    /* first match wins: rule 0 is before rule 3, which also matches */
    mini_policy_match(p, "rm -rf /", &m);
    CHECK(m.verdict == MINI_VERDICT_DENY);
    mini_policy_match(p, "echo rm", &m); /* unanchored unless ^ */
    CHECK_STR(m.rule, "policy.rules[3]");
    mini_policy_match(p, "make", &m);
    CHECK(!m.matched && m.verdict == MINI_VERDICT_ASK);
    CHECK_STR(m.rule, "policy.default");
    CHECK(mini_policy_default_given(p));
    CHECK(mini_policy_approver(p) == NULL && mini_policy_approver_timeout(p) == 30);
    CHECK_STR(mini_policy_blocked_template(p), "Action blocked: {{reason}}");
    /* the whitelist: allow rules after the policy's, matched at the start */
    cJSON *wl = cJSON_Parse("[\"make\", \"echo\"]");
    CHECK(mini_policy_add_whitelist(p, wl, &e) == 0);
    cJSON_Delete(wl);
    mini_policy_match(p, "make test", &m);
    CHECK(m.matched && m.verdict == MINI_VERDICT_ALLOW);
    CHECK_STR(m.rule, "agent.whitelist_actions[0]");
    mini_policy_match(p, "x; make", &m);
    CHECK(!m.matched);
    mini_policy_free(p);

    /* no policy at all: allow, default not given */
    p = mini_policy_new(NULL, &e);
    CHECK(p && !mini_policy_default_given(p));
    if (p) {
        mini_policy_match(p, "anything", &m);
        CHECK(m.verdict == MINI_VERDICT_ALLOW && !m.matched);
    }
    mini_policy_free(p);
}

static void test_errors(void)
{
    expect_error("{\"rules\": [{\"match\": \"x\", \"verdict\": \"allow\"}, {\"match\": \"y\", \"verdict\": \"allow\"},"
                 "{\"match\": \"z\", \"verdict\": \"maybe\"}]}",
                 "policy.rules[2].verdict: \"maybe\" is not allow, deny or ask");
    expect_error("{\"rules\": [{\"match\": \"(unclosed\", \"verdict\": \"deny\"}]}",
                 "policy.rules[0].match: not a valid regular expression at offset 9");
    expect_error("{\"rules\": [{\"verdict\": \"deny\"}]}", "policy.rules[0].match: missing");
    expect_error("{\"rules\": [{\"match\": \"x\"}]}", "policy.rules[0].verdict: missing");
    expect_error("{\"rules\": [{\"match\": \"x\", \"verdict\": \"deny\", \"reasn\": \"r\"}]}",
                 "policy.rules[0].reasn: unknown key (did you mean policy.rules[0].reason?)");
    expect_error("{\"rules\": [\"x\"]}", "policy.rules[0]: must be a mapping");
    expect_error("{\"rules\": {}}", "policy.rules: must be a list");
    expect_error("{\"default\": \"yes\"}", "policy.default: \"yes\" is not allow, deny or ask");
    expect_error("{\"defualt\": \"allow\"}", "policy.defualt: unknown key (did you mean policy.default?)");
    expect_error("{\"approver_timeout\": 0}", "policy.approver_timeout: must be a number of seconds");
    expect_error("{\"approver\": 3}", "policy.approver: must be a string");
    expect_error("[1]", "policy: must be a mapping");
    struct mini_err e;
    struct mini_policy *p = mini_policy_new(NULL, &e);
    cJSON *wl = cJSON_Parse("[\"ok\", \"[bad\"]");
    CHECK(p && mini_policy_add_whitelist(p, wl, &e) < 0 && strstr(e.msg, "agent.whitelist_actions[1]: not a valid"));
    cJSON_Delete(wl);
    mini_policy_free(p);
}

static void ask(const char *cmd, double timeout, bool want_allow, const char *want_reason, const char *want_by)
{
    cJSON *req = cJSON_Parse("{\"command\": \"ls\", \"step\": 1}");
    struct mini_approval a;
    int64_t t0 = mini_mono_ms();
    CHECK(mini_policy_ask_approver(cmd, timeout, req, NULL, &a) == 0);
    int64_t ms = mini_mono_ms() - t0;
    CHECK_MSG(a.allow == want_allow && strstr(a.reason, want_reason) && (!want_by || strcmp(a.by, want_by) == 0),
              "%s: allow=%d reason=\"%s\" by=\"%s\"", cmd, a.allow, a.reason, a.by);
    CHECK_MSG(ms < (int64_t)(timeout * 1000) + 3000, "%s took %lld ms", cmd, (long long)ms);
    mini_approval_free(&a);
    cJSON_Delete(req);
}

static void test_approver(void)
{
    ask("grep -q '\"command\":\"ls\"' && echo '{\"decision\": \"allow\", \"reason\": \"fine\", \"by\": \"bot\"}'", 5,
        true, "fine", "bot");
    ask("cat >/dev/null; echo '{\"decision\": \"deny\"}'", 5, false, "denied by the approver", "approver");
    ask("exit 3", 5, false, "exit status 3", NULL);
    ask("kill -9 $$", 5, false, "killed by signal 9", NULL);
    ask("echo not json", 5, false, "not a JSON object", NULL);
    ask("echo '{\"decision\": \"maybe\"}'", 5, false, "no decision allow or deny", NULL);
    ask("true", 5, false, "no answer", NULL);
    /* a hang (and a child of it holding stdout) is killed at the timeout */
    ask("sleep 30 & sleep 30", 0.5, false, "did not answer within 0.5 seconds", NULL);
    ask("/nonexistent/approver", 5, false, "exit status 127", NULL);
    /* Exactly one JSON object, then only whitespace; anything else is a
     * deny whose reason says what was wrong with the answer. */
    ask("printf '%s' '{\"decision\":\"allow\\u0000x\"}'", 5, false, "NUL", NULL);
    ask("printf '%s' '{\"decision\":\"allow\",\"reason\":\"ok\\u0000\"}'", 5, false, "NUL", NULL);
    ask("printf '{\"decision\":\"allow\\000x\"}'", 5, false, "NUL", NULL);
    ask("printf '{\"decision\":\"allow\"}\\000'", 5, false, "NUL", NULL);
    ask("echo '{\"decision\":\"allow\"} trailing garbage'", 5, false, "after the object", NULL);
    ask("echo '{\"decision\":\"allow\"}{\"decision\":\"deny\"}'", 5, false, "after the object", NULL);
    ask("printf '{\"decision\":\"allow\"}\\n{\"decision\":\"deny\"}\\n'", 5, false, "after the object", NULL);
    ask("echo '{\"decision\":\"deny\",\"decision\":\"allow\"}'", 5, false, "\"decision\" more than once", NULL);
    ask("echo '{\"decision\":\"allow\",\"decision\":\"allow\"}'", 5, false, "\"decision\" more than once", NULL);
    ask("echo '\"allow\"'", 5, false, "not a JSON object", NULL);
    ask("echo '[{\"decision\":\"allow\"}]'", 5, false, "not a JSON object", NULL);
    ask("printf '\\001{\"decision\":\"allow\"}'", 5, false, "control character", NULL);
    ask("printf '{\"decision\":\"allow\",\"reason\":\"a\\tb\"}'", 5, false, "control character", NULL);
    ask("echo '{\"decision\":true}'", 5, false, "no decision allow or deny", NULL);
    ask("echo '{\"decision\":\"ALLOW\"}'", 5, false, "no decision allow or deny", NULL);
    ask("echo '{\"decision\":\"allow \"}'", 5, false, "no decision allow or deny", NULL);
    ask("echo '{\"decision\":\"ask\"}'", 5, false, "no decision allow or deny", NULL);
    ask("echo '{\"reason\":\"no decision\"}'", 5, false, "no decision allow or deny", NULL);
    /* valid answers: whitespace around the object, several lines, escapes */
    ask("printf ' \\n{\"decision\":\"allow\"}\\n\\n \\t\\r\\n'", 5, true, "allowed by the approver", NULL);
    ask("printf '{\\n  \"decision\": \"deny\",\\n  \"reason\": \"two\\\\nlines\"\\n}\\n'", 5, false, "two\nlines",
        NULL);
    ask("printf '%s' '{\"decision\":\"allow\",\"reason\":\"C:\\\\u0000 is a path\",\"by\":\"b\"}'", 5, true,
        "C:\\u0000 is a path", "b");
    ask("printf '%s' '{\"decision\":\"allow\",\"reason\":\"caf\\u00e9\"}'", 5, true, "caf\xc3\xa9", NULL);
    /* the length limit on the answer as before: an 8 MiB reason is too
     * long, a 60 KB one is whole */
    ask("printf '{\"decision\":\"allow\",\"reason\":\"'; head -c 8388608 /dev/zero | tr '\\0' x; printf '\"}'", 10,
        false, "longer than 65536 bytes", NULL);
    {
        struct mini_approval a;
        cJSON *req = cJSON_CreateObject();
        CHECK(mini_policy_ask_approver(
                  "printf '{\"decision\":\"allow\",\"reason\":\"'; head -c 60000 /dev/zero | tr '\\0' x; printf '\"}'",
                  10, req, NULL, &a) == 0);
        CHECK_MSG(a.allow && strlen(a.reason) == 60000, "60 KB reason: allow=%d, %zu bytes", a.allow, strlen(a.reason));
        mini_approval_free(&a);
        cJSON_Delete(req);
    }
    /* an approver that never reads a large request still gets killed */
    cJSON *big = cJSON_CreateObject();
    char *pad = malloc(300000);
    memset(pad, 'x', 299999);
    pad[299999] = '\0';
    cJSON_AddStringToObject(big, "pad", pad);
    free(pad);
    struct mini_approval a;
    CHECK(mini_policy_ask_approver("sleep 30", 0.3, big, NULL, &a) == 0 && !a.allow &&
          strstr(a.reason, "did not answer"));
    mini_approval_free(&a);
    cJSON_Delete(big);
    /* a Ctrl-C while waiting: stopped at once, a deny */
    volatile int cancel = 1;
    cJSON *req = cJSON_CreateObject();
    int64_t t0 = mini_mono_ms();
    CHECK(mini_policy_ask_approver("sleep 30", 20, req, &cancel, &a) == 0 && !a.allow &&
          strstr(a.reason, "interrupted"));
    CHECK(mini_mono_ms() - t0 < 3000);
    mini_approval_free(&a);
    cJSON_Delete(req);
}

/* 8 processes x 200 lines of 1..6 KB each (longer than a pipe's atomic
 * write and stdio's buffer) into one log: every line whole, none lost. */
static void test_audit_concurrent(void)
{
    char path[] = "/tmp/mini-audit-test.XXXXXX";
    int tfd = mkstemp(path);
    CHECK(tfd >= 0);
    close(tfd);
    enum { WRITERS = 8, LINES = 200 };
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct mini_err e;
            int fd = mini_audit_open(path, NULL, &e);
            if (fd < 0)
                _exit(1);
            char *pad = malloc(6001);
            for (int i = 0; i < LINES; i++) {
                size_t n = 1000 + (size_t)((w * 7919 + i * 104729) % 5000);
                memset(pad, 'a' + w, n);
                pad[n] = '\0';
                cJSON *l = cJSON_CreateObject();
                cJSON_AddNumberToObject(l, "writer", w);
                cJSON_AddNumberToObject(l, "i", i);
                cJSON_AddStringToObject(l, "pad", pad);
                if (mini_audit_write(fd, l, &e) < 0)
                    _exit(2);
                cJSON_Delete(l);
            }
            free(pad);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int st;
        CHECK(wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    struct mini_buf b = MINI_BUF_INIT;
    struct mini_err e;
    CHECK(mini_read_file(path, &b, 64 << 20, &e) == 0);
    int seen[WRITERS][LINES] = { { 0 } };
    int lines = 0, bad = 0;
    for (char *p = b.data, *end = b.data + b.len; p && p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            bad++;
            break;
        }
        cJSON *l = cJSON_ParseWithLength(p, (size_t)(nl - p));
        const cJSON *w = cJSON_GetObjectItem(l, "writer"), *i = cJSON_GetObjectItem(l, "i");
        const cJSON *pad = cJSON_GetObjectItem(l, "pad");
        if (!cJSON_IsNumber(w) || !cJSON_IsNumber(i) || !cJSON_IsString(pad) || w->valueint < 0 ||
            w->valueint >= WRITERS || i->valueint < 0 || i->valueint >= LINES ||
            strspn(pad->valuestring, (char[]){ (char)('a' + w->valueint), 0 }) != strlen(pad->valuestring))
            bad++;
        else
            seen[w->valueint][i->valueint]++;
        cJSON_Delete(l);
        lines++;
        p = nl + 1;
    }
    int missing = 0;
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < LINES; i++)
            missing += seen[w][i] != 1;
    CHECK_MSG(lines == WRITERS * LINES && bad == 0 && missing == 0, "%d lines, %d torn, %d missing or doubled", lines,
              bad, missing);
    /* reopening appends, never truncates */
    int fd = mini_audit_open(path, NULL, &e);
    cJSON *l = cJSON_CreateObject();
    CHECK(fd >= 0 && mini_audit_write(fd, l, &e) == 0);
    cJSON_Delete(l);
    close(fd);
    struct mini_buf b2 = MINI_BUF_INIT;
    CHECK(mini_read_file(path, &b2, 64 << 20, &e) == 0 && b2.len == b.len + 3);
    mini_buf_free(&b);
    mini_buf_free(&b2);
    unlink(path);
    char when[40];
    mini_audit_time(when, sizeof when);
    CHECK(strlen(when) == 24 && when[10] == 'T' && when[23] == 'Z');
}

/* One decision: allow, by, reason, ask_person, ask_approver. */
static void expect_decision(const struct mini_policy *p, const char *cmd, bool person_approved, bool person_possible,
                            bool allow, const char *by, const char *reason, bool ask_person, bool ask_approver)
{
    struct mini_err e;
    struct mini_policy_context ctx = { .person_approved = person_approved, .person_possible = person_possible };
    struct mini_policy_decision d;
    CHECK(mini_policy_decide(p, cmd, &ctx, &d, &e) == 0);
    CHECK_MSG(d.allow == allow && d.ask_person == ask_person && d.ask_approver == ask_approver,
              "%s: allow %d ask %d/%d", cmd, d.allow, d.ask_person, d.ask_approver);
    CHECK_MSG(d.by && strcmp(d.by, by) == 0, "%s: by %s, want %s", cmd, d.by ? d.by : "(null)", by);
    CHECK_MSG(reason ? d.reason && strcmp(d.reason, reason) == 0 : !d.reason, "%s: reason \"%s\", want \"%s\"", cmd,
              d.reason ? d.reason : "(null)", reason ? reason : "(null)");
    mini_policy_decision_free(&d);
}

static void test_decide(void)
{
    struct mini_err e;
    /* No policy: everything runs, and confirm mode asks about all. */
    expect_decision(NULL, "ls", false, true, true, "policy", NULL, true, false);
    struct mini_policy *p = from("{\"rules\": [{\"match\": \"^rm\", \"verdict\": \"deny\"},"
                                 " {\"match\": \"^ls\", \"verdict\": \"allow\", \"profile\": \"strict\"},"
                                 " {\"match\": \"^pip\", \"verdict\": \"ask\", \"reason\": \"installs\"}]}",
                                 &e);
    CHECK(p);
    expect_decision(p, "rm -rf x", false, true, false, "policy", "denied by policy.rules[0]", false, false);
    expect_decision(p, "rm -rf x", true, true, false, "policy", "denied by policy.rules[0]", false, false);
    expect_decision(p, "ls", true, true, true, "policy", NULL, false, false);
    /* No rule and no default given: the person's in confirm mode. */
    expect_decision(p, "cat f", false, true, true, "policy", NULL, true, false);
    expect_decision(p, "cat f", true, true, true, "person", "approved by the person at the terminal", true, false);
    expect_decision(p, "pip install x", true, true, true, "person", "installs", true, false);
    expect_decision(p, "pip install x", false, true, false, "policy",
                    "policy.rules[2] says ask (installs), and nobody was there to ask (no person at a terminal in "
                    "confirm mode, no policy.approver)",
                    true, false);
    expect_decision(p, "pip install x", false, false, false, "policy",
                    "policy.rules[2] says ask: installs, and nobody was there to ask (no policy.approver)", true,
                    false);
    struct mini_policy_context ctx = { 0 };
    struct mini_policy_decision d;
    CHECK(mini_policy_decide(p, "ls -l", &ctx, &d, &e) == 0 && d.profile && strcmp(d.profile, "strict") == 0);
    mini_policy_decision_free(&d);
    mini_policy_free(p);

    /* A default given: nobody is asked; an approver answers ask. */
    p = from("{\"default\": \"ask\", \"approver\": \"true\"}", &e);
    CHECK(p);
    expect_decision(p, "ls", false, true, false, "policy", NULL, true, true);
    mini_policy_free(p);
    p = from("{\"default\": \"allow\"}", &e);
    expect_decision(p, "ls", true, true, true, "policy", NULL, false, false);
    mini_policy_free(p);
}

int main(void)
{
    test_matching();
    test_errors();
    test_approver();
    test_decide();
    test_audit_concurrent();
    return check_summary();
}
