/* Id mapping for idmapped workspaces (root daemon): the user namespaces
 * that map a workspace's owner to a session's uid, and what is kept ahead
 * of the next open:
 *   - the filesystems (st_dev, IDMAP_OK_MAX) already found to take an
 *     idmapped mount, so that the probe (a mount's teardown) is not
 *     repeated for them;
 *   - the mapping the next root session most likely needs (the last one's
 *     owner to the next uid slot), made after an open's reply instead of on
 *     the next open's path: it costs a fork.
 * Off (--caches=off): every open probes, and every mapping is made on its
 * open's path. */
#ifndef MINI_SANDBOXD_IDMAP_H
#define MINI_SANDBOXD_IDMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "helpers.h"
#include "mini/err.h"

#define IDMAP_OK_MAX 16

struct idmap {
    bool enabled;
    struct helpers *helpers; /* who reaps the namespaces' holders */
    dev_t ok[IDMAP_OK_MAX];
    size_t n_ok;
    struct {
        uid_t from, to;
        gid_t gfrom, gto;
        int fd; /* -1: none */
    } ahead;
};

void idmap_init(struct idmap *im, bool enabled, struct helpers *helpers);
void idmap_fini(struct idmap *im);
/* A user namespace mapping uid from to to and gid gfrom to gto: the one
 * made ahead when it is that, else a new one.  -1 with e filled. */
int idmap_userns(struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto, struct mini_err *e);
/* Whether filesystem dev is known to take an idmapped mount; remember
 * that it does. */
bool idmap_known(const struct idmap *im, dev_t dev);
void idmap_learn(struct idmap *im, dev_t dev);
/* Make the mapping from -> to ahead (off the open's path); one not taken is
 * replaced by the next. */
void idmap_ahead(struct idmap *im, uid_t from, uid_t to, gid_t gfrom, gid_t gto);
/* fds it holds (stats.held_ahead). */
int64_t idmap_held(const struct idmap *im);

#endif
