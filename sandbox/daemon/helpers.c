/* Short-lived helpers reaped from the loop (helpers.h). */
#include "helpers.h"
#include "mini/cleanup.h"

struct helper *helper_slot(struct helpers *hs)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(hs->slot); i++)
        if (hs->slot[i].h.pid == 0)
            return &hs->slot[i];
    return NULL;
}

void helper_adopt(struct helpers *hs, struct helper *x, const struct mini_idmap_holder *h)
{
    if (h->pid <= 0)
        return;
    x->h = *h;
    x->ev = (struct ev){ EV_HOLDER, x };
    x->ep = hs->ep;
    if (loop_add(hs->ep, h->pidfd, EPOLLIN, &x->ev) < 0)
        mini_idmap_holder_reap(&x->h);
}

void helper_reaped(struct helper *x)
{
    loop_del(x->ep, x->h.pidfd);
    mini_idmap_holder_reap(&x->h);
}

void helper_fini(struct helpers *hs)
{
    for (size_t i = 0; i < MINI_ARRAY_SIZE(hs->slot); i++)
        if (hs->slot[i].h.pid > 0)
            helper_reaped(&hs->slot[i]);
}
