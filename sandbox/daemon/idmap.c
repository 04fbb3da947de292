/* Id mapping and what is kept ahead of the next open (idmap.h). */
#include "idmap.h"
#include "mini/io.h"

void idmap_init(struct idmap *im, bool enabled, struct helpers *helpers)
{
    *im = (struct idmap){ .enabled = enabled, .helpers = helpers, .ahead = { .fd = -1 } };
}

void idmap_fini(struct idmap *im)
{
    mini_close(im->ahead.fd);
    im->ahead.fd = -1;
}

static int make(struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_err *e)
{
    struct helper *x = helper_slot(im->helpers);
    struct mini_idmap_holder h = { .pid = 0, .pidfd = -1, .stack = NULL };
    int fd = mini_idmap_userns(from, to, gfrom, gto, x ? &h : NULL, e);
    if (fd >= 0 && x)
        helper_adopt(im->helpers, x, &h);
    return fd;
}

/* Whether the namespace made ahead is this mapping. */
static bool ahead_is(const struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto)
{
    return im->ahead.fd >= 0 && im->ahead.from == from && im->ahead.to == to && im->ahead.gfrom == gfrom &&
        im->ahead.gto == gto;
}

int idmap_userns(struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_err *e)
{
    if (ahead_is(im, from, to, gfrom, gto)) {
        int fd = im->ahead.fd;
        im->ahead.fd = -1;
        return fd;
    }
    return make(im, from, to, gfrom, gto, e);
}

bool idmap_known(const struct idmap *im, dev_t dev)
{
    for (size_t i = 0; i < im->n_ok; i++)
        if (im->ok[i] == dev)
            return true;
    return false;
}

void idmap_learn(struct idmap *im, dev_t dev)
{
    if (im->enabled && im->n_ok < IDMAP_OK_MAX)
        im->ok[im->n_ok++] = dev;
}

/* Such a namespace holds no process and nothing but the mapping. */
void idmap_ahead(struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto)
{
    if (!im->enabled || ahead_is(im, from, to, gfrom, gto))
        return;
    struct mini_err e;
    int fd = make(im, from, to, gfrom, gto, &e);
    mini_close(im->ahead.fd);
    im->ahead.fd = fd;
    im->ahead.from = from;
    im->ahead.to = to;
    im->ahead.gfrom = gfrom;
    im->ahead.gto = gto;
}

int64_t idmap_held(const struct idmap *im) { return im->ahead.fd >= 0; }
