/* Short-lived helper processes the loop reaps: the processes that hold an
 * id-mapping namespace while its maps are written (mini_idmap_holder), and
 * the builders of templates of the root (mini_sandbox_template).  Each is
 * reaped when its pidfd says it has exited (EV_HOLDER), instead of the
 * caller waiting for it to be scheduled and exit. */
#ifndef MINI_SANDBOXD_HELPERS_H
#define MINI_SANDBOXD_HELPERS_H

#include "loop.h"
#include "workspace.h"

#define HELPERS_MAX 8

struct helper {
    struct mini_idmap_holder h; /* pid 0: a free entry */
    struct ev ev;
    int ep;
};

struct helpers {
    int ep; /* the loop's epoll fd */
    struct helper slot[HELPERS_MAX];
};

/* A free entry, or NULL: when none is, the caller waits for its helper. */
struct helper *helper_slot(struct helpers *hs);
/* Hand h (from a call given helper_slot's entry) to the loop. */
void helper_adopt(struct helpers *hs, struct helper *x, const struct mini_idmap_holder *h);
/* x's pidfd is readable (EV_HOLDER): reap it. */
void helper_reaped(struct helper *x);
/* Reap every helper left (at stop). */
void helper_fini(struct helpers *hs);

#endif
