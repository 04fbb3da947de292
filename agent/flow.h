/* How a stage of the agent ends: mini-swe-agent's InterruptAgentFlow
 * exceptions (FormatError, UserInterruption, Submitted, LimitsExceeded) as
 * a value.  Each stage (step, query, execute_actions) returns one; the run
 * loop adds its messages to the trajectory, saves, and stops once the last
 * message is an exit message. */
#ifndef MINI_AGENT_FLOW_H
#define MINI_AGENT_FLOW_H

#include <cjson/cJSON.h>

enum mini_flow_kind {
    MINI_FLOW_NONE = 0,        /* nothing interrupted the flow: the step goes on */
    MINI_FLOW_FORMAT_ERROR,    /* the reply had no valid action: the messages tell the model
                                  (ending with an exit message, RepeatedFormatError, after
                                  too many in a row) */
    MINI_FLOW_USER,            /* the person stepped in: rejected the commands, commented
                                  after Ctrl-C, gave a new task */
    MINI_FLOW_SUBMITTED,       /* an exit message: Submitted */
    MINI_FLOW_LIMITS_EXCEEDED, /* an exit message: LimitsExceeded (the person may raise the limits) */
    MINI_FLOW_TIME_EXCEEDED,   /* an exit message: TimeExceeded (final: no limit to raise) */
    /* Not caught by any stage: the run loop adds the exit message naming
     * the cause after the messages, and the run fails. */
    MINI_FLOW_INTERRUPTED, /* Ctrl-C or SIGTERM: KeyboardInterrupt */
    MINI_FLOW_ERROR,       /* the stage's struct mini_err says what failed */
};

struct mini_flow {
    enum mini_flow_kind kind;
    cJSON *messages; /* to add to the trajectory, in order; NULL: none */
};

#define MINI_FLOW(k) ((struct mini_flow){ .kind = (k) })

static inline void mini_flow_clear(struct mini_flow *f)
{
    cJSON_Delete(f->messages);
    f->messages = NULL;
}

/* Append msg (taken; NULL when out of memory) to the messages of f. */
static inline void mini_flow_push(struct mini_flow *f, cJSON *msg)
{
    if (!f->messages)
        f->messages = cJSON_CreateArray();
    if (!f->messages || !cJSON_AddItemToArray(f->messages, msg))
        cJSON_Delete(msg);
}

/* A flow of one message. */
static inline struct mini_flow mini_flow_of(enum mini_flow_kind kind, cJSON *msg)
{
    struct mini_flow f = MINI_FLOW(kind);
    mini_flow_push(&f, msg);
    return f;
}

#endif
