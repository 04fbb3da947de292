/* The sandbox's first process (child.c): what the clone made by
 * mini_sandbox_clone() runs until it becomes mini-sandbox-init. */
#ifndef MINI_SANDBOX_CHILD_H
#define MINI_SANDBOX_CHILD_H

#include "spawn.h"

/* Run in the cloned child: ctl, out and in are its ends of the daemon's
 * control socket, output pipe and stdin pipe; overlay_work is its overlayfs
 * work directory relative to cfg->overlay_dir ("" without an overlay).
 * The namespace path or, with cfg->landlock, the degraded one.  Never
 * returns: it executes mini-sandbox-init or exits 125. */
__attribute__((noreturn)) void mini_child_main(const struct mini_spawn_cfg *cfg, const char *overlay_work, int ctl,
                                               int out, int in);

/* The builder of a session's template of the root (mini_sandbox_template),
 * in a user and mount namespace of its own: waits for one byte on sock (its
 * id maps are written), becomes cfg's inner ids, builds the template
 * (mini_rootfs_template) and sends a struct mini_ctl_msg on sock, READY
 * with the tree's fd or ERROR with the reason.  Never returns. */
__attribute__((noreturn)) void mini_template_child_main(const struct mini_spawn_cfg *cfg, int sock);

#endif
