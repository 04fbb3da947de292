/* libFuzzer target: arbitrary bytes as a `policy` object (YAML or JSON,
 * the first line-separated part) and commands to match (the other lines).
 * Nothing may crash or leak; an invalid policy must be a config error
 * naming a key under `policy`; a valid one must give every command a
 * verdict and a rule name.  The same bytes are also read as an approver's
 * answer (mini_policy_parse_approval): always a verdict with a reason and
 * a "by", and never an allow from an answer with a NUL in it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_yaml.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct mini_approval ap;
    if (mini_policy_parse_approval(text, size, &ap) == 0) {
        if (!ap.reason || !ap.by || (ap.allow && memchr(text, '\0', size)))
            abort();
        mini_approval_free(&ap);
    }
    const char *sep = memmem(text, size, "\n--\n", 4);
    size_t head = sep ? (size_t)(sep - text) : size;
    struct mini_err e;
    cJSON *obj = mini_yaml_parse(text, head, "fuzz", &e);
    if (!obj)
        return 0;
    struct mini_policy *p = mini_policy_new(obj, &e);
    cJSON_Delete(obj);
    if (!p) {
        if (e.code != MINI_E_CONFIG && e.code != MINI_E_NOMEM)
            abort();
        if (e.code == MINI_E_CONFIG && strncmp(e.msg, "policy", 6) != 0)
            abort();
        return 0;
    }
    if (sep) {
        char *cmds = strndup(sep + 4, size - head - 4);
        if (cmds) {
            char *save = NULL;
            for (char *c = strtok_r(cmds, "\n", &save); c; c = strtok_r(NULL, "\n", &save)) {
                struct mini_policy_match m;
                mini_policy_match(p, c, &m);
                if (!m.rule || (unsigned)m.verdict > MINI_VERDICT_ASK || !mini_verdict_name(m.verdict))
                    abort();
            }
            free(cmds);
        }
    }
    mini_policy_free(p);
    return 0;
}
