/* Root filesystem assembly for one sandbox, run by the sandbox's setup
 * child in its fresh user and mount namespaces, before any command exists.
 *
 * The new root is an empty tmpfs mounted on `root`; host paths are bound
 * into it read-only (or overlaid), tmpfs mounts and the workspace added, a
 * fresh /proc and a minimal /dev created, hidden paths covered, then
 * pivot_root and the old root detached.  Every mount gets nosuid and nodev
 * (but /dev, whose nodes must work); the root itself ends read-only.
 * Binds and covers are made detached (open_tree), restricted, then moved
 * into place.
 *
 * The part that is the same for every sandbox of a session (base, binds,
 * /dev's nodes, covers) can instead come from a template built once
 * (mini_rootfs_template) and cloned (mini_rootfs_base with template_fd);
 * the sandbox then makes only its own mounts.
 *
 * Mount targets are resolved inside the new root (openat2 RESOLVE_IN_ROOT),
 * so a symlink in a bound tree can never point a mount at a host path, and
 * the workspace (the only tree the sandbox can write) is mounted last and
 * never walked. */
#ifndef MINI_CONTAINER_ROOTFS_H
#define MINI_CONTAINER_ROOTFS_H

#include <stdbool.h>
#include "mini/err.h"
#include "mini/profile.h"

struct mini_rootfs_spec {
    const struct mini_profile *profile;
    int root_fd;              /* from mini_rootfs_base() */
    int overlay_fd;           /* O_PATH fd of the session's overlay directory, or -1 */
    const char *overlay_work; /* this sandbox's work directory, relative to overlay_fd: overlayfs
                                 * empties its workdir at every mount, so sandboxes cannot share one */
    const char *workspace;    /* canonical path; mounted at the same path */
    int workspace_fd;         /* O_PATH fd of it, or a detached (idmapped) mount */
    bool workspace_detached;  /* workspace_fd is a detached mount: move it */
    int image_fd;             /* O_PATH fd of an image's root (docs/images.md), or -1: the root is then
                               * an overlay on it (the session's writable one under overlay_root, else
                               * one on the base tmpfs, read-only in the end), the profile's binds and
                               * hidden paths are not used (no host path is in it) */
    bool image_detached;      /* image_fd is a detached (idmapped) mount: attached first */
    bool templated;           /* root_fd is a clone of a template (mini_rootfs_template): only this
                               * sandbox's own mounts are left to make */
};

/* First step, still with the credentials the daemon cloned us with (a
 * root daemon's are not mapped in the new namespace yet, but can reach
 * its private state directory): make every mount private and put the base
 * of the new root on `root`: a clone of template_fd when it is not -1, an
 * empty tmpfs (owned by uid:gid, the sandbox's ids), or, when the profile
 * binds "/" itself, the host's root (read-only unless that bind is
 * writable).  Returns an O_PATH fd of it, or -1 with e filled. */
int mini_rootfs_base(const char *root, const struct mini_profile *p, bool image, unsigned uid, unsigned gid,
                     int template_fd, struct mini_err *e);

/* A template of the part of a root that every sandbox of a session shares
 * (docs/sandbox-lifecycle.md, "The template mount tree"): the base tmpfs
 * with the mount points of the sandbox's own mounts (its tmpfs, /proc,
 * /dev/pts, /dev/shm, the workspace), the profile's binds, /dev with its
 * nodes and links, and the hidden paths covered, as they are now.  Built
 * detached (fsmount, open_tree, move_mount), so that a sandbox's mount
 * namespace may clone it; every tmpfs in it has a read-only superblock.
 * Run by a builder in a user and mount namespace of its own, as the ids
 * the sandboxes run as (their root).  Returns the tree's fd, or -1 with e
 * filled. */
int mini_rootfs_template(const struct mini_profile *p, const char *workspace, struct mini_err *e);

/* Whether sandboxes of this profile may be built from a
 * template: not with a writable overlay root or a bind of "/", nor when a
 * hidden path is where a sandbox mounts something of its own, or holds
 * such a mount (a template covers it before those mounts, a sandbox
 * after them). */
bool mini_rootfs_template_fits(const struct mini_profile *p);

/* Build and enter the root.  On return the process's root and cwd are the
 * sandbox's.  -1 with e filled (stage and errno) on failure. */
int mini_rootfs_enter(const struct mini_rootfs_spec *s, struct mini_err *e);

/* Bring the loopback interface up (in a fresh network namespace). */
int mini_net_loopback_up(struct mini_err *e);

#endif
